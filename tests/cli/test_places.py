"""Impossible places and sizes fail `validate` (issue 25, "Facts for places and limits").

Each case is one public source's fact, checked through the command line: the rule id, the
field path, the exit code and the figure the source gives.

- Compute Engine regions and zones (CE-REGIONS): ``region: mars-north1`` and an unknown zone
  of a real region exit 1; a GPU series the zone's row does not list is a finding naming it;
- TPU regions and zones (CTPU-REGIONS): a tpu7x slice in a zone the page does not list for
  TPU7x is a finding naming the zone (a warning while that list is M);
- GKE large clusters / quotas (GKE-LARGE-CLUSTERS, GKE-QUOTAS): 64 x v5p ``16x16x24``
  (98,304 VMs) exits 1 naming GKE's 65,000-node limit;
- the ML Diagnostics SDK README's JAX table (SDK-README): ``jaxVersion: 0.3.0`` is in no row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stack_support import RECIPES

BASE = """\
apiVersion: mldiag-provision/v1alpha1
kind: Recipe
metadata: {{name: places}}
spec:
  project: my-ml-project
  region: {region}
  zone: {zone}
  orchestrator: {{type: gke-standard}}
  slices:
    - {slice}
  diagnostics:
    logAnalytics: {{enabled: true, retentionDays: 30}}
{extra}"""


def _recipe(tmp_path: Path, *, region: str = "us-east5", zone: str = "us-east5-a",
            slice_: str = "{name: s, tpu: v5p, topology: 2x2x2}", extra: str = "") -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(BASE.format(region=region, zone=zone, slice=slice_, extra=extra))
    return path


def _validate(cli, path: Path, *flags: str) -> tuple[int, list[dict]]:
    code, out, err = cli("validate", "-O", "json", *flags, str(path))
    assert err == "" and "Traceback" not in out, out + err
    doc = json.loads(out)
    return code, [p for f in doc["files"] for p in f["problems"]]


def _one(problems: list[dict], rule: str) -> dict:
    found = [p for p in problems if p["rule"] == rule]
    assert len(found) == 1, problems
    return found[0]


# -- Compute Engine regions and zones (https://cloud.google.com/compute/docs/regions-zones) --

def test_unknown_region_mars_north1_exits_1_naming_spec_region(cli, tmp_path: Path) -> None:
    code, problems = _validate(cli, _recipe(tmp_path, region="mars-north1",
                                            zone="mars-north1-a"))
    assert code == 1
    p = _one(problems, "gcp-region")
    assert p["severity"] == "error" and p["path"] == "spec.region"
    assert p["value"] == "mars-north1" and p["line"] == 6
    assert "us-central1" in p["expected"] and "europe-west4" in p["expected"]
    assert p["source"] == "https://cloud.google.com/compute/docs/regions-zones"
    # the one report of that value: no workload-monitoring or TPU-zone consequences
    assert [q["rule"] for q in problems] == ["gcp-region"], problems


def test_region_typo_gets_did_you_mean(cli, tmp_path: Path) -> None:
    code, problems = _validate(cli, _recipe(tmp_path, region="us-centrall1",
                                            zone="us-central1-a"))
    assert code == 1
    p = _one(problems, "gcp-region")
    assert p["path"] == "spec.region"
    assert p["hint"].startswith("did you mean 'us-central1'?")


def test_zone_the_region_does_not_have_exits_1(cli, tmp_path: Path) -> None:
    # us-east5 has zones a, b and c (one row each in the Compute Engine table)
    code, problems = _validate(cli, _recipe(tmp_path, zone="us-east5-z"))
    assert code == 1
    p = _one(problems, "gcp-zone")
    assert p["path"] == "spec.zone" and p["severity"] == "error"
    assert p["expected"] == "one of us-east5-a, us-east5-b, us-east5-c"
    assert [q["rule"] for q in problems] == ["gcp-zone"], problems


def test_gpu_series_not_in_the_zone_names_the_zone(cli, tmp_path: Path) -> None:
    # the table's us-east5-b row lists A4X Max and G4 machine types, no A3
    code, problems = _validate(cli, _recipe(
        tmp_path, zone="us-east5-b",
        slice_="{name: g, gpu: h200-141gb, machineType: a3-ultragpu-8g}"))
    p = _one(problems, "gpu-zone")
    assert p["path"] == "spec.zone" and p["value"] == "us-east5-b"
    assert "zone us-east5-b offers no A3 machine types" in p["message"]
    assert "us-east5-a" in p["expected"]
    assert p["severity"] == "warning" and code == 0  # the GPU series list is a dated copy (M)


# -- TPU regions and zones (https://cloud.google.com/tpu/docs/regions-zones) ----------------

def test_tpu7x_in_a_zone_without_tpu7x_is_a_finding_naming_the_zone(cli, tmp_path: Path) -> None:
    path = _recipe(tmp_path, slice_="{name: iw, tpu: tpu7x, topology: 2x2x2}")
    code, problems = _validate(cli, path)
    p = _one(problems, "tpu-zone")
    assert p["path"] == "spec.zone" and p["value"] == "us-east5-a"
    assert "zone us-east5-a" in p["message"] and "tpu7x" in p["message"]
    assert p["expected"] == "us-central1-c, us-central1-ai1a"
    # the TPU zone list is confidence M: a warning, so exit 0; --strict makes it fail
    assert p["severity"] == "warning" and code == 0
    code, _ = _validate(cli, path, "--strict")
    assert code == 1


def test_tpu7x_in_its_ai_zone_is_clean(cli, tmp_path: Path) -> None:
    code, problems = _validate(cli, _recipe(
        tmp_path, region="us-central1", zone="us-central1-ai1a",
        slice_="{name: iw, tpu: tpu7x, topology: 2x2x2}"))
    assert code == 0
    assert not [p for p in problems if p["rule"] in ("tpu-zone", "gcp-zone")], problems


# -- GKE per-cluster limits (planning-large-clusters, quotas) ---------------------------------

def test_64_v5p_16x16x24_slices_exit_1_naming_the_node_limit(cli, tmp_path: Path) -> None:
    code, problems = _validate(cli, _recipe(
        tmp_path, slice_="{name: big, tpu: v5p, topology: 16x16x24, count: 64}"))
    assert code == 1
    p = next(q for q in problems if q["rule"] == "gke-nodes" and q["severity"] == "error")
    assert p["path"] == "spec.slices[0].count" and p["value"] == 64
    assert "98,307 nodes" in p["message"]  # 64 x 1,536 VMs + 3 system-pool nodes
    assert "65,000 nodes per cluster" in p["message"]
    assert p["source"] == ("https://cloud.google.com/kubernetes-engine/docs/concepts/"
                           "planning-large-clusters")
    # the slice's single node pool of 1,536 VMs in one zone: the quotas page's 1,000 (M)
    per_pool = [q for q in problems if q["rule"] == "gke-nodes" and q["severity"] == "warning"]
    assert [q["path"] for q in per_pool] == ["spec.slices[0].topology"], problems


def test_standard_cluster_over_15000_nodes_needs_gke_1_31(cli, tmp_path: Path) -> None:
    # 16 x 1,024 VMs (v5p 16x16x16) = 16,384 + 3: above the Standard 15,000, below 65,000
    path = _recipe(tmp_path, slice_="{name: big, tpu: v5p, topology: 16x16x16, count: 16}")
    text = path.read_text().replace("{type: gke-standard}",
                                    "{type: gke-standard, minVersion: 1.30.5-gke.1000}")
    path.write_text(text)
    code, problems = _validate(cli, path)
    p = _one([q for q in problems if q["severity"] == "error"], "gke-nodes")
    assert code == 1 and p["path"] == "spec.orchestrator.minVersion"
    assert "16,387 nodes" in p["message"] and "GKE 1.31 or later" in p["message"]


# -- the ML Diagnostics SDK README's JAX table --------------------------------------------------

def test_jax_0_3_0_is_a_finding(cli, tmp_path: Path) -> None:
    code, problems = _validate(cli, _recipe(tmp_path, extra="    jaxVersion: 0.3.0\n"))
    found = [p for p in problems if p["rule"] == "diagnostics-jax"]
    assert {p["path"] for p in found} == {"spec.diagnostics.jaxVersion"}
    table = next(p for p in found if "compatibility table" in p["message"])
    assert table["value"] == "0.3.0" and table["severity"] == "warning"
    assert table["expected"] == "0.8.x (chart 0.24.0), 0.9.x and later (chart 0.24.0)"
    tpu = next(p for p in found if "TPU v5p" in p["message"])
    assert tpu["expected"] == ">= 0.4.19"  # GKE's TPU page: JAX for v5p
    assert code == 0


@pytest.mark.parametrize("jax", ["0.8.1", "0.9.0", "0.10.2"])
def test_jax_in_the_table_is_clean(cli, tmp_path: Path, jax: str) -> None:
    code, problems = _validate(cli, _recipe(tmp_path, extra=f"    jaxVersion: {jax}\n"))
    assert code == 0 and not [p for p in problems if p["rule"] == "diagnostics-jax"], problems


# -- the bundled recipes stay clean ------------------------------------------------------------

NEW_RULES = {"gcp-region", "gcp-zone", "gpu-zone", "gke-nodes", "gke-node-pools",
             "diagnostics-jax", "tpu-zone"}


def test_bundled_recipes_get_no_place_or_size_finding(cli) -> None:
    code, out, err = cli("validate", "-O", "json", *map(str, RECIPES))
    assert code == 0, out + err
    doc = json.loads(out)
    found = [(f["file"], p["rule"]) for f in doc["files"] for p in f["problems"]
             if p["rule"] in NEW_RULES]
    assert found == []
