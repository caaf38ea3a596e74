"""Autopilot accelerator classes in the cluster model, and pod requests judged against their
ranges (issue 25: ``cluster/autopilot.py``, rule ``autopilot-resource-range``).

The kind of fault (a request outside the class's range) is drawn from several public sources:
* GKE's "Resource requests in Autopilot" page (above the maximum refused, below the minimum
  raised; the Accelerator class enforces no default requests),
* GKE Warden's refusals quoted in public bug reports (argoproj/argo-workflows#13073 for cpu
  and memory above an A100 Pod's maximum; agones-dev/agones#3411 for ephemeral storage below
  the accelerator minimum),
* GKE's TPU-on-Autopilot page (each TPU Pod gets its node's full resources, so a TPU Pod's
  ceiling is the node's allocatable, not a class figure).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import yaml
from tests.lint.support import by_rule, lint, one

from mldiag_provision import pipeline
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.cluster import from_plan
from mldiag_provision.cluster.autopilot import CHECK, ephemeral_bounds, ranges
from mldiag_provision.cluster.model import GIB, MIB, AcceleratorClass, ClusterModel
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import LintResult, lint_sources
from mldiag_provision.lint.loading import Resource, Source
from mldiag_provision.lint.schema import default_version
from mldiag_provision.lint.workloads import pod_templates
from mldiag_provision.recipe.model import Recipe
from mldiag_provision.recipe.sourcemap import SourceMap

RULE = "autopilot-resource-range"
ROOT = Path(__file__).resolve().parents[2]
TPU_RECIPE = "tpu-v5e-2x4-single-host-autopilot.yaml"

A100_RECIPE = """\
apiVersion: mldiag-provision/v1alpha1
kind: Recipe
metadata: {name: a100-autopilot}
spec:
  project: my-ml-project
  region: us-central1
  orchestrator: {type: %s}
  slices:
    - {name: a100, gpu: tesla-a100, nodes: 1}
  workloads:
    - name: finetune
      slice: a100
      image: us-docker.pkg.dev/my-ml-project/train/finetune:latest
      command: [python, train.py]
      gpusPerPod: 1
"""

A100_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: finetune}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-tesla-a100
%s      containers:
      - name: train
        image: us-docker.pkg.dev/p/r/i:1
        resources:
          requests: {nvidia.com/gpu: %d, %s}
          limits: {nvidia.com/gpu: %d, %s}
"""


def job(gpus: int, requests: str, init: str = "") -> str:
    return A100_JOB % (init, gpus, requests, gpus, requests)


def recipe(orchestrator: str = "gke-autopilot") -> Recipe:
    parsed = pipeline.check_text(A100_RECIPE % orchestrator, "r.yaml").parsed
    assert parsed.recipe is not None, parsed.problems
    return parsed.recipe


def lint_with_recipe(text: str, orchestrator: str = "gke-autopilot") -> LintResult:
    """``lint --recipe``: the manifests against the cluster the recipe's plan creates."""
    opts = LintOptions(default_version(), autopilot=orchestrator == "gke-autopilot",
                       recipe=recipe(orchestrator))
    return lint_sources([Source("m.yaml", text)], opts)


def ranged(result: LintResult) -> list[Problem]:
    return by_rule(result, RULE)


# -- the model holds the classes ---------------------------------------------------------------

