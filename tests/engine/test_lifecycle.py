"""The stack lifecycle through OUR commands against the offline stand-in (real terraform,
real schemas; the stand-in cloud, the stand-in Cloud Storage listing): safe destroy (refused
before anything is deleted, with the one flag that lifts the block), destroy from the work
directory when the recipe is gone, what destroy keeps, and the drift-check exit codes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.conftest import cloud_objects, offline_recipe
from stack_support import RECIPES

pytestmark = pytest.mark.terraform

AUTOPILOT = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")
SLURM = next(r for r in RECIPES if r.stem == "slurm-a3-ultra-lustre")
KEPT = {"google_project_service", "google_logging_project_bucket_config"}


def _snapshot(cloud: Path) -> list[str]:
    return sorted(p.read_text() for p in cloud.rglob("*.json"))


def _kept_only(cloud: Path) -> dict[str, int]:
    return {k: v for k, v in cloud_objects(cloud).items() if k not in KEPT}


def test_protected_cluster_destroy_deletes_nothing_and_names_the_flag(
        tmp_path: Path, offline, gcs, cli) -> None:
    if offline is None:
        return
    protected = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml",
                                   deletion_protection=None))  # the recipe's default: on
    work = str(tmp_path / "work")
    code, out, err = cli("apply", protected, "-o", work, "--auto-approve", "--stage",
                         "project")
    assert code == 0, out + err
    before = _snapshot(offline)
    code, out, err = cli("destroy", protected, "-o", work, "--auto-approve")
    assert code == 3, out + err
    assert "destroy refused before deleting anything" in err
    assert "deletion protection on" in err and "--disable-deletion-protection" in err
    assert _snapshot(offline) == before  # nothing deleted, nothing changed
    # The flag: an update-only apply of the protection, then the destroy; nothing recreated.
    code, out, err = cli("destroy", protected, "-o", work, "--auto-approve",
                         "--disable-deletion-protection")
    assert code == 0, out + err
    assert "update-only apply" in out
    assert "module.cluster.google_container_cluster.this: updated" in out
    assert ": created" not in out and ": replaced" not in out  # nothing recreated
    assert _kept_only(offline) == {}, cloud_objects(offline)
    assert set(cloud_objects(offline)) <= KEPT  # APIs stay enabled, _Default stays
    assert not (Path(work) / "mldiag_destroy_override.tf").exists()


def test_non_empty_profiles_bucket_refuses_destroy_until_delete_profiles(
        tmp_path: Path, offline, gcs, cli) -> None:
    if offline is None:
        return
    from mldiag_provision.sandbox.gcs import put_object

    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    assert cli("apply", r, "-o", work, "--auto-approve", "--stage", "project")[0] == 0
    put_object(offline, "my-ml-project-tpu-v4-multihost-profiles", "run1/host0.xplane.pb")
    before = _snapshot(offline)
    code, out, err = cli("destroy", r, "-o", work, "--auto-approve")
    assert code == 3, out + err
    assert "holds profiles" in err and "--delete-profiles" in err
    assert _snapshot(offline) == before
    code, out, err = cli("destroy", r, "-o", work, "--auto-approve", "--delete-profiles")
    assert code == 0, out + err
    assert _kept_only(offline) == {}, cloud_objects(offline)


def test_without_the_guard_terraform_destroy_stops_halfway_on_a_non_empty_bucket(
        tmp_path: Path, offline, gcs, cli) -> None:
    """Why the guard exists: a plain `terraform destroy` deletes the grants and the cluster,
    then Google refuses the non-empty bucket (the stand-in answers Google's 409)."""
    if offline is None:
        return
    import subprocess

    from mldiag_provision.sandbox.gcs import put_object

    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    assert cli("apply", r, "-o", str(work), "--auto-approve", "--stage", "project")[0] == 0
    put_object(offline, "my-ml-project-tpu-v4-multihost-profiles", "run1/host0.xplane.pb")
    done = subprocess.run(["terraform", "destroy", "-auto-approve", "-no-color"], cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "The bucket you tried to delete is not empty" in done.stdout + done.stderr
    assert "google_container_cluster" not in cloud_objects(offline)  # already gone: half-way


def test_destroy_works_from_the_work_directory_when_the_recipe_is_gone_or_invalid(
        tmp_path: Path, offline, gcs, cli) -> None:
    if offline is None:
        return
    recipe = offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml")
    work = str(tmp_path / "work")
    assert cli("apply", str(recipe), "-o", work, "--auto-approve", "--stage", "project")[0] == 0
    recipe.write_text(recipe.read_text().replace("topology: 2x2x4", "topology: 9x9x9"))
    code, out, err = cli("destroy", str(recipe), "-o", work, "--auto-approve")
    assert code == 0, out + err
    assert _kept_only(offline) == {}
    # and with the recipe deleted: nothing left to do, still not an error
    recipe.unlink()
    code, out, err = cli("destroy", str(recipe), "-o", work, "--auto-approve")
    assert code == 0, out + err
    assert "nothing to destroy" in out


def test_destroy_red_block_names_what_is_lost_and_what_is_kept(tmp_path: Path, offline, gcs,
                                                               cli) -> None:
    if offline is None:
        return
    standard = next(r for r in RECIPES if r.stem == "tpu-v5p-2x2x4-standard-reservation")
    r = str(offline_recipe(standard, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    assert cli("apply", r, "-o", work, "--auto-approve", "--stage", "project")[0] == 0
    code, out, err = cli("destroy", r, "-o", work)  # no terminal, no --auto-approve
    assert code == 3, out + err
    assert "DELETES the GKE cluster" in err
    assert "DELETES the TPU node pool/VM" in err
    assert "system" not in " ".join(line for line in err.splitlines() if "TPU node pool" in line)
    assert "APIs stay enabled" in err and "_Default" in err
    assert "refusing to destroy without confirmation" in err


def test_slurm_destroy_names_the_slurm_cluster_and_its_storage(tmp_path: Path, offline, gcs,
                                                               cli) -> None:
    if offline is None:
        return
    r = str(offline_recipe(SLURM, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    assert cli("apply", r, "-o", work, "--auto-approve")[0] == 0
    code, out, err = cli("plan", r, "-o", work, "--destroy")
    assert code == 0, out + err
    assert "DELETES the managed Slurm cluster" in err
    assert "Filestore" in err and "Managed Lustre" in err


@pytest.mark.parametrize("argv", [["--detailed-exitcode", "--no-such-flag"],
                                  ["--detailed-exitcode"], ["--detailed"],
                                  ["--detailed-exit", "--bogus"],
                                  ["--detailed-exitcode", "--wait-timeout", "-1"],
                                  ["--detailed-exitcode", "--wait-timeout", "nan"]])
def test_detailed_exitcode_errors_never_read_as_drift(tmp_path: Path, cli,
                                                      argv: list[str]) -> None:
    """Under --detailed-exitcode 2 means changes; a usage error (bad flag, missing recipe)
    exits 1, as with Terraform's -detailed-exitcode."""
    code, out, err = cli("plan", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "w"),
                         *argv)
    assert code == 1, out + err
    code, _, _ = cli("plan", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "w"))
    assert code == 2  # without the flag a usage error keeps its own code


def test_detailed_exitcode_engine_and_refusal_errors_exit_1(tmp_path: Path, offline, cli,
                                                            monkeypatch) -> None:
    """Not only usage errors: a terraform failure (4) and a refusal (3) exit 1 under
    --detailed-exitcode too."""
    if offline is None:
        return
    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    code, out, err = cli("plan", r, "-o", work, "--detailed-exitcode", "--stage", "workloads")
    assert code == 1, out + err  # refused: the cluster does not exist yet
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(tmp_path / "missing.tfrc"))
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(tmp_path / "no-terraform"))
    code, out, err = cli("plan", r, "-o", work, "--detailed-exitcode")
    assert code == 1, out + err
    assert "terraform not found" in err
    code, _, _ = cli("plan", r, "-o", work)
    assert code == 2  # missing: refused before anything runs (a usage error)
    monkeypatch.setenv("MLDIAG_TERRAFORM", shutil.which("false") or "/bin/false")
    code, out, err = cli("plan", r, "-o", work, "--detailed-exitcode")
    assert code == 1, out + err  # terraform ran and failed
    code, _, _ = cli("plan", r, "-o", work)
    assert code == 4


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
def test_wait_timeout_must_be_a_positive_number(tmp_path: Path, cli, value: str) -> None:
    code, out, err = cli("apply", str(tmp_path / "r.yaml"), "-o", str(tmp_path / "w"),
                         "--wait-timeout", value)
    assert code == 2 and "--wait-timeout" in err, out + err


MANUAL = next(r for r in RECIPES if r.stem == "tpu-v5e-manual-agents-standard")


def test_failed_cluster_stage_then_rerun_converges(tmp_path: Path, offline_cluster, gcs, cli,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An apply interrupted between stages (the in-cluster stage fails after the project
    stage succeeded) keeps what was done; the same command re-run goes on from there."""
    if offline_cluster is None:
        return
    r = str(offline_recipe(MANUAL, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    monkeypatch.setenv("MLDIAG_STANDIN_FAIL",
                       "helm_release:Error: INSTALLATION FAILED: context deadline exceeded")
    code, out, err = cli("apply", r, "-o", work, "--auto-approve")
    assert code == 4, out + err
    assert "== project:" in out and "stage workloads" in out
    assert "helm_release" in err and "full log:" in err
    assert cloud_objects(offline_cluster.cloud).get("google_container_cluster") == 1
    monkeypatch.delenv("MLDIAG_STANDIN_FAIL")
    code, out, err = cli("apply", r, "-o", work, "--auto-approve")
    assert code == 0, out + err
    assert "stage project: no changes" in out  # nothing redone in the project stage
    code, out, err = cli("verify", r, "-o", work)
    assert code == 0, out + err
    code, out, err = cli("plan", r, "-o", work, "--detailed-exitcode")
    assert code == 0, out + err


def test_cluster_that_never_answers_fails_the_bounded_wait_with_a_clear_message(
        tmp_path: Path, offline_cluster, gcs, cli) -> None:
    if offline_cluster is None:
        return
    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    offline_cluster.api.stop()  # the endpoint the cluster gets never answers
    code, out, err = cli("apply", r, "-o", work, "--auto-approve", "--wait-timeout", "3")
    assert code == 4, out + err
    assert "the cluster's API server (https://" in err and "is not ready after 3s" in err
    assert "re-run the same command" in err
    assert cloud_objects(offline_cluster.cloud).get("google_container_cluster") == 1


def test_workloads_stage_alone_before_the_cluster_exists_says_what_to_do(
        tmp_path: Path, offline_cluster, gcs, cli) -> None:
    if offline_cluster is None:
        return
    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    code, out, err = cli("apply", r, "-o", work, "--auto-approve", "--stage", "workloads")
    assert code == 3, out + err
    assert "the project stage has not created the cluster yet" in err
    assert cloud_objects(offline_cluster.cloud) == {}
