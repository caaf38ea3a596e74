"""Every slurm-* preflight rule: a valid managed-Slurm recipe, ONE mutation, the problem it
must produce (rule id, field path, severity, a real line) - like tests/unit/test_rules.py."""

from __future__ import annotations

import copy

import pytest
import yaml

from mldiag_provision import pipeline
from mldiag_provision.errors import Problem, Severity

SEED_003 = "https://cloud.google.com/vertex-ai/docs/training/training-clusters/overview"

ERROR, WARNING = Severity.ERROR, Severity.WARNING

BASE: dict = {
    "apiVersion": "mldiag-provision/v1alpha1",
    "kind": "Recipe",
    "metadata": {"name": "slurm-base"},
    "spec": {
        "project": "my-ml-project",
        "region": "us-east5",
        "zone": "us-east5-a",
        "orchestrator": {"type": "slurm"},
        "slices": [{"name": "a3u", "gpu": "h200-141gb", "machineType": "a3-ultragpu-8g",
                    "nodes": 2}],
        "slurm": {"storage": [{"id": "home", "mount": "/home",
                               "filestore": {"capacityGb": 1024}}]},
        "diagnostics": {"logAnalytics": {"retentionDays": 30}},
        "workloads": [{"name": "train", "slice": "a3u", "image": "python:3.12",
                       "command": ["python", "train.py"]}],
    },
}


@pytest.fixture
def recipe() -> dict:
    return copy.deepcopy(BASE)


def check(data: dict) -> list[Problem]:
    return pipeline.check_text(yaml.safe_dump(data, sort_keys=False), "r.yaml").report.problems


def only(problems: list[Problem], rule: str, path: str, severity: Severity) -> Problem:
    hits = [p for p in problems if p.rule == rule and p.path == path]
    assert len(hits) == 1, f"want one {rule} at {path}; got {[(p.rule, p.path) for p in problems]}"
    p = hits[0]
    assert p.severity is severity, p
    assert p.line > 0 and p.column > 0, p
    return p


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity is ERROR]


def slurm(recipe: dict) -> dict:
    return recipe["spec"]["slurm"]


def test_base_recipe_is_clean(recipe: dict) -> None:
    # only the (intended) warning about the project-wide grant to the nodes' identity
    problems = check(recipe)
    assert [(p.rule, p.severity) for p in problems] == [("slurm-orchestrator", WARNING)]
    assert "project-wide" in problems[0].message


def test_waiving_the_default_sa_policy_makes_the_grant_a_note(recipe: dict) -> None:
    reason = "the managed Slurm API has no field for the nodes' service account"
    recipe["spec"]["policy"] = {"waivers": [{"rule": "no-default-compute-sa",
                                             "reason": reason}]}
    p = only(check(recipe), "slurm-orchestrator", "spec.slurm", Severity.INFO)
    assert "project-wide" in p.message
    assert f"accepted in spec.policy.waivers (no-default-compute-sa): {reason}" in p.message


def test_a_waiver_of_another_policy_rule_keeps_the_warning(recipe: dict) -> None:
    recipe["spec"]["policy"] = {"waivers": [{"rule": "required-labels",
                                             "reason": "labels come from the org policy"}]}
    p = only(check(recipe), "slurm-orchestrator", "spec.slurm", WARNING)
    assert "waivers" not in p.message


def test_the_waiver_does_not_cover_a_named_node_account(recipe: dict) -> None:
    # the policy rule does not fire for a named account; the warning is then about the API
    recipe["spec"]["slurm"]["nodeServiceAccount"] = "nodes@my-ml-project.iam.gserviceaccount.com"
    recipe["spec"]["policy"] = {"waivers": [{"rule": "no-default-compute-sa",
                                             "reason": "kept from an earlier stack"}]}
    p = only(check(recipe), "slurm-orchestrator", "spec.slurm.nodeServiceAccount", WARNING)
    assert "check that they do" in p.message


