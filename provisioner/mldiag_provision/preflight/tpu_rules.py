"""Preflight rules for TPU slices and the workloads that run on them.

Facts come from the catalog (``catalog/data/tpu.yaml``); the rules cite them. Where the
catalog marks a fact as unverified (confidence L) the rule warns instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldiag_provision.catalog.store import store
from mldiag_provision.catalog.tpu import ShapeError, SliceShape
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule
from mldiag_provision.quantity import bad_amount, parse_quantity
from mldiag_provision.suggest import suggest

if TYPE_CHECKING:  # a TPU recipe never imports the GPU catalog (issue 32)
    from mldiag_provision.catalog.gpu import GpuShape

_FIELD = {"tpu": "tpu", "topology": "topology", "chipsPerVm": "chipsPerVm"}



@rule("slice-accelerator")
def slice_accelerator(ctx: Context) -> Iterator[Problem]:
    """A slice is either TPU (tpu + topology) or GPU (gpu [+ machineType, nodes])."""
    for i, s in enumerate(ctx.recipe.spec.slices):
        base = ("spec", "slices", i)
        if (s.tpu is None) == (s.gpu is None):
            yield ctx.problem("slice-accelerator", base if s.tpu is None else (*base, "gpu"),
                              "a slice names exactly one of 'tpu' and 'gpu'",
                              value=s.gpu if s.tpu is not None else None,
                              expected="tpu: VERSION with topology: AxB[xC], or gpu: TYPE",
                              hint="split it into two slices")
            continue
        if s.tpu is not None:
            if s.topology is None:
                yield ctx.problem("slice-accelerator", (*base, "topology"),
                                  f"TPU slice '{s.name}' needs a topology",
                                  expected=ctx.catalog.describe_allowed(v)
                                  if (v := ctx.catalog.version(s.tpu)) else "AxB or AxBxC",
                                  hint="`mldiag-provision catalog tpu VERSION` lists them")
            for key, val in (("machineType", s.machine_type), ("nodes", s.nodes)):
                if val is not None:
                    yield ctx.problem("slice-accelerator", (*base, key),
                                      f"'{key}' is for GPU slices; a TPU slice derives it from "
                                      "its topology", value=val, hint=f"remove '{key}'")
        else:
            for key, val in (("topology", s.topology), ("chipsPerVm", s.chips_per_vm)):
                if val is not None:
                    yield ctx.problem("slice-accelerator", (*base, key),
                                      f"'{key}' is for TPU slices", value=val,
                                      hint=f"remove '{key}'; GPU slices use machineType and nodes")
            if s.count > 1:
                yield ctx.problem("slice-accelerator", (*base, "count"),
                                  "count (multislice) is for TPU slices", value=s.count,
                                  expected="1", hint="use 'nodes' for more GPU VMs")


@rule("gpu-slice-shape")
def gpu_slice_shapes(ctx: Context) -> Iterator[Problem]:
    """A GPU slice's type exists, its machine type carries it, and the orchestrator offers it."""
    for i, s in enumerate(ctx.recipe.spec.slices):
        if s.gpu is None or s.tpu is not None:
            continue
        from mldiag_provision.catalog.gpu import load_gpu_catalog

        gpus = load_gpu_catalog()
        base = ("spec", "slices", i)
        try:
            shape = gpus.resolve(s.gpu, s.machine_type)
        except ShapeError as exc:
            ctx.gpu_shapes[i] = None
            field = {"gpu": "gpu", "machineType": "machineType"}[exc.field]
            known = gpus.gpu(s.gpu) if field == "machineType" else None
            yield ctx.problem("gpu-slice-shape", (*base, field), exc.message,
                              value=s.gpu if field == "gpu" else s.machine_type,
                              expected=exc.expected, hint=exc.hint, source=exc.source,
                              facts=[store().get("gpu", "gpus", known.key)] if known else [])
            continue
        ctx.gpu_shapes[i] = shape
        if ctx.has(Capability.NODE_POOLS) and s.machine_type is None:
            yield ctx.problem("gpu-slice-shape", (*base, "machineType"),
                              f"a GKE Standard GPU node pool needs a machine type for "
                              f"{shape.gpu.display_name}", expected=", ".join(shape.gpu.machines),
                              hint="add machineType")
        if ctx.has(Capability.AUTOPILOT_RULES) and shape.gpu.autopilot is not True:
            refused = shape.gpu.autopilot is False
            yield ctx.problem(
                "gpu-slice-shape", (*base, "gpu"),
                f"{shape.gpu.display_name} is {'not offered' if refused else 'not confirmed'} on "
                "GKE Autopilot", value=s.gpu,
                severity=Severity.ERROR if refused else Severity.WARNING,
                hint="use orchestrator type gke-standard",
                source=gpus.source_url(shape.gpu.source))


