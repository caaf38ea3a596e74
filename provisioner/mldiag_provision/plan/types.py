"""The plan's types: :class:`StackPlan` and the plain frozen data it holds, and the shared
:class:`ProjectPlan` an orchestrator's planner completes. No builder lives here.

Builders (:mod:`~mldiag_provision.plan.project`, :mod:`~mldiag_provision.plan.kubernetes`,
:mod:`~mldiag_provision.plan.slurm`, :func:`mldiag_provision.plan.stack.build_plan`) import
these types; this module imports no builder at its top (the plan package has no import cycle,
even counting imports inside functions and under ``TYPE_CHECKING``). Templates format; they
never compute. The plan is written beside the rendered stack (``.mldiag/plan.json``, from
:meth:`StackPlan.to_dict`) so that a person can diff what the tool decided.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from mldiag_provision.catalog.tpu import SliceShape
from mldiag_provision.plan.parts import (
    BackendPlan,
    ClusterPlan,
    DiagnosticsPlan,
    IamPlan,
    LogAnalyticsPlan,
    NodePoolPlan,
    ProfilesBucketPlan,
)

if TYPE_CHECKING:  # planned only for the recipes that have them (issue 16: start-up)
    from mldiag_provision.catalog.gpu import GpuShape
    from mldiag_provision.plan.agents import AgentsPlan
    from mldiag_provision.plan.gpunet import GpuNetworkPlan
    from mldiag_provision.plan.slurm_types import SlurmPlan


@dataclass(frozen=True)
class SlicePlan:
    """One resolved slice. ``kind`` tpu: a TPU slice (``topology``, chips); gpu: ``vms`` GPU VMs
    of ``machine_type`` (None on Autopilot, which picks it), ``chips_per_vm`` GPUs each."""

    name: str
    kind: str  # "tpu" | "gpu"
    accelerator_type: str  # catalog key, e.g. "v5e" or "h200-141gb"
    accelerator: str  # GKE label value (gke-tpu-accelerator / gke-accelerator)
    resource: str  # google.com/tpu | nvidia.com/gpu
    topology: str | None
    machine_type: str | None
    chips: int | None
    chips_per_vm: int | None
    vms: int
    count: int
    multi_host: bool
    capacity: str  # on-demand | spot | reservation | flex-start | queued
    reservation: str | None
    reservation_project: str | None
    node_selector: Mapping[str, str]

    def summary(self) -> str:
        if self.kind == "gpu":
            machine = (f"{self.machine_type} ({self.chips_per_vm} GPUs per VM)"
                       if self.machine_type else "a machine chosen by Autopilot")
            return f"{self.accelerator_type} GPUs: {self.vms} x {machine}"
        host = f"multi-host, {self.vms} VMs" if self.multi_host else "single-host, 1 VM"
        text = (f"{self.accelerator_type} {self.topology} = {self.chips} chips: {self.vms} x "
                f"{self.machine_type} ({self.chips_per_vm} chips per VM; {host})")
        if self.count > 1:
            text += f"; {self.count} slices (multislice)"
        return text


@dataclass(frozen=True)
class WorkloadPlan:
    name: str
    slice: str
    kind: str  # "Job" (one slice) or "JobSet" (multislice)
    resource: str  # google.com/tpu | nvidia.com/gpu
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: Mapping[str, str]
    chips_per_pod: int  # accelerator units (TPU chips or GPUs) per pod
    pods_per_slice: int
    slices: int
    cpu: str | None
    memory: str | None
    ml_diagnostics_label: bool
    backoff_limit: int
    headless_service: str | None  # Job on a multi-host slice: Service name == pod subdomain
    host_network: bool = False
    # --- production settings (issue 14); left out of plan.json while at their defaults
    # (:data:`WORKLOAD_OMIT_WHEN_DEFAULT`), so stacks that do not use them keep their bytes
    ephemeral_storage: str | None = None
    """Container ``ephemeral-storage`` request = limit (recipe ``resources.ephemeralStorage``)."""
    volumes: tuple[VolumePlan, ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()
    """Kubernetes tolerations, keys as the pod spec spells them."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """Pod template annotations: the recipe's, plus ``gke-gcsfuse/volumes: "true"`` when a
    volume is Cloud Storage FUSE."""
    priority_class_name: str | None = None
    max_restarts: int = 0
    """JobSet ``failurePolicy.maxRestarts`` (:func:`~.kubernetes.decide_max_restarts`)."""
    restart_strategy: str | None = None
    """JobSet ``failurePolicy.restartStrategy``; None: the controller's default (Recreate)."""

    queue: str | None = None
    """Kueue LocalQueue of a workload on a queued slice (``kueue.x-k8s.io/queue-name``; the
    Job/JobSet is created suspended and Kueue admits it); ``None``: not queued."""
    max_run_seconds: int | None = None
    """The queued slice's ``maxRunDuration`` in seconds (Kueue's
    ``provreq.kueue.x-k8s.io/maxRunDurationSeconds`` annotation); ``None``: GKE's default."""


