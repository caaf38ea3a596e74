"""``fleet plan``: one combined summary of the recipes a change affects, made offline.

Per affected recipe: preflight (errors, warnings), the stack rendered in memory (files),
what the plan objects say it creates (resources with a name of their own, from
:func:`~mldiag_provision.plan.owned.owned_names`; APIs it turns on; accelerator chips), and
the policy gate over the rendered stack (bundled rules plus the recipe's directories), as
``mldiag-provision policy RECIPE`` runs it. Plus the cross-recipe findings
(:mod:`.collisions`, over the whole fleet) that involve an affected recipe.

Terraform's own plan (what changes, drift, dangers) is made only when asked for
(``fleet plan --sandbox`` or ``--terraform``): the CLI runs ``plan`` per recipe and puts
its result in :attr:`RecipeSummary.terraform_plan` (:mod:`.tfplan`). Without, this summary
is what can be known offline, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mldiag_provision.errors import Severity
from mldiag_provision.fleet.collisions import Finding
from mldiag_provision.fleet.members import Member
from mldiag_provision.fleet.tfplan import TerraformPlan, cost_text

MODES = ("offline", "sandbox", "terraform")
"""How ``fleet plan`` made its summary: offline only; with each recipe's real plan in the
sandbox; with each recipe's real plan against Google Cloud."""


@dataclass
class RecipeSummary:
    """What ``fleet plan`` knows about one affected recipe (see the module docstring)."""

    file: str
    reasons: tuple[str, ...]
    name: str | None = None
    project: str | None = None
    errors: int = 0
    warnings: int = 0
    files: int = 0
    creates: dict[str, int] = field(default_factory=dict)
    """Resources with a name of their own the stack creates, by kind (names.yaml
    ``uniqueness`` keys)."""
    services: int = 0
    chips: int = 0
    gate: dict[str, Any] | None = None
    """``{"errors": n, "warnings": n, "waived": n, "rules": [ids of unwaived findings]}``;
    ``None`` when preflight failed (nothing to gate)."""
    problem: str | None = None
    terraform_plan: TerraformPlan | None = None
    """The recipe's real plan (``--sandbox``/``--terraform``); None when made offline."""

    @property
    def ok(self) -> bool:
        return (self.errors == 0 and self.problem is None
                and (self.gate is None or self.gate["errors"] == 0)
                and (self.terraform_plan is None or self.terraform_plan.ok))

    def to_dict(self) -> dict[str, Any]:
        return {"recipe": self.file, "reasons": list(self.reasons), "name": self.name,
                "project": self.project, "ok": self.ok,
                "preflight": {"errors": self.errors, "warnings": self.warnings},
                "rendered_files": self.files, "creates": self.creates,
                "services": self.services, "chips": self.chips, "gate": self.gate,
                "problem": self.problem,
                "terraform_plan": (self.terraform_plan.to_dict()
                                   if self.terraform_plan is not None else None)}


def summarize(member: Member, reasons: Sequence[str]) -> RecipeSummary:
    """Preflight, render and gate one member (already loaded) into a summary; a broken
    policy is reported in ``problem``, never raised."""
    from mldiag_provision.errors import MldiagError
    from mldiag_provision.plan.owned import owned_names

    s = RecipeSummary(member.file, tuple(reasons))
    if member.check is None:
        s.errors, s.problem = 1, member.read_error
        return s
    s.errors = member.errors
    s.warnings = sum(p.severity is Severity.WARNING for p in member.check.report.problems)
    recipe = member.recipe
    if recipe is not None:
        s.name, s.project = recipe.metadata.name, recipe.spec.project
    stack = member.extra.get("stack")
    if stack is None or recipe is None or member.plan is None:
        return s
    for o in owned_names(member.plan):
        s.creates[o.kind] = s.creates.get(o.kind, 0) + 1
    s.services = len(member.plan.get("services") or ())
    s.chips = sum((sl.get("chips") or 0) * (sl.get("count") or 1)
                  for sl in member.plan.get("slices") or ())
    try:
        s.files, s.gate = _render_and_gate(member, stack, recipe)
    except MldiagError as exc:
        s.problem = f"policy gate: {exc.message}"
    return s


def _render_and_gate(member: Member, stack: Any, recipe: Any) -> tuple[int, dict[str, Any]]:
    from mldiag_provision.policy import policy_data
    from mldiag_provision.policy.gate import run_gate, settings_for
    from mldiag_provision.policy.inputs import stack_document
    from mldiag_provision.render.stack import render_stack

    files = render_stack(stack, policy=policy_data(recipe))
    settings = settings_for(recipe, member.file, files, [], {})
    result = run_gate(lambda: stack_document(files), None, settings)
    return len(files), {"errors": len(result.errors), "warnings": len(result.warnings),
                        "waived": len(result.waived),
                        "rules": sorted({f.rule.id for f in [*result.errors,
                                                             *result.warnings]})}


