"""Typed models of the fact store's files, and the JSON Schemas generated from them.

``sources.yaml`` is a :class:`SourcesFile`; every other data file is a tree in which each
mapping with a ``source`` key is a :class:`FactModel` (source tag defined in ``sources.yaml``,
confidence H/M/L, a text ``note`` and ``confirm``; other keys are the fact's data). The loader
(:mod:`mldiag_provision.catalog.store`) checks the same rules without importing pydantic,
to keep ``validate``'s cold start; ``tests/rulebook/test_fact_models.py`` checks that both
accept every bundled fact and refuse the same malformed ones.

    python -m mldiag_provision.catalog.model

writes ``schemas/facts.schema.json`` (data files) and ``schemas/sources.schema.json``
(``sources.yaml``) for editors (each data file's first line names its schema for the YAML
language server); a test fails when they are stale.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from mldiag_provision.catalog.store import DATA_DIR, parse_sources

Confidence = Literal["H", "M", "L"]
"""How sure a fact is: H verified verbatim, M secondary sources, L not verified."""

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"


class SourceModel(BaseModel):
    """One source: what it is, and where to read it."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="what the source is (and what it says, where short)")
    url: str | None = Field(None, pattern=r"^https?://")
    path: str | None = Field(None, description="a path in the workspace's shared/ folder")
    commit: str | None = Field(None, pattern=r"^[0-9a-f]{40}$")
    note: str | None = Field(None, description="why there is no url or path, if so")


class SourcesFile(BaseModel):
    """``sources.yaml``: every source, once, by tag."""

    model_config = ConfigDict(extra="forbid")
    sources: dict[str, SourceModel]


def fact_model(tags: list[str]) -> type[BaseModel]:
    """The model of one fact, its ``source`` restricted to ``tags``."""
    tag_enum = Enum("SourceTag", {t: t for t in tags}, type=str)  # type: ignore[misc]
    return create_model(
        "Fact",
        __config__=ConfigDict(extra="allow", use_enum_values=True),
        __doc__="A fact: data with its source and how sure it is.",
        source=(tag_enum, Field(description="a tag of sources.yaml")),
        confidence=(Confidence, Field(
            "H", description="H verified verbatim at the source (errors allowed); M secondary "
                             "sources or a strong inference; L not verified (warnings only)")),
        note=(str | None, None),
        confirm=(str | None, Field(
            None, description="for an M or L fact that decides a severity: what would verify "
                              "it (the page, code or refusal to find)")),
    )


def source_tags() -> list[str]:
    import yaml

    data = yaml.safe_load((DATA_DIR / "sources.yaml").read_text(encoding="utf-8"))
    return sorted(parse_sources(data))


def facts_schema(tags: list[str] | None = None) -> dict[str, Any]:
    """JSON Schema of a data file: any mapping with a ``source`` key is a fact; no file has
    its own ``sources:``."""
    fact = fact_model(tags if tags is not None else source_tags()).model_json_schema()
    defs = fact.pop("$defs", {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://mldiag-provision.dev/schemas/facts.json",
        "title": "mldiag-provision fact file (catalog/data/*.yaml but sources.yaml)",
        "type": "object",
        "not": {"required": ["sources"]},
        "$ref": "#/$defs/node",
        "$defs": {
            **defs,
            "Fact": fact,
            "node": {
                "if": {"type": "object", "required": ["source"]},
                "then": {"$ref": "#/$defs/Fact"},
                "additionalProperties": {"$ref": "#/$defs/node"},
                "items": {"$ref": "#/$defs/node"},
            },
        },
    }


def sources_schema() -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://mldiag-provision.dev/schemas/sources.json",
            "title": "mldiag-provision sources table (catalog/data/sources.yaml)",
            **SourcesFile.model_json_schema()}


def render_files() -> dict[Path, str]:
    return {SCHEMA_DIR / "facts.schema.json":
            json.dumps(facts_schema(), indent=2, sort_keys=True) + "\n",
            SCHEMA_DIR / "sources.schema.json":
            json.dumps(sources_schema(), indent=2, sort_keys=True) + "\n"}


def main() -> None:
    for path, text in render_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
