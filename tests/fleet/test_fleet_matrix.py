"""``fleet matrix --changed-since`` on a real git history built in a temporary directory:
exactly the recipes a change affects (edited, reading an edited policy directory or shared
file; every recipe when the tool changed, saying so), in the GitHub Actions matrix shape
and the other engines' shapes; git runs through the runner seam."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.cli_support import run_cli

REPO = Path(__file__).parent / "data" / "repo"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository holding the fixture fleet under recipes/, the tool's pyproject.toml and
    a shared constraints file, committed on main; HEAD is a branch `change` off it."""
    root = tmp_path / "fleet"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (root / "constraints.txt").write_text("mldiag-provision==0.1.0\n")
    fleet_repository(root)
    monkeypatch.chdir(root)
    return root


def fleet_repository(root: Path) -> Path:
    """``root`` (made if missing, its files kept) as a git repository holding the fixture
    fleet under recipes/, committed on main; HEAD is a branch ``change`` off it."""
    shutil.copytree(REPO, root / "recipes")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    commit(root, "base")
    git(root, "checkout", "-qb", "change")
    return root


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def matrix(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    code, out, err = run_cli(capsys, ["fleet", "matrix", "recipes", "--changed-since", "main",
                                      "--output", "json", *extra])
    assert code == 0, err
    return json.loads(out)


def test_nothing_changed_gives_an_empty_matrix(history: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert matrix(capsys) == {"include": []}


def test_edited_recipes_and_the_readers_of_an_edited_policy_directory(
        history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = history / "recipes" / "alpha" / "team-c" / "eval.yaml"
    recipe.write_text(recipe.read_text().replace("us-central1", "us-west4"))
    (history / "recipes" / "policies" / "shared" / "labels.rego").write_text(
        "package mldiag.fleet_fixture\n")
    commit(history, "edit")
    # a commit on main after the fork does not count (REF...HEAD is from the merge base)
    git(history, "checkout", "-q", "main")
    other = history / "recipes" / "gamma" / "team-m" / "batch.yaml"
    other.write_text(other.read_text() + "# edited on main\n")
    commit(history, "main moves on")
    git(history, "checkout", "-q", "change")
    doc = matrix(capsys)
    assert list(doc) == ["include"]
    got = {e["recipe"]: e for e in doc["include"]}
    assert sorted(got) == ["recipes/alpha/team-c/eval.yaml", "recipes/beta/team-h/serve.yaml",
                           "recipes/gamma/team-l/eval.yaml"]
    assert got["recipes/alpha/team-c/eval.yaml"]["reason"] == "recipe edited"
    assert got["recipes/beta/team-h/serve.yaml"]["reason"] == (
        "policy directory recipes/policies/shared edited "
        "(recipes/policies/shared/labels.rego)")
    e = got["recipes/alpha/team-c/eval.yaml"]
    assert e["stack"] == "stacks/recipes/alpha/team-c/eval"
    assert e["id"] == "recipes-alpha-team-c-eval"
    assert (e["name"], e["project"]) == ("team-c-eval", "alpha-ml-prod")


def test_a_tool_change_affects_every_recipe_and_says_so(
        history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (history / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    commit(history, "new tool version")
    doc = matrix(capsys)
    assert len(doc["include"]) == 13
    assert {e["reason"] for e in doc["include"]} == {
        "the tool changed (pyproject.toml): every recipe is affected"}
    code, out, _ = run_cli(capsys, ["fleet", "matrix", "recipes", "--changed-since", "main"])
    assert code == 0
    assert out.startswith("13 of 13 recipe(s) affected since main; the tool changed "
                          "(pyproject.toml), so every recipe is")


def test_a_shared_file_affects_every_recipe_that_reads_it(
        history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (history / "constraints.txt").write_text("mldiag-provision==0.2.0\n")
    commit(history, "bump")
    assert matrix(capsys) == {"include": []}  # not named: nobody reads it
    doc = matrix(capsys, "--shared", "constraints.txt")
    assert len(doc["include"]) == 13
    assert doc["include"][0]["reason"] == "shared file edited (constraints.txt)"


def test_other_engines(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = history / "recipes" / "beta" / "team-f" / "train.yaml"
    recipe.write_text(recipe.read_text() + "# touched\n")
    commit(history, "touch")
    base = ["fleet", "matrix", "recipes", "--changed-since", "main", "--engine"]
    code, out, _ = run_cli(capsys, [*base, "lines"])
    assert (code, out) == (0, "recipes/beta/team-f/train.yaml\n")
    code, out, _ = run_cli(capsys, [*base, "atlantis"])
    assert out == "atlantis plan -p recipes/beta/team-f/train.yaml\n"
    code, out, _ = run_cli(capsys, [*base, "cloud-build", "--output", "json"])
    assert json.loads(out) == {"builds": [{"substitutions": {
        "_RECIPE": "recipes/beta/team-f/train.yaml",
        "_STACK": "stacks/recipes/beta/team-f/train"}}]}


def test_without_changed_since_every_recipe(history: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, ["fleet", "matrix", "recipes/gamma", "-O", "json"])
    assert code == 0
    assert [e["recipe"] for e in json.loads(out)["include"]] == [
        f"recipes/gamma/team-{t}" for t in
        ("i/train.yaml", "j/train.yaml", "k/serve.yaml", "l/eval.yaml", "m/batch.yaml")]


def test_an_unknown_ref_or_no_repository_is_a_usage_error(
        history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run_cli(capsys, ["fleet", "matrix", "recipes", "--changed-since", "nope"])
    assert code == 2 and "git diff" in err and "fetch-depth: 0" in err
    code, _, err = run_cli(capsys, ["fleet", "matrix", "recipes", "--changed-since", "--x"])
    assert code == 2
    outside = tmp_path / "plain"
    shutil.copytree(REPO / "gamma", outside)
    monkeypatch.chdir(outside)
    code, _, err = run_cli(capsys, ["fleet", "matrix", ".", "--changed-since", "main"])
    assert code == 2 and "git rev-parse" in err
