"""Regular expressions compiled on first use, not at import time (issue 32).

Python compiles a pattern in Python code (``re._parser``, ``re._compiler``): ~20-100 us
each, and ``validate`` imported about forty at start-up, most of which a valid recipe never
uses. :func:`lazy` gives an object that reads like the compiled pattern (``.match``,
``.fullmatch``, ``.search``, ``.sub``, ``.findall``, ``.pattern`` ...) and compiles it the
first time one of those is asked for; from then on they are the compiled pattern's own bound
methods, kept on the object (no lookup through this module).

It is not an :class:`re.Pattern`: pass ``.compiled()`` (or the pattern text) where a real one
is needed, e.g. to :func:`re.match` or ``isinstance``.
"""

from __future__ import annotations

import re
from typing import Any

_FORWARDED = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer",
              "scanner", "pattern", "flags", "groups", "groupindex")


class LazyPattern:
    """``re.compile(pattern, flags)`` on first use (see the module)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if not yet)."""
        found: re.Pattern[str] | None = self.__dict__.get("_compiled")
        if found is None:
            found = re.compile(*self._source)
            self.__dict__.update({name: getattr(found, name) for name in _FORWARDED},
                                 _compiled=found)
        return found

    def __getattr__(self, name: str) -> Any:  # only for names not yet on the object
        if name.startswith("__") or name not in _FORWARDED:
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:  # as compiled patterns: by text and flags
        if isinstance(other, LazyPattern):
            return self._source == other._source
        if isinstance(other, re.Pattern):
            return self.compiled() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.compiled())

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r})"


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern`` compiled with ``flags`` when first used (typed as the compiled pattern it
    stands for; see the module)."""
    return LazyPattern(pattern, flags)  # type: ignore[return-value]
