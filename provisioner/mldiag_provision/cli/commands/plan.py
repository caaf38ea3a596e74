"""``mldiag-provision plan RECIPE -o DIR``: render, ``terraform init``, then a saved plan
(``DIR/.mldiag/tfplan``) with its summary; ``--detailed-exitcode`` makes it a drift check
(exit 0: no changes, 2: changes) for scheduled GitOps jobs."""

from __future__ import annotations

import argparse
import json

from mldiag_provision.console import Console

NAME = "plan"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="render, then show what apply would change (saved plan)")
    from mldiag_provision.cli.commands._args import add_common

    add_common(p)
    p.add_argument("--destroy", action="store_true", help="plan removing the whole stack")
    p.add_argument("--detailed-exitcode", action="store_true",
                   help="drift check: exit 0 when nothing would change, 2 when something "
                        "would (errors: 1 recipe, 3 refused, 4 terraform)")


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cli.commands._stack import (
        err_console,
        session,
        show_plan,
        warn_dangers,
    )

    with session(args, out, NAME) as engine:
        engine.init()
        result = engine.plan(destroy=args.destroy)
    if args.output == "json":
        from pathlib import Path

        from mldiag_provision.cli.commands._stack import decisions

        out.print(json.dumps({"ok": True, **result.to_dict(),
                              "decisions": decisions(Path(args.out).resolve()),
                              "log": str(engine.runner.log_path)}, indent=2))
    else:
        show_plan(out, result)
        warn_dangers(err_console(args), result)
    return 2 if args.detailed_exitcode and result.has_changes else 0
