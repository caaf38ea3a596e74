"""Every bundled policy has a passing and a failing fixture, run through the real Rego engine
(regopy, in its worker process).

Stack fixtures are real rendered example stacks (``render_files``), the failing ones changed
in one place, the way a hand edit or a recipe value would change them; plan fixtures follow
``terraform show -json``'s format (https://developer.hashicorp.com/terraform/internals/
json-format): ``resource_changes[].change.{actions, after}``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.policy.gate import GateResult, Settings, bundled_dir, run_gate
from mldiag_provision.policy.inputs import stack_document
from stack_support import REPO_ROOT, render_files

STANDARD = REPO_ROOT / "recipes" / "tpu-v6e-4x4-multislice-standard-spot.yaml"
SLURM = REPO_ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"
AUTOPILOT = REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"
V5E = REPO_ROOT / "recipes" / "tpu-v5e-private-standard.yaml"  # priced: 16 v5e chips + GKE fee


@functools.cache
def _files(recipe: Path) -> dict[str, bytes]:
    return render_files(recipe)


def _edit(rel: str, old: str, new: str) -> Callable[[dict[str, bytes]], dict[str, bytes]]:
    def change(files: dict[str, bytes]) -> dict[str, bytes]:
        text = files[rel].decode()
        assert old in text, f"fixture out of date: {old!r} not in {rel}"
        return {**files, rel: text.replace(old, new, 1).encode()}
    return change


def _change(type_: str, address: str, actions: list[str], after: dict[str, Any] | None
            ) -> dict[str, Any]:
    return {"address": address, "type": type_, "mode": "managed", "name": "this",
            "change": {"actions": actions, "before": None if actions == ["create"] else {},
                       "after": after}}


def _plan(*changes: dict[str, Any]) -> dict[str, Any]:
    return {"format_version": "1.2", "resource_changes": list(changes)}


@dataclass
class Case:
    rule: str
    recipe: Path
    mutate: Callable[[dict[str, bytes]], dict[str, bytes]] | None = None
    plan: dict[str, Any] | None = None
    params: dict[str, list[str]] = field(default_factory=dict)
    budget: float | None = None  # spec.policy.maxHourlyCost


CLUSTER = "module.cluster.google_container_cluster.this"
POOL = 'module.node_pool["trillium-0"].google_container_node_pool.this'
BUCKET = "module.profiles_bucket.google_storage_bucket.this[0]"
BUCKET_MAIN = "modules/storage/profiles-bucket/main.tf"
POOL_MAIN = "modules/gke/accelerator-node-pool/main.tf"


def _both(*changes: Callable[[dict[str, bytes]], dict[str, bytes]]
          ) -> Callable[[dict[str, bytes]], dict[str, bytes]]:
    def change(files: dict[str, bytes]) -> dict[str, bytes]:
        for c in changes:
            files = c(files)
        return files
    return change

# (passing case, failing case) per rule
CASES: dict[str, tuple[Case, list[Case]]] = {
    "gke-deletion-protection": (
        Case("gke-deletion-protection", STANDARD,
             plan=_plan(_change("google_container_cluster", CLUSTER, ["update"],
                                {"deletion_protection": True}))),
        [Case("gke-deletion-protection", STANDARD,
              _edit("main.tf", "deletion_protection           = true",
                    "deletion_protection           = false")),
         Case("gke-deletion-protection", AUTOPILOT,
              plan=_plan(_change("google_container_cluster", CLUSTER, ["update"],
                                 {"deletion_protection": False})))]),
    "bucket-public-access": (
        Case("bucket-public-access", STANDARD),
        [Case("bucket-public-access", STANDARD,
              _edit(BUCKET_MAIN, 'public_access_prevention    = "enforced"',
                    'public_access_prevention    = "inherited"')),
         Case("bucket-public-access", STANDARD,
              plan=_plan(_change("google_storage_bucket", BUCKET, ["update"],
                                 {"public_access_prevention": "inherited"})))]),
    "bucket-uniform-access": (
        Case("bucket-uniform-access", AUTOPILOT),
        [Case("bucket-uniform-access", AUTOPILOT,
              _edit(BUCKET_MAIN, "uniform_bucket_level_access = true",
                    "uniform_bucket_level_access = false"))]),
    "bucket-force-destroy": (
        Case("bucket-force-destroy", STANDARD),
        [Case("bucket-force-destroy", STANDARD,
              _edit("main.tf", "force_destroy = false", "force_destroy = true")),
         Case("bucket-force-destroy", STANDARD,
              plan=_plan(_change("google_storage_bucket", BUCKET, ["create"],
                                 {"force_destroy": True})))]),
    "no-default-compute-sa": (
        Case("no-default-compute-sa", AUTOPILOT,  # Autopilot: pods under Workload Identity
             plan=_plan(_change("google_container_node_pool", POOL, ["create"],
                                {"node_config": [{"service_account": "default",
                                                  "workload_metadata_config": [
                                                      {"mode": "GKE_METADATA"}]}]}))),
        [Case("no-default-compute-sa", SLURM),  # nodes without nodeServiceAccount
         Case("no-default-compute-sa", STANDARD,
              plan=_plan(_change("google_container_node_pool", POOL, ["create"],
                                 {"node_config": [{"service_account": "default",
                                                   "workload_metadata_config": []}]}))),
         Case("no-default-compute-sa", STANDARD,  # pods on the nodes' (default) account
              _both(_edit(POOL_MAIN, "service_account = var.service_account",
                          'service_account = "default"'),
                    _edit(POOL_MAIN, 'mode = "GKE_METADATA"', 'mode = "GCE_METADATA"'))),
         # issue 14: Autopilot nodes without an account of their own (the module call)
         Case("no-default-compute-sa", AUTOPILOT,
              _edit("main.tf", 'node_service_account_id       = "tpu-v4-multihost-nodes"',
                    "node_service_account_id       = null"))]),
    "mldiag-roles-workload-only": (
        Case("mldiag-roles-workload-only", STANDARD,
             plan=_plan(_change("google_project_iam_member",
                                'module.workload_identity.google_project_iam_member.workload'
                                '["roles/hypercomputecluster.editor"]', ["create"],
                                {"role": "roles/hypercomputecluster.editor",
                                 "member": "serviceAccount:tpu-v6e-multisli-b78c-workload@"
                                           "my-ml-project.iam.gserviceaccount.com"}))),
        [Case("mldiag-roles-workload-only", STANDARD,
              _edit("main.tf", 'node_service_account_roles    = ['
                               '"roles/container.defaultNodeServiceAccount"',
                    'node_service_account_roles    = ["roles/hypercomputecluster.editor", '
                    '"roles/container.defaultNodeServiceAccount"')),
         Case("mldiag-roles-workload-only", STANDARD,
              plan=_plan(_change("google_project_iam_member", "google_project_iam_member.x",
                                 ["create"], {"role": "roles/storage.objectUser",
                                              "member": "user:someone@example.com"})))]),
    "tpu-multihost-placement": (
        Case("tpu-multihost-placement", STANDARD),
        [Case("tpu-multihost-placement", STANDARD,
              _edit("main.tf", "multi_host          = true", "multi_host          = false")),
         Case("tpu-multihost-placement", STANDARD,
              _edit("modules/gke/accelerator-node-pool/main.tf", 'dynamic "placement_policy"',
                    'dynamic "placement_policy_removed"')),
         Case("tpu-multihost-placement", STANDARD,
              plan=_plan(_change("google_container_node_pool", POOL, ["create"],
                                 {"node_count": 4, "placement_policy": [],
                                  "node_config": [{"machine_type": "ct6e-standard-4t"}]})))]),
    "required-labels": (
        Case("required-labels", SLURM, params={"required_labels": ["team"]}),
        [Case("required-labels", STANDARD, params={"required_labels": ["team"]}),
         Case("required-labels", SLURM, params={"required_labels": ["team"]},
              plan=_plan(_change("google_storage_bucket", BUCKET, ["create"],
                                 {"terraform_labels": {"managed-by": "mldiag-provision"}})))]),
    "allowed-locations": (
        Case("allowed-locations", STANDARD,
             params={"allowed_regions": ["us-east5"], "allowed_zones": ["us-east5-b"]}),
        [Case("allowed-locations", STANDARD, params={"allowed_regions": ["europe-west4"]}),
         Case("allowed-locations", STANDARD, params={"allowed_zones": ["us-east5-a"]})]),
    "plan-destructive-delete": (
        Case("plan-destructive-delete", STANDARD, params={"allow_deletes": ["node-pool"]},
             plan=_plan(_change("google_container_node_pool", POOL, ["delete", "create"],
                                None),
                        _change("google_container_cluster", CLUSTER, ["update"], {}))),
        [Case("plan-destructive-delete", STANDARD,
              plan=_plan(_change("google_container_cluster", CLUSTER, ["delete"], None))),
         Case("plan-destructive-delete", STANDARD,
              plan=_plan(_change("google_container_node_pool", POOL, ["delete", "create"],
                                 None))),
         Case("plan-destructive-delete", STANDARD, params={"allow_deletes": ["cluster"]},
              plan=_plan(_change("google_storage_bucket", BUCKET, ["delete"], None)))]),
    "max-hourly-cost": (
        Case("max-hourly-cost", V5E, budget=20.0),  # $19.30 known (16 x $1.20 + $0.10)
        [Case("max-hourly-cost", V5E, budget=10.0),
         Case("max-hourly-cost", STANDARD, budget=0.05),  # the $0.10 GKE fee alone is over
         Case("max-hourly-cost", STANDARD, budget=100.0,  # a plan.json the table cannot price
              mutate=_edit(".mldiag/plan.json", '"accelerator_type": "v6e"',
                           '"accelerator_type": "v9z"'))]),
}


def _gate(case: Case) -> GateResult:
    files = _files(case.recipe)
    if case.mutate is not None:
        files = case.mutate(files)
    return run_gate(stack_document(files), case.plan,
                    Settings(params=case.params, max_hourly_cost=case.budget))


def test_every_bundled_rule_has_fixtures() -> None:
    result = run_gate(stack_document(_files(STANDARD)), None, Settings())
    assert sorted(r.id for r in result.rules) == sorted(CASES)
    for rule in result.rules:
        assert rule.source.startswith("https://"), rule
        assert len(rule.rationale) > 40, rule
        assert rule.file.startswith(str(bundled_dir()))


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_passes_its_passing_fixture(rule: str) -> None:
    result = _gate(CASES[rule][0])
    assert [f.message for f in result.findings if f.rule.id == rule] == []


@pytest.mark.parametrize("rule,index", [(r, i) for r in sorted(CASES)
                                        for i in range(len(CASES[r][1]))])
def test_rule_fails_its_failing_fixture(rule: str, index: int) -> None:
    result = _gate(CASES[rule][1][index])
    hits = [f for f in result.findings if f.rule.id == rule]
    assert hits, f"{rule} did not fire on failing fixture {index}"
    assert all(f.message and f.waived is None for f in hits)
    assert result.failed()
    # every sprintf verb was understood: rego-cpp leaves one it lacks (e.g. %q) in the text
    assert not [f.message for f in hits if re.search(r"%[a-zA-Z!]", f.message)], hits
