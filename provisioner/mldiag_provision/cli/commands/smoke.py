"""``mldiag-provision smoke RECIPE --local``: try the slice's JAX + XProf smoke test here.

Runs the smoke program (``mldiag_provision/smoke/program.py``) for each slice of the recipe
on this machine's CPU, with XLA simulating the slice's devices, and checks with the ``xprof``
package that the captured profile converts to XProf's overview and trace views. The same
program runs in the cluster with ``verify --smoke``. Exit 0 when every slice passed, 1 when
one failed (device count, collective or profile), 2 on a usage error (e.g. JAX missing).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, RECIPE_HELP, describe
from mldiag_provision.console import Console
from mldiag_provision.errors import ExitCode, InputError, UsageError

NAME = "smoke"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
    p.add_argument("--local", action="store_true",
                   help="on this machine's CPU, XLA simulating the slice's device count")
    p.add_argument("--slice", metavar="NAME", action="append",
                   help="only this slice (repeatable; default: every slice)")
    p.add_argument("--profile-dir", metavar="DIR",
                   help="where the profiles go (default: mldiag-smoke/<stack>/<slice>)")
    p.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                   help="bound of the program and of the XProf check, each (default 600)")
    p.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)


def _valid_plan(args: argparse.Namespace) -> Any:
    """The :class:`~mldiag_provision.plan.types.StackPlan` of ``args.recipe``.

    Raises:
      InputError: the recipe has errors (exit 1).
    """
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan

    catalog = load_catalog()
    res = check_file(args.recipe, catalog)
    if res.parsed.recipe is None or res.report.errors:
        raise InputError(f"{res.report.file} has {len(res.report.errors)} error(s)",
                         hint=f"run: mldiag-provision validate {args.recipe}",
                         problems=res.report.errors)
    return build_plan(res.parsed.recipe, res.shapes, catalog)


def _chosen_slices(plan: Any, names: list[str] | None) -> list[Any]:
    """The plan's slices that ``--slice`` names (all without it), in plan order.

    Raises:
      UsageError: a name the recipe has no slice of (the slices listed as hint).
    """
    slices = list(plan.slices)
    if not names:
        return slices
    known = {s.name for s in slices}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"--slice {unknown[0]}: the recipe has no such slice",
                         hint="slices: " + ", ".join(sorted(known)))
    return [s for s in slices if s.name in names]


def _print_result(out: Console, r: Any) -> None:
    """One slice's result as text: PASS/FAIL with devices and the collective's value, the
    profile's XProf views, the timings and log, then each error."""
    rep = r.report or {}
    coll = rep.get("collective") or {}
    prof = r.profile or {}
    status = out.style("PASS", "green", "bold") if r.ok else out.style("FAIL", "red", "bold")
    out.print(f"{status} {r.spec.slice}: {rep.get('devices', '?')} of {r.spec.devices} "
              f"devices in {len(rep.get('devices_by_slice') or {}) or '?'} of "
              f"{r.spec.slices} slice(s); {coll.get('op', 'collective')} = "
              f"{coll.get('got', '?')} (expected {coll.get('expected', '?')})")
    if prof:
        out.print(f"     profile {r.profile_dir}: XProf overview "
                  f"{'ok' if prof.get('overview_rows') else 'missing'}, "
                  f"{prof.get('trace_events', 0)} trace events, "
                  f"{prof.get('step_events', 0)} of the smoke step")
    out.print(f"     program {r.program_s:.1f} s, XProf check {r.check_s:.1f} s; log "
              f"{r.profile_dir / 'smoke.log'}")
    for e in r.errors:
        out.print(f"     error: {e}")


def run(args: argparse.Namespace, out: Console) -> int:
    """``smoke --local``: run the smoke program for each chosen slice here and report;
    exit 0 when every slice passed, 1 otherwise."""
    from pathlib import Path

    from mldiag_provision.plan.smoke import spec_for
    from mldiag_provision.smoke.local import require_packages, run_local

    if not args.local:
        raise UsageError("smoke runs locally only (--local)",
                         hint="in the cluster: mldiag-provision verify RECIPE -o DIR --smoke")
    plan = _valid_plan(args)
    slices = _chosen_slices(plan, args.slice)
    require_packages()
    base = Path(args.profile_dir) if args.profile_dir else Path("mldiag-smoke") / plan.name
    results = []
    for sp in slices:
        spec = spec_for(sp, plan)
        if args.output == "text":
            out.print(f"slice {sp.name}: {spec.devices} simulated devices, mesh "
                      f"{spec.mesh_arg} ...")
        results.append(run_local(spec, name=f"{plan.name}-{sp.name}",
                                 profile_dir=(base / sp.name).resolve(),
                                 timeout_s=args.timeout))
    ok = all(r.ok for r in results)
    if args.output == "json":
        out.print(json.dumps({"ok": ok, "stack": plan.name,
                              "slices": [r.to_dict() for r in results]}, indent=2))
        return int(ExitCode.OK if ok else ExitCode.INVALID)
    for r in results:
        _print_result(out, r)
    out.print(f"{sum(r.ok for r in results)} of {len(results)} slice(s) passed")
    return int(ExitCode.OK if ok else ExitCode.INVALID)
