"""Preflight: every rule over a parsed recipe, all problems at once.

Importing this package registers the rules of every rule module below (:mod:`.tpu_rules`,
:mod:`.stack_rules`, :mod:`.place_rules`, ...) except those of one kind of recipe
(:data:`WHEN`): the managed-Slurm rules and the GPUDirect networking rules are imported by
:func:`run_preflight` for a recipe they can report on (issue 32: a TPU recipe's ``validate``
loads neither). Whatever was imported, the rules run in one order (:data:`ORDER`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.preflight import (  # noqa: F401  (importing registers the rules)
    cluster_rules,
    diagnostics_rules,
    format_rules,
    manifest_rules,
    name_rules,
    place_rules,
    policy_rules,
    queued_rules,
    stack_rules,
    tpu_rules,
    value_rules,
    workload_rules,
)
from mldiag_provision.preflight.context import RULES, Context, RuleFn
from mldiag_provision.recipe.sourcemap import SourceMap

if TYPE_CHECKING:
    from collections.abc import Callable

    from mldiag_provision.catalog.gpu import GpuShape
    from mldiag_provision.catalog.tpu import Catalog, SliceShape
    from mldiag_provision.recipe.model import Recipe

ORDER = ("cluster_rules", "diagnostics_rules", "format_rules", "gpunet_rules",
         "manifest_rules", "name_rules", "place_rules", "policy_rules", "stack_rules",
         "queued_rules", "slurm_rules", "tpu_rules", "value_rules", "workload_rules")
"""The rule modules in the order their rules run: the order in which importing all of them
at once registers them (``tests/unit/test_import_list.py`` keeps it so)."""


def _slurm_may_report(ctx: Context) -> bool:
    """Whether a rule of :mod:`.slurm_rules` can report on this recipe: a managed-Slurm
    orchestrator, or the two cases its rules report for other orchestrators (a
    ``spec.slurm`` that is ignored; a ``maxRunDuration`` on a slice that is not queued)."""
    from mldiag_provision.orchestrators import Capability

    return (ctx.has(Capability.MANAGED_SLURM) or ctx.sourcemap.has_key(("spec", "slurm"))
            or any(s.capacity.max_run_duration is not None and s.capacity.type != "queued"
                   for s in ctx.recipe.spec.slices))


def _gpunet_may_report(ctx: Context) -> bool:
    """Whether a rule of :mod:`.gpunet_rules` can report on this recipe: a GPU slice, or a
    TPU slice with a networking mode or range (``gpunet-mode``'s one TPU case)."""
    return any(s.gpu is not None or s.networking.mode not in ("auto", "none")
               or s.networking.cidr is not None for s in ctx.recipe.spec.slices)


WHEN: dict[str, Callable[[Context], bool]] = {"slurm_rules": _slurm_may_report,
                                               "gpunet_rules": _gpunet_may_report}
"""Rule modules imported only for a recipe they can report on: module -> that test."""


def run_preflight(recipe: Recipe, catalog: Catalog, sourcemap: SourceMap, *,
                  data: object = None,
                  ) -> tuple[list[Problem], dict[int, SliceShape | GpuShape | None]]:
    """Run every rule. Returns (problems sorted by position, resolved slice shapes by slice
    index: a TPU :class:`SliceShape` or a :class:`GpuShape`; None where it did not resolve).

    ``data``: the YAML data ``recipe`` was validated from, when the caller has it; inside
    :func:`~mldiag_provision.preflight.manifest_rules.shared_by_shape` the manifest rules
    reuse their findings for recipes whose data has the same workload shape."""
    ctx = Context(recipe=recipe, catalog=catalog, sourcemap=sourcemap, data=data)
    for module, needed in WHEN.items():
        if needed(ctx):
            import_rules(module)
    problems: list[Problem] = []
    for fn in _ordered(len(RULES)):
        problems.extend(fn(ctx))
    problems = _drop_consequences(problems)
    problems.sort(key=lambda p: (p.line, p.column, p.rule))
    return problems, {**ctx.shapes, **ctx.gpu_shapes}


# rules whose error says that the value at its field has the wrong form (format_rules.RULE)
# or names no such thing (place_rules: no such region, no such zone): the one report of
# that value
_VALUE_RULES = frozenset({"gcp-format", "gcp-region", "gcp-zone"})


def _drop_consequences(problems: list[Problem]) -> list[Problem]:
    """``problems`` less the findings of other rules at a field (or below it) whose value
    already has a :data:`_VALUE_RULES` error: ``machineType: four`` is "not a machine
    type", not also "does not carry NVIDIA H200" and "not offered by Slurm"; ``region:
    mars-north1`` is "not a region", not also "has no workload monitoring"."""
    bad = {p.path for p in problems
           if p.rule in _VALUE_RULES and p.severity is Severity.ERROR}
    if not bad:
        return problems
    return [p for p in problems if p.rule in _VALUE_RULES or not any(
        p.path == b or p.path.startswith((b + ".", b + "[")) for b in bad)]


def import_rules(module: str) -> None:
    """Import the rule module ``module`` of this package (registers its rules)."""
    import importlib

    importlib.import_module(f"{__name__}.{module}")


def import_all() -> None:
    """Import every rule module (:data:`WHEN`'s too): the whole rulebook of recipes."""
    for module in WHEN:
        import_rules(module)


@cache
def _ordered(_count: int) -> tuple[RuleFn, ...]:
    """The rule functions in the order they run (cached per number of registered rules).

    The *-slice-shape rules fill ``ctx.shapes`` / ``ctx.gpu_shapes``, which later rules
    (gke-version among them) read: they run first, whatever order the modules were imported
    in; the rest by their module's place in :data:`ORDER`, then in registration order."""
    rank = {f"{__name__}.{m}": i for i, m in enumerate(ORDER)}
    return tuple(fn for _i, (_rule_id, fn) in sorted(
        enumerate(RULES), key=lambda r: (not r[1][0].endswith("slice-shape"),
                                         rank.get(r[1][1].__module__, len(ORDER)), r[0])))
