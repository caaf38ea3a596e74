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

from mldiag_provision.catalog.gpu import GpuShape
from mldiag_provision.catalog.store import Fact
from mldiag_provision.catalog.tpu import SliceShape
from mldiag_provision.cluster.model import (
    ClusterModel,
    ClusterQueue,
    LocalQueue,
    Mode,
    NodeGroup,
    ResourceFlavor,
    allocatable,
    allocatable_facts,
    machine_capacity,
)
from mldiag_provision.quantity import parse_quantity

if TYPE_CHECKING:
    from mldiag_provision.catalog.tpu import Catalog
    from mldiag_provision.plan.stack import QueuedPlan, SlicePlan
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
          queued: QueuedPlan | None = None, zone: str | None = None) -> ClusterModel:
    """The cluster of a plan.

    Args:
      mode: ``autopilot`` or ``standard`` (``unknown`` for an existing cluster: its other
        nodes are not known, so the model's node groups are not complete).
      slices: each resolved slice with its catalog shape.
      queued: the plan's Kueue objects (None: no queued slice).
      zone: the recipe's zone, where the node pools are created.

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
                         resource_flavors=flavors)
    if mode == "autopilot":  # the request ranges of its accelerator classes
        from mldiag_provision.cluster import autopilot
        model = replace(model, accelerator_classes=autopilot.classes(pairs))
    return replace(model, queue_label=queued.queue_name_label) if queued else model


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
    from mldiag_provision.catalog.gpu import load_gpu_catalog
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
                shapes[i] = load_gpu_catalog().resolve(s.gpu, s.machine_type)
            else:
                return None
    except ShapeError:
        return None
    project = plan_project(recipe, shapes, catalog, unit)
    return build(mode_of(spec.orchestrator.type),
                 slices_with_shapes(project.slices, shapes),
                 queued_plan(recipe, catalog, list(project.slices)), spec.zone)
