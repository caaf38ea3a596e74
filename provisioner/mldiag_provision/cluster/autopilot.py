"""GKE Autopilot's accelerator classes: the request ranges the model holds, and the check of
a pod set's requests against them (issue 25).

On Autopilot, GKE validates every Pod's requests against the range of the hardware it asks
for (AP-RESOURCES, https://cloud.google.com/kubernetes-engine/docs/concepts/
autopilot-resource-requests): a request *above* the maximum is refused at admission, with GKE
Warden's words ``[denied by autogke-pod-limit-constraints]: Total cpu requested by containers
for workload '...' is higher than the Autopilot maximum of '11'.`` (argoproj/argo-workflows
#13073); one *below* the minimum is raised to it, so the Pod runs and is billed for the
minimum (fact ``gke.autopilotClasses.belowMinRaised``).

The figures are facts (``catalog/data/gke.yaml`` ``autopilotClasses``: per GPU type and
count; ``kubernetes.yaml`` ``ephemeralStorage``: every accelerator Pod). Only figures read at
a source are there; a bound that is not is unknown and never judged. The TPU table was not
readable: a TPU Pod's ceiling is its node's allocatable (``gke.autopilotClasses.
tpuWholeNode``), which :func:`~.check.scheduled` judges.

* :func:`classes`: the classes of a plan's slices (:mod:`.from_plan`, Autopilot only).
* :func:`ranges`: the *scheduled* step's verdicts on Autopilot (called by :func:`.check.check`).
* :func:`ephemeral_bounds`: the ephemeral-storage bounds every accelerator class shares, which
  the rules ``autopilot-ephemeral-storage`` (lint) and ``workload-ephemeral-storage``
  (preflight) read.

Nothing here is imported at ``validate``'s start: :mod:`.from_plan` and :mod:`.check` import
it inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.cluster.model import (
    CPU,
    EPHEMERAL,
    MEMORY,
    AcceleratorClass,
    ClusterModel,
)
from mldiag_provision.quantity import parse_quantity

if TYPE_CHECKING:
    from mldiag_provision.catalog.gpu import GpuShape
    from mldiag_provision.catalog.tpu import SliceShape
    from mldiag_provision.cluster.check import Request, Verdict
    from mldiag_provision.lint.workloads import PodTemplate
    from mldiag_provision.plan.types import SlicePlan

CHECK = "autopilot-range"
"""The :class:`~.check.Verdict` ``check`` of this module's verdicts."""

_JUDGED = (CPU, MEMORY)
"""Resources :func:`ranges` judges; ephemeral storage is the ephemeral-storage rules'."""


def _doc() -> Any:
    return store().doc("gke")["autopilotClasses"]


def _fact(*keys: str) -> Fact:
    return store().fact("gke", "autopilotClasses", *keys)


def _qty(raw: object) -> Decimal:
    q = parse_quantity(str(raw))
    if q is None:
        raise ValueError(f"autopilotClasses: {raw!r} is not a quantity")  # catalog data
    return q


def ephemeral_bounds() -> tuple[tuple[Decimal, Fact], tuple[Decimal, Fact]]:
    """((minimum, fact), (maximum, fact)) of an accelerator Pod's ephemeral storage on
    Autopilot, in bytes (facts ``kubernetes.ephemeralStorage.autopilotAcceleratorMin``, M,
    and ``autopilotAcceleratorMax``, L)."""
    lo = store().fact("kubernetes", "ephemeralStorage", "autopilotAcceleratorMin")
    hi = store().fact("kubernetes", "ephemeralStorage", "autopilotAcceleratorMax")
    return (_qty(lo["quantity"]), lo), (_qty(hi["quantity"]), hi)


