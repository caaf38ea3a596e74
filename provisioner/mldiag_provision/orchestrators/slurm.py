"""Cluster Director managed Slurm: a Slurm cluster (network, storage, login nodes, node sets,
partitions) with the ML Diagnostics SDK on every node; workloads are sbatch scripts.

Source: https://cloud.google.com/vertex-ai/docs/training/training-clusters/overview (managed
Slurm); facts in catalog/data/slurm.yaml.
"""

from __future__ import annotations

from mldiag_provision.orchestrators import Capability, Orchestrator

UNIT = Orchestrator(
    name="slurm",
    summary="a Cluster Director managed Slurm cluster (sbatch workloads, the SDK on the nodes)",
    capabilities=frozenset({Capability.MANAGED_SLURM}),
    blueprint="slurm",
    plan="mldiag_provision.plan.slurm:build",
)
