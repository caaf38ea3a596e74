"""The seed's two example manifests pass; each single wrong edit of them fails at the field it
edits, with a pinned message (issue 3, "Done when")."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .support import MULTIHOST, SINGLEHOST, by_rule, errors, lint, show

MULTI = MULTIHOST.read_text(encoding="utf-8")
SINGLE = SINGLEHOST.read_text(encoding="utf-8")
TPU_REQ = '["google.com/tpu"]'


@pytest.mark.parametrize("autopilot", [False, True], ids=["standard", "autopilot"])
def test_seed_examples_pass_as_written(autopilot: bool) -> None:
    result = lint(MULTI, SINGLE, autopilot=autopilot,
                  names=["available-chips-multihost.yaml", "available-chips-singlehost.yaml"])
    assert errors(result) == [], show(result)
    assert not result.failed(strict=False)
    assert result.resources == 3


def test_seed_multihost_memory_is_only_a_warning() -> None:
    """500Gi exceeds the catalog's unverified (L) 407 GB for ct4p-hightpu-4t: warn, never fail."""
    result = lint(MULTI)
    (p,) = by_rule(result, "tpu-resources")
    assert p.severity.value == "warning"
    assert p.path == "spec.template.spec.containers[0].resources.requests.memory"
    assert p.message == ("memory request 500Gi is more than the whole ct4p-hightpu-4t VM "
                         "(407 GB, an unverified catalog figure); the pod may not schedule")
    assert result.failed(strict=True) and not result.failed(strict=False)


def _second_container(chips: int, indent: str) -> str:
    return (f"{indent}- name: sidecar\n{indent}  image: python:3.10\n{indent}  resources:\n"
            f"{indent}    requests:\n{indent}      google.com/tpu: {chips}\n"
            f"{indent}    limits:\n{indent}      google.com/tpu: {chips}\n")


def _drop_last(text: str, line: str) -> str:
    head, sep, tail = text.rpartition(line)
    assert sep, line
    return head + tail


Edit = Callable[[str], str]
JOB = "spec.template.spec"
CASES: list[tuple[str, str, Edit, bool, str, str, str]] = [
    ("multi-chip-count", MULTI, lambda t: t.replace("google.com/tpu: 4", "google.com/tpu: 8"),
     False, "tpu-chips-per-pod", f"{JOB}.containers[0].resources.requests{TPU_REQ}",
     "google.com/tpu: 8 per pod, but v4 2x2x4 VMs have 4 chips; a TPU pod must take every "
     "chip of its VM"),
    ("multi-topology", MULTI, lambda t: t.replace("2x2x4", "2x2x3"), False, "tpu-topology",
     f'{JOB}.nodeSelector["cloud.google.com/gke-tpu-topology"]',
     "topology '2x2x3' does not exist for TPU v4"),
    ("multi-missing-service", MULTI, lambda t: t.split("---\n", 1)[1], False,
     "tpu-headless-service", f"{JOB}.subdomain",
     "no Service named 'headless-svc' among the linted manifests: the multi-host Job's pod "
     "hostnames (tpu-available-chips-0.headless-svc, ...) will not resolve"),
    ("multi-requests-without-limits", MULTI,
     lambda t: _drop_last(t, "            google.com/tpu: 4\n"), False, "tpu-requests-limits",
     f"{JOB}.containers[0].resources.limits{TPU_REQ}",
     "google.com/tpu is requested (4) without a limit; Kubernetes rejects extended resources "
     "without limits"),
    ("multi-second-tpu-container", MULTI, lambda t: t + _second_container(4, "      "), False,
     "tpu-containers", f"{JOB}.containers[1].resources.requests{TPU_REQ}",
     "container 1 also requests google.com/tpu: only one container per pod may use TPUs "
     "(2 do)"),
    ("multi-completions", MULTI, lambda t: t.replace("completions: 4", "completions: 3"),
     False, "tpu-job-shape", "spec.completions",
     "completions 3, but v4 2x2x4 has 4 VMs: a multi-host Job runs exactly one pod per VM, "
     "all at once"),
    ("multi-parallelism", MULTI, lambda t: t.replace("parallelism: 4", "parallelism: 2"),
     False, "tpu-job-shape", "spec.parallelism",
     "parallelism 2, but v4 2x2x4 has 4 VMs: a multi-host Job runs exactly one pod per VM, "
     "all at once"),
    ("multi-not-indexed", MULTI, lambda t: t.replace("  completionMode: Indexed\n", ""),
     False, "tpu-job-shape", "spec.completionMode",
     "multi-host v4 2x2x4 needs completionMode: Indexed (it is not set); GKE injects "
     "TPU_WORKER_ID and TPU_WORKER_HOSTNAMES only into Indexed Jobs"),
    ("multi-autopilot-host-network", MULTI,
     lambda t: t.replace("      restartPolicy: Never\n",
                         "      restartPolicy: Never\n      hostNetwork: true\n"),
     True, "autopilot-host-namespaces", f"{JOB}.hostNetwork",
     "hostNetwork: true is not allowed in Autopilot (autogke-disallow-hostnamespaces)"),
    ("multi-autopilot-privileged", MULTI,
     lambda t: t.replace("        image: python:3.10\n",
                         "        image: python:3.10\n        securityContext:\n"
                         "          privileged: true\n"),
     True, "autopilot-privileged", f"{JOB}.containers[0].securityContext.privileged",
     "privileged containers are not allowed in Autopilot (autogke-disallow-privilege); TPUs "
     "need no privileged mode since GKE 1.28"),
    ("multi-autopilot-host-port", MULTI,
     lambda t: t.replace("- containerPort: 8471 # Default port using which TPU VMs communicate",
                         "- containerPort: 8471\n          hostPort: 8471"),
     True, "autopilot-host-ports", f"{JOB}.containers[0].ports[0].hostPort",
     "hostPort 8471 is not allowed in Autopilot (autogke-no-host-port)"),
    ("multi-accelerator-typo", MULTI, lambda t: t.replace("tpu-v4-podslice", "tpu-v4-podslise"),
     False, "tpu-accelerator", f'{JOB}.nodeSelector["cloud.google.com/gke-tpu-accelerator"]',
     "'tpu-v4-podslise' is not a TPU accelerator label GKE knows"),
    ("multi-service-selector", MULTI,
     lambda t: t.replace("    job-name: tpu-available-chips", "    job-name: tpu-job"), False,
     "tpu-headless-service", "spec.selector",
     "Service 'headless-svc' selector job-name: tpu-job does not select the pods of Job "
     "'tpu-available-chips'"),
    ("multi-service-not-headless", MULTI, lambda t: t.replace("  clusterIP: None\n", ""),
     False, "tpu-headless-service", "spec.clusterIP",
     "Service 'headless-svc' is the subdomain of multi-host Job 'tpu-available-chips' but is "
     "not headless"),
    ("single-chip-count", SINGLE, lambda t: t.replace("google.com/tpu: 8", "google.com/tpu: 2"),
     False, "tpu-chips-per-pod", f"spec.containers[0].resources.requests{TPU_REQ}",
     "google.com/tpu: 2 per pod, but v5e 2x4 VMs have 8 or 4 chips; a TPU pod must take every "
     "chip of its VM"),
    ("single-four-chips-means-two-vms", SINGLE,
     lambda t: t.replace("google.com/tpu: 8", "google.com/tpu: 4"), False, "tpu-workload-kind",
     f"spec.containers[0].resources.requests{TPU_REQ}",
     "a single Pod cannot use multi-host v5e 2x4: the slice has 2 VMs of 4 chips and each pod "
     "takes one, so the program never starts"),
    ("single-topology", SINGLE, lambda t: t.replace("topology: 2x4", "topology: 4x2"), False,
     "tpu-topology", 'spec.nodeSelector["cloud.google.com/gke-tpu-topology"]',
     "topology '4x2' does not exist for TPU v5e"),
    ("single-requests-without-limits", SINGLE,
     lambda t: t.replace("      limits:\n        google.com/tpu: 8\n", ""), False,
     "tpu-requests-limits", f"spec.containers[0].resources.limits{TPU_REQ}",
     "google.com/tpu is requested (8) without a limit; Kubernetes rejects extended resources "
     "without limits"),
    ("single-second-tpu-container", SINGLE, lambda t: t + _second_container(8, "  "), False,
     "tpu-containers", f"spec.containers[1].resources.requests{TPU_REQ}",
     "container 1 also requests google.com/tpu: only one container per pod may use TPUs "
     "(2 do)"),
    ("single-autopilot-host-pid", SINGLE,
     lambda t: t.replace("  restartPolicy: Never\n", "  restartPolicy: Never\n  hostPID: true\n"),
     True, "autopilot-host-namespaces", "spec.hostPID",
     "hostPID: true is not allowed in Autopilot (autogke-disallow-hostnamespaces)"),
]


