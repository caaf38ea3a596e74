"""A wire-level stand-in for a GKE cluster's Kubernetes API server (part of the sandbox, a
wire-level double of Google Cloud).

No kube-apiserver can run on this machine, so this serves the Kubernetes REST API over HTTPS
on 127.0.0.1 as a generic object store, and every client (the official Python ``kubernetes``
client, its ``DynamicClient``, the stand-in hashicorp/kubernetes and hashicorp/helm providers)
talks to it exactly as to a cluster. The response shapes follow the Kubernetes API
conventions (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md);
they are written here, not captured from a cluster.

What it serves:
  * discovery: ``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>``, ``/apis/<group>/<version>``
    (resource lists with kinds, verbs, scope), ``/version``, ``/healthz``, ``/readyz``,
    ``/livez``;
  * GET / LIST (``labelSelector``: ``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``,
    ``!key``; ``fieldSelector`` on ``metadata.name``/``metadata.namespace``), POST, PUT,
    PATCH (``application/merge-patch+json``, ``application/strategic-merge-patch+json``
    treated as a merge patch, ``application/json-patch+json``, and server-side apply
    ``application/apply-patch+yaml`` with ``fieldManager`` and ``force``), DELETE, the
    ``status`` subresource, ``dryRun=All``;
  * errors as ``Status`` objects: NotFound 404 (``namespaces "x" not found``), AlreadyExists
    409, Conflict 409 (stale resourceVersion; server-side apply field conflicts), Forbidden
    403, Invalid 422, Unauthorized 401, and "the server could not find the requested
    resource" (404) for a kind it does not serve;
  * built-in kinds: core Namespace, ServiceAccount, Service, Pod, Node, Secret, ConfigMap;
    apps Deployment, DaemonSet; batch Job; networking NetworkPolicy; rbac Role, RoleBinding,
    ClusterRole, ClusterRoleBinding; apiextensions CustomResourceDefinition;
    admissionregistration Mutating/ValidatingWebhookConfiguration. A custom kind (e.g.
    ``jobset.x-k8s.io/v1alpha2`` JobSet) is served once its CRD exists, and its objects go
    away with the CRD;
  * small controllers, so that what a chart installs becomes ready: a CRD is Established; a
    Deployment/DaemonSet reports all replicas available; every namespace gets its
    ``default`` ServiceAccount and the ``kubernetes.io/metadata.name`` label; deleting a
    namespace deletes what is in it; cert-manager's CA injector fills ``caBundle`` of
    webhooks annotated ``cert-manager.io/inject-ca-from`` once a cert-manager cainjector
    Deployment and the named Certificate exist.
  * workload controllers where the view runs them (``ClusterView.runs_controllers``; a GKE
    cluster does): the Job controller (Indexed Jobs' pods), the garbage collector for what
    JobSets and Jobs own, and, once a JobSet controller Deployment is installed, the JobSet
    controller (child Jobs and headless Service), as
    :mod:`mldiag_provision.sandbox.controllers` describes; then the scheduler
    (``ClusterView.schedules``) binds the pods. No container runs.

Which cluster it is comes from a :class:`ClusterView` (see
:mod:`mldiag_provision.sandbox.gke_cluster`): it
answers only while the cluster exists (else 503, "the cluster does not answer yet"), adds
derived read-only objects (Nodes from node pools, a managed add-on's objects) and may refuse
writes (Autopilot's managed namespaces). State lives in memory and is dropped when the
cluster is replaced or deleted.

Start one for a stand-in cloud directory with
:func:`mldiag_provision.sandbox.gke_cluster.serve_cloud` (or
``python -m mldiag_provision.sandbox.apiserver --cloud DIR``); see that module for the
environment the
stand-in providers read.
"""

from __future__ import annotations

import base64
import builtins
import copy
import datetime
import ipaddress
import json
import re
import ssl
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import yaml

from mldiag_provision.sandbox import tables
from mldiag_provision.sandbox.httpserve import QuietServer

# --- resources -------------------------------------------------------------------------------

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class Resource:
    """One REST resource: ``/apis/<group>/<version>/[namespaces/<ns>/]<plural>``."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ("status",)
    verbs: tuple[str, ...] = tuple(ALL_VERBS)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``deployments.apps`` (core: ``namespaces``), as errors name a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool,
       short: tuple[str, ...] = (), sub: tuple[str, ...] = ("status",)) -> Resource:
    return Resource(group, version, plural, kind, namespaced, kind.lower(), short, sub)


BUILTIN: tuple[Resource, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, ("ns",)),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",), ()),
    _r("", "v1", "services", "Service", True, ("svc",)),
    _r("", "v1", "pods", "Pod", True, ("po",), ("status", "log")),
    _r("", "v1", "nodes", "Node", False, ("no",)),
    _r("", "v1", "events", "Event", True, ("ev",), ()),
    _r("", "v1", "secrets", "Secret", True, (), ()),
    _r("", "v1", "configmaps", "ConfigMap", True, ("cm",), ()),
    _r("apps", "v1", "deployments", "Deployment", True, ("deploy",)),
    _r("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",)),
    _r("batch", "v1", "jobs", "Job", True, ()),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True, (), ()),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, (), ()),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, (), ()),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False,
       (), ()),
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
       False, ("crd", "crds")),
    _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
       "MutatingWebhookConfiguration", False, (), ()),
    _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", False, (), ()),
    # GKE's multi-network objects (GoogleCloudPlatform/gke-networking-api CRDs, which GKE
    # installs itself; served here on every cluster the stand-in plays)
    _r("networking.gke.io", "v1", "networks", "Network", False),
    _r("networking.gke.io", "v1", "gkenetworkparamsets", "GKENetworkParamSet", False),
)

# Namespaces the API server creates itself (kube-apiserver's system namespaces).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# The NamespaceLifecycle admission plugin refuses to delete these ("immortal" namespaces;
# kubernetes/kubernetes plugin/pkg/admission/namespace/lifecycle/admission.go).
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Kinds whose names must be DNS-1123 labels rather than subdomains (api-machinery
# validation: ValidateNamespaceName, ValidateServiceName).
LABEL_NAMED = {("", "namespaces"), ("", "services")}


class ApiError(Exception):
    """An error answered as a ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{res.qualified} "{name}" not found',
                    {"name": name, "group": res.group, "kind": res.plural})


def no_such_resource() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- label selectors ---------------------------------------------------------------------------

_SET_TERM = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\((.*)\)\s*$")


def _split_selector(text: str) -> list[str]:
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur)
    return terms


def selector_matches(selector: str, labels: dict[str, str]) -> bool:
    """Whether ``labels`` satisfy a label selector string (the API's syntax)."""
    for term in _split_selector(selector or ""):
        term = term.strip()
        if not term:
            continue
        m = _SET_TERM.match(term)
        if m:
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
            if (op == "in") != (key in labels and labels[key] in values):
                return False
            continue
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.replace("==", "=").partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


# --- patches -------------------------------------------------------------------------------

def field_terms(selector: str) -> list[tuple[str, bool, str]]:
    """A field selector (``involvedObject.name=p,status.phase!=Failed``) as (dotted path,
    equal?, value) terms; ``=`` and ``==`` are equality, ``!=`` inequality
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/)."""
    terms = []
    for term in selector.split(","):
        if "!=" in term:
            key, _, value = term.partition("!=")
            terms.append((key.strip(), False, value.strip()))
        elif "=" in term:
            key, _, value = term.replace("==", "=").partition("=")
            terms.append((key.strip(), True, value.strip()))
    return terms


