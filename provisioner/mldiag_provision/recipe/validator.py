"""Validate recipe data against the committed core schema, without importing pydantic.

``schemas/recipe.core.json`` is generated from the pydantic models
(:func:`mldiag_provision.recipe.model.validator_schema`; a test keeps it fresh). The result
has the models' attribute names (``recipe.spec.slices[0].chips_per_vm``); mapping fields
(labels, env) stay dicts; model classes are plain attribute objects (:class:`RecipeObject`).

Two ways to the same answer (issue 32):

- :func:`_exact`, plain Python over the schema, for input that needs no coercion: every value
  already of its field's exact type (``str``, ``int``, ``bool``, ``float``, ``list``, ``dict``)
  and within its constraints, every key a field's alias. It builds the same objects
  pydantic-core would (the same attributes, in the same order, ``__pydantic_fields_set__``
  included; ``tests/unit/test_validator_fastpath.py``). Each schema node becomes one Python
  function on first use (:func:`_check`), so a recipe costs about what pydantic-core's
  validator costs; ``validate`` of valid recipes, one or a thousand, so never imports
  pydantic_core (~140 M instructions, ~18 ms of imports, of which ~12 ms compiling
  ``pydantic_core.core_schema``'s annotations, and ~20 M more to build its validator).
- ``pydantic_core.SchemaValidator`` for everything else: any input :func:`_exact` does not
  accept (an error, a coercion, a pattern on non-ASCII text) is validated again there, so
  errors are exactly pydantic-core's.

:data:`ValidationError` is pydantic-core's, imported on first use (module ``__getattr__``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_core import SchemaValidator, ValidationError

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schemas" / "recipe.core.json"

__all__ = ["SCHEMA_FILE", "ValidationError", "allowed_keys", "defaults", "validate"]

def __getattr__(name: str) -> Any:
    """``ValidationError``: pydantic-core's, imported on first use."""
    if name == "ValidationError":
        from pydantic_core import ValidationError

        return ValidationError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RecipeObject:
    """An attribute bag standing in for a frozen pydantic model."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("__"))
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and _public(self) == _public(other)

    __hash__ = None  # type: ignore[assignment]


def _public(obj: object) -> dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if not k.startswith("__")}


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


def _inject(node: object, classes: dict[str, type]) -> object:
    """``node`` with each ``{"$model": name}`` class placeholder replaced by the attribute-bag
    class of that name (made once per name in ``classes``), and each empty ``{}`` / ``[]``
    default made by ``dict`` / ``list`` again (the models' ``default_factory``): pydantic-core
    deep-copies a mutable default on every use (``copy.deepcopy``, ~20 per recipe), a factory
    just makes a new empty one; the same value either way."""
    if isinstance(node, dict):
        out: dict[str, object] = {}
        for key, value in node.items():
            if key == "cls" and isinstance(value, dict) and "$model" in value:
                name = value["$model"]
                out[key] = classes.setdefault(name, type(name, (RecipeObject,), {}))
            elif (key == "default" and node.get("type") == "default"
                  and value in ({}, []) and isinstance(value, (dict, list))):
                out["default_factory"] = type(value)
            else:
                out[key] = _inject(value, classes)
        return out
    if isinstance(node, list):
        return [_inject(v, classes) for v in node]
    return node


# the model classes by name, shared by the recipe's validator and :func:`defaults`
_CLASSES: dict[str, type] = {}


@functools.lru_cache(maxsize=1)
def _validator() -> SchemaValidator:
    from pydantic_core import SchemaValidator

    return SchemaValidator(_inject(_schema(), _CLASSES))  # type: ignore[arg-type]


def build_validator() -> None:
    """Build pydantic-core's validator now (what a recipe :func:`_exact` leaves over uses)."""
    _validator()


def prepare() -> None:
    """Read the schema and build the Python path's checks now (:func:`_check`; a model's
    fields' checks are built on its first call, so every model is called once); no
    pydantic-core."""
    _prepare(_schema())


def _prepare(node: object) -> None:
    if isinstance(node, dict):
        if node.get("type") == "model":
            _check(node)({})  # refused or not, the model's plan is built
        for value in node.values():
            _prepare(value)
    elif isinstance(node, list):
        for value in node:
            _prepare(value)


def validate(data: object) -> Any:
    """Validate recipe data (plain dicts/lists from YAML). Returns the recipe object: the
    Python path's (:func:`_exact`), else pydantic-core's.

    Raises:
      ValidationError: pydantic-core's, with ``errors()`` as the models would give them.
    """
    found = _exact(_schema(), data)
    if found is not _NO:
        return found
    return _validator().validate_python(data)


# --- the Python path ----------------------------------------------------------------------

class _No:
    """The answer of :func:`_exact` for input it leaves to pydantic-core."""


_NO: Any = _No()


def _model_class(name: str) -> type[RecipeObject]:
    """The attribute-bag class of the model ``name``: the one pydantic-core's validator gets
    too (:func:`_inject` takes them from the same table)."""
    found = _CLASSES.get(name)
    if found is None:
        found = _CLASSES[name] = type(name, (RecipeObject,), {})
    return found


@functools.cache
def _pattern(text: str) -> Any:
    """``text`` compiled (Python's ``re``), on first use."""
    import re

    return re.compile(text)


_EXACT_TYPES: dict[str, type] = {"str": str, "int": int, "bool": bool, "float": float}


def _exact(schema: dict[str, Any], value: Any, coerce: bool = False) -> Any:
    """``value`` validated by ``schema`` as pydantic-core would, when it is of the exact type
    the schema names and within its constraints; else :data:`_NO` (pydantic-core decides:
    the error, or a coercion this path does not make).

    Shapes: the schema nodes of ``recipe.core.json`` as stored (model, model-fields,
    model-field, default, nullable, literal, str, int, bool, float, list, dict; a model's class
    by name, :func:`_model_class`); an unknown node: :data:`_NO`. A default is validated like
    a given value (the models' ``validate_default``), which makes a new ``{}``/``[]`` each time.
    Strings with a ``pattern`` are matched here only when ASCII and without a newline (where
    Python's ``re`` and pydantic-core's Rust ``regex`` agree on these patterns). ``coerce``:
    the model's ``coerce_numbers_to_str`` (an ``int`` for a ``str`` field becomes its
    decimal text, as pydantic-core makes it).

    The schema is read once per node: :func:`_check` turns it into one function per node
    (kept while the schema lives), called on every later value.
    """
    return _check(schema, coerce)(value)


# (id of a schema node, coerce) -> (the node, kept alive so that its id is not reused; its
# check): the schema of :func:`_schema` is loaded once, so this holds one entry per node
_CHECKS: dict[tuple[int, bool], tuple[dict[str, Any], Callable[[Any], Any]]] = {}


def _check(schema: dict[str, Any], coerce: bool = False) -> Callable[[Any], Any]:
    """The function that :func:`_exact` is for ``schema`` and ``coerce``: value -> the
    validated value or :data:`_NO` (built on first use, then kept)."""
    if coerce and schema["type"] == "model":
        coerce = False  # a model's fields follow its own config: one check for both
    found = _CHECKS.get((id(schema), coerce))
    if found is None:
        found = _CHECKS[(id(schema), coerce)] = (schema, _build_check(schema, coerce))
    return found[1]


def _no(value: Any) -> Any:
    return _NO


def _build_check(schema: dict[str, Any], coerce: bool) -> Callable[[Any], Any]:
    """One schema node as a function (see :func:`_exact`, whose rules it keeps one by one)."""
    kind = schema["type"]
    if kind == "model":
        return _model_check(schema)
    if kind == "nullable":
        inner = _check(schema["schema"], coerce)
        return lambda value: None if value is None else inner(value)
    exact: Any = _EXACT_TYPES.get(kind)
    if exact is str:
        return _str_check(schema, coerce)
    if exact is bool:
        return lambda value: value if type(value) is bool else _NO
    if exact is not None:  # int, float
        bounds = [(f"__{key}__", schema[key]) for key in ("ge", "le", "gt", "lt")
                  if key in schema]
        inf = (float("inf"), float("-inf"))

        def number(value: Any) -> Any:
            if type(value) is not exact or value != value or value in inf:
                return _NO
            for method, bound in bounds:  # value.__ge__(bound): an int to a float bound is
                # NotImplemented, not True, as before
                if getattr(value, method)(bound) is not True:
                    return _NO
            return value
        return number
    if kind == "literal":
        expected = schema["expected"]
        return lambda value: value if type(value) is str and value in expected else _NO
    if kind == "list":
        return _list_check(schema, coerce)
    if kind == "dict":
        keys = _check(schema["keys_schema"], coerce)
        values = _check(schema["values_schema"], coerce)

        def mapping(value: Any) -> Any:
            if type(value) is not dict:
                return _NO
            out = {}
            for key, item in value.items():
                k = keys(key)
                v = values(item)
                if k is _NO or v is _NO:
                    return _NO
                out[k] = v
            return out
        return mapping
    return _no


def _str_check(schema: dict[str, Any], coerce: bool) -> Callable[[Any], Any]:
    low = schema.get("min_length", 0)
    high = schema.get("max_length")
    pattern = schema.get("pattern")
    compiled: list[Any] = []  # the pattern, compiled on first use

    def text(value: Any) -> Any:
        if coerce and type(value) is int:
            value = str(value)
        if type(value) is not str:
            return _NO
        size = len(value)
        if size < low or (high is not None and size > high):
            return _NO
        if pattern is not None:
            if not compiled:
                compiled.append(_pattern(pattern))
            if not (value.isascii() and "\n" not in value and compiled[0].search(value)):
                return _NO
        return value
    return text


def _list_check(schema: dict[str, Any], coerce: bool) -> Callable[[Any], Any]:
    low = schema.get("min_length", 0)
    high = schema.get("max_length")
    item_check = _check(schema["items_schema"], coerce)

    def items(value: Any) -> Any:
        if type(value) is not list or len(value) < low or \
                (high is not None and len(value) > high):
            return _NO
        out = []
        for item in value:
            got = item_check(item)
            if got is _NO:
                return _NO
            out.append(got)
        return out
    return items


_SAME = (type(None), str, int, bool, float)  # a default validated to one of these is reused


def _copier(made: Any) -> Callable[[], Any]:
    """A function that makes a new copy of ``made`` (a validated default: lists, dicts, sets
    and model objects, over immutable values, which the copies share as validating the
    default again shares them): the same classes, attributes in the same order and values."""
    kind = type(made)
    if kind in _SAME:
        return lambda: made
    if kind is list or kind is dict or kind is set:
        if not made:
            return kind
        if kind is list:
            items = [_copier(v) for v in made]
            return lambda: [make() for make in items]
        if kind is set:
            frozen = tuple(made)
            return lambda: set(frozen)
        pairs = [(k, _copier(v)) for k, v in made.items()]
        return lambda: {k: make() for k, make in pairs}
    if isinstance(made, RecipeObject):
        cls = type(made)
        new = cls.__new__
        template = dict(vars(made))  # every attribute, in order; the mutable ones replaced
        mutable = [(k, _copier(v)) for k, v in template.items() if type(v) not in _SAME]

        def model() -> Any:
            attrs = template.copy()
            for k, make in mutable:
                attrs[k] = make()
            obj = new(cls)
            obj.__dict__.update(attrs)
            return obj
        return model
    raise TypeError(f"no copy for a default of type {kind.__name__}")  # pragma: no cover


def _model_check(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """A model's check; its fields' checks are built on its first call (a cold ``validate``
    builds only the models its recipe reaches)."""
    plan: list[Any] = []

    def model(value: Any) -> Any:
        if not plan:
            plan.append(_model_plan(schema))
        template, by_alias, missing, cls = plan[0]
        if type(value) is not dict:
            return _NO
        out = template.copy()
        seen: set[str] = set()
        for key, item in value.items():
            field = by_alias.get(key)
            if field is None:
                return _NO  # an extra key, or a field by its name instead of its alias
            got = field[1](item)
            if got is _NO:
                return _NO
            out[field[0]] = got
            seen.add(field[0])
        for name, make in missing:
            if name not in seen:
                if make is None:
                    return _NO  # missing
                out[name] = make()
        obj = cls.__new__(cls)
        # in pydantic-core's order: the fields, then its three bookkeeping attributes
        obj.__dict__.update(out, __pydantic_extra__=None, __pydantic_private__=None,
                            __pydantic_fields_set__=seen)
        return obj
    return model


def _model_plan(schema: dict[str, Any]) -> tuple[
        dict[str, Any], dict[str, tuple[str, Callable[[Any], Any]]],
        list[tuple[str, Callable[[], Any] | None]], type[RecipeObject]]:
    """What :func:`_model_check` needs of a model's schema node: see the comments."""
    coerce = bool(schema["config"].get("coerce_numbers_to_str"))
    # the fields in order, each at its immutable default (None in place of the others)
    template: dict[str, Any] = {}
    # the check of a value given by alias, and the field's name; a field's own name where it
    # differs from the alias is refused (pydantic-core's rules for both spellings)
    by_alias: dict[str, tuple[str, Callable[[Any], Any]]] = {}
    refused: set[str] = set()
    # the fields without an immutable default: name -> None (required) or a function that
    # makes a new copy of the validated default (a new {} / [] / object each time, as
    # validating the default again makes them)
    missing: list[tuple[str, Callable[[], Any] | None]] = []
    for name, field in schema["schema"]["fields"].items():
        alias = field["validation_alias"]
        inner = field["schema"]
        given = _check(inner["schema"] if inner["type"] == "default" else inner, coerce)
        by_alias[alias] = (name, given)
        if alias != name:
            refused.add(name)
        template[name] = None
        made = given(inner["default"]) if inner["type"] == "default" and "default" in \
            inner else _NO
        if made is _NO:  # required (or a default the schema refuses: as good as none)
            missing.append((name, None))
        elif type(made) in _SAME:
            template[name] = made
        else:
            missing.append((name, _copier(made)))
    for name in refused:
        by_alias.pop(name, None)
    return template, by_alias, missing, _model_class(schema["cls"]["$model"])


def _fields(schema: dict[str, Any], defs: dict[str, dict[str, Any]]
            ) -> dict[str, dict[str, Any]] | None:
    """The fields (by camelCase alias) of the model schema ``schema``, following refs."""
    while True:
        kind = schema.get("type")
        if kind == "definition-ref":
            schema = defs[schema["schema_ref"]]
        elif kind == "definitions":
            defs.update({d["ref"]: d for d in schema["definitions"]})
            schema = schema["schema"]
        elif kind in ("nullable", "default", "list", "dict"):
            schema = schema.get("schema") or schema.get("items_schema") or \
                schema.get("values_schema") or {}
        elif kind == "model":
            inner = schema["schema"]
            return {(f.get("validation_alias") or name): f["schema"]
                    for name, f in inner["fields"].items()}
        else:
            return None


def allowed_keys(loc: tuple[str | int, ...]) -> list[str]:
    """camelCase keys accepted by the mapping at ``loc`` (``()`` = the whole recipe)."""
    defs: dict[str, dict[str, Any]] = {}
    schema: dict[str, Any] = _schema()
    for part in loc:
        if isinstance(part, int):
            continue
        fields = _fields(schema, defs)
        if fields is None or part not in fields:
            return []
        schema = fields[part]
    fields = _fields(schema, defs)
    return list(fields) if fields else []


@functools.cache
def defaults(loc: tuple[str, ...]) -> Any:
    """The object the model of the field at ``loc`` (camelCase aliases, e.g. ``("spec",
    "kueue")``) gives when its mapping is left empty: every field at its default, as the
    model's own ``Kueue()`` would be, without importing pydantic's models. One object per
    ``loc`` (callers must not change it).

    Raises:
      KeyError: ``loc`` names no model field.
      ValidationError: the model has a required field (there is no default object).
    """
    defs: dict[str, dict[str, Any]] = {}
    schema: dict[str, Any] = _schema()
    for part in loc:
        fields = _fields(schema, defs)
        if fields is None or part not in fields:
            raise KeyError(f"no model field {'.'.join(loc)} in {SCHEMA_FILE.name}")
        schema = fields[part]
    while schema.get("type") != "model":  # the field's wrappers: default, nullable, refs
        if schema.get("type") == "definition-ref":
            schema = defs[schema["schema_ref"]]
        elif "schema" in schema:
            schema = schema["schema"]
        else:
            raise KeyError(f"{'.'.join(loc)} in {SCHEMA_FILE.name} is not a model")
    if defs:
        schema = {"type": "definitions", "schema": schema, "definitions": list(defs.values())}
    found = _exact(schema, {})
    if found is not _NO:
        return found
    from pydantic_core import SchemaValidator

    return SchemaValidator(_inject(schema, _CLASSES)).validate_python({})  # type: ignore[arg-type]
