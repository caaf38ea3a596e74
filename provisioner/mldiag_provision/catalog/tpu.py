"""The TPU catalog: typed, read-only views over ``catalog/data/tpu.yaml`` and ``gke.yaml``.

Facts live in the YAML files of the fact store (:mod:`mldiag_provision.catalog.store`), each
with its source tag (defined once, in ``sources.yaml``); this module only answers questions:
which accelerator a name means, whether a topology exists for a TPU version, and which
machine type(s), chips per VM and VMs per slice it has.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldiag_provision.catalog.gke_version import GkeVersion
from mldiag_provision.catalog.store import DATA_DIR, Fact, FactStore, make_fact, store
from mldiag_provision.errors import CatalogError

__all__ = ["DATA_DIR", "Catalog", "Fact", "load_catalog"]


@dataclass(frozen=True)
class MachineType:
    """A TPU VM machine type, e.g. ``ct5lp-hightpu-8t``: ``chips_per_vm`` chips on one VM."""

    name: str
    chips_per_vm: int
    vcpu: float | None
    memory_gb: float | None
    source: str
    confidence: str = "H"  # of vcpu/memory_gb: H verified, M secondary, L unverified
    fact: Fact | None = field(default=None, compare=False, repr=False)  # the catalog entry


@dataclass(frozen=True)
class Large3D:
    """Rule for 3D shapes above 64 chips (GKE: dimensions multiples of 4, A <= B <= C)."""

    min_chips: int
    multiple_of: int
    nondecreasing: bool
    max_dims: tuple[int, int, int]
    machine_type: str
    source: str


# tpu.yaml gke.multiHostPlacement.policy values (see TpuVersion.multi_host_placement)
MULTI_HOST_PLACEMENTS = ("compact", "workload-policy")


@dataclass(frozen=True)
class TpuVersion:
    """One TPU generation as GKE exposes it."""

    key: str
    display_name: str
    accelerator: str
    aliases: tuple[str, ...]
    dimensions: int
    machine_types: dict[str, MachineType]
    topologies: dict[str, tuple[str, ...]]  # enumerated topology -> machine types (preferred first)
    large3d: Large3D | None
    autopilot_supported: bool
    autopilot_min: GkeVersion | None
    standard_min: GkeVersion | None
    multislice: bool
    zones: tuple[str, ...]
    """Zones the TPU regions-zones page lists for it: standard zones, then AI zones
    (tpu.yaml ``versions.<v>.zones`` ``values`` and ``aiZones``)."""
    source: str
    raw: dict[str, Any]
    multi_host_placement: str = "compact"
    """How a multi-host slice's node pool is placed: ``compact`` (COMPACT placement with the
    slice's ``tpu_topology``) or ``workload-policy`` (a HIGH_THROUGHPUT workload policy, TPU7x;
    tpu.yaml ``gke.multiHostPlacement`` with its source)."""

    def all_names(self) -> tuple[str, ...]:
        return (self.key, self.accelerator, *self.aliases)

    def gke_min(self, mode: str) -> GkeVersion | None:
        """The minimum GKE version for this TPU in a GKE mode (``autopilot`` or
        ``standard``, the keys under tpu.yaml ``gke:``); None when none is stated."""
        return {"autopilot": self.autopilot_min, "standard": self.standard_min}.get(mode)


@dataclass(frozen=True)
class SliceShape:
    """A resolved slice: version + topology + machine type -> chips and VMs (hosts)."""

    version: TpuVersion
    topology: str
    machine_type: MachineType
    chips: int

    @property
    def chips_per_vm(self) -> int:
        return self.machine_type.chips_per_vm

    @property
    def vms(self) -> int:
        """VMs (= GKE nodes = pods of one multi-host program) per slice."""
        return self.chips // self.machine_type.chips_per_vm

    @property
    def multi_host(self) -> bool:
        """GKE semantics: a slice with more than one VM is multi-host (tpu-rules D8)."""
        return self.vms > 1


class ShapeError(Exception):
    """A (version, topology, chips per VM) triple that does not exist; has what is allowed."""

    def __init__(self, field: str, message: str, *, expected: str | None = None,
                 hint: str | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.field = field  # "tpu", "topology" or "chipsPerVm"
        self.message = message
        self.expected = expected
        self.hint = hint
        self.source = source


def parse_topology(text: object) -> tuple[int, ...] | None:
    """``"2x2x4"`` -> ``(2, 2, 4)``; ``None`` when not a topology."""
    if not isinstance(text, str):
        return None
    parts = text.strip().split("x")
    # isascii: str.isdigit() also accepts e.g. '²', which int() rejects
    if not 2 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() and p[0] != "0"
                                           for p in parts):
        return None
    try:
        return tuple(int(p) for p in parts)
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        return None


class Catalog:
    """All catalog facts; build with :func:`load_catalog`."""

    def __init__(self, tpu: dict[str, Any], gke: dict[str, Any],
                 facts: FactStore | None = None) -> None:
        self.store = facts or store()
        self.gke: dict[str, Any] = gke
        self.versions: dict[str, TpuVersion] = {}
        for key, raw in tpu["versions"].items():
            self.versions[key] = self._version(key, raw)
        self._facts: dict[tuple[str, ...], Any] = {}  # fact() answers; the data never changes
        self._shapes: dict[tuple[str, str, int | None], SliceShape] = {}  # resolve()'s answers
        self._by_name: dict[str, TpuVersion] = {}
        for v in self.versions.values():
            for name in v.all_names():
                self._by_name[name.lower()] = v

    # -- construction -------------------------------------------------------------------
    def _entry_fact(self, path: tuple[str, ...], node: dict[str, Any],
                    parent: dict[str, Any]) -> Fact:
        """The fact of a tpu.yaml entry; one without a source inherits its parent's."""
        if "source" not in node:
            node = {"source": parent.get("source", ""), **node}
        return self.store.of(node) or make_fact("tpu.yaml", path, node, self.store.sources)

    def _version(self, key: str, raw: dict[str, Any]) -> TpuVersion:
        try:
            mts = {
                name: MachineType(name=name, chips_per_vm=int(m["chipsPerVm"]),
                                  vcpu=m.get("vcpu"), memory_gb=m.get("memoryGb"),
                                  source=str(m.get("source", raw.get("source", ""))),
                                  confidence=str(m.get("confidence", "H")),
                                  fact=self._entry_fact(("versions", key, "machineTypes", name),
                                                        m, raw))
                for name, m in raw["machineTypes"].items()
            }
            topologies = {str(t["topology"]): tuple(t["machineTypes"]) for t in raw["topologies"]}
            large = raw.get("large3d")
            large3d = None
            if large:
                dims = parse_topology(str(large["maxTopology"]))
                if dims is None or len(dims) != 3:
                    raise CatalogError(f"bad large3d.maxTopology for {key}")
                large3d = Large3D(min_chips=int(large.get("minChips", 65)),
                                  multiple_of=int(large.get("multipleOf", 4)),
                                  nondecreasing=bool(large.get("nondecreasing", True)),
                                  max_dims=dims,
                                  machine_type=str(large["machineType"]),
                                  source=str(large.get("source", "")))
            gke = raw.get("gke", {})
            placement = str((gke.get("multiHostPlacement") or {}).get("policy", "compact"))
            if placement not in MULTI_HOST_PLACEMENTS:
                raise ValueError(f"gke.multiHostPlacement.policy {placement!r} is not one of "
                                 + ", ".join(MULTI_HOST_PLACEMENTS))
            auto = gke.get("autopilot", {})
            std = gke.get("standard", {})
            return TpuVersion(
                key=key, display_name=str(raw.get("displayName", key)),
                accelerator=str(raw["accelerator"]),
                aliases=tuple(str(a) for a in raw.get("aliases", [])),
                dimensions=int(raw["dimensions"]), machine_types=mts, topologies=topologies,
                large3d=large3d, autopilot_supported=bool(auto.get("supported", False)),
                autopilot_min=GkeVersion.parse(str(auto["minVersion"]))
                if auto.get("minVersion") else None,
                standard_min=GkeVersion.parse(str(std["minVersion"]))
                if std.get("minVersion") else None,
                multislice=bool(gke.get("multislice", {}).get("supported", False)),
                zones=tuple((raw.get("zones") or {}).get("values", []))
                + tuple((raw.get("zones") or {}).get("aiZones", [])),
                source=str(raw.get("source", "")), raw=raw,
                multi_host_placement=placement,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"catalog entry for TPU {key!r} is malformed: {exc!r}") from exc

    # -- questions ----------------------------------------------------------------------
    def version(self, name: str) -> TpuVersion | None:
        """The TPU version a user-facing name means (key, alias or accelerator label)."""
        return self._by_name.get(name.strip().lower()) if isinstance(name, str) else None

    def version_names(self) -> list[str]:
        return sorted({n for v in self.versions.values() for n in v.all_names()})

    def source_url(self, tag: str) -> str:
        """What to cite for a source tag of ``sources.yaml`` (URL, else path)."""
        return self.store.source_url(tag) or tag

    def fact(self, *keys: str) -> Any:
        """A fact from gke.yaml, e.g. ``fact("mlDiagnostics", "managedMinVersion")``: a
        :class:`Fact` where the mapping names a source, else the data there (a list of
        facts such as ``requiredServices``)."""
        found = self._facts.get(keys)
        if found is None:
            found = self._facts[keys] = self._fact(keys)
        return found

    def _fact(self, keys: tuple[str, ...]) -> Any:
        node: object = self.gke
        for k in keys:
            if not isinstance(node, dict) or k not in node:
                raise CatalogError(f"gke.yaml has no fact {'.'.join(keys)}")
            node = node[k]
        if isinstance(node, dict) and "source" in node:
            return self.store.of(node) or make_fact("gke.yaml", keys, node, self.store.sources)
        return node

    def version_fact(self, version: TpuVersion) -> Fact:
        """The fact of a TPU version's entry (its topology list, machine types, labels)."""
        return self.store.as_fact(version.raw)

    def topology_fact(self, version: TpuVersion, topology: str) -> Fact:
        """The fact that ``topology`` runs on its machine types (chips per VM): its entry in
        the version's ``topologies``, the ``large3d`` rule above 64 chips, else the version."""
        for entry in version.raw.get("topologies", []):
            if str(entry.get("topology")) == topology:
                return self._entry_fact(("versions", version.key, "topologies", topology),
                                        entry, version.raw)
        large = version.raw.get("large3d")
        if isinstance(large, dict):
            return self._entry_fact(("versions", version.key, "large3d"), large, version.raw)
        return self.version_fact(version)

    def tpu_fact(self, version: TpuVersion, *keys: str) -> Fact | None:
        """A fact inside a TPU version's entry, e.g. ``tpu_fact(v, "gke", "multislice")``;
        None where the catalog states nothing."""
        node: object = version.raw
        for k in keys:
            if not isinstance(node, dict) or k not in node:
                return None
            node = node[k]
        if not isinstance(node, dict):
            return None
        if "source" not in node:  # inherits the version's source and confidence
            node = {"source": version.source, **node}
        return self.store.of(node) or make_fact(
            "tpu.yaml", ("versions", version.key, *keys), node, self.store.sources)

    def fact_version(self, *keys: str) -> GkeVersion:
        v = GkeVersion.parse(str(self.fact(*keys)["version"]))
        if v is None:
            raise CatalogError(f"gke.yaml fact {'.'.join(keys)} is not a GKE version")
        return v

    def valid_topologies(self, version: TpuVersion) -> list[str]:
        """Enumerated topologies (large 3D shapes are described by their rule instead)."""
        return list(version.topologies)

    def describe_allowed(self, version: TpuVersion) -> str:
        text = ", ".join(version.topologies)
        if version.large3d:
            lg = version.large3d
            text += (f"; above 64 chips: AxBxC with each dimension a multiple of "
                     f"{lg.multiple_of}, A <= B <= C, up to {'x'.join(map(str, lg.max_dims))}")
        return text

    def resolve(self, tpu: str, topology: str, chips_per_vm: int | None = None) -> SliceShape:
        """Resolve a slice request to its shape.

        Args:
          tpu: version key, alias or GKE accelerator label.
          topology: ``AxB`` or ``AxBxC``.
          chips_per_vm: the ``google.com/tpu`` request per pod; required where a topology has
            more than one machine type (v5e/v6e ``2x4``).
        Raises:
          ShapeError: naming the field at fault, what is allowed and a hint.

        A shape that resolves is remembered by its three arguments (a shape is catalog data,
        the same for every recipe; preflight and lint's TPU checks resolve every TPU slice
        of every recipe; issue 16); a problem is worked out each time.
        """
        key = (tpu, topology, chips_per_vm)
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = self._resolve(tpu, topology, chips_per_vm)
        return shape

    def _resolve(self, tpu: str, topology: str, chips_per_vm: int | None) -> SliceShape:
        """:meth:`resolve` without the memo: version, then topology, then machine type."""
        version = self._known_version(tpu)
        dims = self._dims(version, topology)
        chips = math.prod(dims)
        names = self._machine_type_names(version, topology, dims)
        options = [version.machine_types[n] for n in names]
        mt = self._machine_type(version, topology, chips, options, chips_per_vm)
        return SliceShape(version=version, topology=topology, machine_type=mt, chips=chips)

    def _known_version(self, tpu: str) -> TpuVersion:
        """The version ``tpu`` names (key, alias or accelerator label).

        Raises:
          ShapeError: field ``tpu``, an unknown version ("did you mean" as hint).
        """
        version = self.version(tpu)
        if version is None:
            from mldiag_provision.suggest import suggest

            raise ShapeError("tpu", f"unknown TPU version '{tpu}'",
                             expected=", ".join(sorted(self.versions)) + " (or their GKE "
                             "accelerator labels)", hint=suggest(tpu, self.version_names()))
        return version

    def _dims(self, version: TpuVersion, topology: str) -> tuple[int, ...]:
        """``topology`` (``AxB``, ``AxBxC``) as its dimensions, e.g. ``(2, 2, 4)``.

        Raises:
          ShapeError: field ``topology``, not a topology or not ``version``'s number of
            dimensions.
        """
        dims = parse_topology(topology)
        allowed = self.describe_allowed(version)
        if dims is None:
            raise ShapeError("topology", f"'{topology}' is not a topology",
                             expected=f"AxB or AxBxC; for {version.key}: {allowed}")
        if len(dims) != version.dimensions:
            kind = "2D (AxB)" if version.dimensions == 2 else "3D (AxBxC)"
            raise ShapeError("topology",
                             f"{version.key} topologies are {kind}; '{topology}' has "
                             f"{len(dims)} dimensions", expected=allowed,
                             source=self.source_url(version.source))
        return dims

    def _machine_type_names(self, version: TpuVersion, topology: str,
                            dims: tuple[int, ...]) -> tuple[str, ...]:
        """The machine types that can make ``topology``: its enumerated entry, or the large
        3-D machine type for a shape that passes the large-shape rule
        (:meth:`_check_large3d`).

        Raises:
          ShapeError: field ``topology``, a topology the version does not have (hint: the
            same dimensions smallest first, or the nearest topology's name).
        """
        names = version.topologies.get(topology)
        if names is None and version.large3d and math.prod(dims) >= version.large3d.min_chips:
            self._check_large3d(version, topology, dims)
            names = (version.large3d.machine_type,)
        if names is not None:
            return tuple(names)
        from mldiag_provision.suggest import suggest

        ordered = "x".join(map(str, sorted(dims)))
        hint: str | None
        if ordered != topology and ordered in version.topologies:
            hint = f"did you mean '{ordered}'? (dimensions are written smallest first)"
        else:
            hint = suggest(topology, version.topologies)
        raise ShapeError("topology",
                         f"topology '{topology}' does not exist for TPU {version.key}",
                         expected=self.describe_allowed(version), hint=hint,
                         source=self.source_url(version.source))

    def _machine_type(self, version: TpuVersion, topology: str, chips: int,
                      options: list[MachineType], chips_per_vm: int | None) -> MachineType:
        """The machine type of ``options`` with ``chips_per_vm`` chips; without
        ``chips_per_vm`` the only option.

        Raises:
          ShapeError: field ``chipsPerVm``, ambiguous (several options and no
            ``chips_per_vm``; each option's VMs x chips listed) or no option with that many
            chips.
        """
        if chips_per_vm is None:
            if len(options) > 1:
                choices = " or ".join(
                    f"{chips // m.chips_per_vm} VM(s) x {m.chips_per_vm} chips ({m.name})"
                    for m in options)
                raise ShapeError(
                    "chipsPerVm",
                    f"{version.key} {topology} is ambiguous: it can be {choices}",
                    expected=" or ".join(str(m.chips_per_vm) for m in options),
                    hint="set chipsPerVm explicitly: "
                         + ", ".join(f"{m.chips_per_vm} for {m.name}" for m in options),
                    source=self.source_url(version.source))
            return options[0]
        match = [m for m in options if m.chips_per_vm == chips_per_vm]
        if not match:
            raise ShapeError(
                "chipsPerVm",
                f"{version.key} {topology} has no VM with {chips_per_vm} chips",
                expected=" or ".join(str(m.chips_per_vm) for m in options),
                hint="google.com/tpu per pod must equal the chips of one VM of the slice",
                source=self.source_url(version.source))
        return match[0]

    def _check_large3d(self, version: TpuVersion, topology: str, dims: tuple[int, ...]) -> None:
        lg = version.large3d
        assert lg is not None
        allowed = self.describe_allowed(version)
        src = self.source_url(lg.source)
        bad = [d for d in dims if d % lg.multiple_of]
        if bad:
            raise ShapeError("topology", f"'{topology}' has more than 64 chips, so every "
                             f"dimension must be a multiple of {lg.multiple_of}",
                             expected=allowed, source=src)
        if lg.nondecreasing and list(dims) != sorted(dims):
            ordered = "x".join(map(str, sorted(dims)))
            raise ShapeError("topology", f"'{topology}' breaks the A <= B <= C order",
                             expected=allowed, hint=f"did you mean '{ordered}'?", source=src)
        if any(d > m for d, m in zip(dims, lg.max_dims, strict=True)):
            raise ShapeError("topology", f"'{topology}' is larger than the largest {version.key} "
                             f"topology {'x'.join(map(str, lg.max_dims))}",
                             expected=allowed, source=src)


@functools.lru_cache(maxsize=1)
def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    """Load and cache the bundled catalog. Raises CatalogError if the data is broken (a fact
    naming an unknown source, a confidence other than H/M/L, a malformed TPU entry)."""
    facts = store() if data_dir == DATA_DIR else FactStore(data_dir)
    return Catalog(facts.doc("tpu"), facts.doc("gke"), facts)
