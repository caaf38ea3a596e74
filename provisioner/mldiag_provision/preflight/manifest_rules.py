"""Preflight's workload rules are lint's: render each TPU workload's manifests the way the plan
would, run lint's TPU checks (``lint/tpu_rules.py``) over them, and point every problem at the
recipe line it comes from.

So a workload in a recipe and the manifest rendered from it get the same verdict, rule id and
severity (``tests/rulebook/test_recipe_lint_agreement.py``): CPU and memory against the TPU
VM (``tpu-resources``), hand-set TPU worker variables (``tpu-worker-env``), chips, selectors,
Job shape and Service wiring. Preflight keeps only what is about the recipe itself (slice
shapes, versions, capacity, names, Slurm, ``chipsPerPod`` as written: the plan renders the
slice's chips per VM, so that field is checked on the recipe, ``workload-chips``).

The manifests come from the plan's own functions (:func:`~mldiag_provision.plan.project.
plan_project`, :func:`~mldiag_provision.plan.kubernetes.workload_plan`, :func:`~mldiag_provision.
render.k8s.workload`) on a partial plan (the workload's slice and the diagnostics settings),
so preflight runs before the whole plan exists and whatever else in the recipe is wrong.
:func:`recipe_path` maps a manifest field path to the recipe field that produced it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from mldiag_provision.catalog.store import Fact
from mldiag_provision.catalog.tpu import SliceShape
from mldiag_provision.cluster import from_plan
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint import cluster_rules as lint_cluster
from mldiag_provision.lint import tpu_rules as lint_tpu
from mldiag_provision.lint.context import LintContext, LintOptions
from mldiag_provision.lint.loading import Resource, get
from mldiag_provision.orchestrators import Capability, find
from mldiag_provision.plan.kubernetes import diagnostics_plan, queued_plan, workload_plan
from mldiag_provision.plan.parts import DiagnosticsPlan
from mldiag_provision.plan.project import (
    TPU_ACCELERATOR_LABEL,
    TPU_TOPOLOGY_LABEL,
    plan_project,
)
from mldiag_provision.plan.types import ProjectPlan, SlicePlan
from mldiag_provision.preflight.context import Context, runs
from mldiag_provision.recipe.sourcemap import Path, SourceMap
from mldiag_provision.render import k8s

# The pod template and the Job spec inside each rendered kind (render/k8s.py).
_POD = {"Job": ("spec", "template", "spec"),
        "JobSet": ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec")}
_JOB = {"Job": ("spec",), "JobSet": ("spec", "replicatedJobs", 0, "template", "spec")}


@dataclass(frozen=True)
class _PartialPlan:
    """What :func:`mldiag_provision.render.k8s.workload` reads of a plan."""

    blueprint: str
    diagnostics: DiagnosticsPlan
    slices: tuple[SlicePlan, ...]


@dataclass(frozen=True)
class Origin:
    """Where a rendered object comes from: workload and slice index, and the workload."""

    workload: int
    slice: int
    spec: Any  # the recipe's workload


def recipe_path(origin: Origin, res: Resource, path: Path) -> Path:
    """The recipe field a manifest field of ``res`` was rendered from.

    E.g. a Job's ``spec.template.spec.containers[0].resources.requests.memory`` ->
    ``spec.workloads[i].resources.memory``; ``nodeSelector[gke-tpu-topology]`` and
    ``completions`` -> ``spec.slices[j].topology``; a JobSet's ``replicas`` ->
    ``spec.slices[j].count``; anything else -> the workload (``spec.workloads[i]``).
    """
    w_path: Path = ("spec", "workloads", origin.workload)
    s_path: Path = ("spec", "slices", origin.slice)
    kind = res.kind
    if kind not in _POD:  # the headless Service: named after the workload
        return (*w_path, "name")
    pod, job = _POD[kind], _JOB[kind]
    if path[:len(pod)] == pod:
        return _pod_field(origin, res, path[len(pod):])
    if path[:len(job)] == job and path[len(job):len(job) + 1] in (
            ("completions",), ("parallelism",), ("completionMode",)):
        return (*s_path, "topology")
    if kind == "JobSet" and path[:4] == ("spec", "replicatedJobs", 0, "replicas"):
        return (*s_path, "count")
    if path[:2] == ("metadata", "name"):
        return (*w_path, "name")
    return w_path


def _pod_field(origin: Origin, res: Resource, rest: Path) -> Path:
    """The recipe field of the pod template's field ``rest`` (the path below the pod spec):
    a container's field, a node selector (the slice's ``tpu``, ``topology`` or
    ``capacity``), ``hostNetwork`` and ``subdomain``; else the workload."""
    w_path: Path = ("spec", "workloads", origin.workload)
    s_path: Path = ("spec", "slices", origin.slice)
    head = rest[:1]
    if head == ("containers",) and len(rest) >= 3:
        return _container_field(origin, res, rest)
    if head == ("nodeSelector",) and len(rest) >= 2:
        if rest[1] == TPU_ACCELERATOR_LABEL:
            return (*s_path, "tpu")
        if rest[1] == TPU_TOPOLOGY_LABEL:
            return (*s_path, "topology")
        return (*s_path, "capacity")
    if head == ("hostNetwork",):
        return (*w_path, "hostNetwork")
    if head == ("subdomain",):
        return (*w_path, "name")
    return w_path


def _container_field(origin: Origin, res: Resource, rest: Path) -> Path:
    """The recipe field of a container's field (``rest``: ``containers``, the index, then
    the field): resources (CPU, memory, ephemeral storage; chips or GPUs: ``chipsPerPod`` /
    ``gpusPerPod`` as written, else the slice's ``topology``), env (by the variable's name
    when the workload sets it), image, command and args; else the workload."""
    w_path: Path = ("spec", "workloads", origin.workload)
    w = origin.spec
    sub = rest[2:]
    if sub[:1] == ("resources",) and len(sub) >= 3:
        if sub[2] in ("cpu", "memory"):
            return (*w_path, "resources", str(sub[2]))
        if sub[2] == "ephemeral-storage":
            return (*w_path, "resources", "ephemeralStorage")
        if w.chips_per_pod is not None:
            return (*w_path, "chipsPerPod")
        if w.gpus_per_pod is not None:
            return (*w_path, "gpusPerPod")
        return ("spec", "slices", origin.slice, "topology")
    if sub[:1] == ("env",):
        name = get(res.data, *_POD[res.kind], *rest[:2], "env", sub[1], "name") \
            if len(sub) >= 2 else None
        if isinstance(name, str) and name in w.env:
            return (*w_path, "env", name)
        return (*w_path, "env") if w.env else w_path
    if sub[:1] in (("image",), ("command",), ("args",)):
        return (*w_path, str(sub[0]))
    return w_path


# A problem of the manifest rules with what places it in a recipe: (the problem, its recipe
# field path, whether its value's position is preferred to its key's).
_Placed = tuple[Problem, Path, bool]

@dataclass
class RecipeLintContext(LintContext):
    """Lint's context over rendered objects whose problems land on the recipe."""

    preflight: Context | None = None
    origins: dict[int, Origin] = field(default_factory=dict)
    located: dict[int, _Placed] | None = None
    """When set: each problem made here by id -> (the problem, its recipe path, whether its
    value's position is preferred), what :func:`_by_shape` needs to place it again."""

    def problem(self, res: Resource, rule: str, path: Path, message: str, *,
                value: object = None, expected: str | None = None, hint: str | None = None,
                severity: Severity | None = None, source: str | None = None,
                facts: Iterable[Fact | None] = (), declared: bool = True) -> Problem:
        assert self.preflight is not None
        if isinstance(value, (dict, list)):
            value = None
        where = recipe_path(self.origins[id(res)], res, path)
        found = self.preflight.problem(
            rule, where, message, value=value, expected=expected, hint=hint,
            severity=severity, source=source, facts=facts, prefer_value=value is not None,
            declared=declared)
        if self.located is not None:
            self.located[id(found)] = (found, where, value is not None)
        return found


