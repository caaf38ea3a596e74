"""The positional YAML loader's shortcuts (issue 16) change nothing: core scalars built by
their constructors directly, and mappings without a merge (``<<``) or value (``=``) key not
flattened, give the same data, positions, confusables and problems as the generic path
(every value through ``construct_object``, every mapping flattened), which is what the
loader did before. Corpus: example recipes, every YAML file under tests/, typed mutants of
them, and hand-written merges, aliases, duplicates, tags and syntax errors."""

from __future__ import annotations

import contextlib
import copy
import random
import sys
from pathlib import Path

import pytest
import yaml

from mldiag_provision.recipe import loader

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from fuzz.mutate import TRICKY_STRINGS, _paths, _set  # noqa: E402

HANDWRITTEN = [
    "a: &x {b: 1, c: 2}\nd:\n  <<: *x\n  b: 3\ne: *x\nf: *x\n", "a: 1\na: 2\n", "a: !foo 1\n",
    "a: [1, 2\n---\nb: 1\n", "=: 1\nb: {=: 2}\n", "t: 2001-12-14\nb: !!binary aGVsbG8=\n",
    "a: &r [*r]\n", "<<: [{a: 1}, {a: 2, b: 3}]\na: 4\n", "? [1, 2]\n: x\n", "a: !!int x\n",
    "k: &k {<<: {z: 1}, y: 2}\nm: {<<: *k, z: 3}\nn: {<<: *k}\n",
    "1: a\ntrue: b\nnull: c\n1.5: d\n", "a: !!str 1\nb: !!float 1\nc: yes\nd: 0o17\n",
    "a: &s x\nb: *s\n*s : 2\n", "a: !!str [1]\n",
]


class _Everything:
    """A tag set that contains every tag: the loader then flattens every mapping."""

    def __contains__(self, item: object) -> bool:
        return True


def _texts() -> list[str]:
    files = sorted((ROOT / "recipes").glob("*.yaml")) + sorted((ROOT / "tests").rglob("*.yaml"))
    texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
    docs: list[object] = []
    for t in texts:
        with contextlib.suppress(yaml.YAMLError):
            docs += [d for d in yaml.safe_load_all(t) if isinstance(d, (dict, list))]
    rng = random.Random(2)
    pool: list[object] = [None, True, 0, 2**70, 1.5, "", "x", [], {}, {"<<": {"a": 1}},
                          *TRICKY_STRINGS]
    for _ in range(800):
        tree = copy.deepcopy(rng.choice(docs))
        for _ in range(rng.randint(1, 3)):
            tree = _set(tree, rng.choice(_paths(tree)), copy.deepcopy(rng.choice(pool)))
        texts.append(yaml.safe_dump(tree, sort_keys=False, allow_unicode=True))
    return texts + HANDWRITTEN


def _loaded(text: str) -> list[tuple]:
    return [(repr(d.data), d.sourcemap.keys, d.sourcemap.values, d.sourcemap.confusables,
             d.problems, d.index) for d in loader.load_documents(text, "f.yaml")]


def test_shortcuts_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts()
    fast = [_loaded(t) for t in texts]
    monkeypatch.setattr(loader, "_SCALAR_CONSTRUCTORS", {})
    monkeypatch.setattr(loader, "_FLATTENED", _Everything())
    generic = [_loaded(t) for t in texts]
    assert len(texts) > 900
    for text, a, b in zip(texts, fast, generic, strict=True):
        assert a == b, text[:400]
