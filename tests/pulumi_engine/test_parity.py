"""Per example recipe (by default the sample of tests/pulumi_engine/parity.py that covers
every family of the examples; all of them with ``MLDIAG_FULL=1``, docs/testing.md): the
resources of the Pulumi program (under Pulumi's mock runtime) are the resources the
Terraform stack plans to create, with the same names, types (mapping in parity.yaml),
attribute values and protections. Every difference is listed; each must have an entry in
parity.yaml that explains it, and an entry no example needs is stale.

Terraform side: ``terraform plan`` of the project stage with the real terraform binary
against the offline stand-in providers (REAL hashicorp/google(-beta) 8.7.0 schemas), and of
the in-cluster stage (agents/) against a stand-in cluster seeded with the recipe's name.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import subprocess
from pathlib import Path

import pytest

from mldiag_provision.engines.pulumi_program import helm_values
from pulumi_engine.parity import PARITY, PARITY_RECIPES, compare
from pulumi_engine.support import mock_run, render, with_engine
from pulumi_engine.variants import VARIANTS, write_variant

pytestmark = pytest.mark.terraform



def _terraform(chdir: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(["terraform", f"-chdir={chdir}", *args, "-no-color"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 2), f"terraform {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _tf_plan(stage: Path) -> dict:
    _terraform(stage, "init", "-input=false")
    _terraform(stage, "plan", "-input=false", "-out=parity.tfplan", "-detailed-exitcode")
    return json.loads(_terraform(stage, "show", "-json", "parity.tfplan").stdout)


def _check(label: str, tf_plan: dict, program: Path) -> dict[int, int]:
    """Compare; returns which explained differences were used (index -> times)."""
    run = mock_run(program)
    got = compare(tf_plan, run, helm_values=helm_values)
    assert got.resources > 0, f"{label}: the Terraform plan creates nothing"
    assert not got.differences, (
        f"{label}: {len(got.differences)} unexplained difference(s) between the Terraform "
        "stack and the Pulumi program (fix the template, or add an entry with why to "
        "tests/pulumi_engine/parity.yaml):\n  " + "\n  ".join(got.differences))
    # the comparison can fail: a changed attribute, a lost protection and a missing
    # resource are each reported
    broken = copy.deepcopy(run)
    managed = [r for r in broken["resources"] if r["custom"]
               and not r["type"].startswith("pulumi:providers:")]
    managed[0]["inputs"]["mldiagParityProbe"] = "x"
    managed[0]["protect"] = not managed[0]["protect"]
    broken["resources"].remove(managed[-1])
    found = "\n".join(compare(tf_plan, broken, helm_values=helm_values).differences)
    assert f"{managed[0]['name']}: mldiag_parity_probe: only in Pulumi" in found, found
    assert f"{managed[0]['name']}: @protect: Pulumi" in found, found
    assert f"{managed[-1]['name']} (" in found and "missing from the Pulumi program" in found
    return got.explained


def _expected_entries(example: str) -> set[int]:
    return {i for i, d in enumerate(PARITY.get("differences") or [])
            if any(fnmatch.fnmatch(example, g) for g in d["examples"])}


@pytest.mark.parametrize("recipe", PARITY_RECIPES, ids=[r.stem for r in PARITY_RECIPES])
def test_pulumi_program_matches_terraform_stack(recipe: Path, tmp_path: Path, cli,
                                                offline_cluster) -> None:
    if offline_cluster is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    tf_recipe = with_engine(recipe, tmp_path / "tf.yaml", "terraform", local_backend=True)
    pu_recipe = with_engine(recipe, tmp_path / "pu.yaml", "pulumi", local_backend=True)
    render(cli, tf_recipe, tmp_path / "tf")
    render(cli, pu_recipe, tmp_path / "pu")
    used = _check(f"{recipe.stem} project stage", _tf_plan(tmp_path / "tf"), tmp_path / "pu")
    if (tmp_path / "tf" / "agents").is_dir():
        # the in-cluster stage reads the cluster: one that exists under the recipe's name
        offline_cluster.seed_existing_cluster(tf_recipe)
        used.update(_check(f"{recipe.stem} in-cluster stage",
                           _tf_plan(tmp_path / "tf" / "agents"), tmp_path / "pu" / "agents"))
    else:
        assert not (tmp_path / "pu" / "agents").exists()
    # every explained difference is needed exactly where parity.yaml says (no stale entry)
    assert set(used) == _expected_entries(recipe.stem), (
        "parity.yaml `examples` disagree with the differences found: used "
        f"{sorted(used)}, listed for this example {sorted(_expected_entries(recipe.stem))}")


@pytest.mark.parametrize("variant", [n for n, (_, _, needs_existing) in VARIANTS.items()
                                     if not needs_existing])
def test_variant_parity(variant: str, tmp_path: Path, cli, offline_cluster) -> None:
    """The template branches only the variants take (custom role, Log Analytics off,
    flex-start, a Diagon chart, no deletion protection), both stages. The variant that reuses
    an account and a bucket is left to the mock tests: its Terraform plan reads objects the
    stand-in cloud would need seeded first."""
    if offline_cluster is None:
        return
    base = write_variant(variant, tmp_path / "variant.yaml")
    tf_recipe = with_engine(base, tmp_path / "tf.yaml", "terraform", local_backend=True)
    render(cli, tf_recipe, tmp_path / "tf")
    render(cli, with_engine(base, tmp_path / "pu.yaml", "pulumi", local_backend=True),
           tmp_path / "pu")
    used = _check(f"{variant} project stage", _tf_plan(tmp_path / "tf"), tmp_path / "pu")
    if (tmp_path / "tf" / "agents").is_dir():
        offline_cluster.seed_existing_cluster(tf_recipe)
        used.update(_check(f"{variant} in-cluster stage", _tf_plan(tmp_path / "tf" / "agents"),
                           tmp_path / "pu" / "agents"))
    assert set(used) == _expected_entries(variant), sorted(used)
