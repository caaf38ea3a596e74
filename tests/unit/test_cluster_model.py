"""The cluster model (issue 25): admitted by Kueue, scheduled within allocatable.

Each kind is drawn from more than one public source:
* Kueue coverage: kubernetes-sigs/kueue#4848 (a Job requesting ephemeral-storage, "resource
  ephemeral-storage unavailable in ClusterQueue"), GoogleCloudPlatform/ai-on-gke#872 (the
  ClusterQueue given ephemeral-storage for that reason), the Kubernetes rule that limits
  default requests and that init containers count (manage-resources-containers,
  init-containers pages).
* Allocatable: GKE's node-sizing page (4 vCPUs -> 3920m; the memory tiers), a public
  calculator that quotes the page (hatemosphere/gke-node-allocatable-memory-calculator: 150 GiB
  -> 140.1423 GiB allocatable), the scheduler's "Insufficient <resource>"
  (kubernetes/kubernetes#63190).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from tests.cli_support import run_cli
from tests.lint.support import by_rule, lint, one

from mldiag_provision import pipeline
from mldiag_provision.cluster.model import GIB, MIB, allocatable, reserved_cpu, reserved_memory
from mldiag_provision.errors import Problem, Severity

ROOT = Path(__file__).resolve().parents[2]
QUEUED_EXAMPLE = ROOT / "recipes" / "tpu-v6e-4x4-queued-standard.yaml"
GPU_QUEUED_EXAMPLE = ROOT / "recipes" / "gpu-a3-ultra-queued-standard.yaml"


def check(data: dict) -> list[Problem]:
    return pipeline.check_text(yaml.safe_dump(data, sort_keys=False), "r.yaml").report.problems


def hits(found: list[Problem], rule: str) -> list[Problem]:
    return [p for p in found if p.rule == rule]


# -- allocatable arithmetic (GKE's node-sizing page) -------------------------------------------

def test_cpu_reservation_matches_the_pages_example_node() -> None:
    """GKE's node-sizing page shows a 4-vCPU node with allocatable cpu 3920m."""
    assert reserved_cpu(Decimal(4)) == Decimal("0.08")
    assert allocatable({"cpu": Decimal(4)})["cpu"] == Decimal("3.92")
    # one core: 6% of it
    assert reserved_cpu(Decimal(1)) == Decimal("0.06")


def test_memory_reservation_matches_the_public_calculator() -> None:
    """hatemosphere/gke-node-allocatable-memory-calculator, which quotes the page: a 150 GiB
    node reserves 9.8577 GiB (eviction included) and offers 140.1423 GiB."""
    reserved = reserved_memory(Decimal(150) * GIB) / GIB
    assert reserved.quantize(Decimal("0.0001")) == Decimal("9.8577")
    # under 1 GiB: 255 MiB, plus the 100 MiB eviction threshold
    assert reserved_memory(Decimal(512) * MIB) == Decimal(355) * MIB


def test_allocatable_keeps_accelerators_and_leaves_ephemeral_storage_unjudged() -> None:
    out = allocatable({"cpu": Decimal(8), "google.com/tpu": Decimal(4),
                       "ephemeral-storage": Decimal(100) * GIB})
    assert out["google.com/tpu"] == 4
    assert "ephemeral-storage" not in out


# -- admitted: Kueue coverage ---------------------------------------------------------------------

QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory%s]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 9}
      - {name: memory, nominalQuota: 36Gi}%s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: team}
spec: {clusterQueue: cq}
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: sample
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
%s      containers:
      - name: main
        image: busybox
        resources:
          %s: {cpu: 100m, memory: 128Mi, ephemeral-storage: 100Mi}
