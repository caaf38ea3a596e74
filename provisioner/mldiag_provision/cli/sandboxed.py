"""``--sandbox`` (or ``MLDIAG_SANDBOX=1``) on ``plan``/``apply``/``verify``/``output``/
``destroy``: the command runs unchanged, inside a :func:`mldiag_provision.sandbox.session.session`
for its work directory, and everything it prints says so.

Marking: a banner line first (on stderr), then every line on stderr, and every line on
stdout in text output, starts with ``[SANDBOX] `` (JSON output on stdout stays one JSON
document, with the banner on stderr). The marked streams are not terminals, so no live
view redraws over the marks. The run log marks its lines too
(:class:`mldiag_provision.runner.CommandRunner`).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from mldiag_provision.console import Console

COMMANDS = frozenset({"plan", "apply", "verify", "output", "destroy"})
"""The commands that run inside a :func:`~mldiag_provision.sandbox.session.session`."""
LIVE_ONLY = frozenset({"preflight"})
"""``preflight --sandbox``: no session (nothing is applied); with ``--live`` its checks ask
the sandbox's Google Cloud APIs (:mod:`mldiag_provision.sandbox.live_project`)."""
PREFIX = "[SANDBOX] "
_READ_OR_UNDO = frozenset({"verify", "output", "destroy"})
"""Commands that create nothing: run where no sandbox was, they leave none behind."""


class MarkedStream:
    """A text stream that writes :data:`PREFIX` at the start of every line to ``inner``."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self._at_start = True

    def write(self, text: str) -> int:
        out = []
        for piece in text.splitlines(keepends=True):
            if self._at_start:
                out.append(PREFIX)
            out.append(piece)
            self._at_start = piece.endswith("\n")
        self.inner.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.inner, "encoding", "utf-8") or "utf-8"


def requested(args: argparse.Namespace) -> bool:
    """Whether this command runs in the sandbox (its ``--sandbox``, or MLDIAG_SANDBOX)."""
    if args.command not in COMMANDS | LIVE_ONLY or not hasattr(args, "sandbox"):
        return False
    from mldiag_provision.sandbox.session import enabled

    return enabled(bool(args.sandbox))


def mark_streams(args: argparse.Namespace) -> Callable[[], None]:
    """Replace ``sys.stdout`` (text output only) and ``sys.stderr`` with marked streams;
    returns the function that puts them back."""
    saved = (sys.stdout, sys.stderr)
    # `output --name N` prints one value for scripts (V=$(mldiag-provision output ...)): it
    # stays bare, as JSON does; the banner on stderr still says SANDBOX
    if getattr(args, "output", "text") == "text" and not (
            args.command == "output" and getattr(args, "name", None)):
        sys.stdout = MarkedStream(saved[0])
    sys.stderr = MarkedStream(saved[1])

    def restore() -> None:
        sys.stdout, sys.stderr = saved

    return restore


def _refuse_unsupported(recipe: str) -> str | None:
    """Stop before anything runs when the recipe needs what the sandbox does not have, so
    that nothing is sent to Google: engine ``pulumi`` (its providers are not doubled), or a
    state backend other than ``local`` and ``gcs``. A ``gcs`` backend is served by the
    sandbox's Cloud Storage double (the session points Terraform's gcs backend at it).

    Returns the recipe's ``gcs`` state bucket, or None (local state, or a recipe the command
    itself will report as unreadable or invalid).

    Raises:
      UsageError: either of those.
    """
    import yaml

    from mldiag_provision.errors import UsageError
    from mldiag_provision.ondisk import open_regular

    try:
        with open_regular(recipe) as f:  # a FIFO or a device is refused, never waited on
            doc = yaml.safe_load(f.read(1024 * 1024 + 1).decode("utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None  # the command itself reports an unreadable or invalid recipe
    spec = (doc or {}).get("spec") if isinstance(doc, dict) else None
    engine = spec.get("engine") if isinstance(spec, dict) else None
    if not isinstance(engine, dict):
        return None
    name = engine.get("name") or "terraform"
    found = engine.get("backend")
    backend: dict[str, Any] = found if isinstance(found, dict) else {}
    kind = backend.get("type")
    if name != "terraform":
        raise UsageError(f"the sandbox runs engine terraform only; {recipe} uses engine "
                         f"{name!r}", hint="try the sandbox with a terraform recipe")
    if kind not in (None, "local", "gcs"):
        raise UsageError(f"the sandbox keeps Terraform state locally or in its Cloud Storage "
                         f"double: {recipe} keeps its state in a {kind!r} backend "
                         "(spec.engine.backend), which would reach outside this machine",
                         hint="run the sandbox on a copy of the recipe with backend type "
                              "gcs or local")
    bucket = backend.get("bucket") if kind == "gcs" else None
    return bucket if isinstance(bucket, str) and bucket else None


def _state_bucket(bucket: str, cloud: Path) -> None:
    """The recipe's ``gcs`` state bucket in the sandbox cloud, made when it is not there: on
    Google Cloud it is made before the first ``terraform init`` (Terraform's gcs backend
    needs an existing bucket: https://developer.hashicorp.com/terraform/language/backend/gcs),
    outside the stack. Says so on stderr (a ``[SANDBOX]`` line) when it makes it; ``destroy``
    keeps it, with the state in it."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]", bucket):
        return  # preflight reports a bad bucket name; nothing is made for it
    where = cloud / "gcs-objects" / bucket
    if where.is_dir():
        return
    where.mkdir(parents=True)
    sys.stderr.write(f"the recipe's state bucket gs://{bucket} is created in the sandbox, as "
                     "it would exist before the first terraform init; destroy keeps it and "
                     "the state in it\n")
    sys.stderr.flush()


