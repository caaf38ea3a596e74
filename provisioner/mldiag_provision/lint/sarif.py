"""SARIF 2.1.0 output of ``lint``, through the writer shared with ``policy``
(:mod:`mldiag_provision.sarif`): every lint rule with its title, default level, group tag
and source; the run's properties name the Kubernetes version and modes. An input that could
not be read is a notification of an unsuccessful invocation, not a result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from mldiag_provision.lint.linter import LintResult
from mldiag_provision.lint.output import write_json
from mldiag_provision.lint.rules import RULES
from mldiag_provision.sarif import (
    SCHEMA_URI,
    SarifRule,
    rule_index,
    sarif_document,
    sarif_results,
)

__all__ = ["SCHEMA_URI", "to_sarif", "write_sarif"]


def to_sarif(result: LintResult) -> str:
    """The SARIF log (JSON text) of one lint run."""
    return json.dumps(_document(result, streamed=False)[0], indent=2)


def write_sarif(result: LintResult, stream: TextIO) -> None:
    """:func:`to_sarif` and a newline, written to ``stream`` in pieces, each result made
    when it is written (:func:`~mldiag_provision.lint.output.write_json`; issue 32: the
    results of 1,000 manifests were ~3 MiB of dicts)."""
    doc, results = _document(result, streamed=True)
    write_json(doc, stream, streamed=(doc["runs"][0], "results", results))


def _document(result: LintResult, *, streamed: bool,
              ) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """The log, and (``streamed``) its results to come: the log's results are then left
    empty."""
    rules = [SarifRule(id=rid, title=info.title, severity=info.severity, source=info.source,
                       tags=(info.group,)) for rid, info in RULES.items()]
    o = result.options
    unread = [p for p in result.problems if p.rule == "file-unreadable"]
    problems = [p for p in result.problems if p.rule != "file-unreadable"]
    doc = sarif_document(rules, [] if streamed else problems,
                         run_properties={"kubernetesVersion": o.kubernetes_version,
                                         "autopilot": o.autopilot,
                                         "diagnostics": o.diagnostics},
                         not_read=[p.message for p in unread])
    return doc, sarif_results(rule_index(rules), problems) if streamed else iter(())
