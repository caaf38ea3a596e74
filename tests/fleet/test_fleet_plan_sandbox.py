"""``fleet plan --sandbox`` on a real git history: Terraform's own plan of exactly the
affected recipes, each in its own work directory (``stacks/<recipe path>``), run against the
sandbox's providers, in one summary; then, after ``apply --sandbox`` of one of them, no
changes for it; then an edit of the applied one: its dangers and the gate's findings over the
plan. Exit codes: 0, 2 with ``--detailed-exitcode`` when something would change, 1 on errors.

Only the ``project`` stage is planned and applied (``--stage project``): the cluster stage
is deferred until the project stage is applied anyway, and applying it would run the
sandbox cluster; the project stage is what the recipes' edits change. Two cheap recipes of
the fixture fleet (one GKE Autopilot cluster each, 23 resources) keep each plan to seconds.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tests.cli_support import run_cli
from tests.fleet.test_fleet_matrix import commit, fleet_repository
from tests.stack_support import terraform_binary

pytestmark = [pytest.mark.terraform,
              pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

BATCH = "recipes/gamma/team-m/batch.yaml"
EVAL = "recipes/gamma/team-l/eval.yaml"


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if terraform_binary() is None:
        pytest.skip("terraform is not on PATH (MLDIAG_ALLOW_NO_TERRAFORM=1)")
    root = fleet_repository(tmp_path / "fleet")
    monkeypatch.chdir(root)
    monkeypatch.delenv("MLDIAG_SANDBOX", raising=False)
    return root


def _edit(root: Path, recipe: str, old: str, new: str) -> None:
    path = root / recipe
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _rows(markdown: str, heading: str) -> dict[str, str]:
    """The rows of the table under ``### heading``, by recipe."""
    part = markdown.split(f"### {heading}", 1)[1].split("\n\n", 2)[1]
    return {re.match(r"\| `([^`]+)`", line).group(1): line  # type: ignore[union-attr]
            for line in part.splitlines() if line.startswith("| `")}


def _summary_counts(root: Path, recipe: str) -> str:
    """The counts Terraform's plan wrote to the work directory's plan-summary.json, as the
    markdown summary prints them."""
    stack = root / "stacks" / Path(recipe).with_suffix("")
    doc = json.loads((stack / ".mldiag" / "plan-summary.json").read_text())
    if not doc["hasChanges"]:
        return "no changes"
    s = doc["summary"]
    return ", ".join(f"{s[k]} {k}" for k in ("create", "update", "replace", "delete"))


