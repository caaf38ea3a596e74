"""``mldiag-provision plan RECIPE -o DIR``: render, then plan every stage (saved Terraform
plans under ``DIR/.mldiag/`` and ``DIR/agents/.mldiag/``); a stage that can only be planned
once an earlier one is applied says so. ``--detailed-exitcode`` makes it a drift check for
scheduled GitOps jobs: exit 0 no changes, 2 changes, 1 any error (as Terraform's
``-detailed-exitcode``: a usage error never reads as drift)."""

from __future__ import annotations

import argparse
import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import describe
from mldiag_provision.console import Console
from mldiag_provision.errors import UsageError

if TYPE_CHECKING:
    from mldiag_provision.engines import EngineUnit

NAME = "plan"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    from mldiag_provision.cli.commands._args import add_common, add_verbose
    from mldiag_provision.cli.commands._stack import add_stage_args

    add_common(p, outputs=("text", "json", "markdown"))
    add_stage_args(p)
    from mldiag_provision.cli.commands.preflight import add_live_args

    add_live_args(p)  # live checks against Google Cloud before Terraform
    add_verbose(p)
    p.add_argument("--destroy", action="store_true", help="plan removing the whole stack")
    p.add_argument("--detailed-exitcode", action="store_true",
                   help="drift check: exit 0 when nothing would change, 2 when something "
                        "would, 1 on any error")


def _require_detailed_exitcode(unit: EngineUnit) -> None:
    """``--detailed-exitcode`` is a drift check only where the engine tells "changes" from
    "no changes" reliably (:attr:`EngineCapability.DETAILED_EXITCODE`).

    Raises:
      UsageError: it does not; exit 1 with --detailed-exitcode, never read as drift.
    """
    from mldiag_provision.engines import EngineCapability

    if not unit.has(EngineCapability.DETAILED_EXITCODE):
        raise UsageError(f"engine '{unit.name}' cannot tell 'changes' from 'no changes' "
                         "reliably, so --detailed-exitcode cannot be a drift check with it",
                         hint="run `plan` without --detailed-exitcode and read the summary")


@dataclass(frozen=True)
class _Outcome:
    """What one ``plan`` run found, for its output: the stage plans, the policy gate's
    result (None with ``--destroy``), the stack's decisions and name, the cost bills
    (before, after; None when it cannot be priced), the run's log and the live checks."""

    plans: list[Any]
    gate: Any
    decisions: list[str]
    stack_name: str
    bills: Any
    log: Any
    live: list[Any]


def _render_or_check(args: argparse.Namespace, out: Console, stack: Any) -> list[Any]:
    """Before planning: render (and run the live checks, which stop here on a FAIL), or with
    ``--destroy`` only check the work directory holds this recipe's stack. Returns the live
    checks' results ([] with ``--destroy``)."""
    from mldiag_provision.cli.commands._stack import err_console, render_shown
    from mldiag_provision.cli.commands.preflight import live_gate

    if args.destroy:
        from mldiag_provision.stack.workdir import check_workdir_recipe

        check_workdir_recipe(stack.workdir, args.recipe)
        return []
    from mldiag_provision.preflight.live.target import known_names

    known = known_names(stack.workdir)  # the stack's names, before the render
    render_shown(stack, args, out, quiet=args.output != "text")
    live: list[Any] = live_gate(args, out, err_console(args), known)  # stops here on a FAIL
    return live


def _plan_gated(args: argparse.Namespace, stack: Any, progress: Any) -> tuple[list[Any], Any]:
    """(the stage plans, the policy gate's result over them; None with ``--destroy``, which
    deletes all). The gate's engine starts while Terraform plans."""
    from mldiag_provision.cli.commands.policy import StagePlansGate
    from mldiag_provision.stack.service import stage_names

    with (StagePlansGate(stack.workdir, args.recipe) if not args.destroy
          else contextlib.nullcontext()) as pending:
        with progress or contextlib.nullcontext():
            plans = stack.plan(stage_names(args.stage), destroy=args.destroy)
        gate = pending.finish(plans) if pending is not None else None
    return plans, gate