# Findings of the manifest rules by workload shape (issue 32), while :func:`shared_by_shape`
# is active: (rule function, shape key) -> (the catalog they were found with, the findings).
_SHAPES: dict[tuple[str, str | bytes], tuple[object, tuple[_Placed, ...]]] | None = None
_MAX_SHAPES = 4096


@contextmanager
def shared_by_shape() -> Iterator[None]:
    """Within this block, recipes with the same workload shape (:func:`shape_key`) share the
    manifest rules' findings: the manifests are rendered and linted for the first of them,
    and every other gets the same problems placed at its own file, line and column. Used by
    ``validate`` for its batch (issue 32: rendering and linting each recipe's manifests was
    27 % of checking 1,000 recipes); outside it (a library call, a test that changes facts
    between two checks) every recipe is worked out on its own."""
    global _SHAPES
    saved, _SHAPES = _SHAPES, {}
    try:
        yield
    finally:
        _SHAPES = saved


def shape_key(ctx: Context) -> str | bytes | None:
    """Everything the manifest rules' findings depend on, as one string (:func:`_written`);
    None when it cannot be told (no YAML data passed to preflight).

    The rules read the recipe (validated from ``ctx.data``: the same data, the same recipe),
    the slice shapes (resolved from the recipe and the catalog: the catalog is compared
    apart) and the facts; positions are not part of a finding's substance, they are looked
    up again in each recipe. The key is the data less ``metadata.name``, which reaches the
    rendered objects only in the value of :data:`~mldiag_provision.render.k8s.PROFILES_ENV`
    (the default profiles bucket; tests/unit/test_findings_by_shape.py keeps it so). Of the
    checks, only the wiring ones read every env value (lint's TPU checks and the cluster
    check read env values by the names in ``tpu.workerEnv`` and the Megascale variables),
    and wiring reads that one only as the value of a ``$(...)`` reference to it in another
    variable (it is no coordinator variable, and a ``gs://`` URL of a DNS-label bucket holds
    no reference itself): a recipe whose data names the variable and whose workloads set
    ``env`` keeps its name in the key.
    """
    found: str | bytes | None = ctx.memo.get("shape")
    if found is not None or "shape" in ctx.memo:
        return found
    data = ctx.data
    meta = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(data, dict):
        found = None
    elif not isinstance(meta, dict):
        found = _written(data)
    else:
        # (a DNS-label name cannot hold the variable's name: it is looked for in the rest)
        found = _written({**data, "metadata": {k: v for k, v in meta.items() if k != "name"}})
        env = k8s.PROFILES_ENV
        named = env.encode() in found if isinstance(found, bytes) else env in found
        if named and any(w.env for w in ctx.recipe.spec.workloads):
            found = _written(data)
    ctx.memo["shape"] = found
    return found


