"""One test per rule family: Kubernetes schema and CRDs, loading, TPU controllers (JobSet,
LeaderWorkerSet, Ray, Deployment), env/ports/capacity, Autopilot and ML Diagnostics rules.
Messages are pinned where they are the contract."""

from __future__ import annotations

import re
import textwrap

import pytest
import yaml

from mldiag_provision.catalog.store import store
from mldiag_provision.errors import Severity
from mldiag_provision.lint.loading import field_path
from mldiag_provision.lint.rules import DATA_DIR, RULES

from .support import DATA, MULTIHOST, by_rule, errors, lint, one, show


def y(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def pod(*, spec_extra: str = "", container_extra: str = "", node_extra: str = "",
        acc: str = "tpu-v5-lite-podslice", topo: str = "2x4", chips: int = 8,
        name: str = "p") -> str:
    """A TPU Pod; ``*_extra`` are YAML lines indented for spec (2), the node selector (4) and
    the container (4) (extra containers start with ``  - name:``)."""
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
            f"  nodeSelector:\n    cloud.google.com/gke-tpu-accelerator: {acc}\n"
            f"    cloud.google.com/gke-tpu-topology: {topo}\n{node_extra}{spec_extra}"
            f"  containers:\n  - name: main\n    image: python:3.10\n    resources:\n"
            f"      requests: {{google.com/tpu: {chips}}}\n"
            f"      limits: {{google.com/tpu: {chips}}}\n{container_extra}")


JOBSET = y("""
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata:
      name: train
      labels: {managed-mldiagnostics-gke: "true"}
      annotations:
        alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool
    spec:
      replicatedJobs:
      - name: slice
        replicas: 2
        template:
          spec:
            completionMode: Indexed
            completions: 4
            parallelism: 4
            backoffLimit: 0
            template:
              spec:
                restartPolicy: Never
                serviceAccountName: trainer
                nodeSelector:
                  cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
                  cloud.google.com/gke-tpu-topology: 4x4
                containers:
                - name: main
                  image: maxtext
                  ports: [{containerPort: 8471}]
                  env:
                  - {name: MEGASCALE_NUM_SLICES, value: "2"}
                  resources:
                    requests: {google.com/tpu: 4}
                    limits: {google.com/tpu: 4}
    """)


# --- Kubernetes schema ---------------------------------------------------------------------

def test_unknown_field_with_did_you_mean() -> None:
    p = one(lint(MULTIHOST.read_text().replace("parallelism:", "paralelism:")),
            "k8s-unknown-field")
    assert (p.path, p.message, p.hint) == (
        "spec.paralelism", "unknown field 'paralelism' in spec", "did you mean 'parallelism'?")
    assert p.severity is Severity.ERROR and p.line == 17 and p.column == 3


def test_type_error_with_quote_hint() -> None:
    text = pod(container_extra="    env: [{name: N, value: 8}]\n")
    p = one(lint(text), "k8s-schema")
    assert p.path == "spec.containers[0].env[0].value"
    assert p.message == "expected a string, got an integer"
    assert p.hint == 'quote the value: "8" (YAML reads it as a number)'


def test_label_value_must_be_a_string() -> None:
    text = pod().replace("  name: p\n", "  name: p\n  labels: {managed-mldiagnostics-gke: true}\n")
    p = one(lint(text), "k8s-schema")
    assert p.path == "metadata.labels.managed-mldiagnostics-gke"
    assert p.hint == 'quote the value: "true" (YAML reads it as a boolean)'


def test_removed_api_version_names_the_served_one() -> None:
    p = one(lint("apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: c}\n"),
            "k8s-api-version")
    assert p.message == "Kubernetes 1.35 does not serve CronJob as batch/v1beta1"
    assert p.expected == "batch/v1" and p.hint == "use apiVersion: batch/v1"


def test_kubernetes_version_matters() -> None:
    """ Job.spec.managedBy is in the 1.30+ schemas (alpha in 1.30), not in 1.29's."""
    text = MULTIHOST.read_text().replace(
        "  backoffLimit: 0\n", "  backoffLimit: 0\n  managedBy: kueue.x-k8s.io/multikueue\n")
    assert by_rule(lint(text, version="1.29"), "k8s-unknown-field")
    assert not by_rule(lint(text, version="1.35"), "k8s-unknown-field")


