"""Provider schemas for the offline stand-in, built from the REAL extracted schemas.

Sources (nothing here is hand-written schema):
  * tests/data/tf_schema/*.json: resources and data sources of hashicorp/google and
    hashicorp/google-beta 8.7.0 (tests/data/tf_schema/extract.py);
  * provider_config.json (this package): each provider's own configuration block
    (extract_provider_config.py).

This module turns them into a small block/attribute model with cty types, encodes that
model as Terraform plugin protocol 6 ``Schema`` messages, and converts values between
msgpack (Terraform's wire format, with unknown values as extension 0) and Python.

Lost in the extraction and therefore not served: descriptions, ``sensitive``, exact
min/max items other than 0/1, and which blocks are optional+computed (see
:func:`optional_computed_block`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

HERE = Path(__file__).resolve().parent


def _schema_dir() -> Path:
    """The extracted schemas: ``_bundled/tf_schema`` in a wheel (pyproject force-include),
    ``tests/data/tf_schema`` in a source checkout."""
    from mldiag_provision.resources import data_root

    bundled = data_root() / "tf_schema"
    return bundled if bundled.is_dir() else data_root() / "tests" / "data" / "tf_schema"


SCHEMA_DIR = _schema_dir()
PROVIDER_CONFIG = HERE / "provider_config.json"


class _Unknown:
    """A value Terraform will know only after apply (cty unknown)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()

# cty types: "string" | "number" | "bool" | "dynamic" | ("list"|"set"|"map", T)
# | ("object", {name: T})
CtyType = Any


def parse_type(text: str, nested: dict[str, Any] | None = None) -> CtyType:
    """The extractor's type strings (``list(string)``, ``set(object)``...) as cty types."""
    if text in ("string", "number", "bool"):
        return text
    if text in ("unknown", "any"):
        return "dynamic"
    if text == "object":
        return object_type(nested or {})
    for kind in ("list", "set", "map"):
        if text.startswith(kind + "(") and text.endswith(")"):
            inner = text[len(kind) + 1:-1]
            if inner == "object":
                return (kind, object_type(nested or {}))
            return (kind, parse_type(inner))
    raise ValueError(f"unsupported type {text!r}")


def object_type(node: dict[str, Any]) -> CtyType:
    """Object type of a nested computed struct (its blocks become list(object))."""
    attrs = {n: parse_type(a["type"], a.get("nested") or a) for n, a in
             node.get("attributes", {}).items()}
    for n, b in node.get("blocks", {}).items():
        kind = "set" if b["nesting"] == "set" else "list"
        attrs[n] = (kind, object_type(b))
    return ("object", attrs)


def type_json(t: CtyType) -> Any:
    if isinstance(t, str):
        return t
    if t[0] == "object":
        return ["object", {k: type_json(v) for k, v in sorted(t[1].items())}]
    return [t[0], type_json(t[1])]


@dataclass
class Attribute:
    name: str
    type: CtyType
    required: bool = False
    optional: bool = False
    computed: bool = False
    nested_nesting: str | None = None  # protocol 6 nested attribute (plugin framework)
    nested: Block | None = None


@dataclass
class NestedBlock:
    name: str
    nesting: str  # list | set | single | group
    block: Block
    min_items: int = 0
    max_items: int = 0


@dataclass
class Block:
    attributes: dict[str, Attribute] = field(default_factory=dict)
    blocks: dict[str, NestedBlock] = field(default_factory=dict)

    def implied_type(self) -> CtyType:
        attrs: dict[str, CtyType] = {n: a.type for n, a in self.attributes.items()}
        for n, b in self.blocks.items():
            inner = b.block.implied_type()
            attrs[n] = (b.nesting, inner) if b.nesting in ("list", "set") else inner
        return ("object", attrs)


def block_from_json(node: dict[str, Any]) -> Block:
    out = Block()
    for name, a in node.get("attributes", {}).items():
        attr = Attribute(name, parse_type(a["type"], a.get("nested") or a),
                         required=a["required"], optional=a["optional"],
                         computed=a["computed"])
        if a.get("nested_attribute"):
            attr.nested_nesting = {"object": "single"}.get(a["type"], a["type"].split("(")[0])
            attr.nested = block_from_json(a)
        out.attributes[name] = attr
    for name, b in node.get("blocks", {}).items():
        out.blocks[name] = NestedBlock(name, b["nesting"], block_from_json(b),
                                       min_items=b.get("min_items") or 0,
                                       max_items=b.get("max_items") or 0)
    return out


