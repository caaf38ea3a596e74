"""`verify`'s GPUDirect check (issue 14) against the wire-level fake API server: the Network
objects of each networked slice and the NCCL plugin installer's readiness."""

from __future__ import annotations

from pathlib import Path

from fake_apiserver import FakeApiServer
from kubernetes import client

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.verify.checks import Cluster, check_gpu_networks, run_checks
from stack_support import REPO_ROOT

A3_ULTRA = REPO_ROOT / "recipes" / "gpu-a3-ultra-standard.yaml"
NETWORKS = "/apis/networking.gke.io/v1/networks"
INSTALLER = "/apis/apps/v1/namespaces/kube-system/daemonsets/nccl-rdma-installer"


def _plan(recipe: Path):  # type: ignore[no-untyped-def]
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan

    res = check_file(str(recipe), load_catalog())
    assert res.parsed.recipe is not None
    return build_plan(res.parsed.recipe, res.shapes, load_catalog())


def _cluster(api: FakeApiServer) -> Cluster:
    cfg = client.Configuration()
    cfg.host = api.url
    return Cluster(client.ApiClient(cfg))


def _objects(networks: list[str], ready: int, desired: int = 2) -> dict[str, object]:
    return {
        NETWORKS: {"apiVersion": "networking.gke.io/v1", "kind": "NetworkList", "metadata": {},
                   "items": [{"apiVersion": "networking.gke.io/v1", "kind": "Network",
                              "metadata": {"name": n}, "spec": {"type": "Device"}}
                             for n in networks]},
        INSTALLER: {"apiVersion": "apps/v1", "kind": "DaemonSet",
                    "metadata": {"name": "nccl-rdma-installer", "namespace": "kube-system"},
                    "spec": {"selector": {"matchLabels": {"k8s-app": "nccl-rdma-installer"}},
                             "template": {"spec": {"containers": [{"name": "p",
                                                                   "image": "x"}]}}},
                    "status": {"desiredNumberScheduled": desired, "numberReady": ready,
                               "currentNumberScheduled": desired, "numberMisscheduled": 0}},
    }


ALL = ["a3u-gvnic"] + [f"a3u-rdma-{n}" for n in range(8)]


def test_networks_and_ready_installer_pass() -> None:
    plan = _plan(A3_ULTRA)
    with FakeApiServer() as api:
        api.objects.update(_objects(ALL, ready=2))
        results = check_gpu_networks(_cluster(api), plan)
    assert [(r.check, r.status) for r in results] == [("gpu-network:a3u", "PASS")]


def test_missing_network_and_unready_installer_fail() -> None:
    plan = _plan(A3_ULTRA)
    with FakeApiServer() as api:
        api.objects.update(_objects(ALL[:-1], ready=2))
        missing = check_gpu_networks(_cluster(api), plan)
        api.objects.update(_objects(ALL, ready=1))
        unready = check_gpu_networks(_cluster(api), plan)
    assert missing[0].status == "FAIL" and "a3u-rdma-7" in missing[0].message
    assert unready[0].status == "FAIL" and "1 of 2" in unready[0].message


def test_nothing_applied_yet_is_a_skip() -> None:
    plan = _plan(A3_ULTRA)
    with FakeApiServer() as api:
        api.objects.update(_objects([], ready=0))
        results = check_gpu_networks(_cluster(api), plan)
    assert [(r.check, r.status) for r in results] == [("gpu-network:a3u", "SKIP")]


def test_stacks_without_gpu_networking_have_no_such_check() -> None:
    plan = _plan(REPO_ROOT / "recipes" / "tpu7x-2x2x4-standard.yaml")
    with FakeApiServer() as api:
        checks = {r.check for r in run_checks(_cluster(api), plan, load_catalog())}
    assert not any(c.startswith("gpu-network") for c in checks)


def _gpu_nodes(n: int) -> dict[str, object]:
    return {"/api/v1/nodes": {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"gke-a3u-{i}", "labels": {
            "cloud.google.com/gke-accelerator": "nvidia-h200-141gb"}}} for i in range(n)]}}


def test_an_installer_scheduled_on_fewer_nodes_than_the_stack_has_fails() -> None:
    """The DaemonSet ready on all the nodes it is scheduled on is not enough: the stack's two
    A3 Ultra nodes both need the NCCL plugin, so 1 ready of 1 desired with 2 GPU nodes fails
    (issue 31: the check passed with the installer on 1 of the stack's 2 GPU nodes)."""
    plan = _plan(A3_ULTRA)
    [net] = plan.gpu_networks
    assert net.accelerator == "nvidia-h200-141gb"
    with FakeApiServer() as api:
        api.objects.update(_objects(ALL, ready=1, desired=1))
        api.objects.update(_gpu_nodes(2))
        short = check_gpu_networks(_cluster(api), plan)
        api.objects.update(_objects(ALL, ready=2, desired=2))
        full = check_gpu_networks(_cluster(api), plan)
    assert short[0].status == "FAIL", short
    assert "installer ready on 1 of 2 nodes with nvidia-h200-141gb GPUs" in short[0].message
    assert "scheduled on only 1" in short[0].message
    assert "kubectl get nodes -l cloud.google.com/gke-accelerator=nvidia-h200-141gb" in str(
        short[0].hint)
    assert full[0].status == "PASS"
