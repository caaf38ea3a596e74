"""Check rendered Terraform against real provider schemas, without running Terraform.

Every ``resource`` and ``data`` block of a .tf file (parsed with python-hcl2 8.x, where a
block is a list of dicts carrying ``"__is_block__": True``) is walked against the
hashicorp/google and hashicorp/google-beta 8.7.0 schema subsets in tests/data/tf_schema/.
Reported: unknown attributes/blocks, attributes written as blocks and blocks written as
attributes, computed-only attributes that are set, missing required attributes/blocks, and
more blocks than ``max_items``. Meta-arguments (count, for_each, depends_on, provider,
lifecycle, provisioner, connection) are allowed everywhere; ``dynamic "x" { content {..} }``
is checked as block ``x``.

Each finding reads ``<file>: <type>.<name>: <attr path>: <problem>`` (``data.<type>.<name>``
for data sources).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hcl2

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "data" / "tf_schema"
META_ARGS = {"count", "for_each", "depends_on", "provider"}
META_BLOCKS = {"lifecycle", "provisioner", "connection"}
PRIVATE = ("__is_block__", "__comments__", "__inline_comments__", "__start_line__",
           "__end_line__")


@dataclass(frozen=True)
class Schemas:
    """provider name ("google", "google-beta") -> {"resources": ..., "data_sources": ...}."""

    by_provider: dict[str, dict[str, dict[str, Any]]]

    @classmethod
    def load(cls, directory: Path = SCHEMA_DIR) -> Schemas:
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for path in sorted(directory.glob("*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            name = doc["_meta"]["provider"].split("/")[-1]
            out[name] = {"resource": doc.get("resources", {}),
                         "data": doc.get("data_sources", {})}
        return cls(out)


def unquote(label: str) -> str:
    """python-hcl2 keeps the quotes of block labels and string literals."""
    if len(label) >= 2 and label[0] == label[-1] == '"':
        return label[1:-1]
    return label


def is_block(value: object) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(v, dict) and v.get("__is_block__") for v in value))


def _provider_name(body: dict[str, Any], rtype: str) -> str:
    """``provider = google-beta`` or ``google-beta.alias`` -> "google-beta"; default from type."""
    raw = body.get("provider")
    if isinstance(raw, str):
        return unquote(raw).removeprefix("${").removesuffix("}").split(".")[0]
    return rtype.split("_")[0]


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in PRIVATE}


def check_body(body: dict[str, Any], schema: dict[str, Any], where: str, path: str,
               top: bool) -> list[str]:
    """Check one block body against its schema (``attributes`` + ``blocks``)."""
    problems: list[str] = []
    attrs: dict[str, Any] = schema.get("attributes", {})
    blocks: dict[str, Any] = schema.get("blocks", {})
    seen_blocks: dict[str, int] = {}

    def p(attr: str, problem: str) -> None:
        problems.append(f"{where}: {path}{attr}: {problem}")

    for key, value in _fields(body).items():
        if top and key in META_ARGS:
            continue
        if top and key in META_BLOCKS:
            if not is_block(value):
                p(key, "meta-argument block written as an attribute")
            continue
        if key == "dynamic":
            # python-hcl2: [{'"label"': {for_each, content: [...], __is_block__}}]
            if not (isinstance(value, list) and all(isinstance(d, dict) for d in value)):
                p(key, "'dynamic' must be a block")
                continue
            for dyn in value:
                for label, dbody in _fields(dyn).items():
                    name = unquote(label)
                    if name not in blocks:
                        if name in attrs:
                            p(f"dynamic.{name}", "is an attribute, not a block "
                                                 "(dynamic only generates blocks)")
                        else:
                            p(f"dynamic.{name}", "unknown block type")
                        continue
                    inner = _fields(dbody[0] if isinstance(dbody, list) else dbody)
                    if "for_each" not in inner:
                        p(f"dynamic.{name}", "missing for_each")
                    content = inner.get("content")
                    if not is_block(content):
                        p(f"dynamic.{name}", "missing content block")
                        continue
                    seen_blocks[name] = seen_blocks.get(name, 0) + 1
                    for c in content:
                        problems += check_body(c, blocks[name], where,
                                               f"{path}{name}.", top=False)
            continue
        if key in attrs:
            spec = attrs[key]
            if is_block(value):
                p(key, "attribute written as a block (use `=`)")
            elif not spec.get("optional") and not spec.get("required"):
                p(key, "computed-only attribute cannot be set")
            continue
        if key in blocks:
            if not is_block(value):
                p(key, "block written as an attribute (drop the `=`)")
                continue
            seen_blocks[key] = seen_blocks.get(key, 0) + len(value)
            limit = blocks[key].get("max_items")
            if limit is not None and len(value) > limit:
                p(key, f"{len(value)} blocks, at most {limit} allowed")
            for i, b in enumerate(value):
                sub = f"{path}{key}." if len(value) == 1 else f"{path}{key}[{i}]."
                problems += check_body(b, blocks[key], where, sub, top=False)
            continue
        p(key, "unknown attribute or block" + (" (a block)" if is_block(value) else ""))

    present = set(_fields(body))
    for name, spec in sorted(attrs.items()):
        if spec.get("required") and name not in present:
            p(name, "missing required attribute")
    for name, spec in sorted(blocks.items()):
        if (spec.get("required") or (spec.get("min_items") or 0) > 0) and not seen_blocks.get(
                name):
            p(name, "missing required block")
    return problems


def check_document(doc: dict[str, Any], file: str, schemas: Schemas) -> list[str]:
    """Check every resource and data block of one parsed .tf file."""
    problems: list[str] = []
    for kind in ("resource", "data"):
        for entry in doc.get(kind, []):
            for rlabel, named in _fields(entry).items():
                rtype = unquote(rlabel)
                for nlabel, body in _fields(named).items():
                    name = unquote(nlabel)
                    where = f"{file}: " + (f"data.{rtype}.{name}" if kind == "data"
                                           else f"{rtype}.{name}")
                    provider = _provider_name(body, rtype)
                    table = schemas.by_provider.get(provider, {}).get(kind, {})
                    if rtype not in table:
                        problems.append(f"{where}: -: {kind} type not in the {provider} "
                                        "schema subset (add it to tests/data/tf_schema/)")
                        continue
                    problems += check_body(body, table[rtype], where, "", top=True)
    return problems


def check_text(text: str, file: str, schemas: Schemas) -> list[str]:
    return check_document(hcl2.loads(text), file, schemas)


def check_tree(root: Path, schemas: Schemas) -> tuple[list[str], int]:
    """Check every .tf under ``root``. Returns (problems, number of resource/data blocks)."""
    problems: list[str] = []
    count = 0
    for path in sorted(root.rglob("*.tf")):
        rel = path.relative_to(root).as_posix()
        doc = hcl2.loads(path.read_text(encoding="utf-8"))
        for kind in ("resource", "data"):
            for entry in doc.get(kind, []):
                for named in _fields(entry).values():
                    count += len(_fields(named))
        problems += check_document(doc, rel, schemas)
    return problems, count
