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


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cli.commands._stack import (
        Progress,
        all_dangers,
        confirm,
        err_console,
        interrupted,
        open_stack,
        print_outputs,
        render_shown,
        show_stage_plans,
        warn_dangers,
    )
    from mldiag_provision.cli.commands.preflight import live_gate
    from mldiag_provision.stack.service import stage_names
    from mldiag_provision.stack.stages import StageName

    if args.no_workloads and args.stage and set(args.stage) == {"workloads"}:
        from shlex import quote

        from mldiag_provision.errors import UsageError

        raise UsageError("--stage workloads and --no-workloads contradict each other: "
                         "nothing would be applied",
                         hint=f"to apply the workloads: `mldiag-provision apply "
                              f"{quote(args.recipe)} -o {quote(args.out)} --stage workloads`; "
                              "to leave them out: drop --stage workloads")
    text = args.output == "text"
    only = stage_names(args.stage)
    progress = Progress(out) if text else None
    err = err_console(args)
    # the cost of the stack before and after this change (set after the render)
    bills: tuple[Bill | None, Bill | None] | None = None
    first: list[Any] | None = None  # the plans of the first confirmation (the cost is shown there)

    def ask(plans: list[Any]) -> None:
        merged = all_dangers(plans)
        if merged is None or not any(p.has_changes for p in plans):
            return
        if text:
            show_stage_plans(out, plans)
            if bills and plans is first:
                from mldiag_provision.cost.report import change_text

                out.print(change_text(*bills))
            warn_dangers(err, merged)
        confirm(out, merged, auto_approve=args.auto_approve, verb="apply")

    def ask_later(plans: list[Any]) -> None:  # a deferred stage would delete or replace
        if progress is not None:
            progress.__exit__()
        try:
            ask(plans)
        finally:
            if progress is not None:
                progress.__enter__()

    stack = open_stack(args, NAME, reporter=progress.stack_event if progress else None)
    with stack:
        from mldiag_provision.preflight.live.target import known_names

        known = known_names(stack.workdir)  # the stack's names, before the render
        before = stack.saved  # the last render (for the cost of this change)
        render_shown(stack, args, out, quiet=not text)
        from mldiag_provision.cost.report import bills_of

        bills = bills_of(before, stack.saved)
        live = live_gate(args, out, err, known)  # stops here, before Terraform, on a FAIL
        stages = [s.name for s in stack.stages(only)]
        if args.no_workloads:
            stages = [s for s in stages if s is not StageName.WORKLOADS]
        from mldiag_provision.cli.commands.policy import StagePlansGate, show_gate

        try:
            with StagePlansGate(stack.workdir, args.recipe) as pending:  # starts meanwhile
                with progress or contextlib.nullcontext():
                    plans = stack.plan(stages)
                gate = pending.finish(plans)
            first = plans
            if gate.failed() and text:
                show_stage_plans(out, plans)
            show_gate(gate, out, stack.workdir, text=text, verb="nothing was applied",
                      verbose=args.verbose)
            if not any(p.has_changes for p in plans):
                if text:
                    show_stage_plans(out, plans)
                else:
                    out.print(json.dumps({"ok": True, "applied": False, "live": live,
                                          "stages": [p.to_dict() for p in plans]}, indent=2))
                return 0
            ask(plans)
            with progress or contextlib.nullcontext():
                results = stack.apply(plans, confirm=lambda ps: None if ps is plans
                                      else ask_later(ps))
        except KeyboardInterrupt as exc:
            interrupted(stack, NAME, exc)
            raise
        project = [r for r in results if r.stage is StageName.PROJECT]
        outputs = project[0].outputs if project else {}
        log = stack.log_path
    if text:
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
    else:
        from mldiag_provision.cost.report import change_dict

        out.print(json.dumps({"ok": True, "applied": True, "live": live,
                              "stages": [p.to_dict() for p in plans],
                              "results": [r.to_dict() for r in results],
                              "outputs": outputs, "log": str(log) if log else None,
                              **({"cost": change_dict(*bills)} if bills else {})},
                             indent=2))
    return 0
