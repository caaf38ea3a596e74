"""``mldiag-provision validate RECIPE... [--strict] [--jobs N] [-O json]``: the offline
preflight of one or more recipes (schema, TPU/GPU shapes against the catalog, every rule);
nothing is created.

Each file becomes a :class:`_Verdict` (plain data, so a worker process of ``--jobs`` can send
it back); the verdicts are counted and printed in the order the files were named. Exit 0 when
no file has an error (``--strict``: no warning either), 1 otherwise, 2 when a file cannot be
read (missing, special, too large, not UTF-8; reported with the others' findings).

Start-up: this is the command a cold start is measured on (docs/benchmarks.md, "Cold start");
``tests/unit/test_import_list.py`` lists what a TPU recipe's run may import. Keep the imports
of this module's top to the light ones below.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, jobs_count
from mldiag_provision.console import Console, severity_counts
from mldiag_provision.errors import ExitCode, MldiagError, Problem, Severity, UsageError

if TYPE_CHECKING:
    from mldiag_provision.pipeline import CheckResult
    from mldiag_provision.recipe.sourcemap import SourceMap

NAME = "validate"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME],
                       description="Preflight one or more recipes offline: the schema, the "
                                   "TPU/GPU shapes against the catalog, and every rule, each "
                                   "finding at its file, line and field with a hint. Nothing "
                                   "is created. Exit 0 when no error (--strict: no warning "
                                   "either), 1 otherwise, 2 for a file that cannot be read.")
    p.add_argument("recipes", nargs="+", metavar="RECIPE", help="recipe file(s); - for stdin")
    p.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)
    p.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    p.add_argument("--jobs", "-j", type=jobs_count, default=0, metavar="N",
                   help="check the files on N processes (default 0: one per CPU, for "
                        "batches of 64 files or more per process); the output is the same")


# --- one file ------------------------------------------------------------------------------

@dataclass
class _Verdict:
    """What ``validate`` prints for one file; plain data, so a worker process can send it."""

    file: str
    problems: list[Problem] = field(default_factory=list)
    # the source lines its problems point at, by line number (what the report quotes; a
    # worker sends these, not the whole file)
    lines: dict[int, str] = field(default_factory=dict)
    slices: list[str] = field(default_factory=list)  # how each slice resolved
    usage_error: bool = False  # the file could not be read (a usage error, exit 2)
    read: bool = True  # False: unreadable; ``problems`` holds the one file-unreadable problem

    @property
    def ok(self) -> bool:
        return not any(p.severity is Severity.ERROR for p in self.problems)


def _resolution_lines(result: CheckResult) -> list[str]:
    """One line per resolved slice of ``result``'s recipe, e.g. ``slice v4-16: v4 2x2x4 =
    16 chips -> 4 x ct4p-hightpu-4t (4 chips per VM, multi-host, 4 VMs)``."""
    from mldiag_provision.catalog.tpu import SliceShape  # loaded already: the check used it

    lines = []
    recipe = result.parsed.recipe
    for i, shape in sorted(result.shapes.items()):
        if shape is None or recipe is None:
            continue
        s = recipe.spec.slices[i]
        if not isinstance(shape, SliceShape):  # a GPU slice
            machine = (f"{shape.machine.name} ({shape.machine.gpus} GPUs per VM)"
                       if shape.machine else "machine chosen by Autopilot")
            lines.append(f"slice {s.name}: {shape.gpu.display_name} "
                         f"({shape.gpu.accelerator}) -> {s.nodes or 1} x {machine}")
            continue
        host = f"multi-host, {shape.vms} VMs" if shape.multi_host else "single-host"
        lines.append(f"slice {s.name}: {shape.version.key} {shape.topology} = {shape.chips} "
                     f"chips -> {shape.vms} x {shape.machine_type.name} "
                     f"({shape.chips_per_vm} chips per VM, {host})"
                     + (f" x {s.count} slices" if s.count > 1 else ""))
    return lines


def _quoted_lines(sourcemap: SourceMap, problems: list[Problem]) -> dict[int, str]:
    """The lines of ``sourcemap``'s file that ``problems`` point at, by number."""
    found = {}
    for p in problems:
        text = sourcemap.source_line(p.line) if p.line else None
        if text is not None:
            found[p.line] = text
    return found


def _as_sourcemap(file: str, lines: dict[int, str]) -> SourceMap:
    """A source map that quotes ``lines`` (:func:`_quoted_lines`) at their numbers."""
    from mldiag_provision.recipe.sourcemap import SourceMap

    listed = [""] * max(lines, default=0)
    for number, text in lines.items():
        listed[number - 1] = text
    return SourceMap(file=file, lines=listed)


