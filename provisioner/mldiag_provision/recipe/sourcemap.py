"""Field paths and their positions in the user's YAML file.

A path is a tuple of mapping keys (``str``) and list indexes (``int``), e.g.
``("spec", "slices", 0, "topology")``; :func:`format_path` shows it as
``spec.slices[0].topology``. :class:`SourceMap` maps each path to the 1-based
``(line, column)`` where the field starts, so that every problem points at the user's line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

Path = tuple[str | int, ...]


def format_path(path: Iterable[str | int]) -> str:
    """``("spec", "slices", 0, "topology")`` -> ``"spec.slices[0].topology"``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class SourceMap:
    """Positions of fields in one YAML document.

    ``keys`` holds where a mapping key starts (what a person looks for), ``values``
    where the value starts. Both are 1-based ``(line, column)``.
    """

    file: str
    lines: list[str] = field(default_factory=list)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    # plain (unquoted) scalars read here as strings that a YAML 1.1 reader such as
    # Kubernetes' reads as another type: path -> that type (mldiag_provision.yaml11)
    confusables: dict[Path, str] = field(default_factory=dict)

    def locate(self, path: Path, *, prefer_value: bool = False) -> tuple[int, int]:
        """Position of ``path``, or of its nearest existing ancestor; ``(0, 0)`` if none.

        A missing field (e.g. a required key the user left out) points at its parent.
        """
        first, second = (self.values, self.keys) if prefer_value else (self.keys, self.values)
        if path in first:
            return first[path]
        if path in second:
            return second[path]
        # a missing field: point at the key of its nearest existing ancestor ("spec:")
        for cut in range(len(path) - 1, -1, -1):
            prefix = path[:cut]
            if prefix in self.keys:
                return self.keys[prefix]
            if prefix in self.values:
                return self.values[prefix]
        return (0, 0)

    def source_line(self, line: int) -> str | None:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return None
