"""`verify --smoke` against the stand-in API server (mldiag_provision/sandbox/apiserver.py): HTTPS,
bearer token, real validation, the JobSet kind served only once its CRD exists, ConfigMaps
and Pods stored and deleted like a cluster does.

There is no JobSet controller or kubelet in the stand-in, so :func:`play_slices` plays them
from a thread: for each smoke JobSet it finds, it creates the pods JobSet would create
(``replicas`` x ``parallelism``, named and labelled as JobSet names them), marks them
Succeeded, and writes as their log what the smoke program prints on such a slice, with the
devices each pod's TPU request holds (or fewer, for the pods given in ``short``).
"""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes import config as kube_config

from mldiag_provision.cli.app import main
from mldiag_provision.sandbox.apiserver import ApiServer, ClusterView

ROOT = Path(__file__).resolve().parents[2]
MULTISLICE = ROOT / "recipes" / "tpu-v6e-4x4-multislice-autopilot.yaml"
NS = "training"


def _seed(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    ext = client.ApiextensionsV1Api(api_client)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": NS, "labels": {"managed-mldiagnostics-gke": "true"}}})
    core.create_namespaced_service_account(NS, {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {
            "name": "trainer", "namespace": NS, "annotations": {
                "iam.gke.io/gcp-service-account":
                    "tpu-v6e-multislice-workload@my-ml-project.iam.gserviceaccount.com"}}})
    for group, kind, plural, version in (
            ("jobset.x-k8s.io", "JobSet", "jobsets", "v1alpha2"),
            ("diagon.gke.io", "MLDiagnosticsConnection", "mldiagnosticsconnections",
             "v1alpha1")):
        ext.create_custom_resource_definition({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural},
                     "versions": [{"name": version, "served": True, "storage": True}]}})
    client.AdmissionregistrationV1Api(api_client).create_mutating_webhook_configuration({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mldiagnostics-injection-webhook"},
        "webhooks": [{"name": "diagon.gke.io", "admissionReviewVersions": ["v1"],
                      "sideEffects": "None", "clientConfig": {
                          "caBundle": "LS0tLS1CRUdJTg==",
                          "service": {"name": "s", "namespace": "gke-managed-mldiagnostics"}}}]})


def play_slices(api: ApiServer, api_client: client.ApiClient, stop: threading.Event,
                short: dict[tuple[int, int], int]) -> None:
    core = client.CoreV1Api(api_client)
    done: set[str] = set()
    while not stop.wait(0.05):
        for js in api.objects("JobSet", NS):
            name = js["metadata"]["name"]
            if name in done:
                continue
            done.add(name)
            [rjob] = js["spec"]["replicatedJobs"]
            job = rjob["template"]["spec"]
            container = job["template"]["spec"]["containers"][0]
            chips = int(container["resources"]["limits"]["google.com/tpu"])
            script = container["args"][0]
            devices = int(script.split("--devices ")[1].split()[0])
            spec = copy.deepcopy(job["template"]["spec"])
            for c in spec["containers"]:  # the typed client wants quantities as strings
                c["resources"] = {k: {r: str(q) for r, q in v.items()}
                                  for k, v in c["resources"].items()}
            for j in range(rjob["replicas"]):
                for i in range(job["parallelism"]):
                    pod = f"{name}-{rjob['name']}-{j}-{i}-x7k2q"
                    core.create_namespaced_pod(NS, {
                        "apiVersion": "v1", "kind": "Pod", "metadata": {
                            "name": pod, "namespace": NS, "labels": {
                                "jobset.sigs.k8s.io/jobset-name": name,
                                "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                                "jobset.sigs.k8s.io/job-index": str(j)}},
                        "spec": spec})
                    n = devices
                    report = {"ok": True, "errors": [], "devices": n,
                              "local_devices": short.get((j, i), chips), "slice_index": j,
                              "gke_metadata": True, "sdk": "sdk not installed",
                              "collective": {"op": "psum over dcn, x, y", "ok": True,
                                             "got": n * (n + 1) / 2,
                                             "expected": n * (n + 1) / 2}}
                    api.store.pod_logs[(NS, pod)] = f"MLDIAG_SMOKE {json.dumps(report)}\n"
                    core.patch_namespaced_pod_status(pod, NS, {"status": {"phase":
                                                                          "Succeeded"}})


def run(tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
        short: dict[tuple[int, int], int]) -> tuple[int, dict, ApiServer]:
    monkeypatch.setenv("MLDIAG_SMOKE_POLL_S", "0.1")
    with ApiServer(ClusterView(), token="standin-token") as api:
        kc = api.kubeconfig(tmp_path / "kc")
        api_client = kube_config.new_client_from_config(config_file=str(kc))
        _seed(api_client)
        stop = threading.Event()
        player = threading.Thread(target=play_slices, args=(api, api_client, stop, short),
                                  daemon=True)
        player.start()
        try:
            code = main(["verify", str(MULTISLICE), "--kubeconfig", str(kc), "--smoke",
                         "--smoke-timeout", "30", "-O", "json"])
        finally:
            stop.set()
            player.join(5)
        left = (api.objects("JobSet", NS), api.objects("ConfigMap", NS))
    report = json.loads(capsys.readouterr().out)
    report["left"] = left
    return code, report, api


def test_multislice_smoke_passes_on_the_standin(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    code, report, _ = run(tmp_path, capsys, monkeypatch, {})
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["smoke:trillium"]["status"] == "PASS", checks["smoke:trillium"]
    assert "8 pod(s): 32 devices (16 + 16)" in checks["smoke:trillium"]["message"]
    assert code == 0, report["checks"]
    jobsets, configmaps = report["left"]
    assert jobsets == [] and configmaps == []  # cleaned up


def test_one_short_slice_fails_naming_it_on_the_standin(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    code, report, _ = run(tmp_path, capsys, monkeypatch, {(0, 0): 3})
    smoke = {c["check"]: c for c in report["checks"]}["smoke:trillium"]
    assert code == 1 and smoke["status"] == "FAIL"
    assert smoke["message"] == "slice trillium[0] (1 of 2) reports 15 of 16 devices"
    assert report["left"] == ([], [])