def _verdict(path: str) -> _Verdict:
    """Check one recipe file (parse + preflight) into a :class:`_Verdict`."""
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file

    try:
        res = check_file(path, load_catalog())
    except MldiagError as exc:  # only reading raises: every such file is a usage error (2),
        # as in lint and render, whether missing, special, too large or not UTF-8
        shown = "<stdin>" if path == "-" else path
        return _Verdict(file=shown, read=False, usage_error=True,
                        problems=[Problem(rule="file-unreadable", message=exc.message,
                                          hint=exc.hint, file=shown)])
    problems = res.report.problems
    return _Verdict(file=res.report.file, problems=problems,
                    lines=_quoted_lines(res.parsed.sourcemap, problems),
                    slices=_resolution_lines(res) if res.report.ok else [])


def _prepare_checks() -> None:
    """Before the workers of a parallel validate fork: import the checks and load what they
    load on first use, once, shared by the workers."""
    from mldiag_provision.pipeline import warm_up

    warm_up()


# --- every file ------------------------------------------------------------------------------

def _verdicts(paths: list[str], jobs: int) -> list[_Verdict]:
    """The verdicts of ``paths``, in their order, checked on ``jobs`` processes (0: one per
    CPU; 1 whenever standard input is among them: it cannot be shared by workers).

    Raises:
      UsageError: ``-`` is named more than once (exit 2).
    """
    from mldiag_provision.batch import map_ordered

    if paths.count("-") > 1:
        raise UsageError("standard input (-) is named more than once; it can be read once",
                         hint="name - once")
    # stdin cannot be shared by workers: a run that reads it checks every file here
    jobs = 1 if "-" in paths else jobs
    from mldiag_provision.preflight.manifest_rules import shared_by_shape

    with shared_by_shape():  # recipes of one workload shape share its manifests' findings
        return map_ordered(_verdict, paths, jobs, prepare=_prepare_checks)


def _totals(verdicts: list[_Verdict]) -> tuple[int, int]:
    """(errors, warnings) over ``verdicts``; an unreadable file counts as one error."""
    total_e = total_w = 0
    for v in verdicts:
        if not v.read:
            total_e += 1
            continue
        e, w = severity_counts(v.problems)
        total_e, total_w = total_e + e, total_w + w
    return total_e, total_w


def _print_json(out: Console, verdicts: list[_Verdict], strict: bool, failed: bool,
                totals: tuple[int, int]) -> None:
    """The ``-O json`` document: ok, counts, and per file (read ones first, then the
    unreadable) its ok, resolved slices and problems."""
    results = [v for v in verdicts if v.read]
    unreadable = [v for v in verdicts if not v.read]
    # a file is ok as the run is: no error, and under --strict no warning either
    files = [{"file": r.file,
              "ok": r.ok and not (strict and severity_counts(r.problems)[1]),
              "slices": r.slices,
              "problems": [p.to_dict() for p in r.problems]} for r in results]
    files += [{"file": v.file, "ok": False, "slices": [],
               "problems": [p.to_dict() for p in v.problems]} for v in unreadable]
    out.print(json.dumps({"ok": not failed, "errors": totals[0], "warnings": totals[1],
                          "files": files}, indent=2))


def _print_text(out: Console, verdicts: list[_Verdict], totals: tuple[int, int]) -> None:
    """Each read file's problems (with their quoted lines) and, when it has no error, how
    its slices resolved; then the unreadable files; then the summary line."""
    results = [v for v in verdicts if v.read]
    unreadable = [v for v in verdicts if not v.read]
    for res in results:
        sourcemap = _as_sourcemap(res.file, res.lines)
        for p in res.problems:
            out.problem(p, sourcemap)
        if res.ok:
            for line in res.slices:
                out.print(f"{res.file}: {line}")
    for v in unreadable:
        out.problem(v.problems[0])
    out.summary(totals[0], totals[1], len(verdicts))


def run(args: argparse.Namespace, out: Console) -> int:
    verdicts = _verdicts(args.recipes, args.jobs)
    totals = _totals(verdicts)
    failed = totals[0] > 0 or (args.strict and totals[1] > 0)
    if args.output == "json":
        _print_json(out, verdicts, args.strict, failed, totals)
    else:
        _print_text(out, verdicts, totals)
    if any(v.usage_error for v in verdicts if not v.read):
        return int(ExitCode.USAGE)
    return int(ExitCode.INVALID if failed else ExitCode.OK)
