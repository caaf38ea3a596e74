"""Manifests through libyaml's emitter only where it writes the same bytes as PyYAML's Python
emitter (issue 16): proved over every golden manifest, every example recipe rendered whole,
and seeded random strings (ASCII punctuation, spaces, line breaks, tabs, non-ASCII and
characters beyond the BMP) placed in golden objects."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.policy import policy_data
from mldiag_provision.render import stack
from mldiag_provision.render.stack import _c_safe_string, manifest_yaml, render_stack

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_MANIFESTS = sorted((ROOT / "tests" / "golden").glob("**/k8s/**/*.yaml"))
ALPHABET = ["a", "b", "Z", "0", "1", " ", " ", "\n", "\n", ":", "#", "-", "'", '"', "\\", "?",
            ",", "[", "{", "*", "&", "!", "|", ">", "%", "@", "`", ".", "~", "\t", "é", "\x85",
            "\u2028", "\x07", "\U0001f642"]

pytestmark = pytest.mark.skipif(stack._CDumper is None, reason="PyYAML built without libyaml")


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def test_golden_manifests_same_bytes_and_mostly_on_libyaml() -> None:
    assert GOLDEN_MANIFESTS
    on_c = 0
    for path in GOLDEN_MANIFESTS:
        docs = _docs(path)
        python = manifest_yaml(docs, emitter="python")
        assert manifest_yaml(docs) == python, path
        assert path.read_text(encoding="utf-8").endswith(python), path  # what render wrote
        on_c += all(stack._c_safe(d) for d in docs)
    assert on_c >= len(GOLDEN_MANIFESTS) // 2, on_c


def _render(recipe: Path) -> dict[str, bytes]:
    catalog = load_catalog()
    res = check_file(str(recipe), catalog)
    assert res.parsed.recipe is not None, res.report.problems
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    return render_stack(plan, policy=policy_data(res.parsed.recipe))


@pytest.mark.parametrize("recipe", sorted((ROOT / "recipes").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_rendered_stack_same_with_python_emitter_only(recipe: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    auto = _render(recipe)
    monkeypatch.setattr(stack, "_CDumper", None)
    assert _render(recipe) == auto


def test_random_strings_where_admitted_are_written_alike() -> None:
    seeds = [d for p in GOLDEN_MANIFESTS for d in _docs(p)]
    rng = random.Random(16)
    admitted = refused = 0
    for _ in range(2500):
        s = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 14)))
        if rng.random() < 0.15:
            s = s * rng.randint(5, 20)  # long: folding
        obj = copy.deepcopy(rng.choice(seeds))
        where = rng.randrange(4)
        if where == 0:
            obj["zz"] = s
        elif where == 1:
            obj["zz"] = [s, "x"] if rng.random() < 0.5 else ["x", s]
        elif where == 2:
            obj["metadata"]["name"] = s
        else:
            obj["zz"] = {"k": [s], s[:20] or "k2": 1}
        docs = [obj] if rng.random() < 0.5 else [obj, copy.deepcopy(obj)]
        if not _c_safe_string(s):
            refused += 1
            assert not all(stack._c_safe(d) for d in docs)
            continue
        admitted += 1
        assert manifest_yaml(docs, emitter="c") == manifest_yaml(docs, emitter="python"), s
    assert admitted > 500 and refused > 500, (admitted, refused)


def test_the_emitters_do_differ_outside_the_admitted_strings() -> None:
    """The guard is needed: libyaml escapes a character beyond the BMP that Python writes."""
    docs = [{"metadata": {"name": "x \U0001f642"}}]
    assert manifest_yaml(docs, emitter="c") != manifest_yaml(docs, emitter="python")
    assert manifest_yaml(docs) == manifest_yaml(docs, emitter="python")
