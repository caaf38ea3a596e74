"""``mldiag-provision sandbox ls|reset -o DIR``: what the sandbox cloud of a work directory
holds (the objects ``apply --sandbox`` made there), and emptying it. See
:mod:`mldiag_provision.sandbox.session` for where it lives. ``sandbox rules``: every Google
behaviour the sandbox enforces, with its source
(:data:`mldiag_provision.sandbox.rules.RULES`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, describe
from mldiag_provision.console import Console

NAME = "sandbox"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    p.add_argument("action", choices=("ls", "reset", "rules", "kubeconfig", "serve"),
                   help="ls: list what the sandbox cloud holds; reset: empty it; rules: what "
                        "the sandbox enforces, each with its source; kubeconfig: write a "
                        "kubeconfig for its cluster; serve: keep its cluster's API server "
                        "running (foreground, until Ctrl-C) for kubectl")
    p.add_argument("--kubeconfig-out", metavar="PATH",
                   help="kubeconfig: where to write it (default DIR/.mldiag/sandbox/kubeconfig)")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="the stack's work directory (its sandbox is DIR/.mldiag/sandbox)")
    p.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.errors import UsageError
    from mldiag_provision.sandbox.session import (
        forget_unused,
        inventory,
        kubeconfig,
        reset,
        sandbox_dir,
    )

    if args.action == "rules":
        return _rules(args, out)
    if not args.out:
        raise UsageError(f"sandbox {args.action} needs -o DIR (the stack's work directory)",
                         hint=f"mldiag-provision sandbox {args.action} -o out/my-stack")
    workdir = Path(args.out)
    root = sandbox_dir(workdir)
    target = Path(args.kubeconfig_out) if args.kubeconfig_out else None
    if workdir.exists() and not workdir.is_dir():
        raise UsageError(f"{workdir} is a file, not a work directory",
                         hint="give the -o DIR that apply --sandbox used")
    if args.action in ("kubeconfig", "serve"):
        from mldiag_provision.sandbox.session import has_cluster

        if not has_cluster(workdir):
            raise UsageError(
                f"{workdir} has no sandbox cluster (nothing applied there with --sandbox, "
                "or destroyed since)", hint=f"mldiag-provision apply RECIPE -o {workdir} "
                                            "--sandbox --auto-approve, then run this again")
    if args.action == "kubeconfig":
        out.print(str(kubeconfig(workdir, target)))
        return 0
    if args.action == "serve":
        return _serve(workdir, target, out)
    if not root.is_dir():
        raise UsageError(f"{workdir} has no sandbox ({root} does not exist)",
                         hint=f"mldiag-provision apply RECIPE -o {workdir} --sandbox "
                              "creates it")
    if args.action == "reset" and forget_unused(workdir):
        if args.output == "json":
            out.print(json.dumps({"ok": True, "sandbox": str(root), "removed": 0,
                                  "sandbox_removed": True}))
        else:
            out.print(f"SANDBOX {root}: removed; it held no object and the stack's Terraform "
                      f"state lists nothing applied in it, so {workdir} is a plain work "
                      "directory again (plan/apply it with or without --sandbox)")
        return 0
    if args.action == "reset":
        removed = reset(workdir)
        if args.output == "json":
            out.print(json.dumps({"ok": True, "sandbox": str(root), "removed": removed}))
        else:
            out.print(f"SANDBOX {root}: emptied ({removed} object(s) removed); the stack's "
                      "Terraform state still lists what it applied, so its next plan "
                      "creates it again, and verify or destroy now fail on the missing "
                      "objects: run `mldiag-provision apply RECIPE -o "
                      f"{workdir} --sandbox` to recreate them, then destroy; to start over, "
                      "use a new -o DIR")
        return 0
    entries = inventory(workdir)
    if args.output == "json":
        out.print(json.dumps({"sandbox": str(root), "objects": [
            {"kind": e.kind, "name": e.name, "where": e.where} for e in entries]}, indent=2))
        return 0
    out.print(f"SANDBOX {root}: {len(entries)} object(s)")
    if entries:
        width = max(len(e.kind) for e in entries)
        out.print(f"{'KIND':<{width}}  {'NAME':<40}  WHERE")
        for e in entries:
            out.print(f"{e.kind:<{width}}  {e.name:<40}  {e.where}")
    return 0


def _rules(args: argparse.Namespace, out: Console) -> int:
    # the rule table is plain data in rules.py (no gRPC import)
    from mldiag_provision.sandbox.rules import RULES

    if args.output == "json":
        out.print(json.dumps([{"id": r.id, "when": r.when, "what": r.what, "source": r.source,
                               "verified": r.verified} for r in RULES], indent=2))
        return 0
    out.print(f"SANDBOX rules: {len(RULES)} Google Cloud behaviours the sandbox enforces")
    for r in RULES:
        out.print(f"{r.id} [{r.when}]{'' if r.verified else ' (wording unverified)'}")
        out.print(f"  {r.what}")
        out.print(f"  source: {r.source}")
    return 0


def _serve(workdir: Path, target: Path | None, out: Console) -> int:
    """The sandbox cluster's API server in the foreground until Ctrl-C or SIGTERM; what
    kubectl changed is kept for the next command (exit 0)."""
    import contextlib
    import signal
    import threading

    from mldiag_provision.sandbox.session import kubeconfig, session

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    with session(workdir, "sandbox serve") as sb:
        path = kubeconfig(workdir, target, endpoint=sb.apiserver)
        out.print(f"SANDBOX cluster API server at https://{sb.apiserver} (kubeconfig: {path}); "
                  "Ctrl-C stops it")
        out.stream.flush()
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    out.print("SANDBOX cluster API server stopped; its objects are kept")
    return 0
