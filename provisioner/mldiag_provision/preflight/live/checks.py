"""The live checks, with the official Google Cloud client libraries (the ``live`` extra),
REST transport, every call bounded (``timeout_s``, no retries) and run concurrently.

One function per concern, each returning :class:`~mldiag_provision.preflight.live.LiveResult`
rows. A denied, failed or unanswered call is a WARN naming what could not be checked, never
a crash and never a FAIL: only what Google Cloud answered can FAIL.

APIs asked (REST reference of each):
  * Resource Manager v3 ``projects.get``, ``projects.testIamPermissions``
    (https://cloud.google.com/resource-manager/reference/rest/v3/projects);
  * IAM v1 ``roles.get``, ``permissions.queryTestablePermissions``
    (https://cloud.google.com/iam/docs/reference/rest);
  * Service Usage v1 ``services.list`` (https://cloud.google.com/service-usage/docs/reference/rest);
  * GKE v1 ``projects.locations.getServerConfig``, ``projects.locations.clusters.get``
    (https://cloud.google.com/kubernetes-engine/docs/reference/rest);
  * Compute v1 ``machineTypes.aggregatedList``, ``reservations.get``, and ``get`` of routers,
    firewalls, networks, subnetworks and resource policies (names the stack creates)
    (https://cloud.google.com/compute/docs/reference/rest/v1);
  * IAM v1 ``serviceAccounts.get`` and ``roles.get`` of a project role, Cloud Storage
    ``buckets.get`` (https://cloud.google.com/storage/docs/json_api/v1/buckets/get), GKE
    ``clusters.get``: whether a name the stack creates is taken (:func:`check_names`);
  * Cloud Quotas v1 ``quotaInfos.get``
    (https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos/get)
    for a quota's limit, and Compute v1 ``regions.get`` (``quotas[].usage``,
    https://cloud.google.com/compute/docs/reference/rest/v1/regions/get) for its current usage.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mldiag_provision.errors import UsageError
from mldiag_provision.preflight.live import (
    ENDPOINT_ENV,
    FAIL,
    GRPC_ENDPOINT_ENV,
    PASS,
    SKIP,
    WARN,
    LiveResult,
)
from mldiag_provision.preflight.live.target import CpuNeed, SliceNeed, Target, facts, role_for

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
TEST_IAM_BATCH = 100
"""Permissions per testIamPermissions request (the API's limit: "a maximum of 100
permissions", https://cloud.google.com/resource-manager/reference/rest/v3/projects/testIamPermissions
(unverified wording))."""


def credentials() -> Any:
    """The caller's credentials: ``GOOGLE_OAUTH_ACCESS_TOKEN`` as is, else application
    default credentials (the google provider's order).

    Raises:
      UsageError: neither is available.
    """
    token = os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN", "").strip()
    if token:
        from google.oauth2.credentials import Credentials

        return Credentials(token)
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        creds, _ = google.auth.default(scopes=list(SCOPES))
    except DefaultCredentialsError as exc:
        raise UsageError(f"no Google Cloud credentials for the live checks: {exc}",
                         hint="run `gcloud auth application-default login`, set "
                              "GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_OAUTH_ACCESS_TOKEN, or "
                              "leave out --live") from None
    return creds


class Session:
    """Clients (built lazily, once each) and answers shared between checks."""

    def __init__(self, target: Target, *, timeout_s: float, creds: Any) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.creds = creds
        self.endpoint = os.environ.get(ENDPOINT_ENV, "").strip() or None
        self._lock = threading.Lock()
        self._clients: dict[str, Any] = {}
        self._client_locks: dict[str, threading.Lock] = {}
        self._once: dict[str, tuple[threading.Event, list[Any]]] = {}
        self.calls = 0
        self.call_s = 0.0

    def client(self, name: str) -> Any:
        """The client ``name``, built once; built under its own lock, so a slow import (the
        compute library takes seconds) holds up only the checks that need that client."""
        with self._lock:
            lock = self._client_locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self._clients:
                self._clients[name] = self._build(name)
            return self._clients[name]

    def _build(self, name: str) -> Any:
        from google.api_core.client_options import ClientOptions

        opts = ClientOptions(api_endpoint=self.endpoint,
                             quota_project_id=self.target.project)
        kw = {"transport": "rest", "credentials": self.creds, "client_options": opts}
        if name == "projects":
            from google.cloud import resourcemanager_v3

            return resourcemanager_v3.ProjectsClient(**kw)
        if name == "iam":  # the IAM admin client speaks gRPC only (no REST transport)
            from google.cloud import iam_admin_v1

            grpc_endpoint = os.environ.get(GRPC_ENDPOINT_ENV, "").strip()
            if grpc_endpoint:  # a local plaintext server (mldiag_provision/sandbox/gcp_apis.py)
                import grpc
                from google.cloud.iam_admin_v1.services.iam.transports import IAMGrpcTransport

                return iam_admin_v1.IAMClient(transport=IAMGrpcTransport(
                    channel=grpc.insecure_channel(grpc_endpoint)))
            return iam_admin_v1.IAMClient(credentials=self.creds, client_options=ClientOptions(
                quota_project_id=self.target.project))
        if name == "usage":
            from google.cloud import service_usage_v1

            return service_usage_v1.ServiceUsageClient(**kw)
        if name == "gke":
            from google.cloud import container_v1

            return container_v1.ClusterManagerClient(**kw)
        if name == "machine_types":
            from google.cloud import compute_v1

            return compute_v1.MachineTypesClient(**kw)
        if name == "reservations":
            from google.cloud import compute_v1

            return compute_v1.ReservationsClient(**kw)
        if name == "regions":
            from google.cloud import compute_v1

            return compute_v1.RegionsClient(**kw)
        if name in _COMPUTE_NAME_CLIENTS:
            from google.cloud import compute_v1

            return getattr(compute_v1, _COMPUTE_NAME_CLIENTS[name])(**kw)
        if name == "quotas":
            from google.cloud import cloudquotas_v1

            return cloudquotas_v1.CloudQuotasClient(**kw)
        raise KeyError(name)

    def call(self, client: str, method: str, **kw: Any) -> Any:
        """One bounded call (``timeout_s``, no retry); pagers are drained here, so every
        page is fetched under the same bound."""
        started = time.perf_counter()
        try:
            result = getattr(self.client(client), method)(retry=None, timeout=self.timeout_s,
                                                          **kw)
            if hasattr(result, "pages"):
                result = list(result)
            return result
        finally:
            with self._lock:
                self.calls += 1
                self.call_s += time.perf_counter() - started

    def once(self, key: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` computed by the first caller; the others wait for its value (or error)."""
        with self._lock:
            entry = self._once.get(key)
            first = entry is None
            if first:
                entry = (threading.Event(), [])
                self._once[key] = entry
        event, box = entry  # type: ignore[misc]
        if first:
            try:
                box.append(("ok", fn()))
            except Exception as exc:
                box.append(("err", exc))
            event.set()
        else:
            event.wait()
        kind, value = box[0]
        if kind == "err":
            raise value
        return value


# --- errors -----------------------------------------------------------------------------------

def _kind(exc: BaseException) -> str:
    """denied | notfound | invalid | timeout | other."""
    from google.api_core import exceptions as gexc

    if isinstance(exc, gexc.Forbidden | gexc.Unauthorized):
        return "denied"
    if isinstance(exc, gexc.NotFound):
        return "notfound"
    if isinstance(exc, gexc.BadRequest):
        return "invalid"
    if isinstance(exc, gexc.DeadlineExceeded | TimeoutError):
        return "timeout"
    try:
        import requests

        if isinstance(exc, requests.exceptions.Timeout):
            return "timeout"
    except ImportError:  # pragma: no cover
        pass
    return "other"


def _disabled_service(exc: BaseException) -> str | None:
    """The API named by a SERVICE_DISABLED error (google.rpc.ErrorInfo ``reason`` and
    ``metadata.service``, https://cloud.google.com/apis/design/errors#error_info), or None."""
    if getattr(exc, "reason", None) != "SERVICE_DISABLED":
        return None
    meta = getattr(exc, "metadata", None) or {}
    return str(meta.get("service") or "the API")


def _why(exc: BaseException) -> str:
    msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(msg).split())[:300]


