"""policy-directories: spec.policy.directories checked by preflight (validate), relative to
the recipe file, as the gate resolves them; it used to fail only at plan/apply/policy time."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml
from test_rules import BASE  # the rule tests' clean recipe

from mldiag_provision import pipeline
from mldiag_provision.errors import Severity


def _check(tmp_path: Path, directories: list[str], name: str = "recipe.yaml") -> list:
    data = copy.deepcopy(BASE)
    data["spec"]["policy"] = {"directories": directories}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return [p for p in pipeline.check_file(str(path)).report.problems
            if p.rule == "policy-directories"]


def test_existing_policy_directories_pass(tmp_path: Path) -> None:
    (tmp_path / "org" / "nested").mkdir(parents=True)
    (tmp_path / "org" / "nested" / "labels.rego").write_text("package org.labels\n")
    assert _check(tmp_path, ["org"]) == []


@pytest.mark.parametrize(("entry", "message", "hint"), [
    ("missing", "policy directory 'missing' does not exist (looked for {base}/missing)",
     "fix the path (it is relative to the recipe file), create the directory, or remove the "
     "entry"),
    ("afile.rego", "policy directory 'afile.rego' is a file, not a directory "
     "({base}/afile.rego)", "name the directory that holds the file"),
    ("tests-only", "policy directory 'tests-only' holds no *.rego policy ({base}/tests-only; "
     "*_test.rego files are tests)", "add the policies, or remove the entry"),
])
def test_a_directory_the_gate_would_refuse_is_an_error_at_its_line(
        tmp_path: Path, entry: str, message: str, hint: str) -> None:
    (tmp_path / "afile.rego").write_text("package x\n")
    (tmp_path / "tests-only").mkdir()
    (tmp_path / "tests-only" / "x_test.rego").write_text("package x\n")
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.rego").write_text("package a\n")
    (problem,) = _check(tmp_path, ["ok", entry])  # the good one passes
    assert problem.message == message.format(base=tmp_path)
    assert problem.hint == hint and problem.severity is Severity.ERROR
    assert problem.path == "spec.policy.directories[1]" and problem.value == entry
    assert problem.expected == ("a directory, relative to the recipe file, holding *.rego "
                                "policy files")
    lines = (tmp_path / "recipe.yaml").read_text().splitlines()
    assert lines[problem.line - 1].strip() == f"- {entry}"


def test_directories_are_relative_to_the_recipe_file_not_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "recipes" / "policies").mkdir(parents=True)
    (tmp_path / "recipes" / "policies" / "a.rego").write_text("package a\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert _check(tmp_path / "recipes", ["policies"]) == []
    assert os.getcwd() == str(elsewhere)