def test_quantity_and_name() -> None:
    text = pod(name="p_X").replace("requests: {google.com/tpu: 8}",
                                  "requests: {google.com/tpu: 8, memory: 16GB}")
    q = one(lint(text), "k8s-quantity")
    assert (q.path, q.message) == ("spec.containers[0].resources.requests.memory",
                                   "'16GB' is not a Kubernetes quantity")
    assert q.hint == "GB/MB are not quantity suffixes: write G or Gi"
    n = one(lint(text), "k8s-name")
    assert n.message == "'p_X' is not a valid object name" and n.hint == "e.g. p-x"


def test_negative_quantity_is_named_as_negative() -> None:
    """Quantities are signed; the API server refuses a negative request or limit
    (ValidateNonnegativeQuantity: "must be greater than or equal to 0")."""
    text = pod().replace("requests: {google.com/tpu: 8}", "requests: {google.com/tpu: 8, cpu: -3}")
    q = one(lint(text), "k8s-quantity")
    assert (q.path, q.line, q.message, q.value, q.expected, q.hint) == (
        "spec.containers[0].resources.requests.cpu", 13,
        "cpu: -3 is negative; resource requests must be greater than or equal to 0 (the API "
        "server refuses the object)", -3, "0 or more", "use an amount of 0 or more, e.g. 3")
    assert "ValidateNonnegativeQuantity" in (q.source or "")
    assert [p.rule for p in errors(lint(text))] == ["k8s-quantity"]


def test_odd_quantities_are_problems_not_crashes() -> None:
    text = pod(container_extra="    env: []\n").replace(
        "requests: {google.com/tpu: 8}", "requests: {google.com/tpu: 8, cpu: .nan, memory: .inf}")
    assert {p.path for p in by_rule(lint(text), "k8s-quantity")} == {
        "spec.containers[0].resources.requests.cpu",
        "spec.containers[0].resources.requests.memory"}


def test_crd_schema_checks_embedded_pod_spec_strictly_and_crd_fields_softly() -> None:
    text = JOBSET.replace("  - name: slice\n", "  - name: slice\n    bogus: 1\n") \
        .replace("            - name: main\n", "            - name: main\n"
                                               "              imagePulPolicy: Always\n")
    result = lint(text)
    soft = [p for p in by_rule(result, "k8s-unknown-field") if p.path.endswith("bogus")]
    hard = [p for p in by_rule(result, "k8s-unknown-field") if p.path.endswith("Policy")]
    assert soft[0].severity is Severity.WARNING and "kubernetes-sigs/jobset" in soft[0].source
    assert hard[0].severity is Severity.ERROR and hard[0].hint == "did you mean 'imagePullPolicy'?"


@pytest.mark.parametrize("text", [
    "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: l}\n"
    "spec: {leaderWorkerTemplate: {size: 2, workerTemplate: {spec: {containers: "
    "[{name: a, image: b}]}}}}\n",
    "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: r}\nspec: {entrypoint: python x.py, "
    "rayClusterSpec: {headGroupSpec: {rayStartParams: {}, template: {spec: {containers: "
    "[{name: h, image: ray}]}}}}}\n",
    "apiVersion: diagon.gke.io/v1alpha1\nkind: MLDiagnosticsConnection\nmetadata: {name: c}\n"
    "spec: {triggerCapture: {capturePort: 9999, durationSeconds: 5, podName: a, podNamespace: "
    "ns, profiler: google_cloud_mldiagnostics, storageLocation: gs://b/p}}\n",
], ids=["lws", "rayjob", "mldiagnosticsconnection"])
def test_known_crds_validate(text: str) -> None:
    assert errors(lint(text)) == [], show(lint(text))
    broken = text.replace("name: a, image: b", "name: a, image: 3").replace(
        "durationSeconds: 5", "durationSeconds: 0").replace("image: ray", "image: [ray]")
    assert by_rule(lint(broken), "k8s-schema"), show(lint(broken))