def test_node_identity_warning_can_be_avoided_by_turning_diagnostics_off(recipe: dict) -> None:
    recipe["spec"]["diagnostics"] = {"enabled": False}
    assert [p for p in check(recipe) if p.rule == "slurm-orchestrator"] == []


def test_defaults_alone_are_valid_apart_from_the_home_warning(recipe: dict) -> None:
    del recipe["spec"]["slurm"]
    problems = check(recipe)
    assert errors(problems) == []
    only(problems, "slurm-storage", "spec.slurm.storage", WARNING)


# -- slurm-tpu ------------------------------------------------------------------------------

def test_tpu_slice_on_slurm_is_an_error_naming_the_seed(recipe: dict) -> None:
    recipe["spec"]["slices"] = [{"name": "v5p", "tpu": "v5p", "topology": "2x2x2"}]
    recipe["spec"]["workloads"] = []
    p = only(check(recipe), "slurm-tpu", "spec.slices[0].tpu", ERROR)
    assert "Compute Engine GPU and CPU machines" in p.message
    assert p.source == SEED_003  # the seed's page (sources.yaml SEED-003, with its seed file)
    assert "gke-standard" in (p.hint or "")


# -- slurm-machine-type ---------------------------------------------------------------------

def test_gpu_machine_type_not_offered_by_managed_slurm(recipe: dict) -> None:
    recipe["spec"]["slices"][0].update(gpu="h100-80gb", machineType="a3-highgpu-8g")
    p = only(check(recipe), "slurm-machine-type", "spec.slices[0].machineType", ERROR)
    assert "a3-highgpu-8g" in p.message
    assert "a3-ultragpu-8g" in (p.expected or "") and "n2-*" in (p.expected or "")
    assert p.source and "training-clusters/compute-resources" in p.source


def test_cpu_node_set_outside_n2_is_refused(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "cpu", "machineType": "c3-standard-8"}]
    p = only(check(recipe), "slurm-machine-type", "spec.slurm.nodeSets[0].machineType", ERROR)
    assert "c3-standard-8" in p.message


def test_gpu_slice_without_machine_type_on_slurm(recipe: dict) -> None:
    del recipe["spec"]["slices"][0]["machineType"]
    p = only(check(recipe), "slurm-machine-type", "spec.slices[0].machineType", ERROR)
    assert p.expected == "a3-ultragpu-8g"


def test_login_node_machine_type_too_big(recipe: dict) -> None:
    slurm(recipe)["loginNodes"] = {"machineType": "n2-standard-64"}
    p = only(check(recipe), "slurm-machine-type", "spec.slurm.loginNodes.machineType", ERROR)
    assert "32 vCPUs" in p.message
    assert "n2-standard-32" in (p.expected or "")


def test_node_set_with_slice_and_machine_type(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "gpu", "slice": "a3u", "machineType": "n2-standard-8"}]
    only(check(recipe), "slurm-machine-type", "spec.slurm.nodeSets[0].machineType", ERROR)


# -- slurm-partitions -----------------------------------------------------------------------

def test_partition_naming_a_missing_node_set(recipe: dict) -> None:
    slurm(recipe)["partitions"] = [{"id": "gpu", "nodeSets": ["a3"]}]
    p = only(check(recipe), "slurm-partitions", "spec.slurm.partitions[0].nodeSets[0]", ERROR)
    assert "'a3'" in p.message and "does not exist" in p.message
    assert p.hint == "did you mean 'a3u'?"


def test_two_partitions_without_a_default(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "cpu", "machineType": "n2-standard-8"}]
    slurm(recipe)["partitions"] = [{"id": "gpu", "nodeSets": ["a3u"]},
                                   {"id": "cpu", "nodeSets": ["cpu"]}]
    p = only(check(recipe), "slurm-partitions", "spec.slurm.partitions", ERROR)
    assert "defaultPartition" in (p.hint or "")
    slurm(recipe)["defaultPartition"] = "gpu"
    assert errors(check(recipe)) == []


def test_default_partition_must_exist(recipe: dict) -> None:
    slurm(recipe)["defaultPartition"] = "a3v"
    p = only(check(recipe), "slurm-partitions", "spec.slurm.defaultPartition", ERROR)
    assert p.hint == "did you mean 'a3u'?"


