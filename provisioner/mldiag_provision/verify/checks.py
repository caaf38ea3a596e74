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
from typing import TYPE_CHECKING, Any, cast

from mldiag_provision.catalog.gpu import GPU_ACCELERATOR_LABEL
from mldiag_provision.catalog.tpu import Catalog
from mldiag_provision.plan.project import TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL

if TYPE_CHECKING:
    from kubernetes.client import V1ObjectMeta
    from urllib3 import HTTPResponse

    from mldiag_provision.kubeclient import Deadline
    from mldiag_provision.plan.agents import AgentsPlan
    from mldiag_provision.plan.types import SlicePlan, StackPlan

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


def _agents(plan: StackPlan) -> AgentsPlan:
    """The plan's agents part; the cluster checks run only on stacks that have one (``verify``
    refuses the others before it reaches them).

    Raises:
      ValueError: the plan has no agents part.
    """
    if plan.agents is None:
        raise ValueError(f"{plan.blueprint} stacks have no Kubernetes cluster to verify")
    return plan.agents


def _name(meta: V1ObjectMeta | None) -> str:
    """``metadata.name`` of an object the API server returned (it always sets one)."""
    return str(meta.name) if meta is not None and meta.name is not None else ""


def _not_found(exc: Exception) -> bool:
    return getattr(exc, "status", None) == 404


PENDING = "not checked: the overall deadline"
"""How the message of a check the deadline cut off starts (:func:`pending`)."""


def pending(check: str, seconds: float, *, in_flight: bool) -> CheckResult:
    """The FAIL of a check still pending when the overall deadline (``--timeout``) passed:
    ``in_flight`` when it was waiting for the API server's answer, else not started."""
    what = ("while it waited for the API server's answer" if in_flight
            else "before it started (earlier checks waited on the API server)")
    return CheckResult(check, FAIL, f"{PENDING} of {seconds:g} s (--timeout) passed {what}",
                       "-", "the API server answers too slowly or not at all: check its "
                       "health and the network path (a proxy in between?), or give more "
                       "time with --timeout SECONDS")


def _api_error(check: str, evidence: str, exc: Exception) -> CheckResult:
    from mldiag_provision.kubeclient import DeadlineExceeded, is_timeout

    if isinstance(exc, DeadlineExceeded):
        return CheckResult(check, FAIL, f"{PENDING} passed before reading {evidence} "
                           f"({exc})", evidence, "the API server answers too slowly or not "
                           "at all: check its health and the network path, or give more "
                           "time with --timeout SECONDS")
    if is_timeout(exc):
        return CheckResult(check, FAIL, f"the API server did not answer in time (reading "
                           f"{evidence}; MLDIAG_REQUEST_TIMEOUT_S)", evidence,
                           "the server accepted the connection but sent no answer: check the "
                           "network path, a proxy in between, and the API server's health")
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or type(exc).__name__
    hint = ("your credentials may not read it: check RBAC (kubectl auth can-i get ...)"
            if status in (401, 403) else "is the cluster reachable? check --kubeconfig/--context")
    return CheckResult(check, FAIL, f"the API server answered {status or ''} {reason}".strip(),
                       evidence, hint)


def check_namespace_label(cluster: Cluster, plan: StackPlan) -> CheckResult:
    """The workload namespace exists and carries the ML Diagnostics label."""
    agents = _agents(plan)
    ns = agents.namespace
    evidence = f"Namespace/{ns}"
    try:
        obj = cluster.core.read_namespace(ns)
    except Exception as exc:
        if _not_found(exc):
            return CheckResult("namespace-label", FAIL, f"namespace {ns} does not exist", evidence,
                               "apply the second stage: terraform -chdir=agents apply")
        return _api_error("namespace-label", evidence, exc)
    labels = (obj.metadata.labels if obj.metadata else None) or {}
    want = {k: v for k, v in agents.namespace_labels.items()
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
    agents = _agents(plan)
    ns, name = agents.namespace, agents.service_account
    evidence = f"ServiceAccount/{ns}/{name}"
    want = agents.service_account_annotations
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
    have = (obj.metadata.annotations if obj.metadata else None) or {}
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
    strategy = _agents(plan).strategy
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
                               f"Deployment {_name(d.metadata)} has {ready}/{want} replicas "
                               "available", f"Deployment/{ns}/{_name(d.metadata)}",
                               f"kubectl -n {ns} describe deployment {_name(d.metadata)}; while "
                               "the webhook is down, pod creation in labelled namespaces fails")
    names = ", ".join(sorted(_name(d.metadata) for d in deps))
    return CheckResult("agents-ready", PASS, f"available: {names}", evidence)


