"""Compact positions of a manifest document: a few flat arrays instead of its YAML node tree.

The loader keeps each quickly built document's PyYAML node tree so that a position is looked
up only when a problem needs it (:class:`mldiag_provision.recipe.loader._Tree`). A node and
its two marks cost ~500 bytes; for 1,000 manifests the trees were ~26 MiB, the largest part of
lint's peak memory (issue 32 item 4). Lint holds every document until its rules have run (a
Job's Service may be in another file), so :func:`compact` turns each tree, right after its
file is read, into :class:`Positions`: per node, in document order, the line and column of
its key and of its value, the size of its subtree and its key (~30 bytes a node). The node
tree is then freed. The loader records these lists in the same pass that builds the data
(:class:`_Recorder`, a subclass of its ``_Quick``; :func:`located`); :func:`compact` makes
them from a kept tree (a second walk over every node, ~5 % of lint's instructions on 1,000
manifests, so lint does not use it; tests compare the two).

:class:`Positions` answers exactly what the tree answers (``find``, ``tables``,
``shift_lines``, ``confusable``; tests/lint/test_positions.py compares them on the lint
corpus). :func:`compact` declines (returns ``None``, the tree stays) for a document that
had merge keys (``<<``), whose pairs are not in data order, or a plain scalar that YAML 1.1
reads as another type (its ``confusables`` table needs the nodes' styles); the caller
declines for a text with anchors, where one node may sit under several paths.
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

import yaml

from mldiag_provision.recipe.loader import (
    _FLATTENED,
    _STR,
    MAX_NODES,
    _NeedsPaths,
    _Quick,
    _ScalarNode,
)
from mldiag_provision.recipe.sourcemap import Path, Position
from mldiag_provision.yaml11 import NUMERIC_START, WORDS

_MAPPING = yaml.MappingNode
_SEQUENCE = yaml.SequenceNode


class Positions:
    """Positions of one document's nodes in document (pre-)order
    (:class:`~mldiag_provision.recipe.sourcemap.LazyPositions`).

    Node ``i`` has its key's line and column at ``where[4i]``, ``where[4i + 1]`` (a list
    item's are its own; the root's are 0, it has no key), its value's at ``where[4i + 2]``,
    ``where[4i + 3]`` (0-based, as PyYAML's marks), ``size[i]`` nodes in its subtree (itself
    included) and ``key[i]`` its mapping key (``None`` for a list item and the root). A node
    with a subtree is a list when its first child has no key, else a mapping; a node of size
    1 (a scalar, an empty mapping or list) has no child a path can reach. Lines are reported
    ``offset`` further down (:meth:`shift_lines`)."""

    __slots__ = ("key", "offset", "size", "where")

    confusable = False  # neither the loader nor compact() keeps a confusable scalar's

    def __init__(self, where: array[int], size: array[int], key: tuple[str | None, ...],
                 offset: int) -> None:
        self.where = where
        self.size = size
        self.key = key
        self.offset = offset

    def shift_lines(self, offset: int) -> None:
        self.offset += offset

    def _node(self, path: Path) -> int:
        """The index of the node at ``path``, or -1 when there is none."""
        i = 0
        size, key = self.size, self.key
        for part in path:
            end = i + size[i]
            child = i + 1
            if child >= end:  # a scalar or an empty collection
                return -1
            if key[child] is not None:  # a mapping
                if not isinstance(part, str):
                    return -1
                while child < end and key[child] != part:
                    child += size[child]
                if child >= end:
                    return -1
                i = child
            else:
                if not isinstance(part, int) or part < 0:
                    return -1
                for _ in range(part):
                    child += size[child]
                    if child >= end:
                        return -1
                i = child
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
            children: list[tuple[int, Path]] = []
            child, end, n = i + 1, i + self.size[i], 0
            while child < end:
                name = self.key[child]
                children.append((child, (*path, name if name is not None else n)))
                child += self.size[child]
                n += 1
            stack.extend(reversed(children))
        return keys, values, {}


def _ints(values: list[int]) -> array[int]:
    """``array("i", values)``, packed by :mod:`struct` (array's own conversion parses a
    format per item, several times slower). 32-bit: a manifest is at most 64 MiB
    (lint.loading.MAX_BYTES), so are its lines, columns and node counts."""
    return array("i", struct.pack(f"{len(values)}i", *values))


_ONE = array("i", [1])


def located(loader: Any, decimal: bool, node: Any) -> tuple[object, _Quick, Positions | None]:
    """The data of the document at ``node``, built by the loader's quick pass while it
    records every node's position (:class:`_Recorder`); the builder; and the document's
    :class:`Positions`, or ``None`` where the node tree must answer. For
    ``recipe.loader.load_documents(positions=located)``: no second walk over the node tree
    (what :func:`compact` does)."""
    recorder = _Recorder(loader, decimal)
    data = recorder.located(node)
    return data, recorder, recorder.positions()


def compact(tree: Any) -> Positions | None:
    """The :class:`Positions` of a loader ``_Tree`` (its ``root`` node, ``keys``: the keys of
    a mapping as read, where the quick pass kept them, else its key nodes' text; ``own``
    merge bookkeeping, ``confusable`` flag and line ``offset``), or ``None``
    where they could differ from the tree's answers (see the module docstring). The caller
    must not pass the tree of a text with anchors (``&``). Lint does not use it (the loader
    records the same lists while it builds a document, :func:`located`); the tests compare
    the two."""
    if tree.own or tree.confusable:
        return None
    walk = _Walk(tree.keys)
    walk.node(tree.root, 0, 0, None)
    return Positions(_ints(walk.where), _ints(walk.size), tuple(walk.key), tree.offset)


class _Walk:
    """Lists the nodes of a tree in document order for :func:`compact` (a method, not a
    closure that calls itself: that cycle would keep the lists until the next collection,
    and lint pauses the collector while it loads)."""

    __slots__ = ("key", "keys_of", "size", "where")

    def __init__(self, keys_of: dict[int, list[str]]) -> None:
        self.keys_of = keys_of
        self.where: list[int] = []
        self.size: list[int] = []
        self.key: list[str | None] = []

    def node(self, node: Any, kline: int, kcol: int, name: str | None) -> None:
        where, size, key = self.where, self.size, self.key
        put = where.extend
        i = len(size)
        mark = node.start_mark
        put((kline, kcol, mark.line, mark.column))
        size.append(1)
        key.append(name)
        cls = node.__class__
        if cls is _MAPPING:
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
        elif cls is _SEQUENCE:
            for item in node.value:
                m = item.start_mark
                if item.__class__ is _MAPPING or item.__class__ is _SEQUENCE:
                    self.node(item, m.line, m.column, None)
                else:
                    put((m.line, m.column, m.line, m.column))
                    size.append(1)
                    key.append(None)
        size[i] = len(size) - i


class _Recorder(_Quick):
    """The loader's quick builder (``recipe.loader._Quick``) that also records, in the same
    pass, every node's position in document (pre-)order, for lint, which keeps every
    document (issue 32): a few flat lists instead of the node tree, which is then freed
    without a second walk over it.

    Node ``i`` has its key's line and column at ``where[4i]``, ``where[4i + 1]`` (a list
    item's are its own; the root's are 0), its value's at ``where[4i + 2]``,
    ``where[4i + 3]`` (0-based, PyYAML's marks) and ``key[i]`` its mapping key as read
    (``None`` for a list item and the root); ``spans`` holds ``index, size`` (nodes in its
    subtree, itself included) of each mapping and list, one after the other (a node not
    there has size 1). Only for a text without anchors (no node under two paths); the lists
    are not used (:meth:`flat` is ``None``) for a document with merge keys or a confusable
    plain scalar, whose positions stay in the loader's node tree (``_Tree``)."""

    def __init__(self, loader: yaml.SafeLoader, decimal: bool = False) -> None:
        super().__init__(loader, decimal, aliases=False)
        self.where: list[int] = []
        self.spans: list[int] = []
        self.key: list[str | None] = []

    def located(self, node: yaml.Node) -> object:
        """The document's data, recording the root and (through the loops) every node."""
        mark = node.start_mark
        self.where += (0, 0, mark.line, mark.column)
        self.key.append(None)
        data = self.build(node)
        if node.__class__ is not _ScalarNode:
            self.spans += (0, len(self.key))
        return data

    def positions(self) -> Positions | None:
        """The recorded :class:`Positions`, or ``None`` where they could differ from the
        tree's answers (merge keys, a confusable scalar)."""
        if self.own or self.confusable:
            return None
        size = _ONE * len(self.key)
        spans = self.spans
        for j in range(0, len(spans), 2):
            size[spans[j]] = spans[j + 1]
        return Positions(_ints(self.where), size, tuple(self.key), 0)

    def _sequence(self, node: yaml.Node) -> list[object]:
        out: list[object] = []
        append = out.append
        where, names = self.where, self.key
        scalars = 0
        for item in node.value:
            mark = item.start_mark
            line, column = mark.line, mark.column
            where += (line, column, line, column)
            if item.__class__ is _ScalarNode:  # build(item), inline
                names.append(None)
                scalars += 1
                if item.tag == _STR:
                    value = item.value
                    if not item.style and (value in WORDS or value[0] in NUMERIC_START):
                        self._plain(value)
                    append(value)
                else:
                    append(self._scalar(item))
            else:
                i = len(names)
                names.append(None)
                append(self.build(item))
                self.spans += (i, len(names) - i)
        self.count += scalars
        if self.count > MAX_NODES:
            raise _NeedsPaths
        return out

    def _mapping(self, node: yaml.MappingNode) -> dict[str, object]:
        for k, _ in node.value:
            if k.tag in _FLATTENED:  # flat() is None then: the tree answers
                return super()._mapping(node)
        out: dict[str, object] = {}
        read = False  # a key YAML read as another type than a string (1, true, ...)
        where, names = self.where, self.key
        scalars = 0
        for key_node, value_node in node.value:
            if key_node.tag == _STR and key_node.__class__ is _ScalarNode:
                key = key_node.value
            else:
                key = self._key(key_node)
                read = True
            if key in out:
                raise _NeedsPaths  # a duplicate key
            km, vm = key_node.start_mark, value_node.start_mark
            where += (km.line, km.column, vm.line, vm.column)
            if value_node.__class__ is _ScalarNode:  # build(value_node), inline
                names.append(key)
                scalars += 1
                if value_node.tag == _STR:
                    value = value_node.value
                    if not value_node.style and (value in WORDS or value[0] in NUMERIC_START):
                        self._plain(value)
                    out[key] = value
                else:
                    out[key] = self._scalar(value_node)
            else:
                i = len(names)
                names.append(key)
                out[key] = self.build(value_node)
                self.spans += (i, len(names) - i)
        self.count += scalars
        if self.count > MAX_NODES:
            raise _NeedsPaths
        if read:
            self.keys[id(node)] = list(out)
        return out
