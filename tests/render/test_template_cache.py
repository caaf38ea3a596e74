"""Compiled blueprint templates kept between runs (render.template_cache, issue 16): the
stack is byte-identical whether its templates were compiled now or read from the cache, the
cache follows Python's bytecode settings, and a damaged cache only costs the compile."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from jinja2.bccache import bc_magic

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.policy import policy_data
from mldiag_provision.render import stack
from mldiag_provision.render.template_cache import cache_dir

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "tpu-v6e-4x4-multislice-autopilot.yaml"


def _render() -> dict[str, bytes]:
    stack.template_env.cache_clear()  # a fresh process: nothing compiled in memory
    catalog = load_catalog()
    res = check_file(str(RECIPE), catalog)
    assert res.parsed.recipe is not None, res.report.problems
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    return stack.render_stack(plan, policy=policy_data(res.parsed.recipe))


@pytest.fixture
def prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    yield tmp_path / "mldiag-provision-jinja"
    stack.template_env.cache_clear()


def test_same_stack_compiled_or_cached(prefix: Path) -> None:
    assert cache_dir() == prefix
    compiled = _render()
    cached = sorted(prefix.glob("*.jinja-code"))
    assert cached  # written on the first render
    stamps = [p.stat().st_mtime_ns for p in cached]
    assert _render() == compiled  # read back
    assert [p.stat().st_mtime_ns for p in cached] == stamps  # not compiled again
    for p in cached:  # damaged past Jinja's own checks: compiled again, same stack
        p.write_bytes(bc_magic + b"\x80\x04garbage")
    assert _render() == compiled


def test_nothing_written_without_bytecode(prefix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _render()
    assert not prefix.exists()


def test_unwritable_cache_only_costs_the_compile(prefix: Path) -> None:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.write_text("a file where the cache folder would be")
    assert _render()


def test_cache_home_without_prefix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "mldiag-provision" / "jinja"