"""


def test_kueue_refuses_a_resource_its_cluster_queue_does_not_cover() -> None:
    """kubernetes-sigs/kueue#4848: a Job requesting ephemeral-storage through a ClusterQueue
    that covers cpu and memory stays Pending: "couldn't assign flavors to pod set main:
    resource ephemeral-storage unavailable in ClusterQueue"."""
    result = lint(QUEUE % ("", ""), JOB % ("", "requests"))
    p = one(result, "kueue-covered-resources")
    assert p.severity is Severity.ERROR
    assert p.path == "spec.template.spec.containers[0].resources.requests.ephemeral-storage"
    assert "resource ephemeral-storage unavailable in ClusterQueue" in p.message
    assert "pod set main" in p.message
    assert p.source == "https://github.com/kubernetes-sigs/kueue/issues/4848"


def test_a_cluster_queue_that_covers_the_resource_admits_it() -> None:
    """GoogleCloudPlatform/ai-on-gke#872: the fix is to cover ephemeral-storage."""
    covered = QUEUE % (", ephemeral-storage", "\n      - {name: ephemeral-storage, "
                                              "nominalQuota: 100Gi}")
    assert by_rule(lint(covered, JOB % ("", "requests")), "kueue-covered-resources") == []


def test_limits_alone_are_requests_too() -> None:
    """Kubernetes defaults a container's requests to its limits (manage-resources-containers),
    so Kueue counts a resource named only under limits."""
    p = one(lint(QUEUE % ("", ""), JOB % ("", "limits")), "kueue-covered-resources")
    assert p.path.endswith("resources.limits.ephemeral-storage")


def test_an_init_containers_request_counts() -> None:
    """An init container's requests are the pod's too (init-containers page: the effective
    request is the larger of the init containers' and the containers' sum)."""
    init = ("      initContainers:\n      - name: fetch\n        image: busybox\n"
            "        resources: {requests: {nvidia.com/gpu: 1}}\n")
    result = lint(QUEUE % (", ephemeral-storage", ""), JOB % (init, "requests"))
    p = one(result, "kueue-covered-resources")
    assert "nvidia.com/gpu" in p.message
    assert p.path == "spec.template.spec.initContainers[0].resources.requests[\"nvidia.com/gpu\"]"


def test_a_workload_without_a_queue_or_with_an_unknown_queue_is_not_judged() -> None:
    plain = JOB.replace("  labels: {kueue.x-k8s.io/queue-name: user-queue}\n", "")
    assert by_rule(lint(QUEUE % ("", ""), plain % ("", "requests")),
                   "kueue-covered-resources") == []
    other = JOB.replace("user-queue", "other-queue")
    assert by_rule(lint(QUEUE % ("", ""), other % ("", "requests")),
                   "kueue-covered-resources") == []


@pytest.fixture
def queued() -> dict:
    return yaml.safe_load(QUEUED_EXAMPLE.read_text())


