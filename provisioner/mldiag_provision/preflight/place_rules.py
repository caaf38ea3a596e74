"""Preflight rules for places and sizes: the recipe's regions and zones exist, its GPU slices'
machine series are offered where the slices go, and the cluster fits GKE's limits.

Rules (ids declared here, each with the facts it reads):

* ``gcp-region``: ``spec.region``, ``spec.diagnostics.mlrunRegion`` and
  ``spec.orchestrator.clusterLocation`` name a region (or, for the cluster location, a zone)
  Compute Engine lists; "did you mean" for a near miss.
* ``gcp-zone``: ``spec.zone`` is a zone of ``spec.region`` (a zone of another region is
  ``tpu-zone``'s finding); an AI zone name that no page lists is a warning.
* ``gpu-zone``: a GPU slice's machine series (A3 for ``a3-ultragpu-8g``) is offered in
  ``spec.zone``, or, without a zone, in some zone of the region. TPU slices: ``tpu-zone``.
* ``gke-nodes``: the nodes of a cluster the stack creates (VMs x count of every slice, plus
  the Standard system pool) within GKE's nodes-per-cluster limits; a TPU slice's node pool
  within the nodes-per-node-pool-per-zone limit.
* ``gke-node-pools``: node pools of the cluster (one per slice and count, plus the system
  pool on Standard) against GKE's documented 200 (latency, a warning).

Facts: ``catalog/data/places.yaml`` (``regions``, ``tpuOnlyRegions``, ``aiZones``,
``gpuSeriesByZone``, ``gkeLimits``), read through :mod:`mldiag_provision.catalog.places`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from mldiag_provision.catalog.gke_version import GkeVersion
from mldiag_provision.catalog.places import Places, limit, places
from mldiag_provision.cluster.from_plan import cluster_limits
from mldiag_provision.cluster.model import ClusterLimits
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule
from mldiag_provision.recipe.sourcemap import Path


def _suggest(value: str, options: list[str]) -> str | None:
    from mldiag_provision.suggest import suggest

    return suggest(value, options)


def _regions_like(value: str, p: Places) -> str:
    """The regions sharing ``value``'s first word (``europe-``), else every region."""
    head = value.split("-", 1)[0] + "-"
    near = [r for r in p.region_names() if r.startswith(head)]
    return ", ".join(near or p.region_names())


@rule("gcp-region", facts=("places.regions",))
def regions(ctx: Context) -> Iterator[Problem]:
    """Regions (and the cluster location) are ones Compute Engine lists."""
    p = places()
    spec = ctx.recipe.spec
    fields: list[tuple[Path, str | None, bool]] = [
        (("spec", "region"), spec.region, False),
        (("spec", "diagnostics", "mlrunRegion"), spec.diagnostics.mlrun_region, False),
        (("spec", "orchestrator", "clusterLocation"), spec.orchestrator.cluster_location, True)]
    for path, value, zone_ok in fields:
        if value is None or p.is_region(value) or (zone_ok and p.zone_region(value)):
            continue
        if zone_ok and value.rsplit("-", 1)[0] in p.zones:
            continue  # a zone name of a known region: not a region question (gcp-zone's kind)
        what = "region or zone" if zone_ok else "region"
        hint = _suggest(value, p.region_names())
        yield ctx.problem(
            "gcp-region", path,
            f"'{value}' is not a Google Cloud {what}: Compute Engine lists no region of that "
            "name, so nothing can be created there", value=value,
            expected=f"a region such as {_regions_like(value, p)}",
            hint=(hint + " " if hint else "") + "(gcloud compute regions list shows every "
            "region; if Google opened it after places.yaml was read, add it there)",
            source=p.regions_fact)


@rule("gcp-zone", facts=("places.regions",))
def zones(ctx: Context) -> Iterator[Problem]:
    """The zone is one of the region's zones (or an AI zone of it)."""
    p = places()
    spec = ctx.recipe.spec
    zone = spec.zone
    if zone is None or not p.is_region(spec.region) or p.zone_region(zone) == spec.region:
        return
    if zone.rsplit("-", 1)[0] != spec.region and p.ai_zone_form(zone) is None:
        return  # a zone of another region: tpu-zone says so
    path = ("spec", "zone")
    ai = p.ai_zone_form(zone)
    if ai is not None and ai[0] == spec.region:
        parent_ok = ai[1] in p.zones[spec.region]
        yield ctx.problem(
            "gcp-zone", path,
            f"'{zone}' has the form of an AI zone of {spec.region}"
            + ("" if parent_ok else f", but its parent zone {ai[1]} is not a zone of "
                                    f"{spec.region}")
            + "; no page read names it (AI zones are listed only to projects that turn AI "
              "zone visibility on)", value=zone,
            expected="a zone of " + spec.region + ": " + ", ".join(
                (*p.zones[spec.region], *p.ai_zones.get(spec.region, ()))),
            hint="check it with: gcloud compute zones list --filter=region:" + spec.region,
            severity=Severity.WARNING, source=p.ai_fact)
        return
    if ai is not None:
        return  # an AI zone of another region: tpu-zone says so
    region_zones = list(p.zones[spec.region])
    hint = _suggest(zone, region_zones)
    yield ctx.problem(
        "gcp-zone", path,
        f"'{zone}' is not a zone of region {spec.region}: Compute Engine lists "
        f"{', '.join(region_zones)} there", value=zone,
        expected="one of " + ", ".join(region_zones),
        hint=hint or f"use one of {', '.join(region_zones)}",
        source=p.region_fact(spec.region))


