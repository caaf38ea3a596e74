"""plan and apply refuse a missing engine executable before anything is written (issue 26):
before, the stack was rendered into -o DIR (a .gitignore, modules, .mldiag/) and only then did
"terraform not found" stop the run (exit 4), leaving a directory behind. render needs no
engine and still renders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")


def _tree(root: Path) -> dict[str, int]:
    """Every file below ``root`` with its modification time in ns."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_a_missing_terraform_is_refused_before_the_stack_is_written(
        command: str, tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(tmp_path / "no-terraform"))
    work = tmp_path / "work"
    code, out, err = cli(command, RECIPE, "-o", str(work))
    assert code == 2, out + err
    assert f"error: {command} needs engine terraform: terraform not found " \
           f"(MLDIAG_TERRAFORM={tmp_path / 'no-terraform'}); nothing was written" in err
    assert "hint: install Terraform >= 1.7" in err
    assert not work.exists()


def test_json_output_carries_the_refusal(tmp_path: Path, cli,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(tmp_path / "no-terraform"))
    code, out, _ = cli("plan", RECIPE, "-o", str(tmp_path / "work"), "-O", "json")
    doc = json.loads(out)
    assert code == 2 and doc["ok"] is False and doc["error"]["exitCode"] == 2
    assert "terraform not found" in doc["error"]["message"]


def test_a_stack_rendered_before_is_left_as_it_was(tmp_path: Path, cli,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe is unchanged since the last render (nothing would be re-rendered): the
    saved plan's engine is checked all the same, and no file is touched."""
    from mldiag_provision.stack.service import Stack

    work = tmp_path / "work"
    with Stack(work, "plan") as stack:  # rendered as plan/apply render, engine present
        assert not stack.render(RECIPE).cached
    before = _tree(work)
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(tmp_path / "no-terraform"))
    code, out, err = cli("apply", RECIPE, "-o", str(work), "--auto-approve")
    assert code == 2, out + err
    assert "terraform not found" in err
    after = _tree(work)
    # the work-directory lock is taken and released around the run; nothing else changes
    assert {k: v for k, v in after.items() if "lock" not in k} == \
           {k: v for k, v in before.items() if "lock" not in k}


def test_render_needs_no_engine(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(tmp_path / "no-terraform"))
    code, out, err = cli("render", RECIPE, "-o", str(tmp_path / "work"))
    assert code == 0, out + err
    assert (tmp_path / "work" / "main.tf").is_file()


def test_a_missing_pulumi_is_refused_the_same_way(tmp_path: Path, cli,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = tmp_path / "pulumi.yaml"
    text = Path(RECIPE).read_text(encoding="utf-8")
    assert "\nspec:\n" in text
    recipe.write_text(text.replace("\nspec:\n", "\nspec:\n  engine:\n    name: pulumi\n", 1),
                      encoding="utf-8")
    monkeypatch.setenv("MLDIAG_PULUMI", str(tmp_path / "no-pulumi"))
    work = tmp_path / "work"
    code, out, err = cli("plan", str(recipe), "-o", str(work))
    assert code == 2, out + err
    assert "plan needs engine pulumi: the pulumi CLI was not found" in err
    assert not work.exists()
