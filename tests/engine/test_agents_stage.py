"""The second stage (``agents/``) of every GKE example recipe, applied with the real terraform
binary against the offline stand-ins: hashicorp/google(-beta) creates the cluster in the
stand-in cloud, the stand-in Kubernetes API server (mldiag_provision/sandbox/apiserver.py)
plays that
cluster, and the stand-in hashicorp/kubernetes and hashicorp/helm providers act on it.

After ``terraform apply`` in agents/ the cluster holds the labelled workload namespace, the
annotated KSA, the agents (manual strategy) and the JobSet controller with its CRD when a
workload is a JobSet; a re-plan shows no change; ``verify`` passes; ``terraform destroy``
removes them again. On Autopilot, GKE Warden refuses writes to managed namespaces: the
stage must not label kube-system there.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.conftest import offline_recipe
from stack_support import RECIPES

pytestmark = pytest.mark.terraform

GKE_RECIPES = [r for r in RECIPES
               if yaml.safe_load(r.read_text())["spec"]["orchestrator"]["type"] != "slurm"]
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


def _apply_first_stage(cli, recipe: Path, work: Path, cluster) -> dict:
    if yaml.safe_load(recipe.read_text())["spec"]["orchestrator"]["type"] == "existing-kubernetes":
        cluster.seed_existing_cluster(recipe)
    code, out, err = cli("apply", str(recipe), "-o", str(work), "--auto-approve",
                         "--stage", "project")
    assert code == 0, out + err
    return json.loads((work / ".mldiag" / "plan.json").read_text())


def _k8s(cluster, tmp_path: Path):
    from kubernetes import client, config

    api = config.new_client_from_config(str(cluster.api.kubeconfig(tmp_path / "kubeconfig")))
    return (client.CoreV1Api(api), client.AppsV1Api(api), client.ApiextensionsV1Api(api),
            client.AdmissionregistrationV1Api(api))


def _labels(core, name: str) -> dict:
    return core.read_namespace(name).metadata.labels or {}


@pytest.mark.parametrize("recipe", GKE_RECIPES, ids=[r.stem for r in GKE_RECIPES])
def test_agents_stage_applies_verifies_and_destroys(recipe: Path, tmp_path: Path,
                                                    offline_cluster, cli) -> None:
    if offline_cluster is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    from kubernetes.client.rest import ApiException

    r = offline_recipe(recipe, tmp_path / "recipe.yaml")
    work = tmp_path / "work"
    plan = _apply_first_stage(cli, r, work, offline_cluster)
    agents = plan["agents"]
    core, apps, ext, admission = _k8s(offline_cluster, tmp_path)

    terraform(work / "agents", "init")
    terraform(work / "agents", "apply", "-auto-approve")

    ns = agents["namespace"]
    labels = _labels(core, ns)
    for k, v in agents["namespace_labels"].items():
        assert labels.get(k) == v, (ns, labels)
    assert labels.get("managed-mldiagnostics-gke") == "true"
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
            assert _labels(core, system_ns).get(EXEMPT) == "true", system_ns
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

    # What terraform wrote is what it reads back: no drift.
    proc = terraform(work / "agents", "plan", "-detailed-exitcode", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # verify sees the stage's work (and the nodes of the slices on Standard clusters).
    code, out, err = cli("verify", str(r), "--kubeconfig", str(tmp_path / "kubeconfig"),
                         "-O", "json")
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

    terraform(work / "agents", "destroy", "-auto-approve")
    with pytest.raises(ApiException) as exc:
        core.read_namespace(ns)
    assert exc.value.status == 404
    assert apps.list_namespaced_deployment(AGENTS_NS).items == []
    assert apps.list_namespaced_deployment("jobset-system").items == []
    for system_ns in ("kube-system", "kube-public", "kube-node-lease"):
        assert EXEMPT not in _labels(core, system_ns), system_ns
    if wants_jobset:  # helm uninstall keeps the CRDs of a chart's crds/ directory
        assert ext.read_custom_resource_definition(JOBSET_CRD).metadata.name == JOBSET_CRD


AUTOPILOT = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")
OLD_EXEMPT_LINE = ('  exempt_existing_namespaces  = ["kube-system", "kube-public", '
                   '"kube-node-lease"]')


def _autopilot_manual(tmp_path: Path) -> Path:
    """An Autopilot recipe whose agents are installed by hand (e.g. a cluster pinned below
    the managed add-on's minimum)."""
    r = offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml")
    doc = yaml.safe_load(r.read_text())
    doc["spec"]["diagnostics"]["agents"] = "manual"
    r.write_text(yaml.safe_dump(doc, sort_keys=False))
    return r


def test_autopilot_manual_agents_leave_managed_namespaces_alone(tmp_path: Path,
                                                                offline_cluster, cli) -> None:
    if offline_cluster is None:
        return
    r = _autopilot_manual(tmp_path)
    work = tmp_path / "work"
    plan = _apply_first_stage(cli, r, work, offline_cluster)
    assert plan["agents"]["strategy"] == "manual"
    assert plan["agents"]["exempt_existing_namespaces"] == []
    assert any("Autopilot-managed namespaces are not labelled" in x
               for x in plan["agents"]["reasons"])
    main_tf = (work / "agents" / "main.tf").read_text()
    assert "exempt_existing_namespaces  = []" in main_tf
    core, apps, _, admission = _k8s(offline_cluster, tmp_path)

    terraform(work / "agents", "init")
    terraform(work / "agents", "apply", "-auto-approve")
    assert EXEMPT not in _labels(core, "kube-system")
    assert {d.metadata.name for d in apps.list_namespaced_deployment(AGENTS_NS).items} == {
        "mldiagnostics-injection-webhook", "mldiagnostics-connection-operator"}
    # failurePolicy Fail stays safe for the system namespaces: Autopilot added its exclusion.
    hook = admission.read_mutating_webhook_configuration(
        "mldiagnostics-injection-webhook-mutating-webhook-config").webhooks[0]
    assert hook.failure_policy == "Fail"
    assert {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
            "values": ["kube-system", "gke-gmp-system", "gke-managed-cim"]} in [
        e.to_dict() for e in hook.namespace_selector.match_expressions]
    code, out, err = cli("verify", str(r), "--kubeconfig", str(tmp_path / "kubeconfig"))
    assert code == 0, out + err
    terraform(work / "agents", "destroy", "-auto-approve")


def test_autopilot_refuses_the_old_exemption_labels(tmp_path: Path, offline_cluster,
                                                    cli) -> None:
    """What the stage rendered before: it labelled kube-system & co. on Autopilot too, and
    GKE Warden (the stand-in API server) refuses that, so the stage never completed."""
    if offline_cluster is None:
        return
    r = _autopilot_manual(tmp_path)
    work = tmp_path / "work"
    _apply_first_stage(cli, r, work, offline_cluster)
    main_tf = work / "agents" / "main.tf"
    text = main_tf.read_text()
    main_tf.write_text(text.replace("  exempt_existing_namespaces  = []", OLD_EXEMPT_LINE))
    assert OLD_EXEMPT_LINE in main_tf.read_text()
    terraform(work / "agents", "init")
    proc = terraform(work / "agents", "apply", "-auto-approve", check=False)
    assert proc.returncode == 1, proc.stdout
    assert ('namespaces "kube-system" is forbidden: User "standin-user@example.com" cannot '
            'patch resource "namespaces" in API group "" in the namespace "kube-system": GKE '
            'Warden authz [denied by managed-namespaces-limitation]: the namespace '
            '"kube-system" is managed and the request\'s verb "patch" is denied'
            ) in " ".join(proc.stderr.split()), proc.stderr
    # the webhook, which depends on the exemptions, was never installed
    core, apps, _, _ = _k8s(offline_cluster, tmp_path)
    assert apps.list_namespaced_deployment(AGENTS_NS).items == [] or all(
        d.metadata.name != "mldiagnostics-injection-webhook"
        for d in apps.list_namespaced_deployment(AGENTS_NS).items)
    assert EXEMPT not in _labels(core, "kube-system")
