"""GKE version strings and how they compare.

GKE versions look like ``1.35.0-gke.3065000``: Kubernetes ``major.minor.patch`` plus a GKE
build number. A recipe may also give a prefix (``1.35`` or ``1.35.0``), which GKE resolves to
some release of that line, so comparing a prefix with a full minimum can be undecidable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mldiag_provision.lazyre import lazy

_VERSION = lazy(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?$", re.ASCII)


@dataclass(frozen=True, order=True)
class GkeVersion:
    """A parsed version; missing parts are ``None`` (a prefix such as ``1.35``)."""

    major: int
    minor: int
    patch: int | None = None
    build: int | None = None

    @classmethod
    def parse(cls, text: str) -> GkeVersion | None:
        """``"1.35.0-gke.3065000"`` -> GkeVersion; ``None`` when the text is not a version."""
        m = _VERSION.match(text.strip()) if isinstance(text, str) else None
        if not m:
            return None
        major, minor, patch, build = m.groups()
        if build is not None and patch is None:
            return None
        try:
            return cls(int(major), int(minor), None if patch is None else int(patch),
                       None if build is None else int(build))
        except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
            return None

    def __str__(self) -> str:
        out = f"{self.major}.{self.minor}"
        if self.patch is not None:
            out += f".{self.patch}"
        if self.build is not None:
            out += f"-gke.{self.build}"
        return out


def at_least(version: GkeVersion, minimum: GkeVersion) -> bool | None:
    """Whether every GKE release matching ``version`` is >= ``minimum``.

    Returns ``True`` or ``False`` when decidable, ``None`` when ``version`` is a prefix that
    covers releases on both sides of ``minimum`` (e.g. ``1.35`` against ``1.35.0-gke.3065000``).
    """
    mine = (version.major, version.minor, version.patch, version.build)
    theirs = (minimum.major, minimum.minor, minimum.patch or 0, minimum.build or 0)
    for a, b in zip(mine, theirs, strict=True):
        if a is None:
            # every release of this prefix is above the minimum only if the minimum is the
            # lowest release of the prefix (all remaining parts zero)
            rest = theirs[mine.index(None):]
            return True if all(x == 0 for x in rest) else None
        if a != b:
            return a > b
    return True


def max_version(*versions: GkeVersion) -> GkeVersion:
    """The highest of full versions (prefix parts count as 0)."""
    return max(versions, key=lambda v: (v.major, v.minor, v.patch or 0, v.build or 0))
