"""The GKE side of the stand-in API server (sandbox: a wire-level double of GKE): which
cluster of a stand-in
cloud directory it plays, and what GKE adds to a plain Kubernetes API server.

:class:`GkeCloudView` reads the stand-in's cloud (``MLDIAG_STANDIN_CLOUD``, see
:class:`mldiag_provision.sandbox.plugin.Cloud`) on every request:
  * the API server answers only while a ``google_container_cluster`` object exists there
    (503 "the cluster does not answer yet" otherwise); a deleted or replaced cluster comes
    back empty;
  * Nodes are derived from the cluster's ``google_container_node_pool`` objects: one per VM
    (``node_count`` x zones), labelled as GKE labels TPU and GPU nodes, with the chips
    allocatable, and, where a real GKE node of the machine type was recorded
    (``recorded_nodes.yaml``), its cpu/memory/ephemeral-storage capacity and allocatable, its
    machine labels (:data:`MACHINE_LABELS`) and its taints (none derived where none is
    recorded: no TPU or a2/a3/a4/g2 GPU capacity was found in public sources);
  * on an Autopilot cluster (``enable_autopilot = true``) writes in Autopilot-managed
    namespaces are refused with GKE Warden's message, and admission webhooks get the
    namespaceSelector Autopilot adds;
  * with the GKE-managed ML Diagnostics add-on on
    (``managed_machine_learning_diagnostics_config { enabled = true }``) the cluster shows
    what the add-on installs: the MLDiagnosticsConnection CRD and an injection webhook with a
    CA bundle.

Environment the stand-in providers read (set by :mod:`mldiag_provision.sandbox.session`
and the test fixtures):
  * ``MLDIAG_STANDIN_APISERVER``: ``host:port`` of a running stand-in API server; the google
    stand-in gives every cluster it creates this ``endpoint``;
  * ``MLDIAG_STANDIN_APISERVER_CA``: path of that server's CA (PEM); clusters get it, base64,
    as ``master_auth[0].cluster_ca_certificate``;
  * ``GOOGLE_OAUTH_ACCESS_TOKEN``: the token ``data.google_client_config`` returns (as the
    real provider does), and the bearer token the API server was started to accept.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldiag_provision.sandbox.apiserver import (
    SYSTEM_OWNER_LABEL,
    ApiError,
    ApiServer,
    ClusterView,
    Resource,
)

if TYPE_CHECKING:
    from mldiag_provision.catalog.tpu import MachineType, SliceShape

# Autopilot-managed namespaces: GKE Warden refuses writes in them ("GKE Warden authz [denied
# by managed-namespaces-limitation]: the namespace "kube-system" is managed and the request's
# verb "create" is denied"). Sources (verbatim errors and reports; no Google page lists them):
#   kube-system: terraform-google-modules/terraform-google-kubernetes-engine#2348,
#     cert-manager/cert-manager#3713, prometheus-community/helm-charts#713;
#   kube-public, kube-node-lease: open-policy-agent/gatekeeper#3045 ("For GKE autopilot its
#     not possible to patch kube-* namespaces");
#   gke-gmp-system: tailscale/tailscale#9475;
#   gke-managed-cim: Dynatrace/dynatrace-operator#2194 (Autopilot's webhook exclusion list).
AUTOPILOT_MANAGED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease",
                                "gke-gmp-system", "gke-managed-cim")
# What Autopilot's AdmissionWebhookController adds to every webhook's namespaceSelector, and
# the warning it answers with (Dynatrace/dynatrace-operator#2194; aiven/devportal#552).
AUTOPILOT_WEBHOOK_EXCLUDED = ("kube-system", "gke-gmp-system", "gke-managed-cim")
AUTOPILOT_WEBHOOK_WARNING = ("AdmissionWebhookController: mutated namespaceselector of the "
                             "webhooks to enforce GKE Autopilot policies.")



@functools.cache
def tpu_machine_labels() -> dict[str, tuple[str, str | None]]:
    """TPU machine type -> (its ``cloud.google.com/gke-tpu-accelerator`` value, the topology
    of one VM of it when that VM is a whole single-host slice, else None), read from the TPU
    catalog (``catalog/data/tpu.yaml``: each version's ``accelerator``, ``machineTypes`` and
    ``topologies``, with their sources there), so that a new TPU generation in the catalog
    labels its sandbox nodes with no edit here. A single-host topology is one that lists the
    machine type and has as many chips as one VM of it (``ct6e-standard-8t`` -> ``2x4``;
    ``ct6e-standard-4t`` -> ``2x2``)."""
    from mldiag_provision.catalog.tpu import load_catalog, parse_topology

    found: dict[str, tuple[str, str | None]] = {}
    for version in load_catalog().versions.values():
        for name, machine in version.machine_types.items():
            single = None
            for topology, machines in version.topologies.items():
                dims = parse_topology(topology) or ()
                chips = 1
                for d in dims:
                    chips *= d
                if name in machines and chips == machine.chips_per_vm:
                    single = topology
                    break
            found[name] = (version.accelerator, single)
    return found


DEFAULT_VERSION = "1.35.0-gke.3065000"

# A kind only Autopilot clusters serve (elastic/cloud-on-k8s#6719 detects Autopilot by it;
# `kubectl api-resources` on Autopilot lists "allowlistedv2workloads auto.gke.io/v1 false
# AllowlistedV2Workload"); its schema here is the stand-in's own.
AUTOPILOT_ALLOWLIST_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "allowlistedv2workloads.auto.gke.io"},
    "spec": {"group": "auto.gke.io", "scope": "Cluster",
             "names": {"kind": "AllowlistedV2Workload", "listKind": "AllowlistedV2WorkloadList",
                       "plural": "allowlistedv2workloads",
                       "singular": "allowlistedv2workload"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object"}}}]},
}

# What the managed add-on shows (names other than the CRD's are the stand-in's own: no
# public source names the add-on's objects; the CRD is the connection operator's API,
# GoogleCloudPlatform/kubernetes-engine-samples ai-ml/mldiagnostics-webhook-and-operator).
MANAGED_ADDON_NAMESPACE = "gke-managed-mldiagnostics"
MANAGED_ADDON_WEBHOOK = "gke-managed-mldiagnostics-injection-webhook"
MLDIAG_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "mldiagnosticsconnections.diagon.gke.io"},
    "spec": {"group": "diagon.gke.io", "scope": "Namespaced",
             "names": {"kind": "MLDiagnosticsConnection", "listKind":
                       "MLDiagnosticsConnectionList", "plural": "mldiagnosticsconnections",
                       "singular": "mldiagnosticsconnection", "shortNames": ["mldc"]},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object"}},
                           "subresources": {"status": {}}}]},
}


RECORDED_NODES = Path(__file__).with_name("recorded_nodes.yaml")
POOL_LABEL = "cloud.google.com/gke-nodepool"
# Pods per node on a node Autopilot provisioned for a TPU pod: the recorded Autopilot
# ct6e-standard-4t node (recorded_nodes.yaml, kiwonl/gke-aiml) carries
# cloud.google.com/gke-max-pods-per-node: "32" (its pool: nap-1roqiaf4).
AUTOPILOT_MAX_PODS_LABEL = "cloud.google.com/gke-max-pods-per-node"
AUTOPILOT_MAX_PODS = "32"


def _kube_fact(*keys: str) -> Any:
    """One fact of the store's ``kubernetes`` document (label keys and resource names the
    nodes carry are the same facts the tool's rules read)."""
    from mldiag_provision.catalog.store import store

    return store().fact("kubernetes", *keys)


