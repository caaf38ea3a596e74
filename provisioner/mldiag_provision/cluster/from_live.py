"""Build the :class:`~.model.ClusterModel` of a running cluster, read through a kubeconfig
(``lint --cluster [KUBECONFIG]``).

What is read (two or three LIST requests, each with the timeout of
:func:`~mldiag_provision.kubeclient.with_timeouts`):

* ``GET /api/v1/nodes``: the Nodes, grouped into :class:`~.model.NodeGroup` by GKE node pool
  (label ``cloud.google.com/gke-nodepool``), else by identical label sets (per-node labels
  such as the hostname and zone left out). A group's labels are those all its nodes share;
  its taints those all its nodes carry; its capacity and allocatable the smallest each
  resource has on any of its nodes (``status.capacity`` / ``status.allocatable``, parsed as
  Kubernetes quantities), so "fits a node of the group" means "fits every node of it".
* ``kueue.x-k8s.io`` ClusterQueues and LocalQueues (and ResourceFlavors, where there are
  ClusterQueues), ``v1beta2`` then ``v1beta1``. A 404 on both
  means Kueue is not installed: the model holds no queues (a queued workload is then not
  judged by ``kueue-covered-resources``).
* ``GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions``: the installed controllers,
  one per API group, with the kinds and versions their CRDs serve
  (:func:`controllers_of_crds`); ``/apis/admissionregistration.k8s.io/v1/{mutating,
  validating}webhookconfigurations``: their webhooks (:func:`webhooks_of`). Read as raw
  JSON like the Nodes; a 404 leaves the controllers unknown (no kind is judged unserved).

The model's mode is ``autopilot`` when the cluster serves GKE Autopilot's
``allowlistedv2workloads.auto.gke.io`` (:data:`AUTOPILOT_RESOURCE`), else ``unknown``; its
node groups are never complete (a GKE
Standard cluster may add node pools, and node auto-provisioning or Autopilot creates nodes
for pods that match none), so a selector that matches no group is not a finding.

Errors: an unreadable kubeconfig is a :class:`~mldiag_provision.errors.UsageError` (exit 2);
a server that cannot be reached, does not answer in time, or refuses the credentials (401,
403) is an :class:`~mldiag_provision.errors.EngineError` (exit 4), in one line with a hint,
never a traceback. The ``kubernetes`` client is imported inside the functions, so commands
that never read a cluster never import it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from mldiag_provision.cluster.kueue import cluster_queues, local_queues, resource_flavors
from mldiag_provision.cluster.model import (
    ClusterModel,
    Controller,
    GroupVersionKind,
    Mode,
    NodeGroup,
    Taint,
    Webhook,
)
from mldiag_provision.errors import EngineError, UsageError
from mldiag_provision.quantity import parse_quantity

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
SLICE_LABEL = "mldiag-provision/slice"  # plan.project.SLICE_LABEL (not imported: no plan here)
PER_NODE_LABELS = frozenset({
    "kubernetes.io/hostname", *ZONE_LABELS, "topology.gke.io/zone",
    "cloud.google.com/gke-tpu-slice-id", "cloud.google.com/gke-placement-group",
})
"""Labels that differ from node to node of one pool (well-known labels:
https://kubernetes.io/docs/reference/labels-annotations-taints/); left out of the grouping
key and of a group's labels."""

AUTOPILOT_RESOURCE = ("auto.gke.io", "v1", "allowlistedv2workloads")
"""A kind only GKE Autopilot clusters serve (elastic/cloud-on-k8s#6719 detects Autopilot by
it: "the allowlistedv2workloads resource that only exists within autopilot clusters").
Confidence M: one project's observation (2023), not a Google page; when it cannot be read the
mode is ``unknown``, which the checks treat the same (no rule reads a live model's mode)."""

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


# --- pure part: Node and queue objects (dicts, as the API returns them) -> model -----------

def _quantities(raw: object) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    if isinstance(raw, Mapping):
        for k, v in raw.items():
            q = parse_quantity(str(v)) if isinstance(v, str | int | float) else None
            if isinstance(k, str) and q is not None:
                out[k] = q
    return out


def _smallest(tables: list[dict[str, Decimal]]) -> dict[str, Decimal]:
    """Per resource present on every node, its smallest amount (a resource some node lacks is
    left out: a pod needing it would not fit that node)."""
    if not tables:
        return {}
    names = set(tables[0]).intersection(*tables[1:])
    return {n: min(t[n] for t in tables) for n in sorted(names)}


def _labels(node: Mapping[str, Any]) -> dict[str, str]:
    raw = (node.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def _taints(node: Mapping[str, Any]) -> set[Taint]:
    raw = (node.get("spec") or {}).get("taints") or []
    out = set()
    for t in raw if isinstance(raw, list) else []:
        if isinstance(t, Mapping) and isinstance(t.get("key"), str):
            out.add(Taint(str(t["key"]), str(t.get("value") or ""), str(t.get("effect") or "")))
    return out


def _group_key(labels: Mapping[str, str]) -> tuple[str, ...]:
    pool = labels.get(NODEPOOL_LABEL)
    if pool is not None:
        return ("pool", pool)
    return ("labels", *sorted(f"{k}={v}" for k, v in labels.items()
                              if k not in PER_NODE_LABELS))


def node_groups(nodes: Iterable[Mapping[str, Any]]) -> tuple[NodeGroup, ...]:
    """Nodes (``v1`` Node objects as dicts) grouped as the module docstring says, in the
    order their groups first appear."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for node in nodes:
        groups.setdefault(_group_key(_labels(node)), []).append(node)
    return tuple(_node_group(key, members) for key, members in groups.items())


def _shared_labels(label_sets: list[dict[str, str]]) -> dict[str, str]:
    """The labels every node of a group carries with the same value (per-node labels such
    as the hostname left out), in the first node's order."""
    return {k: v for k, v in label_sets[0].items() if k not in PER_NODE_LABELS
            and all(s.get(k) == v for s in label_sets[1:])}


def _zones(label_sets: list[dict[str, str]]) -> tuple[str, ...]:
    """The zones of a group's nodes (the first zone label each carries), sorted, once
    each."""
    return tuple(sorted({z for s in label_sets
                         if (z := next((s[k] for k in ZONE_LABELS if k in s), None))}))


def _node_group(key: tuple[str, ...], members: list[Mapping[str, Any]]) -> NodeGroup:
    """One group of nodes (``key``: :func:`_group_key`) as a :class:`NodeGroup`: the labels
    and taints all of them share, their zones, the smallest capacity and allocatable of any
    member (``status.capacity``/``status.allocatable``, base units), named by its node pool,
    else its machine type."""
    label_sets = [_labels(n) for n in members]
    shared = _shared_labels(label_sets)
    taints = set.intersection(*(_taints(n) for n in members))
    status = [n.get("status") or {} for n in members]
    capacity = _smallest([_quantities(s.get("capacity")) for s in status])
    allocatable = _smallest([_quantities(s.get("allocatable")) for s in status])
    machine = next((shared[k] for k in INSTANCE_TYPE_LABELS if k in shared), None)
    name = key[1] if key[0] == "pool" else (machine or "nodes")
    return NodeGroup(
        name=name, machine_type=machine, nodes=len(members), zones=_zones(label_sets),
        labels=shared, taints=tuple(sorted(taints, key=lambda t: (t.key, t.effect))),
        capacity=capacity, allocatable=allocatable, facts=(),
        slice=shared.get(SLICE_LABEL))


VERSION_LABEL = "app.kubernetes.io/version"
"""The recommended label a chart puts on what it installs, its CRDs included
(https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/)."""


def _served_kinds(crd: Mapping[str, Any]) -> tuple[str, set[GroupVersionKind]]:
    """(group, the (group, version, kind) it serves) of one CustomResourceDefinition
    (apiextensions.k8s.io/v1: ``spec.group``, ``spec.names.kind``, ``spec.versions[]`` with
    ``served``)."""
    spec = crd.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    group = spec.get("group")
    names = spec.get("names")
    kind = names.get("kind") if isinstance(names, Mapping) else None
    if not isinstance(group, str) or not isinstance(kind, str):
        return "", set()
    versions = spec.get("versions")
    served = {(group, str(v["name"]), kind)
              for v in (versions if isinstance(versions, list) else [])
              if isinstance(v, Mapping) and isinstance(v.get("name"), str)
              and v.get("served", True) is not False}
    return group, served


def controllers_of_crds(crds: Iterable[Mapping[str, Any]], source: str = "the cluster",
                        ) -> tuple[Controller, ...]:
    """One :class:`Controller` per API group of ``crds`` (CustomResourceDefinition objects as
    dicts): the kinds and versions it serves, its version from the CRDs' ``app.kubernetes.io/
    version`` label where they carry one. ``source`` says where the CRDs were read."""
    groups: dict[str, tuple[set[GroupVersionKind], set[str]]] = {}
    for crd in crds:
        group, served = _served_kinds(crd)
        if not group:
            continue
        kinds, versions = groups.setdefault(group, (set(), set()))
        kinds |= served
        meta = crd.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        if isinstance(labels, Mapping) and isinstance(labels.get(VERSION_LABEL), str):
            versions.add(str(labels[VERSION_LABEL]))
    return tuple(Controller(name=group, version=", ".join(sorted(v)) or None,
                            serves=frozenset(k), installed_by=f"its CRDs in {source}")
                 for group, (k, v) in sorted(groups.items()))


def webhooks_of(configs: Iterable[Mapping[str, Any]]) -> tuple[Controller, ...]:
    """One :class:`Controller` per Mutating/ValidatingWebhookConfiguration (dicts,
    admissionregistration.k8s.io/v1) holding its webhooks (:func:`_webhook`). Whether the
    control plane reaches them is not known from the API (the firewall is not a Kubernetes
    object). A configuration without a name or a readable webhook is left out."""
    out = []
    for cfg in configs:
        meta = cfg.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        hooks = cfg.get("webhooks")
        found = [w for w in map(_webhook, hooks if isinstance(hooks, list) else [])
                 if w is not None]
        if isinstance(name, str) and found:
            out.append(Controller(name=f"{cfg.get('kind', 'webhook configuration')} {name}",
                                  version=None, serves=frozenset(), webhooks=tuple(found),
                                  installed_by="the cluster"))
    return tuple(out)


def _webhook(h: object) -> Webhook | None:
    """One ``webhooks[]`` entry: its name, the Service port the API server calls
    (``clientConfig.service.port``, default 443; the pod port behind it is the Service's;
    None for a URL webhook), the resources its rules intercept, whether it fails closed
    (``failurePolicy``, default Fail in v1) and its one-label namespace selector; None
    without a name."""
    if not isinstance(h, Mapping) or not isinstance(h.get("name"), str):
        return None
    conf = h.get("clientConfig")
    svc = conf.get("service") if isinstance(conf, Mapping) else None
    port = svc.get("port", 443) if isinstance(svc, Mapping) else None
    label = _one_label(h.get("namespaceSelector"))
    return Webhook(
        name=str(h["name"]),
        port=port if isinstance(port, int) and not isinstance(port, bool) else None,
        resources=_intercepted(h.get("rules")),
        fails_closed=h.get("failurePolicy", "Fail") == "Fail",
        reachable=None, namespace_label=label)


def _intercepted(rules: object) -> frozenset[str]:
    """The resources a webhook's ``rules[].resources`` name, subresources folded into their
    resource (``pods/exec`` -> ``pods``)."""
    resources: set[str] = set()
    for r in rules if isinstance(rules, list) else []:
        if isinstance(r, Mapping) and isinstance(r.get("resources"), list):
            resources |= {str(x).split("/")[0] for x in r["resources"]}
    return frozenset(resources)


def _one_label(sel: object) -> tuple[str, str] | None:
    """(key, value) of a namespaceSelector that matches exactly one label, else None."""
    labels = sel.get("matchLabels") if isinstance(sel, Mapping) else None
    if not isinstance(labels, Mapping) or len(labels) != 1:
        return None
    key, value = next(iter(labels.items()))
    return str(key), str(value)


def model_of(nodes: Iterable[Mapping[str, Any]],
             cqs: Iterable[Mapping[str, Any]] = (),
             lqs: Iterable[Mapping[str, Any]] = (), *, mode: Mode = "unknown",
             flavors: Iterable[Mapping[str, Any]] = (),
             crds: Iterable[Mapping[str, Any]] | None = None,
             webhook_configs: Iterable[Mapping[str, Any]] = (),
             ) -> ClusterModel:
    """The model of a cluster given its Node, ClusterQueue, LocalQueue and ResourceFlavor
    objects (dicts); ``crds``: its CustomResourceDefinitions (None: not read, so its
    controllers are not known); ``webhook_configs``: its Mutating/ValidatingWebhook-
    Configurations."""
    controllers = (None if crds is None else
                   (*controllers_of_crds(crds), *webhooks_of(webhook_configs)))
    return ClusterModel(mode=mode, node_groups=node_groups(nodes), node_groups_complete=False,
                        cluster_queues=cluster_queues(cqs), local_queues=local_queues(lqs),
                        queue_label=QUEUE_NAME_LABEL, source="live",
                        resource_flavors=resource_flavors(flavors), controllers=controllers,
                        controllers_complete=crds is not None)


# --- reading a cluster ---------------------------------------------------------------------

def _failure(what: str, where: str, exc: BaseException) -> EngineError:
    """One clear error for a request that failed (no traceback)."""
    from mldiag_provision.kubeclient import is_timeout, request_timeout_s

    status = getattr(exc, "status", None)
    if status in (401, 403):
        verb = "did not accept the credentials" if status == 401 else "refused"
        return EngineError(
            f"{where}: the API server {verb} reading {what} (HTTP {status})",
            hint="lint --cluster needs to list nodes, Kueue queues, CRDs and webhook "
                 "configurations: check the kubeconfig's "
                 "user (`gcloud container clusters get-credentials` refreshes it) and RBAC "
                 "(`kubectl auth can-i list nodes`)")
    if status:
        reason = " ".join(str(getattr(exc, "reason", "") or "").split())
        return EngineError(f"{where}: the API server answered HTTP {status} {reason} reading "
                           f"{what}".replace("  ", " "),
                           hint="is this a Kubernetes API server? `kubectl get --raw /version`")
    if is_timeout(exc):
        return EngineError(f"{where}: no answer reading {what} within "
                           f"{request_timeout_s():g} s (MLDIAG_REQUEST_TIMEOUT_S)",
                           hint="the server accepted the connection but sent no answer: "
                                "check the network path and any proxy in between")
    return EngineError(f"{where}: cannot reach the API server reading {what} "
                       f"({_why(exc)})",
                       hint="check the server address in the kubeconfig and --context, the "
                            "network path, and that the cluster exists "
                            "(`gcloud container clusters list`)")


def _why(exc: BaseException) -> str:
    """The socket's words for a failed connection ("Connection refused", "Name or service not
    known"), else the exception's type."""
    inner = getattr(exc, "reason", None)
    for e in (inner, exc):
        if isinstance(e, BaseException):
            m = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(e))
            if m:
                return m.group(1).strip()
    return type(inner if isinstance(inner, BaseException) else exc).__name__


def _list_queues(custom: Any, plural: str, where: str) -> list[dict[str, Any]] | None:
    """Every object of a Kueue kind, from the first served version; None when no version is
    served (Kueue not installed)."""
    for version in KUEUE_VERSIONS:
        try:
            got = custom.list_cluster_custom_object(KUEUE_GROUP, version, plural)
        except Exception as exc:
            if getattr(exc, "status", None) == 404:
                continue
            raise _failure(f"{plural}.{KUEUE_GROUP}", where, exc) from None
        items = got.get("items") if isinstance(got, dict) else None
        return [i for i in items or [] if isinstance(i, dict)]
    return None


def read_cluster(api: Any, where: str = "the cluster") -> ClusterModel:
    """The model of the cluster ``api`` (a ``kubernetes.client.ApiClient``) talks to.

    Raises:
      EngineError: a request failed (unreachable, timed out, 401/403, another HTTP error).
    """
    from kubernetes import client

    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    try:
        # the raw answer, not the typed one: a Node the typed client cannot read (a field it
        # thinks is required) is left out by model_of instead of failing the whole read
        answer: Any = core.list_node(_preload_content=False)
    except Exception as exc:
        raise _failure("nodes", where, exc) from None
    try:
        nodes = json.loads(answer.data)
    except ValueError:
        raise EngineError(f"{where}: the server answered, but not as a Kubernetes API server "
                          "(its answer to GET /api/v1/nodes is not JSON)",
                          hint="check the server address in the kubeconfig: is it the "
                               "cluster's endpoint (`kubectl get --raw /version`)?") from None
    items = nodes.get("items") if isinstance(nodes, dict) else None
    cqs = _list_queues(custom, "clusterqueues", where) or []
    lqs = _list_queues(custom, "localqueues", where) or []
    rfs = _list_queues(custom, "resourceflavors", where) or [] if cqs else []
    crds = _list_raw(client.ApiextensionsV1Api(api).list_custom_resource_definition,
                     "customresourcedefinitions.apiextensions.k8s.io", where)
    admission = client.AdmissionregistrationV1Api(api)
    configs: list[dict[str, Any]] = []
    for kind, lister in (("MutatingWebhookConfiguration",
                          admission.list_mutating_webhook_configuration),
                         ("ValidatingWebhookConfiguration",
                          admission.list_validating_webhook_configuration)):
        got = _list_raw(lister, f"{kind.lower()}s.admissionregistration.k8s.io", where)
        configs += [{**c, "kind": kind} for c in got or []]
    return model_of([n for n in items or [] if isinstance(n, dict)], cqs, lqs,
                    mode="autopilot" if _serves(custom, *AUTOPILOT_RESOURCE) else "unknown",
                    flavors=rfs, crds=crds, webhook_configs=configs)


def _list_raw(lister: Any, what: str, where: str) -> list[dict[str, Any]] | None:
    """Every object a LIST call answers, read as raw JSON (a CRD or webhook configuration the
    typed client cannot read is not fatal); None when the server does not serve the kind
    (404).

    Raises:
      EngineError: the request failed otherwise (see :func:`_failure`), or the answer is not
        JSON.
    """
    try:
        answer: Any = lister(_preload_content=False)
    except Exception as exc:
        if getattr(exc, "status", None) == 404:
            return None
        raise _failure(what, where, exc) from None
    try:
        got = json.loads(answer.data)
    except ValueError:
        raise EngineError(f"{where}: the server answered, but not as a Kubernetes API server "
                          f"(its list of {what} is not JSON)",
                          hint="check the server address in the kubeconfig") from None
    items = got.get("items") if isinstance(got, dict) else None
    return [i for i in items or [] if isinstance(i, dict)]


def _serves(custom: Any, group: str, version: str, plural: str) -> bool:
    """True when the cluster lists ``plural.group/version`` (any failure: not known, False)."""
    try:
        custom.list_cluster_custom_object(group, version, plural, limit=1)
    except Exception:
        return False
    return True


DEFAULT_TIMEOUT_S = 120.0
"""``lint --cluster``'s overall deadline for reading the cluster when ``--timeout`` is not
given (seconds): four times the default per-request timeout (30 s); a healthy cluster
answers its half-dozen LIST requests in a second or two."""


def from_kubeconfig(path: str | None, context: str | None = None,
                    timeout_s: float | None = None) -> ClusterModel:
    """The model of the cluster of a kubeconfig (``path``, else ``$KUBECONFIG``, else
    ``~/.kube/config``) and ``context`` (None: the current context), read within an overall
    deadline of ``timeout_s`` seconds (default :data:`DEFAULT_TIMEOUT_S`) on top of each
    request's own timeout: a server that stalls or trickles its answers ends the read then.

    Raises:
      UsageError: the kubeconfig is missing, malformed or lacks the context.
      EngineError: the cluster cannot be read (see :func:`read_cluster`), or not within the
        deadline (naming the requests still pending).
    """
    from mldiag_provision.kubeclient import DeadlineExceeded, bounded, kubeconfig_client

    try:
        api = kubeconfig_client(path, context)
    except UsageError as exc:  # its hint names verify's flags; say lint's
        raise UsageError(exc.message, hint="lint --cluster KUBECONFIG [--context NAME] (no "
                         "value: $KUBECONFIG, else ~/.kube/config); `gcloud container "
                         "clusters get-credentials CLUSTER` writes one") from None
    where = f"kubeconfig {path or '$KUBECONFIG'}" + (f" (context {context})" if context else "")
    seconds = timeout_s or DEFAULT_TIMEOUT_S
    try:
        model: ClusterModel = bounded(api, seconds, lambda: read_cluster(api, where),
                                      "reading the cluster")
        return model
    except DeadlineExceeded as exc:
        raise EngineError(f"{where}: {exc}",
                          hint="the API server answers too slowly or not at all: check its "
                               "health, the network path and any proxy in between, or give "
                               "more time with --timeout SECONDS") from None
    finally:
        if not _abandoned(api):
            api.close()


def _abandoned(api: Any) -> bool:
    """Whether a request of ``api`` is still waiting (left behind at the deadline): closing
    the client's pool under it would block on its thread."""
    from mldiag_provision.kubeclient import in_flight

    return bool(in_flight(api))
