"""Requirements that follow from catalog facts: the GKE minimum a recipe needs, and why.

Shared by preflight (to judge a user-given version) and plan (to pick one when none is
given), so the version gates live in one place: ``catalog/data/*.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mldiag_provision.catalog.gke_version import GkeVersion, at_least
from mldiag_provision.catalog.tpu import Catalog, SliceShape


@dataclass(frozen=True)
class VersionNeed:
    """One minimum GKE version and the reason for it."""

    version: GkeVersion
    reason: str
    source: str
    confidence: str = "H"


def autopilot_needs(shapes: list[tuple[SliceShape, int]], catalog: Catalog) -> list[VersionNeed]:
    """GKE minimums for TPU slices on Autopilot.

    Args:
      shapes: ``(shape, count)`` per recipe slice; ``count`` > 1 means multislice.
    """
    base = catalog.fact("tpuAutopilot", "minVersion")
    needs = [VersionNeed(catalog.fact_version("tpuAutopilot", "minVersion"),
                         "TPUs on GKE Autopilot", catalog.source_url(base["source"]),
                         str(base.get("confidence", "H")))]
    for shape, count in shapes:
        v = shape.version
        auto = v.raw.get("gke", {}).get("autopilot", {})
        if v.autopilot_min is not None:
            needs.append(VersionNeed(v.autopilot_min, f"TPU {v.key} on Autopilot",
                                     catalog.source_url(str(auto.get("source", ""))),
                                     str(auto.get("confidence", "H"))))
        if count > 1:
            ms = catalog.fact("multislice", "autopilotMinVersion")
            needs.append(VersionNeed(catalog.fact_version("multislice", "autopilotMinVersion"),
                                     "multislice on Autopilot", catalog.source_url(ms["source"]),
                                     str(ms.get("confidence", "H"))))
    return needs


def standard_needs(shapes: list[tuple[SliceShape, int]], catalog: Catalog) -> list[VersionNeed]:
    """GKE minimums for TPU slice node pools on GKE Standard (same argument as above)."""
    needs: list[VersionNeed] = []
    for shape, count in shapes:
        v = shape.version
        std = v.raw.get("gke", {}).get("standard", {})
        if v.standard_min is not None:
            needs.append(VersionNeed(v.standard_min, f"TPU {v.key} on GKE Standard",
                                     catalog.source_url(str(std.get("source", ""))),
                                     str(std.get("confidence", "H"))))
        if count > 1:
            ms = catalog.fact("multislice", "standardMinVersion")
            needs.append(VersionNeed(catalog.fact_version("multislice", "standardMinVersion"),
                                     "multislice on GKE Standard",
                                     catalog.source_url(ms["source"]),
                                     str(ms.get("confidence", "H"))))
    return needs


def cluster_needs(orchestrator: str, shapes: list[tuple[SliceShape, int]],
                  catalog: Catalog) -> list[VersionNeed]:
    """GKE minimums for the slices on the given orchestrator; [] when we create no cluster."""
    if orchestrator == "gke-autopilot":
        return autopilot_needs(shapes, catalog)
    if orchestrator == "gke-standard":
        return standard_needs(shapes, catalog)
    return []


def managed_diagnostics_need(catalog: Catalog) -> VersionNeed:
    """GKE minimum for the GKE-managed ML Diagnostics add-on."""
    fact = catalog.fact("mlDiagnostics", "managedMinVersion")
    return VersionNeed(catalog.fact_version("mlDiagnostics", "managedMinVersion"),
                       "GKE-managed ML Diagnostics", catalog.source_url(fact["source"]),
                       str(fact.get("confidence", "H")))


def highest(needs: list[VersionNeed]) -> VersionNeed:
    """The most demanding need."""
    return max(needs, key=lambda n: (n.version.major, n.version.minor, n.version.patch or 0,
                                     n.version.build or 0))


def satisfies(version: GkeVersion, need: VersionNeed) -> bool | None:
    """True/False, or None when ``version`` is a prefix that may resolve either way."""
    return at_least(version, need.version)