def _could_not(check: str, what: str, evidence: str, exc: BaseException, s: Session,
               permission: str | None = None) -> LiveResult:
    """The WARN row of a call that did not answer: what could not be checked and why."""
    kind = _kind(exc)
    off = _disabled_service(exc)
    if off:  # the API is off in the project (ErrorInfo reason SERVICE_DISABLED)
        return LiveResult(check, WARN, f"could not check {what}: {off} is off in project "
                          f"{s.target.project}", evidence,
                          f"gcloud services enable {off} --project {s.target.project} "
                          "(or ignore: the stack does not need it)")
    if kind == "denied":
        role = role_for(permission) if permission else None
        hint = (f"to check it, grant {permission}" + (f" (e.g. {role})" if role else "")
                if permission else "check the credentials and that the API is on")
        return LiveResult(check, WARN, f"could not check {what}: permission denied "
                          f"({_why(exc)})", evidence, hint)
    if kind == "timeout":
        return LiveResult(check, WARN, f"could not check {what}: no answer within "
                          f"{s.timeout_s:g}s", evidence,
                          "retry, or raise --live-timeout; check your network/proxy")
    return LiveResult(check, WARN, f"could not check {what}: {type(exc).__name__}: "
                      f"{_why(exc)}", evidence, "retry; run with --offline to skip")


# --- checks -----------------------------------------------------------------------------------

def check_project(s: Session) -> list[LiveResult]:
    """The project exists and is ACTIVE (Resource Manager ``projects.get``)."""
    p = s.target.project
    ev = f"projects/{p}"
    try:
        proj = s.call("projects", "get_project", name=ev)
    except Exception as exc:
        if _kind(exc) == "notfound":
            return [LiveResult("project", FAIL, f"project {p} does not exist", ev,
                               "check spec.project (the project ID, not its name or number)")]
        if _kind(exc) == "denied":
            return [LiveResult("project", WARN, f"could not check project {p}: it does not "
                               "exist or the caller may not see it (missing "
                               "resourcemanager.projects.get)", ev,
                               "check spec.project, or grant roles/browser on it")]
        return [_could_not("project", f"project {p}", ev, exc, s)]
    state = proj.state.name if hasattr(proj.state, "name") else str(proj.state)
    if state != "ACTIVE":
        return [LiveResult("project", FAIL, f"project {p} is {state}, not ACTIVE", ev,
                           "restore the project (gcloud projects undelete) or use another")]
    return [LiveResult("project", PASS, f"project {p} is ACTIVE", ev)]


def _granted(s: Session) -> tuple[set[str], set[str]]:
    """(granted, invalid) among the permissions the stack needs; testIamPermissions in
    batches; a batch the API refuses as invalid is re-asked one permission at a time, so one
    wrong name in our data costs a WARN, not the whole check."""
    t = s.target
    wanted = sorted(set(t.permissions) | {"serviceusage.services.enable"})
    resource = f"projects/{t.project}"

    def ask(perms: list[str]) -> set[str]:
        resp = s.call("projects", "test_iam_permissions",
                      request={"resource": resource, "permissions": perms})
        return set(resp.permissions)

    def compute() -> tuple[set[str], set[str]]:
        granted: set[str] = set()
        invalid: set[str] = set()
        for i in range(0, len(wanted), TEST_IAM_BATCH):
            batch = wanted[i:i + TEST_IAM_BATCH]
            try:
                granted |= ask(batch)
            except Exception as exc:
                if _kind(exc) != "invalid":
                    raise
                for p in batch:
                    try:
                        granted |= ask([p])
                    except Exception as one:
                        if _kind(one) != "invalid":
                            raise
                        invalid.add(p)
        return granted, invalid

    return s.once("granted", compute)  # type: ignore[no-any-return]


