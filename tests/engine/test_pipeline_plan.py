"""The plan lines of the pipeline examples (tests/cli/test_pipeline_examples.py runs the
others), with the real terraform binary and the offline stand-in providers."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.test_pipeline_examples import (  # noqa: F401  (workspace is a fixture)
    _run_all,
    cloudbuild_commands,
    workflow_commands,
    workspace,
)


@pytest.mark.terraform
def test_example_plan_commands_pass(workspace: dict[str, str], cli, offline) -> None:  # noqa: F811
    """The plan, policy --plan and drift lines, against the offline stand-in providers."""
    if offline is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    from engine.conftest import offline_recipe

    recipe = Path(workspace["RECIPE"])
    offline_recipe(recipe, recipe, deletion_protection=None)  # local state for the stand-in
    for lines in (workflow_commands(), cloudbuild_commands()):
        ran = _run_all(cli, lines, workspace, engine=True)
        assert "plan" in ran and "policy" in ran, ran
    summary = Path("plan.md").read_text()
    assert summary.startswith("### mldiag-provision plan: ")
    assert "#### Policy gate :white_check_mark: passed" in summary
