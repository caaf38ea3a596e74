"""The pydantic-free recipe validator agrees with the pydantic models it is generated from.

``recipe.validator`` validates with ``schemas/recipe.core.json`` (fast start-up); the models
in ``recipe.model`` are the source of truth. Same input -> same errors (type and location),
or the same data.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic import ValidationError as ModelError

from mldiag_provision.recipe import validator
from mldiag_provision.recipe.model import Recipe
from recipe_mutation import random_place

RECIPES = sorted((Path(__file__).resolve().parents[2] / "recipes").glob("*.yaml"))


def _plain(obj: object) -> object:
    if isinstance(obj, BaseModel):
        return {k: _plain(getattr(obj, k)) for k in type(obj).model_fields}
    if isinstance(obj, validator.RecipeObject):
        return {k: _plain(v) for k, v in vars(obj).items() if not k.startswith("__")}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj


def _outcome(fn, data: object) -> tuple[str, object]:
    try:
        return "ok", _plain(fn(copy.deepcopy(data)))
    except (ModelError, validator.ValidationError) as exc:
        return "error", sorted((e["type"], tuple(map(str, e["loc"]))) for e in exc.errors())


def _same(data: object) -> None:
    assert _outcome(Recipe.model_validate, data) == _outcome(validator.validate, data)


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_examples_validate_to_the_same_data(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    kind, _ = _outcome(validator.validate, data)
    assert kind == "ok"
    _same(data)


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 100), st.floats(allow_nan=False),
                    st.sampled_from(["", "x", "2x4", "v5e", "gke-autopilot", "spot", "4"]))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mutated_examples_give_the_same_errors(data: st.DataObject) -> None:
    base = yaml.safe_load(data.draw(st.sampled_from(RECIPES)).read_text(encoding="utf-8"))
    # replace one value somewhere in the recipe with an arbitrary scalar, or add a key
    node, path, target = random_place(data, base)
    if path and data.draw(st.booleans()):
        target[path[-1]] = data.draw(SCALARS)
    elif isinstance(node, dict):
        node[data.draw(st.sampled_from(["extra", "toplogy", "chipsPerVm"]))] = data.draw(SCALARS)
    _same(base)


@pytest.mark.parametrize("loc", [("spec", "kueue"), ("spec", "slurm"), ("spec", "diagnostics"),
                                 ("spec", "engine")])
def test_defaults_are_the_models_defaults(loc: tuple[str, ...]) -> None:
    model: type[BaseModel] = Recipe
    for part in loc:  # the field's model class, through Optional[...]
        field = next(f for name, f in model.model_fields.items()
                     if (f.validation_alias or name) == part)
        model = next(t for t in (field.annotation, *getattr(field.annotation, "__args__", ()))
                     if isinstance(t, type) and issubclass(t, BaseModel))
    assert _plain(validator.defaults(loc)) == _plain(model())
    assert validator.defaults(loc) is validator.defaults(loc)  # built once


def test_defaults_of_a_field_that_is_not_a_model() -> None:
    with pytest.raises(KeyError, match=r"spec\.nope"):
        validator.defaults(("spec", "nope"))
    with pytest.raises(KeyError, match="not a model"):
        validator.defaults(("spec", "project"))
