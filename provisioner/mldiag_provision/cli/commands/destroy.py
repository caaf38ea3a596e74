"""``mldiag-provision destroy RECIPE -o DIR``: remove the stack, stages in reverse order
(workloads, the in-cluster stage, the project stack), from the work directory as last
rendered (the recipe may since have become invalid, or be gone).

Before anything is deleted it refuses when something would stop it midway (deletion
protection on the cluster; a profiles bucket that holds profiles) and names the flag that
lifts it with an update-only apply (``--disable-deletion-protection``,
``--delete-profiles``). The red block names what is lost; the enabled APIs and Log
Analytics on ``_Default`` are kept (removed from the state only)."""

from __future__ import annotations

import argparse
import contextlib
import json
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import describe
from mldiag_provision.console import Console

NAME = "destroy"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    from mldiag_provision.cli.commands._args import add_common
    from mldiag_provision.cli.commands._stack import add_stage_args

    add_common(p, render=False)
    add_stage_args(p)
    p.add_argument("--disable-deletion-protection", action="store_true",
                   help="turn the cluster's deletion protection off (update-only apply) "
                        "before destroying")
    p.add_argument("--delete-profiles", action="store_true",
                   help="delete the profiles bucket even when it holds profiles")
    p.add_argument("--auto-approve", action="store_true",
                   help="do not ask for confirmation (pipelines)")


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cli.commands._stack import (
        Progress,
        all_dangers,
        confirm,
        err_console,
        interrupted,
        open_stack,
        show_stage_plans,
        warn_dangers,
    )
    from mldiag_provision.stack.service import stage_names
    from mldiag_provision.stack.workdir import check_workdir_recipe

    text = args.output == "text"
    progress = Progress(out) if text else None
    err = err_console(args)
    shown: list[Any] = []

    def ask(plans: list[Any]) -> None:
        shown.extend(plans)
        merged = all_dangers(plans)
        if text:
            if progress is not None:
                progress.__exit__()
            show_stage_plans(out, plans)
            if merged is not None:
                warn_dangers(err, merged, destroy=True)
        if merged is None or not merged.has_changes:
            return
        confirm(out, merged, auto_approve=args.auto_approve, verb="destroy")
        if progress is not None:
            progress.__enter__()

    stack = open_stack(args, NAME, reporter=progress.stack_event if progress else None)
    with stack:
        check_workdir_recipe(stack.workdir, args.recipe)
        try:
            with progress or contextlib.nullcontext():
                results = stack.destroy(
                    confirm=ask, only=stage_names(args.stage),
                    disable_deletion_protection=args.disable_deletion_protection,
                    delete_profiles=args.delete_profiles)
        except KeyboardInterrupt as exc:
            interrupted(stack, NAME, exc)
            raise
        log = stack.log_path
    deleted = sum(r.summary.delete for r in results)
    kept = sum(r.kept for r in results)
    if text:
        if deleted or any(not r.skipped for r in results):
            out.print(out.style("destroy complete:", "green", "bold")
                      + f" {deleted} deleted"
                      + (f", {kept} kept (removed from the state only: enabled APIs, Log "
                         "Analytics on _Default)" if kept else "")
                      + (f" (log: {log})" if log else ""))
        else:
            out.print(out.style("nothing to destroy:", "green", "bold")
                      + " no stage has anything applied")
    else:
        out.print(json.dumps({"ok": True, "destroyed": deleted > 0,
                              "stages": [p.to_dict() for p in shown],
                              "results": [r.to_dict() for r in results],
                              "log": str(log) if log else None}, indent=2))
    return 0