@dataclass(frozen=True)
class VolumePlan:
    """One pod volume and its mount. ``source``: ``gcsFuse`` (``bucket``,
    ``mount_options`` joined with commas), ``persistentVolumeClaim`` (``claim_name``) or
    ``emptyDir`` (``size_limit``, ``medium``)."""

    name: str
    mount_path: str
    read_only: bool
    source: str
    bucket: str | None = None
    mount_options: str | None = None
    claim_name: str | None = None
    size_limit: str | None = None
    medium: str = ""


@dataclass(frozen=True)
class BucketGrantPlan:
    """An IAM grant on a Cloud Storage bucket to the workloads' Google service account
    (Cloud Storage FUSE volumes; the KSA acts as that account through Workload Identity)."""

    bucket: str
    role: str
    """roles/storage.objectViewer (every mount of the bucket read-only) or
    roles/storage.objectUser (https://cloud.google.com/storage/docs/access-control/iam-roles)."""

    @property
    def key(self) -> str:
        """Stable for_each key / Pulumi name suffix: ``<bucket>/<role>``."""
        return f"{self.bucket}/{self.role}"


# Fields added after stacks were first rendered, written to plan.json only when they differ
# from these defaults (so existing stacks keep their bytes): per workload, and for the stack.
WORKLOAD_OMIT_WHEN_DEFAULT: dict[str, object] = {
    "ephemeral_storage": None, "volumes": [], "tolerations": [], "annotations": {},
    "priority_class_name": None, "max_restarts": 0, "restart_strategy": None,
    "queue": None, "max_run_seconds": None}
STACK_OMIT_WHEN_DEFAULT: dict[str, object] = {"bucket_grants": [], "queued": None,
                                              "gpu_networks": []}
CLUSTER_OMIT_WHEN_DEFAULT: dict[str, object] = {"gcs_fuse_csi_driver": False}
NODE_POOL_OMIT_WHEN_DEFAULT: dict[str, object] = {"workload_policy_name": None}
NODE_SERVICE_ACCOUNT_OMIT_WHEN_DEFAULT: dict[str, object] = {"custom_role": None}


def _omit_defaults(data: dict[str, Any], defaults: Mapping[str, object]) -> None:
    for key, default in defaults.items():
        if key not in data:
            continue
        value = data[key]
        if value == default or (isinstance(default, list | dict) and not value):
            del data[key]  # asdict keeps tuples: () stands for the default []


