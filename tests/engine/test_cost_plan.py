"""`plan -O markdown` shows the stack's hourly cost and what the change adds (issue 29), with
the real terraform binary and the offline stand-in providers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.conftest import offline_recipe
from stack_support import REPO_ROOT

pytestmark = pytest.mark.terraform

RECIPE = REPO_ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml"  # 16 v5e chips, on-demand


def test_plan_markdown_shows_the_cost_and_the_delta_of_an_added_slice(offline, cli,
                                                                      tmp_path: Path) -> None:
    if offline is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    r = offline_recipe(RECIPE, tmp_path / "r.yaml", deletion_protection=False)
    work = str(tmp_path / "work")
    code, out, err = cli("plan", str(r), "-o", work, "-O", "markdown")
    assert code == 0, out + err
    assert "#### Cost per hour" in out
    assert "**After this change:** $19.30/h (lower bound: 1 line unknown)" in out
    assert "**Change:** +$19.30/h (a new stack)" in out
    code, out, err = cli("apply", str(r), "-o", work, "--auto-approve", "--stage", "project")
    assert code == 0, out + err
    # the change: a second slice (multislice, count 2) = a second node pool of 16 chips
    doc = yaml.safe_load(r.read_text(encoding="utf-8"))
    doc["spec"]["slices"][0]["count"] = 2
    # count 2 names the pools v5e-16-0/-1: the applied v5e-16 pool is replaced
    doc["spec"]["policy"]["waivers"].append(
        {"rule": "plan-destructive-delete", "reason": "offline test stack: pool renamed"})
    r.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    code, out, err = cli("plan", str(r), "-o", work, "-O", "markdown")
    assert code == 0, out + err
    assert "**Before:** $19.30/h (lower bound: 1 line unknown)" in out
    assert "**After this change:** $38.50/h (lower bound: 1 line unknown)" in out
    assert "**Change:** +$19.20/h" in out
    assert "| + | node pool" in out and "$19.20 |" in out


def test_plan_and_apply_text_and_json_carry_the_cost(offline, cli, tmp_path: Path) -> None:
    if offline is None:
        return
    r = offline_recipe(RECIPE, tmp_path / "r.yaml", deletion_protection=False)
    work = str(tmp_path / "work")
    code, out, err = cli("--no-color", "plan", str(r), "-o", work)
    assert code == 0, out + err
    assert ("cost per hour: $19.30/h (lower bound: 1 line unknown); this change: +$19.30/h "
            "of the known part (details: mldiag-provision cost RECIPE)") in out
    code, out, err = cli("plan", str(r), "-o", work, "-O", "json")
    assert code == 0, out + err
    cost = json.loads(out)["cost"]
    assert cost["total_usd_per_hour"] == pytest.approx(19.30)
    # the same recipe again, still nothing applied: the change is still the whole stack
    # (the cost of a change compares with what is deployed, not with the last render)
    assert cost["delta_usd_per_hour"] == pytest.approx(19.30)
    assert cost["lower_bound"] is True
    code, out, err = cli("--no-color", "apply", str(r), "-o", work, "--auto-approve",
                         "--stage", "project")
    assert code == 0, out + err
    assert "cost per hour: $19.30/h" in out  # shown with the plan, before applying


def test_a_plan_after_render_on_a_new_directory_prices_the_whole_stack(
        offline, cli, tmp_path: Path) -> None:
    """``render R -o D`` then ``plan R -o D``: nothing is deployed, so "this change" is the
    whole stack (the fresh-user finding: it said +$0.00/h, comparing with the render);
    once applied, the same plan changes nothing: +$0.00/h."""
    if offline is None:
        return
    r = offline_recipe(RECIPE, tmp_path / "r.yaml", deletion_protection=False)
    work = str(tmp_path / "work")
    code, out, err = cli("render", str(r), "-o", work)
    assert code == 0, out + err
    code, out, err = cli("--no-color", "plan", str(r), "-o", work)
    assert code == 0, out + err
    assert "this change: +$19.30/h" in out
    code, out, err = cli("--no-color", "apply", str(r), "-o", work, "--auto-approve",
                         "--stage", "project")
    assert code == 0, out + err
    code, out, err = cli("--no-color", "plan", str(r), "-o", work)
    assert code == 0, out + err
    assert "this change: +$0.00/h" in out
