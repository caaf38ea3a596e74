"""``cost --live``: prices from the Cloud Billing Catalog API, beside the offline table.

The catalog is read through the official client (``google-cloud-billing``,
:class:`google.cloud.billing_v1.CloudCatalogClient`, REST transport): ``services.list``
(https://cloud.google.com/billing/docs/reference/rest/v1/services/list) to find the services
named ``Compute Engine`` and ``Cloud TPU``, then ``services.skus.list``
(https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list) for their public
SKUs, in USD. Each SKU is reduced to :class:`Sku`: its description, category (resourceFamily,
resourceGroup, usageType), serviceRegions, usageUnit, and the unit price of its *latest*
pricingInfo's first tier (``startUsageAmount`` 0), ``units + nanos / 1e9`` US dollars.

Matching rule (confidence L: the SKU descriptions are not a documented contract; checked only
against the wire-level double in ``sandbox/gcp_apis.py``). A table row is priced from SKUs that
are all of: offered in the recipe's region (``serviceRegions``), ``usageType`` ``OnDemand``,
priced per hour (``usageUnit`` ``h``, or ``GiBy.h`` for memory), and whose description does
not name another way to buy (spot, preemptible, commitment, reservation, DWS/flex-start,
calendar, sole tenancy, custom, extended memory). Then, by row:

  * TPU chip (``tpu.yaml`` version, per chip-hour): the description says ``TPU`` and the
    version (v4, v5e or "v5 lite", v5p, v6e or "Trillium", 7x or "Ironwood");
  * GPU machine (``gpu.yaml`` machine type, per VM-hour): the sum of three components,
    ``gpus`` x the GPU SKU (the description says ``GPU`` and every word of the GPU's display
    name less "NVIDIA") + ``vcpu`` x the core SKU + ``memoryGb`` x the RAM SKU (descriptions
    that start with the family, e.g. "A3 Ultra", else the series, e.g. "A3", and say ``Core``
    or ``Ram``); ``memoryGb`` is taken as GiB, as Compute Engine's machine tables list it;
  * CPU machines are not priced live (their vCPU and memory counts are not in the catalog).

Exactly one price must come out of a match: no SKU, or SKUs with different prices, leave the
row unknown with the reason (never a guess). When live and offline differ, both are shown and
the live one is counted; when the table has no figure, the live one is used with its SKU as the
source; when they agree, the line says so.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mldiag_provision.cost.prices import Price, PriceTable

SERVICES = ("Compute Engine", "Cloud TPU")
"""Cloud Billing Catalog services (``displayName``) whose SKUs are read."""
API = "https://cloudbilling.googleapis.com/v1/"
AGREE_USD = 0.0005
"""Live and offline unit prices closer than this (US dollars) agree."""

_OTHER_WAYS = re.compile(r"preemptible|\bspot\b|commit|reserv|\bdws\b|flex|calendar|"
                         r"sole[ -]?tenan|custom|extended", re.I)
_TPU_VERSION = {"v4": r"\bv4\b", "v5e": r"\bv5e\b|\bv5 ?lite", "v5p": r"\bv5p\b",
                "v6e": r"\bv6e\b|trillium", "tpu7x": r"\b7x\b|ironwood"}


@dataclass(frozen=True)
class Sku:
    """One SKU of the catalog, reduced: ``usd`` per ``unit`` (None when it has no USD
    price)."""

    name: str  # services/{service}/skus/{sku}
    sku_id: str
    description: str
    family: str
    group: str
    usage_type: str
    regions: tuple[str, ...]
    unit: str
    usd: float | None

    @property
    def url(self) -> str:
        return API + self.name


@dataclass(frozen=True)
class Quote:
    """A live answer for one row: ``usd`` per the row's unit from ``skus`` (how it was
    added up in ``how``), or None and ``reason``."""

    usd: float | None
    skus: tuple[Sku, ...] = ()
    how: str = ""
    reason: str | None = None

    @property
    def source(self) -> str:
        return self.skus[0].url if self.skus else API


def _money(units: Any, nanos: Any) -> float:
    return int(units or 0) + int(nanos or 0) / 1e9


def sku_of(raw: Any) -> Sku:
    """A client ``Sku`` message -> :class:`Sku` (latest pricingInfo, first tier)."""
    usd: float | None = None
    unit = ""
    infos = list(raw.pricing_info)
    if infos:
        expr = infos[-1].pricing_expression
        unit = str(expr.usage_unit)
        tiers = sorted(expr.tiered_rates, key=lambda t: float(t.start_usage_amount))
        if tiers and (tiers[0].unit_price.currency_code or "USD") == "USD":
            usd = _money(tiers[0].unit_price.units, tiers[0].unit_price.nanos)
    cat = raw.category
    return Sku(name=str(raw.name), sku_id=str(raw.sku_id), description=str(raw.description),
               family=str(cat.resource_family), group=str(cat.resource_group),
               usage_type=str(cat.usage_type), regions=tuple(raw.service_regions), unit=unit,
               usd=usd)


class BillingCatalog:
    """The SKUs read from the Cloud Billing Catalog, and the row matching above."""

    def __init__(self, skus: Iterable[Sku], services: Iterable[str] = SERVICES,
                 read: str | None = None) -> None:
        self.skus = tuple(skus)
        self.services = tuple(services)
        self.read = read or dt.datetime.now(dt.UTC).date().isoformat()

    @classmethod
    def fetch(cls, creds: Any, *, endpoint: str | None = None,
              timeout_s: float = 30.0) -> BillingCatalog:
        """Read the SKUs of :data:`SERVICES` (USD), every page.

        Args:
          creds: google-auth credentials.
          endpoint: base URL replacing ``cloudbilling.googleapis.com`` (the tests' stand-in).
          timeout_s: bound of each call, seconds.

        Raises:
          ImportError: ``google-cloud-billing`` (the ``live`` extra) is not installed.
          google.api_core.exceptions.GoogleAPICallError: the API refused or failed.
          LookupError: none of :data:`SERVICES` is in the catalog.
        """
        from google.api_core.client_options import ClientOptions
        from google.cloud import billing_v1

        client = billing_v1.CloudCatalogClient(
            transport="rest", credentials=creds,
            client_options=ClientOptions(api_endpoint=endpoint) if endpoint else None)
        services = [s for s in client.list_services(retry=None, timeout=timeout_s)
                    if s.display_name in SERVICES]
        if not services:
            raise LookupError(f"the Cloud Billing Catalog lists none of {', '.join(SERVICES)}")
        skus: list[Sku] = []
        for svc in services:
            request = billing_v1.ListSkusRequest(parent=svc.name, currency_code="USD")
            skus += [sku_of(raw) for raw in client.list_skus(request=request, retry=None,
                                                              timeout=timeout_s)]
        return cls(skus, [s.display_name for s in services])

    def describe(self) -> str:
        """``Cloud Billing Catalog API: 123 SKUs of Compute Engine, Cloud TPU, read DATE``."""
        n = len(self.skus)
        return (f"Cloud Billing Catalog API: {n} SKU{'' if n == 1 else 's'} of "
                f"{', '.join(self.services)}, read {self.read}")

    def _match(self, region: str, pattern: str, unit: str, what: str) -> Quote:
        rx = re.compile(pattern, re.I)
        found = [s for s in self.skus
                 if region in s.regions and s.usage_type == "OnDemand" and s.unit == unit
                 and s.usd is not None and not _OTHER_WAYS.search(s.description)
                 and rx.search(s.description)]
        if not found:
            return Quote(None, reason=f"no OnDemand SKU in {region} matches {what} "
                                      f"(/{pattern}/, per {unit}) among {len(self.skus)} SKUs")
        prices = {s.usd for s in found}
        if len(prices) > 1:
            listed = "; ".join(f"{s.sku_id} {s.description!r} ${s.usd:g}" for s in found[:4])
            return Quote(None, reason=f"{len(found)} SKUs in {region} match {what} with "
                                      f"different prices ({listed}): not guessed")
        best = sorted(found, key=lambda s: s.sku_id)[0]
        return Quote(best.usd, (best,), how=f"SKU {best.sku_id} {best.description!r}")

    def tpu_chip(self, version: str, region: str) -> Quote:
        """Per chip-hour of TPU ``version`` (a tpu.yaml key) in ``region``."""
        token = _TPU_VERSION.get(version)
        if token is None:
            return Quote(None, reason=f"no SKU matching rule for TPU {version}")
        return self._match(region, rf"\btpu\b.*(?:{token})|(?:{token}).*\btpu\b", "h",
                           f"TPU {version} chips")

    def gpu_machine(self, machine_type: str, spec: Mapping[str, Any], gpu_name: str,
                    region: str) -> Quote:
        """Per VM-hour of GPU machine ``machine_type`` (``spec``: its gpu.yaml entry, with
        gpus, vcpu, memoryGb, family; ``gpu_name``: the GPU's displayName)."""
        words = [w for w in re.findall(r"[A-Za-z0-9]+", gpu_name) if w.lower() != "nvidia"]
        gpu = self._match(region, "".join(rf"(?=.*\b{w}\b)" for w in words)
                          + r".*\bgpu\b", "h", f"GPU {gpu_name}")
        if gpu.usd is None:
            return gpu
        family = str(spec.get("family") or machine_type.split("-")[0].upper())
        series = machine_type.split("-")[0]
        parts: list[tuple[str, float, Quote]] = [("GPU", float(spec["gpus"]), gpu)]
        for what, unit, count in (("core", "h", spec.get("vcpu")),
                                  ("ram", "GiBy.h", spec.get("memoryGb"))):
            if not count:
                return Quote(None, reason=f"{machine_type}: no {what} count in gpu.yaml")
            q = self._match(region, rf"^{re.escape(family)}\b.*\b{what}\b", unit,
                            f"{family} {what}")
            if q.usd is None and family.lower() != series:
                q = self._match(region, rf"^{re.escape(series)}\b.*\b{what}\b", unit,
                                f"{series.upper()} {what}")
            if q.usd is None:
                return Quote(None, reason=f"{machine_type} is priced by component and its "
                                          f"{what} SKU is unknown: {q.reason}")
            parts.append((what, float(count), q))
        total = round(sum(n * (q.usd or 0.0) for _, n, q in parts), 6)
        how = " + ".join(f"{n:g} x ${q.usd:g} ({q.skus[0].sku_id})" for _, n, q in parts)
        return Quote(total, tuple(q.skus[0] for _, _, q in parts), how=how)


class LivePriceTable(PriceTable):
    """The offline table, with each TPU chip and GPU machine row checked against (and, when
    they differ or the table has no figure, priced from) a :class:`BillingCatalog`."""

    def __init__(self, catalog: BillingCatalog, **kw: Any) -> None:
        super().__init__(**kw)
        self.catalog = catalog

    def _on_demand_tpu(self, version: str, region: str, base: Price) -> Price:
        return merge(base, self.catalog.tpu_chip(version, region), self.catalog.read)

    def _on_demand_machine(self, machine_type: str, region: str, base: Price, *,
                           gpu: bool) -> Price:
        if not gpu:
            return replace(base, live_note="live: CPU machines are not priced from the "
                                           "Billing Catalog (vCPU and memory counts are "
                                           "not in the catalog)")
        for g in self.facts.doc("gpu")["gpus"].values():
            spec = g.get("machineTypes", {}).get(machine_type)
            if spec is not None:
                quote = self.catalog.gpu_machine(machine_type, spec,
                                                 str(g.get("displayName", "")), region)
                return merge(base, quote, self.catalog.read)
        return replace(base, live_note=f"live: {machine_type} is not in gpu.yaml")


def merge(offline: Price, quote: Quote, read: str) -> Price:
    """The on-demand answer from ``offline`` (the table) and ``quote`` (the catalog): see
    the module's rule. Units must match (the caller's row)."""
    if quote.usd is None:
        return replace(offline, live_note=f"live: unknown ({quote.reason})")
    live = round(quote.usd, 6)
    from_live = replace(offline, usd=live, floor=False, unknown=None, live_source=quote.source,
                        live_read=read)
    if offline.usd is None:
        if offline.reserved is not None:
            return offline
        return replace(from_live, live_note=(
            f"live: ${live:g} per {offline.unit} from the Billing Catalog ({quote.how}); the "
            f"offline table has no figure ({offline.unknown})"))
    if abs(live - offline.usd) < AGREE_USD:
        return replace(offline, live_note=f"live: the Billing Catalog agrees, ${live:g} per "
                                          f"{offline.unit} ({quote.how})")
    return replace(from_live, live_note=(
        f"live and offline differ: live ${live:g} per {offline.unit} ({quote.how}) vs "
        f"offline {'starting at ' if offline.floor else ''}${offline.usd:g} "
        f"({offline.fact.url}); the live price is counted"))
