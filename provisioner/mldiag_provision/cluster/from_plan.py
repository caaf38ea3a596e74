"""Build the :class:`~.model.ClusterModel` of the cluster a plan creates.

Input is what preflight has before the whole stack is planned (and what ``lint --recipe``
works out from the recipe): the resolved slices with their catalog shapes, the orchestrator's
mode, and the Kueue objects of the queued slices (:class:`~mldiag_provision.plan.stack.
QueuedPlan`). Each slice becomes one :class:`~.model.NodeGroup`: its node pools on GKE
Standard, the nodes Autopilot provisions for its accelerator class on Autopilot.

Node labels are the slice's selector (accelerator, topology, capacity and the tool's slice
label: ``SlicePlan.node_selector``, which the node pools are created with) plus the machine
type (``node.kubernetes.io/instance-type``, a well-known label the kubelet sets:
https://kubernetes.io/docs/reference/labels-annotations-taints/#nodekubernetesioinstance-type).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from mldiag_provision.catalog.store import Fact
from mldiag_provision.catalog.tpu import SliceShape
from mldiag_provision.cluster.model import (
    ClusterLimits,
    ClusterModel,
    ClusterQueue,
    Controller,
    GroupVersionKind,
    LocalQueue,
    Mode,
    NodeGroup,
    ResourceFlavor,
    Webhook,
    allocatable,
    allocatable_facts,
    machine_capacity,
)
from mldiag_provision.quantity import parse_quantity

if TYPE_CHECKING:
    from mldiag_provision.catalog.gpu import GpuShape
    from mldiag_provision.catalog.tpu import Catalog
    from mldiag_provision.orchestrators import Orchestrator
    from mldiag_provision.plan.agents import AgentsPlan
    from mldiag_provision.plan.parts import PrivateClusterPlan
    from mldiag_provision.plan.types import ProjectPlan, QueuedPlan, SlicePlan
    from mldiag_provision.recipe.model import Recipe

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def node_group(sp: SlicePlan, shape: SliceShape | GpuShape, zones: tuple[str, ...] = (),
               ) -> NodeGroup:
    """The nodes of one resolved slice ``sp`` (all its ``count`` slices together)."""
    facts: list[Fact] = []
    vcpu = memory_gb = None
    if isinstance(shape, SliceShape):
        mt = shape.machine_type
        vcpu, memory_gb = mt.vcpu, mt.memory_gb
        if mt.fact is not None:
            facts.append(mt.fact)
    elif shape.machine is not None:
        vcpu, memory_gb = shape.machine.vcpu, shape.machine.memory_gb
        if shape.machine.fact is not None:
            facts.append(shape.machine.fact)
    extended = {sp.resource: sp.chips_per_vm} if sp.chips_per_vm else {}
    capacity = machine_capacity(vcpu, memory_gb, extended)
    labels = dict(sp.node_selector)
    if sp.machine_type:
        labels[INSTANCE_TYPE_LABEL] = sp.machine_type
    return NodeGroup(
        name=sp.name, machine_type=sp.machine_type, nodes=sp.vms * sp.count, zones=zones,
        labels=labels, taints=(), capacity=capacity, allocatable=allocatable(capacity),
        facts=(*facts, *allocatable_facts()), slice=sp.name)


def kueue_queues(queued: QueuedPlan | None) -> tuple[tuple[ClusterQueue, ...],
                                                     tuple[LocalQueue, ...]]:
    """The ClusterQueue and LocalQueue the plan renders for its queued slices (one resource
    group, one flavor)."""
    if queued is None:
        return (), ()
    quotas = {r: q for r, raw in queued.quotas.items()
              if (q := parse_quantity(str(raw))) is not None}
    covered = frozenset(queued.quotas)
    cq = ClusterQueue(name=queued.cluster_queue, covered=covered,
                      flavors=(queued.resource_flavor,),
                      quotas={queued.resource_flavor: quotas},
                      groups=((covered, (queued.resource_flavor,)),))
    lq = LocalQueue(namespace=queued.namespace, name=queued.local_queue,
                    cluster_queue=queued.cluster_queue)
    return (cq,), (lq,)


def build(mode: Mode, slices: Iterable[tuple[SlicePlan, SliceShape | GpuShape]],
          queued: QueuedPlan | None = None, zone: str | None = None, *,
          controllers: tuple[Controller, ...] | None = None,
          private: PrivateClusterPlan | None = None) -> ClusterModel:
    """The cluster of a plan.

    Args:
      mode: ``autopilot`` or ``standard`` (``unknown`` for an existing cluster: its other
        nodes are not known, so the model's node groups are not complete).
      slices: each resolved slice with its catalog shape.
      queued: the plan's Kueue objects (None: no queued slice).
      zone: the recipe's zone, where the node pools are created.
      controllers: what the stack installs (:func:`controllers_of`); None: not known, so
        no kind is judged unserved (preflight's own rules judge the recipe).
      private: the cluster's private settings (None: not a cluster the stack creates).

    On Autopilot the model also holds the accelerator classes of the slices, with their
    request ranges (:func:`.autopilot.classes`).
    """
    pairs = list(slices)
    groups = tuple(node_group(sp, shape, (zone,) if zone else ()) for sp, shape in pairs)
    cqs, lqs = kueue_queues(queued)
    # the rendered ResourceFlavor sets no node labels or taints: every pod set matches it
    flavors = (ResourceFlavor(queued.resource_flavor, {}),) if queued else ()
    model = ClusterModel(mode=mode, node_groups=groups, node_groups_complete=mode != "unknown",
                         cluster_queues=cqs, local_queues=lqs, source="plan",
                         resource_flavors=flavors, controllers=controllers,
                         controllers_complete=controllers is not None and mode != "unknown",
                         private_nodes=private.private_nodes if private else None,
                         control_plane_ports=control_plane_ports(private),
                         limits=cluster_limits(mode))
    if mode == "autopilot":  # the request ranges of its accelerator classes
        from mldiag_provision.cluster import autopilot
        model = replace(model, accelerator_classes=autopilot.classes(pairs))
    return replace(model, queue_label=queued.queue_name_label) if queued else model


# --- limits and controllers ------------------------------------------------------------------

_LIMIT_KEYS = ("nodesPerClusterMax", "nodesPerClusterStandard", "nodesWithoutQuotaLift",
               "nodesPerClusterAutopilot", "nodesPerNodePoolZone", "nodePoolsPerCluster",
               "podsPerNode")


def cluster_limits(mode: Mode) -> ClusterLimits | None:
    """GKE's per-cluster limits for a cluster of ``mode`` (places.yaml ``gkeLimits``, source
    GKE-QUOTAS / GKE-LARGE-CLUSTERS / GKE-NODE-POOL-AUTO): Standard 65,000 nodes (GKE 1.31+)
    and 256 pods per node, Autopilot its own node figure and 32 pods per node; 200 node pools
    (latency above it, node pool auto-creation) on both. None for ``unknown`` (an existing
    cluster: its own size is not the recipe's)."""
    if mode == "unknown":
        return None
    from mldiag_provision.catalog.store import store

    facts_in = store()
    found = _LIMITS.get(mode)
    if found is None or found[0] is not facts_in:  # worked out once per mode and fact store
        found = _LIMITS[mode] = (facts_in, _cluster_limits(mode))
    return found[1]


# cluster_limits' answers by mode, with the fact store they were read from (preflight asks
# twice per recipe, issue 32)
_LIMITS: dict[str, tuple[object, ClusterLimits]] = {}


def _cluster_limits(mode: Mode) -> ClusterLimits:
    from mldiag_provision.catalog.places import limit

    facts = {k: limit(k) for k in _LIMIT_KEYS}
    pods = facts["podsPerNode"]
    if mode == "autopilot":
        return ClusterLimits(nodes=int(facts["nodesPerClusterAutopilot"]["nodes"]),
                             node_pools=int(facts["nodePoolsPerCluster"]["nodePools"]),
                             pods_per_node=int(pods["autopilot"]), facts=facts)
    return ClusterLimits(nodes=int(facts["nodesPerClusterMax"]["nodes"]),
                         node_pools=int(facts["nodePoolsPerCluster"]["nodePools"]),
                         pods_per_node=int(pods["standardMax"]), facts=facts)


def control_plane_ports(private: PrivateClusterPlan | None) -> frozenset[int] | None:
    """With private nodes, the node ports the control plane reaches: GKE's own rule (443,
    10250; fact ``kubernetes.webhooks.privateClusterPorts``) plus the stack's webhook firewall
    rule. None without private nodes or when not known."""
    if private is None or not private.private_nodes:
        return None
    from mldiag_provision.catalog.store import store

    default = store().fact("kubernetes", "webhooks", "privateClusterPorts")["ports"]
    return frozenset(int(p) for p in default) | frozenset(private.webhook_ports)


def _served(project: str, tag: str) -> frozenset[GroupVersionKind]:
    """The (group, version, kind) the shipped CRDs of ``project`` at release ``tag`` serve
    (lint/data/crds.generated.json, from the upstream CRDs pinned in tools/crds/pins.yaml);
    the newest shipped release when ``tag`` is not shipped."""
    from mldiag_provision.lint.schema import crd_document, crd_projects

    tags = crd_projects().get(project, ())
    if tags and tag not in tags:
        tag = tags[-1]
    out = set()
    for (api_version, kind), versions in crd_document()[1].items():
        if any(c.project == project and c.version == tag for c in versions):
            group, _, version = api_version.rpartition("/")
            out.add((group, version, kind))
    return frozenset(out)


def _scope(component: str) -> tuple[frozenset[str], bool, Fact | None]:
    """(resources intercepted, only in labelled namespaces, the fact) of a webhook the stack
    installs (gke.yaml ``cluster.webhookScopes``)."""
    from mldiag_provision.catalog.store import store

    for entry in store().get("gke", "cluster", "webhookScopes"):
        if entry["component"] == component:
            return (frozenset(str(r) for r in entry["resources"]),
                    bool(entry.get("namespaceLabel")), store().as_fact(entry))
    return frozenset(), False, None


def _webhooks(component: str, when: str, private: PrivateClusterPlan | None,
              label: tuple[str, str] | None = None, namespaces: frozenset[str] = frozenset(),
              ) -> tuple[Webhook, ...]:
    """The webhooks of one installed component, with their ports (gke.yaml
    ``cluster.webhookPorts`` entries whose ``when`` is ``when``) and reachability."""
    from mldiag_provision.catalog.store import store

    reach = control_plane_ports(private)
    out = []
    for entry in store().get("gke", "cluster", "webhookPorts"):
        if entry["when"] != when or entry["component"] != component:
            continue
        port = int(entry["port"])
        resources, labelled, scope = _scope(component)
        out.append(Webhook(
            name=component, port=port, resources=resources, fails_closed=True,
            reachable=None if private is None else (reach is None or port in reach),
            namespace_label=label if labelled else None,
            namespaces=namespaces if labelled else frozenset(),
            facts=(store().as_fact(entry), *((scope,) if scope is not None else ()))))
    return tuple(out)


def injection_webhooks(private: PrivateClusterPlan | None, namespace: str = "",
                       ) -> tuple[Webhook, ...]:
    """The manual agents' injection webhook (pods of namespaces labelled
    ``managed-mldiagnostics-gke``; ``namespace``: the workload namespace the stack labels),
    with its port and whether ``private``'s control plane reaches it."""
    from mldiag_provision.catalog.store import store

    ns = store().get("gke", "mlDiagnostics", "namespaceLabel")
    return _webhooks("mldiagnostics-injection-webhook", "manual", private,
                     (str(ns["key"]), str(ns["value"])),
                     frozenset({namespace}) if namespace else frozenset())


def controllers_of(agents: AgentsPlan, private: PrivateClusterPlan | None,
                   ) -> tuple[Controller, ...]:
    """The controllers a plan installs: each add-on (JobSet for JobSet workloads, Kueue for
    queued capacity) with the kinds its pinned release's CRDs serve, the manual agents'
    cert-manager and injection webhook, or GKE's managed ML Diagnostics add-on; their
    webhooks with ports and whether a private cluster's control plane reaches them."""
    from mldiag_provision.catalog.store import store

    out: list[Controller] = []
    for a in agents.addons:
        project = "kueue" if a.crd.endswith(".kueue.x-k8s.io") else a.name
        tag = a.version if a.version.startswith("v") else f"v{a.version}"
        if project == "kueue":
            name, when, component = "Kueue", "kueue", "Kueue controller webhook"
            by = "spec.slices[].capacity.type: queued (the stack installs Kueue)"
        else:
            name, when, component = "JobSet", "jobset", "JobSet controller webhook"
            by = "a workload of kind JobSet (spec.workloads[].kind; the stack installs JobSet)"
        out.append(Controller(name=name, version=a.version, serves=_served(project, tag),
                              webhooks=_webhooks(component, when, private), installed_by=by))
    conn = store().fact("kubernetes", "mlDiagnostics", "connection")
    group, _, version = str(conn["apiVersion"]).rpartition("/")
    connection = frozenset({(group, version, str(conn["kind"]))})
    charts = agents.charts
    if agents.strategy == "manual":
        if charts.cert_manager is not None:
            cm = store().fact("gke", "cluster", "certManagerServes")
            served = frozenset((av.rpartition("/")[0], av.rpartition("/")[2], str(k))
                               for av, kinds in cm["kinds"].items() for k in kinds)
            out.append(Controller(
                name="cert-manager", version=charts.cert_manager.version, serves=served,
                webhooks=_webhooks("cert-manager webhook", "manual", private),
                installed_by="spec.diagnostics.agents: manual (diagnostics.manual."
                             "installCertManager)", facts=(cm,)))
        webhook = charts.injection_webhook
        out.append(Controller(
            name="ML Diagnostics injection webhook",
            version=webhook.version if webhook is not None else None, serves=connection,
            webhooks=injection_webhooks(private, agents.namespace),
            installed_by="spec.diagnostics.agents: manual"))
    elif agents.strategy == "managed":
        out.append(Controller(
            name="ML Diagnostics (GKE-managed, --enable-managed-mldiagnostics)", version=None,
            serves=connection, installed_by="spec.diagnostics.agents: managed or auto"))
    return tuple(out)


def plan_controllers(recipe: Recipe, catalog: Catalog, unit: Orchestrator,
                     project: ProjectPlan) -> tuple[tuple[Controller, ...],
                                                    PrivateClusterPlan | None]:
    """What the plan of ``recipe`` installs (:func:`controllers_of`) and, for a cluster the
    stack creates, its private settings; worked out with the plan's own functions."""
    from mldiag_provision.orchestrators import Capability
    from mldiag_provision.plan.agents import plan_agents
    from mldiag_provision.plan.kubernetes import (
        QUEUED,
        _gke_version,
        private_cluster,
        workload_kind,
    )

    spec = recipe.spec
    creates = unit.has(Capability.CREATES_CLUSTER)
    _, managed = _gke_version(unit, project, recipe, catalog, [])
    by_name = {s.name: s for s in project.slices}
    kinds = [workload_kind(w.kind, by_name[w.slice]) for w in spec.workloads
             if w.slice in by_name]
    cluster = spec.orchestrator.cluster_name or recipe.metadata.name
    agents = plan_agents(recipe, catalog, creates_cluster=creates, managed_ok=managed,
                         workload_kinds=kinds, cluster_name=cluster, gsa_email=None,
                         managed_namespaces=unit.has(Capability.AUTOPILOT_RULES),
                         queued=any(sp.capacity == QUEUED for sp in project.slices))
    private = (private_cluster(recipe, catalog, cluster, agents.strategy,
                               tuple(a.name for a in agents.addons), [])
               if creates else None)
    return controllers_of(agents, private), private


def mode_of(orchestrator: str) -> Mode:
    """The model's mode for a recipe's ``orchestrator.type``."""
    return {"gke-autopilot": "autopilot", "gke-standard": "standard"}.get(
        orchestrator, "unknown")  # type: ignore[return-value]


def slices_with_shapes(slices: Iterable[SlicePlan],
                       shapes: Mapping[int, SliceShape | GpuShape | None],
                       ) -> list[tuple[SlicePlan, SliceShape | GpuShape]]:
    """Pair each planned slice with its shape (``shapes`` by slice index, in recipe order)."""
    out = []
    for i, sp in enumerate(slices):
        shape = shapes.get(i)
        if shape is not None:
            out.append((sp, shape))
    return out


def from_recipe(recipe: Recipe, catalog: Catalog) -> ClusterModel | None:
    """The cluster a valid recipe's plan creates (``lint --recipe``): its slices resolved
    against the catalog, planned as ``plan`` would, and its Kueue objects. None when a slice
    does not resolve or the orchestrator has no Kubernetes cluster (Slurm): ``validate``
    says why, and lint then judges the manifests on their own."""
    from mldiag_provision.catalog.tpu import ShapeError
    from mldiag_provision.orchestrators import Capability, find
    from mldiag_provision.plan.kubernetes import queued_plan
    from mldiag_provision.plan.project import plan_project

    spec = recipe.spec
    unit = find(spec.orchestrator.type)
    if unit is None or unit.has(Capability.MANAGED_SLURM):
        return None
    shapes: dict[int, SliceShape | GpuShape | None] = {}
    try:
        for i, s in enumerate(spec.slices):
            if s.tpu and s.topology:
                shapes[i] = catalog.resolve(s.tpu, s.topology, s.chips_per_vm)
            elif s.gpu:
                from mldiag_provision.catalog.gpu import load_gpu_catalog

                shapes[i] = load_gpu_catalog().resolve(s.gpu, s.machine_type)
            else:
                return None
    except ShapeError:
        return None
    project = plan_project(recipe, shapes, catalog, unit)
    controllers, private = plan_controllers(recipe, catalog, unit, project)
    return build(mode_of(spec.orchestrator.type),
                 slices_with_shapes(project.slices, shapes),
                 queued_plan(recipe, catalog, list(project.slices)), spec.zone,
                 controllers=controllers, private=private)
