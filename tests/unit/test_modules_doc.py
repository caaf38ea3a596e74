"""The modules keep their contract (issue 26, item 7): each module's README has Inputs and
Outputs tables generated from its ``variables.tf`` / ``outputs.tf`` and fresh, hand-written
prose around them survives regeneration, ``modules/README.md`` indexes every module, and each
``metadata.yaml`` agrees with its module (no unread keys such as the former ``validators``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mldiag_provision import docs_gen, modules_doc

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "modules"


def _names(module: Path, kind: str, file: str) -> list[str]:
    return [name for name, _ in modules_doc._blocks(module / file, kind)]


def test_module_pages_are_fresh() -> None:
    pages = modules_doc.pages(ROOT)
    stale = docs_gen.stale(ROOT, pages)
    assert stale == [], (f"stale module READMEs: {stale}; run "
                         "`python -m mldiag_provision.docs_gen` and commit the result")


@pytest.mark.parametrize("module", modules_doc.module_dirs(MODULES),
                         ids=lambda p: p.relative_to(MODULES).as_posix())
def test_every_variable_and_output_is_in_the_readme(module: Path) -> None:
    """The README names every variable and output, once each, inside the generated section
    (before: 13 variables were missing from 5 hand-kept READMEs)."""
    text = (module / "README.md").read_text(encoding="utf-8")
    assert text.count(modules_doc.BEGIN) == 1 and text.count(modules_doc.END) == 1
    section = text.split(modules_doc.BEGIN, 1)[1].split(modules_doc.END, 1)[0]
    inputs, outputs = section.split("## Outputs", 1)
    variables = _names(module, "variable", "variables.tf")
    assert variables, module
    for name in variables:
        assert inputs.count(f"| `{name}` |") == 1, (module, name)
    for name in _names(module, "output", "outputs.tf"):
        assert outputs.count(f"| `{name}` |") == 1, (module, name)


def test_index_lists_every_module() -> None:
    index = (ROOT / modules_doc.INDEX).read_text(encoding="utf-8")
    dirs = modules_doc.module_dirs(MODULES)
    assert set(dirs) == {p.parent for p in MODULES.glob("*/*/main.tf")} and dirs
    for module in dirs:
        rel = module.relative_to(MODULES).as_posix()
        assert f"| [`{rel}`]({rel}/README.md) |" in index
        assert modules_doc.metadata(module)["description"] in index


def test_metadata_agrees_with_every_module() -> None:
    assert modules_doc.problems(MODULES) == []
    for module in modules_doc.module_dirs(MODULES):
        assert "validators" not in modules_doc.metadata(module)


def _copy_module(tmp_path: Path, rel: str = "gke/private-access") -> Path:
    root = tmp_path / "repo"
    shutil.copytree(MODULES / rel, root / "modules" / rel)
    return root


def test_stale_readme_is_detected_and_prose_is_kept(tmp_path: Path) -> None:
    """A variable added to variables.tf makes the README stale; regenerating adds its row and
    keeps the hand-written text before and after the generated section byte for byte."""
    root = _copy_module(tmp_path, "iam/node-service-account")
    module = root / "modules/iam/node-service-account"
    readme = module / "README.md"
    before, after = readme.read_text().split(modules_doc.BEGIN)[0], \
        readme.read_text().split(modules_doc.END)[1]
    assert "## Sources" in after
    assert docs_gen.stale(root, modules_doc.pages(root)) == ["modules/README.md"]  # no index yet
    docs_gen.write(root)
    assert docs_gen.stale(root) == []
    with (module / "variables.tf").open("a") as f:
        f.write('\nvariable "extra_knob" {\n  description = "A new | knob."\n'
                '  type        = list(object({a = string, b = optional(number)}))\n'
                '  default     = []\n}\n')
    assert docs_gen.stale(root) == ["modules/iam/node-service-account/README.md"]
    assert docs_gen.main(["--check", "--root", str(root)]) == 1
    assert docs_gen.main(["--root", str(root)]) == 0
    text = readme.read_text()
    assert ("| `extra_knob` | `list(object({a, b}))` | `[]` | A new \\| knob. |" in text)
    assert text.startswith(before) and text.endswith(after)
    assert docs_gen.main(["--check", "--root", str(root)]) == 0


def test_readme_without_markers_gets_the_section_before_the_first_heading() -> None:
    section = "<!-- BEGIN -->x<!-- END -->"
    assert modules_doc.splice("# a\n\nprose\n\n## Sources\n\n- s\n", section) == \
        "# a\n\nprose\n\n" + section + "\n\n## Sources\n\n- s\n"
    assert modules_doc.splice("# a\n\nprose\n", section) == "# a\n\nprose\n\n" + section + "\n"
    with pytest.raises(ValueError, match="one marker without the other"):
        modules_doc.splice(f"# a\n{modules_doc.BEGIN}\n", section)


@pytest.mark.parametrize("edit, needle", [
    (lambda t: t + "validators: []\n", "unknown key 'validators'"),
    (lambda t: t.replace("name: gke/private-access", "name: gke/private"),
     "name is 'gke/private'; expected 'gke/private-access'"),
    (lambda t: t.replace("[hashicorp/google]", "[hashicorp/google, hashicorp/helm]"),
     "expected ['hashicorp/google'] (versions.tf required_providers)"),
    (lambda t: t.replace("- compute.googleapis.com", "- compute"), "services is ['compute']"),
    (lambda t: "\n".join(ln for ln in t.split("\n") if not ln.startswith("description:")),
     "description is None; expected one line of purpose"),
])
def test_metadata_problems_name_the_file_key_and_fix(tmp_path: Path, edit, needle) -> None:
    root = _copy_module(tmp_path)
    meta = root / "modules/gke/private-access/metadata.yaml"
    assert modules_doc.problems(root / "modules") == []
    meta.write_text(edit(meta.read_text()))
    found = modules_doc.problems(root / "modules")
    assert len(found) == 1 and found[0].startswith("modules/gke/private-access/metadata.yaml: ")
    assert needle in found[0]
    docs_gen.write(root)
    assert docs_gen.main(["--check", "--root", str(root)]) == 1


@pytest.mark.parametrize("expr, short", [
    ("string", "string"),
    ("map(string)", "map(string)"),
    ("object({from_namespace = string, port = number})", "object({from_namespace, port})"),
    ("list(object({name = string, set = list(object({name = string, value = string}))}))",
     "list(object({name, set}))"),
    ("map(object({a = optional(object({b = string}), {})}))", "map(object({a}))"),
])
def test_short_type(expr: str, short: str) -> None:
    assert modules_doc.short_type(expr) == short
