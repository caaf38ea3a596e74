"""Server-side printing for the sandbox API server: a ``meta.k8s.io`` Table for Pods and
Nodes, so that ``kubectl get pods`` / ``kubectl get nodes`` against the sandbox show the
columns they show against a real cluster.

kubectl asks for tables with ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...``
and prints the server's columns; a server that answers with the plain list gets only NAME
and AGE (https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-tables).
The columns and the cells are those of the API server's printers,
pkg/printers/internalversion/printers.go of kubernetes/kubernetes
(https://github.com/kubernetes/kubernetes/blob/master/pkg/printers/internalversion/printers.go;
the stored revision read has ``printPod`` with restartable init containers and
``SchedulingGated``):

* Pods: Name, Ready (ready containers / containers, restartable init containers counted),
  Status (the phase, ``status.reason``, ``SchedulingGated``, an init container's
  ``Init:...``, a container's waiting or terminated reason, ``Terminating``), Restarts
  (with "(AGE ago)" of the last restart), Age; priority 1 (``-o wide``): IP, Node,
  Nominated Node, Readiness Gates;
* Nodes: Name, Status (``Ready``/``NotReady``/``Unknown`` from the Ready condition, plus
  ``SchedulingDisabled``), Roles (``node-role.kubernetes.io/<role>`` and
  ``kubernetes.io/role`` labels, ``<none>``), Age, Version (the kubelet's); priority 1:
  Internal-IP, External-IP, OS-Image, Kernel-Version, Container-Runtime.

The server generates the wide cells always (pkg/printers/storage/storage.go passes
``Wide: true``); kubectl hides priority-1 columns unless ``-o wide``. Ages are
``duration.HumanDuration`` (staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go):
:func:`human_duration`. Each row carries the object as ``includeObject`` asks (``None``,
``Metadata``, the default: a PartialObjectMetadata, or ``Object``). Other kinds are served as
before (plain JSON).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

_NAME = {"name": "Name", "type": "string", "format": "name", "priority": 0,
         "description": "Name must be unique within a namespace."}
_AGE = {"name": "Age", "type": "string", "format": "", "priority": 0,
        "description": "CreationTimestamp is a timestamp representing the server time when "
                       "this object was created."}


def _col(name: str, description: str, priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": "string", "format": "", "priority": priority,
            "description": description}


POD_COLUMNS = [
    _NAME,
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col("Restarts", "The number of times the containers in this pod have been restarted "
                     "and when the last container in this pod has restarted."),
    _AGE,
    _col("IP", "podIP address allocated to the pod.", 1),
    _col("Node", "NodeName indicates in which node this pod is scheduled.", 1),
    _col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods "
                           "on the node.", 1),
    _col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod "
                            "readiness.", 1),
]
NODE_COLUMNS = [
    _NAME,
    _col("Status", "The status of the node"),
    _col("Roles", "The roles of the node"),
    _AGE,
    _col("Version", "Kubelet Version reported by the node."),
    _col("Internal-IP", "List of addresses reachable to the node.", 1),
    _col("External-IP", "List of addresses reachable to the node.", 1),
    _col("OS-Image", "OS Image reported by the node from /etc/os-release.", 1),
    _col("Kernel-Version", "Kernel Version reported by the node from 'uname -r'.", 1),
    _col("Container-Runtime", "ContainerRuntime Version reported by the node through runtime "
                              "remote API.", 1),
]


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: ~2-3 significant figures (``45s``, ``5m30s``, ``3h20m``,
    ``2d3h``, ``1y20d``); ``<invalid>`` for more than a second in the future."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _since(stamp: Any, now: datetime.datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` for no time."""
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    try:
        then = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=datetime.UTC)
    return human_duration((now - then).total_seconds())


def _restartable(container: dict[str, Any] | None) -> bool:
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _finished(cs: dict[str, Any]) -> str:
    """The ``lastState.terminated.finishedAt`` of a container status (RFC 3339 text, ``""``
    when none): printPod's time of the last restart."""
    term = ((cs.get("lastState") or {}).get("terminated") or {})
    return str(term.get("finishedAt") or "")


def _condition_true(conditions: list[dict[str, Any]], kind: str) -> bool:
    """Whether the Pod condition of type ``kind`` has status ``"True"``."""
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


@dataclass
class _Counts:
    """printPod's running totals for one row: ready containers, restarts and the latest
    restart's finish time (RFC 3339 text, compared as text), and the restarts of the
    restartable init containers (sidecars) alone, which it keeps when it goes on to the app
    containers."""

    ready: int = 0
    restarts: int = 0
    last: str = ""
    sidecar_restarts: int = 0
    last_sidecar: str = ""


def _phase_reason(status: dict[str, Any], conditions: list[dict[str, Any]]) -> str:
    """The reason printPod starts from: ``status.reason``, else the phase;
    ``SchedulingGated`` when the PodScheduled condition says so."""
    reason = str(status.get("reason") or "") or str(status.get("phase") or "")
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
           for c in conditions):
        reason = "SchedulingGated"
    return reason


