"""Kueue's queue objects as the cluster model holds them, read from their Kubernetes form.

One reader for every builder: the manifests being linted (``lint``), a live cluster
(``lint --cluster``). Shapes: Kueue v1beta1/v1beta2 ``ClusterQueue`` (``spec.cohort``,
``spec.resourceGroups[].coveredResources`` and ``.flavors[].resources[].nominalQuota``) and
``LocalQueue`` (``spec.clusterQueue``), https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/, and
``ResourceFlavor`` (``spec.nodeLabels``, ``spec.nodeTaints``),
https://kueue.sigs.k8s.io/docs/concepts/resource_flavor/.
Fields of the wrong type are skipped: they are the schema's findings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from mldiag_provision.cluster.model import ClusterQueue, LocalQueue, ResourceFlavor, Taint
from mldiag_provision.quantity import parse_quantity


def _quota(raw: object) -> Decimal | None:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None
    return parse_quantity(str(raw))


def _list(raw: object) -> list[Any]:
    """``raw`` where it is a list, else empty (a field of the wrong type is the schema's
    finding)."""
    return raw if isinstance(raw, list) else []


def _named(raw: object) -> list[Mapping[str, Any]]:
    """The entries of list ``raw`` that are mappings with a string ``name``, in order."""
    return [x for x in _list(raw) if isinstance(x, Mapping) and isinstance(x.get("name"), str)]


def _flavor_quotas(flavor: Mapping[str, Any]) -> dict[str, Decimal]:
    """One ``flavors[]`` entry of a resource group: its nominal quota per resource name
    (``resources[].nominalQuota``, in the resource's base unit: cores, bytes, a count); a
    quota that is no quantity is left out."""
    out: dict[str, Decimal] = {}
    for r in _named(flavor.get("resources")):
        q = _quota(r.get("nominalQuota"))
        if q is not None:
            out[str(r["name"])] = q
    return out


def cluster_queue(item: Mapping[str, Any]) -> ClusterQueue | None:
    """One ClusterQueue object (a dict) -> its name, covered resources, flavors, each
    flavor's nominal quota per resource, and its cohort; None without a readable name."""
    meta = item.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str):
        return None
    spec = item.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    covered: set[str] = set()
    flavors: list[str] = []
    parts: list[tuple[frozenset[str], tuple[str, ...]]] = []
    quotas: dict[str, dict[str, Decimal]] = {}
    for g in _list(spec.get("resourceGroups")):
        if not isinstance(g, Mapping):
            continue
        mine = frozenset(r for r in _list(g.get("coveredResources")) if isinstance(r, str))
        covered.update(mine)
        listed = _named(g.get("flavors"))
        parts.append((mine, tuple(str(f["name"]) for f in listed)))
        for f in listed:
            flavor = str(f["name"])
            flavors.append(flavor)
            quota = _flavor_quotas(f)
            if quota:
                quotas.setdefault(flavor, {}).update(quota)
    cohort = spec.get("cohort") or spec.get("cohortName")
    return ClusterQueue(name, frozenset(covered), tuple(flavors), quotas=quotas,
                        cohort=cohort if isinstance(cohort, str) and cohort else None,
                        groups=tuple(parts))


def cluster_queues(items: Iterable[Mapping[str, Any]]) -> tuple[ClusterQueue, ...]:
    """Every readable ClusterQueue of ``items``."""
    return tuple(q for q in (cluster_queue(i) for i in items) if q is not None)


def local_queues(items: Iterable[Mapping[str, Any]]) -> tuple[LocalQueue, ...]:
    """LocalQueue objects (dicts) -> ``namespace/name`` and their ClusterQueue."""
    out = []
    for item in items:
        meta = item.get("metadata")
        spec = item.get("spec")
        cq = spec.get("clusterQueue") if isinstance(spec, Mapping) else None
        if isinstance(meta, Mapping) and isinstance(meta.get("name"), str) and isinstance(
                cq, str):
            ns = meta.get("namespace")
            out.append(LocalQueue(str(ns) if ns else None, str(meta["name"]), cq))
    return tuple(out)


def resource_flavors(items: Iterable[Mapping[str, Any]]) -> tuple[ResourceFlavor, ...]:
    """ResourceFlavor objects (dicts) -> name, node labels and node taints (string labels
    only; a taint without a key or effect is skipped)."""
    out = []
    for item in items:
        meta = item.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str):
            continue
        spec = item.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        raw = spec.get("nodeLabels")
        labels = {str(k): str(v) for k, v in raw.items()
                  if isinstance(v, str | int | float) and not isinstance(v, bool)
                  } if isinstance(raw, Mapping) else {}
        taints = spec.get("nodeTaints")
        out.append(ResourceFlavor(name, labels, tuple(
            Taint(str(x["key"]), str(x.get("value") or ""), str(x["effect"]))
            for x in (taints if isinstance(taints, list) else [])
            if isinstance(x, Mapping) and isinstance(x.get("key"), str)
            and isinstance(x.get("effect"), str))))
    return tuple(out)
