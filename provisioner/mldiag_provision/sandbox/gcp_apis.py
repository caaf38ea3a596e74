"""Sandbox (a wire-level double of Google Cloud): a local HTTP server speaking the REST
(JSON) wire format of the
Google Cloud APIs the live preflight asks, so the official client libraries (REST transport,
pointed here by ``MLDIAG_GOOGLE_API_ENDPOINT``) run unchanged against it.

Not Google Cloud: it answers from a :class:`FakeProject` the test builds, in the documented
response shapes:
  * Resource Manager v3 Project / testIamPermissions
    (https://cloud.google.com/resource-manager/reference/rest/v3/projects);
  * IAM v1 Role, queryTestablePermissions (https://cloud.google.com/iam/docs/reference/rest);
  * Service Usage v1 ListServicesResponse
    (https://cloud.google.com/service-usage/docs/reference/rest/v1/services/list);
  * GKE v1 ServerConfig, Cluster
    (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/ServerConfig);
  * Compute v1 MachineTypeAggregatedList, Reservation
    (https://cloud.google.com/compute/docs/reference/rest/v1/machineTypes/aggregatedList,
    https://cloud.google.com/compute/docs/reference/rest/v1/reservations);
  * Cloud Quotas v1 QuotaInfo
    (https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos);
  * Compute v1 Region with ``quotas[]`` {metric, limit, usage} (``FakeProject.region_quotas``),
    ``quotaStatusWarning`` when a region's quota information is unavailable
    (https://cloud.google.com/compute/docs/reference/rest/v1/regions/get);
  * Cloud Billing Catalog v1 ``services.list`` / ``services.skus.list``
    (https://cloud.google.com/billing/docs/reference/rest/v1/services/list,
    https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list; the Sku
    resource: skuId, description, category{serviceDisplayName, resourceFamily, resourceGroup,
    usageType}, serviceRegions, pricingInfo[].pricingExpression{usageUnit, tieredRates[]
    {startUsageAmount, unitPrice{currencyCode, units, nanos}}},
    https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list#Sku) from
    ``FakeProject.billing_skus`` (:func:`billing_sku`), paged (``pageSize``/``pageToken``);
  * whether a name is taken (``FakeProject.taken``): Compute v1 ``get`` of routers, firewalls,
    networks, subnetworks, resource policies, and Cloud Storage JSON ``buckets.get``
    (https://cloud.google.com/storage/docs/json_api/v1/buckets/get; 403 for a bucket of
    another project);
and errors as Google's JSON error body ``{"error": {"code", "message", "status"}}``
(https://cloud.google.com/apis/design/errors#http_mapping).

The IAM admin API's client speaks gRPC only: for it a local gRPC server (``grpc_target``)
serves ``google.iam.admin.v1.IAM`` GetRole / GetServiceAccount / QueryTestablePermissions,
built from the client library's own request/response types (proto-plus
``serialize``/``deserialize``), errors as gRPC status codes (https://cloud.google.com/apis/design/errors#handling_errors).

Every REST request needs ``Authorization: Bearer <token>`` (401 otherwise). ``denied`` (API name
-> 403 on every call of it) and ``delay_s`` (API name -> seconds before answering) make the
failure cases.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from mldiag_provision.sandbox.httpserve import QuietServer


@dataclass
class FakeProject:
    """The state the stand-in answers from. Defaults: an ACTIVE project where everything a
    typical recipe asks for is there (the test then breaks one thing)."""

    project_id: str
    number: str = "123456789012"
    state: str = "ACTIVE"
    granted: set[str] | None = None  # None: every valid permission asked is granted
    invalid_permissions: set[str] = field(default_factory=set)  # 400 when asked
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> Role JSON
    all_roles_exist: bool = True  # any roles/* name not in `roles` exists (GA)
    testable: dict[str, str] = field(default_factory=dict)  # permission -> support level
    all_testable: bool = True  # a permission not in `testable` is SUPPORTED
    enabled: set[str] = field(default_factory=set)
    channels: dict[str, list[str]] = field(default_factory=dict)  # RAPID -> versions
    zones_offering: dict[str, list[str]] = field(default_factory=dict)  # type -> zones
    reservations: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    quotas: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # id -> dimInfos
    region_quotas: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """region -> Compute ``quotas[]`` entries (:func:`region_quota`) that ``regions.get``
    answers; a region not here answers with no quotas and a ``quotaStatusWarning``."""
    clusters: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    taken: dict[str, set[str]] = field(default_factory=dict)
    """Names that exist already, by kind (plan/owned.py kinds: serviceAccount (account id),
    customRole (role id), gcsBucket, computeRouter, ...); every other name is free (404).
    ``customRoleDeleted``: roles deleted less than 7 days ago; ``gcsBucketHidden``: buckets
    of another project (403)."""
    billing_services: dict[str, str] = field(default_factory=lambda: {
        "6F81-5844-456A": "Compute Engine", "STANDIN-TPU-0001": "Cloud TPU"})
    """Cloud Billing Catalog services: service id -> displayName (``services.list``)."""
    billing_skus: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """service id -> its public SKUs (:func:`billing_sku`), ``services.skus.list``."""
    denied: set[str] = field(default_factory=set)  # API names answering 403
    disabled: set[str] = field(default_factory=set)  # API names off: 403 SERVICE_DISABLED
    delay_s: dict[str, float] = field(default_factory=dict)


def quota_dims(region: str, value: int, **dims: str) -> dict[str, Any]:
    """One ``dimensionsInfos`` entry of a QuotaInfo (documented shape)."""
    return {"dimensions": {"region": region, **dims}, "details": {"value": str(value)},
            "applicableLocations": [region]}


def region_quota(metric: str, limit: float, usage: float) -> dict[str, Any]:
    """One ``quotas[]`` entry of a Compute Region (documented shape: metric, limit, usage,
    https://cloud.google.com/compute/docs/reference/rest/v1/regions/get)."""
    return {"metric": metric, "limit": float(limit), "usage": float(usage)}


def billing_sku(service_id: str, sku_id: str, description: str, usd_per_unit: float, *,
                regions: list[str], family: str = "Compute", group: str = "",
                usage_type: str = "OnDemand", unit: str = "h",
                service_name: str = "Compute Engine") -> dict[str, Any]:
    """One Cloud Billing Catalog ``Sku`` in its documented JSON shape
    (https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list#Sku): one
    pricingInfo with one tier from 0, the price as Money ``units`` (int64, a JSON string) and
    ``nanos`` (https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list#Money).
    """
    units = int(usd_per_unit)
    nanos = round((usd_per_unit - units) * 1e9)
    return {
        "name": f"services/{service_id}/skus/{sku_id}", "skuId": sku_id,
        "description": description,
        "category": {"serviceDisplayName": service_name, "resourceFamily": family,
                     "resourceGroup": group, "usageType": usage_type},
        "serviceRegions": list(regions),
        "pricingInfo": [{
            "effectiveTime": "2026-11-01T00:00:00Z", "summary": "",
            "pricingExpression": {
                "usageUnit": unit, "displayQuantity": 1, "baseUnit": "s",
                "baseUnitConversionFactor": 3600, "usageUnitDescription": "hour",
                "baseUnitDescription": "second",
                "tieredRates": [{"startUsageAmount": 0, "unitPrice": {
                    "currencyCode": "USD", "units": str(units), "nanos": nanos}}]},
            "currencyConversionRate": 1}],
        "serviceProviderName": "Google", "geoTaxonomy": {"type": "REGIONAL",
                                                         "regions": list(regions)}}


def reservation(name: str, zone: str, machine_type: str, count: int, in_use: int = 0,
                shared_with: list[str] | None = None) -> dict[str, Any]:
    """A Compute Reservation (documented shape); ``shared_with``: SPECIFIC_PROJECTS."""
    body: dict[str, Any] = {
        "kind": "compute#reservation", "name": name, "zone": zone, "status": "READY",
        "specificReservation": {"count": str(count), "inUseCount": str(in_use),
                                "instanceProperties": {"machineType": machine_type}},
        "specificReservationRequired": True}
    if shared_with is not None:
        body["shareSettings"] = {"shareType": "SPECIFIC_PROJECTS",
                                 "projectMap": {p: {"projectId": p} for p in shared_with}}
    else:
        body["shareSettings"] = {"shareType": "LOCAL"}
    return body


class _Error(Exception):
    def __init__(self, code: int, status: str, message: str,
                 details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.code, self.status, self.message = code, status, message
        self.details = details or []


# (method, path regex, API name, handler name)
_ROUTES: list[tuple[str, re.Pattern[str], str, str]] = [
    (m, re.compile(p), api, h) for m, p, api, h in [
        ("GET", r"^/v3/projects/(?P<p>[^/:]+)$", "cloudresourcemanager", "get_project"),
        ("POST", r"^/v3/projects/(?P<p>[^/:]+):testIamPermissions$", "cloudresourcemanager",
         "test_iam"),
        ("GET", r"^/v1/(?P<name>roles/[^/]+)$", "iam", "get_role"),
        ("POST", r"^/v1/permissions:queryTestablePermissions$", "iam", "testable"),
        ("GET", r"^/v1/projects/(?P<p>[^/]+)/services$", "serviceusage", "list_services"),
        ("GET", r"^/v1/projects/(?P<p>[^/]+)/locations/(?P<loc>[^/]+)/serverConfig$",
         "container", "server_config"),
        ("GET", r"^/v1/projects/(?P<p>[^/]+)/locations/(?P<loc>[^/]+)/clusters/(?P<c>[^/]+)$",
         "container", "get_cluster"),
        ("GET", r"^/compute/v1/projects/(?P<p>[^/]+)/aggregated/machineTypes$", "compute",
         "machine_types"),
        ("GET", r"^/compute/v1/projects/(?P<p>[^/]+)/aggregated/reservations$", "compute",
         "reservations_aggregated"),
        ("GET", r"^/compute/v1/projects/(?P<p>[^/]+)/regions/(?P<r>[^/]+)$", "compute",
         "get_region"),
        ("GET", r"^/compute/v1/projects/(?P<p>[^/]+)/zones/(?P<z>[^/]+)/reservations/"
                r"(?P<r>[^/]+)$", "compute", "get_reservation"),
        ("GET", r"^/v1/projects/(?P<p>[^/]+)/locations/global/services/(?P<svc>[^/]+)/"
                r"quotaInfos/(?P<qid>[^/]+)$", "cloudquotas", "quota_info"),
        # whether a name is taken (issue 25): Compute get of each collection, buckets.get
        ("GET", r"^/compute/v1/projects/(?P<p>[^/]+)/(?:regions/[^/]+|global)/"
                r"(?P<coll>routers|firewalls|networks|subnetworks|resourcePolicies)/"
                r"(?P<n>[^/]+)$", "compute", "get_named"),
        ("GET", r"^/storage/v1/b/(?P<b>[^/]+)$", "storage", "get_bucket"),
        # Cloud Billing Catalog (issue 29: cost --live)
        ("GET", r"^/v1/services$", "cloudbilling", "billing_services"),
        ("GET", r"^/v1/services/(?P<svc>[^/]+)/skus$", "cloudbilling", "billing_skus"),
    ]]

# Compute collection -> plan/owned.py kind
_COLLECTION_KIND = {"routers": "computeRouter", "firewalls": "computeFirewall",
                    "networks": "computeNetwork", "subnetworks": "computeSubnetwork",
                    "resourcePolicies": "computeResourcePolicy"}


class GcpApis:
    """``with GcpApis(project, token) as apis``: serving on ``apis.url`` (a thread)."""

    def __init__(self, project: FakeProject, token: str) -> None:
        self.project = project
        self.token = token
        self.requests: list[tuple[str, str]] = []  # (method, path) as received
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:  # quiet
                pass

            def _serve(self, method: str) -> None:
                outer._handle(self, method)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

        self._server = QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._grpc = self._grpc_server()
        self.grpc_target = f"127.0.0.1:{self._grpc_port}"

    def __enter__(self) -> GcpApis:
        self._thread.start()
        self._grpc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._grpc.stop(grace=None)

    def env(self, token: str | None = None) -> dict[str, str]:
        """The environment that points the live checks here."""
        return {"MLDIAG_GOOGLE_API_ENDPOINT": self.url,
                "MLDIAG_GOOGLE_GRPC_ENDPOINT": self.grpc_target,
                "GOOGLE_OAUTH_ACCESS_TOKEN": token or self.token}

    # --- gRPC: google.iam.admin.v1.IAM ----------------------------------------------------
    def _grpc_server(self) -> Any:
        from concurrent import futures

        import grpc
        from google.cloud.iam_admin_v1 import types

        def rpc(api_method: str, fn: Any, req_type: Any, resp_type: Any) -> Any:
            def handler(request: Any, context: Any) -> Any:
                self.requests.append(("GRPC", api_method))
                delay = self.project.delay_s.get("iam")
                if delay:
                    time.sleep(delay)
                try:
                    if "iam" in self.project.denied:
                        raise _Error(403, "PERMISSION_DENIED", "Permission denied on "
                                     "iam.googleapis.com for this caller (stand-in).")
                    return resp_type(**fn(request))
                except _Error as err:
                    code = {403: grpc.StatusCode.PERMISSION_DENIED,
                            404: grpc.StatusCode.NOT_FOUND}.get(err.code,
                                                                grpc.StatusCode.UNKNOWN)
                    context.abort(code, err.message)
            return grpc.unary_unary_rpc_method_handler(
                handler, request_deserializer=req_type.deserialize,
                response_serializer=resp_type.serialize)

        def get_role(req: Any) -> dict[str, Any]:
            role = self._get_role(name=req.name)
            return {"name": role["name"], "title": role.get("title", ""),
                    "stage": role.get("stage", "GA"), "deleted": role.get("deleted", False),
                    "included_permissions": role.get("includedPermissions", [])}

        def testable(req: Any) -> dict[str, Any]:
            page = self._testable(body={"pageToken": req.page_token})
            return {"permissions": [{"name": p["name"], "title": p["title"],
                                     "custom_roles_support_level":
                                         p["customRolesSupportLevel"]}
                                    for p in page["permissions"]],
                    "next_page_token": page.get("nextPageToken", "")}

        def get_service_account(req: Any) -> dict[str, Any]:
            # projects/P/serviceAccounts/ID@P.iam.gserviceaccount.com
            email = req.name.rsplit("/", 1)[-1]
            if email.split("@", 1)[0] not in self.project.taken.get("serviceAccount", ()):
                raise _Error(404, "NOT_FOUND", f"Service account {req.name} does not exist.")
            return {"name": req.name, "email": email, "project_id": self.project.project_id}

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "google.iam.admin.v1.IAM", {
                "GetRole": rpc("GetRole", get_role, types.GetRoleRequest, types.Role),
                "GetServiceAccount": rpc("GetServiceAccount", get_service_account,
                                         types.GetServiceAccountRequest,
                                         types.ServiceAccount),
                "QueryTestablePermissions": rpc(
                    "QueryTestablePermissions", testable,
                    types.QueryTestablePermissionsRequest,
                    types.QueryTestablePermissionsResponse)}),))
        self._grpc_port = server.add_insecure_port("127.0.0.1:0")
        return server

    # --- dispatch -------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        url = urlparse(h.path)
        self.requests.append((method, url.path))
        length = int(h.headers.get("Content-Length") or 0)
        body = json.loads(h.rfile.read(length) or b"{}") if length else {}
        try:
            if h.headers.get("Authorization") != f"Bearer {self.token}":
                raise _Error(401, "UNAUTHENTICATED", "Request had invalid authentication "
                             "credentials.")
            for m, pattern, api, handler in _ROUTES:
                match = pattern.match(url.path)
                if m == method and match:
                    delay = self.project.delay_s.get(api)
                    if delay:
                        time.sleep(delay)
                    if api in self.project.disabled:
                        raise self._service_disabled(api)
                    if api in self.project.denied:
                        raise _Error(403, "PERMISSION_DENIED", f"Permission denied on "
                                     f"{api}.googleapis.com for this caller (stand-in).")
                    params = {k: v[-1] for k, v in parse_qs(url.query).items()}
                    answer = getattr(self, "_" + handler)(body=body, q=params,
                                                          **match.groupdict())
                    self._send(h, 200, answer)
                    return
            raise _Error(404, "NOT_FOUND", f"no such method: {method} {url.path}")
        except _Error as err:
            self._send(h, err.code, {"error": {"code": err.code, "message": err.message,
                                               "status": err.status,
                                               **({"details": err.details}
                                                  if err.details else {})}})
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass

    def _service_disabled(self, api: str) -> _Error:
        """Google's answer when an API is off in the project: 403 PERMISSION_DENIED with a
        google.rpc.ErrorInfo of reason SERVICE_DISABLED
        (https://cloud.google.com/apis/design/errors#error_info)."""
        service = f"{api}.googleapis.com"
        return _Error(403, "PERMISSION_DENIED", f"{service} API has not been used in project "
                      f"{self.project.number} before or it is disabled.", [{
                          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                          "reason": "SERVICE_DISABLED", "domain": "googleapis.com",
                          "metadata": {"service": service,
                                       "consumer": f"projects/{self.project.number}"}}])

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, code: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        try:
            h.send_response(code)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _own(self, p: str) -> None:
        if p not in (self.project.project_id, self.project.number):
            raise _Error(403, "PERMISSION_DENIED", f"Permission denied on resource project "
                         f"{p} (or it may not exist).")

    # --- handlers (documented response shapes) --------------------------------------------
    def _get_project(self, p: str, **_: Any) -> dict[str, Any]:
        self._own(p)
        fp = self.project
        return {"name": f"projects/{fp.number}", "projectId": fp.project_id,
                "state": fp.state, "displayName": fp.project_id, "parent": "organizations/1"}

    def _test_iam(self, p: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self._own(p)
        asked = list(body.get("permissions", []))
        bad = [x for x in asked if x in self.project.invalid_permissions]
        if bad:
            raise _Error(400, "INVALID_ARGUMENT", f"Permission {bad[0]} is not valid for "
                         "this resource.")
        granted = self.project.granted
        return {"permissions": [x for x in asked if granted is None or x in granted]}

    def _get_role(self, name: str, **_: Any) -> dict[str, Any]:
        if name in self.project.roles:
            return self.project.roles[name]
        if name.startswith("projects/"):  # a custom role: only the taken ones exist
            role_id = name.rsplit("/", 1)[-1]
            deleted = role_id in self.project.taken.get("customRoleDeleted", ())
            if deleted or role_id in self.project.taken.get("customRole", ()):
                return {"name": name, "title": role_id, "stage": "GA", "deleted": deleted}
            raise _Error(404, "NOT_FOUND", f"The role named {name} was not found.")
        if self.project.all_roles_exist:
            return {"name": name, "title": name, "stage": "GA", "etag": "BwY="}
        raise _Error(404, "NOT_FOUND", f"The role named {name} was not found.")

    def _testable(self, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        # two pages, to exercise the client's paging: the known levels, then SUPPORTED rest
        levels = dict(self.project.testable)
        token = body.get("pageToken")
        names = sorted(levels)
        page = names[len(names) // 2:] if token else names[:len(names) // 2]
        out: dict[str, Any] = {"permissions": [
            {"name": n, "title": n, "customRolesSupportLevel": levels[n],
             "apiDisabled": False} for n in page]}
        if not token:
            out["nextPageToken"] = "page-2"
        return out

    def _list_services(self, p: str, q: dict[str, str], **_: Any) -> dict[str, Any]:
        self._own(p)
        fp = self.project
        return {"services": [{"name": f"projects/{fp.number}/services/{s}",
                              "parent": f"projects/{fp.number}", "state": "ENABLED",
                              "config": {"name": s, "title": s}} for s in sorted(fp.enabled)]}

    def _server_config(self, p: str, loc: str, **_: Any) -> dict[str, Any]:
        self._own(p)
        chans = self.project.channels
        allv = sorted({v for vs in chans.values() for v in vs}, reverse=True)
        return {"defaultClusterVersion": allv[0] if allv else "",
                "validMasterVersions": allv, "validNodeVersions": allv,
                "channels": [{"channel": c, "defaultVersion": vs[0] if vs else "",
                              "validVersions": vs} for c, vs in chans.items()]}

    def _get_cluster(self, p: str, loc: str, c: str, **_: Any) -> dict[str, Any]:
        self._own(p)
        found = self.project.clusters.get((loc, c))
        if found is None:
            raise _Error(404, "NOT_FOUND", f"Not found: projects/{p}/locations/{loc}/"
                         f"clusters/{c}.")
        return found

    def _machine_types(self, p: str, q: dict[str, str], **_: Any) -> dict[str, Any]:
        self._own(p)
        m = re.fullmatch(r'\s*name\s*=\s*"?([^"]+)"?\s*', q.get("filter", ""))
        wanted = m.group(1) if m else None
        items: dict[str, Any] = {}
        for mt, zones in self.project.zones_offering.items():
            if wanted and mt != wanted:
                continue
            for z in zones:
                items.setdefault(f"zones/{z}", {"machineTypes": []})["machineTypes"].append(
                    {"kind": "compute#machineType", "name": mt, "zone": z,
                     "guestCpus": 224, "memoryMb": 196608})
        return {"kind": "compute#machineTypeAggregatedList", "items": items}

    def _get_reservation(self, p: str, z: str, r: str, **_: Any) -> dict[str, Any]:
        found = self.project.reservations.get((p, z, r))
        if found is None:
            if p != self.project.project_id and not any(k[0] == p for k in
                                                        self.project.reservations):
                raise _Error(403, "PERMISSION_DENIED", f"Required 'compute.reservations.get'"
                             f" permission for 'projects/{p}/zones/{z}/reservations/{r}'")
            raise _Error(404, "NOT_FOUND", f"The resource 'projects/{p}/zones/{z}/"
                         f"reservations/{r}' was not found")
        return found

    def _reservations_aggregated(self, p: str, q: dict[str, str], **_: Any) -> dict[str, Any]:
        m = re.fullmatch(r'\s*name\s*=\s*"?([^"]+)"?\s*', q.get("filter", ""))
        wanted = m.group(1) if m else None
        items: dict[str, Any] = {}
        for (owner, zone, name), body in self.project.reservations.items():
            if owner == p and (wanted is None or name == wanted):
                items.setdefault(f"zones/{zone}", {"reservations": []})["reservations"].append(
                    body)
        return {"kind": "compute#reservationAggregatedList", "items": items}

    def _get_named(self, p: str, coll: str, n: str, **_: Any) -> dict[str, Any]:
        self._own(p)
        if n not in self.project.taken.get(_COLLECTION_KIND[coll], ()):
            raise _Error(404, "NOT_FOUND", f"The resource 'projects/{p}/.../{coll}/{n}' was "
                         "not found")
        return {"kind": f"compute#{coll[:-1]}", "name": n}

    def _get_bucket(self, b: str, **_: Any) -> dict[str, Any]:
        if b in self.project.taken.get("gcsBucketHidden", ()):
            raise _Error(403, "PERMISSION_DENIED", "The caller does not have "
                         f"storage.buckets.get access to the Google Cloud Storage bucket {b}.")
        if b not in self.project.taken.get("gcsBucket", ()):
            raise _Error(404, "NOT_FOUND", "The specified bucket does not exist.")
        return {"kind": "storage#bucket", "name": b}

    def _quota_info(self, p: str, svc: str, qid: str, **_: Any) -> dict[str, Any]:
        self._own(p)
        infos = self.project.quotas.get(qid)
        if infos is None:
            raise _Error(404, "NOT_FOUND", f"QuotaInfo {qid} not found.")
        return {"name": f"projects/{p}/locations/global/services/{svc}/quotaInfos/{qid}",
                "quotaId": qid, "service": svc, "isPrecise": True,
                "dimensions": sorted({k for d in infos for k in d["dimensions"]}),
                "dimensionsInfos": infos}

    def _get_region(self, p: str, r: str, **_: Any) -> dict[str, Any]:
        """Compute v1 ``regions.get``: the Region with its ``quotas[]``; a region with no
        quota information answers (the method "fails open") with ``quotaStatusWarning``
        (https://cloud.google.com/compute/docs/reference/rest/v1/regions/get)."""
        self._own(p)
        body: dict[str, Any] = {"kind": "compute#region", "name": r, "status": "UP",
                                "selfLink": f"https://compute.googleapis.com/compute/v1/"
                                            f"projects/{p}/regions/{r}"}
        quotas = self.project.region_quotas.get(r)
        if quotas is None:
            body["quotas"] = []
            body["quotaStatusWarning"] = {
                "code": "UNREACHABLE", "message": "Quota information is unavailable for this "
                "region (stand-in)."}
        else:
            body["quotas"] = [dict(q, owner=f"projects/{p}") for q in quotas]
        return body

    # --- Cloud Billing Catalog ------------------------------------------------------------
    @staticmethod
    def _page(items: list[dict[str, Any]], q: dict[str, str], key: str) -> dict[str, Any]:
        """One page of ``items`` (``pageSize``, default 5000 as the API's guide says;
        ``pageToken``: the offset as a string), with ``nextPageToken`` when more remain."""
        size = int(q.get("pageSize") or 5000) or 5000
        start = int(q.get("pageToken") or 0)
        out: dict[str, Any] = {key: items[start:start + size]}
        if start + size < len(items):
            out["nextPageToken"] = str(start + size)
        return out

    def _billing_services(self, q: dict[str, str], **_: Any) -> dict[str, Any]:
        """``services.list``: every public service (name, serviceId, displayName,
        businessEntityName)."""
        services = [{"name": f"services/{sid}", "serviceId": sid, "displayName": name,
                     "businessEntityName": "businessEntities/GCP"}
                    for sid, name in sorted(self.project.billing_services.items())]
        return self._page(services, q, "services")

    def _billing_skus(self, svc: str, q: dict[str, str], **_: Any) -> dict[str, Any]:
        """``services.skus.list``: the service's SKUs; 404 for an unknown service."""
        if svc not in self.project.billing_services:
            raise _Error(404, "NOT_FOUND", f"Service services/{svc} not found.")
        if q.get("currencyCode", "USD") != "USD":
            raise _Error(400, "INVALID_ARGUMENT", "the stand-in prices in USD only")
        return self._page(list(self.project.billing_skus.get(svc, [])), q, "skus")
