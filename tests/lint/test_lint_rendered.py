"""What `render` writes passes `lint`: every golden stack's k8s/ manifests, with the Autopilot
rules for the Autopilot stacks. A render change that breaks a TPU or Autopilot rule shows up
here as well as in the golden diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import read_sources
from mldiag_provision.lint.schema import default_version

from .support import errors, show

STACKS = Path(__file__).resolve().parents[1] / "golden" / "stacks"
K8S_DIRS = sorted(p for p in STACKS.glob("*/k8s") if p.is_dir())


def test_there_are_rendered_manifests() -> None:
    assert len(K8S_DIRS) >= 4, K8S_DIRS


@pytest.mark.parametrize("k8s", K8S_DIRS, ids=[p.parent.name for p in K8S_DIRS])
def test_rendered_manifests_pass_lint(k8s: Path) -> None:
    autopilot = "autopilot" in k8s.parent.name
    result = lint_sources(read_sources([str(k8s)]),
                          LintOptions(default_version(), autopilot=autopilot))
    assert errors(result) == [], show(result)
