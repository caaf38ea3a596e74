"""Recipe + catalog -> :class:`~mldiag_provision.plan.types.StackPlan`: the builder.

Every decision the templates need, as plain data (the types: :mod:`mldiag_provision.plan.types`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mldiag_provision.catalog.gpu import GpuShape
from mldiag_provision.catalog.tpu import Catalog, SliceShape
from mldiag_provision.plan.project import plan_project

# The plan's types, re-exported for callers written before they had a module of their own;
# new code imports them from mldiag_provision.plan.types.
from mldiag_provision.plan.types import (  # noqa: F401
    CLUSTER_OMIT_WHEN_DEFAULT,
    DEFAULT_ENGINE,
    NODE_POOL_OMIT_WHEN_DEFAULT,
    STACK_OMIT_WHEN_DEFAULT,
    WORKLOAD_OMIT_WHEN_DEFAULT,
    BucketGrantPlan,
    QueuedPlan,
    SlicePlan,
    StackPlan,
    VolumePlan,
    WorkloadPlan,
)

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import Recipe


def build_plan(recipe: Recipe, shapes: dict[int, SliceShape | GpuShape | None],
               catalog: Catalog, previous: Mapping[str, Any] | None = None) -> StackPlan:
    """Decide the stack: the shared project plan (:func:`~.project.plan_project`) plus the
    part of the recipe's orchestrator unit (:mod:`mldiag_provision.orchestrators`). Call only
    after preflight reported no errors.

    Args:
      shapes: resolved slice shapes by slice index, from preflight (none may be ``None``).
      previous: the work directory's previous ``plan.json``
        (:func:`~.previous.previous_plan`): an existing stack keeps the names it has
        (:func:`~.previous.keep_name`); ``None`` (the default): a new stack.
    Raises:
      ValueError: a slice was left unresolved (preflight was skipped).
      UnknownOrchestratorError: no unit has the recipe's orchestrator type.
      ImportError, AttributeError: the unit's ``plan`` names no function (a bug in the unit).
    """
    from mldiag_provision import orchestrators

    unit = orchestrators.get(recipe.spec.orchestrator.type)
    project = plan_project(recipe, shapes, catalog, unit, previous)
    # the unit names its planner ("module:function"), imported on first use
    module, _, function = unit.plan.partition(":")
    builder = getattr(importlib.import_module(module), function)
    plan: StackPlan = builder(unit, project, recipe, catalog)
    return plan
