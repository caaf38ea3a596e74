"""``fleet plan --sandbox|--terraform``: run ``plan`` for each affected recipe, in this
process, exactly as ``mldiag-provision plan RECIPE -o DIR -O json [--sandbox]`` would (the
same parser, the same ``run``, the same sandbox wrapper), and read its JSON document back
into a :class:`~mldiag_provision.fleet.tfplan.TerraformPlan`.

Not a command module itself (it is not listed in ``MODULES``).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mldiag_provision.console import Console
from mldiag_provision.errors import MldiagError, UsageError

if TYPE_CHECKING:
    import argparse

    from mldiag_provision.fleet.tfplan import TerraformPlan


def mode_of(args: argparse.Namespace) -> str:
    """``offline``, ``sandbox`` or ``terraform`` from ``--offline-only``, ``--sandbox``
    (or ``MLDIAG_SANDBOX``, the switch ``plan`` reads), ``--terraform``.

    Raises:
      UsageError: ``--terraform`` while ``MLDIAG_SANDBOX`` is on (which one is meant is not
        clear), ``MLDIAG_SANDBOX`` neither on nor off, or ``--detailed-exitcode`` on an
        offline summary (nothing there knows what would change).
    """
    from mldiag_provision.sandbox.session import SANDBOX_ENV, enabled

    if args.offline_only:
        mode = "offline"
    elif args.terraform:
        if enabled(False):
            raise UsageError(f"--terraform plans against Google Cloud, but {SANDBOX_ENV} "
                             "asks for the sandbox",
                             hint=f"unset {SANDBOX_ENV} for Google Cloud, or use --sandbox")
        mode = "terraform"
    else:
        mode = "sandbox" if enabled(bool(args.sandbox)) else "offline"
    if mode == "offline" and args.detailed_exitcode:
        raise UsageError("--detailed-exitcode needs Terraform's plan of each recipe; the "
                         "offline summary does not know what would change",
                         hint="add --sandbox (the local double of Google Cloud) or "
                              "--terraform (Google Cloud, with credentials)")
    return mode


def plan_recipe(recipe: str, workdir: Path, *, sandbox: bool,
                stages: Sequence[str] = ()) -> TerraformPlan:
    """``plan RECIPE -o WORKDIR -O json [--stage S]... [--sandbox]`` in this process.

    Errors of that plan (engine, usage, refused: exit codes 2-4) are returned in the plan's
    ``error``, never raised, so that one broken recipe does not hide the others' plans.
    """
    from mldiag_provision.cli import sandboxed
    from mldiag_provision.cli._main import build_parser
    from mldiag_provision.cli.commands import plan
    from mldiag_provision.fleet import tfplan

    argv = ["plan", recipe, "-o", str(workdir), "-O", "json", "--no-color"]
    for s in stages:
        argv += ["--stage", s]
    if sandbox:
        argv.append("--sandbox")
    args = build_parser("plan", full=False).parse_args(argv)
    run = sandboxed.wrap(plan.run) if sandbox else sandboxed.guarded(plan.run)
    buffer = io.StringIO()
    try:
        run(args, Console(buffer, color=False))
    except MldiagError as exc:
        return tfplan.failed(str(workdir), exc.message, exc.hint, int(exc.exit_code))
    try:
        doc = json.loads(buffer.getvalue())
    except ValueError:
        return tfplan.failed(str(workdir), "plan printed no JSON document", None, None)
    return tfplan.from_document(doc, str(workdir))


def plan_all(pairs: Sequence[tuple[str, str, bool]], work_root: Path, *, sandbox: bool,
             stages: Sequence[str]) -> list[TerraformPlan]:
    """One plan per ``(recipe file, path relative to the repository root, preflight ok)``,
    in order, each in ``work_root/<relative path without its suffix>``; a recipe whose
    preflight failed is not planned (its plan says so). Progress goes to stderr."""

    if sandbox:  # every line on stderr says SANDBOX, as a single command's do
        from mldiag_provision.cli.sandboxed import MarkedStream

        saved = sys.stderr
        if not isinstance(saved, MarkedStream):
            sys.stderr = MarkedStream(saved)
        try:
            return _plan_each(pairs, work_root, sandbox=True, stages=stages)
        finally:
            sys.stderr = saved
    return _plan_each(pairs, work_root, sandbox=False, stages=stages)


def _plan_each(pairs: Sequence[tuple[str, str, bool]], work_root: Path, *, sandbox: bool,
               stages: Sequence[str]) -> list[TerraformPlan]:
    """:func:`plan_all`'s loop."""
    from mldiag_provision.fleet import tfplan

    err = Console(sys.stderr)
    plans = []
    for file, relative, ok in pairs:
        workdir = tfplan.workdir_for(work_root, relative)
        if not ok:
            plans.append(tfplan.not_run(str(workdir), "the recipe's preflight has errors"))
            continue
        err.print(f"fleet plan: planning {relative} in {workdir}"
                  + (" (sandbox)" if sandbox else ""))
        plans.append(plan_recipe(file, workdir, sandbox=sandbox, stages=stages))
    return plans
