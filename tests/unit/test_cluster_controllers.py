"""The cluster model's installed controllers, webhook reachability and limits (issue 25).

Each kind is drawn from more than one public source (named in each test's docstring):
* controller admission: argoproj/applicationset#413 ("no matches for kind"), the JobSet CRD
  (served at v1alpha2 only), GoogleCloudPlatform/cluster-toolkit#3017 (GKE does not install
  JobSet or Kueue: a blueprint option installs them), the cert-manager API reference (v1);
* webhook reachability: knative/serving#13045 (8443), kanisterio/kanister#1309 and
  kyverno/kyverno#2764 (9443), cert-manager's compatibility page (10250 needs no rule),
  open-telemetry/opentelemetry-operator#1009 (private GKE: webhook timeout);
* limits: GKE's quotas page (pods per node), GKE's planning-large-clusters page (65,000
  nodes), the node pool auto-creation page (200 node pools).

Models are built from a plan (``lint --recipe``, preflight) and from a live cluster (the
stand-in Kubernetes API server, mldiag_provision/sandbox/apiserver.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.lint.support import by_rule, lint

from mldiag_provision import pipeline
from mldiag_provision.cluster import from_live, from_plan
from mldiag_provision.cluster.check import check, objects_admitted
from mldiag_provision.cluster.model import ClusterModel, Controller, Webhook
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import LintResult, lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version
from mldiag_provision.lint.workloads import pod_templates

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml"
QUEUED = ROOT / "recipes" / "tpu-v6e-4x4-queued-standard.yaml"
AUTOPILOT = ROOT / "recipes" / "tpu-v6e-4x4-multislice-autopilot.yaml"
NO_MATCH = "no matches for kind"


def _recipe(path: Path, edit: Any = None) -> Any:
    data = yaml.safe_load(path.read_text())
    if edit is not None:
        edit(data)
    res = pipeline.check_text(yaml.safe_dump(data, sort_keys=False), "r.yaml")
    assert res.parsed.recipe is not None, res.report
    return res.parsed.recipe


def _lint_with(recipe: Any, *texts: str) -> LintResult:
    opts = LintOptions(default_version(), diagnostics=False, recipe=recipe)
    return lint_sources([Source(f"m{i}.yaml", t) for i, t in enumerate(texts)], opts)


def _no_firewall(data: dict) -> None:
    data["spec"]["orchestrator"]["private"] = {"webhookFirewall": False}


JOBSET = """\
apiVersion: jobset.x-k8s.io/%s
kind: JobSet
metadata: {name: train, namespace: mldiag}
spec:
  replicatedJobs:
  - name: slice
    replicas: 1
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: main, image: python:3.12}]
"""

LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: serve, namespace: mldiag}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers: [{name: main, image: python:3.12}]
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: hello, namespace: %s}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: python:3.12}]
"""


# -- the model from a plan -----------------------------------------------------------------------

def test_plan_model_holds_the_controllers_the_stack_installs() -> None:
    """https://github.com/GoogleCloudPlatform/cluster-toolkit/pull/3017: GKE installs neither
    JobSet nor Kueue (the toolkit added a blueprint option to install them), so the model of a
    plan holds exactly what the stack installs: JobSet 0.9.0 for a JobSet workload (its CRD
    serves v1alpha2), cert-manager v1.13.0 and the injection webhook 0.25.0 for manual agents,
    each webhook with its port."""
    model = from_plan.from_recipe(_recipe(MANUAL), _catalog())
    assert model is not None and model.controllers_complete
    by = {c.name: c for c in model.controllers or ()}
    assert set(by) == {"JobSet", "cert-manager", "ML Diagnostics injection webhook"}
    assert by["JobSet"].version == "0.9.0"
    assert by["JobSet"].serves == {("jobset.x-k8s.io", "v1alpha2", "JobSet")}
    assert ("cert-manager.io", "v1", "Certificate") in by["cert-manager"].serves
    assert by["cert-manager"].version == "v1.13.0"
    assert by["ML Diagnostics injection webhook"].version == "0.25.0"
    assert [c.webhook_ports for c in by.values()] == [(9443,), (10250,), (8443,)]
    # the recipe keeps the webhook firewall on: every port is reachable
    assert all(c.reachable for c in by.values())
    assert model.served_by("jobset.x-k8s.io", "v1alpha2", "JobSet") is by["JobSet"]
    queued = from_plan.from_recipe(_recipe(QUEUED), _catalog())
    assert queued is not None
    kueue = next(c for c in queued.controllers or () if c.name == "Kueue")
    assert kueue.version == "0.19.2"
    assert {("kueue.x-k8s.io", v, "ClusterQueue") for v in ("v1beta1", "v1beta2")} \
        <= kueue.serves


