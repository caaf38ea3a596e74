"""SARIF 2.1.0 output, for code scanning in pipelines (e.g. GitHub's upload-sarif).

One run; ``tool.driver.rules`` lists every rule id with its title, default level and source;
each problem is a result with its file, line and column, the field path as a logical
location, and the value / expected / hint in ``properties``. Severities map error -> error,
warning -> warning, info -> note. The output validates against the OASIS SARIF 2.1.0 schema
(tests/lint/test_lint_output.py).
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from mldiag_provision import __version__
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.linter import LintResult
from mldiag_provision.lint.rules import RULES

SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
              "sarif-schema-2.1.0.json")
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(file: str) -> str:
    if file == "<stdin>":
        return "stdin"
    p = Path(file)
    if p.is_absolute():
        return p.as_uri()
    return quote(PurePosixPath(*p.parts).as_posix())


def _camel(rule_id: str) -> str:
    return "".join(part.capitalize() for part in rule_id.split("-"))


def _is_url(text: str | None) -> bool:
    return bool(text) and text.startswith(("https://", "http://"))  # type: ignore[union-attr]


def _message(p: Problem) -> str:
    text = p.message[0].upper() + p.message[1:] if p.message else p.rule
    if p.expected:
        text += f". Expected: {p.expected}"
    if p.hint:
        text += f". Hint: {p.hint}"
    return text + ("" if text.endswith((".", "?")) else ".")


def to_sarif(result: LintResult) -> str:
    rule_ids = sorted(RULES)
    index = {r: i for i, r in enumerate(rule_ids)}
    rules = []
    for rid in rule_ids:
        info = RULES[rid]
        rule: dict = {"id": rid, "name": _camel(rid),
                      "shortDescription": {"text": info.title},
                      "defaultConfiguration": {"level": _LEVEL[info.severity]},
                      "properties": {"tags": [info.group]}}
        if _is_url(info.source):
            rule["helpUri"] = info.source
        rules.append(rule)
    results = []
    for p in result.problems:
        location: dict = {"physicalLocation": {"artifactLocation": {"uri": _uri(p.file)}}}
        if p.line >= 1:
            location["physicalLocation"]["region"] = {"startLine": p.line,
                                                      "startColumn": max(p.column, 1)}
        if p.path:
            location["logicalLocations"] = [{"fullyQualifiedName": p.path, "kind": "member"}]
        props = {k: v for k, v in p.to_dict().items()
                 if k in ("path", "value", "expected", "hint", "source") and v is not None}
        entry: dict = {"ruleId": p.rule, "level": _LEVEL[p.severity],
                       "message": {"text": _message(p)}, "locations": [location]}
        if p.rule in index:
            entry["ruleIndex"] = index[p.rule]
        if props:
            entry["properties"] = props
        results.append(entry)
    o = result.options
    doc = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "mldiag-provision", "version": __version__,
                                "semanticVersion": __version__, "rules": rules}},
            "invocations": [{"executionSuccessful": True}],
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": {"kubernetesVersion": o.kubernetes_version,
                           "autopilot": o.autopilot, "diagnostics": o.diagnostics},
        }],
    }
    return json.dumps(doc, indent=2)
