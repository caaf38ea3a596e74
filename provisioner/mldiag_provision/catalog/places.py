"""Google Cloud places and GKE's per-cluster limits, as a typed view of ``places.yaml``.

Questions the preflight asks of the fact store (``catalog/data/places.yaml``): is this a
region, is this a zone of that region, which GPU machine series does a zone offer, and what
are GKE's cluster-size limits. Each answer carries the :class:`~.store.Fact` it stands on,
so a rule's severity follows the fact's confidence (:func:`mldiag_provision.rulebook.settle`).

Sources (tags of ``sources.yaml``): CE-REGIONS (Compute Engine "Available regions and zones"
table), CTPU-REGIONS (TPU-only region us-central2), CE-AI-ZONES, GKE-QUOTAS,
GKE-LARGE-CLUSTERS, GKE-REGIONAL, GKE-NODE-POOL-AUTO, GKE-MAX-PODS.

The view is built once per fact store (the what-if store of the rulebook tests gets its
own), on first use; nothing here is imported before a rule asks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mldiag_provision.catalog.store import Fact, FactStore, store
from mldiag_provision.errors import CatalogError


@dataclass(frozen=True)
class Places:
    """Regions, zones and GPU series per zone (places.yaml), with the facts they come from.

    Attributes:
      zones: region -> its zones (Compute Engine table, plus TPU-only regions), in page order.
      ai_zones: region -> the AI zones named in the docs (not a complete list).
      gpu_zones: zone -> GPU machine series it offers (``"A3"``, ``"G2"``, ...).
      series_prefixes: (series, machine-type prefix), longest prefix first; a series whose
        machine type names are not recorded has none.
    """

    zones: Mapping[str, tuple[str, ...]]
    ai_zones: Mapping[str, tuple[str, ...]]
    gpu_zones: Mapping[str, frozenset[str]]
    series_prefixes: tuple[tuple[str, str], ...]
    ai_pattern: re.Pattern[str]
    regions_fact: Fact
    tpu_only_fact: Fact
    ai_fact: Fact
    gpu_fact: Fact
    tpu_only: frozenset[str]

    # -- regions and zones -------------------------------------------------------------
    def is_region(self, name: str) -> bool:
        return name in self.zones

    def region_names(self) -> list[str]:
        """Every region, sorted."""
        return sorted(self.zones)

    def region_fact(self, region: str) -> Fact:
        """The fact that lists ``region`` (the TPU page for TPU-only regions)."""
        return self.tpu_only_fact if region in self.tpu_only else self.regions_fact

    def zone_region(self, zone: str) -> str | None:
        """The region whose zone list holds ``zone`` (standard or listed AI zone), or None."""
        region = zone.rsplit("-", 1)[0]
        if zone in self.zones.get(region, ()) or zone in self.ai_zones.get(region, ()):
            return region
        return None

    def ai_zone_form(self, zone: str) -> tuple[str, str] | None:
        """(region, parent zone) when ``zone`` has the AI zone name form
        ``<region>-ai<group><letter>``; None otherwise."""
        m = self.ai_pattern.fullmatch(zone)
        return (m["region"], f"{m['region']}-{m['parent']}") if m else None

    # -- GPU machine series --------------------------------------------------------------
    def series_of(self, machine_type: str) -> str | None:
        """The GPU machine series of a machine type name (``a3-ultragpu-8g`` -> ``A3``), or
        None when it is not one of the series the table tracks."""
        for series, prefix in self.series_prefixes:
            if machine_type == prefix or machine_type.startswith(prefix + "-"):
                return series
        return None

    def offers(self, zone: str, series: str) -> bool:
        return series in self.gpu_zones.get(zone, frozenset())

    def zones_offering(self, series: str, within: Iterable[str] | None = None) -> list[str]:
        """Zones (of ``within``, else of every region) whose row lists ``series``."""
        pool = list(within) if within is not None else [z for zs in self.zones.values()
                                                          for z in zs]
        return [z for z in pool if self.offers(z, series)]


def places(facts: FactStore | None = None) -> Places:
    """The places view of ``facts`` (default: the fact store in use).

    Raises:
      CatalogError: places.yaml is missing a section or malformed.
    """
    return _build(facts or store())


@functools.lru_cache(maxsize=4)
def _build(facts: FactStore) -> Places:
    try:
        regions = facts.fact("places", "regions")
        tpu_only = facts.fact("places", "tpuOnlyRegions")
        ai = facts.fact("places", "aiZones")
        gpu = facts.fact("places", "gpuSeriesByZone")
        zones: dict[str, tuple[str, ...]] = {
            str(r): tuple(str(z) for z in zs) for r, zs in regions["zones"].items()}
        for r, zs in tpu_only["zones"].items():
            zones.setdefault(str(r), tuple(str(z) for z in zs))
        prefixes = sorted(((str(s), str(v["prefix"])) for s, v in gpu["series"].items()
                           if v.get("prefix")), key=lambda sp: -len(sp[1]))
        return Places(
            zones=zones,
            ai_zones={str(r): tuple(str(z) for z in zs) for r, zs in ai["zones"].items()},
            gpu_zones={str(z): frozenset(str(s) for s in ss) for z, ss in gpu["zones"].items()},
            series_prefixes=tuple(prefixes),
            ai_pattern=re.compile(str(ai["pattern"])),
            regions_fact=regions, tpu_only_fact=tpu_only, ai_fact=ai, gpu_fact=gpu,
            tpu_only=frozenset(str(r) for r in tpu_only["zones"]))
    except (KeyError, TypeError, AttributeError, re.error) as exc:
        raise CatalogError(f"places.yaml is malformed: {exc!r}") from exc


def limit(name: str, facts: FactStore | None = None) -> Fact:
    """A GKE per-cluster limit of places.yaml ``gkeLimits`` (``"nodesPerClusterMax"``, ...).

    Raises:
      CatalogError: no such limit.
    """
    return (facts or store()).fact("places", "gkeLimits", name)
