"""Issue 25, "wiring that cannot connect": `wiring-coordinator-address`.

A coordinator address (MEGASCALE_COORDINATOR_ADDRESS, JAX_COORDINATOR_ADDRESS, MASTER_ADDR)
or a TPU_WORKER_HOSTNAMES entry must name a pod the JobSet or Indexed Job creates: JobSet pods
are ``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>`` (subdomain: the JobSet's
name unless network.subdomain says otherwise), Indexed Job pods ``<job>-<index>.<subdomain>``.
Each test names the public source its manifest and expectation come from.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import LintResult, lint_sources
from mldiag_provision.lint.loading import Source, read_sources
from mldiag_provision.lint.schema import default_version

from .support import DATA, by_rule, lint, one

RULE = "wiring-coordinator-address"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = DATA / "faultkinds"
POD = "spec.replicatedJobs[{}].template.spec.template.spec"


def y(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def found(result: LintResult) -> list[Problem]:
    return by_rule(result, RULE)


# --- the issue's example --------------------------------------------------------------------

def test_issue_example_coordinator_in_a_replicated_job_that_does_not_exist() -> None:
    """Source: issue 25 (the rendered multislice JobSet, MEGASCALE_COORDINATOR_ADDRESS naming
    'worker'); pod names from kubernetes-sigs/jobset
    site/static/examples/simple/jobset-with-network.yaml ("hostname:
    <jobSet.name>-<spec.replicatedJob.name>-<job-index>-<pod-index>.<subdomain>")."""
    text = (EXAMPLES / "wiring-coordinator-address.yaml").read_text(encoding="utf-8")
    p = one(lint(text, diagnostics=False), RULE)
    assert p.severity is Severity.ERROR
    assert p.path == f"{POD.format(0)}.containers[0].env[0].value" and p.line == 34
    assert p.value == "multislice-train-worker-0-0.multislice-train:8080"
    assert "'multislice-train-worker-0-0.multislice-train:8080'" in p.message
    assert "no replicated job 'worker'" in p.message
    assert "replicated jobs: slice (2 job(s) x 4 pod(s))" in p.message
    assert p.expected is not None and p.expected.startswith(
        "multislice-train-<replicatedJob>-<jobIndex>-<podIndex>.multislice-train")
    assert p.hint == ("set MEGASCALE_COORDINATOR_ADDRESS to "
                      "multislice-train-slice-0-0.multislice-train:8080")
    assert "jobset-with-network.yaml" in (p.source or "")
    fixed = text.replace("multislice-train-worker-0-0", "multislice-train-slice-0-0")
    assert not found(lint(fixed, diagnostics=False))


# --- JobSet's DNS hostnames (kubernetes-sigs/jobset, jobset-with-network.yaml) ----------------

NETWORK = y("""
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata:
      name: network-jobset
      namespace: default
    spec:
      network:
        enableDNSHostnames: true
        subdomain: example
        publishNotReadyAddresses: true
      replicatedJobs:
        - name: leader
          replicas: 1
          template:
            spec:
              backoffLimit: 0
              completions: 1
              parallelism: 1
              template:
                spec:
                  containers:
                    - name: leader
                      image: bash:latest
                      command: [bash, -xc, sleep 3600]
        - name: workers
          replicas: 1
          template:
            spec:
              backoffLimit: 0
              completions: 2
              parallelism: 2
              template:
                spec:
                  containers:
                    - name: worker
                      image: bash:latest
                      env:
                        - name: MASTER_ADDR
                          value: network-jobset-leader-0-0.example
                      command: [bash, -xc, ping -c 1 $(MASTER_ADDR)]
    """)


@pytest.mark.parametrize("address", [
    "network-jobset-leader-0-0.example",
    "network-jobset-leader-0-0.example.default.svc.cluster.local",
    "network-jobset-workers-0-1.example:29500",
])
def test_jobset_example_addresses_resolve(address: str) -> None:
    """Source: kubernetes-sigs/jobset site/static/examples/simple/jobset-with-network.yaml: the
    workers ping network-jobset-leader-0-0.example.default.svc.cluster.local; subdomain
    'example' from network.subdomain."""
    text = NETWORK.replace("network-jobset-leader-0-0.example", address)
    assert not found(lint(text, diagnostics=False))


@pytest.mark.parametrize("address, says", [
    ("network-jobset-leader-0-0.network-jobset",
     "under subdomain 'network-jobset', but JobSet 'network-jobset' puts its pods under "
     "'example' (network.subdomain)"),
    ("network-jobset-leader-1-0.example",
     "replicated job 'leader' has 1 job(s) (job index 0..0)"),
    ("network-jobset-workers-0-2.example",
     "each Job of replicated job 'workers' runs 2 pod(s) (pod index 0..1)"),
    ("network-jobset-driver-0-0.example.default.svc.cluster.local",
     "no replicated job 'driver' (replicated jobs: leader (1 job(s) x 1 pod(s)), workers "
     "(1 job(s) x 2 pod(s)))"),
])
def test_jobset_example_addresses_that_never_resolve(address: str, says: str) -> None:
    """Source: kubernetes-sigs/jobset jobset-with-network.yaml (hostname form, subdomain
    defaulting to the JobSet name only when network.subdomain is unset) and
    pkg/controllers/jobset_controller.go GetSubdomain."""
    text = NETWORK.replace("network-jobset-leader-0-0.example", address)
    p = one(lint(text, diagnostics=False), RULE)
    assert says in p.message, p.message
    assert p.path == f"{POD.format(1)}.containers[0].env[0].value"
    assert p.severity is Severity.ERROR
    assert p.expected is not None and "network-jobset-leader-0-0.example" in p.expected


def test_dns_hostnames_off_is_the_network_rule_s_finding() -> None:
    """With network.enableDNSHostnames: false no pod has a name at all: that is
    wiring-jobset-network's finding (kubernetes-sigs/jobset jobset_types.go Network), not a
    second one per address."""
    text = NETWORK.replace("enableDNSHostnames: true", "enableDNSHostnames: false").replace(
        "network-jobset-leader-0-0.example", "network-jobset-driver-0-0.example")
    result = lint(text, diagnostics=False)
    assert not found(result)
    assert one(result, "wiring-jobset-network").path == "spec.network.enableDNSHostnames"


# --- JobSet's PyTorch example (MASTER_ADDR) -------------------------------------------------

PYTORCH = y("""
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata:
      name: pytorch
    spec:
      replicatedJobs:
      - name: workers
        template:
          spec:
            parallelism: 4
            completions: 4
            backoffLimit: 0
            template:
              spec:
                containers:
                - name: pytorch
                  image: gcr.io/k8s-staging-jobset/pytorch-resnet:latest
                  ports:
                  - containerPort: 3389
                  env:
                  - name: MASTER_ADDR
                    value: "pytorch-workers-0-0.pytorch"
                  - name: MASTER_PORT
                    value: "3389"
                  command: [bash, -xc, torchrun --master_addr=$MASTER_ADDR resnet.py]
    """)


def test_pytorch_example_master_addr() -> None:
    """Source: kubernetes-sigs/jobset site/static/examples/pytorch/resnet-cifar10/resnet.yaml
    (MASTER_ADDR "pytorch-workers-0-0.pytorch"). A one-letter slip ('worker') names a pod
    that is never created; the finding lists the replicated jobs there are."""
    assert not found(lint(PYTORCH, diagnostics=False))
    p = one(lint(PYTORCH.replace("pytorch-workers-0-0", "pytorch-worker-0-0"),
                 diagnostics=False), RULE)
    assert "MASTER_ADDR 'pytorch-worker-0-0.pytorch' names pod 'pytorch-worker-0-0'" \
        in p.message
    assert "no replicated job 'worker' (replicated jobs: workers (1 job(s) x 4 pod(s)))" \
        in p.message
    assert p.hint == "set MASTER_ADDR to pytorch-workers-0-0.pytorch"


# --- xpk's multislice env: $(VAR) expansion, the coordinator label ----------------------------

XPK = y("""
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata:
      name: xpk-train
      annotations:
        alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool
    spec:
      replicatedJobs:
      - name: slice-job
        replicas: 2
        template:
          spec:
            parallelism: 4
            completions: 4
            backoffLimit: 0
            template:
              spec:
                restartPolicy: Never
                nodeSelector:
                  cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
                  cloud.google.com/gke-tpu-topology: 4x4
                containers:
                - name: jax-tpu
                  image: python:3.12
                  ports: [{containerPort: 8471}, {containerPort: 8080}]
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
                  resources:
                    limits: {google.com/tpu: 4}
                    requests: {google.com/tpu: 4}
    """)
ENV = f"{POD.format(0)}.containers[0].env"


def test_xpk_coordinator_with_env_references() -> None:
    """Source: AI-Hypercomputer/xpk src/xpk/core/docker_resources.py (JAX_COORDINATOR_ADDRESS
    '$(JOBSET_NAME)-$(REPLICATED_JOB_NAME)-0-0.$(JOBSET_NAME)', both read by fieldRef from the
    pod's JobSet annotations); Kubernetes docs, Define Dependent Environment Variables. The
    references are expanded as Kubernetes does; a wrong part is found in the expanded name."""
    assert not found(lint(XPK, diagnostics=False))
    wrong = XPK.replace("-0-0.$(JOBSET_NAME)", "-0-0.$(JOBSET_NAME)-svc")
    p = one(lint(wrong, diagnostics=False), RULE)
    assert p.path == f"{ENV}[2].value"
    assert p.value == "$(JOBSET_NAME)-$(REPLICATED_JOB_NAME)-0-0.$(JOBSET_NAME)-svc"
    assert p.message.startswith(
        "JAX_COORDINATOR_ADDRESS '$(JOBSET_NAME)-$(REPLICATED_JOB_NAME)-0-0.$(JOBSET_NAME)-svc'"
        " (= 'xpk-train-slice-job-0-0.xpk-train-svc') names pod 'xpk-train-slice-job-0-0' "
        "under subdomain 'xpk-train-svc'")
    literal = XPK.replace(
        "valueFrom:\n                  fieldRef:\n                    fieldPath: metadata."
        "annotations['jobset.sigs.k8s.io/replicatedjob-name']", "value: slice", 1)
    assert literal != XPK
    assert "no replicated job 'slice'" in one(lint(literal, diagnostics=False), RULE).message


def _with_value(value: str, *, extra: str = "              - {name: JOB_INDEX, value: '0'}\n",
                envfrom: bool = False) -> str:
    """XPK with JAX_COORDINATOR_ADDRESS set to ``value`` and ``extra`` env entries after it
    (JOB_INDEX by default)."""
    text = XPK.replace('"$(JOBSET_NAME)-$(REPLICATED_JOB_NAME)-0-0.$(JOBSET_NAME)"',
                       f'"{value}"')
    text = text.replace("              resources:", f"{extra}              resources:")
    if envfrom:
        text = text.replace("              env:\n",
                            "              envFrom: [{configMapRef: {name: coordinator}}]\n"
                            "              env:\n")
    assert value in text
    return text


@pytest.mark.parametrize("value, severity, says, hint", [
    # UNCHANGED_REFERENCE: a variable defined after the reference is not expanded
    ("$(JOBSET_NAME)-slice-job-$(JOB_INDEX)-0.xpk-train", Severity.ERROR,
     "refers to $(JOB_INDEX), which env[3] defines after it: Kubernetes expands a reference "
     "only from the variables defined before it, so JAX_COORDINATOR_ADDRESS stays "
     "'xpk-train-slice-job-$(JOB_INDEX)-0.xpk-train' and the name never resolves",
     "move the JOB_INDEX entry above JAX_COORDINATOR_ADDRESS in env"),
    # ESCAPED_REFERENCE: $$( gives the literal $(
    ("$$(JOBSET_NAME)-slice-job-0-0.xpk-train", Severity.ERROR,
     "'$$(JOBSET_NAME)' is an escaped reference, which Kubernetes turns into the literal text "
     "'$(JOBSET_NAME)', so JAX_COORDINATOR_ADDRESS is '$(JOBSET_NAME)-slice-job-0-0.xpk-train'",
     "write $(JOBSET_NAME) with one $ to expand it"),
    # defined nowhere the manifest shows: left as written (a warning: a webhook may add it)
    ("$(COORDINATOR_HOST)-0-0.xpk-train", Severity.WARNING,
     "refers to $(COORDINATOR_HOST), which no env entry before it defines",
     "define COORDINATOR_HOST above JAX_COORDINATOR_ADDRESS in env, or drop the reference"),
])
def test_references_kubernetes_leaves_as_written(value: str, severity: Severity, says: str,
                                                 hint: str) -> None:
    """Source: Kubernetes docs, Define Dependent Environment Variables
    (https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/):
    UNCHANGED_REFERENCE "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)" with PROTOCOL defined
    after it prints "$(PROTOCOL)://172.17.0.1:80"; ESCAPED_REFERENCE "$$(PROTOCOL)..." prints
    the literal "$(PROTOCOL)". A coordinator address that keeps "$(" never resolves."""
    p = one(lint(_with_value(value), diagnostics=False), RULE)
    assert p.path == f"{ENV}[2].value" and p.value == value
    assert says in p.message, p.message
    assert p.severity is severity and p.hint == hint
    assert "define-interdependent-environment-variables" in (p.source or "")


def test_job_index_defined_first_expands() -> None:
    """The same reference with JOB_INDEX moved above it (the fix the hint names) expands to
    a pod that exists: no finding (Kubernetes docs, SERVICE_ADDRESS after PROTOCOL)."""
    value = "$(JOBSET_NAME)-slice-job-$(JOB_INDEX)-0.xpk-train"
    text = _with_value(value, extra="").replace(
        "              - name: JAX_COORDINATOR_ADDRESS\n",
        "              - {name: JOB_INDEX, value: '1'}\n"
        "              - name: JAX_COORDINATOR_ADDRESS\n")
    assert not found(lint(text, diagnostics=False))
    # index 2 of a replicated job with 2 replicas: the pod does not exist
    p = one(lint(text.replace("value: '1'", "value: '2'"), diagnostics=False), RULE)
    assert "replicated job 'slice-job' has 2 job(s) (job index 0..1)" in p.message


@pytest.mark.parametrize("value, envfrom", [
    ("$(COORDINATOR_HOST)-0-0.xpk-train", True),       # envFrom may define it
    ("$(COORD_SERVICE_HOST)", False),                   # a Service link variable
    ("$(POD_IP):1234", False),                          # a value read at run time
])
def test_references_read_at_run_time_are_left_alone(value: str, envfrom: bool) -> None:
    """Source: Kubernetes API reference, EnvVar.value ("Variable references $(VAR_NAME) are
    expanded using the previously defined environment variables in the container and any
    service environment variables"): values only the running pod knows get no guess."""
    text = _with_value(value, envfrom=envfrom)
    text = text.replace(
        "              - name: JAX_COORDINATOR_ADDRESS\n",
        "              - name: POD_IP\n"
        "                valueFrom: {fieldRef: {fieldPath: status.podIP}}\n"
        "              - name: JAX_COORDINATOR_ADDRESS\n")
    assert not found(lint(text, diagnostics=False))


def test_coordinator_label_needs_spec_coordinator() -> None:
    """Source: xpk templates/pathways_workload_create.yaml.j2 (MEGASCALE_COORDINATOR_ADDRESS
    from the label jobset.sigs.k8s.io/coordinator); kubernetes-sigs/jobset
    jobset_controller.go (the label only with spec.coordinator) and kubernetes/kubernetes
    pkg/fieldpath (a missing label reads as '')."""
    label = XPK.replace(
        '                value: "$(JOBSET_NAME)-$(REPLICATED_JOB_NAME)-0-0.$(JOBSET_NAME)"\n',
        "                valueFrom:\n                  fieldRef:\n"
        "                    fieldPath: metadata.labels['jobset.sigs.k8s.io/coordinator']\n"
    ).replace("name: JAX_COORDINATOR_ADDRESS", "name: MEGASCALE_COORDINATOR_ADDRESS")
    assert "metadata.labels['jobset.sigs.k8s.io/coordinator']" in label
    p = one(lint(label, diagnostics=False), RULE)
    assert p.path == f"{ENV}[2].valueFrom.fieldRef.fieldPath"
    assert p.severity is Severity.ERROR
    assert "has no spec.coordinator, so MEGASCALE_COORDINATOR_ADDRESS is empty" in p.message
    with_coordinator = label.replace(
        "spec:\n  replicatedJobs:",
        "spec:\n  coordinator: {replicatedJob: slice-job, jobIndex: 0, podIndex: 0}\n"
        "  replicatedJobs:", 1)
    assert with_coordinator != label
    assert not found(lint(with_coordinator, diagnostics=False))


# --- JAX: process 0, and the other JobSet ------------------------------------------------------

def test_megascale_coordinator_is_process_zero() -> None:
    """Source: jax-ml/jax jax/_src/clusters/cloud_tpu_cluster.py ("the Megascale coordinator
    address is set as the host with process id = 0"): an existing pod that is not job index 0,
    pod index 0 warns (read from JAX's code: confidence M)."""
    text = (EXAMPLES / "wiring-coordinator-address.yaml").read_text(encoding="utf-8")
    second = text.replace("multislice-train-worker-0-0", "multislice-train-slice-1-0")
    p = one(lint(second, diagnostics=False), RULE)
    assert p.severity is Severity.WARNING
    assert "(job index 1, pod index 0)" in p.message
    assert p.hint == ("set MEGASCALE_COORDINATOR_ADDRESS to "
                      "multislice-train-slice-0-0.multislice-train:8080")
    # JAX_COORDINATOR_ADDRESS is whatever pod the program makes process 0: not judged
    jax = second.replace("MEGASCALE_COORDINATOR_ADDRESS", "JAX_COORDINATOR_ADDRESS")
    assert not found(lint(jax, diagnostics=False))


def test_coordinator_of_another_jobset() -> None:
    """Source: JAX, jax.distributed.initialize (coordinator_address: "the IP address of
    process 0"): a pod of another JobSet, linted beside it or only named by its DNS form, is
    not process 0 of this program (a warning: an inference)."""
    text = (EXAMPLES / "wiring-coordinator-address.yaml").read_text(encoding="utf-8")
    other = text.replace("name: multislice-train\n", "name: eval-run\n", 1)
    copied = other.replace("multislice-train-worker-0-0", "multislice-train-slice-0-0")
    p = one(lint(text.replace("multislice-train-worker-0-0", "multislice-train-slice-0-0"),
                 copied, diagnostics=False), RULE)
    assert p.file == "m1.yaml" and p.severity is Severity.WARNING
    assert ("names pod 'multislice-train-slice-0-0' of JobSet 'multislice-train', not of "
            "JobSet 'eval-run'") in p.message
    assert p.hint == "set MEGASCALE_COORDINATOR_ADDRESS to eval-run-slice-0-0.eval-run:8080"
    alone = one(lint(copied, diagnostics=False), RULE)
    assert "has the DNS name of a pod of JobSet 'multislice-train', which is not among the " \
           "linted files" in alone.message
    assert alone.severity is Severity.WARNING


# --- Indexed Jobs: <job>-<index>.<subdomain> -------------------------------------------------

def indexed(address: str) -> str:
    text = (EXAMPLES / "wiring-headless-service.yaml").read_text(encoding="utf-8")
    return text.replace("        ports: [{containerPort: 8471}]\n",
                        "        ports: [{containerPort: 8471}]\n        env:\n"
                        "        - name: JAX_COORDINATOR_ADDRESS\n"
                        f"          value: {address}\n")


@pytest.mark.parametrize("address, says", [
    ("train-0.train-workers:1234", None),
    ("train-3.train-workers.default.svc.cluster.local:1234", None),
    ("train-4.train-workers:1234", "it runs 4 pod(s), train-0 .. train-3"),
    ("trainer-0.train-workers:1234", "its pods are named train-<index>"),
    ("train-0.train:1234", "under subdomain 'train', but Job 'train' puts its pods under "
                           "'train-workers' (the template's subdomain)"),
])
def test_indexed_job_hostnames(address: str, says: str | None) -> None:
    """Sources: Kubernetes docs, Job with Pod-to-Pod Communication ("${jobName}-
    ${completionIndex}" under the headless Service named by subdomain); jax-ml/jax#28178
    (jax/_src/clusters/k8s_cluster.py connects to {job_name}-0.{subdomain})."""
    found_ = found(lint(indexed(address)))
    if says is None:
        assert not found_
        return
    (p,) = found_
    assert says in p.message, p.message
    assert p.path == "spec.template.spec.containers[0].env[0].value"
    assert p.severity is Severity.ERROR


def test_worker_hostnames_list() -> None:
    """Source: jax-ml/jax cloud_tpu_cluster.py (TPU_WORKER_HOSTNAMES, comma-separated, the
    slice's workers): one finding for the entry that names no pod."""
    text = (EXAMPLES / "wiring-coordinator-address.yaml").read_text(encoding="utf-8")
    hosts = ",".join(f"multislice-train-slice-0-{i}.multislice-train" for i in (0, 1, 2, 4))
    listed = text.replace(
        "              - name: MEGASCALE_COORDINATOR_ADDRESS\n"
        "                value: multislice-train-worker-0-0.multislice-train:8080\n",
        f"              - name: TPU_WORKER_HOSTNAMES\n                value: {hosts}\n")
    assert listed != text
    p = one(lint(listed, diagnostics=False), RULE)
    assert p.message.startswith("TPU_WORKER_HOSTNAMES 'multislice-train-slice-0-4."
                                "multislice-train' names pod 'multislice-train-slice-0-4'")


@pytest.mark.parametrize("address", [
    "10.0.0.1:8080",                         # an IP address
    "coordinator.default:8080",              # a Service in namespace default
    "coordinator:8080",                      # a Service name
    "tpu-head.example.com:8080",             # outside the cluster
    "multislice-train-worker-0-0.multislice-train.other.svc.cluster.local:8080",  # another ns
    "",
])
def test_names_this_lint_cannot_judge_get_no_finding(address: str) -> None:
    """No guesses: names that are not pods of a workload in the input set."""
    text = (EXAMPLES / "wiring-coordinator-address.yaml").read_text(encoding="utf-8")
    text = text.replace("value: multislice-train-worker-0-0.multislice-train:8080",
                        f"value: '{address}'").replace(
        "  name: multislice-train\n", "  name: multislice-train\n  namespace: default\n", 1)
    assert not found(lint(text, diagnostics=False))


# --- what the tool renders itself ------------------------------------------------------------

def test_rendered_stacks_have_no_coordinator_finding() -> None:
    """The manifests render/k8s.py writes (the golden stacks: MEGASCALE_COORDINATOR_ADDRESS
    <jobset>-slice-0-0.<jobset>:8080, MASTER_ADDR <job>-0.<job>-workers) name pods that
    exist."""
    stacks = sorted((ROOT / "tests" / "golden").glob("*/*/k8s"))
    assert len(stacks) >= 10
    addresses = 0
    for k8s in stacks:
        sources: list[Source] = read_sources([str(k8s)])
        addresses += sum(s.text.count("COORDINATOR_ADDRESS") + s.text.count("MASTER_ADDR")
                         for s in sources)
        result = lint_sources(sources, LintOptions(default_version()))
        assert not found(result), (k8s, [p.message for p in found(result)])
    assert addresses >= 5
