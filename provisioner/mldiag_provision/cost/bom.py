"""A plan (``.mldiag/plan.json`` as data) -> a priced bill of materials per hour.

One :class:`Line` per thing that bills by the hour: the GKE cluster fee, each TPU/GPU slice
(on GKE Standard: each of its node pools), the Standard system pool, Autopilot's Pod charges,
and on Slurm each node set, the login nodes and each storage instance. A line carries the VMs
(minimum and maximum: flex-start and queued pools scale from 0), chips or GPUs, machine type,
region and zone, capacity type, the unit price and its source.

Totals (:class:`Bill`) add the *priced* lines only: an unknown price is never counted as zero;
the bill then says its total is a lower bound (``lower_bound``), as it does when a price is a
"starting at" figure. Reserved capacity is already paid for: its lines are listed and add
nothing. An existing cluster's slices are not created by the stack: listed, not added.

Works on the plan as JSON data, so the policy gate prices a rendered directory the same way
as ``cost`` prices a recipe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mldiag_provision.cost.prices import Price, PriceTable
from mldiag_provision.errors import CatalogError

COUNTED = ("priced", "lower-bound")


@dataclass(frozen=True)
class Line:
    """One billed item. Money in US dollars per hour; ``units_*`` are how many of ``unit``
    (chips for a TPU line, VMs for a machine line, 1 for a fee); ``None`` hourly figures: not
    known (``reason`` says why) or not added (reserved, existing)."""

    item: str
    kind: str  # cluster-fee | tpu | gpu | cpu | storage | autopilot
    region: str
    zone: str | None
    capacity: str | None
    machine_type: str | None
    vms_min: int | None
    vms_max: int | None
    chips: int | None  # TPU chips or GPUs at the maximum size
    unit: str
    units_min: float | None
    units_max: float | None
    unit_usd: float | None
    hourly_min: float | None
    hourly_max: float | None
    status: str  # priced | lower-bound | unknown | reserved | existing
    reason: str | None
    source: str
    confidence: str
    read: str | None
    note: str | None = None
    live: str | None = None  # cost --live: what the Billing Catalog said of this line

    @property
    def counted(self) -> bool:
        return self.status in COUNTED


@dataclass(frozen=True)
class Bill:
    """Lines and totals. ``total_max``: every priced line at its maximum size (what the stack
    costs per hour when all of it runs); ``total_min``: at the minimum (autoscaled pools at
    their floor)."""

    stack: str
    region: str
    lines: tuple[Line, ...]
    prices_date: str
    prices_age_days: int
    currency: str = "USD"
    notes: tuple[str, ...] = field(default=())
    live: str | None = None  # cost --live: which catalog was read, how many SKUs, when

    @property
    def total_max(self) -> float:
        return round(sum(ln.hourly_max or 0.0 for ln in self.lines if ln.counted), 6)

    @property
    def total_min(self) -> float:
        return round(sum(ln.hourly_min or 0.0 for ln in self.lines if ln.counted), 6)

    @property
    def unknown(self) -> list[Line]:
        return [ln for ln in self.lines if ln.status == "unknown"]

    @property
    def lower_bound(self) -> bool:
        """True when the total leaves something out (an unknown price) or prices a line at
        a "starting at" figure."""
        return any(ln.status in ("unknown", "lower-bound") for ln in self.lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``total_usd_per_hour`` is a number (the maximum), never a string."""
        return {"stack": self.stack, "region": self.region, "currency": self.currency,
                "total_usd_per_hour": self.total_max,
                "total_usd_per_hour_min": self.total_min,
                "lower_bound": self.lower_bound,
                "unknown_lines": len(self.unknown),
                "prices": {"date": self.prices_date, "age_days": self.prices_age_days,
                           "table": "catalog/data/prices.yaml", "live": self.live},
                "notes": list(self.notes),
                "lines": [asdict(ln) for ln in self.lines]}


def _line(item: str, kind: str, price: Price, *, region: str, zone: str | None,
          capacity: str | None, machine_type: str | None, vms: tuple[int, int] | None,
          chips: int | None, units: tuple[float, float], note: str | None = None,
          status: str | None = None, reason: str | None = None) -> Line:
    usd = price.usd
    hourly = (None, None) if usd is None else (round(usd * units[0], 6), round(usd * units[1], 6))
    why = reason or price.unknown or price.reserved
    if price.status == "reserved" and price.on_demand_usd is not None:
        why = f"{why} (on-demand rate for reference: ${price.on_demand_usd:.2f} per {price.unit})"
    if price.status == "unknown" and price.on_demand_usd is not None:
        bound = ("on-demand starts at" if price.floor
                 else "on-demand, an upper bound:")
        why = f"{why} ({bound} ${price.on_demand_usd:.2f} per {price.unit})"
    basis = price.region_basis
    notes = [n for n in (note, f"region: {basis}" if basis and usd is not None else None) if n]
    return Line(item=item, kind=kind, region=region, zone=zone, capacity=capacity,
                machine_type=machine_type, vms_min=vms[0] if vms else None,
                vms_max=vms[1] if vms else None, chips=chips, unit=price.unit,
                units_min=units[0], units_max=units[1], unit_usd=usd,
                hourly_min=hourly[0], hourly_max=hourly[1], status=status or price.status,
                reason=why, source=price.source, confidence=price.confidence,
                read=price.read, note="; ".join(notes) or None, live=price.live_note)