@pytest.mark.parametrize(("name", "base", "edit", "autopilot", "rule", "path", "message"),
                         CASES, ids=[c[0] for c in CASES])
def test_single_wrong_edit_fails_at_its_field(name: str, base: str, edit: Edit,
                                              autopilot: bool, rule: str, path: str,
                                              message: str) -> None:
    edited = edit(base)
    assert edited != base, "the edit changed nothing"
    result = lint(edited, autopilot=autopilot)
    assert result.failed(strict=False), show(result)
    hits = [p for p in errors(result) if p.rule == rule and p.path == path]
    assert hits, show(result)
    assert hits[0].message == message
    assert hits[0].line > 0 and hits[0].column > 0 and hits[0].source


def test_the_topology_hint_suggests_the_written_order() -> None:
    result = lint(SINGLE.replace("topology: 2x4", "topology: 4x2"))
    (p,) = by_rule(result, "tpu-topology")
    assert p.hint == "did you mean '2x4'? (dimensions are written smallest first)"
    assert p.expected and p.expected.startswith("1x1, 2x2, 2x4")


def test_v5e_2x4_is_resolved_by_the_request_in_a_job() -> None:
    """4 chips per pod on v5e 2x4 = two 4-chip VMs: an Indexed Job of 2 pods is right."""
    job = MULTI.replace("tpu-v4-podslice", "tpu-v5-lite-podslice").replace("2x2x4", "2x4") \
        .replace("completions: 4", "completions: 2").replace("parallelism: 4", "parallelism: 2") \
        .replace("memory: 500Gi", "memory: 100Gi")
    assert errors(lint(job)) == [], show(lint(job))
    wrong = job.replace("google.com/tpu: 4", "google.com/tpu: 8")  # now one 8-chip VM
    result = lint(wrong)
    assert [p.rule for p in errors(result)] == [], show(result)
    assert by_rule(result, "tpu-job-shape")[0].message.startswith(
        "2 pods in parallel on single-host v5e 2x4")