def _init_blocked_reason(index: int, state: dict[str, Any], count: int) -> str:
    """The ``Init:...`` reason of the init container (number ``index`` of ``count``) that
    holds the Pod back: its terminated reason, signal or exit code, its waiting reason
    (other than ``PodInitializing``), else ``Init:index/count``."""
    term, wait = state.get("terminated"), state.get("waiting")
    if term is not None:
        if term.get("reason"):
            return "Init:" + str(term["reason"])
        if term.get("signal"):
            return f"Init:Signal:{term['signal']}"
        return f"Init:ExitCode:{term.get('exitCode', 0)}"
    if wait is not None and wait.get("reason") and wait["reason"] != "PodInitializing":
        return "Init:" + str(wait["reason"])
    return f"Init:{index}/{count}"


def _init_containers_reason(spec: dict[str, Any], status: dict[str, Any],
                            counts: _Counts) -> str | None:
    """printPod's loop over the init container statuses: counts restarts (and those of
    sidecars apart) and ready started sidecars into ``counts``; the ``Init:...`` reason of
    the first init container that has neither succeeded nor started as a sidecar, or None
    when none holds the Pod back."""
    init_specs = spec.get("initContainers") or []
    inits = {c.get("name"): c for c in init_specs}
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        counts.restarts += int(cs.get("restartCount") or 0)
        counts.last = max(counts.last, _finished(cs))
        sidecar = _restartable(inits.get(cs.get("name")))
        if sidecar:
            counts.sidecar_restarts += int(cs.get("restartCount") or 0)
            counts.last_sidecar = max(counts.last_sidecar, _finished(cs))
        state = cs.get("state") or {}
        term = state.get("terminated")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            counts.ready += bool(cs.get("ready"))
            continue
        return _init_blocked_reason(i, state, len(init_specs))
    return None


def _container_state_reason(state: dict[str, Any]) -> str | None:
    """The reason one app container's state gives: its waiting reason, its terminated
    reason, ``Signal:N`` or ``ExitCode:N``; None when it gives none (running)."""
    term, wait = state.get("terminated"), state.get("waiting")
    if wait is not None and wait.get("reason"):
        return str(wait["reason"])
    if term is None:
        return None
    if term.get("reason"):
        return str(term["reason"])
    return (f"Signal:{term['signal']}" if term.get("signal")
            else f"ExitCode:{term.get('exitCode', 0)}")


def _containers_reason(status: dict[str, Any], conditions: list[dict[str, Any]],
                       reason: str, counts: _Counts) -> str:
    """printPod's loop over the app container statuses (last first): restarts start again
    from the sidecars' own, ready running containers are counted into ``counts``; the
    reason the last container with one gives, else ``reason``; ``Completed`` with a
    container still running reads ``Running`` (Ready condition true) or ``NotReady``."""
    counts.restarts, counts.last = counts.sidecar_restarts, counts.last_sidecar
    running = False
    for cs in reversed(status.get("containerStatuses") or []):
        counts.restarts += int(cs.get("restartCount") or 0)
        counts.last = max(counts.last, _finished(cs))
        state = cs.get("state") or {}
        stated = _container_state_reason(state)
        if stated is not None:
            reason = stated
        elif cs.get("ready") and state.get("running") is not None:
            running = True
            counts.ready += 1
    if reason == "Completed" and running:
        reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"
    return reason


def _deletion_reason(meta: dict[str, Any], status: dict[str, Any], reason: str) -> str:
    """The reason of a Pod being deleted: ``Unknown`` when its node is lost,
    ``Terminating`` unless it has finished (``Succeeded``/``Failed``), else ``reason``."""
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        return "Unknown"
    if meta.get("deletionTimestamp") and str(status.get("phase") or "") not in (
            "Succeeded", "Failed"):
        return "Terminating"
    return reason