def test_unknown_crd_is_an_info_and_known_group_typo_warns() -> None:
    group = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
    info = one(lint(group), "k8s-no-schema")
    assert info.severity is Severity.INFO
    # Kueue's kinds are known since its CRDs are vendored (tools/crds/pins.yaml)
    queue = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\n"
    assert by_rule(lint(queue), "k8s-no-schema") == []
    typo = one(lint("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: Jobset\nmetadata: {name: j}\n"),
               "k8s-api-version")
    assert typo.severity is Severity.WARNING and typo.hint == \
        "did you mean 'jobset.x-k8s.io/v1alpha2 JobSet'? (values are case-sensitive)"


# --- loading -------------------------------------------------------------------------------

def test_lists_are_unpacked_and_located() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- " + pod(chips=2).replace("\n", "\n  ")
    p = one(lint(text), "tpu-chips-per-pod")
    assert p.path == 'items[0].spec.containers[0].resources.requests["google.com/tpu"]'
    assert text.splitlines()[p.line - 1].strip() == "requests: {google.com/tpu: 2}"


@pytest.mark.parametrize(("text", "message"), [
    ("- a\n- b\n", "this YAML document is a list, not a Kubernetes object"),
    ("metadata: {name: x}\n", "missing apiVersion and kind: not a Kubernetes object"),
    ("just text\n", "this YAML document is the scalar 'just text', not a Kubernetes object"),
])
def test_non_objects(text: str, message: str) -> None:
    assert one(lint(text), "k8s-object").message == message


@pytest.mark.parametrize(("edit", "path", "line", "message", "expected"), [
    (("apiVersion: v1", "apiVersion: 1"), "apiVersion", 1,
     "apiVersion is the integer 1, not a string group/version",
     "a string group/version such as batch/v1"),
    (("apiVersion: v1", "apiVersion: [v1]"), "apiVersion", 1,
     "apiVersion is a list, not a string group/version",
     "a string group/version such as batch/v1"),
    (("kind: Pod", "kind: true"), "kind", 2, "kind is the boolean true, not a string",
     "a string such as Job"),
])
def test_wrong_typed_api_version_or_kind_is_not_missing(edit: tuple[str, str], path: str,
                                                         line: int, message: str,
                                                         expected: str) -> None:
    p = one(lint(pod().replace(*edit)), "k8s-object")
    assert (p.path, p.line, p.message, p.expected) == (path, line, message, expected)
    assert "missing" not in p.message


def test_unreadable_kind_is_one_finding() -> None:
    text = pod().replace("kind: Pod", "kind: !!python/object:os.system")
    assert show(lint(text)) == [(
        "error", "yaml-value", "kind",
        "YAML value cannot be read: could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object:os.system'")]
    assert lint(text).problems[0].line == 2


def test_nul_byte_is_located_by_line_and_column() -> None:
    text = pod().replace("name: p\n", "name: p\x00q\n")
    p = one(lint(text), "yaml-syntax")
    assert (p.line, p.column, p.message) == (
        4, 10, "YAML syntax error: the NUL character U+0000 is not allowed in YAML text")
    assert "position" not in p.message
    # one finding for the file, not one per document after it (the reader stops at the NUL)
    two = pod() + "---\n" + text + "---\n" + pod(name="r")
    assert [(p.rule, p.line) for p in errors(lint(two))] == [("yaml-syntax", 19)]


def test_yaml_errors_keep_their_ids() -> None:
    assert one(lint("a: [1\n"), "yaml-syntax").line == 1  # where the "[" opens
    assert one(lint("apiVersion: v1\nkind: Pod\nkind: Pod\nmetadata: {name: x}\n"),
               "yaml-duplicate-key").line == 3


def test_field_path_quotes_keys_that_are_not_words() -> None:
    assert field_path(("spec", "nodeSelector", "cloud.google.com/x", 0, 'a"b')) == \
        'spec.nodeSelector["cloud.google.com/x"][0]["a\\"b"]'


# --- a wrong-typed value is reported once --------------------------------------------------
# The schema's (or the quantity check's) finding is the one report; the rules that read the
# value do not add their reading of it ("parallelism: four" is not "parallelism 1").