def test_node_set_in_no_partition_warns(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "cpu", "machineType": "n2-standard-8"}]
    slurm(recipe)["partitions"] = [{"id": "gpu", "nodeSets": ["a3u"]}]
    only(check(recipe), "slurm-partitions", "spec.slurm.nodeSets[0]", WARNING)


# -- slurm-node-count -----------------------------------------------------------------------

def test_a4x_node_count_must_be_a_multiple_of_18(recipe: dict) -> None:
    recipe["spec"]["slices"][0].update(gpu="gb200", machineType="a4x-highgpu-4g", nodes=20)
    p = only(check(recipe), "slurm-node-count", "spec.slices[0].nodes", ERROR)
    assert "18" in p.message and p.hint == "use 18 or 36"
    recipe["spec"]["slices"][0]["nodes"] = 36
    assert errors(check(recipe)) == []


def test_node_set_smaller_than_its_slice(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "gpu", "slice": "a3u", "staticNodeCount": 1}]
    p = only(check(recipe), "slurm-node-count", "spec.slurm.nodeSets[0].staticNodeCount", ERROR)
    assert "at most 1" in p.message
    slurm(recipe)["nodeSets"][0]["maxDynamicNodeCount"] = 1
    assert errors(check(recipe)) == []


def test_node_set_without_nodes(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "cpu", "machineType": "n2-standard-8",
                                  "staticNodeCount": 0}]
    only(check(recipe), "slurm-node-count", "spec.slurm.nodeSets[0].staticNodeCount", ERROR)


# -- slurm-ids ------------------------------------------------------------------------------

def test_node_set_id_used_twice(recipe: dict) -> None:
    # the slice a3u already gets an implicit node set called a3u
    slurm(recipe)["nodeSets"] = [{"id": "a3u", "machineType": "n2-standard-8"}]
    p = only(check(recipe), "slurm-ids", "spec.slices[0].name", ERROR)
    assert "used twice" in p.message


def test_node_set_names_an_unknown_slice(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "gpu", "slice": "a3"}]
    p = only(check(recipe), "slurm-ids", "spec.slurm.nodeSets[0].slice", ERROR)
    assert p.hint == "did you mean 'a3u'?"


def test_hyphen_in_partition_id_warns(recipe: dict) -> None:
    slurm(recipe)["partitions"] = [{"id": "gpu-a3u", "nodeSets": ["a3u"]}]
    p = only(check(recipe), "slurm-ids", "spec.slurm.partitions[0].id", WARNING)
    assert p.hint == "use 'gpua3u'"


# -- slurm-storage --------------------------------------------------------------------------

def test_filestore_below_the_minimum(recipe: dict) -> None:
    slurm(recipe)["storage"][0]["filestore"]["capacityGb"] = 512
    p = only(check(recipe), "slurm-storage", "spec.slurm.storage[0].filestore.capacityGb", ERROR)
    assert p.expected == "1024 to 102400"


def test_new_lustre_needs_a_capacity_and_a_short_filesystem(recipe: dict) -> None:
    slurm(recipe)["storage"].append({"id": "lustre", "mount": "/lustre",
                                     "lustre": {"filesystem": "toolongname"}})
    problems = check(recipe)
    only(problems, "slurm-storage", "spec.slurm.storage[1].lustre.capacityGb", ERROR)
    only(problems, "slurm-storage", "spec.slurm.storage[1].lustre.filesystem", ERROR)


def test_lustre_capacity_off_the_tier_step_warns(recipe: dict) -> None:
    slurm(recipe)["storage"].append({"id": "lustre", "mount": "/lustre",
                                     "lustre": {"capacityGb": 20000, "throughput": 500}})
    only(check(recipe), "slurm-storage", "spec.slurm.storage[1].lustre.capacityGb", WARNING)


def test_storage_with_two_kinds(recipe: dict) -> None:
    slurm(recipe)["storage"][0]["bucket"] = {"name": "my-data-bucket"}
    only(check(recipe), "slurm-storage", "spec.slurm.storage[0].bucket", ERROR)


