"""Queued capacity (flex-start with queued provisioning, issue 14): the recipe's capacity type
``queued`` and ``spec.kueue``, the preflight rules with their sources, the plan (node pools,
GKE minimum, Kueue add-on and objects) and the rendered Terraform / Kubernetes files.

Facts: catalog/data/gke.yaml ``queuedProvisioning``
(https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest; Kueue v0.19.2).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from mldiag_provision import pipeline
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.plan.types import StackPlan
from mldiag_provision.render import k8s
from mldiag_provision.render.stack import render_stack

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "recipes" / "tpu-v6e-4x4-queued-standard.yaml"
GUIDE = "https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest"

BASE: dict = {
    "apiVersion": "mldiag-provision/v1alpha1",
    "kind": "Recipe",
    "metadata": {"name": "queued-base"},
    "spec": {
        "project": "my-ml-project",
        "region": "us-east5",
        "zone": "us-east5-b",
        "orchestrator": {"type": "gke-standard"},
        "slices": [{"name": "v6e", "tpu": "v6e", "topology": "4x4", "count": 2,
                    "capacity": {"type": "queued"}}],
        "diagnostics": {"logAnalytics": {"retentionDays": 30}},
        "workloads": [{"name": "train", "slice": "v6e", "image": "python:3.12"}],
    },
}


@pytest.fixture
def recipe() -> dict:
    return copy.deepcopy(BASE)


def check(data: dict) -> pipeline.CheckResult:
    return pipeline.check_text(yaml.safe_dump(data, sort_keys=False), "r.yaml")


def problems(data: dict) -> list[Problem]:
    return check(data).report.problems


def one(found: list[Problem], rule: str, path: str) -> Problem:
    hits = [p for p in found if p.rule == rule and p.path == path]
    assert len(hits) == 1, [(p.rule, p.path, p.message) for p in found]
    assert hits[0].line > 0
    return hits[0]


def plan_of(data: dict) -> StackPlan:
    res = check(data)
    assert not res.report.errors, res.report.errors
    return build_plan(res.parsed.recipe, res.shapes, load_catalog())


# -- the recipe and preflight ---------------------------------------------------------------

def test_base_recipe_with_queued_capacity_has_no_queued_problem(recipe: dict) -> None:
    assert [p for p in problems(recipe) if p.rule.startswith("queued")] == []


@pytest.mark.parametrize("orch", ["gke-autopilot", "existing-kubernetes"])
def test_queued_capacity_needs_gke_standard(recipe: dict, orch: str) -> None:
    recipe["spec"]["orchestrator"] = {"type": orch, "clusterName": "c"} if orch.startswith(
        "existing") else {"type": orch}
    p = one(problems(recipe), "queued-capacity", "spec.slices[0].capacity.type")
    assert p.severity is Severity.ERROR
    assert orch in p.message and p.source == GUIDE
    assert p.expected == "orchestrator.type: gke-standard"


def test_queued_with_a_reservation_is_refused_with_its_source(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"]["reservation"] = "my-res"
    found = problems(recipe)
    p = one(found, "queued-reservation", "spec.slices[0].capacity.reservation")
    assert p.severity is Severity.ERROR and p.source == GUIDE
    assert "--reservation-affinity=none" in p.message
    # the generic reservation rule does not say it a second time
    assert not [q for q in found if q.rule == "slice-capacity"]


def test_queued_and_spot_cannot_both_be_asked_for(recipe: dict) -> None:
    """One provisioning model per slice: a queued pool is never Spot, and the recipe has no
    way to say both (the schema refuses a spot flag next to the type)."""
    recipe["spec"]["slices"][0]["capacity"]["spot"] = True
    found = problems(recipe)
    assert any(p.path == "spec.slices[0].capacity.spot" and p.severity is Severity.ERROR
               for p in found), found


def test_max_run_duration_over_seven_days(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"]["maxRunDuration"] = "8d"
    p = one(problems(recipe), "queued-run-duration", "spec.slices[0].capacity.maxRunDuration")
    assert p.expected == "at most 7d (168h)"
    # the seven days are stated on a secondary page (confidence M): a warning, never an error
    assert p.severity is Severity.WARNING
    recipe["spec"]["slices"][0]["capacity"]["maxRunDuration"] = "7d"
    assert not [q for q in problems(recipe) if q.rule.startswith(("queued", "slurm"))]


def test_gpu_version_below_the_queued_minimum_is_an_error(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-east5-a"
    recipe["spec"]["slices"] = [{"name": "a3", "gpu": "h200-141gb",
                                 "machineType": "a3-ultragpu-8g", "nodes": 2,
                                 "capacity": {"type": "queued"}}]
    recipe["spec"]["workloads"][0]["slice"] = "a3"
    recipe["spec"]["orchestrator"]["minVersion"] = "1.28.2-gke.1000"
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    p = one(problems(recipe), "queued-version", "spec.orchestrator.minVersion")
    assert p.severity is Severity.ERROR
    assert p.expected == ">= 1.28.3-gke.1098000" and p.source == GUIDE


def test_tpu_version_below_the_flex_start_minimum_is_a_warning(recipe: dict) -> None:
    recipe["spec"]["orchestrator"]["minVersion"] = "1.32.0-gke.1"
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    p = one(problems(recipe), "queued-tpu-version", "spec.orchestrator.minVersion")
    assert p.severity is Severity.WARNING  # inferred from flex-start's TPU minimum (M)
    assert "1.33.0-gke.1712000" in p.message


def test_kueue_settings_without_queued_slices_warn(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"type": "spot"}
    recipe["spec"]["kueue"] = {"localQueue": "q"}
    p = one(problems(recipe), "queued-capacity", "spec.kueue")
    assert p.severity is Severity.WARNING


# -- the plan -------------------------------------------------------------------------------

def test_plan_marks_the_pools_and_adds_kueue(recipe: dict) -> None:
    recipe["spec"]["kueue"] = {"clusterQueue": "cq", "localQueue": "lq"}
    recipe["spec"]["slices"][0]["capacity"]["maxRunDuration"] = "36h"
    plan = plan_of(recipe)
    assert [p.capacity for p in plan.node_pools] == ["queued", "queued"]
    assert [a.name for a in plan.agents.addons] == ["jobset", "kueue"]  # type: ignore[union-attr]
    q = plan.queued
    assert q is not None and q.cluster_queue == "cq" and q.local_queue == "lq"
    assert q.namespace == "mldiag" and q.provisioning_class == "queued-provisioning.gke.io"
    assert q.managed_resources == ("google.com/tpu",)
    assert q.quotas["google.com/tpu"] == "32"  # 2 slices x 16 chips
    w = plan.workloads[0]
    assert (w.queue, w.max_run_seconds) == ("lq", 36 * 3600)
    data = plan.to_dict()
    assert data["queued"]["cluster_queue"] == "cq"


def test_plan_without_queued_capacity_is_unchanged(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["capacity"] = {"type": "spot"}
    plan = plan_of(recipe)
    assert plan.queued is None
    data = plan.to_dict()
    assert "queued" not in data and "queue" not in data["workloads"][0]
    assert "kueue" not in {a.name for a in plan.agents.addons}  # type: ignore[union-attr]


def test_default_gke_version_covers_queued_tpus(recipe: dict) -> None:
    """Without the managed add-on's higher minimum, the queued TPU minimum decides."""
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    recipe["spec"]["orchestrator"]["releaseChannel"] = "RAPID"
    plan = plan_of(recipe)
    assert any("queued provisioning of TPUs on GKE Standard 1.33.0-gke.1712000" in d
               for d in plan.decisions), plan.decisions