@rule("tpu-slice-shape")
def slice_shapes(ctx: Context) -> Iterator[Problem]:
    """Each slice's (TPU version, topology, chips per VM) exists in the catalog."""
    for i, s in enumerate(ctx.recipe.spec.slices):
        if s.tpu is None or s.topology is None:
            continue
        try:
            ctx.shapes[i] = ctx.catalog.resolve(s.tpu, s.topology, s.chips_per_vm)
        except ShapeError as exc:
            ctx.shapes[i] = None
            field = _FIELD[exc.field]
            value = {"tpu": s.tpu, "topology": s.topology, "chipsPerVm": s.chips_per_vm}[field]
            version = ctx.catalog.version(s.tpu)  # None: a name the catalog does not know
            yield ctx.problem("tpu-slice-shape", ("spec", "slices", i, field), exc.message,
                              value=value, expected=exc.expected, hint=exc.hint,
                              source=exc.source,
                              facts=[ctx.catalog.version_fact(version)] if version else [])


@rule("tpu-slice-names")
def slice_names(ctx: Context) -> Iterator[Problem]:
    seen: dict[str, int] = {}
    for i, s in enumerate(ctx.recipe.spec.slices):
        if s.name in seen:
            yield ctx.problem("tpu-slice-names", ("spec", "slices", i, "name"),
                              f"slice name '{s.name}' is used twice (also slices[{seen[s.name]}])",
                              value=s.name, hint="give every slice its own name")
        seen.setdefault(s.name, i)


@rule("tpu-autopilot")
def autopilot_support(ctx: Context) -> Iterator[Problem]:
    """The TPU version is offered on GKE Autopilot."""
    if not ctx.has(Capability.AUTOPILOT_RULES):
        return
    for i, shape in ctx.shapes.items():
        if shape is not None and not shape.version.autopilot_supported:
            yield ctx.problem("tpu-autopilot", ("spec", "slices", i, "tpu"),
                              f"TPU {shape.version.key} is not offered on GKE Autopilot",
                              value=ctx.recipe.spec.slices[i].tpu,
                              hint="use orchestrator type gke-standard")


@rule("slice-multislice", facts=("gke.multislice.multiHostOnly",))
def multislice(ctx: Context) -> Iterator[Problem]:
    """Multislice (count > 1): only multi-host slices, only versions that support it."""
    fact = ctx.catalog.fact("multislice", "multiHostOnly")
    src = ctx.catalog.source_url(fact["source"])
    for i, s in enumerate(ctx.recipe.spec.slices):
        shape = ctx.shapes.get(i)
        if s.count == 1 or shape is None:
            continue
        path = ("spec", "slices", i, "count")
        if not shape.version.multislice:
            yield ctx.problem("slice-multislice", path,
                              f"TPU {shape.version.key} does not support multislice",
                              value=s.count, expected="1", source=src,
                              facts=[ctx.catalog.tpu_fact(shape.version, "gke", "multislice")])
        elif not shape.multi_host:
            yield ctx.problem(
                "slice-multislice", path,
                f"multislice needs multi-host slices; {shape.version.key} {shape.topology} "
                f"with {shape.chips_per_vm} chips per VM is a single VM",
                value=s.count, expected="1, or a topology with more than one VM",
                hint="use one larger slice, or a multi-host topology", source=src)
        else:
            ms = ctx.catalog.tpu_fact(shape.version, "gke", "multislice")
            if ms is not None and ms.confidence == "L":
                yield ctx.problem(
                    "slice-multislice", path,
                    f"multislice on {shape.version.key} is not confirmed by a GKE doc "
                    f"({ms.note or 'unverified'})",
                    value=s.count, severity=Severity.WARNING, source=ms.url)


@rule("slice-capacity")
def capacity(ctx: Context) -> Iterator[Problem]:
    """Spot / reservation / on-demand settings do not contradict each other."""
    for i, s in enumerate(ctx.recipe.spec.slices):
        cap = s.capacity
        base = ("spec", "slices", i, "capacity")
        if cap.type == "reservation" and not cap.reservation:
            yield ctx.problem("slice-capacity", (*base, "reservation"),
                              "capacity type 'reservation' needs the reservation's name",
                              expected="a reservation name",
                              hint="add 'reservation: NAME' (gcloud compute reservations list)")
        # queued: queued-capacity says why (the pool's reservation affinity is none)
        if cap.type not in ("reservation", "queued") and (cap.reservation
                                                         or cap.reservation_project):
            key = "reservation" if cap.reservation else "reservationProject"
            yield ctx.problem("slice-capacity", (*base, key),
                              f"a reservation is named but capacity type is '{cap.type}'",
                              value=cap.reservation or cap.reservation_project,
                              expected="type: reservation",
                              hint="set 'type: reservation', or remove the reservation"
                              + (" (spot VMs never consume a reservation)"
                                 if cap.type == "spot" else ""))


