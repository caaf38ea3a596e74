"""Checks of a live managed Slurm cluster, run on its login node over ssh.

The login node is reached the way users reach it: plain ``ssh`` to ``user@host``
(:class:`SshTransport`, ``verify --ssh-target``), or ``gcloud compute ssh NAME
--tunnel-through-iap`` (:func:`gcloud_ssh_argv`) with NAME from the stack's
``login_instances`` output. Every remote command is read-only, has a deadline, and its
output is parsed defensively: output the checks did not expect is a FAIL naming the command,
never an exception.

Each check returns a :class:`~mldiag_provision.verify.checks.CheckResult`. Expectations come
from ``plan.slurm`` (:class:`~mldiag_provision.plan.slurm.SlurmPlan`).

How a Slurm node is matched to a recipe node set: the node carries the node set id as a
feature (``sinfo %f``), or its name ends in ``-<node set id>-<index>`` (the Slurm on Google
Cloud naming, ``<cluster>-<nodeset>-<n>``; confidence M: Cluster Director does not document
its node names; docs/slurm-verify.md).
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mldiag_provision.verify.checks import FAIL, PASS, SKIP, CheckResult

if TYPE_CHECKING:
    from mldiag_provision.plan.slurm_types import MountPlan, NodeSetPlan, SlurmPlan

DEFAULT_TIMEOUT_S = 60.0
"""Deadline of one remote command, seconds (``verify --remote-timeout``)."""

# sinfo's long node states (%T) that mean a node cannot run jobs; a trailing "*" means the
# node does not respond (sinfo(1), NODE STATE CODES).
BAD_STATES = ("down", "drain", "drained", "draining", "fail", "failing", "inval",
              "not_responding", "unknown")

FSTYPES = {"filestore": ("nfs", "nfs4"), "lustre": ("lustre",),
           "bucket": ("fuse.gcsfuse", "fuse")}
"""The file system types ``findmnt`` reports for each storage kind."""
CLIENTS = {"filestore": "mount.nfs", "lustre": "mount.lustre", "bucket": "gcsfuse"}
"""The client program a host needs to mount each storage kind."""
KIND_NAMES = {"filestore": "Filestore", "lustre": "Lustre", "bucket": "Cloud Storage bucket"}


@dataclass(frozen=True)
class Remote:
    """The result of one remote command."""

    command: str
    returncode: int | None
    """``None`` when the deadline passed."""
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def why(self) -> str:
        if self.timed_out:
            return f"`{self.command}` did not finish before its deadline"
        err = (self.stderr.strip().splitlines() or self.stdout.strip().splitlines() or [""])
        return f"`{self.command}` exited {self.returncode}: {err[-1][:300]}"


class Transport(Protocol):
    """Runs one shell command on the login node."""

    where: str
    """The login node, for evidence (``root@127.0.0.1``, ``instance NAME``)."""

    def run(self, command: str, timeout_s: float) -> Remote: ...


def _run_argv(argv: Sequence[str], command: str, timeout_s: float) -> Remote:
    try:
        r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s,
                           check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return Remote(command, None, out, "")
    except OSError as exc:
        return Remote(command, 127, "", f"{argv[0]}: {exc.strerror or exc}")
    return Remote(command, r.returncode, r.stdout, r.stderr)


class SshTransport:
    """``ssh -o BatchMode=yes [-o KEY=VALUE ...] TARGET -- COMMAND``: never prompts."""

    def __init__(self, target: str, options: Sequence[str] = (),
                 connect_timeout_s: int = 20) -> None:
        self.where = target
        self.argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect_timeout_s}"]
        for opt in options:
            self.argv += ["-o", opt]
        self.argv += [target, "--"]

    def run(self, command: str, timeout_s: float) -> Remote:
        return _run_argv([*self.argv, command], command, timeout_s)


_INSTANCE = re.compile(r"^projects/([^/]+)/zones/([^/]+)/instances/([^/]+)$")


def gcloud_ssh_argv(instance: str, command: str, *, iap: bool = True) -> list[str]:
    """``gcloud compute ssh NAME --zone Z --project P [--tunnel-through-iap] --command CMD``
    for a login node given as ``projects/P/zones/Z/instances/NAME`` (the
    ``login_instances`` output). Raises ValueError for any other shape."""
    m = _INSTANCE.match(instance)
    if m is None:
        raise ValueError(f"not a projects/P/zones/Z/instances/NAME path: {instance!r}")
    project, zone, name = m.groups()
    argv = ["gcloud", "compute", "ssh", name, f"--zone={zone}", f"--project={project}"]
    if iap:
        argv.append("--tunnel-through-iap")
    return [*argv, f"--command={command}", "--", "-o", "BatchMode=yes"]


class GcloudTransport:
    """``gcloud compute ssh`` to a login node (IAP tunnel; OS Login as gcloud sets it up)."""

    def __init__(self, instance: str, iap: bool = True) -> None:
        gcloud_ssh_argv(instance, "true", iap=iap)  # the shape is checked once, here
        self.instance, self.iap = instance, iap
        self.where = f"instance {instance.rsplit('/', 1)[-1]}"

    def run(self, command: str, timeout_s: float) -> Remote:
        return _run_argv(gcloud_ssh_argv(self.instance, command, iap=self.iap), command,
                         timeout_s)


@dataclass(frozen=True)
class NodeRow:
    """One row of ``sinfo -N``: a node in one partition."""

    node: str
    partition: str
    features: tuple[str, ...]
    state: str


SINFO = "sinfo -h -N -o '%N|%R|%f|%T'"


def parse_sinfo(out: str) -> list[NodeRow]:
    """Rows of :data:`SINFO`. Raises ValueError on a line of another shape."""
    rows = []
    for line in out.splitlines():
        if not line.strip():
            continue
        parts = line.strip().split("|")
        if len(parts) != 4 or not parts[0] or not parts[1]:
            raise ValueError(f"unexpected line {line.strip()[:200]!r}")
        feats = tuple(f for f in parts[2].split(",") if f and f != "(null)")
        rows.append(NodeRow(parts[0], parts[1], feats, parts[3]))
    return rows


def in_node_set(row: NodeRow, node_set: str) -> bool:
    return node_set in row.features or re.search(rf"-{re.escape(node_set)}-\d+$",
                                                 row.node) is not None


def bad_state(state: str) -> bool:
    s = state.lower()
    return s.endswith("*") or any(s.rstrip("~#%!$@^-*").startswith(b) for b in BAD_STATES)


class SlurmChecks:
    """The checks of one cluster; ``transport`` reaches its login node."""

    def __init__(self, transport: Transport, plan: SlurmPlan,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.t, self.plan, self.timeout_s = transport, plan, timeout_s

    def _sh(self, command: str) -> Remote:
        return self.t.run(command, self.timeout_s)

    # -- login --------------------------------------------------------------------------
    def login(self) -> CheckResult:
        r = self._sh("hostname")
        if r.returncode != 0 or not r.stdout.strip():
            return CheckResult("login", FAIL, f"cannot run a command on the login node: "
                               f"{r.why()}", self.t.where,
                               "check --ssh-target / --ssh-option, or that the cluster is "
                               "applied (mldiag-provision output RECIPE -o DIR)")
        return CheckResult("login", PASS, f"logged in to {r.stdout.strip().splitlines()[0]}",
                           self.t.where)

    # -- partitions and node sets ------------------------------------------------------------
    def nodes(self) -> tuple[list[NodeRow] | None, CheckResult | None]:
        r = self._sh(SINFO)
        if r.returncode != 0:
            return None, CheckResult("sinfo", FAIL, r.why(), self.t.where,
                                     "is slurmctld up? run sinfo on the login node")
        try:
            return parse_sinfo(r.stdout), None
        except ValueError as exc:
            return None, CheckResult("sinfo", FAIL, f"`{SINFO}` printed an {exc}",
                                     self.t.where, "a Slurm whose sinfo prints other columns?")

    def partitions(self, rows: list[NodeRow]) -> list[CheckResult]:
        have = {r.partition for r in rows}
        out = []
        for p in self.plan.partitions:
            evidence = f"partition {p.id}"
            if p.id not in have:
                out.append(CheckResult(
                    f"partition:{p.id}", FAIL,
                    f"partition {p.id} (node sets {', '.join(p.node_set_ids)}) is not in "
                    f"sinfo (partitions there: {', '.join(sorted(have)) or 'none'})", evidence,
                    "apply the recipe again (mldiag-provision apply), or fix "
                    "spec.slurm.partitions"))
                continue
            nodes = {r.node for r in rows if r.partition == p.id}
            lacking = [ns for ns in p.node_set_ids
                       if not any(in_node_set(r, ns) for r in rows if r.partition == p.id)]
            if lacking:
                out.append(CheckResult(
                    f"partition:{p.id}", FAIL,
                    f"partition {p.id} holds no node of node set {', '.join(lacking)} "
                    f"(its nodes: {', '.join(sorted(nodes))})", evidence,
                    f"scontrol show partition {p.id}; the recipe puts node sets "
                    f"{', '.join(p.node_set_ids)} in it"))
                continue
            out.append(CheckResult(f"partition:{p.id}", PASS,
                                   f"{len(nodes)} node(s), node sets "
                                   f"{', '.join(p.node_set_ids)}", evidence))
        return out

    def node_set(self, ns: NodeSetPlan, rows: list[NodeRow]) -> CheckResult:
        states: dict[str, str] = {}
        for r in rows:
            if in_node_set(r, ns.id):
                states[r.node] = r.state
        dynamic = ns.max_dynamic_node_count or 0
        want = ns.static_node_count + dynamic
        evidence = f"node set {ns.id}"
        spell = f"{ns.static_node_count} static" + (f" + {dynamic} dynamic" if dynamic else "")
        if len(states) != want:
            return CheckResult(
                f"node-set:{ns.id}", FAIL,
                f"node set {ns.id} has {len(states)} node(s) in Slurm, the recipe wants {want} "
                f"({spell})", evidence,
                f"apply the recipe again, or set spec.slurm.nodeSets[{ns.id}] "
                "staticNodeCount/maxDynamicNodeCount to what the cluster should have; "
                "powered-down cloud nodes are listed only with PrivateData=cloud in "
                "slurm.conf (scontrol show config | grep PrivateData)")
        bad = sorted(n for n, s in states.items() if bad_state(s))
        if bad:
            return CheckResult(
                f"node-set:{ns.id}", FAIL,
                f"node set {ns.id}: " + ", ".join(f"{n} is {states[n]}" for n in bad[:5]),
                evidence, "scontrol show node NAME gives the Reason; "
                          "scontrol update nodename=NAME state=resume once fixed")
        return CheckResult(f"node-set:{ns.id}", PASS,
                           f"{len(states)} node(s) ({spell}): "
                           + ", ".join(f"{n} {s}" for n, s in sorted(states.items())[:5]),
                           evidence)

    # -- storage ------------------------------------------------------------------------
    def storage(self) -> list[CheckResult]:
        out = []
        by_id = {s.id: s for s in self.plan.storage}
        for m in self.plan.login_nodes.storage:
            st = by_id.get(m.id)
            kind = st.kind if st is not None and st.kind else "filestore"
            out.append(self._mount(f"storage:{m.id}", m.local_mount, kind, self._sh,
                                   self.t.where))
        return out

    def node_mount(self, ns: NodeSetPlan, rows: list[NodeRow], m: MountPlan) -> CheckResult:
        """One mount of the node set, on one of its nodes (through ``srun``)."""
        st = {s.id: s for s in self.plan.storage}.get(m.id)
        kind = st.kind if st is not None and st.kind else "filestore"
        return self._mount(f"storage:{ns.id}:{m.id}", m.local_mount, kind,
                           lambda cmd: self._srun(ns, rows, cmd), f"node set {ns.id}")

    def _mount(self, check: str, mount: str, kind: str, sh: Callable[[str], Remote],
               where: str) -> CheckResult:
        client = CLIENTS[kind]
        q = shlex.quote(mount)
        cmd = (f"findmnt -n -o FSTYPE -M {q}; echo \"findmnt=$?\"; "
               f"if command -v {client} >/dev/null 2>&1 || [ -x /sbin/{client} ] || "
               f"[ -x /usr/sbin/{client} ]; then echo client=yes; else echo client=no; fi")
        r = sh(cmd)
        evidence = f"{where}:{mount}"
        lines = [x.strip() for x in r.stdout.splitlines() if x.strip()]
        marks = {x.split("=", 1)[0]: x.split("=", 1)[1] for x in lines if "=" in x}
        if r.returncode != 0 or "findmnt" not in marks or "client" not in marks:
            return CheckResult(check, FAIL, f"unexpected output: {r.why()}", evidence,
                               "is findmnt (util-linux) on the host?")
        fstypes = [x for x in lines if "=" not in x]
        what = KIND_NAMES[kind]
        if marks["findmnt"] == "0" and fstypes:
            if fstypes[0] in FSTYPES[kind]:
                return CheckResult(check, PASS, f"{what} mounted at {mount} ({fstypes[0]})",
                                   evidence)
            return CheckResult(check, FAIL, f"{mount} is mounted as {fstypes[0]}, not {what} "
                                            f"({'/'.join(FSTYPES[kind])})", evidence,
                               "something else is mounted there")
        if marks["client"] != "yes":
            return CheckResult(check, SKIP, f"{mount} is not mounted and this host has no "
                                            f"{what} client ({client}): not a Cluster "
                                            "Director node", evidence)
        return CheckResult(check, FAIL, f"{what} is not mounted at {mount}", evidence,
                           f"mount -a, or the node's startup log (journalctl -b); "
                           f"findmnt {mount}")

    # -- on a node of each node set ---------------------------------------------------------
    def partition_of(self, ns: NodeSetPlan) -> str | None:
        for p in self.plan.partitions:
            if ns.id in p.node_set_ids:
                return p.id
        return None

    def _srun(self, ns: NodeSetPlan, rows: list[NodeRow], script: str) -> Remote:
        part = self.partition_of(ns)
        feature = any(ns.id in r.features for r in rows)
        secs = max(1, int(self.timeout_s) - 5)
        cmd = (f"srun -N1 -n1 -p {shlex.quote(str(part))} "
               + (f"-C {shlex.quote(ns.id)} " if feature else "")
               + f"--time=2 --immediate={secs} bash -c {shlex.quote(script)}")
        return self._sh(cmd)

    def sdk(self, ns: NodeSetPlan, rows: list[NodeRow]) -> CheckResult:
        check, evidence = f"sdk:{ns.id}", f"node set {ns.id}: {self.plan.sdk.job_env}"
        if not self.plan.sdk.enabled:
            return CheckResult(check, SKIP, "diagnostics are off for this stack", evidence)
        venv_py = f"{self.plan.sdk.venv}/bin/python"
        script = (f"echo host=$(hostname); "
                  f"if [ -r {self.plan.sdk.job_env} ]; then echo jobenv=yes; "
                  f"else echo jobenv=no; fi; "
                  f"if [ -x {venv_py} ]; then if {venv_py} -c 'import google_cloud_mldiagnostics'"
                  f" >/dev/null 2>&1; then echo sdk=yes; else echo sdk=broken; fi; "
                  f"else echo sdk=no; fi")
        r = self._srun(ns, rows, script)
        marks = dict(x.strip().split("=", 1) for x in r.stdout.splitlines() if "=" in x)
        if r.returncode != 0 or not {"host", "jobenv", "sdk"} <= marks.keys():
            return CheckResult(check, FAIL, f"no answer from a node of {ns.id}: {r.why()}",
                               evidence, "sinfo and squeue show whether the partition can "
                                         "start a job now")
        host = marks["host"]
        if marks["jobenv"] == "no" and marks["sdk"] == "no":
            return CheckResult(check, SKIP, f"{host} has neither {self.plan.sdk.job_env} nor "
                                            f"{self.plan.sdk.venv}: the stack's startup "
                                            "script never ran there (not a node of this stack)",
                               evidence, "on a node of this stack, the startup log says why: "
                                         "journalctl -b | grep mldiag")
        if marks["jobenv"] != "yes" or marks["sdk"] != "yes":
            missing = ([self.plan.sdk.job_env] if marks["jobenv"] != "yes" else []) + (
                [f"the SDK ({venv_py} -c 'import google_cloud_mldiagnostics')"]
                if marks["sdk"] != "yes" else [])
            return CheckResult(check, FAIL, f"{host} lacks " + " and ".join(missing),
                               evidence, "the node's startup script logs the SDK install: "
                                         "journalctl -b | grep mldiag")
        return CheckResult(check, PASS, f"{host}: job-env.sh present, SDK importable",
                           evidence)

    def gpus(self, ns: NodeSetPlan, rows: list[NodeRow]) -> CheckResult:
        check, evidence = f"gpus:{ns.id}", f"node set {ns.id}: nvidia-smi -L"
        want = ns.gpus_per_node
        script = ("echo host=$(hostname); if command -v nvidia-smi >/dev/null 2>&1; then "
                  "echo smi=yes; nvidia-smi -L; else echo smi=no; fi")
        r = self._srun(ns, rows, script)
        lines = [x.strip() for x in r.stdout.splitlines() if x.strip()]
        marks = dict(x.split("=", 1) for x in lines if x.startswith(("host=", "smi=")))
        if r.returncode != 0 or not {"host", "smi"} <= marks.keys():
            return CheckResult(check, FAIL, f"no answer from a node of {ns.id}: {r.why()}",
                               evidence, "sinfo and squeue show whether the partition can "
                                         "start a job now")
        if marks["smi"] == "no":
            return CheckResult(check, SKIP, f"{marks['host']} has no nvidia-smi: no GPUs here "
                                            f"(the recipe wants {want} per node)", evidence)
        gpus = [x for x in lines if x.startswith("GPU ")]
        if len(gpus) != want:
            return CheckResult(check, FAIL, f"{marks['host']} shows {len(gpus)} GPU(s), "
                                            f"{ns.machine_type} has {want}", evidence,
                               "nvidia-smi on the node; a GPU missing from it needs the VM "
                               "replaced")
        return CheckResult(check, PASS, f"{marks['host']}: {len(gpus)} GPU(s)", evidence)


def run_slurm_checks(transport: Transport, plan: SlurmPlan,
                     timeout_s: float = DEFAULT_TIMEOUT_S) -> list[CheckResult]:
    """Every check, in order; a check that raises becomes a FAIL naming it."""
    c = SlurmChecks(transport, plan, timeout_s)
    results = [_guard("login", c.login)]
    if results[0].status == FAIL:
        return results
    rows, err = c.nodes()
    if rows is None:
        assert err is not None
        return [*results, err]
    results += guard_many("partitions", lambda: c.partitions(rows))
    for ns in plan.node_sets:
        results.append(_guard(f"node-set:{ns.id}", functools.partial(c.node_set, ns, rows)))
    results += guard_many("storage", c.storage)
    have = {r.partition for r in rows}
    on_node: list[tuple[str, NodeSetPlan, Callable[[], CheckResult]]] = []
    for ns in plan.node_sets:
        on_node.append((f"sdk:{ns.id}", ns, functools.partial(c.sdk, ns, rows)))
    for ns in plan.node_sets:
        for m in ns.storage:
            on_node.append((f"storage:{ns.id}:{m.id}", ns,
                            functools.partial(c.node_mount, ns, rows, m)))
    for ns in plan.node_sets:
        if ns.gpus_per_node:
            on_node.append((f"gpus:{ns.id}", ns, functools.partial(c.gpus, ns, rows)))
    for check, ns, fn in on_node:
        part = c.partition_of(ns)
        if part is None or part not in have:
            results.append(CheckResult(check, SKIP, f"no job can reach node set {ns.id}: its "
                                                    f"partition {part} is not in Slurm",
                                       f"node set {ns.id}"))
            continue
        results.append(_guard(check, fn))
    return results


def _guard(check: str, fn: Callable[[], CheckResult]) -> CheckResult:
    try:
        return fn()
    except Exception as exc:  # a check must never crash verify
        return CheckResult(check, FAIL, f"the check failed: {type(exc).__name__}: {exc}",
                           check, "report this with the output of the command it ran")


def guard_many(check: str, fn: Callable[[], list[CheckResult]]) -> list[CheckResult]:
    """``fn()``; an exception becomes one FAIL naming ``check`` (a check never crashes
    verify)."""
    try:
        return fn()
    except Exception as exc:  # a check must never crash verify
        return [CheckResult(check, FAIL, f"the check failed: {type(exc).__name__}: {exc}",
                            check, "report this with the output of the command it ran")]