JS = "spec.replicatedJobs[0].template.spec"
WEBHOOK = (DATA / "faultkinds" / "webhook.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(("text", "found"), [
    (JOBSET.replace("parallelism: 4", "parallelism: four"),
     ("k8s-schema", f"{JS}.parallelism", 16, "expected an integer, got a string")),
    (JOBSET.replace("completionMode: Indexed", "completionMode: 7"),
     ("k8s-schema", f"{JS}.completionMode", 14, "expected a string, got an integer")),
    (JOBSET.replace("ports: [{containerPort: 8471}]", "ports: four"),
     ("k8s-schema", f"{JS}.template.spec.containers[0].ports", 28,
      "expected a list, got a string")),
    (JOBSET.replace("requests: {google.com/tpu: 4}", "requests: {google.com/tpu: four}"),
     ("k8s-quantity", f'{JS}.template.spec.containers[0].resources.requests["google.com/tpu"]',
      32, "'four' is not a Kubernetes quantity")),
    (re.sub(r"nodeSelector:\n.*\n.*\n", "nodeSelector: tpu-v6e-slice\n", JOBSET),
     ("k8s-schema", f"{JS}.template.spec.nodeSelector", 22,
      "expected a mapping (key: value), got a string")),
], ids=["parallelism", "completionMode", "ports", "tpu-request", "nodeSelector"])
def test_a_wrong_typed_value_is_one_finding(text: str, found: tuple) -> None:
    result = lint(text)
    assert [(p.rule, p.path, p.line, p.message) for p in result.problems
            if p.severity is not Severity.INFO] == [found]


def test_negative_tpu_request_is_one_finding_per_field() -> None:
    text = JOBSET.replace("{google.com/tpu: 4}", "{google.com/tpu: -4}")
    tpu = f"{JS}.template.spec.containers[0].resources"
    assert [(p.rule, p.path, p.line) for p in lint(text).problems
            if p.severity is not Severity.INFO] == [
        ("k8s-quantity", f'{tpu}.requests["google.com/tpu"]', 32),
        ("k8s-quantity", f'{tpu}.limits["google.com/tpu"]', 33)]


def test_wrong_typed_port_feeds_no_webhook_rule() -> None:
    """The webhook's own port, and the ports of the Service it calls (another object)."""
    for text, path, line in (
            (WEBHOOK.replace("      port: 443\n", "      port: four\n"),
             "webhooks[0].clientConfig.service.port", 16),
            (WEBHOOK.replace("- {port: 443, targetPort", "- {port: https, targetPort"),
             "spec.ports[0].port", 28)):
        result = lint(text)
        assert not by_rule(result, "webhook-service-port")
        p = one(result, "k8s-schema")
        assert (p.path, p.line, p.message) == (path, line, "expected an integer, got a string")
        # an independent finding at a field above the bad one stays
        assert one(result, "webhook-ca-bundle").path == "webhooks[0].clientConfig.caBundle"


def test_unreadable_selector_is_one_finding_named_like_lint_names_it() -> None:
    """The loader's yaml-value finding writes the field as lint does, and the TPU rules do
    not read the unreadable value as a missing selector."""
    text = pod().replace("gke-tpu-topology: 2x4", "gke-tpu-topology: !foo 2x4")
    assert [(p.rule, p.path, p.line, p.message) for p in lint(text).problems
            if p.severity is not Severity.INFO] == [
        ("yaml-value", 'spec.nodeSelector["cloud.google.com/gke-tpu-topology"]', 8,
         "YAML value cannot be read: could not determine a constructor for the tag '!foo'")]


@pytest.mark.parametrize("edit", [("  name: train\n", "  name: 7\n"),
                                  ("metadata:\n  name: train\n", "metadata: four\n")],
                         ids=["name", "metadata"])
