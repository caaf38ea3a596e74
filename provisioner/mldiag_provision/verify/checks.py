"""Checks of a live cluster, read through the official Kubernetes Python client.

Each check returns a :class:`CheckResult`: PASS, FAIL or SKIP, the evidence (the object it
looked at), a message and, on FAIL, a hint. Expectations come from the recipe's plan
(:class:`~mldiag_provision.plan.stack.StackPlan`): namespace and label, KSA annotation, the
agents strategy, the slices' node labels and chips. Facts (CRD name, agent namespace, label
keys) come from the catalog.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from mldiag_provision.catalog.tpu import Catalog

if TYPE_CHECKING:
    from mldiag_provision.plan.stack import SlicePlan, StackPlan

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class CheckResult:
    check: str
    status: str  # PASS | FAIL | SKIP
    message: str
    evidence: str  # the object looked at, e.g. "Namespace/mldiag"
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Cluster:
    """The API groups the checks read; built from a kubeconfig (``client.ApiClient``)."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        self.host = str(getattr(api_client.configuration, "host", "?"))
        self.version = client.VersionApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.ext = client.ApiextensionsV1Api(api_client)
        self.admission = client.AdmissionregistrationV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)


def _not_found(exc: Exception) -> bool:
    return getattr(exc, "status", None) == 404


def _api_error(check: str, evidence: str, exc: Exception) -> CheckResult:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or type(exc).__name__
    hint = ("your credentials may not read it: check RBAC (kubectl auth can-i get ...)"
            if status in (401, 403) else "is the cluster reachable? check --kubeconfig/--context")
    return CheckResult(check, FAIL, f"the API server answered {status or ''} {reason}".strip(),
                       evidence, hint)


def check_namespace_label(cluster: Cluster, plan: StackPlan) -> CheckResult:
    """The workload namespace exists and carries the ML Diagnostics label."""
    ns = plan.agents.namespace
    evidence = f"Namespace/{ns}"
    try:
        obj = cluster.core.read_namespace(ns)
    except Exception as exc:
        if _not_found(exc):
            return CheckResult("namespace-label", FAIL, f"namespace {ns} does not exist", evidence,
                               "apply the second stage: terraform -chdir=agents apply")
        return _api_error("namespace-label", evidence, exc)
    labels = obj.metadata.labels or {}
    want = {k: v for k, v in plan.agents.namespace_labels.items()
            if k != "app.kubernetes.io/managed-by"}
    missing = {k: v for k, v in want.items() if labels.get(k) != v}
    if missing:
        k, v = next(iter(missing.items()))
        return CheckResult("namespace-label", FAIL,
                           f"namespace {ns} lacks the label {k}={v}; pods created now get no "
                           "ML Diagnostics metadata", evidence,
                           f"kubectl label namespace {ns} {k}={v} (then recreate the workloads: "
                           "the webhook acts at pod creation)")
    if not want:
        return CheckResult("namespace-label", SKIP, "diagnostics are off for this stack",
                           evidence)
    return CheckResult("namespace-label", PASS,
                       ", ".join(f"{k}={v}" for k, v in want.items()), evidence)


def check_ksa_annotation(cluster: Cluster, plan: StackPlan) -> CheckResult:
    """The KSA is annotated with the Google service account (Workload Identity)."""
    ns, name = plan.agents.namespace, plan.agents.service_account
    evidence = f"ServiceAccount/{ns}/{name}"
    want = plan.agents.service_account_annotations
    if not want:
        return CheckResult("ksa-annotation", SKIP, "no Workload Identity on this cluster",
                           evidence)
    try:
        obj = cluster.core.read_namespaced_service_account(name, ns)
    except Exception as exc:
        if _not_found(exc):
            return CheckResult("ksa-annotation", FAIL, f"service account {name} does not exist",
                               evidence, "apply the second stage: terraform -chdir=agents apply")
        return _api_error("ksa-annotation", evidence, exc)
    have = obj.metadata.annotations or {}
    for key, value in want.items():
        if have.get(key) != value:
            return CheckResult("ksa-annotation", FAIL,
                               f"annotation {key} is {have.get(key)!r}, not {value!r}: the pods "
                               "act as another identity and get 403 from ML Diagnostics",
                               evidence, f"kubectl annotate serviceaccount -n {ns} {name} "
                                         f"{key}={value} --overwrite")
    return CheckResult("ksa-annotation", PASS, ", ".join(f"{k}={v}" for k, v in want.items()),
                       evidence)