def check_permissions(s: Session) -> list[LiveResult]:
    """The caller holds every permission the rendered stack needs (testIamPermissions on the
    project); each missing one is named with a predefined role that grants it."""
    t = s.target
    ev = f"projects/{t.project}:testIamPermissions"
    try:
        granted, invalid = _granted(s)
    except Exception as exc:
        return [_could_not("permissions", "the caller's permissions", ev, exc, s)]
    out: list[LiveResult] = []
    missing = [p for p in t.permissions if p not in granted and p not in invalid]
    by_role: dict[str, list[str]] = {}
    for p in missing:
        by_role.setdefault(role_for(p) or "(no predefined role on record)", []).append(p)
    for role, perms in sorted(by_role.items()):
        needers = sorted({r for p in perms for r in t.permissions[p]})
        out.append(LiveResult(
            "permissions", FAIL,
            f"the caller lacks {', '.join(perms)} (needed by {', '.join(needers)})", ev,
            f"grant {role} on project {t.project} (it includes "
            f"{'it' if len(perms) == 1 else 'them'}), or use an account that has it"))
    for p in sorted(invalid):
        out.append(LiveResult("permissions", WARN, f"could not test {p}: the API calls it "
                              "invalid for a project", ev,
                              "our permission data may be out of date; please report it"))
    if not missing:
        out.insert(0, LiveResult("permissions", PASS, f"the caller holds all "
                                 f"{len(t.permissions) - len(invalid)} permissions the stack "
                                 f"needs ({len(t.resource_types)} resource types)", ev))
    return out


def check_roles(s: Session) -> list[LiveResult]:
    """Every predefined role the stack grants exists (IAM ``roles.get``)."""
    out: list[LiveResult] = []
    ok: list[str] = []

    def get(role: str) -> Any:
        try:
            return s.call("iam", "get_role", request={"name": role})
        except Exception as exc:
            return exc

    roles = list(s.target.roles)
    if not roles:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(roles))) as pool:  # one round trip
        answers = list(pool.map(get, roles))
    for role, r in zip(roles, answers, strict=True):
        if isinstance(r, Exception):
            exc = r
            if _kind(exc) == "notfound":
                out.append(LiveResult("roles", FAIL, f"role {role} does not exist", role,
                                      "the catalog's role list is out of date: set "
                                      "diagnostics.iam.mode: custom-role, or report it"))
            else:
                out.append(_could_not("roles", f"role {role}", role, exc, s))
            continue
        stage = r.stage.name if hasattr(r.stage, "name") else str(r.stage)
        if stage == "DEPRECATED" or r.deleted:
            what = "deleted" if r.deleted else "DEPRECATED"
            out.append(LiveResult("roles", WARN, f"role {role} is {what}", role,
                                  "check diagnostics.iam in the recipe"))
        else:
            ok.append(role)
    if ok:
        out.insert(0, LiveResult("roles", PASS, f"{len(ok)} role(s) the stack grants exist: "
                                 f"{', '.join(ok)}", "roles/*"))
    return out


def check_custom_role(s: Session) -> list[LiveResult]:
    """Every permission of the stack's custom role may be used in custom roles
    (``queryTestablePermissions`` on the project: ``customRolesSupportLevel``,
    https://cloud.google.com/iam/docs/custom-roles-permissions-support)."""
    t = s.target
    if not t.custom_role_permissions:
        return []
    resource = f"//cloudresourcemanager.googleapis.com/projects/{t.project}"
    ev = f"permissions:queryTestablePermissions({resource})"
    try:
        perms = s.call("iam", "query_testable_permissions",
                       request={"full_resource_name": resource, "page_size": 1000})
    except Exception as exc:
        return [_could_not("custom-role", "the custom role's permissions", ev, exc, s)]
    level = {p.name: (p.custom_roles_support_level.name
                      if hasattr(p.custom_roles_support_level, "name")
                      else str(p.custom_roles_support_level)) for p in perms}
    groups: dict[str, list[str]] = {}
    for p in t.custom_role_permissions:
        groups.setdefault(level.get(p) or "MISSING", []).append(p)

    def named(perms: list[str]) -> str:
        return ("permission " if len(perms) == 1 else "permissions ") + ", ".join(perms)

    out: list[LiveResult] = []
    if "MISSING" in groups:
        perms = groups["MISSING"]
        out.append(LiveResult("custom-role", FAIL, f"{named(perms)} of the custom role "
                              f"{'is' if len(perms) == 1 else 'are'} not testable on project "
                              f"{t.project} (unknown, or its API is off)", ev,
                              "set diagnostics.iam.mode: predefined, or turn the API on first"))
    if "NOT_SUPPORTED" in groups:
        out.append(LiveResult("custom-role", FAIL, f"{named(groups['NOT_SUPPORTED'])} cannot "
                              "be used in custom roles (NOT_SUPPORTED)", ev,
                              "set diagnostics.iam.mode: predefined"))
    if "TESTING" in groups:
        out.append(LiveResult("custom-role", WARN, f"{named(groups['TESTING'])} "
                              f"{'is' if len(groups['TESTING']) == 1 else 'are'} TESTING in "
                              "custom roles (may change without notice)", ev, None))
    if not any(r.status == FAIL for r in out):
        out.insert(0, LiveResult("custom-role", PASS, f"all {len(t.custom_role_permissions)} "
                                 "custom role permissions are supported", ev))
    return out


def check_services(s: Session) -> list[LiveResult]:
    """Which APIs are on, which the stack turns on, and whether the caller may
    (Service Usage ``services.list`` with ``state:ENABLED``)."""
    t = s.target
    ev = f"projects/{t.project}/services"
    try:
        services = s.call("usage", "list_services",
                          request={"parent": f"projects/{t.project}",
                                   "filter": "state:ENABLED", "page_size": 200})
    except Exception as exc:
        return [_could_not("apis", "which APIs are on", ev, exc, s,
                           permission="serviceusage.services.list")]
    on = {svc.config.name or svc.name.rsplit("/", 1)[-1] for svc in services}
    off = [svc for svc in t.services if svc not in on]
    if not off:
        return [LiveResult("apis", PASS, f"all {len(t.services)} APIs the stack needs are on",
                           ev)]
    try:
        granted, _ = _granted(s)
    except Exception:
        return [LiveResult("apis", WARN, f"the stack turns on {', '.join(off)}; could not "
                           "tell whether the caller may (testIamPermissions failed)", ev,
                           "grant roles/serviceusage.serviceUsageAdmin if apply fails")]
    if "serviceusage.services.enable" not in granted:
        return [LiveResult("apis", FAIL, f"{', '.join(off)} {'is' if len(off) == 1 else 'are'}"
                           " off and the caller lacks serviceusage.services.enable to turn "
                           f"{'it' if len(off) == 1 else 'them'} on", ev,
                           f"grant roles/serviceusage.serviceUsageAdmin, or ask an owner: "
                           f"gcloud services enable {' '.join(off)} --project {t.project}")]
    return [LiveResult("apis", PASS, f"{len(t.services) - len(off)} APIs on; the stack turns "
                       f"on {', '.join(off)} (the caller may)", ev)]


