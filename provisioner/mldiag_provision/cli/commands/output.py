"""``mldiag-provision output RECIPE -o DIR [--name NAME] [--stage cluster]``: the applied
stack's outputs (``terraform output -json``); sensitive values are hidden in text output."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import describe
from mldiag_provision.console import Console

NAME = "output"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    from mldiag_provision.cli.commands._args import add_common

    add_common(p, render=False)
    p.add_argument("--name", metavar="NAME", help="print one output only (its raw value)")
    p.add_argument("--stage", choices=("project", "cluster"), default="project",
                   help="the Terraform stage whose outputs to show (default project)")


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cli.commands._stack import open_stack, print_outputs
    from mldiag_provision.errors import UsageError
    from mldiag_provision.stack.stages import StageName
    from mldiag_provision.stack.workdir import check_workdir_recipe

    with open_stack(args, NAME) as stack:
        check_workdir_recipe(stack.workdir, args.recipe)
        outputs = stack.outputs(StageName(args.stage))
    if args.name is not None:
        if args.name not in outputs:
            raise UsageError(f"no output named '{args.name}'",
                             hint="known: " + (", ".join(sorted(outputs)) or "none (apply "
                                                                               "first)"))
        value = outputs[args.name].get("value")
        out.print(value if isinstance(value, str) else json.dumps(value))
        return 0
    if args.output == "json":
        # sensitive values stay off the terminal here too; --name NAME prints one on request
        out.print(json.dumps({k: ("(sensitive)" if v.get("sensitive") else v.get("value"))
                              for k, v in sorted(outputs.items())}, indent=2))
    elif outputs:
        print_outputs(out, outputs)
    else:
        out.print("no outputs yet: run `mldiag-provision apply` first")
    return 0
