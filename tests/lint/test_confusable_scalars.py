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
