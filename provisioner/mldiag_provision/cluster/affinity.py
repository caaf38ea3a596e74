"""A pod's required node placement (``nodeSelector`` and required node affinity), and
whether a set of node labels satisfies it.

The rule is Kubernetes' (https://kubernetes.io/docs/concepts/scheduling-eviction/
assign-pod-node/): every ``nodeSelector`` pair must be a label of the node, and when
``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`` is set, at least one
of its ``nodeSelectorTerms`` must hold, a term holding when each of its ``matchExpressions``
does (operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``).
``matchFields`` select by node name, which no model knows: they are dropped, as Kueue does.

:func:`restricted` is Kueue's view of the same placement when it picks a ResourceFlavor: only
the label keys the flavors of a resource group declare count, and a term left with no
expression makes the affinity match every flavor (kueue ``pkg/scheduler/flavorassigner``
``flavorSelector``; https://kueue.sigs.k8s.io/docs/concepts/resource_flavor/).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

Expression = tuple[str, str, tuple[str, ...]]
"""One ``matchExpressions`` entry: key, operator, values."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a pod may run: ``selector`` (nodeSelector) and ``terms`` (the required node
    affinity's terms, ORed; ``None`` when the pod sets none)."""

    selector: Mapping[str, str]
    terms: tuple[tuple[Expression, ...], ...] | None = None

    @property
    def empty(self) -> bool:
        return not self.selector and self.terms is None


def _expression(raw: object) -> Expression | None:
    if not isinstance(raw, Mapping):
        return None
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values")
    if not isinstance(key, str) or not isinstance(op, str):
        return None
    vals = tuple(str(v) for v in values) if isinstance(values, list) else ()
    return (key, op, vals)


def placement(spec: Mapping[str, Any]) -> Placement:
    """The required placement of a pod spec (a dict). Fields of the wrong type are left out:
    they are the schema's findings."""
    raw = spec.get("nodeSelector")
    selector = {str(k): str(v) for k, v in raw.items()
                if isinstance(v, str)} if isinstance(raw, Mapping) else {}
    terms: list[tuple[Expression, ...]] | None = None
    aff = spec.get("affinity")
    node = aff.get("nodeAffinity") if isinstance(aff, Mapping) else None
    req = node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(
        node, Mapping) else None
    listed = req.get("nodeSelectorTerms") if isinstance(req, Mapping) else None
    if isinstance(listed, list):
        terms = []
        for term in listed:
            exprs = term.get("matchExpressions") if isinstance(term, Mapping) else None
            terms.append(tuple(e for e in (_expression(x) for x in (
                exprs if isinstance(exprs, list) else [])) if e is not None))
    return Placement(selector, tuple(terms) if terms is not None else None)


def restricted(p: Placement, keys: Set[str]) -> Placement:
    """Kueue's view of ``p`` for flavors declaring the label ``keys``: selector pairs and
    expressions on other keys dropped; a term left empty drops the whole affinity."""
    selector = {k: v for k, v in p.selector.items() if k in keys}
    if p.terms is None:
        return Placement(selector)
    terms = []
    for term in p.terms:
        kept = tuple(e for e in term if e[0] in keys)
        if not kept:
            return Placement(selector)
        terms.append(kept)
    return Placement(selector, tuple(terms) if terms else None)


def _holds(labels: Mapping[str, str], e: Expression) -> bool:
    key, op, values = e
    has = key in labels
    if op == "In":
        return has and labels[key] in values
    if op == "NotIn":
        return not has or labels[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(values) == 1:
        try:
            mine, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return mine > bound if op == "Gt" else mine < bound
    return False


def matches(labels: Mapping[str, str], p: Placement) -> bool:
    """Whether a node with ``labels`` satisfies placement ``p`` (an empty term matches no
    node, as in Kubernetes)."""
    if any(labels.get(k) != v for k, v in p.selector.items()):
        return False
    if p.terms is None:
        return True
    return any(term and all(_holds(labels, e) for e in term) for term in p.terms)