_SUGGESTED = r"`(mldiag-provision (?:{})\b[^`]*)`".format("|".join(sorted(COMMANDS | LIVE_ONLY)))


def sandbox_hint(hint: str | None) -> str | None:
    """``hint`` with ``--sandbox`` added to every command it suggests (in backticks) that
    this switch applies to: a hint given inside the sandbox names the command that works
    there, never one that would run against Google Cloud.

    ``"run `mldiag-provision apply RECIPE -o DIR` first"`` becomes
    ``"run `mldiag-provision apply RECIPE -o DIR --sandbox` first"``.
    """
    if not hint:
        return hint

    def add(match: re.Match[str]) -> str:
        command = match.group(1).rstrip()
        return match.group(0) if "--sandbox" in command else f"`{command} --sandbox`"

    return re.sub(_SUGGESTED, add, hint)


def wrap(run: Callable[[argparse.Namespace, Console], int]
         ) -> Callable[[argparse.Namespace, Console], int]:
    """``run`` inside the sandbox of ``args.out``, after the banner.

    Raises:
      UsageError: no ``-o DIR`` (the sandbox lives in the work directory).
    """
    def inner(args: argparse.Namespace, out: Console) -> int:
        from mldiag_provision.errors import MldiagError, UsageError
        from mldiag_provision.sandbox.session import sandbox_dir, session

        if args.command in LIVE_ONLY:
            where = (f"the sandbox of {args.out}" if getattr(args, "out", None)
                     else "a new, empty sandbox project")
            sys.stderr.write(f"{args.command} asks a local double of Google Cloud's APIs "
                             f"({where}; no credentials read, nothing sent to Google)\n")
            sys.stderr.flush()
            try:
                return run(args, out)
            except MldiagError as err:
                err.hint = sandbox_hint(err.hint)
                raise
        if not getattr(args, "out", None):
            raise UsageError(f"{args.command} --sandbox needs -o DIR: the sandbox cloud lives "
                             "in the stack's work directory",
                             hint=f"mldiag-provision {args.command} {args.recipe} -o DIR "
                                  "--sandbox")
        bucket = _refuse_unsupported(args.recipe)
        workdir = Path(args.out)
        if workdir.exists() and not workdir.is_dir():
            raise UsageError(f"{workdir} is a file, not a work directory",
                             hint=f"give a directory: mldiag-provision {args.command} "
                                  f"{args.recipe} -o DIR --sandbox")
        _refuse_mixed(workdir, args.command, sandbox=True)
        fresh = not workdir.exists()
        had_sandbox = sandbox_dir(workdir).exists()
        code = 1
        try:
            with session(workdir, args.command) as sb:
                sys.stderr.write(f"{args.command} runs against a local double of Google "
                                 f"Cloud kept in {sb.root} (no credentials read, nothing "
                                 "sent to Google)\n")
                sys.stderr.flush()
                if args.command in ("plan", "apply"):
                    if bucket:
                        _state_bucket(bucket, sb.cloud)
                    _seed_existing_cluster(args.recipe, sb.cloud, sb.root, sb.apiserver)
                code = run(args, out)
                return code
        except MldiagError as err:
            err.hint = sandbox_hint(err.hint)
            raise
        finally:
            # a command that found no sandbox here and left its cloud empty (it failed, or
            # it had nothing to do there: output/verify/destroy of a stack never applied in
            # the sandbox) leaves no sandbox behind, so that the directory stays what it was
            if not had_sandbox and (code != 0 or args.command in _READ_OR_UNDO):
                _forget(workdir, fresh)

    return inner


