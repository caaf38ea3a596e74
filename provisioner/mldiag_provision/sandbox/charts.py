"""What the stand-in hashicorp/helm provider "installs" (sandbox: a wire-level double of
Google Cloud): per chart,
the Kubernetes objects the real chart renders, reduced to the ones that matter to the
in-cluster stage and to ``verify`` (CRDs, namespaces' workloads, webhooks, RBAC in the
namespaces it writes to). The stand-in creates them in the stand-in API server with the
same names, so Autopilot refusals, missing CRDs and CA injection behave as on a cluster.

A chart that is not in :data:`CHARTS`, or asked for from another repository, fails as
``helm install`` does when it cannot find a chart. Any version is accepted (the stand-in
cannot know which versions a registry holds); the objects do not depend on it.

Sources (chart templates; names follow each chart's ``fullname`` helper):
  * cert-manager: cert-manager/cert-manager ``deploy/charts/cert-manager/templates``
    (deployment.yaml, cainjector-deployment.yaml, webhook-deployment.yaml,
    webhook-mutating-webhook.yaml, webhook-validating-webhook.yaml, rbac.yaml: the
    leader-election Roles live in ``global.leaderElection.namespace``, default
    ``kube-system``, cert-manager/cert-manager#3713; CRDs only with ``installCRDs=true``
    (v1.13) / ``crds.enabled=true``);
  * mldiagnostics-injection-webhook, mldiagnostics-connection-operator:
    GoogleCloudPlatform/kubernetes-engine-samples ``ai-ml/mldiagnostics-webhook-and-operator``
    (injection-webhook/chart/templates/{cert,deployment,diagon-webhook}.yaml: a cert-manager
    Issuer and Certificate, the webhook Deployment and Service, a MutatingWebhookConfiguration
    with ``failurePolicy: Fail``, ``namespaceSelector`` diagon-webhook-exempt NotIn [true]
    and ``cert-manager.io/inject-ca-from``; connection-operator/chart/templates/
    {deployment,mldiagnosticsconnection-crd,leader-election-rbac}.yaml);
  * jobset: kubernetes-sigs/jobset ``charts/jobset`` (crds/ holds the JobSet CRD, which
    ``helm uninstall`` keeps; templates/controller/deployment.yaml names the Deployment
    ``<fullname>-controller``; templates/webhook/*.yaml the webhook configurations, whose CA
    bundle the controller's internal certificate manager fills);
  * kueue: kubernetes-sigs/kueue ``charts/kueue`` at v0.19.2 (templates/crd/: the
    kueue.x-k8s.io CRDs, templates, so ``helm uninstall`` deletes them; served v1beta1 and
    v1beta2; templates/manager/manager.yaml names the Deployment
    ``<fullname>-controller-manager``; templates/webhook/manifests.yaml the
    ``<fullname>-webhook-service``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JETSTACK = "https://charts.jetstack.io"
MLDIAG_OCI = "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm"
JOBSET_OCI = "oci://registry.k8s.io/jobset/charts"
KUEUE_OCI = "oci://registry.k8s.io/kueue/charts"
# kind -> (plural, namespaced) of the Kueue CRDs a queued stack uses (and Workload, which
# Kueue creates per queued Job/JobSet)
KUEUE_KINDS = {"ResourceFlavor": ("resourceflavors", False),
               "ClusterQueue": ("clusterqueues", False),
               "LocalQueue": ("localqueues", True),
               "AdmissionCheck": ("admissionchecks", False),
               "ProvisioningRequestConfig": ("provisioningrequestconfigs", False),
               "Workload": ("workloads", True)}
# The CA bundle a chart's own certificate manager fills in (a placeholder, not a key).
SELF_SIGNED_CA = base64.b64encode(b"stand-in chart-managed webhook CA").decode()


@dataclass
class Rendered:
    crds: list[dict[str, Any]] = field(default_factory=list)  # crds/ directory: kept on uninstall
    objects: list[dict[str, Any]] = field(default_factory=list)  # templates
    notes: str = ""
    app_version: str = ""


@dataclass(frozen=True)
class Chart:
    name: str
    repositories: tuple[str, ...]
    render: Callable[[str, str, dict[str, str]], Rendered]


def fullname(release: str, chart: str) -> str:
    """Helm's conventional ``<chart>.fullname``: the release name when it contains the chart
    name, else ``<release>-<chart>`` (63 characters at most)."""
    name = release if chart in release else f"{release}-{chart}"
    return name[:63].rstrip("-")


def _meta(name: str, namespace: str | None = None, **extra: object) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **extra}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _sa(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, ns)}


def _deployment(name: str, ns: str, app: str, image: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, ns),
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}},
                                  "spec": {"serviceAccountName": name,
                                           "containers": [{"name": app, "image": image}]}}}}


def _service(name: str, ns: str, app: str, port: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, ns),
            "spec": {"selector": {"app": app}, "ports": [{"port": port, "protocol": "TCP"}]}}


def _role(name: str, ns: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": _meta(name, ns), "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": _meta(name, ns),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
             "subjects": [{"kind": "ServiceAccount", "name": name.split(":")[0],
                           "namespace": ns}]}]


LEASES = [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
           "verbs": ["get", "create", "update", "patch"]}]


def _crd(group: str, kind: str, plural: str, versions: list[str], namespaced: bool = True,
         short: list[str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": _meta(f"{plural}.{group}"),
            "spec": {"group": group, "scope": "Namespaced" if namespaced else "Cluster",
                     "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural,
                               "singular": kind.lower(), **({"shortNames": short}
                                                            if short else {})},
                     "versions": [{"name": v, "served": True, "storage": i == 0,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}},
                                   "subresources": {"status": {}}}
                                  for i, v in enumerate(versions)]}}


def _truthy(values: dict[str, str], *keys: str) -> bool:
    return any(str(values.get(k, "")).lower() == "true" for k in keys)


def render_cert_manager(release: str, ns: str, values: dict[str, str]) -> Rendered:
    fn = fullname(release, "cert-manager")
    leader_ns = values.get("global.leaderElection.namespace", "kube-system")
    out = Rendered(app_version="v1.13.0", notes="cert-manager has been deployed successfully!")
    if _truthy(values, "installCRDs", "crds.enabled"):
        out.objects += [
            _crd("cert-manager.io", "Certificate", "certificates", ["v1"], short=["cert"]),
            _crd("cert-manager.io", "CertificateRequest", "certificaterequests", ["v1"],
                 short=["cr"]),
            _crd("cert-manager.io", "Issuer", "issuers", ["v1"]),
            _crd("cert-manager.io", "ClusterIssuer", "clusterissuers", ["v1"], False),
            _crd("acme.cert-manager.io", "Order", "orders", ["v1"]),
            _crd("acme.cert-manager.io", "Challenge", "challenges", ["v1"]),
        ]
    for suffix in ("", "-cainjector", "-webhook"):
        out.objects.append(_sa(f"{fn}{suffix}", ns))
    out.objects += _role(f"{fn}:leaderelection", leader_ns, LEASES)
    out.objects += _role(f"{fn}-cainjector:leaderelection", leader_ns, LEASES)
    out.objects += [
        _service(fn, ns, "cert-manager", 9402),
        _service(f"{fn}-webhook", ns, "webhook", 443),
        _deployment(fn, ns, "cert-manager", "quay.io/jetstack/cert-manager-controller:v1.13.0"),
        _deployment(f"{fn}-cainjector", ns, "cainjector",
                    "quay.io/jetstack/cert-manager-cainjector:v1.13.0"),
        _deployment(f"{fn}-webhook", ns, "webhook",
                    "quay.io/jetstack/cert-manager-webhook:v1.13.0"),
    ]
    for kind, prefix in (("MutatingWebhookConfiguration", "mutate"),
                         ("ValidatingWebhookConfiguration", "validate")):
        out.objects.append({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": _meta(f"{fn}-webhook", annotations={
                "cert-manager.io/inject-ca-from-secret": f"{ns}/{fn}-webhook-ca"}),
            "webhooks": [{"name": "webhook.cert-manager.io", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None", "failurePolicy": "Fail",
                          "clientConfig": {"service": {"name": f"{fn}-webhook", "namespace": ns,
                                                       "path": f"/{prefix}"},
                                           "caBundle": SELF_SIGNED_CA},
                          "rules": [{"apiGroups": ["cert-manager.io", "acme.cert-manager.io"],
                                     "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                     "resources": ["*/*"]}]}]})
    return out


def render_injection_webhook(release: str, ns: str, values: dict[str, str]) -> Rendered:
    fn = fullname(release, "mldiagnostics-injection-webhook")
    out = Rendered(app_version="0.1.0")
    out.objects += [
        {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
         "metadata": _meta(f"{fn}-selfsigned-issuer", ns), "spec": {"selfSigned": {}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
         "metadata": _meta(f"{fn}-certificate", ns),
         "spec": {"dnsNames": [f"{fn}-service.{ns}.svc", f"{fn}-service.{ns}.svc.local"],
                  "issuerRef": {"group": "cert-manager.io", "kind": "Issuer",
                                "name": f"{fn}-selfsigned-issuer"},
                  "secretName": "diagon-webhook-certificate"}},
        _sa(fn, ns),
        _deployment(fn, ns, "diagon-webhook", "diagon-webhook"),
        _service(f"{fn}-service", ns, "diagon-webhook", 443),
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": _meta(f"{fn}-mutating-webhook-config", annotations={
             "cert-manager.io/inject-ca-from": f"{ns}/{fn}-certificate"}),
         "webhooks": [{"name": f"{fn}-service.{ns}.svc", "admissionReviewVersions": ["v1"],
                       "sideEffects": "NoneOnDryRun", "failurePolicy": "Fail",
                       "clientConfig": {"service": {"name": f"{fn}-service", "namespace": ns,
                                                    "path": "/mutate"}},
                       "namespaceSelector": {"matchExpressions": [
                           {"key": "diagon-webhook-exempt", "operator": "NotIn",
                            "values": ["true"]}]},
                       "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                  "operations": ["CREATE"], "resources": ["pods"],
                                  "scope": "Namespaced"}]}]},
    ]
    return out


def render_connection_operator(release: str, ns: str, values: dict[str, str]) -> Rendered:
    fn = fullname(release, "mldiagnostics-connection-operator")
    out = Rendered(app_version="0.1.0")
    crd = _crd("diagon.gke.io", "MLDiagnosticsConnection", "mldiagnosticsconnections",
               ["v1alpha1"], short=["mldc"])
    out.objects += [crd, _sa(fn, ns)]
    out.objects += _role(f"{fn}-leader-election-role", ns, LEASES)
    dep = _deployment(fn, ns, "connection-operator", "connection-operator")
    args = values.get("mldiagnosticsConnectionOperator.controller.args")
    if args:  # helm --set list syntax: {a,b,c}
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = args.strip("{}").split(",")
    out.objects += [dep, _service(f"{fn}-metrics-service", ns, "connection-operator", 8443)]
    return out


def render_jobset(release: str, ns: str, values: dict[str, str]) -> Rendered:
    fn = fullname(release, "jobset")
    out = Rendered(app_version="", notes="JobSet controller installed.")
    out.crds.append(_crd("jobset.x-k8s.io", "JobSet", "jobsets", ["v1alpha2"]))
    out.objects += [_sa(f"{fn}-controller", ns)]
    out.objects += _role(f"{fn}-controller", ns, LEASES)
    out.objects += [
        _service(f"{fn}-webhook-service", ns, "jobset", 443),
        _deployment(f"{fn}-controller", ns, "jobset", "registry.k8s.io/jobset/jobset"),
    ]
    for kind, prefix, adjective in (("MutatingWebhookConfiguration", "mutate", "mutating"),
                                    ("ValidatingWebhookConfiguration", "validate",
                                     "validating")):
        out.objects.append({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": _meta(f"{fn}-{adjective}-webhook-configuration"),
            "webhooks": [{"name": f"{prefix}-jobset-x-k8s-io-v1alpha2-jobset.x-k8s.io",
                          "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "clientConfig": {"service": {"name": f"{fn}-webhook-service",
                                                       "namespace": ns,
                                                       "path": f"/{prefix}-jobset-x-k8s-io-"
                                                               "v1alpha2-jobset"},
                                           "caBundle": SELF_SIGNED_CA},
                          "rules": [{"apiGroups": ["jobset.x-k8s.io"],
                                     "apiVersions": ["v1alpha2"],
                                     "operations": ["CREATE", "UPDATE"],
                                     "resources": ["jobsets"]}]}]})
    return out


def render_kueue(release: str, ns: str, values: dict[str, str]) -> Rendered:
    fn = fullname(release, "kueue")
    out = Rendered(app_version="v0.19.2", notes="Kueue installed.")
    for kind, (plural, namespaced) in KUEUE_KINDS.items():
        crd = _crd("kueue.x-k8s.io", kind, plural, ["v1beta2", "v1beta1"], namespaced)
        out.objects.append(crd)
    out.objects += [_sa(f"{fn}-controller-manager", ns)]
    out.objects += _role(f"{fn}-leader-election-role", ns, LEASES)
    out.objects += [
        _service(f"{fn}-webhook-service", ns, "kueue", 443),
        _deployment(f"{fn}-controller-manager", ns, "kueue",
                    "registry.k8s.io/kueue/kueue"),
    ]
    return out


CHARTS: dict[str, Chart] = {c.name: c for c in (
    Chart("cert-manager", (JETSTACK,), render_cert_manager),
    Chart("mldiagnostics-injection-webhook", (MLDIAG_OCI,), render_injection_webhook),
    Chart("mldiagnostics-connection-operator", (MLDIAG_OCI,), render_connection_operator),
    Chart("jobset", (JOBSET_OCI,), render_jobset),
    Chart("kueue", (KUEUE_OCI,), render_kueue),
)}


class ChartNotFound(LookupError):
    pass


def resolve(chart: str, repository: str | None, version: str | None) -> Chart:
    """The chart a ``helm_release`` names (``chart`` may be a full ``oci://.../name``
    reference); raises :class:`ChartNotFound` with helm's wording when there is none."""
    ref = chart
    if chart.startswith("oci://"):
        repository, _, chart = chart.rpartition("/")
    repo = (repository or "").rstrip("/")
    found = CHARTS.get(chart)
    if found is None or (repo and repo not in found.repositories):
        where = f"{repo}/{chart}" if repo else ref
        if repo.startswith("oci://") or ref.startswith("oci://"):
            raise ChartNotFound(f'could not download chart: failed to perform "FetchReference" '
                                f'on source: {where.removeprefix("oci://")}:{version or ""}: '
                                "not found")
        raise ChartNotFound(f'could not download chart: chart "{chart}" version '
                            f'"{version or ""}" not found in {repo or "the local"} repository')
    return found
