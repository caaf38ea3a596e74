"""verify --smoke on Slurm stacks without a GPU cluster: the job script, sbatch/squeue answers
and the judging of a job's ``srun -l`` output, against a fake login node. (The same path runs
for real on a CPU node set in tests/slurm/test_verify_slurm_smoke.py.)

The reports below have the keys ``smoke/program.py`` prints (``MLDIAG_SMOKE {json}``); the
2 x 8 GPU figures are those of the bundled example's slice ``a3u`` (2 x a3-ultragpu-8g).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.verify.slurm import Remote, parse_sinfo
from mldiag_provision.verify.slurm_smoke import (
    SmokeTarget,
    job_script,
    judge_output,
    parse_job_id,
    run_slurm_smoke,
    targets,
)

ROOT = Path(__file__).resolve().parents[2]
SINFO_A3 = ("slurma3u-a3u-0|gpu|(null)|idle~\nslurma3u-a3u-1|gpu|(null)|idle~\n"
            "slurma3u-a3u-2|gpu|(null)|idle~\nslurma3u-a3u-3|gpu|(null)|idle~\n"
            "slurma3u-cpu-0|cpu|(null)|idle~\n")
A3U = SmokeTarget(node_set="a3u", partition="gpu", feature=False, nodes=2, per_node=8,
                  kind="gpu", profile_dir="gs://b/mldiag-smoke/a3u")


def _plan():  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    res = check_file(str(ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"), catalog)
    return build_plan(res.parsed.recipe, res.shapes, catalog)


def _report(index: int, *, ok: bool = True, local: int = 8, processes: int = 2,
            errors: list[str] | None = None) -> str:
    rep = {"ok": ok, "errors": errors or [], "platform": "gpu", "device_kind": "NVIDIA H200",
           "devices": 16, "local_devices": local, "processes": processes,
           "process_index": index, "collective": {"op": "psum over node, gpu", "got": 136.0,
                                                  "expected": 136.0, "ok": True},
           "profile_dir": "gs://b/mldiag-smoke/a3u", "sdk": "registered"}
    return "MLDIAG_SMOKE " + json.dumps(rep, sort_keys=True)


def _output(*tasks: tuple[int, str, str]) -> str:
    """``srun -l`` output: the job's own line, then each task's labelled lines."""
    lines = ["MLDIAG_JOB 77 nodes=2"]
    for i, host, report in tasks:
        lines += [f"{i}: MLDIAG_HOST {host}", f"{i}: {report}"]
    return "\n".join([*lines, "MLDIAG_STEP_EXIT 0"]) + "\n"


GOOD = _output((0, "slurma3u-a3u-0", _report(0)), (1, "slurma3u-a3u-1", _report(1)))


def test_two_gpu_nodes_pass() -> None:
    r = judge_output(A3U, "77", "COMPLETED", GOOD)
    assert r.status == "PASS", r
    assert r.message == ("2 node(s) (slurma3u-a3u-0, slurma3u-a3u-1): 16 gpu device(s), 8 per "
                         "node, 2 process(es); psum over node, gpu = 136.0 as expected; "
                         "profile gs://b/mldiag-smoke/a3u; ML Diagnostics: registered")
    assert r.evidence == "job 77 on partition gpu"


@pytest.mark.parametrize(("output", "want"), [
    (_output((0, "slurma3u-a3u-0", _report(0))),
     "node set a3u: 1 of 2 task(s) printed a smoke report (none from task 1)"),
    (_output((0, "slurma3u-a3u-0", _report(0)), (1, "slurma3u-a3u-0", _report(1))),
     "node set a3u: the 2 task(s) ran on 1 node(s), one per node was asked"),
    (_output((0, "slurma3u-a3u-0", _report(0)),
             (1, "slurma3u-a3u-1", _report(1, ok=False, local=7,
                                           errors=["jax.device_count() is 15, expected 16"]))),
     "node set a3u, node slurma3u-a3u-1 (task 1): jax.device_count() is 15, expected 16"),
    (_output((0, "slurma3u-a3u-0", _report(0, local=1)), (1, "slurma3u-a3u-1", _report(1))),
     "node set a3u, node slurma3u-a3u-0 (task 0): JAX sees 1 local gpu device(s), the node "
     "set has 8 per node"),
    ("MLDIAG_JOB 77 nodes=2\nsrun: error: Unable to create step for job 77: Invalid "
     "generic resource (gres) specification\n",
     "node set a3u: job 77 (FAILED) printed no smoke report; its output ends: srun: error: "
     "Unable to create step"),
    ("", "node set a3u: job 77 (FAILED) printed no smoke report; its output ends: "
         "(no output)"),
])
def test_bad_runs_fail_naming_the_node_set_and_node(output: str, want: str) -> None:
    r = judge_output(A3U, "77", "FAILED", output)
    assert r.status == "FAIL"
    assert r.message.startswith(want), r.message
    assert r.hint and "mldiag-smoke-a3u-77.out" in r.hint


def test_missing_jax_hints_at_the_install() -> None:
    bad = _report(0, ok=False, errors=["ModuleNotFoundError: No module named 'jax'"])
    r = judge_output(A3U, "77", "FAILED", _output((0, "n0", bad), (1, "n1", bad)))
    assert r.status == "FAIL" and "--smoke-python" in (r.hint or "")


def test_targets_default_to_the_gpu_node_sets() -> None:
    plan = _plan()
    chosen, skipped = targets(plan, parse_sinfo(SINFO_A3), None, "gs://b/mldiag-smoke")
    assert skipped == []
    assert [(t.node_set, t.partition, t.nodes, t.per_node, t.kind) for t in chosen] == [
        ("a3u", "gpu", 2, 8, "gpu")]  # the slice's 2 nodes
    chosen, skipped = targets(plan, parse_sinfo(SINFO_A3), ["cpu", "nope"], "/tmp/p")
    # a node set of dynamic nodes only: every one of them (0 static + 4 dynamic)
    assert [(t.node_set, t.kind, t.nodes, t.per_node, t.profile_dir) for t in chosen] == [
        ("cpu", "cpu", 4, 1, "/tmp/p/cpu")]
    assert [(r.check, r.status) for r in skipped] == [("smoke:nope", "FAIL")]


def test_job_script_runs_one_task_per_node_with_the_program() -> None:
    plan = _plan()
    program = (ROOT / "provisioner" / "mldiag_provision" / "smoke" / "program.py").read_text()
    script = job_script(plan, A3U, python=None, program=program)
    assert program.rstrip("\n") in script  # byte for byte
    srun = next(ln for ln in script.splitlines() if ln.startswith("srun "))
    assert srun.startswith("srun -l -N 2 --ntasks-per-node=1 bash -c ")
    assert "--devices 16 --processes 2 --slices 1 --mesh node=2,gpu=8" in srun
    assert srun.endswith("--distributed")
    # into the SDK venv when jax is missing there
    assert "pip install -q" in srun and "jax[cuda12]" in srun
    assert f". {plan.slurm.sdk.job_env}" in script
    pinned = job_script(plan, A3U, python="/usr/bin/python3", program=program)
    assert "pip install" not in pinned and "PY=/usr/bin/python3" in pinned


class FakeLogin:
    where = "fake-login"

    def __init__(self, answer: Callable[[str], Remote]) -> None:
        self.answer, self.commands = answer, []  # type: ignore[var-annotated]

    def run(self, command: str, timeout_s: float) -> Remote:
        self.commands.append(command)
        return self.answer(command)


def _login(states: list[str], *, sbatch: str = "77\n", output: str = GOOD,
           squeue: Callable[[str], Remote] | None = None) -> FakeLogin:
    left = list(states)

    def answer(cmd: str) -> Remote:
        if "sbatch --parsable" in cmd:
            return Remote(cmd, 0, sbatch, "")
        if cmd.startswith("squeue"):
            if squeue is not None:
                return squeue(cmd)
            return Remote(cmd, 0, (left.pop(0) + "\n") if left else "", "")
        if cmd.startswith("cat "):
            return Remote(cmd, 0, output, "")
        if cmd.startswith(("rm -f", "scancel")):
            return Remote(cmd, 0, "", "")
        raise AssertionError(cmd)

    return FakeLogin(answer)


def _run(login: FakeLogin, **kw: Any) -> list[Any]:
    plan = _plan()
    return run_slurm_smoke(login, plan, parse_sinfo(SINFO_A3), node_sets=["a3u"], poll_s=0,
                           **kw)


def test_a_finished_job_passes_and_its_output_is_removed() -> None:
    login = _login(["PENDING", "RUNNING", "COMPLETED"])
    [r] = _run(login, timeout_s=60)
    assert r.status == "PASS", r
    assert 'rm -f "$HOME/.mldiag-smoke/mldiag-smoke-a3u-77.out"' in login.commands
    assert not any(c.startswith("scancel") for c in login.commands)
    submit = next(c for c in login.commands if "sbatch" in c)
    assert "--nodes=2" in submit and "--gpus-per-node=8" in submit and "--exclusive" in submit
    assert submit.endswith("MLDIAG_SBATCH_EOF")


def test_a_failed_job_keeps_its_output() -> None:
    login = _login(["COMPLETED"], output=_output((0, "slurma3u-a3u-0", _report(0))))
    [r] = _run(login, timeout_s=60)
    assert r.status == "FAIL" and "1 of 2 task(s)" in r.message
    assert not any(c.startswith("rm -f") for c in login.commands)


def test_a_job_past_the_deadline_is_cancelled() -> None:
    login = _login(["PENDING"] * 1000)
    [r] = _run(login, timeout_s=0)
    assert r.status == "FAIL"
    assert r.message == ("node set a3u: job 77 still PENDING after 0 s; cancelled (scancel)")
    assert "scancel 77" in login.commands
    assert 'rm -f "$HOME/.mldiag-smoke/mldiag-smoke-a3u-77.out"' in login.commands


@pytest.mark.parametrize(("sbatch", "want"), [
    ("sbatch: error: Batch job submission failed: Invalid partition name specified\n",
     "printed no job id in 'sbatch: error"),
    ("", "printed no job id in ''"),
])
def test_unexpected_sbatch_output_fails_naming_the_command(sbatch: str, want: str) -> None:
    [r] = _run(_login([], sbatch=sbatch), timeout_s=10)
    assert r.status == "FAIL" and "`sbatch --parsable --job-name=mldiag-smoke-a3u" in r.message
    assert want in r.message


def test_unexpected_squeue_output_fails_and_cancels() -> None:
    login = _login([], squeue=lambda c: Remote(c, 0, "JOBID PARTITION NAME\n", ""))
    [r] = _run(login, timeout_s=10)
    assert r.status == "FAIL"
    assert "`squeue -h -t all -j 77 -o %T` printed 'JOBID PARTITION NAME'" in r.message
    assert "scancel 77" in login.commands


def test_parse_job_id() -> None:
    assert parse_job_id("77\n") == "77"
    assert parse_job_id("77;cluster-a\n") == "77"
    with pytest.raises(ValueError):
        parse_job_id("Submitted batch job 77\n")
    assert re.fullmatch(r"\d+", parse_job_id("  12345  "))