def _versions_ok(versions: list[str], minimum: str) -> list[str]:
    """The full versions among ``versions`` at or above ``minimum`` (unparseable: left out)."""
    from mldiag_provision.catalog.gke_version import GkeVersion, at_least

    need = GkeVersion.parse(minimum)
    if need is None:
        return list(versions)
    ok = []
    for v in versions:
        parsed = GkeVersion.parse(v)
        if parsed is not None and at_least(parsed, need):
            ok.append(v)
    return ok


def check_gke_version(s: Session) -> list[LiveResult]:
    """The version the recipe needs is offered on its channel in its location (GKE
    ``getServerConfig``: ``channels[].validVersions``)."""
    t = s.target
    if t.gke is None:
        return []
    location, channel, minimum = t.gke
    ev = f"projects/{t.project}/locations/{location}/serverConfig"
    try:
        cfg = s.call("gke", "get_server_config", request={"name": f"projects/{t.project}/"
                                                                  f"locations/{location}"})
    except Exception as exc:
        return [_could_not("gke-version", f"the GKE versions of {location}", ev, exc, s,
                           permission="container.clusters.list")]
    chan = next((c for c in cfg.channels
                 if (c.channel.name if hasattr(c.channel, "name") else str(c.channel))
                 == channel.upper()), None)
    if chan is None:
        return [LiveResult("gke-version", FAIL, f"release channel {channel} is not offered in "
                           f"{location}", ev, "choose RAPID, REGULAR or STABLE")]
    versions = list(chan.valid_versions)
    if minimum is None:
        return [LiveResult("gke-version", PASS, f"{channel} in {location} offers "
                           f"{chan.default_version or (versions[0] if versions else '?')} "
                           "(default); the recipe needs no minimum", ev)]
    ok = _versions_ok(versions, minimum)
    if not ok:
        newest = versions[0] if versions else "none"
        return [LiveResult("gke-version", FAIL, f"GKE {minimum} or later is not offered on the "
                           f"{channel} channel in {location} (newest offered: {newest})", ev,
                           "choose the RAPID channel or another region, or wait for the "
                           "version to reach this channel")]
    return [LiveResult("gke-version", PASS, f"{channel} in {location} offers {len(ok)} "
                       f"version(s) >= {minimum} (e.g. {ok[0]})", ev)]


def check_existing_cluster(s: Session) -> list[LiveResult]:
    """An existing GKE cluster exists, runs a version the stack needs and has the Workload
    Identity pool the binding uses (GKE ``clusters.get``)."""
    t = s.target
    if t.existing is None:
        return []
    location, name, minimum, pool = t.existing
    ev = f"projects/{t.project}/locations/{location}/clusters/{name}"
    try:
        c = s.call("gke", "get_cluster", request={"name": ev})
    except Exception as exc:
        if _kind(exc) == "notfound":
            return [LiveResult("cluster", FAIL, f"cluster {name} does not exist in {location}",
                               ev, "check orchestrator.clusterName / clusterLocation")]
        return [_could_not("cluster", f"cluster {name}", ev, exc, s,
                           permission="container.clusters.get")]
    out: list[LiveResult] = []
    version = c.current_master_version
    if minimum and not _versions_ok([version], minimum):
        out.append(LiveResult("cluster", FAIL, f"cluster {name} runs GKE {version}, below "
                              f"{minimum} that the stack needs", ev,
                              "upgrade the control plane, or set diagnostics.agents: manual"))
    actual_pool = c.workload_identity_config.workload_pool if c.workload_identity_config \
        else ""
    if pool and actual_pool != pool:
        out.append(LiveResult("cluster", FAIL, f"cluster {name} has Workload Identity pool "
                              f"'{actual_pool or 'none'}', not {pool}", ev,
                              f"gcloud container clusters update {name} --location {location}"
                              f" --workload-pool={pool}"))
    if not out:
        out.append(LiveResult("cluster", PASS, f"cluster {name} runs GKE {version}"
                              + (f", pool {actual_pool}" if actual_pool else ""), ev))
    return out


def check_machine_type(s: Session, machine_type: str, slices: list[str]) -> list[LiveResult]:
    """The machine type is offered in the recipe's zone (or some zone of its region)
    (Compute ``machineTypes.aggregatedList`` filtered by name)."""
    t = s.target
    ev = f"projects/{t.project}/aggregated/machineTypes?filter=name={machine_type}"
    try:
        scoped = s.call("machine_types", "aggregated_list",
                        request={"project": t.project, "filter": f'name = "{machine_type}"'})
    except Exception as exc:
        return [_could_not("machine-type", f"where {machine_type} is offered", ev, exc, s,
                           permission="compute.machineTypes.list")]
    zones = sorted(scope.rsplit("/", 1)[-1] for scope, lst in scoped
                   if any(m.name == machine_type for m in lst.machine_types))
    in_region = [z for z in zones if z.rsplit("-", 1)[0] == t.region]
    who = f"slice {', '.join(slices)}"
    if t.zone:
        if t.zone not in zones:
            return [LiveResult("machine-type", FAIL, f"{machine_type} ({who}) is not offered in "
                               f"zone {t.zone}" + (f"; offered in {', '.join(in_region)}"
                                                   if in_region else ""), ev,
                               "set spec.zone to a zone that offers it"
                               if in_region else "choose a region that offers it")]
        return [LiveResult("machine-type", PASS, f"{machine_type} ({who}) is offered in "
                           f"{t.zone}", ev)]
    if not in_region:
        return [LiveResult("machine-type", FAIL, f"{machine_type} ({who}) is not offered in "
                           f"any zone of {t.region}", ev, "choose a region that offers it")]
    return [LiveResult("machine-type", PASS, f"{machine_type} ({who}) is offered in "
                       f"{', '.join(in_region)}", ev)]


def _enum(value: Any) -> str:
    return value.name if hasattr(value, "name") else str(value or "")


