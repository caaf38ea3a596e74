"""The offline price table (catalog/data/prices.yaml): dated, sourced, complete for every
machine type the catalog has in every region the catalog allows it, and never a zero."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
import yaml

from mldiag_provision.catalog.places import places
from mldiag_provision.catalog.store import DATA_DIR, FactStore, store
from mldiag_provision.cost.prices import PriceTable
from mldiag_provision.errors import CatalogError

CAPACITIES = ("on-demand", "spot", "flex-start", "queued", "reservation")
ROOT = Path(__file__).resolve().parents[2]


def _tpu_regions() -> dict[str, set[str]]:
    """TPU version -> the regions of the zones tpu.yaml allows it in."""
    out: dict[str, set[str]] = {}
    p = places()
    for version, data in store().doc("tpu")["versions"].items():
        zones = list(data["zones"]["values"]) + list(data["zones"].get("aiZones", []))
        out[version] = {p.zone_region(z) or z.rsplit("-", 1)[0] for z in zones}
    return out


def _gpu_machines() -> list[str]:
    return [mt for g in store().doc("gpu")["gpus"].values() for mt in g["machineTypes"]]


def test_table_is_dated_and_every_price_fact_is_sourced() -> None:
    table = PriceTable()
    assert dt.date.fromisoformat(table.date) <= dt.datetime.now(dt.UTC).date()
    assert table.age_days() >= 0
    facts = [f for fid, f in store().all_facts().items() if fid.startswith("prices.")]
    assert len(facts) > 40
    for f in facts:
        assert f.url.startswith("https://"), f.id
        assert f.data.get("read"), f"{f.id}: no read date"
        answers = [k for k in ("usdPerHour", "usdPerChipHour", "unknown", "reserved")
                   if k in f.data]
        assert len(answers) == 1, f"{f.id}: exactly one of a figure, unknown, reserved"
        for key in ("usdPerHour", "usdPerChipHour"):
            if key in f.data:
                assert isinstance(f[key], float | int) and f[key] > 0, f.id
                assert f.data.get("regions"), f"{f.id}: a figure names the regions it holds for"
                assert f.confidence in ("H", "M"), f"{f.id}: a figure is at least M"
        if "unknown" in f.data:
            assert len(str(f["unknown"])) > 20, f"{f.id}: unknown needs a reason"


def test_every_tpu_in_every_allowed_region_has_an_answer() -> None:
    table = PriceTable()
    regions = _tpu_regions()
    assert set(regions) == set(store().doc("prices")["tpu"]), "a TPU version without a price entry"
    for version, where in regions.items():
        for region in sorted(where):
            for capacity in CAPACITIES:
                price = table.tpu_chip(version, region, capacity)
                assert (price.usd is not None and price.usd > 0) or price.unknown or \
                    price.reserved, (version, region, capacity)


def test_every_gpu_machine_type_in_every_region_has_an_answer() -> None:
    table = PriceTable()
    machines = _gpu_machines()
    assert set(machines) == set(store().doc("prices")["gpuMachines"]), \
        "gpu.yaml and prices.yaml gpuMachines list different machine types"
    for mt in machines:
        for region in places().region_names():
            price = table.machine(mt, region, "on-demand", gpu=True)
            assert (price.usd or 0) > 0 or price.unknown, (mt, region)


def _recipe_cpu_machines() -> set[str]:
    """CPU machine types the tool creates: recipe model defaults and the example recipes'."""
    found = {"e2-standard-4", "n2-standard-4"}  # system pool and login node defaults
    for path in sorted((ROOT / "recipes").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = doc["spec"]
        if spec["orchestrator"].get("systemPoolMachineType"):
            found.add(spec["orchestrator"]["systemPoolMachineType"])
        slurm = spec.get("slurm") or {}
        if (slurm.get("loginNodes") or {}).get("machineType"):
            found.add(slurm["loginNodes"]["machineType"])
        for ns in slurm.get("nodeSets", []):
            if ns.get("machineType"):
                found.add(ns["machineType"])
    return found


def test_every_cpu_machine_the_examples_create_has_its_own_entry() -> None:
    listed = set(store().doc("prices")["cpuMachines"]) - {"default"}
    missing = _recipe_cpu_machines() - listed
    assert not missing, f"CPU machine types without a price entry: {sorted(missing)}"


def test_capacity_rules_spot_unknown_reservation_already_paid() -> None:
    table = PriceTable()
    on_demand = table.tpu_chip("v5e", "us-central1", "on-demand")
    assert on_demand.usd == pytest.approx(1.20) and on_demand.status == "priced"
    spot = table.tpu_chip("v5e", "us-central1", "spot")
    assert spot.usd is None and "variable" in (spot.unknown or "")
    assert spot.on_demand_usd == pytest.approx(1.20)
    assert spot.source == "https://cloud.google.com/spot-vms/pricing"
    reserved = table.tpu_chip("v5p", "us-east5", "reservation")
    assert reserved.status == "reserved" and reserved.usd is None
    v6e = table.tpu_chip("v6e", "us-east5", "on-demand")
    assert v6e.status == "lower-bound" and v6e.floor  # a "starting at" price
    fee = table.cluster_fee("gke-standard", "us-central1")
    assert fee is not None and fee.usd == pytest.approx(0.10) and fee.fact.confidence == "H"
    assert table.cluster_fee("slurm", "us-east5") is None
    assert table.cluster_fee("existing-kubernetes", "us-central1") is None


def test_capacity_rules_of_a_kind_speak_of_that_kind() -> None:
    """A reservation, flex-start or queued line cites what holds for its kind: TPU
    reservations need a committed use discount (the TPU consumption page), a VM reservation
    is billed while it exists (the Compute Engine reservations page); queued TPUs are priced
    on the TPU page, queued GPU machines on the GPU page (fresh-user review: a GPU
    reservation cited the TPU rule, queued TPUs the GPU page)."""
    table = PriceTable()
    tpu = table.tpu_chip("v5p", "us-east5", "reservation")
    vm = table.machine("a3-ultragpu-8g", "europe-west1", "reservation", gpu=True)
    assert tpu.status == vm.status == "reserved"
    assert "committed use discount" in (tpu.reserved or "") and "tpu/docs" in tpu.source
    assert "TPU" not in (vm.reserved or "") and "reservations-overview" in vm.source
    for capacity in ("queued", "flex-start"):
        chips = table.tpu_chip("v6e", "us-east5", capacity)
        gpus = table.machine("a3-ultragpu-8g", "europe-west1", capacity, gpu=True)
        assert chips.source == "https://cloud.google.com/tpu/pricing", capacity
        assert gpus.source == "https://cloud.google.com/compute/gpus-pricing", capacity
        assert chips.usd is None and gpus.usd is None  # no figure stored: unknown


def _copy_store(tmp_path: Path, edit) -> FactStore:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    doc = yaml.safe_load((data / "prices.yaml").read_text(encoding="utf-8"))
    edit(doc)
    (data / "prices.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return FactStore(data)


def test_a_missing_gpu_entry_is_refused_not_priced_as_zero(tmp_path: Path) -> None:
    facts = _copy_store(tmp_path, lambda d: d["gpuMachines"].pop("a3-megagpu-8g"))
    with pytest.raises(CatalogError, match="a3-megagpu-8g"):
        PriceTable(facts).machine("a3-megagpu-8g", "us-central1", "on-demand", gpu=True)


def test_a_missing_tpu_entry_is_refused(tmp_path: Path) -> None:
    facts = _copy_store(tmp_path, lambda d: d["tpu"].pop("v6e"))
    with pytest.raises(CatalogError, match="v6e"):
        PriceTable(facts).tpu_chip("v6e", "us-east5", "on-demand")


def test_an_entry_with_neither_figure_nor_reason_is_refused(tmp_path: Path) -> None:
    def strip(d: dict) -> None:  # type: ignore[type-arg]
        d["tpu"]["v5e"]["onDemand"].pop("usdPerChipHour")

    facts = _copy_store(tmp_path, strip)
    with pytest.raises(CatalogError, match="neither"):
        PriceTable(facts).tpu_chip("v5e", "us-central1", "on-demand")


def test_a_figure_outside_its_regions_is_unknown_not_reused(tmp_path: Path) -> None:
    def pin(d: dict) -> None:  # type: ignore[type-arg]
        d["tpu"]["v5e"]["onDemand"]["regions"] = ["us-central1"]

    table = PriceTable(_copy_store(tmp_path, pin))
    assert table.tpu_chip("v5e", "us-central1", "on-demand").usd == pytest.approx(1.20)
    other = table.tpu_chip("v5e", "us-west4", "on-demand")
    assert other.usd is None and "us-west4" in (other.unknown or "")
