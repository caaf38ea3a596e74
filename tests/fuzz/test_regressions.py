"""Every input the fuzz suite (or a hand test of issue 15) ever broke the tool with, kept as
a file under ``regressions/<entry point>/`` and replayed here through the same in-process
entry point: each must give findings (or a clean result), never an internal error.

Add a case: save the failing input (``HYPOTHESIS`` prints it) as a new file with a comment
saying what broke, fix the tool, and this test covers it from then on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag_provision.catalog.tpu import Catalog
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version

HERE = Path(__file__).parent / "regressions"
LINT_CASES = sorted((HERE / "lint").glob("*.yaml"))


@pytest.mark.parametrize("case", LINT_CASES, ids=lambda p: p.stem)
@pytest.mark.parametrize("autopilot", [False, True])
def test_lint_regression(case: Path, autopilot: bool, catalog: Catalog) -> None:
    options = LintOptions(kubernetes_version=default_version(catalog), autopilot=autopilot,
                          diagnostics=True)
    result = lint_sources([Source(case.name, case.read_text(encoding="utf-8"))], options,
                          catalog)
    assert result.resources >= 1
    assert result.failed(), "each kept case is a broken manifest: lint must report it"