def _field(obj: dict[str, Any], dotted: str) -> str:
    """The value at ``dotted`` in ``obj`` as a field selector compares it ("" if absent)."""
    node: Any = obj
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return "" if node is None else str(node)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    doc = copy.deepcopy(doc)

    def parts(pointer: str) -> list[str]:
        return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]

    def parent(pointer: str) -> tuple[Any, str]:
        ps = parts(pointer)
        cur = doc
        for p in ps[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur, ps[-1]

    def get(pointer: str) -> Any:
        cur = doc
        for p in parts(pointer):
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur

    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        try:
            if kind == "test":
                if get(path) != op.get("value"):
                    raise ApiError(422, "Invalid", f"the test operation on {path} failed")
                continue
            if kind in ("move", "copy"):
                value = copy.deepcopy(get(op["from"]))
                if kind == "move":
                    c, k = parent(op["from"])
                    c.pop(int(k)) if isinstance(c, list) else c.pop(k)
                kind, op = "add", {"path": path, "value": value}
            c, k = parent(path)
            if kind == "remove":
                c.pop(int(k)) if isinstance(c, list) else c.pop(k)
            elif kind in ("add", "replace"):
                if isinstance(c, list):
                    if k == "-":
                        c.append(op["value"])
                    elif kind == "add":
                        c.insert(int(k), op["value"])
                    else:
                        c[int(k)] = op["value"]
                else:
                    if kind == "replace" and k not in c:
                        raise KeyError(k)
                    c[k] = op["value"]
            else:
                raise ApiError(400, "BadRequest", f"unknown JSON patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, "Invalid",
                           f"the JSON patch could not be applied at {path}: {exc}") from None
    return doc


# --- server-side apply field ownership ----------------------------------------------------------

IGNORED_FIELDS = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"),
                  ("status",)}


