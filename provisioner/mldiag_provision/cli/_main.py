"""The full command line behind :mod:`mldiag_provision.cli.app` (which answers
``--version`` itself, before importing this module): argument parsing and presentation only.

Exit codes (stable, see :class:`~mldiag_provision.errors.ExitCode`):
  0 ok · 1 invalid input · 2 usage error · 3 refused (conflict) · 70 internal error.
Tracebacks are shown only with ``--debug``. Heavy imports (Jinja) stay off the validate path,
and only the command being run has its module imported (the others' parsers are one-line
stubs from :data:`~mldiag_provision.cli.commands.SUMMARIES`: the top-level help is the same).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from mldiag_provision import __version__
from mldiag_provision.cli.commands._args import OUTPUT_HELP, RECIPE_HELP
from mldiag_provision.console import Console, severity_counts
from mldiag_provision.errors import ExitCode, MldiagError, Problem, Severity, UsageError

if TYPE_CHECKING:
    from mldiag_provision.catalog.tpu import Catalog, TpuVersion
    from mldiag_provision.pipeline import CheckResult
    from mldiag_provision.recipe.sourcemap import SourceMap

EPILOG = """exit codes: 0 ok, 1 invalid input, 2 usage error, 3 refused (e.g. edited files),
4 engine (terraform, cluster) failed, 70 internal error; plan --detailed-exitcode: 0 no
changes, 2 changes, 1 any error. Docs: docs/ (README.md links them); recipe schema:
mldiag-provision schema."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage and exits 2 = USAGE
        self.print_usage(sys.stderr)
        self.exit(int(ExitCode.USAGE), f"{self.prog}: error: {message}{_did_you_mean(message)}\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """As argparse's, but an unknown option after a command is refused with that
        command's usage (``validate R --bogus``), not the top-level one (exit 2)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            _innermost(self, parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's formatter, given the width it would work out itself: argparse imports
        :mod:`shutil` for it on every start (issue 32: ~7 M instructions)."""
        # typeshed's formatter class takes prog only; every HelpFormatter takes width too
        return self.formatter_class(prog=self.prog,
                                    width=_terminal_columns() - 2)  # type: ignore[call-arg]


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, as it is worked out there: ``$COLUMNS`` when a
    positive number, else the terminal's width on standard output, else 80."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


def _did_you_mean(message: str) -> str:
    """For argparse's "invalid choice: 'aply' (choose from 'a', 'b')": the closest choice
    (Python 3.11's argparse names none), as " (did you mean 'apply'?)"; else ""."""
    import difflib
    import re

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if not found:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2))
    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _innermost(parser: argparse.ArgumentParser,
               parsed: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``parsed`` names, e.g. ``fleet plan``'s."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(parsed, subs[0].dest, None) if subs else None
        if not subs or name not in subs[0].choices:
            return parser
        parser = subs[0].choices[name]


def _jobs(text: str) -> int:
    """``--jobs``: a whole number >= 0 (0: one process per CPU)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of processes (0 or more; "
                                         "0: one per CPU)")
    return value


def build_parser(command: str | None = None, *, full: bool = True) -> argparse.ArgumentParser:
    """The argument parser. ``full``: every command module's own parser (imports them all);
    otherwise only ``command``'s module is imported and the other module commands are stubs
    that carry just their one-line help (enough for the top-level ``--help`` and for the
    "invalid choice" error, which list the same commands in the same order)."""
    p = _Parser(prog="mldiag-provision", epilog=EPILOG,
                description="Recipe -> preflight -> Terraform stack for Google Cloud ML "
                            "Diagnostics on TPU clusters.",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"mldiag-provision {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    # the same flags are accepted after the command name too
    common = _Parser(add_help=False)  # its formatter needs no shutil either
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    common.add_argument("--no-color", action="store_true", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add: Callable[..., argparse.ArgumentParser] = sub.add_parser

    def add_parser(name: str, **kw: Any) -> argparse.ArgumentParser:
        return _add(name, parents=[common, *kw.pop("parents", [])], **kw)

    sub.add_parser = add_parser  # type: ignore[method-assign,assignment]

    v = sub.add_parser("validate", help="preflight one or more recipes (nothing is created)",
                       description="Preflight one or more recipes offline: the schema, the "
                                   "TPU/GPU shapes against the catalog, and every rule, each "
                                   "finding at its file, line and field with a hint. Nothing "
                                   "is created. Exit 0 when no error (--strict: no warning "
                                   "either), 1 otherwise, 2 for a file that cannot be read.")
    v.add_argument("recipes", nargs="+", metavar="RECIPE", help="recipe file(s); - for stdin")
    v.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)
    v.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    v.add_argument("--jobs", "-j", type=_jobs, default=0, metavar="N",
                   help="check the files on N processes (default 0: one per CPU, for "
                        "batches of 64 files or more per process); the output is the same")

    r = sub.add_parser("render", help="preflight a recipe and write its Terraform stack",
                       description="Preflight a recipe, then write its Terraform stack "
                                   "(modules, variables, Kubernetes manifests, README, "
                                   "topology diagram) into DIR. Rendered files edited by hand "
                                   "are refused unless --force; --check writes nothing and "
                                   "says whether DIR is up to date.")
    r.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
    r.add_argument("-o", "--out", required=True, metavar="DIR", help="stack directory")
    # --check writes nothing, so --force (overwrite edited files) cannot apply to it
    writes = r.add_mutually_exclusive_group()
    writes.add_argument("--force", action="store_true",
                        help="overwrite rendered files that were edited by hand")
    writes.add_argument("--check", action="store_true",
                        help="write nothing: exit 0 when DIR is exactly what a render writes "
                             "now, 1 (listing changed/added/removed files) when it is stale")
    r.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)

    c = sub.add_parser("catalog", help="list accelerators and explain their topologies",
                       description="List the TPU versions (or, with gpu, the GPUs) the tool "
                                   "knows, each fact with its source; with VERSION, explain "
                                   "one version's topologies, machine types and GKE minimums; "
                                   "with --topology and --diagram, draw a slice.")
    c.add_argument("family", nargs="?", choices=("tpu", "gpu"), default="tpu",
                   help="the accelerators to list or explain (default tpu)")
    c.add_argument("version", nargs="?", metavar="VERSION",
                   help="a TPU version (e.g. v5e or tpu-v6e-slice) or, after gpu, a GPU "
                        "(e.g. h200-141gb or nvidia-l4)")
    c.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)
    c.add_argument("--topology", metavar="T", help="with --diagram: the slice to draw, e.g. 2x2x4")
    c.add_argument("--chips-per-vm", type=int, metavar="N",
                   help="with --diagram: chips per VM where a topology has two machine types")
    c.add_argument("--slices", type=int, default=1, metavar="N",
                   help="with --diagram: a multislice of N slices over DCN")
    c.add_argument("--diagram", nargs="?", const="-", metavar="FILE.svg",
                   help="draw the slice (VMs, chips, ICI, wrap, DCN): as text, or as SVG "
                        "into FILE.svg")

    sub.add_parser("schema", help="print the recipe JSON Schema (for editors and CI)",
                   description="Print the recipe's JSON Schema on standard output, e.g. for "
                               "an editor's YAML language server or a CI check.")
    from mldiag_provision.cli.commands import MODULES, SUMMARIES

    for name in MODULES:
        if full or name == command:
            _command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=SUMMARIES[name])
    return p


def _command_module(name: str):  # type: ignore[no-untyped-def]
    import importlib

    return importlib.import_module(f"mldiag_provision.cli.commands.{name}")


def _command_modules() -> list[Any]:
    from mldiag_provision.cli.commands import MODULES

    return [_command_module(m) for m in MODULES]


def command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first argument that is not an option (the top-level
    options, ``--debug`` and ``--no-color``, take no value); None when there is none."""
    return next((a for a in argv if not a.startswith("-")), None)


# --- commands ----------------------------------------------------------------------------

def _resolution_lines(result: CheckResult) -> list[str]:
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


def cmd_validate(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.batch import map_ordered

    paths: list[str] = args.recipes
    if paths.count("-") > 1:
        raise UsageError("standard input (-) is named more than once; it can be read once",
                         hint="name - once")
    # stdin cannot be shared by workers: a run that reads it checks every file here
    jobs = 1 if "-" in paths else args.jobs
    from mldiag_provision.preflight.manifest_rules import shared_by_shape

    with shared_by_shape():  # recipes of one workload shape share its manifests' findings
        verdicts = map_ordered(_verdict, paths, jobs, prepare=_prepare_checks)
    results = [v for v in verdicts if v.read]
    unreadable = [v for v in verdicts if not v.read]
    total_e = len(unreadable)
    total_w = 0
    for res in results:
        e, w = severity_counts(res.problems)
        total_e, total_w = total_e + e, total_w + w
    failed = total_e > 0 or (args.strict and total_w > 0)
    if args.output == "json":
        # a file is ok as the run is: no error, and under --strict no warning either
        files = [{"file": r.file,
                  "ok": r.ok and not (args.strict and severity_counts(r.problems)[1]),
                  "slices": r.slices,
                  "problems": [p.to_dict() for p in r.problems]} for r in results]
        files += [{"file": v.file, "ok": False, "slices": [],
                   "problems": [p.to_dict() for p in v.problems]} for v in unreadable]
        out.print(json.dumps({"ok": not failed, "errors": total_e, "warnings": total_w,
                              "files": files}, indent=2))
    else:
        for res in results:
            sourcemap = _as_sourcemap(res.file, res.lines)
            for p in res.problems:
                out.problem(p, sourcemap)
            if res.ok:
                for line in res.slices:
                    out.print(f"{res.file}: {line}")
        for v in unreadable:
            out.problem(v.problems[0])
        out.summary(total_e, total_w, len(results) + len(unreadable))
    if any(v.usage_error for v in unreadable):
        return int(ExitCode.USAGE)
    return int(ExitCode.INVALID if failed else ExitCode.OK)


def cmd_render(args: argparse.Namespace, out: Console) -> int:
    from pathlib import Path

    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan
    from mldiag_provision.policy import policy_data
    from mldiag_provision.render.stack import GENERATOR, render_stack
    from mldiag_provision.render.writer import write_tree

    catalog = load_catalog()
    res = check_file(args.recipe, catalog)
    errors, warnings = severity_counts(res.report.problems)
    if errors or res.parsed.recipe is None:
        if args.output == "json":
            out.print(json.dumps({"ok": False, "problems": [p.to_dict() for p in
                                                             res.report.problems]}, indent=2))
        else:
            for p in res.report.problems:
                out.problem(p, res.parsed.sourcemap)
            out.print(f"nothing rendered: {errors} error(s) in {res.report.file}")
        return int(ExitCode.INVALID)
    from mldiag_provision.plan.previous import previous_plan_of

    # the stack already in -o keeps the names it has (issue 25)
    plan = build_plan(res.parsed.recipe, res.shapes, catalog,
                      previous_plan_of(args.out, res.parsed.recipe.metadata.name))
    files = render_stack(plan, policy=policy_data(res.parsed.recipe))
    if not args.out.strip():
        raise UsageError("-o/--out is empty", hint="give the stack directory, e.g. -o out/stack")
    if args.check:
        return _render_check(args, out, files, plan.name)
    import contextlib

    from mldiag_provision.plan.previous import render_time_problems
    from mldiag_provision.stack.lock import locked

    # A stack already rendered here may be in use by plan/apply/destroy: take the same
    # work-directory lock (refused, exit 3, while one runs). A directory without .mldiag/ is
    # new or not ours; write_tree judges it, and no lock file is created there first.
    guard = (locked(Path(args.out), "render") if (Path(args.out) / ".mldiag").is_dir()
             else contextlib.nullcontext())
    with guard:
        # checks against the stack already in the directory (before its plan.json is replaced)
        res.report.problems.extend(render_time_problems(Path(args.out), res.parsed.recipe,
                                                        res.parsed.sourcemap))
        errors, warnings = severity_counts(res.report.problems)
        written = write_tree(Path(args.out), files, generator=GENERATOR, stack=plan.name,
                             force=args.force)
    if args.output == "json":
        out.print(json.dumps({"ok": True, "out": str(written.out), "written": written.written,
                              "unchanged": written.unchanged, "removed": written.removed,
                              "kept": written.kept,
                              "keptIn": str(written.kept_in) if written.kept_in else None,
                              "decisions": plan.decisions,
                              "problems": [p.to_dict() for p in res.report.problems]},
                             indent=2))
        return int(ExitCode.OK)
    for p in res.report.problems:
        out.problem(p, res.parsed.sourcemap)
    for d in plan.decisions:
        out.print(f"  {d}")
    out.print(out.style(f"rendered {len(written.written)} file(s) to {written.out}", "green")
              + (f" ({len(written.unchanged)} unchanged)" if written.unchanged else "")
              + (f", removed {len(written.removed)}" if written.removed else "")
              + (f"; {warnings} warning(s)" if warnings else ""))
    if written.kept:
        out.print(f"  --force replaced {len(written.kept)} file(s) it had not written or that "
                  f"were edited by hand: {', '.join(written.kept)}; the previous copies are in "
                  f"{written.kept_in}")
    return int(ExitCode.OK)


def _render_check(args: argparse.Namespace, out: Console, files: dict[str, bytes],
                  stack: str) -> int:
    """``render --check``: compare DIR with the in-memory render; 0 identical, 1 stale."""
    from pathlib import Path

    from mldiag_provision.render.check import check_tree
    from mldiag_provision.render.stack import GENERATOR

    target = Path(args.out)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is a file, not a work directory",
                         hint="give the stack directory with -o")
    res = check_tree(target, files, generator=GENERATOR, stack=stack)
    if args.output == "json":
        out.print(json.dumps({"ok": res.identical, **res.to_dict()}, indent=2))
        return int(ExitCode.OK if res.identical else ExitCode.INVALID)
    if res.identical:
        out.print(out.style("up to date:", "green", "bold")
                  + f" {target} is exactly what `render` writes for {args.recipe}")
        return int(ExitCode.OK)
    if not res.exists:
        out.print(out.style("stale:", "red", "bold") + f" {target} does not exist; a render "
                  f"would write {len(res.added)} file(s)")
    else:
        count = len(res.changed) + len(res.added) + len(res.removed) + len(res.unmanaged)
        out.print(out.style("stale:", "red", "bold") + f" {target} differs from what `render` "
                  f"writes for {args.recipe} ({count} file(s))")
        edited = set(res.edited)
        rows = ([("changed", r, " (edited by hand)" if r in edited else "")
                 for r in res.changed]
                + [("added", r, "") for r in res.added]
                + [("removed", r, "") for r in res.removed]
                + [("unmanaged", r, " (not written by render)") for r in res.unmanaged])
        for kind, rel, note in rows:
            out.print(f"  {kind:<9} {rel}{note}")
    out.print(f"  hint: run `mldiag-provision render {args.recipe} -o {args.out}"
              + (" --force" if res.edited else "") + "` and commit the result"
              + ("; move hand edits into the recipe first" if res.edited else ""))
    return int(ExitCode.INVALID)


def cmd_catalog(args: argparse.Namespace, out: Console) -> int:
    if args.family == "gpu":
        from mldiag_provision.cli import catalog_gpu

        return catalog_gpu.run(args, out)
    from mldiag_provision.catalog.tpu import load_catalog

    catalog = load_catalog()
    if args.version is None:
        rows: list[dict[str, Any]] = [
            {"version": v.key, "name": v.display_name, "accelerator": v.accelerator,
             "dimensions": v.dimensions, "machineTypes": sorted(v.machine_types),
             "autopilotMinGke": str(v.autopilot_min) if v.autopilot_min else None}
            for v in catalog.versions.values()]
        if args.output == "json":
            out.print(json.dumps(rows, indent=2))
            return 0
        out.print(f"{'VERSION':<8} {'ACCELERATOR LABEL':<22} {'DIM':<4} {'AUTOPILOT >=':<20} "
                  "MACHINE TYPES")
        for r in rows:
            out.print(f"{r['version']:<8} {r['accelerator']:<22} {str(r['dimensions']) + 'D':<4} "
                      f"{r['autopilotMinGke'] or '-':<20} {', '.join(r['machineTypes'])}")
        out.print("\nmldiag-provision catalog tpu VERSION  explains one version's topologies"
                  "\nmldiag-provision catalog gpu          lists the GPUs")
        return 0
    v = catalog.version(args.version)
    if v is None:
        from mldiag_provision.catalog.gpu import load_gpu_catalog
        from mldiag_provision.suggest import suggest

        gpu = load_gpu_catalog().gpu(args.version)
        if gpu is not None:
            raise UsageError(f"'{args.version}' is a GPU, not a TPU version",
                             hint=f"mldiag-provision catalog gpu {gpu.key}")
        raise UsageError(f"unknown TPU version '{args.version}'",
                         hint=suggest(args.version, catalog.version_names())
                         or "known: " + ", ".join(sorted(catalog.versions)))
    if args.diagram is not None or args.topology:
        return _catalog_diagram(args, out, catalog, v)
    shapes = []
    for topo, names in v.topologies.items():
        for name in names:
            s = catalog.resolve(v.key, topo, v.machine_types[name].chips_per_vm)
            shapes.append({"topology": topo, "chips": s.chips, "machineType": name,
                           "chipsPerVm": s.chips_per_vm, "vms": s.vms,
                           "hosts": "multi-host" if s.multi_host else "single-host"})
    if args.output == "json":
        out.print(json.dumps({"version": v.key, "accelerator": v.accelerator,
                              "aliases": list(v.aliases), "dimensions": v.dimensions,
                              "topologies": shapes, "allowed": catalog.describe_allowed(v),
                              "large3d": ({"multipleOf": v.large3d.multiple_of,
                                           "nondecreasing": v.large3d.nondecreasing,
                                           "maxTopology": "x".join(map(str, v.large3d.max_dims)),
                                           "minChips": v.large3d.min_chips,
                                           "machineType": v.large3d.machine_type}
                                          if v.large3d else None),
                              "zones": list(v.zones), "source": catalog.source_url(v.source)},
                             indent=2))
        return 0
    # the display name may carry the key already: "TPU Trillium (v6e)", "Ironwood (TPU7x)"
    title = (v.display_name if v.key.lower() in v.display_name.lower()
             else f"{v.display_name} ({v.key})")
    out.print(out.style(title, "bold") +
              f"  nodeSelector cloud.google.com/gke-tpu-accelerator: {v.accelerator}")
    out.print(f"source: {catalog.source_url(v.source)}")
    if v.autopilot_min or v.standard_min:
        out.print(f"GKE minimum: Autopilot {v.autopilot_min or '-'}, Standard "
                  f"{v.standard_min or '-'}")
    out.print(f"\n{'TOPOLOGY':<10} {'CHIPS':>5}  {'MACHINE TYPE':<20} {'CHIPS/VM':>8} "
              f"{'VMS':>4}  SLICE")
    for row in shapes:
        out.print(f"{row['topology']:<10} {row['chips']:>5}  {row['machineType']:<20} "
                  f"{row['chipsPerVm']:>8} {row['vms']:>4}  {row['hosts']}")
    if v.large3d:
        lg = v.large3d
        out.print(f"\nabove 64 chips: AxBxC with every dimension a multiple of {lg.multiple_of}, "
                  f"A <= B <= C, up to {'x'.join(map(str, lg.max_dims))} ({lg.machine_type})")
    ambiguous = [t for t, n in v.topologies.items() if len(n) > 1]
    if ambiguous:
        out.print(f"\n{', '.join(ambiguous)}: two machine types; set chipsPerVm in the recipe "
                  "(google.com/tpu per pod) to choose")
    if v.zones:
        out.print(f"zones: {', '.join(v.zones)}")
    return 0


def _catalog_diagram(args: argparse.Namespace, out: Console, catalog: Catalog,
                     v: TpuVersion) -> int:
    """``catalog tpu VERSION --topology T --diagram [FILE.svg]``: text on the terminal, or
    the SVG written to FILE.svg."""
    from pathlib import Path

    from mldiag_provision.catalog.tpu import ShapeError
    from mldiag_provision.render import topology as pictures

    if not args.topology or args.diagram is None:
        raise UsageError("--topology and --diagram go together",
                         hint=f"mldiag-provision catalog tpu {v.key} --topology T --diagram "
                              "[FILE.svg]")
    if args.slices < 1:
        raise UsageError(f"--slices {args.slices}: a multislice has at least 1 slice")
    try:
        shape = catalog.resolve(v.key, args.topology, args.chips_per_vm)
    except ShapeError as exc:
        field = {"chipsPerVm": "--chips-per-vm", "topology": "--topology"}.get(exc.field,
                                                                            exc.field)
        raise UsageError(f"{field}: {exc.message}",
                         hint=(f"allowed: {exc.expected}" if exc.expected else exc.hint)
                         ) from None
    if shape.chips * args.slices > pictures.MAX_DIAGRAM_CHIPS:  # render summarizes them
        raise UsageError(f"{shape.chips * args.slices} chips are too many to draw "
                         f"(at most {pictures.MAX_DIAGRAM_CHIPS})",
                         hint="draw a smaller topology")
    drawing = pictures.tpu_drawing(f"{v.key}-{args.topology}", v.key, v.dimensions,
                                   shape.topology, shape.chips_per_vm,
                                   shape.machine_type.name, args.slices)
    if args.diagram == "-":
        out.print(pictures.text([drawing]).rstrip("\n"))
        return 0
    path = Path(args.diagram)
    try:
        path.write_text(pictures.svg([drawing]), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}",
                         hint="give a writable FILE.svg") from None
    out.print(f"wrote {path}: {drawing.chips * drawing.count} chips on "
              f"{drawing.vms * drawing.count} VMs")
    return 0


