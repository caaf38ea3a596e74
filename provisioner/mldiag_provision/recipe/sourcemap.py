"""Field paths and their positions in the user's YAML file.

A path is a tuple of mapping keys (``str``) and list indexes (``int``), e.g.
``("spec", "slices", 0, "topology")``; :func:`format_path` shows it as
``spec.slices[0].topology``. :class:`SourceMap` maps each path to the 1-based
``(line, column)`` where the field starts, so that every problem points at the user's line.

Positions are found lazily when the loader can (issue 16): a document read without a problem
keeps its YAML node tree, and :meth:`SourceMap.locate` walks it for the one path a problem
names; the whole tables (``keys``, ``values``, ``confusables``) are built only when something
reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

Path = tuple[str | int, ...]
Position = tuple[int, int]


def format_path(path: Iterable[str | int]) -> str:
    """``("spec", "slices", 0, "topology")`` -> ``"spec.slices[0].topology"``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class LazyPositions(Protocol):
    """Where positions come from when they were not tabled while loading (the loader's node
    tree): :meth:`find` answers one path, :meth:`tables` builds every table at once."""

    def find(self, path: Path) -> tuple[Position | None, Position | None]:
        """(key position, value position) of ``path``; (None, None) when it does not exist
        (the key position is None for the document itself, which has no key)."""
        ...

    def tables(self) -> tuple[dict[Path, Position], dict[Path, Position], dict[Path, str]]:
        """The ``keys``, ``values`` and ``confusables`` tables of the whole document."""
        ...

    def shift_lines(self, offset: int) -> None:
        """Report every line ``offset`` lines further down."""
        ...

    @property
    def confusable(self) -> bool:
        """False when the ``confusables`` table :meth:`tables` builds is certainly empty."""
        ...


class SourceMap:
    """Positions of fields in one YAML document.

    ``keys`` holds where a mapping key starts (what a person looks for), ``values``
    where the value starts. Both are 1-based ``(line, column)``. ``confusables``: plain
    (unquoted) scalars read here as strings that a YAML 1.1 reader such as Kubernetes' reads
    as another type: path -> that type (:mod:`mldiag_provision.yaml11`).

    Built either with the tables, or with ``lazy`` (:class:`LazyPositions`), in which case
    :meth:`locate` and :meth:`has_key` ask it path by path and the tables are built from it
    on first access.
    """

    __slots__ = ("_confusables", "_keys", "_lazy", "_values", "file", "lines")

    def __init__(self, file: str, lines: Sequence[str] | None = None, *,
                 keys: dict[Path, Position] | None = None,
                 values: dict[Path, Position] | None = None,
                 confusables: dict[Path, str] | None = None,
                 lazy: LazyPositions | None = None) -> None:
        self.file = file
        self.lines: Sequence[str] = lines if lines is not None else []
        self._keys = keys if keys is not None else {}
        self._values = values if values is not None else {}
        self._confusables = confusables if confusables is not None else {}
        self._lazy = lazy

    @property
    def lazy(self) -> LazyPositions | None:
        """Where positions come from until the tables are built; None once they are."""
        return self._lazy

    def _tabled(self) -> None:
        if self._lazy is not None:
            self._keys, self._values, self._confusables = self._lazy.tables()
            self._lazy = None

    @property
    def keys(self) -> dict[Path, Position]:
        self._tabled()
        return self._keys

    @keys.setter
    def keys(self, table: dict[Path, Position]) -> None:
        self._tabled()
        self._keys = table

    @property
    def values(self) -> dict[Path, Position]:
        self._tabled()
        return self._values

    @values.setter
    def values(self, table: dict[Path, Position]) -> None:
        self._tabled()
        self._values = table

    @property
    def confusables(self) -> dict[Path, str]:
        self._tabled()
        return self._confusables

    def may_have_confusables(self) -> bool:
        """Whether the ``confusables`` table may hold an entry; False is certain and, unlike
        reading the table, builds no position table (issue 16)."""
        if self._lazy is not None:
            return self._lazy.confusable
        return bool(self._confusables)

    def shift_lines(self, offset: int) -> None:
        """Move every position ``offset`` lines down (a document parsed from a later part of
        its file)."""
        if self._lazy is not None:
            self._lazy.shift_lines(offset)
            return
        self._keys = {k: (line + offset, col) for k, (line, col) in self._keys.items()}
        self._values = {k: (line + offset, col) for k, (line, col) in self._values.items()}

    def has_key(self, path: Path) -> bool:
        """Whether the document writes the mapping key or list item at ``path`` (a default
        filled in later is not written)."""
        if self._lazy is not None:
            return self._lazy.find(path)[0] is not None
        return path in self._keys

    def _exact(self, path: Path) -> tuple[Position | None, Position | None]:
        if self._lazy is not None:
            return self._lazy.find(path)
        return self._keys.get(path), self._values.get(path)

    def locate(self, path: Path, *, prefer_value: bool = False) -> Position:
        """Position of ``path``, or of its nearest existing ancestor; ``(0, 0)`` if none.

        A missing field (e.g. a required key the user left out) points at its parent.
        """
        key, value = self._exact(tuple(path))
        first, second = (value, key) if prefer_value else (key, value)
        if first is not None:
            return first
        if second is not None:
            return second
        # a missing field: point at the key of its nearest existing ancestor ("spec:")
        for cut in range(len(path) - 1, -1, -1):
            key, value = self._exact(tuple(path[:cut]))
            if key is not None:
                return key
            if value is not None:
                return value
        return (0, 0)

    def source_line(self, line: int) -> str | None:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return None
