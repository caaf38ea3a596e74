"""Requirements that follow from catalog facts: the GKE minimum a recipe needs, and why.

Shared by preflight (to judge a user-given version) and plan (to pick one when none is
given), so the version gates live in one place: ``catalog/data/*.yaml``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mldiag_provision.catalog.gke_version import GkeVersion, at_least
from mldiag_provision.catalog.store import Fact
from mldiag_provision.catalog.tpu import Catalog, SliceShape


@dataclass(frozen=True)
class VersionNeed:
    """One minimum GKE version and the reason for it; ``fact``: the fact that states it (its
    confidence decides whether a version below it is an error or a warning)."""

    version: GkeVersion
    reason: str
    source: str
    confidence: str = "H"
    fact: Fact | None = None


@dataclass(frozen=True)
class GkeMode:
    """Which GKE version gates apply to a cluster an orchestrator creates (its unit's
    ``gke``).

    Attributes:
      tpu_key: key under a TPU version's ``gke:`` in tpu.yaml (``autopilot`` / ``standard``).
      multislice_key: key under gke.yaml ``multislice:`` (``autopilotMinVersion``, ...).
      words: how people call the mode (``Autopilot``, ``GKE Standard``).
      base_need: a gke.yaml fact path whose version every such cluster needs, with its reason
        (Autopilot: ``tpuAutopilot.minVersion``, "TPUs on GKE Autopilot"); ``None``: none.
    """

    tpu_key: str
    multislice_key: str
    words: str
    base_need: tuple[tuple[str, ...], str] | None = None


# _fact_need and channel_offer are pure functions of the catalog's data and their arguments,
# remembered per catalog: the gke-version and gke-channel rules ask them for every recipe,
# each answer a fact lookup and a version parse (issue 16).

@functools.lru_cache(maxsize=128)
def _fact_need(catalog: Catalog, reason: str, *keys: str) -> VersionNeed:
    """A minimum version stated in gke.yaml (a mapping with version, source, confidence)."""
    fact = catalog.fact(*keys)
    return VersionNeed(catalog.fact_version(*keys), reason, catalog.source_url(fact["source"]),
                       str(fact.get("confidence", "H")), catalog.store.as_fact(fact))


def cluster_needs(mode: GkeMode | None, shapes: list[tuple[SliceShape, int]],
                  catalog: Catalog) -> list[VersionNeed]:
    """GKE minimums for TPU slices on a cluster of ``mode``; [] when no cluster is created
    (``mode`` None: the orchestrator unit's ``gke``).

    Args:
      shapes: ``(shape, count)`` per recipe slice; ``count`` > 1 means multislice.
    """
    if mode is None:
        return []
    needs: list[VersionNeed] = []
    if mode.base_need is not None:
        keys, reason = mode.base_need
        needs.append(_fact_need(catalog, reason, *keys))
    for shape, count in shapes:
        v = shape.version
        minimum = v.gke_min(mode.tpu_key)
        if minimum is not None:
            fact = catalog.tpu_fact(v, "gke", mode.tpu_key)
            needs.append(VersionNeed(minimum, f"TPU {v.key} on {mode.words}",
                                     fact.url if fact is not None else catalog.source_url(v.source),
                                     fact.confidence if fact is not None else "H", fact))
        if count > 1:
            needs.append(_fact_need(catalog, f"multislice on {mode.words}", "multislice",
                                    mode.multislice_key))
    return needs


def queued_needs(catalog: Catalog, kinds: set[str]) -> list[VersionNeed]:
    """GKE Standard minimums of queued provisioning (capacity type ``queued``) for the
    accelerator ``kinds`` of the queued slices (``tpu``, ``gpu``), sorted: facts
    ``queuedProvisioning.standardTpuMinVersion`` / ``standardGpuMinVersion`` (GPU: the GKE
    queued provisioning page, H; TPU: flex-start's TPU minimum, M)."""
    out = []
    for kind in sorted(kinds):
        key = "standardTpuMinVersion" if kind == "tpu" else "standardGpuMinVersion"
        out.append(_fact_need(catalog, f"queued provisioning of {kind.upper()}s on GKE "
                                        "Standard", "queuedProvisioning", key))
    return out


def managed_diagnostics_need(catalog: Catalog) -> VersionNeed:
    """GKE minimum for the GKE-managed ML Diagnostics add-on."""
    return _fact_need(catalog, "GKE-managed ML Diagnostics", "mlDiagnostics",
                      "managedMinVersion")


def highest(needs: list[VersionNeed]) -> VersionNeed:
    """The most demanding need."""
    return max(needs, key=lambda n: (n.version.major, n.version.minor, n.version.patch or 0,
                                     n.version.build or 0))


def satisfies(version: GkeVersion, need: VersionNeed) -> bool | None:
    """True/False, or None when ``version`` is a prefix that may resolve either way."""
    return at_least(version, need.version)


def _offer_minor(text: str) -> tuple[int, int]:
    """``"1.34"`` -> ``(1, 34)`` for a ``releaseChannels`` bound; ValueError when malformed."""
    major, minor = str(text).split(".")[:2]
    return int(major), int(minor)


@functools.lru_cache(maxsize=64)
def channel_offer(catalog: Catalog, channel: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(oldest, newest) (major, minor) a GKE release channel offers new clusters, from gke.yaml
    ``releaseChannels`` (a dated copy of the GKE release notes); None for an unknown channel.
    """
    offer = catalog.fact("releaseChannels")["channels"].get(channel)
    if offer is None:
        return None
    return _offer_minor(offer["minMinor"]), _offer_minor(offer["maxMinor"])


def channel_oldest_minor(catalog: Catalog, channel: str) -> tuple[int, int] | None:
    """The oldest (major, minor) ``channel`` offers new clusters, or None."""
    offer = channel_offer(catalog, channel)
    return offer[0] if offer else None


# -- JAX <-> ML Diagnostics connection operator ---------------------------------------------

def jax_row(jax_version: str, catalog: Catalog) -> Mapping[str, Any] | None:
    """The row of the connection operator's JAX compatibility table (gke.yaml
    ``mlDiagnostics.manualInstall.connectionOperator.jaxCompatibility``, from the ML
    Diagnostics SDK README) that covers ``jax_version`` (``MAJOR.MINOR[.PATCH]``), or None:
    not a version, or older than every row."""
    mine = _minor(jax_version)
    if mine is None:
        return None
    rows = catalog.fact("mlDiagnostics", "manualInstall", "connectionOperator")[
        "jaxCompatibility"]
    for row in rows:
        line = _minor(str(row["jax"]))
        if line is not None and (mine == line or (row.get("andLater") and mine > line)):
            return row  # type: ignore[no-any-return]
    return None


def _minor(text: str) -> tuple[int, int] | None:
    parts = text.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])
