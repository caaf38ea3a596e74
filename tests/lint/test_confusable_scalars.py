"""lint rule yaml-confusable-scalar (issue 15): unquoted values that this tool's YAML reader
(PyYAML) takes for strings but Kubernetes' YAML 1.1 reader (sigs.k8s.io/yaml, go-yaml v2)
takes for booleans or numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag_provision.catalog.tpu import Catalog
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version

REPO_ROOT = Path(__file__).resolve().parents[2]

POD = """apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    a: {label}
spec:
  containers:
  - name: c
    image: x
    args: [{arg}, "{arg}"]
    env:
    - name: A
      value: {env}
"""


def _confusables(text: str, catalog: Catalog) -> list:
    options = LintOptions(kubernetes_version=default_version(catalog))
    result = lint_sources([Source("pod.yaml", text)], options, catalog)
    return [p for p in result.problems if p.rule == "yaml-confusable-scalar"]


@pytest.mark.parametrize(("value", "kind"), [
    ("y", "a boolean"), ("n", "a boolean"), ("08", "a float"), ("0o17", "an integer"),
    ("1e3", "a float"), ("+.5", "a float")])
def test_unquoted_confusable_value_is_an_error_at_its_line(value: str, kind: str,
                                                           catalog: Catalog) -> None:
    found = _confusables(POD.format(label=value, arg=value, env=value), catalog)
    assert [(p.path, p.line, p.column) for p in found] == [
        ("metadata.labels.a", 6, 8), ("spec.containers[0].args[0]", 11, 12),
        ("spec.containers[0].env[0].value", 14, 14)]
    p = found[-1]
    assert p.severity.value == "error" and p.value == value
    assert p.message.startswith(f"unquoted {value!r} reads as {kind} in Kubernetes")
    assert p.hint == f'quote it: "{value}"'
    assert p.source and "go-yaml" in p.source


def test_quoted_and_ordinary_values_are_not_flagged(catalog: Catalog) -> None:
    text = POD.format(label='"y"', arg="2x2x4", env="'1e3'")
    assert _confusables(text, catalog) == []


def test_rendered_workloads_have_none(catalog: Catalog) -> None:
    files = sorted((REPO_ROOT / "tests/golden/stacks").glob("*/k8s/workloads/*.yaml"))
    assert files
    for f in files:
        assert _confusables(f.read_text(encoding="utf-8"), catalog) == [], f


def _confusable_corpus() -> list[str]:
    """Texts with and without confusable scalars: the lint and golden manifests, and every
    confusable spelling in every place of a Pod (plain, quoted, as keys, in flow and block
    collections, through anchors, aliases and merge keys, in Lists)."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(
        [*(REPO_ROOT / "tests" / "lint" / "data").rglob("*.yaml"),
         *(REPO_ROOT / "tests" / "golden").rglob("*.yaml"),
         *(REPO_ROOT / "tests" / "fuzz" / "regressions" / "lint").rglob("*.yaml")])]
    for word in ["y", "No", "on", "~", "null", "08", "0o17", "1e3", "+.5", "_1", ".inf",
                 "12:30", "2024-01-02", "<<", "=", "ok", "yes please", "-x", "1.2.3"]:
        texts.append(POD.replace("{label}", word).replace("{arg}", word)
                     .replace("labels:\n", f"labels:\n    {word}: k\n", 1))
        texts.append(f"apiVersion: v1\nkind: List\nitems:\n- &a {{apiVersion: v1, kind: "
                     f"ConfigMap, metadata: {{name: c}}, data: {{k: {word}}}}}\n"
                     f"- {{<<: *a, data: {{k: '{word}'}}}}\n- *a\n")
    return texts


def test_objects_without_a_confusable_string_skip_the_position_tables() -> None:
    """lint asks the source map for confusable scalars (which builds every position of a
    lazily loaded document) only where a string value could be one and is not written
    quoted (lint.loading._may_hold_confusables, _written_quoted; issue 16): it never skips
    one the map lists."""
    from mldiag_provision.lint.loading import (
        _confusable_strings,
        _may_hold_confusables,
        _written_quoted,
        get,
    )
    from mldiag_provision.recipe.loader import load_documents

    skipped = listed = quoted = 0
    for text in _confusable_corpus():
        for doc in load_documents(text, "t.yaml"):
            if not isinstance(doc.data, dict):
                continue
            items = doc.data.get("items")
            parts = ([((("items", i)), item) for i, item in enumerate(items)]
                     if isinstance(items, list) else [((), doc.data)])
            for base, data in parts:
                found = [p for p in doc.sourcemap.confusables if p[:len(base)] == base]
                listed += bool(found)
                assert get(doc.data, *base) is data
                if not _may_hold_confusables(data):
                    skipped += 1
                    assert not found, (text, found)
                    continue
                strings = _confusable_strings(data)
                assert {(*base, *p) for p, _ in strings} >= set(found), (text, found)
                for path, value in strings:
                    if _written_quoted(doc.sourcemap, (*base, *path), value):
                        quoted += 1
                        assert (*base, *path) not in found, (text, path)
    assert skipped > 10 and listed > 10 and quoted > 10, (skipped, listed, quoted)