def _written(data: Any) -> str | bytes:
    """``data`` (YAML data) written out whole, so that equal keys mean equal data: its
    :mod:`marshal` bytes (format 2: no back-references, which would depend on how the
    objects are shared), ~4x faster than ``repr`` (issue 32); ``repr`` for data marshal
    cannot write (a YAML timestamp, a ``str`` subclass, a cycle). Either way a string
    value's text is in it whole (UTF-8 in the bytes), which :func:`shape_key` looks in."""
    import marshal

    try:
        return marshal.dumps(data, 2)
    except ValueError:
        return repr(data)


def _by_shape(ctx: Context, name: str,
              check: Callable[[Context, dict[int, _Placed] | None], Iterator[Problem]],
              ) -> Iterator[Problem]:
    """``check(ctx, located)``'s problems, reused from an earlier recipe of the same shape
    inside :func:`shared_by_shape`, placed at this recipe's positions (its file, and the
    line and column of each problem's recipe field here)."""
    shapes = _SHAPES
    key = shape_key(ctx) if shapes is not None else None
    if shapes is None or key is None:
        return check(ctx, None)
    found = shapes.get((name, key))
    if found is not None and found[0] is ctx.catalog:
        sm = ctx.sourcemap
        out = []
        for problem, path, prefer_value in found[1]:
            line, column = sm.locate(path, prefer_value=prefer_value)
            out.append(dataclasses.replace(problem, file=sm.file, line=line, column=column))
        return iter(out)
    located: dict[int, _Placed] = {}
    problems = list(check(ctx, located))
    placed = [located.get(id(p)) for p in problems]
    if len(shapes) < _MAX_SHAPES and all(
            p is not None and p[0] is q for p, q in zip(placed, problems, strict=True)):
        shapes[name, key] = (ctx.catalog, tuple(p for p in placed if p is not None))
    return iter(problems)


def rendered_workloads(ctx: Context) -> tuple[list[Resource], dict[int, Origin]]:
    """The objects the plan renders for each TPU workload, as lint :class:`Resource` objects
    (positions: the recipe's), with their origins. Needs every slice resolved (the project
    plan does); a recipe whose slices fail preflight gets its slice errors first. Worked out
    once per recipe (two rules read it)."""
    found = ctx.memo.get("rendered")
    if found is None:
        found = ctx.memo["rendered"] = _rendered_workloads(ctx)
    return found


