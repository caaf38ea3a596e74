"""The StackPlan is typed and immutable all the way down: frozen dataclasses, tuples, and
mappings of plain values (no lists, no untyped dicts of parts); ``plan.json`` is its fields."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import pytest

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.plan.types import (
    CLUSTER_OMIT_WHEN_DEFAULT,
    WORKLOAD_OMIT_WHEN_DEFAULT,
    StackPlan,
)
from mldiag_provision.render.stack import render_stack
from stack_support import RECIPES

CATALOG = load_catalog()


def _plan(recipe: object) -> StackPlan:
    res = check_file(str(recipe), CATALOG)
    assert res.parsed.recipe is not None
    return build_plan(res.parsed.recipe, res.shapes, CATALOG)


def _walk(value: object, path: str) -> list[str]:
    """Paths of everything in the plan that is mutable or an untyped container of parts."""
    bad: list[str] = []
    if dataclasses.is_dataclass(value):
        if not type(value).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            bad.append(f"{path}: {type(value).__name__} is not frozen")
        for f in dataclasses.fields(value):
            bad += _walk(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, tuple):
        for i, v in enumerate(value):
            bad += _walk(v, f"{path}[{i}]")
    elif isinstance(value, Mapping):
        bad += [f"{path}[{k!r}]: {type(v).__name__} in a mapping" for k, v in value.items()
                if not isinstance(v, str | int | float | bool | type(None))]
    elif isinstance(value, list | set):
        bad.append(f"{path}: a {type(value).__name__}")
    return bad


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_plan_is_frozen_dataclasses_and_tuples(recipe: object) -> None:
    plan = _plan(recipe)
    assert _walk(plan, "plan") == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.cluster.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_plan_json_is_the_dataclass_fields(recipe: object) -> None:
    plan = _plan(recipe)
    written = json.loads(render_stack(plan)[".mldiag/plan.json"])
    assert written == json.loads(json.dumps(plan.to_dict()))
    # fields added later are left out while at their default (plan/stack.py), so that stacks
    # rendered before them keep their bytes
    omitted = {k for k, default in CLUSTER_OMIT_WHEN_DEFAULT.items()
               if getattr(plan.cluster, k, None) == default}
    assert set(written["cluster"]) == {f.name for f in dataclasses.fields(plan.cluster)} - omitted
    for i, w in enumerate(plan.workloads):
        absent = {f.name for f in dataclasses.fields(w)} - set(written["workloads"][i])
        assert absent <= set(WORKLOAD_OMIT_WHEN_DEFAULT), absent
    if plan.agents is not None:
        assert written["agents"]["strategy"] == plan.agents.strategy
        assert set(written["agents"]["charts"]) == {
            "cert_manager", "injection_webhook", "connection_operator", "diagon"}


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_plan_asdict_is_dataclasses_asdict(recipe: object) -> None:
    """plan.stack's own asdict (issue 16) gives exactly dataclasses.asdict's data: the same
    values, types, key order and no shared mutable parts."""
    from mldiag_provision.plan.types import _asdict

    plan = _plan(recipe)
    ours, theirs = _asdict(plan), dataclasses.asdict(plan)
    assert ours == theirs
    assert repr(ours) == repr(theirs)  # types and order too (tuples stay tuples)
    assert json.dumps(ours) == json.dumps(theirs)
