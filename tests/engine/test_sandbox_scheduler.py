"""The sandbox cluster schedules Pods as kube-scheduler's filter step does
(mldiag_provision/sandbox/scheduler.py): bound to a node they fit, or Pending with the
scheduler's own FailedScheduling words; and ``kubectl apply``/``describe`` work against it
(OpenAPI v3 discovery, server-side field validation, Events by field selector).

Expected words: kube-scheduler's FailedScheduling events captured in public reports
(NVIDIA/k8s-device-plugin#348 and #430, klothoplatform/klotho#553; fact
``kubernetes.scheduling.failedScheduling``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mldiag_provision.sandbox.gke_cluster import pool_nodes, seed_gke_cluster, serve_cloud
from mldiag_provision.sandbox.scheduler import place

TOKEN = "t0ken"
CLUSTER = {"name": "c", "location": "us-central1"}


def _pool(name: str, machine: str, count: int, **cfg: object) -> dict:
    return {"name": name, "node_count": count, "node_locations": ["us-central1-a"],
            "node_config": [{"machine_type": machine, **cfg}], "placement_policy": []}


def _pod(name: str, tpu: int = 0, *, selector: dict | None = None,
         tolerations: list | None = None, node: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "busybox", "resources": {
        "limits": {"google.com/tpu": str(tpu)}} if tpu else {}}]}
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"},
            "spec": spec, "status": {"phase": "Pending"}}


V5E = pool_nodes(CLUSTER, _pool("v5e", "ct5lp-hightpu-4t", 4))  # 4 chips each


def test_a_pod_above_every_node_stays_pending_with_insufficient_tpu() -> None:
    out = place(_pod("big", 8), V5E, [])
    assert out.node is None
    assert out.message == (
        "0/4 nodes are available: 4 Insufficient google.com/tpu. preemption: 0/4 nodes are "
        "available: 4 No preemption victims found for incoming pod.")


def test_a_selector_no_node_matches_is_not_helped_by_preemption() -> None:
    out = place(_pod("p", 4, selector={"cloud.google.com/gke-tpu-topology": "8x8"}), V5E, [])
    assert out.message == (
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")


def test_pods_fill_nodes_and_each_node_counts_under_its_first_failing_filter() -> None:
    """Bound pods use up their node's chips; a node tainted for other work counts under the
    taint (TaintToleration runs before NodeResourcesFit), the full ones under the chips;
    the reasons are sorted as the scheduler sorts them."""
    infra = pool_nodes(CLUSTER, _pool("infra", "ct5lp-hightpu-4t", 2))
    for n in infra:
        n["spec"]["taints"].append({"key": "dedicated", "value": "infra",
                                    "effect": "NoSchedule"})
    nodes = infra + pool_nodes(CLUSTER, _pool("v5e", "ct5lp-hightpu-4t", 2))
    running: list[dict] = []
    for i in range(2):
        out = place(_pod(f"w{i}", 4), nodes, running)
        assert out.node is not None and "-v5e-" in out.node, out
        running.append(_pod(f"w{i}", 4, node=out.node))
    assert len({p["spec"]["nodeName"] for p in running}) == 2  # one pod per 4-chip node
    out = place(_pod("w2", 4), nodes, running)
    assert out.message == (
        "0/4 nodes are available: 2 Insufficient google.com/tpu, 2 node(s) had untolerated "
        "taint {dedicated: infra}. preemption: 0/4 nodes are available: 2 No preemption "
        "victims found for incoming pod, 2 Preemption is not helpful for scheduling.")
    # a finished pod gives its chips back; a toleration lets the pod onto the tainted pool
    running[0]["status"]["phase"] = "Succeeded"
    assert place(_pod("w3", 4), nodes, running).node == running[0]["spec"]["nodeName"]
    tolerant = _pod("w4", 4, tolerations=[{"key": "dedicated", "operator": "Equal",
                                           "value": "infra", "effect": "NoSchedule"}])
    assert "-infra-" in str(place(tolerant, nodes, running).node)


def test_an_accelerator_pod_tolerates_its_own_resource_taint_and_others_do_not() -> None:
    """GKE taints TPU nodes google.com/tpu=present:NoSchedule; a pod asking for chips gets
    the toleration (ExtendedResourceToleration), a plain pod does not."""
    assert place(_pod("tpu", 4), V5E, []).node is not None
    out = place(_pod("plain"), V5E, [])
    assert out.message is not None and out.message.startswith(
        "0/4 nodes are available: 4 node(s) had untolerated taint {google.com/tpu: present}.")


def test_no_nodes_at_all() -> None:
    assert place(_pod("p", 1), [], []).message == "no nodes available to schedule pods"


# --- through kubectl, as a user of `sandbox serve` types it ----------------------------------

KUBECTL = shutil.which("kubectl")


@pytest.fixture
def kubectl(tmp_path: Path):
    """``kubectl`` pointed at a sandbox Standard cluster with a 4-node v5e pool."""
    if KUBECTL is None:
        pytest.fail("kubectl is not on PATH (the gcloud SDK's kubectl is part of this "
                    "project's test machine)")
    cloud = tmp_path / "cloud"
    cloud.mkdir()
    api = serve_cloud(cloud, token=TOKEN)
    try:
        seed_gke_cluster(cloud, project="p", location="us-central1", name="c", api=api,
                         node_pools=[{"name": "v5e", "machine_type": "ct5lp-hightpu-4t",
                                      "node_count": 4, "zone": "us-central1-a",
                                      "tpu_topology": "4x4"}])
        kc = api.kubeconfig(tmp_path / "kubeconfig")

        def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return subprocess.run([str(KUBECTL), "--kubeconfig", str(kc), *argv],
                                  input=stdin, capture_output=True, text=True, timeout=60)

        yield run, api
    finally:
        api.stop()


POD = """apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice}
  containers:
  - name: c
    image: busybox
    resources: {limits: {google.com/tpu: %d}}