@rule("tpu-zone")
def zones(ctx: Context) -> Iterator[Problem]:
    """The zone is in the region and, where the catalog knows, offers the TPU version.

    Facts: places.yaml ``regions`` (a zone's name starts with its region's; which zones a
    region has) and tpu.yaml ``versions.<v>.zones`` (the TPU regions-zones page). A zone that
    does not list the TPU is a finding naming the zone, an error once that list is verified
    (confidence H); today it is M, so a warning. A region outside the areas the list was read
    for (``covers``: region-name prefixes) is not judged: unknown is not absent.
    """
    from mldiag_provision.catalog.places import places

    spec = ctx.recipe.spec
    if places().zones.get(spec.region) is None:
        return  # no such region: gcp-region reports it, once
    if spec.zone and not spec.zone.startswith(spec.region + "-"):
        yield _zone_outside_region(ctx, spec.zone)
        return
    if spec.zone and places().zone_region(spec.zone) is None:
        return  # no such zone (or region): gcp-zone / gcp-region report it
    for i, shape in ctx.shapes.items():
        if shape is None or not shape.version.zones:
            continue
        yield from _tpu_not_in_zone(ctx, i, shape)


def _zone_outside_region(ctx: Context, zone: str) -> Problem:
    """The error at ``spec.zone`` for a zone not of ``spec.region``, naming the zone's own
    region when places.yaml ``regions`` knows it."""
    from mldiag_provision.catalog.places import places

    region = ctx.recipe.spec.region
    p = places()
    home = p.zone_region(zone)
    mine = p.zones.get(region)
    return ctx.problem("tpu-zone", ("spec", "zone"),
                       f"zone '{zone}' is not in region '{region}'"
                       + (f" (it is a zone of {home})" if home else ""),
                       value=zone, expected=f"a zone of {region}"
                       + (": " + ", ".join(mine) if mine else ""),
                       hint=(f"set spec.region to {home}, or a zone of {region}"
                             if home else None),
                       source=p.region_fact(home) if home else p.regions_fact)


def _tpu_not_in_zone(ctx: Context, i: int, shape: SliceShape) -> Iterator[Problem]:
    """Slice ``i``'s TPU version against its zones (tpu.yaml ``versions.<v>.zones``): not
    listed in ``spec.zone`` (at the zone), or, without a zone, in no zone of the region (at
    the slice's ``tpu``); nothing for a region outside the areas the list covers."""
    spec = ctx.recipe.spec
    listed = ctx.catalog.tpu_fact(shape.version, "zones")
    covers = listed.get("covers") if listed is not None else None
    if covers and not spec.region.startswith(tuple(str(c) for c in covers)):
        return  # the list was read for other areas only: unknown here, not absent
    zones_here = [z for z in shape.version.zones if z.startswith(spec.region + "-")]
    if spec.zone and spec.zone not in shape.version.zones:
        yield ctx.problem(
            "tpu-zone", ("spec", "zone"),
            f"TPU {shape.version.key} is not listed in zone {spec.zone}",
            value=spec.zone, expected=", ".join(shape.version.zones),
            hint=(f"set spec.zone to {zones_here[0]}" if zones_here else
                  "zone lists change; check the regions-zones page"),
            source=listed)
    elif not spec.zone and not zones_here:
        yield ctx.problem(
            "tpu-zone", ("spec", "slices", i, "tpu"),
            f"TPU {shape.version.key} is not listed in any zone of region {spec.region}",
            value=ctx.recipe.spec.slices[i].tpu,
            expected="zones: " + ", ".join(shape.version.zones),
            hint="zone lists change; check the regions-zones page", source=listed)


@rule("workload-slice")
def workload_slices(ctx: Context) -> Iterator[Problem]:
    """Each workload names an existing slice; names are unique."""
    names = [s.name for s in ctx.recipe.spec.slices]
    seen: set[str] = set()
    for i, w in enumerate(ctx.recipe.spec.workloads):
        if w.name in seen:
            yield ctx.problem("workload-slice", ("spec", "workloads", i, "name"),
                              f"workload name '{w.name}' is used twice", value=w.name)
        seen.add(w.name)
        if w.slice not in names:
            yield ctx.problem("workload-slice", ("spec", "workloads", i, "slice"),
                              f"no slice named '{w.slice}'", value=w.slice,
                              expected="one of: " + ", ".join(names),
                              hint=suggest(w.slice, names))


