"""The sandbox cluster's scheduler (sandbox: a double of kube-scheduler's filter step): a Pod
with no node is bound to the first node it fits, or stays Pending with the scheduler's own
words.

What a node must pass, in the order of kube-scheduler's default filter plugins
(TaintToleration, then NodeAffinity, then NodeResourcesFit); a node that fails one plugin
gives that plugin's reason(s) only, as the real framework stops at the first failing
filter:

* **taints**: every NoSchedule/NoExecute taint of the node is tolerated; a pod that requests
  an extended resource tolerates that resource's taint (the ExtendedResourceToleration
  admission plugin GKE runs; fact ``kubernetes.scheduling.extendedResourceToleration``).
  Reason ``node(s) had untolerated taint {key: value}``;
* **placement**: ``nodeSelector`` and required node affinity
  (:func:`mldiag_provision.cluster.affinity.matches`). Reason ``node(s) didn't match Pod's
  node affinity/selector``;
* **resources**: each request (cpu, memory, extended resources such as ``google.com/tpu``;
  the pod's effective request, :func:`mldiag_provision.cluster.check.pod_requests`) fits
  the node's ``status.allocatable`` less what the pods already bound there request, and the
  node holds fewer pods than its ``pods`` allocatable. Reasons ``Insufficient <resource>``,
  ``Too many pods``.

The message of a pod that fits nowhere (fact ``kubernetes.scheduling.failedScheduling``, as
are the reasons' words):
``0/N nodes are available: <count> <reason>, ... preemption: 0/N nodes are available:
<count> <why preemption does not help>.``, the reasons sorted as the scheduler sorts them.
Preemption is not modelled: a node that failed on resources answers "No preemption victims
found for incoming pod" (true where no pod of lower priority runs there), one that failed
on taints or placement "Preemption is not helpful for scheduling".

Not modelled: scoring (the first fitting node by name is chosen, not the best-scored), pod
(anti-)affinity, topology spread, host ports, volumes, preemption itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from mldiag_provision.quantity import parse_quantity

_BLOCKING = ("NoSchedule", "NoExecute")
_DONE = ("Succeeded", "Failed")


def _words() -> dict[str, Any]:
    """The scheduler's words (fact ``kubernetes.scheduling.failedScheduling``)."""
    from mldiag_provision.catalog.store import store

    fact: dict[str, Any] = store().get("kubernetes", "scheduling", "failedScheduling")
    return fact


@dataclass(frozen=True)
class Outcome:
    """Where a pod goes: ``node`` (its name), or None with ``message`` (the
    FailedScheduling event's text)."""

    node: str | None
    message: str | None = None


def _requested(name: str) -> bool:
    return name in ("cpu", "memory") or "/" in name


