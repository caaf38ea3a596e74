"""``verify --smoke`` on a managed Slurm cluster: the JAX + XProf smoke program as one batch
job per node set, one task per node, submitted and watched from the login node.

Steps, each one remote command with a deadline (``verify --remote-timeout``):

1. ``sbatch --parsable`` with the job script on standard input (:func:`job_script`): the
   program (``smoke/program.py``, byte for byte) travels in the job's environment, so only
   the job's output file needs a file system shared by the login node and the first node of
   the job (``$HOME`` on the login node, ``/home`` on Cluster Director);
2. ``squeue -h -t all -j ID -o %T`` every ``poll_s`` seconds, until every job left the
   PENDING/RUNNING states or ``timeout_s`` (``verify --smoke-timeout``) passed; then
   ``scancel ID`` for each job still there (and for every submitted job if anything raises);
3. ``cat`` of the job's output (``srun -l`` labels every task's lines), judged by
   :func:`judge_output`; the output file is removed, except after a FAIL (the hint names it).

Each task prints ``MLDIAG_HOST <hostname>``, the program's ``MLDIAG_SMOKE {json}`` report,
and, when the profile goes to a directory on the node, one ``MLDIAG_PROFILE <file>`` line per
``.xplane.pb`` file the program wrote (jax.profiler's layout,
https://docs.jax.dev/en/latest/profiling.html).

What the program must see on a node set of ``n`` nodes: ``n`` processes (one per node,
``jax.distributed.initialize()`` finding its peers from Slurm's variables when ``n > 1``,
https://docs.jax.dev/en/latest/multi_process.html), the machine type's GPUs on each node (a
GPU node set) or one CPU device per node (a CPU node set, ``JAX_PLATFORMS=cpu``), and a
``psum`` over the mesh ``node x gpu`` (``node x cpu``) that adds up.
"""

from __future__ import annotations

import contextlib
import math
import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mldiag_provision.verify.checks import FAIL, PASS, SKIP, CheckResult, parse_smoke_log

if TYPE_CHECKING:
    from mldiag_provision.plan.slurm_types import NodeSetPlan, SlurmPlan
    from mldiag_provision.plan.smoke import SmokeSpec
    from mldiag_provision.plan.types import StackPlan
    from mldiag_provision.verify.slurm import NodeRow, Transport

OUT_DIR = "$HOME/.mldiag-smoke"
"""Where the jobs run and write their output, on the login node (expanded by its shell)."""
RUNNING_STATES = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED",
                            "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING",
                            "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD"})
"""squeue ``%T`` states of a job that has not ended (squeue(1), JOB STATE CODES)."""
JAX_GPU = "jax[cuda12]"
"""What the job installs into the SDK venv when JAX is missing on a GPU node, as
``slurm/mldiag-smoke-<slice>.sbatch`` does."""
_JOB_ID = re.compile(r"^(\d+)(;[\w.-]+)?$")
_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")


@dataclass(frozen=True)
class SmokeTarget:
    """One node set to smoke: ``nodes`` nodes of partition ``partition``, ``per_node`` JAX
    devices each (GPUs, or 1 on a CPU node set); ``feature``: the node set id is a Slurm
    feature there (``-C ID`` picks its nodes)."""

    node_set: str
    partition: str
    feature: bool
    nodes: int
    per_node: int
    kind: str  # gpu | cpu
    profile_dir: str

    @property
    def check(self) -> str:
        return f"smoke:{self.node_set}"

    @property
    def job_name(self) -> str:
        return f"mldiag-smoke-{self.node_set}"[:64]

    def spec(self) -> SmokeSpec:
        from mldiag_provision.plan.smoke import SmokeSpec

        n = self.nodes
        return SmokeSpec(slice=self.node_set, kind=self.kind, devices=n * self.per_node,
                         per_slice=n * self.per_node, processes=n, slices=1, vms=n,
                         devices_per_vm=self.per_node,
                         mesh=(("node", n), (self.kind, self.per_node)))


def _nodes_of(ns: NodeSetPlan) -> int:
    """Nodes one smoke job asks for: the static nodes, else every dynamic one."""
    return ns.static_node_count or (ns.max_dynamic_node_count or 0)


