"""The permission list is derived from the rendered stack with sourced data
(preflight/live/data/gcp.yaml); no Google Cloud involved."""

from __future__ import annotations

import pytest
import yaml

from mldiag_provision.preflight.live.target import (
    build_target,
    facts,
    resource_types,
    role_for,
)
from stack_support import RECIPES

NO_PERMISSION = {"data.google_client_config"}  # the caller's own token


def _target(path, **spec):
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_text
    from mldiag_provision.plan.stack import build_plan
    from mldiag_provision.render.stack import render_stack

    doc = yaml.safe_load(path.read_text())
    doc["spec"].update(spec)
    catalog = load_catalog()
    res = check_text(yaml.safe_dump(doc), str(path), catalog)
    assert res.parsed.recipe is not None and not res.report.errors
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    files = render_stack(plan)
    return build_target(plan, files), files


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_every_google_type_a_stack_renders_has_sourced_permissions(recipe):
    target, files = _target(recipe)
    table = facts()["resources"]
    for rtype in resource_types(files) - NO_PERMISSION:
        assert rtype in table, f"{rtype} (rendered for {recipe.name}) has no permission data"
        assert table[rtype]["source"].startswith("https://"), rtype
    for perm in target.permissions:
        assert role_for(perm), f"{perm}: no predefined role on record"


def test_permissions_follow_what_the_stack_creates(repo_root):
    autopilot, _ = _target(repo_root / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")
    assert "container.clusters.create" in autopilot.permissions
    assert autopilot.permissions["container.clusters.create"] == ("google_container_cluster",)
    assert "compute.resourcePolicies.create" not in autopilot.permissions  # no node pools
    existing, _ = _target(repo_root / "recipes" / "existing-gke-cluster.yaml")
    assert "container.clusters.create" not in existing.permissions
    assert "container.clusters.get" in existing.permissions
    assert existing.existing == ("us-central1", "research-cluster", existing.existing[2],
                                 "my-ml-project.svc.id.goog")


def test_an_existing_profiles_bucket_needs_no_create_permission(repo_root):
    path = repo_root / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"
    doc = yaml.safe_load(path.read_text())
    diag = doc["spec"]["diagnostics"]
    diag["profilesBucket"] = {"name": "team-profiles", "create": False}
    target, _ = _target(path, diagnostics=diag)
    assert "storage.buckets.create" not in target.permissions
    assert "storage.buckets.get" in target.permissions


def test_role_for_prefers_the_longest_prefix():
    assert role_for("iam.serviceAccounts.actAs") == "roles/iam.serviceAccountUser"
    assert role_for("iam.serviceAccounts.create") == "roles/iam.serviceAccountAdmin"
    assert role_for("unknown.things.do") is None
