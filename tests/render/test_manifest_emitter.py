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


@pytest.mark.slow  # 2,500 random documents through both emitters
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


# --- render.fastyaml: the layout written directly, each scalar's text from libyaml ---------

WORDS = ["a", "bb", "name", "x" * 30, "y" * 70, "true", "08", "1e3", "~", "", "-", "- a",
         "a: b", "#c", "it's", '"q"', "{x}", "[y]", "*z", "&w", "!t", "%p", "@u", "`v`", "k8s",
         "gs://bucket/path", "--flag=1", "cloud.google.com/gke-tpu-topology", "0x1F", "null",
         "a\nb", "a\nb\n", "line one\nline two\nthree", "\tx", " lead", "trail ", "2024-01-02",
         "<<", "=", "é", "x \U0001f642", "a  b", "z" * 125,
         "a b c d e f g h i j k l m n o p q r s t u v"]


def _random_scalar(rng: random.Random) -> object:
    r = rng.random()
    if r < 0.08:
        return rng.choice([0, 1, -7, 10**20, True, False, None])
    if r < 0.12:
        return rng.choice([1.5, 0.0, -0.0, 1e300])
    if r < 0.3:  # long text with spaces (folding at the width, at every depth)
        return " ".join(rng.choice(WORDS[:30]) for _ in range(rng.randint(5, 40)))
    return rng.choice(WORDS)


def _random_node(rng: random.Random, depth: int) -> object:
    r = rng.random()
    if depth > 5 or r < 0.45:
        return _random_scalar(rng)
    if r < 0.55:
        return rng.choice([{}, []])
    if r < 0.78:
        keys = [rng.choice(WORDS) if rng.random() < 0.3 else f"key{i}"
                for i in range(rng.randint(1, 5))]
        return {k: _random_node(rng, depth + 1) for k in keys}
    return [_random_node(rng, depth + 1) for _ in range(rng.randint(1, 4))]


@pytest.mark.slow  # 1,500 random documents through both layouts
def test_fast_layout_writes_what_pyyaml_writes_on_random_documents() -> None:
    """Every nesting (mappings and sequences in each other, empty ones), every scalar style
    (plain, quoted, ``|`` blocks), plain text folded at the width at every depth, keys that
    need quoting, ints, bools, nulls and floats: the same text as PyYAML's Python emitter,
    mostly written by render.fastyaml itself."""
    from mldiag_provision.render import fastyaml

    rng = random.Random(1616)
    fast = 0
    for _ in range(1500):
        docs = []
        for _ in range(rng.randint(1, 3)):
            doc = {"apiVersion": "v1", "kind": "X"}
            for i in range(rng.randint(0, 4)):
                doc[rng.choice(WORDS) if rng.random() < 0.2 else f"f{i}"] = _random_node(rng, 0)
            docs.append(doc)
        python = manifest_yaml(docs, emitter="python")
        assert manifest_yaml(docs) == python, docs
        fast += fastyaml.emit(docs, stack._c_probe, width=100, admit=_c_safe_string,
                              plain=stack._plain) is not None
    assert fast > 300, fast  # the rest: floats, strings libyaml writes otherwise


def test_fast_layout_refuses_what_it_does_not_write() -> None:
    from mldiag_provision.render import fastyaml

    def emit(docs: list) -> str | None:
        return fastyaml.emit(docs, stack._c_probe, width=100, admit=_c_safe_string,
                             plain=stack._plain)

    assert emit([{"a": 1.5}]) is None  # floats: PyYAML's
    assert emit([{1: "a"}]) is None  # a key that is not a string
    assert emit([{}]) is None
    assert emit([{"a": "x \U0001f642"}]) is None  # not admitted (libyaml differs)
    assert emit([{"a": {"b": ["'q' " * 40]}}]) is None  # a quoted scalar past the width
    assert emit([{"a": ["x", "y"]}, {"b": ["'q' " * 40]}]) is None  # in the second one
    folded = [{"a": [{"b": "c"}, []], "d": [[{"e": "f " * 59 + "f"}]]}]  # plain past the width
    assert emit(folded) == manifest_yaml(folded, emitter="python")
    assert emit(folded).count("\n") == 6


@pytest.mark.parametrize("length", [0, 1, 121, 122, 123, 127, 128, 129, 200])
def test_keys_libyaml_writes_as_simple_keys_go_to_python(length: int) -> None:
    """libyaml writes an empty key and one of 123 to 128 characters as simple keys, PyYAML
    as ``?`` complex keys: such a key keeps the document off libyaml (before the guard saw
    keys, ``{"": 1}`` came out as ``'': 1`` instead of ``? ''``)."""
    key = "k" * length
    docs = [{"metadata": {"labels": {key: "v"}}}]
    assert manifest_yaml(docs) == manifest_yaml(docs, emitter="python")


def test_strings_written_as_themselves_without_asking_are() -> None:
    """render.stack._plain (strings fastyaml writes without asking libyaml) only vouches for
    strings both emitters write as themselves, as a value and as a key (of at most 122
    characters): checked on the words above and on random strings of its alphabet and
    some others."""
    rng = random.Random(1617)
    alphabet = "aZ09_./=-:#' yYnN~+eE"
    samples = [*WORDS, "y", "n", "No", "on", "0x1F", "1_000", "1.2.3", "1.", "08", "1e3",
               "2024-01-02", "12:30", "a=b", "v4-17", "scale-256-v4-17", "gs", "x.y/z",
               *("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
                 for _ in range(3000))]
    vouched = 0
    for s in samples:
        if not stack._plain(s):
            continue
        vouched += 1
        cases = [([{"k": s}], f"k: {s}\n")]
        if len(s) <= 122:  # longer keys never reach it (complex keys, see the guard)
            cases.append(([{s: 1}], f"{s}: 1\n"))
        for docs, line in cases:
            assert manifest_yaml(docs, emitter="python") == line, s
            assert manifest_yaml(docs, emitter="c") == line, s
    assert vouched > 300, vouched
