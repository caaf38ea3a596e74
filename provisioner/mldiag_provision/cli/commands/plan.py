"""``mldiag-provision plan RECIPE -o DIR``: render, then plan every stage (saved Terraform
plans under ``DIR/.mldiag/`` and ``DIR/agents/.mldiag/``); a stage that can only be planned
once an earlier one is applied says so. ``--detailed-exitcode`` makes it a drift check for
scheduled GitOps jobs: exit 0 no changes, 2 changes, 1 any error (as Terraform's
``-detailed-exitcode``: a usage error never reads as drift)."""

from __future__ import annotations

import argparse
import contextlib
import json
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


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cli.commands._stack import (
        Progress,
        all_dangers,
        err_console,
        open_stack,
        render_shown,
        show_stage_plans,
        warn_dangers,
    )
    from mldiag_provision.cli.commands.preflight import live_gate
    from mldiag_provision.stack.service import stage_names

    text = args.output == "text"
    live: list[Any] = []
    progress = Progress(out) if text else None
    stack = open_stack(args, NAME, reporter=progress.stack_event if progress else None)
    with stack:
        before = stack.saved  # the last render (for the cost of this change)
        if not args.destroy:
            from mldiag_provision.preflight.live.target import known_names

            known = known_names(stack.workdir)  # the stack's names, before the render
            render_shown(stack, args, out, quiet=not text)
            live = live_gate(args, out, err_console(args), known)  # stops here on a FAIL
        else:
            from mldiag_provision.stack.workdir import check_workdir_recipe

            check_workdir_recipe(stack.workdir, args.recipe)
        if args.detailed_exitcode:
            _require_detailed_exitcode(stack.engine_unit)
        # The gate: the stack and these plans (a destroy deletes all); its engine starts
        # while Terraform plans.
        from mldiag_provision.cli.commands.policy import StagePlansGate, show_gate

        with (StagePlansGate(stack.workdir, args.recipe) if not args.destroy
              else contextlib.nullcontext()) as pending:
            with progress or contextlib.nullcontext():
                plans = stack.plan(stage_names(args.stage), destroy=args.destroy)
            gate = pending.finish(plans) if pending is not None else None
        decisions = list(stack.saved.get("decisions", []))
        stack_name = str(stack.saved.get("name") or stack.workdir.name)
        from mldiag_provision.cost import report as cost_report

        # the stack's cost per hour, and what this change adds (None: it cannot be priced)
        bills = cost_report.bills_of(before, None if args.destroy else stack.saved)
        log = stack.log_path
    changed = any(p.has_changes for p in plans)
    blocked = gate is not None and gate.failed()
    if args.output == "markdown":
        from mldiag_provision.cli.commands._markdown import plan_markdown

        out.print(plan_markdown(stack_name, plans, gate, decisions, destroy=args.destroy,
                                cost=cost_report.change_markdown(*bills) if bills else None))
    elif not text:
        flat = all_dangers(plans)
        out.print(json.dumps({"ok": not blocked, "hasChanges": changed, "live": live,
                              **({"summary": flat.summary.to_dict(),
                                  "dangers": flat.dangers} if flat else {}),
                              "stages": [p.to_dict() for p in plans],
                              "decisions": decisions, "log": str(log) if log else None,
                              "policy": gate.to_dict() if gate else None,
                              **({"cost": cost_report.change_dict(*bills)} if bills
                                 else {})},
                             indent=2))
    else:
        show_stage_plans(out, plans)
        if bills:
            out.print(cost_report.change_text(*bills))
        merged = all_dangers(plans)
        if merged is not None:
            warn_dangers(err_console(args), merged, destroy=args.destroy)
    if gate is not None:
        if blocked and args.output == "json":  # one JSON document: "ok": false says it
            return 1
        show_gate(gate, out, stack.workdir, text=text, verb="apply would stop here",
                  verbose=args.verbose)
    return 2 if args.detailed_exitcode and changed else 0