def check_reservation(s: Session, sl: SliceNeed) -> list[LiveResult]:
    """A named reservation exists, is shared with the project when owned elsewhere, holds the
    slice's machine type and has enough free VMs (Compute ``reservations.get``:
    ``specificReservation.count/inUseCount/instanceProperties.machineType``,
    ``shareSettings``; https://cloud.google.com/compute/docs/instances/reservations-shared)."""
    t = s.target
    owner = sl.reservation_project or t.project
    name = str(sl.reservation)
    found = _find_reservation(s, owner, name)
    if isinstance(found, LiveResult):
        return [found]
    zone, r = found
    ev = f"projects/{owner}/zones/{zone}/reservations/{name}"
    out: list[LiveResult] = []
    if owner != t.project:
        share = r.share_settings
        shared_with = set(share.project_map.keys()) if share else set()
        if _enum(share.share_type if share else "") != "SPECIFIC_PROJECTS" or \
                t.project not in shared_with:
            out.append(LiveResult("reservation", FAIL, f"reservation {name} of project {owner} "
                                  f"is not shared with project {t.project}", ev,
                                  f"share it: gcloud compute reservations update {name} "
                                  f"--project {owner} --zone {zone} "
                                  f"--add-share-with={t.project}"))
    spec = r.specific_reservation
    if not spec or not spec.count:
        out.append(LiveResult("reservation", WARN, f"reservation {name} has no specific "
                              "reservation count (an aggregate reservation?): machine type and "
                              "free count not checked", ev, None))
        return out
    need = sl.vms * sl.count
    free = int(spec.count) - int(spec.in_use_count)
    out += _reservation_room(sl, name, spec, free, need, ev)
    if not any(o.status == FAIL for o in out):
        out.insert(0, LiveResult("reservation", PASS, f"reservation {name}: {free} free "
                                 f"{sl.machine_type} VM(s) >= {need} for slice {sl.name}", ev))
    return out


def _find_reservation(s: Session, owner: str, name: str) -> tuple[str, Any] | LiveResult:
    """``(zone, reservation)`` of the reservation ``name`` of project ``owner``: in the
    target's zone (``reservations.get``), or without a zone (Autopilot) the first one of the
    region (``reservations.aggregatedList`` filtered by name); else the FAIL (no such
    reservation) or the could-not result of the call."""
    t = s.target
    if not t.zone:  # Autopilot: find it in the region (aggregatedList filtered by name)
        ev = f"projects/{owner}/aggregated/reservations?filter=name={name}"
        try:
            scoped = s.call("reservations", "aggregated_list",
                            request={"project": owner, "filter": f'name = "{name}"'})
        except Exception as exc:
            return _could_not("reservation", f"reservation {name}", ev, exc, s,
                              permission="compute.reservations.list")
        found = [(scope.rsplit("/", 1)[-1], r) for scope, lst in scoped
                 for r in lst.reservations if r.name == name
                 and scope.rsplit("/", 1)[-1].rsplit("-", 1)[0] == t.region]
        if not found:
            return LiveResult("reservation", FAIL, f"reservation {name} does not exist in "
                              f"project {owner}, region {t.region}", ev,
                              "check capacity.reservation / reservationProject and "
                              "spec.region")
        return found[0]
    zone = t.zone
    ev = f"projects/{owner}/zones/{zone}/reservations/{name}"
    try:
        return zone, s.call("reservations", "get", project=owner, zone=zone, reservation=name)
    except Exception as exc:
        if _kind(exc) == "notfound":
            return LiveResult("reservation", FAIL, f"reservation {name} does not exist "
                              f"in project {owner}, zone {zone}", ev,
                              "check capacity.reservation / reservationProject and "
                              "spec.zone")
        return _could_not("reservation", f"reservation {name}", ev, exc, s,
                          permission="compute.reservations.get")


def _reservation_room(sl: SliceNeed, name: str, spec: Any, free: int, need: int, ev: str
                      ) -> list[LiveResult]:
    """FAILs for a specific reservation (``spec``) of another machine type than the slice's,
    and for fewer ``free`` VMs (count - in use) than the slice ``need``s (VMs x count)."""
    out: list[LiveResult] = []
    have = spec.instance_properties.machine_type
    if sl.machine_type and have and have.rsplit("/", 1)[-1] != sl.machine_type:
        out.append(LiveResult("reservation", FAIL, f"reservation {name} holds {have}, not "
                              f"{sl.machine_type} (slice {sl.name})", ev,
                              "name a reservation of the slice's machine type"))
    if free < need:
        out.append(LiveResult("reservation", FAIL, f"reservation {name} has {free} free of "
                              f"{spec.count} VMs; slice {sl.name} needs {need}", ev,
                              "free VMs in the reservation, or use a larger one"))
    return out


def quota_key(sl: SliceNeed) -> tuple[str, dict[str, str]] | None:
    """(quota id, extra dimensions) of the compute.googleapis.com quota a slice draws, or
    None (reservation, flex-start, or not on record). Source: ``data/gcp.yaml`` quotas."""
    if sl.capacity not in ("on-demand", "spot"):
        return None
    q = facts()["quotas"]
    if sl.kind == "tpu":
        ids = q["tpu"].get(sl.accelerator_type)
        return (ids[sl.capacity], {}) if ids else None
    family = q["gpu"]["family"].get(sl.accelerator_type)
    return (q["gpu"][sl.capacity], {"gpu_family": family}) if family else None


def usage_metric(sl: SliceNeed) -> str | None:
    """The Compute ``regions.get`` quota metric whose ``usage`` counts what the slice's quota
    (:func:`quota_key`) has in use, e.g. ``PREEMPTIBLE_TPU_V6E`` or ``NVIDIA_H200_GPUS``; None
    where no quota is checked. Source and confidence: ``data/gcp.yaml`` quotas (``usage``)."""
    if quota_key(sl) is None:
        return None
    q = facts()["quotas"]
    if sl.kind == "tpu":
        return str(q["tpu"][sl.accelerator_type]["usage"][sl.capacity])
    family = q["gpu"]["family"][sl.accelerator_type]
    return ("PREEMPTIBLE_" if sl.capacity == "spot" else "") + f"{family}_GPUS"


IGNORE_RISK = ("--ignore-live-failures would go on regardless: Terraform starts, creates what "
               "comes before the node pool, and the node pool's creation fails with "
               "QUOTA_EXCEEDED, leaving a half-built stack to destroy or re-apply")