def targets(plan: StackPlan, rows: Sequence[NodeRow], node_sets: Sequence[str] | None,
            profile_base: str) -> tuple[list[SmokeTarget], list[CheckResult]]:
    """The node sets to smoke and a SKIP or FAIL for each one that cannot be.

    ``node_sets``: the ids asked for (``--smoke-node-set``); ``None`` means every GPU node set.
    ``profile_base``: the profile of node set X goes to ``profile_base/X``.
    """
    assert plan.slurm is not None
    slurm = plan.slurm
    chosen, results = _chosen_node_sets(plan, node_sets)
    have = {r.partition for r in rows}
    out: list[SmokeTarget] = []
    for ns in chosen:
        got = _target(slurm, ns, rows, have, profile_base)
        if isinstance(got, SmokeTarget):
            out.append(got)
        else:
            results.append(got)
    return out, results


def _chosen_node_sets(plan: StackPlan, node_sets: Sequence[str] | None,
                      ) -> tuple[list[NodeSetPlan], list[CheckResult]]:
    """The recipe's node sets named by ``node_sets`` (each once, in the order asked; every
    GPU node set when None) and a FAIL per unknown id, or a SKIP when no GPU node set is
    there to pick."""
    assert plan.slurm is not None
    slurm = plan.slurm
    if node_sets is None:
        gpu = [ns for ns in slurm.node_sets if ns.gpus_per_node]
        if gpu:
            return gpu, []
        return [], [CheckResult("smoke", SKIP, "the recipe has no GPU node set",
                                f"cluster {slurm.cluster_id}",
                                "name a CPU node set with --smoke-node-set ID")]
    by_id = {ns.id: ns for ns in slurm.node_sets}
    results = [CheckResult(f"smoke:{n}", FAIL, f"the recipe has no node set {n} "
                           f"(node sets: {', '.join(by_id)})", f"node set {n}",
                           "fix --smoke-node-set")
               for n in node_sets if n not in by_id]
    return [by_id[n] for n in dict.fromkeys(node_sets) if n in by_id], results


def _target(slurm: SlurmPlan, ns: NodeSetPlan, rows: Sequence[NodeRow], have: set[str],
            profile_base: str) -> SmokeTarget | CheckResult:
    """The smoke target of node set ``ns``, or a SKIP when no job can reach it (its
    partition is not among ``have``, the partitions Slurm shows) or it has no node."""
    from mldiag_provision.verify.slurm import in_node_set

    part = next((p.id for p in slurm.partitions if ns.id in p.node_set_ids), None)
    evidence = f"node set {ns.id}"
    if part is None or part not in have:
        return CheckResult(f"smoke:{ns.id}", SKIP,
                           f"no job can reach node set {ns.id}: its partition "
                           f"{part} is not in Slurm", evidence)
    nodes = _nodes_of(ns)
    if nodes < 1:
        return CheckResult(f"smoke:{ns.id}", SKIP,
                           f"node set {ns.id} has no node to run on", evidence)
    gpus = ns.gpus_per_node or 0
    return SmokeTarget(
        node_set=ns.id, partition=part, nodes=nodes,
        feature=any(ns.id in r.features for r in rows if in_node_set(r, ns.id)),
        per_node=gpus or 1, kind="gpu" if gpus else "cpu",
        profile_dir=profile_base.rstrip("/") + "/" + ns.id)


