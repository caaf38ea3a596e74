"""What the API server refuses beyond the OpenAPI schemas (lint/api_rules.py; found by the
issue 25 review: each alone linted clean). Sources: kubernetes pkg/apis/batch/validation
(Job restartPolicy, backoffLimit) and pkg/apis/core/validation (pull policy, ports,
containers)."""

from __future__ import annotations

import pytest
from tests.lint.support import by_rule, lint, one

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  backoffLimit: %(backoff)s
  template:
    spec:
      restartPolicy: %(restart)s
      initContainers:
      - name: sidecar
        image: busybox
        restartPolicy: Always
      containers:
      - name: main
        image: busybox
        imagePullPolicy: %(pull)s
        ports: [{containerPort: %(port)s}]
"""
GOOD = {"backoff": 0, "restart": "Never", "pull": "IfNotPresent", "port": 8471}
RULES = ("k8s-job-restart-policy", "k8s-backoff-limit", "k8s-pull-policy", "k8s-port-range",
         "k8s-containers")


def _lint(**bad: object):
    return lint(JOB % {**GOOD, **bad})


def test_a_valid_job_with_a_native_sidecar_is_clean() -> None:
    """initContainers[].restartPolicy: Always is a native sidecar (Kubernetes 1.29+), not the
    pod's policy."""
    result = _lint()
    assert [p for p in result.problems if p.rule in RULES] == []


@pytest.mark.parametrize(("field", "value", "rule", "path"), [
    ("restart", "Always", "k8s-job-restart-policy", "spec.template.spec.restartPolicy"),
    ("backoff", -1, "k8s-backoff-limit", "spec.backoffLimit"),
    ("pull", "Sometimes", "k8s-pull-policy",
     "spec.template.spec.containers[0].imagePullPolicy"),
    ("port", 70000, "k8s-port-range", "spec.template.spec.containers[0].ports[0].containerPort"),
    ("port", 0, "k8s-port-range", "spec.template.spec.containers[0].ports[0].containerPort"),
])
def test_each_refusal_is_one_error_at_its_field(field: str, value: object, rule: str,
                                                path: str) -> None:
    p = one(_lint(**{field: value}), rule)
    assert p.path == path and p.severity.value == "error"
    assert "refuse" in p.message or "accepts" in p.message


def test_all_at_once_in_one_run() -> None:
    result = _lint(restart="Always", backoff=-1, pull="Sometimes", port=70000)
    assert {p.rule for p in result.problems} >= set(RULES[:4])


def test_a_pod_may_restart_always_and_needs_a_container() -> None:
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Always\n"
    assert by_rule(lint(pod + "  containers: [{name: c, image: busybox}]\n"),
                   "k8s-job-restart-policy") == []
    p = one(lint(pod + "  containers: []\n"), "k8s-containers")
    assert p.path == "spec.containers"
