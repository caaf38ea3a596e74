"""`verify --smoke` against the wire-level fake API server (fake_apiserver.py).

The fake plays the JobSet controller and the slice: when the smoke JobSet is POSTed it
creates the pods that controller would (``replicas`` jobs x ``parallelism`` pods, labelled
with the JobSet name and job index, the way JobSet labels them) and gives each pod the log
line the smoke program prints, with the devices that pod's ``google.com/tpu`` request
holds. So the JobSet verify sends decides what the "cluster" answers: a JobSet for one
slice of a multislice, or too few pods, fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_apiserver import FakeApiServer

from mldiag_provision.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
MULTISLICE = ROOT / "recipes" / "tpu-v6e-4x4-multislice-autopilot.yaml"
NS = "training"
JOBSETS = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets"
PODS = f"/api/v1/namespaces/{NS}/pods"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
CRD = ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
       "mldiagnosticsconnections.diagon.gke.io")
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def cluster_objects() -> dict[str, object]:
    """A GKE Autopilot cluster with the managed ML Diagnostics add-on, for the v6e example."""
    return {
        f"/api/v1/namespaces/{NS}": {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": NS, "labels": {"managed-mldiagnostics-gke": "true"}}},
        f"/api/v1/namespaces/{NS}/serviceaccounts/trainer": {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {
                "name": "trainer", "namespace": NS, "annotations": {
                    "iam.gke.io/gcp-service-account":
                        "tpu-v6e-multislice-workload@my-ml-project.iam.gserviceaccount.com"}}},
        CRD: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
              "metadata": {"name": "mldiagnosticsconnections.diagon.gke.io"},
              "spec": {"group": "diagon.gke.io", "scope": "Namespaced",
                       "names": {"plural": "mldiagnosticsconnections",
                                 "kind": "MLDiagnosticsConnection"},
                       "versions": [{"name": "v1alpha1", "served": True, "storage": True}]},
              "status": {"conditions": [{"type": "Established", "status": "True"}]}},
        WEBHOOKS: {"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "MutatingWebhookConfigurationList", "metadata": {}, "items": [{
                       "metadata": {"name": "mldiagnostics-injection-webhook"},
                       "webhooks": [{"name": "diagon.gke.io", "admissionReviewVersions": ["v1"],
                                     "sideEffects": "None", "clientConfig": {
                                         "caBundle": "LS0tLS1CRUdJTg==",
                                         "service": {"name": "s", "namespace": "x"}}}]}]},
        "/apis/apps/v1/namespaces/gke-managed-mldiagnostics/deployments": {
            "kind": "DeploymentList", "metadata": {}, "items": []},
        "/api/v1/nodes": {"kind": "NodeList", "metadata": {}, "items": []},
        JOBSETS: {"kind": "JobSetList", "metadata": {}, "items": []},
        CONFIGMAPS: {"kind": "ConfigMapList", "metadata": {}, "items": []},
        PODS: {"kind": "PodList", "metadata": {}, "items": []},
    }


def play_jobset_controller(api: FakeApiServer, short: dict[tuple[int, int], int]) -> None:
    """On a JobSet POST, create its pods and their smoke logs. ``short``: (job index, pod
    index) -> devices that pod reports instead of its chips (a slice that lost chips)."""

    def on_post(path: str, body: dict) -> None:
        if path != JOBSETS:
            return
        name = body["metadata"]["name"]
        [rjob] = body["spec"]["replicatedJobs"]
        job = rjob["template"]["spec"]
        container = job["template"]["spec"]["containers"][0]
        chips = int(container["resources"]["limits"]["google.com/tpu"])
        script = container["args"][0]
        devices = int(script.split("--devices ")[1].split()[0])
        mesh = script.split("--mesh ")[1].split()[0]
        n = devices
        for j in range(rjob["replicas"]):
            for i in range(job["parallelism"]):
                pod = f"{name}-{rjob['name']}-{j}-{i}"
                api.objects[PODS]["items"].append({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pod, "namespace": NS, "labels": {
                        "jobset.sigs.k8s.io/jobset-name": name,
                        "jobset.sigs.k8s.io/job-index": str(j)}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                    "status": {"phase": "Succeeded"}})
                local = short.get((j, i), chips)
                report = {"ok": True, "errors": [], "devices": n, "local_devices": local,
                          "processes": rjob["replicas"] * job["parallelism"],
                          "slice_index": j, "gke_metadata": True, "mesh": mesh,
                          "collective": {"op": "psum over dcn, x, y", "got": n * (n + 1) / 2,
                                         "expected": n * (n + 1) / 2, "ok": True},
                          "sdk": "registered"}
                api.logs[f"{PODS}/{pod}/log"] = ("Collecting jax\n"
                                                 f"MLDIAG_SMOKE {json.dumps(report)}\n")

    api.on_post = on_post


def run_smoke(tmp_path: Path, capsys: pytest.CaptureFixture,
              short: dict[tuple[int, int], int] | None = None) -> tuple[int, dict, list, str]:
    with FakeApiServer() as api:
        api.objects.update(cluster_objects())
        play_jobset_controller(api, short or {})
        code = main(["verify", str(MULTISLICE), "--kubeconfig",
                     str(api.kubeconfig(tmp_path / "kc")), "--smoke", "--smoke-timeout", "20",
                     "-O", "json"])
        requests = list(api.requests)
    captured = capsys.readouterr()
    return code, json.loads(captured.out), requests, captured.err


def test_multislice_smoke_passes_and_cleans_up(tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    code, report, requests, err = run_smoke(tmp_path, capsys)
    checks = {c["check"]: c for c in report["checks"]}
    assert code == 0, report
    smoke = checks["smoke:trillium"]
    assert smoke["status"] == "PASS"
    assert "32 devices (16 + 16)" in smoke["message"]
    assert "gs://my-ml-project-tpu-v6e-multislice-profiles/mldiag-smoke/trillium" in (
        smoke["message"])
    posts = {path: body for method, path, body in requests if method == "POST"}
    cm = posts[CONFIGMAPS]
    program = (ROOT / "provisioner/mldiag_provision/smoke/program.py").read_text()
    assert cm["data"]["program.py"] == program  # the shipped program, byte for byte
    body = posts[JOBSETS]
    [rjob] = body["spec"]["replicatedJobs"]
    assert rjob["replicas"] == 2  # both slices of the multislice, over DCN
    job = rjob["template"]["spec"]
    assert job["parallelism"] == job["completions"] == 4
    container = job["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"google.com/tpu": 4}
    assert "--devices 32" in container["args"][0] and "--mesh dcn=2,x=4,y=4" in (
        container["args"][0])
    env = {e["name"] for e in container["env"]}
    assert {"MEGASCALE_NUM_SLICES", "MEGASCALE_SLICE_ID"} <= env
    assert body["metadata"]["labels"]["managed-mldiagnostics-gke"] == "true"
    deleted = {path for method, path, _ in requests if method == "DELETE"}
    assert f"{JOBSETS}/mldiag-smoke-trillium" in deleted
    assert f"{CONFIGMAPS}/mldiag-smoke-program" in deleted
    assert "smoke: pods finished: trillium 8/8" in err  # progress on stderr


def test_a_slice_with_fewer_devices_fails_naming_it(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    code, report, _, _ = run_smoke(tmp_path, capsys, short={(1, 2): 2})
    smoke = {c["check"]: c for c in report["checks"]}["smoke:trillium"]
    assert code == 1
    assert smoke["status"] == "FAIL"
    assert "slice trillium[1] (2 of 2) reports 14 of 16 devices" in smoke["message"]
    assert "job-index=1" in smoke["hint"]


def test_too_few_pods_time_out_with_a_bounded_wait(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    with FakeApiServer() as api:
        api.objects.update(cluster_objects())
        code = main(["verify", str(MULTISLICE), "--kubeconfig",
                     str(api.kubeconfig(tmp_path / "kc")), "--smoke", "--smoke-timeout", "0",
                     "-O", "json"])
    report = json.loads(capsys.readouterr().out)
    smoke = {c["check"]: c for c in report["checks"]}["smoke:trillium"]
    assert code == 1 and smoke["status"] == "FAIL"
    assert "0 of 8 pods finished in 0 s" in smoke["message"]
