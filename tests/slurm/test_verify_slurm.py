"""``mldiag-provision verify`` of a Slurm stack against the real single-machine Slurm of
conftest.py, reached over ssh as a login node is."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cli_support import CliResult

Cli = Callable[..., CliResult]
LocalSlurm = Any  # conftest.LocalSlurm

DATA = Path(__file__).parent / "data"
RECIPE = DATA / "slurm-cpu-local.yaml"


def _verify(cli: Cli, slurm: LocalSlurm, recipe: Path, *extra: str) -> CliResult:
    argv = ["verify", str(recipe), "--ssh-target", slurm.ssh_target, "--remote-timeout", "90"]
    for o in slurm.ssh_options:
        argv += ["--ssh-option", o]
    return cli(*argv, *extra)


@pytest.mark.slow  # a real slurmctld
def test_matching_recipe_passes(cli: Cli, local_slurm: LocalSlurm) -> None:
    res = _verify(cli, local_slurm, RECIPE, "--output", "json")
    doc = json.loads(res[1])
    by = {c["check"]: c for c in doc["checks"]}
    assert res[0] == 0, res[1] + res[2]
    assert doc["ok"] is True
    for name in ("login", "partition:gpu", "partition:cpu", "node-set:a3u", "node-set:cpu"):
        assert by[name]["status"] == "PASS", by[name]
    # no Filestore/Lustre client, no job-env.sh, no GPUs on a test machine: SKIP, with why
    assert by["storage:lustre"]["status"] == "SKIP"
    assert "no Lustre client" in by["storage:lustre"]["message"]
    assert by["storage:home"]["status"] == "SKIP"
    for name in ("storage:a3u:home", "storage:a3u:lustre", "storage:cpu:home",
                 "storage:cpu:lustre"):  # the same, through srun on a node of each node set
        assert by[name]["status"] == "SKIP", by[name]
        assert by[name]["evidence"].startswith("node set ")
    assert by["sdk:cpu"]["status"] == "SKIP" and "job-env.sh" in by["sdk:cpu"]["message"]
    assert by["gpus:a3u"]["status"] == "SKIP"
    assert "no GPUs here" in by["gpus:a3u"]["message"]
    assert "gpus:cpu" not in by  # a CPU node set has no GPU check


@pytest.mark.slow  # a real slurmctld
def test_text_output_lists_every_check(cli: Cli, local_slurm: LocalSlurm) -> None:
    res = _verify(cli, local_slurm, RECIPE)
    assert res[0] == 0, res[1] + res[2]
    assert "PASS" in res[1] and "node-set:cpu" in res[1]
    assert "0 failed of" in res[1]


def _changed(tmp_path: Path, old: str, new: str) -> Path:
    text = RECIPE.read_text()
    assert old in text
    out = tmp_path / "recipe.yaml"
    out.write_text(text.replace(old, new, 1))
    return out


@pytest.mark.slow  # a real slurmctld
def test_node_set_size_change_fails_naming_it(cli: Cli, local_slurm: LocalSlurm,
                                              tmp_path: Path) -> None:
    recipe = _changed(tmp_path, "machineType: n2-standard-4\n        staticNodeCount: 1",
                      "machineType: n2-standard-4\n        staticNodeCount: 2")
    res = _verify(cli, local_slurm, recipe, "--output", "json")
    assert res[0] == 1, res[1] + res[2]
    failed = [c for c in json.loads(res[1])["checks"] if c["status"] == "FAIL"]
    assert [c["check"] for c in failed] == ["node-set:cpu"]
    assert "node set cpu has 1 node(s) in Slurm, the recipe wants 2" in failed[0]["message"]


@pytest.mark.slow  # a real slurmctld
def test_slice_size_change_fails_naming_its_node_set(cli: Cli, local_slurm: LocalSlurm,
                                                     tmp_path: Path) -> None:
    recipe = _changed(tmp_path, "machineType: a3-ultragpu-8g\n      nodes: 1",
                      "machineType: a3-ultragpu-8g\n      nodes: 3")
    res = _verify(cli, local_slurm, recipe)
    assert res[0] == 1
    assert "FAIL" in res[1] and "node set a3u has 1 node(s) in Slurm, the recipe wants 3" \
        in res[1]


@pytest.mark.slow  # a real slurmctld
def test_missing_partition_fails_naming_it(cli: Cli, local_slurm: LocalSlurm,
                                           tmp_path: Path) -> None:
    recipe = _changed(tmp_path, "      - id: gpu\n        nodeSets: [a3u]",
                      "      - id: train\n        nodeSets: [a3u]")
    res = _verify(cli, local_slurm, recipe, "--output", "json")
    assert res[0] == 1
    failed = {c["check"]: c for c in json.loads(res[1])["checks"] if c["status"] == "FAIL"}
    assert list(failed) == ["partition:train"]
    assert "partition train (node sets a3u) is not in sinfo" in failed["partition:train"]["message"]
    skipped = {c["check"]: c for c in json.loads(res[1])["checks"] if c["status"] == "SKIP"}
    assert "partition train is not in Slurm" in skipped["gpus:a3u"]["message"]


def test_unreachable_login_node_is_a_fail_not_a_crash(cli: Cli) -> None:
    res = cli("verify", str(RECIPE), "--ssh-target", "root@127.0.0.1",
                  "--ssh-option", "Port=1", "--ssh-option", "ConnectTimeout=5",
                  "--remote-timeout", "20", "--output", "json")
    assert res[0] == 1, res[1] + res[2]
    checks = json.loads(res[1])["checks"]
    assert [(c["check"], c["status"]) for c in checks] == [("login", "FAIL")]
    assert "`hostname` exited 255" in checks[0]["message"]


@pytest.mark.parametrize("extra", [[], ["-o", "nowhere"]])
def test_no_login_node_without_ssh_target_is_a_usage_error(cli: Cli, extra: list[str]) -> None:
    res = cli("verify", str(RECIPE), *extra)
    assert res[0] == 2, res[1] + res[2]
    assert "no login node to reach" in res[2] and "--ssh-target" in res[2]