@rule("workload-chips")
def workload_chips(ctx: Context) -> Iterator[Problem]:
    """google.com/tpu per pod equals the chips of one VM of the slice (requests = limits).

    Source: About TPUs in GKE, "Any container in a GKE Pod that requests TPUs must consume
    all the TPU chips in the node".
    """
    for i, w in enumerate(ctx.recipe.spec.workloads):
        idx = ctx.slice_index(w.slice)
        shape = ctx.shapes.get(idx) if idx is not None else None
        if shape is None or w.chips_per_pod is None:
            continue
        if w.chips_per_pod != shape.chips_per_vm:
            kind = (f"a multi-host slice of {shape.vms} VMs" if shape.multi_host
                    else "a single-host slice")
            yield ctx.problem(
                "workload-chips", ("spec", "workloads", i, "chipsPerPod"),
                f"{w.chips_per_pod} chips per pod, but {shape.version.key} {shape.topology} is "
                f"{kind} with {shape.chips_per_vm} chips per VM ({shape.machine_type.name}); "
                "a TPU pod must take every chip of its VM",
                value=w.chips_per_pod, expected=str(shape.chips_per_vm),
                hint=f"set chipsPerPod: {shape.chips_per_vm}, or remove it to use the slice's "
                     "chips per VM",
                source=ctx.catalog.source_url("GKE-ABOUT"),
                facts=[ctx.catalog.topology_fact(shape.version, shape.topology)])


@rule("workload-gpus")
def workload_gpus(ctx: Context) -> Iterator[Problem]:
    """nvidia.com/gpu per pod fits one VM of the slice; TPU and GPU request fields match the
    slice kind."""
    for i, w in enumerate(ctx.recipe.spec.workloads):
        idx = ctx.slice_index(w.slice)
        if idx is None:
            continue
        s = ctx.recipe.spec.slices[idx]
        base = ("spec", "workloads", i)
        if s.gpu is None and w.gpus_per_pod is not None:
            yield ctx.problem("workload-gpus", (*base, "gpusPerPod"),
                              f"slice '{s.name}' is a TPU slice; gpusPerPod is for GPU slices",
                              value=w.gpus_per_pod, hint="use chipsPerPod, or remove it")
        if s.gpu is not None and w.chips_per_pod is not None:
            yield ctx.problem("workload-gpus", (*base, "chipsPerPod"),
                              f"slice '{s.name}' is a GPU slice; chipsPerPod is for TPU slices",
                              value=w.chips_per_pod, hint="use gpusPerPod")
        shape = ctx.gpu_shapes.get(idx)
        if shape is None:
            continue
        if shape.gpus_per_vm is None and w.gpus_per_pod is None:
            yield ctx.problem("workload-gpus", (*base, "gpusPerPod"),
                              f"slice '{s.name}' names no machine type, so the GPUs per pod "
                              "must be stated", expected="an integer >= 1",
                              hint="add gpusPerPod (Autopilot picks the machine from it)")
        elif shape.gpus_per_vm is not None and (w.gpus_per_pod or 0) > shape.gpus_per_vm:
            yield ctx.problem(
                "workload-gpus", (*base, "gpusPerPod"),
                f"{w.gpus_per_pod} GPUs per pod, but {shape.machine.name} has "  # type: ignore[union-attr]
                f"{shape.gpus_per_vm}; the pod can never schedule",
                value=w.gpus_per_pod, expected=f"1 to {shape.gpus_per_vm}",
                source=_gpu_source(shape))
        elif shape.gpus_per_vm is None and w.gpus_per_pod and shape.gpu.machines:
            # Autopilot picks the machine: no machine type of this GPU has more GPUs than
            # the largest in the catalog (gpu.yaml machineTypes)
            largest = max(shape.gpu.machines.values(), key=lambda m: m.gpus)
            if w.gpus_per_pod > largest.gpus:
                yield ctx.problem(
                    "workload-gpus", (*base, "gpusPerPod"),
                    f"{w.gpus_per_pod} GPUs per pod, but no machine type with "
                    f"{shape.gpu.display_name} has more than {largest.gpus} "
                    f"({largest.name}); the pod can never schedule",
                    value=w.gpus_per_pod, expected=f"1 to {largest.gpus}",
                    hint="split the work over more pods (replicas), each with at most "
                         f"{largest.gpus} GPUs",
                    facts=[largest.fact],
                    source=load_gpu_source(largest.source))


