"""``verify --sandbox`` after ``sandbox reset``: the sandbox's API server answers 503 while it
holds no cluster; the FAIL says the sandbox holds none and names the way back (re-apply), not
the kubeconfig hint meant for a real cluster (the hint users met after a reset)."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace

from mldiag_provision.cli.commands.verify import _after_reset
from mldiag_provision.sandbox.rules import seed_cluster
from mldiag_provision.sandbox.session import sandbox_dir
from mldiag_provision.verify.checks import FAIL, PASS, CheckResult

RECIPE = "recipes/tpu-v4-2x2x4-autopilot.yaml"


def _results() -> list[CheckResult]:
    return [CheckResult("api-server", FAIL, "the API server answered 503 Service Unavailable",
                        "API server https://127.0.0.1:1", "is the cluster reachable? check "
                        "--kubeconfig/--context")]


def test_a_reset_sandbox_says_so_and_names_the_re_apply(tmp_path: Path) -> None:
    args = argparse.Namespace(out=str(tmp_path), recipe=RECIPE)
    plan = SimpleNamespace(cluster=SimpleNamespace(name="tpu-v4-multihost"))
    (sandbox_dir(tmp_path) / "cloud").mkdir(parents=True)  # emptied, as reset leaves it
    [got] = _after_reset(args, plan, _results())
    assert got.status == FAIL
    assert got.message.endswith("(SANDBOX: the sandbox holds no cluster tpu-v4-multihost)")
    assert got.hint is not None and "--kubeconfig" not in got.hint
    assert "the sandbox was reset" in got.hint
    assert f"`mldiag-provision apply {RECIPE} -o {tmp_path} --sandbox`" in got.hint


def test_a_sandbox_that_holds_the_cluster_keeps_the_api_server_s_own_words(
        tmp_path: Path) -> None:
    args = argparse.Namespace(out=str(tmp_path), recipe=RECIPE)
    plan = SimpleNamespace(cluster=SimpleNamespace(name="tpu-v4-multihost"))
    seed_cluster(sandbox_dir(tmp_path) / "cloud", project="my-ml-project",
                 location="us-central2", name="tpu-v4-multihost")
    assert _after_reset(args, plan, _results()) == _results()
    # and a verify whose API server answered is never touched
    passed = [CheckResult("api-server", PASS, "Kubernetes v1.33", "API server x")]
    assert _after_reset(args, plan, passed) == passed
