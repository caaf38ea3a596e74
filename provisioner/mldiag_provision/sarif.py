"""SARIF 2.1.0 logs for code scanning (e.g. GitHub's upload-sarif), shared by ``lint`` and
``policy``.

One run; ``tool.driver.rules`` lists every rule with its title, default level and source
(``helpUri``); each problem is a result with its file (and line/column when known), the
field path or resource address as a logical location, and the value / expected / hint in
``properties``. Severities map error -> error, warning -> warning, info -> note. The output
validates against the OASIS SARIF 2.1.0 schema (tests/lint/test_lint_output.py,
tests/policy/test_policy_cli.py); spec: https://docs.oasis-open.org/sarif/sarif/v2.1.0/.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from mldiag_provision import __version__
from mldiag_provision.errors import Problem, Severity

SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
              "sarif-schema-2.1.0.json")
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


@dataclass(frozen=True)
class SarifRule:
    """One ``reportingDescriptor``: id, one-line title, default severity, source, tags."""

    id: str
    title: str
    severity: Severity
    source: str | None = None
    tags: tuple[str, ...] = ()
    description: str | None = None


def uri(file: str) -> str:
    """A SARIF artifact URI for a path as the user gave it (relative stays relative)."""
    if file == "<stdin>":
        return "stdin"
    p = Path(file)
    if p.is_absolute():
        return p.as_uri()
    return quote(PurePosixPath(*p.parts).as_posix())


def _camel(rule_id: str) -> str:
    return "".join(part.capitalize() for part in rule_id.replace("_", "-").split("-"))


def _is_url(text: str | None) -> bool:
    return bool(text) and text.startswith(("https://", "http://"))  # type: ignore[union-attr]


def _message(p: Problem) -> str:
    text = p.message[0].upper() + p.message[1:] if p.message else p.rule
    if p.expected:
        text += f". Expected: {p.expected}"
    if p.hint:
        text += f". Hint: {p.hint}"
    return text + ("" if text.endswith((".", "?")) else ".")


def rule_index(rules: Iterable[SarifRule]) -> dict[str, int]:
    """Rule id -> its index in the log's ``rules`` (sorted by id)."""
    return {r.id: i for i, r in enumerate(sorted(rules, key=lambda r: r.id))}


def sarif_results(index: dict[str, int], problems: Iterable[Problem],
                  suppressions: dict[int, str] | None = None) -> Iterator[dict[str, Any]]:
    """The log's ``results``, one per problem, as they are asked for (``index``: from
    :func:`rule_index`; ``suppressions`` as :func:`sarif_document`'s)."""
    for i, p in enumerate(problems):
        location: dict[str, Any] = {"physicalLocation": {"artifactLocation": {
            "uri": uri(p.file or ".")}}}
        if p.line >= 1:
            location["physicalLocation"]["region"] = {"startLine": p.line,
                                                      "startColumn": max(p.column, 1)}
        if p.path:
            location["logicalLocations"] = [{"fullyQualifiedName": p.path, "kind": "member"}]
        props = {k: v for k, v in p.to_dict().items()
                 if k in ("path", "value", "expected", "hint", "source") and v is not None}
        entry: dict[str, Any] = {"ruleId": p.rule, "level": LEVEL[p.severity],
                                 "message": {"text": _message(p)}, "locations": [location]}
        if p.rule in index:
            entry["ruleIndex"] = index[p.rule]
        if props:
            entry["properties"] = props
        if suppressions and i in suppressions:
            entry["suppressions"] = [{"kind": "external", "status": "accepted",
                                      "justification": suppressions[i]}]
        yield entry


def _invocation(not_read: list[str]) -> dict[str, Any]:
    if not not_read:
        return {"executionSuccessful": True}
    return {"executionSuccessful": False, "toolExecutionNotifications": [
        {"level": "error", "message": {"text": text}} for text in not_read]}


def sarif_log(rules: Iterable[SarifRule], problems: Iterable[Problem], *,
              run_properties: dict[str, Any] | None = None,
              suppressions: dict[int, str] | None = None,
              not_read: Iterable[str] = ()) -> str:
    """The SARIF 2.1.0 log (JSON text) of one run: :func:`sarif_document` as JSON with an
    indent of 2."""
    return json.dumps(sarif_document(rules, problems, run_properties=run_properties,
                                     suppressions=suppressions, not_read=not_read), indent=2)


def sarif_document(rules: Iterable[SarifRule], problems: Iterable[Problem], *,
                   run_properties: dict[str, Any] | None = None,
                   suppressions: dict[int, str] | None = None,
                   not_read: Iterable[str] = ()) -> dict[str, Any]:
    """The SARIF 2.1.0 log of one run, as the JSON document (dicts and lists).

    ``suppressions`` maps the index of a problem to the justification of its waiver: such a
    result carries an ``accepted`` external suppression, so code scanning shows it closed.
    ``not_read``: why each input that could not be read was not (one line each): error-level
    tool execution notifications of an invocation that was not successful (SARIF 2.1.0
    §3.20.14, §3.20.21), not results: they say nothing about the code.
    """
    ordered = sorted(rules, key=lambda r: r.id)
    index = rule_index(ordered)
    descriptors = []
    for r in ordered:
        d: dict[str, Any] = {"id": r.id, "name": _camel(r.id),
                             "shortDescription": {"text": r.title},
                             "defaultConfiguration": {"level": LEVEL[r.severity]},
                             "properties": {"tags": list(r.tags)}}
        if r.description:
            d["fullDescription"] = {"text": r.description}
        if _is_url(r.source):
            d["helpUri"] = r.source
        descriptors.append(d)
    results = list(sarif_results(index, problems, suppressions))
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "mldiag-provision", "version": __version__,
                            "semanticVersion": __version__, "rules": descriptors}},
        "invocations": [_invocation(list(not_read))],
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if run_properties:
        run["properties"] = run_properties
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