def check_crd_established(cluster: Cluster, plan: StackPlan, catalog: Catalog) -> CheckResult:
    """The MLDiagnosticsConnection CRD is established (on-demand profiling)."""
    name = str(catalog.fact("mlDiagnostics", "manualInstall", "crd")["name"])
    evidence = f"CustomResourceDefinition/{name}"
    if _agents(plan).strategy == "none":
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
    if _agents(plan).strategy == "none":
        return CheckResult("webhook-ca-bundle", SKIP, "no agents for this stack", evidence)
    try:
        configs = cluster.admission.list_mutating_webhook_configuration().items
    except Exception as exc:
        return _api_error("webhook-ca-bundle", evidence, exc)
    ours = [c for c in configs if "mldiagnostics" in _name(c.metadata)
            or "diagon" in _name(c.metadata)]
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
                                   f"MutatingWebhookConfiguration/{_name(cfg.metadata)}",
                                   "check cert-manager: kubectl -n cert-manager get pods; "
                                   "kubectl get certificates -A (it can take two minutes)")
    return CheckResult("webhook-ca-bundle", PASS,
                       "CA bundle set on " + ", ".join(_name(c.metadata) for c in ours), evidence)


def _selector(sp: SlicePlan) -> dict[str, str]:
    keys = (TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL, GPU_ACCELERATOR_LABEL)
    return {k: v for k, v in sp.node_selector.items() if k in keys}


def check_accelerator_nodes(cluster: Cluster, plan: StackPlan) -> list[CheckResult]:
    """Each slice has nodes with the expected labels and allocatable chips (where nodes
    appear on demand, e.g. Autopilot, none yet is a SKIP and fewer is fine)."""
    from mldiag_provision import orchestrators
    from mldiag_provision.orchestrators import Capability

    autopilot = orchestrators.get(plan.cluster.type).has(Capability.NODES_ON_DEMAND)
    results = []
    for sp in plan.slices:
        # pools that scale from 0 (flex-start; queued: only once Kueue's ProvisioningRequest
        # for a workload is granted, https://cloud.google.com/kubernetes-engine/docs/how-to/
        # provisioningrequest) have nodes only while a workload runs
        on_demand = autopilot or sp.capacity in ("flex-start", "queued")
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
                why = ("Autopilot creates them when a workload asks for the slice" if autopilot
                       else "the queued pool gets them when Kueue's ProvisioningRequest for a "
                       "workload is granted" if sp.capacity == "queued"
                       else "the flex-start pool scales up when a workload asks for the slice")
                results.append(CheckResult(check, SKIP, f"no nodes yet: {why}", evidence))
            else:
                results.append(CheckResult(
                    check, FAIL, f"no node has the labels {label_selector}", evidence,
                    "check the node pools (gcloud container node-pools list) and that the "
                    "accelerator and topology labels match the recipe"))
            continue
        per_node = sp.chips_per_vm
        bad = [_name(n.metadata) for n in nodes
               if per_node and str(((n.status.allocatable if n.status else None) or {})
                                   .get(sp.resource)) != str(per_node)]
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


