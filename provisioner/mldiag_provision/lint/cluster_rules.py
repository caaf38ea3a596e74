"""The cluster model's check (:mod:`mldiag_provision.cluster.check`) as lint rules.

The model comes from the context: preflight hands lint the model of the recipe's plan
(:attr:`LintContext.cluster`); ``lint --recipe`` builds that of the recipe's plan
(:func:`~mldiag_provision.cluster.from_plan.from_recipe`); plain ``lint`` builds one from
the manifests themselves
(:func:`model_of_manifests`): the Kueue ClusterQueues and LocalQueues among them, and one node
group per TPU machine their pods' node selectors name (accelerator + topology resolve to a
machine type in the catalog, so allocatable applies there too).

Rules (ids stable):
* ``kueue-covered-resources`` (*admitted*): every resource a queued pod requests is covered
  by its ClusterQueue.
* ``node-allocatable`` (*scheduled*): cpu and memory requests fit a node's allocatable.
* ``kueue-queue`` (*admitted*): its LocalQueue and that queue's ClusterQueue exist.
* ``kueue-flavor`` (*admitted*): a flavor of each resource group the pod set uses matches its
  node selector/affinity and its tolerations.
* ``kueue-quota`` (*admitted*): a flavor's nominal quota holds the pod set's total request.
* ``node-taints`` (*scheduled*): the pod tolerates the taints of a node it can land on.
* ``controller-kind`` (*admitted*): an installed controller serves the object's kind at its
  apiVersion (judged against a plan or a live cluster; manifests alone do not say what is
  installed, so plain ``lint`` never judges it).
* ``webhook-unreachable`` (*admitted*): no fail-closed webhook the private cluster's control
  plane cannot reach intercepts the object or its pods.
* ``autopilot-resource-range`` (*scheduled*, Autopilot): cpu and memory requests lie within
  the accelerator class's range (:mod:`mldiag_provision.cluster.autopilot`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from mldiag_provision.catalog.store import store
from mldiag_provision.cluster import kueue
from mldiag_provision.cluster.check import Verdict, check, objects_admitted
from mldiag_provision.cluster.model import (
    ClusterModel,
    ClusterQueue,
    LocalQueue,
    NodeGroup,
    allocatable,
    allocatable_facts,
    machine_capacity,
)
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.rules import define
from mldiag_provision.lint.tpu_rules import ACC_KEY, TOPO_KEY, TPU, tpu_pods

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import Recipe

KUEUE = define("kueue-covered-resources", "a queued workload's pods request only resources "
               "its Kueue ClusterQueue covers (else Kueue never admits it)",
               source=store().source_url("KUEUE-4848"),
               facts=("gke.queuedProvisioning.coverage",))
ALLOCATABLE = define("node-allocatable", "a pod's cpu and memory requests fit the allocatable "
                     "resources of a node it can land on (capacity less GKE's reservations)",
                     source=store().source_url("GKE-NODE-SIZES"),
                     facts=("gke.nodeAllocatable.memory", "gke.nodeAllocatable.cpu"))

TAINTS = define("node-taints", "a pod tolerates the NoSchedule/NoExecute taints of a node "
                "it can land on (else it stays Pending)",
                source=store().source_url("K8S-TAINTS"),
                facts=("kubernetes.scheduling.taints",))

QUEUE = define("kueue-queue", "a queued workload's LocalQueue, and that queue's ClusterQueue, "
               "exist (else Kueue leaves it Inadmissible)",
               source=store().source_url("KUEUE-WORKLOAD-CONTROLLER"),
               facts=("gke.queuedProvisioning.missingQueue",))
QUOTA = define("kueue-quota", "a queued pod set's total request fits the nominal quota of a "
               "flavor of its ClusterQueue (else Kueue never admits it)",
               source=store().source_url("KUEUE-FLAVORASSIGNER"),
               facts=("gke.queuedProvisioning.quota",))

FLAVOR = define("kueue-flavor", "a queued pod set's node selector, affinity and tolerations "
                "fit a ResourceFlavor of its ClusterQueue (else Kueue never admits it)",
                source=store().source_url("KUEUE-RESOURCE-FLAVOR"),
                facts=("gke.queuedProvisioning.flavorFit",))

AUTOPILOT_RANGE = define("autopilot-resource-range", "on GKE Autopilot, an accelerator pod's "
                         "cpu and memory requests lie within its class's range (above the "
                         "maximum GKE Warden refuses the pod; below the minimum it is raised)",
                         source=store().source_url("AP-RESOURCES"),
                         facts=("gke.autopilotClasses.aboveMaxRejected",
                                "gke.autopilotClasses.wardenWords"))

CONTROLLER_KIND = define(
    "controller-kind", "an installed controller (its CRD) serves the object's kind at its "
    "apiVersion (else the API server answers 'no matches for kind')",
    source=store().source_url("K8S-NO-MATCH"), facts=("kubernetes.controllers.noMatch",))
WEBHOOK_UNREACHABLE = define(
    "webhook-unreachable", "no fail-closed webhook the private cluster's control plane cannot "
    "reach intercepts the object or its pods (else 'failed calling webhook ... context "
    "deadline exceeded')", source=store().source_url("GKE-PRIVATE-FW"),
    facts=("kubernetes.webhooks.unreachable",))

_RULE = {"kueue-coverage": KUEUE.id, "kueue-queue": QUEUE.id, "kueue-quota": QUOTA.id,
         "kueue-flavor": FLAVOR.id,
         "allocatable": ALLOCATABLE.id, "taints": TAINTS.id,
         "autopilot-range": AUTOPILOT_RANGE.id,
         "controller-kind": CONTROLLER_KIND.id, "webhook-unreachable": WEBHOOK_UNREACHABLE.id}
_KUEUE_GROUP = "kueue.x-k8s.io"


def _queues(ctx: LintContext) -> tuple[tuple[ClusterQueue, ...], tuple[LocalQueue, ...]]:
    return (kueue.cluster_queues(r.data for r in ctx.of_kind(_KUEUE_GROUP, "ClusterQueue")),
            kueue.local_queues(r.data for r in ctx.of_kind(_KUEUE_GROUP, "LocalQueue")))


def model_of_manifests(ctx: LintContext) -> ClusterModel:
    """The cluster the manifests describe: their Kueue objects, and a node group per TPU
    machine their pods select (nodes the manifests do not name are unknown, so the model's
    node groups are not complete)."""
    cqs, lqs = _queues(ctx)
    flavors = kueue.resource_flavors(
        r.data for r in ctx.of_kind(_KUEUE_GROUP, "ResourceFlavor"))
    groups: dict[tuple[str, str, str], NodeGroup] = {}
    for tp in tpu_pods(ctx):
        shape = tp.shape
        if shape is None:
            continue
        mt = shape.machine_type
        key = (shape.version.accelerator, shape.topology, mt.name)
        if key in groups:
            continue
        capacity = machine_capacity(mt.vcpu, mt.memory_gb, {TPU: mt.chips_per_vm})
        groups[key] = NodeGroup(
            name=f"{shape.version.key} {shape.topology}", machine_type=mt.name,
            nodes=shape.vms, zones=(), labels={ACC_KEY: shape.version.accelerator,
                                               TOPO_KEY: shape.topology},
            taints=(), capacity=capacity, allocatable=allocatable(capacity),
            facts=(*((mt.fact,) if mt.fact is not None else ()), *allocatable_facts()))
    model = ClusterModel(mode="unknown", node_groups=tuple(groups.values()),
                         cluster_queues=cqs, local_queues=lqs, source="manifests",
                         resource_flavors=flavors)
    if ctx.options.autopilot:  # --autopilot: the GPU classes the pods select
        from mldiag_provision.cluster.autopilot import classes_of_pods
        found = classes_of_pods(ctx.templates)
        if found:
            model = replace(model, mode="autopilot", accelerator_classes=found)
    return model


def _model(ctx: LintContext) -> ClusterModel:
    """``lint --recipe``: the recipe's plan, plus the Kueue queues the manifests define
    themselves; plain ``lint``: the manifests alone."""
    own = model_of_manifests(ctx)
    recipe = ctx.options.recipe
    if recipe is None:
        return own
    from mldiag_provision.cluster import from_plan  # lint --recipe only

    planned = from_plan.from_recipe(cast("Recipe", recipe), ctx.catalog)
    if planned is None:
        return own
    controllers = planned.controllers
    crds = [r.data for r in ctx.of_kind("apiextensions.k8s.io", "CustomResourceDefinition")]
    if controllers is not None and crds:
        from mldiag_provision.cluster.from_live import controllers_of_crds

        controllers = (*controllers, *controllers_of_crds(crds, source="the manifests"))
    return replace(planned, cluster_queues=(*planned.cluster_queues, *own.cluster_queues),
                   local_queues=(*planned.local_queues, *own.local_queues),
                   resource_flavors=(*planned.resource_flavors, *own.resource_flavors),
                   controllers=controllers)


def problem_of(ctx: LintContext, v: Verdict) -> Problem:
    """A verdict as a lint problem of its rule, at its field. A verdict that stands on its own
    facts alone cites the first one's source (a live Node's allocatable: Kubernetes' page, not
    GKE's reservation tiers)."""
    return ctx.problem(v.template.resource, _RULE[v.check], v.path,
                       f"{v.step}: {v.message}", value=v.value, expected=v.expected,
                       hint=v.hint, facts=v.facts, declared=not v.own_facts,
                       source=v.facts[0].url if v.own_facts and v.facts else None,
                       severity=Severity.WARNING if v.warning else None)


def cluster_model(ctx: LintContext) -> ClusterModel:
    """The model lint judges against (worked out once per context): the live cluster's
    (``--cluster``), the recipe's plan (``--recipe``), else the manifests'."""
    model = ctx.cluster if ctx.cluster is not None else ctx.memo(
        "cluster_model", lambda: _model(ctx))
    assert isinstance(model, ClusterModel)
    return model


def check_cluster(ctx: LintContext) -> Iterator[Problem]:
    """Every pod set against the cluster model: admitted (Kueue), scheduled (allocatable)."""
    model = cluster_model(ctx)
    for v in check(model, ctx.templates):
        yield problem_of(ctx, v)
    if model.controllers is not None:  # objects that are not pod sets: their kind
        workloads = {id(t.resource) for t in ctx.templates}
        for v in objects_admitted(model, (r for r in ctx.resources
                                          if id(r) not in workloads)):
            yield problem_of(ctx, v)


CHECKS = (check_cluster,)
