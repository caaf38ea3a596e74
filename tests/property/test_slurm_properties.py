"""Managed-Slurm recipes under random damage: preflight never raises, and whatever preflight
lets through (no errors) plans and renders without raising."""

from __future__ import annotations

import copy

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mldiag_provision import pipeline
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render.stack import render_stack
from stack_support import REPO_ROOT

CATALOG = load_catalog()
EXAMPLE = yaml.safe_load((REPO_ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml").read_text())

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 100000), text,
                    st.sampled_from(["a3u", "cpu", "gpu", "home", "lustre", "/home",
                                     "n2-standard-8", "a4x-highgpu-4g", "flex-start", "spot",
                                     "reservation", "72h", "9d", "ZONAL", "REGIONAL"]))
trees = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(text, kids, max_size=3)), max_leaves=10)


def _paths(node: object, path: tuple = ()) -> list[tuple]:
    out = [path] if path else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


PATHS = [p for p in _paths(EXAMPLE) if p[:2] in (("spec", "slurm"), ("spec", "slices"),
                                                   ("spec", "workloads"))]


def _set(data: dict, path: tuple, value: object) -> None:
    node: object = data
    for part in path[:-1]:
        node = node[part]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]


def _run(data: dict) -> None:
    result = pipeline.check_text(yaml.safe_dump(data, allow_unicode=True), "r.yaml", CATALOG)
    assert all(isinstance(p, Problem) for p in result.report.problems)
    if result.parsed.recipe is None or any(p.severity is Severity.ERROR
                                           for p in result.report.problems):
        return
    files = render_stack(build_plan(result.parsed.recipe, result.shapes, CATALOG))
    assert "main.tf" in files


@settings(max_examples=150)
@given(st.sampled_from(PATHS), trees)
def test_damaged_slurm_recipe_never_raises(path: tuple, tree: object) -> None:
    data = copy.deepcopy(EXAMPLE)
    _set(data, path, tree)
    _run(data)


@settings(max_examples=60)
@given(st.sampled_from(PATHS), st.sampled_from(PATHS))
def test_dropped_slurm_fields_never_raise(first: tuple, second: tuple) -> None:
    data = copy.deepcopy(EXAMPLE)
    for path in sorted({first, second}, key=len, reverse=True):
        try:
            node: object = data
            for part in path[:-1]:
                node = node[part]  # type: ignore[index]
            del node[path[-1]]  # type: ignore[union-attr]
        except (KeyError, IndexError, TypeError):
            continue
    _run(data)
