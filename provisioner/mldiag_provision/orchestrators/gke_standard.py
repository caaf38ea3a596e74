"""GKE Standard: a cluster with one accelerator node pool per slice in ``spec.zone``.

Sources: https://cloud.google.com/kubernetes-engine/docs/concepts/tpus (TPU slice node pools
live in one zone), https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (GPU pools).
"""

from __future__ import annotations

from mldiag_provision.catalog.requirements import GkeMode
from mldiag_provision.orchestrators import Capability, Orchestrator

UNIT = Orchestrator(
    name="gke-standard",
    summary="a GKE Standard cluster with one accelerator node pool per slice",
    capabilities=frozenset({Capability.CREATES_CLUSTER, Capability.NODE_POOLS,
                            Capability.KUBERNETES_WORKLOADS, Capability.IN_CLUSTER_AGENTS}),
    blueprint="gke-standard",
    plan="mldiag_provision.plan.kubernetes:build",
    gke=GkeMode(tpu_key="standard", multislice_key="standardMinVersion", words="GKE Standard"),
)