def _pod_reason(pod: dict[str, Any], counts: _Counts) -> str:
    """printPod's Status cell, in its order: phase, init containers, app containers (when
    no init container holds the Pod back, or the Pod is Initialized), deletion."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    conditions = status.get("conditions") or []
    reason = _phase_reason(status, conditions)
    blocked = _init_containers_reason(spec, status, counts)
    if blocked is not None:
        reason = blocked
    if blocked is None or _condition_true(conditions, "Initialized"):
        reason = _containers_reason(status, conditions, reason, counts)
    return _deletion_reason(pod.get("metadata") or {}, status, reason)


def _restarts_cell(counts: _Counts, now: datetime.datetime) -> str:
    """``N``, or ``N (AGE ago)`` when there were restarts and the last one has a time."""
    if counts.restarts and counts.last:
        return f"{counts.restarts} ({_since(counts.last, now)} ago)"
    return str(counts.restarts)


def _gates_cell(spec: dict[str, Any], conditions: list[dict[str, Any]]) -> str:
    """``true/total`` readiness gates whose condition is ``"True"``; ``<none>`` without
    gates."""
    gates = spec.get("readinessGates") or []
    if not gates:
        return "<none>"
    by_type = {c.get("type"): c.get("status") for c in conditions}
    true = sum(by_type.get(g.get("conditionType")) == "True" for g in gates)
    return f"{true}/{len(gates)}"


def pod_cells(pod: dict[str, Any], now: datetime.datetime) -> list[Any]:
    """The cells of one Pod row (printPod, wide)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    meta = pod.get("metadata") or {}
    init_specs = spec.get("initContainers") or []
    total = len(spec.get("containers") or []) + sum(_restartable(c) for c in init_specs)
    counts = _Counts()
    reason = _pod_reason(pod, counts)
    ips = status.get("podIPs") or []
    ip = (ips[0].get("ip") if ips else "") or "<none>"
    return [meta.get("name", ""), f"{counts.ready}/{total}", reason,
            _restarts_cell(counts, now), _since(meta.get("creationTimestamp"), now), ip,
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
            _gates_cell(spec, status.get("conditions") or [])]


def _node_status(node: dict[str, Any]) -> str:
    """``Ready``/``NotReady`` from the Ready condition (``Unknown`` without one), plus
    ``SchedulingDisabled`` on an unschedulable node, comma-joined."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    states = (["Unknown"] if ready is None else
              ["Ready" if ready.get("status") == "True" else "NotReady"])
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    return ",".join(states)


def _node_roles(labels: dict[str, Any]) -> str:
    """The roles of ``node-role.kubernetes.io/<role>`` label keys and ``kubernetes.io/role``
    label values, sorted and comma-joined; ``<none>``."""
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]:
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(status: dict[str, Any], kind: str) -> str:
    """The first address of type ``kind`` (``InternalIP``, ``ExternalIP``); ``<none>``."""
    return next((str(a.get("address")) for a in status.get("addresses") or []
                 if a.get("type") == kind), "<none>")


def node_cells(node: dict[str, Any], now: datetime.datetime) -> list[Any]:
    """The cells of one Node row (printNode, wide)."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    info = status.get("nodeInfo") or {}
    return [meta.get("name", ""), _node_status(node), _node_roles(meta.get("labels") or {}),
            _since(meta.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            _node_address(status, "InternalIP"), _node_address(status, "ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def answer(req: Any, headers: dict[str, str],
           result: tuple[int, Any, list[str]]) -> tuple[int, Any, list[str]]:
    """The API server's answer to ``req`` (its ``Request``), as a Table when the client asked
    for one (``accept`` header) on a GET of a kind with a printer here."""
    code, payload, warnings = result
    res = getattr(req, "res", None)
    if (req.method != "GET" or code != 200 or res is None or req.subresource
            or not isinstance(payload, dict)):
        return result
    table = as_table(res.group, res.plural, payload, headers.get("accept", ""),
                     req.query.get("includeObject"))
    return result if table is None else (code, table, warnings)


_PRINTERS = {("", "pods"): (POD_COLUMNS, pod_cells), ("", "nodes"): (NODE_COLUMNS, node_cells)}


def table_version(accept: str) -> str | None:
    """The ``meta.k8s.io`` version of the first Table media type ``accept`` lists (``v1`` or
    ``v1beta1``), else None."""
    for media in accept.split(","):
        params = dict(p.strip().split("=", 1) for p in media.split(";")[1:] if "=" in p)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and \
                params.get("v") in ("v1", "v1beta1"):
            return params["v"]
    return None


def _row_object(obj: dict[str, Any], include: str, version: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": obj.get("metadata") or {}}


def as_table(group: str, plural: str, payload: dict[str, Any], accept: str,
             include: str | None = None, now: datetime.datetime | None = None
             ) -> dict[str, Any] | None:
    """``payload`` (one object, or a ``...List``) as the Table ``accept`` asks for, for the
    kinds with a printer here; None otherwise (the caller answers as before)."""
    version = table_version(accept)
    printer = _PRINTERS.get((group, plural))
    if version is None or printer is None:
        return None
    columns, cells = printer
    now = now or datetime.datetime.now(datetime.UTC)
    listed = str(payload.get("kind", "")).endswith("List")
    items = (payload.get("items") or []) if listed else [payload]
    rows = []
    for obj in items:
        row: dict[str, Any] = {"cells": cells(obj, now)}
        inner = _row_object(obj, include or "Metadata", version)
        if inner is not None:
            row["object"] = inner
        rows.append(row)
    meta = payload.get("metadata") or {}
    table_meta = {k: meta[k] for k in ("resourceVersion", "continue") if listed and k in meta}
    if not listed and meta.get("resourceVersion"):
        table_meta["resourceVersion"] = meta["resourceVersion"]
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}", "metadata": table_meta,
            "columnDefinitions": columns, "rows": rows}