def markdown(rows: Sequence[RecipeSummary], findings: Sequence[Finding], total: int,
             since: str | None, tool: Sequence[str], mode: str = "offline") -> str:
    """The combined summary as Markdown (a pull-request comment); ``mode`` one of
    :data:`MODES`. Sections: the heading (and why every recipe is affected), one table row
    per recipe, the findings across recipes, Terraform's plans where any ran, the footer."""
    bad = sum(not r.ok for r in rows) + sum(f.severity is Severity.ERROR for f in findings)
    head = "✅" if not bad else "❌"
    since_text = f" since `{since}`" if since else ""
    lines = [f"## {head} mldiag-provision fleet plan: {len(rows)} of {total} recipe(s) "
             f"affected{since_text}", ""]
    if tool:
        lines += [f"The tool changed ({', '.join(f'`{t}`' for t in tool[:3])}): every recipe "
                  "is affected.", ""]
    lines += ["| recipe | stack (project) | why | preflight | creates | gate | ok |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [_recipe_row(r) for r in rows]
    lines += _across(findings)
    lines += _plan_table(rows)
    lines += ["", FOOTER[mode]]
    return "\n".join(lines)


def _gate_cell(gate: Mapping[str, Any] | None) -> str:
    """A policy gate (``{"errors", "warnings", "waived", "rules"}``) in a table cell:
    ``"1 error(s), 0 warning(s), 2 waived (rule-a)"``, ``-`` where it did not run."""
    if gate is None:
        return "-"
    return (f"{gate['errors']} error(s), {gate['warnings']} warning(s)"
            + (f", {gate['waived']} waived" if gate["waived"] else "")
            + (f" ({', '.join(gate['rules'])})" if gate["rules"] else ""))


def _recipe_row(r: RecipeSummary) -> str:
    """One recipe's row of the summary table (its problem, where it has one, in the gate
    column)."""
    creates = ", ".join(f"{n} {k}" for k, n in sorted(r.creates.items())) or "-"
    gate = r.problem or _gate_cell(r.gate)
    return (f"| `{r.file}` | {r.name or '-'} ({r.project or '-'}) | "
            f"{'; '.join(r.reasons)} | {r.errors} error(s), {r.warnings} warning(s) "
            f"| {creates} | {gate} | {'✅' if r.ok else '❌'} |")


def _across(findings: Sequence[Finding]) -> list[str]:
    """The section of findings across recipes (one bullet each, with every side), or no
    line at all."""
    if not findings:
        return []
    lines = ["", "### Across recipes", ""]
    for f in findings:
        sides = ", ".join(f"`{s.at()}` (`{s.path}`)" for s in f.sides)
        lines.append(f"- **{f.severity.value}** `{f.rule}`: {f.message}. {sides}. "
                     f"Fix: {f.hint}")
    return lines


def _plan_table(rows: Sequence[RecipeSummary]) -> list[str]:
    """The section of Terraform's plans: one row per recipe that has one
    (:func:`_plan_row`), or no line at all."""
    planned = [(r.file, r.terraform_plan) for r in rows if r.terraform_plan is not None]
    if not planned:
        return []
    return ["", "### Terraform plan", "",
            "| recipe | changes | dangers | drift | gate (with the plan) | cost | "
            "work directory |", "| --- | --- | --- | --- | --- | --- | --- |",
            *(_plan_row(file, t) for file, t in planned)]


FOOTER = {
    "offline": "_Made offline from preflight, the rendered stack, the plan objects and the "
               "policy gate; Terraform's plan (changes, drift, cost) is `fleet plan "
               "--sandbox`/`--terraform`, or `mldiag-provision plan` per recipe._",
    "sandbox": "_Each recipe planned by Terraform in the sandbox (a local double of Google "
               "Cloud; no credentials read, nothing sent to Google), in its own work "
               "directory._",
    "terraform": "_Each recipe planned by Terraform against Google Cloud, in its own work "
                 "directory._"}


def _plan_row(file: str, t: TerraformPlan) -> str:
    if not t.ran:
        why = (f"not planned: {t.error}" if t.error is not None else
               f"not planned: {t.note or 'no plan'}")
        return f"| `{file}` | {_md(why)} | | | | | `{t.workdir}` |"
    changes = ("no changes" if not t.has_changes else
               ", ".join(f"{t.counts[k]} {k}" for k in t.counts))
    if t.deferred:
        changes += "; deferred: " + "; ".join(t.deferred)
    dangers = "<br>".join(_md(d) for d in t.dangers) or "-"
    drift = ", ".join(f"`{a}`" for a in t.drift) or "-"
    return (f"| `{file}` | {_md(changes)} | {dangers} | {drift} | {_gate_cell(t.gate)} | "
            f"{cost_text(t.cost)} | `{t.workdir}` |")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def text_line(t: TerraformPlan) -> str:
    """One line of the text output for a recipe's plan."""
    if not t.ran:
        return ("    terraform plan: " + (f"failed: {t.error}" if t.error is not None
                                          else f"not run: {t.note}"))
    parts = [t.counts_text()]
    if t.dangers:
        parts.append(f"{len(t.dangers)} danger(s): " + "; ".join(t.dangers))
    if t.drift:
        parts.append(f"drift: {', '.join(t.drift)}")
    if t.deferred:
        parts.append("deferred: " + "; ".join(t.deferred))
    if t.gate is not None:
        parts.append(f"gate {t.gate['errors']} error(s), {t.gate['warnings']} warning(s)"
                     + (f" ({', '.join(t.gate['rules'])})" if t.gate["rules"] else ""))
    parts.append(f"cost {cost_text(t.cost)}")
    return f"    terraform plan ({t.workdir}): " + "; ".join(parts)
