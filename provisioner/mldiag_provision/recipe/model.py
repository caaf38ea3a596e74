"""The recipe: the one file a platform engineer writes (``apiVersion: mldiag-provision/v1alpha1``).

Pydantic v2 models, camelCase keys, unknown keys are errors (``extra="forbid"``). The models
check *shape* only (types, enums, patterns); every rule that needs the TPU catalog or two
fields at once lives in :mod:`mldiag_provision.preflight` so that it can point at the right
field and explain itself. The JSON Schema for editors is generated from these models
(``mldiag-provision schema``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

from mldiag_provision import engine_names, orchestrator_names
from mldiag_provision.recipe import patterns
from mldiag_provision.recipe.patterns import DNS_LABEL, ENV_NAME, GCE_NAME, IMAGE_REF

# The names the recipe accepts come from the registries' name tables (orchestrator_names,
# engine_names: they find the unit modules on disk, so a new unit module is a new name; then
# run `python -m mldiag_provision.recipe.generate` for the schema files). Orchestrators in the
# registry's order; engines: the registered ones and "pulumi", which the recipe format has
# room for before its unit exists (preflight then refuses it with a clear message).
_ORCHESTRATORS = orchestrator_names.names()
_ENGINES = tuple(dict.fromkeys(("terraform", "pulumi", *engine_names.names())))

API_VERSION = "mldiag-provision/v1alpha1"

DnsName = Annotated[str, Field(pattern=DNS_LABEL, min_length=1, max_length=63)]




class _Model(BaseModel):
    # strict: YAML already gives typed values; `count: true` or `chipsPerVm: 4.0` are mistakes
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True,
        validate_default=True, strict=True,
    )


class Metadata(_Model):
    """Who the stack is: ``name`` becomes the cluster name and resource prefix."""

    name: Annotated[str, Field(pattern=DNS_LABEL, min_length=1, max_length=40,
                               description="Stack name; DNS label, at most 40 characters "
                                           "(the GKE cluster name limit).")]
    labels: dict[str, str] = Field(default_factory=dict,
                                   description="Google Cloud labels applied to every resource.")
    description: str | None = None


class Backend(_Model):
    """Where the engine keeps its state."""

    type: Literal["local", "gcs"] = "local"
    bucket: str | None = Field(None, description="GCS bucket for state (type: gcs).")
    prefix: str | None = Field(None, description="Object prefix inside the bucket (type: gcs).")


class Engine(_Model):
    name: Literal[_ENGINES] = "terraform"  # type: ignore[valid-type]
    backend: Backend = Field(default_factory=Backend)


class CrdVersions(_Model):
    """Installed releases of the workload controllers' CRDs, one of those lint ships schemas
    for (tools/crds/pins.yaml; tests/lint/test_crds_upstream.py keeps the lists equal)."""

    jobset: Literal["v0.5.2", "v0.9.0", "v0.12.0"] | None = None
    lws: Literal["v0.10.0"] | None = None
    kuberay: Literal["v1.7.0"] | None = None
    kueue: Literal["v0.19.2"] | None = None
    gkenetworking: Literal["v0.2.0"] | None = Field(
        None, description="GKE's networking.gke.io Network / GKENetworkParamSet CRDs "
                          "(GoogleCloudPlatform/gke-networking-api), installed by GKE on "
                          "multi-networking clusters.")



# --- Production cluster settings (issue 14): node identity, private cluster, maintenance ---
# Shapes only; the rules that need facts (catalog/data/gke.yaml ``cluster``) are in
# preflight/cluster_rules.py.

_RFC3339_UTC = patterns.RFC3339_UTC


class AuthorizedNetwork(_Model):
    """One CIDR block that may reach the cluster's control plane (master authorized
    networks, https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks)."""

    cidr: str = Field(description="IPv4 CIDR block, e.g. 203.0.113.0/24 (checked by preflight).")
    name: Annotated[str, Field(max_length=100)] | None = Field(
        None, description="Display name of the block.")


class PrivateCluster(_Model):
    """Private cluster settings of a cluster the stack creates (gke-autopilot, gke-standard).

    Default: private nodes (internal IPs only) with a Cloud Router + Cloud NAT so that public
    images still pull, the public control-plane endpoint kept so that ``apply`` and ``verify``
    reach it, and a firewall rule from the control plane to the nodes' webhook ports when the
    manual agents or the JobSet controller run (sources: catalog/data/gke.yaml ``cluster``)."""

    nodes: bool = Field(
        True, description="Private nodes: no external IPs (default on for new clusters).")
    endpoint: bool = Field(
        False, description="Private endpoint only: the control plane answers inside the VPC "
                           "(and authorized networks); apply/verify must run there.")
    master_cidr: str | None = Field(
        None, description="Control-plane range, a /28 of a private range, e.g. "
                          "172.16.0.32/28; needed below GKE 1.29 (VPC peering clusters); "
                          "default: GKE picks (Private Service Connect).")
    authorized_networks: list[AuthorizedNetwork] | None = Field(
        None, description="CIDR blocks allowed to reach the control plane; null: no "
                          "authorized-networks restriction.")
    cloud_nat: bool = Field(
        True, description="With private nodes: create a Cloud Router and Cloud NAT in the "
                          "region (false when the network already has NAT).")
    webhook_firewall: bool = Field(
        True, description="With private nodes: open the in-cluster webhooks' ports (manual "
                          "agents 8443, cert-manager 10250, JobSet 9443) from the control "
                          "plane to the nodes.")


class MaintenanceWindow(_Model):
    """The recurring window in which GKE may upgrade (UTC, RFC 3339 times)."""

    start: Annotated[str, Field(pattern=_RFC3339_UTC)] = Field(
        description="First occurrence's start, e.g. 2026-01-03T02:00:00Z.")
    end: Annotated[str, Field(pattern=_RFC3339_UTC)] = Field(
        description="First occurrence's end (the same day's duration repeats).")
    recurrence: Annotated[str, Field(
        pattern=patterns.RECURRENCE,
    )] = Field(description="RFC 5545 RRULE: FREQ=DAILY or FREQ=WEEKLY;BYDAY=SA,SU.")


class MaintenanceExclusion(_Model):
    """A one-off period in which GKE does not upgrade (what ``scope`` says)."""

    name: DnsName
    start: Annotated[str, Field(pattern=_RFC3339_UTC)]
    end: Annotated[str, Field(pattern=_RFC3339_UTC)]
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = Field(
        "NO_UPGRADES", description="NO_UPGRADES (at most 30 days), NO_MINOR_UPGRADES or "
                                   "NO_MINOR_OR_NODE_UPGRADES (until the minor's end of "
                                   "support).")


class Maintenance(_Model):
    """Maintenance policy of a cluster the stack creates: one recurring window, exclusions."""

    window: MaintenanceWindow | None = None
    exclusions: list[MaintenanceExclusion] = Field(default_factory=list)


class Orchestrator(_Model):
    """How the accelerators are scheduled."""

    type: Literal[_ORCHESTRATORS]  # type: ignore[valid-type]  # the registered units
    cluster_name: Annotated[str, Field(pattern=DNS_LABEL, max_length=40)] | None = Field(
        None, description="Defaults to metadata.name.")
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] = "REGULAR"
    min_version: str | None = Field(
        None, description="Minimum GKE control-plane version, e.g. '1.35.0-gke.3065000'. "
                          "Defaults to the highest minimum the slices and ML Diagnostics need.")
    deletion_protection: bool = True
    network: str = "default"
    subnetwork: str | None = None
    system_pool_machine_type: str = Field(
        "e2-standard-4", description="gke-standard: machine type of the non-TPU system pool.")
    workload_identity: bool = Field(
        True, description="existing-kubernetes: the cluster is GKE with Workload Identity; "
                          "false for self-managed Kubernetes (no Workload Identity binding).")
    cluster_location: str | None = Field(
        None, description="existing-kubernetes on GKE: the cluster's region or zone "
                          "(default: spec.region).")
    kubeconfig_context: str | None = Field(
        None, description="existing-kubernetes without GKE: kubeconfig context the agents "
                          "stage uses.")
    crd_versions: CrdVersions = Field(
        default_factory=CrdVersions,
        description="Releases of the workload CRDs installed in the cluster; `lint --recipe` "
                    "then reports fields that release does not know as errors.")
    node_service_account: str | None = Field(
        None, description="gke-autopilot / gke-standard: email of an existing service account "
                          "the nodes run as (never the Compute Engine default one); default: a "
                          "dedicated '<cluster>-nodes' account with "
                          "roles/container.defaultNodeServiceAccount.")
    private: PrivateCluster = Field(
        default_factory=PrivateCluster,
        description="gke-autopilot / gke-standard: private nodes (default on, with Cloud NAT), "
                    "private endpoint, authorized networks, the webhook firewall rule.")
    maintenance: Maintenance | None = Field(
        None, description="gke-autopilot / gke-standard: maintenance window and exclusions; "
                          "null: GKE's default (any time).")


class Capacity(_Model):
    """How the TPU VMs are obtained. ``queued``: flex-start with queued provisioning (Dynamic
    Workload Scheduler): the node pool scales from 0 when Kueue's ProvisioningRequest for the
    whole workload is granted (GKE Standard; see ``spec.kueue``)."""

    type: Literal["on-demand", "spot", "reservation", "flex-start", "queued"] = "on-demand"
    reservation: Annotated[str, Field(pattern=GCE_NAME)] | None = Field(
        None, description="Reservation name (type: reservation).")
    reservation_project: str | None = Field(
        None, description="Project that owns a shared reservation; defaults to spec.project.")
    max_run_duration: Annotated[str, Field(pattern=patterns.DURATION)] | None = Field(
        None, description="slurm flex-start: how long the VMs may run, e.g. 72h (at most 7d); "
                          "queued: the ProvisioningRequest's maxRunDurationSeconds (default "
                          "and at most 7d).")


class GpuNetworking(_Model):
    """High-bandwidth GPU networking of a GKE Standard GPU node pool (A3 Mega: GPUDirect-TCPXO
    over 8 extra gVNIC VPCs; A3 Ultra / A4: GPUDirect RDMA over one extra gVNIC VPC and a
    RoCE VPC with 8 subnets). Facts and sources: catalog/data/gpu.yaml ``gpuNetworking``."""

    mode: Literal["auto", "gpudirect-tcpxo", "gpudirect-rdma", "none"] = Field(
        "auto", description="auto: the machine type's GPUDirect stack on gke-standard when "
                            "the slice has 2 or more VMs (a3-megagpu-8g: gpudirect-tcpxo; "
                            "a3-ultragpu-8g, a4-highgpu-8g: gpudirect-rdma), else none; none: "
                            "NCCL traffic uses the primary NIC only.")
    cidr: str | None = Field(
        None, description="IPv4 range the extra subnets are cut from (16 equal parts, one "
                          "per subnet). Default: the n-th /18 of 192.168.0.0/16 for the "
                          "n-th networked slice.")


class Slice(_Model):
    """One accelerator slice: a TPU slice shape (and how many: multislice when ``count`` > 1),
    or a group of GPU VMs. Exactly one of ``tpu`` and ``gpu``."""

    name: DnsName
    tpu: str | None = Field(None, description="TPU version (v4, v5e, v5p, v6e, tpu7x) or GKE "
                                              "accelerator label (tpu-v4-podslice, ...). See "
                                              "`mldiag-provision catalog`.")
    topology: str | None = Field(None, description="TPU chip topology, e.g. 2x4 or 2x2x4.")
    gpu: str | None = Field(None, description="GPU type (h100-80gb, h200-141gb, b200, ...) or GKE "
                                              "accelerator label (nvidia-h200-141gb, ...).")
    machine_type: str | None = Field(
        None, description="GPU machine type, e.g. a3-ultragpu-8g; required on gke-standard.")
    nodes: Annotated[int, Field(ge=1, le=1000)] | None = Field(
        None, description="GPU VMs in the slice (default 1); TPU slices derive it.")
    chips_per_vm: int | None = Field(
        None, description="Chips per VM (google.com/tpu per pod). Required where a topology has "
                          "two machine types, e.g. v5e/v6e 2x4 = one 8-chip VM or two 4-chip VMs.")
    count: Annotated[int, Field(ge=1, le=64)] = Field(1, description="Number of slices.")
    capacity: Capacity = Field(default_factory=Capacity)
    networking: GpuNetworking = Field(
        default_factory=GpuNetworking,
        description="GPU slices on gke-standard: GPUDirect networking of the node pool.")


class ProfilesBucket(_Model):
    name: str | None = Field(None, description="Defaults to '<project>-<name>-profiles'.")
    create: bool = True
    location: str | None = Field(None, description="Defaults to the region.")
    delete_on_destroy: bool = Field(
        False, description="Let `destroy` delete the bucket with its profiles.")


class LogAnalytics(_Model):
    enabled: bool = True
    retention_days: Annotated[int, Field(ge=1, le=3650)] | None = Field(
        None, description="Retention of the _Default log bucket, stated explicitly so that "
                          "enabling Log Analytics never resets it (the provider default is 30).")


class Iam(_Model):
    mode: Literal["predefined", "custom-role"] = "predefined"
    custom_role_id: Annotated[str, Field(pattern=r"^[a-zA-Z0-9_.]{3,64}$")] | None = Field(
        None, description="Role id of the custom role (mode custom-role). Default: "
                          "'mlDiagnostics_<metadata.name, '-' as '_'>', unique per stack "
                          "(a stack rendered with the old default mlDiagnosticsWorkload "
                          "keeps it).")


class ServiceAccount(_Model):
    name: Annotated[str, Field(pattern=r"^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$")] | None = Field(
        None, description="Account id of the workload's Google service account. Default: "
                          "'<metadata.name>-workload' (cut to 30 characters with a digest), "
                          "unique per stack (a stack rendered with the old default "
                          "mldiag-workload keeps it).")
    create: bool = True


class KubernetesIdentity(_Model):
    namespace: DnsName = "mldiag"
    service_account: DnsName = "mldiag-workload"


class ManualInstall(_Model):
    """Overrides for the manual agent install (cert-manager + webhook + operator charts)."""

    install_cert_manager: bool = Field(
        True, description="false when the cluster already runs cert-manager.")
    cert_manager_version: str | None = Field(None, description="Default: the catalog's pin.")
    webhook_version: str | None = Field(None, description="Default: the catalog's pin.")
    operator_version: str | None = Field(None, description="Default: the catalog's pin.")


class DiagonChart(_Model):
    """A Diagon DaemonSet you supply as a Helm chart (no public chart or image exists)."""

    chart: Annotated[str, Field(min_length=1)]
    repository: str | None = None
    version: str | None = None
    values: dict[str, str] = Field(
        default_factory=dict,
        description="Helm values: a value path (image.tag, tolerations[0].key; a backslash "
                    "before a literal '.') -> a string, set as written (commas, braces and "
                    "backslashes are escaped for Helm's --set parser).")


class Diagnostics(_Model):
    """ML Diagnostics settings."""

    enabled: bool = True
    agents: Literal["auto", "managed", "manual", "none"] = Field(
        "auto", description="auto: the GKE-managed add-on where the GKE version allows it, "
                            "else the manual install (cert-manager, webhook, operator).")
    jax_version: str | None = Field(
        None, description="JAX version of the workloads (e.g. '0.8.1'); picks the connection "
                          "operator arguments (manual install).")
    manual: ManualInstall | None = Field(
        None, description="Settings of the manual install; only with agents manual or auto.")
    diagon: DiagonChart | None = Field(
        None, description="Your own Diagon DaemonSet chart, installed in the second stage.")
    profiler_network_policy: bool = Field(
        False, description="Add a NetworkPolicy that lets the agents reach the profiler port "
                           "(for namespaces with a default-deny ingress policy; it also keeps "
                           "traffic inside the namespace open).")
    mlrun_region: str | None = Field(None, description="MLRun location; defaults to the region.")
    profiles_bucket: ProfilesBucket = Field(default_factory=ProfilesBucket)
    log_analytics: LogAnalytics = Field(default_factory=LogAnalytics)
    iam: Iam = Field(default_factory=Iam)
    service_account: ServiceAccount = Field(default_factory=ServiceAccount)
    kubernetes: KubernetesIdentity = Field(default_factory=KubernetesIdentity)


_QUANTITY_SCHEMA = WithJsonSchema(
    {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]})


class Resources(_Model):
    """CPU and memory requests (= limits) of the TPU container, Kubernetes quantities."""

    model_config = ConfigDict(coerce_numbers_to_str=True, strict=False)

    # numbers are accepted (coerced to str), so the JSON Schema must allow them too
    cpu: Annotated[str | None, _QUANTITY_SCHEMA] = Field(None, description="e.g. '10' or '500m'.")
    memory: Annotated[str | None, _QUANTITY_SCHEMA] = Field(None, description="e.g. '500Gi'.")
    ephemeral_storage: Annotated[str | None, _QUANTITY_SCHEMA] = Field(
        None, description="Container ephemeral-storage request (= limit), e.g. '50Gi': the "
                          "writable layer, logs and emptyDir volumes (/tmp, XLA dumps). "
                          "Default: none set; GKE Autopilot then applies 1 GiB "
                          "(https://cloud.google.com/kubernetes-engine/docs/concepts/"
                          "autopilot-resource-requests).")


# --- production workload settings (issue 14): volumes, scheduling, JobSet failure policy ---

class GcsFuseVolume(_Model):
    """A Cloud Storage bucket mounted with the Cloud Storage FUSE CSI driver
    (``gcsfuse.csi.storage.gke.io``, an ephemeral CSI volume; the pod gets the annotation
    ``gke-gcsfuse/volumes: "true"``). The workload's Google service account gets
    roles/storage.objectViewer (read-only) or roles/storage.objectUser on the bucket, which
    its KSA uses through Workload Identity
    (https://cloud.google.com/kubernetes-engine/docs/how-to/cloud-storage-fuse-csi-driver-setup)."""

    bucket: Annotated[str, Field(pattern=patterns.BUCKET)] = Field(
        description="Bucket name (without gs://).")
    mount_options: list[Annotated[str, Field(pattern=patterns.MOUNT_OPTION,
                                             max_length=200)]] = Field(
        default_factory=list,
        description="gcsfuse mount options, e.g. implicit-dirs, only-dir=ckpt, "
                    "file-cache:max-size-mb:-1; joined with commas into the volume's "
                    "mountOptions attribute.")
    grant_access: bool = Field(
        True, description="Grant the workload's Google service account access to the bucket "
                          "(false: you grant it yourself).")


class PvcVolume(_Model):
    """An existing PersistentVolumeClaim in the workload namespace (the stack does not create
    it)."""

    claim_name: DnsName = Field(description="Name of the PersistentVolumeClaim.")


class EmptyDirVolume(_Model):
    """A scratch ``emptyDir`` volume of the pod (counts against ephemeral storage unless
    ``medium: Memory``)."""

    model_config = ConfigDict(coerce_numbers_to_str=True, strict=False)

    size_limit: Annotated[str | None, _QUANTITY_SCHEMA] = Field(
        None, description="e.g. '100Gi'; default: no limit (bounded by the node).")
    medium: Literal["", "Memory"] = Field(
        "", description="'' (node disk) or Memory (tmpfs, counts against memory).")


class WorkloadVolume(_Model):
    """One volume of the workload's pods, mounted into its container at ``mountPath``.
    Exactly one of ``gcsFuse``, ``persistentVolumeClaim`` and ``emptyDir``."""

    name: DnsName
    mount_path: Annotated[str, Field(pattern=patterns.ABSOLUTE_PATH, max_length=4096)] = Field(
        description="Absolute path in the container, e.g. /data.")
    read_only: bool = Field(False, description="Mount read-only (and, for Cloud Storage "
                                               "FUSE, grant read-only access).")
    gcs_fuse: GcsFuseVolume | None = None
    persistent_volume_claim: PvcVolume | None = None
    empty_dir: EmptyDirVolume | None = None


class Toleration(_Model):
    """A Kubernetes toleration of the workload's pods
    (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/)."""

    key: str | None = Field(None, description="Taint key; empty with operator Exists "
                                              "tolerates every taint.")
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = Field(None, description="Taint value (operator Equal only).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="Default: every effect.")
    toleration_seconds: Annotated[int, Field(ge=0)] | None = Field(
        None, description="NoExecute only: how long the pod stays bound after the taint "
                          "appears.")


class FailurePolicy(_Model):
    """JobSet ``spec.failurePolicy`` (https://github.com/kubernetes-sigs/jobset, API
    jobset.x-k8s.io/v1alpha2): how often the whole JobSet is recreated after a child Job
    fails. JobSet workloads only."""

    max_restarts: Annotated[int, Field(ge=0, le=1000)] | None = Field(
        None, description="Restarts of the whole JobSet before it fails. Default: 3 for a "
                          "multislice on Spot capacity (one preempted VM fails every slice), "
                          "else 0.")
    restart_strategy: Literal["Recreate", "BlockingRecreate", "InPlaceRestart"] | None = Field(
        None, description="JobSet v0.9.0+: Recreate (controller default) or BlockingRecreate "
                          "(wait until every old Job is gone); InPlaceRestart needs v0.12.0. "
                          "Checked against the installed JobSet release.")


class Workload(_Model):
    """A TPU workload rendered as a Job (one slice) or a JobSet (multislice)."""

    name: DnsName
    slice: str = Field(description="Name of a slice in spec.slices.")
    image: Annotated[str, Field(pattern=IMAGE_REF, max_length=512)]
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    env: dict[Annotated[str, Field(pattern=ENV_NAME)], str] = Field(default_factory=dict)
    chips_per_pod: int | None = Field(
        None, description="google.com/tpu per pod; must equal the slice's chips per VM.")
    gpus_per_pod: Annotated[int, Field(ge=1)] | None = Field(
        None, description="nvidia.com/gpu per pod (GPU slices); at most the GPUs of one VM; "
                          "defaults to all of them.")
    resources: Resources = Field(default_factory=Resources)
    ml_diagnostics: bool = Field(True, description="Label the workload for ML Diagnostics.")
    backoff_limit: Annotated[int, Field(ge=0)] = 0
    kind: Literal["auto", "Job", "JobSet"] = Field(
        "auto", description="auto: JobSet for multislice, else Job. The injection webhook "
                            "supports JobSet (not Job); workload monitoring sees both.")
    host_network: bool = Field(
        False, description="Run in the node's network namespace (port 9999 then binds on "
                           "the node; the pods act as the node's service account).")
    volumes: list[WorkloadVolume] = Field(
        default_factory=list,
        description="Cloud Storage FUSE buckets, existing PVCs and emptyDir scratch volumes.")
    tolerations: list[Toleration] = Field(default_factory=list,
                                          description="Tolerations of the pods.")
    annotations: dict[str, str] = Field(
        default_factory=dict, description="Annotations of the pods (pod template).")
    priority_class_name: Annotated[str, Field(
        pattern=patterns.DNS_SUBDOMAIN, max_length=253)] | None = Field(
        None, description="An existing PriorityClass (the stack does not create it).")
    failure_policy: FailurePolicy | None = Field(
        None, description="JobSet failure policy (maxRestarts, restartStrategy); default: "
                          "3 restarts for Spot multislice, else 0.")


# --- Cluster Director managed Slurm (orchestrator.type: slurm) -------------------------
# Field docs: the Cluster Director v1 API (google-cloud-hypercomputecluster); rules that need
# the catalog or two fields at once are in preflight/slurm_rules.py.

class SlurmNetwork(_Model):
    """The cluster's VPC network: a new one (default) or an existing network + subnetwork."""

    create: bool = Field(True, description="true: Cluster Director creates the network.")
    name: str | None = Field(
        None, description="Network name or projects/P/global/networks/N. Default for a new "
                          "network: '<cluster>-net'; required for an existing one.")
    subnetwork: str | None = Field(
        None, description="Existing network only: subnetwork name (in spec.region) or "
                          "projects/P/regions/R/subnetworks/S.")


class SlurmFilestore(_Model):
    """A Filestore instance (the shared /home of the cluster)."""

    create: bool = True
    name: str | None = Field(
        None, description="Instance name, or projects/P/locations/L/instances/I for an "
                          "existing one. Default for a new one: '<cluster>-<storage id>'.")
    tier: Literal["ZONAL", "REGIONAL"] = "ZONAL"
    capacity_gb: Annotated[int, Field(ge=1)] = Field(
        1024, description="1024 to 102400 GB (Cluster Director FileShareConfig).")
    file_share: str = Field("nfsshare", description="File share name ([a-z0-9_], letter first).")
    protocol: Literal["NFSV3", "NFSV41"] | None = Field(None, description="Default NFSV3.")


class SlurmLustre(_Model):
    """A Managed Lustre instance."""

    create: bool = True
    name: str | None = Field(
        None, description="Instance name, or projects/P/locations/L/instances/I for an "
                          "existing one. Default for a new one: '<cluster>-<storage id>'.")
    capacity_gb: Annotated[int, Field(ge=1)] | None = Field(
        None, description="New instance: 18000 to 7632000 GiB.")
    filesystem: str = Field("lustrefs", description="At most 8 letters and digits.")
    throughput: int | None = Field(
        None, description="Per-unit storage throughput, MBps per TiB: 125, 250, 500 or 1000.")


class SlurmBucket(_Model):
    """A Cloud Storage bucket (mounted with Cloud Storage FUSE)."""

    create: bool = True
    name: str = Field(description="Bucket name.")
    storage_class: Literal["STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE"] | None = None


class SlurmStorage(_Model):
    """One storage resource of the cluster: exactly one of filestore, lustre and bucket."""

    id: DnsName
    mount: str = Field(description="Where nodes mount it, e.g. /home.")
    filestore: SlurmFilestore | None = None
    lustre: SlurmLustre | None = None
    bucket: SlurmBucket | None = None


class SlurmBootDisk(_Model):
    type: Annotated[str, Field(pattern=patterns.DISK_TYPE)] = Field(
        description="Disk type, e.g. pd-balanced or hyperdisk-balanced.")
    size_gb: Annotated[int, Field(ge=10, le=65536)]


class SlurmLoginNodes(_Model):
    """Login nodes: where users ssh in and run sbatch."""

    count: Annotated[int, Field(ge=1, le=100)] = 1
    machine_type: str = Field(
        "n2-standard-4", description="N2 standard, at most 32 vCPUs (Cluster Director).")
    zone: str | None = Field(None, description="Defaults to spec.zone (and must equal it).")
    enable_os_login: bool = True
    enable_public_ips: bool = True
    storage: list[str] | None = Field(
        None, description="Storage ids to mount (default: all of slurm.storage).")
    startup_script: Annotated[str, Field(max_length=262144)] | None = None
    boot_disk: SlurmBootDisk | None = None


class SlurmNodeSet(_Model):
    """A Slurm node set: the VMs of a GPU slice (``slice``), or CPU VMs (``machineType``)."""

    id: DnsName
    slice: str | None = Field(
        None, description="A GPU slice of spec.slices: its machine type, nodes and capacity.")
    machine_type: str | None = Field(
        None, description="Without slice: the machine type (n2-* for CPU node sets).")
    capacity: Capacity = Field(
        default_factory=Capacity,
        description="Without slice: how the VMs are obtained (a slice brings its own).")
    static_node_count: Annotated[int, Field(ge=0, le=10000)] | None = Field(
        None, description="Nodes kept running (default: the slice's nodes, or 1).")
    max_dynamic_node_count: Annotated[int, Field(ge=0, le=10000)] | None = Field(
        None, description="Extra nodes Slurm may create on demand (default: none).")
    storage: list[str] | None = Field(
        None, description="Storage ids to mount (default: all of slurm.storage).")
    startup_script: Annotated[str, Field(max_length=262144)] | None = Field(
        None, description="Your own script, run after the ML Diagnostics SDK install.")
    boot_disk: SlurmBootDisk | None = None


class SlurmPartition(_Model):
    id: DnsName
    node_sets: Annotated[list[str], Field(min_length=1)] = Field(
        description="Ids of node sets in this partition.")


class SlurmSpec(_Model):
    """Cluster Director managed Slurm (Vertex AI Training clusters): network, storage,
    login nodes, node sets and partitions."""

    network: SlurmNetwork = Field(default_factory=SlurmNetwork)
    storage: list[SlurmStorage] = Field(default_factory=list)
    login_nodes: SlurmLoginNodes = Field(default_factory=SlurmLoginNodes)
    node_sets: list[SlurmNodeSet] = Field(
        default_factory=list, description="GPU slices not named here get a node set each, "
                                          "with the slice's name as id.")
    partitions: list[SlurmPartition] = Field(
        default_factory=list, description="Default: one partition per node set.")
    default_partition: str | None = Field(
        None, description="Required when there is more than one partition.")
    node_service_account: str | None = Field(
        None, description="Email of the service account the nodes run as, for the ML "
                          "Diagnostics grants; default: the Compute Engine default one.")
    sdk_package: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        "google-cloud-mldiagnostics", description="pip requirement the node startup script "
                                                  "installs, e.g. 'google-cloud-mldiagnostics"
                                                  "==1.0.10'.")
    pip_index_url: str | None = Field(
        None, description="A PyPI mirror for nodes without internet egress.")
    container_runtime: Literal["pyxis", "none"] = Field(
        "pyxis", description="pyxis: sbatch scripts run the workload image with srun "
                             "--container-image; none: the command runs on the node itself.")


class PolicyWaiver(_Model):
    """One policy-gate rule switched off for this stack, and why (the gate prints both)."""

    rule: Annotated[str, Field(min_length=1, description="Rule id, e.g. gke-deletion-protection.")]
    reason: Annotated[str, Field(min_length=10, description="Why the rule does not apply: "
                                                            "printed by every gate run.")]


class Policy(_Model):
    """The policy gate (``mldiag-provision policy``; ``plan``/``apply`` run it too)."""

    directories: list[str] = Field(
        default_factory=list,
        description="Your own Rego policy directories, relative to this recipe file, "
                    "evaluated with the bundled ones.")
    required_labels: list[str] = Field(
        default_factory=list,
        description="Label keys every labelled resource must carry (rule required-labels).")
    allowed_regions: list[str] = Field(
        default_factory=list, description="Regions the stack may use; empty: any.")
    allowed_zones: list[str] = Field(
        default_factory=list, description="Zones the stack may use; empty: any.")
    allow_deletes: list[Literal["cluster", "node-pool", "profiles-bucket"]] = Field(
        default_factory=list,
        description="What a plan may delete (rule plan-destructive-delete); default: none.")
    max_hourly_cost: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None,
        description="Budget in US dollars per hour (rule max-hourly-cost): the gate refuses a "
                    "stack whose priced total (offline price table, `mldiag-provision cost`) "
                    "is above it; unknown prices are not counted, so the check uses the known "
                    "lower bound. Also a Rego input (input.params.max_hourly_cost).")
    waivers: list[PolicyWaiver] = Field(default_factory=list)


