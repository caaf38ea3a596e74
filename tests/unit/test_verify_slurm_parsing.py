"""verify of Slurm stacks without a Slurm: the gcloud argv, sinfo parsing, node states, and
the GPU / storage / SDK checks on recorded command output (a fake login node)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.verify.slurm import (
    SINFO,
    Remote,
    bad_state,
    gcloud_ssh_argv,
    parse_sinfo,
    run_slurm_checks,
)

ROOT = Path(__file__).resolve().parents[2]

# nvidia-smi -L on an 8-GPU H200 VM, the shape NVIDIA documents ("GPU <i>: <name> (UUID: ...)")
SMI_8 = "".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd)\n"
                for i in range(8))
# sinfo -N on a Slurm on Google Cloud cluster: <cluster>-<nodeset>-<n>, dynamic nodes idle~
SINFO_A3 = ("slurma3u-a3u-0|gpu|(null)|idle\nslurma3u-a3u-1|gpu|(null)|mixed\n"
            + "".join(f"slurma3u-cpu-{i}|cpu|(null)|idle~\n" for i in range(4)))


class FakeLogin:
    where = "fake-login"

    def __init__(self, answer: Callable[[str], Remote]) -> None:
        self.answer, self.commands = answer, []  # type: ignore[var-annotated]

    def run(self, command: str, timeout_s: float) -> Remote:
        self.commands.append(command)
        return self.answer(command)


def _plan():  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    res = check_file(str(ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"), catalog)
    return build_plan(res.parsed.recipe, res.shapes, catalog).slurm


def _cluster(smi: str | None = SMI_8, sinfo: str = SINFO_A3,
             mounts: dict[str, str] | None = None,
             node_mounts: dict[str, str] | None = None) -> Callable[[str], Remote]:
    mounts = {"/home": "nfs", "/lustre": "lustre"} if mounts is None else mounts
    node_mounts = mounts if node_mounts is None else node_mounts

    def answer(cmd: str) -> Remote:
        if cmd == "hostname":
            return Remote(cmd, 0, "slurma3u-login-001\n", "")
        if cmd == SINFO:
            return Remote(cmd, 0, sinfo, "")
        if "findmnt" in cmd:  # on the login node, or through srun on a node
            m = re.search(r"-M (\S+?);", cmd)
            assert m, cmd
            fs = (node_mounts if cmd.startswith("srun") else mounts).get(m.group(1))
            return Remote(cmd, 0, (f"{fs}\nfindmnt=0\n" if fs else "findmnt=1\n")
                          + "client=yes\n", "")
        if cmd.startswith("srun") and "nvidia-smi" in cmd:
            return Remote(cmd, 0, "host=slurma3u-a3u-0\n" + (
                f"smi=yes\n{smi}" if smi is not None else "smi=no\n"), "")
        if cmd.startswith("srun"):
            return Remote(cmd, 0, "host=n\njobenv=yes\nsdk=yes\n", "")
        raise AssertionError(cmd)

    return answer


def test_gcloud_argv_tunnels_through_iap() -> None:
    argv = gcloud_ssh_argv("projects/p1/zones/us-east5-a/instances/slurma3u-login-001", "sinfo")
    assert argv == ["gcloud", "compute", "ssh", "slurma3u-login-001", "--zone=us-east5-a",
                    "--project=p1", "--tunnel-through-iap", "--command=sinfo", "--",
                    "-o", "BatchMode=yes"]
    assert "--tunnel-through-iap" not in gcloud_ssh_argv(
        "projects/p1/zones/z/instances/n", "true", iap=False)


@pytest.mark.parametrize("bad", ["slurma3u-login-001", "projects/p/regions/r/instances/n", ""])
def test_gcloud_argv_refuses_other_shapes(bad: str) -> None:
    with pytest.raises(ValueError, match="projects/P/zones/Z/instances/NAME"):
        gcloud_ssh_argv(bad, "true")


def test_parse_sinfo_and_states() -> None:
    rows = parse_sinfo(SINFO_A3)
    assert [r.node for r in rows][:2] == ["slurma3u-a3u-0", "slurma3u-a3u-1"]
    assert rows[0].features == ()
    with pytest.raises(ValueError, match="unexpected line"):
        parse_sinfo("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n")
    assert not bad_state("idle~") and not bad_state("mixed") and not bad_state("allocated")
    assert bad_state("down*") and bad_state("drained") and bad_state("idle*")


def test_recorded_a3_cluster_passes_with_eight_gpus() -> None:
    results = {r.check: r for r in run_slurm_checks(FakeLogin(_cluster()), _plan())}
    assert {k: r.status for k, r in results.items() if r.status != "PASS"} == {}
    assert results["node-set:cpu"].message.startswith("4 node(s) (0 static + 4 dynamic)")
    assert results["gpus:a3u"].message == "slurma3u-a3u-0: 8 GPU(s)"


def test_a_missing_gpu_fails_naming_the_node_set() -> None:
    seven = "".join(SMI_8.splitlines(keepends=True)[:7])
    r = {x.check: x for x in run_slurm_checks(FakeLogin(_cluster(smi=seven)), _plan())}
    assert r["gpus:a3u"].status == "FAIL"
    assert "shows 7 GPU(s), a3-ultragpu-8g has 8" in r["gpus:a3u"].message


def test_no_nvidia_smi_skips_with_the_reason() -> None:
    r = {x.check: x for x in run_slurm_checks(FakeLogin(_cluster(smi=None)), _plan())}
    assert r["gpus:a3u"].status == "SKIP" and "no GPUs here" in r["gpus:a3u"].message


def test_down_node_and_missing_mount_fail() -> None:
    sinfo = SINFO_A3.replace("slurma3u-a3u-1|gpu|(null)|mixed", "slurma3u-a3u-1|gpu|(null)|down*")
    r = {x.check: x for x in run_slurm_checks(
        FakeLogin(_cluster(sinfo=sinfo, mounts={"/home": "nfs"})), _plan())}
    assert r["node-set:a3u"].status == "FAIL" and "slurma3u-a3u-1 is down*" in \
        r["node-set:a3u"].message
    assert r["storage:lustre"].status == "FAIL"
    assert r["storage:lustre"].message == "Lustre is not mounted at /lustre"
    assert r["storage:home"].status == "PASS"


def test_a_mount_missing_on_a_node_set_fails_naming_it() -> None:
    r = {x.check: x for x in run_slurm_checks(FakeLogin(_cluster(
        node_mounts={"/home": "nfs", "/lustre": "ext4"})), _plan())}
    assert r["storage:lustre"].status == "PASS"  # the login node has it
    assert r["storage:a3u:lustre"].status == "FAIL"
    assert r["storage:a3u:lustre"].message == "/lustre is mounted as ext4, not Lustre (lustre)"
    assert r["storage:a3u:lustre"].evidence == "node set a3u:/lustre"
    assert r["storage:cpu:home"].status == "PASS" and "storage:cpu:lustre" not in r


@pytest.mark.parametrize("answer", [
    Remote(SINFO, 0, "garbage without columns\n", ""),
    Remote(SINFO, None, "", ""),
    Remote(SINFO, 1, "", "slurm_load_partitions: Unable to contact slurm controller"),
])
def test_unexpected_sinfo_is_a_fail_naming_the_command(answer: Remote) -> None:
    def reply(cmd: str) -> Remote:
        return Remote(cmd, 0, "login\n", "") if cmd == "hostname" else answer

    results = run_slurm_checks(FakeLogin(reply), _plan())
    assert [(r.check, r.status) for r in results][-1] == ("sinfo", "FAIL")
    assert "sinfo -h -N" in results[-1].message


def test_unexpected_srun_output_is_a_fail_not_a_crash() -> None:
    base = _cluster()

    def reply(cmd: str) -> Remote:
        return Remote(cmd, 0, "srun: job 12 queued and waiting\n", "") \
            if cmd.startswith("srun") else base(cmd)

    r = {x.check: x for x in run_slurm_checks(FakeLogin(reply), _plan())}
    assert r["sdk:a3u"].status == "FAIL" and "no answer from a node of a3u" in \
        r["sdk:a3u"].message
    assert r["gpus:a3u"].status == "FAIL"


def test_gcloud_transport_runs_gcloud_with_a_deadline(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from mldiag_provision.verify.slurm import GcloudTransport

    log = tmp_path / "argv"
    fake = tmp_path / "gcloud"  # a stand-in gcloud: records its argv, answers or hangs
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$FAKE_LOG"\n'
                    'case "$*" in *--command=sleep*) sleep 30;; esac\necho login-1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_LOG", str(log))
    t = GcloudTransport("projects/p1/zones/us-east5-a/instances/login-1")
    assert t.where == "instance login-1"
    r = t.run("hostname", 20)
    assert (r.returncode, r.stdout) == (0, "login-1\n")
    assert log.read_text().split("\n")[:7] == [
        "compute", "ssh", "login-1", "--zone=us-east5-a", "--project=p1",
        "--tunnel-through-iap", "--command=hostname"]
    late = t.run("sleep 30", 1)
    assert late.timed_out and "did not finish before its deadline" in late.why()
    with pytest.raises(ValueError):
        GcloudTransport("login-1")
