"""Every bundled recipe passes ``validate --strict`` with no warning (issue 31 item 4).

The quick start runs ``validate recipes/*.yaml``: a warning about the project's own examples
teaches people to ignore warnings. Where a warning was right the recipe changed (JobSet
workloads, the v4 seed's memory, the v5e seed's region); the two deliberate, unavoidable
choices are reported as notes that say why (the v4 seed's region, the only one offering
TPU v4; the Slurm recipe's waived default-service-account grant).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mldiag_provision.cli.app import main

ROOT = Path(__file__).resolve().parents[2]


def _is_recipe(path: Path) -> bool:
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError:
        return False
    return any(isinstance(d, dict) and str(d.get("apiVersion", "")).startswith(
        "mldiag-provision/") and d.get("kind") == "Recipe" for d in docs)


def bundled_recipes() -> list[Path]:
    """recipes/*.yaml, plus any recipe among examples/ (pipeline files there are not)."""
    found = sorted((ROOT / "recipes").glob("*.yaml"))
    found += sorted(p for ext in ("*.yaml", "*.yml") for p in (ROOT / "examples").rglob(ext)
                    if _is_recipe(p))
    return found


def test_there_are_bundled_recipes() -> None:
    recipes = bundled_recipes()
    assert len(recipes) >= 18
    assert all(_is_recipe(p) for p in recipes)


def test_validate_strict_passes_every_bundled_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    recipes = bundled_recipes()
    code = main(["validate", "--strict", "-O", "json", *map(str, recipes)])
    report = json.loads(capsys.readouterr().out)
    loud = [(f["file"], p["rule"], p["severity"], p["message"]) for f in report["files"]
            for p in f["problems"] if p["severity"] != "info"]
    assert loud == []
    assert code == 0
    assert report["ok"] is True and report["errors"] == 0 and report["warnings"] == 0
    assert len(report["files"]) == len(recipes) and all(f["ok"] for f in report["files"])


def test_validate_strict_text_output_has_no_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", "--strict", *map(str, bundled_recipes())])
    out = capsys.readouterr().out
    assert code == 0
    assert "warning[" not in out and "error[" not in out


@pytest.mark.parametrize(("recipe", "rule", "words"), [
    # TPU v4 is offered only in us-central2-b, a region without workload monitoring
    ("tpu-v4-2x2x4-autopilot.yaml", "diagnostics", "lists TPU v4 in us-central2 only"),
    # the recipe waives the policy rule on the same grant, with its reason
    ("slurm-a3-ultra-lustre.yaml", "slurm-orchestrator",
     "accepted in spec.policy.waivers (no-default-compute-sa): Cluster Director's"),
])
def test_the_deliberate_choices_stay_visible_as_notes(
        recipe: str, rule: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--strict", "-O", "json", str(ROOT / "recipes" / recipe)]) == 0
    [f] = json.loads(capsys.readouterr().out)["files"]
    [note] = [p for p in f["problems"] if p["rule"] == rule]
    assert note["severity"] == "info"
    assert words in note["message"]