def _catalog() -> Any:
    from mldiag_provision.catalog.tpu import load_catalog

    return load_catalog()


# -- controller admission --------------------------------------------------------------------------

def test_a_kind_no_installed_controller_serves_is_refused_in_kubectls_words() -> None:
    """https://github.com/argoproj/applicationset/issues/413: 'no matches for kind
    "ApplicationSet" in version "argoproj.io/v1alpha1"' until the controller is installed. The
    recipe installs no LeaderWorkerSet controller, so an LWS manifest linted against it is
    refused (a warning: a controller may be added by hand), naming apiVersion, with the recipe's
    answer."""
    result = _lint_with(_recipe(MANUAL), LWS)
    (p,) = by_rule(result, "controller-kind")
    assert p.path == "apiVersion" and p.severity is Severity.WARNING
    assert ('no matches for kind "LeaderWorkerSet" in version "leaderworkerset.x-k8s.io/v1"'
            in p.message)
    assert "ensure CRDs are installed first" in p.message
    assert "no recipe field installs the leaderworkerset.x-k8s.io controller" in (p.hint or "")
    # plain lint does not know what is installed: never judged
    assert by_rule(lint(LWS), "controller-kind") == []


def test_a_jobset_at_a_version_its_crd_does_not_serve_names_the_served_one() -> None:
    """kubernetes-sigs/jobset's CRD
    (https://github.com/kubernetes-sigs/jobset/blob/main/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml)
    serves v1alpha2 only: a JobSet written at v1alpha1 is refused; the finding names the version
    to write. At v1alpha2 it is admitted."""
    recipe = _recipe(MANUAL)
    (p,) = by_rule(_lint_with(recipe, JOBSET % "v1alpha1"), "controller-kind")
    assert 'no matches for kind "JobSet" in version "jobset.x-k8s.io/v1alpha1"' in p.message
    # the stack's own JobSet serves the group, only at v1alpha2: refused whatever else is added
    assert p.severity is Severity.ERROR
    assert p.expected == "apiVersion jobset.x-k8s.io/v1alpha2 (JobSet 0.9.0)"
    assert p.hint == "set apiVersion to jobset.x-k8s.io/v1alpha2, the version the installed " \
                     "CRD serves"
    assert by_rule(_lint_with(recipe, JOBSET % "v1alpha2"), "controller-kind") == []


def test_kueue_objects_need_the_queued_capacity_that_installs_kueue() -> None:
    """https://github.com/GoogleCloudPlatform/cluster-toolkit/pull/3017 (Kueue is installed by
    the blueprint, not by GKE) and Kueue v0.19.2's CRDs (v1beta1, v1beta2): a ClusterQueue
    linted against a recipe without queued capacity is refused (the stack installs no Kueue),
    and the hint names the recipe field that does; against the queued recipe it is admitted. A
    ClusterQueue is not a pod set: the object itself is named."""
    cq = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
          "spec: {namespaceSelector: {}, resourceGroups: []}\n")
    (p,) = by_rule(_lint_with(_recipe(MANUAL), cq), "controller-kind")
    assert "ClusterQueue" in p.message and p.path == "apiVersion"
    assert "capacity.type: queued" in (p.hint or "")
    assert by_rule(_lint_with(_recipe(QUEUED), cq), "controller-kind") == []


