"""The offline price table (``catalog/data/prices.yaml``) as typed look-ups.

Every answer is a :class:`Price`: a figure in US dollars with the fact it comes from (source,
confidence, the date it was read, the region rule), or no figure and the reason (``unknown``),
or the note that the capacity is already paid for (``reserved``). Nothing is ever guessed and
nothing unknown is ever zero.

Units: TPU chips per chip-hour, machines per VM-hour, the GKE fee per cluster-hour, storage
per GiB-month (all unknown today).

Raises (every look-up): :class:`~mldiag_provision.errors.CatalogError` when the table is
malformed (an entry with neither a figure nor ``unknown``/``reserved``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from mldiag_provision.catalog.store import Fact, FactStore, store
from mldiag_provision.errors import CatalogError

TABLE = "prices"
PRICED_CAPACITY = "on-demand"
"""The one capacity type the table holds figures for; the others are rules in
``prices.yaml`` ``capacity`` (spot, flex-start, queued: unknown; reservation: already paid)."""


@dataclass(frozen=True)
class Price:
    """One answer of the table.

    ``usd``: US dollars per ``unit`` (None when unknown or reserved). ``floor``: the source
    gives a "starting at" price, so what it prices is a lower bound. ``on_demand_usd``: for a
    spot/flex-start/queued/reservation answer, the on-demand figure where known (shown for
    reference, never added; with ``floor`` it is a "starting at" figure).
    """

    usd: float | None
    unit: str
    fact: Fact
    unknown: str | None = None
    reserved: str | None = None
    floor: bool = False
    on_demand_usd: float | None = None
    live_note: str | None = None
    """``cost --live``: what the Cloud Billing Catalog said of this row (agrees, differs,
    unknown and why); None offline."""
    live_source: str | None = None
    """The SKU the figure comes from when the live price is the one counted."""
    live_read: str | None = None

    @property
    def status(self) -> str:
        """``priced``, ``lower-bound`` (a floor price), ``unknown`` or ``reserved``."""
        if self.reserved is not None:
            return "reserved"
        if self.usd is None:
            return "unknown"
        return "lower-bound" if self.floor else "priced"

    @property
    def source(self) -> str:
        return self.live_source or self.fact.url

    @property
    def confidence(self) -> str:
        """The fact's; ``L`` for a live figure (the SKU matching rule is unverified)."""
        return "L" if self.live_source else self.fact.confidence

    @property
    def read(self) -> str | None:
        if self.live_source:
            return self.live_read
        value = self.fact.data.get("read")
        return str(value) if value is not None else None

    @property
    def region_basis(self) -> str | None:
        if self.live_source:  # a SKU offered in the line's region
            return None
        value = self.fact.data.get("regionBasis")
        return str(value) if value is not None else None


def _covers(fact: Fact, region: str) -> bool:
    regions = fact.data.get("regions", "*")
    return regions == "*" or (isinstance(regions, list) and region in regions)