def _scaled(capacity: str, vms: int) -> tuple[int, int]:
    """(min, max) VMs: flex-start and queued pools scale from 0 (modules/gke/
    accelerator-node-pool: autoscaling 0..node_count); the others are fixed."""
    return (0, vms) if capacity in ("flex-start", "queued") else (vms, vms)


def _accelerator(table: PriceTable, item: str, s: Mapping[str, Any], *, region: str,
                 zone: str | None, capacity: str, vms: int, note: str | None = None
                 ) -> Line:
    """A TPU slice or GPU machine group of ``vms`` VMs of slice ``s``."""
    lo, hi = _scaled(capacity, vms)
    per_vm = s.get("chips_per_vm")
    chips = per_vm * hi if per_vm else None
    if s["kind"] == "tpu":
        price = table.tpu_chip(s["accelerator_type"], region, capacity)
        per = per_vm or 0
        return _line(item, "tpu", price, region=region, zone=zone, capacity=capacity,
                     machine_type=s.get("machine_type"), vms=(lo, hi), chips=chips,
                     units=(lo * per, hi * per), note=note)
    machine = s.get("machine_type")
    if not machine:
        price = table.autopilot("autopilotAccelerators")
        return _line(item, "gpu", price, region=region, zone=zone, capacity=capacity,
                     machine_type=None, vms=(lo, hi), chips=chips, units=(lo, hi),
                     reason="Autopilot picks the GPU machine type, so no VM price applies; "
                            + (price.unknown or ""), note=note)
    price = table.machine(machine, region, capacity, gpu=True)
    return _line(item, "gpu", price, region=region, zone=zone, capacity=capacity,
                 machine_type=machine, vms=(lo, hi), chips=chips, units=(lo, hi), note=note)


def bill_of_materials(plan: Mapping[str, Any], table: PriceTable | None = None) -> Bill:
    """The priced bill of materials of ``plan`` (``StackPlan.to_dict()`` or a stack's
    ``.mldiag/plan.json``).

    Raises:
      CatalogError: the price table is malformed or lacks an accelerator of the plan.
    """
    table = table or PriceTable()
    region = str(plan["region"])
    cluster = plan["cluster"]
    ctype = str(cluster["type"])
    lines: list[Line] = []
    notes: list[str] = []
    fee = table.cluster_fee(ctype, region)
    if fee is not None:
        lines.append(_line(f"GKE cluster fee ({cluster['name']})", "cluster-fee", fee,
                           region=region, zone=None, capacity=None, machine_type=None,
                           vms=None, chips=None, units=(1, 1)))
    slices = {s["name"]: s for s in plan.get("slices", ())}
    if ctype == "gke-standard":
        for pool in plan.get("node_pools", ()):
            s = slices[pool["slice"]]
            lines.append(_accelerator(table, f"node pool {pool['name']} (slice {s['name']})", s,
                                      region=region, zone=pool.get("zone"),
                                      capacity=pool["capacity"], vms=int(pool["node_count"])))
        zones = _zones(region)
        machine = str(cluster["system_pool_machine_type"])
        price = table.machine(machine, region, "on-demand", gpu=False)
        lines.append(_line("system node pool", "cpu", price, region=region, zone=None,
                           capacity="on-demand", machine_type=machine, vms=(1, zones),
                           chips=None, units=(1, zones),
                           note="1 node per zone of the regional pool (module default "
                                "system_pool_node_count 1); GKE picks the zones, at most "
                                f"{zones} in {region}"))
    elif ctype == "gke-autopilot":
        for s in slices.values():
            count = int(s.get("count") or 1)
            lines.append(_accelerator(
                table, f"slice {s['name']}" + (f" ({count} slices)" if count > 1 else ""), s,
                region=region, zone=None, capacity=s["capacity"], vms=int(s["vms"]) * count,
                note="Autopilot: chips only; what Autopilot charges on top for accelerator "
                     "Pods is not in the table"))
            if s["kind"] == "tpu" and lines[-1].counted:
                lines[-1] = _replace(lines[-1], status="lower-bound")
        pods = table.autopilot("autopilotPods")
        lines.append(_line("Autopilot Pods (CPU, memory, ephemeral storage requested)",
                           "autopilot", pods, region=region, zone=None, capacity=None,
                           machine_type=None, vms=None, chips=None, units=(1, 1)))
    elif ctype == "slurm":
        lines.extend(_slurm(table, plan, slices, region))
    else:  # an existing cluster: the stack creates no nodes
        for s in slices.values():
            count = int(s.get("count") or 1)
            ln = _accelerator(table, f"slice {s['name']} (existing cluster)", s, region=region,
                              zone=None, capacity=s["capacity"], vms=int(s["vms"]) * count)
            lines.append(_replace(ln, status="existing",
                                  reason="the cluster exists already; this stack creates no "
                                         "nodes, so its nodes are listed, not added"))
        notes.append("existing cluster: the stack creates no billed compute")
    describe = getattr(getattr(table, "catalog", None), "describe", None)
    return Bill(stack=str(plan.get("name", "")), region=region, lines=tuple(lines),
                prices_date=table.date, prices_age_days=table.age_days(), notes=tuple(notes),
                live=describe() if describe else None)


