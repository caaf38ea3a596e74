"""The orchestrator units' names, known without importing the registry or any unit.

The recipe model needs only the names (``spec.orchestrator.type`` is one of them, and the JSON
Schema lists them in this order); importing :mod:`mldiag_provision.orchestrators` for them tied
the recipe layer to the registry, whose units name plan builders and catalog types. So the names
are read from the file names of ``orchestrators/``: every public module there is a unit, and
its file name is the unit's name with ``-`` written ``_`` (``existing_kubernetes.py`` ->
``existing-kubernetes``). Adding an orchestrator is adding its module
(docs/development/add-orchestrator.md); nothing here changes. The registry sorts its units by
the same :data:`ORDER`, and ``tests/unit/test_registries.py`` checks that every module defines
the unit its file name says and that the registry's names are exactly these.
"""

from __future__ import annotations

import os

_UNITS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "orchestrators")

# The order people read the first units in (error messages and the schema list them so);
# units not named here follow, by name.
ORDER: tuple[str, ...] = ("gke-autopilot", "gke-standard", "slurm", "existing-kubernetes")


def discover(directory: str = _UNITS_DIR) -> tuple[str, ...]:
    """The unit names of ``directory`` (``orchestrators/``): each public module's file name
    with ``_`` -> ``-``, in :data:`ORDER` then by name. Lists the directory, imports nothing.

    Raises:
      OSError: ``directory`` cannot be listed (a broken installation).
    """
    found = {entry[:-3].replace("_", "-") for entry in os.listdir(directory)
             if entry.endswith(".py") and not entry.startswith("_")}
    rank = {name: i for i, name in enumerate(ORDER)}
    return tuple(sorted(found, key=lambda n: (rank.get(n, len(ORDER)), n)))


# spec.orchestrator.type values, in reading order
NAMES: tuple[str, ...] = discover()


def names() -> tuple[str, ...]:
    """The registered orchestrator names, in reading order."""
    return NAMES
