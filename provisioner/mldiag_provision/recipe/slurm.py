"""How a recipe's ``spec.slurm`` reads once its defaults are applied.

One place for the defaults that preflight checks and plan/ renders alike: GPU slices that no
node set names become node sets of their own (id = slice name), node sets mount every
storage resource unless they list some, and without partitions every node set gets one.
Pure functions of the recipe; nothing here reads the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mldiag_provision.lazyre import lazy

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import (
        Capacity,
        Recipe,
        SlurmBootDisk,
        SlurmPartition,
        SlurmSpec,
    )

_DURATION = lazy(r"^([1-9][0-9]*)([smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> int | None:
    """``"72h"`` -> 259200; None when ``text`` is not ``<n>{s,m,h,d}``."""
    m = _DURATION.match(text)
    return int(m.group(1)) * _UNIT[m.group(2)] if m else None


def slurm_spec(recipe: Recipe) -> SlurmSpec:
    """``spec.slurm`` (the model fills in its defaults when the recipe leaves it out)."""
    return recipe.spec.slurm


@dataclass(frozen=True)
class NodeSetView:
    """A node set as the cluster will have it.

    ``index`` is the position in ``spec.slurm.nodeSets`` (None for the implicit node set of
    a GPU slice); ``slice_index`` the position of its slice in ``spec.slices``.
    """

    id: str
    index: int | None
    slice_index: int | None
    machine_type: str | None
    capacity: Capacity
    static_node_count: int
    max_dynamic_node_count: int | None
    storage: tuple[str, ...]
    startup_script: str | None
    boot_disk: SlurmBootDisk | None

    @property
    def path(self) -> tuple[Any, ...]:
        """Recipe path to point problems at: the node set entry, or its slice."""
        if self.index is not None:
            return ("spec", "slurm", "nodeSets", self.index)
        return ("spec", "slices", self.slice_index)


def node_sets(recipe: Recipe) -> list[NodeSetView]:
    """Explicit node sets (recipe order), then one per GPU slice no node set names."""
    spec = slurm_spec(recipe)
    all_storage = tuple(s.id for s in spec.storage)
    by_name = {s.name: i for i, s in enumerate(recipe.spec.slices)}
    named: set[str] = set()
    out: list[NodeSetView] = []
    for i, ns in enumerate(spec.node_sets):
        si = by_name.get(ns.slice) if ns.slice is not None else None
        sl = recipe.spec.slices[si] if si is not None else None
        if ns.slice is not None:
            named.add(ns.slice)
        static = ns.static_node_count
        if static is None:
            static = (sl.nodes or 1) if sl is not None else 1
        out.append(NodeSetView(
            id=ns.id, index=i, slice_index=si,
            machine_type=sl.machine_type if sl is not None else ns.machine_type,
            capacity=sl.capacity if sl is not None else ns.capacity,
            static_node_count=static, max_dynamic_node_count=ns.max_dynamic_node_count,
            storage=tuple(ns.storage) if ns.storage is not None else all_storage,
            startup_script=ns.startup_script, boot_disk=ns.boot_disk))
    for si, sl in enumerate(recipe.spec.slices):
        if sl.gpu is None or sl.tpu is not None or sl.name in named:
            continue
        out.append(NodeSetView(
            id=sl.name, index=None, slice_index=si, machine_type=sl.machine_type,
            capacity=sl.capacity, static_node_count=sl.nodes or 1, max_dynamic_node_count=None,
            storage=all_storage, startup_script=None, boot_disk=None))
    return out


@dataclass(frozen=True)
class PartitionView:
    id: str
    index: int | None  # position in spec.slurm.partitions; None when generated
    node_sets: tuple[str, ...]


def partitions(recipe: Recipe, views: list[NodeSetView] | None = None) -> list[PartitionView]:
    """The recipe's partitions, or one per node set (same id) when it has none."""
    spec = slurm_spec(recipe)
    if spec.partitions:
        return [_partition(p, i) for i, p in enumerate(spec.partitions)]
    views = node_sets(recipe) if views is None else views
    return [PartitionView(id=v.id, index=None, node_sets=(v.id,)) for v in views]


def _partition(p: SlurmPartition, i: int) -> PartitionView:
    return PartitionView(id=p.id, index=i, node_sets=tuple(p.node_sets))


def default_partition(recipe: Recipe, parts: list[PartitionView],
                      views: list[NodeSetView]) -> str | None:
    """The recipe's default partition; for generated partitions (more than one) the first
    with a GPU node set. None when there is at most one partition and none is named (the API
    wants it only with more than one)."""
    spec = slurm_spec(recipe)
    if spec.default_partition is not None or len(parts) <= 1:
        return spec.default_partition
    if spec.partitions:
        return None  # preflight reports it
    gpu = {v.id for v in views if v.slice_index is not None}
    return next((p.id for p in parts if gpu.intersection(p.node_sets)), parts[0].id)
