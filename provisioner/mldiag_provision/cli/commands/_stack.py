"""Presentation shared by ``plan``, ``apply``, ``destroy`` and ``output``: opening the
:class:`~mldiag_provision.stack.service.Stack` for a command, showing plans, progress and
the destructive-change warning, and asking for confirmation. The work itself (render cache,
lock, engines, stages) lives in :mod:`mldiag_provision.stack`.

Not a command module itself (it is not listed in ``MODULES``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from mldiag_provision.cli.commands._args import add_common  # noqa: F401  (re-exported)
from mldiag_provision.console import Console
from mldiag_provision.engines import PlanResult, ProgressEvent
from mldiag_provision.errors import ConflictError, UsageError

SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "read": "<="}
VERB = {"create": "creating", "update": "updating", "delete": "deleting",
        "replace": "replacing", "read": "reading"}
PAST = {"create": "created", "update": "updated", "delete": "deleted",
        "replace": "replaced", "read": "read"}


def _isatty(stream: TextIO) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


# --- progress ------------------------------------------------------------------------------------

class Progress:
    """Per-resource progress lines, and stage/wait lines of a whole-stack run.

    Not on a terminal (CI): one line per resource event and per stage, and a heartbeat line
    whenever nothing was printed for ``heartbeat_s`` seconds (``MLDIAG_HEARTBEAT_S``,
    default 60), so a 10-minute cluster create is never silent. On a terminal: one live view
    (``rich``) of the current stage and the resources in flight, with finished lines above.
    """

    def __init__(self, out: Console, *, live: bool | None = None,
                 heartbeat_s: float | None = None) -> None:
        self.out = out
        self.live = _isatty(out.stream) if live is None else live
        self.started = time.monotonic()
        self.done = 0
        self.stage = ""
        self.activity = "starting"
        self.in_flight: dict[str, tuple[str, float]] = {}
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else float(
            os.environ.get("MLDIAG_HEARTBEAT_S", "60") or 60)
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rich: Any = None
        self._said: set[str] = set()  # messages of errors with no address, printed once

    # lifecycle: re-entrant, so a run can pause the live view to ask a question
    def __enter__(self) -> Progress:
        self._stop = threading.Event()
        if self.live:
            from rich.console import Console as RichConsole
            from rich.live import Live

            self._rich = Live(self._view(), console=RichConsole(file=self.out.stream),
                              refresh_per_second=4, transient=True)
            self._rich.start()
        else:
            self._thread = threading.Thread(target=self._beat, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        if self._thread is not None:
            self._thread.join(timeout=6)
            self._thread = None

    def _view(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        # styled Text, never markup: a stage, activity or address holding "[" stays as
        # written, and no print of a line above can switch markup off for the view
        table = Table.grid(padding=(0, 1))
        elapsed = time.monotonic() - self.started
        table.add_row(Text(self.stage or "stack", style="bold"), Text(self.activity),
                      Text(f"{elapsed:.0f}s", style="dim"))
        now = time.monotonic()
        for addr, (verb, since) in list(self.in_flight.items())[:12]:
            table.add_row(Text(""), Text.assemble((verb, "dim"), " ", addr),
                          Text(f"{now - since:.0f}s", style="dim"))
        return table

    def _line(self, text: str) -> None:
        with self._lock:
            if self._rich is not None:
                from rich.text import Text

                # the line's own colours (ANSI from Console.style) as rich styles; printed as
                # Text, so the live view below it keeps rendering as styles too
                self._rich.console.print(Text.from_ansi(text), highlight=False)
                self._rich.update(self._view())
            else:
                self.out.print(text)
                self.out.stream.flush()
            self._last = time.monotonic()

    def _refresh(self) -> None:
        if self._rich is not None:
            with self._lock:
                self._rich.update(self._view())

    def _beat(self) -> None:
        while not self._stop.wait(min(5.0, self.heartbeat_s)):
            if time.monotonic() - self._last >= self.heartbeat_s:
                flying = ", ".join(f"{a} ({time.monotonic() - s:.0f}s)"
                                   for a, (_, s) in list(self.in_flight.items())[:3])
                self._line(f"  ... still {self.activity}"
                           + (f": {flying}" if flying else "")
                           + f" [{time.monotonic() - self.started:.0f}s elapsed]")

    # events
    def stack_event(self, ev: Any) -> None:
        """A :class:`~mldiag_provision.stack.service.StackEvent`."""
        if ev.kind == "resource" and ev.event is not None:
            self(ev.event)
            return
        self.stage = ev.stage
        if ev.kind == "stage":
            self.activity = ev.message
            self._line(self.out.style(f"== {ev.stage}: {ev.message}", "bold"))
        elif ev.kind == "done":
            self._line(f"== {ev.stage}: {ev.message} ({ev.elapsed_s:.0f}s)")
        elif ev.kind == "wait":
            first = self.activity != ev.message and not ev.elapsed_s
            self.activity = ev.message
            if first or self.live:
                self._line(self.out.style(f"  ... {ev.message}", "dim"))
            else:
                self._refresh()
        elif ev.kind == "note":
            self._line(f"  note: {ev.message}")

    def __call__(self, ev: ProgressEvent) -> None:
        verb = VERB.get(ev.action, ev.action or "...")
        if ev.kind == "start":
            self.in_flight[ev.address] = (verb, time.monotonic())
            if self.live:
                self._refresh()
        elif ev.kind == "progress":
            self._refresh()
        elif ev.kind == "complete":
            self.done += 1
            self.in_flight.pop(ev.address, None)
            self._line(f"  {self.out.style('ok', 'green')}  {ev.address}: "
                       f"{PAST.get(ev.action, 'done')} ({ev.elapsed_s:.0f}s)")
        elif ev.kind == "error" and not ev.address:
            # a diagnostic of the whole run ("execution halted" once per operation cut
            # short by a signal): said once, with the resources it caught in flight
            if ev.message in self._said:
                return
            self._said.add(ev.message)
            flying = list(self.in_flight)
            self._line(f"  {self.out.style('FAIL', 'red', 'bold')} {ev.message or 'error'}"
                       + (f" (in flight: {', '.join(flying)})" if flying else ""))
        elif ev.kind == "error":
            self.in_flight.pop(ev.address, None)
            self._line(f"  {self.out.style('FAIL', 'red', 'bold')} {ev.address}"
                       + (f": {ev.message}" if ev.message else ""))


# --- plans ---------------------------------------------------------------------------------------

def _changed_attributes(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Attribute paths that differ between two values of a resource (drift display)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after)):
            out += _changed_attributes(before.get(key), after.get(key),
                                       f"{prefix}.{key}" if prefix else str(key))
        return out
    if (isinstance(before, list) and isinstance(after, list) and len(before) == len(after)
            and before and all(isinstance(x, dict) for x in before + after)):
        out = []
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            out += _changed_attributes(b, a, f"{prefix}[{i}]")
        return out
    return [] if before == after else [prefix or "(value)"]


def show_plan(out: Console, plan: PlanResult) -> None:
    """The changes of one (Terraform or workloads) plan, then its summary line."""
    for c in plan.drift:
        c = c.full()  # the values, when the engine deferred them
        attrs = _changed_attributes(c.before, c.after)
        what = f": {', '.join(attrs[:8])}" if attrs else ""
        out.print(out.style(f"  drift: {c.address} changed outside Terraform{what}",
                            "yellow"))
    for c in plan.changes:
        if c.action in ("no-op", "read"):
            continue
        colour = {"create": "green", "update": "yellow", "replace": "red",
                  "delete": "red"}.get(c.action, "cyan")
        forced = c.full().replace_paths if c.action == "replace" else c.replace_paths
        why = f"  (forced by {', '.join(forced)})" if forced else ""
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


def show_stage_plans(out: Console, plans: list[Any]) -> None:
    """Every stage's plan (or why it is deferred / absent)."""
    for sp in plans:
        out.print(out.style(f"stage {sp.stage.name}", "bold") + f": {sp.stage.summary}")
        if sp.status == "planned" and sp.plan is not None:
            show_plan(out, sp.plan)
        elif sp.status == "deferred":
            out.print(out.style(f"  ({sp.reason})", "dim"))
        else:
            out.print(out.style(f"  nothing to do ({sp.reason})", "dim"))