def _rendered_workloads(ctx: Context) -> tuple[list[Resource], dict[int, Origin]]:
    recipe = ctx.recipe
    spec = recipe.spec
    unit = find(spec.orchestrator.type)
    shapes = {**ctx.shapes, **ctx.gpu_shapes}
    if unit is None or unit.has(Capability.MANAGED_SLURM):
        return [], {}
    if any(shapes.get(i) is None for i in range(len(spec.slices))):
        return [], {}
    if len({s.name for s in spec.slices}) < len(spec.slices):
        return [], {}  # tpu-slice-names reports it; a workload's slice is ambiguous until then
    # (workload index, its slice's index) of the workloads on a TPU slice: lint's checks
    # are TPU checks, so a recipe without one (a GPU recipe) needs no plan (issue 16)
    on_tpu = [(i, j) for i, w in enumerate(spec.workloads)
              if (j := ctx.slice_index(w.slice)) is not None
              and isinstance(shapes.get(j), SliceShape)]
    if not on_tpu:
        return [], {}
    project = _project(ctx)
    diagnostics = diagnostics_plan(project, recipe, ctx.catalog, "none", True)
    partial = _PartialPlan(blueprint=project.blueprint, diagnostics=diagnostics,
                           slices=project.slices)
    empty = SourceMap(file=ctx.sourcemap.file)
    resources: list[Resource] = []
    origins: dict[int, Origin] = {}
    for i, j in on_tpu:
        w = spec.workloads[i]
        for obj in k8s.workload(partial, workload_plan(recipe, w, project.slices[j])):
            res = Resource(ctx.sourcemap.file, empty, obj)
            resources.append(res)
            origins[id(res)] = Origin(i, j, w)
    return resources, origins


def _project(ctx: Context) -> ProjectPlan:
    """The recipe's project plan, worked out once per preflight (its slices feed both the
    TPU manifests and the cluster model)."""
    found = ctx.memo.get("project")
    if found is None:
        unit = find(ctx.recipe.spec.orchestrator.type)
        assert unit is not None
        found = ctx.memo["project"] = plan_project(
            ctx.recipe, {**ctx.shapes, **ctx.gpu_shapes}, ctx.catalog, unit)
    return found


@runs(*(c.id for c in lint_tpu.RULES))
def workload_manifests(ctx: Context) -> Iterator[Problem]:
    """Lint's TPU checks over the manifests the plan would render for each workload."""
    return _by_shape(ctx, "workload_manifests", _workload_manifests)


def _workload_manifests(ctx: Context, located: dict[int, _Placed] | None,
                        ) -> Iterator[Problem]:
    resources, origins = rendered_workloads(ctx)
    if not resources:
        return
    lctx = RecipeLintContext(resources, ctx.catalog,
                             LintOptions(kubernetes_version="",
                                         autopilot=ctx.recipe.spec.orchestrator.type
                                         == "gke-autopilot"),
                             preflight=ctx, origins=origins, located=located)
    for check in lint_tpu.CHECKS:
        yield from check(lctx)


def _queued_workloads(ctx: Context, done: set[int]) -> tuple[list[Resource], dict[int, Origin]]:
    """The objects the plan renders for each workload on a queued slice (TPU or GPU) but the
    workloads in ``done`` (already rendered), as lint resources with their origins; the
    cluster model judges whether Kueue admits them."""
    spec = ctx.recipe.spec
    if not any(s.capacity.type == "queued" for s in spec.slices):
        return [], {}
    unit = find(spec.orchestrator.type)
    shapes = {**ctx.shapes, **ctx.gpu_shapes}
    if unit is None or unit.has(Capability.MANAGED_SLURM) or any(
            shapes.get(i) is None for i in range(len(spec.slices))) or len(
            {s.name for s in spec.slices}) < len(spec.slices):
        return [], {}
    project = _project(ctx)
    diagnostics = diagnostics_plan(project, ctx.recipe, ctx.catalog, "none", True)
    partial = _PartialPlan(blueprint=project.blueprint, diagnostics=diagnostics,
                           slices=project.slices)
    empty = SourceMap(file=ctx.sourcemap.file)
    resources: list[Resource] = []
    origins: dict[int, Origin] = {}
    for i, w in enumerate(spec.workloads):
        j = ctx.slice_index(w.slice)
        if i in done or j is None or spec.slices[j].capacity.type != "queued":
            continue
        for obj in k8s.workload(partial, workload_plan(ctx.recipe, w, project.slices[j])):
            res = Resource(ctx.sourcemap.file, empty, obj)
            resources.append(res)
            origins[id(res)] = Origin(i, j, w)
    return resources, origins


