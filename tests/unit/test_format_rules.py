"""Preflight rule gcp-format (issue 15): free-text fields that name Google Cloud things are
checked against their documented forms (sources in preflight/format_rules.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from mldiag_provision.pipeline import check_text

ROOT = Path(__file__).resolve().parents[2]
GKE = yaml.safe_load((ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml").read_text())
EXISTING = yaml.safe_load((ROOT / "recipes" / "existing-gke-cluster.yaml").read_text())
SLURM = yaml.safe_load((ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml").read_text())


def _with(doc: dict, path: tuple, value: object) -> str:
    doc = copy.deepcopy(doc)
    node = doc["spec"]
    for part in path[:-1]:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    node[path[-1]] = value
    return yaml.safe_dump(doc, sort_keys=False)


def _format_errors(text: str) -> list:
    return [p for p in check_text(text, "r.yaml").report.problems if p.rule == "gcp-format"]


CASES = [
    # (recipe, path under spec, good values, bad values)
    (GKE, ("orchestrator", "systemPoolMachineType"),
     ["e2-standard-4", "n2-highmem-32", "c3-standard-4-lssd", "custom-4-16384",
      "n2-custom-8-32768-ext"], ["E2-standard-4", "e2 standard 4", "e2_standard_4", "e2"]),
    (GKE, ("orchestrator", "network"),
     ["default", "vpc-1", "projects/my-ml-project/global/networks/vpc-1"],
     ["My Network", "vpc_1", "1vpc", "projects/x/global/networks/vpc"]),
    (GKE, ("orchestrator", "subnetwork"),
     ["sub-1", "projects/my-ml-project/regions/us-central1/subnetworks/sub-1"],
     ["bad/sub", "Sub1", "projects/my-ml-project/regions/uscentral1/subnetworks/s"]),
    (GKE, ("diagnostics", "mlrunRegion"), ["us-east5", "europe-west4", "me-central2"],
     ["us-east5 ", "useast5", "us-east5-a", "US-EAST5", "global"]),
    (GKE, ("diagnostics", "profilesBucket", "location"), ["us-east5", "US", "eu", "NAM4"],
     ["nowhere land", "us_east5", "us-east5-a"]),
    (GKE, ("slices", 0, "capacity", "reservationProject"), ["my-ml-project", "other-proj1"],
     ["My Project", "proj", "p-", "1project"]),
    (EXISTING, ("orchestrator", "clusterLocation"), ["us-central1", "us-central1-a"],
     ["mars-1", "us-central1-", "US-CENTRAL1"]),
    (SLURM, ("slurm", "loginNodes", "zone"), [], ["us-central1", "useast5-a", "us-east5-A"]),
]


def _case_ids(case: tuple) -> str:
    return ".".join(map(str, case[1]))


@pytest.mark.parametrize("case", CASES, ids=_case_ids)
def test_documented_forms_pass_and_typos_are_one_clear_error(case: tuple) -> None:
    doc, path, good, bad = case
    if path[-1] == "reservationProject":
        doc = copy.deepcopy(doc)
        doc["spec"]["slices"][0]["capacity"] = {"type": "reservation", "reservation": "r1"}
    for value in good:
        assert _format_errors(_with(doc, path, value)) == [], value
    for value in bad:
        [p] = _format_errors(_with(doc, path, value))
        assert p.path == "spec." + ".".join(
            f"[{x}]" if isinstance(x, int) else x for x in path).replace(".[", "[")
        assert p.value == value and p.message.startswith(f"'{value}' is not ")
        assert p.expected and p.hint and p.source and p.source.startswith("https://")
        assert p.line > 0 and p.file == "r.yaml"


def test_hints_fix_spaces_and_case() -> None:
    [p] = _format_errors(_with(GKE, ("diagnostics", "mlrunRegion"), " us-east5"))
    assert p.hint == "remove the spaces around it: 'us-east5'"
    [p] = _format_errors(_with(GKE, ("orchestrator", "systemPoolMachineType"), "E2-Standard-4"))
    assert p.hint == "use the lowercase form: 'e2-standard-4'"


def test_every_example_recipe_passes() -> None:
    for recipe in sorted((ROOT / "recipes").glob("*.yaml")):
        assert _format_errors(recipe.read_text()) == [], recipe


def test_a_malformed_machine_type_is_not_also_a_shape_error() -> None:
    """'four' is "not a machine type" (gcp-format), the one finding of that field: the shape
    and Slurm rules that look the value up do not report it again in their words."""
    for doc in (SLURM, yaml.safe_load((ROOT / "recipes" / "gpu-a3-ultra-standard.yaml")
                                      .read_text())):
        problems = [p for p in check_text(_with(doc, ("slices", 0, "machineType"), "four"),
                                          "r.yaml").report.problems
                    if p.path == "spec.slices[0].machineType"]
        assert [(p.rule, p.message) for p in problems] == [
            ("gcp-format", "'four' is not a machine type")]
        assert problems[0].line > 0
