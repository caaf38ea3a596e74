"""The positional YAML loader's shortcuts (issue 16) change nothing: core scalars built by
their constructors directly, and mappings without a merge (``<<``) or value (``=``) key not
flattened, give the same data, positions, confusables and problems as the generic path
(every value through ``construct_object``, every mapping flattened), which is what the
loader did before. Corpus: example recipes, every YAML file under tests/, typed mutants of
them, and hand-written merges, aliases, duplicates, tags and syntax errors."""

from __future__ import annotations

import contextlib
import copy
import gc
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


def _probe_paths(eager: loader.Document) -> list[tuple]:
    """Every tabled path, a missing child of each and a few impossible ones."""
    sm = eager.sourcemap
    paths = set(sm.keys) | set(sm.values) | set(sm.confusables)
    probes = sorted(paths, key=repr)
    probes += [(*p, "no-such-key") for p in probes] + [(*p, 99) for p in probes]
    return [*probes, ("spec", 0, "x"), (0,), ("",), ()]


@pytest.mark.slow  # every corpus manifest, both loaders
def test_quick_pass_finds_the_positions_the_builder_tables(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A document built without positions (loader.QUICK) answers locate() and has_key() for
    every path as the positional builder's tables do, before and after its own tables are
    built, and builds the same tables, data and problems."""
    texts = _texts()
    quick_docs = [loader.load_documents(t, "f.yaml") for t in texts]
    monkeypatch.setattr(loader, "QUICK", False)
    eager_docs = [loader.load_documents(t, "f.yaml") for t in texts]
    lazy_seen = 0
    for text, quick, eager in zip(texts, quick_docs, eager_docs, strict=True):
        assert len(quick) == len(eager), text[:400]
        for q, e in zip(quick, eager, strict=True):
            assert (repr(q.data), q.problems, q.index) == (repr(e.data), e.problems, e.index)
            lazy_seen += q.sourcemap._lazy is not None
            probes = _probe_paths(e)
            for prefer in (False, True):
                got = [q.sourcemap.locate(p, prefer_value=prefer) for p in probes]
                assert got == [e.sourcemap.locate(p, prefer_value=prefer) for p in probes], \
                    text[:400]
            assert [q.sourcemap.has_key(p) for p in probes] == \
                [e.sourcemap.has_key(p) for p in probes], text[:400]
            assert (q.sourcemap.keys, q.sourcemap.values, q.sourcemap.confusables) == \
                (e.sourcemap.keys, e.sourcemap.values, e.sourcemap.confusables), text[:400]
    assert lazy_seen > 900  # most documents took the quick pass


def test_an_overridden_merged_value_leaves_no_confusable() -> None:
    """`<<: {a: y}` then `a: "x"`: the merged `y` is gone, so is its YAML 1.1 warning."""
    for quick in (True, False):
        loader.QUICK = quick
        try:
            (doc,) = loader.load_documents('b: &m {a: y, c: 1e3}\nd:\n  <<: *m\n  a: "x"\n',
                                           "f.yaml")
        finally:
            loader.QUICK = True
        assert doc.data == {"b": {"a": "y", "c": "1e3"}, "d": {"a": "x", "c": "1e3"}}
        assert doc.sourcemap.confusables == {("b", "a"): "boolean", ("b", "c"): "float",
                                             ("d", "c"): "float"}
        assert doc.sourcemap.keys[("d", "a")] == (4, 3)


@pytest.mark.slow  # every corpus manifest under gc debugging
def test_loading_leaves_no_reference_cycles() -> None:
    """``lint`` loads with the cyclic collector paused and then freezes what it loaded
    (cli/commands/lint.py, issue 16): loading, and asking the loaded documents for positions
    and tables, must leave no cyclic garbage, or it would be kept until the process ends. (A
    closure in _Tree.tables that referred to itself once kept each document's node tree.)
    A recursive alias (``a: &r [*r]``, refused as yaml-too-large) is a cycle in the text
    itself, as large as the text: left out here."""
    from mldiag_provision.lint.loading import Source, load_sources

    texts = [t for t in _texts() if not any(p.rule == "yaml-too-large" for d in
                                            loader.load_documents(t, "f.yaml")
                                            for p in d.problems)]
    assert len(texts) > 900
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for text in texts:
            for doc in loader.load_documents(text, "f.yaml"):
                doc.sourcemap.locate(("a", 0, "b"))
                doc.sourcemap.has_key(("spec",))
                assert doc.sourcemap.keys is not None  # builds the tables
        loaded = load_sources([Source(f"m{i}.yaml", t) for i, t in enumerate(texts)])
        assert loaded.resources
        del loaded
        # Only loading's own garbage counts: in a suite, threads of earlier tests (an API
        # server's, a provider keeper's reader) may leave cycles of theirs meanwhile, since
        # the collector is paused for the whole process. Kept for inspection, then freed.
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        ours = [o for o in gc.garbage if _from_loading(o)]
        assert not ours, [type(o).__qualname__ for o in ours[:10]]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


def _from_loading(obj: object) -> bool:
    """Whether a garbage object was made by the loader or the YAML library: an object of
    their classes, or a function, frame or cell closure of their code."""
    import types

    packages = ("mldiag_provision", "yaml", "_yaml")
    if type(obj).__module__.startswith(packages):
        return True
    if isinstance(obj, types.FunctionType):
        return str(obj.__module__).startswith(packages)
    if isinstance(obj, types.FrameType):
        name = obj.f_code.co_filename
        return "mldiag_provision" in name or "/yaml/" in name
    return False
