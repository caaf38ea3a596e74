"""GKE Autopilot in the sandbox: a Pod that selects a TPU version and topology and requests
chips gets Nodes made for it, the way "Deploy TPU workloads on GKE Autopilot" describes
(fact ``kubernetes.tpu.autopilotNodes``, https://cloud.google.com/kubernetes-engine/docs/how-to/tpus-autopilot):
the whole slice at once, each node with the chips the container requests, labelled with the
accelerator and topology, tainted so only TPU pods land there; then the Pod is bound.

The three shapes are the page's own examples: TPU v5e 2x4 with 4 chips per container (two
multi-host nodes), v5e 2x4 with 8 chips (one single-host node) and the v4 2x2x4 Job of 4
pods x 4 chips (four nodes, one slice for all four pods). Driven with ``kubectl`` against
the sandbox API server, as a user of ``sandbox serve`` would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.sandbox.gke_cluster import seed_gke_cluster, serve_cloud

TOKEN = "t0ken"
KUBECTL = shutil.which("kubectl")
TPU_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"


@pytest.fixture
def kubectl(tmp_path: Path):
    """``kubectl`` pointed at a sandbox Autopilot cluster in ``us-central2`` (TPU v4) or
    ``us-central1`` (v5e): a function (region) -> run."""
    if KUBECTL is None:
        pytest.fail("kubectl is not on PATH (the gcloud SDK's kubectl is part of this "
                    "project's test machine)")
    servers = []

    def cluster(region: str):
        cloud = tmp_path / region
        cloud.mkdir()
        api = serve_cloud(cloud, token=TOKEN)
        servers.append(api)
        seed_gke_cluster(cloud, project="p", location=region, name="ap", api=api,
                         autopilot=True, node_pools=[])
        kc = api.kubeconfig(tmp_path / f"kubeconfig-{region}")

        def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return subprocess.run([str(KUBECTL), "--kubeconfig", str(kc), *argv],
                                  input=stdin, capture_output=True, text=True, timeout=60)

        return run

    try:
        yield cluster
    finally:
        for api in servers:
            api.stop()


def _pod(name: str, accelerator: str, topology: str | None, chips: int | None) -> str:
    selector = {TPU_LABEL: accelerator, **({TOPOLOGY_LABEL: topology} if topology else {})}
    limits = {"google.com/tpu": str(chips)} if chips else {}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"nodeSelector": selector, "containers": [{
                           "name": "c", "image": "busybox",
                           "resources": {"limits": limits, "requests": limits}}]}})


def _get(run, *argv: str) -> Any:
    r = run("get", *argv, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _apply(run, *objects: str) -> None:
    for obj in objects:  # one JSON document per kubectl apply
        r = run("apply", "-f", "-", stdin=obj)
        assert r.returncode == 0, r.stderr


def test_a_multi_host_v5e_slice_is_made_whole_for_its_first_pod(kubectl) -> None:
    run = kubectl("us-central1")
    assert _get(run, "nodes")["items"] == []  # Autopilot: no node before a workload
    _apply(run, _pod("w0", "tpu-v5-lite-podslice", "2x4", 4))
    nodes = _get(run, "nodes")["items"]
    assert len(nodes) == 2  # 8 chips of 2x4 at 4 per node: two multi-host nodes at once
    for node in nodes:
        labels = node["metadata"]["labels"]
        assert labels[TPU_LABEL] == "tpu-v5-lite-podslice"
        assert labels[TOPOLOGY_LABEL] == "2x4"
        assert labels["node.kubernetes.io/instance-type"] == "ct5lp-hightpu-4t"
        assert labels["topology.kubernetes.io/zone"].startswith("us-central1-")
        assert labels["cloud.google.com/gke-nodepool"].startswith("nap-")
        assert node["status"]["allocatable"]["google.com/tpu"] == "4"
        assert {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"} in \
            node["spec"]["taints"]
    first = _get(run, "pod", "w0")
    assert first["spec"]["nodeName"] in {n["metadata"]["name"] for n in nodes}
    assert first["status"]["conditions"][0]["status"] == "True"
    # the second pod of the slice takes the other node: nothing new is made
    _apply(run, _pod("w1", "tpu-v5-lite-podslice", "2x4", 4))
    assert len(_get(run, "nodes")["items"]) == 2
    second = _get(run, "pod", "w1")
    assert second["spec"]["nodeName"] not in (None, first["spec"]["nodeName"])
    # a third pod of the same shape needs another slice: two more nodes, another pool
    _apply(run, _pod("w2", "tpu-v5-lite-podslice", "2x4", 4))
    nodes = _get(run, "nodes")["items"]
    assert len(nodes) == 4
    assert len({n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] for n in nodes}) == 2
    assert _get(run, "pod", "w2")["spec"]["nodeName"]


def test_a_single_host_v5e_node_for_eight_chips(kubectl) -> None:
    run = kubectl("us-central1")
    _apply(run, _pod("one", "tpu-v5-lite-podslice", "2x4", 8))
    nodes = _get(run, "nodes")["items"]
    assert len(nodes) == 1
    labels = nodes[0]["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == "ct5lp-hightpu-8t"
    assert nodes[0]["status"]["allocatable"]["google.com/tpu"] == "8"
    assert nodes[0]["status"]["allocatable"]["pods"] == "32"
    assert _get(run, "pod", "one")["spec"]["nodeName"] == nodes[0]["metadata"]["name"]


def test_the_v4_job_of_four_pods_gets_one_slice_of_four_nodes(kubectl) -> None:
    """The page's multi-host example: a Job of 4 pods x 4 chips on v4 2x2x4, created by the
    sandbox's Job controller; Autopilot makes one slice of 4 nodes and each pod gets one."""
    run = kubectl("us-central2")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "tpu-job"},
           "spec": {"completionMode": "Indexed", "completions": 4, "parallelism": 4,
                    "backoffLimit": 0, "template": json.loads(_pod(
                        "x", "tpu-v4-podslice", "2x2x4", 4)) | {"metadata": {}}}}
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    job["spec"]["template"].pop("apiVersion")
    job["spec"]["template"].pop("kind")
    _apply(run, json.dumps(job))
    nodes = _get(run, "nodes")["items"]
    assert len(nodes) == 4
    assert {n["metadata"]["labels"]["node.kubernetes.io/instance-type"] for n in nodes} == {
        "ct4p-hightpu-4t"}
    assert {n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes} == {
        "us-central2-b"}
    pods = _get(run, "pods")["items"]
    assert len(pods) == 4
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(
        n["metadata"]["name"] for n in nodes)