def load_gpu_source(tag: str) -> str:
    """The URL (else the path) of a gpu.yaml source tag."""
    from mldiag_provision.catalog.gpu import load_gpu_catalog

    return load_gpu_catalog().source_url(tag)


def _gpu_source(shape: GpuShape) -> str:
    return load_gpu_source(shape.machine.source if shape.machine else shape.gpu.source)


@rule("workload-resources")
def workload_resources(ctx: Context) -> Iterator[Problem]:
    """CPU and memory are quantities and fit a GPU slice's VM (TPU workloads: lint's
    ``tpu-resources`` over the rendered manifest, preflight/manifest_rules.py)."""
    for i, w in enumerate(ctx.recipe.spec.workloads):
        idx = ctx.slice_index(w.slice)
        gpu = ctx.gpu_shapes.get(idx) if idx is not None else None
        machine = gpu.machine if gpu else None
        for key, attr, unit, scale in (("cpu", "vcpu", "vCPU", 1), ("memory", "memory_gb", "GB",
                                                                      2**30)):
            # Compute Engine's machine-type GB are GiB (API memoryMb: 1.7 GB = 1740 MiB)
            raw = getattr(w.resources, key)
            if raw is None:
                continue
            path = ("spec", "workloads", i, "resources", key)
            bad = bad_amount(key, raw)
            if bad is not None:
                yield ctx.problem("workload-resources", path, bad[0], value=raw,
                                  expected="e.g. 10, 500m, 500Gi", hint=bad[1], source=bad[2])
                continue
            qty = parse_quantity(raw)
            assert qty is not None  # bad_amount said it is a positive quantity
            cap = getattr(machine, attr) if machine else None
            # cap is set only with a machine, and a machine only with a GPU shape
            if gpu is not None and machine is not None and cap and qty > cap * scale:
                # the severity is the machine fact's: an unverified size must not block
                unverified = machine.fact is not None and not machine.fact.verified
                yield ctx.problem(
                    "workload-resources", path,
                    f"{key} request {raw} is more than the whole {machine.name} VM "
                    f"({cap} {unit}" + (", an unverified catalog figure); the pod may not "
                                        "schedule" if unverified else "); the pod can never "
                                                                       "schedule"),
                    value=raw, expected=f"below {cap} {unit} (allocatable is lower still)",
                    source=_gpu_source(gpu),
                    facts=[machine.fact])


def _longest_generated_name(name: str, slice_count: int, vms: int) -> tuple[str, int]:
    """The longest DNS label generated from a workload name, and its length.

    Indexed Job pods get hostname ``<job>-<index>`` and a multi-host Job gets the headless
    Service ``<job>-workers``; JobSet pods ``<jobset>-<rjob>-<job>-<index>`` (our replicated
    job is called ``slice``).
    """
    if slice_count > 1:
        names = [f"{name}-slice-{slice_count - 1}-{vms - 1}"]
    else:
        names = [f"{name}-{max(vms - 1, 0)}"]
        if vms > 1:
            names.append(f"{name}-workers")
    longest = max(names, key=len)
    return longest, len(longest)


class _GpuVms:
    """The one thing names-length needs of a GPU slice: its VM count."""

    def __init__(self, vms: int) -> None:
        self.vms = vms


@rule("names-length")
def names_length(ctx: Context) -> Iterator[Problem]:
    """Names that become Kubernetes labels or DNS labels stay within 63 characters (Google
    Cloud names the tool derives, node pools among them, are rule ``gcp-names``)."""
    limit = ctx.catalog.fact("labelMaxLength")
    label_max = int(limit["value"])
    for i, w in enumerate(ctx.recipe.spec.workloads):
        idx = ctx.slice_index(w.slice)
        shape: SliceShape | _GpuVms | None = ctx.shapes.get(idx) if idx is not None else None
        if shape is None and idx is not None and ctx.gpu_shapes.get(idx) is not None:
            shape = _GpuVms(ctx.recipe.spec.slices[idx].nodes or 1)
        if shape is None:
            continue
        count = ctx.recipe.spec.slices[idx].count  # type: ignore[index]
        host, n = _longest_generated_name(w.name, count, shape.vms)
        if n > label_max:
            room = len(w.name) - (n - label_max)
            what = "headless Service" if host.endswith("-workers") else "pod hostname"
            yield ctx.problem("names-length", ("spec", "workloads", i, "name"),
                              f"{what} name '{host}' would be {n} characters", value=w.name,
                              expected=f"a workload name of at most {room} characters",
                              hint="shorten the workload name", source=limit.url,
                              facts=[limit])