def _labels(sp: SlicePlan) -> dict[str, str]:
    """The class's selector labels: the accelerator, and a TPU's topology."""
    k8s = store().doc("kubernetes")
    keys = {str(k8s["gpu"]["acceleratorLabel"]["key"]), str(k8s["tpu"]["acceleratorLabel"]["key"]),
            str(k8s["tpu"]["topologyLabel"]["key"])}
    return {k: v for k, v in sp.node_selector.items() if k in keys}


def _class(accelerator: str, labels: Mapping[str, str], resource: str, count: int | None,
           row: Mapping[str, Any] | None, slice_name: str | None = None) -> AcceleratorClass:
    (lo, lo_fact), (hi, hi_fact) = ephemeral_bounds()
    minimum: dict[str, Decimal] = {EPHEMERAL: lo}
    maximum: dict[str, Decimal] = {EPHEMERAL: hi}
    facts: dict[str, tuple[Fact, ...]] = {EPHEMERAL: (lo_fact, hi_fact)}
    if row is not None:
        fact = store().as_fact(row)
        for name in _JUDGED:
            bounds: Mapping[str, object] = row.get(name) or {}
            if "min" in bounds:
                minimum[name] = _qty(bounds["min"])
            if "max" in bounds:
                maximum[name] = _qty(bounds["max"])
            if bounds:
                facts[name] = (fact,)
    return AcceleratorClass(
        name=accelerator + (f" x{count}" if count else ""), labels=labels, resource=resource,
        count=count, minimum=minimum, maximum=maximum, facts=facts, slice=slice_name)


def _gpu_rows(accelerator: str, count: int | None) -> list[Mapping[str, Any]]:
    """The GPU table's rows for ``accelerator`` (and ``count`` GPUs per Pod, unless None)."""
    return [row for row in _doc()["gpu"] if row["accelerator"] == accelerator
            and count in (None, row["count"])]


def ranged_accelerators() -> frozenset[str]:
    """The GPU accelerators (``gke-accelerator`` values) with a recorded cpu or memory bound:
    the only GPU Pods :func:`ranges` can judge."""
    return frozenset(str(row["accelerator"]) for row in _doc()["gpu"]
                     if any(row.get(name) for name in _JUDGED))


def accelerator_classes(sp: SlicePlan) -> list[AcceleratorClass]:
    """The Autopilot classes of one planned slice: for a GPU slice, one per row of the GPU
    table recorded for its accelerator (and its GPUs per VM, where the plan knows them: on
    Autopilot it does not, the Pod's request picks the row); then one for any count, with
    only the ephemeral-storage range every accelerator Pod shares."""
    labels = _labels(sp)
    out: list[AcceleratorClass] = []
    if sp.kind == "gpu":
        out = [_class(sp.accelerator, labels, sp.resource, int(row["count"]), row, sp.name)
               for row in _gpu_rows(sp.accelerator, sp.chips_per_vm)]
    if not any(c.count == sp.chips_per_vm for c in out):
        out.append(_class(sp.accelerator, labels, sp.resource, sp.chips_per_vm, None, sp.name))
    return out


def classes_of_pods(templates: Iterable[PodTemplate]) -> tuple[AcceleratorClass, ...]:
    """The GPU classes the pod templates select (``cloud.google.com/gke-accelerator`` and an
    ``nvidia.com/gpu`` request), for ``lint --autopilot`` on manifests alone: only rows the
    GPU table records (a pod of another class is not judged)."""
    from mldiag_provision.cluster.check import pod_requests

    k8s = store().doc("kubernetes")
    key, gpu = str(k8s["gpu"]["acceleratorLabel"]["key"]), str(k8s["gpu"]["resource"]["name"])
    out: dict[tuple[str, int], AcceleratorClass] = {}
    for t in templates:
        sel = t.spec.get("nodeSelector")
        acc = sel.get(key) if isinstance(sel, dict) else None
        if not isinstance(acc, str):
            continue
        req = pod_requests(t).get(gpu)
        if req is None or req.amount != req.amount.to_integral():
            continue
        count = int(req.amount)
        for row in _gpu_rows(acc, count):
            out.setdefault((acc, count), _class(acc, {key: acc}, gpu, count, row))
    return tuple(out.values())