def test_the_issue_recipe_renders_a_cluster_queue_that_covers_ephemeral_storage(
        queued: dict, tmp_path: Path) -> None:
    """Issue 25's example: capacity queued + resources.ephemeralStorage 100Gi. The rendered
    ClusterQueue covers ephemeral-storage, so validate passes and the rendered manifests lint
    clean through the same check."""
    queued["spec"]["workloads"][0]["resources"] = {"ephemeralStorage": "100Gi"}
    found = check(queued)
    assert hits(found, "kueue-covered-resources") == [], found
    assert [p for p in found if p.severity is Severity.ERROR] == []
    res = pipeline.check_text(yaml.safe_dump(queued, sort_keys=False), "r.yaml")
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.plan.stack import build_plan
    from mldiag_provision.render import k8s

    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    cq = next(o for o in k8s.kueue_objects(plan) if o["kind"] == "ClusterQueue")
    covered = cq["spec"]["resourceGroups"][0]["coveredResources"]
    assert "ephemeral-storage" in covered
    quotas = {r["name"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quotas == set(covered)


def test_a_recipe_without_ephemeral_storage_keeps_its_cluster_queue(queued: dict) -> None:
    """No request, no coverage added: the bundled example's stack keeps its bytes."""
    res = pipeline.check_text(yaml.safe_dump(queued, sort_keys=False), "r.yaml")
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.plan.stack import build_plan

    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    assert plan.queued is not None
    assert "ephemeral-storage" not in plan.queued.quotas


def test_preflight_judges_the_plans_queue_with_the_same_check(queued: dict,
                                                              monkeypatch) -> None:
    """Preflight builds the model from the plan: were the ClusterQueue not to cover
    ephemeral-storage (as before issue 25), the finding lands on the recipe's field."""
    from mldiag_provision.plan import kubernetes as plan_k8s

    original = plan_k8s.queued_plan

    def without_coverage(*args, **kwargs):
        q = original(*args, **kwargs)
        if q is None:
            return q
        import dataclasses
        quotas = {k: v for k, v in q.quotas.items() if k != "ephemeral-storage"}
        return dataclasses.replace(q, quotas=quotas)

    from mldiag_provision.preflight import manifest_rules
    monkeypatch.setattr(manifest_rules, "queued_plan", without_coverage)
    queued["spec"]["workloads"][0]["resources"] = {"ephemeralStorage": "100Gi"}
    found = hits(check(queued), "kueue-covered-resources")
    assert len(found) == 1, found
    assert found[0].path == "spec.workloads[0].resources.ephemeralStorage"
    assert found[0].severity is Severity.ERROR


def test_queued_gpu_workloads_are_judged_too() -> None:
    """A GPU recipe's queued workload goes through the same check (preflight renders the
    workloads of queued slices whatever their accelerator)."""
    data = yaml.safe_load(GPU_QUEUED_EXAMPLE.read_text())
    data["spec"]["workloads"][0].setdefault("resources", {})["ephemeralStorage"] = "50Gi"
    assert hits(check(data), "kueue-covered-resources") == []
    assert [p for p in check(data) if p.severity is Severity.ERROR] == []


# -- scheduled: requests within allocatable ---------------------------------------------------

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: tpu}
spec:
  nodeSelector:
    cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice
    cloud.google.com/gke-tpu-topology: 2x2
  containers:
  - name: main
    image: python:3.12
    resources:
      requests: {google.com/tpu: 4, %s}
      limits: {google.com/tpu: 4}
"""


def test_memory_between_allocatable_and_the_machine_stays_pending() -> None:
    """ct5lp-hightpu-4t has 192 GB (GiB): GKE keeps 10.6 GiB + 100 MiB, so 185Gi is below the
    machine and above allocatable: "0/1 nodes are available: 1 Insufficient memory"."""
    p = one(lint(POD % "memory: 185Gi"), "node-allocatable")
    assert p.path == "spec.containers[0].resources.requests.memory"
    assert "Insufficient memory" in p.message
    assert "181.30 GiB allocatable" in p.message
    # the reservation tiers are not verified verbatim at the page: a warning (the fact says
    # what would confirm it)
    assert p.severity is Severity.WARNING
    assert by_rule(lint(POD % "memory: 185Gi"), "tpu-resources") == []


def test_cpu_between_allocatable_and_the_machine_stays_pending() -> None:
    """112 vCPUs less 6% + 1% + 2 x 0.5% + 108 x 0.25% of a core = 111.65 allocatable."""
    p = one(lint(POD % "cpu: 111.8"), "node-allocatable")
    assert "Insufficient cpu" in p.message
    assert p.expected == "at most 111.65 cores"


def test_a_request_that_fits_allocatable_is_clean_and_above_the_machine_is_reported_once(
) -> None:
    assert by_rule(lint(POD % "memory: 180Gi"), "node-allocatable") == []
    whole = lint(POD % "memory: 300Gi")
    assert by_rule(whole, "node-allocatable") == []
    assert len(by_rule(whole, "tpu-resources")) == 1


def test_init_container_request_counts_for_the_fit() -> None:
    """The effective request is the larger of an init container's and the containers' sum
    (init-containers page), so a big init container alone leaves the pod Pending."""
    text = POD % "memory: 1Gi"
    text = text.replace("  containers:\n", "  initContainers:\n  - name: warm\n"
                        "    image: busybox\n    resources: {requests: {memory: 186Gi}}\n"
                        "  containers:\n")
    p = one(lint(text), "node-allocatable")
    assert p.path == "spec.initContainers[0].resources.requests.memory"


def test_preflight_points_the_allocatable_finding_at_the_recipe() -> None:
    """The same check through validate: the finding lands on the recipe's own field."""
    data = yaml.safe_load((ROOT / "recipes" / "tpu-v5e-private-standard.yaml").read_text())
    slice_ = data["spec"]["slices"][0]
    assert (slice_["tpu"], slice_["topology"]) == ("v5e", "4x4")  # ct5lp-hightpu-4t VMs
    data["spec"]["workloads"][0]["resources"] = {"memory": "185Gi"}
    found = hits(check(data), "node-allocatable")
    assert len(found) == 1, found
    assert found[0].path == "spec.workloads[0].resources.memory"
    assert found[0].line > 0
    assert "Insufficient memory" in found[0].message


def test_bundled_recipes_get_no_cluster_model_finding() -> None:
    for path in sorted((ROOT / "recipes").glob("*.yaml")):
        found = pipeline.check_text(path.read_text(), str(path)).report.problems
        assert hits(found, "node-allocatable") == [], path
        assert hits(found, "kueue-covered-resources") == [], path


def test_the_model_words_match_the_scheduler_and_kueue() -> None:
    """The messages carry the words users search for (STYLE.md: Kueue / scheduler)."""
    assert "Insufficient memory" in one(lint(POD % "memory: 185Gi"), "node-allocatable").message
    assert "unavailable in ClusterQueue" in one(
        lint(QUEUE % ("", ""), JOB % ("", "requests")), "kueue-covered-resources").message


def test_a_negative_or_zero_request_is_left_to_the_schema() -> None:
    """-100Mi is Kubernetes' ValidateNonnegativeQuantity finding (k8s-quantity), not also a
    Kueue coverage one; zero asks for nothing."""
    for amount in ("-100Mi", "0"):
        text = JOB.replace("ephemeral-storage: 100Mi", f"ephemeral-storage: {amount}")
        assert by_rule(lint(QUEUE % ("", ""), text % ("", "requests")),
                       "kueue-covered-resources") == [], amount


def test_lint_recipe_judges_hand_written_manifests_against_the_recipes_queue(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``lint --recipe``: a hand-written JobSet sent to the recipe's LocalQueue (mldiag/train)
    that asks for ephemeral-storage is refused by the recipe's ClusterQueue, which covers
    cpu, memory and google.com/tpu only (kubernetes-sigs/kueue#4848)."""
    manifest = tmp_path / "job.yaml"
    manifest.write_text(JOB.replace("namespace: team", "namespace: mldiag")
                        .replace("user-queue", "train") % ("", "requests"))
    code, out, err = run_cli(capsys, ["lint", str(manifest), "--recipe", str(QUEUED_EXAMPLE),
                                      "--output", "json"])
    assert code == 1, out + err
    found = [p for p in json.loads(out)["files"][0]["problems"]
             if p["rule"] == "kueue-covered-resources"]
    assert len(found) == 1, out
    assert "ClusterQueue tpu-queued" in found[0]["message"]
    # without --recipe the queue is unknown to lint: not judged
    code, out, err = run_cli(capsys, ["lint", str(manifest), "--output", "json"])
    assert [p for p in json.loads(out)["files"][0]["problems"]
            if p["rule"] == "kueue-covered-resources"] == []


def test_a_pod_bound_to_no_node_group_is_not_judged() -> None:
    """A CPU pod without selectors beside a TPU pod may land on any node (a system pool the
    manifests do not describe): the TPU machine's allocatable says nothing about it."""
    cpu_pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: cpu}\nspec:\n  containers:\n"
               "  - name: main\n    image: python:3.12\n"
               "    resources: {requests: {memory: 185Gi}}\n")
    result = lint(POD % "memory: 1Gi", cpu_pod)
    assert by_rule(result, "node-allocatable") == []


# -- scheduled: taints and tolerations ----------------------------------------------------------

def _tainted_model(*taints: tuple[str, str, str]):
    from mldiag_provision.cluster.model import ClusterModel, NodeGroup, Taint

    group = NodeGroup(name="dedicated", machine_type="n2-standard-8", nodes=3, zones=(),
                      labels={"cloud.google.com/gke-nodepool": "dedicated"},
                      taints=tuple(Taint(*x) for x in taints), capacity={}, allocatable={})
    return ClusterModel(mode="unknown", node_groups=(group,), source="live")


def _taint_verdicts(model, tolerations: list | None = None, requests: str = "cpu: 1"):
    from mldiag_provision.cluster.check import check
    from mldiag_provision.lint.loading import Resource
    from mldiag_provision.lint.workloads import pod_templates
    from mldiag_provision.recipe.sourcemap import SourceMap

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"nodeSelector": {"cloud.google.com/gke-nodepool": "dedicated"},
                    "containers": [{"name": "c", "image": "busybox", "resources": {
                        "requests": yaml.safe_load("{" + requests + "}")}}]}}
    if tolerations is not None:
        pod["spec"]["tolerations"] = tolerations
    res = Resource("p.yaml", SourceMap(file="p.yaml"), pod)
    return [v for v in check(model, pod_templates(res)) if v.check == "taints"]


