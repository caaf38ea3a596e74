"""Server-side printing in the sandbox API server (sandbox/tables.py): ``kubectl get pods`` /
``get nodes`` get the columns of the API server's own printers.

The cases are Kubernetes' own: pkg/printers/internalversion/printers_test.go of
kubernetes/kubernetes (TestPrintPod test1-test18, TestPrintNodeStatus foo8/foo9,
TestPrintNodeRole foo9-foo11), each pod's expected Name, Ready, Status, Restarts, Age cells
as that test expects them; the ages follow the branches of
staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go (HumanDuration).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.sandbox import tables
from mldiag_provision.sandbox.apiserver import ApiServer, ClusterView

NOW = datetime.datetime(2026, 12, 2, 12, 0, 0, tzinfo=datetime.UTC)
ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
          "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")


def _ago(seconds: float) -> str:
    return (NOW - datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _restarted(count: int, seconds_ago: float, **state: Any) -> dict[str, Any]:
    return {"restartCount": count, "state": state,
            "lastState": {"terminated": {"finishedAt": _ago(seconds_ago)}}}


RUNNING = {"running": {}}
DAY = 24 * 3600
POD_CASES = [
    # (name, containers, init containers, status, deleting, expected Ready/Status/Restarts)
    ("test1", 2, 0, {"phase": "podPhase", "containerStatuses": [
        {"ready": True, "restartCount": 3, "state": RUNNING}, {"restartCount": 3}]},
     False, ("1/2", "podPhase", "6")),
    ("test2", 2, 0, {"phase": "podPhase", "containerStatuses": [
        {"ready": True, "restartCount": 3, "state": RUNNING},
        {"restartCount": 3, "state": {"waiting": {"reason": "ContainerWaitingReason"}}}]},
     False, ("1/2", "ContainerWaitingReason", "6")),
    ("test3", 2, 0, {"phase": "podPhase", "containerStatuses": [
        {"restartCount": 3, "state": {"waiting": {"reason": "ContainerWaitingReason"}}},
        {"restartCount": 3, "state": {"terminated": {"reason": "ContainerTerminatedReason"}}}]},
     False, ("0/2", "ContainerWaitingReason", "6")),
    ("test5", 2, 0, {"reason": "podReason", "phase": "podPhase", "containerStatuses": [
        {"ready": True, "restartCount": 3, "state": RUNNING},
        {"ready": True, "restartCount": 3}]}, False, ("1/2", "podReason", "6")),
    ("test6", 2, 0, {"phase": "Running", "containerStatuses": [
        {"ready": True, "restartCount": 3,
         "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
        {"ready": True, "restartCount": 3, "state": RUNNING}]}, False, ("1/2", "NotReady", "6")),
    ("test6-ready", 2, 0, {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}], "containerStatuses": [
        {"ready": True, "restartCount": 3,
         "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
        {"ready": True, "restartCount": 3, "state": RUNNING}]}, False, ("1/2", "Running", "6")),
    ("test7", 1, 1, {"phase": "podPhase",
                     "initContainerStatuses": [_restarted(3, 10, running={})],
                     "containerStatuses": [{"state": {"waiting": {}}}]},
     False, ("0/1", "Init:0/1", "3 (10s ago)")),
    ("test9", 1, 2, {"phase": "podPhase", "initContainerStatuses": [
        {"state": {"terminated": {}}}, _restarted(3, 10, running={})],
        "containerStatuses": [{"state": {"waiting": {}}}]},
     False, ("0/1", "Init:1/2", "3 (10s ago)")),
    ("test10", 1, 2, {"phase": "podPhase", "initContainerStatuses": [
        _restarted(2, 120, terminated={}), _restarted(3, 10, running={})],
        "containerStatuses": [{"state": {"waiting": {}}}]},
     False, ("0/1", "Init:1/2", "5 (10s ago)")),
    ("test11", 1, 1, {"phase": "Running",
                      "initContainerStatuses": [_restarted(2, 120, terminated={})],
                      "containerStatuses": [_restarted(4, 20, running={})]},
     False, ("0/1", "Running", "4 (20s ago)")),
    ("test12", 1, 0, {"phase": "Running", "containerStatuses": [
        {**_restarted(3, 5 * DAY, running={}), "ready": True}]},
     False, ("1/1", "Running", "3 (5d ago)")),
    ("test14", 2, 0, {"phase": "Running", "containerStatuses": [
        {**_restarted(6, 5 * DAY, running={}), "ready": True},
        {**_restarted(3, 20 * DAY, running={}), "ready": True}]},
     False, ("2/2", "Running", "9 (5d ago)")),
    ("test15", 2, 0, {"phase": "podPhase", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]},
     False, ("0/2", "SchedulingGated", "0")),
    ("test16", 1, 0, {"phase": "Succeeded", "containerStatuses": [
        {"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]},
     False, ("0/1", "Completed", "0")),
    ("test17", 1, 0, {"phase": "Failed", "containerStatuses": [
        {"state": {"terminated": {"reason": "Error", "exitCode": 1}}}]},
     False, ("0/1", "Error", "0")),
    ("test18", 1, 0, {"phase": "Succeeded", "containerStatuses": [
        {"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]},
     True, ("0/1", "Completed", "0")),
    ("test19", 1, 0, {"phase": "Running", "containerStatuses": [
        {"ready": True, "state": RUNNING}]}, True, ("1/1", "Terminating", "0")),
]


@pytest.mark.parametrize(("name", "containers", "inits", "status", "deleting", "want"),
                         POD_CASES, ids=[c[0] for c in POD_CASES])
def test_pod_cells_are_kubernetes_printpod(name: str, containers: int, inits: int,
                                           status: dict[str, Any], deleting: bool,
                                           want: tuple[str, str, str]) -> None:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = _ago(10)
    pod = {"metadata": meta, "spec": {"containers": [{} for _ in range(containers)],
                                      "initContainers": [{} for _ in range(inits)]},
           "status": status}
    cells = tables.pod_cells(pod, NOW)
    assert cells[:5] == [name, *want, "<unknown>"]  # no creationTimestamp: <unknown>
    assert cells[5:] == ["<none>", "<none>", "<none>", "<none>"]  # the wide cells


@pytest.mark.parametrize(("node", "status", "roles"), [
    ({"metadata": {"name": "foo8"}, "spec": {"unschedulable": True},
      "status": {"conditions": [{"type": "InvalidValue", "status": "True"}]}},
     "Unknown,SchedulingDisabled", "<none>"),
    ({"metadata": {"name": "foo9"}, "spec": {"unschedulable": True},
      "status": {"conditions": [{}]}}, "Unknown,SchedulingDisabled", "<none>"),
    ({"metadata": {"name": "foo10", "labels": {
        "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": "",
        "node-role.kubernetes.io/proxy": "", "kubernetes.io/role": "node"}}},
     "Unknown", "control-plane,master,node,proxy"),
    ({"metadata": {"name": "foo11", "labels": {"kubernetes.io/role": "node"}}},
     "Unknown", "node"),
    ({"metadata": {"name": "ready"}, "status": {"conditions": [
        {"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.33.5-gke.1"}}},
     "Ready", "<none>"),
    ({"metadata": {"name": "notready"}, "status": {"conditions": [
        {"type": "Ready", "status": "False"}]}}, "NotReady", "<none>"),
])
def test_node_cells_are_kubernetes_printnode(node: dict[str, Any], status: str,
                                             roles: str) -> None:
    cells = tables.node_cells(node, NOW)
    version = (node.get("status") or {}).get("nodeInfo", {}).get("kubeletVersion", "")
    assert cells[:5] == [node["metadata"]["name"], status, roles, "<unknown>", version]
    assert cells[5:] == ["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]


@pytest.mark.parametrize(("seconds", "want"), [
    (-5, "<invalid>"), (-1, "0s"), (1, "1s"), (70, "70s"), (190, "3m10s"), (300, "5m"),
    (70 * 60, "70m"), (3 * 3600 + 20 * 60, "3h20m"), (5 * 3600, "5h"), (47 * 3600, "47h"),
    (49 * 3600, "2d1h"), (3 * DAY, "3d"), ((8 * 24 + 2) * 3600, "8d"), (367 * DAY, "367d"),
    ((365 * 2 + 1) * DAY, "2y1d"), (365 * 8 * DAY + 7200, "8y"),
])
def test_ages_are_human_duration(seconds: int, want: str) -> None:
    assert tables.human_duration(seconds) == want


def test_kubectl_s_accept_header_gets_a_table_from_the_sandbox_api_server() -> None:
    """Through the API server: a list and a single Pod as Table (columns, one row each,
    PartialObjectMetadata by default, the full object with includeObject=Object); a plain
    Accept and other kinds are answered as before."""
    api = ApiServer(ClusterView())
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    assert api.handle("POST", "/api/v1/namespaces", {}, json.dumps(ns).encode())[0] == 201
    code, _, _ = api.handle("POST", "/api/v1/namespaces/ns/pods", {},
                            json.dumps(pod).encode())
    assert code == 201
    headers = {"accept": ACCEPT}
    code, table, _ = api.handle("GET", "/api/v1/namespaces/ns/pods", headers, b"")
    assert code == 200 and table["kind"] == "Table", table
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
        "Readiness Gates"]
    assert [c["priority"] for c in table["columnDefinitions"]] == [0] * 5 + [1] * 4
    [row] = table["rows"]
    assert row["cells"][:4] == ["p", "0/1", "", "0"]  # no phase yet: the stored status
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert table["metadata"]["resourceVersion"]
    code, one, _ = api.handle("GET", "/api/v1/namespaces/ns/pods/p?includeObject=Object",
                              headers, b"")
    assert one["kind"] == "Table" and one["rows"][0]["object"]["kind"] == "Pod"
    code, plain, _ = api.handle("GET", "/api/v1/namespaces/ns/pods", {}, b"")
    assert plain["kind"] == "PodList"
    code, other, _ = api.handle("GET", "/api/v1/namespaces", headers, b"")
    assert other["kind"] == "NamespaceList"  # no printer here: as before
    code, beta, _ = api.handle("GET", "/api/v1/nodes", {
        "accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"}, b"")
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    assert [c["name"] for c in beta["columnDefinitions"]][:5] == [
        "Name", "Status", "Roles", "Age", "Version"]


def test_kubectl_get_pods_and_nodes_shows_the_printers_columns(tmp_path: Path) -> None:
    """The real kubectl against the sandbox cluster (as `sandbox serve` gives it): ``get
    pods`` shows READY STATUS RESTARTS AGE, ``get nodes`` STATUS ROLES AGE VERSION, and
    ``-o wide`` the priority-1 columns."""
    import shutil
    import subprocess

    from mldiag_provision.sandbox.gke_cluster import seed_gke_cluster, serve_cloud

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    cloud = tmp_path / "cloud"
    cloud.mkdir()
    api = serve_cloud(cloud, token="t0ken")
    try:
        seed_gke_cluster(cloud, project="p", location="us-central1", name="c", api=api,
                         node_pools=[{"name": "v5e", "machine_type": "ct5lp-hightpu-4t",
                                      "node_count": 2, "zone": "us-central1-a",
                                      "tpu_topology": "2x4"}])
        kc = api.kubeconfig(tmp_path / "kubeconfig")

        def run(*argv: str, stdin: str | None = None) -> str:
            r = subprocess.run([kubectl, "--kubeconfig", str(kc), *argv], input=stdin,
                               capture_output=True, text=True, timeout=60, check=False)
            assert r.returncode == 0, r.stderr
            return r.stdout

        run("apply", "-f", "-", stdin="apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
            "spec:\n  containers: [{name: c, image: busybox}]\n")
        pods = run("get", "pods").splitlines()
        assert pods[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert pods[1].split()[:4] == ["p", "0/1", "Pending", "0"], pods
        nodes = run("get", "nodes").splitlines()
        assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        assert len(nodes) == 3 and all(n.split()[1:3] == ["Ready", "<none>"]
                                       for n in nodes[1:]), nodes
        wide = run("get", "pods", "-o", "wide").splitlines()[0].split()
        assert wide == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                        "NOMINATED", "NODE", "READINESS", "GATES"], wide
    finally:
        api.stop()