def warn_dangers(err: Console, plan: PlanResult, *, destroy: bool | None = None) -> None:
    """The red block: exactly what is lost; on destroy also what is kept."""
    dangers = plan.dangers
    destroy = plan.destroy if destroy is None else destroy
    if not dangers:
        return
    bar = "!" * 78
    err.print(err.style(bar, "red", "bold"))
    err.print(err.style(f"WARNING: this plan has {len(dangers)} destructive change(s):",
                        "red", "bold"))
    for d in dangers:
        err.print(err.style(f"  - {d}", "red"))
    if destroy:
        err.print(err.style("  kept: the enabled APIs stay enabled and Log Analytics stays on "
                            "the _Default log bucket (removed from the state only)", "red"))
    err.print(err.style(bar, "red", "bold"))


def all_dangers(plans: list[Any]) -> PlanResult | None:
    """One PlanResult holding the changes of every planned stage (for the red block)."""
    planned = [sp.plan for sp in plans if sp.plan is not None]
    if not planned:
        return None
    from mldiag_provision.engines import PlanSummary

    total = PlanSummary()
    for p in planned:
        for key in ("create", "update", "replace", "delete", "read", "outputs_changed"):
            setattr(total, key, getattr(total, key) + getattr(p.summary, key))
    merged = PlanResult(has_changes=any(p.has_changes for p in planned), summary=total,
                        destroy=planned[0].destroy)
    for p in planned:
        merged.changes.extend(p.changes)
        merged.drift.extend(p.drift)
    return merged


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


