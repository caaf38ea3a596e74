"""``cost --live`` against the Cloud Billing Catalog double (mldiag_provision/sandbox/
gcp_apis.py, ``services.list`` / ``services.skus.list`` in the documented JSON shape, read by
the official google-cloud-billing client over REST): a price that differs from the offline
table is shown beside it and counted; a row no SKU matches stays unknown with the reason; a
row the table does not know is priced live with its SKU as the source; no credentials is a
clear error; without --live nothing changes."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_support import run_cli
from mldiag_provision.sandbox.gcp_apis import FakeProject, GcpApis, billing_sku

pytest.importorskip("google.cloud.billing_v1")

ROOT = Path(__file__).resolve().parents[2]
V5E = ROOT / "recipes/tpu-v5e-private-standard.yaml"  # us-central1, 16 v5e chips on-demand
V6E_SPOT = ROOT / "recipes/tpu-v6e-4x4-multislice-standard-spot.yaml"  # us-east5
A3U = ROOT / "recipes/gpu-a3-ultra-standard.yaml"  # us-east5, a3-ultragpu-8g
CE = "6F81-5844-456A"


def _skus() -> list[dict[str, object]]:
    """A small catalog: SKUs the rule must match, and SKUs it must pass over (another
    region, another way to buy, a commitment)."""
    return [
        billing_sku(CE, "AAAA-0001", "TPU v5e chip running in Americas", 1.32,
                    regions=["us-central1", "us-east5"], group="TPU"),
        billing_sku(CE, "AAAA-0002", "Preemptible TPU v5e chip running in Americas", 0.5,
                    regions=["us-central1"], group="TPU", usage_type="Preemptible"),
        billing_sku(CE, "AAAA-0003", "TPU v5e chip running in Europe", 1.50,
                    regions=["europe-west4"], group="TPU"),
        billing_sku(CE, "AAAA-0004", "Commitment v1: TPU v5e chip in Americas for 1 year",
                    0.9, regions=["us-central1"], group="TPU", usage_type="Commit1Yr"),
        billing_sku(CE, "BBBB-0001", "Nvidia H200 141GB GPU running in Americas", 10.0,
                    regions=["us-east5"], group="GPU"),
        billing_sku(CE, "BBBB-0002", "A3 Ultra Instance Core running in Americas", 0.03,
                    regions=["us-east5"], group="CPU"),
        billing_sku(CE, "BBBB-0003", "A3 Ultra Instance Ram running in Americas", 0.004,
                    regions=["us-east5"], group="RAM", unit="GiBy.h"),
        billing_sku(CE, "CCCC-0001", "E2 Instance Core running in Americas", 0.02,
                    regions=["us-central1", "us-east5"], group="CPU"),
    ]


@pytest.fixture
def billing(monkeypatch: pytest.MonkeyPatch) -> Iterator[GcpApis]:
    project = FakeProject("my-ml-project")
    project.billing_skus[CE] = _skus()
    with GcpApis(project, token="standin-" + secrets.token_hex(6)) as apis:
        for key, value in apis.env().items():
            monkeypatch.setenv(key, value)
        yield apis


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    code, out, err = run_cli(capsys, ["cost", *argv, "-O", "json"])
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def _pool(doc: dict[str, object]) -> dict[str, object]:
    lines = doc["lines"]
    assert isinstance(lines, list)
    found: dict[str, object] = next(ln for ln in lines if ln["item"].startswith("node pool"))
    return found


def test_a_differing_live_price_is_shown_beside_the_offline_one(
        billing: GcpApis, capsys: pytest.CaptureFixture[str]) -> None:
    offline = _pool(_json(capsys, str(V5E)))
    assert offline["unit_usd"] == 1.2 and offline["live"] is None
    doc = _json(capsys, str(V5E), "--live")
    pool = _pool(doc)
    assert pool["unit_usd"] == pytest.approx(1.32)  # the live one is counted
    assert pool["source"] == f"https://cloudbilling.googleapis.com/v1/services/{CE}/skus/AAAA-0001"
    assert pool["confidence"] == "L"
    live = str(pool["live"])
    assert "live and offline differ" in live and "$1.32" in live and "$1.2 " in live
    assert "AAAA-0001" in live and "scaling-book" in live
    assert doc["total_usd_per_hour"] == pytest.approx(16 * 1.32 + 0.10)
    prices = doc["prices"]
    assert isinstance(prices, dict) and "Cloud Billing Catalog API: 8 SKUs" in prices["live"]
    # the catalog was asked through services.list, then services.skus.list of each service
    paths = [p for _, p in billing.requests]
    assert "/v1/services" in paths and f"/v1/services/{CE}/skus" in paths
    code, out, _ = run_cli(capsys, ["cost", str(V5E), "--live"])
    assert code == 0
    assert "live prices (Cloud Billing Catalog) against the offline table:" in out
    assert "live and offline differ: live $1.32 per chip-hour" in out
    assert "; live: Cloud Billing Catalog API: 8 SKUs of Compute Engine, Cloud TPU" in out
    code, out, _ = run_cli(capsys, ["cost", str(V5E), "--live", "-O", "markdown"])
    assert "Live prices (Cloud Billing Catalog) against the offline table" in out


def test_an_agreeing_live_price_says_so(billing: GcpApis,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    billing.project.billing_skus[CE][0] = billing_sku(
        CE, "AAAA-0001", "TPU v5e chip running in Americas", 1.20,
        regions=["us-central1"], group="TPU")
    pool = _pool(_json(capsys, str(V5E), "--live"))
    assert pool["unit_usd"] == 1.2 and pool["confidence"] == "M"  # the table's fact
    assert "the Billing Catalog agrees, $1.2 per chip-hour" in str(pool["live"])


def test_a_missing_sku_stays_unknown_with_the_reason(
        billing: GcpApis, capsys: pytest.CaptureFixture[str]) -> None:
    """v6e: no v6e SKU in the catalog -> the on-demand reference stays the offline
    'starting at' figure; spot stays unknown; the line says why live had nothing."""
    pool = _pool(_json(capsys, str(V6E_SPOT), "--live"))
    assert pool["status"] == "unknown" and pool["hourly_max"] is None
    assert "Spot prices are variable" in str(pool["reason"])
    assert "no OnDemand SKU in us-east5 matches TPU v6e chips" in str(pool["live"])


def test_a_row_the_table_does_not_know_is_priced_live_with_its_source(
        billing: GcpApis, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """a3-ultragpu-8g on-demand: unknown offline; live = 8 GPUs + 224 vCPU + 2952 GiB, each
    by its component SKU."""
    recipe = tmp_path / "a3u.yaml"
    text = A3U.read_text(encoding="utf-8")
    recipe.write_text(text.replace("type: reservation\n        reservation: "
                                   "a3-ultra-reservation", "type: on-demand"),
                      encoding="utf-8")
    offline = _pool(_json(capsys, str(recipe)))
    assert offline["status"] == "unknown" and offline["capacity"] == "on-demand"
    pool = _pool(_json(capsys, str(recipe), "--live"))
    assert pool["status"] == "priced"
    from mldiag_provision.catalog.store import store

    spec = store().doc("gpu")["gpus"]["h200-141gb"]["machineTypes"]["a3-ultragpu-8g"]
    want = 8 * 10.0 + spec["vcpu"] * 0.03 + spec["memoryGb"] * 0.004
    assert pool["unit_usd"] == pytest.approx(want)
    assert pool["source"].endswith("/skus/BBBB-0001")
    assert "the offline table has no figure" in str(pool["live"])
    assert "BBBB-0002" in str(pool["live"]) and "BBBB-0003" in str(pool["live"])


def test_a_row_unknown_offline_with_no_sku_stays_unknown_with_both_reasons(
        billing: GcpApis, capsys: pytest.CaptureFixture[str]) -> None:
    """TPU7x on demand (us-central1): no price in the table, no TPU7x SKU in the catalog ->
    unknown, never zero; the line keeps the table's reason and says what live found."""
    recipe = ROOT / "recipes/tpu7x-2x2x4-standard.yaml"
    doc = _json(capsys, str(recipe), "--live")
    pool = _pool(doc)
    assert pool["status"] == "unknown" and pool["hourly_max"] is None
    assert "no TPU7x (Ironwood) price found" in str(pool["reason"])
    assert "live: unknown (no OnDemand SKU in us-central1 matches TPU tpu7x chips" in \
        str(pool["live"])
    assert doc["lower_bound"] is True