def check_agents_ready(cluster: Cluster, plan: StackPlan, catalog: Catalog) -> CheckResult:
    """The agents' Deployments are available (manual: in gke-mldiagnostics)."""
    strategy = plan.agents.strategy
    if strategy == "none":
        return CheckResult("agents-ready", SKIP, "no agents for this stack", "-")
    if strategy == "manual":
        ns = str(catalog.fact("mlDiagnostics", "manualInstall", "namespace")["value"])
    else:
        ns = str(catalog.fact("mlDiagnostics", "managedNamespace")["value"])
    evidence = f"Deployments in {ns}"
    try:
        deps = cluster.apps.list_namespaced_deployment(ns).items
    except Exception as exc:
        return _api_error("agents-ready", evidence, exc)
    if not deps:
        if strategy == "managed":
            return CheckResult("agents-ready", SKIP,
                               f"no Deployments in {ns}: the managed add-on's namespace name is "
                               "inferred, so this cannot be confirmed here; the CRD and webhook "
                               "checks cover the add-on", evidence)
        return CheckResult("agents-ready", FAIL, f"no agent Deployments in {ns}", evidence,
                           "apply the second stage: terraform -chdir=agents apply")
    for d in deps:
        want = d.spec.replicas if d.spec.replicas is not None else 1
        ready = (d.status.available_replicas or 0) if d.status else 0
        if ready < want:
            return CheckResult("agents-ready", FAIL,
                               f"Deployment {d.metadata.name} has {ready}/{want} replicas "
                               "available", f"Deployment/{ns}/{d.metadata.name}",
                               f"kubectl -n {ns} describe deployment {d.metadata.name}; while "
                               "the webhook is down, pod creation in labelled namespaces fails")
    names = ", ".join(sorted(d.metadata.name for d in deps))
    return CheckResult("agents-ready", PASS, f"available: {names}", evidence)


def check_crd_established(cluster: Cluster, plan: StackPlan, catalog: Catalog) -> CheckResult:
    """The MLDiagnosticsConnection CRD is established (on-demand profiling)."""
    name = str(catalog.fact("mlDiagnostics", "manualInstall", "crd")["name"])
    evidence = f"CustomResourceDefinition/{name}"
    if plan.agents.strategy == "none":
        return CheckResult("crd-established", SKIP, "no agents for this stack", evidence)
    try:
        crd = cluster.ext.read_custom_resource_definition(name)
    except Exception as exc:
        if _not_found(exc):
            return CheckResult("crd-established", FAIL, "the MLDiagnosticsConnection CRD is "
                               "missing: on-demand profiling cannot reach the pods", evidence,
                               "install the connection operator (second stage) or turn on the "
                               "managed add-on")
        return _api_error("crd-established", evidence, exc)
    conditions = (crd.status.conditions or []) if crd.status else []
    if any(c.type == "Established" and c.status == "True" for c in conditions):
        return CheckResult("crd-established", PASS, "Established=True", evidence)
    return CheckResult("crd-established", FAIL, "the CRD is not Established", evidence,
                       f"kubectl describe crd {name}")


def check_webhook_ca(cluster: Cluster, plan: StackPlan) -> CheckResult:
    """The injection webhook's configuration carries a CA bundle (cert-manager injected it)."""
    evidence = "MutatingWebhookConfigurations"
    if plan.agents.strategy == "none":
        return CheckResult("webhook-ca-bundle", SKIP, "no agents for this stack", evidence)
    try:
        configs = cluster.admission.list_mutating_webhook_configuration().items
    except Exception as exc:
        return _api_error("webhook-ca-bundle", evidence, exc)
    ours = [c for c in configs if "mldiagnostics" in c.metadata.name
            or "diagon" in c.metadata.name]
    if not ours:
        return CheckResult("webhook-ca-bundle", FAIL, "no ML Diagnostics injection webhook is "
                           "registered", evidence,
                           "install the injection webhook (second stage) or turn on the "
                           "managed add-on")
    for cfg in ours:
        for hook in cfg.webhooks or []:
            bundle = hook.client_config.ca_bundle if hook.client_config else None
            if not bundle:
                return CheckResult("webhook-ca-bundle", FAIL,
                                   f"webhook {hook.name} has no CA bundle: the API server cannot "
                                   "call it, and with failurePolicy Fail pod creation fails",
                                   f"MutatingWebhookConfiguration/{cfg.metadata.name}",
                                   "check cert-manager: kubectl -n cert-manager get pods; "
                                   "kubectl get certificates -A (it can take two minutes)")
    return CheckResult("webhook-ca-bundle", PASS,
                       "CA bundle set on " + ", ".join(c.metadata.name for c in ours), evidence)