def job_script(plan: StackPlan, t: SmokeTarget, *, python: str | None,
               program: str) -> str:
    """The batch script of one node set (run by ``sbatch`` from standard input).

    ``python``: the interpreter on the nodes; ``None`` picks the SDK venv's Python when it is
    there (installing :data:`JAX_GPU` into it on a GPU node set when ``import jax`` fails),
    else ``python3``. ``program``: the text of ``smoke/program.py``.
    """
    from mldiag_provision.plan.smoke import program_args

    assert plan.slurm is not None
    sdk = plan.slurm.sdk
    venv_py = f"{sdk.venv}/bin/python"
    args = program_args(t.spec(), name=f"{plan.name}-{t.node_set}", profile_dir=t.profile_dir,
                        project=plan.project, region=plan.diagnostics.mlrun_region)
    if t.nodes > 1:
        args.append("--distributed")  # jax.distributed.initialize() reads Slurm's variables
    q = shlex.quote
    if python:
        pick = f"PY={q(python)}"
        install = ""
    else:
        pick = (f"if [ -x {q(venv_py)} ]; then PY={q(venv_py)}; else PY=python3; fi")
        install = ("" if t.kind != "gpu" else
                   f"if [ \"$PY\" = {q(venv_py)} ] && ! \"$PY\" -c 'import jax' "
                   f">/dev/null 2>&1; then echo \"MLDIAG_INSTALL {JAX_GPU}\"; "
                   f"\"$PY\" -m pip install -q {q(JAX_GPU)} 2>&1 | tail -n 3; fi; ")
    listing = ("" if t.profile_dir.startswith("gs://") else
               f"find {q(t.profile_dir)} -name '*.xplane.pb' -newermt \"@$START\" "
               "2>/dev/null | sed 's/^/MLDIAG_PROFILE /'; ")
    step = ("echo \"MLDIAG_HOST $(hostname)\"; START=$(date +%s); " + pick + "; " + install
            + "\"$PY\" -c \"$MLDIAG_SMOKE_PROGRAM\" \"$@\"; rc=$?; " + listing + "exit $rc")
    lines = ["#!/bin/bash",
             f"# mldiag-provision verify --smoke: node set {t.node_set}, {t.nodes} node(s), "
             f"{t.per_node} {t.kind.upper()} device(s) each",
             "echo \"MLDIAG_JOB $SLURM_JOB_ID nodes=$SLURM_JOB_NUM_NODES\""]
    if plan.diagnostics.enabled:
        lines.append(f"if [ -r {q(sdk.job_env)} ]; then . {q(sdk.job_env)}; fi")
    if t.kind == "cpu":
        # a CPU node set: JAX on the CPU; gloo for collectives across processes (JAX's
        # jax_cpu_collectives_implementation option)
        lines.append("export JAX_PLATFORMS=cpu JAX_CPU_COLLECTIVES_IMPLEMENTATION=gloo")
    lines += ["MLDIAG_SMOKE_PROGRAM=$(cat <<'MLDIAG_SMOKE_EOF'", program.rstrip("\n"),
              "MLDIAG_SMOKE_EOF", ")", "export MLDIAG_SMOKE_PROGRAM",
              f"srun -l -N {t.nodes} --ntasks-per-node=1 bash -c {q(step)} mldiag-smoke "
              + " ".join(q(a) for a in args),
              "echo \"MLDIAG_STEP_EXIT $?\""]
    return "\n".join(lines) + "\n"


def submit_command(t: SmokeTarget, script: str, minutes: int) -> str:
    """``sbatch --parsable`` of ``script`` (a quoted here-document) from :data:`OUT_DIR`."""
    opts = [f"--job-name={t.job_name}", f"--partition={t.partition}", f"--nodes={t.nodes}",
            "--ntasks-per-node=1", f"--time={minutes}", "--output=%x-%j.out"]
    if t.feature:
        opts.append(f"--constraint={t.node_set}")
    if t.kind == "gpu":
        opts += [f"--gpus-per-node={t.per_node}", "--exclusive"]
    return (f"mkdir -p \"{OUT_DIR}\" && cd \"{OUT_DIR}\" && sbatch --parsable "
            + " ".join(shlex.quote(o) for o in opts)
            + " <<'MLDIAG_SBATCH_EOF'\n" + script + "MLDIAG_SBATCH_EOF")


def parse_job_id(out: str) -> str:
    """The job id ``sbatch --parsable`` printed (``ID`` or ``ID;cluster``). Raises ValueError
    on any other output."""
    lines = [x.strip() for x in out.splitlines() if x.strip()]
    m = _JOB_ID.match(lines[-1]) if lines else None
    if m is None:
        raise ValueError(f"no job id in {out.strip()[:200]!r}")
    return m.group(1)


def output_path(t: SmokeTarget, job_id: str) -> str:
    return f"{OUT_DIR}/{t.job_name}-{job_id}.out"


@dataclass
class _Task:
    host: str | None = None
    report: dict[str, Any] | None = None
    profiles: list[str] = field(default_factory=list)
    installed: bool = False
    lines: list[str] = field(default_factory=list)


def _tasks(output: str) -> tuple[dict[int, _Task], list[str]]:
    """Lines of ``srun -l`` output by task id, and the unlabelled lines."""
    tasks: dict[int, _Task] = {}
    other: list[str] = []
    for line in output.splitlines():
        m = _LABEL.match(line)
        if m is None:
            if line.strip():
                other.append(line.strip())
            continue
        task = tasks.setdefault(int(m.group(1)), _Task())
        text = m.group(2)
        task.lines.append(text)
        if text.startswith("MLDIAG_HOST "):
            task.host = text.removeprefix("MLDIAG_HOST ").strip()
        elif text.startswith("MLDIAG_PROFILE "):
            task.profiles.append(text.removeprefix("MLDIAG_PROFILE ").strip())
        elif text.startswith("MLDIAG_INSTALL "):
            task.installed = True
    for task in tasks.values():
        task.report = parse_smoke_log("\n".join(task.lines))
    return tasks, other


