"""Recipe model messages a person can act on: an unquoted timestamp says "quote it", and
every pattern of the recipe schema is described in words (with an example where a format
is not obvious), never shown as a bare regular expression."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mldiag_provision.recipe import parse
from mldiag_provision.recipe.parse import parse_recipe_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = (ROOT / "recipes" / "tpu-v6e-autopilot-maintenance.yaml").read_text()


def _patterns(node: object) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(({v} if k == "pattern" and isinstance(v, str) else _patterns(v))
                             for k, v in node.items())) if node else set()
    if isinstance(node, list):
        return set().union(*(_patterns(v) for v in node)) if node else set()
    return set()


def test_every_schema_pattern_has_words() -> None:
    schema = json.loads((ROOT / "provisioner/mldiag_provision/schemas/recipe.schema.json")
                        .read_text())
    found = _patterns(schema)
    assert len(found) > 10
    assert sorted(found - set(parse._PATTERN_WORDS)) == []


@pytest.mark.parametrize("written", ["2026-01-10T04:00:00Z", "2026-01-10"])
def test_an_unquoted_timestamp_says_quote_it(written: str) -> None:
    assert '"2026-' in EXAMPLE  # the example quotes its times
    start = EXAMPLE.index('start: "') + len("start: ")
    text = EXAMPLE[:start] + written + EXAMPLE[EXAMPLE.index("\n", start):]
    parsed = parse_recipe_text(text, "r.yaml")
    (p,) = [p for p in parsed.problems if p.path.endswith("window.start")]
    assert p.rule == "recipe-type"
    assert p.message == f"the unquoted {written} is read by YAML as a timestamp, not text"
    assert p.value == written and p.hint == f'quote it: "{written}"'
    assert "datetime" not in p.message


def test_a_bad_time_format_shows_an_example() -> None:
    start = EXAMPLE.index('start: "') + len("start: ")
    text = EXAMPLE[:start] + '"04:00"' + EXAMPLE[EXAMPLE.index("\n", start):]
    (p,) = [p for p in parse_recipe_text(text, "r.yaml").problems
            if p.path.endswith("window.start")]
    assert p.rule == "recipe-format"
    assert p.expected is not None and '"2026-01-10T04:00:00Z"' in p.expected
    assert "[0-9]" not in p.expected


def test_a_tab_in_the_indentation_says_use_spaces() -> None:
    text = EXAMPLE.replace("\n  region:", "\n\tregion:", 1)
    assert text != EXAMPLE
    (p,) = parse_recipe_text(text, "r.yaml").problems
    assert p.rule == "yaml-syntax" and "tab" in p.message
    assert p.hint is not None and p.hint.startswith("YAML indents with spaces only")
    assert p.line == text[:text.index("\tregion")].count("\n") + 1


@pytest.mark.parametrize(("written", "message"), [
    ("030", "YAML 1.1 reads 030 as the octal number 24, not 30"),
    ("0_30", "YAML 1.1 reads 0_30 as the octal number 24, not 30"),
    ("1:30", "YAML 1.1 reads 1:30 as the base-60 number 90"),
])
def test_an_integer_yaml_reads_in_another_base_is_an_error(written: str, message: str) -> None:
    """`retentionDays: 030` used to pass and render retention_days = 24."""
    text = EXAMPLE.replace("retentionDays: ", f"retentionDays: {written} #", 1)
    assert text != EXAMPLE
    parsed = parse_recipe_text(text, "r.yaml")
    assert parsed.recipe is None
    (p,) = parsed.problems
    assert (p.rule, p.message, p.value) == ("yaml-value", message, written)
    assert p.path == "spec.diagnostics.logAnalytics.retentionDays"
    assert p.hint is not None and "quote it" in p.hint


def test_plain_and_prefixed_integers_stay_numbers() -> None:
    from mldiag_provision.recipe.loader import load_documents, load_single

    doc = load_single("a: 30\nb: 0\nc: -7\nd: 0x1F\ne: '030'\nf: 04:00\n", "f.yaml")
    assert doc.problems == [] and doc.data == {"a": 30, "b": 0, "c": -7, "d": 31, "e": "030",
                                               "f": "04:00"}
    # Kubernetes manifests (lint) keep YAML 1.1's reading: only recipes refuse it
    (other,) = load_documents("a: 030\n", "m.yaml")
    assert other.problems == [] and other.data == {"a": 24}


def test_a_duplicate_slice_name_gets_no_follow_on_manifest_errors() -> None:
    """Two slices called v6e-16 (a 2x2 and the example's 4x4): the duplicate is the one
    error; the manifest checks no longer pair the workload with the other slice's topology."""
    from mldiag_provision.pipeline import check_text

    i = EXAMPLE.index("      topology: 4x4\n") + len("      topology: 4x4\n")
    text = EXAMPLE[:i] + "    - name: v6e-16\n      tpu: v6e\n      topology: 2x2\n" + EXAMPLE[i:]
    errors = [p for p in check_text(text, "r.yaml").report.problems
              if p.severity.value == "error"]
    assert [p.rule for p in errors] == ["tpu-slice-names"]


def test_stdin_named_twice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from mldiag_provision.cli.app import main

    assert main(["validate", "-", "-"]) == 2
    assert "named more than once" in capsys.readouterr().err