def check_kueue(cluster: Cluster, plan: StackPlan) -> CheckResult:
    """Queued capacity: the Kueue objects the queued workloads go through exist (ClusterQueue,
    LocalQueue, AdmissionCheck), and the AdmissionCheck is not reported inactive (Kueue sets
    condition ``Active``; catalog/data/gke.yaml ``queuedProvisioning.kueue``)."""
    q = plan.queued
    if q is None:
        return CheckResult("kueue", SKIP, "no queued capacity in this stack", "-")
    group, version = q.api_version.split("/")
    wanted = [("ClusterQueue", "clusterqueues", None, q.cluster_queue),
              ("LocalQueue", "localqueues", q.namespace, q.local_queue),
              ("AdmissionCheck", "admissionchecks", None, q.admission_check)]
    for kind, plural, ns, name in wanted:
        evidence = f"{kind}/{ns + '/' if ns else ''}{name}"
        try:
            # the custom objects API returns the JSON as a dict; its annotations say object
            obj = cast("dict[str, Any] | None", (
                cluster.custom.get_namespaced_custom_object(group, version, ns, plural, name)
                if ns else cluster.custom.get_cluster_custom_object(group, version, plural,
                                                                    name)))
        except Exception as exc:
            if _not_found(exc) or getattr(exc, "status", None) == 404:
                return CheckResult("kueue", FAIL, f"{kind} {name} is missing: queued workloads "
                                   "stay suspended", evidence,
                                   "apply the workloads stage (k8s/workloads/00-kueue.yaml), "
                                   "after the cluster stage installed Kueue")
            return _api_error("kueue", evidence, exc)
        conditions = ((obj or {}).get("status") or {}).get("conditions") or []
        inactive = [c for c in conditions if c.get("type") == "Active"
                    and c.get("status") == "False"]
        if inactive:
            return CheckResult("kueue", FAIL, f"{kind} {name} is not active: "
                               f"{inactive[0].get('message') or inactive[0].get('reason')}",
                               evidence, f"kubectl describe {kind.lower()} {name}")
    return CheckResult("kueue", PASS, f"ClusterQueue {q.cluster_queue}, LocalQueue "
                       f"{q.namespace}/{q.local_queue}, AdmissionCheck {q.admission_check}",
                       f"{group}/{version}")


def check_gpu_networks(cluster: Cluster, plan: StackPlan) -> list[CheckResult]:
    """Each GPUDirect slice (plan/gpunet.py): its ``networking.gke.io`` Network objects exist
    (pods naming a missing one do not start; GKE multi-networking docs) and its NCCL plugin
    installer DaemonSet is ready on every node it targets. SKIP while none of the slice's
    Networks exists (the workloads stage, not yet applied, creates them); no results for
    stacks without GPUDirect slices."""
    from mldiag_provision.plan.gpunet import TCPXO
    from mldiag_provision.stack.kube import WORKLOADS_DIR

    if not plan.gpu_networks:
        return []
    evidence = "networks.networking.gke.io"
    try:
        # the custom objects API returns the JSON as a dict; its annotations say object
        listed = cast("dict[str, Any]", cluster.custom.list_cluster_custom_object(
            "networking.gke.io", "v1", "networks"))
        items = listed["items"]
    except Exception as exc:
        return [_api_error("gpu-network", evidence, exc)]
    have = {str((n.get("metadata") or {}).get("name")) for n in items}
    results = []
    for g in plan.gpu_networks:
        check = f"gpu-network:{g.slice}"
        missing = [i.network_object for i in g.interfaces if i.network_object not in have]
        if len(missing) == len(g.interfaces):
            # the workloads stage creates them, before the workloads: not applied yet
            results.append(CheckResult(
                check, SKIP, "no Network objects yet: the workloads stage creates them "
                f"({WORKLOADS_DIR}/00-gpu-networking.yaml) before the workloads", evidence))
            continue
        if missing:
            results.append(CheckResult(
                check, FAIL, f"{len(missing)} of {len(g.interfaces)} Network objects are "
                "missing: " + ", ".join(missing[:4]), evidence,
                f"apply {WORKLOADS_DIR}/00-gpu-networking.yaml (mldiag-provision apply), "
                "then kubectl get networks"))
            continue
        name = "nccl-tcpxo-installer" if g.mode == TCPXO else "nccl-rdma-installer"
        ds_evidence = f"DaemonSet/kube-system/{name}"
        try:
            ds = cluster.apps.read_namespaced_daemon_set(name, "kube-system")
        except Exception as exc:
            if _not_found(exc):
                results.append(CheckResult(check, FAIL, f"the NCCL plugin installer {name} is "
                                           "missing: NCCL falls back to the primary NIC",
                                           ds_evidence, f"apply {WORKLOADS_DIR}/"
                                           "00-gpu-networking.yaml"))
            else:
                results.append(_api_error(check, ds_evidence, exc))
            continue
        status = ds.status
        desired = int(getattr(status, "desired_number_scheduled", 0) or 0)
        ready = int(getattr(status, "number_ready", 0) or 0)
        from mldiag_provision.catalog.gpu import GPU_ACCELERATOR_LABEL

        gpu_nodes = _count_nodes(cluster, f"{GPU_ACCELERATOR_LABEL}={g.accelerator}")
        want = max(desired, gpu_nodes or 0)
        if ready < want:
            unscheduled = (gpu_nodes or 0) > desired
            results.append(CheckResult(
                check, FAIL, f"installer ready on {ready} of {want} "
                + (f"nodes with {g.accelerator} GPUs (the DaemonSet is scheduled on only "
                   f"{desired})" if unscheduled else "nodes"), ds_evidence,
                f"kubectl get nodes -l {GPU_ACCELERATOR_LABEL}={g.accelerator}; compare with "
                f"the node affinity of daemonset/{name}" if unscheduled else
                f"kubectl -n kube-system describe daemonset {name}"))
        else:
            results.append(CheckResult(check, PASS, f"{len(g.interfaces)} Networks; {name} "
                                       f"ready on {ready} node(s)", ds_evidence))
    return results


