"""``mldiag-provision render RECIPE -o DIR [--force | --check] [-O json]``: preflight a recipe,
then write its Terraform stack into DIR.

A recipe with an error writes nothing (exit 1). The plan keeps the names of a stack already in
DIR (:func:`~mldiag_provision.plan.previous.previous_plan_of`); the write takes that stack's
work-directory lock when DIR has ``.mldiag/`` (exit 3 while plan/apply/destroy runs there) and
refuses rendered files edited by hand unless ``--force``
(:func:`~mldiag_provision.render.writer.write_tree`). ``--check`` writes nothing and compares
DIR with the in-memory render: exit 0 identical, 1 stale (changed/added/removed files listed).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, RECIPE_HELP
from mldiag_provision.console import Console, severity_counts
from mldiag_provision.errors import ExitCode, UsageError

NAME = "render"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME],
                       description="Preflight a recipe, then write its Terraform stack "
                                   "(modules, variables, Kubernetes manifests, README, "
                                   "topology diagram) into DIR. Rendered files edited by hand "
                                   "are refused unless --force; --check writes nothing and "
                                   "says whether DIR is up to date.")
    p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="stack directory")
    # --check writes nothing, so --force (overwrite edited files) cannot apply to it
    writes = p.add_mutually_exclusive_group()
    writes.add_argument("--force", action="store_true",
                        help="overwrite rendered files that were edited by hand")
    writes.add_argument("--check", action="store_true",
                        help="write nothing: exit 0 when DIR is exactly what a render writes "
                             "now, 1 (listing changed/added/removed files) when it is stale")
    p.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)


def run(args: argparse.Namespace, out: Console) -> int:
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
