"""Queued capacity end to end through our commands, with the real terraform binary against the
offline stand-in providers (REAL hashicorp/google 8.7.0 schema) and the stand-in API server:
the example recipe's node pools are created with queued provisioning and scale from 0, Kueue
is installed by the cluster stage before its objects, the workloads stage applies the Kueue
objects first and the JobSet suspended with its queue, `verify` checks the queues, `destroy`
removes them. (tests/sandbox/test_examples_lifecycle.py also takes this recipe
through apply/verify/replan/destroy --sandbox.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.conftest import offline_recipe
from stack_support import RECIPES

pytestmark = pytest.mark.terraform

QUEUED = next(r for r in RECIPES if r.stem == "tpu-v6e-4x4-queued-standard")


def _pools(cloud: Path) -> list[dict]:
    return [json.loads(p.read_text())["state"]
            for p in sorted((cloud / "google_container_node_pool").glob("*.json"))]


def test_queued_stack_applies_in_order_verifies_and_destroys(tmp_path: Path, offline_cluster,
                                                             gcs, cli) -> None:
    if offline_cluster is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    cloud, api = offline_cluster.cloud, offline_cluster.api
    r = offline_recipe(QUEUED, tmp_path / "recipe.yaml")
    work = str(tmp_path / "work")
    code, out, err = cli("apply", str(r), "-o", work, "--auto-approve")
    assert code == 0, out + err

    pools = [p for p in _pools(cloud) if p["name"].startswith("trillium")]
    assert len(pools) == 2
    # the cluster's system pool is an ordinary one
    assert [p["queued_provisioning"] for p in _pools(cloud) if p not in pools] == [[]]
    for pool in pools:
        assert pool["queued_provisioning"] == [{"enabled": True}]
        assert pool["node_config"][0]["flex_start"] is True
        assert pool["node_config"][0]["spot"] is False
        assert pool["node_config"][0]["reservation_affinity"][0][
            "consume_reservation_type"] == "NO_RESERVATION"
        auto = pool["autoscaling"][0]
        assert (auto["min_node_count"], auto["max_node_count"], auto["location_policy"]) == (
            0, 4, "ANY")
        assert pool["management"][0]["auto_repair"] is False

    # Kueue's chart (cluster stage) served its CRDs; the workloads stage created the queues
    # and the JobSet, suspended, in the queue
    assert [o["metadata"]["name"] for o in api.objects("ClusterQueue")] == ["tpu-queued"]
    assert [o["metadata"]["name"] for o in api.objects("LocalQueue", "mldiag")] == ["train"]
    assert len(api.objects("AdmissionCheck")) == 1
    prc = api.objects("ProvisioningRequestConfig")[0]
    assert prc["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    jobset = api.objects("JobSet", "mldiag")[0]
    assert jobset["spec"]["suspend"] is True
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "train"

    code, vout, verr = cli("verify", str(r), "-o", work)
    assert code == 0, vout + verr
    assert "PASS kueue" in vout and "ClusterQueue tpu-queued" in vout
    assert "SKIP nodes:trillium" in vout and "ProvisioningRequest" in vout

    code, out, err = cli("destroy", str(r), "-o", work, "--auto-approve")
    assert code == 0, out + err
    assert api.objects("LocalQueue") == [] and api.objects("JobSet") == []
    assert not list((cloud / "google_container_node_pool").glob("*.json"))


def test_verify_fails_when_the_queue_is_missing(tmp_path: Path, offline_cluster, gcs,
                                                cli) -> None:
    if offline_cluster is None:
        return
    r = offline_recipe(QUEUED, tmp_path / "recipe.yaml")
    work = str(tmp_path / "work")
    code, out, err = cli("apply", str(r), "-o", work, "--auto-approve")
    assert code == 0, out + err
    api = offline_cluster.api
    with api.store.lock:  # someone deleted the ClusterQueue by hand
        for items in api.store.objects.values():
            for key in [k for k, o in items.items() if o.get("kind") == "ClusterQueue"]:
                del items[key]
    code, vout, verr = cli("verify", str(r), "-o", work)
    assert code == 1, vout + verr
    assert "FAIL kueue" in vout and "ClusterQueue tpu-queued is missing" in vout