TPU_LABEL = str(_kube_fact("tpu", "acceleratorLabel")["key"])
TOPOLOGY_LABEL = str(_kube_fact("tpu", "topologyLabel")["key"])
TPU_RESOURCE = str(_kube_fact("tpu", "resource")["name"])
GPU_LABEL = str(_kube_fact("gpu", "acceleratorLabel")["key"])
GPU_RESOURCE = str(_kube_fact("gpu", "resource")["name"])
SPOT_LABEL = str(_kube_fact("capacity", "spot")["key"])
# The recorded labels a stand-in Node of the machine type carries: those that describe the
# machine (its family, accelerator, size class, OS), not the node (hostname, zone), its pool
# (name, disk, pods per node, spot) or what the source's user asked for.
MACHINE_LABELS = frozenset({
    "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os",
    "kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/instance-type",
    "cloud.google.com/machine-family", GPU_LABEL,
    "cloud.google.com/gke-accelerator-count", "cloud.google.com/gke-gpu",
    TPU_LABEL, "cloud.google.com/gke-cpu-scaling-level",
    "cloud.google.com/gke-memory-gb-scaling-level", "cloud.google.com/gke-os-distribution",
    "cloud.google.com/gke-container-runtime",
})


@functools.cache
def recorded_nodes() -> dict[str, dict[str, Any]]:
    """Machine type -> what a real GKE node of it showed (recorded_nodes.yaml): ``source``
    (URL) and, where the source shows them, ``capacity``, ``allocatable``, ``labels``,
    ``taints`` and ``user_set`` (keys the source's user asked for)."""
    import yaml

    return dict(yaml.safe_load(RECORDED_NODES.read_text(encoding="utf-8"))["nodes"])


