"""``plan --output markdown``: the summary a pull-request comment needs (GitHub-flavoured
Markdown: tables, ``<details>``), from the stage plans and the policy gate's result."""

from __future__ import annotations

from typing import Any

_SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}


def _cell(text: object) -> str:
    """A table cell: pipes escaped, one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _headline(name: str, stage_plans: list[Any], destroy: bool) -> list[str]:
    """The title, then "No changes." or the totals over every planned stage."""
    lines = [f"### mldiag-provision plan{' --destroy' if destroy else ''}: `{_cell(name)}`", ""]
    totals = {"create": 0, "update": 0, "replace": 0, "delete": 0}
    for sp in stage_plans:
        if sp.plan is not None:
            for key in totals:
                totals[key] += getattr(sp.plan.summary, key)
    if not any(sp.has_changes for sp in stage_plans):
        lines.append("**No changes.** The infrastructure matches the recipe.")
    else:
        lines.append("**Plan:** " + ", ".join(f"{n} to {k}" for k, n in totals.items()))
    return lines


def _stage_table(stage_plans: list[Any]) -> list[str]:
    """One table row per stage: status (with its reason) and the four counts (blank for a
    stage without a plan)."""
    lines = ["", "| stage | status | create | update | replace | delete |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for sp in stage_plans:
        s = sp.plan.summary if sp.plan is not None else None
        status = sp.status if not sp.reason else f"{sp.status}: {sp.reason}"
        counts = ([s.create, s.update, s.replace, s.delete] if s is not None
                  else ["", "", "", ""])
        lines.append(f"| {sp.stage.name} | {_cell(status)} | "
                     + " | ".join(str(c) for c in counts) + " |")
    return lines


def _caution_lines(dangers: list[Any]) -> list[str]:
    """A CAUTION alert listing the destructive changes; none without any."""
    if not dangers:
        return []
    return (["", "> [!CAUTION]", f"> {len(dangers)} destructive change(s):"]
            + [f"> - {_cell(d)}" for d in dangers])


def _change_lines(stage_plans: list[Any]) -> list[str]:
    """The destructive changes (:func:`_caution_lines`), the resource changes (a collapsed
    table) and the drift (its first ten addresses); each section only when it has entries."""
    planned = [sp for sp in stage_plans if sp.plan is not None]
    lines = _caution_lines([d for sp in planned for d in sp.plan.dangers])
    changes = [(sp.stage.name, c) for sp in planned for c in sp.plan.changes
               if c.action in _SYMBOL]
    if changes:
        lines += ["", f"<details><summary>{len(changes)} resource change(s)</summary>", "",
                  "| stage | action | address |", "| --- | --- | --- |"]
        lines += [f"| {stage} | `{_SYMBOL[c.action]}` {c.action} | `{_cell(c.address)}` |"
                  for stage, c in changes]
        lines += ["", "</details>"]
    drift = [c for sp in planned for c in sp.plan.drift]
    if drift:
        lines += ["", f"**Drift:** {len(drift)} resource(s) changed outside Terraform: "
                  + ", ".join(f"`{_cell(c.address)}`" for c in drift[:10])]
    return lines


def _gate_lines(gate: Any) -> list[str]:
    """The policy gate's verdict, its counts, and a table of its findings (waived ones with
    the waiver, the others with the rule's source)."""
    verdict = "failed" if gate.failed() else "passed"
    icon = ":x:" if gate.failed() else ":white_check_mark:"
    lines = ["", f"#### Policy gate {icon} {verdict}",
             f"{len(gate.rules)} rule(s): {len(gate.errors)} error(s), "
             f"{len(gate.warnings)} warning(s), {len(gate.waived)} waived"]
    if gate.findings:
        lines += ["", "| | rule | finding | note |", "| --- | --- | --- | --- |"]
        for f in gate.findings:
            mark = "waived" if f.waived else f.rule.severity.value
            note = (f"waiver: {f.waived}" if f.waived
                    else f"[source]({f.rule.source})")
            lines.append(f"| {mark} | `{f.rule.id}` | {_cell(f.message)} | "
                         f"{_cell(note)} |")
    return lines


def plan_markdown(name: str, stage_plans: list[Any], gate: Any, decisions: list[str], *,
                  destroy: bool = False, cost: str | None = None) -> str:
    """The Markdown summary of one ``plan`` run.

    ``stage_plans``: :class:`~mldiag_provision.stack.stages.StagePlan` items; ``gate``: a
    :class:`~mldiag_provision.policy.gate.GateResult` or None (``--destroy``); ``cost``: the
    cost section (:func:`mldiag_provision.cost.report.change_markdown`) or None.
    """
    lines = _headline(name, stage_plans, destroy) + _stage_table(stage_plans)
    lines += _change_lines(stage_plans)
    if cost:
        lines += ["", cost]
    if gate is not None:
        lines += _gate_lines(gate)
    if decisions:
        lines += ["", "<details><summary>Decisions</summary>", ""]
        lines += [f"- {_cell(d)}" for d in decisions]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