"""


def test_kubectl_apply_leaves_a_pod_that_fits_nowhere_pending_and_describe_says_why(
        kubectl) -> None:
    run, api = kubectl
    r = run("apply", "-f", "-", stdin=POD % ("big", 8) + "---\n" + POD % ("fits", 4))
    assert r.returncode == 0, r.stderr
    assert "pod/big created" in r.stdout and "pod/fits created" in r.stdout
    r = run("describe", "pod", "big")
    assert r.returncode == 0, r.stderr
    assert "Status:       Pending" in r.stdout
    assert "PodScheduled   False" in r.stdout
    assert "FailedScheduling" in r.stdout and "default-scheduler" in r.stdout
    assert ("0/4 nodes are available: 4 Insufficient google.com/tpu. preemption: 0/4 nodes "
            "are available: 4 No preemption victims found for incoming pod.") in r.stdout
    r = run("get", "pod", "fits", "-o", "json")
    assert r.returncode == 0, r.stderr
    fits = json.loads(r.stdout)
    assert fits["spec"]["nodeName"].startswith("gke-c-v5e-")
    assert fits["status"]["conditions"][0] == {**fits["status"]["conditions"][0],
                                               "type": "PodScheduled", "status": "True"}
    # the events of one pod only (kubectl asks by involvedObject field selector)
    r = run("get", "events", "--field-selector", "involvedObject.name=fits", "-o", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["items"] == [], r.stdout
    # kubectl sent its default strict field validation, which the server honoured
    assert any("fieldValidation=Strict" in path for _, path in api.requests)


def test_kubectl_strict_field_validation_refuses_an_unknown_field(kubectl) -> None:
    """kube-apiserver's strict decoding error (BadRequest) for an unknown field; with
    --validate=warn the object is created and the field named in a warning."""
    run, _ = kubectl
    bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  foo: 1\n" \
          "  containers: [{name: c, image: busybox}]\n"
    r = run("apply", "-f", "-", stdin=bad)
    assert r.returncode == 1
    assert ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown '
            'field "spec.foo"') in r.stderr, r.stderr
    r = run("apply", "--validate=warn", "-f", "-", stdin=bad)
    assert r.returncode == 0, r.stderr
    assert 'Warning: unknown field "spec.foo"' in r.stderr
