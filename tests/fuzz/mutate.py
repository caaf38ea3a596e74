"""Structure-aware mutation of real manifests and recipes, for the fuzz suite (tests/fuzz).

A seed (a parsed recipe or Kubernetes object) is changed *by type*, not by bytes: a node
picked anywhere in the tree is replaced by a value of another shape (``None``, a number, a
boolean, a list, a mapping, a string of a tricky kind), a key is dropped or added, a list is
emptied or repeated, a string is replaced by a YAML-1.1-confusable scalar or one with control
characters. The mutated tree is dumped back to YAML, so the entry point under test parses it
the way it parses a user's file.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

REPO_ROOT = Path(__file__).resolve().parents[2]

# Strings that change type or shape on the way through a YAML 1.1 reader, or that are awkward
# for templates and shells (quotes, newlines, NEL, ${...}, Jinja and HCL interpolation).
TRICKY_STRINGS = [
    "", " ", "y", "n", "Y", "N", "yes", "no", "on", "off", "true", "False", "~", "null", "NULL",
    "08", "0o17", "0x1F", "0b101", "1e3", "+.5", "-.5", ".inf", "-.Inf", ".nan", "1_000",
    "12:30", "2001-12-14", "=", "<<", "-", "?", ":", "#", "!tag", "&a", "*a", "|", ">", "%",
    "@", "`", "a\nb", "a\x85b", "a\u2028b", "a\u2029b", "a\tb", "\x00", "\x7f", "\ufeff",
    '"', "'", "\\", "${var.x}", "%{ if true }", "{{ x }}", "{% x %}", "$(rm -rf /)", "a'b\"c",
    "x" * 300, "é", "🙂", "-1", "0", "1", "4294967296", "1.5", "v5litepod-16", "2x2x4",
]


def scalars() -> st.SearchStrategy[Any]:
    """Scalars of every YAML shape, biased towards the tricky ones."""
    return st.one_of(
        st.sampled_from(TRICKY_STRINGS),
        st.none(), st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    )


def shapes() -> st.SearchStrategy[Any]:
    """A value of any shape: scalar, small list, small mapping."""
    return st.one_of(
        scalars(),
        st.lists(scalars(), max_size=3),
        st.dictionaries(st.sampled_from(["a", "name", "value", "y", "1"]), scalars(),
                        max_size=3),
    )


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _set(tree: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = tree
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return tree


def _get(tree: Any, path: tuple) -> Any:
    for part in path:
        tree = tree[part]
    return tree


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any], max_mutations: int = 3,
            on_seed: Callable[[int], None] | None = None) -> Any:
    """A deep copy of one seed with 1..max_mutations typed mutations applied;
    ``on_seed(index)`` is told which seed of ``seeds`` it started from."""
    index = draw(st.integers(0, len(seeds) - 1))
    if on_seed is not None:
        on_seed(index)
    tree = copy.deepcopy(seeds[index])
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = _paths(tree)
        path = draw(st.sampled_from(paths))
        node = _get(tree, path)
        op = draw(st.sampled_from(["replace", "replace", "tricky", "drop", "add", "empty",
                                   "repeat"]))
        if op == "replace":
            tree = _set(tree, path, draw(shapes()))
        elif op == "tricky":
            tree = _set(tree, path, draw(st.sampled_from(TRICKY_STRINGS)))
        elif op == "drop" and path:
            parent = _get(tree, path[:-1])
            if isinstance(parent, dict):
                del parent[path[-1]]
            elif isinstance(parent, list):
                parent.pop(path[-1])
        elif op == "add" and isinstance(node, dict):
            node[draw(st.sampled_from(["extra", "name", "value", "spec", "y"]))] = draw(shapes())
        elif op == "empty" and isinstance(node, (dict, list)):
            node.clear()
        elif op == "repeat" and isinstance(node, list) and node:
            node.extend(copy.deepcopy(node[:2]))
    return tree


def dump(tree: Any) -> str:
    """The mutated tree as YAML text (round-trips through PyYAML's safe loader)."""
    return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True)


def recipe_seeds() -> list[Any]:
    """Every bundled example recipe, parsed."""
    return [yaml.safe_load(p.read_text(encoding="utf-8"))
            for p in sorted((REPO_ROOT / "recipes").glob("*.yaml"))]


def manifest_seeds() -> list[Any]:
    """Every object of the lint seed manifests and of the golden rendered workloads."""
    out: list[Any] = []
    files = sorted((REPO_ROOT / "tests" / "lint" / "data").glob("*.yaml"))
    files += sorted((REPO_ROOT / "tests" / "golden" / "stacks").glob("*/k8s/workloads/*.yaml"))
    for f in files:
        out += [d for d in yaml.safe_load_all(f.read_text(encoding="utf-8")) if d]
    return out


def mutate_random(tree: Any, rng: Any, mutations: int = 2) -> Any:
    """A copy of ``tree`` with typed mutations chosen by ``rng`` (a ``random.Random``): for
    places where a Hypothesis strategy cannot be drawn (inside a running example)."""
    tree = copy.deepcopy(tree)
    pool: list[Any] = [None, True, 0, -1, 2**40, 1.5, "", "x", [], {}, [None], {"a": None},
                       *TRICKY_STRINGS[:20]]
    for _ in range(mutations):
        path = rng.choice(_paths(tree))
        tree = _set(tree, path, copy.deepcopy(rng.choice(pool)))
    return tree