def test_object_with_a_wrong_typed_name_feeds_no_rule_of_another_object(
        edit: tuple[str, str]) -> None:
    """A Job named 7 is not "Job ''" in the findings of its headless Service, and the Service's
    selector (job-name: train) is not reported as missing the Job's pods: both stand on the
    name that cannot be read. The faults that do not (the Service's publishNotReadyAddresses,
    the Job's parallelism) are reported in the same run (issue 25)."""
    text = (DATA / "faultkinds" / "wiring-headless-service.yaml").read_text(encoding="utf-8")
    assert text.count(edit[0]) == 1
    bad = text.replace(*edit).replace("  parallelism: 4\n", "  parallelism: 3\n")
    path = "metadata.name" if edit[0] == "  name: train\n" else "metadata"
    found = [(p.rule, p.path, p.line) for p in lint(bad).problems
             if p.severity is not Severity.INFO]
    assert found == [("wiring-publish-not-ready", "spec.publishNotReadyAddresses", 7),
                     ("k8s-schema", path, 15 if path == "metadata.name" else 14),
                     ("tpu-job-shape", "spec.parallelism", 19 if path == "metadata.name"
                      else 18)]
    assert not any("''" in p.message for p in lint(bad).problems)


def test_wrong_typed_selector_value_is_not_also_a_selector_mismatch() -> None:
    """The finding at the mapping that holds the bad value is its consequence."""
    text = (DATA / "faultkinds" / "wiring-headless-service.yaml").read_text(encoding="utf-8")
    bad = text.replace("    job-name: train\n", "    job-name: 7\n")
    assert bad != text
    assert [(p.rule, p.path, p.line, p.message) for p in lint(bad).problems
            if p.severity is Severity.ERROR] == [
        ("k8s-schema", "spec.selector.job-name", 10, "expected a string, got an integer")]


def test_enum_field_of_the_wrong_type_is_one_finding() -> None:
    """Not also "'7' is not an allowed value" (CRD enums: GKE's Network objects)."""
    text = y("""
        apiVersion: networking.gke.io/v1
        kind: Network
        metadata: {name: net}
        spec:
          type: 7
        """)
    assert [(p.rule, p.path, p.line, p.message) for p in lint(text).problems
            if p.severity is not Severity.INFO] == [
        ("k8s-schema", "spec.type", 5, "expected a string, got an integer")]


# --- TPU controllers -----------------------------------------------------------------------

def test_multislice_jobset_passes() -> None:
    assert errors(lint(JOBSET)) == [] and not by_rule(lint(JOBSET), "tpu-multislice")
    # JobSet's webhook defaults completionMode to Indexed; a plain Job has no such default
    assert errors(lint(JOBSET.replace("        completionMode: Indexed\n", ""))) == []


@pytest.mark.parametrize(("edit", "path", "message"), [
    (("completions: 4", "completions: 2"), "spec.replicatedJobs[0].template.spec.completions",
     "completions 2, but v6e 4x4 has 4 VMs: a multi-host Job runs exactly one pod per VM, "
     "all at once"),
    (("google.com/tpu: 4}", "google.com/tpu: 8}"),
     'spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests'
     '["google.com/tpu"]',
     "google.com/tpu: 8 per pod, but v6e 4x4 VMs have 4 chips; a TPU pod must take every chip "
     "of its VM"),
])
def test_jobset_shape_errors(edit: tuple[str, str], path: str, message: str) -> None:
    result = lint(JOBSET.replace(*edit))
    assert [(p.path, p.message) for p in errors(result)] == [(path, message)], show(result)


def test_multislice_warnings() -> None:
    text = JOBSET.replace("  annotations:\n    alpha.jobset.sigs.k8s.io/exclusive-topology:"
                          " cloud.google.com/gke-nodepool\n", "") \
        .replace('value: "2"', 'value: "3"')
    msgs = {p.message for p in by_rule(lint(text), "tpu-multislice")}
    assert msgs == {
        "multislice JobSet (2 slices) without annotation alpha.jobset.sigs.k8s.io/"
        "exclusive-topology: cloud.google.com/gke-nodepool; two slices may land on one node "
        "pool",
        "MEGASCALE_NUM_SLICES=3 but the replicated job has 2 replicas (slices)"}
    single = lint(JOBSET.replace("4x4", "2x4").replace("google.com/tpu: 4", "google.com/tpu: 8")
                  .replace("completions: 4", "completions: 1")
                  .replace("parallelism: 4", "parallelism: 1"))
    assert one(single, "tpu-multislice").message == (
        "2 replicas of single-host v6e 2x4: multislice runs only on multi-host slices; these "
        "run as independent single-host jobs")


