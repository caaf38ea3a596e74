"""Two stacks in one project (issue 25, "Stacks collide"), applied with the real terraform
binary against the stand-in, whose create of a named object that already exists fails with
Google's 409 (mldiag_provision/sandbox/plugin.py ``CONFLICT_ON_CREATE``; IAM: an account id
"is unique
within a project", https://cloud.google.com/iam/reference/rest/v1/projects.serviceAccounts/create).

* now: two recipes that differ only in ``metadata.name`` both apply in one project, and
  destroying one leaves the other's service account, custom role and bucket;
* before: the shared default names (written out in both recipes as the old code derived
  them) make the second apply fail with 409 "already exists".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.test_google_faults import apply_with_terraform, recipe_copy, render, terraform

pytestmark = pytest.mark.terraform

RECIPE = "tpu-v5e-2x4-single-host-autopilot"  # custom-role IAM: account, role and bucket


def _stack(tmp_path: Path, name: str, **diagnostics: object) -> Path:
    path = recipe_copy(RECIPE, tmp_path / f"{name}.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["metadata"]["name"] = name
    diag = doc["spec"]["diagnostics"]
    diag["profilesBucket"].pop("name")  # the example names its bucket; let it be derived
    diag.update(diagnostics)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _objects(cloud: Path, type_name: str) -> set[str]:
    """The ``name``/``account_id``/``role_id`` of every stand-in object of ``type_name``."""
    out = set()
    for p in (cloud / type_name).glob("*.json"):
        state = json.loads(p.read_text())["state"]
        out.add(str(state.get("account_id") or state.get("role_id") or state.get("name")))
    return out


def test_two_new_stacks_apply_in_one_project_and_destroy_apart(tmp_path: Path, offline,
                                                                cli) -> None:
    if offline is None:
        return
    works = {}
    for name in ("team-a", "team-b"):
        works[name] = tmp_path / name
        render(cli, _stack(tmp_path, name), works[name])
        result = apply_with_terraform(works[name])
        assert result.returncode == 0, result.stdout + result.stderr
    accounts = _objects(offline, "google_service_account")
    assert {"team-a-workload", "team-b-workload", "team-a-nodes", "team-b-nodes"} <= accounts
    assert {"mlDiagnostics_team_a", "mlDiagnostics_team_b"} <= _objects(
        offline, "google_project_iam_custom_role")
    destroyed = terraform(works["team-a"], "destroy", "-auto-approve", "-input=false")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    after = _objects(offline, "google_service_account")
    assert "team-b-workload" in after and "team-a-workload" not in after
    assert _objects(offline, "google_project_iam_custom_role") == {"mlDiagnostics_team_b"}
    assert any(b.endswith("-team-b-profiles")
               for b in _objects(offline, "google_storage_bucket"))


def test_the_old_shared_names_collide_with_409(tmp_path: Path, offline, cli) -> None:
    """What every stack derived before: mldiag-workload and mlDiagnosticsWorkload."""
    if offline is None:
        return
    old = {"serviceAccount": {"name": "mldiag-workload", "create": True},
           "iam": {"mode": "custom-role", "customRoleId": "mlDiagnosticsWorkload"}}
    first = tmp_path / "one"
    render(cli, _stack(tmp_path, "team-a", **old), first)
    assert apply_with_terraform(first).returncode == 0
    second = tmp_path / "two"
    render(cli, _stack(tmp_path, "team-b", **old), second)
    result = apply_with_terraform(second)
    assert result.returncode != 0
    assert "Error 409" in result.stdout + result.stderr
    assert "already exists" in result.stdout + result.stderr
