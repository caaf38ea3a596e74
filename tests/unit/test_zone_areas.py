"""TPU zone lists read for some areas only (found by the fresh-user review of issue 25).

The TPU regions-zones page was read for North America (and, for v6e, one Europe zone): a zone
elsewhere is unknown to the catalog, not a zone without the TPU (Cloud TPU offers v5e in
europe-west4-b and v6e in asia-northeast1-b: https://cloud.google.com/tpu/docs/regions-zones).
An unknown region is reported once, by gcp-region.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from mldiag_provision import pipeline

ROOT = Path(__file__).resolve().parents[2]


def _check(region: str, zone: str, tpu: str = "v5e", topology: str = "4x4") -> list:
    data = yaml.safe_load((ROOT / "recipes" / "tpu-v5e-private-standard.yaml").read_text())
    data["spec"]["region"], data["spec"]["zone"] = region, zone
    data["spec"]["slices"][0].update(tpu=tpu, topology=topology)
    text = yaml.safe_dump(data, sort_keys=False)
    return pipeline.check_text(text, "r.yaml").report.problems


def test_a_zone_outside_the_areas_read_is_not_judged() -> None:
    assert [p for p in _check("europe-west4", "europe-west4-b") if p.rule == "tpu-zone"] == []
    assert [p for p in _check("asia-northeast1", "asia-northeast1-b", "v6e")
            if p.rule == "tpu-zone"] == []


def test_a_zone_inside_the_areas_read_still_is() -> None:
    [p] = [p for p in _check("us-east1", "us-east1-b") if p.rule == "tpu-zone"]
    assert p.path == "spec.zone" and "us-east1-b" in p.message


def test_an_unknown_region_is_reported_once() -> None:
    found = _check("mars-north1", "us-central1-a")
    assert [p.rule for p in found if p.path in ("spec.region", "spec.zone")] == ["gcp-region"]
