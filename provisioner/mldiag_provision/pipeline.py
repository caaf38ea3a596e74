"""The one-way pipeline: recipe file -> parse -> preflight -> plan (-> render).

Each step returns data; the CLI decides what to print and which exit code to use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mldiag_provision.catalog.gpu import GpuShape
from mldiag_provision.catalog.tpu import Catalog, SliceShape, load_catalog
from mldiag_provision.errors import Problem, Report, Severity, UsageError
from mldiag_provision.preflight import run_preflight
from mldiag_provision.recipe.parse import ParsedRecipe, parse_recipe_text


@dataclass
class CheckResult:
    """A recipe after parse + preflight."""

    parsed: ParsedRecipe
    report: Report
    shapes: dict[int, SliceShape | GpuShape | None] = field(default_factory=dict)


def read_text(path: str) -> tuple[str, str]:
    """Read a file (or stdin for ``-``). Returns (display name, text).

    Raises:
      UsageError: the file is missing, a directory, unreadable or not UTF-8.
    """
    if path == "-":
        import sys

        return "<stdin>", sys.stdin.read()
    p = Path(path)
    try:
        return path, p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file", hint="check the path") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a recipe file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror})") from None


def check_text(text: str, file: str, catalog: Catalog | None = None) -> CheckResult:
    """Parse and preflight one recipe's text; never raises for bad input."""
    catalog = catalog or load_catalog()
    parsed = parse_recipe_text(text, file)
    problems: list[Problem] = list(parsed.problems)
    shapes: dict[int, SliceShape | GpuShape | None] = {}
    if parsed.recipe is not None:
        found, shapes = run_preflight(parsed.recipe, catalog, parsed.sourcemap)
        problems.extend(found)
    problems.sort(key=lambda p: (p.line, p.column, p.severity is not Severity.ERROR))
    return CheckResult(parsed=parsed, report=Report(file=file, problems=problems), shapes=shapes)


def check_file(path: str, catalog: Catalog | None = None) -> CheckResult:
    name, text = read_text(path)
    return check_text(text, name, catalog)
