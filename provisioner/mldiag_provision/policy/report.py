"""Showing a :class:`~mldiag_provision.policy.gate.GateResult`: text, JSON and SARIF."""

from __future__ import annotations

import json
from typing import Any

from mldiag_provision.console import Console
from mldiag_provision.policy.gate import GateResult
from mldiag_provision.sarif import SarifRule, sarif_log

_LABEL = {"error": ("ERROR", "red"), "warning": ("WARN", "yellow")}


def write_text(result: GateResult, out: Console, *, target: str) -> None:
    """One block per finding (rule, resource, message, why, source; the waiver's reason for
    waived ones), then a summary line."""
    out.print(out.style("policy gate", "bold") + f": {len(result.rules)} rule(s) on {target} "
              + ("with its saved plan" if result.with_plan else "(rendered stack; no plan)")
              + f" [{result.engine}, {result.elapsed_s:.2f}s]")
    for f in sorted(result.findings, key=lambda f: (f.waived is not None, f.rule.id,
                                                    f.resource)):
        if f.waived is not None:
            label = out.style("WAIVED", "cyan")
        else:
            text, colour = _LABEL[f.rule.severity.value]
            label = out.style(text, colour, "bold")
        out.print(f"  {label} [{f.rule.id}] {f.message}")
        if f.waived is not None:
            out.print(f"      waiver reason: {f.waived}")
        else:
            out.print(out.style(f"      why: {f.rule.rationale}", "dim"))
            out.print(out.style(f"      source: {f.rule.source}", "dim"))
    if result.external_waivers:
        out.print(f"  checkov checks the stack skips ({len(result.external_waivers)}), each "
                  "with its reason:")
        for skip in result.external_waivers:
            out.print(out.style(f"    {skip['check']} ({skip['file']}): {skip['reason']}",
                                "dim"))
    for rid in result.unused_waivers:
        out.print(out.style(f"  note: the waiver for {rid} matched nothing; remove it", "dim"))
    e, w, n = len(result.errors), len(result.warnings), len(result.waived)
    verdict = (out.style("policy gate failed:", "red", "bold") if e
               else out.style("policy gate passed:", "green", "bold"))
    out.print(f"{verdict} {e} error(s), {w} warning(s), {n} waived")


def to_json(result: GateResult, *, target: str) -> str:
    return json.dumps({**result.to_dict(), "target": target}, indent=2)


def to_sarif(result: GateResult, *, target: str) -> str:
    """SARIF 2.1.0 (the writer ``lint`` uses); waived findings carry an accepted
    suppression with the waiver's reason as justification."""
    rules = [SarifRule(id=r.id, title=r.title, severity=r.severity, source=r.source,
                       tags=("policy", "bundled" if r.bundled else "user"),
                       description=r.rationale) for r in result.rules]
    problems = [f.to_problem(target) for f in result.findings]
    suppressions = {i: f.waived for i, f in enumerate(result.findings) if f.waived}
    props: dict[str, Any] = {"target": target, "engine": result.engine,
                             "withPlan": result.with_plan}
    return sarif_log(rules, problems, run_properties=props, suppressions=suppressions)
