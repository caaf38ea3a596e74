"""A random place in a parsed recipe, drawn by Hypothesis: the walk the validator property
tests (tests/unit/test_validator_equivalence.py, test_validator_fastpath.py) mutate at."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def random_place(data: st.DataObject, doc: Any) -> tuple[Any, list[Any], Any]:
    """``(node, path, parent)``: a node reached from ``doc`` by drawn keys/indices (``doc``
    itself when the walk stops at once, ``path`` then empty), and the container holding it
    (``doc`` for the root)."""
    node, path = doc, []
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(list(node) if isinstance(node, dict)
                                        else list(range(len(node)))))
        path.append(key)
        node = node[key]
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    return node, path, parent
