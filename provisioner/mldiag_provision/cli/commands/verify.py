"""``mldiag-provision verify RECIPE``: check a live cluster against the recipe's stack.

Slurm stacks are checked on their login node over ssh (:mod:`mldiag_provision.verify.slurm`);
``--smoke`` submits the smoke program there as one batch job per GPU node set
(:mod:`~mldiag_provision.verify.slurm_smoke`), and ``--health`` runs the Cluster Health
Scanner where it is installed (:mod:`~mldiag_provision.verify.slurm_health`).

Read-only checks (namespace label, KSA annotation, agents, CRD, webhook CA bundle,
accelerator nodes); ``--smoke`` also runs the JAX + XProf smoke program on every slice.
Exit code 1 when any check FAILs, so a pipeline can gate on it. With ``--sandbox``,
``--smoke`` runs the program on this machine for each slice, as ``smoke --local`` does
(containers do not run in the sandbox; :mod:`mldiag_provision.verify.local_smoke`).

``--timeout SECONDS`` is an overall deadline on top of each request's own timeout
(``MLDIAG_REQUEST_TIMEOUT_S``): a server that stalls every call, or trickles its answers,
ends the command at the deadline, with each check still pending named as a FAIL (issue 28).
Default: :data:`DEFAULT_TIMEOUT_S`, plus ``--smoke-timeout`` with ``--smoke``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, RECIPE_HELP, describe
from mldiag_provision.console import Console
from mldiag_provision.errors import ExitCode, InputError, UsageError

NAME = "verify"
DEFAULT_TIMEOUT_S = 300.0
"""The read-only checks' overall deadline when ``--timeout`` is not given (seconds): ten
times the default per-request timeout (``kubeclient.REQUEST_TIMEOUT_S``, 30 s), about one
per check; a healthy cluster answers them all in a few seconds."""


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME], description=describe(__doc__))
    p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
    p.add_argument("-o", "--out", metavar="DIR",
                   help="the stack's work directory: reach the cluster through its endpoint "
                        "and your Google credentials (no kubeconfig needed)")
    p.add_argument("--kubeconfig", metavar="PATH", help="default: $KUBECONFIG or ~/.kube/config")
    p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    p.add_argument("--smoke", action="store_true",
                   help="also run the JAX + XProf smoke program on every slice (GKE: one "
                        "JobSet per slice, multislice included; created and deleted. Slurm: "
                        "one sbatch job per GPU node set, one task per node. With --sandbox: "
                        "on this machine, as `smoke --local` does; needs the smoke extra)")
    p.add_argument("--smoke-image", default="python:3.12", metavar="IMAGE",
                   help="with --smoke: the container image the smoke program runs in (it "
                        "needs Python; default python:3.12)")
    p.add_argument("--smoke-timeout", type=float, default=900, metavar="SECONDS",
                   help="with --smoke: how long the smoke JobSets (Slurm: jobs) may take; "
                        "Slurm jobs still queued or running then are cancelled (default 900)")
    from mldiag_provision.cli.commands._stack import _seconds

    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="overall deadline for everything verify asks the API server, on top "
                        f"of each request's own timeout (default {DEFAULT_TIMEOUT_S:g}; with "
                        "--smoke, plus --smoke-timeout); checks still pending then FAIL, "
                        "named")
    p.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)
    p.add_argument("--ssh-target", metavar="USER@HOST",
                   help="Slurm stacks: ssh to this login node (default: gcloud compute ssh "
                        "--tunnel-through-iap to the stack's login node, from -o DIR)")
    p.add_argument("--ssh-option", action="append", default=[], metavar="KEY=VALUE",
                   help="Slurm stacks: an ssh -o option for --ssh-target (repeatable), "
                        "e.g. Port=2222 or IdentityFile=~/.ssh/id_ed25519")
    p.add_argument("--remote-timeout", type=float, default=60, metavar="SECONDS",
                   help="Slurm stacks: the deadline of each command on the login node")
    p.add_argument("--smoke-node-set", action="append", default=None, metavar="ID",
                   help="Slurm stacks, with --smoke: a node set to smoke (repeatable; "
                        "default: every GPU node set)")
    p.add_argument("--smoke-python", metavar="PATH",
                   help="Slurm stacks, with --smoke: the Python with JAX on the nodes "
                        "(default: the SDK venv's, where jax[cuda12] is installed when "
                        "missing, else python3)")
    p.add_argument("--smoke-profile-dir", metavar="DIR",
                   help="Slurm stacks, with --smoke: where the profiles go, one "
                        "subdirectory per node set (default gs://PROFILES_BUCKET/mldiag-smoke)")
    p.add_argument("--health", action="store_true",
                   help="Slurm stacks: also run the Cluster Health Scanner's DCGM check on "
                        "each GPU node set, where it is installed on the login node")
    p.add_argument("--health-path", action="append", default=None, metavar="DIR",
                   help="Slurm stacks, with --health: a checkout of cluster-health-scanner on "
                        "the login node (repeatable; default ~/cluster-health-scanner, "
                        "/opt/cluster-health-scanner)")
    p.add_argument("--health-timeout", type=float, default=1800, metavar="SECONDS",
                   help="Slurm stacks, with --health: how long each node set's scan may take "
                        "(default 1800)")
    from mldiag_provision.cli.commands._args import add_sandbox

    add_sandbox(p)


def run(args: argparse.Namespace, out: Console) -> int:
    """``verify RECIPE``: the Slurm checks over ssh (or the sandbox's login node double) for a
    Slurm stack, else the GKE checks against the cluster's API server. Returns the exit code
    (1 when any check FAILs).

    Raises:
      InputError: the recipe has errors.
      UsageError: the stack has no cluster to verify, or the flags cannot reach it.
    """
    plan, catalog = _plan_of(args)
    if plan.slurm is not None:
        return _run_slurm(args, out, plan)
    if plan.agents is None:
        raise UsageError(f"{plan.blueprint} stacks have no Kubernetes cluster to verify")
    return _run_gke(args, out, plan, catalog)


def _plan_of(args: argparse.Namespace) -> tuple[Any, Any]:
    """The stack plan of ``args.recipe`` (with the names of the stack already in ``-o DIR``:
    an older stack keeps its names; issue 25) and the TPU catalog it was built with.

    Raises:
      InputError: the recipe has errors (hint: run ``validate``).
    """
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.previous import previous_plan_of
    from mldiag_provision.plan.stack import build_plan

    catalog = load_catalog()
    res = check_file(args.recipe, catalog)
    if res.parsed.recipe is None or res.report.errors:
        raise InputError(f"{res.report.file} has {len(res.report.errors)} error(s)",
                         hint=f"run: mldiag-provision validate {args.recipe}",
                         problems=res.report.errors)
    plan = build_plan(res.parsed.recipe, res.shapes, catalog,
                      previous_plan_of(args.out, res.parsed.recipe.metadata.name))
    return plan, catalog


def _run_gke(args: argparse.Namespace, out: Console, plan: Any, catalog: Any) -> int:
    """``verify`` of a GKE stack: the read-only checks, then ``--smoke`` (on the cluster, or
    locally with ``--sandbox``), all under one deadline of ``--timeout`` seconds (default
    :data:`DEFAULT_TIMEOUT_S`, plus ``--smoke-timeout`` with ``--smoke``)."""
    from mldiag_provision import kubeclient
    from mldiag_provision.cli.sandboxed import requested
    from mldiag_provision.verify.checks import Cluster, run_checks

    budget = args.timeout or DEFAULT_TIMEOUT_S + (args.smoke_timeout if args.smoke else 0.0)
    sandboxed = requested(args)
    if args.smoke and sandboxed:
        from mldiag_provision.smoke.local import require_packages

        require_packages()  # before anything is asked of the cluster

    if args.out and not (args.kubeconfig or args.context):
        api = _client_from_workdir(args.out)
    else:
        api = kubeclient.kubeconfig_client(args.kubeconfig, args.context)
    cluster = Cluster(api)
    # from the first request on (reading the kubeconfig and loading the client are not
    # talking to the server)
    deadline = kubeclient.Deadline(budget)
    kubeclient.set_deadline(api, deadline)
    results = run_checks(cluster, plan, catalog, deadline)
    if args.smoke:
        results.extend(_gke_smoke(args, cluster, plan, deadline, sandboxed=sandboxed))
    if sandboxed:
        results = _after_reset(args, plan, results)
    return _report_gke(args, out, plan, results, deadline)


def _gke_smoke(args: argparse.Namespace, cluster: Any, plan: Any, deadline: Any, *,
               sandboxed: bool) -> list[Any]:
    """The ``--smoke`` results of a GKE stack: one pending FAIL when the deadline has passed,
    else the program run locally (``--sandbox``) or as JobSets on the cluster, bounded by
    ``--smoke-timeout`` and what is left of the deadline (seconds)."""
    from mldiag_provision.verify.checks import pending

    if deadline.expired:
        return [pending("smoke", deadline.seconds, in_flight=False)]
    if sandboxed:
        return _smoke_in_sandbox(args, cluster, plan, deadline)
    import os

    from mldiag_provision.verify.checks import guarded, run_smoke

    # how often the pods are polled (seconds); tests against stand-ins poll faster
    poll_s = float(os.environ.get("MLDIAG_SMOKE_POLL_S", "5"))
    # bounded by the deadline too: its wait, and each request (its clean-up of the
    # objects it created is still sent, each under the per-request timeout)
    return list(guarded("smoke", lambda: run_smoke(
        cluster, plan, image=args.smoke_image,
        timeout_s=min(args.smoke_timeout, deadline.remaining()),
        poll_s=poll_s, progress=_progress)))


def _report_gke(args: argparse.Namespace, out: Console, plan: Any, results: list[Any],
                deadline: Any) -> int:
    """Print the GKE results (``-O json``: one document with ``ok``, ``stack``,
    ``strategy``, ``deadline`` and ``checks``; text: a line per check, then a summary and
    the checks the deadline cut short) and return the exit code (1 when any FAILed)."""
    from mldiag_provision.verify.checks import FAIL, PENDING

    failed = any(r.status == FAIL for r in results)
    cut = [r.check for r in results if r.message.startswith(PENDING)]
    if args.output == "json":
        out.print(json.dumps({"ok": not failed, "stack": plan.name,
                              "strategy": plan.agents.strategy,
                              "deadline": {"seconds": deadline.seconds, "passed": bool(cut),
                                           "pending": cut},
                              "checks": [r.to_dict() for r in results]}, indent=2))
    else:
        _print_results(out, results)
        out.print(f"strategy {plan.agents.strategy}; "
                  f"{sum(r.status == FAIL for r in results)} failed of {len(results)} checks")
        if cut:
            out.print(f"deadline: --timeout {deadline.seconds:g} s passed; still pending: "
                      f"{', '.join(cut)}")
    return int(ExitCode.INVALID if failed else ExitCode.OK)


def _after_reset(args: argparse.Namespace, plan: Any, results: list[Any]) -> list[Any]:
    """In the sandbox, an API server that does not answer because the sandbox holds no
    cluster of the stack (``sandbox reset`` emptied it, or it was deleted there) says so,
    instead of the kubeconfig hint meant for a real cluster."""
    import dataclasses
    from pathlib import Path

    from mldiag_provision.sandbox.rules import objects
    from mldiag_provision.sandbox.session import sandbox_dir
    from mldiag_provision.verify.checks import FAIL

    if not args.out or not any(r.check == "api-server" and r.status == FAIL for r in results):
        return results
    name = getattr(plan.cluster, "name", None)
    # a str: rules.objects reads a .root attribute as the plugin Cloud's (a Path has one)
    clusters = objects(str(sandbox_dir(Path(args.out)) / "cloud"), "google_container_cluster")
    if any(c.get("name") == name for c in clusters):
        return results
    return [dataclasses.replace(
        r, message=f"{r.message} (SANDBOX: the sandbox holds no cluster {name})",
        hint="the sandbox was reset (mldiag-provision sandbox reset) or the cluster deleted "
             f"there: run `mldiag-provision apply {args.recipe} -o {args.out} --sandbox` to "
             "create it again, or use a new -o DIR")
        if r.check == "api-server" and r.status == FAIL else r for r in results]


def _progress(line: str) -> None:
    """A progress line of the smoke step, on stderr (stdout stays one JSON document)."""
    import sys

    print(line, file=sys.stderr, flush=True)


def _smoke_in_sandbox(args: argparse.Namespace, cluster: Any, plan: Any,
                      deadline: Any) -> list[Any]:
    """``--smoke`` in the sandbox: the smoke program runs on this machine for each slice, as
    ``smoke --local`` runs it (:mod:`mldiag_provision.verify.local_smoke`); its profiles go
    to ``DIR/.mldiag/sandbox/smoke/<slice>``."""
    from pathlib import Path

    from mldiag_provision.sandbox.session import sandbox_dir
    from mldiag_provision.verify.local_smoke import run_smoke_locally

    return run_smoke_locally(cluster, plan, profile_root=sandbox_dir(Path(args.out)) / "smoke",
                             timeout_s=min(args.smoke_timeout, deadline.remaining()),
                             progress=_progress)


def _client_from_workdir(out: str) -> object:
    """An API client for the cluster of the stack in ``out`` (its outputs + credentials)."""
    from pathlib import Path

    from mldiag_provision.stack import kube
    from mldiag_provision.stack.service import Stack
    from mldiag_provision.stack.workdir import recipe_name_in

    if recipe_name_in(Path(out).resolve()) is None:
        raise UsageError(f"{out} holds no rendered stack",
                         hint="give the work directory of `mldiag-provision apply RECIPE -o "
                              "DIR`, or pass --kubeconfig")
    stack = Stack(Path(out), NAME)  # read-only: no lock
    try:
        target = stack.cluster_target()
    finally:
        stack.__exit__()
    if target is None:
        raise UsageError(f"{out} has no applied cluster to verify",
                         hint="run `mldiag-provision apply RECIPE -o DIR` first, or pass "
                              "--kubeconfig")
    return kube.api_client(target, Path(out).resolve() / ".mldiag")


def _run_slurm(args: argparse.Namespace, out: Console, plan: object) -> int:
    """``verify`` of a managed Slurm stack: checks run on its login node over ssh (the
    sandbox's login node double with ``--sandbox``), then ``--smoke`` / ``--health`` where
    the login node answered ``sinfo``."""
    from mldiag_provision.cli.sandboxed import requested
    from mldiag_provision.verify.checks import FAIL
    from mldiag_provision.verify.slurm import run_slurm_checks

    transport = _slurm_transport(args, plan)
    if args.smoke and requested(args):
        from mldiag_provision.smoke.local import require_packages

        require_packages()  # before anything is asked of the cluster, as on GKE
    results = run_slurm_checks(transport, plan.slurm,  # type: ignore[attr-defined]
                               timeout_s=args.remote_timeout)
    reached = results[0].status != FAIL and not any(r.check == "sinfo" for r in results)
    if (args.smoke or args.health) and reached:
        results += _slurm_extras(args, plan, transport)
    return _report_slurm(args, out, plan, transport, results)


def _slurm_transport(args: argparse.Namespace, plan: object) -> Any:
    """How the Slurm checks reach the login node: the sandbox's double (``--sandbox``), ssh
    to ``--ssh-target``, else ``gcloud compute ssh`` to the login node of ``-o DIR``.

    Raises:
      UsageError: no login node to reach (see :func:`_sandbox_login`, :func:`_login_instance`).
    """
    from mldiag_provision.cli.sandboxed import requested
    from mldiag_provision.verify.slurm import GcloudTransport, SshTransport

    if requested(args):
        return _sandbox_login(args, plan)
    if args.ssh_target:
        return SshTransport(args.ssh_target, args.ssh_option)
    return GcloudTransport(_login_instance(args.out))


def _report_slurm(args: argparse.Namespace, out: Console, plan: Any, transport: Any,
                  results: list[Any]) -> int:
    """Print the Slurm results (``-O json``: one document with ``ok``, ``stack``,
    ``orchestrator``, ``login`` and ``checks``; text: a line per check, then a summary) and
    return the exit code (1 when any FAILed)."""
    from mldiag_provision.verify.checks import FAIL

    failed = any(r.status == FAIL for r in results)
    if args.output == "json":
        out.print(json.dumps({"ok": not failed, "stack": plan.name,
                              "orchestrator": "slurm", "login": transport.where,
                              "checks": [r.to_dict() for r in results]}, indent=2))
    else:
        _print_results(out, results)
        out.print(f"slurm cluster {plan.slurm.cluster_id} via {transport.where}; "
                  f"{sum(r.status == FAIL for r in results)} failed of {len(results)} checks")
    return int(ExitCode.INVALID if failed else ExitCode.OK)


class _SandboxLogin:
    """A :class:`~mldiag_provision.verify.slurm.Transport` to the sandbox's login node double
    (:class:`mldiag_provision.sandbox.slurm_login.LoginNodeDouble`): the command line goes to
    the double as ``ssh`` would send it; an answer that would never come (srun waiting for
    nodes) is a passed deadline, as over ssh."""

    def __init__(self, login: Any) -> None:
        self.login = login
        self.where: str = login.where

    def run(self, command: str, timeout_s: float) -> Any:
        from mldiag_provision.verify.slurm import Remote

        code, out, err = self.login.run(command)
        return Remote(command, code, out, err)


def _sandbox_login(args: argparse.Namespace, plan: Any) -> _SandboxLogin:
    """The login node of the stack's cluster in the sandbox of ``-o DIR``.

    Raises:
      UsageError: ``--ssh-target`` (a real host is outside the sandbox), or the sandbox holds
        no applied cluster with a login node.
    """
    from pathlib import Path

    from mldiag_provision.sandbox.session import sandbox_dir
    from mldiag_provision.sandbox.slurm_login import login_node

    if args.ssh_target:
        raise UsageError("--ssh-target reaches a real login node: the sandbox has its own "
                         "(the login node double of the applied cluster)",
                         hint="leave out --ssh-target with --sandbox, or leave out --sandbox "
                              f"to reach {args.ssh_target}")
    slurm = plan.slurm
    # a reservation is outside the stack, and the sandbox holds none: it is taken to carry the
    # machine type the recipe gives the node sets that use it
    by_compute = {ns.compute_id: ns.machine_type for ns in slurm.node_sets if ns.machine_type}
    reservations = {c.reservation: by_compute[c.id] for c in slurm.compute
                    if c.reservation and c.id in by_compute}
    login = login_node(sandbox_dir(Path(args.out)), cluster_id=slurm.cluster_id,
                       location=slurm.location, project=getattr(plan, "project", None),
                       reservations=reservations)
    if login is None:
        raise UsageError(f"{args.out} has no applied login node: the sandbox holds no Cluster "
                         f"Director cluster {slurm.cluster_id} ({slurm.location}) with one",
                         hint="run `mldiag-provision apply RECIPE -o DIR` first")
    return _SandboxLogin(login)


def _slurm_extras(args: argparse.Namespace, plan: Any, transport: Any) -> list[Any]:
    """``--smoke`` and ``--health`` of a Slurm stack: on the node sets in ``sinfo`` now."""
    import os
    import sys

    from mldiag_provision.verify.slurm import SlurmChecks, guard_many

    rows, err = SlurmChecks(transport, plan.slurm, args.remote_timeout).nodes()
    if rows is None:
        return [err]
    out: list[Any] = []

    def progress(line: str) -> None:  # on stderr: stdout stays one JSON document
        print(line, file=sys.stderr, flush=True)

    from mldiag_provision.cli.sandboxed import requested

    if requested(args):  # jobs do not run in the sandbox (verify/slurm_local.py)
        return _slurm_extras_in_sandbox(args, plan, rows, progress)
    if args.health:
        from mldiag_provision.verify.slurm_health import run_health

        out += guard_many("health", lambda: run_health(
            transport, plan.slurm, rows, paths=args.health_path,
            timeout_s=args.health_timeout, remote_timeout_s=args.remote_timeout))
    if args.smoke:
        from mldiag_provision.verify.slurm_smoke import run_slurm_smoke

        poll_s = float(os.environ.get("MLDIAG_SMOKE_POLL_S", "5"))
        out += guard_many("smoke", lambda: run_slurm_smoke(
            transport, plan, rows, node_sets=args.smoke_node_set, python=args.smoke_python,
            profile_dir=args.smoke_profile_dir, timeout_s=args.smoke_timeout,
            remote_timeout_s=args.remote_timeout, poll_s=poll_s, progress=progress))
    return out


def _slurm_extras_in_sandbox(args: argparse.Namespace, plan: Any, rows: Any,
                             progress: Any) -> list[Any]:
    """``--health`` and ``--smoke`` of a Slurm stack in the sandbox: a SKIP per GPU node set
    for the health scan, the smoke program run locally per node set (profiles under
    ``DIR/.mldiag/sandbox/smoke/<node set>``)."""
    from pathlib import Path

    from mldiag_provision.sandbox.session import sandbox_dir
    from mldiag_provision.verify.slurm import guard_many
    from mldiag_provision.verify.slurm_local import health_in_sandbox, run_slurm_smoke_locally

    out: list[Any] = []
    if args.health:
        out += health_in_sandbox(plan.slurm)
    if args.smoke:
        out += guard_many("smoke", lambda: run_slurm_smoke_locally(
            plan, rows, node_sets=args.smoke_node_set,
            profile_root=sandbox_dir(Path(args.out)) / "smoke", timeout_s=args.smoke_timeout,
            progress=progress))
    return out


def _print_results(out: Console, results: list) -> None:  # type: ignore[type-arg]
    from mldiag_provision.verify.checks import FAIL

    colour = {"PASS": "green", "FAIL": "red", "SKIP": "yellow"}
    for r in results:
        out.print(f"{out.style(r.status, colour[r.status], 'bold'):<4} {r.check:<20} "
                  f"{r.message}  [{r.evidence}]")
        if r.hint and r.status == FAIL:
            out.print(f"     hint: {r.hint}")


def _login_instance(out: str | None) -> str:
    """The first login node (projects/P/zones/Z/instances/NAME) from the ``login_instances``
    output of the stack in ``out``. Raises UsageError without one."""
    from pathlib import Path

    from mldiag_provision.stack.service import Stack
    from mldiag_provision.stack.workdir import recipe_name_in

    how = ("pass --ssh-target USER@HOST, or -o DIR of `mldiag-provision apply RECIPE -o DIR` "
           "(then gcloud compute ssh --tunnel-through-iap reaches the login node)")
    if not out or recipe_name_in(Path(out).resolve()) is None:
        raise UsageError("no login node to reach" + (f": {out} holds no rendered stack"
                                                     if out else ""), hint=how)
    stack = Stack(Path(out), NAME)  # read-only: no lock
    try:
        instances: list[str] = []
        for stage in stack.stages():
            if not stage.engine_driven:
                continue
            eng = stack.engine(stage)
            if eng.never_applied():
                continue
            eng.init()
            value = (eng.outputs().get("login_instances") or {}).get("value") or []
            instances = [str(v) for v in value]
            if instances:
                break
    finally:
        stack.__exit__()
    if not instances:
        raise UsageError(f"{out} has no applied login node (output login_instances is empty)",
                         hint=how)
    return instances[0]