class Kueue(_Model):
    """Kueue objects for slices with ``capacity.type: queued`` (flex-start with queued
    provisioning through Kueue's ProvisioningRequest admission check). Kueue itself is
    installed by the agents/ stage (its Helm chart, pinned in catalog/data/gke.yaml
    ``queuedProvisioning.kueue``)."""

    cluster_queue: DnsName = Field(
        "mldiag-queued", description="ClusterQueue the queued workloads are admitted through.")
    local_queue: DnsName = Field(
        "mldiag-queued", description="LocalQueue in the workload namespace; the workloads carry "
                                     "kueue.x-k8s.io/queue-name: <localQueue>.")


class Spec(_Model):
    project: Annotated[str, Field(pattern=r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$",
                                  description="Google Cloud project id.")]
    region: Annotated[str, Field(pattern=r"^[a-z]+-[a-z]+[0-9]+$")]
    zone: Annotated[str, Field(pattern=r"^[a-z]+-[a-z]+[0-9]+-[a-z0-9]+$")] | None = None
    engine: Engine = Field(default_factory=Engine)
    orchestrator: Orchestrator
    slices: Annotated[list[Slice], Field(min_length=1)]
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)
    workloads: list[Workload] = Field(default_factory=list)
    slurm: SlurmSpec = Field(
        default_factory=SlurmSpec,
        description="orchestrator.type slurm: the managed Slurm cluster (defaults apply when "
                    "left out).")
    policy: Policy | None = Field(
        None, description="Policy gate settings: your policy directories, parameters of the "
                          "bundled rules, waivers with reasons.")
    kueue: Kueue | None = Field(
        None, description="Queue names for slices with capacity type queued (defaults apply "
                          "when left out).")