def test_a_dedicated_pool_taint_keeps_off_pods_without_its_toleration() -> None:
    """Kubernetes' taint-and-toleration page: `dedicated=groupName:NoSchedule` lets on only
    pods that tolerate it; the scheduler says "node(s) had untolerated taint"."""
    model = _tainted_model(("dedicated", "groupName", "NoSchedule"))
    [v] = _taint_verdicts(model)
    assert "had untolerated taint {dedicated: groupName}" in v.message
    assert 'value: "groupName"' in v.hint
    assert _taint_verdicts(model, [{"key": "dedicated", "operator": "Equal",
                                    "value": "groupName", "effect": "NoSchedule"}]) == []
    assert _taint_verdicts(model, [{"key": "dedicated", "operator": "Exists"}]) == []
    assert _taint_verdicts(model, [{"operator": "Exists"}]) == []  # empty key: every taint
    # a wrong value or effect does not match
    assert len(_taint_verdicts(model, [{"key": "dedicated", "value": "other"}])) == 1
    assert len(_taint_verdicts(model, [{"key": "dedicated", "operator": "Exists",
                                        "effect": "NoExecute"}])) == 1


def test_prefer_no_schedule_only_steers() -> None:
    """PreferNoSchedule is a preference, not a refusal (taint-and-toleration page)."""
    assert _taint_verdicts(_tainted_model(("spot", "true", "PreferNoSchedule"))) == []


