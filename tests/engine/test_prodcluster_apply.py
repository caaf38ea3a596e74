"""Issue 14 on the offline stand-in (real terraform, real provider schemas): the project stage
of the two production-cluster examples creates what their recipes say - the nodes' service
account on Autopilot and Standard, private nodes with authorized networks, Cloud NAT, the
webhook firewall rule from the control plane to the nodes' account, the maintenance policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.conftest import offline_recipe
from stack_support import RECIPES

pytestmark = pytest.mark.terraform

PRIVATE = next(r for r in RECIPES if r.stem == "tpu-v5e-private-standard")
MAINTENANCE = next(r for r in RECIPES if r.stem == "tpu-v6e-autopilot-maintenance")


def objects(cloud: Path, type_name: str) -> list[dict]:
    """States of the stand-in cloud's objects of one type (``<cloud>/<type>/<id>.json``)."""
    return [json.loads(p.read_text())["state"] for p in sorted((cloud / type_name).glob("*.json"))]


def _first(block: object) -> dict:
    return block[0] if isinstance(block, list) and block else {}


def _apply_project(recipe: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    r = offline_recipe(recipe, tmp_path / "recipe.yaml")
    code, out, err = cli("apply", str(r), "-o", str(tmp_path / "work"), "--stage", "project",
                         "--auto-approve")
    assert code == 0, out + err


def test_private_standard_cluster(tmp_path: Path, offline_cluster, cli) -> None:
    if offline_cluster is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    cloud = offline_cluster.cloud
    _apply_project(PRIVATE, tmp_path, cli)
    nodes = "tpu-v5e-private-nodes@my-ml-project.iam.gserviceaccount.com"
    assert [s["email"] for s in objects(cloud, "google_service_account")
            if s["account_id"] == "tpu-v5e-private-nodes"] == [nodes]
    roles = {m["role"] for m in objects(cloud, "google_project_iam_member")
             if m["member"] == f"serviceAccount:{nodes}"}
    assert roles == {"roles/container.defaultNodeServiceAccount",
                     "roles/artifactregistry.reader"}
    pools = objects(cloud, "google_container_node_pool")
    assert pools and {_first(p["node_config"])["service_account"] for p in pools} == {nodes}
    (cluster,) = objects(cloud, "google_container_cluster")
    pcc = _first(cluster["private_cluster_config"])
    assert pcc["enable_private_nodes"] is True and pcc["enable_private_endpoint"] is False
    assert pcc["master_ipv4_cidr_block"] == "172.16.0.32/28"
    nets = _first(cluster["master_authorized_networks_config"])["cidr_blocks"]
    assert sorted((n["cidr_block"], n["display_name"]) for n in nets) == [
        ("198.51.100.16/28", "bastion"), ("203.0.113.0/24", "ci-runners")]
    (router,) = objects(cloud, "google_compute_router")
    (nat,) = objects(cloud, "google_compute_router_nat")
    assert (router["name"], nat["name"], nat["router"]) == (
        "tpu-v5e-private-router", "tpu-v5e-private-nat", "tpu-v5e-private-router")
    assert nat["source_subnetwork_ip_ranges_to_nat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    (fw,) = objects(cloud, "google_compute_firewall")
    assert fw["source_ranges"] == ["172.16.0.32/28"]  # the control plane's /28
    assert fw["target_service_accounts"] == [nodes]
    assert fw["direction"] == "INGRESS"
    assert [(a["protocol"], sorted(a["ports"])) for a in fw["allow"]] == [
        ("tcp", ["10250", "8443", "9443"])]


def test_autopilot_existing_node_account_and_maintenance(tmp_path: Path, offline_cluster,
                                                          cli) -> None:
    if offline_cluster is None:
        return
    cloud = offline_cluster.cloud
    _apply_project(MAINTENANCE, tmp_path, cli)
    nodes = "gke-tpu-nodes@my-ml-project.iam.gserviceaccount.com"
    # an existing account: nothing creates one for the nodes, it only gets the roles
    assert not [s for s in objects(cloud, "google_service_account")
                if s["account_id"].endswith("-nodes")]
    assert {m["role"] for m in objects(cloud, "google_project_iam_member")
            if m["member"] == f"serviceAccount:{nodes}"} == {
        "roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader"}
    (cluster,) = objects(cloud, "google_container_cluster")
    defaults = _first(_first(cluster["cluster_autoscaling"])["auto_provisioning_defaults"])
    assert defaults["service_account"] == nodes
    policy = _first(cluster["maintenance_policy"])
    assert _first(policy["recurring_window"]) == {
        "start_time": "2026-01-03T02:00:00Z", "end_time": "2026-01-03T08:00:00Z",
        "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
    assert sorted((e["exclusion_name"], _first(e["exclusion_options"])["scope"])
                  for e in policy["maintenance_exclusion"]) == [
        ("launch-week", "NO_UPGRADES"), ("q1-training", "NO_MINOR_OR_NODE_UPGRADES")]
    assert _first(cluster["private_cluster_config"])["enable_private_nodes"] is True
    # no masterCidr: a Private Service Connect cluster; the rule's source is the private
    # endpoint's address (the stand-in's computed private_endpoint)
    (fw,) = objects(cloud, "google_compute_firewall")
    assert fw["source_ranges"] == ["10.128.0.2/32"]
    assert fw["target_service_accounts"] == [nodes]
    assert [sorted(a["ports"]) for a in fw["allow"]] == [["9443"]]  # the JobSet webhook
    assert len(objects(cloud, "google_compute_router_nat")) == 1
