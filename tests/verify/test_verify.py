"""`mldiag-provision verify` against a wire-level fake API server (see fake_apiserver.py).

A healthy cluster for the manual-agents example passes; a cluster missing each piece (label,
annotation, CA bundle, agents not ready, CRD, wrong node labels) fails exactly that check with
a hint. A test against a real cluster runs when KUBECONFIG points at one.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from fake_apiserver import FakeApiServer

from mldiag_provision.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml"
CRD = ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
       "mldiagnosticsconnections.diagon.gke.io")
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
DEPLOYMENTS = "/apis/apps/v1/namespaces/gke-mldiagnostics/deployments"


SERVICE = {"name": "svc", "namespace": "gke-mldiagnostics"}


def _meta(name: str, **extra: object) -> dict:
    return {"name": name, **extra}


def _deployment(name: str, ready: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": _meta(name, namespace="gke-mldiagnostics"),
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}},
            "status": {"replicas": 1, "availableReplicas": ready}}


def _node(i: int, accel: str = "tpu-v5-lite-podslice", chips: str = "4") -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": _meta(f"gke-v5e-{i}", labels={
                "cloud.google.com/gke-tpu-accelerator": accel,
                "cloud.google.com/gke-tpu-topology": "4x4",
                "mldiag-provision/slice": "v5e-16"}),
            "status": {"allocatable": {"google.com/tpu": chips, "cpu": "110"}}}


def healthy() -> dict[str, object]:
    """API objects of a cluster where the manual-agents example is fully set up."""
    return {
        "/api/v1/namespaces/mldiag": {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": _meta("mldiag", labels={"managed-mldiagnostics-gke": "true"})},
        "/api/v1/namespaces/mldiag/serviceaccounts/mldiag-workload": {
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": _meta("mldiag-workload", namespace="mldiag", annotations={
                # the workload Google service account <metadata.name>-workload (issue 25)
                "iam.gke.io/gcp-service-account":
                    "tpu-v5e-manual-agents-workload@my-ml-project.iam.gserviceaccount.com"})},
        DEPLOYMENTS: {"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {},
                      "items": [_deployment("mldiagnostics-injection-webhook", 1),
                                _deployment("mldiagnostics-connection-operator", 1)]},
        CRD: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
              "metadata": _meta("mldiagnosticsconnections.diagon.gke.io"),
              "spec": {"group": "diagon.gke.io", "scope": "Namespaced",
                       "names": {"plural": "mldiagnosticsconnections",
                                 "kind": "MLDiagnosticsConnection"},
                       "versions": [{"name": "v1alpha1", "served": True, "storage": True}]},
              "status": {"conditions": [{"type": "Established", "status": "True"}]}},
        WEBHOOKS: {"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "MutatingWebhookConfigurationList", "metadata": {}, "items": [{
                       "metadata": _meta(
                           "mldiagnostics-injection-webhook-mutating-webhook-config"),
                       "webhooks": [{"name": "diagon.gke.io", "admissionReviewVersions": ["v1"],
                                     "sideEffects": "NoneOnDryRun",
                                     "clientConfig": {"caBundle": "LS0tLS1CRUdJTg==",
                                                      "service": SERVICE}}]}]},
        "/api/v1/nodes": {"apiVersion": "v1", "kind": "NodeList", "metadata": {},
                          "items": [_node(i) for i in range(4)]},
    }


def run_verify(tmp_path: Path, objects: dict[str, object], capsys: pytest.CaptureFixture,
               *extra: str) -> tuple[int, dict]:
    with FakeApiServer() as api:
        api.objects.update(objects)
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        code = main(["verify", str(RECIPE), "--kubeconfig", str(kubeconfig), "-O", "json",
                     *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


def by_check(report: dict) -> dict[str, dict]:
    return {c["check"]: c for c in report["checks"]}


def test_healthy_cluster_passes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, report = run_verify(tmp_path, healthy(), capsys)
    assert code == 0, report
    assert report["strategy"] == "manual"
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert statuses == {"api-server": "PASS", "namespace-label": "PASS", "ksa-annotation": "PASS",
                        "agents-ready": "PASS", "crd-established": "PASS",
                        "webhook-ca-bundle": "PASS", "nodes:v5e-16": "PASS"}


def _broken(mutate) -> dict[str, object]:
    objects = copy.deepcopy(healthy())
    mutate(objects)
    return objects


CASES = {
    "namespace-label": (lambda o: o["/api/v1/namespaces/mldiag"]["metadata"].update(labels={}),
                        "kubectl label namespace mldiag managed-mldiagnostics-gke=true"),
    "ksa-annotation": (lambda o: o["/api/v1/namespaces/mldiag/serviceaccounts/mldiag-workload"]
                       ["metadata"].update(annotations={}), "kubectl annotate serviceaccount"),
    "webhook-ca-bundle": (lambda o: o[WEBHOOKS]["items"][0]["webhooks"][0]["clientConfig"]
                          .pop("caBundle"), "cert-manager"),
    "agents-ready": (lambda o: o[DEPLOYMENTS]["items"][1]["status"].update(availableReplicas=0),
                     "describe deployment mldiagnostics-connection-operator"),
    "crd-established": (lambda o: o.pop(CRD), "connection operator"),
    "nodes:v5e-16": (lambda o: [n["metadata"]["labels"].update(
        {"cloud.google.com/gke-tpu-topology": "2x4"}) for n in o["/api/v1/nodes"]["items"]],
        "accelerator and topology labels"),
}


@pytest.mark.parametrize("check", sorted(CASES))
def test_each_missing_piece_fails_exactly_its_check(check: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    mutate, hint = CASES[check]
    code, report = run_verify(tmp_path, _broken(mutate), capsys)
    assert code == 1
    failed = {c["check"] for c in report["checks"] if c["status"] == "FAIL"}
    assert failed == {check}, report["checks"]
    assert hint in (by_check(report)[check]["hint"] or "")


def test_wrong_allocatable_chips_fail_the_node_check(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    objects = _broken(lambda o: o["/api/v1/nodes"]["items"][0]["status"]["allocatable"].update(
        {"google.com/tpu": "8"}))
    code, report = run_verify(tmp_path, objects, capsys)
    assert code == 1 and "gke-v5e-0" in by_check(report)["nodes:v5e-16"]["message"]


def test_text_output_lists_pass_fail_and_hint(tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    objects = _broken(CASES["ksa-annotation"][0])
    with FakeApiServer() as api:
        api.objects.update(objects)
        code = main(["--no-color", "verify", str(RECIPE), "--kubeconfig",
                     str(api.kubeconfig(tmp_path / "kc"))])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL ksa-annotation" in out and "hint: kubectl annotate" in out
    assert "PASS namespace-label" in out


def test_unreachable_cluster_is_a_failure_not_a_traceback(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    kc = tmp_path / "kc"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "u"}}]}))
    code = main(["verify", str(RECIPE), "--kubeconfig", str(kc), "-O", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    [only_check] = report["checks"]  # one clear failure, not one per check
    assert only_check["check"] == "api-server" and only_check["status"] == "FAIL"
    assert "cannot reach" in only_check["message"]


@pytest.mark.skipif(not os.environ.get("KUBECONFIG"),
                    reason="no KUBECONFIG: the real-cluster verify test needs one (visible skip)")
def test_real_cluster(capsys: pytest.CaptureFixture) -> None:
    recipe = os.environ.get("MLDIAG_VERIFY_RECIPE", str(RECIPE))
    code = main(["verify", recipe, "-O", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and report["checks"]