class Recipe(_Model):
    """A whole recipe file."""

    api_version: Literal["mldiag-provision/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Recipe"]
    metadata: Metadata
    spec: Spec


def json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the recipe, with camelCase keys, for editors and CI."""
    schema = Recipe.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://mldiag-provision.dev/schemas/recipe-v1alpha1.json",
        "title": "mldiag-provision Recipe",
        **schema,
    }


def validator_schema() -> dict[str, Any]:
    """The recipe's pydantic-core schema in a JSON-serialisable form, for
    :mod:`mldiag_provision.recipe.validator`.

    pydantic's own core schema holds Python objects; here each model class becomes
    ``{"$model": NAME}``, each ``default_factory`` the default it produces (``{}`` for a model,
    validated again because the models set ``validate_default``), and schema ``metadata``
    (JSON-Schema hooks) is dropped. Validating with it gives exactly the models' errors without
    importing pydantic, which is most of the CLI's start-up time.

    Raises:
      TypeError: a field uses a default factory this conversion does not know.
    """

    def convert(node: object) -> object:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for key, value in node.items():
                if key == "metadata" and "type" in node:
                    continue
                if key == "cls":
                    out[key] = {"$model": value.__name__}
                elif key in ("ref", "schema_ref") and isinstance(value, str):
                    out[key] = value.split(":")[0]  # pydantic appends id(cls): not stable
                elif key == "default_factory":
                    if isinstance(value, type) and issubclass(value, BaseModel):
                        out["default"] = {}
                    elif value in (dict, list):
                        out["default"] = value()
                    else:
                        raise TypeError(f"unsupported default_factory {value!r}")
                else:
                    out[key] = convert(value)
            return out
        if isinstance(node, (list, tuple)):
            return [convert(v) for v in node]
        return node

    return convert(Recipe.__pydantic_core_schema__)  # type: ignore[return-value]
