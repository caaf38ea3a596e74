"""Lint's memory savings (issue 32 item 4) change no finding.

- :class:`~mldiag_provision.lint.positions.Positions` answers every question the loader's
  node tree answers (``find`` for every field, missing fields and wrong-typed steps,
  ``tables`` with its order, after ``shift_lines``), over every manifest of the lint test
  data, the fuzz regressions and the rendered golden stacks;
- the compiled schema registry trimmed to the definitions the input's kinds reach decides
  like the whole one (``test_compiled_schema.py`` compares the compiled validator with
  python-jsonschema itself);
- lint's text, JSON and SARIF reports of a corpus (those files plus generated manifests of
  the ``lint_1000`` benchmark) are byte-identical with and without the compact positions,
  the trimmed registry, the lazily split lines and the reports written in pieces.

The peak memory itself is measured by ``tests/benchmarks/lint_1000.py``, not here.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from mldiag_provision.console import Console
from mldiag_provision.lint import loading, output, positions, schema
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import LintResult, lint_sources
from mldiag_provision.lint.loading import Source, load_sources
from mldiag_provision.lint.output import to_json, write_json_report, write_text
from mldiag_provision.lint.sarif import to_sarif, write_sarif
from mldiag_provision.lint.schema import (
    CRD_URI,
    K8S_DEFS_URI,
    SchemaSet,
    crd_document,
    default_version,
)
from mldiag_provision.recipe.loader import load_documents

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
from lint_1000 import write_manifests  # noqa: E402

pytest.importorskip("jsonschema_rs")


def _files() -> list[Path]:
    files = sorted((ROOT / "tests" / "lint" / "data").rglob("*.yaml"))
    files += sorted((ROOT / "tests" / "fuzz" / "regressions").rglob("*.yaml"))
    files += sorted((ROOT / "tests" / "golden" / "stacks").glob("*/k8s/**/*.yaml"))
    return files


def _probes(keys: dict[tuple[str | int, ...], object]) -> list[tuple[str | int, ...]]:
    """Every tabled path, and around each: a missing key, a list index past the end, a
    negative index, a boolean index, a step into a scalar, an integer step into a mapping
    and a string step into a list."""
    out: list[tuple[str | int, ...]] = [()]
    for path in keys:
        out.append(path)
        out += [(*path, "no-such-key"), (*path, 0), (*path, 10_000), (*path, -1),
                (*path, True), (*path, "0")]
        if path and isinstance(path[-1], int):
            out.append((*path[:-1], path[-1] + 1))
    return out


def test_positions_answer_what_the_node_tree_answers() -> None:
    compared = 0
    for file in _files():
        text = file.read_text(encoding="utf-8")
        for doc in load_documents(text, str(file)):
            tree = doc.sourcemap.lazy
            if tree is None:
                continue
            pos = positions.compact(tree) if "&" not in text else None
            if pos is None:
                continue
            keys, values, confusables = tree.tables()
            assert pos.tables() == (keys, values, confusables)
            # what the loader records while it builds the document is the same
            (rec,) = [d.sourcemap.lazy for d in load_documents(text, str(file),
                                                                 positions=positions.located)
                      if d.index == doc.index]
            assert isinstance(rec, positions.Positions), (file, doc.index)
            assert (rec.where, rec.size, rec.key) == (pos.where, pos.size, pos.key)
            assert [list(t) for t in pos.tables()[:2]] == [list(keys), list(values)]
            for path in _probes(keys):
                assert pos.find(path) == tree.find(path), (file, path)
            for t in (tree, pos):
                t.shift_lines(7)
            assert pos.tables() == tree.tables()
            for path in _probes(keys)[:50]:
                assert pos.find(path) == tree.find(path), (file, path)
            compared += 1
    assert compared > 90, compared  # the corpus was read


def test_compact_declines_merges_and_confusable_scalars() -> None:
    merged = "base: &b {a: 1}\nx:\n  <<: *b\n  c: 2\n"
    (doc,) = load_documents(merged, "m.yaml")
    assert doc.sourcemap.lazy is not None
    assert positions.compact(doc.sourcemap.lazy) is None
    (doc,) = load_documents("a: y\n", "c.yaml")  # Kubernetes' YAML 1.1 reads y as true
    assert doc.sourcemap.lazy is not None
    assert positions.compact(doc.sourcemap.lazy) is None
    # the loader's own record declines the same (a merge needs no anchor when inline)
    for text in ("x:\n  <<: {a: 1}\n  c: 2\n", "a: y\n", "- [1, {b: y}]\n"):
        (doc,) = load_documents(text, "t.yaml", positions=positions.located)
        assert doc.sourcemap.lazy is not None
        assert not isinstance(doc.sourcemap.lazy, positions.Positions), text
    (doc,) = load_documents("x:\n  <<: {a: 1}\n  c: 2\n", "t.yaml",
                            positions=positions.located)
    assert doc.data == {"x": {"a": 1, "c": 2}}
    assert doc.sourcemap.lazy.find(("x", "a")) == ((2, 8), (2, 11))  # inside the braces


def test_recorded_positions_after_a_syntax_error_are_shifted() -> None:
    text = "a: 1\n---\nb: [\n---\nc:\n  - d: 2\n  - 3\n"
    docs = load_documents(text, "s.yaml", positions=positions.located)
    last = docs[-1]
    assert isinstance(last.sourcemap.lazy, positions.Positions)
    assert last.data == {"c": [{"d": 2}, 3]}
    assert last.sourcemap.lazy.find(("c", 0, "d")) == ((6, 5), (6, 8))
    assert last.sourcemap.lazy.find(("c", 1)) == ((7, 5), (7, 5))
    assert last.sourcemap.lazy.find(("c", 2)) == (None, None)
    assert last.sourcemap.lazy.find(("c", "x")) == (None, None)
    (plain,) = [d for d in load_documents(text, "s.yaml") if d.index == last.index]
    assert plain.sourcemap.lazy is not None
    assert last.sourcemap.lazy.tables() == plain.sourcemap.lazy.tables()


def test_lines_are_split_when_read() -> None:
    text = "a: 1\r\nb: 2\x0bc\n\nd: [\n  3]\n"
    loaded = load_sources([Source("m.yaml", text)])
    sm = loaded.sourcemaps["m.yaml"]
    assert list(sm.lines) == text.splitlines()
    assert [sm.source_line(n) for n in range(0, len(text.splitlines()) + 2)] == \
        [None, *text.splitlines(), None]


def test_trimmed_registry_holds_what_the_kinds_reach() -> None:
    s = SchemaSet(default_version())
    docs = {K8S_DEFS_URI: s.defs, CRD_URI: crd_document()[0]}
    kinds = [("batch/v1", "Job"), ("v1", "Service"), ("v1", "Pod"),
             ("jobset.x-k8s.io/v1alpha2", "JobSet"), ("apps/v1", "StatefulSet")]
    for kind in kinds:
        found = schema._reachable(s.schema_for(*kind)[0], docs)
        assert found, kind
        assert len(found) < len(docs[K8S_DEFS_URI]["$defs"]) // 2, kind
        if kind[1] != "Service":
            assert (K8S_DEFS_URI, "io.k8s.api.core.v1.Container") in found, kind
    # a reference it cannot follow: the whole documents
    assert schema._reachable({"$ref": "#/definitions/x"}, docs) is None
    assert schema._reachable({"$ref": "https://example.com/x.json#/$defs/a"}, docs) is None
    assert schema._reachable({"properties": {"a": {"$id": "x", "type": "string"}}},
                             docs) is None


def test_trimmed_registry_decides_as_the_whole_one() -> None:
    """Kinds planned together, a kind that arrives unplanned (the registry grows), and a
    kind with a broken object: the same decisions as with the whole documents, and the
    parsed definitions are read again for python-jsonschema's messages."""
    whole = SchemaSet(default_version())
    trimmed = SchemaSet(default_version())
    trimmed.plan([("batch/v1", "Job"), ("v1", "Service")])
    good = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
                                           "restartPolicy": "Never"}}}}
    bad = {**good, "spec": {"template": {"spec": {"containers": [{"name": 7}]}}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "ports": [
               {"containerPort": "x"}]}]}}
    cases = [("batch/v1", "Job", good), ("batch/v1", "Job", bad), ("v1", "Pod", pod),
             ("v1", "Pod", {**pod, "spec": {"containers": []}})]
    # the whole documents for the first: force the fallback
    original = schema._reachable
    schema._reachable = lambda *_: None  # type: ignore[assignment]
    try:
        for api_version, kind, data in cases:
            whole.accepts(api_version, kind, data)
    finally:
        schema._reachable = original
    for api_version, kind, data in cases:
        assert trimmed.accepts(api_version, kind, data) == \
            whole.accepts(api_version, kind, data), (kind, data)
    assert trimmed._compiled_refs is not None and whole._compiled_refs is None
    assert ("v1", "Pod") in trimmed._covered
    assert trimmed._defs is None  # planned: let go once the registry was built
    assert whole._defs is not None  # unplanned (the sandbox): kept for the next kind
    assert trimmed.defs["$defs"]  # and read again when asked


