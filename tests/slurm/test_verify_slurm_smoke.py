"""``verify --smoke`` and ``--health`` of a Slurm stack against the real single-machine Slurm of
conftest.py: the smoke program goes through ``sbatch`` as a batch job, one task per node, and
runs on the CPU as ``smoke --local`` does (JAX from this Python: the ``test`` extra installs
``jax`` and ``xprof``, as CI's ``smoke --local`` tests need)."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_support import CliResult

Cli = Callable[..., CliResult]
LocalSlurm = Any  # conftest.LocalSlurm

RECIPE = Path(__file__).parent / "data" / "slurm-cpu-local.yaml"


def _verify(cli: Cli, slurm: LocalSlurm, *extra: str) -> tuple[int, dict[str, Any], str]:
    argv = ["verify", str(RECIPE), "--ssh-target", slurm.ssh_target, "--remote-timeout", "90",
            "--output", "json"]
    for o in slurm.ssh_options:
        argv += ["--ssh-option", o]
    res = cli(*argv, *extra)
    return res[0], json.loads(res[1]), res[2]


def _by(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in doc["checks"]}


def _queued(slurm: LocalSlurm, job: str) -> str:
    r = slurm.run("squeue", "-h", "-j", job, "-o", "%T")
    return r.stdout.strip() if r.returncode == 0 else ""


def test_smoke_runs_the_program_on_a_cpu_node_set_through_sbatch(
        cli: Cli, local_slurm: LocalSlurm, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MLDIAG_SMOKE_POLL_S", "1")
    profiles = tmp_path / "profiles"
    code, doc, err = _verify(cli, local_slurm, "--smoke", "--smoke-node-set", "cpu",
                             "--smoke-python", sys.executable,
                             "--smoke-profile-dir", str(profiles), "--smoke-timeout", "600")
    by = _by(doc)
    assert code == 0, json.dumps(doc, indent=1) + err
    smoke = by["smoke:cpu"]
    assert smoke["status"] == "PASS", smoke
    # one node, one process, one CPU device; the psum over node x cpu adds up to 1
    assert smoke["message"].startswith("1 node(s) (")
    assert "1 cpu device(s), 1 per node, 1 process(es); psum over node, cpu = 1.0 as " \
           "expected" in smoke["message"]
    assert f"profile {profiles}/cpu (1 .xplane.pb file(s))" in smoke["message"]
    assert list((profiles / "cpu").rglob("*.xplane.pb")), "no profile on disk"
    job = re.fullmatch(r"job (\d+) on partition cpu", smoke["evidence"])
    assert job, smoke["evidence"]
    assert f"job {job.group(1)} submitted" in err  # progress on stderr
    assert _queued(local_slurm, job.group(1)) == ""  # ended
    # the output file of a passing job is removed from the login node's $HOME
    assert not list(Path("/root/.mldiag-smoke").glob(f"*-{job.group(1)}.out"))
    assert "smoke:a3u" not in by  # only the node set asked for


def test_smoke_on_the_gpu_node_set_fails_naming_it(
        cli: Cli, local_slurm: LocalSlurm, tmp_path: Path, monkeypatch: Any) -> None:
    """The default node sets are the GPU ones; here JAX finds one CPU device, not 8 GPUs."""
    monkeypatch.setenv("MLDIAG_SMOKE_POLL_S", "1")
    code, doc, _ = _verify(cli, local_slurm, "--smoke", "--smoke-python", sys.executable,
                           "--smoke-profile-dir", str(tmp_path), "--smoke-timeout", "600")
    failed = [c for c in doc["checks"] if c["status"] == "FAIL"]
    assert code == 1
    assert [c["check"] for c in failed] == ["smoke:a3u"], failed
    assert "node set a3u, node " in failed[0]["message"]
    assert "jax.device_count() is 1, expected 8" in failed[0]["message"], failed[0]


STUCK_S = "6007"  # a sleep no other process of this machine is likely to run


def _sleepers() -> list[str]:
    """Processes running ``sleep STUCK_S`` (the stuck job's task)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", STUCK_S.encode()]:
            found.append(proc.name)
    return found


def test_smoke_timeout_cancels_the_job(cli: Cli, local_slurm: LocalSlurm, tmp_path: Path,
                                       monkeypatch: Any) -> None:
    monkeypatch.setenv("MLDIAG_SMOKE_POLL_S", "1")
    stuck = tmp_path / "stuck-python"
    stuck.write_text(f"#!/bin/sh\nexec sleep {STUCK_S}\n")
    stuck.chmod(0o755)
    started = time.monotonic()
    code, doc, _ = _verify(cli, local_slurm, "--smoke", "--smoke-node-set", "cpu",
                           "--smoke-python", str(stuck), "--smoke-timeout", "5")
    assert time.monotonic() - started < 300
    smoke = _by(doc)["smoke:cpu"]
    assert code == 1 and smoke["status"] == "FAIL", smoke
    m = re.search(r"job (\d+) still ([A-Z]+) after 5 s; cancelled \(scancel\)", smoke["message"])
    assert m, smoke["message"]
    assert "--smoke-timeout" in smoke["hint"]
    deadline = time.monotonic() + 60  # scancel is asynchronous: the job ends shortly after
    while _queued(local_slurm, m.group(1)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _queued(local_slurm, m.group(1)) == "", "the cancelled job is still in squeue"
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _sleepers(), "the cancelled job's task is still running"
    assert not list(Path("/root/.mldiag-smoke").glob(f"*-{m.group(1)}.out"))


def test_health_skips_without_the_scanner(cli: Cli, local_slurm: LocalSlurm,
                                          tmp_path: Path) -> None:
    code, doc, _ = _verify(cli, local_slurm, "--health",
                           "--health-path", str(tmp_path / "cluster-health-scanner"))
    health = _by(doc)["health:a3u"]
    assert code == 0
    assert health["status"] == "SKIP"
    assert "the Cluster Health Scanner is not installed on the login node" in health["message"]
    assert "health:cpu" not in _by(doc)  # a CPU node set has no scan