@dataclass
class ProviderSchema:
    name: str  # "google" or "google-beta"
    version: str
    provider: Block
    resources: dict[str, Block]
    data_sources: dict[str, Block]


def load_provider(name: str) -> ProviderSchema:
    """The schema the stand-in serves as ``hashicorp/<name>``."""
    cfg = json.loads(PROVIDER_CONFIG.read_text(encoding="utf-8"))[name]
    resources: dict[str, Block] = {}
    data_sources: dict[str, Block] = {}
    for path in sorted(SCHEMA_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc["_meta"]["provider"] != f"hashicorp/{name}":
            continue
        resources.update({k: block_from_json(v) for k, v in doc.get("resources", {}).items()})
        data_sources.update({k: block_from_json(v)
                             for k, v in doc.get("data_sources", {}).items()})
    return ProviderSchema(name, cfg["version"], block_from_json(cfg), resources, data_sources)


# --- protocol 6 Schema messages ------------------------------------------------------------

def _attr_pb(pb: Any, a: Attribute) -> Any:
    msg = pb.Schema.Attribute(name=a.name, required=a.required, optional=a.optional,
                              computed=a.computed)
    if a.nested is not None:
        nesting = {"single": 1, "list": 2, "set": 3, "map": 4}[a.nested_nesting or "single"]
        msg.nested_type.CopyFrom(pb.Schema.Object(
            attributes=[_attr_pb(pb, x) for x in a.nested.attributes.values()],
            nesting=nesting))
    else:
        msg.type = json.dumps(type_json(a.type)).encode()
    return msg


def block_pb(pb: Any, block: Block) -> Any:
    nesting = {"single": 1, "list": 2, "set": 3, "map": 4, "group": 5}
    return pb.Schema.Block(
        attributes=[_attr_pb(pb, a) for a in block.attributes.values()],
        block_types=[pb.Schema.NestedBlock(type_name=b.name, block=block_pb(pb, b.block),
                                           nesting=nesting[b.nesting],
                                           min_items=b.min_items, max_items=b.max_items)
                     for b in block.blocks.values()])


# --- values ----------------------------------------------------------------------------------

def _ext_hook(code: int, data: bytes) -> Any:
    if code == 0:  # cty unknown (the payload, if any, holds refinements we ignore)
        return UNKNOWN
    return msgpack.ExtType(code, data)


def decode(data: bytes) -> Any:
    """msgpack DynamicValue -> Python (dicts, lists, str, int/float, bool, None, UNKNOWN)."""
    if not data:
        return None
    return msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)


def conform(value: Any, t: CtyType) -> Any:
    """``value`` shaped to type ``t``: every object attribute present (null when missing),
    numbers as numbers, collections as lists/dicts. Used before encoding and on JSON state."""
    if value is None or value is UNKNOWN:
        return value
    if isinstance(t, str):
        if t == "number" and isinstance(value, str):
            return float(value) if "." in value else int(value)
        return value
    kind, inner = t
    if kind == "object":
        return {k: conform(value.get(k), at) for k, at in inner.items()}
    if kind == "map":
        return {k: conform(v, inner) for k, v in value.items()}
    return [conform(v, inner) for v in value]


def encode(value: Any, t: CtyType) -> bytes:
    def default(obj: Any) -> Any:
        if obj is UNKNOWN:
            return msgpack.ExtType(0, b"\x00")
        raise TypeError(f"cannot encode {obj!r}")

    packed: bytes = msgpack.packb(conform(value, t), default=default, use_bin_type=True)
    return packed


def optional_computed_block(b: NestedBlock) -> bool:
    """Whether a block is (probably) optional+computed in the real provider.

    The extraction keeps no ``computed`` flag for blocks. The SDKv2 google provider fills
    an optional+computed block (``master_auth``, ``soft_delete_policy``...) when the config
    omits it, and configurations index it (``master_auth[0]``). Heuristic: a max-one list
    block that has a computed attribute.
    """
    return (b.nesting == "list" and b.max_items == 1
            and any(a.computed for a in b.block.attributes.values()))
