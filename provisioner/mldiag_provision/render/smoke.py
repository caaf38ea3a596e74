"""The in-cluster smoke workload (render's part of the smoke test planned in
:mod:`mldiag_provision.plan.smoke`): a ConfigMap holding ``program.py`` and, per recipe slice,
a JobSet that runs it on every VM of the slice (all ``count`` slices of a multislice: one
replicated job per slice, so the DCN axis is real).

The JobSet is built by the same code as the stack's own workloads
(:func:`mldiag_provision.render.k8s.workload`): node selectors, ``google.com/tpu`` /
``nvidia.com/gpu`` per pod, the ML Diagnostics label, and on multislice the megascale
environment and ports. ``verify --smoke`` creates these objects and deletes them after;
``render`` writes them to ``k8s/smoke/`` for ``kubectl apply -f k8s/smoke/`` (opt-in:
``apply`` applies only ``k8s/workloads/``).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from mldiag_provision.plan.smoke import (
    PROGRAM,
    jobset_name,
    profile_path,
    program_args,
    spec_for,
    units_per_vm,
)
from mldiag_provision.render.k8s import _diagnostics, workload

if TYPE_CHECKING:
    from mldiag_provision.plan.types import SlicePlan, StackPlan

CONFIGMAP = "mldiag-smoke-program"
MOUNT = "/mldiag-smoke"
DEFAULT_IMAGE = "python:3.12"
# JAX's multi-process coordinator on GPU slices: pod 0 of the JobSet. JobSet pods are
# <jobset>-<replicatedJob>-<jobIndex>-<podIndex> in a headless Service named like the JobSet
# (https://jobset.sigs.k8s.io/docs/concepts/, "network.enableDNSHostnames", default on).
COORDINATOR_PORT = 1234


def configmap(plan: StackPlan) -> dict[str, Any]:
    """The ConfigMap with ``program.py`` (the file shipped with this tool, byte for byte)."""
    ns = _diagnostics(plan).kubernetes.namespace
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP, "namespace": ns,
                         "labels": {"app.kubernetes.io/managed-by": "mldiag-provision",
                                    "app.kubernetes.io/part-of": "mldiag-smoke"}},
            "data": {"program.py": PROGRAM.read_text(encoding="utf-8")}}


def jobset(plan: StackPlan, sp: SlicePlan, *, image: str = DEFAULT_IMAGE) -> dict[str, Any]:
    """The smoke JobSet of one recipe slice (``replicas`` = its ``count``)."""
    from mldiag_provision.plan.types import WorkloadPlan

    diag = _diagnostics(plan)
    spec = spec_for(sp, plan)
    name = jobset_name(sp)
    coordinator = (f"{name}-slice-0-0.{name}:{COORDINATOR_PORT}"
                   if sp.kind == "gpu" and sp.vms > 1 else None)
    args = program_args(spec, name=f"{plan.name}-{sp.name}", profile_dir=profile_path(plan, sp),
                        project=plan.project, region=diag.mlrun_region, coordinator=coordinator)
    jax = "jax[tpu]" if sp.kind == "tpu" else "jax[cuda12]"
    script = (f"pip install -q {shlex.quote(jax)} && "
              "(pip install -q google-cloud-mldiagnostics || echo 'no ML Diagnostics SDK') && "
              f"python3 {MOUNT}/program.py {shlex.join(args)}")
    w = WorkloadPlan(
        name=name, slice=sp.name, kind="JobSet", resource=sp.resource, image=image,
        command=("bash", "-c"), args=(script,), env={},
        chips_per_pod=units_per_vm(sp, plan), pods_per_slice=sp.vms, slices=sp.count,
        cpu=None, memory=None, ml_diagnostics_label=bool(diag.namespace_label),
        backoff_limit=0, headless_service=None)
    [body] = workload(plan, w)
    body["metadata"]["labels"]["app.kubernetes.io/part-of"] = "mldiag-smoke"
    pod = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["volumeMounts"] = [{"name": "program", "mountPath": MOUNT,
                                             "readOnly": True}]
    pod["volumes"] = [{"name": "program", "configMap": {"name": CONFIGMAP}}]
    return body
