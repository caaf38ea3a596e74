"""The lint pipeline: sources -> objects -> Kubernetes schema -> TPU / Autopilot / ML
Diagnostics rules -> one sorted, de-duplicated list of problems.

Returns data only; the CLI chooses the output format and the exit code. Nothing here raises
for bad input: every finding is a :class:`~mldiag_provision.errors.Problem`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mldiag_provision.catalog.tpu import Catalog, load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint import (
    admission_rules,
    autopilot_rules,
    diagnostics_rules,
    names_rules,
    recipe_rules,
    tpu_rules,
    webhook_rules,
    wiring_rules,
)
from mldiag_provision.lint.context import LintContext, LintOptions
from mldiag_provision.lint.loading import Loaded, Source, load_sources
from mldiag_provision.lint.schema import schema_set, validate_resource
from mldiag_provision.recipe.sourcemap import SourceMap

_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass
class LintResult:
    """Every problem of one run, and what was read."""

    options: LintOptions
    files: list[str]
    resources: int
    problems: list[Problem] = field(default_factory=list)
    sourcemaps: dict[str, SourceMap] = field(default_factory=dict)

    def count(self, severity: Severity) -> int:
        return sum(p.severity is severity for p in self.problems)

    def failed(self, strict: bool = False) -> bool:
        """Errors fail; with ``strict`` warnings fail too (infos never do)."""
        return self.count(Severity.ERROR) > 0 or (strict and self.count(Severity.WARNING) > 0)

    def by_file(self) -> dict[str, list[Problem]]:
        out: dict[str, list[Problem]] = {f: [] for f in self.files}
        for p in self.problems:
            out.setdefault(p.file, []).append(p)
        return out


def lint_sources(sources: Iterable[Source], options: LintOptions,
                 catalog: Catalog | None = None) -> LintResult:
    """Lint a set of manifests together (a Job's Service may be in another file)."""
    return lint_loaded(load_sources(sources), options, catalog)


def lint_loaded(loaded: Loaded, options: LintOptions,
                catalog: Catalog | None = None) -> LintResult:
    """:func:`lint_sources` of sources already read by
    :func:`~mldiag_provision.lint.loading.load_sources`."""
    catalog = catalog or load_catalog()
    problems = list(loaded.problems)
    schemas = schema_set(options.kubernetes_version, options.crd_versions)
    for res in loaded.resources:
        problems.extend(validate_resource(res, schemas))
    ctx = LintContext(loaded.resources, catalog, options)
    checks = [*tpu_rules.CHECKS, *names_rules.CHECKS, *wiring_rules.CHECKS,
              *webhook_rules.CHECKS]
    if options.autopilot:
        checks += [*autopilot_rules.CHECKS, *admission_rules.CHECKS]
    if options.recipe is not None:
        checks += recipe_rules.CHECKS
    if options.diagnostics:
        checks += diagnostics_rules.CHECKS
    for check in checks:
        problems.extend(check(ctx))
    order = {f: i for i, f in enumerate(loaded.files)}
    unique: dict[tuple, Problem] = {}
    for p in problems:
        unique.setdefault((p.file, p.path, p.rule, p.message), p)
    ordered = sorted(unique.values(), key=lambda p: (order.get(p.file, len(order)), p.line,
                                                     p.column, _SEVERITY_ORDER[p.severity],
                                                     p.rule))
    return LintResult(options=options, files=loaded.files, resources=len(loaded.resources),
                      problems=ordered, sourcemaps=loaded.sourcemaps)