def _selector(sp: SlicePlan) -> dict[str, str]:
    keys = ("cloud.google.com/gke-tpu-accelerator", "cloud.google.com/gke-tpu-topology",
            "cloud.google.com/gke-accelerator")
    return {k: v for k, v in sp.node_selector.items() if k in keys}


def check_accelerator_nodes(cluster: Cluster, plan: StackPlan) -> list[CheckResult]:
    """Each slice has nodes with the expected labels and allocatable chips (where nodes
    appear on demand, e.g. Autopilot, none yet is a SKIP and fewer is fine)."""
    from mldiag_provision import orchestrators
    from mldiag_provision.orchestrators import Capability

    on_demand = orchestrators.get(plan.cluster.type).has(Capability.NODES_ON_DEMAND)
    results = []
    for sp in plan.slices:
        sel = _selector(sp)
        label_selector = ",".join(f"{k}={v}" for k, v in sel.items())
        evidence = f"Nodes {label_selector}"
        check = f"nodes:{sp.name}"
        try:
            nodes = cluster.core.list_node(label_selector=label_selector).items
        except Exception as exc:
            results.append(_api_error(check, evidence, exc))
            continue
        want = sp.vms * sp.count
        if not nodes:
            if on_demand:
                results.append(CheckResult(check, SKIP, "no nodes yet: Autopilot creates them "
                                           "when a workload asks for the slice", evidence))
            else:
                results.append(CheckResult(
                    check, FAIL, f"no node has the labels {label_selector}", evidence,
                    "check the node pools (gcloud container node-pools list) and that the "
                    "accelerator and topology labels match the recipe"))
            continue
        per_node = sp.chips_per_vm
        bad = [n.metadata.name for n in nodes
               if per_node and str((n.status.allocatable or {}).get(sp.resource)) != str(per_node)]
        if bad:
            results.append(CheckResult(
                check, FAIL, f"{len(bad)} node(s) do not offer {per_node} {sp.resource}: "
                + ", ".join(bad[:5]), evidence, "kubectl describe node " + bad[0]))
        elif len(nodes) < want and not on_demand:
            results.append(CheckResult(check, FAIL, f"{len(nodes)} of {want} nodes are there",
                                       evidence, "check the node pool's size and events"))
        else:
            results.append(CheckResult(check, PASS, f"{len(nodes)} node(s), {per_node} "
                                       f"{sp.resource} each", evidence))
    return results


def check_reachable(cluster: Cluster) -> CheckResult:
    """The API server answers at all (GET /version)."""
    evidence = f"API server {cluster.host}"
    try:
        info = cluster.version.get_code()
    except Exception as exc:
        if getattr(exc, "status", None):  # it answered, with an HTTP error
            return _api_error("api-server", evidence, exc)
        return CheckResult("api-server", FAIL, f"cannot reach the API server "
                           f"({type(exc).__name__})", evidence,
                           "check --kubeconfig/--context, the network path and that the "
                           "cluster exists (gcloud container clusters list)")
    return CheckResult("api-server", PASS, f"Kubernetes {info.git_version}", evidence)


def run_checks(cluster: Cluster, plan: StackPlan, catalog: Catalog) -> list[CheckResult]:
    """All read-only checks, in a stable order; only the reachability check when the API
    server cannot be reached (every other check would fail the same way)."""
    reach = check_reachable(cluster)
    if reach.status == FAIL:
        return [reach]
    steps: list[Callable[[], CheckResult | list[CheckResult]]] = [
        lambda: check_namespace_label(cluster, plan),
        lambda: check_ksa_annotation(cluster, plan),
        lambda: check_agents_ready(cluster, plan, catalog),
        lambda: check_crd_established(cluster, plan, catalog),
        lambda: check_webhook_ca(cluster, plan),
        lambda: check_accelerator_nodes(cluster, plan),
    ]
    out: list[CheckResult] = [reach]
    for step in steps:
        result = step()
        out.extend(result if isinstance(result, list) else [result])
    return out


# -- smoke test -------------------------------------------------------------------------

SMOKE_SCRIPT = """import json, os
ident = os.environ.get("GKE_DIAGON_IDENTIFIER")
meta = os.environ.get("GKE_DIAGON_METADATA")
import jax
print("MLDIAG_SMOKE " + json.dumps({"identifier": bool(ident), "metadata": bool(meta),
                                    "devices": jax.device_count()}))
"""