def classes(slices: Iterable[tuple[SlicePlan, SliceShape | GpuShape]],
            ) -> tuple[AcceleratorClass, ...]:
    """The accelerator classes of a plan's slices, in slice order."""
    return tuple(c for sp, _ in slices for c in accelerator_classes(sp))


def class_of(model: ClusterModel, t: PodTemplate, requests: Mapping[str, Request],
             ) -> AcceleratorClass | None:
    """The class a pod set falls in: its node selector holds the class's labels and it asks
    for the class's accelerator (and count, where the class has one). None: no class of the
    model (a pod without an accelerator is judged by the general-purpose class, which the
    model does not hold)."""
    sel = t.spec.get("nodeSelector")
    sel = sel if isinstance(sel, dict) else {}
    for c in model.accelerator_classes:
        req = requests.get(c.resource)
        if req is None or req.amount <= 0:
            continue
        if c.count is not None and req.amount != c.count:
            continue
        if all(sel.get(k) == v for k, v in c.labels.items()):
            return c
    return None


def _shown(resource: str, amount: Decimal) -> str:
    from mldiag_provision.cluster.check import _shown as shown
    return shown(resource, amount)


def ranges(model: ClusterModel, t: PodTemplate) -> Iterator[Verdict]:
    """Autopilot: the pod set's cpu and memory requests (the effective request: the larger of
    the containers' sum and any one init container) lie within its accelerator class's range.

    Above the maximum: GKE Warden refuses the Pod (fact ``gke.autopilotClasses.
    aboveMaxRejected``, H; the figure's own fact settles the severity). Below the minimum: a
    warning, Autopilot raises the request and bills it. Nothing on other modes, for pods of no
    class of the model, or for a bound the class does not know."""
    if model.mode != "autopilot" or not model.accelerator_classes:
        return
    from mldiag_provision.cluster.check import Verdict, pod_requests

    requests = pod_requests(t)
    cls = class_of(model, t, requests)
    if cls is None:
        return
    rejected, raised, words = _fact("aboveMaxRejected"), _fact("belowMinRaised"), \
        _fact("wardenWords")
    workload = t.resource.name or t.describe()
    init_at = len(t.spec_path)
    for resource in _JUDGED:
        req = requests.get(resource)
        if req is None:
            continue
        hi, lo = cls.maximum.get(resource), cls.minimum.get(resource)
        figures = cls.facts.get(resource, ())
        if hi is not None and req.amount > hi:
            init = len(req.path) > init_at and req.path[init_at] == "initContainers"
            said = str(words["init" if init else "total"]).format(
                resource=resource, workload=workload, maximum=_shown(resource, hi))
            yield Verdict(
                t, "scheduled", CHECK, req.path,
                f"{t.describe()} requests {resource} {req.written}, above the Autopilot "
                f"maximum for {cls.name} Pods ({_shown(resource, hi)}): GKE Warden refuses "
                f"the Pod (\"{words['prefix']}: {said}\")",
                value=req.written, expected=f"at most {_shown(resource, hi)}",
                hint=f"request at most {_shown(resource, hi)} {resource}, or ask for more "
                     f"{cls.resource} per Pod (a bigger class)",
                facts=(rejected, words, *figures))
        elif lo is not None and req.amount < lo:
            yield Verdict(
                t, "scheduled", CHECK, req.path,
                f"{t.describe()} requests {resource} {req.written}, below the Autopilot "
                f"minimum for {cls.name} Pods ({_shown(resource, lo)}): Autopilot raises it "
                f"to {_shown(resource, lo)}, and bills the raised request",
                value=req.written, expected=f"at least {_shown(resource, lo)}",
                hint=f"request {_shown(resource, lo)} {resource} or more: the Pod is "
                     "billed for it anyway",
                facts=(raised, *figures), warning=True)
