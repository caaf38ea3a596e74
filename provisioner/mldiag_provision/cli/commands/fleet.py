"""``mldiag-provision fleet validate|matrix|atlantis``: a repository of many recipes.

validate DIR|GLOB...: preflight every recipe (as `validate`), then the checks across
recipes (names two stacks both create, the _Default log bucket two stacks both manage, one
state path, a shared policy directory). Exit 0 ok, 1 any error (`--strict`: any warning
too), 2 bad arguments or an unreadable file.
matrix [DIR|GLOB...] [--changed-since REF]: the affected recipes as a job matrix.
plan [DIR|GLOB...] [--changed-since REF]: one summary of the affected recipes, made offline
(preflight, the stack rendered in memory, what it creates, the policy gate); with --sandbox
(or MLDIAG_SANDBOX=1) or --terraform also Terraform's plan of each one (`plan RECIPE -o
WORK-DIR/<recipe path>`): changes, dangers, drift, gate, cost. Exit 0 ok, 1 any error
(preflight, plan, gate, a collision); with --detailed-exitcode 2 when something would change.
atlantis [DIR|GLOB...] [-o FILE]: an atlantis.yaml with one project per recipe.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, describe
from mldiag_provision.console import Console
from mldiag_provision.errors import ExitCode, Severity, UsageError

if TYPE_CHECKING:
    from mldiag_provision.fleet.collisions import Finding
    from mldiag_provision.fleet.members import Member

NAME = "fleet"
PATHS_HELP = ("recipes: a directory (its *.yaml recipes, recursively), a glob or a "
              "recipe file")


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME],
                       description=describe(__doc__.split("\n\n", 1)[1] if __doc__ else None),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="fleet_command", metavar="VERB", required=True,
                             parser_class=type(p))

    def verb(name: str, help: str) -> argparse.ArgumentParser:  # its help is its description
        made: argparse.ArgumentParser = verbs.add_parser(
            name, help=help, description=help[0].upper() + help[1:] + ".")
        return made

    v = verb("validate", help="preflight every recipe, then the checks across recipes")
    v.add_argument("paths", nargs="+", metavar="DIR|GLOB|RECIPE", help=PATHS_HELP)
    v.add_argument("--output", "-O", choices=("text", "json", "markdown"), default="text",
                   help=OUTPUT_HELP)
    v.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    m = verb("matrix", help="the recipes a change affects, as a CI job matrix")
    m.add_argument("paths", nargs="*", default=["."], metavar="DIR|GLOB|RECIPE",
                   help=PATHS_HELP + " (default: .)")
    m.add_argument("--changed-since", metavar="REF",
                   help="only recipes affected by git diff REF...HEAD (default: all)")
    m.add_argument("--engine", choices=("github-actions", "cloud-build", "atlantis", "lines"),
                   default="github-actions", help="the shape of --output json")
    m.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)
    _change_args(m)
    pl = verb("plan", help="one combined summary of the affected recipes (preflight, "
                           "render, plan objects, gate; with --sandbox or --terraform each "
                           "one's Terraform plan)")
    pl.add_argument("paths", nargs="*", default=["."], metavar="DIR|GLOB|RECIPE",
                    help=PATHS_HELP + " (default: .)")
    pl.add_argument("--changed-since", metavar="REF",
                    help="only recipes affected by git diff REF...HEAD (default: all)")
    pl.add_argument("--output", "-O", choices=("text", "json", "markdown"), default="text",
                    help=OUTPUT_HELP)
    _change_args(pl)
    _plan_args(pl)
    a = verb("atlantis", help="write atlantis.yaml: one project per recipe")
    a.add_argument("paths", nargs="*", default=["."], metavar="DIR|GLOB|RECIPE",
                   help=PATHS_HELP + " (default: .)")
    a.add_argument("-o", "--out", metavar="FILE", help="write here instead of stdout")
    a.add_argument("--command", dest="tool_command", default="mldiag-provision", metavar="CMD",
                   help="how the Atlantis server runs this tool (default mldiag-provision)")
    a.add_argument("--tool-path", action="append", default=None, metavar="PATH",
                   help="a path whose change re-plans every project (repeatable; default "
                        "the tool's own: pyproject.toml, provisioner/, blueprints/, modules/)")


def _change_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tool-path", action="append", default=None, metavar="PATH",
                   help="a path whose change affects every recipe (repeatable; default the "
                        "tool's own: pyproject.toml, provisioner/, blueprints/, modules/)")
    p.add_argument("--shared", action="append", default=[], metavar="PATH",
                   help="a file or directory every recipe reads (repeatable)")


def _plan_args(p: argparse.ArgumentParser) -> None:
    how = p.add_mutually_exclusive_group()
    how.add_argument("--sandbox", action="store_true",
                     help="also run Terraform's plan of each affected recipe against the "
                          "sandbox, a local double of Google Cloud (no credentials read; "
                          "also MLDIAG_SANDBOX=1)")
    how.add_argument("--terraform", action="store_true",
                     help="also run Terraform's plan of each affected recipe against Google "
                          "Cloud (needs credentials)")
    how.add_argument("--offline-only", action="store_true",
                     help="only the offline summary, even with MLDIAG_SANDBOX=1 (the "
                          "default without --sandbox/--terraform)")
    p.add_argument("--work-dir", metavar="DIR",
                   help="root of the recipes' work directories: each is DIR/<recipe path "
                        "without its suffix>, reused by a later plan or apply (default: "
                        "stacks/ at the repository root)")
    p.add_argument("--stage", action="append", choices=("project", "cluster", "workloads"),
                   help="plan only this stage (repeatable; default every stage)")
    p.add_argument("--detailed-exitcode", action="store_true",
                   help="with --sandbox/--terraform: exit 0 when nothing would change, 2 "
                        "when something would, 1 on any error")


def run(args: argparse.Namespace, out: Console) -> int:
    verb = {"validate": _validate, "matrix": _matrix, "atlantis": _atlantis, "plan": _plan}
    return verb[args.fleet_command](args, out)


# --- validate ---------------------------------------------------------------------------------

def _validate(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.fleet import collisions, members

    loaded = members.load(members.discover(args.paths))
    findings = collisions.find(loaded)
    errors = sum(m.errors for m in loaded) + sum(f.severity is Severity.ERROR
                                                for f in findings)
    warnings = sum(sum(p.severity is Severity.WARNING for p in m.check.report.problems)
                   for m in loaded if m.check is not None)
    warnings += sum(f.severity is Severity.WARNING for f in findings)
    failed = errors > 0 or (args.strict and warnings > 0)
    if args.output == "json":
        out.print(json.dumps({
            "ok": not failed, "errors": errors, "warnings": warnings,
            "recipes": [_recipe_dict(m) for m in loaded],
            "findings": [f.to_dict() for f in findings]}, indent=2))
    elif args.output == "markdown":
        out.print(_markdown(loaded, findings, errors, warnings))
    else:
        _text(out, loaded, findings, errors, warnings)
    if any(m.read_error for m in loaded):
        return int(ExitCode.USAGE)
    return int(ExitCode.INVALID if failed else ExitCode.OK)


def _recipe_dict(m: Member) -> dict[str, Any]:
    problems = ([p.to_dict() for p in m.check.report.problems] if m.check is not None
                else [{"rule": "file-unreadable", "severity": "error", "file": m.file,
                       "message": m.read_error}])
    recipe = m.recipe
    return {"file": m.file, "ok": m.errors == 0,
            "name": recipe.metadata.name if recipe is not None else None,
            "project": recipe.spec.project if recipe is not None else None,
            "problems": problems}


def _text(out: Console, loaded: list[Member], findings: list[Finding], errors: int,
          warnings: int) -> None:
    from mldiag_provision.errors import Problem

    for m in loaded:
        if m.check is None:
            out.problem(Problem(rule="file-unreadable", message=m.read_error or "", file=m.file))
            continue
        for p in m.check.report.problems:
            out.problem(p, m.check.parsed.sourcemap)
    by_file = {m.file: m for m in loaded}
    for f in findings:
        colour = "red" if f.severity is Severity.ERROR else "yellow"
        out.print(f"{out.style(f.severity.value, colour, 'bold')}[{f.rule}]: {f.message}")
        for s in f.sides:
            value = f" = {s.value}" if s.value is not None else ""
            out.print(f"  {out.style(s.at(), 'bold')}: {s.path}{value}")
            holder = by_file.get(s.file)
            sm = holder.sourcemap if holder is not None else None
            text = sm.source_line(s.line) if sm is not None and s.line else None
            if text is not None:
                out.print(f"    {s.line:>4} | {text}")
        out.print(f"  hint: {f.hint}")
        if f.source:
            out.print(f"  source: {f.source}")
    across = len(findings)
    tail = f" ({across} finding(s) across recipes)" if across else ""
    out.summary(errors, warnings, len(loaded))
    if tail:
        out.print(f"fleet: {len(loaded)} recipe(s){tail}")


def _markdown(loaded: list[Member], findings: list[Finding], errors: int,
              warnings: int) -> str:
    verdict = "✅ ok" if not errors else f"❌ {errors} error(s)"
    lines = [f"## mldiag-provision fleet validate: {verdict}, {warnings} warning(s), "
             f"{len(loaded)} recipe(s)", ""]
    if findings:
        lines += ["### Across recipes", "", "| severity | rule | finding | recipes | fix |",
                  "| --- | --- | --- | --- | --- |"]
        for f in findings:
            sides = "<br>".join(f"`{s.at()}` `{s.path}`" for s in f.sides)
            lines.append(f"| {f.severity.value} | `{f.rule}` | {_cell(f.message)} | {sides} | "
                         f"{_cell(f.hint)} |")
        lines.append("")
    bad = [m for m in loaded if m.check is None or m.check.report.problems]
    if bad:
        lines += ["### Per recipe", "", "| recipe | severity | rule | field | problem |",
                  "| --- | --- | --- | --- | --- |"]
        for m in bad:
            if m.check is None:
                lines.append(f"| `{m.file}` | error | `file-unreadable` | | "
                             f"{_cell(m.read_error or '')} |")
                continue
            for p in m.check.report.problems:
                lines.append(f"| `{m.file}:{p.line}` | {p.severity.value} | `{p.rule}` | "
                             f"`{p.path}` | {_cell(p.message)} |")
    return "\n".join(lines).rstrip("\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --- matrix -----------------------------------------------------------------------------------

def _root(cwd: Path, need_git: bool) -> Path:
    from mldiag_provision.fleet import affected

    try:
        return affected.git_root(cwd)
    except UsageError:
        if need_git:
            raise
        return cwd


def _relative(file: str, root: Path) -> str:
    path = Path(file).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else file


def _affected(args: argparse.Namespace) -> tuple[list[str], list[Any], list[Any], Path,
                                                Any]:
    """(every recipe file, its raw YAML, the affected ones, the repository root, the
    change or None)."""
    from mldiag_provision.fleet import affected, members

    files = members.discover(args.paths)
    cwd = Path.cwd()
    root = _root(cwd, need_git=args.changed_since is not None).resolve()
    tool = tuple(args.tool_path) if args.tool_path is not None else affected.TOOL_PATHS
    change = (affected.changed_paths(args.changed_since, cwd, tool)
              if args.changed_since is not None else None)
    docs = [members.Member(file=f, check=None).data() for f in files]
    hits = affected.affected(files, docs, change, root, args.shared)
    return files, docs, hits, root, change


def _matrix(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.fleet import engines

    files, docs, hits, root, change = _affected(args)
    by_file = dict(zip(files, docs, strict=True))
    entries = []
    for a in hits:
        doc = by_file[a.file]
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        spec = doc.get("spec") if isinstance(doc, dict) else None
        entries.append(engines.entry(
            _relative(a.file, root),
            str(meta.get("name")) if isinstance(meta, dict) and meta.get("name") else None,
            str(spec.get("project")) if isinstance(spec, dict) and spec.get("project")
            else None, a.reasons))
    if args.output == "json" or args.engine in ("atlantis", "lines"):
        text = engines.matrix(entries, args.engine)
        if text:
            out.print(text)
        return int(ExitCode.OK)
    since = f" since {args.changed_since}" if args.changed_since else ""
    out.print(f"{len(entries)} of {len(files)} recipe(s) affected{since}"
              + (f"; the tool changed ({', '.join(change.tool[:3])}), so every recipe is"
                 if change is not None and change.tool else ""))
    for e in entries:
        out.print(f"  {e['recipe']}: {e['reason']}")
    return int(ExitCode.OK)


# --- plan -------------------------------------------------------------------------------------

def _plan_rows(args: argparse.Namespace, mode: str,
               ) -> tuple[list[str], list[Any], list[Any], list[str]]:
    """(every recipe file, a summary row per affected recipe with its path relative to the
    root and, unless ``mode`` is ``offline``, its Terraform plan; the cross-recipe findings
    that touch an affected recipe, worked out over the whole fleet; the tool's changed
    paths)."""
    from mldiag_provision.fleet import collisions, members, summary

    files, _docs, hits, root, change = _affected(args)
    loaded = members.load(files)  # the whole fleet: the cross-recipe checks need it
    by_file = {m.file: m for m in loaded}
    rows = [summary.summarize(by_file[a.file], a.reasons) for a in hits]
    for r in rows:
        r.file = _relative(r.file, root)
    if mode != "offline":
        _attach_terraform_plans(args, mode, hits, rows, root)
    touched = {a.file for a in hits}
    findings = [f for f in collisions.find(loaded)
                if any(s.file in touched for s in f.sides)]
    tool = list(change.tool) if change is not None else []
    return files, rows, findings, tool


def _attach_terraform_plans(args: argparse.Namespace, mode: str, hits: list[Any],
                            rows: list[Any], root: Path) -> None:
    """Run Terraform's plan of each affected recipe (``mode``: ``sandbox`` or ``terraform``)
    in its work directory under ``--work-dir`` (default: the repository's stacks root), and
    set it as its row's ``terraform_plan``, paths relative to ``root``."""
    from mldiag_provision.cli.commands import _fleetplan
    from mldiag_provision.fleet import tfplan

    work = Path(args.work_dir) if args.work_dir else root / tfplan.WORKDIR_ROOT
    plans = _fleetplan.plan_all([(a.file, r.file, r.errors == 0)
                                 for a, r in zip(hits, rows, strict=True)], work,
                                sandbox=mode == "sandbox", stages=args.stage or ())
    for r, p in zip(rows, plans, strict=True):
        p.workdir = _relative(p.workdir, root)
        p.summaries = [_relative(s, root) for s in p.summaries]
        r.terraform_plan = p


def _plan_json(args: argparse.Namespace, mode: str, failed: bool, recipes: int,
               rows: list[Any], findings: list[Any], tool: list[str]) -> str:
    """The fleet plan as one JSON document: ok, the change, the affected rows, the
    findings, the mode, whether any Terraform plan has changes, and where those plans are."""
    return json.dumps({"ok": not failed, "changed_since": args.changed_since,
                       "tool_changed": tool, "recipes": recipes,
                       "affected": [r.to_dict() for r in rows],
                       "findings": [f.to_dict() for f in findings],
                       "mode": mode,
                       "hasChanges": any(r.terraform_plan is not None
                                         and r.terraform_plan.has_changes
                                         for r in rows),
                       "terraform_plan": "not run: offline summary (preflight, "
                                         "render, plan objects, policy gate)"
                       if mode == "offline" else f"run per recipe ({mode}): "
                       "affected[].terraform_plan"},
                      indent=2)


def _print_plan_text(out: Console, mode: str, recipes: int, changed_since: str | None,
                     rows: list[Any], findings: list[Any], tool: list[str]) -> None:
    """The fleet plan as text: how many of ``recipes`` are affected (and why all, when the
    tool changed), one line per affected recipe (preflight, render, gate) and its Terraform
    plan's line, one per cross-recipe finding, and where Terraform's plan is."""
    from mldiag_provision.fleet import summary

    since = f" since {changed_since}" if changed_since else ""
    out.print(f"{len(rows)} of {recipes} recipe(s) affected{since}"
              + (f"; the tool changed ({', '.join(tool[:3])}), so every recipe is"
                 if tool else ""))
    for r in rows:
        gate = (r.problem or "-" if r.gate is None else
                f"gate {r.gate['errors']} error(s), {r.gate['warnings']} warning(s)")
        creates = sum(r.creates.values())
        out.print(f"  {'ok  ' if r.ok else 'FAIL'} {r.file} ({'; '.join(r.reasons)}): "
                  f"preflight {r.errors} error(s), {r.warnings} warning(s); "
                  f"{r.files} file(s) rendered, {creates} named resource(s); {gate}")
        if r.terraform_plan is not None:
            out.print(summary.text_line(r.terraform_plan))
    for f in findings:
        out.print(f"  {f.severity.value}[{f.rule}]: {f.message} ("
                  + ", ".join(s.at() for s in f.sides) + ")")
    out.print("offline summary: Terraform's plan (changes, drift, cost) is `fleet plan "
              "--sandbox`/`--terraform`, or `mldiag-provision plan RECIPE -o DIR` per "
              "recipe" if mode == "offline" else
              f"planned by Terraform per recipe ({mode})")


def _plan(args: argparse.Namespace, out: Console) -> int:
    """``fleet plan``: the summary of every affected recipe (preflight, render, plan
    objects, policy gate; with ``--sandbox``/``--terraform`` also Terraform's plan) and the
    cross-recipe findings that touch one; exit code from :func:`~.tfplan.exit_code`."""
    from mldiag_provision.cli.commands import _fleetplan
    from mldiag_provision.fleet import summary, tfplan

    mode = _fleetplan.mode_of(args)
    files, rows, findings, tool = _plan_rows(args, mode)
    failed = (any(not r.ok for r in rows)
              or any(f.severity is Severity.ERROR for f in findings))
    if args.output == "json":
        out.print(_plan_json(args, mode, failed, len(files), rows, findings, tool))
    elif args.output == "markdown":
        out.print(summary.markdown(rows, findings, len(files), args.changed_since, tool,
                                   mode))
    else:
        _print_plan_text(out, mode, len(files), args.changed_since, rows, findings, tool)
    return tfplan.exit_code([r.terraform_plan for r in rows], failed,
                            detailed=args.detailed_exitcode)


# --- atlantis ---------------------------------------------------------------------------------

def _atlantis(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.fleet import affected, engines, members

    files = members.discover(args.paths)
    root = _root(Path.cwd(), need_git=False).resolve()
    tool = tuple(args.tool_path) if args.tool_path is not None else affected.TOOL_PATHS
    recipes = []
    for f in files:
        doc = members.Member(file=f, check=None).data()
        extra = [_relative(str(d), root).rstrip("/") + "/"
                 for d in affected.policy_directories(f, doc)]
        recipes.append((_relative(f, root), extra))
    text = engines.atlantis_yaml(engines.atlantis_config(recipes, tool, args.tool_command))
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc.strerror}") from None
        out.print(f"wrote {args.out}: {len(recipes)} project(s), workflow "
                  f"{engines.WORKFLOW}")
    else:
        out.print(text.rstrip("\n"))
    return int(ExitCode.OK)