def _count_nodes(cluster: Cluster, label_selector: str) -> int | None:
    """How many nodes carry the labels, or None when the nodes cannot be listed (the check
    then goes by what the DaemonSet says alone)."""
    try:
        return len(cluster.core.list_node(label_selector=label_selector).items)
    except Exception:
        return None


def check_reachable(cluster: Cluster) -> CheckResult:
    """The API server answers at all (GET /version), in time, with Kubernetes' JSON.

    The body is read raw (not through the client's models), so a proxy or login page that
    answers 200 with HTML is named as such instead of passing or crashing the model code.
    """
    from mldiag_provision.kubeclient import is_timeout, request_timeout_s

    evidence = f"API server {cluster.host}"
    try:
        # unparsed (_preload_content=False), the client returns urllib3's response, which
        # its annotations (VersionInfo) do not say
        resp = cast("HTTPResponse", cluster.version.get_code(_preload_content=False))
        body = resp.data
        ctype = str(resp.headers.get("Content-Type") or "no content type")
    except Exception as exc:
        if getattr(exc, "status", None):  # it answered, with an HTTP error
            return _api_error("api-server", evidence, exc)
        if is_timeout(exc):
            return CheckResult("api-server", FAIL, f"GET /version got no answer within "
                               f"{request_timeout_s():g} s (MLDIAG_REQUEST_TIMEOUT_S)",
                               evidence, "the server accepted the connection but sent no "
                               "answer: check the address in --kubeconfig, the network path "
                               "and any proxy in between")
        return CheckResult("api-server", FAIL, f"cannot reach the API server "
                           f"({type(exc).__name__})", evidence,
                           "check --kubeconfig/--context, the network path and that the "
                           "cluster exists (gcloud container clusters list)")
    try:
        info = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        info = None
    version = info.get("gitVersion") if isinstance(info, dict) else None
    if not isinstance(version, str) or not version:
        return CheckResult("api-server", FAIL, f"the server answered GET /version with "
                           f"{ctype} that is not a Kubernetes version object", evidence,
                           "this address is not a Kubernetes API server (a proxy, load "
                           "balancer or login page?): check the server in --kubeconfig")
    return CheckResult("api-server", PASS, f"Kubernetes {version}", evidence)


# what a well-formed request gives back in a shape the checks cannot read (a hostile or
# broken server): a field of the wrong type, a null where an object belongs
_SHAPE_ERRORS = (AttributeError, TypeError, ValueError, KeyError, IndexError)


def guarded(check: str, step: Callable[[], CheckResult | list[CheckResult]],
             ) -> list[CheckResult]:
    """Run one check; a network failure or an answer of the wrong shape becomes its FAIL."""
    try:
        result = step()
    except _SHAPE_ERRORS as exc:
        return [CheckResult(check, FAIL, "the API server's answer has an unexpected shape "
                            f"({type(exc).__name__}: {' '.join(str(exc).split())[:160]})", "-",
                            "is this a Kubernetes API server of a supported version? "
                            "kubectl get --raw /version")]
    except Exception as exc:  # urllib3 / client errors raised outside a check's own try
        return [_api_error(check, "-", exc)]
    return result if isinstance(result, list) else [result]


