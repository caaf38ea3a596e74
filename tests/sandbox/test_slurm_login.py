"""The login node double of a sandbox Cluster Director cluster
(provisioner/mldiag_provision/sandbox/slurm_login.py): ``verify``'s Slurm checks run over it
and report what the applied cluster would show.

The cluster state is the one the sandbox's provider plugin stored when the Slurm example was
applied (``apply --sandbox``, once for the module); each test changes a copy of it the way the
cluster would differ (a node drained, a storage not applied, other partitions, another machine
type) and runs the real checks (:func:`mldiag_provision.verify.slurm.run_slurm_checks`) through
the transport ``verify --sandbox`` uses."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.cli.commands.verify import _SandboxLogin
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.sandbox.slurm_login import (
    CLUSTER_TYPE,
    STATE_FILE,
    LoginNodeDouble,
    build_cluster,
    login_node,
    set_node_state,
)
from mldiag_provision.verify.checks import FAIL, PASS, SKIP, CheckResult
from mldiag_provision.verify.slurm import run_slurm_checks
from stack_support import terraform_binary

pytestmark = pytest.mark.terraform

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"
RESERVATION = "projects/my-ml-project/zones/us-east5-a/reservations/a3-ultra-reservation"


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The work directory of the Slurm example applied in the sandbox (once)."""
    if terraform_binary() is None:
        pytest.skip("no terraform binary")  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM
    work = tmp_path_factory.mktemp("slurm") / "stack"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "provisioner")}
    r = subprocess.run([sys.executable, "-m", "mldiag_provision", "apply", str(RECIPE), "-o",
                        str(work), "--sandbox", "--auto-approve"], capture_output=True,
                       text=True, env=env, check=False, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return work


@pytest.fixture(scope="module")
def plan() -> Any:
    catalog = load_catalog()
    res = check_file(str(RECIPE), catalog)
    return build_plan(res.parsed.recipe, res.shapes, catalog).slurm


def _state(work: Path) -> dict[str, Any]:
    files = list((work / ".mldiag" / "sandbox" / "cloud" / CLUSTER_TYPE).glob("*.json"))
    assert len(files) == 1, files
    state: dict[str, Any] = json.loads(files[0].read_text(encoding="utf-8"))["state"]
    return copy.deepcopy(state)


def _slurm(state: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = state["orchestrator"][0]["slurm"][0]
    return block


def _double(state: dict[str, Any], tmp_path: Path) -> LoginNodeDouble:
    cluster = build_cluster(state, {RESERVATION: "a3-ultragpu-8g"}, tmp_path / STATE_FILE)
    assert cluster is not None
    return LoginNodeDouble(cluster)


def _checks(double: LoginNodeDouble, plan: Any) -> dict[str, CheckResult]:
    return {r.check: r for r in run_slurm_checks(_SandboxLogin(double), plan, timeout_s=5)}


def test_the_applied_cluster_passes_every_check(applied: Path, plan: Any,
                                                tmp_path: Path) -> None:
    results = _checks(_double(_state(applied), tmp_path), plan)
    assert {c: r.status for c, r in results.items() if r.status != PASS} == {}
    assert results["node-set:a3u"].message.startswith("2 node(s) (2 static): "
                                                      "slurm-a3-ultra-a3u-0 idle")
    assert "slurm-a3-ultra-cpu-3 idle~" in results["node-set:cpu"].message
    assert results["gpus:a3u"].message.endswith(": 8 GPU(s)")
    assert results["storage:lustre"].message == "Lustre mounted at /lustre (lustre)"


def test_sinfo_and_nvidia_smi_answer_in_their_own_formats(applied: Path,
                                                          tmp_path: Path) -> None:
    double = _double(_state(applied), tmp_path)
    code, out, _ = double.run("sinfo -N -o '%N %.6P %t'")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "NODELIST PARTIT STATE"  # a heading without -h, cut to its size
    assert "slurm-a3-ultra-a3u-0   gpu* idle" in lines  # %.6P: right-justified, * default
    assert "slurm-a3-ultra-cpu-0    cpu idle~" in lines
    code, out, _ = double.run("srun -p gpu nvidia-smi -L")
    assert code == 0 and len(out.splitlines()) == 8
    assert out.startswith("GPU 0: NVIDIA H200 141GB (UUID: GPU-")
    code, out, err = double.run("nvidia-smi -L")  # the login node (n2) has no GPU driver
    assert (code, out, err) == (127, "", "bash: line 1: nvidia-smi: command not found\n")


def test_a_drained_or_down_node_set_fails_verify(applied: Path, plan: Any,
                                                 tmp_path: Path) -> None:
    double = _double(_state(applied), tmp_path)
    # as an administrator drains a node: scontrol needs a reason (scontrol(1))
    code, _, err = double.run("scontrol update NodeName=slurm-a3-ultra-a3u-1 State=DRAIN")
    assert code == 1 and "You must specify a reason" in err
    code, _, err = double.run("scontrol update NodeName=slurm-a3-ultra-a3u-1 State=DRAIN "
                              "Reason='bad gpu'")
    assert code == 0, err
    # the state is the sandbox's: the next command (a new double) sees it
    again = _double(_state(applied), tmp_path)
    results = _checks(again, plan)
    assert results["node-set:a3u"].status == FAIL
    assert "slurm-a3-ultra-a3u-1 is drained" in results["node-set:a3u"].message
    assert results["sdk:a3u"].status == PASS  # a job still runs on the other node
    # both down: no job can start; srun --immediate gives up as Slurm does
    set_node_state(tmp_path, "slurm-a3-ultra", "slurm-a3-ultra-a3u-0", "down", "no response")
    results = _checks(_double(_state(applied), tmp_path), plan)
    assert "slurm-a3-ultra-a3u-0 is down" in results["node-set:a3u"].message
    for check in ("sdk:a3u", "gpus:a3u", "storage:a3u:home"):
        assert results[check].status == FAIL, results[check]
        assert "Unable to allocate resources: Requested nodes are busy" in results[check].message
    assert results["node-set:cpu"].status == PASS
    # resumed, the node set passes again
    code, _, _ = again.run("scontrol update NodeName=slurm-a3-ultra-a3u-0,"
                           "slurm-a3-ultra-a3u-1 State=RESUME")
    assert code == 0
    assert _checks(_double(_state(applied), tmp_path), plan)["node-set:a3u"].status == PASS


def test_a_storage_the_cluster_does_not_hold_is_not_mounted(applied: Path, plan: Any,
                                                            tmp_path: Path) -> None:
    state = _state(applied)
    state["storage_resources"] = [s for s in state["storage_resources"] if s["id"] != "lustre"]
    results = _checks(_double(state, tmp_path), plan)
    for check in ("storage:lustre", "storage:a3u:lustre"):
        assert results[check].status == FAIL, results[check]
        assert results[check].message == "Lustre is not mounted at /lustre"
    assert results["storage:home"].status == PASS
    # findmnt's own answer: nothing found is exit 1, no output
    assert _double(state, tmp_path).run("findmnt -n -o FSTYPE -M /lustre") == (1, "", "")


def test_other_partitions_fail_verify(applied: Path, plan: Any, tmp_path: Path) -> None:
    state = _state(applied)
    _slurm(state)["partitions"] = [{"id": "batch", "node_set_ids": ["a3u", "cpu"]}]
    _slurm(state)["default_partition"] = "batch"
    results = _checks(_double(state, tmp_path), plan)
    for p in ("gpu", "cpu"):
        assert results[f"partition:{p}"].status == FAIL
        assert "is not in sinfo (partitions there: batch)" in results[f"partition:{p}"].message
    assert results["sdk:a3u"].status == SKIP  # no job can reach a partition that is not there
    code, _, err = _double(state, tmp_path).run("srun -p gpu hostname")
    assert code == 1
    assert err == "srun: error: Unable to allocate resources: Invalid partition name specified\n"
    # a partition without one of its node sets
    state = _state(applied)
    _slurm(state)["partitions"][0]["node_set_ids"] = ["cpu"]
    results = _checks(_double(state, tmp_path), plan)
    assert results["partition:gpu"].status == FAIL
    assert "holds no node of node set a3u" in results["partition:gpu"].message


def test_gpus_and_the_sdk_come_from_the_cluster_as_applied(applied: Path, plan: Any,
                                                           tmp_path: Path) -> None:
    state = _state(applied)
    # another machine type: the catalog's GPU count of that machine type (a4x-highgpu-4g: 4)
    state["compute_resources"][0]["config"][0] = {"new_on_demand_instances": [
        {"machine_type": "a4x-highgpu-4g", "zone": "us-east5-a"}]}
    results = _checks(_double(state, tmp_path), plan)
    assert results["gpus:a3u"].status == FAIL
    assert "shows 4 GPU(s), a3-ultragpu-8g has 8" in results["gpus:a3u"].message
    # a startup script that does not install the SDK: the venv is not there
    state = _state(applied)
    script = state["orchestrator"][0]["slurm"][0]["node_sets"][0]["compute_instance"][0]
    script["startup_script"] = script["startup_script"].replace("install_sdk()", "skipped()")
    results = _checks(_double(state, tmp_path), plan)
    assert results["sdk:a3u"].status == FAIL
    assert "lacks the SDK" in results["sdk:a3u"].message
    assert results["sdk:cpu"].status == PASS
    # a node set's nodes counted from static + dynamic as applied
    state = _state(applied)
    _slurm(state)["node_sets"][0]["static_node_count"] = "1"
    results = _checks(_double(state, tmp_path), plan)
    assert results["node-set:a3u"].status == FAIL
    assert "has 1 node(s) in Slurm, the recipe wants 2" in results["node-set:a3u"].message


@pytest.mark.parametrize(("command", "code", "err"), [
    ("squeue -h", 127, "bash: line 1: squeue: command not found\n"),
    ("/opt/nowhere/tool", 127, "bash: line 1: /opt/nowhere/tool: No such file or directory\n"),
    ("hostname | tr a-z A-Z", 2, "pipelines (|) is not modelled"),
    ("sinfo -N -o '%N %G'", 1, "format field %G is not modelled"),
    ("/usr/bin/python3 -c 'print(1)'", 1, "only `-c 'import MODULE'` runs"),
    ("/sbin/mount.lustre x /mnt", 126, "running it is not modelled"),
])
def test_what_the_double_does_not_know_is_never_a_pass(applied: Path, tmp_path: Path,
                                                       command: str, code: int,
                                                       err: str) -> None:
    got = _double(_state(applied), tmp_path).run(command)
    assert got[0] == code and err in got[2], got


def test_the_shell_reads_verify_s_command_lines(applied: Path, tmp_path: Path) -> None:
    double = _double(_state(applied), tmp_path)
    assert double.run('echo host=$(hostname); false; echo "rc=$?"') == (
        0, "host=slurm-a3-ultra-login-001\nrc=1\n", "")
    assert double.run("if command -v gcsfuse >/dev/null 2>&1; then echo yes; else echo no; "
                      "fi") == (0, "yes\n", "")
    assert double.run("[ -x /usr/sbin/mount.nfs ] || [ -x /sbin/mount.nfs ] && echo ok") == (
        0, "ok\n", "")
    assert double.run("nosuch 2>/dev/null || echo missing") == (0, "missing\n", "")
    code, out, _ = double.run("srun -N1 -n1 -p gpu --time=2 --immediate=5 bash -c "
                              "'/opt/mldiag/venv/bin/python -c "
                              "\"import google_cloud_mldiagnostics\" && echo sdk=yes'")
    assert (code, out) == (0, "sdk=yes\n")
    code, _, err = double.run("srun -p gpu /opt/mldiag/venv/bin/python -c 'import jax'")
    assert code == 1 and "ModuleNotFoundError: No module named 'jax'\n" in err
    assert err.endswith("task 0: Exited with exit code 1\n")
    # the SDK's venv is on the compute nodes (their startup script), not on the login node
    code, _, err = double.run("/opt/mldiag/venv/bin/python -c 'import os'")
    assert (code, err) == (127, "bash: line 1: /opt/mldiag/venv/bin/python: No such file or "
                           "directory\n")
    # without --immediate, srun on nodes that cannot run a job waits: no exit status
    set_node_state(tmp_path, "slurm-a3-ultra", "slurm-a3-ultra-a3u-0", "down", "x")
    set_node_state(tmp_path, "slurm-a3-ultra", "slurm-a3-ultra-a3u-1", "down", "x")
    code, _, err = _double(_state(applied), tmp_path).run("srun -p gpu hostname")
    assert code is None and "queued and waiting for resources" in err


def test_verify_in_the_sandbox_finds_the_login_node_of_the_applied_cluster(
        applied: Path, tmp_path: Path, cli: Any) -> None:
    sandbox = applied / ".mldiag" / "sandbox"
    assert login_node(sandbox, cluster_id="other", location="us-east5") is None
    found = login_node(sandbox, cluster_id="slurm-a3-ultra", location="us-east5",
                       project="my-ml-project")
    assert found is not None and found.where == "SANDBOX login node slurm-a3-ultra-login-001"
    # a real login node is outside the sandbox
    code, out, err = cli("verify", str(RECIPE), "-o", str(applied), "--sandbox",
                         "--ssh-target", "me@10.0.0.5")
    assert code == 2 and "--ssh-target reaches a real login node" in err, out + err
    # a drained node: the CLI's verify FAILs (exit 1), every line marked
    set_node_state(sandbox, "slurm-a3-ultra", "slurm-a3-ultra-cpu-2", "drained", "test")
    try:
        code, out, err = cli("verify", str(RECIPE), "-o", str(applied), "--sandbox")
    finally:
        (sandbox / STATE_FILE).unlink()
    assert code == 1, out + err
    assert "FAIL node-set:cpu" in out and "slurm-a3-ultra-cpu-2 is drained" in out, out
    assert all(line.startswith("[SANDBOX] ") for line in out.splitlines() if line.strip())


def test_sandbox_rules_list_what_the_login_node_double_enforces() -> None:
    """``sandbox rules`` names the double's behaviours, each with its source, as the other
    sandbox rules are listed."""
    from mldiag_provision.sandbox.rules import RULES

    slurm = {r.id: r for r in RULES if r.when == "slurm"}
    assert {"slurm-login-node", "slurm-sinfo-nodes", "slurm-srun-allocation",
            "slurm-node-state", "slurm-mounts", "slurm-gpus", "slurm-startup-files"} == set(slurm)
    assert "slurm_errno.c" in slurm["slurm-srun-allocation"].source
    assert "https://slurm.schedmd.com/sinfo.html" in slurm["slurm-sinfo-nodes"].source


def test_verify_smoke_and_health_in_the_sandbox(applied: Path, cli: Any) -> None:
    """``--smoke --sandbox``: the program runs locally per node set, as on GKE, after the
    sandbox answered what the cluster would (a node set with a drained node cannot start the
    job: FAIL, not run); ``--health --sandbox``: a SKIP that says why, never a PASS."""
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in ("jax", "xprof")):
        pytest.skip("the smoke extra (jax, xprof) is not installed")
    sandbox = applied / ".mldiag" / "sandbox"
    set_node_state(sandbox, "slurm-a3-ultra", "slurm-a3-ultra-a3u-1", "drained", "test")
    try:
        code, out, err = cli("verify", str(RECIPE), "-o", str(applied), "--sandbox", "--smoke",
                             "--health", "--smoke-node-set", "a3u", "--smoke-node-set", "cpu")
    finally:
        (sandbox / STATE_FILE).unlink()
    assert code == 1, out + err
    lines = {line.split()[2]: line for line in out.splitlines() if line.startswith(
        ("[SANDBOX] PASS", "[SANDBOX] FAIL", "[SANDBOX] SKIP"))}
    assert "FAIL" in lines["smoke:a3u"] and "1 of the 2 node(s)" in lines["smoke:a3u"]
    assert "slurm-a3-ultra-a3u-1 drained" in lines["smoke:a3u"]
    assert "PASS" in lines["smoke:cpu"], out
    assert "SANDBOX, run locally as `smoke --local`" in lines["smoke:cpu"]
    assert "4 of 4 simulated devices" in lines["smoke:cpu"]
    assert "SKIP" in lines["health:a3u"] and "SANDBOX: the Cluster Health" in lines["health:a3u"]
    assert (sandbox / "smoke" / "cpu" / "smoke.log").is_file()
    assert all(line.startswith("[SANDBOX] ") for line in out.splitlines() if line.strip())
    assert "running the smoke program locally on 4 simulated CPU devices" in err


def test_node_states_end_with_the_cluster_object_they_were_set_on(applied: Path,
                                                                  tmp_path: Path) -> None:
    """A drained node belongs to the VMs of that cluster: once the cluster object is written
    again (destroyed and applied again, changed, reset), its nodes are new and idle."""
    import shutil

    sandbox = tmp_path / "sandbox"
    shutil.copytree(applied / ".mldiag" / "sandbox" / "cloud", sandbox / "cloud")
    set_node_state(sandbox, "slurm-a3-ultra", "slurm-a3-ultra-a3u-0", "drained", "test")
    found = login_node(sandbox, cluster_id="slurm-a3-ultra", location="us-east5")
    assert found is not None
    assert found.cluster.nodes["slurm-a3-ultra-a3u-0"].shown == "drained"
    obj = next((sandbox / "cloud" / CLUSTER_TYPE).glob("*.json"))
    obj.write_bytes(obj.read_bytes())  # written again by a new apply
    os.utime(obj, ns=(obj.stat().st_atime_ns, obj.stat().st_mtime_ns + 1_000_000))
    again = login_node(sandbox, cluster_id="slurm-a3-ultra", location="us-east5")
    assert again is not None
    assert again.cluster.nodes["slurm-a3-ultra-a3u-0"].shown == "idle"
