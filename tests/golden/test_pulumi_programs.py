"""Two example recipes rendered with ``engine: pulumi`` give exactly the Pulumi project pinned
under tests/golden/pulumi/<stem>/ (a GKE Standard stack with the manual agents, and the Slurm
stack). Regenerate with ``pytest tests/golden --update-goldens`` and review the diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pulumi_engine.support import render, with_engine
from stack_support import RECIPES

GOLDEN = Path(__file__).resolve().parent / "pulumi"
CASES = [r for r in RECIPES if r.stem in ("tpu-v5e-manual-agents-standard",
                                           "slurm-a3-ultra-lustre")]


def test_cases_exist() -> None:
    assert len(CASES) == 2, [r.stem for r in CASES]


@pytest.mark.parametrize("recipe", CASES, ids=[r.stem for r in CASES])
def test_pulumi_program_matches_golden(recipe: Path, tmp_path: Path, cli,
                                       update_goldens: bool) -> None:
    r = with_engine(recipe, tmp_path / recipe.name, "pulumi")
    got = {k: v for k, v in render(cli, r, tmp_path / "out").items()
           if not k.startswith(".mldiag/")}  # plan.json is pinned by the Terraform goldens
    golden_dir = GOLDEN / recipe.stem
    if update_goldens:
        shutil.rmtree(golden_dir, ignore_errors=True)
        for rel, data in got.items():
            (golden_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden_dir / rel).write_bytes(data)
        return
    from stack_support import read_tree

    want = read_tree(golden_dir)
    assert sorted(got) == sorted(want), (sorted(set(got) - set(want)),
                                         sorted(set(want) - set(got)))
    for rel in sorted(want):
        assert got[rel] == want[rel], (
            f"pulumi/{recipe.stem}/{rel} differs from the golden file; if intended, re-run "
            "with --update-goldens and review the diff")