def _seed_existing_cluster(recipe: str, cloud: Path, root: Path, endpoint: str) -> None:
    """An ``existing-kubernetes`` recipe runs on a GKE cluster made outside the stack (the
    stack only reads it: ``data.google_container_cluster``). The sandbox cloud starts empty,
    so before ``plan``/``apply`` it gets that cluster when it does not hold it yet, as the
    user's project would: the cluster and location the stack reads (``clusterName``,
    ``clusterLocation`` else the recipe's region), Workload Identity on
    ``PROJECT.svc.id.goog``, the managed ML Diagnostics add-on on (what the stack assumes of an
    existing cluster), one Standard node pool per slice (machine type, VMs, TPU topology,
    GPUs from the recipe's plan), served by the sandbox's API server. ``destroy`` keeps it,
    as it keeps a real existing cluster.

    Says so on stderr (a ``[SANDBOX]`` line). A recipe that does not validate is left to the
    command to report.
    """
    from mldiag_provision.ondisk import open_regular

    try:
        with open_regular(recipe) as f:  # a FIFO or a device is refused, never waited on
            if b"existing-kubernetes" not in f.read(1024 * 1024 + 1):
                return  # not such a recipe: no validation run for it here
    except (OSError, ValueError):
        return  # the command itself reports an unreadable recipe
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.agents import GkeAccessPlan
    from mldiag_provision.plan.stack import build_plan
    from mldiag_provision.sandbox.gke_cluster import seed_gke_cluster

    catalog = load_catalog()
    res = check_file(recipe, catalog)
    if res.parsed.recipe is None or res.report.errors:
        return
    orch = res.parsed.recipe.spec.orchestrator
    if getattr(orch, "type", None) != "existing-kubernetes":
        return
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    access = plan.agents.access if plan.agents is not None else None
    if not isinstance(access, GkeAccessPlan):  # a kubeconfig context: not a GKE cluster
        return
    name, location = access.cluster, access.location
    import json

    for held in (cloud / "google_container_cluster").glob("*.json"):
        state = json.loads(held.read_text(encoding="utf-8")).get("state") or {}
        if (state.get("project"), state.get("name")) == (plan.project, name):
            return
    pools = []
    for sp in plan.slices:
        for i in range(sp.count):
            pool: dict[str, object] = {
                "name": sp.name if sp.count == 1 else f"{sp.name}-{i}",
                "machine_type": sp.machine_type or "a3-highgpu-8g", "node_count": sp.vms,
                "zone": plan.zone,
                "tpu_topology": sp.topology if sp.kind == "tpu" and sp.multi_host else None,
                "labels": {"mldiag-provision/slice": sp.name}}
            if sp.kind == "gpu":
                pool.update(gpu_type=sp.accelerator, gpu_count=sp.chips_per_vm)
            pools.append(pool)

    class _Served:  # what seed_gke_cluster records of the API server: endpoint and CA
        def __init__(self) -> None:
            self.endpoint = endpoint
            self.ca_pem = (root / "apiserver-ca.pem").read_bytes()

    seed_gke_cluster(cloud, project=plan.project, location=location, name=name,
                     api=_Served(), node_pools=pools)  # type: ignore[arg-type]
    sys.stderr.write(f"the recipe's existing cluster {name} ({location}) is created in the "
                     f"sandbox as it would already exist: {len(pools)} node pool(s), "
                     "Workload Identity and the managed ML Diagnostics add-on on; destroy "
                     "keeps it\n")
    sys.stderr.flush()