def _replace(line: Line, **changes: Any) -> Line:
    from dataclasses import replace

    return replace(line, **changes)


def _zones(region: str) -> int:
    """Zones of ``region`` (places.yaml); 1 when the region is not listed there (then only
    the one node that surely exists is counted)."""
    from mldiag_provision.catalog.places import places

    zones = places().zones.get(region)
    return len(zones) if zones else 1


def _slurm(table: PriceTable, plan: Mapping[str, Any], slices: Mapping[str, Any],
           region: str) -> list[Line]:
    slurm = plan["slurm"]
    out: list[Line] = []
    compute = {c["id"]: c for c in slurm.get("compute", ())}
    for ns in slurm.get("node_sets", ()):
        c = compute.get(ns["compute_id"], {})
        capacity = str(c.get("capacity") or "on-demand")
        static = int(ns.get("static_node_count") or 0)
        dynamic = int(ns.get("max_dynamic_node_count") or 0)
        zone = c.get("zone")
        item = f"Slurm node set {ns['id']}"
        if ns.get("slice") and ns["slice"] in slices:
            s = slices[ns["slice"]]
            ln = _accelerator(table, item, s, region=region, zone=zone, capacity=capacity,
                              vms=static + dynamic)
            if dynamic:
                ln = _rescale(ln, static, static + dynamic)
            out.append(ln)
            continue
        machine = str(ns.get("machine_type") or c.get("machine_type"))
        price = table.machine(machine, region, capacity, gpu=False)
        out.append(_line(item, "cpu", price, region=region, zone=zone, capacity=capacity,
                         machine_type=machine, vms=(static, static + dynamic), chips=None,
                         units=(static, static + dynamic)))
    login = slurm.get("login_nodes")
    if login:
        machine = str(login["machine_type"])
        n = int(login["count"])
        price = table.machine(machine, region, "on-demand", gpu=False)
        out.append(_line("Slurm login nodes", "cpu", price, region=region,
                         zone=login.get("zone"), capacity="on-demand", machine_type=machine,
                         vms=(n, n), chips=None, units=(n, n)))
    for st in slurm.get("storage", ()):
        kind = st.get("kind")
        if kind not in ("filestore", "lustre") or not st.get("create"):
            continue
        gb = (st.get(kind) or {}).get("capacity_gb")
        price = table.storage(str(kind))
        if price.usd is not None:  # per GiB-month: a per-hour figure needs a sourced rule
            raise CatalogError(f"{price.fact.id}: a storage price per GiB-month cannot be "
                               "added per hour yet (no sourced hours-per-month rule)")
        out.append(_line(f"Slurm storage {st['id']} ({kind}, {gb} GB)", "storage", price,
                         region=region, zone=None, capacity=None, machine_type=None, vms=None,
                         chips=None, units=(float(gb or 0), float(gb or 0))))
    return out


def _rescale(line: Line, lo: int, hi: int) -> Line:
    """A node set with static and dynamic nodes: ``lo`` VMs always, up to ``hi``."""
    if line.vms_max in (None, 0):
        return line
    per = (line.units_max or 0) / (line.vms_max or 1)
    unit = line.unit_usd
    return _replace(line, vms_min=lo, vms_max=hi, units_min=lo * per, units_max=hi * per,
                    hourly_min=None if unit is None else round(unit * lo * per, 6),
                    hourly_max=None if unit is None else round(unit * hi * per, 6))
