"""``mldiag-provision cost RECIPE [-O text|json|markdown]``: what the recipe's stack costs per
hour, before anything is created.

Preflights the recipe and builds its plan in memory (nothing is written), then prices the
plan with the offline table (``catalog/data/prices.yaml``, dated and sourced): one line per
cluster fee, slice / node pool, system pool, Slurm node set, login nodes and storage, with
the capacity type, VMs (min..max where a pool autoscales), chips or GPUs, the unit price and
its source. A price the table does not know is shown as unknown with the reason and is never
counted as zero; the total then says it is a lower bound. Exit 0, or 1 for an invalid recipe.
"""

from __future__ import annotations

import argparse
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, RECIPE_HELP, describe
from mldiag_provision.console import Console

NAME = "cost"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME],
                       description=describe(__doc__.split("\n\n", 1)[1] if __doc__ else None))
    p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
    p.add_argument("--output", "-O", choices=("text", "json", "markdown"), default="text",
                   help=OUTPUT_HELP)


def plan_of(path: str, out: Console) -> dict[str, Any]:
    """The plan (as ``plan.json`` data) of a valid recipe; its problems printed.

    Raises:
      InputError: the recipe has errors (exit 1).
    """
    from mldiag_provision.cli.commands._args import valid_plan

    return valid_plan(path, out, "cost")[1].to_dict()


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cost import report
    from mldiag_provision.cost.bom import bill_of_materials

    bill = bill_of_materials(plan_of(args.recipe, out))
    if args.output == "json":
        out.print(report.to_json(bill, recipe=args.recipe))
    elif args.output == "markdown":
        out.print(report.to_markdown(bill, recipe=args.recipe).rstrip("\n"))
    else:
        out.print(report.to_text(bill, recipe=args.recipe))
    return 0