@rule("gpu-zone", facts=("places.gpuSeriesByZone",))
def gpu_zones(ctx: Context) -> Iterator[Problem]:
    """A GPU slice's machine series is offered in the zone (or some zone of the region)."""
    p = places()
    spec = ctx.recipe.spec
    if not p.is_region(spec.region):
        return  # gcp-region reports it
    region_zones = p.zones[spec.region]
    zone = spec.zone if spec.zone in region_zones else None
    if spec.zone is not None and zone is None:
        return  # unknown, AI or foreign zone: gcp-zone / tpu-zone report it
    for i, shape in ctx.gpu_shapes.items():
        if shape is None:
            continue
        machine = shape.machine.name if shape.machine else next(iter(shape.gpu.machines), None)
        series = p.series_of(machine) if machine else None
        if series is None:
            continue
        here = p.zones_offering(series, region_zones)
        if (zone is not None and zone in here) or (zone is None and here):
            continue
        what = (f"{machine} ({shape.gpu.display_name})" if shape.machine else
                f"{shape.gpu.display_name} ({series} machine types)")
        if zone is not None:
            yield _zone_without_series(ctx, p, i, zone, series, what, here)
        else:
            yield _region_without_series(ctx, p, i, series, what)


def _zone_without_series(ctx: Context, p: Places, i: int, zone: str, series: str, what: str,
                         here: list[str]) -> Problem:
    """The error at ``spec.zone`` when that zone offers no ``series`` machine types for slice
    ``i`` (``what``: its machine and GPU in words); ``here``: the region's zones that do
    (places.yaml ``gpuSeriesByZone``)."""
    spec = ctx.recipe.spec
    elsewhere = p.zones_offering(series)
    return ctx.problem(
        "gpu-zone", ("spec", "zone"),
        f"zone {zone} offers no {series} machine types, so slice "
        f"'{spec.slices[i].name}' ({what}) cannot be created there", value=zone,
        expected=(f"a zone of {spec.region} with {series}: {', '.join(here)}" if here
                  else f"a zone with {series}: {', '.join(elsewhere)}"),
        hint=(f"set spec.zone to {here[0]}" if here else
              f"choose a region with {series}, e.g. spec.region "
              f"{elsewhere[0].rsplit('-', 1)[0]}, spec.zone {elsewhere[0]}"
              if elsewhere else None),
        source=p.gpu_fact)


def _region_without_series(ctx: Context, p: Places, i: int, series: str, what: str
                           ) -> Problem:
    """The error at slice ``i``'s ``gpu`` when no zone of the region offers ``series``
    machine types (places.yaml ``gpuSeriesByZone``)."""
    spec = ctx.recipe.spec
    elsewhere = p.zones_offering(series)
    return ctx.problem(
        "gpu-zone", ("spec", "slices", i, "gpu"),
        f"no zone of region {spec.region} offers {series} machine types, so "
        f"slice '{spec.slices[i].name}' ({what}) cannot be created there",
        value=spec.slices[i].gpu or "",
        expected=f"a region with {series}: zones {', '.join(elsewhere)}",
        hint=f"set spec.region to {elsewhere[0].rsplit('-', 1)[0]}" if elsewhere else None,
        source=p.gpu_fact)


# -- cluster size ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pool:
    """One slice's node pools: ``vms`` nodes each, ``count`` of them."""

    index: int
    vms: int
    count: int
    words: str  # "v5p 16x16x24 (1,536 VMs)"


def _pools(ctx: Context) -> list[_Pool]:
    pools = []
    for i, s in enumerate(ctx.recipe.spec.slices):
        tpu = ctx.shapes.get(i)
        gpu = ctx.gpu_shapes.get(i)
        if tpu is not None:
            pools.append(_Pool(i, tpu.vms, s.count, f"{tpu.version.key} {tpu.topology} "
                                                   f"({tpu.vms:,} VMs)"))
        elif gpu is not None:
            n = s.nodes or 1
            pools.append(_Pool(i, n, s.count, f"{gpu.gpu.key} ({n:,} VMs)"))
    return pools