def leaf_paths(value: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Paths of the leaves of ``value``; lists count as one (atomic) leaf. A simplification of
    structured-merge-diff: associative lists (e.g. containers keyed by name) are atomic here."""
    if isinstance(value, dict) and value:
        out: set[tuple[str, ...]] = set()
        for k, v in value.items():
            out |= leaf_paths(v, (*prefix, k))
        return out
    return {prefix} if prefix else set()


def get_path(obj: Any, path: tuple[str, ...]) -> Any:
    cur = obj
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def set_path(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    cur = obj
    for p in path[:-1]:
        cur = cur.setdefault(p, {})
    cur[path[-1]] = copy.deepcopy(value)


def del_path(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    cur, stack = obj, []
    for p in path[:-1]:
        if not isinstance(cur, dict) or p not in cur:
            return
        stack.append((cur, p))
        cur = cur[p]
    if isinstance(cur, dict):
        cur.pop(path[-1], None)
    for parent_obj, key in reversed(stack):  # drop emptied maps
        if parent_obj[key] == {}:
            parent_obj.pop(key)
        else:
            break


def fields_v1(paths: set[tuple[str, ...]]) -> dict[str, Any]:
    """``managedFields[].fieldsV1`` of a set of leaf paths (``f:<name>`` nesting)."""
    out: dict[str, Any] = {}
    for path in sorted(paths):
        cur = out
        for p in path:
            cur = cur.setdefault(f"f:{p}", {})
    return out


def paths_of_fields_v1(fv1: dict[str, Any] | None,
                       prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for k, v in (fv1 or {}).items():
        if not k.startswith("f:"):
            continue
        path = (*prefix, k[2:])
        out |= paths_of_fields_v1(v, path) if v else {path}
    return out


_OWNABLE_METADATA = (("metadata", "labels"), ("metadata", "annotations"))


def owned_paths(paths: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """The leaf paths among ``paths`` that a field manager can own: under ``metadata`` only
    labels and annotations, never the identity fields (:data:`IGNORED_FIELDS`) nor status."""
    return {p for p in paths if p not in IGNORED_FIELDS and p[:1] != ("status",)
            and (p[:1] != ("metadata",) or p[:2] in _OWNABLE_METADATA)}


def written_paths(obj: dict[str, Any], old: dict[str, Any] | None) -> set[tuple[str, ...]]:
    """The leaf paths ``obj`` sets or changes against ``old`` (all of them when ``old`` is
    None): what an Update writer comes to own."""
    before = leaf_paths(old) if old else set()
    return {p for p in leaf_paths(obj) if old is None or p not in before
            or get_path(obj, p) != get_path(old, p)}


def managed_fields_after(previous: list[dict[str, Any]], manager: str, operation: str,
                         api_version: str, paths: set[tuple[str, ...]]) -> list[dict[str, Any]]:
    """``metadata.managedFields`` after ``manager`` wrote ``paths`` with ``operation``: the
    other entries give those paths up (an entry left owning nothing goes), the writer's own
    entry is replaced by a fresh one (an Update that owns nothing adds none)."""
    def mine(m: dict[str, Any]) -> bool:
        return m.get("manager") == manager and m.get("operation") == operation

    managed = [dict(m) for m in previous]
    for m in managed:
        if not mine(m):
            m["fieldsV1"] = fields_v1(paths_of_fields_v1(m.get("fieldsV1")) - paths)
    managed = [m for m in managed if m.get("fieldsV1") and not mine(m)]
    if operation == "Apply" or paths:
        managed.append({"manager": manager, "operation": operation,
                        "apiVersion": api_version, "time": _now(),
                        "fieldsType": "FieldsV1", "fieldsV1": fields_v1(paths)})
    return managed


def _stamp_identity(meta: dict[str, Any], obj: dict[str, Any],
                    old: dict[str, Any] | None) -> None:
    """uid, creationTimestamp and generation of a written object: new ones for a new object;
    kept from ``old`` otherwise, the generation going up by one when anything but metadata
    and status changed."""
    if old is None:
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        meta["generation"] = 1
        return
    for k in ("uid", "creationTimestamp"):
        meta[k] = old["metadata"].get(k)
    changed = {k: v for k, v in obj.items() if k not in ("metadata", "status")} != {
        k: v for k, v in old.items() if k not in ("metadata", "status")}
    meta["generation"] = int(old["metadata"].get("generation", 1)) + (1 if changed else 0)


def _applies(m: dict[str, Any], manager: str) -> bool:
    return m.get("manager") == manager and m.get("operation") == "Apply"


def apply_conflicts(old: dict[str, Any], cfg: dict[str, Any], manager: str,
                    applied: set[tuple[str, ...]]) -> tuple[list[tuple[Any, tuple[str, ...]]],
                                                            set[tuple[str, ...]]]:
    """What an apply of ``cfg`` by ``manager`` over the ``applied`` paths meets in ``old``:
    the (other manager, path) pairs where it would change a value another manager owns, and
    the paths this manager applied last time."""
    conflicts = []
    previous: set[tuple[str, ...]] = set()
    for m in old["metadata"].get("managedFields") or []:
        owned = paths_of_fields_v1(m.get("fieldsV1"))
        if _applies(m, manager):
            previous = owned
            continue
        for p in owned & applied:
            if get_path(old, p) != get_path(cfg, p):
                conflicts.append((m.get("manager"), p))
    return conflicts, previous


def applied_object(old: dict[str, Any], cfg: dict[str, Any], manager: str,
                   applied: set[tuple[str, ...]],
                   previous: set[tuple[str, ...]]) -> dict[str, Any]:
    """``old`` with the ``applied`` fields of ``cfg`` set and the fields ``manager`` applied
    before (``previous``) but no longer applies removed, unless another manager owns them."""
    new = copy.deepcopy(old)
    others: set[tuple[str, ...]] = set()
    for m in old["metadata"].get("managedFields") or []:
        if not _applies(m, manager):
            others |= paths_of_fields_v1(m.get("fieldsV1"))
    for p in previous - applied - others:  # fields this manager no longer applies
        del_path(new, p)
    for p in applied:
        set_path(new, p, get_path(cfg, p))
    return new


def _conflict_error(req: Request, res: Resource,
                    conflicts: list[tuple[Any, tuple[str, ...]]]) -> ApiError:
    """The 409 Conflict of an apply that would take fields from other managers."""
    lines = [f'conflict with "{mgr}": .{".".join(map(str, p))}'
             for mgr, p in sorted(conflicts, key=str)]
    n = len(lines)
    return ApiError(409, "Conflict", f"Apply failed with {n} conflict"
                    f"{'s' if n > 1 else ''}: " + "\n".join(lines),
                    {"name": req.name, "group": res.group, "kind": res.plural,
                     "causes": [{"reason": "FieldManagerConflict", "message":
                                 f'conflict with "{mgr}"',
                                 "field": "." + ".".join(map(str, p))}
                                for mgr, p in conflicts]})


# --- the store -------------------------------------------------------------------------------

class ClusterView:
    """What a cluster adds to the generic store; :mod:`mldiag_provision.sandbox.gke_cluster`
    implements it.

    ``identity()`` is None while the cluster does not exist (the server answers 503) and
    changes when the cluster is replaced (the store is emptied). ``system_objects()`` are
    objects the platform owns (kept present; read-only derived ones such as Nodes are
    returned by ``derived()``), ``admit()`` may refuse or mutate a write.
    """

    def identity(self) -> str | None:
        return "cluster"

    def version(self) -> dict[str, Any]:
        return {"major": "1", "minor": "35", "gitVersion": "v1.35.0", "platform":
                "linux/amd64", "gitCommit": "0" * 40, "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25", "compiler": "gc"}

    def system_objects(self) -> list[dict[str, Any]]:
        return []

    def derived(self, res: Resource) -> list[dict[str, Any]] | None:
        """Read-only objects of ``res`` computed from elsewhere (None: stored normally)."""
        return None

    def admit(self, verb: str, res: Resource, namespace: str, name: str,
              obj: dict[str, Any] | None) -> list[str]:
        """Raise :class:`ApiError` to refuse; may mutate ``obj``; returns warnings."""
        return []

    def schedules(self) -> bool:
        """Whether the store binds new Pods to the cluster's Nodes
        (:mod:`mldiag_provision.sandbox.scheduler`); a bare store does not (its Pods stay as
        written)."""
        return False

    def provision(self, pod: dict[str, Any],
                  nodes: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The Nodes the platform creates for ``pod``, which fits none of ``nodes`` (GKE
        Autopilot does, :mod:`mldiag_provision.sandbox.gke_cluster`): ``[]`` when it creates
        none (the pod stays Pending with the scheduler's words), None when what the platform
        would do for this pod is not modelled (the pod stays as written, no verdict)."""
        return []

    def runs_controllers(self) -> bool:
        """Whether the store runs the cluster's workload controllers
        (:mod:`mldiag_provision.sandbox.controllers`): the Job controller and garbage
        collector of kube-controller-manager, and the JobSet controller once a JobSet
        controller Deployment is installed. A bare store does not (its JobSets and Jobs stay
        as written, for a test that plays the controllers itself)."""
        return False


@dataclass
class Request:
    method: str
    res: Resource | None
    namespace: str
    name: str
    subresource: str
    query: dict[str, str]
    body: Any = None
    content_type: str = ""
    warnings: list[str] = field(default_factory=list)


class Store:
    """Objects by (group, plural) and (namespace, name), with the built-in controllers."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.lock = threading.RLock()
        self.objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self.rv = 0
        self.cluster_id: str | None = None
        self.user = "standin-user@example.com"
        # what GET .../pods/<name>/log answers, by (namespace, name): there is no kubelet, so
        # a test that plays the workload's containers writes their output here ("" if none)
        self.pod_logs: dict[tuple[str, str], str] = {}

    # -- lifecycle ----------------------------------------------------------------------------
    def sync(self) -> None:
        """Follow the cluster: empty the store when it is replaced; keep system objects."""
        ident = self.view.identity()
        if ident is None:  # no cluster: nothing in it survives
            self.objects.clear()
            self.cluster_id = None
            raise ApiError(503, "ServiceUnavailable", "the cluster does not answer yet: "
                           "the stand-in cloud holds no google_container_cluster")
        if ident != self.cluster_id:
            self.objects.clear()
            self.cluster_id = ident
            for ns in SYSTEM_NAMESPACES:
                self._put(self._resource("", "namespaces"),
                          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                          "kube-apiserver")
        want = self.view.system_objects()
        for obj in want:
            res = self._resource_for(obj)
            if res is None:
                continue
            meta = obj["metadata"]
            have = self.objects.get((res.group, res.plural), {}).get(
                (meta.get("namespace", ""), meta["name"]))
            if have is None:
                self._put(res, copy.deepcopy(obj), "gke-system")
        # system objects no longer wanted (e.g. an add-on turned off) go away
        wanted = {(self._key(o)) for o in want}
        for (g, p), items in list(self.objects.items()):
            for (ns, name), o in list(items.items()):
                owner = (o["metadata"].get("labels") or {}).get(SYSTEM_OWNER_LABEL)
                if owner and (g, p, ns, name) not in wanted:
                    items.pop((ns, name))
        self._reconcile()

    def _key(self, obj: dict[str, Any]) -> tuple[str, str, str, str]:
        res = self._resource_for(obj)
        meta = obj["metadata"]
        return (res.group if res else "", res.plural if res else "", meta.get("namespace", ""),
                meta["name"])

    # -- resources ----------------------------------------------------------------------------
    def resources(self) -> list[Resource]:
        out = list(BUILTIN)
        for crd in self.objects.get(("apiextensions.k8s.io", "customresourcedefinitions"),
                                    {}).values():
            if not _established(crd):
                continue
            spec = crd.get("spec") or {}
            names = spec.get("names") or {}
            for v in spec.get("versions") or []:
                if v.get("served", True):
                    subs = tuple(k for k in (v.get("subresources") or {}) if k == "status")
                    out.append(Resource(str(spec.get("group")), str(v.get("name")),
                                        str(names.get("plural")), str(names.get("kind")),
                                        spec.get("scope") == "Namespaced",
                                        str(names.get("singular") or ""),
                                        tuple(names.get("shortNames") or ()), subs))
        return out

    def _resource(self, group: str, plural: str, version: str | None = None) -> Resource:
        for r in self.resources():
            if r.group == group and r.plural == plural and version in (None, r.version):
                return r
        raise no_such_resource()

    def find(self, group: str, version: str, plural: str) -> Resource | None:
        for r in self.resources():
            if (r.group, r.version, r.plural) == (group, version, plural):
                return r
        return None

    def _resource_for(self, obj: dict[str, Any]) -> Resource | None:
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        for r in self.resources():
            if r.group == group and r.version == version and r.kind == obj.get("kind"):
                return r
        return None

    # -- reads ---------------------------------------------------------------------------------
    def _derived(self, res: Resource) -> list[dict[str, Any]] | None:
        """The view's derived objects of ``res`` plus those the platform made in the store
        (Nodes GKE Autopilot provisioned, :meth:`ClusterView.provision`); None when ``res``
        is stored normally."""
        derived = self.view.derived(res)
        if derived is None:
            return None
        made = [o for _, o in sorted(self.objects.get((res.group, res.plural), {}).items())]
        return [*derived, *made]

    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        derived = self._derived(res)
        if derived is not None:
            for o in derived:
                if o["metadata"]["name"] == name:
                    return self._shape(res, o)
            raise not_found(res, name)
        obj = self.objects.get((res.group, res.plural), {}).get((namespace, name))
        if obj is None:
            raise not_found(res, name)
        return self._shape(res, obj)

    def list(self, res: Resource, namespace: str, label_selector: str = "",
             field_selector: str = "") -> dict[str, Any]:
        items = self._derived(res)
        if items is None:
            items = [o for (ns, _), o in sorted(self.objects.get((res.group, res.plural),
                                                                  {}).items())
                     if not res.namespaced or not namespace or ns == namespace]
        fields = field_terms(field_selector)
        out = []
        for o in items:
            meta = o.get("metadata", {})
            if not selector_matches(label_selector, meta.get("labels") or {}):
                continue
            if not all((_field(o, key) == value) == equal for key, equal, value in fields):
                continue
            out.append(self._shape(res, o))
        return {"apiVersion": res.group_version, "kind": f"{res.kind}List",
                "metadata": {"resourceVersion": str(self.rv)}, "items": out}

    @staticmethod
    def _shape(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = res.group_version
        out["kind"] = res.kind
        return out

    # -- writes ------------------------------------------------------------------------------
    def _check_writable(self, res: Resource) -> None:
        if self.view.derived(res) is not None:
            raise ApiError(405, "MethodNotAllowed", f"{res.plural} are derived from the "
                           "stand-in cloud (node pools) and are read-only here")

    def _validate(self, res: Resource, obj: dict[str, Any], namespace: str) -> None:
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        if not name:
            raise ApiError(422, "Invalid", f"{res.kind} \"\" is invalid: metadata.name: "
                           "Required value: name or generateName is required",
                           {"kind": res.kind, "group": res.group})
        rx, limit, what = ((DNS1123_LABEL, 63, "RFC 1123 label")
                           if (res.group, res.plural) in LABEL_NAMED
                           else (DNS1123_SUBDOMAIN, 253, "RFC 1123 subdomain"))
        if res.group == "rbac.authorization.k8s.io":
            rx = re.compile(r"^[^/%]+$")  # RBAC names are path segment names
        if len(name) > limit or not rx.match(name):
            raise self._invalid(res, name, "metadata.name", name,
                                f"a lowercase {what} must consist of lower case alphanumeric "
                                "characters, '-' or '.', and must start and end with an "
                                f"alphanumeric character (at most {limit} characters)")
        for key, value in (meta.get("labels") or {}).items():
            prefix, _, short = str(key).rpartition("/")
            if (not LABEL_NAME.match(short) or len(short) > 63
                    or (prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)))):
                raise self._invalid(res, name, "metadata.labels", key,
                                    "name part must consist of alphanumeric characters, '-', "
                                    "'_' or '.', and must start and end with an alphanumeric "
                                    "character (at most 63 characters)")
            if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
                raise self._invalid(res, name, "metadata.labels", value,
                                    "must be no more than 63 characters and consist of "
                                    "alphanumeric characters, '-', '_' or '.'")
        if res.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise ApiError(400, "BadRequest", "the namespace of the provided object does "
                               "not match the namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    def _field_validation(self, req: Request, res: Resource, obj: dict[str, Any]) -> None:
        """Server-side field validation, as a request's ``fieldValidation`` asks (kubectl
        sends ``Strict`` by default once the server's OpenAPI says it is supported):
        ``Strict`` refuses an unknown field with 400 BadRequest ("strict decoding error:
        unknown field ...") and any other schema error with 422 Invalid; ``Warn`` turns
        unknown fields into warnings; ``Ignore`` (or none) checks nothing
        (https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation).
        The schemas are the ones ``lint`` uses, for this cluster's Kubernetes version; the
        wording of a schema error is lint's, not kube-apiserver's."""
        mode = req.query.get("fieldValidation")
        if mode not in ("Strict", "Warn"):
            return
        from mldiag_provision.errors import MldiagError, Severity
        from mldiag_provision.lint.loading import Resource as Manifest
        from mldiag_provision.lint.schema import (
            API_VERSION,
            UNKNOWN_FIELD,
            available_versions,
            resolve_version,
            schema_set,
            validate_resource,
        )
        from mldiag_provision.recipe.sourcemap import SourceMap

        version = self.view.version()
        try:
            minor = resolve_version(f"{version['major']}.{version['minor']}")
        except MldiagError:  # a version kubernetes-validate ships no schemas for: the newest
            minor = available_versions()[-1]
        schemas = schema_set(minor)
        shaped = {**obj, "apiVersion": res.group_version, "kind": res.kind}
        problems = [p for p in validate_resource(Manifest("<request>", SourceMap("<request>"),
                                                          shaped), schemas)
                    if p.severity is Severity.ERROR and p.rule != API_VERSION.id]
        unknown = [f'unknown field "{p.path}"' for p in problems if p.rule == UNKNOWN_FIELD.id]
        invalid = [p for p in problems if p.rule != UNKNOWN_FIELD.id]
        if mode == "Warn":
            req.warnings += unknown
            return
        name = (obj.get("metadata") or {}).get("name") or ""
        if unknown:
            raise ApiError(400, "BadRequest", f'{res.kind} in version "{res.version}" cannot be '
                           f"handled as a {res.kind}: strict decoding error: "
                           + ", ".join(unknown))
        if invalid:
            raise ApiError(422, "Invalid", f'{res.kind} "{name}" is invalid: ' + ", ".join(
                f"{p.path}: {p.message}" for p in invalid),
                {"name": name, "group": res.group, "kind": res.kind,
                 "causes": [{"reason": "FieldValueInvalid", "message": p.message,
                             "field": p.path} for p in invalid]})

    @staticmethod
    def _invalid(res: Resource, name: str, fld: str, value: Any, why: str) -> ApiError:
        return ApiError(422, "Invalid", f'{res.kind} "{name}" is invalid: {fld}: Invalid '
                        f'value: {json.dumps(value)}: {why}',
                        {"name": name, "group": res.group, "kind": res.kind,
                         "causes": [{"reason": "FieldValueInvalid", "message": why,
                                     "field": fld}]})

    def _namespace_exists(self, namespace: str) -> None:
        if ("", namespace) not in self.objects.get(("", "namespaces"), {}):
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                           {"name": namespace, "kind": "namespaces"})

    def _put(self, res: Resource, obj: dict[str, Any], manager: str, *,
             paths: set[tuple[str, ...]] | None = None, operation: str = "Update",
             old: dict[str, Any] | None = None) -> dict[str, Any]:
        """Store ``obj`` as the new state of its object (``old`` its previous state, None for a
        new one), written by ``manager`` with ``operation`` (Update or Apply): the metadata the
        API server stamps, a namespace's defaults and the writer's managedFields entry over
        ``paths`` (by default the leaves it set or changed). Returns the stored object."""
        self.rv += 1
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.rv)
        _stamp_identity(meta, obj, old)
        if res.plural == "namespaces":
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj["status"] = {"phase": "Active"}
        obj["apiVersion"], obj["kind"] = res.group_version, res.kind
        # field ownership: the writer owns the leaves it set (or changed)
        owned = owned_paths(written_paths(obj, old) if paths is None else paths)
        meta["managedFields"] = managed_fields_after(
            (old or {}).get("metadata", {}).get("managedFields") or [], manager, operation,
            res.group_version, owned)
        self.objects.setdefault((res.group, res.plural), {})[
            (meta.get("namespace", ""), meta["name"])] = obj
        return obj

    def create(self, req: Request) -> dict[str, Any]:
        res = req.res
        assert res is not None
        self._check_writable(res)
        obj = copy.deepcopy(req.body) if isinstance(req.body, dict) else None
        if obj is None:
            raise ApiError(400, "BadRequest", "the request body is not a JSON object")
        self._check_kind(res, obj)
        self._validate(res, obj, req.namespace)
        self._field_validation(req, res, obj)
        name = obj["metadata"]["name"]
        # authorization and admission (GKE Warden) come before existence checks
        req.warnings += self.view.admit("create", res, req.namespace, name, obj)
        if res.namespaced:
            self._namespace_exists(req.namespace)
        if (req.namespace if res.namespaced else "", name) in self.objects.get(
                (res.group, res.plural), {}):
            raise ApiError(409, "AlreadyExists", f'{res.qualified} "{name}" already exists',
                           {"name": name, "group": res.group, "kind": res.plural})
        obj.pop("status", None)
        if req.query.get("dryRun") == "All":
            return self._shape(res, obj)
        manager = req.query.get("fieldManager") or "unknown"
        out = self._put(res, obj, manager)
        self._after_write(res, out)
        return self._shape(res, self.objects[(res.group, res.plural)][
            (out["metadata"].get("namespace", ""), out["metadata"]["name"])])

    @staticmethod
    def _check_kind(res: Resource, obj: dict[str, Any]) -> None:
        if obj.get("kind") not in (None, res.kind) or obj.get("apiVersion") not in (
                None, res.group_version):
            raise ApiError(400, "BadRequest", f"the API version in the data "
                           f"({obj.get('apiVersion')}) does not match the expected API version "
                           f"({res.group_version}) or the kind ({obj.get('kind')}) is not "
                           f"{res.kind}")

    def _existing(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((res.group, res.plural), {}).get(
            (namespace if res.namespaced else "", name))

    def update(self, req: Request) -> dict[str, Any]:
        res = req.res
        assert res is not None
        self._check_writable(res)
        old = self._existing(res, req.namespace, req.name)
        if old is None:
            raise not_found(res, req.name)
        obj = copy.deepcopy(req.body) if isinstance(req.body, dict) else None
        if obj is None:
            raise ApiError(400, "BadRequest", "the request body is not a JSON object")
        self._check_kind(res, obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.qualified} '
                           f'"{req.name}": the object has been modified; please apply your '
                           "changes to the latest version and try again",
                           {"name": req.name, "group": res.group, "kind": res.plural})
        if req.subresource == "status":
            new = copy.deepcopy(old)
            new["status"] = obj.get("status")
            obj = new
        else:
            obj["status"] = copy.deepcopy(old.get("status"))
            obj.setdefault("metadata", {})["name"] = req.name
        return self._write_existing(req, res, old, obj, "update")

    def _write_existing(self, req: Request, res: Resource, old: dict[str, Any],
                        obj: dict[str, Any], verb: str,
                        *, paths: set[tuple[str, ...]] | None = None, operation: str = "Update",
                        manager: str | None = None) -> dict[str, Any]:
        self._validate(res, obj, req.namespace)
        self._field_validation(req, res, obj)
        if obj["metadata"]["name"] != req.name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the name "
                           "on the URL")
        req.warnings += self.view.admit(verb, res, req.namespace, req.name, obj)
        obj["metadata"]["managedFields"] = old["metadata"].get("managedFields")
        if req.query.get("dryRun") == "All":
            return self._shape(res, obj)
        out = self._put(res, obj, manager or req.query.get("fieldManager") or "unknown",
                        paths=paths, operation=operation, old=old)
        self._after_write(res, out)
        return self._shape(res, self._existing(res, req.namespace, req.name) or out)

    def patch(self, req: Request) -> dict[str, Any]:
        res = req.res
        assert res is not None
        self._check_writable(res)
        ctype = req.content_type.split(";")[0].strip()
        old = self._existing(res, req.namespace, req.name)
        if ctype == "application/apply-patch+yaml":
            return self._apply(req, res, old)
        if old is None:
            raise not_found(res, req.name)
        if ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            if not isinstance(req.body, dict):
                raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")
            new = merge_patch(old, req.body)
        elif ctype == "application/json-patch+json":
            if not isinstance(req.body, list):
                raise ApiError(400, "BadRequest", "a JSON patch must be a JSON array")
            new = json_patch(old, req.body)
        else:
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: application/json-patch+json, "
                           "application/merge-patch+json, application/apply-patch+yaml, "
                           "application/strategic-merge-patch+json")
        if req.subresource != "status":
            new["status"] = copy.deepcopy(old.get("status"))
        return self._write_existing(req, res, old, new, "patch")

    def _apply(self, req: Request, res: Resource, old: dict[str, Any] | None) -> dict[str, Any]:
        """Server-side apply (a PATCH of type application/apply-patch+yaml): creates the object
        when ``old`` is None; otherwise refuses (409 Conflict) to change a field another
        manager owns unless ``force``, then merges the applied fields into ``old``."""
        manager, cfg = self._apply_request(req, res)
        applied = owned_paths(leaf_paths({k: v for k, v in cfg.items() if k != "status"}))
        if old is None:
            return self._apply_create(req, res, cfg, manager, applied)
        conflicts, previous = apply_conflicts(old, cfg, manager, applied)
        if conflicts and req.query.get("force") not in ("true", "True", "1"):
            raise _conflict_error(req, res, conflicts)
        new = applied_object(old, cfg, manager, applied, previous)
        new["metadata"]["name"] = req.name
        return self._write_existing(req, res, old, new, "patch", paths=applied,
                                    operation="Apply", manager=manager)

    @staticmethod
    def _apply_request(req: Request, res: Resource) -> tuple[str, dict[str, Any]]:
        """The field manager and the configuration of an apply request; ApiError 400 when the
        manager is missing or the body is not an object of the URL's apiVersion and kind."""
        manager = req.query.get("fieldManager")
        if not manager:
            raise ApiError(400, "BadRequest", "PATCH requests with apply patch type must "
                           "specify a fieldManager (the fieldManager query parameter)")
        cfg = req.body
        if not isinstance(cfg, dict):
            raise ApiError(400, "BadRequest", "an apply patch must be an object")
        if cfg.get("apiVersion") != res.group_version or cfg.get("kind") != res.kind:
            raise ApiError(400, "BadRequest", f"apiVersion and kind of an apply patch must be "
                           f"{res.group_version} and {res.kind}")
        return manager, cfg

    def _apply_create(self, req: Request, res: Resource, cfg: dict[str, Any], manager: str,
                      applied: set[tuple[str, ...]]) -> dict[str, Any]:
        """An apply that creates its object: validated and admitted like a create, the
        manager owning the ``applied`` fields."""
        obj = copy.deepcopy(cfg)
        obj.setdefault("metadata", {})["name"] = req.name
        self._validate(res, obj, req.namespace)
        self._field_validation(req, res, obj)
        req.warnings += self.view.admit("patch", res, req.namespace, req.name, obj)
        if res.namespaced:
            self._namespace_exists(req.namespace)
        obj.pop("status", None)
        if req.query.get("dryRun") == "All":
            return self._shape(res, obj)
        out = self._put(res, obj, manager, paths=applied, operation="Apply")
        self._after_write(res, out)
        return self._shape(res, self._existing(res, req.namespace, req.name) or out)

    def delete(self, req: Request) -> dict[str, Any]:
        res = req.res
        assert res is not None
        self._check_writable(res)
        old = self._existing(res, req.namespace, req.name)
        if old is None:
            raise not_found(res, req.name)
        if res.plural == "namespaces" and req.name in IMMORTAL_NAMESPACES:
            raise ApiError(403, "Forbidden", f'namespaces "{req.name}" is forbidden: this '
                           "namespace may not be deleted",
                           {"name": req.name, "kind": "namespaces"})
        req.warnings += self.view.admit("delete", res, req.namespace, req.name, None)
        if req.query.get("dryRun") == "All":
            return self._shape(res, old)
        self.objects[(res.group, res.plural)].pop((req.namespace if res.namespaced else "",
                                                    req.name))
        self.rv += 1
        if res.plural == "namespaces":  # the namespace controller empties it
            for items in self.objects.values():
                for key in [k for k in items if k[0] == req.name]:
                    items.pop(key)
        if res.plural == "customresourcedefinitions":  # its objects go with it
            spec = old.get("spec") or {}
            self.objects.pop((str(spec.get("group")),
                              str((spec.get("names") or {}).get("plural"))), None)
        if self.view.runs_controllers():  # the garbage collector follows ownerReferences
            self._collect_garbage()
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": req.name, "group": res.group, "kind": res.plural,
                            "uid": old["metadata"].get("uid")}}

    # -- controllers ------------------------------------------------------------------------
    def _after_write(self, res: Resource, obj: dict[str, Any]) -> None:
        self._reconcile()

    def _reconcile(self) -> None:
        """What the cluster's controllers would do next, done at once."""
        self._establish_crds()
        self._roll_out("deployments")
        self._roll_out("daemonsets")
        self._default_service_accounts()
        self._inject_ca()
        if self.view.runs_controllers():
            self._collect_garbage()
            if self._jobset_controller_installed():
                self._reconcile_jobsets()
            self._reconcile_jobs()
        if self.view.schedules():
            self._schedule()

    def _establish_crds(self) -> None:
        """The apiextensions controller: a CustomResourceDefinition not yet Established gets
        its accepted names, stored versions and the NamesAccepted and Established
        conditions."""
        crds = self.objects.get(("apiextensions.k8s.io", "customresourcedefinitions"), {})
        for crd in crds.values():
            if _established(crd):
                continue
            names = (crd.get("spec") or {}).get("names") or {}
            now = _now()
            crd["status"] = {
                "acceptedNames": names,
                "storedVersions": [v.get("name") for v in
                                   (crd.get("spec") or {}).get("versions") or []
                                   if v.get("storage")],
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found", "lastTransitionTime": now},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted",
                     "lastTransitionTime": now}]}

    def _roll_out(self, plural: str) -> None:
        """The Deployment (``plural`` "deployments") or DaemonSet ("daemonsets") controller:
        each object whose generation has not been observed reports all its replicas (one per
        eligible node for a DaemonSet) ready, at once."""
        for d in self.objects.get(("apps", plural), {}).values():
            spec = d.get("spec") or {}
            gen = d["metadata"].get("generation", 1)
            st = d.get("status") or {}
            if st.get("observedGeneration") == gen:
                continue
            if plural == "deployments":
                n = int(spec.get("replicas", 1))
                d["status"] = {"observedGeneration": gen, "replicas": n, "readyReplicas": n,
                               "availableReplicas": n, "updatedReplicas": n, "conditions": [
                                   {"type": "Available", "status": "True",
                                    "reason": "MinimumReplicasAvailable",
                                    "message": "Deployment has minimum availability."}]}
            else:
                n = self._daemon_nodes(spec.get("template") or {})
                # numberMisscheduled is always set by the DaemonSet controller (the
                # official client's V1DaemonSetStatus refuses a status without it)
                d["status"] = {"observedGeneration": gen, "desiredNumberScheduled": n,
                               "currentNumberScheduled": n, "numberReady": n,
                               "numberMisscheduled": 0,
                               "numberAvailable": n, "updatedNumberScheduled": n}

    def _default_service_accounts(self) -> None:
        """The service account controller: every namespace has a ``default``
        ServiceAccount."""
        sas = self.objects.setdefault(("", "serviceaccounts"), {})
        for ns in list(self.objects.get(("", "namespaces"), {})):
            if (ns[1], "default") not in sas:
                self._put(self._resource("", "serviceaccounts"),
                          {"apiVersion": "v1", "kind": "ServiceAccount",
                           "metadata": {"name": "default", "namespace": ns[1]}},
                          "kube-controller-manager")

    # -- workload controllers (mldiag_provision.sandbox.controllers) --------------------------
    OWNED_KINDS = ("JobSet", "Job")  # owners whose dependents the garbage collector removes

    def _collect_garbage(self) -> None:
        """The garbage collector, for what the workload controllers own: an object whose
        controller ownerReference names a JobSet or Job uid that no longer exists is deleted,
        until nothing changes (a JobSet takes its Jobs and Service, a Job its Pods)."""
        while True:
            uids = {str(o["metadata"].get("uid")) for items in self.objects.values()
                    for o in items.values()}
            gone = [(key, k) for key, items in self.objects.items() for k, o in items.items()
                    if any(r.get("controller") and r.get("kind") in self.OWNED_KINDS
                           and str(r.get("uid")) not in uids
                           for r in o["metadata"].get("ownerReferences") or [])]
            if not gone:
                return
            for key, k in gone:
                self.objects[key].pop(k, None)
                self.pod_logs.pop(k, None)
            self.rv += 1

    def _jobset_controller_installed(self) -> bool:
        """A JobSet controller Deployment runs: ``<fullname>-controller`` from the JobSet
        chart (:func:`mldiag_provision.sandbox.charts.render_jobset`) or
        ``jobset-controller-manager`` from the release manifests."""
        return any(name.endswith(("jobset-controller", "jobset-controller-manager"))
                   for (_, name) in self.objects.get(("apps", "deployments"), {}))

    def _reconcile_jobsets(self) -> None:
        """The JobSet controller: each JobSet gets its headless Service and its child Jobs
        (created when missing; ``suspend`` mirrored onto existing ones)."""
        from mldiag_provision.sandbox import controllers

        jobs = self.objects.setdefault(("batch", "jobs"), {})
        services = self.objects.setdefault(("", "services"), {})
        for js in list(self.objects.get((controllers.JOBSET_GROUP, "jobsets"), {}).values()):
            ns = js["metadata"].get("namespace") or "default"
            svc = controllers.headless_service(js)
            if svc is not None and (ns, svc["metadata"]["name"]) not in services:
                self._put(self._resource("", "services"), svc, "jobset-controller-manager")
            suspended = bool((js.get("spec") or {}).get("suspend") or False)
            for job in controllers.construct_jobs(js):
                have = jobs.get((ns, job["metadata"]["name"]))
                if have is None:
                    stored = self._put(self._resource("batch", "jobs"), job,
                                       "jobset-controller-manager")
                    controllers.default_job(stored)
                elif controllers.controller_uid(have) == js["metadata"].get("uid") and bool(
                        (have.get("spec") or {}).get("suspend")) != suspended:
                    new = copy.deepcopy(have)
                    new["spec"]["suspend"] = suspended
                    self._put(self._resource("batch", "jobs"), new,
                              "jobset-controller-manager", old=have)

    def _reconcile_jobs(self) -> None:
        """The Job controller, for Indexed Jobs: pods up to ``parallelism`` for the missing
        completion indexes; a suspended Job's active pods are deleted; ``status.active``."""
        from mldiag_provision.sandbox import controllers

        pods = self.objects.setdefault(("", "pods"), {})
        for job in list(self.objects.get(("batch", "jobs"), {}).values()):
            uid = job["metadata"].get("uid")
            ns = job["metadata"].get("namespace") or "default"
            mine = [(k, p) for k, p in pods.items() if controllers.controller_uid(p) == uid]
            if (job.get("spec") or {}).get("suspend"):
                for k, _ in mine:
                    pods.pop(k)
                    self.pod_logs.pop(k, None)
                mine = []
            for pod in controllers.indexed_pods(job, [p for _, p in mine]):
                pod["metadata"]["namespace"] = ns
                self._put(self._resource("", "pods"), pod, "kube-controller-manager")
                mine.append(((ns, pod["metadata"]["name"]), pod))
            if (job.get("spec") or {}).get("completionMode") != "Indexed":
                continue  # NonIndexed Jobs are not modelled: their status stays as written
            status = dict(job.get("status") or {})
            if mine:
                status["active"] = len(mine)  # omitted when 0, as the API serves it
            else:
                status.pop("active", None)
            status["ready"] = 0  # no container runs
            job["status"] = status

    def _daemon_nodes(self, template: dict[str, Any]) -> int:
        """How many nodes a DaemonSet with pod ``template`` runs on: those it fits
        (:func:`mldiag_provision.sandbox.scheduler.runs_on`); 1 in a store that holds no
        Nodes (a bare test server)."""
        nodes = self._nodes()
        if not nodes:
            return 1
        from mldiag_provision.sandbox.scheduler import runs_on

        return sum(runs_on(template, node) for node in nodes)

    def _nodes(self) -> builtins.list[dict[str, Any]]:  # `list` here is Store.list
        derived = self._derived(self._resource("", "nodes"))
        if derived is not None:
            return derived
        return list(self.objects.get(("", "nodes"), {}).values())

    def _schedule(self) -> None:
        """kube-scheduler: each Pod with no node and no scheduling verdict yet is bound to
        a node it fits, or stays Pending with PodScheduled=False (reason Unschedulable) and
        a FailedScheduling event in the scheduler's words
        (:mod:`mldiag_provision.sandbox.scheduler`)."""
        from mldiag_provision.sandbox.scheduler import place

        pods = self.objects.get(("", "pods"), {})
        waiting = [p for p in pods.values()
                   if not (p.get("spec") or {}).get("nodeName")
                   and (p.get("status") or {}).get("phase") in (None, "Pending")
                   and not any(c.get("type") == "PodScheduled" for c in
                               (p.get("status") or {}).get("conditions") or [])]
        if not waiting:
            return
        nodes = self._nodes()
        for pod in sorted(waiting, key=lambda p: p["metadata"].get("creationTimestamp", "")):
            outcome = place(pod, nodes, pods.values())
            if outcome.node is None:
                made = self.view.provision(pod, nodes)
                if made is None:
                    continue  # not modelled: the pod stays as written
                for node in made:
                    nodes.append(self._put(self._resource("", "nodes"), node,
                                           "cluster-autoscaler"))
                if made:
                    outcome = place(pod, nodes, pods.values())
            now = _now()
            status = pod.setdefault("status", {})
            status.setdefault("phase", "Pending")
            if outcome.node is not None:
                pod.setdefault("spec", {})["nodeName"] = outcome.node
                status["conditions"] = [{"type": "PodScheduled", "status": "True",
                                         "lastTransitionTime": now}]
                continue
            status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                     "reason": "Unschedulable", "message": outcome.message,
                                     "lastTransitionTime": now}]
            self._event(pod, "Warning", "FailedScheduling", str(outcome.message),
                        "default-scheduler")

    def _event(self, obj: dict[str, Any], kind: str, reason: str, message: str,
               source: str) -> None:
        """A core/v1 Event about ``obj`` (what ``kubectl describe`` lists under Events)."""
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        name = f"{meta['name']}.{uuid.uuid4().hex[:16]}"
        now = _now()
        self._put(self._resource("", "events"), {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get(
                "kind", "Pod"), "name": meta["name"], "namespace": namespace,
                "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
            "type": kind, "reason": reason, "message": message,
            "source": {"component": source}, "reportingComponent": source,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1}, source)

    def _inject_ca(self) -> None:
        """cert-manager's cainjector: ``cert-manager.io/inject-ca-from: <ns>/<certificate>``
        on a webhook configuration makes it copy the CA of that Certificate into every
        webhook's ``clientConfig.caBundle`` (cert-manager docs, "CA Injector"). Only when a
        cert-manager cainjector Deployment runs and the Certificate exists."""
        injector = any(name.endswith("cainjector") for (_, name) in
                       self.objects.get(("apps", "deployments"), {}))
        certs = self.objects.get(("cert-manager.io", "certificates"), {})
        for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            for cfg in self.objects.get(("admissionregistration.k8s.io", plural), {}).values():
                ref = (cfg["metadata"].get("annotations") or {}).get(
                    "cert-manager.io/inject-ca-from")
                if not ref or not injector:
                    continue
                ns, _, cert = ref.partition("/")
                if (ns, cert) not in certs:
                    continue
                for hook in cfg.get("webhooks") or []:
                    cc = hook.setdefault("clientConfig", {})
                    if not cc.get("caBundle"):
                        cc["caBundle"] = base64.b64encode(STANDIN_WEBHOOK_CA).decode()