def test_a_live_cluster_without_the_crd_refuses_the_kind_as_an_error() -> None:
    """https://github.com/argoproj/applicationset/issues/413 and the JobSet CRD: against a live
    cluster whose CRDs are known, a JobSet with no JobSet CRD is an error (the API server's
    refusal), once per object however many replicated jobs it has; with the CRD it is admitted.
    A cluster whose CRDs could not be read (None) judges nothing."""
    two = JOBSET.replace("  - name: slice\n", "  - name: a\n", 1) + \
        "  - name: b\n    replicas: 1\n    template: {spec: {template: {spec: {containers: []}}}}\n"
    res = _resources(two % "v1alpha2")[0]
    templates = pod_templates(res)
    assert len(templates) == 2
    model = from_live.model_of([], crds=[_crd("jobset.x-k8s.io", "JobSet", ["v1alpha2"],
                                              served=False)])
    (v,) = [v for v in check(model, templates) if v.check == "controller-kind"]
    assert not v.warning and 'in version "jobset.x-k8s.io/v1alpha2"' in v.message
    served = from_live.model_of([], crds=[_crd("jobset.x-k8s.io", "JobSet", ["v1alpha2"])])
    assert served.controllers and served.controllers[0].version == "0.9.0"
    assert [v for v in check(served, templates) if v.check == "controller-kind"] == []
    unknown = from_live.model_of([])
    assert unknown.controllers is None
    assert check(unknown, templates) == []


def test_built_in_kinds_and_an_existing_clusters_plan_are_never_judged() -> None:
    """Kubernetes serves batch/v1 Job itself (no CRD;
    https://kubernetes.io/docs/concepts/workloads/controllers/job/); an existing cluster's plan
    does not list what its owner installed (controllers not complete), so nothing is judged
    there."""
    model = from_live.model_of([], crds=[])
    (res,) = _resources(JOB % "team")
    assert check(model, pod_templates(res)) == []
    existing = ClusterModel(mode="unknown", source="plan", controllers=(),
                            controllers_complete=False)
    (js,) = _resources(JOBSET % "v1alpha2")
    assert check(existing, pod_templates(js)) == []


def test_cert_manager_objects_need_its_v1_api() -> None:
    """The cert-manager API reference (https://cert-manager.io/docs/reference/api-docs/;
    cert-manager.io/v1 since 1.0): with manual agents the stack installs cert-manager v1.13.0,
    which serves cert-manager.io/v1 only, so a Certificate at v1alpha2 is refused and one at v1
    admitted (objects_admitted: not a pod set)."""
    model = from_plan.from_recipe(_recipe(MANUAL), _catalog())
    assert model is not None
    cert = ("apiVersion: cert-manager.io/%s\nkind: Certificate\nmetadata: {name: c, "
            "namespace: x}\nspec: {secretName: s, issuerRef: {name: i}}\n")
    (v,) = objects_admitted(model, _resources(cert % "v1alpha2"))
    assert v.check == "controller-kind" and v.expected.startswith("apiVersion cert-manager.io/v1")
    assert objects_admitted(model, _resources(cert % "v1")) == []


# -- webhook reachability -------------------------------------------------------------------------

def test_the_injection_webhook_port_unreachable_refuses_the_workload_pods() -> None:
    """https://github.com/knative/serving/issues/13045: on GKE the API server calls the webhook
    pod's port (8443) directly and only 443 and 10250 are open from a private control plane, so
    calls fail with "failed calling webhook ... context deadline exceeded". With webhookFirewall
    off, the manual agents' injection webhook (8443, failurePolicy Fail) refuses the pods of the
    labelled workload namespace (mldiag): a warning naming the port and the fix."""
    recipe = _recipe(MANUAL, _no_firewall)
    result = _lint_with(recipe, JOB % "mldiag", JOB % "elsewhere")
    found = by_rule(result, "webhook-unreachable")
    assert len(found) == 1, [(p.rule, p.message) for p in result.problems]
    p = found[0]
    assert p.path == "metadata.namespace" and p.value == 8443
    assert p.severity is Severity.WARNING
    assert "context deadline exceeded" in p.message and "port 8443" in p.message
    assert "webhookFirewall" in (p.hint or "")
    # with the firewall rule (the recipe's default) the port is reachable
    assert by_rule(_lint_with(_recipe(MANUAL), JOB % "mldiag"), "webhook-unreachable") == []


def test_the_jobset_webhook_on_9443_refuses_jobsets_without_the_rule() -> None:
    """https://github.com/kyverno/kyverno/issues/2764 (and kanisterio/kanister#1309): a webhook
    on 9443 on a private GKE cluster needs a firewall rule ("context deadline exceeded"
    otherwise). The JobSet controller's webhook listens on 9443: without the stack's rule the
    JobSet object itself is refused, once per object."""
    model = from_plan.from_recipe(_recipe(AUTOPILOT, _no_firewall), _catalog())
    assert model is not None and model.control_plane_ports == {443, 10250}
    jobset = next(c for c in model.controllers or () if c.name == "JobSet")
    assert jobset.reachable is False and jobset.webhook_ports == (9443,)
    (res,) = _resources(JOBSET % "v1alpha2")
    (v,) = check(model, pod_templates(res))
    assert v.check == "webhook-unreachable" and v.path == ("kind",) and v.value == 9443
    assert "JobSet objects are refused" in v.message


