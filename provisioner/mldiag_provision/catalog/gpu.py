"""The GPU catalog: typed views over ``catalog/data/gpu.yaml``.

Which GPU a name means (short id, alias, GKE ``cloud.google.com/gke-accelerator`` label, or
a machine type), which machine types carry it and how many GPUs each VM has. Facts and their
sources live in the YAML; this module only answers questions.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mldiag_provision.catalog.store import DATA_DIR, Fact, FactStore, make_fact, store
from mldiag_provision.catalog.tpu import ShapeError
from mldiag_provision.errors import CatalogError

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

GPU_ACCELERATOR_LABEL = str(store().fact("kubernetes", "gpu", "acceleratorLabel")["key"])
GPU_RESOURCE = str(store().fact("kubernetes", "gpu", "resource")["name"])


@dataclass(frozen=True)
class GpuMachine:
    name: str
    gpus: int
    vcpu: float | None
    memory_gb: float | None
    slurm: bool
    confidence: str
    source: str
    fact: Fact | None = field(default=None, compare=False, repr=False)  # the catalog entry


@dataclass(frozen=True)
class GpuType:
    key: str
    display_name: str
    accelerator: str
    aliases: tuple[str, ...]
    machines: dict[str, GpuMachine]
    autopilot: bool | None  # None: not confirmed either way
    arch: str
    source: str

    def all_names(self) -> tuple[str, ...]:
        return (self.key, self.accelerator, *self.aliases)


@dataclass(frozen=True)
class GpuShape:
    """A resolved GPU slice: GPU type, machine type (None on Autopilot) and GPUs per VM."""

    gpu: GpuType
    machine: GpuMachine | None

    @property
    def gpus_per_vm(self) -> int | None:
        return self.machine.gpus if self.machine else None


def _entry_fact(path: tuple[str, ...], node: dict[str, Any], parent: dict[str, Any]) -> Fact:
    """The fact of a gpu.yaml entry; one without a source inherits its parent's."""
    facts = store()
    if "source" not in node:
        node = {"source": parent.get("source", ""), **node}
    return facts.of(node) or make_fact("gpu.yaml", path, node, facts.sources)


class GpuCatalog:
    def __init__(self, data: dict[str, Any]) -> None:
        self.raw = data
        self.gpus: dict[str, GpuType] = {}
        try:
            for key, raw in data["gpus"].items():
                machines = {
                    name: GpuMachine(name=name, gpus=int(m["gpus"]), vcpu=m.get("vcpu"),
                                     memory_gb=m.get("memoryGb"), slurm=bool(m.get("slurm")),
                                     confidence=str(m.get("confidence", "H")),
                                     source=str(m.get("source", raw.get("source", ""))),
                                     fact=_entry_fact(("gpus", key, "machineTypes", name),
                                                      m, raw))
                    for name, m in (raw.get("machineTypes") or {}).items()
                }
                auto = raw.get("autopilot") or {}
                self.gpus[key] = GpuType(
                    key=key, display_name=str(raw.get("displayName", key)),
                    accelerator=str(raw["accelerator"]),
                    aliases=tuple(str(a) for a in raw.get("aliases", [])),
                    machines=machines, autopilot=auto.get("supported"),
                    arch=str(raw.get("arch", "amd64")), source=str(raw.get("source", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"gpu.yaml is malformed: {exc!r}") from exc
        self._by_name = {n.lower(): g for g in self.gpus.values() for n in g.all_names()}
        self._by_machine = {m: g for g in self.gpus.values() for m in g.machines}

    def source_url(self, tag: str) -> str:
        """What to cite for a source tag of ``sources.yaml`` (URL, else path)."""
        return store().source_url(tag) or tag

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def gpu(self, name: str) -> GpuType | None:
        return self._by_name.get(name.strip().lower()) if isinstance(name, str) else None

    def machine(self, name: str) -> tuple[GpuType, GpuMachine] | None:
        g = self._by_machine.get(name)
        return (g, g.machines[name]) if g else None

    def resolve(self, gpu: str, machine_type: str | None) -> GpuShape:
        """Resolve a GPU slice request.

        Raises:
          ShapeError: field ``gpu`` (unknown GPU) or ``machineType`` (unknown machine type, or
            one that carries another GPU), with what is allowed and a hint.
        """
        from mldiag_provision.suggest import suggest

        g = self.gpu(gpu)
        if g is None:
            raise ShapeError("gpu", f"unknown GPU '{gpu}'",
                             expected=", ".join(sorted(self.gpus)) + " (or their GKE labels)",
                             hint=suggest(gpu, self.names()))
        if machine_type is None:
            return GpuShape(gpu=g, machine=None)
        if machine_type not in g.machines:
            other = self.machine(machine_type)
            hint = (f"{machine_type} carries {other[0].display_name} ({other[0].key})"
                    if other else suggest(machine_type, list(g.machines)))
            raise ShapeError("machineType",
                             f"machine type '{machine_type}' does not carry {g.display_name}",
                             expected=", ".join(g.machines), hint=hint,
                             source=self.source_url(g.source))
        return GpuShape(gpu=g, machine=g.machines[machine_type])


@functools.lru_cache(maxsize=1)
def load_gpu_catalog(data_dir: Path = DATA_DIR) -> GpuCatalog:
    """The GPU catalog of the fact store. Raises CatalogError if the data is broken."""
    return GpuCatalog((store() if data_dir == DATA_DIR else FactStore(data_dir)).doc("gpu"))
