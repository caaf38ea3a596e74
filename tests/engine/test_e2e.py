"""End to end through OUR commands, with the real terraform binary and the offline stand-in
providers wired by the test fixtures (tests/engine/conftest.py): drift, the destructive-change
guard, confirmation and deletion protection.

Every example recipe's one lifecycle (apply -> verify -> re-plan -> destroy, with the
checks of the agents/ stage) runs through ``--sandbox`` as a user types it, on the recipe as
written: tests/sandbox/test_examples_lifecycle.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from engine.conftest import cloud_objects, offline_recipe
from stack_support import RECIPES

pytestmark = pytest.mark.terraform


def _rc(result: tuple[int, str, str]) -> int:
    return result[0]


def _destroyed(cli, r: Path, work: str, cloud: Path, existing: dict[str, int]) -> None:
    """`destroy` of every stage leaves only what the README says is kept (enabled APIs,
    _Default's Log Analytics, a pre-existing cluster)."""
    code, out, err = cli("destroy", str(r), "-o", work, "--auto-approve")
    assert code == 0, out + err
    assert "destroy complete:" in out
    left = {k: v for k, v in cloud_objects(cloud).items()
            if k not in ("google_project_service", "google_logging_project_bucket_config")}
    assert left == {k: v for k, v in existing.items()
                    if k not in ("google_project_service",
                                 "google_logging_project_bucket_config")}, cloud_objects(cloud)
    bucket = next((cloud / "google_logging_project_bucket_config").glob("*.json"))
    assert json.loads(bucket.read_text())["state"]["enable_analytics"] is True


AUTOPILOT = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")


def test_drift_check_exit_codes(tmp_path: Path, offline, offline_cluster, gcs, cli) -> None:
    if offline is None:
        return
    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    work = str(tmp_path / "work")
    assert _rc(cli("apply", r, "-o", work, "--auto-approve")) == 0
    assert _rc(cli("plan", r, "-o", work, "--detailed-exitcode")) == 0
    code, out, err = cli("output", r, "-o", work, "--output", "json")
    assert code == 0, err
    assert json.loads(out)["cluster_name"] == "tpu-v4-multihost"
    code, out, err = cli("output", r, "-o", work, "--name", "profiles_bucket")
    assert (code, out) == (0, "gs://my-ml-project-tpu-v4-multihost-profiles\n"), err
    # Someone changes the bucket's labels by hand in the "cloud".
    bucket = next((offline / "google_storage_bucket").glob("*.json"))
    doc = json.loads(bucket.read_text())
    doc["state"]["labels"] = {"edited": "by-hand"}
    bucket.write_text(json.dumps(doc))
    code, out, err = cli("plan", r, "-o", work, "--detailed-exitcode")
    assert code == 2, out + err
    assert "drift: module.profiles_bucket.google_storage_bucket.this[0]" in out
    drift_line = next(line for line in out.splitlines() if line.strip().startswith("drift:"))
    assert drift_line.endswith("changed outside Terraform: labels.edited, labels.team") or \
        "labels." in drift_line, drift_line  # the changed attributes are named
    assert "1 to update" in out
    # Without the flag a plan with changes is still a success.
    assert _rc(cli("plan", r, "-o", work)) == 0
    # One `destroy` takes the whole applied stack (workloads, cluster and project stages).
    _destroyed(cli, r, work, offline, {})


def test_destructive_change_is_announced_and_needs_confirmation(tmp_path: Path, offline,
                                                                offline_cluster, gcs, cli,
                                                                monkeypatch) -> None:
    if offline is None:
        return
    r = offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml")
    work = str(tmp_path / "work")
    assert _rc(cli("apply", str(r), "-o", work, "--auto-approve")) == 0
    before = sorted(p.read_text() for p in offline.rglob("*.json"))
    moved = offline_recipe(AUTOPILOT, tmp_path / "moved.yaml", zone=None,
                           region="us-central1")

    # The default policy gate refuses a plan that replaces the cluster and the bucket...
    code, out, err = cli("plan", str(moved), "-o", work, "--output", "json")
    assert code == 1, out + err
    refused = json.loads(out)
    assert refused["policy"]["ok"] is False
    assert "plan-destructive-delete" in out, out
    # ...until the recipe allows those deletes; then the confirmation below is the guard.
    doc = yaml.safe_load(moved.read_text(encoding="utf-8"))
    doc["spec"]["policy"]["allowDeletes"] = ["cluster", "profiles-bucket"]
    moved.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")

    code, out, err = cli("plan", str(moved), "-o", work, "--output", "json")
    assert code == 0, out + err
    plan = json.loads(out)
    assert plan["summary"]["replace"] >= 2, plan["summary"]  # cluster and bucket move
    assert any("REPLACES the GKE cluster" in d for d in plan["dangers"]), plan["dangers"]

    # Not a terminal, no --auto-approve: refused (exit 3), loud warning, nothing changed.
    code, out, err = cli("apply", str(moved), "-o", work)
    assert code == 3, out + err
    assert "WARNING: this plan has" in err and "REPLACES the GKE cluster" in err
    assert "--auto-approve" in err
    assert sorted(p.read_text() for p in offline.rglob("*.json")) == before

    # On a terminal, anything but "yes" cancels.
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty("no\n"))
    code, out, err = cli("apply", str(moved), "-o", work)
    assert code == 3 and "cancelled" in err, out + err
    assert sorted(p.read_text() for p in offline.rglob("*.json")) == before
    monkeypatch.setattr("sys.stdin", Tty("yes\n"))
    code, out, err = cli("apply", str(moved), "-o", work)
    assert code == 0, out + err
    assert "THIS IS DESTRUCTIVE" in out and "apply complete" in out
    assert _rc(cli("plan", str(moved), "-o", work, "--detailed-exitcode")) == 0


def test_work_dir_of_another_recipe_is_refused(tmp_path: Path, offline, cli) -> None:
    if offline is None:
        return
    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    other = str(offline_recipe(next(x for x in RECIPES if x.stem.startswith("tpu7x")),
                               tmp_path / "other.yaml"))
    work = str(tmp_path / "work")
    assert _rc(cli("plan", r, "-o", work)) == 0
    code, out, err = cli("apply", other, "-o", work, "--auto-approve")
    assert code == 3, out + err
    assert "holds" in err