def judge_output(t: SmokeTarget, job_id: str, state: str, output: str) -> CheckResult:
    """One node set's verdict from its job's output (``srun -l``-labelled lines) and the job's
    last state. PASS when one task per node printed a report with ``ok`` true, each on its own
    node, each seeing ``per_node`` local devices and ``nodes`` processes."""
    evidence = f"job {job_id} on partition {t.partition}"
    path = output_path(t, job_id)
    hint = f"cat {path} on the login node"
    tasks, other = _tasks(output)
    reported = {i: k for i, k in tasks.items() if k.report is not None}
    failed = _coverage_failure(t, job_id, state, tasks, other, evidence, hint)
    for i, k in sorted(reported.items()):
        failed = failed or _task_failure(t, i, k, evidence, hint)
    return failed or _passed(t, reported, evidence)


def _coverage_failure(t: SmokeTarget, job_id: str, state: str, tasks: dict[int, _Task],
                      other: list[str], evidence: str, hint: str) -> CheckResult | None:
    """A FAIL when the job's tasks do not cover its nodes: no report at all (the output's
    last line shown), fewer reports than nodes, or tasks sharing a node; None otherwise."""
    reported = {i: k for i, k in tasks.items() if k.report is not None}
    if not reported:
        last = (other or [ln for k in tasks.values() for ln in k.lines] or ["(no output)"])[-1]
        return CheckResult(t.check, FAIL, f"node set {t.node_set}: job {job_id} ({state}) "
                           f"printed no smoke report; its output ends: {last[:300]}",
                           evidence, hint)
    if len(reported) < t.nodes:
        missing = sorted(set(range(t.nodes)) - set(reported))
        return CheckResult(t.check, FAIL, f"node set {t.node_set}: {len(reported)} of "
                           f"{t.nodes} task(s) printed a smoke report (none from task "
                           f"{', '.join(map(str, missing))})", evidence, hint)
    hosts = {k.host for k in reported.values()}
    if None in hosts or len(hosts) < t.nodes:
        return CheckResult(t.check, FAIL, f"node set {t.node_set}: the {t.nodes} task(s) ran "
                           f"on {len(hosts - {None})} node(s), one per node was asked",
                           evidence, hint)
    return None


def _task_failure(t: SmokeTarget, i: int, k: _Task, evidence: str,
                  hint: str) -> CheckResult | None:
    """A FAIL when task ``i``'s report is not ok (the first error; a missing JAX gets the
    install hint), sees other than ``per_node`` local devices, or other than ``nodes``
    processes; None otherwise."""
    rep = k.report or {}
    where = f"node set {t.node_set}, node {k.host} (task {i})"
    if not rep.get("ok"):
        first = (rep.get("errors") or ["the program failed"])[0]
        fix = (f"; pip install '{JAX_GPU}' into the nodes' Python, or pass "
               "--smoke-python" if "No module named 'jax'" in str(first) else "")
        return CheckResult(t.check, FAIL, f"{where}: {first}", evidence, hint + fix)
    local = rep.get("local_devices")
    if local != t.per_node:
        return CheckResult(t.check, FAIL,
                           f"{where}: JAX sees {local} local {rep.get('platform')} "
                           f"device(s), the node set has {t.per_node} per node",
                           evidence, hint + "; a GPU node needs jax[cuda12] and its "
                                            "driver (nvidia-smi)")
    if rep.get("processes") != t.nodes:
        return CheckResult(t.check, FAIL, f"{where}: jax.process_count() is "
                           f"{rep.get('processes')}, the job has {t.nodes} node(s)",
                           evidence, hint)
    return None


