"""The Google Cloud names the tool derives from a recipe, in one place.

plan/ uses these to name resources; preflight (rule ``gcp-names``) checks the same names
against their limits in ``catalog/data/names.yaml`` before anything is rendered. Light on
purpose (no imports): ``validate`` loads it.
"""

from __future__ import annotations


def default_profiles_bucket(project: str, stack: str) -> str:
    """``<project>-<stack>-profiles``: the profiles bucket when the recipe names none."""
    return f"{project}-{stack}-profiles"


def node_pool_names(slice_name: str, count: int) -> list[str]:
    """GKE Standard node pool names of a slice: the slice name, or ``<slice>-<i>`` for N slices."""
    return [slice_name] if count == 1 else [f"{slice_name}-{i}" for i in range(count)]


def node_service_account_id(cluster: str) -> str:
    """A 6-30 character account id for the cluster's node service account."""
    return (cluster[:24].rstrip("-") + "-nodes")[:30]


def workload_policy_name(pool: str) -> str:
    """The TPU7x workload policy (compute resource policy) of a node pool
    (modules/gke/accelerator-node-pool: ``${var.name}-workload``)."""
    return f"{pool}-workload"


def slurm_network_name(cluster: str) -> str:
    """The new VPC network of a Slurm cluster when the recipe names none."""
    return f"{cluster}-net"


def slurm_instance_name(cluster: str, storage_id: str) -> str:
    """A new Filestore or Managed Lustre instance when the recipe names none."""
    return f"{cluster}-{storage_id}"
