"""``mldiag-provision cost RECIPE``: every example recipe gets a total per hour with each
line's source and the table's date; unknown prices are shown as unknown, never as zero;
``--output json`` carries the total as a number; validate never loads the price table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import run_cli

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").glob("*.yaml"))


def test_the_examples_are_there() -> None:
    assert len(RECIPES) >= 15


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_every_example_prints_a_total_with_sources(capsys: pytest.CaptureFixture[str],
                                                  recipe: Path) -> None:
    code, out, err = run_cli(capsys, ["cost", str(recipe)])
    assert code == 0, err
    assert "\ntotal: $" in out
    assert "prices: catalog/data/prices.yaml, read 2026-12-02" in out
    code, out, err = run_cli(capsys, ["cost", str(recipe), "-O", "json"])
    assert code == 0, err
    doc = json.loads(out)
    assert isinstance(doc["total_usd_per_hour"], float | int)
    assert not isinstance(doc["total_usd_per_hour"], bool)
    assert doc["currency"] == "USD" and doc["prices"]["date"] == "2026-12-02"
    assert isinstance(doc["prices"]["age_days"], int)
    assert doc["lines"], "no line"
    for line in doc["lines"]:
        assert line["source"].startswith("https://"), line
        assert line["confidence"] in ("H", "M", "L")
        if line["status"] in ("unknown", "reserved", "existing"):
            # never a zero standing in for an unknown price
            assert line["hourly_max"] is None or line["status"] == "existing", line
            assert line["reason"], line
    if any(ln["status"] == "unknown" for ln in doc["lines"]):
        assert doc["lower_bound"] is True
    code, out, err = run_cli(capsys, ["cost", str(recipe), "-O", "markdown"])
    assert code == 0, err
    assert out.startswith("### Cost per hour:") and "**Total:** $" in out


def test_text_shows_unknown_and_the_lower_bound(capsys: pytest.CaptureFixture[str]) -> None:
    recipe = ROOT / "recipes/tpu-v6e-4x4-multislice-standard-spot.yaml"
    code, out, _ = run_cli(capsys, ["cost", str(recipe)])
    assert code == 0
    pool = next(ln for ln in out.splitlines() if ln.startswith("node pool trillium-0"))
    assert "unknown" in pool and "$0.00" not in pool
    assert "spot" in pool and "4 VMs, 16 chips" in pool
    assert "lower bound: 3 lines unknown" in out
    assert "Spot prices are variable" in out


def test_a_priced_stack_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    """v5e on-demand, 16 chips at $1.20 (scaling book, M) + the $0.10 GKE fee (H)."""
    recipe = ROOT / "recipes/tpu-v5e-private-standard.yaml"
    code, out, _ = run_cli(capsys, ["cost", str(recipe), "-O", "json"])
    assert code == 0
    doc = json.loads(out)
    assert doc["total_usd_per_hour"] == pytest.approx(16 * 1.20 + 0.10)
    pool = next(ln for ln in doc["lines"] if ln["item"].startswith("node pool"))
    assert pool["chips"] == 16 and pool["vms_max"] == 4 and pool["unit_usd"] == 1.2
    assert pool["source"].endswith("scaling-book/blob/main/inference.md")


def test_queued_pools_scale_from_zero(capsys: pytest.CaptureFixture[str]) -> None:
    recipe = ROOT / "recipes/tpu-v6e-4x4-queued-standard.yaml"
    _, out, _ = run_cli(capsys, ["cost", str(recipe), "-O", "json"])
    pools = [ln for ln in json.loads(out)["lines"] if ln["item"].startswith("node pool")]
    assert [(p["vms_min"], p["vms_max"], p["capacity"]) for p in pools] == \
        [(0, 4, "queued"), (0, 4, "queued")]


def test_reservations_are_already_paid(capsys: pytest.CaptureFixture[str]) -> None:
    recipe = ROOT / "recipes/tpu-v5p-2x2x4-standard-reservation.yaml"
    _, out, _ = run_cli(capsys, ["cost", str(recipe)])
    pool = next(ln for ln in out.splitlines() if ln.startswith("node pool v5p-16"))
    assert "reserved" in pool
    assert "paid for by the reservation" in out


def test_an_invalid_recipe_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = (ROOT / "recipes/tpu-v5e-private-standard.yaml").read_text(encoding="utf-8")
    bad.write_text(text.replace("topology: 4x4", "topology: 3x3"), encoding="utf-8")
    code, _, err = run_cli(capsys, ["cost", str(bad)])
    assert code == 1
    assert "cost needs a valid recipe" in err


def test_validate_does_not_load_the_price_table() -> None:
    """validate's cold start is unchanged (issue 29): no cost module, no prices.yaml."""
    code = ("import sys\nfrom mldiag_provision.cli.app import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "from mldiag_provision.catalog.store import store\n"
            "sys.stdout.flush()\n"
            "print('\\nLOADED', ' '.join(m for m in sys.modules if m.startswith("
            "'mldiag_provision.cost')), '|', ' '.join(sorted(store()._docs)))")
    recipe = ROOT / "recipes/tpu-v6e-4x4-multislice-standard-spot.yaml"
    out = subprocess.run([sys.executable, "-c", code, "validate", str(recipe)],
                         capture_output=True, text=True, cwd=ROOT, check=False).stdout
    modules, _, docs = out.rsplit("LOADED", 1)[1].partition("|")
    assert "tpu" in docs.split(), out  # validate ran and read the TPU catalog
    assert modules.split() == [], modules
    assert "prices" not in docs.split(), docs