@dataclass(frozen=True)
class QueuedPlan:
    """Kueue objects for the queued slices (flex-start with queued provisioning): one
    ResourceFlavor, a ClusterQueue with the ProvisioningRequest admission check, a LocalQueue
    in the workload namespace, the AdmissionCheck and its ProvisioningRequestConfig. Facts:
    catalog/data/gke.yaml ``queuedProvisioning`` (GKE provisioningrequest page, Kueue
    v0.19.2's provisioning example)."""

    api_version: str  # kueue.x-k8s.io/v1beta2
    resource_flavor: str
    cluster_queue: str
    local_queue: str
    namespace: str
    admission_check: str
    provisioning_request_config: str
    provisioning_class: str  # queued-provisioning.gke.io
    managed_resources: tuple[str, ...]
    """google.com/tpu and/or nvidia.com/gpu: the resources whose pods the check provisions."""
    quotas: Mapping[str, str]
    """nominalQuota per covered resource (cpu, memory, accelerators): the queued slices' total
    as the cluster can at most hold (Kueue admits by quota first, then the check)."""
    queue_name_label: str
    max_run_annotation: str


DEFAULT_ENGINE = "terraform"


@dataclass(frozen=True)
class StackPlan:
    """Everything the blueprint needs, decided. Frozen and JSON-serialisable."""

    tool_version: str
    blueprint: str
    name: str
    project: str
    region: str
    zone: str | None
    labels: Mapping[str, str]
    """Labels of every resource, sorted by key (``managed-by``, ``mldiag-stack`` and the
    recipe's ``metadata.labels``)."""
    backend: BackendPlan
    services: tuple[str, ...]
    """APIs the stack enables, sorted (catalog ``mlDiagnostics.requiredServices``)."""
    cluster: ClusterPlan
    """:class:`~.parts.KubernetesClusterPlan` (GKE Autopilot, existing Kubernetes),
    :class:`~.parts.StandardClusterPlan` (GKE Standard) or
    :class:`~.slurm_types.SlurmClusterPlan`."""
    diagnostics: DiagnosticsPlan
    """:class:`~.parts.KubernetesDiagnosticsPlan` unless the orchestrator is Slurm."""
    slices: tuple[SlicePlan, ...]
    workloads: tuple[WorkloadPlan, ...]
    node_pools: tuple[NodePoolPlan, ...] = ()
    """GKE Standard: one per slice x count."""
    agents: AgentsPlan | None = None
    """The agents/ stage (:func:`~.agents.plan_agents`); ``None``: no such stage."""
    slurm: SlurmPlan | None = None
    """Orchestrator slurm: the managed Slurm cluster (:func:`~.slurm.extend`)."""
    decisions: tuple[str, ...] = ()
    """What was decided and why, one line each (the README and ``render`` show them)."""
    engine: str = DEFAULT_ENGINE
    """The engine unit that renders and drives the stack (recipe ``spec.engine.name``)."""
    bucket_grants: tuple[BucketGrantPlan, ...] = ()
    """Bucket IAM grants of the workloads' Google service account (Cloud Storage FUSE)."""
    queued: QueuedPlan | None = None
    """Kueue objects for queued slices; ``None``: no queued capacity.
    """
    gpu_networks: tuple[GpuNetworkPlan, ...] = ()
    """GKE Standard GPU slices with GPUDirect networking (:mod:`~.gpunet`); empty: none, and
    then left out of ``plan.json`` (stacks without it keep their bytes)."""

    def gpu_network(self, slice_name: str) -> GpuNetworkPlan | None:
        """The GPU networking of slice ``slice_name`` (None: the slice has none)."""
        return next((g for g in self.gpu_networks if g.slice == slice_name), None)

    @property
    def multi_networking(self) -> bool:
        """Whether the cluster needs multi-networking and Dataplane V2 (GKE-MULTINET)."""
        return bool(self.gpu_networks)

    def gpu_cluster_objects(self) -> list[dict[str, Any]]:
        """The in-cluster objects of the GPU networks (:func:`~.gpunet.cluster_objects`)."""
        from mldiag_provision.plan.gpunet import cluster_objects

        return cluster_objects(self.gpu_networks)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (``.mldiag/plan.json``): field names as keys, nested
        plans as dicts, tuples as lists once dumped; only the fields of the classes the plan
        holds (a Slurm plan has no GKE cluster fields). ``engine`` is written only when it is
        not :data:`DEFAULT_ENGINE`: a plan.json without it (every stack rendered before
        engines were units) means Terraform, so those stay byte-identical."""
        data: dict[str, Any] = _asdict(self)
        if data["engine"] == DEFAULT_ENGINE:
            del data["engine"]
        _omit_defaults(data, STACK_OMIT_WHEN_DEFAULT)
        if isinstance(data.get("cluster"), dict):
            _omit_defaults(data["cluster"], CLUSTER_OMIT_WHEN_DEFAULT)
            if isinstance(data["cluster"].get("node_service_account"), dict):
                _omit_defaults(data["cluster"]["node_service_account"],
                               NODE_SERVICE_ACCOUNT_OMIT_WHEN_DEFAULT)
        for w in data.get("workloads", ()):
            _omit_defaults(w, WORKLOAD_OMIT_WHEN_DEFAULT)
        for pool in data.get("node_pools", ()):
            _omit_defaults(pool, NODE_POOL_OMIT_WHEN_DEFAULT)
        return data


_ATOMS = (str, int, float, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _asdict(obj: Any) -> Any:
    """:func:`dataclasses.asdict`, the same data (nested dataclasses as dicts, lists, tuples
    and dicts rebuilt, anything else deep-copied) without its per-value ``deepcopy`` of
    strings and numbers or its per-object ``fields()`` (a fifth of a large render's own
    time, issue 16); tests/unit/test_plan_types.py compares both on every example's plan."""
    t: Any = type(obj)
    if t in _ATOMS:
        return obj
    names = _FIELD_NAMES.get(t)
    if names is None and hasattr(t, "__dataclass_fields__"):  # as asdict tells
        names = tuple(f.name for f in fields(t))
        _FIELD_NAMES[t] = names
    if names is not None:
        return {name: _asdict(getattr(obj, name)) for name in names}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return t(*[_asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return t(_asdict(v) for v in obj)
    if isinstance(obj, dict):
        return t((_asdict(k), _asdict(v)) for k, v in obj.items())
    return copy.deepcopy(obj)


@dataclass(frozen=True)
class ProjectPlan:
    """The orchestrator-independent part of a stack (see the module docstring).

    ``shapes`` are the resolved catalog shapes by slice index (for facts the slices' plain
    data does not carry, e.g. a TPU version's multi-host placement); ``decisions`` are the
    slice lines, first in every stack's decision list.
    """

    tool_version: str
    blueprint: str
    name: str
    project: str
    region: str
    zone: str | None
    labels: Mapping[str, str]
    backend: BackendPlan
    services: tuple[str, ...]
    """The ML Diagnostics APIs, sorted (catalog ``mlDiagnostics.requiredServices``); an
    orchestrator adds or removes its own."""
    slices: tuple[SlicePlan, ...]
    shapes: Mapping[int, SliceShape | GpuShape]
    diagnostics_enabled: bool
    mlrun_region: str
    profiles_bucket: ProfilesBucketPlan
    log_analytics: LogAnalyticsPlan
    iam: IamPlan
    decisions: tuple[str, ...]
    engine: str
    """The recipe's ``spec.engine.name``."""
    workload_service_account: str
    """Account id of the workloads' Google service account: the recipe's, the one the stack
    in the work directory already has (:func:`~.previous.keep_name`), or
    :func:`~.names.workload_service_account_id` (Kubernetes stacks use it)."""
    previous: Mapping[str, Any] | None = None
    """The work directory's previous ``plan.json`` (:func:`~.previous.previous_plan`), for
    the names an existing stack keeps; ``None``: a new stack (or no work directory)."""

    def stack_fields(self) -> dict[str, Any]:
        """The :class:`~mldiag_provision.plan.stack.StackPlan` fields this plan decides
        (keyword arguments; services, decisions, cluster and diagnostics are the
        orchestrator's to complete)."""
        return {"tool_version": self.tool_version, "blueprint": self.blueprint,
                "name": self.name, "project": self.project, "region": self.region,
                "zone": self.zone, "labels": self.labels, "backend": self.backend,
                "slices": self.slices, "engine": self.engine}
