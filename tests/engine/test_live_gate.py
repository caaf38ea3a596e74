"""``plan``/``apply`` run the live checks before Terraform when credentials exist: against
the stand-in Google Cloud APIs (mldiag_provision/sandbox/gcp_apis.py) and the stand-in Terraform
providers, a FAIL stops them before any terraform command; ``--ignore-live-failures`` goes on
and says so loudly; ``--offline`` asks nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.conftest import cloud_objects, offline_recipe
from live.conftest import all_pass_project
from mldiag_provision.sandbox.gcp_apis import GcpApis
from stack_support import REPO_ROOT

pytestmark = pytest.mark.terraform


@pytest.fixture
def gate(offline_cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """(stand-in APIs, recipe copy, work dir): credentials present (the engine fixture's
    GOOGLE_OAUTH_ACCESS_TOKEN), live checks on, pointed at the stand-in APIs."""
    if offline_cluster is None:
        pytest.skip("terraform missing (explicitly allowed)")
    recipe = offline_recipe(REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml",
                            tmp_path / "r.yaml")
    with GcpApis(all_pass_project(), token=offline_cluster.token) as apis:
        for key, value in apis.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("MLDIAG_OFFLINE", raising=False)
        yield apis, recipe, tmp_path / "work", offline_cluster.cloud


def test_a_live_fail_stops_plan_and_apply_before_terraform(gate, cli) -> None:
    apis, recipe, work, cloud = gate
    apis.project.state = "DELETE_REQUESTED"
    rc, out, err = cli("plan", str(recipe), "-o", str(work))
    assert rc == 1
    assert "FAIL project" in out and "project my-ml-project is DELETE_REQUESTED" in out
    assert "1 live check(s) failed; nothing was planned or changed" in err
    assert "--ignore-live-failures" in err
    assert not (work / ".mldiag" / "tfplan").exists()  # terraform plan never ran
    rc, out, err = cli("apply", str(recipe), "-o", str(work), "--auto-approve")
    assert rc == 1 and "nothing was planned or changed" in err
    assert cloud_objects(cloud) == {}  # nothing created


def test_ignore_live_failures_goes_on_and_says_so(gate, cli) -> None:
    apis, recipe, work, _ = gate
    apis.project.state = "DELETE_REQUESTED"
    rc, _, err = cli("plan", str(recipe), "-o", str(work), "--ignore-live-failures")
    assert rc == 0, err
    assert "--ignore-live-failures: going on to Terraform despite 1 FAILED live check(s)" \
        in err
    assert (work / ".mldiag" / "tfplan").exists()


def test_offline_asks_nothing_and_all_pass_asks_first(gate, cli) -> None:
    apis, recipe, work, _ = gate
    rc, _, err = cli("plan", str(recipe), "-o", str(work), "--offline")
    assert rc == 0, err
    assert apis.requests == []
    rc, out, err = cli("plan", str(recipe), "-o", str(work))
    assert rc == 0, err
    assert "live checks of project my-ml-project" in out and "0 failed" in out
    assert ("GET", "/v3/projects/my-ml-project") in apis.requests


def test_json_output_carries_the_failed_checks(gate, cli) -> None:
    import json

    apis, recipe, work, _ = gate
    apis.project.zones_offering["ct4p-hightpu-4t"] = []
    rc, out, _ = cli("plan", str(recipe), "-o", str(work), "--output", "json")
    assert rc == 1
    doc = json.loads(out)
    assert doc["ok"] is False
    assert [p["rule"] for p in doc["error"]["problems"]] == ["live-machine-type"]
    assert doc["error"]["problems"][0]["message"] == (
        "ct4p-hightpu-4t (slice v4-16) is not offered in any zone of us-central2")


def test_a_name_taken_outside_the_stack_stops_plan_and_its_own_do_not(gate, cli) -> None:
    """Issue 25: the workload service account the stack would create exists in the project
    (another stack's, or made by hand): plan stops before Terraform, naming it, and again on
    the next run (a rendered plan.json alone makes nothing the stack's own). Once the
    stack's state holds the account (applied here with --ignore-live-failures: the stand-in
    cloud and the stand-in APIs are separate), it is the stack's own: plan goes on."""
    apis, recipe, work, cloud = gate
    apis.project.taken = {"serviceAccount": {"tpu-v4-multihost-workload"}}
    for _ in range(2):
        rc, out, err = cli("plan", str(recipe), "-o", str(work))
        assert rc == 1
        assert "FAIL names" in out and "tpu-v4-multihost-workload already exists" in out
        assert "nothing was planned or changed" in err
    assert cloud_objects(cloud) == {}
    rc, out, err = cli("apply", str(recipe), "-o", str(work), "--auto-approve",
                       "--ignore-live-failures", "--no-workloads")
    assert rc == 0, out + err
    rc, out, err = cli("plan", str(recipe), "-o", str(work))
    assert rc == 0, out + err
    assert "FAIL names" not in out