def test_lws_size_and_ray_hosts() -> None:
    lws = y("""
        apiVersion: leaderworkerset.x-k8s.io/v1
        kind: LeaderWorkerSet
        metadata: {name: serve, labels: {managed-mldiagnostics-gke: "true"}}
        spec:
          leaderWorkerTemplate:
            size: 2
            workerTemplate:
              spec:
                nodeSelector:
                  cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice
                  cloud.google.com/gke-tpu-topology: 4x4
                containers:
                - name: jetstream
                  image: js
                  ports: [{containerPort: 8471}]
                  resources: {requests: {google.com/tpu: 4}, limits: {google.com/tpu: 4}}
        """)
    p = one(lint(lws), "tpu-workload-kind")
    assert (p.path, p.message, p.hint) == (
        "spec.leaderWorkerTemplate.size",
        "size 2 gives 2 TPU pod(s) per group, but v5e 4x4 has 4 VMs", "set size: 4")
    assert not by_rule(lint(lws.replace("size: 2", "size: 4")), "tpu-workload-kind")
    ray = y("""
        apiVersion: ray.io/v1
        kind: RayCluster
        metadata: {name: rc}
        spec:
          headGroupSpec:
            rayStartParams: {}
            template: {spec: {containers: [{name: head, image: ray}]}}
          workerGroupSpecs:
          - groupName: tpu
            numOfHosts: 2
            rayStartParams: {}
            template:
              spec:
                nodeSelector:
                  cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice
                  cloud.google.com/gke-tpu-topology: 2x2x4
                containers:
                - name: w
                  image: ray
                  ports: [{containerPort: 8471}]
                  resources: {requests: {google.com/tpu: 4}, limits: {google.com/tpu: 4}}
        """)
    r = one(lint(ray), "tpu-workload-kind")
    assert (r.path, r.severity) == ("spec.workerGroupSpecs[0].numOfHosts", Severity.ERROR)
    assert r.message.startswith("numOfHosts 2 but v4 2x2x4 has 4 VMs")


def test_deployment_on_multihost_warns_about_replicas_and_env() -> None:
    dep = y("""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          replicas: 3
          selector: {matchLabels: {app: d}}
          template:
            metadata: {labels: {app: d}}
            spec:
              nodeSelector:
                cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice
                cloud.google.com/gke-tpu-topology: 2x2x2
              containers:
              - name: m
                image: i
                ports: [{containerPort: 8471}]
                resources: {requests: {google.com/tpu: 4}, limits: {google.com/tpu: 4}}
        """)
    result = lint(dep)
    assert errors(result) == [], show(result)
    assert one(result, "tpu-workload-kind").path == "spec.replicas"
    assert one(result, "tpu-worker-env").message.startswith(
        "Deployment pods on multi-host v4 2x2x2 get no TPU_WORKER_ID")


def test_worker_env_ports_and_selectors() -> None:
    multi = MULTIHOST.read_text()
    env = multi.replace("        command:\n", "        env:\n        - name: TPU_WORKER_HOSTNAMES\n"
                                             "          value: a,b\n        command:\n")
    p = one(lint(env), "tpu-worker-env")
    assert p.severity is Severity.ERROR and p.message == \
        "TPU_WORKER_HOSTNAMES lists 2 host(s), but v4 2x2x4 has 4 VMs"
    env4 = env.replace("value: a,b", "value: a,b,c,d")
    assert one(lint(env4), "tpu-worker-env").severity is Severity.WARNING
    no_port = multi.replace("        - containerPort: 8471 # Default port using which TPU VMs "
                            "communicate\n", "")
    assert one(lint(no_port), "tpu-worker-ports").message.startswith(
        "multi-host TPU container does not declare containerPort 8471")
    no_sel = multi.replace("        cloud.google.com/gke-tpu-topology: 2x2x4\n", "")
    assert one(lint(no_sel), "tpu-selectors").severity is Severity.WARNING
    assert one(lint(no_sel, autopilot=True), "tpu-selectors").severity is Severity.ERROR
    alias = one(lint(pod(acc="v5e")), "tpu-accelerator")
    assert alias.message == "'v5e' names TPU v5e, but GKE labels its nodes 'tpu-v5-lite-podslice'"


