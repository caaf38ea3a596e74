"""The samples the default test run takes in place of full sets (tests/sampling.py,
docs/testing.md) are chosen by their rule and cover every family of the full set."""

from __future__ import annotations

import fnmatch

import pytest

from pulumi_engine.parity import PARITY, PARITY_SAMPLE, parity_families, parity_recipes
from pulumi_engine.variants import VARIANTS
from sampling import cover, full_sets, recipe_families
from stack_support import RECIPES


def test_cover_takes_the_case_covering_most_then_the_first_name() -> None:
    families = {"b": {"x", "y"}, "a": {"x", "y"}, "c": {"z"}, "d": {"y"}}
    assert cover(families) == ["a", "c"]  # a and b tie on two: the first name wins
    assert cover({}) == []
    assert cover({"only": set()}) == []


def test_every_example_has_the_families_its_recipe_says() -> None:
    by_name = {r.stem: recipe_families(r) for r in RECIPES}
    assert {"orchestrator:slurm", "accelerator:slurm/gpu", "section:slurm",
            "section:policy"} <= by_name["slurm-a3-ultra-lustre"]
    assert {"orchestrator:gke-standard", "capacity:queued", "multislice:yes",
            "section:kueue"} <= by_name["tpu-v6e-4x4-queued-standard"]
    assert {"agents:manual", "option:minVersion"} <= by_name["tpu-v5e-manual-agents-standard"]
    assert "engine:terraform" in by_name["tpu-v6e-4x4-multislice-autopilot"]
    every = set().union(*by_name.values())
    for kind in ("orchestrator", "engine", "accelerator", "capacity", "workload",
                 "multislice", "agents"):
        assert any(f.startswith(kind + ":") for f in every), kind


def test_the_parity_sample_covers_every_family_of_the_examples() -> None:
    every = set().union(*(parity_families(r) for r in RECIPES))
    sampled = set().union(*(parity_families(r) for r in PARITY_SAMPLE))
    assert sampled == every, sorted(every - sampled)
    orchestrators = {f for f in every if f.startswith("orchestrator:")}
    assert orchestrators >= {"orchestrator:gke-standard", "orchestrator:gke-autopilot",
                             "orchestrator:existing-kubernetes", "orchestrator:slurm"}
    # a sample, not the set: the rule takes fewer cases than there are examples
    assert len(PARITY_SAMPLE) < len(RECIPES)
    assert sorted(PARITY_SAMPLE) == PARITY_SAMPLE


def test_every_explained_parity_difference_is_checked_by_the_sample() -> None:
    """Each parity.yaml entry that some case needs is needed by a sampled example or a
    variant (the variants always run): the default run still checks every explanation."""
    runs = [r.stem for r in PARITY_SAMPLE] + list(VARIANTS)
    every = [r.stem for r in RECIPES] + list(VARIANTS)
    for entry in PARITY.get("differences") or []:
        needed = [n for n in every if any(fnmatch.fnmatch(n, g) for g in entry["examples"])]
        if needed:
            assert any(n in needed for n in runs), (entry["type"], entry["path"], needed)


def test_the_full_switch_takes_every_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_FULL", "1")
    assert full_sets()
    monkeypatch.setenv("MLDIAG_FULL", "0")
    assert not full_sets()
    assert parity_recipes(full=True) == RECIPES
    assert parity_recipes(full=False) == PARITY_SAMPLE


def test_the_fuzz_sample_is_smaller_than_the_full_set() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "fuzz"))
    try:
        import budget
    finally:
        sys.path.pop(0)
    assert 0 < budget.SAMPLE_EXAMPLES < budget.FULL_EXAMPLES == 2000
