"""The Cluster Director managed Slurm part of a :class:`~mldiag_provision.plan.stack.StackPlan`.

:func:`~mldiag_provision.plan.project.plan_project` decides what every stack shares (labels,
profiles bucket, Log Analytics, IAM roles, slices); :func:`build` (the ``plan`` of the
``slurm`` orchestrator unit) adds the Slurm cluster: ``plan.slurm`` holds the network,
storage, compute resources, login nodes, node sets, partitions, the nodes' ML Diagnostics
grants and one sbatch job per workload. Every resource
path (``projects/P/...``) is spelled out here, so the templates only format.

ML Diagnostics on Slurm is the SDK alone (no webhook, no operator exist for Compute Engine or
Slurm): the node-set startup script installs it and writes ``/opt/mldiag/job-env.sh``, which
each rendered sbatch script sources (slurm.yaml ``sdk``; ml-diagnostics-facts section 6).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mldiag_provision.plan import names
from mldiag_provision.plan.parts import DiagnosticsPlan
from mldiag_provision.plan.slurm_types import (
    BootDiskPlan,
    BucketPlan,
    ComputePlan,
    FilestorePlan,
    LoginNodesPlan,
    LustrePlan,
    MountPlan,
    NodeSetPlan,
    PartitionPlan,
    SdkPlan,
    SlurmClusterPlan,
    SlurmJobPlan,
    SlurmNetworkPlan,
    SlurmPlan,
    StoragePlan,
)
from mldiag_provision.plan.types import ProjectPlan, StackPlan
from mldiag_provision.recipe import slurm as view

if TYPE_CHECKING:
    from mldiag_provision.catalog.tpu import Catalog
    from mldiag_provision.orchestrators import Orchestrator
    from mldiag_provision.recipe.model import Recipe, SlurmBootDisk

JOB_ENV = "/opt/mldiag/job-env.sh"
SDK_VENV = "/opt/mldiag/venv"
MASTER_PORT = 29500


def _instance_path(project: str, location: str, name: str) -> str:
    return name if "/" in name else f"projects/{project}/locations/{location}/instances/{name}"


def pyxis_image(image: str) -> str:
    """A Docker image reference in enroot's ``REGISTRY#IMAGE`` form (pyxis
    ``--container-image``): a first path part with a dot, a colon or ``localhost`` is a
    registry host, as Docker decides it."""
    first, sep, rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return image


def _storage(recipe: Recipe, cluster: str) -> tuple[list[StoragePlan], set[str]]:
    spec = recipe.spec
    zone = spec.zone or ""
    out: list[StoragePlan] = []
    kinds: set[str] = set()
    for st in view.slurm_spec(recipe).storage:
        entry = StoragePlan(id=st.id, mount=st.mount, kind=None, create=True, name=None,
                            filestore=None, lustre=None, bucket=None)
        if st.filestore is not None:
            fs = st.filestore
            loc = zone if fs.tier == "ZONAL" else spec.region
            entry = dataclasses.replace(
                entry, kind="filestore", create=fs.create, name=_instance_path(
                    spec.project, loc, fs.name or names.slurm_instance_name(cluster, st.id)),
                filestore=FilestorePlan(tier=fs.tier, capacity_gb=fs.capacity_gb,
                                        file_share=fs.file_share, protocol=fs.protocol))
        elif st.lustre is not None:
            lu = st.lustre
            entry = dataclasses.replace(
                entry, kind="lustre", create=lu.create, name=_instance_path(
                    spec.project, zone, lu.name or names.slurm_instance_name(cluster, st.id)),
                lustre=LustrePlan(capacity_gb=lu.capacity_gb, filesystem=lu.filesystem,
                                  throughput=lu.throughput))
        elif st.bucket is not None:
            entry = dataclasses.replace(
                entry, kind="bucket", create=st.bucket.create, name=st.bucket.name,
                bucket=BucketPlan(storage_class=st.bucket.storage_class))
        kinds.add(str(entry.kind))
        out.append(entry)
    return out, kinds


def _compute(recipe: Recipe, v: view.NodeSetView) -> ComputePlan:
    spec = recipe.spec
    cap = v.capacity
    reservation = None
    if cap.type == "reservation" and cap.reservation:
        reservation = (f"projects/{cap.reservation_project or spec.project}/zones/{spec.zone}/"
                       f"reservations/{cap.reservation}")
    secs = view.duration_seconds(cap.max_run_duration) if cap.max_run_duration else None
    return ComputePlan(id=v.id, capacity=cap.type, machine_type=v.machine_type, zone=spec.zone,
                       reservation=reservation,
                       max_duration=f"{secs}s" if secs is not None else None)


def _mounts(storage: Sequence[StoragePlan], ids: Sequence[str]) -> tuple[MountPlan, ...]:
    by_id = {s.id: s for s in storage}
    return tuple(MountPlan(id=i, local_mount=by_id[i].mount) for i in ids if i in by_id)


def _boot_disk(disk: SlurmBootDisk | None) -> BootDiskPlan | None:
    if disk is None:
        return None
    return BootDiskPlan(type=disk.type, size_gb=disk.size_gb)


def _network(recipe: Recipe, cluster: str) -> tuple[SlurmNetworkPlan, str]:
    """The cluster's VPC and subnetwork as full resource paths
    (``projects/P/global/networks/N``, ``projects/P/regions/R/subnetworks/S``; a name with a
    ``/`` is taken as a path already), and the decision line that says so."""
    spec = recipe.spec
    net = view.slurm_spec(recipe).network
    net_name = net.name or names.slurm_network_name(cluster)
    network = SlurmNetworkPlan(
        id="network", create=net.create,
        network=net_name if "/" in net_name else
        f"projects/{spec.project}/global/networks/{net_name}",
        subnetwork=None if net.subnetwork is None else (
            net.subnetwork if "/" in net.subnetwork else
            f"projects/{spec.project}/regions/{spec.region}/subnetworks/{net.subnetwork}"),
    )
    decision = (("new network " if net.create else "existing network ") + network.network
                + (f", subnetwork {network.subnetwork}" if network.subnetwork else ""))
    return network, decision


_STORAGE_WHAT = {"filestore": "Filestore", "lustre": "Managed Lustre",
                 "bucket": "Cloud Storage bucket"}


def _storage_decisions(storage: Sequence[StoragePlan]) -> list[str]:
    """One decision line per storage entry: new or existing, what kind, name, mount point."""
    return [f"storage {st.id}: {'new' if st.create else 'existing'} "
            f"{_STORAGE_WHAT[str(st.kind)]} {st.name} mounted at {st.mount}" for st in storage]


def _node_set_decision(v: view.NodeSetView, cap: ComputePlan, slice_name: str | None) -> str:
    """The decision line of one node set: node counts, machine type, capacity (reservation,
    max run duration), its slice, and whether it stands alone (no ``nodeSets`` entry)."""
    how = cap.capacity + (f" ({cap.reservation}: the reservation fixes machine type "
                          "and zone)" if cap.reservation else "")
    if cap.max_duration:
        how += f", at most {cap.max_duration} per VM"
    dyn = (f" + up to {v.max_dynamic_node_count} dynamic"
           if v.max_dynamic_node_count else "")
    return (f"node set {v.id}: {v.static_node_count} static{dyn} x "
            f"{v.machine_type}, {how}"
            + (f", slice {slice_name}" if slice_name is not None else "")
            + (" (a node set of its own: no nodeSets entry names the slice)"
               if v.index is None else ""))


def _node_sets(recipe: Recipe, plan: ProjectPlan, views: Sequence[view.NodeSetView],
               storage: Sequence[StoragePlan],
               ) -> tuple[list[NodeSetPlan], list[ComputePlan], list[str]]:
    """(node sets, their compute resources, one decision line each), in ``views`` order;
    a node set of a GPU slice gets the slice's GPUs per VM."""
    spec = recipe.spec
    gpu_of = {s.name: s for s in plan.slices}
    node_sets: list[NodeSetPlan] = []
    compute: list[ComputePlan] = []
    decisions: list[str] = []
    for v in views:
        sl = spec.slices[v.slice_index] if v.slice_index is not None else None
        sp = gpu_of.get(sl.name) if sl is not None else None
        compute.append(_compute(recipe, v))
        node_sets.append(NodeSetPlan(
            id=v.id, compute_id=v.id, slice=sl.name if sl is not None else None,
            machine_type=v.machine_type, gpus_per_node=sp.chips_per_vm if sp else None,
            static_node_count=v.static_node_count,
            max_dynamic_node_count=v.max_dynamic_node_count,
            storage=_mounts(storage, v.storage), startup_script=v.startup_script,
            boot_disk=_boot_disk(v.boot_disk), labels=dict(plan.labels),
        ))
        decisions.append(_node_set_decision(v, compute[-1], sl.name if sl is not None else None))
    return node_sets, compute, decisions


