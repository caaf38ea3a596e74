"""Autopilot admission beyond host access and selectors (``--autopilot``): accelerator asks
that GKE Autopilot's admission (GKE Warden) refuses in a pod spec.

Each rule reads its fact from ``catalog/data/kubernetes.yaml`` (``autopilotAdmission``), which
names where the refusal is shown. The three GPU refusals are GKE Warden's own denials, quoted
verbatim in public reports whose projects then fixed them (confidence H, errors):
``initContainerGpu`` (ray-project/kuberay#1349, fixed by #1470), ``gpuSelector``
(GoogleCloudPlatform/ai-on-gke#983) and ``acceleratorToleration`` (GoogleCloudPlatform/
k8s-stackdriver#1079). The same toleration refusal for the TPU taint is only stated in passing
(``tpuToleration``, M): it warns (an error with ``--strict``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mldiag_provision.errors import Problem
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.loading import get
from mldiag_provision.lint.rules import define, fact, fact_source, severity_of
from mldiag_provision.lint.workloads import PodTemplate

_F = ("autopilotAdmission",)
_ID = "kubernetes.autopilotAdmission"
INIT_GPU = define("autopilot-init-container-gpu", "no init container requests GPUs on Autopilot",
                  severity=severity_of(fact(*_F, "initContainerGpu")),
                  source=fact_source(*_F, "initContainerGpu"),
                  facts=(f"{_ID}.initContainerGpu", "kubernetes.gpu.resource"))
GPU_SELECTOR = define("autopilot-gpu-selector", "a pod that requests GPUs on Autopilot selects "
                      "the GPU type (or a compute class)",
                      severity=severity_of(fact(*_F, "gpuSelector")),
                      source=fact_source(*_F, "gpuSelector"),
                      facts=(f"{_ID}.gpuSelector", "kubernetes.gpu.resource",
                             "kubernetes.gpu.acceleratorLabel"))
ACCEL_TOLERATION = define("autopilot-accelerator-toleration", "a pod tolerates the GPU or TPU "
                          "node taint only when it requests that accelerator",
                          severity=severity_of(fact(*_F, "acceleratorToleration")),
                          source=fact_source(*_F, "acceleratorToleration"),
                          facts=(f"{_ID}.acceleratorToleration",))


def _requests(c: dict[str, Any], resource: str) -> tuple[str, object] | None:
    """('requests'|'limits', value) where the container names ``resource``."""
    for where in ("requests", "limits"):
        v = get(c, "resources", where, resource)
        if v is not None:
            return where, v
    return None


def _asks(t: PodTemplate, resource: str) -> bool:
    return any(_requests(c, resource) is not None
               for key in ("containers", "initContainers") for _, c in t.containers(key))


def _selects(t: PodTemplate, keys: list[str]) -> bool:
    sel = t.spec.get("nodeSelector")
    if isinstance(sel, dict) and any(k in sel for k in keys):
        return True
    terms = get(t.spec, "affinity", "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    return isinstance(terms, list) and bool(terms) and all(
        any(get(e, "key") in keys for e in _list(get(term, "matchExpressions"))
            if isinstance(e, dict))
        for term in terms if isinstance(term, dict))


def _list(node: object) -> list[object]:
    """``node`` when it is a list, else no entries."""
    return node if isinstance(node, list) else []


def check_accelerators(ctx: LintContext) -> Iterator[Problem]:
    """Init containers with GPUs; GPU pods without a GPU type; accelerator tolerations without
    an accelerator request."""
    init = fact(*_F, "initContainerGpu")
    sel = fact(*_F, "gpuSelector")
    gpu = fact("gpu", "resource")["name"]
    sel_keys = [fact("gpu", "acceleratorLabel")["key"], sel["alternative"]]
    # the node taint is keyed by the resource name; each refusal has its own fact
    taints = {gpu: fact(*_F, "acceleratorToleration"),
              fact("tpu", "resource")["name"]: fact(*_F, "tpuToleration")}
    for t in ctx.templates:
        res, sp = t.resource, t.spec_path
        for i, c in t.containers("initContainers"):
            found = _requests(c, gpu)
            if found is not None:
                where, value = found
                main = any(_requests(m, gpu) for _, m in t.containers())
                yield ctx.problem(
                    res, INIT_GPU.id, (*sp, "initContainers", i, "resources", where, gpu),
                    f"init container '{c.get('name')}' of {t.describe()} requests {gpu}"
                    + (" beside a main container with the same request" if main else "")
                    + ": Autopilot refuses GPU-using init containers and never creates the pod",
                    value=value, severity=severity_of(init),
                    hint=f"remove {gpu} from the init container; give it CPU and memory only")
        if _asks(t, gpu) and not _selects(t, sel_keys):
            yield ctx.problem(
                res, GPU_SELECTOR.id, (*sp, "nodeSelector", sel_keys[0]),
                f"{t.describe()} requests {gpu} but selects no GPU type: Autopilot "
                f"refuses it ({sel['constraint']})", severity=severity_of(sel),
                expected=" or ".join(sel_keys),
                hint="add nodeSelector cloud.google.com/gke-accelerator: <GPU type>, e.g. "
                     "nvidia-h100-80gb")
        tolerations = t.spec.get("tolerations")
        for j, tl in enumerate(tolerations if isinstance(tolerations, list) else []):
            key = get(tl, "key")
            if not isinstance(key, str) or key not in taints:
                continue
            tol = taints[key]
            if not _asks(t, key):
                yield ctx.problem(
                    res, ACCEL_TOLERATION.id, (*sp, "tolerations", j, "key"),
                    f"{t.describe()} tolerates the {key} node taint but requests no {key}: "
                    "Autopilot refuses such tolerations", value=key, facts=[tol],
                    source=tol.url, hint=f"remove the toleration, or request {key}")


CHECKS = (check_accelerators,)