def test_node_set_mounts_unknown_storage(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "gpu", "slice": "a3u", "storage": ["home", "data"]}]
    p = only(check(recipe), "slurm-storage", "spec.slurm.nodeSets[0].storage[1]", ERROR)
    assert "'data'" in p.message


def test_relative_mount_and_bad_bucket(recipe: dict) -> None:
    slurm(recipe)["storage"].append({"id": "data", "mount": "data",
                                     "bucket": {"name": "Bad_Bucket"}})
    problems = check(recipe)
    only(problems, "slurm-storage", "spec.slurm.storage[1].mount", ERROR)
    only(problems, "slurm-storage", "spec.slurm.storage[1].bucket.name", ERROR)


def test_existing_filestore_needs_its_name(recipe: dict) -> None:
    slurm(recipe)["storage"][0]["filestore"] = {"create": False}
    only(check(recipe), "slurm-storage", "spec.slurm.storage[0].filestore.name", ERROR)
    slurm(recipe)["storage"][0]["filestore"]["name"] = (
        "projects/p1-project/locations/us-east5-a/instances/home")
    assert errors(check(recipe)) == []


def test_no_filestore_home_warns_with_the_seed(recipe: dict) -> None:
    slurm(recipe)["storage"][0]["mount"] = "/shared"
    p = only(check(recipe), "slurm-storage", "spec.slurm.storage", WARNING)
    assert p.source == SEED_003


# -- slurm-network --------------------------------------------------------------------------

def test_existing_network_needs_a_subnetwork(recipe: dict) -> None:
    slurm(recipe)["network"] = {"create": False, "name": "prod-vpc"}
    only(check(recipe), "slurm-network", "spec.slurm.network.subnetwork", ERROR)
    slurm(recipe)["network"]["subnetwork"] = "projects/host-prj/regions/us-east5/subnetworks/s1"
    assert errors(check(recipe)) == []


def test_new_network_takes_no_subnetwork(recipe: dict) -> None:
    slurm(recipe)["network"] = {"name": "net", "subnetwork": "sub"}
    only(check(recipe), "slurm-network", "spec.slurm.network.subnetwork", ERROR)


# -- slurm-capacity -------------------------------------------------------------------------

def test_flex_start_needs_a_max_run_duration(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"type": "flex-start"}
    only(check(recipe), "slurm-capacity", "spec.slices[0].capacity.maxRunDuration", ERROR)
    recipe["spec"]["slices"][0]["capacity"]["maxRunDuration"] = "72h"
    assert errors(check(recipe)) == []


def test_flex_start_longer_than_seven_days_warns(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"type": "flex-start", "maxRunDuration": "8d"}
    only(check(recipe), "slurm-capacity", "spec.slices[0].capacity.maxRunDuration", WARNING)


def test_capacity_on_a_slice_node_set_is_refused(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "gpu", "slice": "a3u", "capacity": {"type": "spot"}}]
    only(check(recipe), "slurm-capacity", "spec.slurm.nodeSets[0].capacity", ERROR)


