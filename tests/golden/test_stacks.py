"""Every example recipe renders to exactly the stack pinned under tests/golden/stacks/<stem>/.

A new recipes/*.yaml becomes a case by itself; create its golden tree with
``pytest tests/golden --update-goldens`` and review the diff before committing it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stack_support import read_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "stacks"
RECIPES = sorted((REPO_ROOT / "recipes").glob("*.yaml"))


def _render(cli, recipe: Path, out: Path) -> dict[str, bytes]:
    code, stdout, stderr = cli("--no-color", "render", str(recipe), "-o", str(out))
    assert code == 0, f"render {recipe.name} exited {code}\n{stdout}\n{stderr}"
    return read_tree(out)


def test_there_are_recipes() -> None:
    assert len(RECIPES) >= 4, RECIPES


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_stack_matches_golden(recipe: Path, tmp_path: Path, cli, update_goldens: bool) -> None:
    got = _render(cli, recipe, tmp_path / "out")
    golden_dir = GOLDEN / recipe.stem
    if update_goldens:
        shutil.rmtree(golden_dir, ignore_errors=True)
        for rel, data in got.items():
            (golden_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden_dir / rel).write_bytes(data)
        return
    assert golden_dir.is_dir(), (
        f"no golden tree for {recipe.name}: run pytest tests/golden --update-goldens")
    want = read_tree(golden_dir)
    assert sorted(got) == sorted(want), (
        f"file list differs: extra {sorted(set(got) - set(want))}, "
        f"missing {sorted(set(want) - set(got))}")
    for rel in sorted(want):
        assert got[rel] == want[rel], (
            f"{recipe.stem}/{rel} differs from the golden file; if intended, re-run with "
            "--update-goldens and review the diff")


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_render_is_deterministic(recipe: Path, tmp_path: Path, cli) -> None:
    first = _render(cli, recipe, tmp_path / "a")
    second = _render(cli, recipe, tmp_path / "b")
    assert first == second
    assert first  # a stack is not empty


def test_no_stale_golden_dirs() -> None:
    """A golden tree whose recipe was deleted or renamed is an error, not dead weight."""
    stems = {r.stem for r in RECIPES}
    stale = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name not in stems)
    assert not stale, f"golden trees without a recipe: {stale}"