def within(deadline: Deadline | None, check: str,
           step: Callable[[], CheckResult | list[CheckResult]]) -> list[CheckResult] | None:
    """:func:`guarded` ``step``, or None when ``deadline`` passed while it ran: the step
    runs in a daemon thread that is waited on only until the deadline (a server that
    trickles its answer defeats every per-request timeout; this does not), and is left
    behind. Without a deadline, the step simply runs."""
    if deadline is None:
        return guarded(check, step)
    import threading

    box: list[list[CheckResult]] = []
    worker = threading.Thread(target=lambda: box.append(guarded(check, step)), daemon=True,
                              name=f"verify {check}")
    worker.start()
    worker.join(deadline.remaining())
    return box[0] if box else None


def run_checks(cluster: Cluster, plan: StackPlan, catalog: Catalog,
               deadline: Deadline | None = None) -> list[CheckResult]:
    """All read-only checks, in a stable order; only the reachability check when the API
    server cannot be reached (every other check would fail the same way).

    ``deadline``: when it passes, the check in flight and every check not yet run each get
    a FAIL that says so (:func:`pending`), and nothing more is asked of the server; the
    checks end at the deadline, however the server stalls."""
    reach_got = within(deadline, "api-server", lambda: check_reachable(cluster))
    if reach_got is None:
        assert deadline is not None
        return [pending("api-server", deadline.seconds, in_flight=True)]
    [reach] = reach_got
    if reach.status == FAIL:
        return [reach]
    steps: list[tuple[str, Callable[[], CheckResult | list[CheckResult]]]] = [
        ("namespace-label", lambda: check_namespace_label(cluster, plan)),
        ("ksa-annotation", lambda: check_ksa_annotation(cluster, plan)),
        ("agents-ready", lambda: check_agents_ready(cluster, plan, catalog)),
        ("crd-established", lambda: check_crd_established(cluster, plan, catalog)),
        ("webhook-ca-bundle", lambda: check_webhook_ca(cluster, plan)),
        ("nodes", lambda: check_accelerator_nodes(cluster, plan)),
        ("gpu-network", lambda: check_gpu_networks(cluster, plan)),
    ]
    if plan.queued is not None:
        steps.append(("kueue", lambda: check_kueue(cluster, plan)))
    out: list[CheckResult] = [reach]
    for i, (name, step) in enumerate(steps):
        started = deadline is None or not deadline.expired
        got = within(deadline, name, step) if started else None
        if got is None:
            assert deadline is not None
            out.append(pending(name, deadline.seconds, in_flight=started))
            out.extend(pending(later, deadline.seconds, in_flight=False)
                       for later, _ in steps[i + 1:])
            break
        out.extend(got)
    return out


# -- smoke test -------------------------------------------------------------------------

JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"  # the slice of a multislice JobSet's pod
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def parse_smoke_log(log: str) -> dict[str, Any] | None:
    """The JSON line the smoke program prints (``MLDIAG_SMOKE {...}``), or None."""
    for line in reversed(log.splitlines()):
        if line.startswith("MLDIAG_SMOKE "):
            try:
                value = json.loads(line.removeprefix("MLDIAG_SMOKE "))
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def _create_or_replace_configmap(cluster: Cluster, body: dict[str, Any]) -> None:
    ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
    try:
        # the client sends a dict body as it is (its annotations name only the model)
        cluster.core.create_namespaced_config_map(ns, body)  # type: ignore[arg-type]
    except Exception as exc:
        if getattr(exc, "status", None) != 409:
            raise
        cluster.core.replace_namespaced_config_map(name, ns, body)  # type: ignore[arg-type]