def test_a_gpu_machine_missing_one_component_stays_unknown(
        billing: GcpApis, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """No RAM SKU for A3 Ultra (nor A3): the machine cannot be added up -> unknown."""
    billing.project.billing_skus[CE] = [
        s for s in billing.project.billing_skus[CE] if s["skuId"] != "BBBB-0003"]
    recipe = tmp_path / "a3u.yaml"
    recipe.write_text(A3U.read_text(encoding="utf-8").replace(
        "type: reservation\n        reservation: a3-ultra-reservation", "type: on-demand"),
        encoding="utf-8")
    pool = _pool(_json(capsys, str(recipe), "--live"))
    assert pool["status"] == "unknown" and pool["unit_usd"] is None
    assert "a3-ultragpu-8g is priced by component and its ram SKU is unknown" in \
        str(pool["live"])


def test_skus_with_different_prices_are_not_guessed(
        billing: GcpApis, capsys: pytest.CaptureFixture[str]) -> None:
    billing.project.billing_skus[CE].append(billing_sku(
        CE, "AAAA-0009", "TPU v5e chip (new) running in Americas", 1.40,
        regions=["us-central1"], group="TPU"))
    pool = _pool(_json(capsys, str(V5E), "--live"))
    assert pool["unit_usd"] == 1.2  # the offline figure stays
    assert "with different prices" in str(pool["live"]) and "not guessed" in str(pool["live"])


def test_paging_reads_every_page(billing: GcpApis, capsys: pytest.CaptureFixture[str]) -> None:
    """6000 SKUs: more than one page of the API's 5000; the v5e SKU is on the second."""
    filler = [billing_sku(CE, f"ZZZZ-{i:04d}", f"Unrelated SKU {i}", 0.01,
                          regions=["us-central1"]) for i in range(6000)]
    billing.project.billing_skus[CE] = filler + billing.project.billing_skus[CE]
    pool = _pool(_json(capsys, str(V5E), "--live"))
    assert pool["unit_usd"] == pytest.approx(1.32)


def test_no_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    for key in ("GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setattr("mldiag_provision.preflight.live._gce_residency", lambda: False)
    code, _, err = run_cli(capsys, ["cost", str(V5E), "--live"])
    assert code == 2
    assert "no Google Cloud credentials to read the Cloud Billing Catalog API" in err
    assert "leave out --live" in err


def test_a_refused_call_is_a_clear_error(billing: GcpApis,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    billing.project.denied.add("cloudbilling")
    code, _, err = run_cli(capsys, ["cost", str(V5E), "--live"])
    assert code == 2
    assert "the Cloud Billing Catalog API failed: Forbidden" in err
    assert "Permission denied on cloudbilling.googleapis.com" in err


def test_a_wrong_token_is_refused(billing: GcpApis, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "not-the-token")
    code, _, err = run_cli(capsys, ["cost", str(V5E), "--live"])
    assert code == 2 and "the Cloud Billing Catalog API failed: RefreshError" in err


def test_matching_rule_on_reduced_skus() -> None:
    """The rule without the wire: region, OnDemand, per hour and 'no other way to buy' filter;
    display names with punctuation ("NVIDIA GB200 (Grace Blackwell)") match word by word."""
    from mldiag_provision.cost.live import BillingCatalog, Sku

    def sku(sid: str, desc: str, usd: float, *, usage: str = "OnDemand",
            regions: tuple[str, ...] = ("us-central1",), unit: str = "h") -> Sku:
        return Sku(f"services/{CE}/skus/{sid}", sid, desc, "Compute", "", usage, regions,
                   unit, usd)

    cat = BillingCatalog([
        sku("1", "Nvidia GB200 Grace Blackwell GPU running in Americas", 9.0),
        sku("2", "Spot Preemptible Nvidia GB200 Grace Blackwell GPU in Americas", 3.0),
        sku("3", "TPU v5p chip running in Americas", 4.0),
        sku("4", "TPU v5p chip running in Americas", 4.0, usage="Commit1Yr"),
        sku("5", "TPU v5p chip running in Europe", 5.0, regions=("europe-west4",)),
        sku("6", "TPU v5p chip (per GiB) in Americas", 1.0, unit="GiBy.h")])
    q = cat.tpu_chip("v5p", "us-central1")
    assert q.usd == 4.0 and q.skus[0].sku_id == "3"
    assert cat.tpu_chip("v5p", "us-east5").usd is None
    gpu = cat._match("us-central1", "".join(rf"(?=.*\b{w}\b)" for w in
                                             ("GB200", "Grace", "Blackwell")) + r".*\bgpu\b",
                     "h", "GPU GB200")
    assert gpu.usd == 9.0
    assert cat.tpu_chip("v9", "us-central1").reason == "no SKU matching rule for TPU v9"