def _partition_decisions(recipe: Recipe, parts: Sequence[view.PartitionView],
                         default: str | None) -> list[str]:
    """No line, or one: the partitions made (one per node set) when the recipe names none,
    else its default partition when there is one."""
    if not view.slurm_spec(recipe).partitions:
        return ["partitions: one per node set (" + ", ".join(p.id for p in parts)
                + ")" + (f", default {default}" if default else "")]
    if default:
        return [f"default partition: {default}"]
    return []


def _login_nodes(recipe: Recipe, plan: ProjectPlan,
                 storage: Sequence[StoragePlan]) -> LoginNodesPlan:
    """The login nodes; they mount the storage the recipe lists for them, or all of it."""
    login = view.slurm_spec(recipe).login_nodes
    return LoginNodesPlan(
        count=login.count, machine_type=login.machine_type,
        zone=login.zone or recipe.spec.zone, enable_os_login=login.enable_os_login,
        enable_public_ips=login.enable_public_ips, startup_script=login.startup_script,
        storage=_mounts(storage, login.storage if login.storage is not None
                        else [s.id for s in storage]),
        boot_disk=_boot_disk(login.boot_disk), labels=dict(plan.labels),
    )


def _partitions_of_node_sets(parts: Sequence[view.PartitionView]) -> dict[str, list[str]]:
    """{node set id: ids of the partitions that hold it, in partition order}."""
    part_of: dict[str, list[str]] = {}
    for p in parts:
        for ref in p.node_sets:
            part_of.setdefault(ref, []).append(p.id)
    return part_of