def test_capacity_contradictions() -> None:
    text = pod(node_extra="    cloud.google.com/gke-spot: \"true\"\n"
                          "    cloud.google.com/reservation-name: r1\n")
    msgs = [p.message for p in by_rule(lint(text), "tpu-capacity")]
    assert msgs == ["the pod asks for Spot capacity and for reservation 'r1' at once; they are "
                    "different node pools"]


def test_tpu7x_two_containers_only_warn() -> None:
    text = pod(acc="tpu7x", topo="2x2x1", chips=2,
               container_extra="  - name: second\n    image: python:3.10\n    resources:\n"
                               "      requests: {google.com/tpu: 2}\n"
                               "      limits: {google.com/tpu: 2}\n")
    result = lint(text)
    assert errors(result) == [], show(result)
    assert one(result, "tpu-containers").severity is Severity.WARNING


# --- Autopilot -----------------------------------------------------------------------------

def test_autopilot_rules_only_with_the_flag() -> None:
    extra = ("  hostIPC: true\n  volumes:\n  - name: v\n    hostPath: {path: /var/lib}\n"
             "  - name: logs\n    hostPath: {path: /var/log/app}\n")
    cextra = ("    securityContext:\n      capabilities: {add: [CAP_CHOWN, SYS_ADMIN]}\n"
              "    volumeMounts: [{name: logs, mountPath: /l}]\n")
    text = pod(spec_extra=extra, container_extra=cextra)
    assert not [p for p in lint(text).problems if p.rule.startswith("autopilot-")]
    result = lint(text, autopilot=True)
    got = {(p.rule, p.path, p.severity.value) for p in result.problems
           if p.rule.startswith("autopilot-")}
    assert got == {
        ("autopilot-host-namespaces", "spec.hostIPC", "error"),
        ("autopilot-host-path", "spec.volumes[0].hostPath.path", "error"),
        ("autopilot-host-path", "spec.containers[0].volumeMounts[0].readOnly", "warning"),
        ("autopilot-capabilities", "spec.containers[0].securityContext.capabilities.add[0]",
         "warning"),
        ("autopilot-capabilities", "spec.containers[0].securityContext.capabilities.add[1]",
         "warning"),
    }, show(result)
    cap = next(p for p in result.problems if p.path.endswith("add[0]"))
    assert cap.hint == "use CHOWN (without CAP_)"


