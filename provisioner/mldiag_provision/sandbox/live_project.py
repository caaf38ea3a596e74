"""``preflight --live --sandbox``: the live preflight asks the sandbox's project instead of
Google Cloud.

The live checks (:mod:`mldiag_provision.preflight.live.checks`, the official client
libraries) run unchanged against :class:`~mldiag_provision.sandbox.gcp_apis.GcpApis`, which
answers from a :class:`~mldiag_provision.sandbox.gcp_apis.FakeProject` built here from what
the sandbox holds (:func:`project_of`):

* the project: the recipe's ``spec.project``, ACTIVE;
* enabled APIs: the ``google_project_service`` objects of the sandbox cloud of ``-o DIR``
  (none in a new sandbox: the stack turns them on at apply);
* names already taken: the service accounts, custom roles, buckets, clusters, routers,
  firewalls, networks, subnetworks and resource policies the sandbox cloud holds;
* existing clusters (``orchestrator.clusterName``): the ``google_container_cluster``
  objects of the sandbox cloud (``sandbox``'s ``seed_gke_cluster``, or an earlier apply),
  with their version and Workload Identity pool;
* machine types: each is offered in the zones the catalog lists for it (TPU: tpu.yaml
  ``versions.<v>.zones``, the TPU regions-zones page; GPU: places.yaml ``gpuZones``, the
  Compute Engine regions-zones table), the same facts the offline preflight uses.

What the sandbox does not model is not checked: those rows become SKIP and say so
(:data:`UNMODELLED`, :func:`sandbox_rows`), never a PASS the sandbox could not know.

The environment is the sandbox's while the checks run (:func:`live_apis`): every variable
that names real credentials is removed (the session's list,
:data:`~mldiag_provision.sandbox.session.SCRUBBED`), the clients get the local endpoints and a
sandbox token; nothing is sent to Google.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mldiag_provision.catalog.tpu import Catalog
    from mldiag_provision.plan.types import StackPlan
    from mldiag_provision.preflight.live import LiveResult
    from mldiag_provision.sandbox.gcp_apis import FakeProject, GcpApis

UNMODELLED: dict[str, str] = {
    "permissions": "IAM permissions are not modelled (the sandbox lets its caller do "
                   "everything)",
    "roles": "which IAM roles Google offers is not modelled",
    "custom-role": "which permissions a custom role may hold is not modelled",
    "gke-version": "GKE's versions per release channel are not modelled (a sandbox cluster "
                   "runs the version its stack asks for)",
    "reservation": "reservations and capacity are not modelled",
    "quota": "quotas are not modelled",
}
"""Live check id -> why the sandbox does not answer it (its rows become SKIP)."""

# sandbox cloud object type -> (FakeProject.taken kind, the state attribute with the name)
_TAKEN = {
    "google_service_account": ("serviceAccount", "account_id"),
    "google_project_iam_custom_role": ("customRole", "role_id"),
    "google_storage_bucket": ("gcsBucket", "name"),
    "google_compute_router": ("computeRouter", "name"),
    "google_compute_firewall": ("computeFirewall", "name"),
    "google_compute_network": ("computeNetwork", "name"),
    "google_compute_subnetwork": ("computeSubnetwork", "name"),
    "google_compute_resource_policy": ("computeResourcePolicy", "name"),
}


def _states(cloud: Path | None, type_name: str) -> list[dict[str, Any]]:
    """The states of the sandbox cloud's objects of ``type_name`` (plugin.Cloud layout:
    ``<cloud>/<type>/<digest>.json`` holding ``{"state": {...}}``); [] without a cloud."""
    if cloud is None:
        return []
    out = []
    for path in sorted((cloud / type_name).glob("*.json")):
        try:
            state = json.loads(path.read_text(encoding="utf-8")).get("state")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(state, dict):
            out.append(state)
    return out


def _zones_offering(plan: StackPlan, catalog: Catalog) -> dict[str, list[str]]:
    """Machine type -> the zones the catalog lists for it, for every slice's machine type."""
    from mldiag_provision.catalog.places import places

    where = places()
    out: dict[str, list[str]] = {}
    for sp in plan.slices:
        mt = sp.machine_type
        if not mt or mt in out:
            continue
        if sp.kind == "tpu":
            out[mt] = next((list(v.zones) for v in catalog.versions.values()
                            if mt in v.machine_types), [])
        else:
            series = where.series_of(mt)
            out[mt] = where.zones_offering(series) if series else []
    return out


