"""Preflight: every rule over a parsed recipe, all problems at once.

Importing this package registers the rules of :mod:`.tpu_rules` and :mod:`.stack_rules`.
"""

from __future__ import annotations

from mldiag_provision.catalog.tpu import Catalog, SliceShape
from mldiag_provision.errors import Problem
from mldiag_provision.preflight import stack_rules, tpu_rules  # noqa: F401  (registers rules)
from mldiag_provision.preflight.context import RULES, Context
from mldiag_provision.recipe.model import Recipe
from mldiag_provision.recipe.sourcemap import SourceMap


def run_preflight(recipe: Recipe, catalog: Catalog, sourcemap: SourceMap,
                  ) -> tuple[list[Problem], dict[int, SliceShape | None]]:
    """Run every rule. Returns (problems sorted by position, resolved slice shapes)."""
    ctx = Context(recipe=recipe, catalog=catalog, sourcemap=sourcemap)
    problems: list[Problem] = []
    # tpu-slice-shape fills ctx.shapes, which later rules (gke-version among them) read:
    # run it first, whatever order the rule modules were imported in (stable sort).
    for _rule_id, fn in sorted(RULES, key=lambda r: r[0] != "tpu-slice-shape"):
        problems.extend(fn(ctx))
    problems.sort(key=lambda p: (p.line, p.column, p.rule))
    return problems, ctx.shapes
