"""The command line contract: exit codes, machine-readable output, no colour when piped,
no traceback for user errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from stack_support import RECIPES

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
REPO_ROOT = Path(__file__).resolve().parents[2]
INVALID = REPO_ROOT / "tests" / "golden" / "errors" / "v5e-topology-3x3.yaml"
V5E = next(r for r in RECIPES if "v5e" in r.name)


def clean(out: str, err: str) -> None:
    """Never colour when not a TTY (capsys is not one), never a traceback."""
    assert not ANSI.search(out), repr(out[:200])
    assert not ANSI.search(err), repr(err[:200])
    assert "Traceback" not in out + err


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_validate_example_recipes_ok(cli, recipe: Path) -> None:
    code, out, err = cli("validate", str(recipe))  # no --no-color: must still be plain
    assert code == 0, out + err
    assert "slice " in out and "error" not in out.splitlines()[-1]
    clean(out, err)


def test_validate_invalid_exits_1(cli) -> None:
    code, out, err = cli("validate", str(INVALID))
    assert code == 1
    assert "error[tpu-slice-shape]" in out and "1 error(s)" in out
    clean(out, err)


def test_validate_several_files_fails_if_any_fails(cli) -> None:
    code, out, err = cli("validate", str(V5E), str(INVALID))
    assert code == 1
    assert "in 2 file(s)" in out
    clean(out, err)


@pytest.mark.parametrize("argv", [
    ["validate", "--bogus", "x.yaml"],
    ["render", "x.yaml"],  # -o is required
    ["catalog", "fpga"],  # not an accelerator family (tpu, gpu)
    ["frobnicate"],
    [],
])
def test_usage_errors_exit_2(cli, argv: list[str]) -> None:
    code, out, err = cli(*argv)
    assert code == 2, out + err
    assert "usage:" in err
    assert out == ""
    clean(out, err)


def test_missing_file_is_a_usage_error(cli, tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    code, out, err = cli("validate", str(missing))
    assert code == 2
    assert f"{missing}: no such file" in out + err
    clean(out, err)


def test_directory_is_a_usage_error(cli, tmp_path: Path) -> None:
    code, out, err = cli("validate", str(tmp_path))
    assert code == 2
    assert "is a directory" in out + err
    clean(out, err)


def test_render_conflict_exits_3(cli, tmp_path: Path) -> None:
    out_dir = tmp_path / "s"
    assert cli("render", str(V5E), "-o", str(out_dir))[0] == 0
    (out_dir / "versions.tf").write_text("# mine\n")
    code, out, err = cli("render", str(V5E), "-o", str(out_dir))
    assert code == 3
    assert "versions.tf" in err and "hint:" in err
    clean(out, err)


def test_validate_json_output(cli) -> None:
    code, out, err = cli("validate", "--output", "json", str(INVALID), str(V5E))
    assert code == 1
    doc = json.loads(out)
    assert doc["ok"] is False and doc["errors"] >= 1
    files = {f["file"]: f for f in doc["files"]}
    assert files[str(INVALID)]["ok"] is False and files[str(V5E)]["ok"] is True
    problems = files[str(INVALID)]["problems"]
    assert problems
    for p in problems:
        for key in ("file", "line", "column", "path", "message", "expected", "hint",
                    "rule", "severity"):
            assert key in p, (key, p)
    shape = next(p for p in problems if p["rule"] == "tpu-slice-shape")
    assert (shape["file"], shape["line"], shape["column"]) == (str(INVALID), 16, 17)
    assert shape["path"] == "spec.slices[0].topology"
    assert "2x4" in shape["expected"]
    assert err == ""


def test_validate_json_ok(cli) -> None:
    code, out, _err = cli("validate", "-O", "json", str(V5E))
    assert code == 0
    doc = json.loads(out)
    assert doc["ok"] is True and doc["errors"] == 0
    assert doc["files"][0]["slices"][0].startswith("slice v5e-8: v5e 2x4 = 8 chips")


def test_catalog_lists_versions(cli) -> None:
    code, out, err = cli("catalog")
    assert code == 0
    for key in ("v4", "v5e", "v5p", "v6e", "tpu7x"):
        assert re.search(rf"^{key}\s", out, re.M), key
    clean(out, err)
    code, out, _ = cli("catalog", "-O", "json")
    assert code == 0
    assert {r["version"] for r in json.loads(out)} >= {"v4", "v5e", "v6e", "tpu7x"}


def test_catalog_v5e_shows_both_2x4_machine_types(cli) -> None:
    code, out, err = cli("catalog", "tpu", "v5e")
    assert code == 0
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("2x4 ")]
    assert sorted(r[2] for r in rows) == ["ct5lp-hightpu-4t", "ct5lp-hightpu-8t"]
    assert "chipsPerVm" in out
    clean(out, err)
    code, out, _ = cli("catalog", "tpu", "v5e", "-O", "json")
    topo = [t for t in json.loads(out)["topologies"] if t["topology"] == "2x4"]
    assert sorted((t["machineType"], t["vms"]) for t in topo) == [
        ("ct5lp-hightpu-4t", 2), ("ct5lp-hightpu-8t", 1)]


@pytest.mark.parametrize(("name", "hint"), [
    ("nope", "known: tpu7x, v4, v5e, v5p, v6e"),
    ("v5ee", "did you mean 'v5e'?"),
])
def test_catalog_unknown_version(cli, name: str, hint: str) -> None:
    code, out, err = cli("catalog", "tpu", name)
    assert code == 2
    assert f"error: unknown TPU version '{name}'" in err
    assert hint in err
    assert out == ""
    clean(out, err)


def test_schema_is_draft_2020_12_and_accepts_every_recipe(cli) -> None:
    code, out, err = cli("schema")
    assert code == 0
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for recipe in RECIPES:
        doc = yaml.safe_load(recipe.read_text(encoding="utf-8"))
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, (recipe.name, errors)
    # ...and is not vacuous: a misspelt key in a slice is rejected
    bad = yaml.safe_load(V5E.read_text(encoding="utf-8"))
    bad["spec"]["slices"][0]["toplogy"] = bad["spec"]["slices"][0].pop("topology")
    assert list(validator.iter_errors(bad))
    clean(out, err)


def test_version_flag(cli) -> None:
    code, out, _ = cli("--version")
    assert code == 0
    assert out.startswith("mldiag-provision ")


def test_validate_strict_json_agrees_per_file(cli, tmp_path: Path) -> None:
    """Under --strict a file with a warning fails, so its own "ok" is false like the run's
    (it read true while the top-level "ok" was false, issue 31)."""
    data = yaml.safe_load(V5E.read_text())
    data["spec"]["zone"] = data["spec"]["region"] + "-ai9z"  # an AI zone no page lists: warning
    warned = tmp_path / "warned.yaml"
    warned.write_text(yaml.safe_dump(data))
    code, out, _ = cli("validate", str(warned), "--output", "json")
    doc = json.loads(out)
    assert code == 0 and doc["warnings"] >= 1
    assert doc["ok"] is True and doc["files"][0]["ok"] is True
    code, out, _ = cli("validate", str(warned), "--strict", "--output", "json")
    doc = json.loads(out)
    assert code == 1
    assert doc["ok"] is False and doc["files"][0]["ok"] is False
    code, out, _ = cli("validate", str(V5E), "--strict", "--output", "json")
    doc = json.loads(out)
    assert doc["ok"] is doc["files"][0]["ok"], doc