class PriceTable:
    """Look-ups over ``prices.yaml`` (the fact store's ``prices`` file)."""

    def __init__(self, facts: FactStore | None = None) -> None:
        self.facts = facts or store()
        self.doc = self.facts.doc(TABLE)

    @property
    def date(self) -> str:
        """When the table was read (ISO date)."""
        return str(self.doc["date"])

    def age_days(self, today: dt.date | None = None) -> int:
        """Days since :attr:`date` (today: the UTC date now)."""
        now = today or dt.datetime.now(dt.UTC).date()
        return (now - dt.date.fromisoformat(self.date)).days

    def _price(self, fact: Fact, key: str, unit: str, region: str) -> Price:
        if "unknown" in fact.data:
            return Price(None, unit, fact, unknown=str(fact["unknown"]))
        if "reserved" in fact.data:
            return Price(None, unit, fact, reserved=str(fact["reserved"]))
        if key not in fact.data:
            raise CatalogError(f"price fact {fact.id} has neither {key} nor unknown/reserved")
        if not _covers(fact, region):
            return Price(None, unit, fact,
                         unknown=f"the figure of {fact.id} holds for "
                                 f"{', '.join(fact.data.get('regions') or [])}, not {region}")
        return Price(float(fact[key]), unit, fact, floor=bool(fact.data.get("floor", False)))

    def _with_capacity(self, base: Price, capacity: str, kind: str) -> Price:
        """``base`` (the on-demand answer) under ``capacity``: on-demand as is; the others
        by the table's ``capacity`` rule, with the on-demand figure kept for reference.
        ``kind`` (``tpu``, ``vm``): a rule of that kind (``capacity/<type>-<kind>``, e.g.
        TPU reservations, billed unlike VM ones) before the general one."""
        if capacity == PRICED_CAPACITY:
            return base
        rules = self.doc["capacity"]
        key = f"{capacity}-{kind}" if f"{capacity}-{kind}" in rules else capacity
        try:
            rule = self.facts.fact(TABLE, "capacity", key)
        except CatalogError:
            raise CatalogError(f"prices.yaml has no rule for capacity type {capacity!r}") from None
        answer = self._price(rule, "usdPerHour", base.unit, "*")
        return Price(None, base.unit, rule, unknown=answer.unknown, reserved=answer.reserved,
                     on_demand_usd=base.usd, floor=base.floor, live_note=base.live_note)

    def _on_demand_tpu(self, version: str, region: str, base: Price) -> Price:
        """Hook of :class:`~mldiag_provision.cost.live.LivePriceTable`: offline, ``base``."""
        return base

    def _on_demand_machine(self, machine_type: str, region: str, base: Price, *,
                           gpu: bool) -> Price:
        """Hook of :class:`~mldiag_provision.cost.live.LivePriceTable`: offline, ``base``."""
        return base

    def cluster_fee(self, orchestrator: str, region: str) -> Price | None:
        """The GKE cluster management fee per cluster-hour; None when the orchestrator pays
        none (a Slurm or existing cluster)."""
        fact = self.facts.fact(TABLE, "gke", "clusterFee")
        if orchestrator not in fact["orchestrators"]:
            return None
        return self._price(fact, "usdPerHour", "cluster-hour", region)

    def autopilot(self, what: str) -> Price:
        """``autopilotPods`` or ``autopilotAccelerators``: what Autopilot adds (unknown)."""
        return self._price(self.facts.fact(TABLE, "gke", what), "usdPerHour", "hour", "*")

    def tpu_chip(self, version: str, region: str, capacity: str) -> Price:
        """Price per chip-hour of TPU ``version`` (a tpu.yaml key) in ``region``."""
        try:
            fact = self.facts.fact(TABLE, "tpu", version, "onDemand")
        except CatalogError:
            raise CatalogError(f"prices.yaml has no entry for TPU {version!r}",
                               ) from None
        base = self._price(fact, "usdPerChipHour", "chip-hour", region)
        return self._with_capacity(self._on_demand_tpu(version, region, base), capacity, "tpu")

    def machine(self, machine_type: str, region: str, capacity: str, *, gpu: bool) -> Price:
        """Price per VM-hour of ``machine_type``: a GPU machine (gpu.yaml; every one has an
        entry) or a CPU one (``cpuMachines``, else its ``default``)."""
        group = "gpuMachines" if gpu else "cpuMachines"
        table = self.doc[group]
        key = machine_type if machine_type in table or gpu else "default"
        try:
            fact = self.facts.fact(TABLE, group, key, "onDemand")
        except CatalogError:
            raise CatalogError(f"prices.yaml has no entry for GPU machine type "
                               f"{machine_type!r}") from None
        base = self._price(fact, "usdPerHour", "VM-hour", region)
        return self._with_capacity(self._on_demand_machine(machine_type, region, base, gpu=gpu),
                                   capacity, "vm")

    def storage(self, kind: str) -> Price:
        """``filestore`` or ``lustre``: per GiB-month (unknown today)."""
        return self._price(self.facts.fact(TABLE, "storage", kind), "usdPerGibMonth",
                           "GiB-month", "*")
