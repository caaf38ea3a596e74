"""An existing Kubernetes cluster (GKE or self-managed): no cluster is created; the project
pieces, the agents stage and the workloads target the cluster the user runs.

Source: https://cloud.google.com/tpu/docs/ml-diagnostics/gke (ML Diagnostics on a cluster
you have; Workload Identity on GKE).
"""

from __future__ import annotations

from mldiag_provision.orchestrators import Capability, Orchestrator

UNIT = Orchestrator(
    name="existing-kubernetes",
    summary="a Kubernetes cluster you already run (nothing creates it)",
    capabilities=frozenset({Capability.EXISTING_CLUSTER, Capability.KUBERNETES_WORKLOADS,
                            Capability.IN_CLUSTER_AGENTS}),
    blueprint="existing-kubernetes",
    plan="mldiag_provision.plan.kubernetes:build",
)