def requests_of(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """The pod's effective request per resource (cpu in cores, memory in bytes, extended
    resources in units), as the scheduler counts it."""
    from mldiag_provision.cluster.check import pod_requests
    from mldiag_provision.lint.loading import Resource
    from mldiag_provision.lint.workloads import PodTemplate
    from mldiag_provision.recipe.sourcemap import SourceMap

    template = PodTemplate(Resource("<sandbox api server>", SourceMap("<sandbox api server>"),
                                    dict(pod)), ())
    return {name: r.amount for name, r in pod_requests(template).items() if _requested(name)}


def _quantities(raw: object) -> dict[str, Decimal]:
    if not isinstance(raw, Mapping):
        return {}
    out = {}
    for name, value in raw.items():
        q = parse_quantity(str(value))
        if q is not None:
            out[str(name)] = q
    return out


def _untolerated(pod_spec: Mapping[str, Any], node: Mapping[str, Any],
                 requests: Mapping[str, Decimal]) -> dict[str, Any] | None:
    """The first taint of ``node`` that keeps the pod off, or None."""
    from mldiag_provision.cluster.check import tolerates
    from mldiag_provision.cluster.model import Taint

    raw = pod_spec.get("tolerations")
    tolerations = [x for x in raw if isinstance(x, Mapping)] if isinstance(raw, list) else []
    implicit = [{"key": n, "operator": "Exists", "effect": "NoSchedule"}
                for n, amount in requests.items() if "/" in n and amount > 0]
    for taint in (node.get("spec") or {}).get("taints") or []:
        t = Taint(str(taint.get("key") or ""), str(taint.get("value") or ""),
                  str(taint.get("effect") or ""))
        if t.effect in _BLOCKING and not any(tolerates(tol, t)
                                              for tol in (*tolerations, *implicit)):
            return dict(taint)
    return None


def _fit_reasons(pod: Mapping[str, Any], requests: Mapping[str, Decimal],
                 node: Mapping[str, Any], bound: list[Mapping[str, Any]],
                 ) -> tuple[list[str], bool]:
    """(reasons the pod does not fit ``node``, whether preemption could help); no reasons
    when it fits. ``bound``: the pods already on the node."""
    from mldiag_provision.cluster.affinity import matches, placement

    said = _words()["reasons"]
    spec = pod.get("spec") or {}
    taint = _untolerated(spec, node, requests)
    if taint is not None:
        return [said["taint"].format(key=taint.get("key"), value=taint.get("value") or "")
                ], False
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not matches(labels, placement(spec)):
        return [said["affinity"]], False
    allocatable = _quantities((node.get("status") or {}).get("allocatable"))
    used: dict[str, Decimal] = {}
    for other in bound:
        for name, amount in requests_of(other).items():
            used[name] = used.get(name, Decimal(0)) + amount
    reasons = []
    pods = allocatable.get("pods")
    if pods is not None and len(bound) + 1 > pods:
        reasons.append(said["pods"])
    for name in sorted(requests):
        amount = requests[name]
        if amount > 0 and amount > allocatable.get(name, Decimal(0)) - used.get(name, Decimal(0)):
            reasons.append(said["resource"].format(resource=name))
    return reasons, True


def runs_on(template: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the DaemonSet controller runs a pod of ``template`` (a pod template:
    ``{metadata, spec}``) on ``node``: the node matches its nodeSelector and required node
    affinity and it tolerates the node's NoSchedule/NoExecute taints
    (https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/#how-daemon-pods-are-scheduled).
    The tolerations DaemonSet pods get for node conditions (not-ready, unreachable,
    pressure) are not needed: sandbox nodes carry no condition taints."""
    from mldiag_provision.cluster.affinity import matches, placement

    spec = template.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not matches(labels, placement(spec)):
        return False
    return _untolerated(spec, node, requests_of({"spec": spec})) is None


def place(pod: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]],
          pods: Iterable[Mapping[str, Any]]) -> Outcome:
    """Where ``pod`` goes among ``nodes``, given the ``pods`` already there (any pod with a
    ``spec.nodeName`` that has not finished counts on its node)."""
    nodes = sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name")))
    if not nodes:
        return Outcome(None, _words()["noNodes"])
    on: dict[str, list[Mapping[str, Any]]] = {}
    for other in pods:
        where = (other.get("spec") or {}).get("nodeName")
        if where and (other.get("status") or {}).get("phase") not in _DONE:
            on.setdefault(str(where), []).append(other)
    requests = requests_of(pod)
    failed: Counter[str] = Counter()
    preemption: Counter[str] = Counter()
    why = _words()["preemption"]
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        reasons, helps = _fit_reasons(pod, requests, node, on.get(name, []))
        if not reasons:
            return Outcome(name)
        failed.update(reasons)
        preemption[why["resources"] if helps else why["other"]] += 1
    return Outcome(None, _fit_error(len(nodes), failed, preemption))


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def _fit_error(total: int, failed: Counter[str], preemption: Counter[str]) -> str:
    """The FailedScheduling text (kube-scheduler's FitError with the DefaultPreemption
    post-filter's answer appended)."""
    return str(_words()["words"]).format(nodes=total, reasons=_histogram(failed),
                                         preemption=_histogram(preemption))
