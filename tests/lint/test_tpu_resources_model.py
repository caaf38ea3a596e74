"""tpu-resources reads the pod's request through the cluster model's ``pod_requests`` (issue
25): the same effective request the scheduler and Kueue count, and the machine's size through
the model's ``machine_capacity``.

Sources: the Kubernetes init-containers page (the effective request is the larger of the
containers' sum and any one init container: https://kubernetes.io/docs/concepts/workloads/
pods/init-containers/#resource-sharing-within-containers) and the catalog's ct5lp-hightpu-4t
(112 vCPU, 192 GB; tpu.yaml).
"""

from __future__ import annotations

from tests.lint.support import by_rule, lint, one

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: tpu}
spec:
  nodeSelector:
    cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice
    cloud.google.com/gke-tpu-topology: 2x2
%s  containers:
  - name: main
    image: python:3.12
    resources:
      requests: {google.com/tpu: 4, cpu: '%s'}
      limits: {google.com/tpu: 4}
%s"""

SIDECAR = """\
  - name: side
    image: busybox
    resources: {requests: {cpu: '%s'}}
"""


def test_containers_summed_above_the_machine_name_every_part() -> None:
    """Two containers of 60 vCPU each ask for 120 of a 112-vCPU VM: the message shows the sum
    as written, part by part, at the first container's request."""
    p = one(lint(POD % ("", "60", SIDECAR % "60")), "tpu-resources")
    assert p.path == "spec.containers[0].resources.requests.cpu"
    assert p.message.startswith("cpu request 60 + 60 (all containers) is more than the whole "
                                "ct5lp-hightpu-4t VM (112 vCPU")
    assert by_rule(lint(POD % ("", "50", SIDECAR % "60")), "tpu-resources") == []


def test_an_init_container_above_the_machine_counts() -> None:
    """An init container asking for 120 vCPU, alone: the pod's effective request is 120, more
    than the VM, although the containers' sum (8) fits."""
    init = ("  initContainers:\n  - name: warm\n    image: busybox\n"
            "    resources: {requests: {cpu: '120'}}\n")
    p = one(lint(POD % (init, "8", "")), "tpu-resources")
    assert p.path == "spec.initContainers[0].resources.requests.cpu"
    assert p.message.startswith("cpu request 120 is more than the whole ct5lp-hightpu-4t VM")