def _region_quotas(s: Session) -> dict[str, tuple[float, float]] | None:
    """metric -> (limit, usage) of the target region (Compute ``regions.get``, asked once per
    run, with only the ``quotas`` field), or None when the region answered without quota
    information (``quotaStatusWarning`` set: the call "fails open"). Raises what the call
    raised."""
    t = s.target

    def fetch() -> dict[str, tuple[float, float]] | None:
        region = s.call("regions", "get", project=t.project, region=t.region)
        if not region.quotas and region.quota_status_warning and \
                region.quota_status_warning.code:
            return None
        return {str(q.metric): (float(q.limit), float(q.usage)) for q in region.quotas}

    return s.once("region-quotas", fetch)  # type: ignore[no-any-return]


def _num(x: float) -> str:
    return f"{x:g}"


def check_quota(s: Session, quota_id: str, dims: dict[str, str], need: int,
                slices: list[str], metric: str | None = None) -> list[LiveResult]:
    """What is left of the quota in the region (limit minus current usage) covers the
    chips/GPUs the slices need.

    The limit: Cloud Quotas ``quotaInfos.get`` (``dimensionsInfos[].dimensions/details.value``;
    an entry with no dimensions is the default for the rest). The usage: Compute
    ``regions.get`` ``quotas[]`` entry ``metric`` (``usage``, same unit: chips or GPUs); see
    data/gcp.yaml for where each metric name comes from.

    Returns one row: FAIL when limit - usage < need (or the limit alone is below the need),
    naming the quota, the region, limit, usage and need, with a hint that says what
    ``--ignore-live-failures`` risks; WARN when the usage could not be read (denied, not
    listed): the limit alone was compared; else PASS with the numbers.
    """
    t = s.target
    name = (f"projects/{t.project}/locations/global/services/compute.googleapis.com/"
            f"quotaInfos/{quota_id}")
    want = {"region": t.region, **dims}
    label = quota_id + "".join(f" {k}={v}" for k, v in sorted(want.items()))
    try:
        info = s.call("quotas", "get_quota_info", name=name)
    except Exception as exc:
        if _kind(exc) == "notfound":
            return [LiveResult("quota", WARN, f"could not check quota {quota_id}: Cloud Quotas "
                               "does not know this id", name,
                               "our quota data may be out of date; check the quota in the "
                               "console (IAM & Admin > Quotas)")]
        return [_could_not("quota", f"quota {quota_id}", name, exc, s,
                           permission="cloudquotas.quotas.get")]
    best: tuple[int, Any] = (-1, None)
    for di in info.dimensions_infos:
        d = dict(di.dimensions)
        if all(want.get(k) == v for k, v in d.items()) and len(d) > best[0]:
            best = (len(d), di)
    if best[1] is None:
        return [LiveResult("quota", WARN, f"quota {label}: no limit listed for "
                           f"{t.region}", name, None)]
    limit = int(best[1].details.value)
    who = f"slice {', '.join(slices)}"
    increase = (f"request an increase of {quota_id} in {t.region} "
                "(https://cloud.google.com/docs/quotas/help/request_increase), or free "
                f"capacity in use there; {IGNORE_RISK}")
    usage_ev = f"projects/{t.project}/regions/{t.region} quotas[{metric}]"
    usage: float | None = None
    why_not = ""
    if metric is None:
        why_not = "no regions.get metric on record for it"
    else:
        try:
            listed = _region_quotas(s)
        except Exception as exc:
            kind = _kind(exc)
            why_not = ("permission denied (compute.regions.get)" if kind == "denied" else
                       f"no answer within {s.timeout_s:g}s" if kind == "timeout" else
                       f"{type(exc).__name__}: {_why(exc)}")
        else:
            if listed is None:
                why_not = "regions.get returned no quota information (quotaStatusWarning)"
            elif metric not in listed:
                why_not = f"regions.get lists no metric {metric} in {t.region}"
            else:
                usage = listed[metric][1]
    if usage is None:
        if limit < need:
            return [LiveResult("quota", FAIL, f"quota {label} is {limit}; {who} need(s) "
                               f"{need} (current usage not read: {why_not})", name, increase)]
        return [LiveResult("quota", WARN, f"quota {label}: the limit alone was compared "
                           f"({limit} >= {need} for {who}); current usage could not be read: "
                           f"{why_not}", f"{name}; {usage_ev}",
                           "grant compute.regions.get (e.g. roles/compute.viewer) to count "
                           "usage too; check usage in the console (IAM & Admin > Quotas)")]
    free = limit - usage
    numbers = (f"limit {limit} - usage {_num(usage)} = {_num(free)} free in {t.region}; "
               f"{who} need(s) {need}")
    if free < need:
        return [LiveResult("quota", FAIL, f"quota {label}: {numbers}", f"{name}; {usage_ev}",
                           increase)]
    return [LiveResult("quota", PASS, f"quota {label}: {numbers}", f"{name}; {usage_ev}")]


def cpu_metric(need: CpuNeed) -> str:
    """The Compute ``regions.get`` metric the vCPUs of ``need`` draw: ``PREEMPTIBLE_CPUS`` for
    Spot, ``<SERIES>_CPUS`` for a series with its own quota, else ``CPUS``. Source and
    confidence: ``data/gcp.yaml`` quotas.cpu."""
    q = facts()["quotas"]["cpu"]
    if need.capacity == "spot":
        return str(q["spot"])
    series = need.machine_type.split("-", 1)[0].upper()
    return f"{series}_CPUS" if series in q["families"] else str(q["default"])


def check_cpu_quota(s: Session, metric: str, needs: list[CpuNeed]) -> list[LiveResult]:
    """What is left of the region's vCPU quota ``metric`` (Compute ``regions.get``: limit
    minus current usage) covers the vCPUs of ``needs`` (VMs x vCPUs per VM, at their
    largest).

    Returns one row: FAIL when limit - usage < need, naming the metric, the region, the
    numbers, the pools, and what ``--ignore-live-failures`` risks; WARN when the quota could
    not be read (denied, not listed, no quota information); else PASS with the numbers.
    """
    t = s.target
    need = sum(n.vms * (n.vcpus or 0) for n in needs)
    who = ", ".join(f"{n.name} ({n.vms} x {n.machine_type}, {n.vcpus} vCPUs each)"
                    for n in needs)
    ev = f"projects/{t.project}/regions/{t.region} quotas[{metric}]"
    try:
        listed = _region_quotas(s)
    except Exception as exc:
        return [_could_not("quota", f"CPU quota {metric}", ev, exc, s,
                           permission="compute.regions.get")]
    if listed is None or metric not in listed:
        why = ("regions.get returned no quota information (quotaStatusWarning)"
               if listed is None else f"regions.get lists no metric {metric} in {t.region}")
        return [LiveResult("quota", WARN, f"CPU quota {metric} in {t.region} not checked: "
                           f"{why}; {who} need(s) {need} vCPUs", ev,
                           "check the quota in the console (IAM & Admin > Quotas)")]
    limit, usage = listed[metric]
    free = limit - usage
    numbers = (f"limit {_num(limit)} - usage {_num(usage)} = {_num(free)} free in "
               f"{t.region}; {who} need(s) {need} vCPUs")
    if free < need:
        return [LiveResult("quota", FAIL, f"CPU quota {metric}: {numbers}", ev,
                           f"request an increase of {metric} in {t.region} "
                           "(https://cloud.google.com/docs/quotas/help/request_increase), or "
                           "free vCPUs in use there, or pick a smaller machine type; "
                           + IGNORE_RISK.replace("the node pool", "the CPU pool"))]
    return [LiveResult("quota", PASS, f"CPU quota {metric}: {numbers}", ev)]