# -- rendered files -------------------------------------------------------------------------

def test_terraform_node_pool_module_asks_for_queued_provisioning() -> None:
    main = (ROOT / "modules/gke/accelerator-node-pool/main.tf").read_text()
    assert 'dynamic "queued_provisioning"' in main
    assert 'queued      = var.capacity == "queued"' in main
    assert 'flex_start  = var.capacity == "flex-start" || local.queued' in main
    variables = (ROOT / "modules/gke/accelerator-node-pool/variables.tf").read_text()
    assert '"flex-start", "queued"]' in variables


def test_rendered_stack_of_the_example(tmp_path: Path) -> None:
    res = pipeline.check_file(str(EXAMPLE), load_catalog())
    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    files = render_stack(plan)
    kueue = list(yaml.safe_load_all(files["k8s/workloads/00-kueue.yaml"]))
    assert [o["kind"] for o in kueue] == ["ProvisioningRequestConfig", "AdmissionCheck",
                                          "ResourceFlavor", "ClusterQueue", "LocalQueue"]
    assert sorted(files).index("k8s/workloads/00-kueue.yaml") < sorted(files).index(
        "k8s/workloads/queued-train.yaml")  # applied first (file order)
    jobset = yaml.safe_load(files["k8s/workloads/queued-train.yaml"])
    assert jobset["spec"]["suspend"] is True
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "train"
    assert jobset["metadata"]["annotations"][
        "provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "86400"
    main_tf = files["main.tf"].decode() if isinstance(files["main.tf"], bytes) else files[
        "main.tf"]
    assert 'capacity            = "queued"' in main_tf
    agents = files["agents/main.tf"]
    agents = agents.decode() if isinstance(agents, bytes) else agents
    assert '"chart" = "kueue", "repository" = "oci://registry.k8s.io/kueue/charts"' in agents


def test_a_queued_job_is_suspended_too(recipe: dict) -> None:
    recipe["spec"]["slices"][0]["count"] = 1
    plan = plan_of(recipe)
    job = next(o for o in k8s.workload(plan, plan.workloads[0]) if o["kind"] == "Job")
    assert job["spec"]["suspend"] is True
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "mldiag-queued"
    assert "annotations" not in job["metadata"]  # no maxRunDuration: GKE's default


def test_rendered_kueue_objects_lint_clean_against_the_vendored_crds(recipe: dict) -> None:
    plan = plan_of(recipe)
    text = yaml.safe_dump_all(k8s.kueue_objects(plan))
    opts = LintOptions(default_version(), diagnostics=False,
                       crd_versions=(("kueue", "v0.19.2"),))
    assert lint_sources([Source("kueue.yaml", text)], opts).problems == []
    bad = text.replace("admissionChecksStrategy", "admissionCheckStrategy")
    found = lint_sources([Source("kueue.yaml", bad)], opts).problems
    assert [(p.rule, p.severity) for p in found] == [("k8s-unknown-field", Severity.ERROR)]
    assert "kueue v0.19.2" in found[0].message


def test_workloads_stage_applies_the_queues_first_and_deletes_them_last(tmp_path: Path) -> None:
    """Apply order is k8s/workloads/ file order (queues before the JobSet that names them);
    a destroy deletes the JobSet first, then the Kueue objects in reverse (Kueue's
    resource-in-use finalizer keeps each while a workload or a ClusterQueue uses it)."""
    from mldiag_provision.stack import kube

    res = pipeline.check_file(str(EXAMPLE), load_catalog())
    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    for rel, data in render_stack(plan).items():
        if rel.startswith("k8s/workloads/"):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(data)
    order = [ref.kind for ref, _, _ in kube.load_manifests(tmp_path)]
    assert order == ["ProvisioningRequestConfig", "AdmissionCheck", "ResourceFlavor",
                     "ClusterQueue", "LocalQueue", "JobSet"]

    class _Live(kube.Workloads):  # every object exists: what would a destroy delete?
        def __init__(self, workdir: Path) -> None:
            self.workdir = workdir

        def _get(self, ref: kube.ObjectRef) -> dict:
            return {"metadata": {}}

    changes = _Live(tmp_path).plan(destroy=True).changes
    assert [c.address.split("/")[0] for c in changes] == [
        "JobSet", "LocalQueue", "ClusterQueue", "ResourceFlavor", "AdmissionCheck",
        "ProvisioningRequestConfig"]
    assert {c.action for c in changes} == {"delete"}