SYSTEM_OWNER_LABEL = "standin.mldiag/system"
# A PEM-shaped placeholder the stand-in's cert-manager "issues" as a webhook CA (not a key).
STANDIN_WEBHOOK_CA = (b"-----BEGIN CERTIFICATE-----\nc3RhbmQtaW4gd2ViaG9vayBDQQ==\n"
                      b"-----END CERTIFICATE-----\n")


def _established(crd: dict[str, Any]) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


# --- HTTP ------------------------------------------------------------------------------------

def _discovery_resource(r: Resource) -> list[dict[str, Any]]:
    out = [{"name": r.plural, "singularName": r.singular or r.kind.lower(),
            "namespaced": r.namespaced, "kind": r.kind, "verbs": list(r.verbs),
            **({"shortNames": list(r.short_names)} if r.short_names else {})}]
    for sub in r.subresources:
        out.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                    "kind": r.kind if sub == "status" else "Pod",
                    "verbs": ["get", "patch", "update"] if sub == "status" else ["get"]})
    return out


def _openapi_document(res: list[Resource], path: str) -> dict[str, Any]:
    """The OpenAPI v3 root document (``/openapi/v3``) or a group-version document
    (``/openapi/v3/apis/<group>/<version>``, ``/openapi/v3/api/v1``); ApiError 404 for a
    group-version not served."""
    from mldiag_provision.sandbox.openapi import group_version_document, root_document

    if path == "/openapi/v3":
        return root_document(res)
    doc = group_version_document(res, path.removeprefix("/openapi/v3/"))
    if doc is None:
        raise ApiError(404, "NotFound", "the server could not find the requested "
                       "resource")
    return doc