def _reports(result: LintResult) -> tuple[str, str, str, str, str]:
    text = io.StringIO()
    write_text(result, Console(text, color=False), strict=False)
    js, sarif = io.StringIO(), io.StringIO()
    write_json_report(result, js, strict=True)
    write_sarif(result, sarif)
    return (text.getvalue(), js.getvalue(), sarif.getvalue(),
            to_json(result, strict=True) + "\n", to_sarif(result) + "\n")


def test_reports_are_the_same_without_the_savings(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    write_manifests(tmp_path, 60)
    texts = [(str(f), f.read_text(encoding="utf-8")) for f in _files()]
    texts += [(str(f), f.read_text(encoding="utf-8")) for f in sorted(tmp_path.iterdir())]
    options = LintOptions(default_version(), autopilot=True)

    def run() -> tuple[str, ...]:
        schema.schema_set.cache_clear()
        return _reports(lint_sources([Source(n, t) for n, t in texts], options))

    def compacted() -> bool:
        loaded = load_sources([Source(*texts[-1])])
        return isinstance(loaded.resources[0].sourcemap.lazy, positions.Positions)

    saved = run()
    assert saved[0].count("\n") > 1000  # findings to compare
    assert compacted()
    monkeypatch.setattr(positions, "located", None)  # the loader keeps the node trees
    monkeypatch.setattr(loading, "_Lines", lambda text: text.splitlines())
    monkeypatch.setattr(schema, "_reachable", lambda *_: None)
    monkeypatch.setattr(output, "_CHUNK", 1 << 40)  # one piece, as before
    assert not compacted()
    plain = run()
    schema.schema_set.cache_clear()
    assert saved == plain
    # the pieces join to the one-shot texts
    assert saved[1] == saved[3] and saved[2] == saved[4]


@pytest.mark.parametrize("items", [
    [],
    [1],
    [{"a": "line\nbreak", "b": [1, {"c": "é ✓"}], "d": {}}, [], "x", None, {"e": []}],
    [{"deep": {"er": [{"est": i}]}} for i in range(3000)],  # over several pieces
])
def test_streamed_json_is_what_dumps_writes(items: list[object]) -> None:
    def doc() -> dict[str, object]:
        return {"$schema": "s", "runs": [{"tool": {"x": 1}, "results": None, "after": [2]}]}

    whole = doc()
    whole["runs"][0]["results"] = list(items)  # type: ignore[index]
    streamed, out = doc(), io.StringIO()
    output.write_json(streamed, out, streamed=(streamed["runs"][0], "results",  # type: ignore[index]
                                               iter(items)))
    assert out.getvalue() == json.dumps(whole, indent=2) + "\n"
