"""The orchestrator units' names, known without importing the registry or any unit.

The recipe model needs only the names (``spec.orchestrator.type`` is one of them, and the JSON
Schema lists them in this order); importing :mod:`mldiag_provision.orchestrators` for them tied
the recipe layer to the registry, whose units name plan builders and catalog types. The registry
reads its order from here, and ``tests/unit/test_registries.py`` checks that the units it finds
are exactly these names.
"""

from __future__ import annotations

# spec.orchestrator.type values, in the order people read them (error messages and the schema
# list them so)
NAMES: tuple[str, ...] = ("gke-autopilot", "gke-standard", "slurm", "existing-kubernetes")


def names() -> tuple[str, ...]:
    """The registered orchestrator names, in reading order."""
    return NAMES
