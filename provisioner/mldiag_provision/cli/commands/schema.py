"""``mldiag-provision schema``: the recipe's JSON Schema (draft 2020-12, from the pydantic
model :func:`~mldiag_provision.recipe.model.json_schema`) on standard output, keys sorted,
e.g. for an editor's YAML language server or a CI check. Exit 0."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.console import Console

NAME = "schema"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    sub.add_parser(NAME, help=SUMMARIES[NAME],
                   description="Print the recipe's JSON Schema on standard output, e.g. for "
                               "an editor's YAML language server or a CI check.")


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.recipe.model import json_schema

    out.print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return 0