def test_an_extended_resource_request_tolerates_its_own_taint() -> None:
    """kubernetes/kubernetes#55839, ExtendedResourceToleration: a pod requesting
    nvidia.com/gpu tolerates nvidia.com/gpu:NoSchedule without writing it."""
    from mldiag_provision.cluster.model import ClusterModel, NodeGroup, Taint

    gpu = NodeGroup(name="gpu", machine_type="a3-highgpu-8g", nodes=1, zones=(),
                    labels={"cloud.google.com/gke-nodepool": "dedicated"},
                    taints=(Taint("nvidia.com/gpu", "present", "NoSchedule"),),
                    capacity={"nvidia.com/gpu": Decimal(8)}, allocatable={})
    model = ClusterModel(mode="unknown", node_groups=(gpu,), source="live")
    assert _taint_verdicts(model, requests="nvidia.com/gpu: 8") == []
    # the same pool, a pod that asks for no GPU: no toleration is added for it
    [v] = _taint_verdicts(model, requests="cpu: 1")
    assert "{nvidia.com/gpu: present}" in v.message


# -- admitted: the queue exists, the quota holds --------------------------------------------------

def test_a_pod_set_above_every_flavors_quota_is_never_admitted() -> None:
    """Kueue's flavor assigner: "insufficient quota for cpu in flavor default, request >
    maximum capacity (10 > 8)" (kueue's own integration test wording; the same message in
    kubernetes-sigs/kueue#3909 for nvidia.com/gpu). cq holds 9 cpu: 10 pods x 1 cpu is 10."""
    job = (JOB % ("", "requests")).replace("cpu: 100m", "cpu: 1").replace(
        ", ephemeral-storage: 100Mi", "").replace("  suspend: true\n",
                                                  "  suspend: true\n  parallelism: 10\n")
    p = one(lint(QUEUE % ("", ""), job), "kueue-quota")
    assert "insufficient quota for cpu in flavor default, request > maximum capacity (10 > 9)" \
        in p.message
    assert p.severity is Severity.ERROR
    # 9 pods fit exactly
    assert by_rule(lint(QUEUE % ("", ""), job.replace("parallelism: 10", "parallelism: 9")),
                   "kueue-quota") == []