def _cpu_skipped(need: CpuNeed) -> list[LiveResult]:
    return [LiveResult("quota", SKIP, f"{need.name}: CPU quota not checked (the vCPU count of "
                       f"{need.machine_type} is not in its name)", need.name, None)]


def _quota_skipped(sl: SliceNeed) -> list[LiveResult]:
    """The SKIP row of a slice whose quota is not checked, and why."""
    why = {"reservation": "reserved capacity was counted against quota when the reservation "
                          "was made",
           "flex-start": "flex-start capacity: which quota it draws is not on record",
           "queued": "queued capacity (flex-start with queued provisioning): which quota it "
                     "draws is not on record"}.get(
        sl.capacity, "the chip count is chosen by Autopilot" if sl.chips <= 0 else
        f"no quota id on record for {sl.accelerator_type} ({sl.capacity})")
    return [LiveResult("quota", SKIP, f"slice {sl.name}: quota not checked ({why})",
                       f"slice/{sl.name}", None)]


# --- names: what the stack creates is not taken (issue 25) ------------------------------------

# the Compute Engine client that looks up each kind of name (compute_v1 class names)
_COMPUTE_NAME_CLIENTS = {"computeRouter": "RoutersClient",
                         "computeFirewall": "FirewallsClient",
                         "computeNetwork": "NetworksClient",
                         "computeSubnetwork": "SubnetworksClient",
                         "computeResourcePolicy": "ResourcePoliciesClient"}
# the recipe field that sets a name the plan holds at this field (else: derived from
# metadata.name or orchestrator.clusterName)
_NAME_FIELDS = {"diagnostics.service_account.account_id": "diagnostics.serviceAccount.name",
                "diagnostics.iam.custom_role_id": "diagnostics.iam.customRoleId",
                "diagnostics.profiles_bucket.name": "diagnostics.profilesBucket.name"}
TAKEN, FREE, DELETED, HIDDEN = "taken", "free", "deleted", "hidden"


def _name_path(t: Target, kind: str, scope: str, name: str) -> str | None:
    """The resource path a lookup of ``name`` asks for, or None for a kind not looked up
    (Cloud NAT: inside its router; Cluster Director, Filestore, Lustre: no client here)."""
    p = t.project
    loc = scope.rsplit("/locations/", 1)[-1] if "/locations/" in scope else t.region
    return {"serviceAccount": f"projects/{p}/serviceAccounts/{name}@{p}.iam.gserviceaccount.com",
            "customRole": f"projects/{p}/roles/{name}",
            "gcsBucket": f"b/{name}",
            "gkeCluster": f"projects/{p}/locations/{loc}/clusters/{name}",
            "computeRouter": f"projects/{p}/regions/{loc}/routers/{name}",
            "computeSubnetwork": f"projects/{p}/regions/{loc}/subnetworks/{name}",
            "computeResourcePolicy": f"projects/{p}/regions/{loc}/resourcePolicies/{name}",
            "computeFirewall": f"projects/{p}/global/firewalls/{name}",
            "computeNetwork": f"projects/{p}/global/networks/{name}"}.get(kind)


def _lookup(s: Session, kind: str, path: str) -> str:
    """TAKEN, FREE, DELETED (a custom role deleted less than 7 days ago) or HIDDEN (a bucket
    that answers 403: it exists, in a project the caller cannot see, or the caller may not
    read buckets). Raises what the API raised on anything but NotFound."""
    try:
        if kind == "serviceAccount":
            s.call("iam", "get_service_account", request={"name": path})
        elif kind == "customRole":
            role = s.call("iam", "get_role", request={"name": path})
            return DELETED if role.deleted else TAKEN
        elif kind == "gkeCluster":
            s.call("gke", "get_cluster", request={"name": path})
        elif kind == "gcsBucket":
            return _bucket(s, path.split("/", 1)[1])
        else:
            parts = path.split("/")  # projects/P/(regions/R|global)/<collection>/N
            kw = {"project": parts[1], _COMPUTE_ARG[kind]: parts[-1]}
            if parts[2] == "regions":
                kw["region"] = parts[3]
            s.call(kind, "get", **kw)
    except Exception as exc:
        if _kind(exc) == "notfound":
            return FREE
        raise
    return TAKEN


_COMPUTE_ARG = {"computeRouter": "router", "computeFirewall": "firewall",
                "computeNetwork": "network", "computeSubnetwork": "subnetwork",
                "computeResourcePolicy": "resource_policy"}


def _bucket(s: Session, name: str) -> str:
    """Cloud Storage JSON API ``buckets.get`` (https://cloud.google.com/storage/docs/json_api/v1/buckets/get)
    with the caller's credentials (no Cloud Storage client library is a dependency)."""
    from google.auth.transport.requests import AuthorizedSession

    base = (s.endpoint or "https://storage.googleapis.com").rstrip("/")
    started = time.perf_counter()
    try:
        r = AuthorizedSession(s.creds).get(f"{base}/storage/v1/b/{name}",
                                           params={"fields": "name"}, timeout=s.timeout_s)
    finally:
        with s._lock:
            s.calls += 1
            s.call_s += time.perf_counter() - started
    if r.status_code == 404:
        return FREE
    if r.status_code == 403:
        return HIDDEN
    if r.status_code == 200:
        return TAKEN
    raise RuntimeError(f"buckets.get answered HTTP {r.status_code}")