def test_what_autopilot_does_not_make_here_is_left_as_written(kubectl) -> None:
    """Not modelled: general-purpose nodes (a pod with no TPU selector): such a pod gets no
    node and no scheduling verdict."""
    run = kubectl("us-central1")
    plain = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    _apply(run, plain)
    assert _get(run, "nodes")["items"] == []
    pod = _get(run, "pod", "plain")
    assert not pod["spec"].get("nodeName")
    assert not (pod.get("status") or {}).get("conditions")


def _failed_scheduling(run, name: str) -> list[str]:
    events = _get(run, "events", "--field-selector", f"involvedObject.name={name}")["items"]
    return [e["message"] for e in events if e["reason"] == "FailedScheduling"]


def test_a_tpu_pod_no_autopilot_node_shape_fits_stays_pending_with_the_reason(
        kubectl) -> None:
    """A TPU Pod that no node shape Autopilot could provision fits gets no node, and stays
    Pending with PodScheduled=False and a FailedScheduling event in the scheduler's words
    (the fresh-user finding: it had no status and no event): 16 chips on v5e 2x4 (a 2x4
    VM holds at most 8), a topology v5e does not have (3x3), 2 chips (no v5e machine type
    has 2 chips for 2x4). Over Nodes already there, each is counted; a pod that does fit
    (8 chips) still gets its node."""
    run = kubectl("us-central1")
    _apply(run, _pod("too-many", "tpu-v5-lite-podslice", "2x4", 16))
    assert _get(run, "nodes")["items"] == []
    pod = _get(run, "pod", "too-many")
    assert pod["status"]["phase"] == "Pending"
    assert not pod["spec"].get("nodeName")
    cond = pod["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "PodScheduled", "False", "Unschedulable")
    assert _failed_scheduling(run, "too-many") == ["no nodes available to schedule pods"]
    _apply(run, _pod("fits", "tpu-v5-lite-podslice", "2x4", 8))
    nodes = _get(run, "nodes")["items"]
    assert len(nodes) == 1
    assert _get(run, "pod", "fits")["spec"]["nodeName"] == nodes[0]["metadata"]["name"]
    _apply(run, _pod("no-such-topology", "tpu-v5-lite-podslice", "3x3", 4),
           _pod("odd", "tpu-v5-lite-podslice", "2x4", 2),
           _pod("sixteen", "tpu-v5-lite-podslice", "2x4", 16))
    assert len(_get(run, "nodes")["items"]) == 1  # nothing made for them
    assert _failed_scheduling(run, "no-such-topology") == [
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."]
    assert _failed_scheduling(run, "sixteen") == [
        "0/1 nodes are available: 1 Insufficient google.com/tpu. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod."]
    odd = _get(run, "pod", "odd")
    assert odd["status"]["conditions"][0]["status"] == "False"
    assert len(_failed_scheduling(run, "odd")) == 1
