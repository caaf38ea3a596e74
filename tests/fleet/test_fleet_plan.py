"""``fleet plan --changed-since`` on a real git history: exactly the affected recipes are
summarized (offline: preflight, render, plan objects, policy gate), in one Markdown summary
with the cross-recipe findings that involve them; exit 1 when one of them fails. Then the
switches that choose which plan runs (offline, --sandbox / MLDIAG_SANDBOX, --terraform,
--offline-only), without Terraform (tests/fleet/test_fleet_plan_sandbox.py runs it)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tests.cli_support import run_cli
from tests.fleet.test_fleet_matrix import commit, fleet_repository

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = fleet_repository(tmp_path / "fleet")
    monkeypatch.chdir(root)
    return root


@pytest.mark.slow  # a git history and a plan per affected recipe
def test_plans_exactly_the_affected_recipes_into_one_markdown_summary(
        history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = history / "recipes" / "gamma" / "team-m" / "batch.yaml"
    batch.write_text(batch.read_text().replace("name: team-m-batch", "name: team-m-batch2"))
    rego = history / "recipes" / "policies" / "shared" / "labels.rego"
    rego.write_text(rego.read_text().replace("carry a team label", "carry a team label."))
    commit(history, "edit")
    code, out, _ = run_cli(capsys, ["fleet", "plan", "recipes", "--changed-since", "main",
                                    "-O", "markdown"])
    assert out.startswith("## ✅ mldiag-provision fleet plan: 3 of 13 recipe(s) affected "
                          "since `main`")
    rows = [line for line in out.splitlines() if line.startswith("| `recipes/")]
    assert [re.match(r"\| `([^`]+)`", r).group(1) for r in rows] == [  # type: ignore[union-attr]
        "recipes/beta/team-h/serve.yaml", "recipes/gamma/team-l/eval.yaml",
        "recipes/gamma/team-m/batch.yaml"]
    by = {r.split("`")[1]: r for r in rows}
    assert "team-m-batch2 (gamma-ml-prod) | recipe edited |" in by[
        "recipes/gamma/team-m/batch.yaml"]
    # the shared policy's rule fires for the two recipes that read it, not the third
    assert "(fleet-team-label)" in by["recipes/beta/team-h/serve.yaml"]
    assert "(fleet-team-label)" not in by["recipes/gamma/team-m/batch.yaml"]
    assert "2 serviceAccount" in by["recipes/gamma/team-m/batch.yaml"]
    # the shared policy directory concerns two affected recipes: reported once
    assert "`fleet-policy-directory`" in out and "### Across recipes" in out
    assert "Terraform's plan (changes, drift, cost)" in out
    assert code == 0


def test_a_failing_recipe_and_a_collision_exit_1_in_json(
        history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    team_j = history / "recipes" / "gamma" / "team-j" / "train.yaml"
    team_j.write_text(team_j.read_text() + "# touched\n")
    commit(history, "touch")
    code, out, _ = run_cli(capsys, ["fleet", "plan", "recipes", "--changed-since", "main",
                                    "-O", "json"])
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert [r["recipe"] for r in doc["affected"]] == ["recipes/gamma/team-j/train.yaml"]
    (row,) = doc["affected"]
    assert row["ok"] and row["gate"]["errors"] == 0 and row["rendered_files"] > 0
    assert row["terraform_plan"] is None
    (finding,) = doc["findings"]  # team-i has the same metadata.name
    assert finding["rule"] == "fleet-names"
    assert [Path(s["file"]).name for s in finding["recipes"]] == ["train.yaml", "train.yaml"]
    assert doc["tool_changed"] == []


# --- which plan: offline (default), --sandbox / MLDIAG_SANDBOX, --terraform, --offline-only ---

def _touch(history: Path, recipe: str = "recipes/gamma/team-m/batch.yaml",
           old: str = "name: team-m-batch", new: str = "name: team-m-batch2") -> None:
    path = history / recipe
    path.write_text(path.read_text().replace(old, new))
    commit(history, "edit")


def test_offline_by_default_and_says_so_in_every_output(
        history: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLDIAG_SANDBOX", raising=False)
    _touch(history)
    base = ["fleet", "plan", "recipes", "--changed-since", "main"]
    code, out, _ = run_cli(capsys, [*base, "-O", "json"])
    doc = json.loads(out)
    assert code == 0 and doc["mode"] == "offline" and doc["hasChanges"] is False
    assert doc["terraform_plan"].startswith("not run: offline summary")
    assert doc["affected"][0]["terraform_plan"] is None
    code, out, _ = run_cli(capsys, base)
    assert code == 0 and "offline summary" in out.splitlines()[-1]
    code, out, _ = run_cli(capsys, [*base, "-O", "markdown"])
    assert code == 0 and "### Terraform plan" not in out
    assert "`fleet plan --sandbox`" in out.splitlines()[-1]
    # MLDIAG_SANDBOX=1 would plan in the sandbox; --offline-only keeps the offline summary
    monkeypatch.setenv("MLDIAG_SANDBOX", "1")
    code, out, _ = run_cli(capsys, [*base, "--offline-only", "-O", "json"])
    assert code == 0 and json.loads(out)["mode"] == "offline"
    assert not (history / "stacks").exists()  # no work directory made


@pytest.mark.parametrize(("env", "extra", "code", "said"), [
    # an offline summary cannot tell changes: asked to, it fails as every error does under
    # --detailed-exitcode (1, never 2, which would read as "changes")
    (None, ["--detailed-exitcode"], 1, "--detailed-exitcode needs Terraform's plan"),
    ("1", ["--terraform"], 2, "MLDIAG_SANDBOX asks for the sandbox"),
    ("maybe", ["--sandbox"], 2, "MLDIAG_SANDBOX='maybe' is neither on nor off"),
    (None, ["--sandbox", "--terraform"], 2, "not allowed with argument"),
    (None, ["--sandbox", "--offline-only"], 2, "not allowed with argument"),
])
def test_contradicting_or_impossible_switches_are_usage_errors(
        history: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        env: str | None, extra: list[str], code: int, said: str) -> None:
    if env is None:
        monkeypatch.delenv("MLDIAG_SANDBOX", raising=False)
    else:
        monkeypatch.setenv("MLDIAG_SANDBOX", env)
    got, out, err = run_cli(capsys, ["fleet", "plan", "recipes", *extra])
    assert got == code and said in err and out == ""
    assert not (history / "stacks").exists()


def test_a_recipe_with_preflight_errors_is_not_planned_and_exits_1(
        history: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # MLDIAG_SANDBOX=1 is --sandbox; nothing reaches Terraform: the only affected recipe
    # fails its preflight (a v5e topology that does not exist)
    monkeypatch.setenv("MLDIAG_SANDBOX", "1")
    _touch(history, old="topology: 2x4", new="topology: 2x5")
    code, out, err = run_cli(capsys, ["fleet", "plan", "recipes", "--changed-since", "main",
                                      "-O", "json", "--detailed-exitcode"])
    doc = json.loads(out)
    (row,) = doc["affected"]
    assert code == 1 and doc["mode"] == "sandbox" and not row["ok"]
    assert row["preflight"]["errors"] > 0
    plan = row["terraform_plan"]
    assert plan["ran"] is False and plan["note"] == "the recipe's preflight has errors"
    assert plan["workdir"] == "stacks/recipes/gamma/team-m/batch"
    assert "planning" not in err and not (history / "stacks").exists()


def test_work_directories_and_cost_cells() -> None:
    from mldiag_provision.fleet import tfplan

    root = Path("/w/stacks")
    assert tfplan.workdir_for(root, "teams/a/train.yaml") == root / "teams" / "a" / "train"
    # outside the repository: the stem, never a path that climbs out of the root
    assert tfplan.workdir_for(root, "../other/x.yaml") == root / "x"
    assert tfplan.workdir_for(root, "/abs/y.yml") == root / "y"
    assert tfplan.cost_text(None) == "unknown"
    assert tfplan.cost_text({"total_usd_per_hour": None}) == "unknown"
    assert tfplan.cost_text({"total_usd_per_hour": 9.7, "delta_usd_per_hour": 0.0,
                             "lower_bound": False}) == "$9.70/h"
    assert tfplan.cost_text({"total_usd_per_hour": 1, "delta_usd_per_hour": -2.5,
                             "lower_bound": True}) == "≥ $1.00/h (-$2.50/h)"
    # an error document of `plan -O json` is a failed plan, with plan's exit code
    failed = tfplan.from_document({"ok": False, "error": {"message": "m", "hint": "h",
                                                         "exitCode": 3}}, "w")
    assert not failed.ok and failed.error == "m" and failed.exit_code == 3
    assert tfplan.exit_code([failed], False, detailed=True) == 1
    assert tfplan.exit_code([None], False, detailed=True) == 0


def test_terraform_refuses_a_work_directory_that_is_a_sandbox_stack(
        history: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # --terraform runs `plan` without the sandbox, through the same guard: a work directory
    # that holds a sandbox would have Terraform reach Google Cloud with the sandbox's state
    monkeypatch.delenv("MLDIAG_SANDBOX", raising=False)
    _touch(history)
    (history / "stacks/recipes/gamma/team-m/batch/.mldiag/sandbox").mkdir(parents=True)
    code, out, err = run_cli(capsys, ["fleet", "plan", "recipes", "--changed-since", "main",
                                      "--terraform", "-O", "json"])
    doc = json.loads(out)
    (row,) = doc["affected"]
    plan = row["terraform_plan"]
    assert code == 1 and doc["mode"] == "terraform" and not doc["ok"]
    assert plan["ran"] is False and plan["error"]["exitCode"] == 2
    assert "is a sandbox stack" in plan["error"]["message"]
    assert "planning recipes/gamma/team-m/batch.yaml" in err
    code, out, _ = run_cli(capsys, ["fleet", "plan", "recipes", "--changed-since", "main",
                                    "--terraform", "-O", "markdown"])
    assert code == 1 and out.startswith("## ❌")
    (row,) = [r for r in out.split("### Terraform plan")[1].splitlines()
              if r.startswith("| `recipes/")]
    assert row.startswith("| `recipes/gamma/team-m/batch.yaml` | not planned: ")
    assert "stacks/recipes/gamma/team-m/batch is a sandbox stack" in row
    code, out, _ = run_cli(capsys, ["fleet", "plan", "recipes", "--changed-since", "main",
                                    "--terraform"])
    assert code == 1 and "    terraform plan: failed: " in out
    assert "stacks/recipes/gamma/team-m/batch is a sandbox stack" in out
