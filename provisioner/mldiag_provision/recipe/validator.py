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
  included; ``tests/unit/test_validator_fastpath.py``). A cold ``validate`` of a valid recipe
  so never imports pydantic_core (~18 ms of imports, of which ~12 ms compiling
  ``pydantic_core.core_schema``'s annotations).
- ``pydantic_core.SchemaValidator`` for everything else: any input :func:`_exact` does not
  accept (an error, a coercion, a pattern on non-ASCII text) is validated again there, so
  errors are exactly pydantic-core's. After :data:`COMPILED_AFTER` recipes in one process
  (``validate`` of many files), or once :func:`build_validator` ran, every recipe goes to
  pydantic-core directly: it is faster per recipe than Python once imported.

:data:`ValidationError` is pydantic-core's, imported on first use (module ``__getattr__``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_core import SchemaValidator, ValidationError

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schemas" / "recipe.core.json"

__all__ = ["SCHEMA_FILE", "ValidationError", "allowed_keys", "defaults", "validate"]

# recipes checked by the Python path before the compiled validator takes over (see module)
COMPILED_AFTER = 16


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
    """Build pydantic-core's validator now; every later :func:`validate` uses it."""
    _validator()


_CALLS = [0]


def validate(data: object) -> Any:
    """Validate recipe data (plain dicts/lists from YAML). Returns the recipe object.

    Raises:
      ValidationError: pydantic-core's, with ``errors()`` as the models would give them.
    """
    if _validator.cache_info().currsize == 0 and _CALLS[0] < COMPILED_AFTER:
        _CALLS[0] += 1
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
    """
    kind = schema["type"]
    if kind == "model":
        return _exact_model(schema, value)
    if kind == "nullable":
        return None if value is None else _exact(schema["schema"], value, coerce)
    exact: Any = _EXACT_TYPES.get(kind)  # Any: ``type(v) is exact`` keeps ``value`` Any
    if exact is not None:
        if exact is str and coerce and type(value) is int:
            value = str(value)
        return _exact_scalar(schema, kind, exact, value)
    if kind == "literal":
        return value if type(value) is str and value in schema["expected"] else _NO
    if kind == "list":
        return _exact_list(schema, value, coerce)
    if kind == "dict":
        return _exact_dict(schema, value, coerce)
    return _NO


def _exact_model(schema: dict[str, Any], value: Any) -> Any:
    """A model node: ``value`` a ``dict`` keyed by the fields' aliases only, each field given
    or defaulted and valid; the object built as pydantic-core builds it (its fields, then
    ``__pydantic_extra__``, ``__pydantic_private__`` and ``__pydantic_fields_set__``: the
    fields given). A field given by its Python name, a missing required field or an extra key:
    :data:`_NO`."""
    if type(value) is not dict:
        return _NO
    fields = schema["schema"]["fields"]
    coerce = bool(schema["config"].get("coerce_numbers_to_str"))
    out: dict[str, Any] = {}
    seen: set[str] = set()
    aliases = 0
    for name, field in fields.items():
        alias = field["validation_alias"]
        if alias != name and name in value:
            return _NO  # by name: pydantic-core's rules for both spellings
        inner = field["schema"]
        if alias in value:
            aliases += 1
            seen.add(name)
            if inner["type"] == "default":
                inner = inner["schema"]
            got = _exact(inner, value[alias], coerce)
        elif inner["type"] == "default" and "default" in inner:
            got = _exact(inner["schema"], inner["default"], coerce)
        else:
            return _NO  # missing
        if got is _NO:
            return _NO
        out[name] = got
    if aliases != len(value):
        return _NO  # an extra key
    cls = _model_class(schema["cls"]["$model"])
    obj = cls.__new__(cls)
    # in pydantic-core's order: the fields, then its three bookkeeping attributes
    obj.__dict__.update(out, __pydantic_extra__=None, __pydantic_private__=None,
                        __pydantic_fields_set__=seen)
    return obj


def _exact_scalar(schema: dict[str, Any], kind: str, exact: Any, value: Any) -> Any:
    """A ``str``/``int``/``bool``/``float`` node (``exact``: that Python type): ``value`` of
    exactly that type, a string within ``min_length``/``max_length`` and its ``pattern``
    (ASCII without a newline only), a number finite and within ``ge``/``le``/``gt``/``lt``;
    else :data:`_NO`."""
    if type(value) is not exact:
        return _NO
    if kind == "str":
        size = len(value)
        if size < schema.get("min_length", 0) or size > schema.get("max_length", size):
            return _NO
        pattern = schema.get("pattern")
        if pattern is not None and not (value.isascii() and "\n" not in value
                                        and _pattern(pattern).search(value)):
            return _NO
    elif kind in ("int", "float"):
        if value != value or value in (float("inf"), float("-inf")):
            return _NO
        for key, ok in (("ge", value.__ge__), ("le", value.__le__), ("gt", value.__gt__),
                        ("lt", value.__lt__)):
            if key in schema and ok(schema[key]) is not True:
                return _NO
    return value


def _exact_list(schema: dict[str, Any], value: Any, coerce: bool) -> Any:
    """A list node: a ``list`` within ``min_length``/``max_length`` whose every item is valid
    (a new list of the items as validated); else :data:`_NO`."""
    if type(value) is not list or len(value) < schema.get("min_length", 0) or \
            len(value) > schema.get("max_length", len(value)):
        return _NO
    items = []
    for item in value:
        got = _exact(schema["items_schema"], item, coerce)
        if got is _NO:
            return _NO
        items.append(got)
    return items


def _exact_dict(schema: dict[str, Any], value: Any, coerce: bool) -> Any:
    """A dict node: a ``dict`` whose every key and value is valid (a new dict of them as
    validated); else :data:`_NO`."""
    if type(value) is not dict:
        return _NO
    mapping = {}
    for key, item in value.items():
        k = _exact(schema["keys_schema"], key, coerce)
        v = _exact(schema["values_schema"], item, coerce)
        if k is _NO or v is _NO:
            return _NO
        mapping[k] = v
    return mapping


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