def _group_discovery(res: list[Resource], path: str) -> dict[str, Any] | None:
    """Discovery of the named API groups: the APIGroupList (``/apis``), one APIGroup
    (``/apis/<group>``) or one group-version's APIResourceList (``/apis/<group>/<version>``);
    None for a longer path, ApiError 404 for a group or version not served."""
    groups: dict[str, list[str]] = {}
    for r in res:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)

    def group_doc(g: str) -> dict[str, Any]:
        versions = [{"groupVersion": f"{g}/{v}", "version": v} for v in groups[g]]
        return {"name": g, "versions": versions, "preferredVersion": versions[0]}

    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [group_doc(g) for g in groups]}
    parts = path.split("/")[2:]
    if len(parts) == 1:
        if parts[0] not in groups:
            raise no_such_resource()
        return {"kind": "APIGroup", "apiVersion": "v1", **group_doc(parts[0])}
    if len(parts) == 2:
        rs = [x for r in res if (r.group, r.version) == tuple(parts)
              for x in _discovery_resource(r)]
        if not rs:
            raise no_such_resource()
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{parts[0]}/{parts[1]}", "resources": rs}
    return None


class ApiServer:
    """The stand-in API server: ``with ApiServer(view) as api: api.endpoint``.

    Args:
      view: the cluster it plays (:class:`ClusterView`).
      token: bearer token every request must carry (None: no authentication).
      host/port: where to listen (port 0: any free port).
      certs: (CA PEM, server certificate PEM, server key PEM) to serve, as
        :func:`make_certs` makes them (None: new ones), e.g. kept by the sandbox so that a
        cluster's CA stays the same between commands.
    """

    def __init__(self, view: ClusterView, *, token: str | None = None,
                 host: str = "127.0.0.1", port: int = 0,
                 certs: tuple[bytes, bytes, bytes] | None = None) -> None:
        self.store = Store(view)
        self.token = token
        self.requests: list[tuple[str, str]] = []  # (method, path) for assertions
        self.ca_pem, server_pem, server_key = certs or make_certs(host)
        self._tmp = tempfile.TemporaryDirectory(prefix="mldiag-standin-apiserver-")
        cert_file = Path(self._tmp.name) / "server.pem"
        cert_file.write_bytes(server_pem + server_key)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert_file)
        cert_file.unlink()
        self.httpd = QuietServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True,
                                            do_handshake_on_connect=False)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                       name="standin-apiserver")

    # -- public -------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        """``host:port``, as GKE's ``endpoint`` (without scheme)."""
        host, port = self.httpd.server_address[:2]
        if isinstance(host, bytes):  # typeshed's str | bytes; an AF_INET server gives str
            host = host.decode()
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"https://{self.endpoint}"

    def start(self) -> ApiServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._tmp.cleanup()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_ca(self, path: Path) -> Path:
        path.write_bytes(self.ca_pem)
        return path

    def kubeconfig(self, path: Path, context: str = "standin") -> Path:
        """A kubeconfig for this server (CA data and the bearer token)."""
        user = {"token": self.token} if self.token else {}
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": context, "cluster": {
                "server": self.url,
                "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": context, "user": user}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        }), encoding="utf-8")
        return path

    def objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Stored objects of a kind (test helper; no HTTP)."""
        with self.store.lock:
            out = []
            for items in self.store.objects.values():
                for (ns, _), o in items.items():
                    if o.get("kind") == kind and namespace in (None, ns):
                        out.append(copy.deepcopy(o))
            return out

    # -- dispatch -----------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str],
               body: bytes) -> tuple[int, Any, list[str]]:
        """(status code, JSON body, warnings) of one request."""
        url = urlparse(raw_path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        self.requests.append((method, raw_path))
        if self.token is not None:
            auth = headers.get("authorization", "")
            if auth != f"Bearer {self.token}":
                return 401, ApiError(401, "Unauthorized", "Unauthorized").status(), []
        store = self.store
        with store.lock:
            try:
                store.sync()
                if path in ("/healthz", "/readyz", "/livez"):
                    return 200, "ok", []
                if path == "/version":
                    return 200, store.view.version(), []
                if method == "GET":
                    disc = self._discovery(path)
                    if disc is not None:
                        return 200, disc, []
                req = self._route(method, path, query)
                req.content_type = headers.get("content-type", "application/json")
                if body:
                    try:
                        req.body = (yaml.safe_load(body) if "yaml" in req.content_type
                                    else json.loads(body))
                    except (ValueError, yaml.YAMLError) as exc:
                        raise ApiError(400, "BadRequest",
                                       f"the request body could not be decoded: {exc}") from None
                # kubectl's server-side printing (sandbox/tables.py)
                return tables.answer(req, headers, self._verb(req))
            except ApiError as err:
                return err.code, err.status(), []

    def _discovery(self, path: str) -> dict[str, Any] | None:
        """The document a GET of ``path`` returns when ``path`` is a discovery or OpenAPI
        path (/openapi/v3[/...], /api, /api/v1, /apis, /apis/<group>[/<version>]); None for
        any other path. ApiError 404 for a group, version or OpenAPI document not served."""
        res = self.store.resources()
        if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
            return _openapi_document(res, path)
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": self.endpoint}]}
        if path == "/api/v1":
            return {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                x for r in res if r.group == "" for x in _discovery_resource(r)]}
        if path == "/apis" or path.startswith("/apis/"):
            return _group_discovery(res, path)
        return None

    def _route(self, method: str, path: str, query: dict[str, str]) -> Request:
        segs = [unquote(s) for s in path.split("/")[1:]]
        if segs[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", segs[2:]
        elif segs[:1] == ["apis"] and len(segs) >= 3:
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            raise no_such_resource()
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if not rest:
            raise no_such_resource()
        res = self.store.find(group, version, rest[0])
        if res is None:
            raise no_such_resource()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in res.subresources and not (res.plural == "namespaces"
                                                        and sub == "finalize"):
            raise no_such_resource()
        if res.namespaced and name and not namespace:
            raise no_such_resource()
        return Request(method, res, namespace, name, sub, query)

    def _verb(self, req: Request) -> tuple[int, Any, list[str]]:
        store, res = self.store, req.res
        assert res is not None
        if req.method == "GET":
            if req.query.get("watch") in ("true", "1"):
                raise ApiError(405, "MethodNotAllowed",
                               "watch is not served by the stand-in API server; poll instead")
            if req.name:
                obj = store.get(res, req.namespace, req.name)
                if req.subresource == "log":
                    return 200, store.pod_logs.get((req.namespace, req.name), ""), []
                return 200, obj, []
            return 200, store.list(res, req.namespace, req.query.get("labelSelector", ""),
                                   req.query.get("fieldSelector", "")), []
        if req.method == "POST" and not req.name:
            return 201, store.create(req), req.warnings
        if req.method == "PUT" and req.name:
            return 200, store.update(req), req.warnings
        if req.method == "PATCH" and req.name:
            existed = store._existing(res, req.namespace, req.name) is not None
            out = store.patch(req)
            return (200 if existed else 201), out, req.warnings
        if req.method == "DELETE" and req.name:
            return 200, store.delete(req), req.warnings
        raise ApiError(405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                code, payload, warnings = server.handle(self.command, self.path, headers, body)
                data = (payload.encode() if isinstance(payload, str)
                        else json.dumps(payload).encode())
                self.send_response(code)
                self.send_header("Content-Type", "text/plain" if isinstance(payload, str)
                                 else "application/json")
                self.send_header("Content-Length", str(len(data)))
                for w in warnings:
                    # RFC 7234 warn-text is a quoted-string: quotes and backslashes escaped
                    text = w.replace("\\", "\\\\").replace('"', '\\"')
                    self.send_header("Warning", f'299 - "{text}"')
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        return Handler


# --- certificates ---------------------------------------------------------------------------

def make_certs(host: str = "127.0.0.1") -> tuple[bytes, bytes, bytes]:
    """(CA certificate PEM, server certificate PEM, server key PEM): a throwaway CA and a
    server certificate it signs for ``host`` (IP SAN) and ``localhost``, as GKE's control
    plane serves a certificate signed by the cluster CA (``master_auth.cluster_ca_certificate``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mldiag stand-in cluster CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=7))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       key_encipherment=False, content_commitment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
    try:
        sans.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        sans.append(x509.DNSName(host))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.SubjectAlternativeName(sans), False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), cert.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - manual use
    """``python -m mldiag_provision.sandbox.apiserver --cloud DIR``: serve the cluster of a
    stand-in cloud."""
    import argparse
    import time

    from mldiag_provision.sandbox.gke_cluster import serve_cloud

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--cloud", required=True, type=Path)
    p.add_argument("--token", default=None)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ca-out", type=Path, default=None)
    a = p.parse_args(argv)
    api = serve_cloud(a.cloud, token=a.token, port=a.port)
    ca = a.ca_out or a.cloud / "apiserver-ca.pem"
    api.write_ca(ca)
    print(f"MLDIAG_STANDIN_APISERVER={api.endpoint}", flush=True)
    print(f"MLDIAG_STANDIN_APISERVER_CA={ca}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        api.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(main())
