"""``fleet plan --sandbox|--terraform``: each affected recipe's real plan, read back.

The CLI runs ``mldiag-provision plan RECIPE -o DIR -O json`` for each recipe (the same
function, in this process; in the sandbox with ``--sandbox``) and hands its JSON document
here. :func:`from_document` keeps what the combined summary shows: the counts of what
Terraform would create/update/replace/delete over every planned stage, the dangers (the
deletes and replaces ``plan`` warns about), the drift (resources changed outside
Terraform), the stages deferred, the policy gate over the plan, and the cost per hour.
Each stage's plan is also written by ``plan`` to ``<stage dir>/.mldiag/plan-summary.json``
(the same dictionary as ``stages[].plan`` in the document); their paths are kept.

Exit codes (:func:`exit_code`), as ``plan --detailed-exitcode`` and Terraform's
``-detailed-exitcode``: 0 nothing fails (and, with ``detailed``, nothing would change),
2 (``detailed`` only) something would change, 1 any error: a recipe's preflight, its plan
(an engine or usage error), an unwaived policy gate error, or a collision across recipes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

COUNTS = ("create", "update", "replace", "delete")
"""The counts the summary shows (``read`` and changed outputs are left out)."""

WORKDIR_ROOT = "stacks"
"""Default root of the work directories (``--work-dir``): the examples' convention,
``stacks/<recipe path without its suffix>`` (:func:`mldiag_provision.fleet.engines.stack_dir`)."""


@dataclass
class TerraformPlan:
    """One recipe's plan, as ``plan -O json`` reported it (or why it is missing).

    ``counts``: resources per action (:data:`COUNTS`) over every planned stage;
    ``dangers``: one sentence per destructive change; ``drift``: addresses changed outside
    Terraform; ``deferred``: ``"stage: reason"`` of each stage not planned yet; ``gate``:
    ``{"errors", "warnings", "waived", "rules"}`` (rule ids of unwaived findings) or None;
    ``cost``: ``{"total_usd_per_hour", "delta_usd_per_hour", "lower_bound"}`` or None when
    it cannot be priced; ``error``: the message of a plan that failed, with ``exit_code``
    (:class:`~mldiag_provision.errors.ExitCode`) and ``hint``.
    """

    workdir: str
    ran: bool = False
    has_changes: bool = False
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    dangers: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    gate: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    summaries: list[str] = field(default_factory=list)
    error: str | None = None
    hint: str | None = None
    exit_code: int | None = None
    note: str | None = None
    """Why the plan did not run although it was asked for (preflight errors)."""

    @property
    def ok(self) -> bool:
        """Planned, and the gate found no unwaived error."""
        return (self.ran and self.error is None
                and (self.gate is None or self.gate["errors"] == 0))

    def to_dict(self) -> dict[str, Any]:
        return {"workdir": self.workdir, "ran": self.ran, "ok": self.ok,
                "hasChanges": self.has_changes, "counts": self.counts,
                "dangers": self.dangers, "drift": self.drift, "deferred": self.deferred,
                "gate": self.gate, "cost": self.cost, "planSummaries": self.summaries,
                "error": ({"message": self.error, "hint": self.hint,
                           "exitCode": self.exit_code} if self.error is not None else None),
                "note": self.note}

    def counts_text(self) -> str:
        """``"2 to create, 1 to update, 0 to replace, 0 to delete"`` or ``"no changes"``."""
        if not self.has_changes:
            return "no changes"
        return ", ".join(f"{self.counts[k]} to {k}" for k in COUNTS)


def workdir_for(root: Path, recipe: str) -> Path:
    """The work directory of ``recipe`` (a path relative to the repository root, POSIX
    separators) under ``root``: ``root/<recipe without its suffix>``; a recipe outside the
    repository (absolute, or with ``..``) gets ``root/<its stem>``."""
    path = PurePosixPath(recipe)
    if path.is_absolute() or ".." in path.parts:
        return root / path.stem
    return root.joinpath(*path.with_suffix("").parts)


def from_document(doc: Mapping[str, Any], workdir: str) -> TerraformPlan:
    """The :class:`TerraformPlan` of ``plan -O json``'s document ``doc`` (keys ``hasChanges``,
    ``stages`` with their ``plan`` dictionaries, ``policy``, ``cost``; see
    ``mldiag_provision.cli.commands.plan``). A document that is an error
    (``{"ok": false, "error": {...}}``) becomes a failed plan."""
    if isinstance(doc.get("error"), Mapping):
        return failed(workdir, str(doc["error"].get("message") or "plan failed"),
                      doc["error"].get("hint"), doc["error"].get("exitCode"))
    t = TerraformPlan(workdir, ran=True, has_changes=bool(doc.get("hasChanges")))
    for stage in doc.get("stages") or ():
        if stage.get("status") == "deferred":
            t.deferred.append(f"{stage.get('stage')}: {stage.get('reason') or 'deferred'}")
        plan = stage.get("plan")
        if isinstance(plan, Mapping):
            _add_stage(t, plan)
    policy = doc.get("policy")
    if isinstance(policy, Mapping):
        t.gate = _gate(policy)
    cost = doc.get("cost")
    if isinstance(cost, Mapping):
        t.cost = {"total_usd_per_hour": cost.get("total_usd_per_hour"),
                  "delta_usd_per_hour": cost.get("delta_usd_per_hour"),
                  "lower_bound": bool(cost.get("lower_bound"))}
    return t


def _add_stage(t: TerraformPlan, plan: Mapping[str, Any]) -> None:
    """Add one stage's ``plan`` dictionary to ``t``: its counts per action (``summary``),
    its dangers, the addresses of its drift, and the path of its ``plan-summary.json``
    (beside its ``planFile``)."""
    summary = plan.get("summary") or {}
    for k in COUNTS:
        t.counts[k] += int(summary.get(k) or 0)
    t.dangers += [str(d) for d in plan.get("dangers") or ()]
    t.drift += [str(d.get("address")) for d in plan.get("drift") or ()]
    if plan.get("planFile"):
        t.summaries.append(str(Path(str(plan["planFile"])).parent / "plan-summary.json"))


def _gate(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The policy gate of the document (``policy``) as :attr:`TerraformPlan.gate`: its error,
    warning and waived counts, and the sorted rule ids of its unwaived findings."""
    unwaived = [f for f in policy.get("findings") or () if not f.get("waived")]
    return {"errors": int(policy.get("errors") or 0),
            "warnings": int(policy.get("warnings") or 0),
            "waived": int(policy.get("waived") or 0),
            "rules": sorted({str(f.get("rule")) for f in unwaived})}


