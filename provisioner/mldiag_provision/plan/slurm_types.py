"""The plan types of a Cluster Director managed Slurm stack (``plan.slurm`` of a
:class:`~mldiag_provision.plan.types.StackPlan`): plain frozen data, no builder.

:func:`mldiag_provision.plan.slurm.build` decides them; the stack plan types
(:mod:`mldiag_provision.plan.types`) and the Slurm renderer read them. Kept apart from the
builder so that the plan types import no builder (the plan package has no import cycle).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mldiag_provision.plan.parts import ClusterPlan


@dataclass(frozen=True, slots=True)
class SlurmClusterPlan(ClusterPlan):
    """``plan.cluster`` of a Slurm stack."""

    zone: str | None
    """The one zone of the cluster's node sets and login nodes."""


@dataclass(frozen=True, slots=True)
class SlurmNetworkPlan:
    """The cluster's VPC network; resource paths in full (``projects/P/...``)."""

    id: str
    create: bool
    """Cluster Director creates the network (else an existing one)."""
    network: str
    """``projects/P/global/networks/N``."""
    subnetwork: str | None
    """``projects/P/regions/R/subnetworks/S``; ``None``: the API picks (a new network)."""


@dataclass(frozen=True, slots=True)
class FilestorePlan:
    tier: str
    """ZONAL or REGIONAL."""
    capacity_gb: int
    """Capacity in GB (FileShareConfig.capacity_gb; catalog slurm.yaml ``filestore``)."""
    file_share: str
    protocol: str | None
    """NFSV3 or NFSV41; ``None``: the API's default (NFSV3)."""


@dataclass(frozen=True, slots=True)
class LustrePlan:
    capacity_gb: int | None
    """Capacity in GB (NewLustreConfig.capacity_gb; catalog slurm.yaml ``lustre``)."""
    filesystem: str
    throughput: int | None
    """per_unit_storage_throughput in MBps per TiB (catalog slurm.yaml ``lustreThroughput``);
    ``None``: the API's default."""


@dataclass(frozen=True, slots=True)
class BucketPlan:
    storage_class: str | None


@dataclass(frozen=True, slots=True)
class StoragePlan:
    """One storage resource: exactly one of ``filestore``, ``lustre``, ``bucket`` is set."""

    id: str
    mount: str
    """Mount point on the nodes, e.g. ``/home``."""
    kind: str | None
    """filestore, lustre or bucket."""
    create: bool
    name: str | None
    """Instance path ``projects/P/locations/L/instances/N`` (Filestore, Lustre) or bucket
    name."""
    filestore: FilestorePlan | None
    lustre: LustrePlan | None
    bucket: BucketPlan | None


@dataclass(frozen=True, slots=True)
class ComputePlan:
    """The compute resource of one node set (same id)."""

    id: str
    capacity: str
    """on-demand, spot, reservation or flex-start."""
    machine_type: str | None
    zone: str | None
    reservation: str | None
    """``projects/P/zones/Z/reservations/R``; it fixes machine type and zone."""
    max_duration: str | None
    """Longest run of a VM, in seconds with an ``s`` suffix (``"7200s"``)."""


@dataclass(frozen=True, slots=True)
class MountPlan:
    id: str
    """Id of a :class:`StoragePlan`."""
    local_mount: str


@dataclass(frozen=True, slots=True)
class BootDiskPlan:
    type: str
    size_gb: int
    """Size in GB."""


@dataclass(frozen=True, slots=True)
class NodeSetPlan:
    id: str
    compute_id: str
    slice: str | None
    """The GPU slice of the node set; ``None`` for CPU node sets."""
    machine_type: str | None
    gpus_per_node: int | None
    static_node_count: int
    max_dynamic_node_count: int | None
    storage: tuple[MountPlan, ...]
    startup_script: str | None
    """The recipe's own script; it runs after the ML Diagnostics SDK install."""
    boot_disk: BootDiskPlan | None
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    id: str
    node_set_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LoginNodesPlan:
    count: int
    machine_type: str
    zone: str | None
    enable_os_login: bool
    enable_public_ips: bool
    startup_script: str | None
    storage: tuple[MountPlan, ...]
    boot_disk: BootDiskPlan | None
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class SdkPlan:
    """The ML Diagnostics SDK on every compute node (slurm.yaml ``sdk``)."""

    enabled: bool
    package: str
    """pip requirement, e.g. ``google-cloud-mldiagnostics==1.0.10``."""
    pip_index_url: str | None
    venv: str
    """Directory of the SDK's virtual environment on the nodes."""
    job_env: str
    """Script that jobs source for one MLRun per job."""
    profiles_gcs_path: str
    """``gs://<profiles bucket>``."""
    mlrun_region: str


@dataclass(frozen=True, slots=True)
class SlurmJobPlan:
    """One workload as an sbatch script (``slurm/<name>.sbatch``)."""

    name: str
    slice: str
    node_set: str
    partition: str | None
    nodes: int
    gpus_per_node: int | None
    machine_type: str | None
    image: str
    pyxis_image: str
    """``image`` in enroot's ``REGISTRY#IMAGE`` form
    (:func:`~mldiag_provision.plan.slurm.pyxis_image`)."""
    container_runtime: str
    """pyxis or none."""
    container_mounts: tuple[str, ...]
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: Mapping[str, str]
    ml_diagnostics: bool


@dataclass(frozen=True, slots=True)
class SlurmPlan:
    """``plan.slurm``: the Cluster Director managed Slurm cluster."""

    cluster_id: str
    location: str
    zone: str | None
    deletion_policy: str
    """PREVENT or DELETE."""
    description: str
    network: SlurmNetworkPlan
    storage: tuple[StoragePlan, ...]
    compute: tuple[ComputePlan, ...]
    login_nodes: LoginNodesPlan
    node_sets: tuple[NodeSetPlan, ...]
    partitions: tuple[PartitionPlan, ...]
    default_partition: str | None
    """``None`` with one partition (the API wants none then)."""
    node_service_account: str | None
    """Email of the nodes' service account; ``None``: the Compute Engine default one."""
    node_roles_summary: str
    sdk: SdkPlan
    master_port: int
    """TCP port of the rendezvous on the job's first node (torch.distributed's default)."""
    jobs: tuple[SlurmJobPlan, ...]