def test_cert_managers_webhook_on_10250_needs_no_rule() -> None:
    """cert-manager's compatibility page
    (https://cert-manager.io/docs/installation/compatibility/): its webhook listens on 10250,
    which GKE's own firewall rule already opens to the control plane, so even without the
    stack's rule a Certificate is not refused, while the injection webhook (8443) is
    unreachable."""
    model = from_plan.from_recipe(_recipe(MANUAL, _no_firewall), _catalog())
    assert model is not None
    by = {c.name: c for c in model.controllers or ()}
    assert by["cert-manager"].reachable is True
    assert by["ML Diagnostics injection webhook"].reachable is False
    cert = ("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c, "
            "namespace: x}\nspec: {secretName: s, issuerRef: {name: i}}\n")
    assert objects_admitted(model, _resources(cert)) == []


def test_public_nodes_reach_every_webhook() -> None:
    """https://github.com/open-telemetry/opentelemetry-operator/issues/1009: the webhook timeout
    is a private-cluster one. With public nodes the model holds no port restriction and nothing
    is refused."""
    def public(data: dict) -> None:
        data["spec"]["orchestrator"]["private"] = {"nodes": False, "webhookFirewall": False}

    model = from_plan.from_recipe(_recipe(MANUAL, public), _catalog())
    assert model is not None and model.private_nodes is False
    assert model.control_plane_ports is None
    assert all(c.reachable for c in model.controllers or ())


WEBHOOK_CONFIG = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: kanister
  annotations: {cert-manager.io/inject-ca-from: kanister/cert}
webhooks:
- name: blueprints.cr.kanister.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {service: {name: kanister, namespace: kanister, port: 443}}
  rules: [{apiGroups: [cr.kanister.io], apiVersions: [v1alpha1], operations: [CREATE],
           resources: [blueprints]}]
---
apiVersion: v1
kind: Service
metadata: {name: kanister, namespace: kanister}
spec:
  selector: {app: kanister}
  ports: [{port: 443, targetPort: 9443}]
