"""GKE Autopilot: a regional Autopilot cluster; nodes appear when workloads ask for them.

Sources: https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-overview (nodes
managed by GKE), https://cloud.google.com/kubernetes-engine/docs/how-to/tpus-autopilot (TPU
version gates), https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-security
(admission rules: no hostNetwork, managed namespaces).
"""

from __future__ import annotations

from mldiag_provision.catalog.requirements import GkeMode
from mldiag_provision.orchestrators import Capability, Orchestrator

UNIT = Orchestrator(
    name="gke-autopilot",
    summary="a GKE Autopilot cluster (nodes on demand, Autopilot admission rules)",
    capabilities=frozenset({Capability.CREATES_CLUSTER, Capability.AUTOPILOT_RULES,
                            Capability.NODES_ON_DEMAND, Capability.KUBERNETES_WORKLOADS,
                            Capability.IN_CLUSTER_AGENTS}),
    blueprint="gke-autopilot",
    plan="mldiag_provision.plan.kubernetes:build",
    gke=GkeMode(tpu_key="autopilot", multislice_key="autopilotMinVersion", words="Autopilot",
                base_need=(("tpuAutopilot", "minVersion"), "TPUs on GKE Autopilot")),
)
