"""``mldiag-provision destroy RECIPE -o DIR``: plan removing the stack, list everything that
goes (loudly for the cluster and a profiles bucket), confirm, then apply that plan. The APIs
stay enabled and a profiles bucket without ``deleteOnDestroy`` keeps its data (Google
refuses to delete a non-empty bucket)."""

from __future__ import annotations

import argparse
import json

from mldiag_provision.console import Console

NAME = "destroy"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="remove everything the stack created (asks first)")
    from mldiag_provision.cli.commands._args import add_common

    add_common(p)
    p.add_argument("--auto-approve", action="store_true",
                   help="do not ask for confirmation (pipelines)")


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cli.commands._stack import (
        Progress,
        confirm,
        err_console,
        session,
        show_plan,
        warn_dangers,
    )

    text = args.output == "text"
    with session(args, out, NAME) as engine:
        engine.init()
        plan = engine.plan(destroy=True)
        if text:
            show_plan(out, plan)
            warn_dangers(err_console(args), plan)
        if not plan.has_changes:
            if not text:
                out.print(json.dumps({"ok": True, "destroyed": False, **plan.to_dict()},
                                     indent=2))
            return 0
        confirm(out, plan, auto_approve=args.auto_approve, verb="destroy")
        result = engine.apply(plan, progress=Progress(out) if text else None)
    if text:
        out.print(out.style("destroy complete:", "green", "bold")
                  + f" {result.summary.delete} deleted (log: {engine.runner.log_path})")
    else:
        out.print(json.dumps({"ok": True, "destroyed": True, **plan.to_dict(),
                              "log": str(engine.runner.log_path)}, indent=2))
    return 0
