"""``render --check`` (stale-stack detection) and the work directory's ``.gitignore``.

The .gitignore test asks real ``git`` which files of a work directory it would add, after
placing every local file the tool and Terraform write (their paths imported from the code
that writes them, so a moved file moves the test with it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from mldiag_provision.engines import terraform
from mldiag_provision.render import gitignore
from mldiag_provision.render.writer import MANIFEST
from mldiag_provision.stack import guard, kube, lock, service, workdir
from stack_support import RECIPES

RECIPE = next(r for r in RECIPES if r.name == "tpu7x-2x2x4-standard.yaml")


def _render(cli, recipe: Path, out: Path) -> None:
    code, stdout, stderr = cli("--no-color", "render", str(recipe), "-o", str(out))
    assert code == 0, stdout + stderr


def _check(cli, recipe: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return cli("--no-color", "render", str(recipe), "-o", str(out), "--check", *extra)


def test_identical_directory_exits_0(cli, tmp_path: Path) -> None:
    out = tmp_path / "s"
    _render(cli, RECIPE, out)
    code, stdout, _ = _check(cli, RECIPE, out)
    assert code == 0, stdout
    assert "up to date" in stdout
    code, stdout, _ = _check(cli, RECIPE, out, "-O", "json")
    doc = json.loads(stdout)
    assert code == 0 and doc["identical"] is True
    assert doc["changed"] == doc["added"] == doc["removed"] == doc["unmanaged"] == []


def test_check_writes_nothing(cli, tmp_path: Path) -> None:
    out = tmp_path / "s"
    code, _, _ = _check(cli, RECIPE, out)
    assert code == 1
    assert not out.exists()


def test_missing_directory_is_stale_with_every_file_added(cli, tmp_path: Path) -> None:
    out = tmp_path / "never-rendered"
    code, stdout, _ = _check(cli, RECIPE, out, "-O", "json")
    doc = json.loads(stdout)
    assert code == 1
    assert doc["exists"] is False and doc["identical"] is False
    assert "main.tf" in doc["added"] and MANIFEST in doc["added"] and ".gitignore" in doc["added"]
    code, stdout, _ = _check(cli, RECIPE, out)
    assert code == 1 and "does not exist" in stdout


def test_recipe_changed_but_not_its_stack_is_stale(cli, tmp_path: Path) -> None:
    """A PR that edits the recipe (one workload fewer, another image) but not the stack."""
    recipe = yaml.safe_load(RECIPE.read_text())
    recipe["spec"]["workloads"].append({**recipe["spec"]["workloads"][0], "name": "second"})
    two = tmp_path / "two.yaml"
    two.write_text(yaml.safe_dump(recipe, sort_keys=False))
    out = tmp_path / "s"
    _render(cli, two, out)
    del recipe["spec"]["workloads"][1]
    recipe["spec"]["workloads"][0]["image"] = "python:3.13"
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump(recipe, sort_keys=False))
    code, stdout, _ = _check(cli, one, out, "-O", "json")
    doc = json.loads(stdout)
    assert code == 1, doc
    first = recipe["spec"]["workloads"][0]["name"]
    assert f"k8s/workloads/{first}.yaml" in doc["changed"]
    assert doc["removed"] == ["k8s/workloads/second.yaml"]
    assert MANIFEST in doc["changed"]
    assert doc["edited"] == []  # nobody edited the files: the recipe moved on
    code, text, _ = _check(cli, one, out)
    assert code == 1
    assert "removed   k8s/workloads/second.yaml" in text
    assert "(edited by hand)" not in text


def test_hand_edited_and_hand_added_files_are_reported(cli, tmp_path: Path) -> None:
    out = tmp_path / "s"
    _render(cli, RECIPE, out)
    with (out / "main.tf").open("a") as f:
        f.write("# tweak\n")
    (out / "outputs.tf").unlink()
    (out / "extra.tf").write_text('resource "null_resource" "x" {}\n')
    code, stdout, _ = _check(cli, RECIPE, out, "-O", "json")
    doc = json.loads(stdout)
    assert code == 1
    assert doc["changed"] == ["main.tf"] and doc["edited"] == ["main.tf"]
    assert doc["added"] == ["outputs.tf"]
    assert doc["unmanaged"] == ["extra.tf"]
    code, text, _ = _check(cli, RECIPE, out)
    assert "changed   main.tf (edited by hand)" in text
    assert "--force" in text


def test_local_state_is_not_staleness(cli, tmp_path: Path) -> None:
    """State, .terraform/, logs and saved plans appear after plan/apply: still up to date."""
    out = tmp_path / "s"
    _render(cli, RECIPE, out)
    for rel in _local_files():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("local\n")
    (out / ".terraform.lock.hcl").write_text("# lock\n")
    code, stdout, _ = _check(cli, RECIPE, out)
    assert code == 0, stdout


def test_check_refuses_a_file_as_directory(cli, tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    code, _, err = _check(cli, RECIPE, f)
    assert code == 2 and "is a file" in err


def _local_files() -> list[str]:
    """Every local file a plan/apply/destroy leaves in a work directory."""
    return [
        ".terraform/providers/registry.terraform.io/hashicorp/google/8.7.0/p.bin",
        ".terraform/modules/modules.json", ".terraform/terraform.tfstate",
        "terraform.tfstate", "terraform.tfstate.backup", "terraform.tfstate.1700000000.backup",
        terraform.PLAN_FILE, terraform.PLAN_SUMMARY, terraform.INIT_STAMP,
        f"{service.LOG_DIR}/apply-20261201T000000Z.log", lock.LOCK_FILE, kube.INVENTORY,
        ".mldiag/cluster-ca.pem", workdir.RENDER_STAMP, guard.OVERRIDE_FILE, "crash.log",
        f"agents/{terraform.PLAN_FILE}", f"agents/{terraform.PLAN_SUMMARY}",
        "agents/.terraform/modules/modules.json", "agents/terraform.tfstate",
        f"agents/{service.LOG_DIR}/x.log", "agents/" + guard.OVERRIDE_FILE,
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_gitignore_keeps_local_state_out_and_generated_code_in(cli, tmp_path: Path) -> None:
    out = tmp_path / "s"
    _render(cli, RECIPE, out)
    manifest = json.loads((out / MANIFEST).read_text())
    generated = set(manifest["files"]) | {MANIFEST}
    assert ".gitignore" in generated and ".mldiag/plan.json" in generated
    for rel in _local_files():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("secret-ish local state\n")
    (out / ".terraform.lock.hcl").write_text("# provider hashes\n")
    subprocess.run(["git", "init", "-q", str(out)], check=True)
    listed = subprocess.run(["git", "-C", str(out), "ls-files", "--others",
                             "--exclude-standard"], check=True, capture_output=True,
                            text=True).stdout.split()
    assert set(listed) == generated | {".terraform.lock.hcl"}
    # our own matcher (used by render --check) agrees with git on every file
    for rel in [*_local_files(), *generated, ".terraform.lock.hcl"]:
        assert gitignore.is_local(rel) == (rel not in listed), rel
