"""``mldiag-provision cost RECIPE [-O text|json|markdown]``: what the recipe's stack costs per
hour, before anything is created.

Preflights the recipe and builds its plan in memory (nothing is written), then prices the
plan with the offline table (``catalog/data/prices.yaml``, dated and sourced): one line per
cluster fee, slice / node pool, system pool, Slurm node set, login nodes and storage, with
the capacity type, VMs (min..max where a pool autoscales), chips or GPUs, the unit price and
its source. A price the table does not know is shown as unknown with the reason and is never
counted as zero; the total then says it is a lower bound. Exit 0, or 1 for an invalid recipe.

With ``--live``, the TPU chip and GPU machine rows are also priced from the Cloud Billing
Catalog API (the ``live`` extra's google-cloud-billing client, with the live preflight's
credentials): where live and offline differ both are shown and the live price is counted; a
row the table does not know is priced live with the SKU as its source; a row no SKU matches
stays as it was, with the reason (docs/cost.md, "Live prices"). Exit 2 without credentials or
when the API refuses.
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
    p.add_argument("--live", action="store_true",
                   help="also price from the Cloud Billing Catalog API and compare with the "
                        "offline table (needs Google credentials)")
    p.add_argument("--live-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="bound of each Cloud Billing Catalog call with --live (default 30)")


def plan_of(path: str, out: Console, *, text: bool = True) -> dict[str, Any]:
    """The plan (as ``plan.json`` data) of a valid recipe; an invalid one's problems printed
    when ``text`` (JSON output: they travel in the InputError raised).

    Raises:
      InputError: the recipe has errors (exit 1).
    """
    from mldiag_provision.cli.commands._args import valid_plan

    return valid_plan(path, out, "cost", text=text)[1].to_dict()


def live_table(timeout_s: float) -> Any:
    """A :class:`~mldiag_provision.cost.live.LivePriceTable` over the Billing Catalog read
    now (``MLDIAG_GOOGLE_API_ENDPOINT`` replaces its endpoint, as for the live preflight).

    Raises:
      UsageError: the client is not installed, no credentials, or the API refused/failed.
    """
    import os

    from mldiag_provision.errors import UsageError, extra_hint
    from mldiag_provision.preflight.live import ENDPOINT_ENV, credentials_present

    hint = ("run `gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS "
            "or GOOGLE_OAUTH_ACCESS_TOKEN, or leave out --live (the offline table alone)")
    if not credentials_present():
        raise UsageError("cost --live: no Google Cloud credentials to read the Cloud Billing "
                         "Catalog API with", hint=hint)
    try:
        from mldiag_provision.cost.live import BillingCatalog, LivePriceTable
        from mldiag_provision.preflight.live.checks import credentials

        creds = credentials()
        endpoint = os.environ.get(ENDPOINT_ENV, "").strip() or None
        catalog = BillingCatalog.fetch(creds, endpoint=endpoint, timeout_s=timeout_s)
    except ImportError as exc:
        raise UsageError(f"cost --live needs the Google Cloud Billing client ({exc.name} is "
                         "missing)", hint=extra_hint("live")) from None
    except UsageError:
        raise
    except Exception as exc:  # the API's refusal or failure, named
        message = getattr(exc, "message", None) or str(exc)
        raise UsageError(f"cost --live: the Cloud Billing Catalog API failed: "
                         f"{type(exc).__name__}: {message}",
                         hint="the caller needs no role for the public catalog, but the "
                              "Cloud Billing API must be enabled in the credentials' quota "
                              "project; or leave out --live") from None
    return LivePriceTable(catalog)


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.cost import report
    from mldiag_provision.cost.bom import bill_of_materials

    plan = plan_of(args.recipe, out, text=args.output != "json")
    table = live_table(args.live_timeout) if args.live else None
    bill = bill_of_materials(plan, table)
    if args.output == "json":
        out.print(report.to_json(bill, recipe=args.recipe))
    elif args.output == "markdown":
        out.print(report.to_markdown(bill, recipe=args.recipe).rstrip("\n"))
    else:
        out.print(report.to_text(bill, recipe=args.recipe))
    return 0
