"""What the live preflight asks about, derived from a recipe's plan and its rendered stack.

No Google Cloud import here: building a :class:`Target` is pure and fast (unit-testable).
Facts (resource type -> permissions, permission -> role, quota ids) come from
``data/gcp.yaml``, each with its public source.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from mldiag_provision.plan.types import StackPlan

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


@dataclass(frozen=True)
class CpuNeed:
    """vCPUs one CPU pool of the stack needs at its largest: ``vms`` VMs of ``machine_type``
    with ``vcpus`` each (None: the count is not in the name, e.g. a shared-core E2)."""

    name: str  # "system node pool", "Slurm node set cpu", "Slurm login nodes"
    machine_type: str
    vms: int
    vcpus: int | None
    capacity: str  # on-demand | spot


_PREDEFINED = re.compile(r"^[a-z][a-z0-9]*-[a-z]+(?:-[a-z]+)?-(\d+)$")


def vcpus_of(machine_type: str) -> int | None:
    """vCPUs of a predefined machine type, from its name (``n2-standard-4`` -> 4,
    ``c3-highcpu-22`` -> 22); None for names that do not end in the count (shared-core
    ``e2-medium``, custom ``n2-custom-4-8192``, ``-lssd`` variants). Source: the naming of
    Compute Engine's predefined machine types, "the number of vCPUs" last
    (https://cloud.google.com/compute/docs/machine-resource#machine_type_terminology;
    confidence M, read from the tables, not a stated rule)."""
    if "custom" in machine_type:
        return None
    m = _PREDEFINED.match(machine_type)
    return int(m.group(1)) if m else None


def cpu_needs(plan: Mapping[str, Any]) -> tuple[CpuNeed, ...]:
    """The CPU pools of ``plan`` (``StackPlan.to_dict()``): the GKE Standard system pool (one
    node per zone of the region, the module default ``system_pool_node_count`` 1; zones from
    places.yaml, 1 when not listed), and on Slurm the CPU node sets (static + dynamic) and the
    login nodes."""
    out: list[CpuNeed] = []
    cluster = plan.get("cluster") or {}
    if cluster.get("type") == "gke-standard" and cluster.get("system_pool_machine_type"):
        from mldiag_provision.catalog.places import places

        zones = len(places().zones.get(str(plan["region"])) or ()) or 1
        mt = str(cluster["system_pool_machine_type"])
        out.append(CpuNeed("system node pool", mt, zones, vcpus_of(mt), "on-demand"))
    slurm = plan.get("slurm") or {}
    out += _slurm_node_set_cpus(slurm)
    login = slurm.get("login_nodes")
    if login and login.get("machine_type") and int(login.get("count") or 0):
        mt = str(login["machine_type"])
        out.append(CpuNeed("Slurm login nodes", mt, int(login["count"]), vcpus_of(mt),
                           "on-demand"))
    return tuple(out)


def _slurm_node_set_cpus(slurm: Mapping[str, Any]) -> list[CpuNeed]:
    """The CPU node sets of the plan's ``slurm`` part (``node_sets`` with their
    ``compute`` entries): machine type, static + maximum dynamic nodes, on-demand or spot
    capacity; node sets of a slice (their quota is the slice's) and empty ones left out."""
    out: list[CpuNeed] = []
    compute = {c["id"]: c for c in slurm.get("compute", ())}
    for ns in slurm.get("node_sets", ()):
        if ns.get("slice"):
            continue  # an accelerator node set: its chips/GPUs are the slice's quota
        c = compute.get(ns.get("compute_id"), {})
        mt = str(ns.get("machine_type") or c.get("machine_type") or "")
        n = int(ns.get("static_node_count") or 0) + int(ns.get("max_dynamic_node_count") or 0)
        capacity = str(c.get("capacity") or "on-demand")
        if mt and n and capacity in ("on-demand", "spot"):
            out.append(CpuNeed(f"Slurm node set {ns['id']}", mt, n, vcpus_of(mt), capacity))
    return out


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
    names: tuple[tuple[str, str, str, str], ...] = ()
    """(kind, scope, name, plan field) of every name the stack creates that is not the
    stack's own already (:mod:`mldiag_provision.plan.owned`): each must be free in Google
    Cloud (check ``names``)."""
    own_names: int = 0
    cpus: tuple[CpuNeed, ...] = ()
    """The CPU pools the stack creates (:func:`cpu_needs`): checked against the region's CPU
    quotas (limit minus usage)."""
    """How many names the stack creates are its own already (the work directory's previous
    plan has them): not asked about."""


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


def build_target(plan: StackPlan, files: Mapping[str, bytes | str],
                 known: Collection[tuple[str, str, str]] = ()) -> Target:
    """The :class:`Target` of ``plan`` whose rendered files are ``files`` (path -> content).

    Types a module holds but the plan does not create (``count = 0``: an existing bucket or
    service account, no custom role) are dropped, so no permission is asked for nothing.
    ``known``: the (kind, scope, name) keys the stack already has (the names of its work
    directory's previous plan, :func:`known_names`); the others must be free.
    """
    iam = getattr(plan.diagnostics, "iam", None)
    custom = bool(iam is not None and iam.mode != "predefined")
    node_sa_roles = tuple(getattr(plan.cluster, "node_service_account_roles", ()) or ())
    types = _created_types(plan, files, custom, node_sa_roles)
    table = facts()["resources"]
    perms: dict[str, list[str]] = {}
    for rtype in sorted(types):
        for p in (table.get(rtype) or {}).get("permissions", []):
            perms.setdefault(p, []).append(rtype)
    roles: list[str] = []
    if iam is not None and not custom:
        roles += list(iam.roles)
    roles += [r for r in node_sa_roles if r.startswith("roles/")]
    gke, existing = _cluster_to_check(plan)
    from mldiag_provision.plan.owned import owned_names

    data = plan.to_dict()
    owned = owned_names(data)
    known = set(known)
    names = tuple((o.kind, o.scope, o.name, o.field) for o in owned if o.key not in known)
    return Target(
        names=names, own_names=len(owned) - len(names),
        project=plan.project, region=plan.region, zone=plan.zone,
        resource_types=tuple(sorted(types)),
        permissions={p: tuple(ts) for p, ts in sorted(perms.items())},
        roles=tuple(dict.fromkeys(roles)),
        custom_role_permissions=tuple(iam.permissions) if custom and iam is not None else (),
        services=tuple(plan.services), gke=gke, existing=existing,
        slices=_slice_needs(plan), cpus=cpu_needs(data))


def _created_types(plan: StackPlan, files: Mapping[str, bytes | str], custom: bool,
                   node_sa_roles: tuple[str, ...]) -> set[str]:
    """The resource types of ``files`` (:func:`resource_types`) less those the plan does not
    create: an existing profiles bucket, an existing workload service account (when the
    cluster has no node service account), a custom role when the IAM mode is predefined
    (``custom`` false) and no node role needs one."""
    types = resource_types(files)
    diag = plan.diagnostics
    bucket = getattr(diag, "profiles_bucket", None)
    if bucket is not None and not bucket.create:
        types.discard("google_storage_bucket")
    sa = getattr(diag, "service_account", None)
    if sa is not None and not sa.create and not hasattr(plan.cluster,
                                                         "node_service_account_id"):
        types.discard("google_service_account")
    if not custom and "google_project_iam_custom_role" in types and not node_sa_roles:
        types.discard("google_project_iam_custom_role")
    return types


def _cluster_to_check(plan: StackPlan) -> tuple[tuple[str, str, str | None] | None,
                                                 tuple[str, str, str | None, str | None]
                                                 | None]:
    """``(gke, existing)`` of :class:`Target`: a cluster the stack creates (location, release
    channel, minimum version), or an existing GKE cluster named by the agents' access
    (location, name, the managed add-on's minimum GKE with managed agents, the expected
    workload pool); None for the other."""
    from mldiag_provision import orchestrators
    from mldiag_provision.orchestrators import Capability

    cluster = plan.cluster
    unit = orchestrators.find(cluster.type)
    if unit is not None and unit.has(Capability.CREATES_CLUSTER):
        return (cluster.location, str(getattr(cluster, "release_channel", "REGULAR")),
                getattr(cluster, "min_master_version", None)), None
    if not (unit is not None and unit.has(Capability.EXISTING_CLUSTER)
            and plan.agents is not None):
        return None, None
    access = plan.agents.access
    if access.kind != "gke":  # a GKE cluster by name (not a kubeconfig context)
        return None, None
    need = None
    if plan.agents.strategy == "managed":  # the managed add-on's minimum GKE
        from mldiag_provision.catalog.requirements import managed_diagnostics_need
        from mldiag_provision.catalog.tpu import load_catalog

        need = str(managed_diagnostics_need(load_catalog()).version)
    return None, (access.location or cluster.location, access.cluster, need,
                  getattr(cluster, "workload_pool", None))


def _slice_needs(plan: StackPlan) -> tuple[SliceNeed, ...]:
    """Each slice of ``plan`` as the checks need it: its chips over every VM and every slice
    of a multislice (``chips``, else chips per VM x VMs, times ``count``)."""
    slices = []
    for s in plan.slices:
        per_vm = s.chips_per_vm or 0
        slices.append(SliceNeed(
            name=s.name, kind=s.kind, accelerator_type=s.accelerator_type,
            machine_type=s.machine_type, vms=s.vms, count=s.count,
            chips=(s.chips or per_vm * s.vms) * s.count, capacity=s.capacity,
            reservation=s.reservation, reservation_project=s.reservation_project))
    return tuple(slices)


# the attribute that holds a resource's name in Terraform state, by resource type, and the
# plan/owned.py kind it is
_STATE_NAMES = {"google_service_account": ("account_id", "serviceAccount"),
                "google_project_iam_custom_role": ("role_id", "customRole"),
                "google_storage_bucket": ("name", "gcsBucket"),
                "google_container_cluster": ("name", "gkeCluster"),
                "google_compute_router": ("name", "computeRouter"),
                "google_compute_router_nat": ("name", "routerNat"),
                "google_compute_firewall": ("name", "computeFirewall"),
                "google_compute_network": ("name", "computeNetwork"),
                "google_compute_subnetwork": ("name", "computeSubnetwork"),
                "google_compute_resource_policy": ("name", "computeResourcePolicy"),
                "google_hypercomputecluster_cluster": ("cluster_id", "slurmCluster")}
_BACKEND = re.compile(r'^\s*backend\s+"', re.MULTILINE)


def _state_names(state: Any) -> set[tuple[str, str]]:
    """(kind, name) of the resources in a Terraform state document (format version 4)."""
    out: set[tuple[str, str]] = set()
    for r in (state.get("resources") or []) if isinstance(state, dict) else ():
        attr_kind = _STATE_NAMES.get(str(r.get("type"))) if r.get("mode") == "managed" else None
        if attr_kind is None:
            continue
        for inst in r.get("instances") or ():
            value = (inst.get("attributes") or {}).get(attr_kind[0])
            if value:
                out.add((attr_kind[1], str(value)))
    return out


def known_names(workdir: Path | str | None) -> frozenset[tuple[str, str, str]]:
    """The (kind, scope, name) of what the stack in ``workdir`` already has, read before a
    render replaces its plan.json: names that exist in Google Cloud under them are the
    stack's own. With local state (``terraform.tfstate`` of the root stage): the names of
    the work directory's plan that the state holds; none when nothing was applied (no state
    file and no ``backend`` block). With a remote backend (not read here): every name of
    the plan (never wrongly refused; a name taken elsewhere then fails at apply). Empty
    without a work directory or a plan there."""
    if workdir is None or not str(workdir).strip():
        return frozenset()
    from mldiag_provision.plan.owned import owned_names
    from mldiag_provision.plan.previous import previous_plan

    root = Path(workdir)
    prev = previous_plan(root)
    if prev is None:
        return frozenset()
    owned = owned_names(prev)
    try:
        state = json.loads((root / "terraform.tfstate").read_text(encoding="utf-8"))
    except FileNotFoundError:
        remote = any(_BACKEND.search(tf.read_text(encoding="utf-8", errors="replace"))
                     for tf in root.glob("*.tf"))
        return frozenset(o.key for o in owned) if remote else frozenset()
    except (OSError, ValueError):
        return frozenset(o.key for o in owned)  # unreadable: do not refuse its names
    held = _state_names(state)
    return frozenset(o.key for o in owned if (o.kind, o.name) in held)
