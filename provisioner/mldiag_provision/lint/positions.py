"""Compact positions of a manifest document: a few flat arrays instead of its YAML node tree.

The loader keeps each quickly built document's PyYAML node tree so that a position is looked
up only when a problem needs it (:class:`mldiag_provision.recipe.loader._Tree`). A node and
its two marks cost ~500 bytes; for 1,000 manifests the trees were ~26 MiB, the largest part of
lint's peak memory (issue 32 item 4). Lint holds every document until its rules have run (a
Job's Service may be in another file), so :func:`compact` turns each tree, right after its
file is read, into :class:`Positions`: per node, in document order, the line and column of
its key and of its value, the size of its subtree and its key (~30 bytes a node). The node
tree is then freed.

:class:`Positions` answers exactly what the tree answers (``find``, ``tables``,
``shift_lines``, ``confusable``; tests/lint/test_positions.py compares them on the lint
corpus). :func:`compact` declines (returns ``None``, the tree stays) for a document that
had merge keys (``<<``), whose pairs are not in data order, or a plain scalar that YAML 1.1
reads as another type (its ``confusables`` table needs the nodes' styles); the caller
declines for a text with anchors, where one node may sit under several paths.
"""

from __future__ import annotations

from array import array
from typing import Any

import yaml

from mldiag_provision.recipe.sourcemap import Path, Position

_MAPPING = yaml.MappingNode
_SEQUENCE = yaml.SequenceNode


class Positions:
    """Positions of one document's nodes in document (pre-)order
    (:class:`~mldiag_provision.recipe.sourcemap.LazyPositions`).

    Node ``i`` has its key's line and column at ``where[4i]``, ``where[4i + 1]`` (a list
    item's are its own; the root's are 0, it has no key), its value's at ``where[4i + 2]``,
    ``where[4i + 3]`` (0-based, as PyYAML's marks), ``size[i]`` nodes in its subtree (itself
    included), ``key[i]`` its mapping key (``None`` for a list item and the root) and
    ``kind[i]``: ``"m"`` a mapping, ``"s"`` a list, ``" "`` a scalar. Lines are reported
    ``offset`` further down (:meth:`shift_lines`)."""

    __slots__ = ("key", "kind", "offset", "size", "where")

    confusable = False  # compact() declines a document that may have a confusable scalar

    def __init__(self, where: array[int], size: array[int], key: tuple[str | None, ...],
                 kind: str, offset: int) -> None:
        self.where = where
        self.size = size
        self.key = key
        self.kind = kind
        self.offset = offset

    def shift_lines(self, offset: int) -> None:
        self.offset += offset

    def _node(self, path: Path) -> int:
        """The index of the node at ``path``, or -1 when there is none."""
        i = 0
        size, kind, key = self.size, self.kind, self.key
        for part in path:
            k = kind[i]
            if k == "m":
                if not isinstance(part, str):
                    return -1
                child, end = i + 1, i + size[i]
                while child < end and key[child] != part:
                    child += size[child]
                if child >= end:
                    return -1
                i = child
            elif k == "s":
                if not isinstance(part, int) or part < 0:
                    return -1
                child, end = i + 1, i + size[i]
                for _ in range(part):
                    if child >= end:
                        return -1
                    child += size[child]
                if child >= end:
                    return -1
                i = child
            else:
                return -1
        return i

    def find(self, path: Path) -> tuple[Position | None, Position | None]:
        i = self._node(path)
        if i < 0:
            return None, None
        w, line = self.where, self.offset + 1
        value = (w[4 * i + 2] + line, w[4 * i + 3] + 1)
        if not path:
            return None, value
        return (w[4 * i] + line, w[4 * i + 1] + 1), value

    def tables(self) -> tuple[dict[Path, Position], dict[Path, Position], dict[Path, str]]:
        keys: dict[Path, Position] = {}
        values: dict[Path, Position] = {}
        w, line = self.where, self.offset + 1
        # (index of a node, its path), visited in document order
        stack: list[tuple[int, Path]] = [(0, ())]
        while stack:
            i, path = stack.pop()
            values.setdefault(path, (w[4 * i + 2] + line, w[4 * i + 3] + 1))
            if path:
                keys.setdefault(path, (w[4 * i] + line, w[4 * i + 1] + 1))
            k = self.kind[i]
            if k == " ":
                continue
            children: list[tuple[int, Path]] = []
            child, end, n = i + 1, i + self.size[i], 0
            while child < end:
                step = self.key[child] if k == "m" else n
                children.append((child, (*path, step)))  # type: ignore[arg-type]
                child += self.size[child]
                n += 1
            stack.extend(reversed(children))
        return keys, values, {}


def compact(tree: Any) -> Positions | None:
    """The :class:`Positions` of a loader ``_Tree`` (its ``root`` node, ``keys``: the keys of
    a mapping as read, where the quick pass kept them, else its key nodes' text; ``own``
    merge bookkeeping, ``confusable`` flag and line ``offset``), or ``None``
    where they could differ from the tree's answers (see the module docstring). The caller
    must not pass the tree of a text with anchors (``&``)."""
    if tree.own or tree.confusable:
        return None
    walk = _Walk(tree.keys)
    walk.node(tree.root, 0, 0, None)
    # 32-bit: a manifest is at most 64 MiB (lint.loading.MAX_BYTES), so are its lines and
    # columns
    return Positions(array("i", walk.where), array("i", walk.size), tuple(walk.key),
                     "".join(walk.kind), tree.offset)


class _Walk:
    """Lists the nodes of a tree in document order for :func:`compact` (a method, not a
    closure that calls itself: that cycle would keep the lists until the next collection,
    and lint pauses the collector while it loads)."""

    __slots__ = ("key", "keys_of", "kind", "size", "where")

    def __init__(self, keys_of: dict[int, list[str]]) -> None:
        self.keys_of = keys_of
        self.where: list[int] = []
        self.size: list[int] = []
        self.key: list[str | None] = []
        self.kind: list[str] = []

    def node(self, node: Any, kline: int, kcol: int, name: str | None) -> None:
        where, size, key, kind = self.where, self.size, self.key, self.kind
        put = where.extend
        i = len(size)
        mark = node.start_mark
        put((kline, kcol, mark.line, mark.column))
        size.append(1)
        key.append(name)
        cls = node.__class__
        if cls is _MAPPING:
            kind.append("m")
            kept = self.keys_of.get(id(node))  # the loader keeps only keys that differ
            for j, (k, v) in enumerate(node.value):  # from their nodes' text (or a merge's)
                name_ = kept[j] if kept is not None else k.value
                km = k.start_mark
                if v.__class__ is _MAPPING or v.__class__ is _SEQUENCE:
                    self.node(v, km.line, km.column, name_)
                else:  # a scalar, inline
                    vm = v.start_mark
                    put((km.line, km.column, vm.line, vm.column))
                    size.append(1)
                    key.append(name_)
                    kind.append(" ")
        elif cls is _SEQUENCE:
            kind.append("s")
            for item in node.value:
                m = item.start_mark
                if item.__class__ is _MAPPING or item.__class__ is _SEQUENCE:
                    self.node(item, m.line, m.column, None)
                else:
                    put((m.line, m.column, m.line, m.column))
                    size.append(1)
                    key.append(None)
                    kind.append(" ")
        else:
            kind.append(" ")
        size[i] = len(size) - i
