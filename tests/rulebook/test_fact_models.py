"""Typed fact models (pydantic) and the JSON Schemas for editors: fresh, accepting every
bundled fact, refusing the malformed ones the runtime loader refuses."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from mldiag_provision.catalog import model
from mldiag_provision.catalog.store import DATA_DIR, FILES, make_fact, store, walk_facts
from mldiag_provision.errors import CatalogError


def test_committed_schemas_are_fresh() -> None:
    for path, text in model.render_files().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run `python -m mldiag_provision.catalog.model`")


def test_every_data_file_names_its_schema_and_validates() -> None:
    facts = jsonschema.Draft202012Validator(model.facts_schema())
    for name in FILES:
        text = (DATA_DIR / f"{name}.yaml").read_text(encoding="utf-8")
        assert text.startswith("# yaml-language-server: $schema=../../schemas/facts.schema.json")
        errors = list(facts.iter_errors(yaml.safe_load(text)))
        assert not errors, (name, [e.message for e in errors[:3]])
    sources = yaml.safe_load((DATA_DIR / "sources.yaml").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(model.sources_schema()).validate(sources)
    model.SourcesFile.model_validate(sources)


def test_every_fact_validates_as_the_typed_model() -> None:
    fact = model.fact_model(model.source_tags())
    count = 0
    for name in FILES:
        for _path, raw in walk_facts(store().doc(name)):
            fact.model_validate(raw)
            count += 1
    assert count > 200


BAD = [{"source": "NO-SUCH-TAG"}, {"source": "GKE-AP", "confidence": "X"},
       {"source": "GKE-AP", "note": 3}, {"source": "GKE-AP", "confidence": "M", "confirm": 3},
       {"source": 7}]


@pytest.mark.parametrize("raw", BAD, ids=json.dumps)
def test_model_schema_and_loader_refuse_the_same_malformed_fact(raw: dict) -> None:
    tags = model.source_tags()
    with pytest.raises(ValidationError):
        model.fact_model(tags).model_validate(raw)
    assert list(jsonschema.Draft202012Validator(model.facts_schema(tags))
                .iter_errors({"x": raw}))
    with pytest.raises(CatalogError):
        make_fact("x.yaml", ("x",), raw, store().sources)
