"""``mldiag-provision preflight RECIPE [--live]``: the offline preflight of one recipe, and
with ``--live`` the checks against its Google Cloud project (project, permissions, roles,
APIs, GKE version, machine types, reservations, quotas; see
:mod:`mldiag_provision.preflight.live`). One line per check: PASS / FAIL / WARN / SKIP with
the object looked at and a hint; ``--output json``; exit 1 on any FAIL. With ``--sandbox``
the live checks ask the sandbox's local double of Google Cloud's APIs instead
(:mod:`mldiag_provision.sandbox.live_project`): no credential is read, nothing is sent to
Google, and what the sandbox does not model is SKIP.

Also the live gate of ``plan``/``apply`` (:func:`add_live_args`, :func:`live_gate`): run
the same checks before Terraform when credentials exist, stop on a FAIL unless
``--ignore-live-failures`` (announced loudly), skip with ``--offline`` or ``MLDIAG_OFFLINE=1``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, RECIPE_HELP, describe
from mldiag_provision.console import Console, severity_counts
from mldiag_provision.errors import ExitCode, InputError, UsageError, extra_hint

NAME = "preflight"
COLOUR = {"PASS": "green", "FAIL": "red", "WARN": "yellow", "SKIP": "cyan"}


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 300:
        raise argparse.ArgumentTypeError(f"must be between 0 and 300 seconds, not {text!r}")
    return value


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
    p.add_argument("--live", action="store_true",
                   help="ask Google Cloud (application default credentials or "
                        "GOOGLE_OAUTH_ACCESS_TOKEN): project, permissions, roles, APIs, GKE "
                        "version, machine types, reservations, quotas")
    p.add_argument("--live-timeout", type=_timeout, default=10.0, metavar="SECONDS",
                   help="bound of each Google Cloud call (default 10)")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="the stack's work directory: names its plan has are the stack's own "
                        "(--live asks only whether the others are taken), and it keeps them")
    p.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)
    p.add_argument("--sandbox", action="store_true",
                   help="--live asks the sandbox's local double of Google Cloud's APIs (the "
                        "sandbox of -o DIR, else a new one) instead of Google: no credentials "
                        "read; what it does not model is SKIP (also MLDIAG_SANDBOX=1)")


def add_live_args(p: argparse.ArgumentParser) -> None:
    """``--offline``, ``--ignore-live-failures`` and ``--live-timeout`` (plan, apply)."""
    p.add_argument("--offline", action="store_true",
                   help="skip the live checks against Google Cloud (also MLDIAG_OFFLINE=1)")
    p.add_argument("--ignore-live-failures", action="store_true",
                   help="go on to Terraform even when a live check FAILs (announced)")
    p.add_argument("--live-timeout", type=_timeout, default=10.0, metavar="SECONDS",
                   help="bound of each Google Cloud call of the live checks (default 10)")


def _checked_plan(recipe: str, workdir: str | None = None) -> tuple[Any, Any]:
    """(check result, plan) of a valid recipe; the stack in ``workdir`` (plan, apply: just
    rendered) keeps the names it has. Raises InputError when it has errors."""
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan

    catalog = load_catalog()
    res = check_file(recipe, catalog)
    if res.parsed.recipe is None or res.report.errors:
        raise InputError(f"{res.report.file} has {len(res.report.errors)} error(s)",
                         hint=f"run: mldiag-provision validate {recipe}",
                         problems=res.report.errors)
    from mldiag_provision.plan.previous import previous_plan_of

    return res, build_plan(res.parsed.recipe, res.shapes, catalog,
                           previous_plan_of(workdir, res.parsed.recipe.metadata.name))


def run_live(plan: Any, *, timeout_s: float, known: Any = frozenset(),
             ) -> tuple[list[Any], dict[str, float]]:
    """The live rows of ``plan`` (renders its stack in memory to read the resource types);
    ``known``: the (kind, scope, name) keys the stack already has (not asked about).

    Raises:
      UsageError: the ``live`` extra is not installed, or there are no credentials.
    """
    try:
        from mldiag_provision.preflight.live.checks import run_live_checks
    except ImportError as exc:
        raise UsageError(f"the live checks need the Google Cloud client libraries ({exc.name} "
                         "is missing)",
                         hint=extra_hint("live") + ", or run with --offline"
                         ) from None
    from mldiag_provision.preflight.live.target import build_target
    from mldiag_provision.render.stack import render_stack

    return run_live_checks(build_target(plan, render_stack(plan), known), timeout_s=timeout_s)


def print_rows(out: Console, rows: list[Any]) -> None:
    for r in rows:
        out.print(f"{out.style(r.status, COLOUR[r.status], 'bold'):<4} {r.check:<13} "
                  f"{r.message}  [{r.evidence}]")
        if r.hint and r.status in ("FAIL", "WARN"):
            out.print(f"     hint: {r.hint}")


def _counts(rows: list[Any]) -> dict[str, int]:
    return {k: sum(r.status == k for r in rows) for k in ("PASS", "FAIL", "WARN", "SKIP")}


def run(args: argparse.Namespace, out: Console) -> int:
    res, plan = _checked_plan(args.recipe, args.out)
    rows: list[Any] = []
    timings: dict[str, float] = {}
    from mldiag_provision.cli.sandboxed import requested

    sandboxed = requested(args)
    if args.live:
        from mldiag_provision.preflight.live.target import known_names

        known = known_names(args.out)
        if sandboxed:
            rows, timings = _run_live_sandbox(plan, args, known)
        else:
            rows, timings = run_live(plan, timeout_s=args.live_timeout, known=known)
    failed = any(r.status == "FAIL" for r in rows)
    _, warnings = severity_counts(res.report.problems)
    if args.output == "json":
        out.print(json.dumps({"ok": not failed, "file": res.report.file, "project":
                              plan.project, "live": args.live, "sandbox": sandboxed,
                              "counts": _counts(rows),
                              "problems": [p.to_dict() for p in res.report.problems],
                              "checks": [r.to_dict() for r in rows],
                              "elapsedS": round(timings.get("wall_s", 0.0), 3)}, indent=2))
        return int(ExitCode.INVALID if failed else ExitCode.OK)
    for p in res.report.problems:
        out.problem(p, res.parsed.sourcemap)
    out.print(f"{res.report.file}: offline preflight ok"
              + (f" ({warnings} warning(s))" if warnings else ""))
    if not args.live:
        out.print(f"  (add --live to ask {'the sandbox' if sandboxed else 'Google Cloud'} "
                  f"about project {plan.project})")
        return int(ExitCode.OK)
    print_rows(out, rows)
    c = _counts(rows)
    out.print(f"project {plan.project}: {c['FAIL']} failed, {c['WARN']} warning(s), "
              f"{c['PASS']} passed of {len(rows)} checks in {timings['wall_s']:.1f}s")
    return int(ExitCode.INVALID if failed else ExitCode.OK)


def _run_live_sandbox(plan: Any, args: argparse.Namespace, known: Any
                      ) -> tuple[list[Any], dict[str, float]]:
    """:func:`run_live` against the sandbox's Google Cloud APIs
    (:mod:`mldiag_provision.sandbox.live_project`): the project as the sandbox of ``-o DIR``
    holds it (a new one without), checks it does not model as SKIP."""
    from pathlib import Path

    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.sandbox.live_project import live_apis, sandbox_rows

    with live_apis(plan, load_catalog(), Path(args.out) if args.out else None):
        rows, timings = run_live(plan, timeout_s=args.live_timeout, known=known)
    return sandbox_rows(rows), timings


def _live_checks_skipped(args: argparse.Namespace, out: Console) -> bool:
    """Whether the live checks are skipped: ``--offline``, ``MLDIAG_OFFLINE``, or no
    credentials found (said in text output; no network call)."""
    from mldiag_provision.preflight.live import credentials_present, live_checks_disabled

    if args.offline or live_checks_disabled():
        return True
    if not credentials_present():
        if args.output == "text":
            out.print(out.style("live checks skipped: no Google Cloud credentials found "
                                "(application default credentials or "
                                "GOOGLE_OAUTH_ACCESS_TOKEN)", "dim"))
        return True
    return False


def _stop_on_failures(failed: list[Any]) -> None:
    """Stop before Terraform: the first three FAILed checks in the message, each as a
    problem (``live-<check>``).

    Raises:
      InputError: always (exit 1).
    """
    from mldiag_provision.errors import Problem

    raise InputError(
        f"{len(failed)} live check(s) failed; nothing was planned or changed: "
        + "; ".join(r.message for r in failed[:3]) + (" ..." if len(failed) > 3 else ""),
        hint="fix what the FAIL lines name, or re-run with --ignore-live-failures "
             "(Terraform will then likely fail the same way)",
        problems=[Problem(rule=f"live-{r.check}", message=r.message, hint=r.hint)
                  for r in failed])


def _warn_ignored_failures(err: Console, failed: list[Any]) -> None:
    """The red block on stderr: going on to Terraform despite these FAILed checks
    (``--ignore-live-failures``)."""
    bar = "!" * 78
    err.print(err.style(bar, "red", "bold"))
    err.print(err.style(f"--ignore-live-failures: going on to Terraform despite "
                        f"{len(failed)} FAILED live check(s):", "red", "bold"))
    for r in failed:
        err.print(err.style(f"  - {r.message}", "red"))
    err.print(err.style(bar, "red", "bold"))


def live_gate(args: argparse.Namespace, out: Console, err: Console,
              known: Any = frozenset()) -> list[dict[str, Any]]:
    """The live checks before Terraform (plan/apply). Returns the rows (as dicts) for JSON
    output; ``[]`` when skipped: ``--offline``, ``MLDIAG_OFFLINE``, or no credentials found
    (:func:`~mldiag_provision.preflight.live.credentials_present`, no network call).
    ``known``: the names the stack had before this run's render
    (:func:`~mldiag_provision.preflight.live.target.known_names`): not asked about.

    Raises:
      InputError: a check FAILed and ``--ignore-live-failures`` is not set (exit 1), before
        Terraform runs.
    """
    if _live_checks_skipped(args, out):
        return []
    _, plan = _checked_plan(args.recipe, getattr(args, "out", None))
    try:
        rows, timings = run_live(plan, timeout_s=args.live_timeout, known=known)
    except UsageError as exc:  # the extra is missing: say so, do not block Terraform
        err.print(err.style(f"warning: live checks skipped: {exc.message}", "yellow"))
        if exc.hint:
            err.print(f"  hint: {exc.hint}")
        return []
    failed = [r for r in rows if r.status == "FAIL"]
    if args.output == "text":
        out.print(out.style(f"live checks of project {plan.project} "
                            f"({timings['wall_s']:.1f}s):", "bold"))
        print_rows(out, [r for r in rows if r.status != "PASS"] or rows[:0])
        c = _counts(rows)
        out.print(f"  {c['PASS']} passed, {c['FAIL']} failed, {c['WARN']} warning(s)")
    if failed and not args.ignore_live_failures:
        _stop_on_failures(failed)
    if failed:
        _warn_ignored_failures(err, failed)
    return [r.to_dict() for r in rows]
