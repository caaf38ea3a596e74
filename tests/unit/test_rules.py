"""Every preflight rule: a valid base recipe, ONE mutation, the problem it must produce.

Recipes are dumped with ``yaml.safe_dump`` and checked with ``pipeline.check_text`` against
the real catalog, so each problem also carries a real line.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from mldiag_provision import pipeline
from mldiag_provision.catalog.tpu import DATA_DIR, Catalog, load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint import tpu_rules as lint_tpu
from mldiag_provision.preflight.context import RULES

ERROR, WARNING = Severity.ERROR, Severity.WARNING

BASE: dict = {
    "apiVersion": "mldiag-provision/v1alpha1",
    "kind": "Recipe",
    "metadata": {"name": "rules-base", "labels": {"team": "ml-platform"}},
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


@pytest.fixture
def recipe() -> dict:
    """A deep copy of a recipe with no problem at all; tests mutate it."""
    return copy.deepcopy(BASE)


def check(data: dict, catalog: Catalog | None = None) -> list[Problem]:
    text = yaml.safe_dump(data, sort_keys=False)
    return pipeline.check_text(text, "r.yaml", catalog).report.problems


def only(problems: list[Problem], rule: str, path: str, severity: Severity) -> Problem:
    """The single problem of ``rule`` at ``path``; asserts its severity and line."""
    hits = [p for p in problems if p.rule == rule and p.path == path]
    assert len(hits) == 1, f"want one {rule} at {path}; got {[(p.rule, p.path) for p in problems]}"
    p = hits[0]
    assert p.severity is severity, p
    assert p.line > 0 and p.column > 0, p
    assert p.file == "r.yaml"
    return p


def rules_of(problems: list[Problem]) -> set[str]:
    return {p.rule for p in problems}


def test_base_recipe_is_clean(recipe: dict) -> None:
    assert check(recipe) == []


def test_every_rule_has_a_test() -> None:
    # the Slurm and GPUDirect rule modules are imported on demand (preflight.WHEN): import
    # every module first, so the answer does not depend on which tests ran before this one
    from mldiag_provision.preflight import import_all

    import_all()
    tested = {"engine", "orchestrator", "gke-version", "diagnostics", "labels",
              "tpu-slice-shape", "tpu-slice-names", "tpu-autopilot", "slice-multislice",
              "slice-capacity", "tpu-zone", "workload-slice", "workload-chips",
              "workload-resources", "names-length", "slice-accelerator",
              "gpu-slice-shape", "workload-gpus", "diagnostics-strategy", "workload-kind",
              "workload-host-network",
              # tests/unit/test_google_rules.py
              "gcp-names", "gke-channel",
              # tests/unit/test_slurm_rules.py
              "slurm-orchestrator", "slurm-tpu", "slurm-machine-type", "slurm-node-count",
              "slurm-ids", "slurm-partitions", "slurm-storage", "slurm-network",
              "slurm-capacity", "slurm-startup-script", "slurm-workload",
              # lint's TPU rules over the rendered manifests (tests below, tests/rulebook)
              "manifests:" + ",".join(r.id for r in lint_tpu.RULES),
              # tests/unit/test_format_rules.py
              "gcp-format",
              # tests/unit/test_value_formats.py (issue 28)
              "value-format",
              # tests/unit/test_prod_workloads.py
              "workload-volumes", "workload-tolerations", "workload-annotations",
              "workload-priority-class", "workload-ephemeral-storage",
              "workload-failure-policy", "workload-kubernetes-only",
              # tests/unit/test_queued.py
              "queued-capacity", "queued-reservation", "queued-run-duration",
              "queued-version", "queued-tpu-version",
              # tests/unit/test_cluster_rules.py (issue 14)
              "cluster-node-identity", "cluster-private", "cluster-maintenance",
              # tests/unit/test_gpunet.py
              "gpunet-mode", "gpunet-off", "gpunet-cidr", "gpunet-names", "gpunet-version",
              # tests/unit/test_policy_rules.py
              "policy-directories",
              # tests/unit/test_cluster_model.py (issue 25)
              "manifests:kueue-covered-resources,node-allocatable",
              # tests/unit/test_places.py and tests/cli/test_places.py (issue 25)
              "gcp-region", "gcp-zone", "gpu-zone", "gke-nodes", "gke-node-pools",
              "diagnostics-jax"}
    assert {rule_id for rule_id, _ in RULES} == tested


# -- tpu-slice-shape ----------------------------------------------------------------------

def test_slice_topology_unknown(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["topology"] = "3x3"
    p = only(check(recipe), "tpu-slice-shape", "spec.slices[0].topology", ERROR)
    assert p.value == "3x3"
    assert "2x4" in (p.expected or "")


def test_slice_topology_order_hint(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["topology"] = "4x2"
    p = only(check(recipe), "tpu-slice-shape", "spec.slices[0].topology", ERROR)
    assert "did you mean '2x4'" in (p.hint or "")


def test_slice_tpu_unknown(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["tpu"] = "v5ee"
    p = only(check(recipe), "tpu-slice-shape", "spec.slices[0].tpu", ERROR)
    assert "did you mean" in (p.hint or "")


def test_slice_chips_per_vm_missing_is_ambiguous(recipe: dict) -> None:
    del recipe["spec"]["slices"][0]["chipsPerVm"]
    problems = check(recipe)
    p = only(problems, "tpu-slice-shape", "spec.slices[0].chipsPerVm", ERROR)
    assert p.expected == "8 or 4"
    # the problem points at the slice, since the key itself is absent
    assert p.line == yaml.safe_dump(recipe, sort_keys=False).splitlines().index(
        "  - name: s8") + 1


def test_slice_chips_per_vm_wrong(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["chipsPerVm"] = 2
    p = only(check(recipe), "tpu-slice-shape", "spec.slices[0].chipsPerVm", ERROR)
    assert p.value == 2


# -- tpu-slice-names ----------------------------------------------------------------------

def test_slice_names_unique(recipe: dict) -> None:
    recipe["spec"]["slices"].append(dict(recipe["spec"]["slices"][0]))
    p = only(check(recipe), "tpu-slice-names", "spec.slices[1].name", ERROR)
    assert "slices[0]" in p.message


# -- tpu-autopilot ------------------------------------------------------------------------

def test_every_catalog_version_is_on_autopilot() -> None:
    assert all(v.autopilot_supported for v in load_catalog().versions.values())


def test_version_not_on_autopilot(recipe: dict) -> None:
    # the real catalog data with one fact changed: v5e not offered on Autopilot
    tpu = yaml.safe_load((DATA_DIR / "tpu.yaml").read_text(encoding="utf-8"))
    gke = yaml.safe_load((DATA_DIR / "gke.yaml").read_text(encoding="utf-8"))
    tpu["versions"]["v5e"]["gke"]["autopilot"]["supported"] = False
    p = only(check(recipe, Catalog(tpu, gke)), "tpu-autopilot", "spec.slices[0].tpu", ERROR)
    assert "v5e" in p.message


# -- slice-multislice ---------------------------------------------------------------------

def test_multislice_on_single_host(recipe: dict) -> None:
    recipe["spec"]["slices"][0].update(topology="2x2", count=2)
    del recipe["spec"]["slices"][0]["chipsPerVm"]
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    p = only(check(recipe), "slice-multislice", "spec.slices[0].count", ERROR)
    assert "multi-host" in p.message
    assert p.value == 2


def test_multislice_on_multi_host_is_fine(recipe: dict) -> None:
    recipe["spec"]["slices"][0].update(chipsPerVm=4, count=2)
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    assert "slice-multislice" not in rules_of(check(recipe))


def test_multislice_unverified_version_warns(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-central1-c"
    recipe["spec"]["slices"][0] = {"name": "s8", "tpu": "tpu7x", "topology": "2x2x2",
                                   "count": 2}
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    p = only(check(recipe), "slice-multislice", "spec.slices[0].count", WARNING)
    assert "not confirmed" in p.message


# -- slice-capacity -----------------------------------------------------------------------

def test_reservation_without_name(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"type": "reservation"}
    p = only(check(recipe), "slice-capacity", "spec.slices[0].capacity.reservation", ERROR)
    assert "reservation's name" in p.message


def test_reservation_name_with_spot(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"type": "spot", "reservation": "r1"}
    p = only(check(recipe), "slice-capacity", "spec.slices[0].capacity.reservation", ERROR)
    assert p.value == "r1"
    assert "spot VMs never consume a reservation" in (p.hint or "")


def test_reservation_project_with_on_demand(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"reservationProject": "other-project"}
    only(check(recipe), "slice-capacity", "spec.slices[0].capacity.reservationProject", ERROR)


# -- tpu-zone -----------------------------------------------------------------------------

def test_zone_not_in_region(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-east1-b"
    p = only(check(recipe), "tpu-zone", "spec.zone", ERROR)
    assert "not in region 'us-central1'" in p.message


def test_zone_without_the_tpu_warns(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-central1-f"
    p = only(check(recipe), "tpu-zone", "spec.zone", WARNING)
    assert "us-central1-a" in (p.expected or "")


def test_region_without_the_tpu_warns(recipe: dict) -> None:
    recipe["spec"]["region"] = "us-east1"  # no v5e zone listed there; monitoring is GA there
    p = only(check(recipe), "tpu-zone", "spec.slices[0].tpu", WARNING)
    assert "us-east1" in p.message


# -- workload-slice -----------------------------------------------------------------------

def test_workload_slice_typo(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["name"] = "v5e-eight"
    recipe["spec"]["workloads"][0]["slice"] = "v5e-eigth"
    p = only(check(recipe), "workload-slice", "spec.workloads[0].slice", ERROR)
    assert p.hint == "did you mean 'v5e-eight'?"
    assert p.expected == "one of: v5e-eight"


def test_workload_names_unique(recipe: dict) -> None:
    recipe["spec"]["workloads"].append(dict(recipe["spec"]["workloads"][0]))
    p = only(check(recipe), "workload-slice", "spec.workloads[1].name", ERROR)
    assert "used twice" in p.message


# -- workload-chips -----------------------------------------------------------------------

def test_workload_chips_v4_multi_host(recipe: dict) -> None:
    recipe["spec"]["region"] = "us-central2"
    recipe["spec"]["diagnostics"]["mlrunRegion"] = "us-central1"
    recipe["spec"]["slices"][0] = {"name": "s8", "tpu": "v4", "topology": "2x2x4"}
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 8
    p = only(check(recipe), "workload-chips", "spec.workloads[0].chipsPerPod", ERROR)
    assert "multi-host slice of 4 VMs" in p.message
    assert p.expected == "4"
    assert p.value == 8


def test_workload_chips_single_host(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    p = only(check(recipe), "workload-chips", "spec.workloads[0].chipsPerPod", ERROR)
    assert "single-host" in p.message and p.expected == "8"


# -- tpu-resources (lint's rule over the rendered manifest) / workload-resources --------------

def test_cpu_above_the_machine(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["resources"] = {"cpu": 300}
    p = only(check(recipe), "tpu-resources", "spec.workloads[0].resources.cpu", ERROR)
    assert "ct5lp-hightpu-8t" in p.message and "224" in p.message
    assert p.value == "300"


def test_cpu_within_the_machine(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["resources"] = {"cpu": "200", "memory": "300Gi"}
    assert check(recipe) == []


def test_memory_above_an_unverified_machine_warns(recipe: dict) -> None:
    recipe["spec"]["region"] = "us-central2"
    recipe["spec"]["diagnostics"]["mlrunRegion"] = "us-central1"
    recipe["spec"]["slices"][0] = {"name": "s8", "tpu": "v4", "topology": "2x2x4"}
    recipe["spec"]["workloads"][0].update(chipsPerPod=4, resources={"memory": "500Gi"})
    p = only(check(recipe), "tpu-resources", "spec.workloads[0].resources.memory", WARNING)
    assert "unverified" in p.message


@pytest.mark.parametrize("bad", ["lots", "0", "-1", "10 Gi", "9e999999Ei"])
def test_memory_not_a_quantity(recipe: dict, bad: str) -> None:
    recipe["spec"]["workloads"][0]["resources"] = {"memory": bad}
    p = only(check(recipe), "workload-resources", "spec.workloads[0].resources.memory", ERROR)
    assert p.value == bad


# -- tpu-worker-env (lint's rule over the rendered manifest; was workload-env) -----------------

def test_worker_env_on_multi_host(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["chipsPerVm"] = 4
    recipe["spec"]["workloads"][0].update(chipsPerPod=4, env={"TPU_WORKER_ID": "0"})
    p = only(check(recipe), "tpu-worker-env", "spec.workloads[0].env.TPU_WORKER_ID", WARNING)
    assert p.value == "TPU_WORKER_ID" and "GKE injects it" in p.message


def test_worker_hostnames_that_do_not_match_the_slice(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["chipsPerVm"] = 4
    recipe["spec"]["workloads"][0].update(chipsPerPod=4, env={"TPU_WORKER_HOSTNAMES": "a,b,c"})
    p = only(check(recipe), "tpu-worker-env", "spec.workloads[0].env.TPU_WORKER_HOSTNAMES",
             ERROR)
    assert "lists 3 host(s)" in p.message and p.line > 0


def test_worker_env_on_single_host_is_fine(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["env"] = {"TPU_WORKER_ID": "0"}
    assert check(recipe) == []


# -- names-length -------------------------------------------------------------------------

def test_pod_hostname_too_long(recipe: dict) -> None:
    name = "w" * 62  # a valid DNS label; the pod hostname 'www...-0' is 64
    recipe["spec"]["workloads"][0]["name"] = name
    p = only(check(recipe), "names-length", "spec.workloads[0].name", ERROR)
    assert "64 characters" in p.message
    assert p.expected == "a workload name of at most 61 characters"


def test_pod_hostname_multislice(recipe: dict) -> None:
    recipe["spec"]["slices"][0].update(chipsPerVm=4, count=2)
    recipe["spec"]["workloads"][0].update(chipsPerPod=4, name="w" * 54)  # w...-slice-1-1: 64
    p = only(check(recipe), "names-length", "spec.workloads[0].name", ERROR)
    assert f"{'w' * 54}-slice-1-1" in p.message
    recipe["spec"]["workloads"][0]["name"] = "w" * 53
    assert "names-length" not in rules_of(check(recipe))


# -- engine -------------------------------------------------------------------------------

def test_engine_pulumi_is_accepted(recipe: dict) -> None:
    recipe["spec"]["engine"] = {"name": "pulumi"}
    assert "engine" not in rules_of(check(recipe))


def test_gcs_backend_without_bucket(recipe: dict) -> None:
    recipe["spec"]["engine"] = {"backend": {"type": "gcs"}}
    p = only(check(recipe), "engine", "spec.engine.backend.bucket", ERROR)
    assert "needs a bucket" in p.message


def test_local_backend_with_bucket(recipe: dict) -> None:
    recipe["spec"]["engine"] = {"backend": {"prefix": "state"}}
    only(check(recipe), "engine", "spec.engine.backend.prefix", ERROR)


def test_backend_bucket_name(recipe: dict) -> None:
    recipe["spec"]["engine"] = {"backend": {"type": "gcs", "bucket": "Bad_Bucket"}}
    only(check(recipe), "engine", "spec.engine.backend.bucket", ERROR)


# -- orchestrator -------------------------------------------------------------------------

def test_orchestrator_not_supported(recipe: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    # every orchestrator the model accepts has a unit now; the rule still guards new ones:
    # take the gke-autopilot unit out of the registry
    from mldiag_provision import orchestrators

    registered = orchestrators.units()
    monkeypatch.setattr(orchestrators, "units",
                        lambda: tuple(u for u in registered if u.name != "gke-autopilot"))
    p = only(check(recipe), "orchestrator", "spec.orchestrator.type", ERROR)
    assert "not supported" in p.message
    assert p.value == "gke-autopilot"
    assert p.expected == ", ".join(u.name for u in registered if u.name != "gke-autopilot")
    assert p.expected.startswith("gke-standard, slurm, existing-kubernetes")


def test_gke_standard_needs_a_zone(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    recipe["spec"].pop("zone", None)
    p = only(check(recipe), "orchestrator", "spec.zone", ERROR)
    assert "one zone" in p.message


def test_gke_standard_with_zone_is_clean(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    recipe["spec"]["zone"] = recipe["spec"]["region"] + "-a"
    assert [p for p in check(recipe) if p.severity is ERROR] == []


def test_gke_standard_node_pool_name_too_long(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    recipe["spec"]["zone"] = recipe["spec"]["region"] + "-a"
    name = "s" * 41
    recipe["spec"]["slices"][0]["name"] = name
    for w in recipe["spec"].get("workloads", []):
        w["slice"] = name
    p = only(check(recipe), "gcp-names", "spec.slices[0].name", ERROR)
    assert "GKE node pool name" in p.message and "41 characters; at most 40" in p.message


def test_existing_kubernetes_ignores_min_version(recipe: dict) -> None:
    recipe["spec"]["orchestrator"] = {"type": "existing-kubernetes", "minVersion": "1.35"}
    p = only(check(recipe), "orchestrator", "spec.orchestrator.minVersion", WARNING)
    assert "ignored" in p.message


def test_existing_self_managed_warns_about_credentials(recipe: dict) -> None:
    recipe["spec"]["orchestrator"] = {"type": "existing-kubernetes", "workloadIdentity": False}
    p = only(check(recipe), "orchestrator", "spec.orchestrator.workloadIdentity", WARNING)
    assert "credentials" in p.message


# -- gke-version --------------------------------------------------------------------------

MIN = "spec.orchestrator.minVersion"


def _versions(recipe: dict, version: str) -> list[Problem]:
    recipe["spec"]["orchestrator"]["minVersion"] = version
    return [p for p in check(recipe) if p.rule == "gke-version"]


def test_min_version_below_tpu7x(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-central1-c"
    recipe["spec"]["slices"][0] = {"name": "s8", "tpu": "tpu7x", "topology": "2x2x2"}
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    problems = _versions(recipe, "1.33.0-gke.1")
    errors = [p for p in problems if p.severity is ERROR]
    assert len(errors) == 1
    assert errors[0].path == MIN and errors[0].line > 0
    assert "1.34.1-gke.3084001" in errors[0].message and "tpu7x" in errors[0].message


def test_min_version_tpu7x_ok(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-central1-c"
    recipe["spec"]["slices"][0] = {"name": "s8", "tpu": "tpu7x", "topology": "2x2x2"}
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    assert _versions(recipe, "1.35.0-gke.3065000") == []


def test_min_version_below_multislice(recipe: dict) -> None:
    recipe["spec"]["slices"][0].update(chipsPerVm=4, count=2)
    recipe["spec"]["diagnostics"]["agents"] = "none"
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    problems = _versions(recipe, "1.29.1-gke.1")
    # the multislice and TPUs-on-Autopilot minimums are verified (H): errors; v5e's own entry
    # (M: the GKE page's revisions disagree) only warns, never an error (issue 25)
    by_reason = {p.message.split("the minimum for ")[1]: p.severity for p in problems}
    assert by_reason == {"multislice on Autopilot": ERROR, "TPUs on GKE Autopilot": ERROR,
                         "TPU v5e on Autopilot": WARNING}, by_reason


def test_managed_agents_below_minimum(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["agents"] = "managed"
    [p] = _versions(recipe, "1.34.0-gke.1")
    assert p.severity is ERROR and p.path == MIN and p.line > 0
    assert "managed ML Diagnostics" in p.message


def test_auto_agents_below_minimum_fall_back_to_manual(recipe: dict) -> None:
    assert _versions(recipe, "1.34.5-gke.1") == []
    from mldiag_provision.catalog.tpu import load_catalog as _lc
    from mldiag_provision.plan.stack import build_plan

    res = pipeline.check_text(yaml.safe_dump(recipe, sort_keys=False), "r.yaml")
    plan = build_plan(res.parsed.recipe, res.shapes, _lc())
    assert plan.agents.strategy == "manual"
    assert plan.cluster.managed_ml_diagnostics is False
    assert plan.agents.charts.injection_webhook.version == "0.25.0"


def test_prefix_with_managed_agents_is_an_error(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["agents"] = "managed"
    [p] = _versions(recipe, "1.35")
    assert p.severity is ERROR and p.path == MIN and p.line > 0
    assert "may resolve" in p.message


def test_prefix_of_tpu7x_may_resolve_below(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-central1-c"
    recipe["spec"]["slices"][0] = {"name": "s8", "tpu": "tpu7x", "topology": "2x2x2"}
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    recipe["spec"]["diagnostics"]["agents"] = "none"
    [p] = _versions(recipe, "1.34")
    assert p.severity is WARNING and "may resolve" in p.message
    assert p.hint == "write the full version 1.34.1-gke.3084001"


def test_min_version_not_a_version(recipe: dict) -> None:
    [p] = _versions(recipe, "latest")
    assert p.severity is ERROR and p.path == MIN and p.line > 0
    assert "not a GKE version" in p.message


def test_min_version_new_enough(recipe: dict) -> None:
    assert _versions(recipe, "1.35.0-gke.3065000") == []
    recipe["spec"]["diagnostics"]["agents"] = "none"
    assert _versions(recipe, "1.30.0-gke.1") == []


# -- diagnostics --------------------------------------------------------------------------

def test_region_without_workload_monitoring(recipe: dict) -> None:
    recipe["spec"]["region"] = "us-west4"  # a v5e zone, but no ML Diagnostics monitoring
    p = only(check(recipe), "diagnostics", "spec.region", WARNING)
    assert "workload monitoring" in p.message
    assert "us-central1" in (p.expected or "")


def _v4(recipe: dict, region: str = "us-central2") -> dict:
    recipe["spec"]["region"] = region
    recipe["spec"]["slices"] = [{"name": "v4", "tpu": "v4", "topology": "2x2x4"}]
    recipe["spec"]["workloads"] = [{"name": "w", "slice": "v4", "image": "python:3.12",
                                    "chipsPerPod": 4, "kind": "JobSet"}]
    return recipe


def test_region_only_the_tpu_is_offered_in_is_a_note(recipe: dict) -> None:
    # TPU v4: us-central2-b only (tpu.yaml zones; places.yaml tpuOnlyRegions, CTPU-REGIONS)
    p = only(check(_v4(recipe)), "diagnostics", "spec.region", Severity.INFO)
    assert "no ML Diagnostics workload monitoring" in p.message
    assert "lists TPU v4 in us-central2 only" in p.message
    assert "us-central1" in (p.expected or "")


def test_region_note_needs_every_slice_to_be_such_a_tpu(recipe: dict) -> None:
    # a v5e slice could run elsewhere (us-central1-a ...): then the region is a choice
    _v4(recipe)["spec"]["slices"].append({"name": "s8", "tpu": "v5e", "topology": "2x4",
                                          "chipsPerVm": 8})
    p = only(check(recipe), "diagnostics", "spec.region", WARNING)
    assert "lists TPU" not in p.message


def test_mlrun_region_is_never_forced_by_the_tpu(recipe: dict) -> None:
    _v4(recipe)["spec"]["diagnostics"]["mlrunRegion"] = "us-central2"
    only(check(recipe), "diagnostics", "spec.diagnostics.mlrunRegion", WARNING)


def test_mlrun_region_without_workload_monitoring(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["mlrunRegion"] = "asia-east1"
    only(check(recipe), "diagnostics", "spec.diagnostics.mlrunRegion", WARNING)


def test_retention_days_missing(recipe: dict) -> None:
    del recipe["spec"]["diagnostics"]["logAnalytics"]["retentionDays"]
    p = only(check(recipe), "diagnostics", "spec.diagnostics.logAnalytics.retentionDays", ERROR)
    assert "retentionDays is required" in p.message


def test_retention_days_not_needed_without_log_analytics(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["logAnalytics"] = {"enabled": False}
    assert check(recipe) == []


def test_manual_agents_are_supported(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    assert check(recipe) == []


def test_profiles_bucket_name(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["profilesBucket"] = {"name": "-bad-"}
    only(check(recipe), "diagnostics", "spec.diagnostics.profilesBucket.name", ERROR)


def test_diagnostics_disabled_skips_the_rule(recipe: dict) -> None:
    recipe["spec"]["region"] = "us-west4"
    recipe["spec"]["diagnostics"] = {"enabled": False}
    assert "diagnostics" not in rules_of(check(recipe))


# -- labels -------------------------------------------------------------------------------

def test_label_key_with_uppercase(recipe: dict) -> None:
    recipe["metadata"]["labels"] = {"Team": "ml"}
    p = only(check(recipe), "labels", "metadata.labels.Team", ERROR)
    assert p.value == "Team"
    assert "label key" in p.message


def test_label_value_with_uppercase(recipe: dict) -> None:
    recipe["metadata"]["labels"] = {"team": "ML"}
    p = only(check(recipe), "labels", "metadata.labels.team", ERROR)
    assert "label value" in p.message


# -- parse-level problems -----------------------------------------------------------------

def test_unknown_key_did_you_mean(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["releaseChanel"] = "RAPID"
    p = only(check(recipe), "recipe-unknown-key", "spec.orchestrator.releaseChanel", ERROR)
    assert p.hint == "did you mean 'releaseChannel'?"
    assert "releaseChannel" in (p.expected or "")


def test_min_version_float_needs_quotes(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["minVersion"] = "1.30"
    text = yaml.safe_dump(recipe, sort_keys=False).replace("'1.30'", "1.30")
    assert "minVersion: 1.30\n" in text
    problems = pipeline.check_text(text, "r.yaml").report.problems
    [p] = problems
    assert (p.rule, p.path, p.severity) == ("recipe-type", MIN, ERROR)
    assert p.line == text.splitlines().index("    minVersion: 1.30") + 1
    assert "quotes" in (p.hint or "")


def test_enum_value_case_hint(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["releaseChannel"] = "rapid"
    p = only(check(recipe), "recipe-value", "spec.orchestrator.releaseChannel", ERROR)
    assert "case-sensitive" in (p.hint or "")


# -- all at once --------------------------------------------------------------------------

def test_all_schema_problems_at_once(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["releaseChanel"] = "RAPID"
    recipe["spec"]["slices"][0]["count"] = 0
    recipe["metadata"]["name"] = "Not_A_Name"
    problems = check(recipe)
    assert {(p.rule, p.path) for p in problems} == {
        ("recipe-unknown-key", "spec.orchestrator.releaseChanel"),
        ("recipe-range", "spec.slices[0].count"),
        ("recipe-format", "metadata.name"),
    }
    assert all(p.line > 0 for p in problems)
    assert [p.line for p in problems] == sorted(p.line for p in problems)


def test_all_preflight_problems_at_once(recipe: dict) -> None:
    recipe["metadata"]["labels"] = {"Team": "ml"}
    recipe["spec"]["engine"] = {"backend": {"type": "gcs"}}
    recipe["spec"]["workloads"][0]["slice"] = "s9"
    problems = check(recipe)
    assert {(p.rule, p.path) for p in problems} == {
        ("labels", "metadata.labels.Team"),
        ("engine", "spec.engine.backend.bucket"),
        ("workload-slice", "spec.workloads[0].slice"),
    }
    assert all(p.severity is ERROR and p.line > 0 for p in problems)




# -- GPU slices ---------------------------------------------------------------------------

def _gpu(recipe: dict, **slice_fields: object) -> dict:
    recipe["spec"]["slices"] = [{"name": "g", "gpu": "h100-80gb", **slice_fields}]
    recipe["spec"]["workloads"] = [{"name": "train", "slice": "g", "image": "python:3.12",
                                    "gpusPerPod": 8}]
    return recipe


def test_gpu_slice_on_autopilot_is_clean(recipe: dict) -> None:
    assert [p for p in check(_gpu(recipe, nodes=2)) if p.severity is ERROR] == []


def test_tpu_and_gpu_in_one_slice(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["gpu"] = "h100-80gb"
    p = only(check(recipe), "slice-accelerator", "spec.slices[0].gpu", ERROR)
    assert "exactly one" in p.message


def test_tpu_slice_without_topology(recipe: dict) -> None:
    del recipe["spec"]["slices"][0]["topology"]
    p = only(check(recipe), "slice-accelerator", "spec.slices[0].topology", ERROR)
    assert "needs a topology" in p.message


def test_gpu_slice_with_topology(recipe: dict) -> None:
    p = only(check(_gpu(recipe, topology="2x4")), "slice-accelerator",
             "spec.slices[0].topology", ERROR)
    assert "TPU slices" in p.message


def test_unknown_gpu_has_a_hint(recipe: dict) -> None:
    p = only(check(_gpu(recipe, gpu="h100-80g")), "gpu-slice-shape", "spec.slices[0].gpu", ERROR)
    assert p.hint and "h100-80gb" in p.hint


def test_machine_type_of_another_gpu(recipe: dict) -> None:
    p = only(check(_gpu(recipe, machineType="a3-ultragpu-8g")), "gpu-slice-shape",
             "spec.slices[0].machineType", ERROR)
    assert "H200" in (p.hint or "")


def test_gpu_on_standard_needs_a_machine_type(recipe: dict) -> None:
    recipe = _gpu(recipe)
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    recipe["spec"]["zone"] = "us-central1-a"
    only(check(recipe), "gpu-slice-shape", "spec.slices[0].machineType", ERROR)


def test_eight_gpus_on_a_four_gpu_machine(recipe: dict) -> None:
    recipe = _gpu(recipe, gpu="gb200", machineType="a4x-highgpu-4g")
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    recipe["spec"]["zone"] = "us-central1-a"
    p = only(check(recipe), "workload-gpus", "spec.workloads[0].gpusPerPod", ERROR)
    assert p.value == 8 and p.expected == "1 to 4"


def test_gpus_per_pod_required_without_machine_type(recipe: dict) -> None:
    recipe = _gpu(recipe)
    del recipe["spec"]["workloads"][0]["gpusPerPod"]
    only(check(recipe), "workload-gpus", "spec.workloads[0].gpusPerPod", ERROR)


def test_chips_per_pod_on_a_gpu_slice(recipe: dict) -> None:
    recipe = _gpu(recipe)
    recipe["spec"]["workloads"][0]["chipsPerPod"] = 4
    only(check(recipe), "workload-gpus", "spec.workloads[0].chipsPerPod", ERROR)


def test_headless_service_name_within_63(recipe: dict) -> None:
    # v4 2x2x4: four pods; "<name>-3" fits, but the Service "<name>-workers" would not
    recipe["spec"]["region"] = "us-central2"
    recipe["spec"]["slices"] = [{"name": "s", "tpu": "v4", "topology": "2x2x4"}]
    name = "w" * 57
    recipe["spec"]["workloads"] = [{"name": name, "slice": "s", "image": "python:3.12"}]
    p = only(check(recipe), "names-length", "spec.workloads[0].name", ERROR)
    assert "headless Service" in p.message and f"{name}-workers" in p.message


# -- inputs a fresh-clone review found getting through ------------------------------------

@pytest.mark.parametrize(("field", "value"), [("count", True), ("chipsPerVm", 8.0)])
def test_strict_types(recipe: dict, field: str, value: object) -> None:
    recipe["spec"]["slices"][0][field] = value
    assert any(p.rule == "recipe-type" and p.path == f"spec.slices[0].{field}"
               for p in check(recipe))


def test_env_var_name_is_checked(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["env"] = {"A=B": "x"}
    p = only(check(recipe), "recipe-format", "spec.workloads[0].env.A=B", ERROR)
    assert "environment variable" in (p.expected or "")


def test_image_reference_is_checked(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["image"] = "UPPER CASE not an image"
    only(check(recipe), "recipe-format", "spec.workloads[0].image", ERROR)


def test_reservation_name_is_checked(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"type": "reservation",
                                               "reservation": "res: {a: b}"}
    only(check(recipe), "recipe-format", "spec.slices[0].capacity.reservation", ERROR)


def test_reserved_label_key(recipe: dict) -> None:
    recipe["metadata"]["labels"] = {"managed-by": "me"}
    p = only(check(recipe), "labels", "metadata.labels.managed-by", ERROR)
    assert "mldiag-provision itself" in p.message


def test_too_many_labels(recipe: dict) -> None:
    recipe["metadata"]["labels"] = {f"k{i}": "v" for i in range(63)}
    only(check(recipe), "labels", "metadata.labels", ERROR)


@pytest.mark.parametrize(("bucket", "ok"), [("goog-bucket", False), ("my-google-data", False),
                                            ("my.bucket.with.dots.example.com", True)])
def test_bucket_names(recipe: dict, bucket: str, ok: bool) -> None:
    recipe["spec"]["diagnostics"]["profilesBucket"] = {"name": bucket}
    found = [p for p in check(recipe) if p.path == "spec.diagnostics.profilesBucket.name"]
    assert (found == []) is ok, found


# -- diagnostics strategy (issue 6) -------------------------------------------------------

def test_managed_and_manual_together(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["agents"] = "managed"
    recipe["spec"]["diagnostics"]["manual"] = {"installCertManager": False}
    p = only(check(recipe), "diagnostics-strategy", "spec.diagnostics.manual", ERROR)
    assert "both" in p.message


def test_managed_on_self_managed_kubernetes(recipe: dict) -> None:
    recipe["spec"]["orchestrator"] = {"type": "existing-kubernetes", "workloadIdentity": False}
    recipe["spec"]["diagnostics"]["agents"] = "managed"
    only(check(recipe), "diagnostics-strategy", "spec.diagnostics.agents", ERROR)


def test_bad_jax_version(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["jaxVersion"] = "latest"
    only(check(recipe), "diagnostics-strategy", "spec.diagnostics.jaxVersion", ERROR)


def test_job_kind_warns_about_the_webhook(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["kind"] = "Job"
    p = only(check(recipe), "workload-kind", "spec.workloads[0].kind", WARNING)
    assert "JobSet" in p.message


def test_multislice_cannot_be_a_job(recipe: dict) -> None:
    recipe["spec"]["slices"] = [{"name": "s8", "tpu": "v5e", "topology": "4x4", "count": 2}]
    recipe["spec"]["workloads"][0].update(kind="Job", chipsPerPod=4)
    only(check(recipe), "workload-kind", "spec.workloads[0].kind", ERROR)


def test_host_network_refused_on_autopilot(recipe: dict) -> None:
    recipe["spec"]["workloads"][0]["hostNetwork"] = True
    p = only(check(recipe), "workload-host-network", "spec.workloads[0].hostNetwork", ERROR)
    # cited by URL like every other rule (it cited the undefined tag GKE-AP-SECURITY)
    assert p.source == "https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-security"


def test_host_network_gpu_pods_sharing_a_node(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["type"] = "gke-standard"
    recipe["spec"]["zone"] = "us-central1-a"
    recipe["spec"]["slices"] = [{"name": "g", "gpu": "h100-80gb", "machineType": "a3-highgpu-8g"}]
    recipe["spec"]["workloads"] = [{"name": "w", "slice": "g", "image": "python:3.12",
                                    "kind": "JobSet", "gpusPerPod": 4, "hostNetwork": True}]
    problems = [p for p in check(recipe) if p.rule == "workload-host-network"]
    assert {p.severity for p in problems} == {ERROR, Severity.INFO}
    assert any("9999" in p.message for p in problems)


@pytest.mark.parametrize(("field", "raw", "rule", "path", "message", "hint"), [
    ("cpu", "-3", "workload-resources", "spec.workloads[0].resources.cpu",
     "cpu -3 is negative; Kubernetes refuses a negative amount (it must be greater than or "
     "equal to 0)", "give a positive amount, e.g. 3"),
    ("memory", "-5Gi", "workload-resources", "spec.workloads[0].resources.memory",
     "memory -5Gi is negative; Kubernetes refuses a negative amount (it must be greater than "
     "or equal to 0)", "give a positive amount, e.g. 5Gi"),
    ("cpu", "0", "workload-resources", "spec.workloads[0].resources.cpu",
     "cpu 0 asks for nothing", "leave the field out, or give a positive amount"),
    ("cpu", "lots", "workload-resources", "spec.workloads[0].resources.cpu",
     "'lots' is not a Kubernetes quantity", None),
    ("ephemeralStorage", "-50Gi", "workload-ephemeral-storage",
     "spec.workloads[0].resources.ephemeralStorage",
     "ephemeralStorage -50Gi is negative; Kubernetes refuses a negative amount (it must be "
     "greater than or equal to 0)", "give a positive amount, e.g. 50Gi"),
])
def test_a_negative_or_zero_amount_is_named_as_such(recipe: dict, field: str, raw: str,
                                                     rule: str, path: str, message: str,
                                                     hint: str | None) -> None:
    """validate called ``cpu: -3`` "not a Kubernetes quantity" (it is one, a negative one,
    which the API server refuses), where lint said it is negative (fresh-user review)."""
    recipe["spec"]["workloads"][0]["resources"] = {field: raw}
    p = only(check(recipe), rule, path, ERROR)
    assert (p.message, p.hint) == (message, hint)
    if "negative" in message:
        assert p.source is not None and "ValidateNonnegativeQuantity" in p.source