def _jobs(recipe: Recipe, plan: ProjectPlan, views: Sequence[view.NodeSetView],
          parts: Sequence[view.PartitionView], default: str | None,
          storage: Sequence[StoragePlan]) -> tuple[list[SlurmJobPlan], list[str]]:
    """(one sbatch job per workload, one decision line each): the job runs on its slice's
    node set, in the default partition when that holds the node set, else the first
    partition that does; it mounts the node set's storage."""
    spec = recipe.spec
    sspec = view.slurm_spec(recipe)
    gpu_of = {s.name: s for s in plan.slices}
    part_of = _partitions_of_node_sets(parts)
    ns_of_slice = {v.slice_index: v for v in views if v.slice_index is not None}
    storage_by_id = {s.id: s for s in storage}
    runner = ("srun --container-image (pyxis)" if sspec.container_runtime == "pyxis"
              else "srun on the nodes (no container)")
    jobs: list[SlurmJobPlan] = []
    decisions: list[str] = []
    for w in spec.workloads:
        idx = next(i for i, s in enumerate(spec.slices) if s.name == w.slice)
        v = ns_of_slice[idx]
        sp = gpu_of[w.slice]
        candidates = part_of.get(v.id, [])
        partition = default if default in candidates else candidates[0]
        gpus = w.gpus_per_pod or sp.chips_per_vm
        mounts = tuple(storage_by_id[i].mount for i in v.storage if i in storage_by_id)
        jobs.append(SlurmJobPlan(
            name=w.name, slice=w.slice, node_set=v.id, partition=partition,
            nodes=sp.vms, gpus_per_node=gpus, machine_type=sp.machine_type,
            image=w.image, pyxis_image=pyxis_image(w.image),
            container_runtime=sspec.container_runtime, container_mounts=mounts,
            command=tuple(w.command), args=tuple(w.args), env=dict(w.env),
            ml_diagnostics=plan.diagnostics_enabled and w.ml_diagnostics,
        ))
        decisions.append(f"workload {w.name}: slurm/{w.name}.sbatch, partition {partition}, "
                         f"{sp.vms} node(s) x {gpus} GPUs, {runner}")
    return jobs, decisions


