"""Regenerate the schema files derived from the recipe models (a development step).

    python -m mldiag_provision.recipe.generate

writes ``schemas/recipe.schema.json`` (JSON Schema for editors, ``mldiag-provision schema``)
and ``schemas/recipe.core.json`` (what :mod:`mldiag_provision.recipe.validator` validates
with). ``tests/unit/test_schema_file.py`` fails when either is stale.
"""

from __future__ import annotations

import json

from mldiag_provision.recipe.model import json_schema, validator_schema
from mldiag_provision.recipe.validator import SCHEMA_FILE


def render_files() -> dict[str, str]:
    """File path -> content of both generated schema files."""
    return {
        str(SCHEMA_FILE.with_name("recipe.schema.json")):
            json.dumps(json_schema(), indent=2, sort_keys=True) + "\n",
        str(SCHEMA_FILE): json.dumps(validator_schema(), indent=1) + "\n",
    }


def main() -> None:
    for path, text in render_files().items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
