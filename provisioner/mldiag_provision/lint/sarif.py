"""SARIF 2.1.0 output of ``lint``, through the writer shared with ``policy``
(:mod:`mldiag_provision.sarif`): every lint rule with its title, default level, group tag
and source; the run's properties name the Kubernetes version and modes.
"""

from __future__ import annotations

from mldiag_provision.lint.linter import LintResult
from mldiag_provision.lint.rules import RULES
from mldiag_provision.sarif import SCHEMA_URI, SarifRule, sarif_log

__all__ = ["SCHEMA_URI", "to_sarif"]


def to_sarif(result: LintResult) -> str:
    """The SARIF log (JSON text) of one lint run."""
    rules = [SarifRule(id=rid, title=info.title, severity=info.severity, source=info.source,
                       tags=(info.group,)) for rid, info in RULES.items()]
    o = result.options
    return sarif_log(rules, result.problems,
                     run_properties={"kubernetesVersion": o.kubernetes_version,
                                     "autopilot": o.autopilot, "diagnostics": o.diagnostics})