def _size_path(pool: _Pool, ctx: Context) -> Path:
    """Where to point for a slice's size: its ``count`` when it has several, else the field
    that sets its VMs (``topology`` of a TPU slice, ``nodes`` of a GPU slice)."""
    s = ctx.recipe.spec.slices[pool.index]
    if pool.count > 1:
        return ("spec", "slices", pool.index, "count")
    return ("spec", "slices", pool.index, "topology" if s.tpu else "nodes")


def _creates_gke(ctx: Context) -> bool:
    return ctx.has(Capability.CREATES_CLUSTER) and not ctx.has(Capability.MANAGED_SLURM)


def _limits(ctx: Context) -> ClusterLimits:
    """GKE's per-cluster limits as the cluster model holds them for the cluster the stack
    creates (Standard when it has node pools, else Autopilot)."""
    found = cluster_limits("standard" if ctx.has(Capability.NODE_POOLS) else "autopilot")
    assert found is not None
    return found


def _system_nodes(ctx: Context) -> int:
    """Nodes of the Standard stack's system pool: 1 per zone of GKE's default node locations
    (three zones of the region, places.yaml ``gkeLimits.systemPoolZones``)."""
    if not ctx.has(Capability.NODE_POOLS):
        return 0
    default_zones = int(limit("systemPoolZones")["zones"])
    p = places()
    return min(default_zones, len(p.zones.get(ctx.recipe.spec.region, ()))
               or default_zones)


@dataclass(frozen=True)
class _Size:
    """The nodes the cluster would have: ``total``, ``sums`` (the total in words with its
    parts), and where to point (``path``, ``value``: the largest slice's size field)."""

    total: int
    sums: str
    path: Path
    value: object


def _cluster_size(ctx: Context, pools: list[_Pool]) -> _Size:
    """The cluster's node count: every slice's pools plus the Standard system pool."""
    system = _system_nodes(ctx)
    total = sum(p.vms * p.count for p in pools) + system
    top = max(pools, key=lambda p: p.vms * p.count)
    parts = " + ".join(f"{p.count} x {p.words}" for p in pools)
    if system:
        parts += f" + {system} system-pool nodes"
    value = ctx.recipe.spec.slices[top.index].count if top.count > 1 else (
        ctx.recipe.spec.slices[top.index].topology or ctx.recipe.spec.slices[top.index].nodes)
    return _Size(total, f"{total:,} nodes ({parts})", _size_path(top, ctx), value)


@rule("gke-nodes", facts=("places.gkeLimits.nodesPerClusterMax",))
def cluster_nodes(ctx: Context) -> Iterator[Problem]:
    """The cluster's nodes fit GKE's nodes-per-cluster and nodes-per-node-pool limits."""
    if not _creates_gke(ctx):
        return
    pools = _pools(ctx)
    if not pools:
        return
    size = _cluster_size(ctx, pools)
    limits = _limits(ctx)
    most = limits.fact("nodesPerClusterMax")
    standard = ctx.has(Capability.NODE_POOLS)
    if size.total > int(most["nodes"]):
        yield ctx.problem(
            "gke-nodes", size.path,
            f"the cluster would have {size.sums}: over GKE's limit of {int(most['nodes']):,} "
            f"nodes per cluster (GKE {most['minVersion']} and later; fewer before)",
            value=size.value, expected=f"at most {int(most['nodes']):,} nodes in one cluster",
            hint="use fewer or smaller slices, or split the slices across clusters "
                 "(one recipe per cluster)", source=most)
    elif standard:
        yield from _standard_cluster_size(ctx, limits, size)
    else:
        yield from _autopilot_cluster_size(ctx, limits, size)
    if standard:
        yield from _node_pool_per_zone(ctx, limits, pools)


