"""The documentation site (issue 31): the generated reference pages are fresh and complete,
every page the nav names exists, and the README stays a short front page with the quick start.

``mkdocs build --strict`` itself runs in ``.ci/run`` (it needs the ``docs`` extra); these
tests need only the package."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
import yaml

from mldiag_provision import docs_gen
from mldiag_provision.catalog.store import FactStore
from mldiag_provision.cli._main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_generated_pages_are_fresh():
    stale = docs_gen.stale(ROOT)
    assert stale == [], (f"stale generated docs pages: {stale}; run "
                         "`python -m mldiag_provision.docs_gen` and commit the result")


def test_stale_page_is_detected(tmp_path):
    """A page edited by hand (or left behind by a parser change) is reported, and ``--check``
    exits 1 naming it; writing makes the tree fresh again."""
    docs_gen.write(tmp_path)
    assert docs_gen.stale(tmp_path) == []
    page = tmp_path / "docs/reference/commands.md"
    page.write_text(page.read_text().replace("## validate", "## validated"))
    assert docs_gen.stale(tmp_path) == ["docs/reference/commands.md"]
    assert docs_gen.main(["--check", "--root", str(tmp_path)]) == 1
    (tmp_path / "docs/reference/recipe.md").unlink()
    assert set(docs_gen.stale(tmp_path)) == {"docs/reference/commands.md",
                                             "docs/reference/recipe.md"}
    assert docs_gen.main(["--root", str(tmp_path)]) == 0
    assert docs_gen.main(["--check", "--root", str(tmp_path)]) == 0


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_command_reference_lists_every_command_and_flag():
    parser = build_parser(full=True)
    page = docs_gen.commands_page(parser)
    commands = _subparsers(parser)
    assert {"validate", "render", "catalog", "plan", "apply", "lint", "sandbox"} <= set(commands)

    def check(name: str, sub: argparse.ArgumentParser, level: int) -> None:
        heading = f"\n{'#' * level} {name}\n"
        section = page.split(heading, 1)[1].split("\n## ", 1)[0]
        assert f"usage: mldiag-provision {name}" in section
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert flag in section, (name, flag)
            for choice in action.choices or ():
                assert f"`{choice}`" in section, (name, choice)
        for child, parser_of_child in _subparsers(sub).items():  # fleet validate, ...
            check(f"{name} {child}", parser_of_child, level + 1)

    for name, sub in commands.items():
        check(name, sub, 2)


def test_recipe_reference_lists_every_field():
    schema = json.loads(docs_gen.SCHEMA.read_text())
    page = docs_gen.recipe_page(schema)
    for name, obj in schema["$defs"].items():
        assert f"\n## {name}\n" in page, name
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for key in obj.get("properties", {}):
            assert f"| `{key}` |" in section, (name, key)
    # a default and an enum show as written in the schema
    capacity = page.split("\n## Capacity\n", 1)[1].split("\n## ", 1)[0]
    assert '`"on-demand"`' in capacity and "`spot`" in capacity


def test_facts_page_cites_every_source():
    facts = FactStore()
    page = docs_gen.facts_page()
    for tag, src in facts.sources.items():
        assert f"| `{tag}` |" in page
        if src.url:
            assert src.url in page
    some = next(iter(facts.all_facts()))
    assert f"`{some}`" in page


def _nav_files(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [f for v in node.values() for f in _nav_files(v)]
    if isinstance(node, list):
        return [f for v in node for f in _nav_files(v)]
    return []


def test_every_nav_page_and_relative_link_exists():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_files(config["nav"])
    assert "getting-started.md" in nav and "reference/commands.md" in nav
    for rel in nav:
        assert (DOCS / rel).is_file(), rel
    # every page is in the nav (mkdocs.yml validation.omitted_files: warn, so strict fails)
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert sorted(pages - set(nav)) == [], "add these pages to the nav in mkdocs.yml"
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).resolve().is_file(), (page, target)


def test_readme_is_short_and_keeps_the_quick_start():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 20_000
    assert ("python3 -m venv .venv && .venv/bin/pip install -e '.[sandbox]' && "
            "R=recipes/tpu-v4-2x2x4-autopilot.yaml && .venv/bin/mldiag-provision apply $R -o "
            "out/quickstart --sandbox --auto-approve") in readme
    assert ("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && "
            ".venv/bin/python -m pytest -q -n auto") in readme
    for target in re.findall(r"\]\((docs/[^)#\s]+)\)", readme):
        assert (ROOT / target).is_file(), target


@pytest.mark.parametrize("page", ["getting-started.md", "guides/sandbox.md"])
def test_moved_text_is_in_the_docs(page):
    """What the README said about the sandbox now lives in the docs site."""
    text = (DOCS / page).read_text()
    assert "DIR/.mldiag/sandbox" in text


def test_rule_index_lists_every_rule_with_its_severity():
    from mldiag_provision import rulebook

    page = docs_gen.rules_page()  # imports every rule module first
    assert len(rulebook.RULES) > 100
    for info in rulebook.RULES.values():
        row = next(ln for ln in page.splitlines() if ln.startswith(f"| `{info.id}` |"))
        assert f"| {rulebook.settle(info.id, None).value} |" in row
        for fid in info.facts:
            assert f"`{fid}`" in row


def test_exit_codes_page_lists_every_exit_code():
    from mldiag_provision.errors import ExitCode

    text = (DOCS / "reference" / "exit-codes.md").read_text()
    rows = set(re.findall(r"^\| `(\d+)` \|", text, flags=re.M))
    assert {str(int(code)) for code in ExitCode} | {"130", "143"} <= rows


def test_recipe_overview_uses_only_fields_of_the_schema():
    """The hand-written "recipe at a glance" cannot name a field the schema does not have."""
    schema = json.loads(docs_gen.SCHEMA.read_text())
    defs = schema["$defs"]
    text = (DOCS / "reference" / "recipe-overview.md").read_text()
    example = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])

    def objects(node: dict) -> list[dict]:
        """The object schemas ``node`` may be (through $ref, anyOf, items)."""
        if "$ref" in node:
            return objects(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "anyOf" in node:
            return [o for n in node["anyOf"] for o in objects(n)]
        if node.get("type") == "array":
            return objects(node.get("items", {}))
        return [node] if "properties" in node else []

    checked = 0

    def walk(value: object, node: dict, path: str) -> None:
        nonlocal checked
        if isinstance(value, list):
            for item in value:
                walk(item, node, path + "[]")
            return
        if not isinstance(value, dict):
            return
        candidates = objects(node)
        if not candidates:
            return  # a free-form mapping (labels, env, crdVersions)
        for key, sub in value.items():
            owner = next((c for c in candidates if key in c["properties"]), None)
            assert owner is not None, f"{path}.{key} is not a recipe field"
            checked += 1
            walk(sub, owner["properties"][key], f"{path}.{key}")

    walk(example, schema, "")
    assert checked > 60


def test_the_rule_index_knows_every_package_that_declares_rules() -> None:
    """The rule index imports the packages that declare rules; a module elsewhere that
    declared one would make the page depend on what ran before it in the process."""
    from mldiag_provision.docs_gen import RULE_PACKAGES

    root = ROOT / "provisioner"
    declaring = set()
    for path in (root / "mldiag_provision").rglob("*.py"):
        if re.search(r"\bdefine\(\s*\"", path.read_text(encoding="utf-8")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            if module != "mldiag_provision.rulebook":
                declaring.add(module)
    outside = sorted(m for m in declaring
                     if not any(m.startswith(p + ".") for p in RULE_PACKAGES))
    assert outside == [], outside