def project_of(plan: StackPlan, catalog: Catalog, cloud: Path | None) -> FakeProject:
    """The project the sandbox answers with for ``plan`` (see the module docstring); ``cloud``:
    the sandbox cloud directory of the work directory (``DIR/.mldiag/sandbox/cloud``), or
    None for a new, empty sandbox."""
    from mldiag_provision.sandbox.gcp_apis import FakeProject
    from mldiag_provision.sandbox.gke_cluster import DEFAULT_VERSION

    project = plan.project
    fp = FakeProject(project, channels={c: [DEFAULT_VERSION]
                                        for c in ("RAPID", "REGULAR", "STABLE")})
    fp.enabled = {str(s["service"]) for s in _states(cloud, "google_project_service")
                  if s.get("service") and s.get("project") in (None, project)}
    for type_name, (kind, key) in _TAKEN.items():
        for state in _states(cloud, type_name):
            if state.get(key):
                fp.taken.setdefault(kind, set()).add(str(state[key]))
    for c in _states(cloud, "google_container_cluster"):
        if not (c.get("name") and c.get("location")):
            continue
        version = str(c.get("master_version") or c.get("min_master_version") or DEFAULT_VERSION)
        wi = c.get("workload_identity_config") or []
        pool = wi[0].get("workload_pool") if wi and isinstance(wi[0], dict) else None
        body: dict[str, Any] = {"name": c["name"], "location": c["location"],
                                "currentMasterVersion": version, "status": "RUNNING"}
        if pool:
            body["workloadIdentityConfig"] = {"workloadPool": pool}
        fp.clusters[(str(c["location"]), str(c["name"]))] = body
    fp.zones_offering = _zones_offering(plan, catalog)
    return fp


def sandbox_rows(rows: list[LiveResult]) -> list[LiveResult]:
    """``rows`` with each check the sandbox does not model (:data:`UNMODELLED`) replaced by
    one SKIP that says why, in the place of its first row."""
    from mldiag_provision.preflight.live import SKIP, LiveResult

    out: list[LiveResult] = []
    seen: set[str] = set()
    for r in rows:
        why = UNMODELLED.get(r.check)
        if why is None:
            out.append(r)
        elif r.check not in seen:
            seen.add(r.check)
            out.append(LiveResult(r.check, SKIP, f"not checked in the sandbox: {why}",
                                  "sandbox"))
    return out


LIVE_MODULES = ("google.cloud.iam_admin_v1", "google.cloud.resourcemanager_v3",
                "google.cloud.service_usage_v1", "google.cloud.container_v1",
                "google.cloud.compute_v1")
"""What the ``[live]`` extra installs that the live checks and the sandbox's Google API
stand-in import (pyproject.toml)."""


@contextlib.contextmanager
def live_apis(plan: StackPlan, catalog: Catalog, workdir: Path | None) -> Iterator[GcpApis]:
    """While the body runs: the sandbox's Google Cloud APIs serve :func:`project_of` (from
    the sandbox of ``workdir``, when it has one), and ``os.environ`` points the live checks
    at them, without any real credential (put back afterwards).

    Raises:
      UsageError: the ``[sandbox]`` or ``[live]`` extra is missing (the gRPC server, the
        clients' types).
    """
    import importlib.util

    from mldiag_provision.errors import UsageError, extra_hint
    from mldiag_provision.sandbox.session import (
        EXTRA_MODULES,
        SCRUBBED,
        SCRUBBED_PREFIXES,
        sandbox_dir,
    )

    missing = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"the sandbox needs the [sandbox] extra ({', '.join(missing)} "
                         "missing)", hint=extra_hint("sandbox"))
    try:
        from mldiag_provision.sandbox.gcp_apis import GcpApis

        for module in LIVE_MODULES:  # the stand-in serves their wire types (gcp_apis.py)
            if importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError(name=module)
    except ImportError as exc:
        raise UsageError(f"the live checks need the Google Cloud client libraries ({exc.name} "
                         "is missing)", hint=extra_hint("live")) from None
    cloud = sandbox_dir(workdir) / "cloud" if workdir is not None else None
    fp = project_of(plan, catalog, cloud if cloud is not None and cloud.is_dir() else None)
    saved = dict(os.environ)
    try:
        with GcpApis(fp, token="sandbox-" + secrets.token_hex(8)) as apis:
            for key in list(os.environ):
                if key in SCRUBBED or key.startswith(SCRUBBED_PREFIXES):
                    del os.environ[key]
            os.environ.update(apis.env())
            yield apis
    finally:
        os.environ.clear()
        os.environ.update(saved)
