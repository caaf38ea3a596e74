"""Checks of the second stage (``agents/``) of a GKE example recipe, run on the one
lifecycle of the example in the sandbox, tests/sandbox/test_examples_lifecycle.py (they were
a lifecycle of their own, tests/engine/test_agents_stage.py, that applied and destroyed every
example a second time).

The stand-in Kubernetes API server (mldiag_provision/sandbox/apiserver.py) plays the cluster
the google stand-in created, and the stand-in hashicorp/kubernetes and hashicorp/helm
providers act on it. After the stage is applied the cluster holds the labelled workload
namespace, the annotated KSA, the agents (manual strategy) and the JobSet controller with its
CRD when a workload is a JobSet (Kueue when capacity is queued); a re-plan of agents/ with
plain ``terraform`` shows no change; with the workloads stage gone, ``verify`` passes except
for the Kueue queues that come with it; ``terraform destroy`` in agents/ removes the stage
again and leaves the system namespaces unlabelled. On Autopilot, GKE Warden refuses writes
to managed namespaces: the stage must not label kube-system there.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

EXEMPT = "diagon-webhook-exempt"
AGENTS_NS = "gke-mldiagnostics"
JOBSET_CRD = "jobsets.jobset.x-k8s.io"


def terraform(chdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """terraform -chdir=DIR ARGS (non-interactive, no colour) in this test's environment."""
    proc = subprocess.run(["terraform", f"-chdir={chdir}", *args, "-input=false", "-no-color"],
                          capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, f"terraform {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def k8s(kubeconfig: Path) -> tuple[Any, Any, Any, Any]:
    """(CoreV1Api, AppsV1Api, ApiextensionsV1Api, AdmissionregistrationV1Api) of the
    stand-in cluster that ``kubeconfig`` names."""
    from kubernetes import client, config

    api = config.new_client_from_config(str(kubeconfig))
    return (client.CoreV1Api(api), client.AppsV1Api(api), client.ApiextensionsV1Api(api),
            client.AdmissionregistrationV1Api(api))


def labels(core: Any, name: str) -> dict:
    return core.read_namespace(name).metadata.labels or {}


def plan_of(work: Path) -> dict:
    """The plan mldiag-provision wrote for the stack in ``work``."""
    return json.loads((work / ".mldiag" / "plan.json").read_text())


def check_applied(plan: dict, clients: tuple[Any, Any, Any, Any], work: Path) -> None:
    """The stage's objects in the cluster, and no drift in agents/ (plain terraform)."""
    from kubernetes.client.rest import ApiException

    core, apps, ext, admission = clients
    agents = plan["agents"]
    ns = agents["namespace"]
    got = labels(core, ns)
    for k, v in agents["namespace_labels"].items():
        assert got.get(k) == v, (ns, got)
    assert got.get("managed-mldiagnostics-gke") == "true"
    ksa = core.read_namespaced_service_account(agents["service_account"], ns)
    assert ksa.metadata.annotations == agents["service_account_annotations"]
    assert ksa.metadata.annotations["iam.gke.io/gcp-service-account"] == (
        plan["diagnostics"]["service_account"]["email"])
    deployments = {d.metadata.name: d for d in apps.list_namespaced_deployment(AGENTS_NS).items}
    if agents["strategy"] == "manual":
        assert set(deployments) == {"mldiagnostics-injection-webhook",
                                    "mldiagnostics-connection-operator"}
        assert all(d.status.available_replicas == 1 for d in deployments.values())
        hooks = admission.read_mutating_webhook_configuration(
            "mldiagnostics-injection-webhook-mutating-webhook-config").webhooks
        assert hooks[0].failure_policy == "Fail" and hooks[0].client_config.ca_bundle
        for system_ns in agents["exempt_existing_namespaces"]:
            assert labels(core, system_ns).get(EXEMPT) == "true", system_ns
    else:
        assert deployments == {}
    wants_jobset = any(w["kind"] == "JobSet" for w in plan["workloads"])
    queued = plan.get("queued") is not None  # queued capacity: Kueue joins the add-ons
    assert [a["name"] for a in agents["addons"]] == (
        (["jobset"] if wants_jobset else []) + (["kueue"] if queued else []))
    if queued:
        crd = ext.read_custom_resource_definition("clusterqueues.kueue.x-k8s.io")
        assert any(c.type == "Established" and c.status == "True"
                   for c in crd.status.conditions)
        ctl = apps.read_namespaced_deployment("kueue-controller-manager", "kueue-system")
        assert ctl.status.available_replicas == 1
    if wants_jobset:
        crd = ext.read_custom_resource_definition(JOBSET_CRD)
        assert any(c.type == "Established" and c.status == "True"
                   for c in crd.status.conditions)
        ctl = apps.read_namespaced_deployment("jobset-controller", "jobset-system")
        assert ctl.status.available_replicas == 1
    else:
        with pytest.raises(ApiException) as exc:
            ext.read_custom_resource_definition(JOBSET_CRD)
        assert exc.value.status == 404

    # What terraform wrote is what it reads back: no drift (plain terraform, in the
    # directory `apply` initialised).
    proc = terraform(work / "agents", "plan", "-detailed-exitcode", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def check_verify_without_workloads(cli: Any, recipe: Path, plan: dict,
                                   *where: str) -> None:
    """``verify`` once the project and agents stages are applied and the workloads stage is
    not: it sees the stage's work (and the nodes of the slices on Standard clusters).
    ``where``: the arguments that name the cluster (``--kubeconfig PATH``, or ``-o DIR
    --sandbox``)."""
    queued = plan.get("queued") is not None
    code, out, err = cli("verify", str(recipe), *where, "-O", "json")
    report = json.loads(out)
    # queued capacity: the Kueue queues come with the workloads stage, not applied here
    failed = {c["check"] for c in report["checks"] if c["status"] == "FAIL"}
    assert failed == ({"kueue"} if queued else set()), json.dumps(report, indent=1) + err
    assert code == (1 if queued else 0)
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert statuses["namespace-label"] == "PASS"
    assert statuses["ksa-annotation"] == "PASS"
    assert statuses["crd-established"] == "PASS" and statuses["webhook-ca-bundle"] == "PASS"
    if plan["blueprint"] == "gke-standard":
        # a queued pool has nodes only once a ProvisioningRequest is granted
        assert all(v == ("SKIP" if queued else "PASS") for k, v in statuses.items()
                   if k.startswith("nodes:")), statuses


def destroy_and_check(plan: dict, clients: tuple[Any, Any, Any, Any], work: Path) -> None:
    """``terraform destroy`` in agents/ (plain terraform) removes the stage's objects and the
    exemption labels; helm keeps the CRDs of a chart's crds/ directory."""
    from kubernetes.client.rest import ApiException

    core, apps, ext, _ = clients
    terraform(work / "agents", "destroy", "-auto-approve")
    with pytest.raises(ApiException) as exc:
        core.read_namespace(plan["agents"]["namespace"])
    assert exc.value.status == 404
    assert apps.list_namespaced_deployment(AGENTS_NS).items == []
    assert apps.list_namespaced_deployment("jobset-system").items == []
    for system_ns in ("kube-system", "kube-public", "kube-node-lease"):
        assert EXEMPT not in labels(core, system_ns), system_ns
    if any(w["kind"] == "JobSet" for w in plan["workloads"]):
        assert ext.read_custom_resource_definition(JOBSET_CRD).metadata.name == JOBSET_CRD
