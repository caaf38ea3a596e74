"""Recipe rules of queued capacity: ``spec.slices[].capacity.type: queued`` (flex-start with
queued provisioning, Dynamic Workload Scheduler through Kueue's ProvisioningRequest admission
check) and ``spec.kueue``.

What Google refuses or the tool cannot render, each with its fact in ``catalog/data/gke.yaml``
``queuedProvisioning`` (source: https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest):

* queued capacity on anything but GKE Standard (node pools with queued provisioning are a
  Standard feature; Autopilot GPU support exists but is not rendered here);
* a reservation on a queued slice (the pool must have reservation affinity none); Spot cannot be
  asked for at all, ``type`` names one provisioning model per slice;
* a GKE minimum version below the queued provisioning minimum (``queued-version``, GPU:
  1.28.3-gke.1098000, H; ``queued-tpu-version``, TPU: flex-start's 1.33.0-gke.1712000, M, so
  a warning);
* ``maxRunDuration`` over seven days.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldiag_provision.catalog import requirements as req
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.preflight.context import Context, rule
from mldiag_provision.preflight.stack_rules import parsed_min_version

QUEUED = "queued"


def queued_slices(ctx: Context) -> list[int]:
    """Indexes of the recipe's slices with capacity type queued."""
    return [i for i, s in enumerate(ctx.recipe.spec.slices) if s.capacity.type == QUEUED]


@rule("queued-capacity", facts=("gke.queuedProvisioning.orchestrators",))
def queued_capacity(ctx: Context) -> Iterator[Problem]:
    """Queued capacity (flex-start with queued provisioning) is asked for where GKE offers it."""
    spec = ctx.recipe.spec
    where = ctx.catalog.fact("queuedProvisioning", "orchestrators")
    indexes = queued_slices(ctx)
    if not indexes and spec.kueue is not None:
        yield ctx.problem("queued-capacity", ("spec", "kueue"),
                          "spec.kueue is set but no slice has capacity type 'queued'; it is "
                          "ignored", prefer_value=False, severity=Severity.WARNING,
                          hint="remove spec.kueue, or set a slice's capacity.type: queued")
    for i in indexes:
        base = ("spec", "slices", i, "capacity")
        orch = spec.orchestrator.type
        if orch not in where["value"]:
            extra = {
                "gke-autopilot": "Autopilot asks for queued GPUs per workload (GKE "
                                 "1.30.3-gke.1451000+) and has no node pool to mark; this tool "
                                 "does not render that yet",
                "existing-kubernetes": "the stack creates no node pools in an existing "
                                       "cluster: create a queued pool there yourself",
                "slurm": "Cluster Director node sets take 'flex-start' (with maxRunDuration) "
                         "instead",
            }.get(orch, "")
            yield ctx.problem("queued-capacity", (*base, "type"),
                              f"capacity type 'queued' needs node pools with queued "
                              f"provisioning, which only GKE Standard has; orchestrator is "
                              f"'{orch}'" + (f": {extra}" if extra else ""),
                              value=QUEUED, expected="orchestrator.type: gke-standard",
                              source=where,
                              hint="use gke-standard, or capacity type flex-start")


@rule("queued-reservation", facts=("gke.queuedProvisioning.nodePool",))
def queued_reservation(ctx: Context) -> Iterator[Problem]:
    """A queued slice names no reservation: its node pool's reservation affinity is none."""
    spec = ctx.recipe.spec
    pool = ctx.catalog.fact("queuedProvisioning", "nodePool")
    for i in queued_slices(ctx):
        s = spec.slices[i]
        base = ("spec", "slices", i, "capacity")
        if s.capacity.reservation or s.capacity.reservation_project:
            key = "reservation" if s.capacity.reservation else "reservationProject"
            yield ctx.problem("queued-reservation", (*base, key),
                              "a queued node pool consumes no reservation (GKE creates it with "
                              "--reservation-affinity=none)",
                              value=s.capacity.reservation or s.capacity.reservation_project,
                              expected="no reservation with type: queued", source=pool,
                              hint="remove the reservation, or set type: reservation")


@rule("queued-run-duration", facts=("gke.queuedProvisioning.maxRunSeconds",))
def queued_run_duration(ctx: Context) -> Iterator[Problem]:
    """A queued slice's maxRunDuration is at most the seven days flex-start VMs may run."""
    spec = ctx.recipe.spec
    limit = ctx.catalog.fact("queuedProvisioning", "maxRunSeconds")
    for i in queued_slices(ctx):
        s = spec.slices[i]
        base = ("spec", "slices", i, "capacity")
        if s.capacity.max_run_duration is not None:
            from mldiag_provision.recipe.slurm import duration_seconds

            secs = duration_seconds(s.capacity.max_run_duration)
            if secs is not None and secs > int(limit["value"]):
                yield ctx.problem("queued-run-duration", (*base, "maxRunDuration"),
                                  f"{s.capacity.max_run_duration} is longer than the seven "
                                  "days flex-start VMs may run",
                                  value=s.capacity.max_run_duration,
                                  expected="at most 7d (168h)", source=limit)


def _version_problems(ctx: Context, rule_id: str, kind: str) -> Iterator[Problem]:
    spec = ctx.recipe.spec
    if spec.orchestrator.type != "gke-standard" or not spec.orchestrator.min_version:
        return
    version = parsed_min_version(ctx)
    if version is None:
        return  # the gke-version rule reports it
    kinds = {"gpu" if spec.slices[i].gpu else "tpu" for i in queued_slices(ctx)}
    if kind not in kinds:
        return
    for need in req.queued_needs(ctx.catalog, {kind}):
        ok = req.satisfies(version, need)
        if ok is True:
            continue
        yield ctx.problem(rule_id, ("spec", "orchestrator", "minVersion"),
                          f"GKE {version} {'is' if ok is False else 'may resolve to a release'}"
                          f" below {need.version}, the minimum for {need.reason}",
                          value=spec.orchestrator.min_version, expected=f">= {need.version}",
                          severity=Severity.WARNING if ok is None else None,
                          source=need.source,
                          hint=f"set minVersion to {need.version} or later, or remove it to "
                               "let the tool choose")


@rule("queued-version", facts=("gke.queuedProvisioning.standardGpuMinVersion",))
def queued_version(ctx: Context) -> Iterator[Problem]:
    """A user-given GKE minimum version supports queued provisioning of the queued GPUs."""
    yield from _version_problems(ctx, "queued-version", "gpu")


@rule("queued-tpu-version", facts=("gke.queuedProvisioning.standardTpuMinVersion",))
def queued_tpu_version(ctx: Context) -> Iterator[Problem]:
    """A user-given GKE minimum version supports flex-start (so queued provisioning) of the
    queued TPUs."""
    yield from _version_problems(ctx, "queued-tpu-version", "tpu")

