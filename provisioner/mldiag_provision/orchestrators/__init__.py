"""Orchestrators as units: one module per orchestrator, found by the registry, each declaring
what it can do as :class:`Capability` values (the way SkyPilot's clouds declare features).

Code that needs to know what an orchestrator does asks the unit (``unit.has(Capability.X)``,
``unit.gke``, ``unit.plan``), never compares its name. A unit is a module in this
package that defines ``UNIT = Orchestrator(...)``; the registry imports every such module once,
on first use (:func:`units`). Adding an orchestrator is adding one module plus its blueprint
(``blueprints/<blueprint>/``): see docs/development/add-orchestrator.md.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache

from mldiag_provision.catalog.requirements import GkeMode
from mldiag_provision.orchestrator_names import ORDER


class Capability(enum.Enum):
    """What an orchestrator does; a unit lists the ones it has."""

    # Members are singletons compared by identity, so the identity hash agrees with ==;
    # Enum's own __hash__ is a Python function, and preflight asks ``has(capability)``
    # ~25 times per recipe (issue 16). Nothing iterates a set of capabilities.
    __hash__ = object.__hash__

    CREATES_CLUSTER = "creates-cluster"
    """The project stage creates a GKE cluster: GKE version gates and release channel apply,
    the cluster stage waits for it, ``get_credentials`` reaches it."""
    NODE_POOLS = "node-pools"
    """One accelerator node pool per slice (needs ``spec.zone``, a node service account; pods
    select their pool by the slice label, GPU pools need a machine type)."""
    AUTOPILOT_RULES = "autopilot-rules"
    """GKE Autopilot's admission rules apply (no hostNetwork pods, managed namespaces, only
    the accelerators Autopilot offers)."""
    NODES_ON_DEMAND = "nodes-on-demand"
    """Nodes appear when a workload asks for them (``verify`` does not count them)."""
    KUBERNETES_WORKLOADS = "kubernetes-workloads"
    """Workloads are Kubernetes Jobs/JobSets under ``k8s/workloads/``."""
    IN_CLUSTER_AGENTS = "in-cluster-agents"
    """The ``agents/`` stage: namespace label, KSA, agents strategy, workload add-ons."""
    EXISTING_CLUSTER = "existing-cluster"
    """The cluster exists already: ``minVersion`` is ignored, Workload Identity is optional."""
    MANAGED_SLURM = "managed-slurm"
    """A Cluster Director managed Slurm cluster from ``spec.slurm``; workloads are sbatch
    scripts, ML Diagnostics is the SDK on the nodes."""


@dataclass(frozen=True)
class Orchestrator:
    """One orchestrator unit.

    Attributes:
      name: the recipe's ``spec.orchestrator.type``.
      summary: one line for people (error messages, docs).
      capabilities: what it does (:class:`Capability`).
      blueprint: directory under ``blueprints/`` whose ``blueprint.yaml`` must list ``name``
        under ``orchestrators:`` (the engines it supports are that file's ``engines:``).
      plan: ``"module:function"`` that builds the
        :class:`~mldiag_provision.plan.types.StackPlan` from the shared project plan
        (:func:`mldiag_provision.plan.stack.build_plan` imports and calls it),
        called as ``function(unit, project, recipe, catalog)``
        (``mldiag_provision.plan.kubernetes:build``, ``mldiag_provision.plan.slurm:build``);
        imported on first use, so that reading the registry (preflight does) never
        imports the planners; the registry imports nothing of plan/.
      gke: the GKE mode whose version gates apply (``None``: no GKE cluster is created).
    """

    name: str
    summary: str
    capabilities: frozenset[Capability]
    blueprint: str
    plan: str
    gke: GkeMode | None = None

    def has(self, capability: Capability) -> bool:
        """Whether this orchestrator has ``capability``."""
        return capability in self.capabilities


class UnknownOrchestratorError(KeyError):
    """No unit has this name. ``str()`` is one line naming the known ones."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.known = known

    def __str__(self) -> str:
        return (f"orchestrator '{self.name}' is not registered; known: "
                + ", ".join(self.known))


@cache
def units() -> tuple[Orchestrator, ...]:
    """Every registered unit, in :data:`~mldiag_provision.orchestrator_names.ORDER` then by
    name (modules of this package that define ``UNIT``; the recipe model knows the same names
    from the file names, :mod:`mldiag_provision.orchestrator_names`).

    Raises:
      TypeError: a module's ``UNIT`` is not an :class:`Orchestrator` (a bug in that unit).
      ValueError: two units share a name.
    """
    found: dict[str, Orchestrator] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        unit = getattr(module, "UNIT", None)
        if unit is None:
            continue
        if not isinstance(unit, Orchestrator):
            raise TypeError(f"{module.__name__}.UNIT is not an Orchestrator")
        if unit.name in found:
            raise ValueError(f"two orchestrator units are named '{unit.name}'")
        found[unit.name] = unit
    rank = {n: i for i, n in enumerate(ORDER)}
    return tuple(sorted(found.values(), key=lambda u: (rank.get(u.name, len(ORDER)), u.name)))



def names() -> tuple[str, ...]:
    """The registered orchestrator names (see :func:`units` for the order)."""
    return tuple(u.name for u in units())


def find(name: str) -> Orchestrator | None:
    """The unit called ``name``, or None."""
    global _index
    all_units = units()
    if _index is None or _index[0] is not all_units:  # units() is cached; tests replace it
        _index = (all_units, {u.name: u for u in all_units})
    return _index[1].get(name)


# (the units() tuple, its units by name): find() builds the index once per tuple
_index: tuple[tuple[Orchestrator, ...], dict[str, Orchestrator]] | None = None


def get(name: str) -> Orchestrator:
    """The unit called ``name``.

    Raises:
      UnknownOrchestratorError: none is (the message lists the known names).
    """
    unit = find(name)
    if unit is None:
        raise UnknownOrchestratorError(name, names())
    return unit