def _pod_slice(pod: Any, report: dict[str, Any]) -> int:
    labels = (pod.metadata.labels or {}) if pod.metadata else {}
    value = labels.get(JOB_INDEX_LABEL)
    if value is None:
        value = report.get("slice_index", 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def judge_smoke_slice(plan: StackPlan, sp: SlicePlan, pods: list[Any],
                      logs: dict[str, str]) -> CheckResult:
    """One slice's verdict from its finished pods and their logs (pod name -> log text).

    PASS when every pod printed a report with ``ok`` true, the injected ML Diagnostics
    variables (when the stack turns diagnostics on), and the pods of each slice of a
    multislice hold that slice's devices together (``local_devices`` summed by JobSet job
    index); FAIL names the slice (``name`` or ``name[i]`` of a multislice) and the pod.
    """
    from mldiag_provision.plan.smoke import jobset_name, profile_path, spec_for

    spec = spec_for(sp, plan)
    ns = plan.agents.namespace if plan.agents else "default"
    check = f"smoke:{sp.name}"
    evidence = f"JobSet/{ns}/{jobset_name(sp)}"

    def where(i: int) -> str:
        return f"slice {sp.name}" + (f"[{i}] ({i + 1} of {sp.count})" if sp.count > 1 else "")

    by_slice: dict[int, int] = {}
    reports = []
    for pod in sorted(pods, key=lambda p: p.metadata.name):
        pod_name = pod.metadata.name
        report = parse_smoke_log(logs.get(pod_name, ""))
        pod_ref = f"Pod/{ns}/{pod_name}"
        if report is None:
            return CheckResult(check, FAIL, f"{where(0)}: pod {pod_name} printed no smoke "
                               "report", pod_ref, f"kubectl -n {ns} logs {pod_name}")
        idx = _pod_slice(pod, report)
        if not report.get("ok"):
            first = (report.get("errors") or ["the program failed"])[0]
            return CheckResult(check, FAIL, f"{where(idx)}: {first}", pod_ref,
                               f"kubectl -n {ns} logs {pod_name}; check the "
                               f"{sp.resource} request and the slice's nodes")
        if plan.diagnostics.enabled and report.get("gke_metadata") is False:
            return CheckResult(check, FAIL, f"{where(idx)}: GKE_DIAGON_IDENTIFIER/"
                               "GKE_DIAGON_METADATA were not injected", pod_ref,
                               "check the namespace label and the injection webhook")
        by_slice[idx] = by_slice.get(idx, 0) + int(report.get("local_devices") or 0)
        reports.append(report)
    for i in range(sp.count):
        have = by_slice.get(i, 0)
        if have != spec.per_slice:
            return CheckResult(check, FAIL, f"{where(i)} reports {have} of {spec.per_slice} "
                               "devices", evidence,
                               f"kubectl -n {ns} describe pods -l {JOB_INDEX_LABEL}={i},"
                               f"{JOBSET_NAME_LABEL}={jobset_name(sp)}; check its nodes")
    coll = reports[0].get("collective") or {} if reports else {}
    sdk = reports[0].get("sdk") if reports else None
    counts = " + ".join(str(by_slice[i]) for i in sorted(by_slice))
    return CheckResult(check, PASS,
                       f"{len(reports)} pod(s): {reports[0].get('devices') if reports else 0} "
                       f"devices ({counts}), {coll.get('op', 'collective')} = "
                       f"{coll.get('got')} as expected; profile {profile_path(plan, sp)}"
                       + (f"; ML Diagnostics: {sdk}" if sdk else ""), evidence)


def run_smoke(cluster: Cluster, plan: StackPlan, *, image: str = "python:3.12",
              timeout_s: float = 900, poll_s: float = 5.0,
              progress: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Run the smoke program on every slice of the recipe, in the cluster; one result each.

    Creates the program's ConfigMap and one JobSet per recipe slice (a multislice's
    ``count`` slices are its replicated jobs), waits, bounded by ``timeout_s`` seconds, until
    every pod finished (``progress`` gets a line whenever the count of finished pods
    changes), judges each slice with :func:`judge_smoke_slice` and deletes what it created.
    """
    if not plan.slices:
        return [CheckResult("smoke", SKIP, "the recipe has no slice", "-")]
    ns = plan.agents.namespace if plan.agents else "default"
    created: list[str] = []
    say = progress or (lambda _line: None)
    try:
        refused = _create_smoke_objects(cluster, plan, ns, image, created)
        if refused is not None:
            return refused
        finished = _wait_for_pods(cluster, plan, ns, timeout_s, poll_s, say)
        if isinstance(finished, list):
            return finished
        return [judge_smoke_slice(plan, sp, finished[sp.name],
                                  _pod_logs(cluster, finished[sp.name], ns))
                for sp in plan.slices]
    finally:
        for name in created:  # best-effort cleanup of our own objects
            with contextlib.suppress(Exception):
                cluster.custom.delete_namespaced_custom_object(*JOBSET[:2], ns, JOBSET[2], name,
                                                               propagation_policy="Foreground")
        with contextlib.suppress(Exception):
            cluster.core.delete_namespaced_config_map("mldiag-smoke-program", ns)


def _create_smoke_objects(cluster: Cluster, plan: StackPlan, ns: str, image: str,
                          created: list[str]) -> list[CheckResult] | None:
    """Create (or replace) the program's ConfigMap and one JobSet per slice, appending each
    JobSet's name to ``created`` as it is made; the FAIL that stops it (the JobSet API not
    installed, any other API error), or None."""
    from mldiag_provision.plan.smoke import jobset_name
    from mldiag_provision.render.smoke import configmap, jobset

    try:
        _create_or_replace_configmap(cluster, configmap(plan))
    except Exception as exc:
        return [_api_error("smoke", f"ConfigMap/{ns}/mldiag-smoke-program", exc)]
    for sp in plan.slices:
        name = jobset_name(sp)
        try:
            cluster.custom.create_namespaced_custom_object(*JOBSET[:2], ns, JOBSET[2],
                                                           jobset(plan, sp, image=image))
        except Exception as exc:
            if _not_found(exc):
                return [CheckResult("smoke", FAIL, "the JobSet API is not installed",
                                    f"JobSet/{ns}/{name}",
                                    "install the JobSet controller (kubernetes-sigs/jobset)")]
            return [_api_error("smoke", f"JobSet/{ns}/{name}", exc)]
        created.append(name)
    return None


def _wait_for_pods(cluster: Cluster, plan: StackPlan, ns: str, timeout_s: float,
                   poll_s: float, say: Callable[[str], None],
                   ) -> dict[str, list[Any]] | list[CheckResult]:
    """Poll every ``poll_s`` seconds until each slice's pods (``vms * count``) finished
    (Succeeded or Failed), saying the counts whenever they change; the finished pods by
    slice name, or after ``timeout_s`` seconds a FAIL for each slice still short."""
    from mldiag_provision.plan.smoke import jobset_name

    want = {sp.name: sp.vms * sp.count for sp in plan.slices}
    deadline = time.monotonic() + timeout_s
    finished: dict[str, list[Any]] = {}
    last = ""
    while True:
        for sp in plan.slices:
            pods = cluster.core.list_namespaced_pod(
                ns, label_selector=f"{JOBSET_NAME_LABEL}={jobset_name(sp)}").items
            finished[sp.name] = [p for p in pods if p.status
                                 and p.status.phase in ("Succeeded", "Failed")]
        line = ", ".join(f"{n} {len(finished[n])}/{want[n]}" for n in want)
        if line != last:
            say(f"smoke: pods finished: {line}")
            last = line
        if all(len(finished[n]) >= want[n] for n in want):
            return finished
        if time.monotonic() > deadline:
            late = [n for n in want if len(finished[n]) < want[n]]
            return [CheckResult(f"smoke:{n}", FAIL, f"slice {n}: {len(finished[n])} of "
                                f"{want[n]} pods finished in {timeout_s:.0f} s",
                                f"JobSet/{ns}/{jobset_name(sp)}",
                                f"kubectl -n {ns} describe pods -l {JOBSET_NAME_LABEL}="
                                f"{jobset_name(sp)}")
                    for n, sp in ((s.name, s) for s in plan.slices) if n in late]
        time.sleep(poll_s)


def _pod_logs(cluster: Cluster, pods: list[Any], ns: str) -> dict[str, str]:
    """The logs of ``pods`` by pod name; "" for a pod whose log cannot be read."""
    logs = {}
    for pod in pods:
        try:
            logs[pod.metadata.name] = cluster.core.read_namespaced_pod_log(
                pod.metadata.name, ns) or ""
        except Exception:
            logs[pod.metadata.name] = ""
    return logs
