"""What the live preflight asks about, derived from a recipe's plan and its rendered stack.

No Google Cloud import here: building a :class:`Target` is pure and fast (unit-testable).
Facts (resource type -> permissions, permission -> role, quota ids) come from
``data/gcp.yaml``, each with its public source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from mldiag_provision.plan.stack import StackPlan

DATA = Path(__file__).parent / "data" / "gcp.yaml"

_BLOCK = re.compile(r'^\s*(resource|data)\s+"(google[a-z0-9_-]*)"', re.MULTILINE)


@functools.cache
def facts() -> dict[str, Any]:
    """The sourced facts of ``data/gcp.yaml`` (resources, roles, quotas)."""
    data: dict[str, Any] = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    return data


def role_for(permission: str) -> str | None:
    """A predefined role granting ``permission`` (longest prefix in ``roles``), or None."""
    best: tuple[int, str | None] = (-1, None)
    for prefix, role in facts()["roles"].items():
        if (permission == prefix or permission.startswith(prefix + ".")) and \
                len(prefix) > best[0]:
            best = (len(prefix), role)
    return best[1]


@dataclass(frozen=True)
class SliceNeed:
    """Capacity one slice needs: ``vms`` VMs of ``machine_type`` x ``count`` slices."""

    name: str
    kind: str  # tpu | gpu
    accelerator_type: str  # catalog key
    machine_type: str | None
    vms: int
    count: int
    chips: int  # accelerator chips (TPU) / GPUs for all slices together
    capacity: str  # on-demand | spot | reservation | flex-start
    reservation: str | None
    reservation_project: str | None


@dataclass
class Target:
    """Everything the checks look at, for one project."""

    project: str
    region: str
    zone: str | None
    resource_types: tuple[str, ...]
    permissions: dict[str, tuple[str, ...]]  # permission -> resource types needing it
    roles: tuple[str, ...]  # predefined roles the stack grants
    custom_role_permissions: tuple[str, ...]
    services: tuple[str, ...]
    gke: tuple[str, str, str | None] | None = None  # (location, channel, min version)
    existing: tuple[str, str, str | None, str | None] | None = None
    """(location, cluster, min version, expected workload pool) of an existing cluster."""
    slices: tuple[SliceNeed, ...] = field(default_factory=tuple)


def resource_types(files: Mapping[str, bytes | str]) -> set[str]:
    """``google*`` resource types (``data.`` prefixed for data sources) in the ``.tf`` files
    of a rendered stack (root, modules and ``agents/``)."""
    found: set[str] = set()
    for path, content in files.items():
        if not str(path).endswith(".tf"):
            continue
        text = content.decode("utf-8") if isinstance(content, bytes) else content
        for kind, rtype in _BLOCK.findall(text):
            found.add(rtype if kind == "resource" else f"data.{rtype}")
    return found


def build_target(plan: StackPlan, files: Mapping[str, bytes | str]) -> Target:
    """The :class:`Target` of ``plan`` whose rendered files are ``files`` (path -> content).

    Types a module holds but the plan does not create (``count = 0``: an existing bucket or
    service account, no custom role) are dropped, so no permission is asked for nothing.
    """
    types = resource_types(files)
    diag = plan.diagnostics
    bucket = getattr(diag, "profiles_bucket", None)
    if bucket is not None and not bucket.create:
        types.discard("google_storage_bucket")
    sa = getattr(diag, "service_account", None)
    cluster = plan.cluster
    node_sa_roles = tuple(getattr(cluster, "node_service_account_roles", ()) or ())
    if sa is not None and not sa.create and not hasattr(cluster, "node_service_account_id"):
        types.discard("google_service_account")
    iam = getattr(diag, "iam", None)
    custom = bool(iam is not None and iam.mode != "predefined")
    if not custom and "google_project_iam_custom_role" in types and not node_sa_roles:
        types.discard("google_project_iam_custom_role")
    table = facts()["resources"]
    perms: dict[str, list[str]] = {}
    for rtype in sorted(types):
        for p in (table.get(rtype) or {}).get("permissions", []):
            perms.setdefault(p, []).append(rtype)
    roles: list[str] = []
    if iam is not None and not custom:
        roles += list(iam.roles)
    roles += [r for r in node_sa_roles if r.startswith("roles/")]
    from mldiag_provision import orchestrators
    from mldiag_provision.orchestrators import Capability

    gke = existing = None
    unit = orchestrators.find(cluster.type)
    if unit is not None and unit.has(Capability.CREATES_CLUSTER):
        gke = (cluster.location, str(getattr(cluster, "release_channel", "REGULAR")),
               getattr(cluster, "min_master_version", None))
    elif (unit is not None and unit.has(Capability.EXISTING_CLUSTER)
          and plan.agents is not None):
        access = plan.agents.access
        if access.kind == "gke":  # a GKE cluster by name (not a kubeconfig context)
            need = None
            if plan.agents.strategy == "managed":  # the managed add-on's minimum GKE
                from mldiag_provision.catalog.requirements import managed_diagnostics_need
                from mldiag_provision.catalog.tpu import load_catalog

                need = str(managed_diagnostics_need(load_catalog()).version)
            existing = (access.location or cluster.location, access.cluster, need,
                        getattr(cluster, "workload_pool", None))
    slices = []
    for s in plan.slices:
        per_vm = s.chips_per_vm or 0
        slices.append(SliceNeed(
            name=s.name, kind=s.kind, accelerator_type=s.accelerator_type,
            machine_type=s.machine_type, vms=s.vms, count=s.count,
            chips=(s.chips or per_vm * s.vms) * s.count, capacity=s.capacity,
            reservation=s.reservation, reservation_project=s.reservation_project))
    return Target(
        project=plan.project, region=plan.region, zone=plan.zone,
        resource_types=tuple(sorted(types)),
        permissions={p: tuple(ts) for p, ts in sorted(perms.items())},
        roles=tuple(dict.fromkeys(roles)),
        custom_role_permissions=tuple(iam.permissions) if custom and iam is not None else (),
        services=tuple(plan.services), gke=gke, existing=existing, slices=tuple(slices))
