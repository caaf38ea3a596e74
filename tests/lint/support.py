"""Helpers for the lint tests: lint text in-process and pick problems out of the result."""

from __future__ import annotations

from pathlib import Path

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import LintResult, lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version

DATA = Path(__file__).resolve().parent / "data"
MULTIHOST = DATA / "available-chips-multihost.yaml"
SINGLEHOST = DATA / "available-chips-singlehost.yaml"


def lint(*texts: str, autopilot: bool = False, diagnostics: bool = True,
         version: str | None = None, names: list[str] | None = None) -> LintResult:
    """Lint ``texts`` as one input set (file names m0.yaml, m1.yaml, ... unless given)."""
    names = names or [f"m{i}.yaml" for i in range(len(texts))]
    opts = LintOptions(version or default_version(), autopilot=autopilot,
                       diagnostics=diagnostics)
    return lint_sources([Source(n, t) for n, t in zip(names, texts, strict=True)], opts)


def errors(result: LintResult) -> list[Problem]:
    return [p for p in result.problems if p.severity is Severity.ERROR]


def by_rule(result: LintResult, rule: str) -> list[Problem]:
    return [p for p in result.problems if p.rule == rule]


def one(result: LintResult, rule: str) -> Problem:
    found = by_rule(result, rule)
    assert len(found) == 1, (rule, [(p.rule, p.path, p.message) for p in result.problems])
    return found[0]


def show(result: LintResult) -> list[tuple[str, str, str, str]]:
    return [(p.severity.value, p.rule, p.path, p.message) for p in result.problems]