def test_max_run_duration_outside_slurm_warns(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    del recipe["spec"]["slurm"]
    recipe["spec"]["slices"][0]["capacity"] = {"type": "flex-start", "maxRunDuration": "2h"}
    only(check(recipe), "slurm-capacity", "spec.slices[0].capacity.maxRunDuration", WARNING)


# -- slurm-orchestrator ---------------------------------------------------------------------

def test_slurm_needs_a_zone(recipe: dict) -> None:
    del recipe["spec"]["zone"]
    only(check(recipe), "slurm-orchestrator", "spec.zone", ERROR)


def test_slurm_section_on_gke_warns(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    only(check(recipe), "slurm-orchestrator", "spec.slurm", WARNING)


def test_gke_settings_on_slurm_warn(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["minVersion"] = "1.35.0-gke.3065000"
    only(check(recipe), "slurm-orchestrator", "spec.orchestrator.minVersion", WARNING)


def test_node_service_account_must_be_an_email(recipe: dict) -> None:
    slurm(recipe)["nodeServiceAccount"] = "nodes"
    hits = [p for p in check(recipe) if p.path == "spec.slurm.nodeServiceAccount"]
    assert {p.severity for p in hits} == {ERROR, WARNING}
    assert any("not a service account email" in p.message for p in hits)


# -- slurm-startup-script -------------------------------------------------------------------

def test_startup_script_too_big_for_the_api(recipe: dict) -> None:
    slurm(recipe)["nodeSets"] = [{"id": "gpu", "slice": "a3u",
                                  "startupScript": "echo x\n" * 30000}]
    p = only(check(recipe), "slurm-startup-script", "spec.slurm.nodeSets[0].startupScript",
             ERROR)
    assert "256 KiB" in p.message


# -- slurm-workload -------------------------------------------------------------------------

def test_env_name_bash_cannot_export(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["env"] = {"my.var": "1", "OK_NAME": "2"}
    p = only(check(recipe), "slurm-workload", "spec.workloads[0].env.my.var", ERROR)
    assert p.hint == "rename it, e.g. 'my_var'"


def test_nul_in_an_argument(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["args"] = ["--flag=a\x00b"]
    only(check(recipe), "slurm-workload", "spec.workloads[0].args[0]", ERROR)


def test_no_container_runtime_warns_that_the_image_is_unused(recipe: dict) -> None:
    slurm(recipe)["containerRuntime"] = "none"
    only(check(recipe), "slurm-workload", "spec.workloads[0].image", WARNING)


def test_login_nodes_in_another_zone(recipe: dict) -> None:
    slurm(recipe)["loginNodes"] = {"zone": "us-east5-b"}
    p = only(check(recipe), "slurm-orchestrator", "spec.slurm.loginNodes.zone", ERROR)
    assert p.expected == "us-east5-a"


def test_default_instance_name_too_long(recipe: dict) -> None:
    recipe["metadata"]["name"] = "a" * 40
    slurm(recipe)["storage"][0]["id"] = "h" * 30
    slurm(recipe)["storage"][0]["filestore"]["create"] = True
    # the Filestore instance-id limit is not stated by Google (names.yaml, confidence M): a
    # warning, from rule gcp-names which checks every derived name
    p = only(check(recipe), "gcp-names", "spec.slurm.storage[0].filestore.name", WARNING)
    assert "71 characters" in p.message


def test_kubernetes_workload_settings_warn_on_slurm(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["hostNetwork"] = True
    only(check(recipe), "slurm-workload", "spec.workloads[0].hostNetwork", WARNING)


# -- the facts behind the rules -------------------------------------------------------------

def test_gpu_catalog_slurm_flags_agree_with_the_managed_slurm_list() -> None:
    from mldiag_provision.catalog.gpu import load_gpu_catalog
    from mldiag_provision.catalog.slurm import load_slurm_facts

    facts = load_slurm_facts()
    flagged = {m.name for g in load_gpu_catalog().gpus.values() for m in g.machines.values()
               if m.slurm}
    listed = {m for m in facts.node_machine_types() if "*" not in m}
    assert flagged == listed == set(facts.managed["gpuMachineTypes"]["values"])
    assert facts.node_machine_ok("n2-highmem-32") and not facts.node_machine_ok("n2d-standard-8")


def test_every_slurm_fact_names_a_source_that_resolves() -> None:
    from mldiag_provision.catalog.slurm import load_slurm_facts

    facts = load_slurm_facts()

    def sources(node: object) -> list[str]:
        if isinstance(node, dict):
            return [v for k, v in node.items() if k == "source"] + [
                s for k, v in node.items() if k != "source" for s in sources(v)]
        if isinstance(node, list):
            return [s for v in node for s in sources(v)]
        return []

    from mldiag_provision.catalog.store import store

    used = sources(facts.raw)
    assert len(used) > 20
    for tag in used:
        assert tag in store().sources, tag
        assert facts.source_url(tag) != tag
