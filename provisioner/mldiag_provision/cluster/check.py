"""The one check over every pod set: will it be *admitted* and *scheduled* on the model?

A pod set is one pod template of a workload (a Job's template, a JobSet's replicated job:
:class:`~mldiag_provision.lint.workloads.PodTemplate`), rendered by the tool or written by
hand. Each problem is a :class:`Verdict`: the pod set, the step that fails, the field path and
why, in the words Kueue and the Kubernetes scheduler use, so a user who later meets the real
event finds this message by it. Every pod set is checked, every problem is returned: nothing
stops at the first.

* **admitted** (:func:`admitted`): a workload with the Kueue queue-name label is admitted only
  when its ClusterQueue covers every resource its pods request (fact
  ``gke.queuedProvisioning.coverage``; kubernetes-sigs/kueue#4848).
* **admitted** (:func:`controllers_admit`): an installed controller serves the object's kind
  at its apiVersion (else "no matches for kind"), and no fail-closed webhook the control
  plane cannot reach intercepts it or its pods ("failed calling webhook ... context deadline
  exceeded"); only where the model knows its controllers.
* **admitted** (:func:`_flavors`): each resource group the pod set uses has a flavor whose
  node labels its placement allows and whose taints it tolerates ("flavor X doesn't match
  node affinity"; fact ``gke.queuedProvisioning.flavorFit``).
* **scheduled** (:func:`tolerated`): the pod tolerates the taints of a node group it may land
  on ("node(s) had untolerated taint"); only a live model knows taints beyond the accelerator
  taints every accelerator pod tolerates.
* **scheduled** (:func:`scheduled`): the pod's requests fit the *allocatable* resources of some
  node group its selectors and accelerator allow (fact ``gke.nodeAllocatable``): a request
  above allocatable stays Pending with "0/N nodes are available: N Insufficient memory" even
  where it is below the machine's size. A request above the machine's whole size is left to
  the rules that already say so (``tpu-resources``), so it is reported once.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Literal, NamedTuple

from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.cluster.model import (
    CPU,
    GIB,
    MEMORY,
    ClusterModel,
    ClusterQueue,
    Controller,
    LocalQueue,
    NodeGroup,
    ResourceFlavor,
    Taint,
    Webhook,
)
from mldiag_provision.lint.loading import Resource, get
from mldiag_provision.lint.workloads import PodTemplate
from mldiag_provision.quantity import parse_quantity
from mldiag_provision.recipe.sourcemap import Path

Step = Literal["admitted", "scheduled", "wired"]

TPU = store().get("kubernetes", "tpu", "resource")["name"]  # google.com/tpu


@dataclass(frozen=True)
class Verdict:
    """One problem of one pod set: ``step`` fails at ``path`` (inside the template's
    resource) because of ``message``; ``facts`` are what it stands on."""

    template: PodTemplate
    step: Step
    # check: kueue-coverage | kueue-queue | kueue-flavor | kueue-quota | allocatable | taints
    # | autopilot-range (cluster/autopilot.py) | controller-kind | webhook-unreachable
    check: str
    path: Path
    message: str
    value: object
    expected: str
    hint: str
    facts: tuple[Fact, ...] = ()
    warning: bool = False
    """At most a warning, whatever the facts (the model is not sure of the whole)."""
    own_facts: bool = False
    """``facts`` are all the verdict stands on: its rule's declared facts are not read (a
    live Node's reported allocatable, not GKE's reservation tiers)."""


class Request(NamedTuple):
    """A pod's request of one resource: the effective amount (Kubernetes: the larger of the
    containers' sum and any one init container), and where the first request is written.
    (A named tuple: lint works out one per resource of every pod template.)"""

    amount: Decimal
    path: Path
    written: str
    parts: tuple[str, ...] = ()
    """Each amount counted, as written: one per container summed, or the init container's
    alone where it is the larger."""


@lru_cache(maxsize=4096)
def _quantity(raw: str | int | float) -> Decimal | None:
    """:func:`~mldiag_provision.quantity.parse_quantity`, remembered: a workload's pods
    repeat the same few amounts (``4``, ``100Gi``) across every template."""
    return parse_quantity(str(raw))


def _scheduling(name: str) -> bool:
    """The resources the *scheduled* step reads: cpu, memory and extended resources."""
    return name in (CPU, MEMORY) or "/" in name


def pod_requests(t: PodTemplate) -> Mapping[str, Request]:
    """The pod's effective request per resource name (requests, else limits, which default
    them: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/).

    Effective request = max(sum over containers, max over init containers), as the scheduler
    and Kueue count it (https://kubernetes.io/docs/concepts/workloads/pods/init-containers/
    #resource-sharing-within-containers). Values that are not quantities are left to the
    schema's findings. Worked out once per template: the mapping is shared, never change it."""
    found = _REQUESTS.get(t)
    if found is None:
        found = _REQUESTS[t] = _effective(t)
    return found


_REQUESTS: weakref.WeakKeyDictionary[PodTemplate, dict[str, Request]] = (
    weakref.WeakKeyDictionary())
"""Each template's requests, worked out once: the steps and the rules ask them of every
template several times, and lint never changes the objects it reads."""


def _container_requests(c: object) -> dict[str, tuple[Decimal, str, str]]:
    """One container's request per resource name: (amount, ``requests`` or ``limits``,
    the value as written). A request wins; a limit stands in for a resource with no
    readable request."""
    res = c.get("resources") if isinstance(c, dict) else None
    if not isinstance(res, dict):
        return {}
    out: dict[str, tuple[Decimal, str, str]] = {}
    for kind in ("requests", "limits"):
        table = res.get(kind)
        if not isinstance(table, dict):
            continue
        for name, raw in table.items():
            if name in out or not isinstance(name, str) or isinstance(raw, bool) \
                    or not isinstance(raw, (str, int, float)):
                continue
            q = _quantity(raw)
            if q is not None:
                out[name] = (q, kind, str(raw))
    return out


def _effective(t: PodTemplate) -> dict[str, Request]:
    """Every resource's effective request of the pod (:func:`pod_requests` without a
    filter): the containers' sum, unless an init container asks for more (the first of the
    largest)."""
    out: dict[str, Request] = {}
    for key in ("containers", "initContainers"):
        items = t.spec.get(key)
        if not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            for name, (q, kind, raw) in _container_requests(c).items():
                had = out.get(name)
                if key == "containers" and had is not None:
                    out[name] = had._replace(amount=had.amount + q, parts=(*had.parts, raw))
                elif had is None or (key == "initContainers" and q > had.amount):
                    out[name] = Request(q, (*t.spec_path, key, i, "resources", kind, name),
                                        raw, (raw,))
    return out


def _pod_set_name(t: PodTemplate) -> str:
    """Kueue's pod set name: a JobSet's replicated job name; ``main`` for a Job or a Pod
    (kueue pkg/controller/jobs: the batch/v1 Job integration names its one pod set main)."""
    if t.resource.kind == "JobSet":
        name = get(t.resource.data, *t.path[:-3], "name") if len(t.path) >= 3 else None
        if isinstance(name, str):
            return name
    return "main"


def _queue_name(model: ClusterModel, t: PodTemplate) -> str | None:
    labels = t.resource.get("metadata", "labels")
    name = labels.get(model.queue_label) if isinstance(labels, dict) else None
    return name if isinstance(name, str) and name else None


def _kueue_fact(key: str) -> Fact:
    return store().as_fact(store().doc("gke")["queuedProvisioning"][key])


def _pod_count(t: PodTemplate) -> int:
    """Pods of the pod set as Kueue counts them: a Job's parallelism (default 1), times a
    JobSet replicated job's replicas; one for a Pod."""
    if t.job_path is None:
        return 1
    par = t.job.get("parallelism", 1)
    count = par if isinstance(par, int) and not isinstance(par, bool) and par >= 0 else 1
    if t.resource.kind == "JobSet" and len(t.path) >= 3:
        reps = get(t.resource.data, *t.path[:-3], "replicas")
        if isinstance(reps, int) and not isinstance(reps, bool) and reps >= 0:
            count *= reps
    return count


def _shown(resource: str, amount: Decimal) -> str:
    """A quantity as Kueue prints it: memory-like in Gi/Mi where whole, else the number."""
    if resource in (MEMORY, "ephemeral-storage"):
        for unit, size in (("Ti", GIB * 1024), ("Gi", GIB), ("Mi", Decimal(2 ** 20))):
            if amount >= size and amount % size == 0:
                return f"{amount / size:f}".rstrip("0").rstrip(".") + unit
    return f"{amount.normalize():f}"


def admitted(model: ClusterModel, t: PodTemplate) -> Iterator[Verdict]:
    """Kueue: the workload's LocalQueue and its ClusterQueue exist, the ClusterQueue covers
    every requested resource, and some flavor's quota holds the pod set's total request.

    A queue the model does not hold is judged only where the model knows every queue: a live
    cluster (an error) or the recipe's plan (a warning: queues added by hand are not in the
    plan). Manifests linted alone may go to queues created elsewhere: not judged."""
    queue = _queue_name(model, t)
    if queue is None:
        return
    lq = model.local_queue(t.resource.namespace, queue)
    cq = None if lq is None else model.cluster_queue(lq.cluster_queue)
    if cq is None:
        v = _missing_queue(model, t, queue, lq)
        if v is not None:
            yield v
        return
    requests = pod_requests(t)
    podset = _pod_set_name(t)
    yield from _uncovered(t, cq, requests, podset)
    unmatched = list(_flavors(model, t, cq, requests, podset))
    if unmatched:
        yield from unmatched
        return  # no flavor to hold a quota
    if cq.cohort is not None or not cq.quotas:
        return  # it may borrow from its cohort; or no quota was read
    yield from _over_quota(t, cq, requests, podset)


def _knows_queues(model: ClusterModel) -> bool:
    """Whether the model holds every queue a workload may name: a live cluster that
    reported queues, or the recipe's plan with LocalQueues (manifests alone: never)."""
    if model.source == "live":
        return bool(model.cluster_queues or model.local_queues)
    return model.source == "plan" and bool(model.local_queues)


def _missing_queue(model: ClusterModel, t: PodTemplate, queue: str,
                   lq: LocalQueue | None) -> Verdict | None:
    """The verdict for a pod set sent to LocalQueue ``queue`` that the model lacks
    (``lq`` None), or whose ClusterQueue it lacks; None where the model does not know
    every queue (fact ``gke.queuedProvisioning.missingQueue``: Kueue's own words)."""
    if not _knows_queues(model):
        return None
    missing = _kueue_fact("missingQueue")
    said = (str(missing["words"]).format(queue=queue) if lq is None else
            str(missing["clusterQueueWords"]).format(queue=lq.cluster_queue))
    known = sorted(f"{q.namespace}/{q.name}" if q.namespace else q.name
                   for q in model.local_queues)
    return Verdict(
        t, "admitted", "kueue-queue", ("metadata", "labels", model.queue_label),
        f"{t.describe()} is sent to LocalQueue {queue}, but Kueue leaves it "
        f"Inadmissible (\"{said}\")" + (
            "" if model.source == "live" else
            " in the cluster the recipe creates"),
        value=queue, expected="a LocalQueue of the workload's namespace: "
        + (", ".join(known) if known else "none"),
        hint="set the queue-name label to an existing LocalQueue, or create it",
        facts=(missing,), warning=model.source != "live")


def _uncovered(t: PodTemplate, cq: ClusterQueue, requests: Mapping[str, Request],
               podset: str) -> Iterator[Verdict]:
    """One verdict per resource the pod set requests (a positive amount) that ``cq``'s
    coveredResources leave out, by resource name (fact
    ``gke.queuedProvisioning.coverage``)."""
    coverage = _kueue_fact("coverage")
    for name, req in sorted(requests.items()):
        if req.amount <= 0 or name in cq.covered:  # a negative amount is the schema's finding
            continue
        said = str(coverage["words"]).format(podset=podset, resource=name)
        yield Verdict(
            t, "admitted", "kueue-coverage", req.path,
            f"{t.describe()} requests {name}, which ClusterQueue {cq.name} does not cover: "
            f"Kueue never admits it (\"{said}\")",
            value=req.written, expected="one of " + ", ".join(sorted(cq.covered)),
            hint=f"add {name} to the ClusterQueue's coveredResources (with a quota), or drop "
                 f"the {name} request",
            facts=(coverage,))


def _largest_quota(cq: ClusterQueue, resource: str) -> tuple[str, Decimal] | None:
    """The flavor of ``cq`` with the largest nominal quota of ``resource`` (the first of
    equals) and that quota, in the resource's base unit; None where no flavor has one."""
    return max(((f, q[resource]) for f, q in cq.quotas.items() if resource in q),
               key=lambda x: x[1], default=None)


def _over_quota(t: PodTemplate, cq: ClusterQueue, requests: Mapping[str, Request],
                podset: str) -> Iterator[Verdict]:
    """One verdict per covered resource whose total over the pod set's pods (request x
    :func:`_pod_count`) is above every flavor's quota of it in ``cq``, by resource name
    (fact ``gke.queuedProvisioning.quota``). The caller has ruled out a cohort to borrow
    from."""
    quota = _kueue_fact("quota")
    pods = _pod_count(t)
    for name, req in sorted(requests.items()):
        if req.amount <= 0 or name not in cq.covered:
            continue
        best = _largest_quota(cq, name)
        total = req.amount * pods
        if best is None or total <= best[1]:
            continue
        flavor, cap = best
        said = str(quota["words"]).format(podset=podset, resource=name, flavor=flavor,
                                          request=_shown(name, total),
                                          capacity=_shown(name, cap))
        yield Verdict(
            t, "admitted", "kueue-quota", req.path,
            f"{t.describe()}: {pods} pod(s) x {req.written} {name} is more than any flavor "
            f"of ClusterQueue {cq.name} holds: Kueue never admits it (\"{said}\")",
            value=req.written, expected=f"at most {_shown(name, cap)} {name} in all",
            hint=f"raise the nominalQuota of {name} in flavor {flavor}, put the queue in a "
                 "cohort it can borrow from, or ask for less",
            facts=(quota,))


def _taint_words(taint: Taint) -> str:
    """A taint as Kubernetes prints it (``key=value:effect``, ``key:effect`` without a
    value)."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else (
        f"{taint.key}:{taint.effect}")


class _GroupFit(NamedTuple):
    """One resource group of a ClusterQueue that a pod set requests from, as Kueue's flavor
    assigner sees it: the resources the pod set requests there (``used``), the group's
    flavors in order, the label keys they declare, and the flavors that fit; ``misfits``:
    each other flavor with the first NoSchedule/NoExecute taint the pod does not tolerate
    (None: it tolerates them, but its node labels are not what its placement allows)."""

    used: frozenset[str]
    flavors: list[ResourceFlavor]
    keys: frozenset[str]
    fits: list[ResourceFlavor]
    misfits: list[tuple[ResourceFlavor, Taint | None]]


def _pod_tolerations(t: PodTemplate) -> list[Mapping[str, object]]:
    """The pod's tolerations (entries of the wrong type are the schema's findings)."""
    raw = t.spec.get("tolerations")
    return [x for x in raw if isinstance(x, dict)] if isinstance(raw, list) else []


def _untolerated(taints: Iterable[Taint], tolerations: list[Mapping[str, object]],
                 ) -> Taint | None:
    """The first NoSchedule/NoExecute taint of ``taints`` no toleration matches."""
    return next((x for x in taints if x.effect in _BLOCKING and not any(
        tolerates(tol, x) for tol in tolerations)), None)


def _group_fits(model: ClusterModel, t: PodTemplate, cq: ClusterQueue,
                requests: Mapping[str, Request]) -> list[_GroupFit]:
    """The flavors of each resource group of ``cq`` the pod set uses that fit it: Kueue
    gives the pod set the first flavor whose ``nodeTaints`` the pod tolerates and whose
    ``nodeLabels`` its required placement allows, seen only through the label keys the
    group's flavors declare (:func:`~.affinity.restricted`). A group naming a flavor the
    model does not hold is left out (not judged)."""
    from mldiag_provision.cluster.affinity import matches, placement, restricted

    wanted = {n for n, r in requests.items() if r.amount > 0}
    out: list[_GroupFit] = []
    place = None
    tolerations: list[Mapping[str, object]] = []
    for covered, names in cq.groups:
        used = covered & wanted
        if not names or not used:
            continue
        flavors = [model.resource_flavor(n) for n in names]
        known = [f for f in flavors if f is not None]
        if len(known) != len(flavors):
            continue
        if place is None:
            place, tolerations = placement(t.spec), _pod_tolerations(t)
        keys = frozenset(k for f in known for k in f.node_labels)
        view = restricted(place, keys)
        fits: list[ResourceFlavor] = []
        misfits: list[tuple[ResourceFlavor, Taint | None]] = []
        for f in known:
            bad = _untolerated(f.node_taints, tolerations)
            if bad is None and matches(f.node_labels, view):
                fits.append(f)
            else:
                misfits.append((f, bad))
        out.append(_GroupFit(used, known, keys, fits, misfits))
    return out


def _flavors(model: ClusterModel, t: PodTemplate, cq: ClusterQueue,
             requests: Mapping[str, Request], podset: str) -> Iterator[Verdict]:
    """A resource group the pod set uses where no flavor fits it (:func:`_group_fits`):
    the workload is never admitted (fact ``gke.queuedProvisioning.flavorFit``)."""
    from mldiag_provision.cluster.affinity import placement

    for g in _group_fits(model, t, cq, requests):
        if g.fits:
            continue
        fact = _kueue_fact("flavorFit")
        reasons = sorted(
            str(fact["taintWords"]).format(taint=_taint_words(bad), flavor=f.name)
            if bad is not None else str(fact["flavorWords"]).format(flavor=f.name)
            for f, bad in g.misfits)
        said = str(fact["words"]).format(podset=podset, reasons=", ".join(reasons))
        place = placement(t.spec)
        if any(k in g.keys for k in place.selector):
            path: Path = (*t.spec_path, "nodeSelector")
        elif place.terms is not None:
            path = (*t.spec_path, "affinity", "nodeAffinity")
        elif any("untolerated" in r for r in reasons):
            path = (*t.spec_path, "tolerations")
        else:
            path = t.spec_path
        offered = "; ".join(
            f"{f.name}: " + (", ".join(f"{k}={v}" for k, v in sorted(f.node_labels.items()))
                             or "no labels")
            + "".join(f", taint {_taint_words(x)}" for x in f.node_taints)
            for f in g.flavors)
        yield Verdict(
            t, "admitted", "kueue-flavor", path,
            f"{t.describe()} fits no flavor of ClusterQueue {cq.name} that covers "
            + ", ".join(sorted(g.used))
            + f": Kueue never admits it (\"{said}\")",
            value={k: v for k, v in place.selector.items() if k in g.keys} or None,
            expected=f"node labels and tolerations of one flavor ({offered})",
            hint="make the pod's nodeSelector/affinity agree with a flavor's nodeLabels "
                 "(and tolerate its nodeTaints), or add a matching flavor to the "
                 "ClusterQueue",
            facts=(fact,))


def _flavor_labels(model: ClusterModel, t: PodTemplate, requests: Mapping[str, Request],
                   ) -> dict[str, str]:
    """The node labels Kueue adds to a queued pod's nodeSelector when it admits it: those of
    the flavor it assigns each resource group the pod set uses (the first that fits; Kueue's
    ResourceFlavor page: "Kueue adds the ResourceFlavor labels to the .nodeSelector of the
    underlying workload Pod templates"). Only where one flavor of the group fits: with several,
    Kueue picks by quota left at admission time, which no model knows. Empty for a pod that is
    not queued, or whose queue, groups or flavors the model does not know; a pod no flavor
    fits is ``kueue-flavor``'s finding, and adds nothing here."""
    if not model.resource_flavors:
        return {}
    queue = _queue_name(model, t)
    lq = model.local_queue(t.resource.namespace, queue) if queue is not None else None
    cq = model.cluster_queue(lq.cluster_queue) if lq is not None else None
    if cq is None or not cq.groups:
        return {}
    # the groups of the resources the scheduler reads (cpu, memory, extended resources)
    scheduling = {n: r for n, r in requests.items() if _scheduling(n)}
    out: dict[str, str] = {}
    for g in _group_fits(model, t, cq, scheduling):
        if len(g.fits) == 1:
            out.update(g.fits[0].node_labels)
    return out


def _candidates(model: ClusterModel, t: PodTemplate, requests: Mapping[str, Request],
                ) -> tuple[NodeGroup, ...]:
    """Node groups the pod may land on and is bound to: its node selector agrees with every
    label the group has a value for, the group offers every extended resource it requests,
    and it asks for one of them or selects one of the group's labels (remembered per
    selector and extended resources: :attr:`ClusterModel.bound_groups`)."""
    sel = t.spec.get("nodeSelector")
    sel = {**(sel if isinstance(sel, dict) else {}), **_flavor_labels(model, t, requests)}
    extended = frozenset(n for n, r in requests.items() if "/" in n and r.amount > 0)
    key = (tuple(sel.items()), extended)
    try:
        found = model.bound_groups.get(key)
    except TypeError:  # a selector value of the wrong type (the schema's finding)
        return _bound(model, sel, extended)
    if found is None:
        found = model.bound_groups[key] = _bound(model, sel, extended)
    return found


def _bound(model: ClusterModel, sel: Mapping[str, object], extended: frozenset[str],
           ) -> tuple[NodeGroup, ...]:
    """:func:`_candidates` worked out."""
    out = []
    for g in model.node_groups:
        if any(k in g.labels and g.labels[k] != v for k, v in sel.items()):
            continue
        if any(n not in g.capacity for n in extended):
            continue
        # the pod is bound to the group: by an accelerator only it offers, or by a selector
        # on its labels (a pod with neither may land on nodes the model does not hold, such
        # as a Standard cluster's system pool)
        if extended or any(k in g.labels for k in sel):
            out.append(g)
    return tuple(out)


_BLOCKING = ("NoSchedule", "NoExecute")


def tolerates(tol: Mapping[str, object], taint: Taint) -> bool:
    """Whether one toleration matches ``taint`` (Kubernetes' matching rule, fact
    ``kubernetes.scheduling.taints``): key equal (or empty with Exists: every key), Exists or
    an equal value, effect equal or empty."""
    key, op = tol.get("key"), tol.get("operator") or "Equal"
    effect = tol.get("effect")
    if effect not in (None, "") and effect != taint.effect:
        return False
    if key in (None, ""):
        return op == "Exists"
    if key != taint.key:
        return False
    return op == "Exists" or str(tol.get("value") or "") == taint.value


def tolerated(model: ClusterModel, t: PodTemplate) -> Iterator[Verdict]:
    """The pod tolerates the NoSchedule/NoExecute taints of some node group it may land on.
    A pod that requests an extended resource tolerates that resource's taint (the
    ExtendedResourceToleration admission plugin, fact ``kubernetes.scheduling.
    extendedResourceToleration``), as GKE's accelerator nodes need."""
    if not any(g.taints for g in model.node_groups):
        return
    requests = pod_requests(t)
    groups = _candidates(model, t, requests)
    if not groups:
        return
    tolerations = _pod_tolerations(t)
    implicit: list[Mapping[str, object]] = [
        {"key": n, "operator": "Exists", "effect": "NoSchedule"}
        for n, r in requests.items() if "/" in n and r.amount > 0]
    blocked: list[tuple[NodeGroup, Taint]] = []
    for g in groups:
        bad = _untolerated(g.taints, [*tolerations, *implicit])
        if bad is None:
            return  # the pod may land here
        blocked.append((g, bad))
    g, taint = blocked[0]
    fact = store().as_fact(store().doc("kubernetes")["scheduling"]["taints"])
    shown = f"{{{taint.key}: {taint.value}}}" if taint.value else f"{{{taint.key}}}"
    nodes = sum(x.nodes for x, _ in blocked)
    said = str(fact["words"]).format(nodes=nodes, taint=shown)
    path = (*t.spec_path, "tolerations") if tolerations else t.spec_path
    yield Verdict(
        t, "scheduled", "taints", path,
        f"{t.describe()} tolerates no {taint.key}={taint.value}:{taint.effect} taint of node "
        f"pool '{g.name}'" + (f" (nor those of {len(blocked) - 1} other pool(s))"
                              if len(blocked) > 1 else "")
        + f": it stays Pending with \"{said}\"",
        value=None, expected=f"a toleration of {taint.key}" + (
            f"={taint.value}" if taint.value else "") + f":{taint.effect}",
        hint=f"add tolerations: [{{key: {taint.key}, operator: "
             + (f"Equal, value: \"{taint.value}\"" if taint.value else "Exists")
             + f", effect: {taint.effect}}}] to the pod template, or select another pool",
        facts=(fact,))


def _fit_fact() -> Fact:
    return store().as_fact(store().doc("kubernetes")["scheduling"]["resourceFit"])


def scheduled(model: ClusterModel, t: PodTemplate) -> Iterator[Verdict]:
    """The pod's cpu and memory requests fit the allocatable resources of some node group it
    may land on. Not judged where no group is a candidate (other rules say why) or where the
    machine's size is unknown.

    Severity: on a live model the figure is the Node's own ``status.allocatable``, the one
    the scheduler compares requests with (fact ``kubernetes.scheduling.resourceFit``, H), so
    the verdict stands on that fact alone and is an error; on a plan or manifest model it is
    GKE's reservation tiers applied to the machine's size (``gke.nodeAllocatable``, M), a
    warning until those are verified."""
    least = model.least_allocatable
    requests = pod_requests(t)
    if all(requests[r].amount <= least[r] for r in (CPU, MEMORY)
           if r in requests and r in least):
        return  # it fits a node of every group (or no group says what it allocates)
    groups = [g for g in _candidates(model, t, requests) if g.allocatable]
    if not groups:
        return
    short = _shortfalls(groups, requests)
    if short is None:
        return  # fits some group
    fit = _fit_fact()
    for s in _closest(short):
        v = _allocatable_verdict(model, t, fit, s)
        if v is not None:
            yield v


class _Short(NamedTuple):
    """A request above what a node of a group gives pods: the group, the resource (cpu or
    memory), the pod's request and the group's allocatable amount (cores or bytes)."""

    group: NodeGroup
    resource: str
    request: Request
    allocatable: Decimal


def _shortfalls(groups: list[NodeGroup], requests: Mapping[str, Request],
                ) -> list[_Short] | None:
    """Each cpu/memory request above the allocatable amount of each group, in group order;
    None as soon as one group holds every request (the pod can be scheduled there)."""
    short: list[_Short] = []
    for g in groups:
        missing = [_Short(g, r, requests[r], g.allocatable[r]) for r in (CPU, MEMORY)
                   if r in requests and r in g.allocatable
                   and requests[r].amount > g.allocatable[r]]
        if not missing:
            return None
        short.extend(missing)
    return short


def _closest(short: list[_Short]) -> list[_Short]:
    """Per resource, in the order resources first fall short, the shortfall of the group
    that comes closest (the largest allocatable; the first of equals)."""
    best: dict[str, _Short] = {}
    for item in short:
        if item.resource not in best or item.allocatable > best[item.resource].allocatable:
            best[item.resource] = item
    return list(best.values())


def _allocatable_verdict(model: ClusterModel, t: PodTemplate, fit: Fact, s: _Short,
                         ) -> Verdict | None:
    """The *allocatable* verdict of one shortfall, or None where the request is above the
    whole TPU machine (``tpu-resources`` says so; on a live model only for TPU groups).
    Amounts are shown in GiB for memory and cores for cpu, to 0.01."""
    g, resource, req, cap = s
    live = model.source == "live"
    whole = g.capacity.get(resource)  # the machine's size
    if whole is not None and req.amount > whole and (not live or TPU in g.capacity):
        return None  # above the whole TPU machine: tpu-resources says so
    unit = "GiB" if resource == MEMORY else "cores"
    shown = (cap / GIB if resource == MEMORY else cap).quantize(Decimal("0.01"))
    where = f"slice '{g.slice}'" if g.slice else f"node pool '{g.name}'"
    whence = "as the nodes report it" if live else "after GKE's reservations"
    said = str(fit["words"]).format(nodes=g.nodes, resource=resource)
    return Verdict(
        t, "scheduled", "allocatable", req.path,
        f"{t.describe()} requests {resource} {req.written}, more than a "
        f"{g.machine_type or g.name} node of {where} can give pods "
        f"({shown} {unit} allocatable, {whence}): it stays Pending with \"{said}\"",
        value=req.written, expected=f"at most {shown} {unit}",
        hint=f"request at most {shown} {unit} of {resource} (GKE keeps the rest of the "
             "machine for the kubelet and system daemons)",
        facts=(fit,) if live else g.facts, own_facts=live)


# --- admitted by the installed controllers (issue 25) -----------------------------------------

# Which recipe field makes the stack install the controller of an API group (the tool's own
# plan: plan/agents.py); a group not listed is installed by no recipe field.
_INSTALLED_BY = {
    "jobset.x-k8s.io": "a recipe workload of kind JobSet (spec.workloads[].kind) makes the "
                       "stack install JobSet",
    "kueue.x-k8s.io": "a slice with spec.slices[].capacity.type: queued makes the stack "
                      "install Kueue",
    "cert-manager.io": "spec.diagnostics.agents: manual installs cert-manager",
    "acme.cert-manager.io": "spec.diagnostics.agents: manual installs cert-manager",
    "diagon.gke.io": "spec.diagnostics.agents (managed or manual) installs it",
}


def _builtin(group: str) -> bool:
    """Groups Kubernetes itself serves (core, apps, batch, ``*.k8s.io`` but not
    ``*.x-k8s.io``): no controller to install (the same test as lint's schema)."""
    return (group == "" or "." not in group
            or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io")))


def _no_match(model: ClusterModel, t: PodTemplate) -> Verdict | None:
    """The verdict for an object whose kind no installed controller serves at its
    apiVersion (``no matches for kind``), or None."""
    res = t.resource
    group, _, version = res.api_version.rpartition("/")
    kind = res.kind
    if not _judges_kind(model, group, version, kind):
        return None
    assert model.controllers is not None
    fact = store().as_fact(store().doc("kubernetes")["controllers"]["noMatch"])
    said = str(fact["words"]).format(kind=kind, apiVersion=res.api_version)
    other = sorted(f"{g}/{v}" for c in model.controllers for (g, v, k) in c.serves
                   if g == group and k == kind)
    expected, hint = (_other_version(model.controllers, group, other) if other else
                      _no_controller(model, group, kind))
    return Verdict(
        t, "admitted", "controller-kind", ("apiVersion",),
        f"{res.display()}: no installed controller serves {kind} at {res.api_version}, so "
        f"the API server refuses it (\"{said}\"; kubectl: \"{fact['hint']}\")" + (
            "" if model.source == "live" else " in the cluster the recipe creates"),
        value=res.api_version, expected=expected, hint=hint, facts=(fact,),
        # against a plan, a group no installed controller serves may be added by hand (a
        # warning); one the stack's own controller serves at other versions is refused
        warning=model.source != "live" and not other)


def _judges_kind(model: ClusterModel, group: str, version: str, kind: str) -> bool:
    """Whether ``group/version`` ``kind`` is judged and unserved: the model knows every
    installed controller, the object names a kind and version of a group Kubernetes does
    not serve itself, and no installed controller serves it."""
    return not (model.controllers is None or not model.controllers_complete or not kind
                or not version or _builtin(group)
                or model.served_by(group, version, kind) is not None)


def _other_version(controllers: tuple[Controller, ...], group: str, other: list[str],
                   ) -> tuple[str, str]:
    """(expected, hint) for a kind the installed controller of ``group`` serves at
    ``other`` versions (``group/version``, sorted): the newest of them, and the controller's
    name and version where it is known."""
    owner = next((c for c in controllers for (g, _v, _k) in c.serves if g == group), None)
    expected = "apiVersion " + " or ".join(other) + (
        f" ({owner.name} {owner.version})" if owner and owner.version else "")
    return expected, f"set apiVersion to {other[-1]}, the version the installed CRD serves"


def _no_controller(model: ClusterModel, group: str, kind: str) -> tuple[str, str]:
    """(expected, hint) for a kind no installed controller serves at any version: against
    a plan, the recipe field that installs the group's controller (:data:`_INSTALLED_BY`)."""
    installed = ", ".join(c.name for c in model.controllers or ()) or "none"
    expected = f"a kind an installed controller serves (installed: {installed})"
    hint = (_INSTALLED_BY.get(group, f"no recipe field installs the {group} controller: "
                                     "install it (its CRDs) before this object")
            if model.source != "live" else
            f"install the controller that serves {kind} ({group}) before this object")
    return expected, hint


def _plural(kind: str) -> str:
    """A kind's resource name as webhook rules write it (``JobSet`` -> ``jobsets``)."""
    return kind.lower() + "s"


def _unreachable(model: ClusterModel, t: PodTemplate, first: bool, pod_set: bool,
                 ) -> Iterator[Verdict]:
    """Fail-closed webhooks the control plane cannot reach that intercept the pod set's pods
    (``pod_set``) or, ``first`` time the object is seen, the object's own kind."""
    res = t.resource
    for c in model.controllers or ():
        for w in c.webhooks:
            if w.reachable is not False or not w.fails_closed:
                continue
            own = first and ("*" in w.resources or _plural(res.kind) in w.resources)
            pods = pod_set and ("pods" in w.resources or "*" in w.resources)
            path = _intercepted_at(t, w, own, pods)
            if path is not None:
                yield _unreachable_verdict(model, t, c, w, own, path)


def _intercepted_at(t: PodTemplate, w: Webhook, own: bool, pods: bool) -> Path | None:
    """Where webhook ``w`` is shown to intercept the object: ``kind`` for the object's own
    kind (``own``); for its pods (``pods``), the pod template's metadata, or the label or
    namespace its namespaceSelector matches; None where it intercepts neither (or its
    namespaceSelector matches neither the label nor a namespace it is known to select)."""
    if own:
        return ("kind",)
    if not pods:
        return None
    if w.namespace_label is None:
        return (*t.path, "metadata") if t.path else ("metadata",)
    key, value = w.namespace_label
    if t.labels.get(key) == value:
        return (*t.path, "metadata", "labels", key)
    if t.resource.namespace is not None and t.resource.namespace in w.namespaces:
        return ("metadata", "namespace")
    return None


def _unreachable_verdict(model: ClusterModel, t: PodTemplate, c: Controller, w: Webhook,
                         own: bool, path: Path) -> Verdict:
    """The *webhook-unreachable* verdict of webhook ``w`` of controller ``c`` (fact
    ``kubernetes.webhooks.unreachable`` and the webhook's own facts); a warning unless the
    model is live."""
    fact = store().as_fact(store().doc("kubernetes")["webhooks"]["unreachable"])
    said = str(fact["words"]).format(webhook=w.name)
    reach = sorted(model.control_plane_ports or ())
    what = f"{t.resource.kind} objects" if own else "its pods"
    return Verdict(
        t, "admitted", "webhook-unreachable", path,
        f"{t.describe()}: {what} are refused: webhook {w.name} ({c.name}) fails "
        f"closed and listens on port {w.port}, which the control plane of this "
        f"private cluster cannot reach (it reaches the nodes on "
        f"{', '.join(map(str, reach)) or 'no port'}): \"{said}\"",
        value=w.port, expected="a webhook port the control plane reaches: "
        + (", ".join(map(str, reach)) or "none"),
        hint="leave spec.orchestrator.private.webhookFirewall on (the stack's rule "
             f"opens the webhook ports), or add a firewall rule from the control plane "
             f"range to the nodes on TCP {w.port}",
        facts=(fact, *w.facts), warning=model.source != "live")


def controllers_admit(model: ClusterModel, t: PodTemplate, seen: set[int],
                      pod_set: bool = True) -> Iterator[Verdict]:
    """*admitted* by the installed controllers: an installed controller serves the pod set's
    kind at its apiVersion (else the API server answers \"no matches for kind\"; fact
    ``kubernetes.controllers.noMatch``), and no fail-closed webhook the control plane cannot
    reach intercepts it or its pods (fact ``kubernetes.webhooks.unreachable``). Judged only
    where the model knows its controllers (a plan, a live cluster), never for manifests
    linted alone. ``seen``: ids of objects already judged (a JobSet has one template per
    replicated job; its kind is reported once); ``pod_set``: ``t`` is a pod template (else an
    object whose pods are not judged)."""
    if model.controllers is None:
        return
    first = id(t.resource) not in seen
    seen.add(id(t.resource))
    if first:
        v = _no_match(model, t)
        if v is not None:
            yield v
            return  # refused before any webhook is called
    yield from _unreachable(model, t, first, pod_set)


def objects_admitted(model: ClusterModel, resources: Iterable[Resource]) -> list[Verdict]:
    """:func:`controllers_admit` for objects that are not pod sets (Kueue's queues,
    cert-manager's Certificates): each is its own "template" (path ``()``), so a verdict
    names the object itself."""
    out: list[Verdict] = []
    if model.controllers is None:
        return out
    seen: set[int] = set()
    for res in resources:
        out.extend(controllers_admit(model, PodTemplate(res, ()), seen, pod_set=False))
    return out


def check(model: ClusterModel, templates: list[PodTemplate]) -> list[Verdict]:
    """Every verdict of every pod set, admitted before scheduled, in template order."""
    out: list[Verdict] = []
    seen: set[int] = set()
    for t in templates:
        out.extend(controllers_admit(model, t, seen))
        out.extend(admitted(model, t))
        out.extend(tolerated(model, t))
        out.extend(scheduled(model, t))
        if model.accelerator_classes:  # Autopilot: the class's request range
            from mldiag_provision.cluster.autopilot import ranges
            out.extend(ranges(model, t))
    return out
