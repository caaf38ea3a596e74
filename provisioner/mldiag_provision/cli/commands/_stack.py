"""Shared by ``plan``, ``apply``, ``destroy`` and ``output``: render the recipe into its work
directory, hold the work-directory lock, build the engine, and show plans and progress.

Not a command module itself (it is not listed in ``MODULES``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from mldiag_provision.cli.commands._args import add_common  # noqa: F401  (re-exported)
from mldiag_provision.console import Console, severity_counts
from mldiag_provision.engines import PlanResult, ProgressEvent
from mldiag_provision.errors import ConflictError, InputError, UsageError

LOCK_FILE = ".mldiag/lock"
LOG_DIR = ".mldiag/logs"
SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "read": "<="}



# --- work directory lock ------------------------------------------------------------------------

@dataclass
class WorkdirLock:
    """An exclusive ``flock`` on ``DIR/.mldiag/lock`` while a command changes the stack.

    The lock belongs to the open file, which each terraform child inherits: if we die, the
    lock stays held until the terraform we started has exited too. The kernel drops it with
    the last holder, so a crash never leaves a stale lock behind.
    """

    path: Path
    fd: int = -1

    def acquire(self, command: str) -> None:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            hint = ("wait for it to finish; a second plan/apply/destroy on the same work "
                    "directory is refused while one runs")
            try:
                pid = int(json.loads(holder)["pid"])
                os.kill(pid, 0)
            except (ValueError, KeyError, TypeError, ProcessLookupError):
                hint = ("that mldiag-provision run has ended, but the terraform it started is "
                        "still finishing (it keeps the lock so that nothing else touches the "
                        f"state); wait for it (`fuser {self.path}` lists it)")
            except PermissionError:
                pass
            raise ConflictError(f"{self.path.parent.parent} is in use by another run "
                                f"({holder})", hint=hint) from None
        info = json.dumps({"pid": os.getpid(), "command": command,
                           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        os.ftruncate(fd, 0)
        os.pwrite(fd, info.encode() + b"\n", 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the flock goes with the last open copy (children too)
            self.fd = -1


@contextlib.contextmanager
def locked(workdir: Path, command: str) -> Iterator[WorkdirLock]:
    lock = WorkdirLock(workdir / LOCK_FILE)
    lock.acquire(command)
    try:
        yield lock
    finally:
        lock.release()


# --- render ------------------------------------------------------------------------------------

def recipe_name_in(workdir: Path) -> str | None:
    try:
        return json.loads((workdir / ".mldiag/plan.json").read_text(encoding="utf-8"))["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


RENDER_STAMP = ".mldiag/render-stamp.json"


def _walk(root: Path) -> Iterator[str]:
    """``path:size:mtime`` of every file under ``root`` (bytecode caches skipped)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            yield f"{full}:{st.st_size}:{st.st_mtime_ns}\n"


def _render_inputs_digest(recipe_text: str) -> str:
    """What a render depends on: the recipe, and (by path, size and mtime) the package code,
    its catalog data, blueprints and modules. Equal digests give byte-identical trees."""
    import hashlib

    from mldiag_provision import __version__
    from mldiag_provision.resources import data_root

    h = hashlib.sha256(f"{__version__}\n{recipe_text}".encode())
    pkg = Path(__file__).resolve().parents[2]
    roots = [pkg, data_root() / "blueprints", data_root() / "modules"]
    for root in roots:
        for entry in sorted(_walk(root)):
            h.update(entry.encode())
    return h.hexdigest()


