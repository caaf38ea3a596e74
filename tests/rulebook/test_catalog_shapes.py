"""The whole rule set over every shape of the catalog (issue 13 item 5).

For each TPU version x enumerated topology x machine type (and one large 3D shape per version
that has them), as one slice on GKE Standard and, where the version is offered there, on
Autopilot, with a multislice variant where the version supports it; for each GPU type x
machine type on GKE Standard: the recipe passes preflight without an error, the stack
renders, its manifests pass lint without an error, and preflight and lint agree on the
workload (same findings under lint's TPU rule ids).
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import yaml

from mldiag_provision.catalog.gpu import load_gpu_catalog
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.errors import Severity
from mldiag_provision.lint import tpu_rules as lint_tpu
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version
from mldiag_provision.pipeline import check_text
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render import k8s

CATALOG = load_catalog()
LINT_IDS = {r.id for r in lint_tpu.RULES}


def _tpu_cases() -> list[tuple[str, str, int, str, int]]:
    """(version, topology, chips per VM, orchestrator, slice count)."""
    out = []
    for v in CATALOG.versions.values():
        topologies = dict(v.topologies)
        if v.large3d:
            dims = [v.large3d.multiple_of] * 2 + [v.large3d.multiple_of * 2]
            topologies["x".join(map(str, dims))] = (v.large3d.machine_type,)
        for topo, machines in topologies.items():
            for m in machines:
                mt = v.machine_types[m]
                multi_host = math.prod(int(d) for d in topo.split("x")) > mt.chips_per_vm
                orchestrators = ["gke-standard"] + (["gke-autopilot"]
                                                    if v.autopilot_supported else [])
                for orch in orchestrators:
                    out.append((v.key, topo, mt.chips_per_vm, orch, 1))
                    if multi_host and v.multislice:
                        out.append((v.key, topo, mt.chips_per_vm, orch, 2))
    return out


def _gpu_cases() -> list[tuple[str, str]]:
    return [(g.key, m) for g in load_gpu_catalog().gpus.values() for m in g.machines]


def _recipe(orchestrator: str, slice_: dict, workload: dict) -> dict:
    spec: dict = {
        "project": "my-ml-project", "region": "us-central1",
        "orchestrator": {"type": orchestrator, "releaseChannel": "RAPID"},
        "slices": [slice_],
        "diagnostics": {"logAnalytics": {"retentionDays": 30}},
        "workloads": [{"name": "train", "slice": slice_["name"], "image": "python:3.10",
                       **workload}],
    }
    if orchestrator == "gke-standard":
        spec["zone"] = "us-central1-a"
    return {"apiVersion": "mldiag-provision/v1alpha1", "kind": "Recipe",
            "metadata": {"name": "shape"}, "spec": spec}


def _run(recipe: dict) -> None:
    res = check_text(yaml.safe_dump(recipe, sort_keys=False), "recipe.yaml", CATALOG)
    errors = [p for p in res.report.problems if p.severity is Severity.ERROR]
    assert not errors, [f"{p.rule} {p.path}: {p.message}" for p in errors]
    assert res.parsed.recipe is not None
    plan = build_plan(res.parsed.recipe, res.shapes, CATALOG)
    # the objects render_stack writes to k8s/workloads/<name>.yaml (test_recipe_lint_agreement
    # lints the written files themselves)
    sources = [Source(f"k8s/workloads/{w.name}.yaml",
                      yaml.safe_dump_all(k8s.workload(plan, w), sort_keys=False))
               for w in plan.workloads]
    assert sources
    autopilot = recipe["spec"]["orchestrator"]["type"] == "gke-autopilot"
    linted = lint_sources(sources, LintOptions(default_version(), autopilot=autopilot), CATALOG)
    lint_errors = [p for p in linted.problems if p.severity is Severity.ERROR]
    assert not lint_errors, [f"{p.rule} {p.path}: {p.message}" for p in lint_errors]

    def key(ps: list) -> Counter:
        return Counter((p.rule, p.severity.value, p.message) for p in ps if p.rule in LINT_IDS)

    assert key(res.report.problems) == key(linted.problems)


CASES = _tpu_cases()


def test_the_catalog_has_many_shapes() -> None:
    assert len(CASES) > 40 and len(_gpu_cases()) > 10


@pytest.mark.parametrize("version, topology, chips, orchestrator, count", CASES,
                         ids=[f"{v}-{t}-{c}-{o.removeprefix('gke-')}-x{n}"
                              for v, t, c, o, n in CASES])
def test_every_tpu_shape_passes_the_whole_rule_set(version: str, topology: str, chips: int,
                                                   orchestrator: str, count: int) -> None:
    slice_ = {"name": "s", "tpu": version, "topology": topology, "chipsPerVm": chips,
              "count": count}
    _run(_recipe(orchestrator, slice_, {"kind": "JobSet"}))


@pytest.mark.parametrize("gpu, machine", _gpu_cases())
def test_every_gpu_machine_passes_the_whole_rule_set(gpu: str, machine: str) -> None:
    slice_ = {"name": "g", "gpu": gpu, "machineType": machine, "nodes": 2}
    _run(_recipe("gke-standard", slice_, {"kind": "JobSet"}))
