"""Recipe + catalog -> :class:`StackPlan`: every decision the templates need, as plain data.

Templates format; they never compute. The plan is written beside the rendered stack
(``.mldiag/plan.json``) so that a person can diff what the tool decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from mldiag_provision import __version__
from mldiag_provision.catalog import requirements as req
from mldiag_provision.catalog.gke_version import GkeVersion
from mldiag_provision.catalog.gpu import GPU_ACCELERATOR_LABEL, GPU_RESOURCE, GpuShape
from mldiag_provision.catalog.tpu import Catalog, SliceShape
from mldiag_provision.plan import slurm as slurm_plan
from mldiag_provision.plan.agents import AgentsPlan, plan_agents
from mldiag_provision.plan.names import (
    default_profiles_bucket,
    node_pool_names,
    node_service_account_id,
)
from mldiag_provision.plan.parts import (
    BackendPlan,
    ClusterPlan,
    DiagnosticsPlan,
    IamPlan,
    KubernetesClusterPlan,
    KubernetesDiagnosticsPlan,
    KubernetesIdentityPlan,
    LogAnalyticsPlan,
    NodePoolPlan,
    ProfilesBucketPlan,
    ServiceAccountPlan,
    StandardClusterPlan,
)

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import Recipe

TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
TPU_RESOURCE = "google.com/tpu"


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
    capacity: str  # on-demand | spot | reservation | flex-start
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
    :class:`~.slurm.SlurmClusterPlan`."""
    diagnostics: DiagnosticsPlan
    """:class:`~.parts.KubernetesDiagnosticsPlan` unless the orchestrator is Slurm."""
    slices: tuple[SlicePlan, ...]
    workloads: tuple[WorkloadPlan, ...]
    node_pools: tuple[NodePoolPlan, ...] = ()
    """GKE Standard: one per slice x count."""
    agents: AgentsPlan | None = None
    """The agents/ stage (:func:`~.agents.plan_agents`); ``None``: no such stage."""
    slurm: slurm_plan.SlurmPlan | None = None
    """Orchestrator slurm: the managed Slurm cluster (:func:`~.slurm.extend`)."""
    decisions: tuple[str, ...] = ()
    """What was decided and why, one line each (the README and ``render`` show them)."""

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (``.mldiag/plan.json``): field names as keys, nested
        plans as dicts, tuples as lists once dumped; only the fields of the classes the plan
        holds (a Slurm plan has no GKE cluster fields)."""
        return asdict(self)


SLICE_LABEL = "mldiag-provision/slice"
BLUEPRINTS = {"gke-autopilot": "gke-autopilot", "gke-standard": "gke-standard",
              "existing-kubernetes": "existing-kubernetes", "slurm": "slurm"}


def _capacity_selector(orchestrator: str, slice_name: str, cap_type: str,
                       reservation: str | None, reservation_project: str | None,
                       zone: str | None) -> dict[str, str]:
    """The nodeSelector entries beyond the accelerator labels.

    On Autopilot the capacity is asked for by selector: spot, flex-start, a specific
    reservation (Autopilot spot / flex-start / reservation docs); a recipe zone pins the pods
    with the well-known ``topology.kubernetes.io/zone`` label. On Standard the slice's own
    node pools carry the capacity, and pods select them by the slice label on those pools.
    """
    if orchestrator == "gke-standard":
        return {SLICE_LABEL: slice_name}
    sel: dict[str, str] = {}
    if zone:
        sel["topology.kubernetes.io/zone"] = zone
    if cap_type == "spot":
        sel["cloud.google.com/gke-spot"] = "true"
    elif cap_type == "flex-start":
        sel["cloud.google.com/gke-flex-start"] = "true"
    elif cap_type == "reservation" and reservation:
        sel["cloud.google.com/reservation-name"] = reservation
        sel["cloud.google.com/reservation-affinity"] = "specific"
        if reservation_project:
            sel["cloud.google.com/reservation-project"] = reservation_project
    return sel


def workload_kind(requested: str, sp: SlicePlan) -> str:
    """The kind a workload renders as: the recipe's ``kind``, or for ``auto`` a JobSet on a
    multislice (count > 1) and a Job otherwise."""
    return requested if requested != "auto" else ("JobSet" if sp.count > 1 else "Job")


def build_plan(recipe: Recipe, shapes: dict[int, SliceShape | GpuShape | None],
               catalog: Catalog) -> StackPlan:
    """Decide the stack. Call only after preflight reported no errors.

    Args:
      shapes: resolved slice shapes by slice index, from preflight (none may be ``None``).
    Raises:
      ValueError: a slice was left unresolved (preflight was skipped).
    """
    spec = recipe.spec
    decisions: list[str] = []
    slices: list[SlicePlan] = []
    for i, s in enumerate(spec.slices):
        shape = shapes.get(i)
        if shape is None:
            raise ValueError(f"slice {s.name} is unresolved; run preflight first")
        if isinstance(shape, GpuShape):
            sel = {GPU_ACCELERATOR_LABEL: shape.gpu.accelerator,
                   **_capacity_selector(spec.orchestrator.type, s.name, s.capacity.type,
                                        s.capacity.reservation, s.capacity.reservation_project,
                                        spec.zone)}
            vms = s.nodes or 1
            slices.append(SlicePlan(
                name=s.name, kind="gpu", accelerator_type=shape.gpu.key,
                accelerator=shape.gpu.accelerator, resource=GPU_RESOURCE, topology=None,
                machine_type=shape.machine.name if shape.machine else None,
                chips=shape.gpus_per_vm * vms if shape.gpus_per_vm else None,
                chips_per_vm=shape.gpus_per_vm, vms=vms, count=1, multi_host=vms > 1,
                capacity=s.capacity.type, reservation=s.capacity.reservation,
                reservation_project=s.capacity.reservation_project, node_selector=sel))
        else:
            sel = {TPU_ACCELERATOR_LABEL: shape.version.accelerator,
                   TPU_TOPOLOGY_LABEL: shape.topology,
                   **_capacity_selector(spec.orchestrator.type, s.name, s.capacity.type,
                                        s.capacity.reservation, s.capacity.reservation_project,
                                        spec.zone)}
            slices.append(SlicePlan(
                name=s.name, kind="tpu", accelerator_type=shape.version.key,
                accelerator=shape.version.accelerator, resource=TPU_RESOURCE,
                topology=shape.topology, machine_type=shape.machine_type.name, chips=shape.chips,
                chips_per_vm=shape.chips_per_vm, vms=shape.vms, count=s.count,
                multi_host=shape.multi_host, capacity=s.capacity.type,
                reservation=s.capacity.reservation,
                reservation_project=s.capacity.reservation_project, node_selector=sel))
        decisions.append(f"slice {s.name}: {slices[-1].summary()}")

    # --- GKE version: the highest minimum of what the recipe uses ---------------------
    diag = spec.diagnostics
    orchestrator = spec.orchestrator.type
    creates_cluster = orchestrator in ("gke-autopilot", "gke-standard")
    needs = req.cluster_needs(orchestrator, [(shape, s.count)
                                             for i, s in enumerate(spec.slices)
                                             if isinstance(shape := shapes.get(i), SliceShape)],
                              catalog)
    managed_need = req.managed_diagnostics_need(catalog)
    wants_managed = diag.enabled and diag.agents in ("auto", "managed")
    user_version = (GkeVersion.parse(spec.orchestrator.min_version)
                    if spec.orchestrator.min_version else None)
    min_version: str | None = None
    if not creates_cluster:
        managed = False
    elif user_version is None and not (needs or wants_managed):
        # e.g. GPU slices only, agents manual/none: nothing sets a minimum
        decisions.append("GKE minimum version: the release channel's default (nothing in "
                         "the recipe needs a minimum)")
        managed = False
    elif user_version is None:
        chosen_needs = needs + ([managed_need] if wants_managed else [])
        top = req.highest(chosen_needs)
        min_version = str(top.version)
        managed = wants_managed
        channel = spec.orchestrator.release_channel
        oldest = req.channel_oldest_minor(catalog, channel)
        if not managed and oldest is not None and (top.version.major,
                                                   top.version.minor) < oldest:
            # GKE refuses a min_master_version its channel does not offer (gke.yaml
            # releaseChannels); every version the channel offers meets these minimums.
            min_version = None
            decisions.append(
                f"GKE version: the {channel} channel's default (every minimum the recipe "
                f"needs is below {oldest[0]}.{oldest[1]}, the oldest minor the channel offers "
                "new clusters: " + ", ".join(f"{n.reason} {n.version}" for n in chosen_needs)
                + ")")
        else:
            decisions.append(f"GKE minimum version {min_version} ({top.reason}; highest of: "
                             + ", ".join(f"{n.reason} {n.version}" for n in chosen_needs)
                             + ")")
    else:
        min_version = str(user_version)
        managed = wants_managed and req.satisfies(user_version, managed_need) is True
        decisions.append(f"GKE minimum version {min_version} (from the recipe)")
    by_name = {s.name: s for s in slices}
    kinds = [workload_kind(w.kind, by_name[w.slice]) for w in spec.workloads]
    agents_plan = plan_agents(
        recipe, catalog, creates_cluster=creates_cluster, managed_ok=managed,
        workload_kinds=kinds,
        cluster_name=spec.orchestrator.cluster_name or recipe.metadata.name,
        gsa_email=(f"{diag.service_account.name}@{spec.project}.iam.gserviceaccount.com"
                   if (orchestrator != "existing-kubernetes"
                       or spec.orchestrator.workload_identity) else None))
    agents = agents_plan.strategy
    managed = managed and agents == "managed"
    decisions.append(f"ML Diagnostics agents: {agents} ({agents_plan.reasons[0]})")

    labels = {"managed-by": "mldiag-provision", "mldiag-stack": recipe.metadata.name,
              **recipe.metadata.labels}
    labels = dict(sorted(labels.items()))
    services = sorted({str(s["service"]) for s in catalog.fact("mlDiagnostics",
                                                                  "requiredServices")})
    if diag.iam.mode == "predefined":
        roles = [str(r["role"]) for r in catalog.fact("mlDiagnostics", "predefinedRoles")]
        permissions: list[str] = []
    else:
        roles = []
        permissions = sorted(str(p["permission"]) for p in
                             catalog.fact("mlDiagnostics", "customRolePermissions"))
    bucket_name = (diag.profiles_bucket.name
                   or default_profiles_bucket(spec.project, recipe.metadata.name))
    gsa = diag.service_account.name
    label_fact = catalog.fact("mlDiagnostics", "namespaceLabel")
    wi_binding = orchestrator != "existing-kubernetes" or spec.orchestrator.workload_identity
    diagnostics = KubernetesDiagnosticsPlan(
        enabled=diag.enabled,
        agents=agents,
        mlrun_region=diag.mlrun_region or spec.region,
        namespace_label={str(label_fact["key"]): str(label_fact["value"])},
        profiles_bucket=ProfilesBucketPlan(
            name=bucket_name, create=diag.profiles_bucket.create,
            location=(diag.profiles_bucket.location or spec.region).upper(),
            force_destroy=diag.profiles_bucket.delete_on_destroy,
        ),
        log_analytics=LogAnalyticsPlan(enabled=diag.log_analytics.enabled,
                                       retention_days=diag.log_analytics.retention_days),
        iam=IamPlan(mode=diag.iam.mode, roles=tuple(roles),
                    custom_role_id=diag.iam.custom_role_id, permissions=tuple(permissions)),
        service_account=ServiceAccountPlan(account_id=gsa, create=diag.service_account.create,
                                           email=f"{gsa}@{spec.project}.iam.gserviceaccount.com"),
        kubernetes=KubernetesIdentityPlan(namespace=diag.kubernetes.namespace,
                                          service_account=diag.kubernetes.service_account),
        workload_identity_binding=wi_binding,
    )
    orch = spec.orchestrator
    cluster_name = orch.cluster_name or recipe.metadata.name
    workload_pool = f"{spec.project}.svc.id.goog" if wi_binding else None
    cluster: KubernetesClusterPlan
    node_pools: list[NodePoolPlan] = []
    if orchestrator != "gke-standard":
        cluster = KubernetesClusterPlan(
            name=cluster_name, type=orch.type, location=spec.region,
            deletion_protection=orch.deletion_protection, release_channel=orch.release_channel,
            min_master_version=min_version, managed_ml_diagnostics=managed,
            network=orch.network, subnetwork=orch.subnetwork, workload_pool=workload_pool)
    else:
        roles = [str(r) for r in catalog.fact("standard", "nodeServiceAccountRoles")["roles"]]
        if diag.enabled and any(w.host_network for w in spec.workloads):
            # hostNetwork pods skip Workload Identity and act as the node's service account
            ml_roles = [str(r["role"]) for r in catalog.fact("mlDiagnostics", "predefinedRoles")]
            roles += [r for r in ml_roles if r not in roles]
            decisions.append("hostNetwork workloads run as the node service account: it gets "
                             "the ML Diagnostics roles too")
        cluster = StandardClusterPlan(
            name=cluster_name, type=orch.type, location=spec.region,
            deletion_protection=orch.deletion_protection, release_channel=orch.release_channel,
            min_master_version=min_version, managed_ml_diagnostics=managed,
            network=orch.network, subnetwork=orch.subnetwork, workload_pool=workload_pool,
            node_service_account_id=node_service_account_id(cluster_name),
            node_service_account_roles=tuple(roles),
            system_pool_machine_type=orch.system_pool_machine_type)
        for sp in slices:
            # TPU7x multi-host pools are placed by a workload policy (GKE Ironwood page)
            workload_policy = sp.kind == "tpu" and sp.multi_host and sp.accelerator_type == "tpu7x"
            for name in node_pool_names(sp.name, sp.count):
                node_pools.append(NodePoolPlan(
                    name=name, slice=sp.name, zone=spec.zone,
                    machine_type=sp.machine_type, node_count=sp.vms,
                    topology=sp.topology, multi_host=sp.kind == "tpu" and sp.multi_host,
                    gpu_type=sp.accelerator if sp.kind == "gpu" else None,
                    gpu_count=sp.chips_per_vm if sp.kind == "gpu" else None,
                    workload_policy=workload_policy, capacity=sp.capacity,
                    reservation=sp.reservation,
                    reservation_project=sp.reservation_project,
                    node_labels={SLICE_LABEL: sp.name},
                ))
            placement = ("HIGH_THROUGHPUT workload policy" if workload_policy else
                         "COMPACT placement" if sp.kind == "tpu" and sp.multi_host
                         else "no placement policy")
            decisions.append(f"slice {sp.name}: {sp.count} node pool(s) of {sp.vms} x "
                             f"{sp.machine_type} in {spec.zone}, {placement}, capacity "
                             f"{sp.capacity}")
    workloads: list[WorkloadPlan] = []
    for w in spec.workloads:
        sp = by_name[w.slice]
        kind = workload_kind(w.kind, sp)
        per_pod = (w.gpus_per_pod or sp.chips_per_vm) if sp.kind == "gpu" else sp.chips_per_vm
        workloads.append(WorkloadPlan(
            name=w.name, slice=sp.name, kind=kind, resource=sp.resource, image=w.image,
            command=tuple(w.command), args=tuple(w.args), env=dict(w.env),
            chips_per_pod=per_pod,  # type: ignore[arg-type]  # preflight guarantees a value
            pods_per_slice=sp.vms, slices=sp.count,
            cpu=w.resources.cpu, memory=w.resources.memory,
            ml_diagnostics_label=diag.enabled and w.ml_diagnostics,
            backoff_limit=w.backoff_limit,
            headless_service=f"{w.name}-workers" if (sp.multi_host and kind == "Job") else None,
            host_network=w.host_network))
        unit = "GPUs" if sp.kind == "gpu" else "chips"
        decisions.append(f"workload {w.name}: {kind}, {sp.vms} pod(s) per slice x "
                         f"{sp.count} slice(s), {per_pod} {unit} per pod")
    for a in agents_plan.addons:
        decisions.append(f"cluster add-on for {a.kind} workloads: {a.name} "
                         f"{a.version} ({a.repository}/{a.chart}; CRD {a.crd}), "
                         "installed by the agents stage before the workload namespace")
    backend = BackendPlan(type=spec.engine.backend.type, bucket=spec.engine.backend.bucket,
                          prefix=spec.engine.backend.prefix)
    plan = StackPlan(
        tool_version=__version__, blueprint=BLUEPRINTS[orchestrator], name=recipe.metadata.name,
        project=spec.project, region=spec.region, zone=spec.zone, labels=labels,
        backend=backend, services=tuple(services), cluster=cluster, diagnostics=diagnostics,
        slices=tuple(slices), workloads=tuple(workloads), node_pools=tuple(node_pools),
        decisions=tuple(decisions), agents=agents_plan)
    return slurm_plan.extend(plan, recipe, catalog) if orchestrator == "slurm" else plan
