"""Recipe cross-check (``lint --recipe R``): the manifests must fit R's capacity.

A TPU pod schedules only on a node of a pool with its accelerator, topology and chips per VM;
R's ``spec.slices`` are those pools (GKE Standard) or what Autopilot may provision. A manifest
can be valid on its own and still never run on R: a v5e ``2x4`` pod asking 8 chips is a fine
single-host pod, but if R built ``2x4`` as two 4-chip VMs no node offers 8 chips. Checked here:
slice shape and chips per VM, Spot capacity, reservations, and the number of slices a
multislice JobSet asks for. Facts: ``recipeFit`` in lint/data/facts.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from mldiag_provision.catalog.tpu import ShapeError, SliceShape, TpuVersion
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.rules import define, fact, fact_source
from mldiag_provision.lint.tpu_rules import TpuPod, _selector, tpu_pods
from mldiag_provision.lint.workloads import get_int
from mldiag_provision.recipe.sourcemap import Path

_F = ("recipeFit",)
SLICE = define("recipe-slice", "a TPU pod asks for a slice shape and chips per VM that the "
               "recipe's slices provide", source=fact_source(*_F, "slices"),
               facts=("kubernetes.recipeFit.slices",))
CAPACITY = define("recipe-capacity", "Spot and reservation selectors match the capacity of "
                  "the recipe's slice", source=fact_source(*_F, "capacity"),
                  facts=("kubernetes.recipeFit.capacity",))
LABELS = define("recipe-node-labels", "node-pool selectors (gke-nodepool, the tool's slice "
                "label) name a pool of the recipe that has the pod's slice shape",
                source=fact_source(*_F, "slices"), facts=("kubernetes.recipeFit.slices",))
SLICE_COUNT = define("recipe-slice-count", "a multislice JobSet asks for no more slices than "
                     "the recipe provides", source=fact_source(*_F, "multisliceCount"),
                     facts=("kubernetes.recipeFit.multisliceCount",))


@dataclass(frozen=True)
class RecipeSlice:
    name: str
    path: str          # recipe path, e.g. spec.slices[0]
    shape: SliceShape
    count: int
    capacity: str
    reservation: str | None

    @property
    def pools(self) -> list[str]:
        """GKE Standard node pool names the tool gives this slice (plan/names.py)."""
        from mldiag_provision.plan.names import node_pool_names

        return node_pool_names(self.name, self.count)

    def describe(self) -> str:
        s = self.shape
        vms = f"{s.vms} VMs" if s.vms > 1 else "one VM"
        return (f"slice '{self.name}' ({s.version.key} {s.topology}: {vms} of "
                f"{s.chips_per_vm} chips)")


def recipe_slices(ctx: LintContext) -> list[RecipeSlice]:
    """R's TPU slices resolved against the catalog ([] without --recipe). Slices the catalog
    cannot resolve are left out: ``validate`` reports them."""
    recipe = ctx.options.recipe
    if recipe is None:
        return []

    def compute() -> list[RecipeSlice]:
        out = []
        for i, s in enumerate(recipe.spec.slices):  # type: ignore[attr-defined]
            if not s.tpu or not s.topology:
                continue
            try:
                shape = ctx.catalog.resolve(s.tpu, s.topology, s.chips_per_vm)
            except ShapeError:
                continue
            out.append(RecipeSlice(s.name, f"spec.slices[{i}]", shape, s.count,
                                   s.capacity.type, s.capacity.reservation))
        return out

    return ctx.memo("recipe_slices", compute)  # type: ignore[return-value]


def _autopilot(ctx: LintContext) -> bool:
    return bool(ctx.options.recipe.spec.orchestrator.type  # type: ignore[attr-defined]
                == "gke-autopilot")


def _wrong_spot(ctx: LintContext, tp: TpuPod, fits: list[RecipeSlice],
                spot: tuple[object, Path]) -> Iterator[Problem]:
    """The pod selects Spot nodes (``spot``: the selector's value and path), but none of the
    recipe slices it fits is Spot capacity (GKE Standard; Autopilot provisions what the pod
    asks for)."""
    if any(s.capacity == "spot" for s in fits) or _autopilot(ctx):
        return
    t = tp.template
    yield ctx.problem(
        t.resource, CAPACITY.id, spot[1],
        f"{t.describe()} selects Spot nodes, but the recipe's "
        + ", ".join(s.describe() for s in fits) + " is not Spot capacity: no node matches",
        value=spot[0], expected="the slice's capacity.type",
        hint="remove the Spot selector, or set capacity.type: spot on the slice")


def _missing_spot(ctx: LintContext, tp: TpuPod, fits: list[RecipeSlice],
                  spot_key: str) -> Iterator[Problem]:
    """On Autopilot, every slice the pod fits is Spot but the pod does not select Spot (the
    caller checked that it does not): Autopilot provisions on-demand TPUs for it."""
    if not (_autopilot(ctx) and fits and all(s.capacity == "spot" for s in fits)):
        return
    t = tp.template
    yield ctx.problem(
        t.resource, CAPACITY.id, (*t.spec_path, "nodeSelector"),
        f"the recipe runs {fits[0].describe()} on Spot capacity, but {t.describe()} does "
        "not select Spot: Autopilot provisions on-demand TPUs for it",
        severity=Severity.WARNING,
        hint=f"add nodeSelector {spot_key}: \"true\"")


def _wrong_reservation(ctx: LintContext, tp: TpuPod,
                       fits: list[RecipeSlice]) -> Iterator[Problem]:
    """The pod selects a reservation (fact ``capacity.reservationName``) that none of the
    recipe slices it fits consumes."""
    t = tp.template
    reservation = _selector(t, fact("capacity", "reservationName")["key"])
    if reservation is None:
        return
    names = {s.reservation for s in fits if s.capacity == "reservation"}
    if reservation[0] in names:
        return
    yield ctx.problem(
        t.resource, CAPACITY.id, reservation[1],
        f"{t.describe()} selects reservation '{reservation[0]}', which no matching "
        "recipe slice consumes" + (
            f" (the recipe's: {', '.join(sorted(n for n in names if n is not None))})"
            if names else ""),
        value=reservation[0], facts=[fact(*_F, "reservation")],
        expected=", ".join(sorted(n for n in names if n)) or None,
        hint="select the recipe slice's reservation, or remove the selector")


def _check_capacity(ctx: LintContext, tp: TpuPod, fits: list[RecipeSlice]) -> Iterator[Problem]:
    """Spot and reservation selectors of a pod against the capacity of the recipe slices
    it fits (facts ``capacity.spot``, ``capacity.reservationName``)."""
    spot_key = fact("capacity", "spot")["key"]
    spot = _selector(tp.template, spot_key)
    if spot is not None and str(spot[0]).lower() == "true":
        yield from _wrong_spot(ctx, tp, fits, spot)
    else:
        yield from _missing_spot(ctx, tp, fits, spot_key)
    yield from _wrong_reservation(ctx, tp, fits)


def _check_pool_labels(ctx: LintContext, tp: TpuPod, slices: list[RecipeSlice]
                       ) -> Iterator[Problem]:
    """On gke-standard the tool creates the node pools: a pod that selects a pool by name or by
    the tool's slice label must name one of R's, of the pod's own slice shape."""
    from mldiag_provision.plan.project import SLICE_LABEL

    if ctx.options.recipe.spec.orchestrator.type != "gke-standard":  # type: ignore[attr-defined]
        return
    t, res = tp.template, tp.template.resource
    by_key = {"cloud.google.com/gke-nodepool": {p: s for s in slices for p in s.pools},
              SLICE_LABEL: {s.name: s for s in slices}}
    for key, known in by_key.items():
        found = _selector(t, key)
        if found is None:
            continue
        value, path = found
        target = known.get(value) if isinstance(value, str) else None
        if target is None:
            yield ctx.problem(
                res, LABELS.id, path,
                f"{t.describe()} selects {key}: {value}, but the recipe's node pools are "
                f"{', '.join(sorted(known)) or 'none'}: no node carries that label",
                value=value, expected=", ".join(sorted(known)) or None,
                hint="select one of the recipe's pools, or drop the selector")
        elif tp.version is not None and (target.shape.version.key != tp.version.key
                                         or target.shape.topology != tp.topology):
            yield ctx.problem(
                res, LABELS.id, path,
                f"{t.describe()} asks for {tp.version.key} {tp.topology} but selects {key}: "
                f"{value}, the recipe's {target.describe()}: no node has both",
                value=value, hint="select the pool of the slice the pod's TPU selectors name")


def _no_such_shape(ctx: LintContext, tp: TpuPod, version: TpuVersion,
                   slices: list[RecipeSlice]) -> Iterator[Problem]:
    """No recipe slice has the pod's TPU version and topology."""
    t = tp.template
    have = ", ".join(s.describe() for s in slices) or "no TPU slices"
    yield ctx.problem(
        t.resource, SLICE.id, tp.topology_path,
        f"{t.describe()} asks for {version.key} {tp.topology}, but the recipe has "
        f"{have}: it never schedules on the recipe's capacity", value=tp.topology,
        expected=", ".join(f"{s.shape.version.key} {s.shape.topology}"
                           for s in slices) or None,
        hint="use one of the recipe's slice shapes, or add this slice to the recipe")


def _no_such_vm(ctx: LintContext, tp: TpuPod, s: RecipeSlice) -> Iterator[Problem]:
    """The pod's chips request is not the chips per VM of ``s``, the first recipe slice of
    its shape."""
    t, chips = tp.template, tp.chips
    yield ctx.problem(
        t.resource, SLICE.id, tp.containers[0].path,
        f"{t.describe()} requests google.com/tpu: {chips} per pod, but the recipe's "
        f"{s.describe()} has no VM with {chips} chips: the pods never schedule on the "
        "recipe's capacity", value=chips, expected=str(s.shape.chips_per_vm),
        hint=f"request {s.shape.chips_per_vm} chips per pod and run {s.shape.vms} pods"
             if s.shape.multi_host else f"request {s.shape.chips_per_vm} chips per pod")


def _slice_count(ctx: LintContext, tp: TpuPod, version: TpuVersion,
                 fits: list[RecipeSlice]) -> Iterator[Problem]:
    """A JobSet's replicated job asks for more slices (``replicas``) than the largest
    ``count`` of the recipe slices it fits."""
    t, res = tp.template, tp.template.resource
    if res.kind != "JobSet" or t.job_path is None:
        return
    rj = t.job_path[:-2]
    replicas = get_int(res.data, *rj, "replicas")
    most = max(s.count for s in fits)
    if replicas is not None and replicas > most:
        yield ctx.problem(
            res, SLICE_COUNT.id, (*rj, "replicas"),
            f"{replicas} slices of {version.key} {tp.topology} requested, but the "
            f"recipe provides {most}: the other replicas stay Pending", value=replicas,
            expected=f"at most {most}",
            hint=f"set replicas: {most}, or raise count on the recipe's slice")


def _check_pod(ctx: LintContext, tp: TpuPod, version: TpuVersion,
               slices: list[RecipeSlice]) -> Iterator[Problem]:
    """One TPU pod against R's slices: node-pool labels; then the slices of its shape, of
    those the ones with its chips per VM (a pod without a chips request fits all of them),
    and the capacity and slice count of those it fits. A shape or VM no slice has ends the
    pod's checks."""
    yield from _check_pool_labels(ctx, tp, slices)
    same = [s for s in slices if s.shape.version.key == version.key
            and s.shape.topology == tp.topology]
    if not same:
        yield from _no_such_shape(ctx, tp, version, slices)
        return
    chips = tp.chips
    fits = [s for s in same if chips is None or s.shape.chips_per_vm == chips]
    if not fits and tp.containers:
        yield from _no_such_vm(ctx, tp, same[0])
        return
    yield from _check_capacity(ctx, tp, fits or same)
    yield from _slice_count(ctx, tp, version, fits or same)


def check_recipe(ctx: LintContext) -> Iterator[Problem]:
    """Each TPU pod against R's slices (only with ``--recipe``)."""
    slices = recipe_slices(ctx)
    if ctx.options.recipe is None:
        return
    for tp in tpu_pods(ctx):
        if tp.version is None or not isinstance(tp.topology, str):
            continue  # tpu-accelerator / tpu-selectors report it
        yield from _check_pod(ctx, tp, tp.version, slices)


CHECKS = (check_recipe,)
