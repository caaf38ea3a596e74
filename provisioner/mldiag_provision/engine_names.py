"""The engine units' names, and the module of each, known without importing any engine.

``validate`` needs only the names (the ``engine`` rule: is ``spec.engine.name`` an engine of
this version?); importing the units for them cost ~30 ms of every check's start (the engine
modules, with ``subprocess``, ``hashlib``, ``tempfile``). :func:`mldiag_provision.engines.units`
imports the modules listed here and checks that each defines the unit of that name;
``tests/unit/test_registries.py`` checks that no module of the package defines a ``UNIT``
missing from this table.
"""

from __future__ import annotations

# engine name (the recipe's ``spec.engine.name``) -> the module defining its ``UNIT``
MODULES: dict[str, str] = {
    "pulumi": "mldiag_provision.engines.pulumi",
    "terraform": "mldiag_provision.engines.terraform",
}


def names() -> tuple[str, ...]:
    """The registered engine names, sorted."""
    return tuple(sorted(MODULES))
