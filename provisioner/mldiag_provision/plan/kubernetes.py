"""The Kubernetes part of a stack (GKE Autopilot, GKE Standard, an existing cluster): the GKE
version, the agents stage, the cluster, GKE Standard's node pools and the workloads.

:func:`build` is the ``plan`` of every orchestrator unit whose workloads run on Kubernetes;
what differs between them comes from the unit's capabilities
(:class:`~mldiag_provision.orchestrators.Capability`), never from its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mldiag_provision.catalog import requirements as req
from mldiag_provision.catalog.gke_version import GkeVersion
from mldiag_provision.catalog.tpu import Catalog, SliceShape
from mldiag_provision.plan import names
from mldiag_provision.plan.names import node_pool_names
from mldiag_provision.plan.parts import (
    AuthorizedNetworkPlan,
    GkeClusterPlan,
    KubernetesClusterPlan,
    KubernetesDiagnosticsPlan,
    KubernetesIdentityPlan,
    MaintenanceExclusionPlan,
    MaintenancePlan,
    MaintenanceWindowPlan,
    NodePoolPlan,
    NodeServiceAccountPlan,
    PrivateClusterPlan,
    ServiceAccountPlan,
    StandardClusterPlan,
)
from mldiag_provision.plan.previous import keep_name, previous_value
from mldiag_provision.plan.project import SLICE_LABEL
from mldiag_provision.plan.types import (
    BucketGrantPlan,
    ProjectPlan,
    QueuedPlan,
    SlicePlan,
    StackPlan,
    VolumePlan,
    WorkloadPlan,
)

QUEUED = "queued"

if TYPE_CHECKING:
    from mldiag_provision.orchestrators import Orchestrator
    from mldiag_provision.plan.gpunet import GpuNetworkPlan
    from mldiag_provision.recipe.model import Recipe


def _gke_version(unit: Orchestrator, project: ProjectPlan, recipe: Recipe, catalog: Catalog,
                 decisions: list[str]) -> tuple[str | None, bool]:
    """(minimum GKE version or None, managed add-on allowed by it) of the cluster the stack
    creates; appends the decision line. Facts: catalog/data/gke.yaml, tpu.yaml ``gke:``."""
    from mldiag_provision.orchestrators import Capability

    spec = recipe.spec
    diag = spec.diagnostics
    if not unit.has(Capability.CREATES_CLUSTER):
        return None, False
    needs = req.cluster_needs(unit.gke, [(shape, s.count)
                                         for i, s in enumerate(spec.slices)
                                         if isinstance(shape := project.shapes.get(i),
                                                       SliceShape)],
                              catalog)
    if unit.has(Capability.NODE_POOLS):
        needs += req.queued_needs(catalog, {sp.kind for sp in project.slices
                                            if sp.capacity == QUEUED})
    managed_need = req.managed_diagnostics_need(catalog)
    wants_managed = diag.enabled and diag.agents in ("auto", "managed")
    user_version = (GkeVersion.parse(spec.orchestrator.min_version)
                    if spec.orchestrator.min_version else None)
    if user_version is not None:
        decisions.append(f"GKE minimum version {user_version} (from the recipe)")
        return str(user_version), (wants_managed
                                   and req.satisfies(user_version, managed_need) is True)
    if not (needs or wants_managed):
        # e.g. GPU slices only, agents manual/none: nothing sets a minimum
        decisions.append("GKE minimum version: the release channel's default (nothing in "
                         "the recipe needs a minimum)")
        return None, False
    chosen_needs = needs + ([managed_need] if wants_managed else [])
    top = req.highest(chosen_needs)
    channel = spec.orchestrator.release_channel
    oldest = req.channel_oldest_minor(catalog, channel)
    if not wants_managed and oldest is not None and (top.version.major,
                                                     top.version.minor) < oldest:
        # GKE refuses a min_master_version its channel does not offer (gke.yaml
        # releaseChannels); every version the channel offers meets these minimums.
        decisions.append(
            f"GKE version: the {channel} channel's default (every minimum the recipe "
            f"needs is below {oldest[0]}.{oldest[1]}, the oldest minor the channel offers "
            "new clusters: " + ", ".join(f"{n.reason} {n.version}" for n in chosen_needs)
            + ")")
        return None, False
    decisions.append(f"GKE minimum version {top.version} ({top.reason}; highest of: "
                     + ", ".join(f"{n.reason} {n.version}" for n in chosen_needs) + ")")
    return str(top.version), wants_managed


def workload_kind(requested: str, sp: SlicePlan) -> str:
    """The kind a workload renders as: the recipe's ``kind``, or for ``auto`` a JobSet on a
    multislice (count > 1) and a Job otherwise."""
    return requested if requested != "auto" else ("JobSet" if sp.count > 1 else "Job")


def _workload_policy(project: ProjectPlan, index: int, sp: SlicePlan) -> bool:
    """A multi-host TPU slice whose version is placed by a workload policy (tpu.yaml
    ``gke.multiHostPlacement``; TPU7x:
    https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood)."""
    shape = project.shapes.get(index)
    return (sp.kind == "tpu" and sp.multi_host and isinstance(shape, SliceShape)
            and shape.version.multi_host_placement == "workload-policy")


def diagnostics_plan(project: ProjectPlan, recipe: Recipe, catalog: Catalog, agents: str,
                     wi_binding: bool) -> KubernetesDiagnosticsPlan:
    """The ML Diagnostics side of a Kubernetes stack (shared with preflight, which renders
    the workloads' manifests to lint them)."""
    diag = recipe.spec.diagnostics
    gsa = project.workload_service_account
    label_fact = catalog.fact("mlDiagnostics", "namespaceLabel")
    return KubernetesDiagnosticsPlan(
        enabled=diag.enabled, agents=agents, mlrun_region=project.mlrun_region,
        namespace_label={str(label_fact["key"]): str(label_fact["value"])},
        profiles_bucket=project.profiles_bucket, log_analytics=project.log_analytics,
        iam=project.iam,
        service_account=ServiceAccountPlan(
            account_id=gsa, create=diag.service_account.create,
            email=f"{gsa}@{recipe.spec.project}.iam.gserviceaccount.com"),
        kubernetes=KubernetesIdentityPlan(namespace=diag.kubernetes.namespace,
                                          service_account=diag.kubernetes.service_account),
        workload_identity_binding=wi_binding,
    )


# JobSet restarts of a multislice on Spot capacity when the recipe states none. Our decision,
# not a Google default: a Spot VM can be preempted at any time
# (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms), and a multislice job
# needs every VM of every slice, so one preemption fails the whole JobSet; JobSet's
# failurePolicy.maxRestarts recreates all its Jobs (kubernetes-sigs/jobset, API
# jobset.x-k8s.io/v1alpha2 FailurePolicy). 3 rides out a few preemptions (training resumes
# from its last checkpoint) without retrying forever on capacity that is gone.
SPOT_MULTISLICE_MAX_RESTARTS = 3

# The pod annotation that makes GKE inject the Cloud Storage FUSE sidecar (kubernetes.yaml
# volumes.gcsFuse).
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"


def decide_max_restarts(w: Any, sp: SlicePlan, kind: str) -> int:
    """JobSet ``failurePolicy.maxRestarts`` of a workload: the recipe's ``failurePolicy.
    maxRestarts`` when stated; else :data:`SPOT_MULTISLICE_MAX_RESTARTS` for a JobSet over
    more than one Spot slice; else 0 (what the JobSets rendered before had). Jobs: 0."""
    fp = getattr(w, "failure_policy", None)
    if kind != "JobSet":
        return 0
    if fp is not None and fp.max_restarts is not None:
        return int(fp.max_restarts)
    return SPOT_MULTISLICE_MAX_RESTARTS if sp.capacity == "spot" and sp.count > 1 else 0


def _volume_plans(w: Any) -> tuple[VolumePlan, ...]:

    out = []
    for v in getattr(w, "volumes", None) or ():
        if v.gcs_fuse is not None:
            out.append(VolumePlan(name=v.name, mount_path=v.mount_path, read_only=v.read_only,
                                  source="gcsFuse", bucket=v.gcs_fuse.bucket,
                                  mount_options=",".join(v.gcs_fuse.mount_options) or None))
        elif v.persistent_volume_claim is not None:
            out.append(VolumePlan(name=v.name, mount_path=v.mount_path, read_only=v.read_only,
                                  source="persistentVolumeClaim",
                                  claim_name=v.persistent_volume_claim.claim_name))
        elif v.empty_dir is not None:
            out.append(VolumePlan(name=v.name, mount_path=v.mount_path, read_only=v.read_only,
                                  source="emptyDir", size_limit=v.empty_dir.size_limit,
                                  medium=v.empty_dir.medium))
    return tuple(out)


def _tolerations(w: Any) -> tuple[dict[str, Any], ...]:
    out = []
    for t in getattr(w, "tolerations", None) or ():
        d: dict[str, Any] = {}
        if t.key:
            d["key"] = t.key
        d["operator"] = t.operator
        if t.value is not None:
            d["value"] = t.value
        if t.effect is not None:
            d["effect"] = t.effect
        if t.toleration_seconds is not None:
            d["tolerationSeconds"] = t.toleration_seconds
        out.append(d)
    return tuple(out)


def bucket_grants(recipe: Recipe) -> tuple[BucketGrantPlan, ...]:
    """One grant per Cloud Storage FUSE bucket the workloads mount with ``grantAccess``:
    roles/storage.objectViewer when every such mount of it is read-only, else
    roles/storage.objectUser; sorted by bucket."""

    writable: dict[str, bool] = {}
    for w in recipe.spec.workloads:
        for v in getattr(w, "volumes", None) or ():
            if v.gcs_fuse is not None and v.gcs_fuse.grant_access:
                writable[v.gcs_fuse.bucket] = writable.get(v.gcs_fuse.bucket, False) or (
                    not v.read_only)
    return tuple(BucketGrantPlan(bucket=b, role="roles/storage.objectUser" if rw
                                 else "roles/storage.objectViewer")
                 for b, rw in sorted(writable.items()))


def workload_plan(recipe: Recipe, w: Any, sp: SlicePlan) -> WorkloadPlan:
    """One recipe workload on its planned slice (shared with preflight)."""

    diag = recipe.spec.diagnostics
    kind = workload_kind(w.kind, sp)
    volumes = _volume_plans(w)
    annotations = dict(getattr(w, "annotations", None) or {})
    if any(v.source == "gcsFuse" for v in volumes):
        annotations.setdefault(GCSFUSE_ANNOTATION, "true")
    fp = getattr(w, "failure_policy", None)
    per_pod = (w.gpus_per_pod or sp.chips_per_vm) if sp.kind == "gpu" else sp.chips_per_vm
    queue: str | None = None
    max_run: int | None = None
    if sp.capacity == QUEUED:
        queue = kueue_settings(recipe).local_queue
        cap = next(s.capacity for s in recipe.spec.slices if s.name == sp.name)
        if cap.max_run_duration:
            from mldiag_provision.recipe.slurm import duration_seconds

            max_run = duration_seconds(cap.max_run_duration)
    return WorkloadPlan(
        name=w.name, slice=sp.name, kind=kind, resource=sp.resource, image=w.image,
        command=tuple(w.command), args=tuple(w.args), env=dict(w.env),
        chips_per_pod=per_pod,  # type: ignore[arg-type]  # preflight guarantees a value
        pods_per_slice=sp.vms, slices=sp.count,
        cpu=w.resources.cpu, memory=w.resources.memory,
        ml_diagnostics_label=diag.enabled and w.ml_diagnostics,
        backoff_limit=w.backoff_limit,
        headless_service=f"{w.name}-workers" if (sp.multi_host and kind == "Job") else None,
        host_network=w.host_network,
        ephemeral_storage=getattr(w.resources, "ephemeral_storage", None),
        volumes=volumes, tolerations=_tolerations(w), annotations=annotations,
        priority_class_name=getattr(w, "priority_class_name", None),
        max_restarts=decide_max_restarts(w, sp, kind),
        restart_strategy=fp.restart_strategy if fp is not None and kind == "JobSet" else None,
        queue=queue, max_run_seconds=max_run)


def kueue_settings(recipe: Recipe) -> Any:
    """The recipe's ``spec.kueue``, or its defaults when left out (the model's ``Kueue()``,
    from the recipe's core schema: pydantic's models are not imported to check a recipe)."""
    from mldiag_provision.recipe.validator import defaults

    return recipe.spec.kueue or defaults(("spec", "kueue"))


# Kueue checks quota before the admission check; cpu and memory are covered (the pods request
# them) with a quota that never binds, as GKE's queued provisioning example does ("Infinite
# quota"); the accelerators' quota is what the queued slices hold.
_UNBOUNDED = {"cpu": "10000", "memory": "10000Gi"}
EPHEMERAL_STORAGE = "ephemeral-storage"
_UNBOUNDED_EPHEMERAL = "10000Ti"


def queued_plan(recipe: Recipe, catalog: Catalog, slices: list[SlicePlan]) -> QueuedPlan | None:
    """The Kueue objects of the queued slices (:class:`~.stack.QueuedPlan`); ``None`` when
    no slice is queued. Facts: catalog/data/gke.yaml ``queuedProvisioning``."""

    queued = [sp for sp in slices if sp.capacity == QUEUED]
    if not queued:
        return None
    k = kueue_settings(recipe)
    facts = catalog.fact("queuedProvisioning", "kueue")
    quotas: dict[str, int] = {}
    for sp in queued:
        quotas[sp.resource] = quotas.get(sp.resource, 0) + (sp.chips or 0) * sp.count
    unbounded = dict(_UNBOUNDED)
    names = {sp.name for sp in queued}
    if any(w.resources.ephemeral_storage for w in recipe.spec.workloads if w.slice in names):
        # Kueue admits a workload only when its ClusterQueue covers every resource its pods
        # request (fact queuedProvisioning.coverage, kubernetes-sigs/kueue#4848): a queued
        # workload that asks for ephemeral-storage needs it covered, with a quota that never
        # binds (the node's disk is what limits it)
        unbounded[EPHEMERAL_STORAGE] = _UNBOUNDED_EPHEMERAL
    return QueuedPlan(
        api_version=str(facts["apiVersion"]), resource_flavor=k.cluster_queue,
        cluster_queue=k.cluster_queue, local_queue=k.local_queue,
        namespace=recipe.spec.diagnostics.kubernetes.namespace,
        admission_check=f"{k.cluster_queue}-provisioning",
        provisioning_request_config=f"{k.cluster_queue}-provisioning",
        provisioning_class=str(catalog.fact("queuedProvisioning", "provisioningClass")["value"]),
        managed_resources=tuple(sorted(quotas)),
        quotas={**unbounded, **{r: str(q) for r, q in sorted(quotas.items())}},
        queue_name_label=str(facts["queueNameLabel"]),
        max_run_annotation=str(facts["maxRunDurationAnnotation"]))



def node_identity(recipe: Recipe, catalog: Catalog, cluster_name: str,
                  decisions: list[str],
                  previous: Mapping[str, Any] | None = None,
                  custom_role: str | None = None) -> NodeServiceAccountPlan:
    """The nodes' service account of a cluster the stack creates: the recipe's
    ``orchestrator.nodeServiceAccount`` (an existing account, granted the roles too) or a
    dedicated ``<cluster>-nodes`` account (:func:`~.names.node_service_account_id`; the one
    the stack in the work directory has, ``previous``, when an older version named it);
    roles from catalog ``gke.cluster.nodeServiceAccountRoles`` (GKE-NODE-SA), plus the ML
    Diagnostics access when hostNetwork workloads run as the node: the predefined roles
    (catalog ``mlDiagnostics.predefinedRoles``) with ``iam.mode: predefined``, or the
    stack's custom role with ``iam.mode: custom-role`` (``custom_role``: its full name,
    ``projects/PROJECT/roles/ID``; the same least-privilege role the workloads' account
    gets, never the broad predefined roles, issue 28). Appends the decision lines."""
    spec = recipe.spec
    diag = spec.diagnostics
    roles = [str(r) for r in catalog.fact("standard", "nodeServiceAccountRoles")["roles"]]
    node_custom_role: str | None = None
    if diag.enabled and any(w.host_network for w in spec.workloads):
        # hostNetwork pods skip Workload Identity and act as the node's service account
        if diag.iam.mode == "custom-role" and custom_role is not None:
            node_custom_role = custom_role
            decisions.append("hostNetwork workloads run as the node service account: it "
                             f"gets the ML Diagnostics custom role {custom_role} too")
        else:
            ml_roles = [str(r["role"])
                        for r in catalog.fact("mlDiagnostics", "predefinedRoles")]
            roles += [r for r in ml_roles if r not in roles]
            decisions.append("hostNetwork workloads run as the node service account: it "
                             "gets the ML Diagnostics roles too")
    email = spec.orchestrator.node_service_account
    if email:
        decisions.append(f"nodes run as {email} (from the recipe), granted "
                         + ", ".join(roles))
        return NodeServiceAccountPlan(create=False, account_id=None, email=email,
                                      roles=tuple(roles), custom_role=node_custom_role)
    account = keep_name(
        "node service account",
        previous_value(previous, "cluster", "node_service_account", "account_id"),
        names.legacy_node_service_account_id(cluster_name),
        names.node_service_account_id(cluster_name), decisions)
    decisions.append(f"nodes run as a dedicated service account {account} with "
                     + ", ".join(roles) + " (never the Compute Engine default one)")
    return NodeServiceAccountPlan(
        create=True, account_id=account,
        email=f"{account}@{spec.project}.iam.gserviceaccount.com", roles=tuple(roles),
        custom_role=node_custom_role)


def private_cluster(recipe: Recipe, catalog: Catalog, cluster_name: str, agents: str,
                    addons: tuple[str, ...], decisions: list[str]) -> PrivateClusterPlan:
    """Private cluster settings of a cluster the stack creates (recipe
    ``orchestrator.private``): Cloud Router + NAT with private nodes (``cloudNat``), and the
    firewall rule from the control plane to the webhook ports of what the agents stage
    installs (catalog ``gke.cluster.webhookPorts``: the manual agents' injection webhook and
    cert-manager, the JobSet controller). Appends the decision lines."""
    p = recipe.spec.orchestrator.private
    nat = p.nodes and p.cloud_nat
    ports: set[int] = set()
    if p.nodes and p.webhook_firewall:
        for entry in catalog.fact("cluster", "webhookPorts"):
            if (entry["when"] == "manual" and agents == "manual") or entry["when"] in addons:
                ports.add(int(entry["port"]))
    nets = (None if p.authorized_networks is None else
            tuple(AuthorizedNetworkPlan(cidr=n.cidr, name=n.name)
                  for n in p.authorized_networks))
    if p.nodes:
        decisions.append(
            "private nodes (internal IPs only)"
            + (", Cloud NAT for image pulls" if nat else ", no Cloud NAT (recipe)")
            + ("; private endpoint only" if p.endpoint else "; public endpoint kept")
            + (f"; {len(nets)} authorized network(s)" if nets is not None else ""))
    else:
        decisions.append("public nodes (recipe: private.nodes false)")
    if ports:
        decisions.append("firewall rule from the control plane to the nodes on TCP "
                         + ", ".join(str(x) for x in sorted(ports))
                         + " (in-cluster webhooks; a private cluster's control plane reaches "
                           "nodes only on 443 and 10250 otherwise)")
    return PrivateClusterPlan(
        private_nodes=p.nodes, private_endpoint=p.endpoint, master_cidr=p.master_cidr,
        authorized_networks=nets,
        router=names.router_name(cluster_name) if nat else None,
        nat=names.nat_name(cluster_name) if nat else None,
        firewall=names.webhook_firewall_name(cluster_name) if ports else None,
        webhook_ports=tuple(sorted(ports)))


def maintenance(recipe: Recipe, decisions: list[str]) -> MaintenancePlan | None:
    """The recipe's ``orchestrator.maintenance`` as plan data (``None``: GKE's default)."""
    m = recipe.spec.orchestrator.maintenance
    if m is None:
        return None
    window = (None if m.window is None else
              MaintenanceWindowPlan(start=m.window.start, end=m.window.end,
                                    recurrence=m.window.recurrence))
    if window is not None:
        decisions.append(f"maintenance window {window.start} - {window.end}, "
                         f"{window.recurrence}")
    for e in m.exclusions:
        decisions.append(f"maintenance exclusion {e.name}: {e.start} - {e.end}, {e.scope}")
    return MaintenancePlan(window=window, exclusions=tuple(
        MaintenanceExclusionPlan(name=e.name, start=e.start, end=e.end, scope=e.scope)
        for e in m.exclusions))


def _cluster(unit: Orchestrator, project: ProjectPlan, recipe: Recipe, catalog: Catalog, *,
             cluster_name: str, min_version: str | None, managed: bool, wi_binding: bool,
             agents: str, addons: tuple[str, ...], decisions: list[str],
             ) -> KubernetesClusterPlan:
    """The cluster: the one the stack uses (:class:`KubernetesClusterPlan`) without
    :attr:`Capability.CREATES_CLUSTER`; else the one it creates, with node identity, private
    cluster and maintenance (:class:`GkeClusterPlan`), plus the system pool and the Cloud
    Storage FUSE add-on with :attr:`Capability.NODE_POOLS` (:class:`StandardClusterPlan`).
    Appends the decision lines of the parts it decides. ``addons``: the agents stage's
    add-on names (their webhooks need firewall ports on a private cluster)."""
    from mldiag_provision.orchestrators import Capability

    spec = recipe.spec
    orch = spec.orchestrator
    workload_pool = f"{spec.project}.svc.id.goog" if wi_binding else None
    if not unit.has(Capability.CREATES_CLUSTER):
        return KubernetesClusterPlan(
            name=cluster_name, type=unit.name, location=spec.region,
            deletion_protection=orch.deletion_protection, release_channel=orch.release_channel,
            min_master_version=min_version, managed_ml_diagnostics=managed,
            network=orch.network, subnetwork=orch.subnetwork, workload_pool=workload_pool)
    custom_role = (f"projects/{project.project}/roles/{project.iam.custom_role_id}"
                   if project.iam.mode == "custom-role" else None)
    nodes_sa = node_identity(recipe, catalog, cluster_name, decisions, project.previous,
                             custom_role)
    gke = dict(
        name=cluster_name, type=unit.name, location=spec.region,
        deletion_protection=orch.deletion_protection, release_channel=orch.release_channel,
        min_master_version=min_version, managed_ml_diagnostics=managed,
        network=orch.network, subnetwork=orch.subnetwork, workload_pool=workload_pool,
        node_service_account=nodes_sa,
        private=private_cluster(recipe, catalog, cluster_name, agents, addons, decisions),
        maintenance=maintenance(recipe, decisions))
    if not unit.has(Capability.NODE_POOLS):
        return GkeClusterPlan(**gke)  # type: ignore[arg-type]
    uses_gcs_fuse = any(v.gcs_fuse is not None for w in spec.workloads
                        for v in (getattr(w, "volumes", None) or ()))
    if uses_gcs_fuse:
        decisions.append("Cloud Storage FUSE volumes: the cluster's GcsFuseCsiDriver "
                         "add-on is turned on")
    return StandardClusterPlan(
        **gke,  # type: ignore[arg-type]
        node_service_account_id=nodes_sa.account_id,
        node_service_account_roles=nodes_sa.roles,
        system_pool_machine_type=orch.system_pool_machine_type,
        gcs_fuse_csi_driver=uses_gcs_fuse)


def _slice_node_pools(project: ProjectPlan, index: int, sp: SlicePlan, zone: str | None,
                      cluster_name: str, decisions: list[str]) -> list[NodePoolPlan]:
    """The ``sp.count`` node pools of slice ``index`` (one per slice of a multislice), each
    with the slice's machines, capacity and placement (a TPU7x workload policy, COMPACT
    placement for a multi-host TPU slice, or none); appends the slice's decision line."""
    workload_policy = _workload_policy(project, index, sp)
    pools: list[NodePoolPlan] = []
    for name in node_pool_names(sp.name, sp.count):
        policy_name = (_workload_policy_name(project.previous, cluster_name, name, decisions)
                       if workload_policy else None)
        pools.append(NodePoolPlan(
            name=name, slice=sp.name, zone=zone,
            machine_type=sp.machine_type, node_count=sp.vms,
            topology=sp.topology, multi_host=sp.kind == "tpu" and sp.multi_host,
            gpu_type=sp.accelerator if sp.kind == "gpu" else None,
            gpu_count=sp.chips_per_vm if sp.kind == "gpu" else None,
            workload_policy=workload_policy, workload_policy_name=policy_name,
            capacity=sp.capacity,
            reservation=sp.reservation,
            reservation_project=sp.reservation_project,
            node_labels={SLICE_LABEL: sp.name},
        ))
    placement = ("HIGH_THROUGHPUT workload policy" if workload_policy else
                 "COMPACT placement" if sp.kind == "tpu" and sp.multi_host
                 else "no placement policy")
    decisions.append(f"slice {sp.name}: {sp.count} node pool(s) of {sp.vms} x "
                     f"{sp.machine_type} in {zone}, {placement}, capacity "
                     f"{sp.capacity}")
    return pools


def _workloads(recipe: Recipe, project: ProjectPlan,
               decisions: list[str]) -> list[WorkloadPlan]:
    """One :class:`WorkloadPlan` per recipe workload, in recipe order; appends a line per
    workload (kind, pods, chips) and one more where a multislice JobSet on Spot capacity gets
    its default ``failurePolicy.maxRestarts``."""
    by_name = {s.name: s for s in project.slices}
    workloads: list[WorkloadPlan] = []
    for w in recipe.spec.workloads:
        sp = by_name[w.slice]
        kind = workload_kind(w.kind, sp)
        wp = workload_plan(recipe, w, sp)
        workloads.append(wp)
        unit_word = "GPUs" if sp.kind == "gpu" else "chips"
        decisions.append(f"workload {w.name}: {kind}, {sp.vms} pod(s) per slice x "
                         f"{sp.count} slice(s), {wp.chips_per_pod} {unit_word} per pod")
        fp = getattr(w, "failure_policy", None)
        if kind == "JobSet" and wp.max_restarts and (fp is None or fp.max_restarts is None):
            decisions.append(f"workload {w.name}: failurePolicy.maxRestarts "
                             f"{wp.max_restarts} (default for a multislice on Spot capacity: "
                             "one preempted VM fails every slice)")
    return workloads


def _queued_decision(queued: QueuedPlan) -> str:
    """The decision line of queued capacity: the Kueue queues, the admission check, and
    where the Kueue objects are applied."""
    return (f"queued capacity: Kueue LocalQueue {queued.namespace}/{queued.local_queue} -> "
            f"ClusterQueue {queued.cluster_queue} with the ProvisioningRequest admission check "
            f"({queued.provisioning_class}, {', '.join(queued.managed_resources)}); applied "
            "with the workloads (k8s/workloads/00-kueue.yaml, first), which are created "
            "suspended and carry the queue-name label")


def build(unit: Orchestrator, project: ProjectPlan, recipe: Recipe,
          catalog: Catalog) -> StackPlan:
    """The stack of a Kubernetes orchestrator: ``project`` plus the GKE version, agents
    stage, cluster (and node pools with :attr:`Capability.NODE_POOLS`) and workloads.

    Call only after preflight reported no errors.
    """
    from mldiag_provision.orchestrators import Capability
    from mldiag_provision.plan.agents import plan_agents

    spec = recipe.spec
    orch = spec.orchestrator
    decisions = list(project.decisions)
    creates_cluster = unit.has(Capability.CREATES_CLUSTER)
    min_version, managed = _gke_version(unit, project, recipe, catalog, decisions)
    wi_binding = not unit.has(Capability.EXISTING_CLUSTER) or orch.workload_identity
    gsa = project.workload_service_account
    gsa_email = f"{gsa}@{spec.project}.iam.gserviceaccount.com"
    by_name = {s.name: s for s in project.slices}
    kinds = [workload_kind(w.kind, by_name[w.slice]) for w in spec.workloads]
    cluster_name = orch.cluster_name or recipe.metadata.name

    agents_plan = plan_agents(
        recipe, catalog, creates_cluster=creates_cluster, managed_ok=managed,
        workload_kinds=kinds, cluster_name=cluster_name,
        gsa_email=gsa_email if wi_binding else None,
        managed_namespaces=unit.has(Capability.AUTOPILOT_RULES),
        queued=any(sp.capacity == QUEUED for sp in project.slices))
    agents = agents_plan.strategy
    managed = managed and agents == "managed"
    decisions.append(f"ML Diagnostics agents: {agents} ({agents_plan.reasons[0]})")

    diagnostics = diagnostics_plan(project, recipe, catalog, agents, wi_binding)
    grants = bucket_grants(recipe) if wi_binding else ()
    for g in grants:
        decisions.append(f"bucket {g.bucket}: {g.role} for the workloads' service account "
                         f"{gsa_email} (Cloud Storage FUSE, through Workload Identity)")
    cluster = _cluster(unit, project, recipe, catalog, cluster_name=cluster_name,
                       min_version=min_version, managed=managed, wi_binding=wi_binding,
                       agents=agents, addons=tuple(a.name for a in agents_plan.addons),
                       decisions=decisions)
    node_pools: list[NodePoolPlan] = []
    if unit.has(Capability.NODE_POOLS):
        for i, sp in enumerate(project.slices):
            node_pools += _slice_node_pools(project, i, sp, spec.zone, cluster_name, decisions)
    gpu_networks = _gpu_networks(unit, project, recipe, cluster_name, decisions)
    workloads = _workloads(recipe, project, decisions)
    for a in agents_plan.addons:
        decisions.append(f"cluster add-on for {a.kind} workloads: {a.name} "
                         f"{a.version} ({a.repository}/{a.chart}; CRD {a.crd}), "
                         "installed by the agents stage before the workload namespace")
    queued = queued_plan(recipe, catalog, list(project.slices))
    if queued is not None:
        decisions.append(_queued_decision(queued))
    return StackPlan(
        **project.stack_fields(), services=project.services, cluster=cluster,
        diagnostics=diagnostics, workloads=tuple(workloads), node_pools=tuple(node_pools),
        decisions=tuple(decisions), agents=agents_plan, bucket_grants=grants,
        queued=queued, gpu_networks=gpu_networks)


def _workload_policy_name(previous: Mapping[str, Any] | None, cluster: str, pool: str,
                          decisions: list[str]) -> str:
    """The TPU7x workload policy of node pool ``pool``: ``<cluster>-<pool>-workload``
    (:func:`~.names.workload_policy_name`), or ``<pool>-workload`` when the stack in the work
    directory has that one (its plan.json of an older version has the pool with a workload
    policy and no ``workload_policy_name``: the module named it ``<pool>-workload``)."""
    before: object = None
    pools = previous.get("node_pools") if previous is not None else None
    for entry in pools if isinstance(pools, list) else ():
        if isinstance(entry, Mapping) and entry.get("name") == pool:
            before = entry.get("workload_policy_name") or (
                names.legacy_workload_policy_name(pool) if entry.get("workload_policy")
                else None)
    return keep_name(f"workload policy of node pool {pool}", before,
                     names.legacy_workload_policy_name(pool),
                     names.workload_policy_name(cluster, pool), decisions)


def _gpu_networks(unit: Orchestrator, project: ProjectPlan, recipe: Recipe, cluster: str,
                  decisions: list[str]) -> tuple[GpuNetworkPlan, ...]:
    """GPUDirect networking per GPU slice (:mod:`~.gpunet`), with a decision line for each
    GPU slice whose machine type has it or whose recipe names a mode."""
    from mldiag_provision.orchestrators import Capability
    from mldiag_provision.plan import gpunet

    by_name = {s.name: s for s in project.slices}
    machines = {i: by_name[s.name].machine_type for i, s in enumerate(recipe.spec.slices)}
    out: list[GpuNetworkPlan] = []
    for r in gpunet.decide(recipe, unit.has(Capability.NODE_POOLS), machines):
        sp = by_name[r.slice]
        if r.mode is None:
            if r.explicit or gpunet.mode_for_machine(sp.machine_type):
                decisions.append(f"slice {r.slice}: no GPUDirect networking ({r.reason})")
            continue
        plan = gpunet.build(cluster, recipe.spec.zone, r, sp.accelerator,
                            sp.chips_per_vm or 0)
        out.append(plan)
        decisions.append(
            f"slice {r.slice}: {r.mode} ({r.reason}): {len(plan.interfaces)} extra NICs on "
            f"{len(plan.vpcs)} VPC(s) from {plan.cidr}; cluster multi-networking with "
            "Dataplane V2")
    return tuple(out)