def _docs(cloud: Path, type_name: str) -> list[dict[str, Any]]:
    out = []
    for p in sorted((cloud / type_name).glob("*.json")):
        try:
            out.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, ValueError):  # being rewritten right now: skip this once
            continue
    return out


def _first(value: Any) -> dict[str, Any]:
    return value[0] if isinstance(value, list) and value and isinstance(value[0], dict) else {}


def find_cluster(cloud: Path, *, project: str | None = None, location: str | None = None,
                 name: str | None = None) -> dict[str, Any] | None:
    """The stored state of a ``google_container_cluster`` in a stand-in cloud (the first one
    matching the given fields), or None."""
    for doc in _docs(cloud, "google_container_cluster"):
        st = doc.get("state") or {}
        if all(v is None or st.get(k) == v for k, v in
               (("project", project), ("location", location), ("name", name))):
            return st
    return None


class GkeCloudView(ClusterView):
    """The cluster of a stand-in cloud directory (``cluster_name``: which one, when several)."""

    def __init__(self, cloud: Path, cluster_name: str | None = None) -> None:
        self.cloud = Path(cloud)
        self.cluster_name = cluster_name

    def cluster(self) -> dict[str, Any] | None:
        return find_cluster(self.cloud, name=self.cluster_name)

    def identity(self) -> str | None:
        c = self.cluster()
        return None if c is None else str(c.get("id") or c.get("name"))

    def autopilot(self) -> bool:
        c = self.cluster() or {}
        return bool(c.get("enable_autopilot"))

    def version(self) -> dict[str, Any]:
        c = self.cluster() or {}
        version = next((str(v) for v in (c.get("master_version"), c.get("min_master_version"))
                        if v and re.match(r"^\d+\.\d+", str(v))), DEFAULT_VERSION)
        major, minor = version.split(".")[:2]
        return {**super().version(), "major": major, "minor": minor,
                "gitVersion": f"v{version}"}

    # -- what the platform owns ------------------------------------------------------------
    def system_objects(self) -> list[dict[str, Any]]:
        c = self.cluster() or {}
        owned = {SYSTEM_OWNER_LABEL: "gke"}
        out: list[dict[str, Any]] = []
        if c.get("enable_autopilot"):
            out += [{"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": ns, "labels": dict(owned)}}
                    for ns in AUTOPILOT_MANAGED_NAMESPACES
                    if ns not in ("kube-system", "kube-public", "kube-node-lease")]
            crd = json.loads(json.dumps(AUTOPILOT_ALLOWLIST_CRD))
            crd["metadata"]["labels"] = dict(owned)
            out.append(crd)
        if _first(c.get("managed_machine_learning_diagnostics_config")).get("enabled"):
            crd = json.loads(json.dumps(MLDIAG_CRD))
            crd["metadata"]["labels"] = dict(owned)
            out += [
                {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": MANAGED_ADDON_NAMESPACE, "labels": dict(owned)}},
                crd,
                {"apiVersion": "admissionregistration.k8s.io/v1",
                 "kind": "MutatingWebhookConfiguration",
                 "metadata": {"name": MANAGED_ADDON_WEBHOOK, "labels": dict(owned)},
                 "webhooks": [{
                     "name": f"diagon-webhook.{MANAGED_ADDON_NAMESPACE}.svc",
                     "admissionReviewVersions": ["v1"], "sideEffects": "NoneOnDryRun",
                     "failurePolicy": "Fail",
                     "clientConfig": {"service": {"name": "diagon-webhook",
                                                  "namespace": MANAGED_ADDON_NAMESPACE,
                                                  "path": "/mutate"},
                                      "caBundle": base64.b64encode(
                                          b"stand-in managed add-on CA").decode()},
                     "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                "operations": ["CREATE"], "resources": ["pods"]}]}]},
            ]
        return out

    def derived(self, res: Resource) -> list[dict[str, Any]] | None:
        if (res.group, res.plural) != ("", "nodes"):
            return None
        c = self.cluster()
        if c is None:
            return []
        nodes: list[dict[str, Any]] = []
        for doc in _docs(self.cloud, "google_container_node_pool"):
            pool = doc.get("state") or {}
            if str(pool.get("cluster", "")).rsplit("/", 1)[-1] != c.get("name"):
                continue
            nodes += pool_nodes(c, pool)
        return nodes

    def schedules(self) -> bool:
        """Pods are bound to the cluster's Nodes: a Standard cluster's come from its node
        pools; an Autopilot cluster's are those it provisioned for earlier Pods
        (:meth:`provision`)."""
        return self.cluster() is not None

    def provision(self, pod: dict[str, Any],
                  nodes: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """What GKE Autopilot creates for a Pod that fits no Node (fact
        ``kubernetes.tpu.autopilotNodes``, "Deploy TPU workloads on GKE Autopilot"): for a
        Pod that selects a TPU accelerator and topology (nodeSelector) and requests
        ``google.com/tpu`` chips, the whole slice at once: as many Nodes as the slice has
        VMs, of the machine type whose chips per VM equal the request (the catalog's shape,
        :meth:`mldiag_provision.catalog.tpu.Catalog.resolve`), each labelled with the
        accelerator and topology, tainted ``google.com/tpu=present:NoSchedule`` (the Pod's
        request tolerates it), in a zone of the cluster's region the catalog lists for that
        TPU. With ``cloud.google.com/gke-spot: "true"`` selected, Spot nodes.

        A Standard cluster creates nothing (``[]``: the Pod stays Pending). On Autopilot,
        None (not modelled: the Pod stays as written) for a Pod with no TPU selector
        (general-purpose and GPU nodes) or a TPU shape the catalog does not know (Autopilot
        refuses it at admission; ``lint`` says why).

        A Pod that selects a TPU accelerator or requests ``google.com/tpu`` chips but that no
        node shape Autopilot could provision fits (more chips than one VM of the topology
        holds, a topology the accelerator does not have, no topology selected): nothing
        (``[]``), so the Pod stays Pending with the scheduler's FailedScheduling event over
        the Nodes there are. The words GKE Autopilot adds in that case (the cluster
        autoscaler's own event) were not found at a public source; the sandbox gives the
        scheduler's generic message only (fact ``kubernetes.scheduling.failedScheduling``).
        """
        c = self.cluster()
        if c is None or not c.get("enable_autopilot"):
            return []
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        shape = _autopilot_tpu_shape(pod, selector)
        if shape is None:
            from mldiag_provision.sandbox.scheduler import requests_of

            wants_tpu = bool(selector.get(TPU_LABEL)) or bool(
                requests_of(pod).get(TPU_RESOURCE))
            return [] if wants_tpu else None
        machine = shape.machine_type
        made = pool_nodes(c, _autopilot_pool(c, shape, selector, nodes))
        recorded = recorded_nodes().get(machine.name) or {}
        for node in made:
            _as_autopilot_node(node, machine, recorded)
        return made

    def runs_controllers(self) -> bool:
        """Every GKE cluster runs kube-controller-manager (Job controller, garbage
        collector); the JobSet controller runs once its chart is installed."""
        return self.cluster() is not None

    # -- GKE Warden and the webhook controller ---------------------------------------------------
    def admit(self, verb: str, res: Resource, namespace: str, name: str,
              obj: dict[str, Any] | None) -> list[str]:
        if not self.autopilot():
            return []
        ns = name if res.plural == "namespaces" and not res.group else namespace
        if ns in AUTOPILOT_MANAGED_NAMESPACES and (res.namespaced or res.plural == "namespaces"):
            who = f'{res.plural} "{name}"' if name and verb != "create" else res.plural
            raise ApiError(403, "Forbidden", f'{who} is forbidden: User '
                           f'"{STANDIN_USER}" cannot {verb} resource "{res.plural}" in API '
                           f'group "{res.group}" in the namespace "{ns}": GKE Warden authz '
                           f'[denied by managed-namespaces-limitation]: the namespace "{ns}" '
                           f'is managed and the request\'s verb "{verb}" is denied',
                           {"name": name, "group": res.group, "kind": res.plural})
        if obj is not None and res.group == "admissionregistration.k8s.io":
            mutated = False
            for hook in obj.get("webhooks") or []:
                sel = hook.setdefault("namespaceSelector", {})
                exprs = sel.setdefault("matchExpressions", [])
                term = {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                        "values": list(AUTOPILOT_WEBHOOK_EXCLUDED)}
                if term not in exprs:
                    exprs.append(term)
                    mutated = True
            return [AUTOPILOT_WEBHOOK_WARNING] if mutated else []
        return []


STANDIN_USER = "standin-user@example.com"


def pool_nodes(cluster: dict[str, Any], pool: dict[str, Any]) -> list[dict[str, Any]]:
    """The Node objects GKE would show for one node pool (one per VM): in each of the pool's
    zones (else the cluster's, else ``<location>-a``), ``node_count`` Nodes (an autoscaled
    pool: its minimum), named ``gke-<cluster>-<pool>-<zone index><index>``."""
    zones = [str(z) for z in (pool.get("node_locations") or cluster.get("node_locations") or [])]
    if not zones:
        zones = [f"{cluster.get('location')}-a"]
    labels, allocatable, capacity, taints = _pool_node_shape(cluster, pool)
    nodes: list[dict[str, Any]] = []
    per_zone = _nodes_per_zone(pool, len(zones))
    for zi, (zone, n) in enumerate(zip(zones, per_zone, strict=True)):
        for i in range(n):
            name = f"gke-{cluster.get('name')}-{pool.get('name')}-{zi}{i:03d}"[:63].rstrip("-")
            nodes.append({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": f"standin-node-{name}",
                             "labels": {**labels, "kubernetes.io/hostname": name,
                                        "topology.kubernetes.io/zone": zone}},
                "spec": {"taints": taints} if taints else {},
                "status": {"allocatable": dict(allocatable),
                           "capacity": {**allocatable, **capacity},
                           "conditions": [{"type": "Ready", "status": "True",
                                           "reason": "KubeletReady"}]}})
    return nodes


def _nodes_per_zone(pool: dict[str, Any], zones: int) -> list[int]:
    """How many Nodes a pool has in each of its ``zones`` zones: ``node_count``; for an
    autoscaled pool (no ``node_count``) its ``min_node_count`` per zone, or its
    ``total_min_node_count`` spread evenly (rounded down)."""
    count = pool.get("node_count")
    if count is not None:
        return [int(count)] * zones
    auto = _first(pool.get("autoscaling"))
    total = auto.get("total_min_node_count")
    if total is not None:
        return [int(total) // zones] * zones
    return [int(auto.get("min_node_count") or 0)] * zones


def _pool_node_shape(cluster: dict[str, Any], pool: dict[str, Any],
                     ) -> tuple[dict[str, str], dict[str, str], dict[str, str],
                                list[dict[str, Any]]]:
    """What every Node of a pool shares: its labels, allocatable, extra capacity and
    taints, derived from the machine type (a TPU or GPU adds its label, resource and
    ``NoSchedule`` taint), then overridden by a real node of that machine type on record
    (:func:`recorded_nodes`)."""
    cfg = _first(pool.get("node_config"))
    machine = str(cfg.get("machine_type") or "e2-medium")
    labels = {"cloud.google.com/gke-nodepool": str(pool.get("name")),
              "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "node.kubernetes.io/instance-type": machine,
              "topology.kubernetes.io/region": str(cluster.get("location"))}
    labels.update({str(k): str(v) for k, v in (cfg.get("labels") or {}).items()})
    if cfg.get("spot"):
        labels[SPOT_LABEL] = "true"
    allocatable = {"pods": "110"}
    capacity: dict[str, str] = {}
    recorded = recorded_nodes().get(machine) or {}
    allocatable.update(recorded.get("allocatable") or {})
    capacity.update(recorded.get("capacity") or {})
    taints: list[dict[str, Any]] = []
    _add_tpu(pool, machine, labels, allocatable, taints)
    gpu = _first(cfg.get("guest_accelerator"))
    if gpu.get("type"):
        labels[GPU_LABEL] = str(gpu["type"])
        allocatable[GPU_RESOURCE] = str(int(gpu.get("count") or 0))
        taints.append({"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"})
    # what a real node of the machine type showed wins over what is derived above
    user_set = set(recorded.get("user_set") or ())
    labels.update({k: str(v) for k, v in (recorded.get("labels") or {}).items()
                   if k in MACHINE_LABELS})
    if recorded.get("taints"):
        taints = [dict(t) for t in recorded["taints"] if t["key"] not in user_set]
    return labels, allocatable, capacity, taints


def _add_tpu(pool: dict[str, Any], machine: str, labels: dict[str, str],
             allocatable: dict[str, str], taints: list[dict[str, Any]]) -> None:
    """A TPU machine type's accelerator and topology labels (the pool's placement
    topology, else the machine's single-host one), its ``google.com/tpu`` chips (the
    ``-<n>t`` suffix of the machine type) and taint; nothing for other machine types."""
    tpu, single_host = tpu_machine_labels().get(machine, (None, None))
    if not tpu:
        return
    topology = _first(pool.get("placement_policy")).get("tpu_topology") or single_host
    labels[TPU_LABEL] = tpu
    if topology:
        labels[TOPOLOGY_LABEL] = str(topology)
    chips = re.search(r"-(\d+)t$", machine)
    allocatable[TPU_RESOURCE] = chips.group(1) if chips else "0"
    taints.append({"key": TPU_RESOURCE, "value": "present", "effect": "NoSchedule"})


def _autopilot_tpu_shape(pod: dict[str, Any],
                         selector: dict[str, Any]) -> SliceShape | None:
    """The catalog's TPU shape (:meth:`mldiag_provision.catalog.tpu.Catalog.resolve`) a Pod
    selects (accelerator and topology in its nodeSelector) with a ``google.com/tpu``
    request equal to the chips of one VM of it; None when the Pod selects no TPU, or a
    shape the catalog does not know, or requests other than one VM's chips."""
    from mldiag_provision.catalog.tpu import ShapeError, load_catalog
    from mldiag_provision.sandbox.scheduler import requests_of

    accelerator, topology = selector.get(TPU_LABEL), selector.get(TOPOLOGY_LABEL)
    chips = requests_of(pod).get(TPU_RESOURCE)
    if not accelerator or not topology or not chips:
        return None
    catalog = load_catalog()
    try:
        shape = catalog.resolve(str(accelerator), str(topology), int(chips))
    except (ShapeError, ValueError):
        return None
    return shape if shape.chips_per_vm == int(chips) else None


def _autopilot_pool(cluster: dict[str, Any], shape: SliceShape, selector: dict[str, Any],
                    nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The node pool Autopilot creates for a TPU slice: ``nap-<8 hex>`` (numbered after the
    ``nap-`` pools among ``nodes``), one Node per VM of the slice in a zone of the cluster's
    region the catalog lists for the TPU, Spot when the Pod selects Spot."""
    region = str(cluster.get("location"))
    zone = next((z for z in shape.version.zones if z.startswith(region + "-")),
                region if region.count("-") == 2 else f"{region}-a")
    pools = {(n.get("metadata") or {}).get("labels", {}).get(POOL_LABEL) for n in nodes}
    index = 1 + sum(1 for name in pools if str(name).startswith("nap-"))
    digest = hashlib.sha256(f"{cluster.get('name')}/{index}".encode()).hexdigest()[:8]
    return {"name": f"nap-{digest}", "node_count": shape.vms,
            "node_locations": [zone],
            "node_config": [{"machine_type": shape.machine_type.name,
                             "spot": str(selector.get(SPOT_LABEL)) == "true"}],
            "placement_policy": [{"tpu_topology": str(selector.get(TOPOLOGY_LABEL))}]}


def _as_autopilot_node(node: dict[str, Any], machine: MachineType,
                       recorded: dict[str, Any]) -> None:
    """An Autopilot Node in place: its max-pods label and pod capacity; without a recorded
    allocatable CPU, the machine type's vCPUs and memory (catalog tpu.yaml), GKE's reserved
    share not subtracted (no allocatable of a TPU VM is on record)."""
    node["metadata"]["labels"][AUTOPILOT_MAX_PODS_LABEL] = AUTOPILOT_MAX_PODS
    status = node["status"]
    status["allocatable"]["pods"] = AUTOPILOT_MAX_PODS
    status["capacity"]["pods"] = AUTOPILOT_MAX_PODS
    if "cpu" in (recorded.get("allocatable") or {}) or not machine.vcpu:
        return
    for key in ("allocatable", "capacity"):
        status[key]["cpu"] = f"{machine.vcpu:g}"
        if machine.memory_gb:
            status[key]["memory"] = f"{machine.memory_gb:g}G"


def serve_cloud(cloud: Path, *, token: str | None = None, port: int = 0,
                cluster_name: str | None = None) -> ApiServer:
    """Start (and return) a stand-in API server playing the cluster of ``cloud``."""
    return ApiServer(GkeCloudView(cloud, cluster_name), token=token, port=port).start()


def seed_gke_cluster(cloud: Path, *, project: str, location: str, name: str,
                     api: ApiServer | None = None, autopilot: bool = False,
                     managed_ml_diagnostics: bool = True, version: str = DEFAULT_VERSION,
                     node_pools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Put a GKE cluster that "already exists" into a stand-in cloud (for existing-cluster
    recipes): a ``google_container_cluster`` object (endpoint and CA of ``api``) and its
    ``google_container_node_pool`` objects.

    ``node_pools``: dicts with ``name``, ``machine_type``, ``node_count`` and optionally
    ``zone``, ``tpu_topology``, ``labels``, ``gpu_type``, ``gpu_count``, ``spot``.
    Returns the cluster's state.
    """
    from mldiag_provision.sandbox.plugin import Cloud

    store = Cloud(Path(cloud))
    state = {
        "id": f"projects/{project}/locations/{location}/clusters/{name}",
        "project": project, "location": location, "name": name,
        "enable_autopilot": autopilot, "master_version": version,
        "min_master_version": version, "deletion_protection": True,
        "endpoint": api.endpoint if api else "192.0.2.10",
        "master_auth": [{"cluster_ca_certificate": base64.b64encode(
            api.ca_pem if api else b"").decode(), "client_certificate": "", "client_key": "",
            "client_certificate_config": []}],
        "managed_machine_learning_diagnostics_config": [{"enabled": managed_ml_diagnostics}],
        "workload_identity_config": [{"workload_pool": f"{project}.svc.id.goog"}],
    }
    store.put("google_container_cluster", f"google_container_cluster/{project}/{name}/{location}",
              state)
    for p in node_pools or []:
        zone = p.get("zone") or f"{location}-a"
        cfg: dict[str, Any] = {"machine_type": p["machine_type"],
                               "labels": dict(p.get("labels") or {}),
                               "spot": bool(p.get("spot")), "guest_accelerator": []}
        if p.get("gpu_type"):
            cfg["guest_accelerator"] = [{"type": p["gpu_type"], "count": p.get("gpu_count", 1)}]
        pool = {"id": f"projects/{project}/locations/{location}/clusters/{name}/nodePools/"
                      f"{p['name']}",
                "project": project, "location": location, "cluster": name, "name": p["name"],
                "node_count": p["node_count"], "node_locations": [zone],
                "node_config": [cfg],
                "placement_policy": ([{"type": "COMPACT", "tpu_topology": p["tpu_topology"]}]
                                     if p.get("tpu_topology") else [])}
        store.put("google_container_node_pool",
                  f"google_container_node_pool/{project}/{p['name']}/{location}/{name}", pool)
    return state
