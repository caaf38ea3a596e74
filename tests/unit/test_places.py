"""The places facts (catalog/data/places.yaml) and the rules that read them.

Data: what the Compute Engine regions-zones table, the TPU regions-zones page, the GKE
quotas / large-clusters pages and the SDK README's JAX table say, as stored; consistency
between places.yaml, tpu.yaml and gpu.yaml. Rules: one mutation of the rules-test base
recipe per finding (``gcp-region``, ``gcp-zone``, ``gpu-zone``, ``gke-nodes``,
``gke-node-pools``, ``diagnostics-jax``, ``tpu-zone``), and the severity each fact's
confidence gives it.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest
import yaml

from mldiag_provision import pipeline
from mldiag_provision.catalog.gpu import load_gpu_catalog
from mldiag_provision.catalog.places import limit, places
from mldiag_provision.catalog.requirements import jax_row
from mldiag_provision.catalog.store import DATA_DIR, FactStore, store, use_store
from mldiag_provision.catalog.tpu import Catalog, load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.plan.agents import operator_args

ERROR, WARNING = Severity.ERROR, Severity.WARNING

BASE: dict = {
    "apiVersion": "mldiag-provision/v1alpha1",
    "kind": "Recipe",
    "metadata": {"name": "places-base"},
    "spec": {
        "project": "my-ml-project",
        "region": "us-central1",
        "orchestrator": {"type": "gke-autopilot"},
        "slices": [{"name": "s8", "tpu": "v5e", "topology": "2x4", "chipsPerVm": 8}],
        "diagnostics": {"logAnalytics": {"retentionDays": 30}},
        "workloads": [{"name": "train", "slice": "s8", "image": "python:3.12",
                       "chipsPerPod": 8, "kind": "JobSet"}],
    },
}


def check(data: dict, catalog: Catalog | None = None) -> list[Problem]:
    text = yaml.safe_dump(data, sort_keys=False)
    return pipeline.check_text(text, "r.yaml", catalog).report.problems


def only(problems: list[Problem], rule: str, path: str, severity: Severity) -> Problem:
    """The single problem of ``rule`` at ``path``, with its severity and a real line."""
    hits = [p for p in problems if p.rule == rule and p.path == path]
    assert len(hits) == 1, f"want one {rule} at {path}; got {[(p.rule, p.path) for p in problems]}"
    assert hits[0].severity is severity, hits[0]
    assert hits[0].line > 0 and hits[0].file == "r.yaml"
    return hits[0]


@pytest.fixture
def recipe() -> dict:
    return copy.deepcopy(BASE)


# -- the data ----------------------------------------------------------------------------------

def test_every_region_of_the_compute_engine_table_with_its_zones() -> None:
    p = places()
    listed = store().fact("places", "regions")["zones"]
    assert len(listed) == 43 and sum(len(z) for z in listed.values()) == 130
    assert p.zones["us-central1"] == ("us-central1-a", "us-central1-b", "us-central1-c",
                                      "us-central1-f")
    # the regions whose zones do not start at -a
    assert p.zones["us-east1"] == ("us-east1-b", "us-east1-c", "us-east1-d")
    assert p.zones["europe-west1"] == ("europe-west1-b", "europe-west1-c", "europe-west1-d")
    for region, zones in p.zones.items():
        assert re.fullmatch(r"[a-z]+-[a-z]+[0-9]+", region), region
        for z in zones:
            assert re.fullmatch(re.escape(region) + r"-[a-z]", z), z
    assert not p.is_region("mars-north1")
    assert store().fact("places", "regions").verified


def test_us_central2_is_a_region_only_the_tpu_page_lists() -> None:
    p = places()
    assert "us-central2" not in store().fact("places", "regions")["zones"]
    assert p.zones["us-central2"] == ("us-central2-b",)
    assert p.region_fact("us-central2").source.tag == "CTPU-REGIONS"
    assert p.zone_region("us-central2-b") == "us-central2"


def test_ai_zones_have_the_documented_form_and_a_parent_zone() -> None:
    p = places()
    for region, zones in p.ai_zones.items():
        for z in zones:
            assert p.ai_zone_form(z) is not None and p.ai_zone_form(z)[0] == region, z
            assert p.ai_zone_form(z)[1] in p.zones[region], z
            assert p.zone_region(z) == region
    assert p.ai_zone_form("us-central1-ai1a") == ("us-central1", "us-central1-a")
    assert p.ai_zone_form("us-central1-a") is None
    assert not p.ai_fact.verified  # no page lists every AI zone


def test_gpu_series_rows_are_zones_of_the_table() -> None:
    p = places()
    names = {s for s, _ in p.series_prefixes}
    assert names == {"A4X", "A4", "A3", "A2", "G4", "G2"}  # A4X Max: names not read
    names.add("A4X Max")
    every_zone = {z for zs in p.zones.values() for z in zs}
    for zone, series in p.gpu_zones.items():
        assert zone in every_zone, zone
        assert series and series <= names, zone
    assert p.offers("us-east5-a", "A3") and not p.offers("us-east5-b", "A3")
    assert p.offers("europe-west4-b", "A4X")
    assert not p.gpu_fact.verified  # a dated copy of a table Google extends


@pytest.mark.parametrize("machine, series", [
    ("a3-ultragpu-8g", "A3"), ("a3-megagpu-8g", "A3"), ("a4-highgpu-8g", "A4"),
    ("a4x-highgpu-4g", "A4X"), ("a2-ultragpu-8g", "A2"),
    ("g2-standard-48", "G2"), ("g4-standard-48", "G4"), ("e2-standard-4", None),
    ("ct5p-hightpu-4t", None), ("a3", "A3")])
def test_machine_type_to_series(machine: str, series: str | None) -> None:
    assert places().series_of(machine) == series


def test_every_gpu_machine_type_of_gpu_yaml_has_a_series() -> None:
    p = places()
    for gpu in load_gpu_catalog().gpus.values():
        for name in gpu.machines:
            assert p.series_of(name) is not None, name


def test_every_tpu_zone_of_tpu_yaml_is_a_known_zone() -> None:
    p = places()
    for version in load_catalog().versions.values():
        for z in version.zones:
            # 'us-central1-ai1' is written so on the TPU page (no letter): not a zone name of
            # the documented AI zone form, so it cannot be resolved
            if z == "us-central1-ai1":
                continue
            assert p.zone_region(z) is not None, (version.key, z)


def test_gke_limits_as_the_pages_give_them() -> None:
    assert int(limit("nodesPerClusterMax")["nodes"]) == 65000
    assert limit("nodesPerClusterMax")["minVersion"] == "1.31"
    assert int(limit("nodesPerClusterStandard")["nodes"]) == 15000
    assert int(limit("nodesWithoutQuotaLift")["nodes"]) == 5000
    assert int(limit("nodesPerNodePoolZone")["nodes"]) == 1000
    pods = limit("podsPerNode")
    assert (pods["standardMax"], pods["autopilot"]) == (256, 32)
    assert pods["standardMaxBefore"] == {"version": "1.23.5-gke.1300", "pods": 110}
    assert int(limit("systemPoolZones")["zones"]) == 3
    # verified (errors allowed) vs. not (warnings only), as each note explains
    assert {n for n in ("nodesPerClusterMax", "nodesPerClusterStandard",
                        "nodesWithoutQuotaLift", "nodesPerClusterAutopilot",
                        "nodesPerNodePoolZone", "podsPerNode", "podsPerNodeDefault",
                        "nodePoolsPerCluster", "systemPoolZones")
            if limit(n).verified} == {"nodesPerClusterMax", "nodesPerClusterStandard",
                                      "nodesWithoutQuotaLift", "podsPerNode",
                                      "nodePoolsPerCluster", "systemPoolZones"}
    for name in ("nodesPerClusterMax", "nodesPerClusterStandard", "podsPerNode"):
        assert limit(name)["read"] == "2026-12-01"


def test_jax_compatibility_rows() -> None:
    catalog = load_catalog()
    row = jax_row("0.8.1", catalog)
    assert row is not None and row["chart"] == "0.24.0"
    assert "--disable-hostname-override" in row["args"]
    assert operator_args("0.8.1", catalog) == list(row["args"])
    for later in ("0.9", "0.9.2", "0.12.0", "1.0.0"):
        assert jax_row(later, catalog)["jax"] == "0.9", later
        assert operator_args(later, catalog) is None
    for older in ("0.3.0", "0.7.2", "0.4"):
        assert jax_row(older, catalog) is None, older
    assert jax_row("latest", catalog) is None
    oldest = catalog.fact("mlDiagnostics", "manualInstall", "connectionOperator", "jaxOldest")
    assert oldest["version"] == "0.8" and not oldest.verified


# -- the rules ---------------------------------------------------------------------------------

def test_unknown_mlrun_region(recipe: dict) -> None:
    recipe["spec"]["diagnostics"]["mlrunRegion"] = "us-cental1"
    p = only(check(recipe), "gcp-region", "spec.diagnostics.mlrunRegion", ERROR)
    assert p.hint and "did you mean 'us-central1'?" in p.hint


def test_existing_cluster_location_may_be_a_zone(recipe: dict) -> None:
    recipe["spec"]["orchestrator"] = {"type": "existing-kubernetes",
                                      "clusterLocation": "us-central1-c"}
    assert "gcp-region" not in {p.rule for p in check(recipe)}
    recipe["spec"]["orchestrator"]["clusterLocation"] = "moon-base1"
    only(check(recipe), "gcp-region", "spec.orchestrator.clusterLocation", ERROR)


def test_unlisted_ai_zone_warns(recipe: dict) -> None:
    recipe["spec"]["zone"] = "us-central1-ai2b"
    p = only(check(recipe), "gcp-zone", "spec.zone", WARNING)
    assert "AI zone" in p.message and "us-central1-ai1a" in (p.expected or "")


def test_gpu_region_without_the_series(recipe: dict) -> None:
    # Autopilot, no zone: africa-south1 lists no A3 machine types in any zone
    recipe["spec"]["region"] = "africa-south1"
    recipe["spec"]["slices"] = [{"name": "h", "gpu": "h100-80gb"}]
    recipe["spec"]["workloads"] = []
    p = only(check(recipe), "gpu-zone", "spec.slices[0].gpu", WARNING)
    assert "no zone of region africa-south1 offers A3" in p.message


def test_autopilot_cluster_above_its_quota_warns(recipe: dict) -> None:
    recipe["spec"]["slices"] = [{"name": "s", "tpu": "v5e", "topology": "16x16", "count": 8}]
    recipe["spec"]["workloads"] = []
    p = only(check(recipe), "gke-nodes", "spec.slices[0].count", WARNING)
    assert "512 nodes" in p.message and "400" in p.message  # 8 x 64 VMs, no system pool


def test_standard_cluster_above_5000_nodes_warns(recipe: dict) -> None:
    recipe["spec"]["orchestrator"] = {"type": "gke-standard"}
    recipe["spec"]["zone"] = "us-central1-a"
    recipe["spec"]["slices"] = [{"name": "s", "tpu": "v5e", "topology": "16x16",
                                 "count": 64}]
    recipe["spec"]["workloads"] = []
    assert "gke-nodes" not in {p.rule for p in check(recipe)}  # 64 x 64 VMs + 3 = 4,099
    recipe["spec"]["slices"].append({"name": "t", "tpu": "v5p", "topology": "8x16x16",
                                     "count": 4})  # + 4 x 512 VMs = 6,147
    p = only(check(recipe), "gke-nodes", "spec.slices[0].count", WARNING)
    assert "6,147 nodes" in p.message and "5,000 nodes needs a raised cluster size quota" \
        in p.message


def test_many_node_pools_warn(recipe: dict) -> None:
    recipe["spec"]["orchestrator"] = {"type": "gke-standard"}
    recipe["spec"]["zone"] = "us-central1-a"
    recipe["spec"]["slices"] = [{"name": f"s{i}", "tpu": "v5e", "topology": "1x1",
                                 "count": 64} for i in range(4)]
    recipe["spec"]["workloads"] = []
    p = only(check(recipe), "gke-node-pools", "spec.slices", WARNING)
    assert "257 node pools" in p.message and "200" in p.message


def test_an_existing_cluster_is_not_sized() -> None:
    recipe = copy.deepcopy(BASE)
    recipe["spec"]["orchestrator"] = {"type": "existing-kubernetes"}
    recipe["spec"]["slices"] = [{"name": "s", "tpu": "v5p", "topology": "16x16x24",
                                 "count": 64}]
    recipe["spec"]["workloads"] = []
    assert "gke-nodes" not in {p.rule for p in check(recipe)}


# -- severity from the facts' confidence -------------------------------------------------------

def _store_with(tmp_path: Path, old: str, new: str, file: str = "tpu.yaml") -> FactStore:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    f = data / file
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    return FactStore(data)


TPU7X_ZONES = "aiZones: [us-central1-ai1a], source: CTPU-REGIONS, confidence: M"


def test_tpu_zone_becomes_an_error_once_its_list_is_verified(tmp_path: Path,
                                                            recipe: dict) -> None:
    recipe["spec"]["orchestrator"] = {"type": "gke-standard"}
    recipe["spec"]["region"] = "us-east5"
    recipe["spec"]["zone"] = "us-east5-a"
    recipe["spec"]["slices"] = [{"name": "iw", "tpu": "tpu7x", "topology": "2x2x2"}]
    recipe["spec"]["workloads"] = []
    only(check(recipe), "tpu-zone", "spec.zone", WARNING)
    verified = _store_with(tmp_path, TPU7X_ZONES, TPU7X_ZONES.replace("confidence: M",
                                                                      "confidence: H"))
    with use_store(verified):
        catalog = Catalog(verified.doc("tpu"), verified.doc("gke"), verified)
        p = only(check(recipe, catalog), "tpu-zone", "spec.zone", ERROR)
    assert "us-east5-a" in p.message


def test_unverified_region_list_cannot_make_an_error(recipe: dict) -> None:
    recipe["spec"]["region"] = "mars-north1"
    only(check(recipe), "gcp-region", "spec.region", ERROR)
    what_if = FactStore(unverified=True)
    with use_store(what_if):
        catalog = Catalog(what_if.doc("tpu"), what_if.doc("gke"), what_if)
        only(check(recipe, catalog), "gcp-region", "spec.region", WARNING)
