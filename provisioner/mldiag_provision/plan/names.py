"""The Google Cloud names the tool derives from a recipe, in one place.

plan/ uses these to name resources; preflight (rule ``gcp-names``) checks the same names
against their limits in ``catalog/data/names.yaml`` before anything is rendered. Light on
purpose (no imports at module level): ``validate`` loads it.

Stacks in one project (issue 25): every project-scoped name a new stack derives includes the
stack name (``metadata.name``) or the cluster name (which defaults to it), so two stacks in
one project never derive the same name (names.yaml ``uniqueness`` says where each kind of
name must be unique, with its source). A name longer than its limit is cut and a digest of
the whole name it was cut from is added (:func:`fitted`), so that two long stack names that
share a prefix still give two names. The ``LEGACY_*`` names and ``legacy_*`` functions are
what stacks rendered before issue 25 derived; an existing stack keeps them
(:mod:`mldiag_provision.plan.previous`).
"""

from __future__ import annotations

DIGEST_CHARS = 4
"""Hex characters of the digest :func:`fitted` adds to a name it cuts."""

LEGACY_WORKLOAD_SERVICE_ACCOUNT = "mldiag-workload"
"""The workload Google service account every stack named before issue 25 (one per project:
a second stack's create failed with 409 ALREADY_EXISTS)."""
LEGACY_CUSTOM_ROLE_ID = "mlDiagnosticsWorkload"
"""The custom role id every stack named before issue 25."""


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def fitted(base: str, suffix: str, limit: int) -> str:
    """``<base>-<suffix>`` when it has at most ``limit`` characters, else ``<base cut>-<4 hex
    of sha256(base)>-<suffix>`` in at most ``limit`` characters (a hyphen at the cut is
    dropped). ``base`` must start with a letter (a DNS label: metadata.name, a cluster name),
    so the result does too; ``suffix`` must end with a letter or digit."""
    name = f"{base}-{suffix}"
    if len(name) <= limit:
        return name
    keep = limit - len(suffix) - DIGEST_CHARS - 2
    return f"{base[:keep].rstrip('-')}-{_digest(base)}-{suffix}"


def default_profiles_bucket(project: str, stack: str) -> str:
    """``<project>-<stack>-profiles`` (at most 63 characters, :func:`fitted`): the profiles
    bucket when the recipe names none. Bucket names are global, so the project id is in it."""
    return fitted(f"{project}-{stack}", "profiles", 63)


def workload_service_account_id(stack: str) -> str:
    """``<stack>-workload`` (6-30 characters, :func:`fitted`): the workloads' Google service
    account when the recipe names none (was :data:`LEGACY_WORKLOAD_SERVICE_ACCOUNT`)."""
    return fitted(stack, "workload", 30)


def custom_role_id(stack: str) -> str:
    """``mlDiagnostics_<stack with '_' for '-'>`` (at most 64 characters of
    ``[a-zA-Z0-9_.]``): the ML Diagnostics custom role when the recipe names none (was
    :data:`LEGACY_CUSTOM_ROLE_ID`). A stack name is at most 40 characters, so it is never
    cut; '-' is not allowed in a role id, and a stack name has no '_', so the mapping is
    one-to-one."""
    role = "mlDiagnostics_" + stack.replace("-", "_")
    return role if len(role) <= 64 else f"{role[:59]}_{_digest(stack)}"


def node_pool_names(slice_name: str, count: int) -> list[str]:
    """GKE Standard node pool names of a slice: the slice name, or ``<slice>-<i>`` for N slices."""
    return [slice_name] if count == 1 else [f"{slice_name}-{i}" for i in range(count)]


def node_service_account_id(cluster: str) -> str:
    """``<cluster>-nodes`` (6-30 characters, :func:`fitted`): the cluster's node service
    account. The same as :func:`legacy_node_service_account_id` for clusters of at most 24
    characters."""
    return fitted(cluster, "nodes", 30)


def legacy_node_service_account_id(cluster: str) -> str:
    """The node service account id before issue 25: the cluster name cut at 24 characters,
    no digest (two long cluster names with one prefix gave one account)."""
    return (cluster[:24].rstrip("-") + "-nodes")[:30]


def workload_policy_name(cluster: str, pool: str) -> str:
    """``<cluster>-<pool>-workload`` (at most 63 characters, :func:`fitted`): the TPU7x
    workload policy (a regional compute resource policy) of a node pool; pool names are
    slice names, the same in many stacks, so the cluster name is in it."""
    return fitted(f"{cluster}-{pool}", "workload", 63)


def legacy_workload_policy_name(pool: str) -> str:
    """The workload policy before issue 25 (modules/gke/accelerator-node-pool built
    ``${var.name}-workload``): one per project and region for every stack's pool of that
    name."""
    return f"{pool}-workload"


def router_name(cluster: str) -> str:
    """The Cloud Router of a private cluster's Cloud NAT."""
    return f"{cluster}-router"


def nat_name(cluster: str) -> str:
    """The Cloud NAT gateway of a private cluster."""
    return f"{cluster}-nat"


def webhook_firewall_name(cluster: str) -> str:
    """The firewall rule from a private cluster's control plane to its webhook ports."""
    return f"{cluster}-webhooks"


def slurm_network_name(cluster: str) -> str:
    """The new VPC network of a Slurm cluster when the recipe names none."""
    return f"{cluster}-net"


def slurm_instance_name(cluster: str, storage_id: str) -> str:
    """A new Filestore or Managed Lustre instance when the recipe names none."""
    return f"{cluster}-{storage_id}"
