"""Issue 14, production clusters: the nodes' service account, private clusters and the
maintenance policy of the GKE clusters the stack creates - preflight rules (one mutation of
a clean recipe, the problem it must produce) and the plan they lead to.

Facts: catalog/data/gke.yaml ``cluster`` (sources in sources.yaml).
"""

from __future__ import annotations

import copy

import pytest
import yaml

from mldiag_provision import pipeline
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.plan.parts import GkeClusterPlan, StandardClusterPlan
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.plan.types import StackPlan

ERROR, WARNING = Severity.ERROR, Severity.WARNING

BASE: dict = {
    "apiVersion": "mldiag-provision/v1alpha1",
    "kind": "Recipe",
    "metadata": {"name": "rules-base"},
    "spec": {
        "project": "my-ml-project",
        "region": "us-central1",
        "orchestrator": {"type": "gke-autopilot"},
        "slices": [{"name": "s8", "tpu": "v5e", "topology": "2x4", "chipsPerVm": 8}],
        "diagnostics": {"logAnalytics": {"retentionDays": 30}},
        "workloads": [{"name": "train", "slice": "s8", "image": "python:3.12",
                       "chipsPerPod": 8, "kind": "JobSet"}],
    },
}


def check(data: dict) -> list[Problem]:
    text = yaml.safe_dump(data, sort_keys=False)
    return pipeline.check_text(text, "r.yaml").report.problems


def only(problems: list[Problem], rule: str, path: str, severity: Severity) -> Problem:
    """The single problem of ``rule`` at ``path``, with its severity and a real line."""
    hits = [p for p in problems if p.rule == rule and p.path == path]
    assert len(hits) == 1, f"want one {rule} at {path}; got {[(p.rule, p.path) for p in problems]}"
    assert hits[0].severity is severity, hits[0]
    assert hits[0].line > 0 and hits[0].file == "r.yaml"
    return hits[0]


@pytest.fixture
def recipe() -> dict:
    return copy.deepcopy(BASE)


def orch(recipe: dict) -> dict:
    return recipe["spec"]["orchestrator"]


def plan_of(recipe: dict) -> StackPlan:
    result = pipeline.check_text(yaml.safe_dump(recipe, sort_keys=False), "r.yaml")
    assert not [p for p in result.report.problems if p.severity is ERROR], result.report
    assert result.parsed.recipe is not None
    return build_plan(result.parsed.recipe, result.shapes, load_catalog())


def cluster_problems(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.rule.startswith("cluster-")]


# -- node identity ---------------------------------------------------------------------------

def test_default_nodes_run_as_a_dedicated_account(recipe: dict) -> None:
    plan = plan_of(recipe)
    assert isinstance(plan.cluster, GkeClusterPlan)
    sa = plan.cluster.node_service_account
    assert sa.create and sa.account_id == "rules-base-nodes"
    assert sa.email == "rules-base-nodes@my-ml-project.iam.gserviceaccount.com"
    # the minimum role GKE documents (GKE-NODE-SA), not the Compute Engine default account
    assert sa.roles == ("roles/container.defaultNodeServiceAccount",
                        "roles/artifactregistry.reader")


def test_existing_node_account_is_used_and_granted(recipe: dict) -> None:
    orch(recipe)["nodeServiceAccount"] = "gke-nodes@my-ml-project.iam.gserviceaccount.com"
    assert cluster_problems(check(recipe)) == []
    sa = plan_of(recipe).cluster.node_service_account
    assert not sa.create and sa.account_id is None
    assert sa.email == "gke-nodes@my-ml-project.iam.gserviceaccount.com"
    assert "roles/container.defaultNodeServiceAccount" in sa.roles


def test_compute_default_account_is_refused(recipe: dict) -> None:
    orch(recipe)["nodeServiceAccount"] = "123456789012-compute@developer.gserviceaccount.com"
    p = only(check(recipe), "cluster-node-identity", "spec.orchestrator.nodeServiceAccount",
             ERROR)
    assert "Compute Engine default" in p.message
    assert p.source and "service-accounts" in p.source


@pytest.mark.parametrize("email", ["gke-nodes", "GKE@my-ml-project.iam.gserviceaccount.com",
                                   "ab@my-ml-project.iam.gserviceaccount.com",
                                   "gke-nodes@my-ml-project.example.com"])
def test_node_account_format(recipe: dict, email: str) -> None:
    orch(recipe)["nodeServiceAccount"] = email
    p = only(check(recipe), "cluster-node-identity", "spec.orchestrator.nodeServiceAccount",
             ERROR)
    assert p.value == email


def test_node_account_only_where_the_stack_creates_gke(recipe: dict) -> None:
    orch(recipe).update(type="existing-kubernetes",
                        nodeServiceAccount="gke-nodes@my-ml-project.iam.gserviceaccount.com")
    only(check(recipe), "cluster-node-identity", "spec.orchestrator.nodeServiceAccount", ERROR)


