"""The policy gate inside ``plan``/``apply`` and ``policy --plan``, with the real terraform
binary and the offline stand-in providers: a violating stack stops before anything is
created; a waived one plans, and the gate sees the saved plan (``terraform show -json``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.conftest import cloud_objects, offline_recipe
from stack_support import REPO_ROOT

pytestmark = pytest.mark.terraform

RECIPE = REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"


def _without_waivers(recipe: Path) -> Path:
    doc = yaml.safe_load(recipe.read_text())
    doc["spec"].pop("policy", None)
    recipe.write_text(yaml.safe_dump(doc, sort_keys=False))
    return recipe


def test_violation_stops_plan_and_apply_before_anything_exists(offline, cli,
                                                               tmp_path: Path) -> None:
    if offline is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    r = _without_waivers(offline_recipe(RECIPE, tmp_path / "r.yaml", deletion_protection=False))
    work = str(tmp_path / "work")
    code, out, err = cli("--no-color", "plan", str(r), "-o", work)
    assert code == 1, out + err
    assert "ERROR [gke-deletion-protection]" in out, out
    # the stack (module argument) and the saved plan (planned attribute) both show it
    assert "the policy gate failed: 2 error(s) (gke-deletion-protection)" in err, out
    assert "plan:" in out  # the plan itself is still shown
    code, out, err = cli("--no-color", "apply", str(r), "-o", work, "--auto-approve")
    assert code == 1, out + err
    assert "nothing was applied" in err
    assert cloud_objects(offline) == {}


def test_waived_stack_plans_and_policy_reads_the_saved_plan(offline, cli,
                                                            tmp_path: Path) -> None:
    if offline is None:
        return
    r = offline_recipe(RECIPE, tmp_path / "r.yaml", deletion_protection=False)  # + waiver
    work = tmp_path / "work"
    code, out, err = cli("plan", str(r), "-o", str(work), "-O", "json")
    assert code == 0, out + err
    gate = json.loads(out)["policy"]
    assert gate["ok"] is True and gate["withPlan"] is True and gate["waived"] >= 1
    # the same through `policy --plan`: terraform show -json of the saved plan
    code, out, err = cli("policy", str(r), "-o", str(work), "--plan", "-O", "json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["withPlan"] is True
    waived = [f for f in doc["findings"] if f["waived"]]
    # the saved plan shows deletion_protection = false on the planned cluster, too
    assert any("saved plan" in f["message"] for f in waived), waived
    code, out, err = cli("policy", str(work), "--plan", "-O", "json")
    assert code == 0 and json.loads(out)["withPlan"] is True, out + err


def test_gate_of_plan_is_quiet_unless_verbose(offline, cli, tmp_path: Path) -> None:
    """Issue 31: the gate inside ``plan`` prints its findings and one summary line; the
    checkov checks the stack skips are counted there, listed only under -v."""
    if offline is None:
        return
    r = offline_recipe(RECIPE, tmp_path / "r.yaml")
    work = str(tmp_path / "work")
    code, out, err = cli("--no-color", "plan", str(r), "-o", work)
    assert code == 0, out + err
    gate = [line for line in out.splitlines() if line.startswith("policy gate")]
    assert len(gate) == 1 and gate[0].startswith("policy gate passed: 0 error(s)"), out
    assert "(-v lists them)" in gate[0]
    assert "CKV_" not in out
    code, out, err = cli("--no-color", "plan", str(r), "-o", work, "-v")
    assert code == 0, out + err
    assert "checkov checks the stack skips" in out and "    CKV_GCP_" in out, out


def test_plan_markdown_summary_for_a_pr_comment(offline, cli, tmp_path: Path) -> None:
    """`plan --output markdown` (what the pipeline examples post on a PR): counts per stage,
    the changes, the gate's verdict with waivers, the decisions; stdout is Markdown only."""
    if offline is None:
        return
    r = offline_recipe(RECIPE, tmp_path / "r.yaml", deletion_protection=False)
    work = str(tmp_path / "work")
    code, out, err = cli("plan", str(r), "-o", work, "-O", "markdown")
    assert code == 0, out + err
    assert out.startswith("### mldiag-provision plan: `tpu-v4-multihost`")
    assert "**Plan:** 24 to create, 0 to update, 0 to replace, 0 to delete" in out
    assert "| project | planned | 24 | 0 | 0 | 0 |" in out
    assert "| cluster | deferred: " in out
    assert "`module.cluster.google_container_cluster.this`" in out
    assert "#### Policy gate :white_check_mark: passed" in out
    assert "| waived | `gke-deletion-protection` |" in out
    assert "waiver: offline test stack" in out
    assert "== " not in out and "saved plan:" not in out  # no progress or text lines
    # a violating stack: the comment still says why, and the exit code is 1
    r2 = _without_waivers(offline_recipe(RECIPE, tmp_path / "r2.yaml",
                                         deletion_protection=False))
    code, out, err = cli("plan", str(r2), "-o", str(tmp_path / "w2"), "-O", "markdown")
    assert code == 1
    assert "#### Policy gate :x: failed" in out
    assert "| error | `gke-deletion-protection` |" in out
    assert "the policy gate failed" in err