# --- opening the stack ---------------------------------------------------------------------------

def err_console(args: argparse.Namespace) -> Console:
    return Console(sys.stderr, color=False if getattr(args, "no_color", False) else None)


def open_stack(args: argparse.Namespace, command: str, *, reporter: Any = None) -> Any:
    """The :class:`Stack` of ``args.out`` for ``command`` (not yet entered)."""
    from mldiag_provision.stack.kube import ClusterTarget
    from mldiag_provision.stack.service import Stack

    if not str(args.out).strip():
        raise UsageError("-o/--out is empty", hint="give the stack directory, e.g. -o out/stack")
    target = None
    if getattr(args, "kubeconfig", None) or getattr(args, "context", None):
        target = ClusterTarget(kubeconfig=args.kubeconfig, context=args.context)
    return Stack(Path(args.out), command, reporter=reporter, target=target,
                 wait_timeout_s=float(getattr(args, "wait_timeout", 900.0)))


def render_shown(stack: Any, args: argparse.Namespace, out: Console, *, quiet: bool) -> None:
    """Render the recipe into the stack and show the outcome (problems, decisions).

    ``quiet``: machine output (``--output json``): nothing is printed, and an invalid
    recipe's problems travel only in the error raised (the CLI puts them in its document).

    Raises:
      InputError: the recipe has errors (printed first unless ``quiet``, as ``validate``
        prints them).
    """
    from mldiag_provision.stack.workdir import RecipeInvalid

    try:
        res = stack.render(args.recipe, force=getattr(args, "force", False),
                           engine_needed=True)  # plan and apply run it next
    except RecipeInvalid as exc:
        if not quiet:  # JSON output: the problems are in the error's document (cli._main)
            for p in exc.problems:
                out.problem(p, exc.sourcemap)
        raise
    if quiet:
        return
    if res.cached:
        out.print(out.style(f"stack {res.name}", "bold") + f" in {res.workdir}"
                  " (recipe unchanged since its last render; `mldiag-provision validate` "
                  "shows its preflight report)")
    else:
        for p in res.problems:
            out.problem(p, res.sourcemap)
        out.print(out.style(f"stack {res.name}", "bold") + f" in {res.workdir}"
                  + (f" (re-rendered {res.changed} file(s))" if res.changed else ""))
    for line in res.decisions:
        out.print(f"  {line}")


def interrupted(stack: Any, command: str, exc: KeyboardInterrupt | None = None) -> None:
    """Say on stderr how an interrupted run left terraform: ``exc`` is the interrupt (Ctrl-C,
    or :class:`~mldiag_provision.errors.Terminated` for SIGTERM)."""
    from mldiag_provision.errors import Terminated

    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    if exc is not None:
        exc.reported = True  # type: ignore[attr-defined]  # the CLI does not say it again
    stack.log(f"[mldiag] {what}" + ("" if isinstance(exc, Terminated) else " by the user"))
    log = f" (log: {stack.log_path})" if stack.log_path else ""
    if getattr(stack, "stopped_at_once", False):
        sys.stderr.write(f"{what}, then interrupted again: terraform stopped at once, without "
                         "finishing the operations in flight, and says data loss may have "
                         "occurred; run `mldiag-provision plan` to see what the state records, "
                         f"then re-run `mldiag-provision {command}`{log}\n")
        return
    sys.stderr.write(f"{what}: terraform was stopped gracefully and its state saved; "
                     f"re-run `mldiag-provision {command}` to converge{log}\n")


def _seconds(text: str) -> float:
    """``--wait-timeout``: a positive, finite number of seconds."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def add_stage_args(p: argparse.ArgumentParser, *, wait: bool = True) -> None:
    p.add_argument("--stage", action="append", choices=("project", "cluster", "workloads"),
                   help="only this stage (repeatable); default: every stage of the stack")
    if wait:
        p.add_argument("--wait-timeout", type=_seconds, default=900.0, metavar="SECONDS",
                       help="bound of each wait for the cluster between stages (default 900)")
        p.add_argument("--kubeconfig", metavar="PATH",
                       help="reach the cluster through this kubeconfig instead of the stack's "
                            "endpoint and your Google credentials")
        p.add_argument("--context", metavar="NAME", help="kubeconfig context")
