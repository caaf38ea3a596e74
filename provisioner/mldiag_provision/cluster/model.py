"""The types of the cluster model: node groups, Kueue queues, and the cluster that holds them.

Quantities are :class:`~decimal.Decimal` in Kubernetes' base units: ``cpu`` in cores,
``memory`` and ``ephemeral-storage`` in bytes, extended resources (``google.com/tpu``,
``nvidia.com/gpu``) in units. The types import nothing of the plan, of lint or of a Kubernetes
client, so every builder (plan, manifests, a live cluster) and every reader can share them.

:func:`allocatable` is the one place that turns a machine's capacity into what pods may
request on it (GKE's reservations; fact ``gke.nodeAllocatable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache, cached_property
from typing import Literal

from mldiag_provision.catalog.store import Fact, store

Mode = Literal["autopilot", "standard", "unknown"]
"""How nodes come to be: Autopilot provisions them per pod; Standard has the node pools the
model lists (plus the system pool); unknown: a manifest linted on its own."""

GIB = Decimal(2 ** 30)
MIB = Decimal(2 ** 20)

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL = "ephemeral-storage"


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint (``key=value:effect``)."""

    key: str
    value: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """Nodes alike: a GKE Standard node pool, or the nodes Autopilot creates for one
    accelerator class of the recipe.

    ``labels``: the labels every node of the group carries; ``known_label_keys``: the keys
    whose full set of values the model knows (a selector on another key is not judged).
    ``capacity``/``allocatable``: per resource name, as on the Node object.
    ``facts``: what the figures stand on (the machine type's catalog entry, the reservation
    tiers), so a verdict on them is an error only when every one is verified."""

    name: str
    machine_type: str | None
    nodes: int
    zones: tuple[str, ...]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, Decimal]
    allocatable: Mapping[str, Decimal]
    facts: tuple[Fact, ...] = ()
    slice: str | None = None
    """The recipe slice the group was created for (None: not from a recipe)."""


@dataclass(frozen=True, slots=True)
class AcceleratorClass:
    """What GKE Autopilot accepts from a Pod of one accelerator class: the Pods whose node
    selector holds ``labels`` (the accelerator, and a TPU's topology) and ask for ``count``
    of ``resource`` (None: any count). ``minimum``/``maximum``: per resource name (units as
    the model's quantities); a bound not listed is unknown and never judged. ``facts``: per
    resource name, what its bounds stand on (``gke.autopilotClasses``,
    ``kubernetes.ephemeralStorage``; built by :mod:`.autopilot`)."""

    name: str
    labels: Mapping[str, str]
    resource: str
    count: int | None
    minimum: Mapping[str, Decimal] = field(default_factory=dict)
    maximum: Mapping[str, Decimal] = field(default_factory=dict)
    facts: Mapping[str, tuple[Fact, ...]] = field(default_factory=dict)
    slice: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    """A Kueue ClusterQueue: the resources it covers (every resource group together), its
    flavors and their quotas."""

    name: str
    covered: frozenset[str]
    flavors: tuple[str, ...]
    quotas: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    """Nominal quota per flavor and resource (units as the model's quantities); a resource
    a flavor does not list has none."""
    cohort: str | None = None
    """A cohort the queue may borrow from: its quotas are then no ceiling."""
    groups: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = ()
    """Each resource group: the resources it covers and its flavors, in order (Kueue assigns
    one flavor per group to a pod set)."""


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    """A Kueue ResourceFlavor: the node labels and taints of the nodes it stands for
    (``spec.nodeLabels``, ``spec.nodeTaints``)."""

    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True)
