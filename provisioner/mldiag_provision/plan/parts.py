"""The typed parts of a :class:`~mldiag_provision.plan.stack.StackPlan` that every stack shares:
state backend, cluster, ML Diagnostics settings and GKE Standard node pools.

Frozen dataclasses with slots; sequences are tuples and mappings are never mutated after the
plan is built. Field names are the keys of ``.mldiag/plan.json`` (written with
:func:`dataclasses.asdict`), and the templates under ``blueprints/`` read them as attributes,
so renaming a field changes both: keep them as they are.

Subclasses add the fields only some orchestrators have (``plan.json`` carries exactly the
fields of the class the plan holds): :class:`KubernetesClusterPlan` and
:class:`StandardClusterPlan` for GKE and existing Kubernetes clusters,
:class:`KubernetesDiagnosticsPlan` where workloads run in Kubernetes; the Slurm parts live in
:mod:`mldiag_provision.plan.slurm`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BackendPlan:
    """Where Terraform keeps state (recipe ``spec.engine.backend``)."""

    type: str
    """``local`` or ``gcs``."""
    bucket: str | None
    """GCS bucket of the state (``gcs`` only)."""
    prefix: str | None
    """Object prefix in the bucket; ``None``: the stack name (the templates decide)."""


# --- cluster ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    """What every stack knows about its cluster."""

    name: str
    type: str
    """The orchestrator: gke-autopilot, gke-standard, existing-kubernetes or slurm."""
    location: str
    """Region of the cluster (GKE clusters are regional here)."""
    deletion_protection: bool


@dataclass(frozen=True, slots=True)
class KubernetesClusterPlan(ClusterPlan):
    """A GKE cluster the stack creates (Autopilot), or an existing Kubernetes cluster (then the
    GKE-only fields are what the recipe said, and nothing creates the cluster)."""

    release_channel: str
    min_master_version: str | None
    """Lowest GKE version that satisfies every need (``X.Y[.Z-gke.N]``); ``None`` when no
    cluster is created. Needs and their sources: ``catalog/data/gke.yaml``."""
    managed_ml_diagnostics: bool
    """The GKE-managed ML Diagnostics add-on is turned on."""
    network: str
    subnetwork: str | None
    workload_pool: str | None
    """Workload Identity pool ``<project>.svc.id.goog``
    (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity); ``None`` when
    the stack binds no Workload Identity."""


@dataclass(frozen=True, slots=True)
class NodeServiceAccountPlan:
    """The service account a created GKE cluster's nodes run as: a dedicated one the stack
    creates (``create``), or an existing one the recipe names; never the Compute Engine
    default one (https://cloud.google.com/kubernetes-engine/security/configure-node-service-accounts)."""

    create: bool
    account_id: str | None
    """Account id of the account the stack creates (6-30 characters); ``None`` for an
    existing one."""
    email: str
    """``<account_id>@<project>.iam.gserviceaccount.com``, or the recipe's email."""
    roles: tuple[str, ...]
    """Project roles the stack grants it (catalog ``gke.cluster.nodeServiceAccountRoles``,
    plus the ML Diagnostics predefined roles when hostNetwork workloads run as the node and
    ``iam.mode`` is ``predefined``)."""
    custom_role: str | None = None
    """``projects/PROJECT/roles/ID``: the stack's ML Diagnostics custom role, granted to it
    on the project when hostNetwork workloads run as the node and ``iam.mode`` is
    ``custom-role``; ``None`` (then left out of ``plan.json``): no such grant."""


@dataclass(frozen=True, slots=True)
class AuthorizedNetworkPlan:
    """One master authorized network."""

    cidr: str
    name: str | None


@dataclass(frozen=True, slots=True)
class PrivateClusterPlan:
    """Private cluster settings (recipe ``orchestrator.private``; sources in
    ``catalog/data/gke.yaml`` ``cluster``)."""

    private_nodes: bool
    private_endpoint: bool
    master_cidr: str | None
    """The control plane's /28 (VPC peering clusters); ``None``: GKE picks."""
    authorized_networks: tuple[AuthorizedNetworkPlan, ...] | None
    """``None``: no master authorized networks block (the public endpoint is open)."""
    router: str | None
    """Cloud Router of the Cloud NAT (private nodes with ``cloudNat``); ``None``: none."""
    nat: str | None
    """The Cloud NAT gateway's name; ``None``: none."""
    firewall: str | None
    """Firewall rule from the control plane to the nodes' webhook ports; ``None``: none."""
    webhook_ports: tuple[int, ...]
    """TCP ports the rule opens (sorted): the manual agents' injection webhook and
    cert-manager webhook, the JobSet controller's webhook; empty without the rule."""


@dataclass(frozen=True, slots=True)
class MaintenanceWindowPlan:
    """A recurring maintenance window (UTC)."""

    start: str
    end: str
    recurrence: str


@dataclass(frozen=True, slots=True)
class MaintenanceExclusionPlan:
    """A maintenance exclusion and its scope."""

    name: str
    start: str
    end: str
    scope: str


@dataclass(frozen=True, slots=True)
class MaintenancePlan:
    """The cluster's maintenance policy (recipe ``orchestrator.maintenance``)."""

    window: MaintenanceWindowPlan | None
    exclusions: tuple[MaintenanceExclusionPlan, ...]


@dataclass(frozen=True, slots=True)
class GkeClusterPlan(KubernetesClusterPlan):
    """A GKE cluster the stack creates (Autopilot; Standard extends it): the nodes' service
    account, private cluster settings and maintenance policy (issue 14)."""

    node_service_account: NodeServiceAccountPlan
    private: PrivateClusterPlan
    maintenance: MaintenancePlan | None


@dataclass(frozen=True, slots=True)
class StandardClusterPlan(GkeClusterPlan):
    """A GKE Standard cluster: also its node service account and the system node pool."""

    node_service_account_id: str | None
    """Account id (6-30 characters,
    https://cloud.google.com/iam/docs/service-accounts-create#creating) of the account the
    stack creates; ``None`` when the recipe names an existing one
    (``node_service_account.email``)."""
    node_service_account_roles: tuple[str, ...]
    """Roles of the node service account (catalog ``standard.nodeServiceAccountRoles``, plus
    the ML Diagnostics roles when hostNetwork workloads run as the node)."""
    system_pool_machine_type: str
    gcs_fuse_csi_driver: bool = False
    """Turn on the Cloud Storage FUSE CSI driver add-on (``GcsFuseCsiDriver``): a workload
    mounts a bucket (https://cloud.google.com/kubernetes-engine/docs/how-to/cloud-storage-fuse-csi-driver-setup;
    Autopilot has it on by default)."""


@dataclass(frozen=True, slots=True)
class NodePoolPlan:
    """One GKE Standard accelerator node pool (a slice of ``count`` N is N pools)."""

    name: str
    slice: str
    zone: str | None
    machine_type: str | None
    node_count: int
    """VMs in the pool (a TPU slice's VMs, or the GPU slice's nodes)."""
    topology: str | None
    """TPU topology, e.g. ``2x2x4``; ``None`` for GPUs."""
    multi_host: bool
    """A multi-host TPU slice (COMPACT placement or a workload policy)."""
    gpu_type: str | None
    """GKE accelerator label value of the GPUs (``nvidia-h100-80gb``); ``None`` for TPUs."""
    gpu_count: int | None
    """GPUs per VM; ``None`` for TPUs."""
    workload_policy: bool
    """TPU7x multi-host: placed by a HIGH_THROUGHPUT workload policy
    (https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood)."""
    workload_policy_name: str | None
    """Name of that workload policy (a regional compute resource policy,
    :func:`~mldiag_provision.plan.names.workload_policy_name`); ``None`` without one (then
    left out of ``plan.json``)."""
    capacity: str
    """on-demand, spot, reservation or flex-start."""
    reservation: str | None
    reservation_project: str | None
    node_labels: Mapping[str, str]


# --- ML Diagnostics --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProfilesBucketPlan:
    """The Cloud Storage bucket for XProf profiles."""

    name: str
    create: bool
    location: str
    """Upper-case location (region, dual- or multi-region,
    https://cloud.google.com/storage/docs/locations)."""
    force_destroy: bool
    """A destroy deletes the bucket with its objects (recipe ``deleteOnDestroy``)."""


@dataclass(frozen=True, slots=True)
class LogAnalyticsPlan:
    """Log Analytics on the project's ``_Default`` log bucket
    (https://cloud.google.com/logging/docs/log-analytics#upgrade)."""

    enabled: bool
    retention_days: int | None
    """Retention of the log bucket in days (1-3650,
    https://cloud.google.com/logging/docs/buckets#custom-retention); ``None``: unchanged."""


@dataclass(frozen=True, slots=True)
class IamPlan:
    """The ML Diagnostics access of the workload (or node) service account."""

    mode: str
    """``predefined`` (the roles) or ``custom-role`` (one role with the permissions)."""
    roles: tuple[str, ...]
    """Predefined roles (catalog ``mlDiagnostics.predefinedRoles``); empty for custom-role."""
    custom_role_id: str
    permissions: tuple[str, ...]
    """Sorted permissions of the custom role (catalog
    ``mlDiagnostics.customRolePermissions``); empty for predefined."""


@dataclass(frozen=True, slots=True)
class ServiceAccountPlan:
    """The workloads' Google service account."""

    account_id: str
    create: bool
    email: str
    """``<account_id>@<project>.iam.gserviceaccount.com``."""


@dataclass(frozen=True, slots=True)
class KubernetesIdentityPlan:
    """Namespace and Kubernetes service account the workloads run in and as."""

    namespace: str
    service_account: str


@dataclass(frozen=True, slots=True)
class DiagnosticsPlan:
    """ML Diagnostics settings every stack has."""

    enabled: bool
    agents: str
    """How the agents run: ``managed``, ``manual`` or ``none`` (Kubernetes, decided by
    :func:`mldiag_provision.plan.agents.decide_strategy`), ``sdk`` (Slurm: the SDK alone)."""
    mlrun_region: str
    """Location of the MLRuns (recipe ``mlrunRegion``, default the region)."""
    profiles_bucket: ProfilesBucketPlan
    log_analytics: LogAnalyticsPlan
    iam: IamPlan
    workload_identity_binding: bool
    """The stack binds the KSA to the Google service account (Workload Identity)."""


@dataclass(frozen=True, slots=True)
class KubernetesDiagnosticsPlan(DiagnosticsPlan):
    """ML Diagnostics settings of a stack whose workloads run in Kubernetes."""

    namespace_label: Mapping[str, str]
    """The label that opts a namespace or pod in (catalog ``mlDiagnostics.namespaceLabel``)."""
    service_account: ServiceAccountPlan
    kubernetes: KubernetesIdentityPlan