def test_autopilot_cluster_objects_and_scheduling() -> None:
    hook = y("""
        apiVersion: admissionregistration.k8s.io/v1
        kind: MutatingWebhookConfiguration
        metadata: {name: h}
        webhooks:
        - name: h.example.com
          admissionReviewVersions: [v1]
          sideEffects: None
          clientConfig: {url: "https://h.example.com"}
          rules: [{apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}]
        """)
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: kube-system}\n"
    sel = pod(node_extra="    team: ml\n").replace(
        "  name: p\n", "  name: p\n  annotations:\n"
        "    cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"\n")
    result = lint(hook, cm, sel, autopilot=True)
    assert {p.rule for p in result.problems if p.rule.startswith("autopilot-")} == {
        "autopilot-webhook", "autopilot-managed-namespace", "autopilot-node-affinity",
        "autopilot-annotations"}, show(result)
    tolerated = sel.replace("  containers:\n", "  tolerations: [{key: team, operator: Exists}]\n"
                                               "  containers:\n")
    assert not by_rule(lint(tolerated, autopilot=True), "autopilot-node-affinity")


# --- ML Diagnostics ------------------------------------------------------------------------

def test_label_on_webhook_kinds() -> None:
    unlabelled = JOBSET.replace('  labels: {managed-mldiagnostics-gke: "true"}\n', "")
    p = one(lint(unlabelled), "mldiag-label")
    assert p.severity is Severity.WARNING and p.path == "metadata.labels.managed-mldiagnostics-gke"
    assert p.message == ("JobSet 'train' is not labelled managed-mldiagnostics-gke=true, and its "
                         "namespace is not among the linted files: the ML Diagnostics webhook "
                         "will not inject run metadata into its pods")
    ns = y("""
        apiVersion: v1
        kind: Namespace
        metadata: {name: ml, labels: {managed-mldiagnostics-gke: "true"}}
        """)
    in_ns = unlabelled.replace("  name: train\n", "  name: train\n  namespace: ml\n")
    assert not by_rule(lint(in_ns, ns), "mldiag-label")
    wrong = JOBSET.replace('managed-mldiagnostics-gke: "true"', 'managed-mldiagnostics-gke: "yes"')
    (p,) = [p for p in by_rule(lint(wrong), "mldiag-label") if p.value == "yes"]
    assert p.message == "managed-mldiagnostics-gke: 'yes': ML Diagnostics acts only on 'true'"


def test_host_network_port_and_identity() -> None:
    sa = ("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: trainer}\n")
    result = lint(JOBSET, sa)
    p = one(result, "mldiag-workload-identity")
    assert p.file == "m1.yaml" and p.message == (
        "ServiceAccount 'trainer' (used by JobSet 'train') has no iam.gke.io/gcp-service-account "
        "annotation: its pods get no Google identity for ML Diagnostics")
    gsa = "trainer@my-proj.iam.gserviceaccount.com"
    annotated = sa.replace("{name: trainer}", "{name: trainer, annotations: "
                           f"{{iam.gke.io/gcp-service-account: {gsa}}}}}")
    assert not by_rule(lint(JOBSET, annotated), "mldiag-workload-identity")
    hostnet = JOBSET.replace("            restartPolicy: Never\n",
                             "            restartPolicy: Never\n"
                             "            hostNetwork: true\n") \
        .replace("ports: [{containerPort: 8471}]",
                 "ports: [{containerPort: 8471}, {containerPort: 9999}]")
    result = lint(hostnet)
    assert one(result, "mldiag-host-network").path.endswith("spec.hostNetwork")
    assert one(result, "mldiag-profiler-port").message == (
        "the pod uses containerPort 9999, the port the ML Diagnostics profiler (on_demand_xprof) "
        "listens on in the TPU process")
    conn = ("apiVersion: diagon.gke.io/v1alpha1\nkind: MLDiagnosticsConnection\nmetadata: "
            "{name: c}\nspec: {triggerCapture: {capturePort: 9000, durationSeconds: 5, podName: "
            "a, podNamespace: ns, profiler: google_cloud_mldiagnostics, storageLocation: gs://b}}\n")
    assert one(lint(conn), "mldiag-connection").message == \
        "capturePort 9000, but the ML Diagnostics profiler listens on 9999"
    assert not [p for p in lint(hostnet, diagnostics=False).problems
                if p.rule.startswith("mldiag-")]


def test_every_rule_has_a_title_and_every_error_rule_a_source() -> None:
    for rid, info in RULES.items():
        if info.scope != "manifest":
            continue
        assert info.title, rid
        if info.severity is Severity.ERROR and not rid.startswith("yaml-"):
            assert info.source and info.source.startswith("https://"), rid


def test_every_fact_and_crd_names_a_source() -> None:
    data = store().doc("kubernetes")
    sources = store().sources

    def tags(node: object) -> list[str]:
        if isinstance(node, dict):
            found = [node["source"]] if isinstance(node.get("source"), str) else []
            return found + [t for v in node.values() for t in tags(v)]
        if isinstance(node, list):
            return [t for v in node for t in tags(v)]
        return []

    used = tags(data)
    assert used and set(used) <= set(sources), set(used) - set(sources)
    assert all(str(sources[t].url or "").startswith("https://") for t in used)
    crds = yaml.safe_load((DATA_DIR / "crds.yaml").read_text())
    for k in crds["kinds"]:
        src = k["source"]
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]) and src["url"].startswith("https://")
        assert src["repo"].count("/") == 1 and src["path"]
