"""``fleet validate`` over the fixture fleet (tests/fleet/data/repo: 13 recipes, 3 projects,
with the collisions its recipes' header comments name): every collision found, naming both
recipes with file, line and the field to change; the right exit codes and severities."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from tests.cli_support import run_cli

REPO = Path(__file__).parent / "data" / "repo"

# (rule, severity, the two recipes, the field each one changes, words of the message)
EXPECTED = [
    ("fleet-names", "error", ("alpha/team-a/train.yaml", "alpha/team-b/train.yaml"),
     "spec.diagnostics.serviceAccount.name", "service account ID mldiag-workload"),
    ("fleet-names", "error", ("beta/team-e/train.yaml", "beta/team-g/eval.yaml"),
     "spec.diagnostics.iam.customRoleId", "IAM custom role ID mlDiagnosticsWorkload"),
    ("fleet-names", "error", ("alpha/team-d/serve.yaml", "gamma/team-k/serve.yaml"),
     "spec.diagnostics.profilesBucket.name", "bucket name fleet-shared-profiles (globally)"),
    ("fleet-names", "error", ("gamma/team-i/train.yaml", "gamma/team-j/train.yaml"),
     "metadata.name", "service account ID gamma-train-workload"),
    ("fleet-log-bucket", "error", ("alpha/team-a/train.yaml", "alpha/team-b/train.yaml"),
     "spec.diagnostics.logAnalytics.retentionDays", "different retentionDays"),
    ("fleet-log-bucket", "warning", ("beta/team-e/train.yaml", "beta/team-g/eval.yaml"),
     "spec.diagnostics.logAnalytics.retentionDays", "the same setting"),
    ("fleet-state-path", "error", ("alpha/team-c/eval.yaml", "beta/team-f/train.yaml"),
     "spec.engine.backend.prefix", "gs://fleet-tfstate/stacks/shared/default.tfstate"),
    ("fleet-policy-directory", "warning", ("beta/team-h/serve.yaml", "gamma/team-l/eval.yaml"),
     "spec.policy.directories[0]", "policies/shared"),
]


@pytest.fixture
def fleet_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(REPO)
    code, out, _ = run_cli(capsys, ["fleet", "validate", ".", "--output", "json"])
    assert code == 1
    return json.loads(out)


def test_the_fixture_is_a_fleet_of_at_least_12_recipes_in_3_projects() -> None:
    recipes = [yaml.safe_load(p.read_text()) for p in REPO.rglob("*.yaml")
               if "kind: Recipe" in p.read_text()]
    assert len(recipes) >= 12
    assert len({r["spec"]["project"] for r in recipes}) == 3


def test_every_recipe_passes_alone(fleet_json: dict) -> None:
    assert len(fleet_json["recipes"]) == 13  # policies/shared/data.yaml is not a recipe
    assert all(r["ok"] for r in fleet_json["recipes"]), fleet_json["recipes"]


@pytest.mark.parametrize("rule,severity,files,field,words", EXPECTED,
                         ids=[f"{e[0]}:{e[2][0]}" for e in EXPECTED])
def test_each_collision_names_both_recipes(fleet_json: dict, rule: str, severity: str,
                                           files: tuple[str, str], field: str,
                                           words: str) -> None:
    hits = [f for f in fleet_json["findings"] if f["rule"] == rule
            and sorted(Path(s["file"]).as_posix().removeprefix("./")
                       for s in f["recipes"]) == sorted(files)]
    assert len(hits) == 1, [(f["rule"], [s["file"] for s in f["recipes"]])
                            for f in fleet_json["findings"]]
    f = hits[0]
    assert f["severity"] == severity
    assert words in f["message"]
    for side in f["recipes"]:
        assert side["path"] == field
        assert side["line"] > 0 and side["column"] > 0
        # the line named is the line that writes the field
        line = (REPO / side["file"]).read_text().splitlines()[side["line"] - 1]
        assert field.rsplit(".", 1)[-1].split("[")[0] in line
    assert field.split("[")[0] in f["hint"]  # the hint names the field to change


def test_nothing_else_is_found(fleet_json: dict) -> None:
    assert len(fleet_json["findings"]) == len(EXPECTED)
    assert fleet_json["errors"] == sum(e[1] == "error" for e in EXPECTED)
    assert fleet_json["warnings"] == sum(e[1] == "warning" for e in EXPECTED)


def test_two_stacks_of_one_name_give_one_finding_listing_every_shared_name(
        fleet_json: dict) -> None:
    f = next(f for f in fleet_json["findings"] if f["rule"] == "fleet-names"
             and "gamma-train" in f["message"])
    for name in ("GKE cluster name gamma-train", "gamma-train-nodes", "gamma-train-workload",
                 "gamma-ml-prod-gamma-train-profiles"):
        assert name in f["message"]
    assert "metadata.name" in f["hint"]


def test_text_output_quotes_both_lines_and_exits_1(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run_cli(capsys, ["--no-color", "fleet", "validate", "alpha"])
    assert code == 1
    assert "error[fleet-names]" in out
    assert "alpha/team-a/train.yaml:20:7: spec.diagnostics.serviceAccount.name = " \
           "mldiag-workload" in out
    assert "alpha/team-b/train.yaml:20:7" in out
    assert "  20 |       name: mldiag-workload" in out
    assert "hint: change spec.diagnostics.serviceAccount.name in all but one of them" in out


def test_markdown_output_names_both_recipes(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run_cli(capsys, ["fleet", "validate", "beta/*/*.yaml", "-O", "markdown"])
    assert code == 1
    assert out.startswith("## mldiag-provision fleet validate: ❌ 1 error(s), 1 warning(s), "
                          "4 recipe(s)")
    row = next(line for line in out.splitlines() if "mlDiagnosticsWorkload" in line)
    assert "`beta/team-e/train.yaml:21:7` `spec.diagnostics.iam.customRoleId`" in row
    assert "`beta/team-g/eval.yaml:21:7`" in row


def _write(path: Path, name: str, retention: int, project: str = "solo-ml-prod") -> None:
    text = (REPO / "gamma" / "team-m" / "batch.yaml").read_text()
    text = text.replace("team-m-batch", name).replace("gamma-ml-prod", project)
    text = text.replace("enabled: false", f"retentionDays: {retention}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_same_retention_is_a_warning_and_strict_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "a.yaml", "stack-a", 30)
    _write(tmp_path / "b.yaml", "stack-b", 30)
    code, out, _ = run_cli(capsys, ["--no-color", "fleet", "validate", str(tmp_path)])
    assert code == 0, out
    assert "warning[fleet-log-bucket]" in out
    code, _, _ = run_cli(capsys, ["fleet", "validate", str(tmp_path), "--strict"])
    assert code == 1


def test_different_retention_is_an_error_in_one_project_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "a.yaml", "stack-a", 30)
    _write(tmp_path / "b.yaml", "stack-b", 400)
    _write(tmp_path / "c.yaml", "stack-c", 7, project="other-ml-prod")
    code, out, _ = run_cli(capsys, ["fleet", "validate", str(tmp_path), "-O", "json"])
    assert code == 1
    (f,) = json.loads(out)["findings"]
    assert f["rule"] == "fleet-log-bucket" and f["severity"] == "error"
    assert sorted(s["value"] for s in f["recipes"]) == [30, 400]


def test_a_clean_fleet_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "a.yaml", "stack-a", 30)
    _write(tmp_path / "b.yaml", "stack-b", 30, project="other-ml-prod")
    code, out, _ = run_cli(capsys, ["fleet", "validate", str(tmp_path), "-O", "json"])
    assert code == 0
    assert json.loads(out)["findings"] == []


def test_a_broken_recipe_is_reported_and_left_out_of_the_cross_checks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(REPO / "alpha" / "team-a" / "train.yaml", tmp_path / "a.yaml")
    broken = (REPO / "alpha" / "team-b" / "train.yaml").read_text().replace("2x4", "2x5")
    (tmp_path / "b.yaml").write_text(broken)
    code, out, _ = run_cli(capsys, ["fleet", "validate", str(tmp_path), "-O", "json"])
    assert code == 1
    doc = json.loads(out)
    assert doc["findings"] == []
    bad = next(r for r in doc["recipes"] if r["file"].endswith("b.yaml"))
    assert not bad["ok"] and any(p["severity"] == "error" for p in bad["problems"])


def test_naming_nothing_is_a_usage_error(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, ["fleet", "validate", str(tmp_path)])
    assert code == 2 and "no recipe" in err
    code, _, err = run_cli(capsys, ["fleet", "validate", str(tmp_path / "*.yaml")])
    assert code == 2 and "matches no recipe" in err


def test_a_glob_skips_yaml_that_is_not_a_recipe(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run_cli(capsys, ["fleet", "validate", "**/*.yaml", "-O", "json"])
    assert code == 1
    files = [r["file"] for r in json.loads(out)["recipes"]]
    assert len(files) == 13 and "policies/shared/data.yaml" not in files
