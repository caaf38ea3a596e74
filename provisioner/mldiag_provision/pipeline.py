"""The one-way pipeline: recipe file -> parse -> preflight -> plan (-> render).

Each step returns data; the CLI decides what to print and which exit code to use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mldiag_provision.catalog.tpu import Catalog, SliceShape, load_catalog
from mldiag_provision.errors import Problem, Report, Severity, UsageError, not_utf8
from mldiag_provision.preflight import run_preflight
from mldiag_provision.recipe.parse import ParsedRecipe, parse_recipe_text

if TYPE_CHECKING:  # a TPU recipe never imports the GPU catalog (issue 32)
    from mldiag_provision.catalog.gpu import GpuShape


@dataclass
class CheckResult:
    """A recipe after parse + preflight."""

    parsed: ParsedRecipe
    report: Report
    shapes: dict[int, SliceShape | GpuShape | None] = field(default_factory=dict)


# A recipe is a few kilobytes; refuse to parse anything this large (and /dev/zero).
MAX_RECIPE_BYTES = 1 << 20


def read_text(path: str) -> tuple[str, str]:
    """Read a file (or stdin for ``-``). Returns (display name, text).

    A named path is opened without blocking and must be a regular file (a FIFO with no
    writer blocked every command forever; ``/dev/zero`` never ends): standard input is ``-``.

    Raises:
      UsageError: the file is missing (a dangling link too), a directory, a FIFO, a device
        or a socket, unreadable, not UTF-8 text, or larger than 1 MiB: every input a command
        cannot read is a usage error (exit 2), for ``render`` as for ``validate`` and
        ``lint`` (README, exit codes).
    """
    import sys

    from mldiag_provision.ondisk import read_regular

    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            if sys.stdin is None:  # started with stdin closed (<&-)
                raise UsageError("<stdin>: standard input is closed",
                                 hint="pipe the recipe in, or name the file")
            raw = sys.stdin.buffer.read(MAX_RECIPE_BYTES + 1)
        else:
            raw = read_regular(path, MAX_RECIPE_BYTES)
    except FileNotFoundError:
        from mldiag_provision.ondisk import dangling

        link = dangling(path)
        if link:
            raise UsageError(f"{path}: {link}", hint="point the link at the recipe, or name "
                             "the recipe file itself") from None
        raise UsageError(f"{path}: no such file", hint="check the path") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a recipe file",
                         hint="name a recipe file, e.g. DIR/NAME.yaml (validate and fleet "
                              "also take several: DIR/*.yaml)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror})",
                         hint=_unreadable_hint(exc)) from None
    if len(raw) > MAX_RECIPE_BYTES:
        raise UsageError(f"{name}: larger than {MAX_RECIPE_BYTES // 1024} KiB; a recipe is a "
                         "few kilobytes of YAML", hint="is this the right file?")
    try:
        return name, raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(name, raw, exc, "a recipe") from None


def check_text(text: str, file: str, catalog: Catalog | None = None) -> CheckResult:
    """Parse and preflight one recipe's text; never raises for bad input."""
    catalog = catalog or load_catalog()
    parsed = parse_recipe_text(text, file)
    problems: list[Problem] = list(parsed.problems)
    shapes: dict[int, SliceShape | GpuShape | None] = {}
    if parsed.recipe is not None:
        found, shapes = run_preflight(parsed.recipe, catalog, parsed.sourcemap,
                                      data=parsed.data)
        problems.extend(found)
    problems.sort(key=lambda p: (p.line, p.column, p.severity is not Severity.ERROR))
    return CheckResult(parsed=parsed, report=Report(file=file, problems=problems), shapes=shapes)


def warm_up() -> None:
    """Load now what checking recipes loads on first use: every rule module (the Slurm and
    GPU ones too), the catalogs, the places facts (regions, zones, GKE limits), the recipe
    validator's checks (not pydantic-core: only a recipe the Python path leaves over needs
    it, :mod:`mldiag_provision.recipe.validator`), the orchestrator units (their modules),
    the blueprints, the Slurm facts and the cluster model's modules that its steps import on
    first use (not the engine units: checks need only their names,
    :mod:`mldiag_provision.engine_names`).
    ``validate --jobs`` calls it before its workers fork, so that they share one copy
    instead of each loading its own (tests/unit/test_batch.py checks that a check afterwards
    imports no module of the package)."""
    import mldiag_provision.cluster.affinity
    import mldiag_provision.cluster.autopilot
    import mldiag_provision.cluster.wiring
    import mldiag_provision.lint.wiring_rules
    import mldiag_provision.plan.gpunet  # noqa: F401
    from mldiag_provision import orchestrators, preflight
    from mldiag_provision.catalog.gpu import load_gpu_catalog
    from mldiag_provision.catalog.names import load_name_limits
    from mldiag_provision.catalog.places import places
    from mldiag_provision.catalog.slurm import load_slurm_facts
    from mldiag_provision.recipe.validator import prepare
    from mldiag_provision.render.blueprint import load_blueprint

    preflight.import_all()  # the rules of Slurm and GPU recipes too
    load_catalog()
    load_gpu_catalog()
    load_name_limits()
    load_slurm_facts()
    places()
    prepare()
    for unit in orchestrators.units():
        load_blueprint(unit.blueprint)


def check_file(path: str, catalog: Catalog | None = None) -> CheckResult:
    name, text = read_text(path)
    return check_text(text, name, catalog)


def _unreadable_hint(exc: OSError) -> str | None:
    """What to do about a recipe path that is not a readable regular file."""
    from mldiag_provision.ondisk import NotRegularFile

    if isinstance(exc, NotRegularFile):
        return "name the recipe file itself; to read a recipe from a pipe, give - and pipe it in"
    return None
