"""What a render must know about the stack already in the work directory.

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