def cmd_schema(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.recipe.model import json_schema

    out.print(json.dumps(json_schema(), indent=2, sort_keys=True))
    return 0


COMMANDS = {"validate": cmd_validate, "render": cmd_render, "catalog": cmd_catalog,
            "schema": cmd_schema}


def main(argv: Sequence[str] | None = None) -> int:
    argv_list = list(sys.argv[1:] if argv is None else argv)
    # Under --detailed-exitcode, 2 means "changes" (drift): every error exits 1 instead, as
    # with Terraform's -detailed-exitcode, so a typo in a scheduled drift job is not drift.
    detailed = any(len(a) >= 5 and "--detailed-exitcode".startswith(a.split("=")[0])
                   for a in argv_list)  # argparse accepts unique prefixes (--detailed)
    command = command_name(argv_list)
    parser = build_parser(command, full=False)
    try:
        args = parser.parse_args(argv_list)
    except SystemExit as exc:
        if detailed and exc.code == int(ExitCode.USAGE):
            return int(ExitCode.INVALID)
        raise
    if not args.command:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    run = COMMANDS.get(args.command) or _command_module(args.command).run
    if hasattr(args, "sandbox"):  # plan/apply/verify/output/destroy: --sandbox or MLDIAG_SANDBOX
        from mldiag_provision.cli import sandboxed

        try:
            on = sandboxed.requested(args)
        except MldiagError as exc:  # MLDIAG_SANDBOX set to neither on nor off
            return _run(args, _raising(exc), detailed)
        if on:
            restore = sandboxed.mark_streams(args)
            try:
                return _run(args, sandboxed.wrap(run), detailed)
            finally:
                restore()
        return _run(args, sandboxed.guarded(run), detailed)
    return _run(args, run, detailed)


def _raising(exc: MldiagError) -> Callable[[argparse.Namespace, Console], int]:
    """A command that only raises ``exc``: an error found before the command could start,
    reported the way every command's errors are."""

    def run(_args: argparse.Namespace, _out: Console) -> int:
        raise exc

    return run


def _run(args: argparse.Namespace, run: Callable[[argparse.Namespace, Console], int],
         detailed: bool) -> int:
    """Run one parsed command; errors become their exit codes (see the module docstring)."""
    out = Console(sys.stdout, color=False if args.no_color else None)
    err = Console(sys.stderr, color=False if args.no_color else None)
    try:
        try:
            return run(args, out)
        except OSError as exc:  # the file system refused (full, read-only ...): not a bug
            from mldiag_provision.ondisk import environment_error

            converted = environment_error(exc)
            if converted is None or args.debug:
                raise
            raise converted from exc
    except MldiagError as exc:
        if getattr(args, "output", "text") == "sarif":
            # a SARIF consumer still gets a log: one run that says it did not complete
            out.print(json.dumps({
                "version": "2.1.0",
                "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
                "runs": [{"tool": {"driver": {"name": "mldiag-provision",
                                              "version": __version__}},
                          "invocations": [{"executionSuccessful": False,
                                           "exitCode": int(exc.exit_code),
                                           "toolExecutionNotifications": [{
                                               "level": "error",
                                               "message": {"text": exc.message}}]}],
                          "results": []}]}, indent=2))
        elif getattr(args, "output", "text") == "json":
            out.print(json.dumps({"ok": False, "error": {
                "message": exc.message, "hint": exc.hint, "exitCode": int(exc.exit_code),
                "problems": [p.to_dict() for p in exc.problems]}}, indent=2))
        err.print(f"{err.style('error', 'red', 'bold')}: {exc.message}")
        if exc.hint:
            err.print(f"  hint: {exc.hint}")
        if detailed:  # 2 is "changes": every error is 1, as with terraform
            return int(ExitCode.INVALID)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        from mldiag_provision.errors import Terminated

        said, code = (("terminated (SIGTERM)", 143) if isinstance(exc, Terminated)
                      else ("interrupted", 130))
        if getattr(args, "output", "text") == "json":  # a pipeline still gets its document
            out.print(json.dumps({"ok": False, "error": {
                "message": said, "hint": None, "exitCode": code, "problems": []}}, indent=2))
        if not getattr(exc, "reported", False):  # apply/destroy said it in full already
            err.print(said)
        return code
    except BrokenPipeError:
        # the reader went away (| head): say nothing more, exit like a SIGPIPE'd program
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug: say so, hide the traceback unless --debug
        if args.debug:
            raise
        err.print(f"{err.style('internal error', 'red', 'bold')}: {type(exc).__name__}: {exc}")
        err.print("  this is a bug in mldiag-provision; re-run with --debug for the traceback")
        return int(ExitCode.INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
