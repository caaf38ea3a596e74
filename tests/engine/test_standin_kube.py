"""The stand-in GKE cluster itself (mldiag_provision/sandbox/apiserver.py, gke_cluster.py,
kube_providers.py), through the official Kubernetes Python client over HTTPS: it must behave
like the API server the stages meet, or the agents-stage tests prove nothing.

No terraform here: these run in a second each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

from mldiag_provision.sandbox import schema as sch
from mldiag_provision.sandbox.gke_cluster import (
    AUTOPILOT_WEBHOOK_WARNING,
    find_cluster,
    seed_gke_cluster,
    serve_cloud,
)
from mldiag_provision.sandbox.kube_providers import KubeProvider
from mldiag_provision.sandbox.plugin import Cloud, Provider

TOKEN = "t0ken"


@pytest.fixture
def cloud(tmp_path: Path) -> Path:
    d = tmp_path / "cloud"
    d.mkdir()
    return d


@pytest.fixture
def api(cloud: Path):
    server = serve_cloud(cloud, token=TOKEN)
    yield server
    server.stop()


def _client(api, tmp_path: Path, token: str = TOKEN) -> client.ApiClient:
    kc = api.kubeconfig(tmp_path / f"kubeconfig-{token}")
    doc = json.loads(kc.read_text())
    doc["users"][0]["user"]["token"] = token
    kc.write_text(json.dumps(doc))
    return config.new_client_from_config(str(kc))


def _status(exc: ApiException) -> dict:
    return json.loads(exc.body)


def _seed(cloud: Path, api, **kw) -> None:
    kw.setdefault("node_pools", [
        {"name": "v5e", "machine_type": "ct5lp-hightpu-4t", "node_count": 4,
         "zone": "us-central1-a", "tpu_topology": "4x4",
         "labels": {"mldiag-provision/slice": "v5e"}},
        {"name": "h100", "machine_type": "a3-highgpu-8g", "node_count": 2,
         "gpu_type": "nvidia-h100-80gb", "gpu_count": 8}])
    seed_gke_cluster(cloud, project="p", location="us-central1", name="c", api=api, **kw)


def test_answers_only_while_the_cluster_exists_and_with_the_token(cloud, api, tmp_path):
    version = client.VersionApi(_client(api, tmp_path))
    with pytest.raises(ApiException) as exc:
        version.get_code()
    assert exc.value.status == 503
    assert "the cluster does not answer yet" in _status(exc.value)["message"]
    _seed(cloud, api, version="1.34.1-gke.1000000")
    assert version.get_code().git_version == "v1.34.1-gke.1000000"
    with pytest.raises(ApiException) as exc:
        client.VersionApi(_client(api, tmp_path, "wrong")).get_code()
    assert exc.value.status == 401
    # the cluster is deleted: nothing in it survives
    core = client.CoreV1Api(_client(api, tmp_path))
    core.create_namespace({"metadata": {"name": "team"}})
    for p in cloud.rglob("*.json"):
        p.unlink()
    with pytest.raises(ApiException) as exc:
        core.read_namespace("team")
    assert exc.value.status == 503
    _seed(cloud, api)
    with pytest.raises(ApiException) as exc:
        core.read_namespace("team")
    assert exc.value.status == 404


def test_objects_errors_and_selectors(cloud, api, tmp_path):
    _seed(cloud, api)
    core = client.CoreV1Api(_client(api, tmp_path))
    core.create_namespace({"metadata": {"name": "team", "labels": {"tier": "gold"}}})
    ns = core.read_namespace("team")
    assert ns.metadata.labels == {"tier": "gold", "kubernetes.io/metadata.name": "team"}
    assert core.read_namespaced_service_account("default", "team").metadata.name == "default"
    with pytest.raises(ApiException) as exc:
        core.create_namespace({"metadata": {"name": "team"}})
    assert (exc.value.status, _status(exc.value)["reason"]) == (409, "AlreadyExists")
    assert _status(exc.value)["message"] == 'namespaces "team" already exists'
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("nope", "team")
    assert _status(exc.value)["message"] == 'configmaps "nope" not found'
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("ghost", {"metadata": {"name": "x"}})
    assert _status(exc.value)["message"] == 'namespaces "ghost" not found'
    with pytest.raises(ApiException) as exc:
        core.create_namespace({"metadata": {"name": "x", "labels": {"k": "v" * 64}}})
    assert exc.value.status == 422 and "no more than 63 characters" in exc.value.body
    assert [n.metadata.name for n in core.list_namespace(
        label_selector="tier in (gold,silver)").items] == ["team"]
    assert core.list_namespace(label_selector="tier!=gold,tier").items == []
    with pytest.raises(ApiException) as exc:  # NamespaceLifecycle: immortal namespaces
        core.delete_namespace("kube-system")
    assert exc.value.status == 403
    core.create_namespaced_config_map("team", {"metadata": {"name": "cfg"}})
    core.delete_namespace("team")  # the namespace controller empties it
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("cfg", "team")
    with pytest.raises(ApiException) as exc:  # a kind it does not serve
        client.CustomObjectsApi(_client(api, tmp_path)).list_namespaced_custom_object(
            "example.com", "v1", "default", "widgets")
    assert exc.value.status == 404
    assert _status(exc.value)["message"] == "the server could not find the requested resource"


def test_custom_kinds_follow_their_crd_and_server_side_apply_tracks_owners(cloud, api,
                                                                           tmp_path):
    _seed(cloud, api)
    dyn = dynamic.DynamicClient(_client(api, tmp_path))
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1",
                             kind="CustomResourceDefinition")
    crds.create(body={"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                      "metadata": {"name": "jobsets.jobset.x-k8s.io"},
                      "spec": {"group": "jobset.x-k8s.io", "scope": "Namespaced",
                               "names": {"kind": "JobSet", "plural": "jobsets"},
                               "versions": [{"name": "v1alpha2", "served": True,
                                             "storage": True}]}})
    dyn = dynamic.DynamicClient(_client(api, tmp_path))
    jobsets = dyn.resources.get(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet")
    body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "train", "namespace": "default",
                         "labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1}}
    obj = jobsets.server_side_apply(body=body, field_manager="mldiag", namespace="default")
    assert obj.metadata.managedFields[0].manager == "mldiag"
    other = {**body, "spec": {"replicas": 2},
             "metadata": {"name": "train", "namespace": "default"}}
    with pytest.raises(ApiException) as exc:
        jobsets.server_side_apply(body=other, field_manager="kubectl", namespace="default")
    assert exc.value.status == 409
    assert _status(exc.value)["message"] == (
        'Apply failed with 1 conflict: conflict with "mldiag": .spec.replicas')
    obj = jobsets.server_side_apply(body=other, field_manager="kubectl", namespace="default",
                                    force_conflicts=True)
    assert obj.spec.replicas == 2
    # mldiag stops applying label b: it goes (it owned it alone); a stays
    body["metadata"]["labels"] = {"a": "1"}
    body["spec"] = {"replicas": 2}
    obj = jobsets.server_side_apply(body=body, field_manager="mldiag", namespace="default")
    assert dict(obj.metadata.labels) == {"a": "1"}
    crds.delete(name="jobsets.jobset.x-k8s.io")
    with pytest.raises(ApiException) as exc:
        client.CustomObjectsApi(_client(api, tmp_path)).get_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", "train")
    assert exc.value.status == 404


def test_nodes_come_from_the_node_pools(cloud, api, tmp_path):
    _seed(cloud, api)
    core = client.CoreV1Api(_client(api, tmp_path))
    tpu = core.list_node(label_selector="cloud.google.com/gke-tpu-accelerator="
                                        "tpu-v5-lite-podslice,cloud.google.com/gke-tpu-topology=4x4"
                         ).items
    assert len(tpu) == 4
    assert {n.status.allocatable["google.com/tpu"] for n in tpu} == {"4"}
    assert {n.metadata.labels["mldiag-provision/slice"] for n in tpu} == {"v5e"}
    gpu = core.list_node(label_selector="cloud.google.com/gke-accelerator=nvidia-h100-80gb").items
    assert [n.status.allocatable["nvidia.com/gpu"] for n in gpu] == ["8", "8"]
    with pytest.raises(ApiException) as exc:
        core.patch_node(tpu[0].metadata.name, {"metadata": {"labels": {"x": "y"}}})
    assert exc.value.status == 405


def test_autopilot_warden_and_webhook_selector(cloud, api, tmp_path):
    _seed(cloud, api, autopilot=True, node_pools=[])
    core = client.CoreV1Api(_client(api, tmp_path))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("kube-system", {"metadata": {"name": "x"}})
    assert exc.value.status == 403
    assert _status(exc.value)["message"] == (
        'configmaps is forbidden: User "standin-user@example.com" cannot create resource '
        '"configmaps" in API group "" in the namespace "kube-system": GKE Warden authz '
        '[denied by managed-namespaces-limitation]: the namespace "kube-system" is managed '
        'and the request\'s verb "create" is denied')
    with pytest.raises(ApiException) as exc:
        core.patch_namespace("kube-node-lease", {"metadata": {"labels": {"x": "y"}}})
    assert "GKE Warden authz" in _status(exc.value)["message"]
    assert "gke-gmp-system" in {n.metadata.name for n in core.list_namespace().items}
    core.create_namespaced_config_map("default", {"metadata": {"name": "fine"}})
    admission = client.AdmissionregistrationV1Api(_client(api, tmp_path))
    _, _, headers = admission.create_mutating_webhook_configuration_with_http_info(
        {"metadata": {"name": "hook"}, "webhooks": [{
            "name": "a.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"url": "https://example.com"}}]})
    assert AUTOPILOT_WEBHOOK_WARNING in headers.get("Warning", "")
    sel = admission.read_mutating_webhook_configuration("hook").webhooks[0].namespace_selector
    assert sel.match_expressions[0].values == ["kube-system", "gke-gmp-system",
                                               "gke-managed-cim"]


def test_standard_cluster_lets_kube_system_be_labelled(cloud, api, tmp_path):
    _seed(cloud, api, autopilot=False)
    core = client.CoreV1Api(_client(api, tmp_path))
    core.patch_namespace("kube-system", {"metadata": {"labels": {"x": "y"}}})
    assert core.read_namespace("kube-system").metadata.labels["x"] == "y"


def test_managed_addon_shows_its_crd_and_webhook(cloud, api, tmp_path):
    _seed(cloud, api, managed_ml_diagnostics=True)
    ext = client.ApiextensionsV1Api(_client(api, tmp_path))
    crd = ext.read_custom_resource_definition("mldiagnosticsconnections.diagon.gke.io")
    assert any(c.type == "Established" for c in crd.status.conditions)
    hooks = client.AdmissionregistrationV1Api(
        _client(api, tmp_path)).list_mutating_webhook_configuration().items
    assert [h.webhooks[0].client_config.ca_bundle is not None for h in hooks
            if "mldiagnostics" in h.metadata.name] == [True]
    _seed(cloud, api, managed_ml_diagnostics=False)  # the add-on is turned off
    with pytest.raises(ApiException):
        ext.read_custom_resource_definition("mldiagnosticsconnections.diagon.gke.io")


def _helm(cloud: Path, api, tmp_path: Path) -> KubeProvider:
    p = KubeProvider(sch.load_provider("helm"), Cloud(cloud), "helm")
    p.config = {"kubernetes": {"host": api.url, "token": TOKEN,
                               "cluster_ca_certificate": api.ca_pem.decode()}}
    return p


def _release(name: str, chart: str, repository: str, namespace: str,
             values: dict[str, str] | None = None) -> dict:
    return {"name": name, "chart": chart, "repository": repository, "version": "1.0.0",
            "namespace": namespace, "create_namespace": True, "wait": True, "timeout": 60,
            "set": [{"name": k, "value": v} for k, v in (values or {}).items()]}


def test_helm_stand_in_installs_refuses_and_uninstalls_like_helm(cloud, api, tmp_path):
    _seed(cloud, api, autopilot=True, node_pools=[])
    helm = _helm(cloud, api, tmp_path)
    oci = "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm"
    state, err = helm.apply("helm_release", None, _release("x", "no-such-chart", oci, "ns"))
    assert err == ('could not download chart: failed to perform "FetchReference" on source: '
                   'us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm/'
                   'no-such-chart:1.0.0: not found')
    # the webhook chart needs cert-manager's CRDs (its Issuer and Certificate)
    state, err = helm.apply("helm_release", None, _release(
        "mldiagnostics-injection-webhook", "mldiagnostics-injection-webhook", oci, "agents"))
    assert state is None and 'no matches for kind "Issuer" in version "cert-manager.io/v1"' in err
    assert "ensure CRDs are installed first" in err
    # cert-manager's default leader-election namespace is kube-system: Autopilot refuses it
    jetstack = "https://charts.jetstack.io"
    state, err = helm.apply("helm_release", None, _release(
        "cert-manager", "cert-manager", jetstack, "cert-manager", {"installCRDs": "true"}))
    assert state is None and "GKE Warden authz" in err and '"kube-system"' in err
    core = client.CoreV1Api(_client(api, tmp_path))
    assert client.AppsV1Api(_client(api, tmp_path)).list_namespaced_deployment(
        "cert-manager").items == []  # nothing half-installed
    cm, err = helm.apply("helm_release", None, _release(
        "cert-manager", "cert-manager", jetstack, "cert-manager",
        {"installCRDs": "true", "global.leaderElection.namespace": "cert-manager"}))
    assert err is None and cm["status"] == "deployed" and cm["metadata"][0]["revision"] == 1
    secret = core.read_namespaced_secret("sh.helm.release.v1.cert-manager.v1", "cert-manager")
    assert secret.type == "helm.sh/release.v1" and secret.metadata.labels["owner"] == "helm"
    wh, err = helm.apply("helm_release", None, _release(
        "mldiagnostics-injection-webhook", "mldiagnostics-injection-webhook", oci, "agents"))
    assert err is None
    admission = client.AdmissionregistrationV1Api(_client(api, tmp_path))
    hook = admission.read_mutating_webhook_configuration(
        "mldiagnostics-injection-webhook-mutating-webhook-config").webhooks[0]
    assert hook.client_config.ca_bundle  # cert-manager's cainjector filled it
    js, err = helm.apply("helm_release", None, _release(
        "jobset", "jobset", "oci://registry.k8s.io/jobset/charts", "jobset-system"))
    assert err is None
    ext = client.ApiextensionsV1Api(_client(api, tmp_path))
    assert ext.read_custom_resource_definition("jobsets.jobset.x-k8s.io")
    assert helm.read("helm_release", js) == js
    # uninstall: templates go, crds/ stay; cert-manager's CRDs are templates and go too
    assert helm.apply("helm_release", js, None) == (None, None)
    assert helm.apply("helm_release", wh, None) == (None, None)
    assert helm.apply("helm_release", cm, None) == (None, None)
    assert helm.read("helm_release", js) is None
    apps = client.AppsV1Api(_client(api, tmp_path))
    assert apps.list_namespaced_deployment("jobset-system").items == []
    assert ext.read_custom_resource_definition("jobsets.jobset.x-k8s.io")
    with pytest.raises(ApiException):
        ext.read_custom_resource_definition("certificates.cert-manager.io")


def test_google_data_source_reads_the_stored_cluster(cloud, api):
    google = Provider(sch.load_provider("google"), Cloud(cloud))
    google.config = {"project": "p", "region": "us-central1"}
    with pytest.raises(LookupError) as exc:
        google.read_data("google_container_cluster", {"name": "c", "location": "us-central1"})
    assert str(exc.value) == "projects/p/locations/us-central1/clusters/c not found"
    _seed(cloud, api)
    got = google.read_data("google_container_cluster", {"name": "c", "location": "us-central1"})
    assert got["endpoint"] == api.endpoint
    assert got["master_auth"][0]["cluster_ca_certificate"]
    assert find_cluster(cloud, name="c")["enable_autopilot"] is False
