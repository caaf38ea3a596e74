"""``fleet plan --changed-since`` on a real git history: exactly the affected recipes are
summarized (offline: preflight, render, plan objects, policy gate), in one Markdown summary
with the cross-recipe findings that involve them; exit 1 when one of them fails."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tests.cli_support import run_cli
from tests.fleet.test_fleet_matrix import REPO, commit, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fleet"
    shutil.copytree(REPO, root / "recipes")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    commit(root, "base")
    git(root, "checkout", "-qb", "change")
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