def _read_recipe(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        from mldiag_provision.pipeline import read_text

        return read_text(path)[1]  # raises the usual UsageError with its hint


def _up_to_date(workdir: Path, digest: str) -> bool:
    from mldiag_provision.render.writer import edited_files

    try:
        stamp = json.loads((workdir / RENDER_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if stamp.get("digest") != digest:
        return False
    try:
        manifest = json.loads((workdir / ".mldiag/manifest.json").read_text(encoding="utf-8"))
        files = manifest["files"]
    except (OSError, ValueError, KeyError):
        return False
    return all((workdir / rel).is_file() for rel in files) and not edited_files(workdir)


def decisions(workdir: Path) -> list[str]:
    """What the plan decided for the rendered stack (slices, GKE version, agents strategy)."""
    try:
        data = json.loads((workdir / ".mldiag" / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(d) for d in data.get("decisions", [])]


def agents_stage(workdir: Path) -> Path | None:
    """The second-stage root module (agents/), if the stack has one."""
    stage = workdir / "agents"
    return stage if (stage / "main.tf").is_file() else None


def render(args: argparse.Namespace, out: Console, *, quiet: bool) -> Path:
    """Preflight the recipe and (re-)render it into ``args.out``; returns the directory.

    When neither the recipe nor the tool changed since the last render of this directory
    (and no rendered file was edited or removed), the stack is already what a render would
    write: preflight and render are skipped (``.mldiag/render-stamp.json``).

    Raises:
      InputError: the recipe has errors (printed first, as ``validate`` prints them).
      ConflictError: the directory holds another recipe's stack, or edited files.
    """
    workdir = Path(args.out).resolve()
    recipe_text = _read_recipe(args.recipe)
    digest = _render_inputs_digest(recipe_text)
    if _up_to_date(workdir, digest):
        if not quiet:
            out.print(out.style(f"stack {recipe_name_in(workdir)}", "bold") + f" in {workdir}"
                      " (recipe unchanged since its last render; `mldiag-provision validate` "
                      "shows its preflight report)")
            for line in decisions(workdir):
                out.print(f"  {line}")
        return workdir
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan
    from mldiag_provision.render.stack import GENERATOR, render_stack
    from mldiag_provision.render.writer import write_tree

    catalog = load_catalog()
    res = check_file(args.recipe, catalog)  # reads the file again: same text, the file name
    errors, _ = severity_counts(res.report.problems)
    if errors or res.parsed.recipe is None:
        for p in res.report.problems:
            out.problem(p, res.parsed.sourcemap)
        raise InputError(f"nothing changed: {errors} error(s) in {res.report.file}",
                         problems=res.report.problems)
    recipe = res.parsed.recipe
    existing = recipe_name_in(workdir)
    if existing is not None and existing != recipe.metadata.name:
        raise ConflictError(
            f"{workdir} holds the stack of recipe '{existing}', not '{recipe.metadata.name}'",
            hint="use the work directory of this recipe (-o), or a new one")
    plan = build_plan(recipe, res.shapes, catalog)
    written = write_tree(workdir, render_stack(plan), generator=GENERATOR, stack=plan.name,
                         force=getattr(args, "force", False))
    (workdir / RENDER_STAMP).write_text(json.dumps({"digest": digest}) + "\n")
    if not quiet:
        for p in res.report.problems:
            out.problem(p, res.parsed.sourcemap)
        changed = len(written.written) + len(written.removed)
        out.print(out.style(f"stack {recipe.metadata.name}", "bold") + f" in {workdir}"
                  + (f" (re-rendered {changed} file(s))" if changed else ""))
        for line in plan.decisions:
            out.print(f"  {line}")
    return workdir


def existing_workdir(args: argparse.Namespace) -> Path:
    """``args.out`` for commands that do not render; it must hold this recipe's stack."""
    from mldiag_provision.pipeline import read_text

    workdir = Path(args.out).resolve()
    name = recipe_name_in(workdir)
    if name is None:
        raise UsageError(f"{workdir} holds no rendered stack",
                         hint=f"run `mldiag-provision apply {args.recipe} -o {args.out}` first")
    _, text = read_text(args.recipe)
    import yaml

    try:
        doc = yaml.safe_load(text)
        wanted = doc["metadata"]["name"]
    except Exception:  # any unreadable recipe: `validate` explains it
        wanted = None
    if wanted is not None and wanted != name:
        raise ConflictError(f"{workdir} holds the stack of recipe '{name}', not '{wanted}'",
                            hint="use the work directory of this recipe (-o)")
    return workdir


# --- engine --------------------------------------------------------------------------------------

def make_engine(workdir: Path, command: str, lock: WorkdirLock | None) -> Any:
    from mldiag_provision.engines.terraform import TerraformEngine
    from mldiag_provision.runner import CommandRunner, utc_stamp

    runner = CommandRunner(workdir / LOG_DIR / f"{command}-{utc_stamp()}.log")
    runner.log(f"mldiag-provision {command} in {workdir} (pid {os.getpid()})")
    return TerraformEngine(workdir, runner, keep_fds=[lock.fd] if lock and lock.fd >= 0 else [])


# --- presentation ---------------------------------------------------------------------------------

class Progress:
    """Per-resource progress lines; on a terminal also the starts and the "still ..." ticks."""

    def __init__(self, out: Console, *, live: bool | None = None) -> None:
        self.out = out
        self.live = _isatty(out.stream) if live is None else live
        self.started = time.monotonic()
        self.done = 0

    def __call__(self, ev: ProgressEvent) -> None:
        verb = {"create": "creating", "update": "updating", "delete": "deleting",
                "replace": "replacing", "read": "reading"}.get(ev.action, ev.action or "...")
        if ev.kind == "start" and self.live:
            self.out.print(self.out.style(f"  ... {ev.address}: {verb}", "dim"))
        elif ev.kind == "progress" and self.live:
            self.out.print(self.out.style(f"  ... {ev.address}: still {verb} "
                                          f"({ev.elapsed_s:.0f}s)", "dim"))
        elif ev.kind == "complete":
            self.done += 1
            past = {"create": "created", "update": "updated", "delete": "deleted",
                    "replace": "replaced", "read": "read"}.get(ev.action, "done")
            self.out.print(f"  {self.out.style('ok', 'green')}  {ev.address}: {past} "
                           f"({ev.elapsed_s:.0f}s)")
        elif ev.kind == "error":
            self.out.print(f"  {self.out.style('FAIL', 'red', 'bold')} {ev.address}"
                           + (f": {ev.message}" if ev.message else ""))
        if self.live:
            self.out.stream.flush()


def _isatty(stream: TextIO) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


def show_plan(out: Console, plan: PlanResult) -> None:
    for c in plan.drift:
        out.print(out.style(f"  drift: {c.address} changed outside Terraform", "yellow"))
    for c in plan.changes:
        if c.action in ("no-op", "read"):
            continue
        colour = {"create": "green", "update": "yellow", "replace": "red",
                  "delete": "red"}.get(c.action, "cyan")
        why = f"  (forced by {', '.join(c.replace_paths)})" if c.replace_paths else ""
        out.print(f"  {out.style(SYMBOL.get(c.action, '?'), colour):<3} {c.address}{why}")
    s = plan.summary
    if plan.has_changes:
        extra = (f"; {s.outputs_changed} output(s) change" if s.outputs_changed else "")
        out.print(out.style("plan: ", "bold") + s.text() + extra)
    else:
        out.print(out.style("no changes:", "green", "bold")
                  + " the infrastructure matches the recipe")
    if plan.plan_file is not None and plan.has_changes:
        out.print(f"saved plan: {plan.plan_file} (summary: {plan.plan_file.parent}/"
                  "plan-summary.json)")


def warn_dangers(err: Console, plan: PlanResult) -> None:
    dangers = plan.dangers
    if not dangers:
        return
    bar = "!" * 78
    err.print(err.style(bar, "red", "bold"))
    err.print(err.style(f"WARNING: this plan has {len(dangers)} destructive change(s):",
                        "red", "bold"))
    for d in dangers:
        err.print(err.style(f"  - {d}", "red"))
    err.print(err.style(bar, "red", "bold"))


def confirm(out: Console, plan: PlanResult, *, auto_approve: bool, verb: str,
            stdin: TextIO | None = None) -> None:
    """Ask for ``yes`` on a terminal; refuse (exit 3) without one unless ``auto_approve``.

    Raises:
      ConflictError: not confirmed.
    """
    if auto_approve:
        if plan.dangers:
            out.print(out.style("--auto-approve: going ahead despite the warning above",
                                "yellow", "bold"))
        return
    stdin = stdin or sys.stdin
    if not _isatty(stdin):
        raise ConflictError(f"refusing to {verb} without confirmation: standard input is "
                            "not a terminal",
                            hint="review the plan above, then re-run with --auto-approve "
                                 "(pipelines)")
    question = (f"{verb.capitalize()} these changes ({plan.summary.text()})? "
                + ("THIS IS DESTRUCTIVE. " if plan.dangers else "")
                + "Only 'yes' is accepted: ")
    out.stream.write(out.style(question, "bold"))
    out.stream.flush()
    answer = stdin.readline().strip()
    if answer != "yes":
        raise ConflictError(f"{verb} cancelled (answer was {answer!r}, not 'yes')",
                            hint="nothing was changed; the saved plan is kept for review")


def print_outputs(out: Console, outputs: dict[str, Any]) -> None:
    if not outputs:
        return
    out.print(out.style("outputs:", "bold"))
    for name, o in sorted(outputs.items()):
        value = "(sensitive)" if o.get("sensitive") else json.dumps(o.get("value"))
        out.print(f"  {name} = {value}")


@contextlib.contextmanager
def session(args: argparse.Namespace, out: Console, command: str) -> Iterator[Any]:
    """Render (when ``command`` changes the stack), lock the work directory, and yield the
    engine; the log is closed and the lock released on the way out.

    The lock is taken before rendering when the directory exists, so that a second run
    cannot re-render files under a running one.
    """
    quiet = getattr(args, "output", "text") == "json"
    workdir = Path(args.out).resolve()
    if workdir.exists() and not workdir.is_dir():
        raise UsageError(f"{workdir} is a file, not a work directory",
                         hint="give the stack's directory with -o DIR")
    fresh = not workdir.exists()
    if fresh:
        render(args, out, quiet=quiet)
    with locked(workdir, command) as lock:
        # a fresh directory was just rendered; re-check only (quietly) under the lock
        render(args, out, quiet=quiet or fresh)
        engine = make_engine(workdir, command, lock)
        try:
            yield engine
        except KeyboardInterrupt:
            engine.runner.log("[mldiag] interrupted by the user")
            sys.stderr.write(f"interrupted: terraform was stopped gracefully and its state "
                             f"saved; re-run `mldiag-provision {command}` to converge "
                             f"(log: {engine.runner.log_path})\n")
            raise
        finally:
            engine.runner.close()


def err_console(args: argparse.Namespace) -> Console:
    return Console(sys.stderr, color=False if getattr(args, "no_color", False) else None)
