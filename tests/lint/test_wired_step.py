"""Issue 25, the check's third step, *wired* (provisioner/mldiag_provision/cluster/wiring.py):
env that Kubernetes leaves unexpanded, per-replica env of JobSet and LeaderWorkerSet pods,
coordinators in another namespace or behind switched-off JobSet DNS, and the same step in
preflight over the manifests a recipe renders.

Each test names the public source its manifest and expectation come from (Kubernetes docs
and issues, kubernetes-sigs/jobset, kubernetes-sigs/lws).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from mldiag_provision import pipeline
from mldiag_provision.cluster import wiring
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintContext, LintOptions
from mldiag_provision.lint.loading import Source, load_sources
from mldiag_provision.lint.schema import default_version

from .support import by_rule, lint, one

COORDINATOR = "wiring-coordinator-address"
REFERENCE = "wiring-env-reference"
ROOT = Path(__file__).resolve().parents[2]


def y(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# --- env Kubernetes leaves as written, any variable (wiring-env-reference) ---------------------

JOB_FOO = y("""
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: job-foo
    spec:
      parallelism: 1
      completions: 1
      completionMode: Indexed
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: foo
              image: debian:bookworm
              command: ["/bin/sh"]
              args: ["-c", "echo $JOB_ID; echo $JOB_COMPLETION_INDEX"]
              env:
                - name: JOB_ID
                  value: $(JOB_COMPLETION_INDEX)
    """)


def test_job_completion_index_is_added_after_the_template_env() -> None:
    """Source: kubernetes/kubernetes#121523 ("JOB_COMPLETION_INDEX is bound too late for env
    var expansion", https://github.com/kubernetes/kubernetes/issues/121523): this Job's
    logs print '$(JOB_COMPLETION_INDEX)' for JOB_ID, because the Job controller appends
    JOB_COMPLETION_INDEX after the template's env. Defining it first from the pod's
    completion-index annotation expands."""
    p = one(lint(JOB_FOO, diagnostics=False), REFERENCE)
    assert p.severity is Severity.ERROR
    assert p.path == "spec.template.spec.containers[0].env[0].value"
    assert p.value == "$(JOB_COMPLETION_INDEX)"
    assert ("refers to $(JOB_COMPLETION_INDEX), which the Job controller adds after the "
            "template's own env (kubernetes/kubernetes#121523)") in p.message
    assert "JOB_ID is '$(JOB_COMPLETION_INDEX)'" in p.message
    assert p.hint is not None and \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']" in p.hint
    assert p.source == "https://github.com/kubernetes/kubernetes/issues/121523"
    fixed = JOB_FOO.replace(
        "          env:\n",
        "          env:\n"
        "            - name: JOB_COMPLETION_INDEX\n"
        "              valueFrom:\n"
        "                fieldRef:\n"
        "                  fieldPath: metadata.annotations['batch.kubernetes.io/"
        "job-completion-index']\n")
    assert fixed != JOB_FOO
    assert not by_rule(lint(fixed, diagnostics=False), REFERENCE)
    # a Pod has no Job controller to add it: a reference to a name defined nowhere is not
    # judged for a variable that is no coordinator (an escaped or undefined one may be meant)
    pod = y("""
        apiVersion: v1
        kind: Pod
        metadata: {name: foo}
        spec:
          containers:
          - name: foo
            image: debian:bookworm
            env: [{name: JOB_ID, value: $(JOB_COMPLETION_INDEX)}]
        """)
    assert not by_rule(lint(pod, diagnostics=False), REFERENCE)


DEPENDENT = y("""
    apiVersion: v1
    kind: Pod
    metadata:
      name: dependent-envars-demo
    spec:
      containers:
        - name: dependent-envars-demo
          args:
            - printf UNCHANGED_REFERENCE=$UNCHANGED_REFERENCE; sleep 30
          command:
            - sh
            - -c
          image: busybox:1.28
          env:
            - name: SERVICE_PORT
              value: "80"
            - name: SERVICE_IP
              value: "172.17.0.1"
            - name: UNCHANGED_REFERENCE
              value: "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"
            - name: PROTOCOL
              value: "https"
            - name: SERVICE_ADDRESS
              value: "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"
            - name: ESCAPED_REFERENCE
              value: "$$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"
    """)


def test_the_kubernetes_pages_dependent_envars_example() -> None:
    """Source: Kubernetes docs, Define Dependent Environment Variables
    (https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/,
    pods/inject/dependent-envars.yaml): UNCHANGED_REFERENCE prints "$(PROTOCOL)://172.17.0.1:80"
    (PROTOCOL is defined after it); SERVICE_ADDRESS expands; ESCAPED_REFERENCE is escaped on
    purpose (not reported for a variable that is no coordinator)."""
    p = one(lint(DEPENDENT, diagnostics=False), REFERENCE)
    assert p.path == "spec.containers[0].env[2].value" and p.severity is Severity.ERROR
    assert ("UNCHANGED_REFERENCE '$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)' refers to "
            "$(PROTOCOL), which env[3] defines after it") in p.message
    assert "stays '$(PROTOCOL)://172.17.0.1:80'" in p.message
    assert p.hint == "move the PROTOCOL entry above UNCHANGED_REFERENCE in env"


# --- JobSet pod labels read through fieldRef ----------------------------------------------------

XPK = y("""
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata:
      name: xpk-train
    spec:
      replicatedJobs:
      - name: slice-job
        replicas: 2
        template:
          spec:
            parallelism: 2
            completions: 2
            backoffLimit: 0
            template:
              spec:
                restartPolicy: Never
                containers:
                - name: jax
                  image: python:3.12
                  env:
                  - name: REPLICATED_JOB_NAME
                    valueFrom:
                      fieldRef:
                        fieldPath: metadata.annotations['jobset.sigs.k8s.io/replicatedjob-name']
                  - name: JOBSET_NAME
                    valueFrom:
                      fieldRef:
                        fieldPath: metadata.annotations['jobset.sigs.k8s.io/jobset-name']
                  - name: JAX_COORDINATOR_ADDRESS
                    value: "$(JOBSET_NAME)-$(REPLICATED_JOB_NAME)-0-0.$(JOBSET_NAME)"
    """)


def test_a_jobset_key_the_controller_never_sets_reads_empty() -> None:
    """Sources: kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go (the pod keys:
    jobset.sigs.k8s.io/replicatedjob-name, not replicated-job-name) and kubernetes/kubernetes
    pkg/fieldpath (a missing label or annotation reads as ''); xpk's env
    (AI-Hypercomputer/xpk docker_resources.py) reads the real keys. A misspelt key leaves
    the coordinator address '<jobset>--0-0.<jobset>'."""
    assert not by_rule(lint(XPK, diagnostics=False), COORDINATOR)
    typo = XPK.replace("jobset.sigs.k8s.io/replicatedjob-name",
                       "jobset.sigs.k8s.io/replicated-job-name")
    p = one(lint(typo, diagnostics=False), COORDINATOR)
    assert p.severity is Severity.WARNING  # the key list grows with JobSet releases
    assert p.path == ("spec.replicatedJobs[0].template.spec.template.spec.containers[0]"
                      ".env[2].value")
    assert p.message.startswith(
        "JAX_COORDINATOR_ADDRESS (through REPLICATED_JOB_NAME) reads "
        "jobset.sigs.k8s.io/replicated-job-name, which JobSet never sets on its pods")
    assert "is 'xpk-train--0-0.xpk-train'" in p.message
    # the per-replica index is read at run time: not judged
    per_replica = XPK.replace("$(REPLICATED_JOB_NAME)-0-0", "$(REPLICATED_JOB_NAME)-$(I)-0")
    per_replica = per_replica.replace(
        "              - name: JAX_COORDINATOR_ADDRESS\n",
        "              - name: I\n                valueFrom:\n                  fieldRef:\n"
        "                    fieldPath: metadata.labels['jobset.sigs.k8s.io/job-index']\n"
        "              - name: JAX_COORDINATOR_ADDRESS\n")
    assert "job-index" in per_replica
    assert not by_rule(lint(per_replica, diagnostics=False), COORDINATOR)


# --- namespaces ------------------------------------------------------------------------------

TRAIN = y("""
    apiVersion: v1
    kind: Service
    metadata: {name: train-workers, namespace: train}
    spec:
      clusterIP: None
      publishNotReadyAddresses: true
      selector: {job-name: train}
    ---
    apiVersion: batch/v1
    kind: Job
    metadata: {name: train, namespace: train}
    spec:
      completionMode: Indexed
      completions: 2
      parallelism: 2
      template:
        spec:
          subdomain: train-workers
          restartPolicy: Never
          containers:
          - name: main
            image: python:3.12
    ---
    apiVersion: batch/v1
    kind: Job
    metadata: {name: driver, namespace: default}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: driver
            image: python:3.12
            env:
            - {name: MASTER_ADDR, value: "train-0.train-workers"}
    """)


@pytest.mark.parametrize("address, says", [
    ("train-0.train-workers", "has no namespace, so it resolves in the pod's own namespace "
                              "'default', but Job 'train' runs pod 'train-0' in namespace "
                              "'train'"),
    ("train-0.train-workers.prod.svc.cluster.local",
     "names namespace 'prod', but Job 'train' runs pod 'train-0' in namespace 'train'"),
    ("train-0.train-workers.train", None),
    ("train-0.train-workers.train.svc.cluster.local", None),
])
def test_a_coordinator_in_another_namespace_needs_it_in_the_name(address: str,
                                                                 says: str | None) -> None:
    """Source: Kubernetes docs, DNS for Services and Pods, Namespaces of Services
    (https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#namespaces-of-services):
    "DNS queries that don't specify a namespace are limited to the Pod's namespace"; a
    query for data from namespace test returns nothing, data.prod returns the Service."""
    result = lint(TRAIN.replace("train-0.train-workers", address), diagnostics=False)
    if says is None:
        assert not by_rule(result, COORDINATOR)
        return
    p = one(result, COORDINATOR)
    assert says in p.message, p.message
    assert p.severity is Severity.ERROR
    assert p.expected == "train-0.train-workers.train"
    assert p.path == "spec.template.spec.containers[0].env[0].value" and p.file == "m0.yaml"


# --- JobSet with DNS hostnames off ------------------------------------------------------------

DARK = y("""
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata:
      name: paramsrv
    spec:
      network:
        enableDNSHostnames: false
      replicatedJobs:
      - name: driver
        template:
          spec:
            template:
              spec:
                restartPolicy: Never
                containers:
                - {name: driver, image: python:3.12}
      - name: workers
        replicas: 4
        template:
          spec:
            template:
              spec:
                restartPolicy: Never
                containers:
                - name: worker
                  image: python:3.12
                  env:
                  - {name: MASTER_ADDR, value: paramsrv-driver-0-0.paramsrv}
    """)


def test_jobset_dns_hostnames_off_with_one_pod_per_job() -> None:
    """Sources: kubernetes-sigs/jobset jobset_types.go Network ("EnableDNSHostnames allows
    pods to be reached via their hostnames"; off: no headless Service, no subdomain) and
    kubernetes-sigs/jobset#138 (DNS hostnames for one-pod Jobs). Jobs of one pod each get no
    wiring-jobset-network finding (that rule is about multi-pod Jobs), so the address is the
    one place the switch shows."""
    result = lint(DARK, diagnostics=False)
    assert not by_rule(result, "wiring-jobset-network")
    p = one(result, COORDINATOR)
    assert p.severity is Severity.ERROR
    assert ("MASTER_ADDR 'paramsrv-driver-0-0.paramsrv' names pod 'paramsrv-driver-0-0' of "
            "JobSet 'paramsrv', which sets network.enableDNSHostnames: false") in p.message
    assert p.hint == "remove network.enableDNSHostnames: false from the JobSet"
    on = DARK.replace("    enableDNSHostnames: false\n", "    enableDNSHostnames: true\n")
    assert on != DARK
    assert not by_rule(lint(on, diagnostics=False), COORDINATOR)


# --- LeaderWorkerSet ------------------------------------------------------------------------

LWS = y("""
    apiVersion: leaderworkerset.x-k8s.io/v1
    kind: LeaderWorkerSet
    metadata:
      name: vllm
    spec:
      replicas: 2
      leaderWorkerTemplate:
        size: 2
        restartPolicy: RecreateGroupOnPodRestart
        leaderTemplate:
          spec:
            containers:
            - name: vllm-leader
              image: vllm/vllm-openai:latest
              command: [sh, -c, "bash serve.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE)"]
        workerTemplate:
          spec:
            containers:
            - name: vllm-worker
              image: vllm/vllm-openai:latest
              env:
              - {name: MASTER_ADDR, value: "$(LWS_LEADER_ADDRESS)"}
              command: [sh, -c, "bash multi-node-serving.sh worker --ray_address=$(MASTER_ADDR)"]
    """)
WORKER_ENV = "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].env[0].value"


@pytest.mark.parametrize("address, severity, says", [
    ("$(LWS_LEADER_ADDRESS)", None, None),
    ("vllm-0.vllm", Severity.WARNING,
     "names the leader of group 0 for every group of LeaderWorkerSet 'vllm', which runs 2 "
     "groups"),
    ("vllm-2.vllm", Severity.ERROR, "it runs 2 group(s) (group index 0..1)"),
    ("vllm-0-2.vllm", Severity.ERROR,
     "each group has 2 pod(s): leader vllm-0 and workers vllm-0-1 .. vllm-0-1"),
    ("vllm-0.vllm-svc", Severity.ERROR,
     "puts its pods under 'vllm' (the LeaderWorkerSet's name)"),
])
def test_leaderworkerset_leader_addresses(address: str, severity: Severity | None,
                                          says: str | None) -> None:
    """Sources: kubernetes-sigs/lws pkg/utils/pod/pod_utils.go (LWS_LEADER_ADDRESS =
    <lws>-<group>.<lws>.<namespace>, put first in env so others may reference it:
    kubernetes-sigs/lws#152), the LWS vLLM example (workers run ray start with
    --ray_address=$(LWS_LEADER_ADDRESS)); pod names <lws>-<group> and <lws>-<group>-<worker>
    (lws docs, "How LWS Manages Pods"). A literal leader is group 0's for every group."""
    result = lint(LWS.replace('"$(LWS_LEADER_ADDRESS)"', f'"{address}"'), diagnostics=False)
    if says is None:
        assert not by_rule(result, COORDINATOR) and not by_rule(result, REFERENCE)
        return
    p = one(result, COORDINATOR)
    assert says in p.message, p.message
    assert p.severity is severity and p.path == WORKER_ENV
    if severity is Severity.WARNING:
        assert p.hint == "set MASTER_ADDR to $(LWS_LEADER_ADDRESS) (LWS sets it per group)"


def test_one_group_may_name_its_leader() -> None:
    """With replicas: 1 there is one leader, vllm-0: a literal address names it (lws
    pod_utils.go)."""
    one_group = LWS.replace("  replicas: 2\n", "  replicas: 1\n").replace(
        '"$(LWS_LEADER_ADDRESS)"', '"vllm-0.vllm"')
    assert not by_rule(lint(one_group, diagnostics=False), COORDINATOR)


# --- the step itself -------------------------------------------------------------------------

def test_the_step_reports_every_wired_verdict_in_one_pass() -> None:
    """cluster.wiring.wired returns the verdicts of all three parts for one input set, each
    with step 'wired', and lint reports the same set (no part waits for another)."""
    text = "---\n".join((JOB_FOO, DEPENDENT, DARK))
    loaded = load_sources([Source("m.yaml", text)])
    ctx = LintContext(loaded.resources, _catalog(), LintOptions(default_version()))
    verdicts = list(wiring.wired(ctx))
    assert {v.step for v in verdicts} == {"wired"}
    assert sorted(v.check for v in verdicts) == ["coordinator-address", "env-reference",
                                                 "env-reference"]
    found = [p for p in lint(text, diagnostics=False).problems if p.rule.startswith("wiring-")]
    assert sorted(p.rule for p in found) == sorted(f"wiring-{v.check}" for v in verdicts)


def _catalog():  # type: ignore[no-untyped-def]
    from mldiag_provision.catalog.tpu import load_catalog

    return load_catalog()


# --- preflight: the same step over a recipe's rendered manifests ------------------------------

def _recipe(env: dict[str, str]) -> dict:
    data = yaml.safe_load((ROOT / "recipes" / "tpu-v6e-4x4-multislice-standard-spot.yaml")
                          .read_text(encoding="utf-8"))
    data["spec"]["workloads"][0]["env"] = env
    return data


def _check(data: dict) -> list[Problem]:
    return pipeline.check_text(yaml.safe_dump(data, sort_keys=False), "r.yaml").report.problems


def test_preflight_finds_a_recipe_coordinator_that_names_no_pod() -> None:
    """Issue 25's example, written in a recipe's env instead of a manifest: validate renders
    the multislice JobSet (replicated job 'slice') and runs the wired step on it, so the
    address naming replicated job 'worker' is found before anything is created
    (kubernetes-sigs/jobset jobset-with-network.yaml: <jobset>-<replicatedJob>-<job>-<pod>)."""
    bad = _check(_recipe({"JAX_COORDINATOR_ADDRESS":
                          "multislice-train-worker-0-0.multislice-train:1234"}))
    (p,) = [x for x in bad if x.rule == COORDINATOR]
    assert p.path == "spec.workloads[0].env.JAX_COORDINATOR_ADDRESS" and p.line > 0
    assert p.severity is Severity.ERROR
    assert "no replicated job 'worker' (replicated jobs: slice (2 job(s) x 4 pod(s)))" \
        in p.message
    good = _check(_recipe({"JAX_COORDINATOR_ADDRESS":
                           "multislice-train-slice-0-0.multislice-train:1234"}))
    assert not [x for x in good if x.rule.startswith("wiring-")]


def test_only_an_indexed_job_gets_job_completion_index() -> None:
    """Source: kubernetes/kubernetes#121523 and the Job docs (the completion index exists in
    Indexed mode only): a NonIndexed Job's reference names a variable nothing defines, which
    is not reported for a variable that is no coordinator; a JobSet's Jobs are Indexed by
    default (jobset webhook), so its templates are held to it."""
    non_indexed = JOB_FOO.replace("  completionMode: Indexed\n", "  completionMode: NonIndexed\n")
    assert non_indexed != JOB_FOO
    assert not by_rule(lint(non_indexed, diagnostics=False), REFERENCE)
    jobset = XPK.replace(
        "              - name: REPLICATED_JOB_NAME\n",
        "              - {name: RANK, value: $(JOB_COMPLETION_INDEX)}\n"
        "              - name: REPLICATED_JOB_NAME\n")
    assert jobset != XPK
    p = one(lint(jobset, diagnostics=False), REFERENCE)
    assert p.path.endswith("containers[0].env[0].value")


def test_lws_replaces_a_leader_address_written_in_the_template() -> None:
    """Source: kubernetes-sigs/lws pod_utils.go addEnvVarsIfNotExists (LWS's own
    LWS_LEADER_ADDRESS goes first; the template's entry of that name is dropped), lws#152:
    a reference to it reads the per-group value, not the one written (here a group that
    does not exist)."""
    text = LWS.replace(
        '          - {name: MASTER_ADDR, value: "$(LWS_LEADER_ADDRESS)"}\n',
        '          - {name: LWS_LEADER_ADDRESS, value: "vllm-5.vllm"}\n'
        '          - {name: MASTER_ADDR, value: "$(LWS_LEADER_ADDRESS)"}\n')
    assert text != LWS
    assert not by_rule(lint(text, diagnostics=False), COORDINATOR)


def test_a_misspelt_coordinator_key_is_not_the_missing_spec_coordinator() -> None:
    """Source: kubernetes-sigs/jobset jobset_types.go (CoordinatorKey
    "jobset.sigs.k8s.io/coordinator", set on every pod when spec.coordinator is set): with
    spec.coordinator written, a fieldRef to another key of the prefix reads '' because the
    key does not exist, not because spec.coordinator is missing."""
    text = XPK.replace("spec:\n  replicatedJobs:",
                       "spec:\n  coordinator: {replicatedJob: slice-job}\n  replicatedJobs:", 1)
    text = text.replace(
        '                value: "$(JOBSET_NAME)-$(REPLICATED_JOB_NAME)-0-0.$(JOBSET_NAME)"\n',
        "                valueFrom:\n                  fieldRef:\n"
        "                    fieldPath: metadata.labels['jobset.sigs.k8s.io/coordinator-address']"
        "\n").replace("name: JAX_COORDINATOR_ADDRESS", "name: MEGASCALE_COORDINATOR_ADDRESS")
    assert "coordinator-address']" in text and "coordinator: {" in text
    p = one(lint(text, diagnostics=False), COORDINATOR)
    assert p.path.endswith("env[2].valueFrom.fieldRef.fieldPath")
    assert "reads jobset.sigs.k8s.io/coordinator-address, which JobSet never sets" in p.message
    assert "spec.coordinator" not in p.message
    right = text.replace("coordinator-address']", "coordinator']")
    assert not by_rule(lint(right, diagnostics=False), COORDINATOR)