def _standard_cluster_size(ctx: Context, limits: ClusterLimits, size: _Size
                           ) -> Iterator[Problem]:
    """A Standard cluster under GKE's maximum: above ``nodesPerClusterStandard`` it needs
    GKE ``nodesPerClusterMax.minVersion`` (an error when minVersion is older), a quota lift
    and no autoscaler (a warning); above ``nodesWithoutQuotaLift``, a quota lift (a warning).
    Facts: places.yaml ``gkeLimits`` through the cluster model's limits."""
    most = limits.fact("nodesPerClusterMax")
    std = limits.fact("nodesPerClusterStandard")
    lift = limits.fact("nodesWithoutQuotaLift")
    version = _min_version(ctx)
    if size.total > int(std["nodes"]):
        below = version is not None and (version.major, version.minor) < _minor(
            str(most["minVersion"]))
        yield ctx.problem(
            "gke-nodes", ("spec", "orchestrator", "minVersion") if below else size.path,
            f"the cluster would have {size.sums}: above {int(std['nodes']):,} nodes a Standard "
            f"cluster needs GKE {most['minVersion']} or later"
            + (f", but minVersion is {version}" if below else "")
            + ", Cloud Customer Care to raise the cluster size quota, and no cluster "
              "autoscaler", value=str(version) if below else size.value,
            expected=f"at most {int(std['nodes']):,} nodes, or GKE >= {most['minVersion']}",
            hint=(f"set minVersion to {most['minVersion']} or later" if below else
                  "ask Cloud Customer Care before apply; or use fewer or smaller slices"),
            severity=None if below else Severity.WARNING, source=most, facts=[std])
    elif size.total > int(lift["nodes"]):
        yield ctx.problem(
            "gke-nodes", size.path,
            f"the cluster would have {size.sums}: more than {int(lift['nodes']):,} nodes needs "
            "a raised cluster size quota (contact Cloud Customer Care) and a regional "
            "cluster with private nodes or Private Service Connect", value=size.value,
            expected=f"at most {int(lift['nodes']):,} nodes without a quota lift",
            hint="ask Cloud Customer Care to raise the cluster size quota before apply",
            severity=Severity.WARNING, source=lift)


def _autopilot_cluster_size(ctx: Context, limits: ClusterLimits, size: _Size
                            ) -> Iterator[Problem]:
    """An Autopilot cluster above ``nodesPerClusterAutopilot.quotaNodes``: an error over the
    Autopilot limit (``limits.nodes``), else a warning that it needs a quota lift."""
    auto = limits.fact("nodesPerClusterAutopilot")
    if size.total > int(auto["quotaNodes"]):
        over = size.total > limits.nodes
        yield ctx.problem(
            "gke-nodes", size.path,
            f"the Autopilot cluster would have {size.sums} when every slice runs: "
            + (f"over the {int(auto['nodes']):,} nodes the quotas page gives Autopilot"
               if over else f"more than {int(auto['quotaNodes']):,} nodes needs a raised "
                            "cluster size quota (contact Cloud Customer Care)"),
            value=size.value, expected=f"at most {int(auto['nodes']):,} nodes "
                                       f"({int(auto['quotaNodes']):,} without a quota lift)",
            hint="ask Cloud Customer Care before apply, or use gke-standard",
            severity=None if over else Severity.WARNING, source=auto)


def _node_pool_per_zone(ctx: Context, limits: ClusterLimits, pools: list[_Pool]
                        ) -> Iterator[Problem]:
    """A warning for each slice whose one node pool has more VMs than the quotas page's
    nodes per node pool per zone (``nodesPerNodePoolZone``)."""
    per_zone = limits.fact("nodesPerNodePoolZone")
    for pool in pools:
        if pool.vms > int(per_zone["nodes"]):
            s = ctx.recipe.spec.slices[pool.index]
            yield ctx.problem(
                "gke-nodes", ("spec", "slices", pool.index, "topology" if s.tpu else
                              "nodes"),
                f"slice '{s.name}' is one node pool of {pool.vms:,} nodes in one zone: the "
                f"quotas page gives {int(per_zone['nodes']):,} nodes per node pool per "
                "zone", value=s.topology or s.nodes,
                expected=f"at most {int(per_zone['nodes']):,} VMs per slice",
                hint="check with Cloud Customer Care that the slice's node pool can be "
                     "created", source=per_zone)


@rule("gke-node-pools", facts=("places.gkeLimits.nodePoolsPerCluster",))
def node_pools(ctx: Context) -> Iterator[Problem]:
    """The cluster's node pools stay within the number GKE documents without slowdown."""
    if not _creates_gke(ctx):
        return
    slices = ctx.recipe.spec.slices
    pools = sum(s.count for s in slices) + (1 if ctx.has(Capability.NODE_POOLS) else 0)
    limits = _limits(ctx)
    most = limits.fact("nodePoolsPerCluster")
    if limits.node_pools is None or pools <= limits.node_pools:
        return
    yield ctx.problem(
        "gke-node-pools", ("spec", "slices"),
        f"the cluster would have {pools} node pools (one per slice and count"
        + (", plus the system pool" if ctx.has(Capability.NODE_POOLS) else "")
        + f"): above {int(most['nodePools'])} node pools GKE documents higher latency while "
          "autoscaling", value=pools, expected=f"at most {int(most['nodePools'])} node pools",
        hint="use fewer, larger slices", severity=Severity.WARNING, source=most)


def _min_version(ctx: Context) -> GkeVersion | None:
    text = ctx.recipe.spec.orchestrator.min_version
    return GkeVersion.parse(text) if text else None


def _minor(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)
