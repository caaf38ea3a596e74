"""The Python path of the recipe validator (``recipe.validator._exact``, issue 32) builds
exactly what pydantic-core builds, or leaves the input to pydantic-core.

Compared in full: the classes, every attribute in order (``__pydantic_fields_set__``,
``__pydantic_extra__``, ``__pydantic_private__`` included) and every value with its type.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mldiag_provision.recipe import validator
from recipe_mutation import random_place

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").glob("*.yaml"))


def _full(obj: object) -> object:
    """Everything observable of a validated value, order included."""
    if isinstance(obj, validator.RecipeObject):
        return (type(obj).__name__, [(k, _full(v)) for k, v in vars(obj).items()])
    if isinstance(obj, list):
        return ["list", *(_full(v) for v in obj)]
    if isinstance(obj, dict):
        return ["dict", *((_full(k), _full(v)) for k, v in obj.items())]
    if isinstance(obj, set):
        return ("set", sorted(obj))
    return (type(obj).__name__, obj)


def _compiled(data: object) -> object:
    try:
        return _full(validator._validator().validate_python(copy.deepcopy(data)))
    except validator.ValidationError:
        return "error"


def _python(data: object) -> object:
    found = validator._exact(validator._schema(), copy.deepcopy(data))
    return None if found is validator._NO else _full(found)


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_every_bundled_recipe_takes_the_python_path_to_the_same_object(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    mine = _python(data)
    assert mine is not None, "a bundled recipe should need pydantic-core on a cold start"
    assert mine == _compiled(data)


@pytest.mark.parametrize(("value", "python_path"), [
    (10, True), (0, True), (-5, True), (10**30, True),  # ints become text in Resources
    (True, False), (1.5, False), ("10", True),
])
def test_numbers_to_text_where_the_model_coerces(value: object, python_path: bool) -> None:
    data = yaml.safe_load((ROOT / "recipes/tpu-v4-2x2x4-autopilot.yaml").read_text())
    resources = data["spec"]["workloads"][0]["resources"]
    resources["cpu"] = value
    mine = _python(data)
    assert (mine is not None) is python_path
    if mine is not None:
        assert mine == _compiled(data)


@pytest.mark.parametrize("value", [
    "tpu-v4\n",  # Python's $ matches before a final newline, Rust's does not
    "tpü", "", "x" * 64, "Upper",
])
def test_patterns_the_engines_could_read_apart_go_to_pydantic_core(value: str) -> None:
    data = yaml.safe_load((ROOT / "recipes/tpu-v4-2x2x4-autopilot.yaml").read_text())
    data["metadata"]["name"] = value
    assert _python(data) is None
    assert _compiled(data) == "error"


def test_kueue_defaults_are_the_compiled_validators() -> None:
    from pydantic_core import SchemaValidator

    found = validator.defaults.__wrapped__(("spec", "kueue"))
    schema = validator._schema()["schema"]["fields"]["spec"]["schema"]["schema"]["fields"]
    kueue = schema["kueue"]["schema"]
    while kueue["type"] != "model":
        kueue = kueue["schema"]
    compiled = SchemaValidator(validator._inject(kueue, validator._CLASSES))
    assert _full(found) == _full(compiled.validate_python({}))


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**20),
                    st.floats(allow_nan=True), st.text(max_size=8),
                    st.sampled_from(["", "x", "2x4", "v5e", "gke-autopilot", "spot", "4",
                                     "us-central1", "a\n", "é"]),
                    st.lists(st.sampled_from(["a", "b"]), max_size=2),
                    st.dictionaries(st.sampled_from(["a", "b"]), st.just("x"), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_recipes_agree_or_go_to_pydantic_core(data: st.DataObject) -> None:
    base = yaml.safe_load(data.draw(st.sampled_from(RECIPES)).read_text(encoding="utf-8"))
    node, path, target = random_place(data, base)
    if path and data.draw(st.booleans()):
        target[path[-1]] = data.draw(SCALARS)
    elif path and data.draw(st.booleans()):
        del target[path[-1]]
    elif isinstance(node, dict):
        node[data.draw(st.sampled_from(["extra", "chips_per_vm", "chipsPerVm", "api_version",
                                        "labels"]))] = data.draw(SCALARS)
    mine = _python(base)
    if mine is not None:
        assert mine == _compiled(base)


def test_validate_of_many_valid_recipes_never_builds_pydantic_cores_validator() -> None:
    """A batch of valid recipes stays on the Python path (as fast per recipe, without
    importing pydantic-core); a recipe it leaves over gets pydantic-core's error."""
    validator._validator.cache_clear()
    try:
        datas = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in RECIPES]
        found = [validator.validate(copy.deepcopy(data)) for data in datas * 3]
        assert validator._validator.cache_info().currsize == 0
        assert [_full(f) for f in found] == [_compiled(data) for data in datas * 3]
        validator._validator.cache_clear()
        bad = yaml.safe_load(RECIPES[0].read_text(encoding="utf-8"))
        bad["metadata"]["name"] = "Upper"
        with pytest.raises(validator.ValidationError):
            validator.validate(bad)
        assert validator._validator.cache_info().currsize == 1
    finally:
        validator._validator.cache_clear()