"""


def test_webhook_private_cluster_port_reads_the_models_ports() -> None:
    """https://github.com/kanisterio/kanister/pull/1309 (a webhook served on 9443 times out on
    private GKE until a firewall rule opens it): plain lint warns (GKE's 443 and 10250 only);
    against a recipe whose stack opens 9443 (the JobSet webhook's firewall rule) it does not;
    against public nodes it does not either."""
    assert len(by_rule(lint(WEBHOOK_CONFIG), "webhook-private-cluster-port")) == 1
    opened = _lint_with(_recipe(MANUAL), WEBHOOK_CONFIG)
    assert by_rule(opened, "webhook-private-cluster-port") == []
    closed = _lint_with(_recipe(MANUAL, _no_firewall), WEBHOOK_CONFIG)
    assert len(by_rule(closed, "webhook-private-cluster-port")) == 1

    def public(data: dict) -> None:
        data["spec"]["orchestrator"]["private"] = {"nodes": False}

    assert by_rule(_lint_with(_recipe(MANUAL, public), WEBHOOK_CONFIG),
                   "webhook-private-cluster-port") == []


def test_cluster_private_reads_the_injection_webhook_from_the_model() -> None:
    """https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters#add_firewall_rules
    and knative/serving#13045: preflight's cluster-private finding on webhookFirewall comes from
    the model's injection webhook (port 8443, unreachable without the rule); unchanged words and
    severity."""
    data = yaml.safe_load(MANUAL.read_text())
    _no_firewall(data)
    problems = pipeline.check_text(yaml.safe_dump(data), "r.yaml").report.problems
    (p,) = [p for p in problems if p.rule == "cluster-private"]
    assert p.path == "spec.orchestrator.private.webhookFirewall"
    assert p.severity is Severity.WARNING and "listens on 8443" in p.message
    hooks = from_plan.injection_webhooks(None)
    assert [w.port for w in hooks] == [8443] and hooks[0].reachable is None


# -- the model from a live cluster (the stand-in API server) ---------------------------------------

def _crd(group: str, kind: str, versions: list[str], served: bool = True) -> dict:
    plural = kind.lower() + "s"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}",
                         "labels": {"app.kubernetes.io/version": "0.9.0"}},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                               "listKind": kind + "List"},
                     "versions": [{"name": v, "served": served, "storage": i == 0,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}
                                  for i, v in enumerate(versions)]}}


def _resources(text: str) -> list:
    from mldiag_provision.lint.loading import load_sources

    loaded = load_sources([Source("m.yaml", text)])
    assert not loaded.problems
    return loaded.resources


@pytest.fixture
def live(tmp_path: Path):
    from mldiag_provision.sandbox.gke_cluster import seed_gke_cluster, serve_cloud

    cloud = tmp_path / "cloud"
    cloud.mkdir()
    server = serve_cloud(cloud, token="t0ken")
    seed_gke_cluster(cloud, project="p", location="us-east5", name="c", api=server,
                     node_pools=[])
    yield server.kubeconfig(tmp_path / "kubeconfig")
    server.stop()


def _create(kubeconfig: Path, *objects: dict) -> None:
    from kubernetes import client, config

    api = config.new_client_from_config(str(kubeconfig))
    for o in objects:
        if o["kind"] == "CustomResourceDefinition":
            client.ApiextensionsV1Api(api).create_custom_resource_definition(o)
        else:
            client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration(o)
    api.close()


def test_live_model_reads_crds_and_webhook_configurations(live: Path) -> None:
    """https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters#add_firewall_rules
    and kanisterio/kanister#1309: a live model holds each CRD group's served versions and each
    webhook with the port it is called on; whether the control plane reaches it is not in the
    Kubernetes API, so it is unknown (None) and never judged. The stand-in's cluster starts
    without JobSet: a JobSet is refused (an error); once the CRD exists it is admitted."""
    from mldiag_provision.cluster.from_live import from_kubeconfig

    before = from_kubeconfig(str(live))
    assert before.controllers is not None and before.controllers_complete
    (js,) = _resources(JOBSET % "v1alpha2")
    (v,) = [v for v in check(before, pod_templates(js)) if v.check == "controller-kind"]
    assert not v.warning and NO_MATCH in v.message
    hook = yaml.safe_load(WEBHOOK_CONFIG.split("---")[0])
    hook["webhooks"][0]["clientConfig"]["service"]["port"] = 9443
    _create(live, _crd("jobset.x-k8s.io", "JobSet", ["v1alpha2"]), hook)
    after = from_kubeconfig(str(live))
    jobset = after.served_by("jobset.x-k8s.io", "v1alpha2", "JobSet")
    assert jobset is not None and jobset.version == "0.9.0"
    webhook = next(w for c in after.controllers or () for w in c.webhooks
                   if w.name == "blueprints.cr.kanister.io")
    assert webhook.port == 9443 and webhook.resources == {"blueprints"}
    assert webhook.fails_closed and webhook.reachable is None
    assert [v for v in check(after, pod_templates(js)) if v.check in (
        "controller-kind", "webhook-unreachable")] == []


def test_live_unreachable_is_never_guessed() -> None:
    """A live model's webhooks carry reachable None (the firewall is not a Kubernetes object),
    so no pod set is refused for reachability, whatever the port."""
    cfg = copy.deepcopy(yaml.safe_load(WEBHOOK_CONFIG.split("---")[0]))
    cfg["webhooks"][0]["rules"][0]["resources"] = ["pods"]
    cfg["kind"] = "ValidatingWebhookConfiguration"
    (ctl,) = from_live.webhooks_of([cfg])
    assert ctl.webhooks[0].reachable is None and ctl.reachable is None
    model = from_live.model_of([], crds=[], webhook_configs=[cfg])
    (res,) = _resources(JOB % "team")
    assert check(model, pod_templates(res)) == []


# -- limits ------------------------------------------------------------------------------------

def test_limits_per_mode_from_the_quotas_page() -> None:
    """GKE's quotas page (https://cloud.google.com/kubernetes-engine/quotas): 256 pods per node
    on Standard, 32 on Autopilot; the plan's model carries them; an existing cluster's and a
    live one's limits are not the recipe's (None)."""
    std = from_plan.cluster_limits("standard")
    auto = from_plan.cluster_limits("autopilot")
    assert std is not None and auto is not None
    assert (std.pods_per_node, auto.pods_per_node) == (256, 32)
    assert std.fact("podsPerNode").source.tag == "GKE-QUOTAS"
    assert from_plan.cluster_limits("unknown") is None
    model = from_plan.from_recipe(_recipe(AUTOPILOT), _catalog())
    assert model is not None and model.limits == auto
    assert from_live.model_of([]).limits is None


def test_nodes_per_cluster_limit_is_read_from_the_model(monkeypatch: pytest.MonkeyPatch,
                                                        ) -> None:
    """GKE's planning-large-clusters page
    (https://cloud.google.com/kubernetes-engine/docs/concepts/planning-large-clusters): 65,000
    nodes per cluster (GKE 1.31+). The model's Standard limit is that figure, and gke-nodes
    reads it from the model: 64 x v5p 16x16x24 (98,304 VMs) is an error with unchanged words."""
    std = from_plan.cluster_limits("standard")
    assert std is not None and std.nodes == 65000
    assert std.fact("nodesPerClusterMax").source.tag == "GKE-LARGE-CLUSTERS"
    data = yaml.safe_load((ROOT / "recipes" / "tpu-v5p-2x2x4-standard-reservation.yaml")
                          .read_text())
    data["spec"]["slices"][0].update({"topology": "16x16x24", "count": 64})
    problems = pipeline.check_text(yaml.safe_dump(data), "r.yaml").report.problems
    p = next(p for p in problems if p.rule == "gke-nodes")
    assert p.severity is Severity.ERROR and "over GKE's limit of 65,000 nodes" in p.message


def test_node_pool_limit_is_read_from_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node pool auto-creation page
    (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning): latency
    above 200 node pools per cluster. The gke-node-pools rule reads the figure from the model's
    limits: a model that said 2 would make 3 pools (2 slices + the system pool) a warning, with
    the model's figure."""
    from dataclasses import replace

    from mldiag_provision.preflight import place_rules

    std = from_plan.cluster_limits("standard")
    assert std is not None and std.node_pools == 200
    data = yaml.safe_load((ROOT / "recipes" / "tpu-v5p-2x2x4-standard-reservation.yaml")
                          .read_text())
    data["spec"]["slices"][0]["count"] = 2

    def rules(limits_pools: int) -> list[Problem]:
        monkeypatch.setattr(place_rules, "cluster_limits",
                            lambda mode: replace(std, node_pools=limits_pools))
        return [p for p in pipeline.check_text(yaml.safe_dump(data), "r.yaml").report.problems
                if p.rule == "gke-node-pools"]

    (p,) = rules(2)
    assert p.severity is Severity.WARNING and p.value == 3
    assert rules(200) == []


def test_controllers_and_webhooks_are_typed_values() -> None:
    """A controller's ports and reachability come from its webhooks: False when one is known
    unreachable, None when one is not known, True when all are reachable."""
    hook = Webhook(name="w", port=9443, resources=frozenset({"pods"}), reachable=True)
    assert Controller("c", "1", frozenset(), (hook,)).reachable is True
    assert Controller("c", "1", frozenset(), (hook, Webhook(
        "x", 8443, frozenset(), reachable=None))).reachable is None
    assert Controller("c", "1", frozenset(), (hook, Webhook(
        "x", 8443, frozenset(), reachable=False))).webhook_ports == (8443, 9443)


class _Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def test_reading_crds_fails_as_the_other_reads_do() -> None:
    """A CRD or webhook-configuration list the server does not serve (404) leaves the
    controllers unknown; a refused one (403, RBAC) is one EngineError with a hint, as the
    Node and queue reads are."""
    from mldiag_provision.errors import EngineError

    def gone(**_: object) -> None:
        raise _Refused(404)

    def refused(**_: object) -> None:
        raise _Refused(403)

    assert from_live._list_raw(gone, "customresourcedefinitions", "ctx") is None
    with pytest.raises(EngineError) as info:
        from_live._list_raw(refused, "customresourcedefinitions.apiextensions.k8s.io", "ctx")
    assert "refused reading customresourcedefinitions" in info.value.message
    assert "CRDs" in (info.value.hint or "")
