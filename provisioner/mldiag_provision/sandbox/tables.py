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


def pod_cells(pod: dict[str, Any], now: datetime.datetime) -> list[Any]:
    """The cells of one Pod row (printPod, wide)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    meta = pod.get("metadata") or {}
    init_specs = spec.get("initContainers") or []
    inits = {c.get("name"): c for c in init_specs}
    total = len(spec.get("containers") or []) + sum(_restartable(c) for c in init_specs)
    ready = restarts = sidecar_restarts = 0
    last: str = ""
    last_sidecar: str = ""
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or "") or phase
    conditions = status.get("conditions") or []
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
           for c in conditions):
        reason = "SchedulingGated"

    def finished(cs: dict[str, Any]) -> str:
        term = ((cs.get("lastState") or {}).get("terminated") or {})
        return str(term.get("finishedAt") or "")

    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        last = max(last, finished(cs))
        sidecar = _restartable(inits.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            last_sidecar = max(last_sidecar, finished(cs))
        state = cs.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += bool(cs.get("ready"))
            continue
        if term is not None:
            if term.get("reason"):
                reason = "Init:" + str(term["reason"])
            elif term.get("signal"):
                reason = f"Init:Signal:{term['signal']}"
            else:
                reason = f"Init:ExitCode:{term.get('exitCode', 0)}"
        elif wait is not None and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + str(wait["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in conditions)
    if not initializing or initialized:
        restarts, last = sidecar_restarts, last_sidecar
        running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last = max(last, finished(cs))
            state = cs.get("state") or {}
            term, wait = state.get("terminated"), state.get("waiting")
            if wait is not None and wait.get("reason"):
                reason = str(wait["reason"])
            elif term is not None and term.get("reason"):
                reason = str(term["reason"])
            elif term is not None:
                reason = (f"Signal:{term['signal']}" if term.get("signal")
                          else f"ExitCode:{term.get('exitCode', 0)}")
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if any(c.get("type") == "Ready" and c.get("status") == "True"
                                      for c in conditions) else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_cell = str(restarts)
    if restarts and last:
        restarts_cell = f"{restarts} ({_since(last, now)} ago)"
    ips = status.get("podIPs") or []
    ip = (ips[0].get("ip") if ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    gates_cell = "<none>"
    if gates:
        by_type = {c.get("type"): c.get("status") for c in conditions}
        true = sum(by_type.get(g.get("conditionType")) == "True" for g in gates)
        gates_cell = f"{true}/{len(gates)}"
    return [meta.get("name", ""), f"{ready}/{total}", reason, restarts_cell,
            _since(meta.get("creationTimestamp"), now), ip, spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", gates_cell]


def node_cells(node: dict[str, Any], now: datetime.datetime) -> list[Any]:
    """The cells of one Node row (printNode, wide)."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, \
        node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    states = (["Unknown"] if ready is None else
              ["Ready" if ready.get("status") == "True" else "NotReady"])
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (meta.get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]:
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        return next((str(a.get("address")) for a in status.get("addresses") or []
                     if a.get("type") == kind), "<none>")

    return [meta.get("name", ""), ",".join(states), ",".join(sorted(roles)) or "<none>",
            _since(meta.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            address("InternalIP"), address("ExternalIP"), info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>",
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