def _forget(workdir: Path, fresh: bool) -> None:
    """After a command that failed in a sandbox it created, remove that sandbox when its
    cloud holds nothing (and the work directory, when the command created it and left only
    the sandbox there): a refused or failed command leaves no files behind."""
    import contextlib
    import shutil

    from mldiag_provision.sandbox.session import holds_objects, sandbox_dir

    try:
        if holds_objects(workdir):
            return
    except (OSError, ValueError):
        return
    shutil.rmtree(sandbox_dir(workdir), ignore_errors=True)
    state = workdir / ".mldiag"
    if fresh:  # the work-directory lock this command took, when it is all that is left
        with contextlib.suppress(OSError):
            if [p.name for p in state.iterdir()] == ["lock"] and (state / "lock").is_file():
                (state / "lock").unlink()
    for path in (state, workdir):
        if path == workdir and not fresh:
            break
        try:
            path.rmdir()  # only when empty
        except OSError:
            break


def _states(workdir: Path) -> list[Path]:
    """Terraform states of the stack's stages made outside the sandbox: local states
    (``DIR/*.tfstate``, ``DIR/*/*.tfstate``, not the sandbox's own files) and the backend
    records ``terraform init`` writes (``.terraform/terraform.tfstate``: a remote state)."""
    local = [p for p in (*workdir.glob("*.tfstate"), *workdir.glob("*/*.tfstate"))
             if ".mldiag" not in p.parts]
    # a remote state: `terraform init` records the backend in .terraform/terraform.tfstate
    remote = [p for p in (workdir / ".terraform/terraform.tfstate",
                          *workdir.glob("*/.terraform/terraform.tfstate")) if p.is_file()]
    return list(dict.fromkeys(local + remote))


def _refuse_mixed(workdir: Path, command: str, *, sandbox: bool) -> None:
    """One work directory is either a sandbox stack or a Google Cloud one, never both.

    Raises:
      UsageError: without the sandbox, ``workdir`` holds a sandbox (Terraform would run
        against Google Cloud with the sandbox's state); in the sandbox, ``workdir`` holds a
        Terraform state applied without it (the sandbox would plan against real objects).
    """
    from mldiag_provision import ondisk
    from mldiag_provision.errors import UsageError
    from mldiag_provision.sandbox.session import sandbox_dir

    ondisk.check_local_states(workdir)
    root = sandbox_dir(workdir)
    if not sandbox and root.is_dir():
        raise UsageError(
            f"{workdir} is a sandbox stack ({root}): without --sandbox, {command} would run "
            "Terraform against Google Cloud with the sandbox's state",
            hint="add --sandbox (or set MLDIAG_SANDBOX=1); for Google Cloud, render the "
                 "recipe into another -o DIR")
    if sandbox and not root.is_dir() and _states(workdir):
        raise UsageError(
            f"{workdir} holds a Terraform state or backend set up against Google Cloud "
            f"({_states(workdir)[0]}): the sandbox would plan against it",
            hint="give the sandbox its own work directory: -o another DIR")


def refuse_mixed(args: argparse.Namespace) -> None:
    """:func:`_refuse_mixed` for a command run without the sandbox (its ``-o DIR``)."""
    out = getattr(args, "out", None)
    if args.command in COMMANDS and out:
        _refuse_mixed(Path(out), args.command, sandbox=False)


def guarded(run: Callable[[argparse.Namespace, Console], int]
            ) -> Callable[[argparse.Namespace, Console], int]:
    """``run`` (a command with ``--sandbox`` run without it), after refusing a work
    directory that is a sandbox stack (:func:`_refuse_mixed`)."""
    def inner(args: argparse.Namespace, out: Console) -> int:
        refuse_mixed(args)
        return run(args, out)

    return inner