def test_autopilot_plan_holds_the_gpu_class_with_its_warden_maxima() -> None:
    """argoproj/argo-workflows#13073 (https://github.com/argoproj/argo-workflows/issues/13073):
    GKE Warden refused an A100 Pod with "higher than the Autopilot maximum of '11'" (cpu) and
    "'74Gi'" (memory). The model of an Autopilot A100 recipe holds that class (one GPU per
    Pod) with those maxima, plus the ephemeral-storage range of every accelerator Pod; a GKE
    Standard plan holds no class."""
    model = from_plan.from_recipe(recipe(), load_catalog())
    assert model is not None and model.mode == "autopilot"
    one_gpu = next(c for c in model.accelerator_classes if c.count == 1)
    assert one_gpu.labels == {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
    assert one_gpu.resource == "nvidia.com/gpu"
    assert one_gpu.maximum["cpu"] == Decimal(11)
    assert one_gpu.maximum["memory"] == 74 * GIB
    assert "cpu" not in one_gpu.minimum  # the minima were not read: never judged
    (lo, _), (hi, _) = ephemeral_bounds()
    assert one_gpu.minimum["ephemeral-storage"] == lo == 512 * MIB
    assert one_gpu.maximum["ephemeral-storage"] == hi
    # the maxima's figure is M (the GPU type is an inference): its verdicts only warn
    assert all(not f.verified for f in one_gpu.facts["cpu"])
    standard = from_plan.from_recipe(recipe("gke-standard"), load_catalog())
    assert standard is not None and standard.accelerator_classes == ()


def test_tpu_classes_carry_no_cpu_or_memory_bound() -> None:
    """GKE's TPU-on-Autopilot page (https://cloud.google.com/kubernetes-engine/docs/how-to/
    tpus-autopilot): "GKE places each workload on its own node, so each Pod can access the
    node's full resources" (ko/ja revisions). No TPU figure of the resource-requests page was
    readable, so a TPU class holds only the ephemeral-storage range, and a TPU Pod's cpu and
    memory are judged against its node's allocatable (node-allocatable), not a class."""
    parsed = pipeline.check_file(str(ROOT / "recipes" / TPU_RECIPE)).parsed
    assert parsed.recipe is not None
    model = from_plan.from_recipe(parsed.recipe, load_catalog())
    assert model is not None and model.accelerator_classes
    tpu = model.accelerator_classes[0]
    assert tpu.resource == "google.com/tpu" and tpu.count == 8
    assert tpu.labels == {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                          "cloud.google.com/gke-tpu-topology": "2x4"}
    assert set(tpu.maximum) == {"ephemeral-storage"}


# -- above the maximum: GKE Warden refuses the Pod --------------------------------------------

def test_cpu_and_memory_above_the_a100_maximum_are_refused_in_wardens_words() -> None:
    """argoproj/argo-workflows#13073 (https://github.com/argoproj/argo-workflows/issues/13073):
    '[denied by autogke-pod-limit-constraints]: Total cpu requested by containers for workload
    ... is higher than the Autopilot maximum of '11'.' and the same for memory, '74Gi'."""
    found = ranged(lint_with_recipe(job(1, "cpu: '16', memory: 80Gi")))
    assert [p.path for p in found] == ["spec.template.spec.containers[0].resources.requests.cpu",
                                       "spec.template.spec.containers[0].resources.requests."
                                       "memory"]
    cpu, memory = found
    assert ("[denied by autogke-pod-limit-constraints]: Total cpu requested by containers for "
            "workload 'finetune' is higher than the Autopilot maximum of '11'.") in cpu.message
    assert "higher than the Autopilot maximum of '74Gi'" in memory.message
    assert cpu.message.startswith("scheduled: ")
    assert cpu.expected == "at most 11" and memory.expected == "at most 74Gi"
    # an unverified figure (M): a warning, never an error
    assert {p.severity for p in found} == {Severity.WARNING}
    # at the maximum: clean; on GKE Standard the class does not exist
    assert ranged(lint_with_recipe(job(1, "cpu: '11', memory: 74Gi"))) == []
    assert ranged(lint_with_recipe(job(1, "cpu: '16', memory: 80Gi"), "gke-standard")) == []


def test_an_init_container_above_the_maximum_gets_wardens_init_words() -> None:
    """argoproj/argo-workflows#13073 quotes Warden's second sentence too: "Max cpu requested
    by init containers for workload ... is higher than the Autopilot maximum of '11'." The
    effective request is the init container's when it is larger than the containers' sum
    (https://kubernetes.io/docs/concepts/workloads/pods/init-containers/)."""
    init = ("      initContainers:\n      - name: fetch\n        image: busybox\n"
            "        resources: {requests: {cpu: '12'}, limits: {cpu: '12'}}\n")
    p = one(lint_with_recipe(job(1, "cpu: '2'", init)), RULE)
    assert p.path == "spec.template.spec.initContainers[0].resources.requests.cpu"
    assert "Max cpu requested by init containers for workload 'finetune'" in p.message


def test_lint_autopilot_judges_manifests_alone_by_their_gpu_selector() -> None:
    """``lint --autopilot`` without a recipe: the classes come from the pods' own
    ``cloud.google.com/gke-accelerator`` selector and GPU count (the Warden refusal of
    argo-workflows#13073); without --autopilot nothing is judged, and a two-GPU Pod (no
    recorded row) is not judged either."""
    assert len(ranged(lint(job(1, "cpu: '16'"), autopilot=True))) == 1
    assert ranged(lint(job(1, "cpu: '16'"))) == []
    assert ranged(lint(job(2, "cpu: '16'"), autopilot=True)) == []


# -- below the minimum: raised, not refused ---------------------------------------------------

def test_below_the_minimum_is_raised_and_billed_a_warning_not_a_refusal() -> None:
    """GKE's page (https://cloud.google.com/kubernetes-engine/docs/concepts/
    autopilot-resource-requests): "If your requests are less than the minimum, Autopilot
    automatically modifies your workload configuration to bring your requests within the
    allowed range." No cpu/memory minimum of a GPU class was readable, so the class here is
    built by hand; the verdict is a warning whatever the figure's confidence."""
    cls = AcceleratorClass(name="nvidia-tesla-a100 x1",
                           labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"},
                           resource="nvidia.com/gpu", count=1,
                           minimum={"cpu": Decimal(9)}, maximum={"cpu": Decimal(11)})
    model = ClusterModel(mode="autopilot", accelerator_classes=(cls,))
    res = Resource("m.yaml", SourceMap(file="m.yaml"), yaml.safe_load(job(1, "cpu: '2'")))
    templates = pod_templates(res)
    (v,) = [v for t in templates for v in ranges(model, t)]
    assert v.check == CHECK and v.warning and v.step == "scheduled"
    assert "Autopilot raises it to 9" in v.message
    assert v.expected == "at least 9"
    # the same pod on a cluster of another mode is not judged
    other = ClusterModel(mode="standard", accelerator_classes=(cls,))
    assert [v for t in templates for v in ranges(other, t)] == []


def test_ephemeral_storage_below_the_accelerator_minimum_warns_from_the_models_bounds(
) -> None:
    """agones-dev/agones#3411 (https://github.com/agones-dev/agones/issues/3411): Warden:
    "ephemeral-storage requests '171798691' is lower than the Autopilot minimum required of
    '512Mi'" for a GPU Pod. workload-ephemeral-storage reads the bound the model's classes
    hold (ephemeral_bounds) and warns on the same 163Mi."""
    data = yaml.safe_load(A100_RECIPE % "gke-autopilot")
    data["spec"]["workloads"][0]["resources"] = {"ephemeralStorage": "163Mi"}
    problems = pipeline.check_text(yaml.safe_dump(data), "r.yaml").report.problems
    (p,) = [p for p in problems if p.rule == "workload-ephemeral-storage"]
    assert p.severity is Severity.WARNING
    assert "below Autopilot's minimum for accelerator Pods (512Mi)" in p.message


def test_validate_judges_an_autopilot_gpu_workload_at_its_recipe_line() -> None:
    """``validate`` renders an Autopilot GPU workload that sets cpu/memory when its class has
    a recorded range, and points Warden's refusal (argo-workflows#13073: maximum '11' cpu)
    at the recipe field; a GKE Standard recipe is not judged by the class."""
    data = yaml.safe_load(A100_RECIPE % "gke-autopilot")
    data["spec"]["workloads"][0]["resources"] = {"cpu": "16"}
    problems = pipeline.check_text(yaml.safe_dump(data), "r.yaml").report.problems
    p = next(p for p in problems if p.rule == RULE)
    assert p.path == "spec.workloads[0].resources.cpu"
    assert "higher than the Autopilot maximum of '11'" in p.message
    data["spec"]["workloads"][0]["resources"] = {"cpu": "10"}
    problems = pipeline.check_text(yaml.safe_dump(data), "r.yaml").report.problems
    assert [p for p in problems if p.rule == RULE] == []
    data["spec"]["orchestrator"]["type"] = "gke-standard"
    data["spec"]["workloads"][0]["resources"] = {"cpu": "16"}
    problems = pipeline.check_text(yaml.safe_dump(data), "r.yaml").report.problems
    assert [p for p in problems if p.rule == RULE] == []