class LocalQueue:
    """A Kueue LocalQueue: ``namespace/name`` -> its ClusterQueue."""

    namespace: str | None
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class ClusterModel:
    """The cluster a recipe creates (or that manifests describe): what admits a pod set, and
    where it can run.

    ``node_groups_complete``: every node a pod of the recipe can land on is in
    ``node_groups`` (GKE Standard from a plan: the accelerator pools; the system pool carries
    no accelerator, so a pod requesting one cannot land there). When False, a selector that
    matches no group is not a finding: the cluster may hold nodes the model does not know.
    """

    mode: Mode
    node_groups: tuple[NodeGroup, ...] = ()
    node_groups_complete: bool = False
    cluster_queues: tuple[ClusterQueue, ...] = ()
    local_queues: tuple[LocalQueue, ...] = ()
    queue_label: str = "kueue.x-k8s.io/queue-name"
    source: str = "plan"
    """How the model was built: ``plan``, ``manifests`` or ``live``."""
    resource_flavors: tuple[ResourceFlavor, ...] = ()
    """The Kueue ResourceFlavors the model knows (a flavor a queue names but the model does
    not hold is not judged)."""
    _queues: dict[tuple[str | None, str], LocalQueue] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    bound_groups: dict[object, tuple[NodeGroup, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    """The checks' memo of the node groups a pod is bound to, by what decides them (its
    node selector and extended resources; :func:`~.check.pod_requests`' callers): lint's
    pods repeat a few selectors across every template."""
    accelerator_classes: tuple[AcceleratorClass, ...] = ()
    """Autopilot: the request ranges of the recipe's accelerator classes (empty elsewhere)."""
    controllers: tuple[Controller, ...] | None = None
    """The installed controllers (:class:`Controller`); None: not known (manifests linted on
    their own), so no kind is judged unserved."""
    controllers_complete: bool = False
    """``controllers`` is every controller the cluster has (a live cluster's CRDs; a cluster
    the plan creates holds what the stack installs, though more may be added by hand)."""
    private_nodes: bool | None = None
    """The nodes have internal addresses only (GKE private cluster); None: not known."""
    control_plane_ports: frozenset[int] | None = None
    """With private nodes: the node ports the control plane reaches (GKE's own rule, 443 and
    10250, plus the stack's webhook firewall rule); None: not known."""
    limits: ClusterLimits | None = None
    """GKE's per-cluster limits for the cluster's mode; None: not known."""

    def __post_init__(self) -> None:
        for q in self.local_queues:
            self._queues[(q.namespace, q.name)] = q

    def local_queue(self, namespace: str | None, name: str) -> LocalQueue | None:
        """The LocalQueue ``name`` in ``namespace`` (an unset namespace matches either way, as
        ``kubectl apply -n NS`` puts both in NS)."""
        found = self._queues.get((namespace, name))
        if found is None:
            found = next((q for q in self.local_queues if q.name == name and (
                namespace is None or q.namespace is None)), None)
        return found

    def cluster_queue(self, name: str) -> ClusterQueue | None:
        return next((q for q in self.cluster_queues if q.name == name), None)

    def served_by(self, group: str, version: str, kind: str) -> Controller | None:
        """The installed controller whose CRDs serve ``kind`` at ``group/version`` (None:
        none does, or the controllers are not known)."""
        return next((c for c in self.controllers or () if (group, version, kind) in c.serves),
                    None)

    def resource_flavor(self, name: str) -> ResourceFlavor | None:
        return next((f for f in self.resource_flavors if f.name == name), None)

    @cached_property
    def least_allocatable(self) -> dict[str, Decimal]:
        """Per resource, the least any node group allocates to pods (groups that do not say
        are left out): a request no larger fits a node of every group. Worked out once."""
        out: dict[str, Decimal] = {}
        for g in self.node_groups:
            for name, amount in g.allocatable.items():
                if name not in out or amount < out[name]:
                    out[name] = amount
        return out


# --- allocatable (GKE's reservations) ----------------------------------------------------------

@cache
def _tiers() -> tuple[Fact, Fact]:
    doc = store().doc("gke")["nodeAllocatable"]
    return store().as_fact(doc["memory"]), store().as_fact(doc["cpu"])


def allocatable_facts() -> tuple[Fact, ...]:
    """The facts :func:`allocatable` stands on (memory and CPU reservation tiers)."""
    return _tiers()


def _marginal(total: Decimal, tiers: list[Mapping[str, object]], bound_key: str,
              unit: Decimal) -> Decimal:
    reserved = Decimal(0)
    lower = Decimal(0)
    for tier in tiers:
        bound = tier[bound_key]
        upper = total if bound is None else min(total, Decimal(str(bound)) * unit)
        if upper > lower:
            reserved += (upper - lower) * Decimal(str(tier["fraction"]))
        if bound is not None:
            lower = max(lower, Decimal(str(bound)) * unit)
        if lower >= total:
            break
    return reserved


def reserved_memory(capacity_bytes: Decimal) -> Decimal:
    """Bytes GKE keeps from pods on a node with ``capacity_bytes`` of memory: the kubelet and
    system reservation plus the eviction threshold (fact ``gke.nodeAllocatable.memory``)."""
    mem, _ = _tiers()
    if capacity_bytes < Decimal(str(mem["smallMachineBelowGiB"])) * GIB:
        reserved = Decimal(str(mem["smallMachineMiB"])) * MIB
    else:
        reserved = _marginal(capacity_bytes, list(mem["tiers"]), "uptoGiB", GIB)
    return reserved + Decimal(str(mem["evictionMiB"])) * MIB


def reserved_cpu(capacity_cores: Decimal) -> Decimal:
    """Cores GKE keeps from pods on a node with ``capacity_cores`` (fact
    ``gke.nodeAllocatable.cpu``); e.g. 4 cores -> 0.08 (allocatable 3920m)."""
    _, cpu = _tiers()
    return _marginal(capacity_cores, list(cpu["tiers"]), "uptoCores", Decimal(1))


def allocatable(capacity: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """What pods may request on a node of ``capacity``: cpu and memory less GKE's
    reservations; every other resource (accelerators) as it is. Ephemeral storage is left
    out: its reservation depends on the boot disk and node image, which the model does not
    know, so it is never judged."""
    out = {k: v for k, v in capacity.items() if k != EPHEMERAL}
    if CPU in out:
        out[CPU] = out[CPU] - reserved_cpu(out[CPU])
    if MEMORY in out:
        out[MEMORY] = out[MEMORY] - reserved_memory(out[MEMORY])
    return out


def machine_capacity(vcpu: float | None, memory_gb: float | None,
                     extended: Mapping[str, int] | None = None) -> dict[str, Decimal]:
    """A Compute Engine machine's capacity as the Node reports it: ``vcpu`` cores and
    ``memory_gb`` GB of memory (Compute Engine's machine-type GB are GiB: n1-standard-1's
    3.75 GB is 3840 MiB, https://cloud.google.com/compute/docs/machine-resource), plus its
    accelerators. Unknown figures are left out."""
    out: dict[str, Decimal] = {}
    if vcpu:
        out[CPU] = Decimal(str(vcpu))
    if memory_gb:
        out[MEMORY] = Decimal(str(memory_gb)) * GIB
    for k, v in (extended or {}).items():
        out[k] = Decimal(v)
    return out


# --- controllers and limits (issue 25: what admits an object, and how big the cluster may be)

GroupVersionKind = tuple[str, str, str]
"""``(group, version, kind)``, e.g. ``("jobset.x-k8s.io", "v1alpha2", "JobSet")``."""


@dataclass(frozen=True, slots=True)
class Webhook:
    """One admission webhook a controller runs: the pod ``port`` the API server calls (the
    Service's targetPort, which a GKE private cluster's control plane reaches only through a
    firewall rule unless it is 443 or 10250), the ``resources`` it intercepts (plural names:
    ``pods``, ``jobsets``; ``*`` every one), whether it fails closed (``failurePolicy: Fail``:
    an unanswered call refuses the object), and ``reachable``: the control plane can reach
    ``port`` (None: not known, e.g. a live cluster, whose firewall the API does not show).
    ``namespace_label``: it intercepts only namespaces with this ``key=value`` label."""

    name: str
    port: int | None
    resources: frozenset[str]
    fails_closed: bool = True
    reachable: bool | None = None
    namespace_label: tuple[str, str] | None = None
    namespaces: frozenset[str] = frozenset()
    """Namespaces known to carry ``namespace_label`` (the stack labels its workload
    namespace); a pod elsewhere is intercepted only when its own labels carry it."""
    facts: tuple[Fact, ...] = ()


@dataclass(frozen=True, slots=True)
class Controller:
    """An installed controller (JobSet, Kueue, LWS, cert-manager, the ML Diagnostics
    injection webhook): its ``version`` (None: not known), the ``(group, version, kind)``
    its CRDs serve, its webhooks, and ``installed_by``: the recipe field or command that
    installs it (a hint for a kind no controller serves)."""

    name: str
    version: str | None
    serves: frozenset[GroupVersionKind]
    webhooks: tuple[Webhook, ...] = ()
    installed_by: str = ""
    facts: tuple[Fact, ...] = ()

    @property
    def webhook_ports(self) -> tuple[int, ...]:
        """The pod ports its webhooks listen on (sorted, once each)."""
        return tuple(sorted({w.port for w in self.webhooks if w.port is not None}))

    @property
    def reachable(self) -> bool | None:
        """Whether the control plane reaches every webhook port: False when one is known
        unreachable, None when one is not known, else True."""
        seen = [w.reachable for w in self.webhooks]
        return False if False in seen else (None if None in seen else True)


@dataclass(frozen=True, slots=True)
class ClusterLimits:
    """GKE's per-cluster limits for the cluster's mode (places.yaml ``gkeLimits``): ``nodes``
    per cluster (the absolute ceiling on Standard, Autopilot's own on Autopilot),
    ``node_pools`` per cluster (documented latency above it; None on Autopilot, which manages
    its pools), ``pods_per_node``; ``facts``: every limit fact by its ``gkeLimits`` key, for
    the rules that cite them."""

    nodes: int
    node_pools: int | None
    pods_per_node: int
    facts: Mapping[str, Fact]

    def fact(self, key: str) -> Fact:
        """The limit fact ``gkeLimits.<key>`` (KeyError: not one the model holds)."""
        return self.facts[key]