def smoke_jobset(plan: StackPlan, sp: SlicePlan, name: str, image: str) -> dict:
    """A one-replica JobSet on the slice that reports the injected env and jax.device_count()."""
    install = ("pip install -q 'jax[tpu]'" if sp.kind == "tpu"
               else "pip install -q 'jax[cuda12]'")
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "mldiag-provision"}
    labels.update({k: v for k, v in plan.agents.namespace_labels.items()
                   if k != "app.kubernetes.io/managed-by"})
    per_pod = sp.chips_per_vm or 1
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": plan.agents.namespace, "labels": labels},
        "spec": {"replicatedJobs": [{"name": "slice", "replicas": 1, "template": {"spec": {
            "backoffLimit": 0, "completions": sp.vms, "parallelism": sp.vms,
            "completionMode": "Indexed",
            "template": {"metadata": {"labels": labels}, "spec": {
                "restartPolicy": "Never",
                "serviceAccountName": plan.agents.service_account,
                "nodeSelector": dict(sp.node_selector),
                "containers": [{
                    "name": "smoke", "image": image, "command": ["bash", "-c"],
                    "args": [f"{install} && python3 -c " + _shell_quote(SMOKE_SCRIPT)],
                    "resources": {"requests": {sp.resource: per_pod},
                                  "limits": {sp.resource: per_pod}},
                }]}}}}}]},
    }


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def smoke_name(plan: StackPlan) -> str:
    """The smoke JobSet's name: fixed per stack, so a leftover one is easy to find."""
    return ("mldiag-smoke-" + plan.name)[:40].rstrip("-")


def parse_smoke_log(log: str) -> dict | None:
    """The JSON line the smoke pod prints, or None."""
    for line in reversed(log.splitlines()):
        if line.startswith("MLDIAG_SMOKE "):
            try:
                return json.loads(line.removeprefix("MLDIAG_SMOKE "))
            except ValueError:
                return None
    return None


def run_smoke(cluster: Cluster, plan: StackPlan, *, image: str = "python:3.12",
              timeout_s: float = 900, poll_s: float = 5.0) -> CheckResult:
    """Create the smoke JobSet on the first slice, wait for its pods, judge their output.

    PASS when every pod saw GKE_DIAGON_IDENTIFIER/GKE_DIAGON_METADATA and jax.device_count()
    equals the slice's chips. The JobSet is deleted afterwards.
    """
    if not plan.slices:
        return CheckResult("smoke", SKIP, "the recipe has no slice", "-")
    sp = plan.slices[0]
    ns = plan.agents.namespace
    name = smoke_name(plan)
    evidence = f"JobSet/{ns}/{name}"
    body = smoke_jobset(plan, sp, name, image)
    try:
        cluster.custom.create_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", ns,
                                                       "jobsets", body)
    except Exception as exc:
        if _not_found(exc):
            return CheckResult("smoke", FAIL, "the JobSet API is not installed", evidence,
                               "install the JobSet controller (kubernetes-sigs/jobset)")
        return _api_error("smoke", evidence, exc)
    try:
        deadline = time.monotonic() + timeout_s
        selector = f"jobset.sigs.k8s.io/jobset-name={name}"
        while True:
            pods = cluster.core.list_namespaced_pod(ns, label_selector=selector).items
            done = [p for p in pods if p.status and p.status.phase in ("Succeeded", "Failed")]
            if pods and len(done) == len(pods) >= sp.vms:
                break
            if time.monotonic() > deadline:
                return CheckResult("smoke", FAIL, f"pods did not finish in {timeout_s:.0f} s",
                                   evidence, f"kubectl -n {ns} describe pods -l {selector}")
            time.sleep(poll_s)
        want = (sp.chips or 0) * sp.count
        for pod in done:
            log = cluster.core.read_namespaced_pod_log(pod.metadata.name, ns)
            report = parse_smoke_log(log or "")
            where = f"Pod/{ns}/{pod.metadata.name}"
            if report is None:
                return CheckResult("smoke", FAIL, "the smoke pod printed no report", where,
                                   f"kubectl -n {ns} logs {pod.metadata.name}")
            if not (report.get("identifier") and report.get("metadata")):
                return CheckResult("smoke", FAIL, "GKE_DIAGON_IDENTIFIER/GKE_DIAGON_METADATA "
                                   "were not injected", where,
                                   "check the namespace label and the injection webhook")
            if want and report.get("devices") != want:
                return CheckResult("smoke", FAIL, f"jax.device_count() is "
                                   f"{report.get('devices')}, the slice has {want} chips", where,
                                   "check the TPU request and the multi-host environment")
        return CheckResult("smoke", PASS, f"{len(done)} pod(s): metadata injected, "
                           f"{want or 'all'} devices", evidence)
    finally:
        with contextlib.suppress(Exception):  # best-effort cleanup of our own object
            cluster.custom.delete_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", ns,
                                                           "jobsets", name)
