"""The fault kinds `lint` let through (issue 13 item 4): each kind's example from the issue plus
members drawn from other public sources (named per test), each with the field path pinned.

Kinds: Autopilot admission, names derived by controllers, multi-host wiring, recipe
cross-check (--recipe), webhook and certificate wiring. The examples also live as files in
tests/lint/data/faultkinds/ (the lint of the code before this change passes all of them)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mldiag_provision.errors import Severity
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import LintResult, lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.rules import RULES
from mldiag_provision.lint.schema import default_version
from mldiag_provision.pipeline import check_text

from .support import by_rule, lint, one, show

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = Path(__file__).resolve().parent / "data" / "faultkinds"


def y(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def example(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


def rules_of(result: LintResult) -> set[str]:
    return {p.rule for p in result.problems}


# --- Autopilot admission ------------------------------------------------------------------------

def test_issue_example_init_container_gpu_beside_main_gpu() -> None:
    """Source: ray-project/kuberay#1349 ("GPU-using init containers are not supported in
    Autopilot", GKE's refusal; fixed by kuberay#1470), the issue's example."""
    text = example("autopilot-init-gpu.yaml")
    p = one(lint(text, autopilot=True), "autopilot-init-container-gpu")
    assert p.path == 'spec.template.spec.initContainers[0].resources.requests["nvidia.com/gpu"]'
    assert "beside a main container with the same request" in p.message
    assert p.severity is Severity.ERROR  # GKE's own refusal, verbatim (H; issue 25)
    assert "kuberay/issues/1349" in p.source
    assert "autopilot-init-container-gpu" not in rules_of(lint(text))  # Standard: fine
    fixed = text.replace("        resources:\n          requests: {nvidia.com/gpu: 1}\n"
                         "          limits: {nvidia.com/gpu: 1}\n        command: [prep]\n",
                         "        command: [prep]\n")
    assert fixed != text and "autopilot-init-container-gpu" not in rules_of(
        lint(fixed, autopilot=True))


