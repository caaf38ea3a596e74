"""recipe.loader: positions, duplicate keys, syntax errors, odd documents; never raises."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag_provision.recipe.loader import load_documents, load_single
from mldiag_provision.recipe.parse import parse_recipe_text

ROOT = Path(__file__).resolve().parents[2]

TEXT = """\
apiVersion: v1
spec:
  slices:
    - name: a
      topology: 2x4
    -   name: b
  list: [x, {k: v}]
"""


def test_positions_of_keys_and_list_items() -> None:
    [doc] = load_documents(TEXT, "f.yaml")
    assert doc.problems == []
    assert doc.data == {"apiVersion": "v1",
                        "spec": {"slices": [{"name": "a", "topology": "2x4"}, {"name": "b"}],
                                 "list": ["x", {"k": "v"}]}}
    keys = doc.sourcemap.keys
    assert keys[("apiVersion",)] == (1, 1)
    assert keys[("spec",)] == (2, 1)
    assert keys[("spec", "slices")] == (3, 3)
    assert keys[("spec", "slices", 0)] == (4, 7)
    assert keys[("spec", "slices", 0, "name")] == (4, 7)
    assert keys[("spec", "slices", 0, "topology")] == (5, 7)
    assert keys[("spec", "slices", 1)] == (6, 9)
    assert keys[("spec", "slices", 1, "name")] == (6, 9)
    assert keys[("spec", "list", 1, "k")] == (7, 14)
    values = doc.sourcemap.values
    assert values[("apiVersion",)] == (1, 13)
    assert values[("spec", "slices", 0, "topology")] == (5, 17)
    assert values[("spec", "list", 0)] == (7, 10)
    assert doc.sourcemap.file == "f.yaml"
    assert doc.sourcemap.source_line(5) == "      topology: 2x4"
    assert doc.sourcemap.source_line(99) is None


def test_locate_missing_field_points_at_parent() -> None:
    [doc] = load_documents(TEXT, "f.yaml")
    assert doc.sourcemap.locate(("spec", "slices", 1, "topology")) == (6, 9)
    assert doc.sourcemap.locate(("spec", "slices", 0, "topology"), prefer_value=True) == (5, 17)
    assert doc.sourcemap.locate(("nowhere",)) == (1, 1)  # the document itself


def test_duplicate_keys_name_both_lines() -> None:
    text = "a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\na: 4\n"
    [doc] = load_documents(text, "f.yaml")
    dups = [p for p in doc.problems if p.rule == "yaml-duplicate-key"]
    assert [(p.path, p.line) for p in dups] == [("b.c", 5), ("a", 6)]
    assert "first defined on line 3" in dups[0].message
    assert "first defined on line 1" in dups[1].message
    assert all(p.file == "f.yaml" and p.column >= 1 for p in dups)
    assert doc.data == {"a": 1, "b": {"c": 1, "d": 2}}  # the first one is kept


def test_duplicate_key_is_an_error_in_a_recipe() -> None:
    parsed = parse_recipe_text("kind: Recipe\nkind: Recipe\n", "r.yaml")
    dup = [p for p in parsed.problems if p.rule == "yaml-duplicate-key"]
    assert len(dup) == 1 and dup[0].line == 2 and dup[0].severity.value == "error"
    assert parsed.recipe is None


# an unclosed "[" or quote is reported where it opens, not where the parser noticed it
@pytest.mark.parametrize(("text", "line"), [
    ("a: 1\nb: [1, 2\nc: 3\n", 2),
    ("a: 1\n  b: 2\n", 2),
    ("a: 'unterminated\nb: 2\n", 1),
    ("a:\n\t- 1\n", 2),
    ("- a\nb: 1\n", 2),
])
def test_syntax_error_is_a_problem_with_a_line(text: str, line: int) -> None:
    docs = load_documents(text, "f.yaml")
    bad = docs[-1]
    assert bad.data is None
    [problem] = bad.problems
    assert problem.rule == "yaml-syntax"
    assert problem.message.startswith("YAML syntax error")
    assert problem.line == line
    assert problem.column >= 1
    assert problem.hint
    single = load_single(text, "f.yaml")
    assert single.data is None and single.problems[0].rule == "yaml-syntax"


@pytest.mark.parametrize(("text", "line", "column", "name"), [
    ("a: 1\nb: x\x00y\n", 2, 5, "NUL"),
    ("a: é\u00e9\nb: x\x00y\n", 2, 5, "NUL"),  # libyaml counts bytes, not characters
    ("a: 1\n\x00\n", 2, 1, "NUL"),
    ("a: 1\nb: \x7f\n", 2, 4, "DEL"),
    ("a: 1\r\nb: \x01\n", 2, 4, "control"),
])
def test_control_character_is_located_by_line_and_column(text: str, line: int, column: int,
                                                          name: str) -> None:
    """Not by the reader's offset ("position 51"), which no editor shows."""
    code = next(c for c in text if c in "\x00\x01\x7f")
    for problem in (load_documents(text, "f.yaml")[-1].problems[0],
                    load_single(text, "f.yaml").problems[0]):
        assert (problem.rule, problem.line, problem.column) == ("yaml-syntax", line, column)
        assert problem.message == (f"YAML syntax error: the {name} character "
                                   f"U+{ord(code):04X} is not allowed in YAML text")
        assert "position" not in problem.message