def _autopilot_gpu_workloads(ctx: Context, done: set[int],
                             ) -> tuple[list[Resource], dict[int, Origin]]:
    """GKE Autopilot: the objects the plan renders for each workload on a GPU slice that sets
    ``resources.cpu`` or ``memory`` and whose accelerator has a recorded class range
    (``gke.yaml`` ``autopilotClasses.gpu``), but the workloads in ``done``; the cluster model
    judges their requests against the class's range (``autopilot-resource-range``). Other GPU
    recipes render nothing here, as before (issue 16)."""
    spec = ctx.recipe.spec
    if spec.orchestrator.type != "gke-autopilot" or not ctx.gpu_shapes:
        return [], {}
    shapes = {**ctx.shapes, **ctx.gpu_shapes}
    if any(shapes.get(i) is None for i in range(len(spec.slices))) or len(
            {s.name for s in spec.slices}) < len(spec.slices):
        return [], {}
    picked = [(i, j) for i, w in enumerate(spec.workloads)
              if i not in done and (j := ctx.slice_index(w.slice)) is not None
              and ctx.gpu_shapes.get(j) is not None
              and (w.resources.cpu or w.resources.memory)]
    if not picked:
        return [], {}
    from mldiag_provision.cluster.autopilot import ranged_accelerators

    ranged = ranged_accelerators()
    project = _project(ctx)
    picked = [(i, j) for i, j in picked if project.slices[j].accelerator in ranged]
    if not picked:
        return [], {}
    diagnostics = diagnostics_plan(project, ctx.recipe, ctx.catalog, "none", True)
    partial = _PartialPlan(blueprint=project.blueprint, diagnostics=diagnostics,
                           slices=project.slices)
    empty = SourceMap(file=ctx.sourcemap.file)
    resources: list[Resource] = []
    origins: dict[int, Origin] = {}
    for i, j in picked:
        w = spec.workloads[i]
        for obj in k8s.workload(partial, workload_plan(ctx.recipe, w, project.slices[j])):
            res = Resource(ctx.sourcemap.file, empty, obj)
            resources.append(res)
            origins[id(res)] = Origin(i, j, w)
    return resources, origins


@runs(lint_cluster.KUEUE.id, lint_cluster.ALLOCATABLE.id)
def cluster_model(ctx: Context) -> Iterator[Problem]:
    """The cluster model's check over the manifests the plan renders, with the model of the
    plan's cluster (issue 25): admitted by Kueue, scheduled within allocatable, and wired
    (:mod:`mldiag_provision.cluster.wiring`: a coordinator address a recipe's ``env`` sets
    names a pod the rendered JobSet or Job creates; lint's ``wiring-*`` rules, imported
    here and only when a workload sets ``env``, so ``validate`` starts no slower)."""
    return _by_shape(ctx, "cluster_model", _cluster_model)


def _cluster_model(ctx: Context, located: dict[int, _Placed] | None) -> Iterator[Problem]:
    rendered, rendered_origins = rendered_workloads(ctx)
    resources, origins = list(rendered), dict(rendered_origins)
    done = {o.workload for o in origins.values()}
    queued, queued_origins = _queued_workloads(ctx, done)
    resources.extend(queued)
    origins.update(queued_origins)
    gpus, gpu_origins = _autopilot_gpu_workloads(
        ctx, done | {o.workload for o in queued_origins.values()})
    resources.extend(gpus)
    origins.update(gpu_origins)
    if not resources:
        return
    spec = ctx.recipe.spec
    project = _project(ctx)
    model = from_plan.build(
        from_plan.mode_of(spec.orchestrator.type),
        from_plan.slices_with_shapes(project.slices, {**ctx.shapes, **ctx.gpu_shapes}),
        queued_plan(ctx.recipe, ctx.catalog, list(project.slices)), spec.zone)
    lctx = RecipeLintContext(resources, ctx.catalog,
                             LintOptions(kubernetes_version="",
                                         autopilot=spec.orchestrator.type == "gke-autopilot"),
                             cluster=model, preflight=ctx, origins=origins,
                             located=located)
    yield from lint_cluster.check_cluster(lctx)
    if any(w.env for w in spec.workloads):
        # the renderer wires what it writes itself (tests/lint/test_coordinator_address.py,
        # the golden stacks); a workload's env is the one input that can miswire it, so a
        # recipe without one skips the step and its import (~3 ms)
        from mldiag_provision.lint import wiring_rules

        yield from wiring_rules.check_all(lctx)