def test_a_queue_in_a_cohort_may_borrow_so_its_quota_is_no_ceiling() -> None:
    """Kueue's ClusterQueue concept page: a queue in a cohort borrows unused quota."""
    job = (JOB % ("", "requests")).replace("cpu: 100m", "cpu: 1").replace(
        "  suspend: true\n", "  suspend: true\n  parallelism: 10\n").replace(
        ", ephemeral-storage: 100Mi", "")
    queue = (QUEUE % ("", "")).replace("  namespaceSelector: {}\n",
                                       "  namespaceSelector: {}\n  cohort: shared\n")
    assert by_rule(lint(queue, job), "kueue-quota") == []


def test_a_jobset_pod_set_counts_replicas_times_parallelism() -> None:
    """A JobSet's replicated job is one pod set of replicas x parallelism pods (kueue's JobSet
    integration); 2 x 4 pods of 4 chips is 32, over a 16-chip flavor."""
    queue = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: tpu}
spec:
  resourceGroups:
  - coveredResources: [google.com/tpu]
    flavors:
    - name: v5p
      resources: [{name: google.com/tpu, nominalQuota: 16}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: tpu}
"""
    jobset = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: ms
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  replicatedJobs:
  - name: slice
    replicas: 2
    template:
      spec:
        parallelism: 4
        completions: 4
        template:
          spec:
            containers:
            - name: c
              image: busybox
              resources: {limits: {google.com/tpu: 4}}
"""
    p = one(lint(queue, jobset), "kueue-quota")
    assert "pod set slice: insufficient quota for google.com/tpu in flavor v5p, request > " \
           "maximum capacity (32 > 16)" in p.message


def test_a_missing_local_queue_is_judged_only_where_every_queue_is_known(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's workload controller: "LocalQueue nope doesn't exist" leaves the workload
    Inadmissible. With --recipe the plan's queues are known (a warning: queues may be added
    by hand); linted alone, the manifests may go to queues created elsewhere (not judged)."""
    manifest = tmp_path / "job.yaml"
    manifest.write_text(JOB.replace("namespace: team", "namespace: mldiag")
                        .replace("user-queue", "nope") % ("", "requests"))
    code, out, _ = run_cli(capsys, ["lint", str(manifest), "--recipe", str(QUEUED_EXAMPLE),
                                    "--output", "json"])
    assert code == 0, out  # a warning only
    found = [p for p in json.loads(out)["files"][0]["problems"] if p["rule"] == "kueue-queue"]
    assert len(found) == 1, out
    assert found[0]["severity"] == "warning"
    assert "LocalQueue nope doesn't exist" in found[0]["message"]
    assert found[0]["path"] == 'metadata.labels["kueue.x-k8s.io/queue-name"]'
    assert "mldiag/train" in found[0]["expected"]
    code, out, _ = run_cli(capsys, ["lint", str(manifest), "--output", "json"])
    assert code == 0, out
    assert [p for p in json.loads(out)["files"][0]["problems"]
            if p["rule"] == "kueue-queue"] == []