def _fleet_plan(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run_cli(capsys, ["fleet", "plan", "recipes", "--changed-since", "main",
                            "--sandbox", "--stage", "project", *extra])


def test_plans_the_affected_recipes_then_sees_an_apply_then_an_edits_dangers(
        history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(history, BATCH, "name: team-m-batch", "name: team-m-batch2")
    _edit(history, EVAL, "name: team-l-eval", "name: team-l-eval2")
    commit(history, "edit two recipes")

    code, out, err = _fleet_plan(capsys, "-O", "markdown")
    assert code == 0, err
    assert out.startswith("## ✅ mldiag-provision fleet plan: 2 of 13 recipe(s) affected")
    rows = _rows(out, "Terraform plan")
    assert list(rows) == [EVAL, BATCH]  # exactly the affected ones
    for recipe, row in rows.items():
        counts = _summary_counts(history, recipe)
        assert counts.startswith(tuple("123456789")) and " create, 0 update" in counts
        assert f"| `{recipe}` | {counts} | - | - |" in row  # no dangers, no drift
        assert f"`stacks/{Path(recipe).with_suffix('')}` |" in row
        assert "$" in row and "/h" in row  # the cost per hour
    assert "(fleet-team-label)" in rows[EVAL]  # the shared policy, run over the plan
    assert "in the sandbox" in out
    # one work directory per affected recipe, and none for the others
    planned = sorted(p.parent.parent.relative_to(history / "stacks").as_posix()
                     for p in (history / "stacks").rglob(".mldiag/plan-summary.json"))
    assert planned == ["recipes/gamma/team-l/eval", "recipes/gamma/team-m/batch"]
    assert err.count("[SANDBOX] fleet plan: planning ") == 2
    # every line on stderr says SANDBOX, the per-recipe plans' own lines too
    assert all(line.startswith("[SANDBOX] ") for line in err.splitlines() if line.strip()), err

    # apply one of them in its fleet work directory: the next fleet plan sees no changes there
    code, _, err = run_cli(capsys, ["apply", BATCH, "-o", "stacks/recipes/gamma/team-m/batch",
                                    "--sandbox", "--stage", "project", "--auto-approve"])
    assert code == 0, err
    code, out, _ = _fleet_plan(capsys, "-O", "markdown")
    rows = _rows(out, "Terraform plan")
    assert f"| `{BATCH}` | no changes | - | - |" in rows[BATCH]
    assert _summary_counts(history, EVAL) in rows[EVAL] and "no changes" not in rows[EVAL]
    assert code == 0
    code, out, _ = _fleet_plan(capsys, "-O", "json", "--detailed-exitcode")
    doc = json.loads(out)
    by = {a["recipe"]: a["terraform_plan"] for a in doc["affected"]}
    # --detailed-exitcode: one of them would change -> 2
    assert code == 2 and doc["ok"] and doc["hasChanges"] and doc["mode"] == "sandbox"
    assert not by[BATCH]["hasChanges"] and by[EVAL]["hasChanges"]
    assert by[BATCH]["planSummaries"] == [
        "stacks/recipes/gamma/team-m/batch/.mldiag/plan-summary.json"]
    # only the applied recipe: nothing would change -> 0
    code, out, _ = run_cli(capsys, ["fleet", "plan", BATCH, "--sandbox", "--stage", "project",
                                    "--detailed-exitcode", "-O", "json"])
    assert code == 0 and json.loads(out)["hasChanges"] is False

    # a label added to the bucket outside Terraform (in the sandbox cloud): drift
    cloud = history / "stacks/recipes/gamma/team-m/batch/.mldiag/sandbox/cloud"
    (bucket,) = (cloud / "google_storage_bucket").glob("*.json")
    obj = json.loads(bucket.read_text())
    for key in ("labels", "effective_labels"):
        obj["state"][key]["edited"] = "by-hand"
    bucket.write_text(json.dumps(obj))
    code, out, _ = run_cli(capsys, ["fleet", "plan", BATCH, "--sandbox", "--stage",
                                    "project", "-O", "markdown"])
    row = _rows(out, "Terraform plan")[BATCH]
    assert code == 0
    assert (f"| `{BATCH}` | 0 create, 1 update, 0 replace, 0 delete | - | "
            "`module.profiles_bucket.google_storage_bucket.this[0]` |") in row

    # moving the applied recipe to another region replaces its cluster and deletes its
    # bucket: plan's dangers, and the bundled gate's findings over that plan -> exit 1
    _edit(history, BATCH, "region: us-south1", "region: us-east5")
    commit(history, "move batch")
    code, out, _ = _fleet_plan(capsys, "-O", "json", "--detailed-exitcode")
    doc = json.loads(out)
    by = {a["recipe"]: a for a in doc["affected"]}
    moved = by[BATCH]["terraform_plan"]
    assert code == 1 and not doc["ok"] and not by[BATCH]["ok"] and by[EVAL]["ok"]
    code, out, _ = run_cli(capsys, ["fleet", "plan", BATCH, "--sandbox", "--stage",
                                    "project", "-O", "markdown"])
    assert code == 1 and out.startswith("## ❌")
    assert "REPLACES the GKE cluster" in _rows(out, "Terraform plan")[BATCH]
    assert moved["counts"]["replace"] > 0 and moved["hasChanges"]
    assert any("REPLACES the GKE cluster" in d for d in moved["dangers"])
    assert moved["gate"]["errors"] > 0 and moved["gate"]["rules"]
    assert moved["error"] is None


def test_a_plan_that_fails_is_reported_for_its_recipe_and_exits_1(
        history: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _edit(history, BATCH, "name: team-m-batch", "name: team-m-batch2")
    commit(history, "edit")
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(history / "no-such-terraform"))
    code, out, _ = _fleet_plan(capsys, "-O", "json", "--detailed-exitcode")
    doc = json.loads(out)
    (row,) = doc["affected"]
    assert code == 1 and not doc["ok"] and not row["ok"]
    assert row["terraform_plan"]["ran"] is False
    assert "no-such-terraform" in row["terraform_plan"]["error"]["message"]
    # what `plan` would exit: terraform missing is refused before the stack is written (2)
    assert row["terraform_plan"]["error"]["exitCode"] == 2
