"""The shared project plan: what every stack has whatever its orchestrator.

APIs, labels, the state backend, the profiles bucket, Log Analytics on ``_Default``, the ML
Diagnostics IAM, and the resolved slices. An orchestrator unit
(:mod:`mldiag_provision.orchestrators`) adds its own part on top of this
(:mod:`mldiag_provision.plan.kubernetes`, :mod:`mldiag_provision.plan.slurm`) and builds the
:class:`~mldiag_provision.plan.stack.StackPlan`; nothing here is removed again later.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mldiag_provision import __version__
from mldiag_provision.catalog.store import store
from mldiag_provision.catalog.tpu import Catalog, SliceShape
from mldiag_provision.plan import names
from mldiag_provision.plan.parts import (
    BackendPlan,
    IamPlan,
    LogAnalyticsPlan,
    ProfilesBucketPlan,
)
from mldiag_provision.plan.previous import keep_name, previous_value
from mldiag_provision.plan.types import ProjectPlan, SlicePlan

if TYPE_CHECKING:
    from mldiag_provision.catalog.gpu import GpuShape
    from mldiag_provision.orchestrators import Orchestrator
    from mldiag_provision.recipe.model import Recipe

_K8S = store().doc("kubernetes")  # the scheduling vocabulary, from the fact store
TPU_ACCELERATOR_LABEL = str(_K8S["tpu"]["acceleratorLabel"]["key"])
TPU_TOPOLOGY_LABEL = str(_K8S["tpu"]["topologyLabel"]["key"])
TPU_RESOURCE = str(_K8S["tpu"]["resource"]["name"])
_SPOT = _K8S["capacity"]["spot"]
_RESERVATION_NAME = str(_K8S["capacity"]["reservationName"]["key"])
_RESERVATION_AFFINITY = _K8S["capacity"]["reservationAffinity"]
SLICE_LABEL = "mldiag-provision/slice"


def capacity_selector(node_pools: bool, slice_name: str, cap_type: str,
                      reservation: str | None, reservation_project: str | None,
                      zone: str | None) -> dict[str, str]:
    """The nodeSelector entries beyond the accelerator labels.

    Without node pools (Autopilot) the capacity is asked for by selector: spot, flex-start,
    a specific reservation (Autopilot spot / flex-start / reservation docs:
    https://cloud.google.com/kubernetes-engine/docs/how-to/autopilot-spot-pods,
    https://cloud.google.com/kubernetes-engine/docs/how-to/consume-reservations); a recipe
    zone pins the pods with the well-known ``topology.kubernetes.io/zone`` label. With node
    pools (GKE Standard) the slice's own pools carry the capacity, and pods select them by the
    slice label on those pools.
    """
    if node_pools:
        return {SLICE_LABEL: slice_name}
    sel: dict[str, str] = {}
    if zone:
        sel["topology.kubernetes.io/zone"] = zone
    if cap_type == "spot":
        sel[str(_SPOT["key"])] = str(_SPOT["value"])
    elif cap_type == "flex-start":
        sel["cloud.google.com/gke-flex-start"] = "true"
    elif cap_type == "reservation" and reservation:
        sel[_RESERVATION_NAME] = reservation
        sel[str(_RESERVATION_AFFINITY["key"])] = str(_RESERVATION_AFFINITY["specific"])
        if reservation_project:
            sel["cloud.google.com/reservation-project"] = reservation_project
    return sel


@functools.lru_cache(maxsize=8)
def _diagnostics_access(catalog: Catalog) -> tuple[tuple[str, ...], tuple[str, ...],
                                                   tuple[str, ...]]:
    """(the ML Diagnostics APIs sorted, its predefined roles, its custom role's permissions
    sorted), from gke.yaml ``mlDiagnostics``: catalog data, the same for every recipe, so
    worked out once per catalog (preflight plans every TPU recipe; issue 16)."""
    services = sorted({str(s["service"]) for s in catalog.fact("mlDiagnostics",
                                                                  "requiredServices")})
    roles = [str(r["role"]) for r in catalog.fact("mlDiagnostics", "predefinedRoles")]
    permissions = sorted(str(p["permission"]) for p in
                         catalog.fact("mlDiagnostics", "customRolePermissions"))
    return tuple(services), tuple(roles), tuple(permissions)


def plan_project(recipe: Recipe, shapes: Mapping[int, SliceShape | GpuShape | None],
                 catalog: Catalog, unit: Orchestrator,
                 previous: Mapping[str, Any] | None = None) -> ProjectPlan:
    """Decide the shared part of the stack. Call only after preflight reported no errors.

    Args:
      shapes: resolved slice shapes by slice index, from preflight (none may be ``None``).
      unit: the recipe's orchestrator (its node pools decide the slices' selectors).
      previous: the work directory's previous ``plan.json``; the names an existing stack
        already has are kept (:func:`~.previous.keep_name`).
    Raises:
      ValueError: a slice was left unresolved (preflight was skipped).
    """
    from mldiag_provision.orchestrators import Capability

    spec = recipe.spec
    pools = unit.has(Capability.NODE_POOLS)
    decisions: list[str] = []
    slices: list[SlicePlan] = []
    resolved: dict[int, SliceShape | GpuShape] = {}
    for i, s in enumerate(spec.slices):
        shape = shapes.get(i)
        if shape is None:
            raise ValueError(f"slice {s.name} is unresolved; run preflight first")
        resolved[i] = shape
        sel_extra = capacity_selector(pools, s.name, s.capacity.type, s.capacity.reservation,
                                      s.capacity.reservation_project, spec.zone)
        if not isinstance(shape, SliceShape):  # a GPU shape (its catalog is imported here)
            from mldiag_provision.catalog.gpu import GPU_ACCELERATOR_LABEL, GPU_RESOURCE

            sel = {GPU_ACCELERATOR_LABEL: shape.gpu.accelerator, **sel_extra}
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
                   TPU_TOPOLOGY_LABEL: shape.topology, **sel_extra}
            slices.append(SlicePlan(
                name=s.name, kind="tpu", accelerator_type=shape.version.key,
                accelerator=shape.version.accelerator, resource=TPU_RESOURCE,
                topology=shape.topology, machine_type=shape.machine_type.name, chips=shape.chips,
                chips_per_vm=shape.chips_per_vm, vms=shape.vms, count=s.count,
                multi_host=shape.multi_host, capacity=s.capacity.type,
                reservation=s.capacity.reservation,
                reservation_project=s.capacity.reservation_project, node_selector=sel))
        decisions.append(f"slice {s.name}: {slices[-1].summary()}")

    diag = spec.diagnostics
    labels = {"managed-by": "mldiag-provision", "mldiag-stack": recipe.metadata.name,
              **recipe.metadata.labels}
    services, predefined_roles, custom_permissions = _diagnostics_access(catalog)
    roles: tuple[str, ...] = predefined_roles if diag.iam.mode == "predefined" else ()
    permissions: tuple[str, ...] = () if diag.iam.mode == "predefined" else custom_permissions
    stack = recipe.metadata.name
    bucket_name = (diag.profiles_bucket.name
                   or names.default_profiles_bucket(spec.project, stack))
    gsa = diag.service_account.name or keep_name(
        "workload service account",
        previous_value(previous, "diagnostics", "service_account", "account_id"),
        names.LEGACY_WORKLOAD_SERVICE_ACCOUNT, names.workload_service_account_id(stack),
        decisions if diag.service_account.create else None)
    role_id = diag.iam.custom_role_id or keep_name(
        "custom role", previous_value(previous, "diagnostics", "iam", "custom_role_id"),
        names.LEGACY_CUSTOM_ROLE_ID, names.custom_role_id(stack),
        decisions if diag.iam.mode == "custom-role" else None)
    return ProjectPlan(
        tool_version=__version__, blueprint=unit.blueprint, name=recipe.metadata.name,
        project=spec.project, region=spec.region, zone=spec.zone,
        labels=dict(sorted(labels.items())),
        backend=BackendPlan(type=spec.engine.backend.type, bucket=spec.engine.backend.bucket,
                            prefix=spec.engine.backend.prefix),
        services=services, slices=tuple(slices), shapes=resolved,
        diagnostics_enabled=diag.enabled,
        mlrun_region=diag.mlrun_region or spec.region,
        profiles_bucket=ProfilesBucketPlan(
            name=bucket_name, create=diag.profiles_bucket.create,
            location=(diag.profiles_bucket.location or spec.region).upper(),
            force_destroy=diag.profiles_bucket.delete_on_destroy),
        log_analytics=LogAnalyticsPlan(enabled=diag.log_analytics.enabled,
                                       retention_days=diag.log_analytics.retention_days),
        iam=IamPlan(mode=diag.iam.mode, roles=roles,
                    custom_role_id=role_id, permissions=permissions),
        decisions=tuple(decisions), engine=spec.engine.name,
        workload_service_account=gsa, previous=previous,
    )