def _services(plan: ProjectPlan, kinds: set[str]) -> list[str]:
    """The APIs to enable, sorted: the project's plus those the storage kinds need
    (slurm.yaml ``services``), less the Kubernetes-only ones."""
    from mldiag_provision.catalog.slurm import load_slurm_facts

    facts = load_slurm_facts()
    return sorted({*plan.services, *(str(s["service"]) for s in facts.services(kinds))}
                  - {"container.googleapis.com", "iamcredentials.googleapis.com"})


def build(unit: Orchestrator, plan: ProjectPlan, recipe: Recipe,
          catalog: Catalog) -> StackPlan:
    """The stack of a Cluster Director managed Slurm cluster: the shared project plan plus
    ``plan.slurm`` (no Kubernetes parts: no agents stage, workloads or node pools).

    Call only after preflight reported no errors.
    """
    spec = recipe.spec
    sspec = view.slurm_spec(recipe)
    cluster = spec.orchestrator.cluster_name or recipe.metadata.name
    decisions = list(plan.decisions)

    network, network_decision = _network(recipe, cluster)
    decisions.append(network_decision)
    storage, kinds = _storage(recipe, cluster)
    decisions += _storage_decisions(storage)

    views = view.node_sets(recipe)
    parts = view.partitions(recipe, views)
    default = view.default_partition(recipe, parts, views)
    node_sets, compute, node_set_decisions = _node_sets(recipe, plan, views, storage)
    decisions += node_set_decisions
    partitions = tuple(PartitionPlan(id=p.id, node_set_ids=tuple(p.node_sets)) for p in parts)
    decisions += _partition_decisions(recipe, parts, default)

    # The nodes run as the Compute Engine default service account unless told otherwise: the
    # API has no service-account field (slurm.yaml cluster.nodeServiceAccount, confidence L).
    sa = sspec.node_service_account
    decisions.append("ML Diagnostics: the SDK on every node (startup script: pip install "
                     f"{sspec.sdk_package}); IAM roles for the nodes' service account "
                     + (sa or "(the Compute Engine default service account)")
                     + f"; jobs source {JOB_ENV} for one MLRun per job")
    jobs, job_decisions = _jobs(recipe, plan, views, parts, default, storage)
    decisions += job_decisions

    if plan.iam.mode == "predefined":
        iam_what = ", ".join(plan.iam.roles)
    else:
        iam_what = f"custom role {plan.iam.custom_role_id}"
    # no Kubernetes: no namespace label, KSA or workload service account
    slurm_diag = DiagnosticsPlan(
        enabled=plan.diagnostics_enabled, agents="sdk", mlrun_region=plan.mlrun_region,
        profiles_bucket=plan.profiles_bucket, log_analytics=plan.log_analytics, iam=plan.iam,
        workload_identity_binding=False)
    slurm = SlurmPlan(
        cluster_id=cluster, location=spec.region, zone=spec.zone,
        deletion_policy="PREVENT" if spec.orchestrator.deletion_protection else "DELETE",
        description=f"ML Diagnostics stack {recipe.metadata.name} (mldiag-provision)",
        network=network, storage=tuple(storage), compute=tuple(compute),
        login_nodes=_login_nodes(recipe, plan, storage), node_sets=tuple(node_sets),
        partitions=partitions, default_partition=default,
        node_service_account=sa, node_roles_summary=iam_what,
        sdk=SdkPlan(enabled=plan.diagnostics_enabled, package=sspec.sdk_package,
                    pip_index_url=sspec.pip_index_url, venv=SDK_VENV, job_env=JOB_ENV,
                    profiles_gcs_path=f"gs://{plan.profiles_bucket.name}",
                    mlrun_region=plan.mlrun_region),
        master_port=MASTER_PORT,
        jobs=tuple(jobs),
    )
    cluster_info = SlurmClusterPlan(name=cluster, type=unit.name, location=spec.region,
                                    zone=spec.zone,
                                    deletion_protection=spec.orchestrator.deletion_protection)
    return StackPlan(**plan.stack_fields(), cluster=cluster_info, diagnostics=slurm_diag,
                     services=tuple(_services(plan, kinds)), workloads=(),
                     decisions=tuple(decisions), slurm=slurm)
