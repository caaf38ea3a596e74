"""The committed JSON Schema that recipes reference (yaml-language-server) is up to date."""

import json
from pathlib import Path

from mldiag_provision.recipe.model import json_schema

SCHEMA = (Path(__file__).resolve().parents[2] / "provisioner" / "mldiag_provision" / "schemas"
          / "recipe.schema.json")


def test_committed_schema_matches_model():
    committed = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert committed == json_schema(), (
        "recipe.schema.json is stale: run `python -m mldiag_provision.recipe.generate`")


def test_committed_validator_schema_matches_model():
    from mldiag_provision.recipe.generate import render_files

    for path, text in render_files().items():
        assert Path(path).read_text(encoding="utf-8") == text, (
            f"{path} is stale: run `python -m mldiag_provision.recipe.generate`")


def test_every_example_recipe_points_editors_at_the_schema():
    recipes = sorted((SCHEMA.parents[3] / "recipes").glob("*.yaml"))
    assert recipes
    for recipe in recipes:
        first = recipe.read_text(encoding="utf-8").splitlines()[0]
        assert first == ("# yaml-language-server: $schema=../provisioner/mldiag_provision/"
                         "schemas/recipe.schema.json"), recipe.name