# -- private clusters ------------------------------------------------------------------------

def test_private_nodes_with_nat_by_default(recipe: dict) -> None:
    pv = plan_of(recipe).cluster.private
    assert pv.private_nodes and not pv.private_endpoint
    assert (pv.router, pv.nat) == ("rules-base-router", "rules-base-nat")
    assert pv.authorized_networks is None
    # the base workload is a JobSet: the JobSet controller's webhook port is opened
    assert pv.firewall == "rules-base-webhooks" and pv.webhook_ports == (9443,)


def test_manual_agents_open_their_webhook_ports(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    pv = plan_of(recipe).cluster.private
    assert pv.webhook_ports == (8443, 9443, 10250)


def test_public_cluster_has_no_nat_and_no_firewall(recipe: dict) -> None:
    orch(recipe)["private"] = {"nodes": False}
    pv = plan_of(recipe).cluster.private
    assert not pv.private_nodes
    assert (pv.router, pv.nat, pv.firewall, pv.webhook_ports) == (None, None, None, ())


@pytest.mark.parametrize("cidr", ["203.0.113.0/33", "203.0.113.5/24", "2001:db8::/32",
                                  "not-a-cidr", "203.0.113.5"])
def test_authorized_network_cidrs(recipe: dict, cidr: str) -> None:
    orch(recipe)["private"] = {"authorizedNetworks": [{"cidr": "198.51.100.0/24"},
                                                      {"cidr": cidr}]}
    p = only(check(recipe), "cluster-private",
             "spec.orchestrator.private.authorizedNetworks[1].cidr", ERROR)
    assert p.value == cidr


@pytest.mark.parametrize("cidr", ["172.16.0.0/24", "8.8.8.0/28", "172.16.0.33/28"])
def test_master_cidr_is_a_private_28(recipe: dict, cidr: str) -> None:
    orch(recipe)["private"] = {"masterCidr": cidr}
    only(check(recipe), "cluster-private", "spec.orchestrator.private.masterCidr", ERROR)


def test_master_cidr_accepted_and_planned(recipe: dict) -> None:
    orch(recipe)["private"] = {"masterCidr": "172.16.0.32/28",
                               "authorizedNetworks": [{"cidr": "203.0.113.0/24",
                                                       "name": "ci"}]}
    assert cluster_problems(check(recipe)) == []
    pv = plan_of(recipe).cluster.private
    assert pv.master_cidr == "172.16.0.32/28"
    assert [(n.cidr, n.name) for n in pv.authorized_networks] == [("203.0.113.0/24", "ci")]


def test_master_cidr_needed_below_1_29(recipe: dict) -> None:
    orch(recipe)["minVersion"] = "1.28.3-gke.1000"
    hits = [p for p in check(recipe) if p.rule == "cluster-private"]
    assert [p.path for p in hits] == ["spec.orchestrator.private.masterCidr"]
    assert hits[0].severity is WARNING  # the 1.29 boundary is a secondary source (M)


def test_private_endpoint_without_authorized_networks_warns(recipe: dict) -> None:
    orch(recipe)["private"] = {"endpoint": True}
    only(check(recipe), "cluster-private", "spec.orchestrator.private.endpoint", WARNING)
    orch(recipe)["private"]["authorizedNetworks"] = [{"cidr": "10.0.0.0/8"}]
    assert cluster_problems(check(recipe)) == []


def test_empty_authorized_networks_on_a_public_endpoint_warns(recipe: dict) -> None:
    """[] is not "no restriction" (that is leaving the key out): GKE turns authorized
    networks on with no range, so nothing outside the VPC reaches the public endpoint."""
    orch(recipe)["private"] = {"authorizedNetworks": []}
    only(check(recipe), "cluster-private", "spec.orchestrator.private.authorizedNetworks",
         WARNING)


def test_private_endpoint_needs_private_nodes(recipe: dict) -> None:
    orch(recipe)["private"] = {"endpoint": True, "nodes": False,
                               "authorizedNetworks": []}
    only(check(recipe), "cluster-private", "spec.orchestrator.private.endpoint", ERROR)


def test_manual_agents_without_webhook_firewall_warns(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    orch(recipe)["private"] = {"webhookFirewall": False}
    p = only(check(recipe), "cluster-private", "spec.orchestrator.private.webhookFirewall",
             WARNING)
    assert "8443" in p.message


def test_private_settings_only_where_the_stack_creates_gke(recipe: dict) -> None:
    orch(recipe).update(type="existing-kubernetes", private={"endpoint": True})
    only(check(recipe), "cluster-private", "spec.orchestrator.private", ERROR)


# -- maintenance -----------------------------------------------------------------------------

WINDOW = {"start": "2026-01-03T02:00:00Z", "end": "2026-01-03T08:00:00Z",
          "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}


def test_maintenance_planned(recipe: dict) -> None:
    orch(recipe)["maintenance"] = {"window": WINDOW, "exclusions": [
        {"name": "q1", "start": "2026-01-05T00:00:00Z", "end": "2026-03-31T00:00:00Z",
         "scope": "NO_MINOR_OR_NODE_UPGRADES"}]}
    assert cluster_problems(check(recipe)) == []
    m = plan_of(recipe).cluster.maintenance
    assert m.window.recurrence == "FREQ=WEEKLY;BYDAY=SA,SU"
    assert [(e.name, e.scope) for e in m.exclusions] == [("q1", "NO_MINOR_OR_NODE_UPGRADES")]


def test_window_shorter_than_four_hours_counts_nothing(recipe: dict) -> None:
    orch(recipe)["maintenance"] = {"window": {**WINDOW, "end": "2026-01-03T05:00:00Z",
                                              "recurrence": "FREQ=DAILY"}}
    p = only(check(recipe), "cluster-maintenance", "spec.orchestrator.maintenance.window",
             ERROR)
    assert "0 hours" in p.message and "48" in p.message


def test_window_with_too_little_availability(recipe: dict) -> None:
    # 4 h on one weekday: 13 x 4 = 52 h in 92 days passes; 3 h fails (not contiguous >= 4 h)
    orch(recipe)["maintenance"] = {"window": {**WINDOW, "end": "2026-01-03T06:00:00Z",
                                              "recurrence": "FREQ=WEEKLY;BYDAY=SA"}}
    assert cluster_problems(check(recipe)) == []
    orch(recipe)["maintenance"]["window"]["end"] = "2026-01-03T05:00:00Z"
    only(check(recipe), "cluster-maintenance", "spec.orchestrator.maintenance.window", ERROR)


def test_window_end_before_start(recipe: dict) -> None:
    orch(recipe)["maintenance"] = {"window": {**WINDOW, "end": "2026-01-02T08:00:00Z"}}
    only(check(recipe), "cluster-maintenance", "spec.orchestrator.maintenance.window.end",
         ERROR)


def test_no_upgrades_exclusion_at_most_30_days(recipe: dict) -> None:
    orch(recipe)["maintenance"] = {"exclusions": [
        {"name": "freeze", "start": "2026-01-01T00:00:00Z", "end": "2026-02-15T00:00:00Z"}]}
    p = only(check(recipe), "cluster-maintenance",
             "spec.orchestrator.maintenance.exclusions[0].end", WARNING)  # fact is M
    assert "30 days" in p.message and "NO_MINOR_OR_NODE_UPGRADES" in (p.hint or "")
    orch(recipe)["maintenance"]["exclusions"][0]["scope"] = "NO_MINOR_UPGRADES"
    assert cluster_problems(check(recipe)) == []


def test_exclusion_names_unique_and_ordered(recipe: dict) -> None:
    ex = {"name": "x", "start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z"}
    orch(recipe)["maintenance"] = {"exclusions": [ex, {**ex, "end": "2025-12-31T00:00:00Z"}]}
    problems = check(recipe)
    only(problems, "cluster-maintenance", "spec.orchestrator.maintenance.exclusions[1].name",
         ERROR)
    only(problems, "cluster-maintenance", "spec.orchestrator.maintenance.exclusions[1].end",
         ERROR)


def test_exclusion_scope_and_times_are_checked_by_the_schema(recipe: dict) -> None:
    orch(recipe)["maintenance"] = {"exclusions": [
        {"name": "x", "start": "2026-01-01 00:00", "end": "2026-01-02T00:00:00Z",
         "scope": "NO_PATCHES"}]}
    rules = {p.rule for p in check(recipe) if p.severity is ERROR}
    assert rules and all(r.startswith("recipe-") for r in rules), rules


def test_maintenance_only_where_the_stack_creates_gke(recipe: dict) -> None:
    orch(recipe).update(type="existing-kubernetes", maintenance={"window": WINDOW})
    only(check(recipe), "cluster-maintenance", "spec.orchestrator.maintenance", ERROR)


def test_standard_cluster_plan_carries_the_same_settings(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-central1-a"
    orch(recipe).update(type="gke-standard",
                        nodeServiceAccount="gke-nodes@my-ml-project.iam.gserviceaccount.com",
                        maintenance={"window": WINDOW})
    recipe["spec"]["slices"][0].pop("chipsPerVm")
    recipe["spec"]["slices"][0]["chipsPerVm"] = 8
    c = plan_of(recipe).cluster
    assert isinstance(c, StandardClusterPlan)
    assert c.node_service_account_id is None
    assert c.node_service_account.email == "gke-nodes@my-ml-project.iam.gserviceaccount.com"
    assert c.maintenance is not None and c.private.private_nodes