def check_names(s: Session) -> list[LiveResult]:
    """No name the stack creates exists already outside the stack (each kind's scope:
    catalog/data/names.yaml ``uniqueness``): a second create fails with 409 ALREADY_EXISTS,
    and a resource shared by two stacks is deleted by either stack's destroy. Names the
    stack already has (its work directory's previous plan) are not asked about."""
    from mldiag_provision.catalog.store import store

    t = s.target
    kinds = store().doc("names")["uniqueness"]
    asked = [(kind, scope, name, fld, path) for kind, scope, name, fld in t.names
             if (path := _name_path(t, kind, scope, name)) is not None]
    if not asked:
        return ([LiveResult("names", PASS, f"the {t.own_names} name(s) the stack creates are "
                            "its own already (its work directory's plan)", "names/*")]
                if t.own_names else [])

    def look(entry: tuple[str, str, str, str, str]) -> str | Exception:
        try:
            return _lookup(s, entry[0], entry[4])
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(16, len(asked))) as pool:
        answers = list(pool.map(look, asked))
    out: list[LiveResult] = []
    free = 0
    unchecked: set[str] = set()
    for (kind, _, name, fld, path), answer in zip(asked, answers, strict=True):
        what = str(kinds.get(kind, {}).get("what", kind))
        field = _NAME_FIELDS.get(fld, "metadata.name (or orchestrator.clusterName)")
        where = "Cloud Storage" if kind == "gcsBucket" else f"project {t.project}"
        if isinstance(answer, Exception):
            if kind not in unchecked:  # one WARN per kind
                unchecked.add(kind)
                out.append(_could_not("names", f"whether the {what} {name} is taken", path,
                                      answer, s))
        elif answer == FREE:
            free += 1
        elif answer == TAKEN:
            out.append(LiveResult(
                "names", FAIL, f"{what} {name} already exists in {where} and is not this "
                "stack's: creating it fails with 409 ALREADY_EXISTS (and a resource two "
                "stacks share is deleted by either one's destroy)", path,
                f"choose another name ({field}); if it is this stack's own, run in the work "
                "directory that holds its state (-o DIR)"))
        elif answer == DELETED:
            out.append(LiveResult(
                "names", WARN, f"{what} {name} was deleted less than 7 days ago: the apply "
                "undeletes it and takes it over, with its old bindings", path,
                f"if it was another stack's, choose another name ({field})"))
        else:  # HIDDEN
            out.append(LiveResult(
                "names", WARN, f"{what} {name}: Cloud Storage answers 403, so it most likely "
                "exists in a project the caller cannot see (bucket names are global)", path,
                f"choose another name ({field}), or check that the caller may read buckets"))
    if free and not any(r.status == FAIL for r in out):
        out.insert(0, LiveResult(
            "names", PASS, f"{free} name(s) the stack creates are free"
            + (f"; {t.own_names} are its own already" if t.own_names else ""), "names/*"))
    return out


# --- driver -----------------------------------------------------------------------------------

def tasks(s: Session) -> list[Callable[[], list[LiveResult]]]:
    """Every check for the target, as zero-argument callables."""
    t = s.target
    out: list[Callable[[], list[LiveResult]]] = [
        lambda: check_project(s), lambda: check_permissions(s), lambda: check_roles(s),
        lambda: check_custom_role(s), lambda: check_services(s),
        lambda: check_gke_version(s), lambda: check_existing_cluster(s),
        lambda: check_names(s)]
    by_type: dict[str, list[str]] = {}
    for sl in t.slices:
        if sl.machine_type:
            by_type.setdefault(sl.machine_type, []).append(sl.name)
    for mt, names in by_type.items():
        out.append(functools.partial(check_machine_type, s, mt, names))
    quotas: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, list[str]]] = {}
    metrics: dict[tuple[str, tuple[tuple[str, str], ...]], str | None] = {}
    for sl in t.slices:
        if sl.capacity == "reservation" and sl.reservation:
            out.append(functools.partial(check_reservation, s, sl))
        key = quota_key(sl)
        if key is None or sl.chips <= 0:
            out.append(functools.partial(_quota_skipped, sl))
        if key is not None and sl.chips > 0:  # 0: Autopilot picks the GPU count
            k = (key[0], tuple(sorted(key[1].items())))
            need, names = quotas.get(k, (0, []))
            quotas[k] = (need + sl.chips, [*names, sl.name])
            metrics[k] = usage_metric(sl)
    for (qid, dims), (need, names) in quotas.items():
        out.append(functools.partial(check_quota, s, qid, dict(dims), need, names,
                                     metrics[(qid, dims)]))
    cpu: dict[str, list[CpuNeed]] = {}
    for c in t.cpus:
        if c.vcpus is None:
            out.append(functools.partial(_cpu_skipped, c))
        else:
            cpu.setdefault(cpu_metric(c), []).append(c)
    for metric, needs in cpu.items():
        out.append(functools.partial(check_cpu_quota, s, metric, needs))
    return out


def run_live_checks(target: Target, *, timeout_s: float = 10.0,
                    creds: Any = None) -> tuple[list[LiveResult], dict[str, float]]:
    """Run every live check of ``target`` concurrently.

    Args:
      target: what to check (:func:`~mldiag_provision.preflight.live.target.build_target`).
      timeout_s: bound of each API call, seconds (no retries).
      creds: credentials; default :func:`credentials`.

    Returns:
      (rows in a stable order, timings: ``wall_s``, ``calls``, ``call_s``: seconds spent
      inside API calls summed over threads).

    Raises:
      UsageError: no credentials.
    """
    started = time.perf_counter()
    s = Session(target, timeout_s=timeout_s, creds=creds if creds is not None else
                credentials())
    jobs = tasks(s)

    def guarded(job: Callable[[], list[LiveResult]]) -> list[LiveResult]:
        try:
            return job()
        except Exception as exc:  # a bug or an unexpected answer: a WARN, never a crash
            return [LiveResult("internal", WARN, f"a check failed unexpectedly: "
                               f"{type(exc).__name__}: {_why(exc)}", "-",
                               "please report this (re-run with --debug)")]

    with ThreadPoolExecutor(max_workers=min(32, len(jobs))) as pool:
        results = [r for rows in pool.map(guarded, jobs) for r in rows]
    return results, {"wall_s": time.perf_counter() - started, "calls": float(s.calls),
                     "call_s": s.call_s}
