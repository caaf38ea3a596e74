"""``mldiag-provision apply RECIPE -o DIR``: render, plan every stage, show the plans and any
destructive change, ask for confirmation (``--auto-approve`` for pipelines), then apply the
stages in order under one lock: the project stack; once the cluster answers, the in-cluster
stage (agents, add-ons, namespace, KSA); then the workloads (``--no-workloads`` skips them).
A stage that can only be planned after an earlier one is planned then, and asks again only
if it would delete or replace something."""

from __future__ import annotations

import argparse
import contextlib
import json
from typing import TYPE_CHECKING, Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import describe
from mldiag_provision.console import Console

if TYPE_CHECKING:
    from mldiag_provision.cost.bom import Bill

NAME = "apply"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    from mldiag_provision.cli.commands._args import add_common, add_verbose
    from mldiag_provision.cli.commands._stack import add_stage_args

    add_common(p)
    add_stage_args(p)
    from mldiag_provision.cli.commands.preflight import add_live_args

    add_live_args(p)  # live checks against Google Cloud before Terraform
    add_verbose(p)
    p.add_argument("--no-workloads", action="store_true",
                   help="leave the recipe's workloads out (project and cluster stages only)")
    p.add_argument("--auto-approve", action="store_true",
                   help="do not ask for confirmation (pipelines); destructive changes are "
                        "still announced")


def _refuse_contradiction(args: argparse.Namespace) -> None:
    """Refuse ``--stage workloads`` with ``--no-workloads`` (nothing would be applied).

    Raises:
      UsageError: both given (exit 2), with the two commands that say either.
    """
    if args.no_workloads and args.stage and set(args.stage) == {"workloads"}:
        from shlex import quote

        from mldiag_provision.errors import UsageError

        raise UsageError("--stage workloads and --no-workloads contradict each other: "
                         "nothing would be applied",
                         hint=f"to apply the workloads: `mldiag-provision apply "
                              f"{quote(args.recipe)} -o {quote(args.out)} --stage workloads`; "
                              "to leave them out: drop --stage workloads")


class _Confirmation:
    """The questions one ``apply`` asks: once for the plans of every stage planned up front
    (with the cost of the change, once ``bills`` is set), and again for a deferred stage that
    would delete or replace something (:meth:`ask_later`, with the progress lines paused).

    ``out``/``err``: the consoles; ``text``: text output (plans and dangers shown, else only
    the question's outcome); ``progress``: the progress lines or None.
    """

    def __init__(self, args: argparse.Namespace, out: Console, err: Console, *, text: bool,
                 progress: Any) -> None:
        self.args = args
        self.out = out
        self.err = err
        self.text = text
        self.progress = progress
        # the cost of the stack before and after this change (set after the render)
        self.bills: tuple[Bill | None, Bill | None] | None = None
        self.first: list[Any] | None = None  # the plans asked first (the cost is shown there)

    def ask(self, plans: list[Any]) -> None:
        """Show ``plans`` and their dangers and ask for confirmation, when any has changes.

        Raises:
          whatever :func:`~._stack.confirm` raises when the answer is no.
        """
        from mldiag_provision.cli.commands._stack import (
            all_dangers,
            confirm,
            show_stage_plans,
            warn_dangers,
        )

        merged = all_dangers(plans)
        if merged is None or not any(p.has_changes for p in plans):
            return
        if self.text:
            show_stage_plans(self.out, plans)
            if self.bills and plans is self.first:
                from mldiag_provision.cost.report import change_text

                self.out.print(change_text(*self.bills))
            warn_dangers(self.err, merged)
        confirm(self.out, merged, auto_approve=self.args.auto_approve, verb="apply")

    def ask_later(self, plans: list[Any]) -> None:
        """:meth:`ask` for a deferred stage that would delete or replace something, with the
        progress lines paused while it asks."""
        if self.progress is not None:
            self.progress.__exit__()
        try:
            self.ask(plans)
        finally:
            if self.progress is not None:
                self.progress.__enter__()


def _print_results(out: Console, results: list[Any], outputs: dict[str, Any],
                   log: Any) -> None:
    """Text output of an apply: one line per stage (created/updated/replaced/deleted, or
    why skipped), the totals with the log's path, then the project stage's outputs."""
    from mldiag_provision.cli.commands._stack import print_outputs

    for r in results:
        s = r.summary
        out.print(out.style(f"stage {r.stage}:", "green", "bold") + (
            f" {r.skipped}" if r.skipped else
            f" {s.create} created, {s.update} updated, {s.replace} replaced, "
            f"{s.delete} deleted"))
    out.print(out.style("apply complete:", "green", "bold")
              + f" {sum(r.summary.create for r in results)} created, "
              + f"{sum(r.summary.update for r in results)} updated, "
              + f"{sum(r.summary.delete for r in results)} deleted"
              + (f" (log: {log})" if log else ""))
    print_outputs(out, outputs)


