"""``verify --smoke --sandbox`` (issue 27): containers do not run in the sandbox, so the smoke
program runs on this machine for each slice, as ``smoke --local`` runs it (real JAX on the
CPU, XLA simulating the slice's devices; the real xprof package reading the profile back),
and every line says so. Driven through the CLI as a user types it (own process each).

Before that, the sandbox cluster answers what a real one would: a stack with no JobSet
controller (the quick-start recipe: its workload is a plain Job) fails ``verify --smoke``
with "the JobSet API is not installed", in the sandbox too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mldiag_provision.plan.smoke import SmokeSpec
from mldiag_provision.smoke.local import LocalResult
from mldiag_provision.verify.local_smoke import LOCALLY, judge_local
from stack_support import REPO_ROOT, terraform_binary

pytestmark = pytest.mark.terraform

JOBSET_RECIPE = "recipes/tpu-v5p-2x2x4-standard-reservation.yaml"  # workloads are JobSets
QUICK_START = "recipes/tpu-v4-2x2x4-autopilot.yaml"  # its workload is a Job: no JobSet API


def _cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mldiag_provision", *argv], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def _env(tmp_path: Path) -> dict[str, str]:
    """A user with (fake) Google credentials: the sandbox never reads them."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT / "provisioner"), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("MLDIAG_OFFLINE", None)
    env["NO_COLOR"] = "1"
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "no-such-key.json")
    return env


def _marked(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith("[SANDBOX] ") for line in lines)


def test_verify_smoke_in_the_sandbox_runs_the_program_locally(tmp_path: Path) -> None:
    if terraform_binary() is None:
        return
    env = _env(tmp_path)
    work = tmp_path / "stack"
    r = _cli("apply", JOBSET_RECIPE, "-o", str(work), "--sandbox", "--auto-approve", env=env)
    assert r.returncode == 0, r.stdout + r.stderr

    r = _cli("verify", JOBSET_RECIPE, "-o", str(work), "--sandbox", "--smoke", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _marked(r.stdout) and _marked(r.stderr), r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if "smoke:v5p-16" in x)
    assert line.startswith("[SANDBOX] PASS smoke:v5p-16"), line
    assert LOCALLY in line and "16 of 16 simulated devices" in line, line
    assert "psum over x, y, z = 136.0 as expected" in line, line
    assert "running the smoke program locally on 16 simulated devices" in r.stderr
    profile = work / ".mldiag" / "sandbox" / "smoke" / "v5p-16"
    assert "MLDIAG_SMOKE {" in (profile / "smoke.log").read_text(encoding="utf-8")
    assert list(profile.rglob("*.xplane.pb")), "no profile was written"
    # nothing of the smoke run is left in the sandbox cluster (no JobSet was created)
    r = _cli("sandbox", "ls", "-o", str(work), "-O", "json", env=env)
    assert r.returncode == 0, r.stderr
    assert not [o for o in json.loads(r.stdout)["objects"] if "smoke" in o["name"]]

    # JSON output: one document on stdout, the same verdict
    r = _cli("verify", JOBSET_RECIPE, "-o", str(work), "--sandbox", "--smoke", "-O", "json",
             env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    smoke = [c for c in doc["checks"] if c["check"].startswith("smoke")]
    assert [(c["check"], c["status"]) for c in smoke] == [("smoke:v5p-16", "PASS")]
    assert smoke[0]["message"].startswith(LOCALLY)


def test_verify_smoke_in_the_sandbox_says_what_a_cluster_without_jobset_says(
        tmp_path: Path) -> None:
    """The quick-start stack installs no JobSet controller: a real ``verify --smoke`` fails
    at its first JobSet; the sandbox says the same (exit 1) and still runs the program."""
    if terraform_binary() is None:
        return
    env = _env(tmp_path)
    work = tmp_path / "stack"
    r = _cli("apply", QUICK_START, "-o", str(work), "--sandbox", "--auto-approve", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("verify", QUICK_START, "-o", str(work), "--sandbox", "--smoke", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert _marked(r.stdout)
    assert "[SANDBOX] FAIL smoke                the JobSet API is not installed" in r.stdout
    assert "hint: install the JobSet controller" in r.stdout
    assert "[SANDBOX] PASS smoke:v4-16" in r.stdout and "1 failed of" in r.stdout


def _result(errors: list[str], report: dict[str, object] | None) -> LocalResult:
    spec = SmokeSpec(slice="s", kind="tpu", devices=8, per_slice=8, processes=2, slices=1,
                     vms=2, devices_per_vm=4, mesh=(("x", 2), ("y", 4)))
    return LocalResult(spec=spec, profile_dir=Path("/p/s"), report=report, errors=errors)


def test_a_failed_local_run_is_the_slice_fail_with_its_first_error() -> None:
    """Each way the local run fails (device count, collective, the profile) is the slice's
    FAIL, naming the error, the log and the local command to retry."""
    for error in ("jax.device_count() is 6, expected 8",
                  "psum over x, y = 28.0, expected 36.0",
                  "profile: no .xplane.pb under the profile directory"):
        got = judge_local(_result([error], {"devices": 6}))
        assert (got.check, got.status) == ("smoke:s", "FAIL")
        assert got.message == f"{LOCALLY}: slice s: {error}"
        assert got.hint is not None and "/p/s/smoke.log" in got.hint
        assert "smoke RECIPE --local --slice s" in got.hint
    ok = judge_local(_result([], {"devices": 8, "collective": {"op": "psum", "got": 36.0}}))
    assert ok.status == "PASS" and "8 of 8 simulated devices" in ok.message