def test_nul_byte_in_a_recipe_is_one_located_error() -> None:
    from mldiag_provision.pipeline import check_text

    text = (ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml").read_text()
    bad = text.replace("  region: ", "  region: \x00", 1)
    [p] = check_text(bad, "r.yaml").report.problems
    line = bad[:bad.index("\x00")].count("\n") + 1
    assert (p.rule, p.line, p.column) == ("yaml-syntax", line, len("  region: ") + 1)


def test_multi_document_recipe_rejected() -> None:
    text = "kind: Recipe\n---\nkind: Recipe\n"
    docs = load_documents(text, "f.yaml")
    assert [d.index for d in docs] == [0, 1]
    doc = load_single(text, "f.yaml")
    [p] = [p for p in doc.problems if p.rule == "recipe-multiple-documents"]
    assert "found 2" in p.message
    assert p.line == 3
    parsed = parse_recipe_text(text, "f.yaml")
    assert parsed.recipe is None
    assert any(p.rule == "recipe-multiple-documents" for p in parsed.problems)


@pytest.mark.parametrize("text", ["", "\n\n", "# just a comment\n", "---\n", "--- ~\n", "~\n"])
def test_empty_file(text: str) -> None:
    parsed = parse_recipe_text(text, "f.yaml")
    assert parsed.recipe is None
    assert [p.rule for p in parsed.problems] == ["recipe-empty"]
    assert parsed.problems[0].line == 1


@pytest.mark.parametrize(("text", "found"), [
    ("- a\n- b\n", "a list"), ("just a string\n", "'just a string'"), ("42\n", "42 (int)"),
])
def test_non_mapping_top_level(text: str, found: str) -> None:
    parsed = parse_recipe_text(text, "f.yaml")
    assert parsed.recipe is None
    [p] = parsed.problems
    assert p.rule == "recipe-type"
    assert found in p.message
    assert p.line == 1


def test_merge_keys() -> None:
    text = "base: &b\n  x: 1\n  y: 2\nchild:\n  <<: *b\n  y: 3\n"
    [doc] = load_documents(text, "f.yaml")
    assert doc.problems == []
    assert doc.data["child"] == {"x": 1, "y": 3}
    assert doc.sourcemap.keys[("child", "y")] == (6, 3)
    assert ("child", "<<") not in doc.sourcemap.keys


def test_merge_key_overrides_and_positions() -> None:
    text = ("base: &b\n  x: {deep: 1}\n  y: 2\n"
            "c: &c\n  <<: *b\n  x: {deep: 2}\n"
            "d: *c\n"
            "e:\n  <<: [*b, {y: 9, z: 0}]\n")
    [doc] = load_documents(text, "f.yaml")
    assert doc.problems == []  # overriding a merged key is not a duplicate, even via an alias
    assert doc.data["c"] == {"x": {"deep": 2}, "y": 2}
    assert doc.data["d"] == {"x": {"deep": 2}, "y": 2}
    assert doc.data["e"] == {"x": {"deep": 1}, "y": 2, "z": 0}  # earlier merges win
    assert doc.sourcemap.keys[("c", "x")] == (6, 3)
    assert doc.sourcemap.keys[("c", "x", "deep")] == (6, 7)
    assert doc.sourcemap.values[("c", "x", "deep")] == (6, 13)
    assert doc.sourcemap.keys[("c", "y")] == (3, 3)  # merged key: where it is written


def test_duplicate_next_to_a_merge_is_still_reported() -> None:
    [doc] = load_documents("b: &b {x: 1}\nc:\n  <<: *b\n  y: 1\n  y: 2\n", "f.yaml")
    assert [(p.rule, p.path, p.line) for p in doc.problems] == [
        ("yaml-duplicate-key", "c.y", 5)]


def test_aliases_are_expanded() -> None:
    [doc] = load_documents("a: &x [1, 2]\nb: *x\n", "f.yaml")
    assert doc.data == {"a": [1, 2], "b": [1, 2]}


def test_non_string_keys_become_strings() -> None:
    [doc] = load_documents("1: a\ntrue: b\n~: c\n1.5: d\n? [x]\n: e\n", "f.yaml")
    assert doc.problems == []
    assert set(doc.data) == {"1", "True", "None", "1.5", "['x']"}
    assert all(isinstance(k, str) for k in doc.data)


@pytest.mark.parametrize("text", [
    "a: " + "9" * 5000 + "\n",                 # above int()'s digit limit
    "a: 0x" + "f" * 5000 + "\n",
    "a: 2020-13-45\n",                        # month 13
    "a: 2020-02-30\n",
    "a: 9999-12-31T25:61:61Z\n",
    "a: 1e999999\n",
    "a: &a [*a]\n",                           # recursive alias
    "a: !!python/object:os.system x\n",       # unsafe tag
    "a: !!binary '%%%'\n",
    "a: !custom 1\n",
    "? - - - - x\n: y\n",
    "\ufeffa: 1\n",
    "\x00\n",
    "a: [" * 200 + "]" * 200 + "\n",
])
def test_odd_values_never_raise(text: str) -> None:
    docs = load_documents(text, "f.yaml")
    assert docs
    parsed = parse_recipe_text(text, "f.yaml")
    assert parsed.recipe is None
    assert parsed.problems
    for d in docs:
        for p in d.problems:
            assert p.rule.startswith(("yaml-", "recipe-"))
            assert p.file == "f.yaml"


def test_bad_timestamp_is_a_value_problem() -> None:
    [doc] = load_documents("a: 2020-13-45\n", "f.yaml")
    assert doc.data == {"a": None}  # the rest of the document is still checked
    [p] = doc.problems
    assert p.rule == "yaml-value"
    assert (p.line, p.column, p.path) == (1, 4, "a")
    assert "quote" in (p.hint or "")


def test_a_broken_document_does_not_hide_the_next_ones() -> None:
    text = "a: 1\n---\nb: [oops\n---\nc: 3\nd: 4\n"
    docs = load_documents(text, "f.yaml")
    assert [d.data for d in docs] == [{"a": 1}, None, {"c": 3, "d": 4}]
    assert docs[1].problems[0].rule == "yaml-syntax"
    # positions of the recovered document are lines of the whole file
    assert docs[2].sourcemap.keys[("d",)] == (6, 1)
    assert [d.index for d in docs] == [0, 1, 2]


def test_a_tab_that_starts_a_line_is_named_as_a_tab() -> None:
    """libyaml says only "found character that cannot start any token"; the character at
    its mark is a tab, so the message and hint say so (fresh-user review)."""
    [problem] = load_documents("a:\n\tb: 1\n", "f.yaml")[-1].problems
    assert problem.line == 2 and "tab character" in problem.message
    assert problem.hint is not None and "spaces only" in problem.hint


def test_an_unclosed_quote_is_reported_where_it_opens_with_its_quote_character() -> None:
    [problem] = load_documents('a: 1\nb: "open\nc: 2\n', "f.yaml")[-1].problems
    assert (problem.line, problem.column) == (2, 4)
    assert "the '\"' here is never closed" in problem.message