def failed(workdir: str, message: str, hint: str | None, exit_code: int | None
           ) -> TerraformPlan:
    """A plan that stopped with an error (``exit_code``: the code ``plan`` would exit)."""
    return TerraformPlan(workdir, ran=False, error=message, hint=hint, exit_code=exit_code)


def not_run(workdir: str, note: str) -> TerraformPlan:
    """A plan not attempted (the recipe's preflight failed): ``note`` says why."""
    return TerraformPlan(workdir, ran=False, note=note)


def cost_text(cost: Mapping[str, Any] | None) -> str:
    """``"$9.70/h (+$9.70/h)"``, ``"≥ $9.70/h"`` when a lower bound, ``"unknown"``."""
    if not cost or cost.get("total_usd_per_hour") is None:
        return "unknown"
    low = "≥ " if cost.get("lower_bound") else ""
    text = f"{low}${float(cost['total_usd_per_hour']):.2f}/h"
    delta = cost.get("delta_usd_per_hour")
    if delta is not None and float(delta) != 0.0:
        text += f" ({'+' if float(delta) > 0 else '-'}${abs(float(delta)):.2f}/h)"
    return text


def exit_code(plans: Sequence[TerraformPlan | None], failed_any: bool, *,
              detailed: bool) -> int:
    """The exit code of ``fleet plan`` (see the module docstring): ``failed_any`` is a
    failing preflight, gate or collision the caller found; ``plans`` the recipes' plans
    (None: not asked for)."""
    if failed_any or any(p is not None and p.error is not None for p in plans):
        return 1
    if detailed and any(p is not None and p.has_changes for p in plans):
        return 2
    return 0
