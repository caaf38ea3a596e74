"""Showing a :class:`~mldiag_provision.policy.gate.GateResult`: text, JSON and SARIF."""

from __future__ import annotations

import json
from typing import Any

from mldiag_provision.console import Console
from mldiag_provision.policy.gate import GateResult
from mldiag_provision.sarif import SarifRule, sarif_log

_LABEL = {"error": ("ERROR", "red"), "warning": ("WARN", "yellow")}


def write_text(result: GateResult, out: Console, *, target: str, verbose: bool = False,
               strict: bool = False) -> None:
    """One block per finding (rule, resource, message, why, source; the waiver's reason for
    waived ones), a note per waiver that matched nothing, then one summary line: the verdict,
    the counts, the rules run on ``target``, the engine and its time, and how many checkov
    checks the stack skips. A gate that passes with no finding prints that line only.

    ``verbose`` (``-v``): also list each skipped checkov check with its reason. ``strict``:
    warnings fail the gate too (the verdict reads "failed" for them, as the exit code does).
    """
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
    skips = result.external_waivers
    if skips and verbose:
        out.print(f"  checkov checks the stack skips ({len(skips)}), each with its reason:")
        for skip in skips:
            out.print(out.style(f"    {skip['check']} ({skip['file']}): {skip['reason']}",
                                "dim"))
    for rid in result.unused_waivers:
        out.print(out.style(f"  note: the waiver for {rid} matched nothing; remove it", "dim"))
    e, w, n = len(result.errors), len(result.warnings), len(result.waived)
    verdict = (out.style("policy gate failed:", "red", "bold") if result.failed(strict)
               else out.style("policy gate passed:", "green", "bold"))
    scope = "with its saved plan" if result.with_plan else "rendered stack, no plan"
    skipped = ""
    if skips:
        skipped = (f"; {len(skips)} checkov check(s) skipped with a reason"
                   + ("" if verbose else " (-v lists them)"))
    out.print(f"{verdict} {e} error(s), {w} warning(s), {n} waived; {len(result.rules)} "
              f"rule(s) on {target} ({scope}) [{result.engine}, {result.elapsed_s:.2f}s]"
              f"{skipped}")


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