def _plan_json(args: argparse.Namespace, o: _Outcome) -> str:
    """The JSON document of a plan: ok (the gate passed), hasChanges, live, the merged
    summary and dangers, the stages, decisions, log, policy, and cost when priced."""
    from mldiag_provision.cli.commands._stack import all_dangers
    from mldiag_provision.cost import report as cost_report

    flat = all_dangers(o.plans)
    return json.dumps({"ok": not (o.gate is not None and o.gate.failed()),
                       "hasChanges": any(p.has_changes for p in o.plans), "live": o.live,
                       **({"summary": flat.summary.to_dict(),
                           "dangers": flat.dangers} if flat else {}),
                       "stages": [p.to_dict() for p in o.plans],
                       "decisions": o.decisions, "log": str(o.log) if o.log else None,
                       "policy": o.gate.to_dict() if o.gate else None,
                       **({"cost": cost_report.change_dict(*o.bills)} if o.bills
                          else {})},
                      indent=2)


def _print_plan(args: argparse.Namespace, out: Console, o: _Outcome) -> None:
    """The plan in ``args.output``: Markdown (:func:`~._markdown.plan_markdown`), JSON
    (:func:`_plan_json`), or text (the stage plans, the cost change, the red block of
    dangers on stderr)."""
    from mldiag_provision.cli.commands._stack import (
        all_dangers,
        err_console,
        show_stage_plans,
        warn_dangers,
    )
    from mldiag_provision.cost import report as cost_report

    if args.output == "markdown":
        from mldiag_provision.cli.commands._markdown import plan_markdown

        out.print(plan_markdown(o.stack_name, o.plans, o.gate, o.decisions,
                                destroy=args.destroy,
                                cost=cost_report.change_markdown(*o.bills) if o.bills else None))
    elif args.output != "text":
        out.print(_plan_json(args, o))
    else:
        show_stage_plans(out, o.plans)
        if o.bills:
            out.print(cost_report.change_text(*o.bills))
        merged = all_dangers(o.plans)
        if merged is not None:
            warn_dangers(err_console(args), merged, destroy=args.destroy)


def run(args: argparse.Namespace, out: Console) -> int:
    """``plan``: render (or check, for ``--destroy``), plan every stage, gate, print; exit 0,
    or 2 for changes with ``--detailed-exitcode``, 1 when the gate fails in JSON output."""
    from mldiag_provision.cli.commands._stack import Progress, open_stack

    text = args.output == "text"
    progress = Progress(out) if text else None
    stack = open_stack(args, NAME, reporter=progress.stack_event if progress else None)
    with stack:
        before = stack.deployed_plan()  # what is deployed (for the cost of this change)
        live = _render_or_check(args, out, stack)
        if args.detailed_exitcode:
            _require_detailed_exitcode(stack.engine_unit)
        plans, gate = _plan_gated(args, stack, progress)
        from mldiag_provision.cost import report as cost_report

        outcome = _Outcome(
            plans=plans, gate=gate, decisions=list(stack.saved.get("decisions", [])),
            stack_name=str(stack.saved.get("name") or stack.workdir.name),
            # the stack's cost per hour, and what this change adds (None: cannot be priced)
            bills=cost_report.bills_of(before, None if args.destroy else stack.saved),
            log=stack.log_path, live=live)
    _print_plan(args, out, outcome)
    if gate is not None:
        if gate.failed() and args.output == "json":  # one JSON document: "ok": false says it
            return 1
        from mldiag_provision.cli.commands.policy import show_gate

        show_gate(gate, out, stack.workdir, text=text, verb="apply would stop here",
                  verbose=args.verbose)
    return 2 if args.detailed_exitcode and any(p.has_changes for p in plans) else 0