def _passed(t: SmokeTarget, reported: dict[int, _Task], evidence: str) -> CheckResult:
    """The PASS of a node set: its nodes, the first task's devices, processes and
    collective, where the profiles went (and how many files), the ML Diagnostics SDK, and
    whether the job installed JAX."""
    hosts = {k.host for k in reported.values()}
    first = reported[min(reported)].report or {}
    coll = first.get("collective") or {}
    profiles = sum(len(k.profiles) for k in reported.values())
    profile = t.profile_dir + (f" ({profiles} .xplane.pb file(s))" if profiles else "")
    sdk = first.get("sdk")
    installed = any(k.installed for k in reported.values())
    return CheckResult(
        t.check, PASS,
        f"{t.nodes} node(s) ({', '.join(sorted(h for h in hosts if h))}): "
        f"{first.get('devices')} {first.get('platform')} device(s), {t.per_node} per node, "
        f"{first.get('processes')} process(es); {coll.get('op', 'collective')} = "
        f"{coll.get('got')} as expected; profile {profile}"
        + (f"; ML Diagnostics: {sdk}" if sdk else "")
        + (f"; installed {JAX_GPU}" if installed else ""), evidence)


@dataclass
class _Job:
    target: SmokeTarget
    job_id: str
    state: str = "PENDING"
    done: bool = False


