"""``mldiag-provision apply RECIPE -o DIR``: render, ``terraform init``, plan, show the
summary and any destructive change, ask for confirmation (``--auto-approve`` for
pipelines), then apply exactly that saved plan with live per-resource progress."""

from __future__ import annotations

import argparse
import json

from mldiag_provision.console import Console

NAME = "apply"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="render, plan, confirm, then create/update the stack")
    from mldiag_provision.cli.commands._args import add_common

    add_common(p)
    p.add_argument("--auto-approve", action="store_true",
                   help="do not ask for confirmation (pipelines); destructive changes are "
                        "still announced")


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cli.commands._stack import (
        Progress,
        confirm,
        err_console,
        print_outputs,
        session,
        show_plan,
        warn_dangers,
    )

    text = args.output == "text"
    with session(args, out, NAME) as engine:
        engine.init()
        plan = engine.plan()
        if text:
            show_plan(out, plan)
            warn_dangers(err_console(args), plan)
        if not plan.has_changes:
            if not text:
                out.print(json.dumps({"ok": True, "applied": False, **plan.to_dict()},
                                     indent=2))
            return 0
        confirm(out, plan, auto_approve=args.auto_approve, verb="apply")
        result = engine.apply(plan, progress=Progress(out) if text else None)
    if text:
        s = result.summary
        out.print(out.style("apply complete:", "green", "bold")
                  + f" {s.create} created, {s.update} updated, {s.delete} deleted"
                  + f" (log: {engine.runner.log_path})")
        print_outputs(out, result.outputs)
        from pathlib import Path

        from mldiag_provision.cli.commands._stack import agents_stage

        stage = agents_stage(Path(args.out).resolve())
        if stage is not None:
            # the second stage talks to the cluster this apply created; it is applied on its
            # own (its providers are configured from the live cluster)
            out.print("next, inside the cluster (namespace label, KSA, agents): "
                      f"terraform -chdir={stage} init && terraform -chdir={stage} apply")
    else:
        out.print(json.dumps({"ok": True, "applied": True, **plan.to_dict(),
                              "outputs": result.outputs,
                              "log": str(engine.runner.log_path)}, indent=2))
    return 0
