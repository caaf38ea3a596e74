"""Arguments shared by the commands (validate, lint, plan, apply, destroy, output ...); light,
imported to build the parser."""

from __future__ import annotations

import argparse
import re

TYPE_CHECKING = False  # typing is not imported at start-up (the parser is built from here)
if TYPE_CHECKING:
    from typing import Any

    from mldiag_provision.plan.types import StackPlan
    from mldiag_provision.recipe.model import Recipe

OUTPUT_HELP = "output format (default text)"
RECIPE_HELP = "the recipe file (recipe.yaml)"

_ROLE = r":[a-z]+:`~?[^`]*`"


def jobs_count(text: str) -> int:
    """``--jobs`` of validate and lint: a whole number >= 0 (0: one process per CPU).

    Raises:
      argparse.ArgumentTypeError: anything else (argparse reports it, exit 2).
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of processes (0 or more; "
                                         "0: one per CPU)")
    return value


def describe(doc: str | None) -> str | None:
    """A command's ``--help`` description from its module docstring (reStructuredText):
    the developer references (``:mod:`...```, ``:func:`...```) are left out, a paragraph still
    made of them is dropped, literals ````x```` read `x`. Returns None for no docstring."""
    if not doc:
        return None
    text = re.sub(r";?\s*see\s+" + _ROLE, "", doc)
    text = re.sub(r"\s*See\s+" + _ROLE + r"[^.]*\.", "", text)
    text = re.sub(r"\s*\((?:\s*" + _ROLE + r",?)+\)", "", text)
    kept = [par for par in text.strip().split("\n\n") if not re.search(_ROLE, par)]
    return "\n\n".join(kept).replace("``", "`").replace("::", ":")


def add_common(p: argparse.ArgumentParser, *, render: bool = True,
               outputs: tuple[str, ...] = ("text", "json")) -> None:
    p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
    p.add_argument("-o", "--out", required=True, metavar="DIR",
                   help="the stack's work directory (rendered files, Terraform state, logs)")
    if render:
        p.add_argument("--force", action="store_true",
                       help="re-render over rendered files that were edited by hand")
    p.add_argument("--output", "-O", choices=outputs, default="text", help=OUTPUT_HELP)
    add_sandbox(p)


SANDBOX_HELP = ("run against the sandbox, a local double of Google Cloud kept in "
                "DIR/.mldiag/sandbox (no Google account, no credentials read; also "
                "MLDIAG_SANDBOX=1)")


def add_sandbox(p: argparse.ArgumentParser) -> None:
    """``--sandbox`` (plan, apply, verify, output, destroy)."""
    p.add_argument("--sandbox", action="store_true", help=SANDBOX_HELP)


def add_verbose(p: argparse.ArgumentParser) -> None:
    """``-v/--verbose`` (policy, plan, apply): the policy gate lists the checkov checks the
    stack skips, each with its reason; without it a passing gate prints one line."""
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list the checkov checks the stack skips, each with its reason "
                        "(a passing policy gate prints one line otherwise)")


def valid_plan(path: str, out: Any, needs: str, *,
               text: bool = True) -> tuple[Recipe, StackPlan]:
    """(recipe, plan) of a valid recipe file; an invalid one's problems printed to ``out``
    when ``text`` (with JSON/SARIF output, stdout holds one document: the problems of an
    invalid recipe travel in the error raised, which the CLI puts in that document).

    Raises:
      InputError: the recipe has errors (exit 1); ``needs`` names who needs a valid one
        ("cost", "the policy gate").
    """
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.errors import InputError
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan

    catalog = load_catalog()
    res = check_file(path, catalog)
    errors = [p for p in res.report.problems if p.severity.value == "error"]
    if errors or res.parsed.recipe is None:
        if text:
            for p in res.report.problems:
                out.problem(p, res.parsed.sourcemap)
        raise InputError(f"{needs} needs a valid recipe: {len(errors)} error(s) in "
                         f"{res.report.file}", problems=list(res.report.problems))
    return res.parsed.recipe, build_plan(res.parsed.recipe, res.shapes, catalog)