def run_slurm_smoke(transport: Transport, plan: StackPlan, rows: Sequence[NodeRow], *,
                    node_sets: Sequence[str] | None = None, python: str | None = None,
                    profile_dir: str | None = None, timeout_s: float = 900,
                    remote_timeout_s: float = 60, poll_s: float = 5.0,
                    progress: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Smoke every chosen node set (:func:`targets`); one ``smoke:<node set>`` result each.

    ``profile_dir``: where profiles go (a directory on the nodes, or ``gs://``); default
    ``gs://<profiles bucket>/mldiag-smoke``. ``timeout_s``: how long the jobs may take, from
    the first submission; the jobs still pending or running then are cancelled (``scancel``)
    and FAIL. ``remote_timeout_s``: the deadline of each remote command.
    """
    from mldiag_provision.plan.smoke import PROGRAM

    say = progress or (lambda _line: None)
    base = profile_dir or f"gs://{plan.diagnostics.profiles_bucket.name}/mldiag-smoke"
    chosen, results = targets(plan, rows, node_sets, base)
    if not chosen:
        return results
    program = PROGRAM.read_text(encoding="utf-8")
    minutes = max(1, math.ceil(timeout_s / 60)) + 1  # Slurm ends the job even without us
    jobs: list[_Job] = []

    def sh(command: str) -> Any:
        return transport.run(command, remote_timeout_s)

    try:
        for t in chosen:
            job = _submit(t, sh, job_script(plan, t, python=python, program=program),
                          minutes, results)
            if job is not None:
                say(f"smoke: node set {t.node_set}: job {job.job_id} submitted")
                jobs.append(job)
        _watch(jobs, sh, say, timeout_s, poll_s)
        for job in jobs:
            results.append(_finish(job, sh, timeout_s))
        return _ordered(results, chosen)
    except _Unexpected as exc:
        results += _unjudged(exc, jobs)
        return _ordered(results, chosen)
    finally:
        for job in jobs:  # anything still queued or running is ours to cancel
            if not job.done:
                with contextlib.suppress(Exception):
                    sh(f"scancel {job.job_id}")
                    job.done = True


def _submit(t: SmokeTarget, sh: Callable[[str], Any], script: str, minutes: int,
            results: list[CheckResult]) -> _Job | None:
    """Submit node set ``t``'s job; None, with a FAIL added to ``results``, when sbatch
    fails or prints no job id (the command shown without its script)."""
    cmd = submit_command(t, script, minutes)
    r = sh(cmd)
    shown = (f"sbatch --parsable --job-name={t.job_name} --partition={t.partition} "
             f"--nodes={t.nodes} ... <script>")
    if r.returncode != 0:
        results.append(CheckResult(t.check, FAIL, f"node set {t.node_set}: "
                                   + r.why().replace(f"`{cmd}`", f"`{shown}`"),
                                   f"partition {t.partition}",
                                   f"sinfo -p {t.partition}; can this user submit "
                                   "jobs there?"))
        return None
    try:
        job_id = parse_job_id(r.stdout)
    except ValueError as exc:
        results.append(CheckResult(t.check, FAIL, f"node set {t.node_set}: "
                                   f"`{shown}` printed {exc}",
                                   f"partition {t.partition}",
                                   "a Slurm whose sbatch --parsable prints another "
                                   "shape?"))
        return None
    return _Job(t, job_id)


def _watch(jobs: list[_Job], sh: Callable[[str], Any], say: Callable[[str], None],
           timeout_s: float, poll_s: float) -> None:
    """Poll the jobs every ``poll_s`` seconds until every one ended or ``timeout_s`` passed
    (those still running stay not ``done``). Raises _Unexpected on an answer squeue should
    not give."""
    deadline = time.monotonic() + timeout_s
    while True:
        for job in jobs:
            if not job.done:
                _poll(job, sh, say)
        if all(j.done for j in jobs):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(poll_s)


def _poll(job: _Job, sh: Callable[[str], Any], say: Callable[[str], None]) -> None:
    """One ``squeue`` of ``job``: its new state (said when it changed), ``done`` once it
    left the running states or the controller forgot it. Raises _Unexpected when squeue
    fails otherwise or prints something other than a state."""
    cmd = f"squeue -h -t all -j {job.job_id} -o %T"
    r = sh(cmd)
    states = [x.strip() for x in r.stdout.splitlines() if x.strip()]
    if (r.returncode == 0 and not states) or (
            r.returncode != 0 and "invalid job id" in r.stderr.lower()):
        job.done = True  # gone from the controller: ended
        return
    if r.returncode != 0 or not re.fullmatch(r"[A-Z_]+", states[0]):
        raise _Unexpected(job, f"unexpected answer: {r.why()}"
                          if r.returncode != 0 else
                          f"`{cmd}` printed {r.stdout.strip()[:200]!r}")
    if states[0] != job.state:
        say(f"smoke: node set {job.target.node_set}: job {job.job_id} "
            f"{states[0]}")
    job.state = states[0]
    job.done = job.state not in RUNNING_STATES


def _unjudged(exc: _Unexpected, jobs: list[_Job]) -> list[CheckResult]:
    """The FAIL of the job whose watch went wrong, and a FAIL "not judged" for each other
    job (those still queued are cancelled by the caller)."""
    out = [CheckResult(exc.job.target.check, FAIL,
                       f"node set {exc.job.target.node_set}: {exc}",
                       f"job {exc.job.job_id}", "squeue -j ID; scancel ID")]
    for job in jobs:
        if job is not exc.job:
            out.append(CheckResult(job.target.check, FAIL,
                                   f"node set {job.target.node_set}: job {job.job_id} "
                                   "not judged: watching the jobs stopped at "
                                   f"node set {exc.job.target.node_set}",
                                   f"job {job.job_id}"))
    return out


class _Unexpected(Exception):
    def __init__(self, job: _Job, message: str) -> None:
        super().__init__(message)
        self.job = job


def _finish(job: _Job, sh: Callable[[str], Any], timeout_s: float) -> CheckResult:
    t = job.target
    path = output_path(t, job.job_id)
    evidence = f"job {job.job_id} on partition {t.partition}"
    if not job.done:  # past the deadline: cancel, confirm, remove the output
        r = sh(f"scancel {job.job_id}")
        cancelled = r.returncode == 0
        if cancelled:
            job.done = True
        sh(f"rm -f \"{path}\"")
        return CheckResult(t.check, FAIL,
                           f"node set {t.node_set}: job {job.job_id} still {job.state} after "
                           f"{timeout_s:g} s; "
                           + ("cancelled (scancel)" if cancelled else
                              f"scancel failed: {r.why()}"), evidence,
                           f"squeue -p {t.partition} shows what holds the partition; "
                           "raise --smoke-timeout for a slow first start (dynamic nodes, "
                           "pip install)")
    cmd = f"cat \"{path}\""
    r = sh(cmd)
    if r.returncode != 0:
        return CheckResult(t.check, FAIL, f"node set {t.node_set}: job {job.job_id} ended "
                           f"{job.state}, its output is not readable here: {r.why()}",
                           evidence, "the job writes its output on its first node; the "
                                     "login node must share $HOME with it (/home)")
    result = _guard(t, lambda: judge_output(t, job.job_id, job.state, r.stdout))
    if result.status == PASS:
        sh(f"rm -f \"{path}\"")
    return result


def _guard(t: SmokeTarget, fn: Callable[[], CheckResult]) -> CheckResult:
    try:
        return fn()
    except Exception as exc:  # a verdict must never crash verify
        return CheckResult(t.check, FAIL, f"judging node set {t.node_set}'s output failed: "
                           f"{type(exc).__name__}: {exc}", f"node set {t.node_set}")


def _ordered(results: list[CheckResult], chosen: list[SmokeTarget]) -> list[CheckResult]:
    """The node sets' results in recipe order, other results (unknown ids) first."""
    order = {t.check: i for i, t in enumerate(chosen)}
    return sorted(results, key=lambda r: order.get(r.check, -1))
