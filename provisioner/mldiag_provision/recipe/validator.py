"""Validate recipe data against the committed core schema, without importing pydantic.

``schemas/recipe.core.json`` is generated from the pydantic models
(:func:`mldiag_provision.recipe.model.validator_schema`; a test keeps it fresh). Here it is
loaded into a ``pydantic_core.SchemaValidator`` whose model classes are plain attribute
objects, so that ``validate``/``render`` start in about a third of the time while reporting
exactly the errors the models define. The result has the models' attribute names
(``recipe.spec.slices[0].chips_per_vm``); mapping fields (labels, env) stay dicts.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from pydantic_core import SchemaValidator, ValidationError

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schemas" / "recipe.core.json"

__all__ = ["SCHEMA_FILE", "ValidationError", "allowed_keys", "defaults", "validate"]


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
    return SchemaValidator(_inject(_schema(), _CLASSES))  # type: ignore[arg-type]


def build_validator() -> None:
    """Build the recipe's validator now (else on the first :func:`validate`)."""
    _validator()


def validate(data: object) -> Any:
    """Validate recipe data (plain dicts/lists from YAML). Returns the recipe object.

    Raises:
      ValidationError: pydantic-core's, with ``errors()`` as the models would give them.
    """
    return _validator().validate_python(data)


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
    return SchemaValidator(_inject(schema, _CLASSES)).validate_python({})  # type: ignore[arg-type]