def test_gpu_without_accelerator_selector() -> None:
    """Source: GoogleCloudPlatform/ai-on-gke#983 (Warden autogke-gpu-limitation)."""
    text = example("autopilot-init-gpu.yaml").replace(
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n", "")
    assert "gke-accelerator" not in text
    p = one(lint(text, autopilot=True), "autopilot-gpu-selector")
    # the selector it misses, by its own path (issue 25: a wrong-typed other label is another
    # fault, reported beside it)
    assert p.path == 'spec.template.spec.nodeSelector["cloud.google.com/gke-accelerator"]'
    assert p.expected == "cloud.google.com/gke-accelerator or cloud.google.com/compute-class"
    compute_class = text.replace("      restartPolicy: Never\n", "      restartPolicy: Never\n"
                                 "      nodeSelector: {cloud.google.com/compute-class: gpu-pool}\n")
    assert "autopilot-gpu-selector" not in rules_of(lint(compute_class, autopilot=True))


def test_accelerator_toleration_without_request() -> None:
    """Source: GoogleCloudPlatform/k8s-stackdriver#1081 (Autopilot rejects GPU/TPU tolerations
    of pods that request neither)."""
    text = y("""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: metrics-adapter}
        spec:
          selector: {matchLabels: {app: a}}
          template:
            metadata: {labels: {app: a}}
            spec:
              tolerations:
              - {key: google.com/tpu, operator: Exists, effect: NoSchedule}
              containers: [{name: a, image: adapter}]
        """)
    p = one(lint(text, autopilot=True, diagnostics=False), "autopilot-accelerator-toleration")
    assert (p.path, p.value) == ("spec.template.spec.tolerations[0].key", "google.com/tpu")
    # a TPU pod that tolerates its own taint is fine
    seed = (Path(__file__).parent / "data" / "available-chips-singlehost.yaml").read_text()
    tolerating = seed.replace("  containers:", "  tolerations:\n  - {key: google.com/tpu, "
                              "operator: Exists}\n  containers:", 1)
    assert tolerating != seed
    assert "autopilot-accelerator-toleration" not in rules_of(lint(tolerating, autopilot=True))


# --- names derived by controllers --------------------------------------------------------------

def test_issue_example_indexed_job_hostname_over_63() -> None:
    """Source: Kubernetes docs, Job with Pod-to-Pod Communication (${jobName}-${index})."""
    text = example("names-indexed-job.yaml")
    name = "a" * 62
    assert f"name: {name}\n" in text
    p = one(lint(text, diagnostics=False), "names-job-hostname")
    assert p.path == "metadata.name" and p.severity is Severity.ERROR
    assert f"'{name}-3' (64 characters" in p.message and "subdomain 'workers'" in p.message
    short = text.replace(name, "a" * 61)
    assert "names-job-hostname" not in rules_of(lint(short, diagnostics=False))


def test_job_name_over_63_is_refused_for_its_job_name_label() -> None:
    """Source: beacon-biosignals/julia_pod#50 (spec.template.labels ... must be no more than 63
    characters)."""
    text = y(f"""
        apiVersion: batch/v1
        kind: Job
        metadata: {{name: {"j" * 64}}}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{{name: main, image: busybox}}]
        """)
    p = one(lint(text, diagnostics=False), "names-job-label")
    assert p.path == "metadata.name" and "64 characters" in p.message


def test_jobset_child_pod_names() -> None:
    """Source: kubernetes-sigs/jobset v0.9.0 pkg/webhooks/jobset_webhook.go (kubernetes-sigs/
    jobset#409): <jobset>-<rjob>-<jobIndex>-<podIndex>-<5> must fit 63."""
    js = y(f"""
        apiVersion: jobset.x-k8s.io/v1alpha2
        kind: JobSet
        metadata: {{name: {"t" * 42}}}
        spec:
          replicatedJobs:
          - name: {"w" * 10}
            replicas: 2
            template:
              spec:
                completionMode: Indexed
                completions: 16
                parallelism: 16
                template:
                  spec:
                    restartPolicy: Never
                    containers: [{{name: main, image: busybox}}]
        """)
    p = one(lint(js, diagnostics=False), "names-jobset-children")
    assert p.path == "spec.replicatedJobs[0].name"
    assert "reach 64 characters" in p.message  # 42+1+10+1+1+1+2 = 58, + '-xxxxx'
    assert "names-jobset-children" not in rules_of(lint(js.replace("t" * 42, "t" * 41),
                                                        diagnostics=False))


def test_kuberay_name_limits() -> None:
    """Source: ray-project/kuberay v1.7.0 utils/constant.go (MaxRayJobNameLength 47,
    MaxRayClusterNameLength 53)."""
    def rayjob(name: str) -> str:
        return y(f"""
            apiVersion: ray.io/v1
            kind: RayJob
            metadata: {{name: {name}}}
            spec:
              entrypoint: python main.py
              rayClusterSpec:
                headGroupSpec:
                  rayStartParams: {{}}
                  template:
                    spec:
                      containers: [{{name: head, image: rayproject/ray}}]
            """)
    p = one(lint(rayjob("r" * 48), diagnostics=False), "names-kuberay")
    assert (p.path, p.expected) == ("metadata.name", "at most 47 characters")
    assert "names-kuberay" not in rules_of(lint(rayjob("r" * 47), diagnostics=False))


def test_lws_group_statefulset_names() -> None:
    """Source: kubernetes/kubernetes#64023 (StatefulSet controller-revision-hash label)."""
    lws = y(f"""
        apiVersion: leaderworkerset.x-k8s.io/v1
        kind: LeaderWorkerSet
        metadata: {{name: {"l" * 50}}}
        spec:
          replicas: 12
          leaderWorkerTemplate:
            size: 4
            workerTemplate:
              spec:
                containers: [{{name: w, image: busybox}}]
        """)
    p = one(lint(lws, diagnostics=False), "names-lws-groups")
    assert p.path == "metadata.name" and "'" + "l" * 50 + "-11' has 53 characters" in p.message
    assert p.severity is Severity.WARNING
    assert "names-lws-groups" not in rules_of(lint(lws.replace("replicas: 12", "replicas: 9"),
                                                   diagnostics=False))


# --- multi-host wiring -------------------------------------------------------------------------

def test_issue_example_headless_service_without_publish_not_ready() -> None:
    """Source: Kubernetes docs, DNS for Services and Pods; ray-project/kuberay#2375."""
    text = example("wiring-headless-service.yaml")
    p = one(lint(text), "wiring-publish-not-ready")
    assert p.path == "spec.publishNotReadyAddresses" and p.file == "m0.yaml" and p.line == 7
    assert "headless Service 'train-workers' of multi-pod Job 'train'" in p.message
    fixed = text.replace("  clusterIP: None\n", "  clusterIP: None\n"
                         "  publishNotReadyAddresses: true\n")
    assert "wiring-publish-not-ready" not in rules_of(lint(fixed))
    off = text.replace("  clusterIP: None\n", "  clusterIP: None\n"
                       "  publishNotReadyAddresses: false\n")
    assert one(lint(off), "wiring-publish-not-ready").path == "spec.publishNotReadyAddresses"


def test_jobset_network_switched_off() -> None:
    """Source: kubernetes-sigs/jobset v0.9.0 jobset_types.go Network (defaults true);
    kubernetes-sigs/jobset#504."""
    from .test_lint_rules import JOBSET

    network = ("spec:\n  network:\n    enableDNSHostnames: false\n"
               "    publishNotReadyAddresses: false\n  replicatedJobs:")
    gpu = y("""
        apiVersion: jobset.x-k8s.io/v1alpha2
        kind: JobSet
        metadata: {name: pretrain}
        spec:
          replicatedJobs:
          - name: nodes
            replicas: 1
            template:
              spec:
                completions: 4
                parallelism: 4
                template:
                  spec:
                    restartPolicy: Never
                    containers: [{name: main, image: trainer}]
        """)
    off = gpu.replace("spec:\n  replicatedJobs:", network, 1)
    assert off != gpu
    result = lint(off, diagnostics=False)
    p = one(result, "wiring-jobset-network")
    assert (p.path, p.severity) == ("spec.network.enableDNSHostnames", Severity.ERROR)
    assert one(result, "wiring-publish-not-ready").path == \
        "spec.network.publishNotReadyAddresses"
    assert not {"wiring-jobset-network", "wiring-publish-not-ready"} & rules_of(
        lint(gpu, diagnostics=False))
    # a multi-host TPU JobSet: tpu-multislice already reports enableDNSHostnames, once
    tpu = lint(JOBSET.replace("spec:\n  replicatedJobs:", network, 1))
    at = [p.rule for p in tpu.problems if p.path == "spec.network.enableDNSHostnames"]
    assert at == ["tpu-multislice"]
    assert one(tpu, "wiring-publish-not-ready").severity is Severity.WARNING


def test_explicit_hostname_in_indexed_job() -> None:
    """Source: kubernetes/kubernetes#101601 (the Job controller sets the hostname only when the
    template leaves it unset)."""
    text = example("wiring-headless-service.yaml").replace(
        "      subdomain: train-workers\n", "      subdomain: train-workers\n"
        "      hostname: worker\n")
    p = one(lint(text), "wiring-explicit-hostname")
    assert (p.path, p.value) == ("spec.template.spec.hostname", "worker")


def test_rendered_services_publish_not_ready_addresses() -> None:
    """The tool's own rendered stacks: every headless Service sets it (render/k8s.py). Most
    bundled workloads are JobSets, whose Service the JobSet controller creates (with
    publishNotReadyAddresses set), so the multi-host Jobs of the seed copies render the
    headless Services checked here."""
    services = 0
    for f in sorted((ROOT / "tests" / "golden" / "stacks").glob("*/k8s/workloads/*.yaml")):
        text = f.read_text()
        services += text.count("clusterIP: None")
        result = lint(text, names=[f.name])
        assert "wiring-publish-not-ready" not in rules_of(result), (f, show(result))
    assert services >= 1


# --- recipe cross-check ------------------------------------------------------------------------

V5E_RECIPE = y("""
    apiVersion: mldiag-provision/v1alpha1
    kind: Recipe
    metadata: {name: v5e-two-hosts}
    spec:
      project: my-ml-project
      region: us-west4
      zone: us-west4-a
      orchestrator: {type: gke-standard}
      slices:
        - {name: v5e-8, tpu: v5e, topology: 2x4, chipsPerVm: 4, count: 2}
      diagnostics:
        logAnalytics: {retentionDays: 30}
    """)


def _recipe(text: str = V5E_RECIPE) -> object:
    res = check_text(text, "r.yaml")
    assert res.parsed.recipe is not None, res.report
    assert not [p for p in res.report.problems if p.severity is Severity.ERROR], res.report
    return res.parsed.recipe


def _lint_with(recipe: object, *texts: str) -> LintResult:
    opts = LintOptions(default_version(), diagnostics=False, recipe=recipe)
    return lint_sources([Source(f"m{i}.yaml", t) for i, t in enumerate(texts)], opts)


def test_issue_example_8_chips_per_pod_on_two_4_chip_vms() -> None:
    """Source: GKE, About TPUs (a pod schedules only on a VM with its chips); the issue's
    example: a v5e 2x4 JobSet asking 8 chips per pod is "single-host, fine" without R."""
    text = example("recipe-v5e-8-chips.yaml")
    assert not {r for r in rules_of(lint(text, diagnostics=False))
                if RULES[r].severity is Severity.ERROR}
    p = one(_lint_with(_recipe(), text), "recipe-slice")
    assert p.path == ('spec.replicatedJobs[0].template.spec.template.spec.containers[0]'
                      '.resources.requests["google.com/tpu"]')
    assert p.severity is Severity.ERROR and (p.value, p.expected) == (8, "4")
    assert "slice 'v5e-8' (v5e 2x4: 2 VMs of 4 chips) has no VM with 8 chips" in p.message
    eight = _recipe(V5E_RECIPE.replace("chipsPerVm: 4, count: 2", "chipsPerVm: 8"))
    assert "recipe-slice" not in rules_of(_lint_with(eight, text))


def test_slice_shape_the_recipe_lacks_and_too_many_slices() -> None:
    """Source: GKE, Deploy TPU Multislices (one slice per node pool)."""
    text = example("recipe-v5e-8-chips.yaml")
    other = text.replace("topology: 2x4", "topology: 4x4")
    p = one(_lint_with(_recipe(), other), "recipe-slice")
    assert p.path.endswith('nodeSelector["cloud.google.com/gke-tpu-topology"]')
    assert p.expected == "v5e 2x4"
    three = text.replace("google.com/tpu: 8", "google.com/tpu: 4").replace(
        "replicas: 1", "replicas: 3")
    p = one(_lint_with(_recipe(), three), "recipe-slice-count")
    assert (p.path, p.value, p.expected) == ("spec.replicatedJobs[0].replicas", 3, "at most 2")


def test_capacity_and_reservation_against_the_recipe() -> None:
    """Source: GKE, Spot VMs (cloud.google.com/gke-spot) and Consume reserved zonal
    resources (cloud.google.com/reservation-name)."""
    text = example("recipe-v5e-8-chips.yaml").replace("google.com/tpu: 8", "google.com/tpu: 4")
    spot = text.replace("cloud.google.com/gke-tpu-topology: 2x4\n",
                        "cloud.google.com/gke-tpu-topology: 2x4\n"
                        "              cloud.google.com/gke-spot: \"true\"\n")
    assert spot != text
    p = one(_lint_with(_recipe(), spot), "recipe-capacity")
    assert p.path.endswith('nodeSelector["cloud.google.com/gke-spot"]')
    assert p.severity is Severity.ERROR
    spot_recipe = _recipe(V5E_RECIPE.replace("count: 2}", "count: 2, capacity: {type: spot}}"))
    assert "recipe-capacity" not in rules_of(_lint_with(spot_recipe, spot))
    reserved = text.replace("cloud.google.com/gke-tpu-topology: 2x4\n",
                            "cloud.google.com/gke-tpu-topology: 2x4\n"
                            "              cloud.google.com/reservation-name: res-a\n")
    p = one(_lint_with(_recipe(), reserved), "recipe-capacity")
    assert (p.value, p.severity) == ("res-a", Severity.WARNING)


def test_lint_recipe_on_the_command_line(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = tmp_path / "r.yaml"
    r.write_text(V5E_RECIPE)
    m = tmp_path / "m.yaml"
    m.write_text(example("recipe-v5e-8-chips.yaml"))
    code, out, _ = cli("lint", "--no-diagnostics", str(m))
    assert code == 0, out
    code, out, _ = cli("lint", "--no-diagnostics", "--recipe", str(r), str(m))
    assert code == 1 and "error[recipe-slice]" in out and "has no VM with 8 chips" in out


# --- webhook and certificate wiring ------------------------------------------------------------

def test_webhook_without_ca_bundle() -> None:
    """Source: cert-manager CA injector docs; cert-manager/cert-manager#3258 (x509: certificate
    signed by unknown authority)."""
    text = example("webhook.yaml")
    result = lint(text, diagnostics=False)
    p = one(result, "webhook-ca-bundle")
    assert p.path == "webhooks[0].clientConfig.caBundle" and p.severity is Severity.ERROR
    assert "every matching request fails (failurePolicy: Fail)" in p.message
    ignore = text.replace("failurePolicy: Fail", "failurePolicy: Ignore")
    assert "silently skipped" in one(lint(ignore, diagnostics=False),
                                     "webhook-ca-bundle").message
    injected = text.replace("  name: injector\n", "  name: injector\n  annotations:\n"
                            "    cert-manager.io/inject-ca-from: mldiag/injector-cert\n", 1)
    assert "webhook-ca-bundle" not in rules_of(lint(injected, diagnostics=False))
    bad = injected.replace("mldiag/injector-cert", "injector-cert")
    p = one(lint(bad, diagnostics=False), "webhook-ca-bundle")
    assert p.path == 'metadata.annotations["cert-manager.io/inject-ca-from"]'


def test_webhook_port_and_private_cluster_reachability() -> None:
    """Sources: Kubernetes admission webhook docs (service.port, default 443); GKE private
    clusters firewall rules, kubernetes/kubernetes#79739, open-policy-agent/gatekeeper#499."""
    text = example("webhook.yaml")
    p = one(lint(text, diagnostics=False), "webhook-private-cluster-port")
    assert (p.path, p.value, p.severity) == ("spec.ports[0].targetPort", 8443,
                                             Severity.WARNING)
    assert p.file == "m0.yaml"
    named = text.replace("targetPort: 8443", "targetPort: https")
    assert one(lint(named, diagnostics=False), "webhook-private-cluster-port").value == 9443
    ok = text.replace("targetPort: 8443", "targetPort: 10250")
    assert "webhook-private-cluster-port" not in rules_of(lint(ok, diagnostics=False))
    wrong = text.replace("      port: 443\n", "      port: 8443\n")
    p = one(lint(wrong, diagnostics=False), "webhook-service-port")
    assert (p.path, p.value) == ("webhooks[0].clientConfig.service.port", 8443)


def test_webhook_unsafe_scope_on_gke() -> None:
    """Source: GKE, Ensure control plane stability when using webhooks (unsafe webhooks)."""
    text = example("webhook.yaml")
    p = one(lint(text, diagnostics=False), "webhook-unsafe-scope")
    assert p.path == "webhooks[0].rules[0].resources" and "kube-system" in p.message
    scoped = text.replace("  failurePolicy: Fail\n", "  failurePolicy: Fail\n"
                          "  namespaceSelector:\n    matchExpressions:\n"
                          "    - {key: kubernetes.io/metadata.name, operator: NotIn, "
                          "values: [kube-system, kube-node-lease]}\n")
    assert "webhook-unsafe-scope" not in rules_of(lint(scoped, diagnostics=False))
    nodes = scoped.replace("resources: [pods]", "resources: [pods, nodes]")
    assert "nodes" in one(lint(nodes, diagnostics=False), "webhook-unsafe-scope").message
    # Autopilot excludes kube-system itself (catalog gke.yaml)
    assert "webhook-unsafe-scope" not in rules_of(lint(text, autopilot=True,
                                                       diagnostics=False))


@pytest.mark.parametrize("name", ["autopilot-init-gpu.yaml", "names-indexed-job.yaml",
                                  "wiring-headless-service.yaml", "recipe-v5e-8-chips.yaml",
                                  "webhook.yaml"])
def test_every_problem_names_its_field(name: str) -> None:
    result = lint(example(name), autopilot=True)
    assert result.problems
    for p in result.problems:
        assert p.path and p.line >= 1, show(result)
    assert by_rule(result, "yaml-syntax") == []


def test_rendered_stacks_fit_their_own_recipes() -> None:
    """The recipe cross-check accepts what the tool renders from the same recipe (no false
    positives), and it does look at the TPU pods there."""
    from mldiag_provision.lint.recipe_rules import recipe_slices

    checked = 0
    for stack in sorted((ROOT / "tests" / "golden" / "stacks").iterdir()):
        recipe_file = ROOT / "recipes" / f"{stack.name}.yaml"
        files = sorted(stack.glob("k8s/workloads/*.yaml"))
        if not recipe_file.exists() or not files:
            continue
        recipe = _recipe(recipe_file.read_text())
        texts = [f.read_text() for f in files]
        result = _lint_with(recipe, *texts)
        assert not [p for p in result.problems if p.rule.startswith("recipe-")], \
            (stack.name, show(result))
        from mldiag_provision.catalog.tpu import load_catalog
        from mldiag_provision.lint.context import LintContext
        ctx = LintContext([], load_catalog(), LintOptions(default_version(), recipe=recipe))
        checked += bool(recipe_slices(ctx))
    assert checked >= 4


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_no_value_of_any_field_makes_the_new_rules_raise(name: str) -> None:
    """Each key of each example set to a value of another type (list, mapping, number, null):
    lint reports, never raises (found a TypeError in tpu-multislice with a list selector)."""
    lines = example(name).splitlines()
    recipe = _recipe()
    mutated = 0
    for i, line in enumerate(lines):
        if ":" not in line or line.lstrip().startswith(("#", "- {")):
            continue
        key = line.split(":", 1)[0]
        for value in ("[1, {a: b}]", "{x: 1}", "-3", "null"):
            text = "\n".join([*lines[:i], f"{key}: {value}", *lines[i + 1:]])
            lint(text, autopilot=True)
            _lint_with(recipe, text)
            mutated += 1
    assert mutated >= 40


def test_node_pool_labels_name_a_pool_of_the_recipe() -> None:
    """Source: the tool's own node pools (plan/names.py node_pool_names; plan/stack.py labels
    each pool mldiag-provision/slice: <slice>), GKE's cloud.google.com/gke-nodepool label."""
    recipe = _recipe(V5E_RECIPE.replace("count: 2}", "count: 2}\n"
                                        "    - {name: v6e, tpu: v6e, topology: 4x4}"))
    text = example("recipe-v5e-8-chips.yaml").replace("google.com/tpu: 8", "google.com/tpu: 4")
    sel = "              cloud.google.com/gke-tpu-topology: 2x4\n"

    def with_label(line: str) -> str:
        out = text.replace(sel, sel + "              " + line + "\n")
        assert out != text
        return out

    assert "recipe-node-labels" not in rules_of(
        _lint_with(recipe, with_label("cloud.google.com/gke-nodepool: v5e-8-1")))
    p = one(_lint_with(recipe, with_label("cloud.google.com/gke-nodepool: v5e-8")),
            "recipe-node-labels")
    assert p.path.endswith('nodeSelector["cloud.google.com/gke-nodepool"]')
    assert p.expected == "v5e-8-0, v5e-8-1, v6e"
    p = one(_lint_with(recipe, with_label("mldiag-provision/slice: v6e")), "recipe-node-labels")
    assert "asks for v5e 2x4 but selects mldiag-provision/slice: v6e" in p.message
