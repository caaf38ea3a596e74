"""The engine units' names, and the module of each, known without importing any engine.

``validate`` needs only the names (the ``engine`` rule: is ``spec.engine.name`` an engine of
this version?); importing the units for them cost ~30 ms of every check's start (the engine
modules, with ``subprocess``, ``hashlib``, ``tempfile``). So the names are found on disk, not
by import and not in a hand-kept table: an engine unit is a module ``engines/<name>.py`` (a
``-`` of the name written ``_``) with a top-level line ``UNIT = EngineUnit(``; the other modules
of ``engines/`` (helpers such as ``provider_pool``) have none. Adding an engine is adding its
module (docs/development/add-engine.md); nothing here changes.

:func:`mldiag_provision.engines.units` imports the modules found here and checks that each
defines the unit of that name; ``tests/unit/test_registries.py`` checks that the modules that
define a ``UNIT`` are exactly these.
"""

from __future__ import annotations

import os

# where the units live (this file's sibling package), and the line that makes a module one
_ENGINES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "engines")
_UNIT_LINE = b"\nUNIT = EngineUnit("


def discover(directory: str = _ENGINES_DIR) -> dict[str, str]:
    """Engine name -> the module defining its ``UNIT``, for every module of ``directory``
    (``engines/``) whose source has a top-level ``UNIT = EngineUnit(`` line; names sorted.
    Reads the modules' bytes (~110 KB, one substring search each: 0.7 ms at load 5 on the
    project's 2-core machine), imports nothing.

    Raises:
      OSError: ``directory`` cannot be listed or a module read (a broken installation).
    """
    found: dict[str, str] = {}
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(".py") or entry.startswith("_"):
            continue
        with open(os.path.join(directory, entry), "rb") as f:
            if _UNIT_LINE in f.read():
                stem = entry[:-3]
                found[stem.replace("_", "-")] = f"mldiag_provision.engines.{stem}"
    return found


# engine name (the recipe's ``spec.engine.name``) -> the module defining its ``UNIT``
MODULES: dict[str, str] = discover()


def names() -> tuple[str, ...]:
    """The registered engine names, sorted."""
    return tuple(sorted(MODULES))