def _results_json(plans: list[Any], results: list[Any], outputs: dict[str, Any], log: Any,
                  live: Any, bills: tuple[Bill | None, Bill | None] | None) -> str:
    """JSON output of an apply: ``{"ok", "applied": true, "live", "stages", "results",
    "outputs", "log"}`` plus ``"cost"`` (before/after) when the cost is known."""
    from mldiag_provision.cost.report import change_dict

    return json.dumps({"ok": True, "applied": True, "live": live,
                       "stages": [p.to_dict() for p in plans],
                       "results": [r.to_dict() for r in results],
                       "outputs": outputs, "log": str(log) if log else None,
                       **({"cost": change_dict(*bills)} if bills else {})},
                      indent=2)


def _stages_to_apply(stack: Any, only: Any, no_workloads: bool) -> list[Any]:
    """The names of the stack's stages to plan and apply: ``--stage`` (``only``) or all,
    less the workloads with ``--no-workloads``."""
    from mldiag_provision.stack.stages import StageName

    stages = [s.name for s in stack.stages(only)]
    if no_workloads:
        stages = [s for s in stages if s is not StageName.WORKLOADS]
    return stages


def _plan_gated(args: argparse.Namespace, out: Console, stack: Any, stages: list[Any],
                progress: Any) -> list[Any]:
    """Plan ``stages`` (progress lines on) while the policy gate starts, then run the gate
    over the plans and show its result (the plans too when it fails, in text output).

    Raises:
      whatever :func:`~.policy.show_gate` raises for a failed gate: nothing is applied.
    """
    from mldiag_provision.cli.commands._stack import show_stage_plans
    from mldiag_provision.cli.commands.policy import StagePlansGate, show_gate

    text = args.output == "text"
    with StagePlansGate(stack.workdir, args.recipe) as pending:  # starts meanwhile
        with progress or contextlib.nullcontext():
            plans: list[Any] = stack.plan(stages)
        gate = pending.finish(plans)
    if gate.failed() and text:
        show_stage_plans(out, plans)
    show_gate(gate, out, stack.workdir, text=text, verb="nothing was applied",
              verbose=args.verbose)
    return plans


def _print_unchanged(out: Console, plans: list[Any], live: Any, *, text: bool) -> None:
    """Output of an apply with nothing to change: the stage plans (text), or
    ``{"ok": true, "applied": false, "live", "stages"}``."""
    from mldiag_provision.cli.commands._stack import show_stage_plans

    if text:
        show_stage_plans(out, plans)
    else:
        out.print(json.dumps({"ok": True, "applied": False, "live": live,
                              "stages": [p.to_dict() for p in plans]}, indent=2))


def run(args: argparse.Namespace, out: Console) -> int:
    """``apply``: render, live gate, plan and policy gate, confirm, apply, report (exit 0);
    errors raise (:mod:`mldiag_provision.errors`)."""
    from mldiag_provision.cli.commands._stack import (
        Progress,
        err_console,
        interrupted,
        open_stack,
        render_shown,
    )
    from mldiag_provision.cli.commands.preflight import live_gate
    from mldiag_provision.stack.service import stage_names
    from mldiag_provision.stack.stages import StageName

    _refuse_contradiction(args)
    text = args.output == "text"
    only = stage_names(args.stage)
    progress = Progress(out) if text else None
    err = err_console(args)
    questions = _Confirmation(args, out, err, text=text, progress=progress)

    stack = open_stack(args, NAME, reporter=progress.stack_event if progress else None)
    with stack:
        from mldiag_provision.preflight.live.target import known_names

        known = known_names(stack.workdir)  # the stack's names, before the render
        before = stack.deployed_plan()  # what is deployed (for the cost of this change)
        render_shown(stack, args, out, quiet=not text)
        from mldiag_provision.cost.report import bills_of

        questions.bills = bills_of(before, stack.saved)
        live = live_gate(args, out, err, known)  # stops here, before Terraform, on a FAIL
        stages = _stages_to_apply(stack, only, args.no_workloads)
        try:
            plans = _plan_gated(args, out, stack, stages, progress)
            questions.first = plans
            if not any(p.has_changes for p in plans):
                _print_unchanged(out, plans, live, text=text)
                return 0
            questions.ask(plans)
            with progress or contextlib.nullcontext():
                results = stack.apply(plans, confirm=lambda ps: None if ps is plans
                                      else questions.ask_later(ps))
        except KeyboardInterrupt as exc:
            interrupted(stack, NAME, exc)
            raise
        project = [r for r in results if r.stage is StageName.PROJECT]
        outputs = project[0].outputs if project else {}
        log = stack.log_path
    if text:
        _print_results(out, results, outputs, log)
    else:
        out.print(_results_json(plans, results, outputs, log, live, questions.bills))
    return 0
