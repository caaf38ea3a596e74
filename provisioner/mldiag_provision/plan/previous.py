"""What a render must know about the stack already in the work directory.

Names (issue 25): a stack rendered by an older version has names that are not unique per
stack (the workload service account ``mldiag-workload``, ...; :mod:`~.names`). Its
resources exist under those names, so the planner keeps them (:func:`keep_name`) when the
previous plan has them, and says so in a decision line; a new work directory gets the
names unique per stack.

Preflight sees only the recipe; some of Google Cloud's one-way switches depend on what an
earlier apply did. The work directory's previous plan (``OUT/.mldiag/plan.json``) records
it, so these checks run at render time (``render``, and the render step of
``plan``/``apply``/``destroy``), before the new plan replaces it.

Log Analytics on the project's ``_Default`` log bucket is such a switch:
  * a log bucket's analytics cannot be turned off once on (Cloud Logging API, LogBucket
    ``analyticsEnabled``: "Once enabled, log analytics features cannot be disabled";
    hashicorp/google suppresses the diff from true to false,
    resource_logging_project_bucket_config.go ``enableAnalyticsBackwardsChangeDiffSuppress``);
  * ``_Default`` is never deleted: the provider's delete only forgets it
    (resource_logging_bucket_config.go ``resourceLoggingBucketConfigDelete``).
So the stack never plans a delete of that config: with ``logAnalytics.enabled: false`` the
root module has a ``removed { lifecycle { destroy = false } }`` block, and a ``destroy``
forgets (``terraform state rm``) the addresses in :data:`FORGET_ON_DESTROY` first, because
``terraform plan -destroy`` ignores ``removed`` blocks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldiag_provision.errors import Problem, Severity

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import Recipe
    from mldiag_provision.recipe.sourcemap import SourceMap

PLAN_JSON = ".mldiag/plan.json"
LOG_ANALYTICS_ADDRESS = "module.log_analytics.google_logging_project_bucket_config.default"
LOG_BUCKET_SOURCE = ("https://cloud.google.com/logging/docs/reference/v2/rest/v2/"
                     "projects.locations.buckets#LogBucket")


def previous_plan(workdir: Path) -> dict[str, Any] | None:
    """The plan.json of the stack rendered in ``workdir`` before, or None (no stack yet, or
    unreadable: then there is nothing to compare)."""
    try:
        doc = json.loads((workdir / PLAN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def previous_plan_of(workdir: Path | str | None, stack: str) -> dict[str, Any] | None:
    """:func:`previous_plan` of ``workdir`` when it is the plan of stack ``stack`` (its
    ``name``), else None: a directory holding another recipe's stack says nothing about the
    names this one has (``render`` refuses to write there anyway). ``workdir`` None or
    empty: None."""
    if workdir is None or not str(workdir).strip():
        return None
    prev = previous_plan(Path(workdir))
    return prev if prev is not None and prev.get("name") == stack else None


def previous_value(prev: Mapping[str, Any] | None, *keys: str) -> object:
    """``prev[k1][k2]...`` of a previous plan, or None where a key is missing or ``prev``
    is None (a plan.json of an older version, or of another orchestrator)."""
    node: object = prev
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def keep_name(what: str, previous: object, legacy: str, new: str,
              decisions: list[str] | None) -> str:
    """The name of one resource a recipe leaves to the tool: ``legacy`` when the stack in
    the work directory already has it (``previous``, read from its plan.json, is the name
    older versions derived: the stack's state holds the resource under that name, and a new
    name would replace it), else ``new`` (unique per stack; issue 25). Appends a decision
    line to ``decisions`` (unless None) when it keeps ``legacy``."""
    if previous != legacy or legacy == new:
        return new
    if decisions is not None:
        decisions.append(
            f"{what} {legacy}: kept, the stack in this work directory has it (older versions "
            f"derived names that are not unique per stack; a new stack gets {new}; see the "
            "README, 'Stacks in one project')")
    return legacy


def render_time_problems(workdir: Path, recipe: Recipe, sourcemap: SourceMap,
                         ) -> list[Problem]:
    """Findings that need the work directory's previous plan (see the module docstring).

    Today one: ``log-analytics-off`` (warning) when the previous plan had Log Analytics on
    and the recipe now says ``enabled: false``.
    """
    prev = previous_plan(workdir)
    if prev is None:
        return []
    try:
        was_on = bool(prev["diagnostics"]["log_analytics"]["enabled"])
    except (KeyError, TypeError):
        return []
    if not was_on or recipe.spec.diagnostics.log_analytics.enabled:
        return []
    path = ("spec", "diagnostics", "logAnalytics", "enabled")
    line, column = sourcemap.locate(path, prefer_value=True)
    return [Problem(
        rule="log-analytics-off",
        message=("Log Analytics stays on: the stack in this directory turned it on for the "
                 "project's _Default log bucket, and analytics cannot be turned off on a log "
                 "bucket once enabled; enabled: false only makes the stack stop managing the "
                 "_Default bucket's settings (its config is forgotten, never deleted)"),
        path="spec.diagnostics.logAnalytics.enabled", value=False,
        expected="true (the bucket keeps analytics either way)",
        hint="keep enabled: true to go on managing the _Default retention from the recipe; "
             "with false, the stack leaves the bucket as it is",
        file=sourcemap.file, line=line, column=column, severity=Severity.WARNING,
        source=LOG_BUCKET_SOURCE)]
