"""Where the bundled blueprints and modules are: in the wheel, or in a source checkout."""

from __future__ import annotations

import functools
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@functools.cache  # where the package is installed does not change while it runs
def data_root() -> Path:
    """Directory holding ``blueprints/`` and ``modules/``.

    A wheel ships them under ``mldiag_provision/_bundled`` (pyproject force-include); a
    source or editable install finds them at the repository root.
    """
    bundled = _PKG / "_bundled"
    if (bundled / "blueprints").is_dir():
        return bundled
    return _PKG.parents[1]
