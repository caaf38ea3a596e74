"""The live preflight refuses a name the stack would create that already exists outside the
stack (issue 25, item 5; check ``names``), against mldiag_provision/sandbox/gcp_apis.py.

Each kind from its own source (catalog/data/names.yaml ``uniqueness``): a service account id
is unique in a project and a second create is 409 ALREADY_EXISTS (IAM
projects.serviceAccounts.create); a custom role id is unique in a project and a deleted one is
undeleted by the provider's create (google_project_iam_custom_role); bucket names are global
(Cloud Storage bucket naming); Compute Engine names are unique in a project or region
(https://cloud.google.com/compute/docs/naming-resources#name-uniqueness). Names the work
directory's plan already has are the stack's own and are not asked about.
"""

from __future__ import annotations

import json

from cli_support import run_cli
from live.conftest import recipe_copy
from live.test_live_checks import live, rows

V4 = "tpu-v4-2x2x4-autopilot"  # passes every check in live.conftest's project
V6E = "tpu-v6e-4x4-multislice-standard-spot"  # private cluster: router, NAT, webhook firewall
TPU7X = "tpu7x-2x2x4-standard"  # TPU7x workload policy


def _custom_role_recipe(gcp, repo_root, tmp_path):
    """V4 with custom-role IAM and a named bucket, in a project that supports every
    permission of the role (so only the names decide)."""
    from mldiag_provision.catalog.tpu import load_catalog

    gcp.project.testable = {str(p["permission"]): "SUPPORTED" for p in
                            load_catalog().fact("mlDiagnostics", "customRolePermissions")}
    return recipe_copy(repo_root, V4, tmp_path, diagnostics={
        "logAnalytics": {"retentionDays": 30}, "iam": {"mode": "custom-role"},
        "profilesBucket": {"name": "my-ml-project-v4-profiles"}})


def test_a_service_account_that_exists_fails(gcp, capsys, repo_root):
    rc, doc, _ = live(capsys, repo_root, V4)
    assert rc == 0 and rows(doc, "PASS", "names"), doc["checks"]
    gcp.project.taken = {"serviceAccount": {"tpu-v4-multihost-workload"}}
    rc, doc, _ = live(capsys, repo_root, V4)
    fails = rows(doc, "FAIL", "names")
    assert rc == 1 and len(fails) == 1, doc["checks"]
    assert fails[0]["message"].startswith(
        "service account ID tpu-v4-multihost-workload already exists in project "
        "my-ml-project and is not this stack's: creating it fails with 409 ALREADY_EXISTS")
    assert fails[0]["evidence"] == ("projects/my-ml-project/serviceAccounts/"
                                    "tpu-v4-multihost-workload@my-ml-project.iam."
                                    "gserviceaccount.com")
    assert "diagnostics.serviceAccount.name" in fails[0]["hint"]
    assert ("GRPC", "GetServiceAccount") in gcp.requests


def test_a_custom_role_that_exists_fails_and_a_deleted_one_warns(gcp, capsys, repo_root,
                                                                 tmp_path):
    recipe = _custom_role_recipe(gcp, repo_root, tmp_path)
    gcp.project.taken = {"customRole": {"mlDiagnostics_tpu_v4_multihost"}}
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rc == 1 and [r["evidence"] for r in rows(doc, "FAIL")] == [
        "projects/my-ml-project/roles/mlDiagnostics_tpu_v4_multihost"]
    assert "diagnostics.iam.customRoleId" in rows(doc, "FAIL", "names")[0]["hint"]
    gcp.project.taken = {"customRoleDeleted": {"mlDiagnostics_tpu_v4_multihost"}}
    rc, doc, _ = live(capsys, repo_root, recipe)
    warns = rows(doc, "WARN", "names")
    assert rc == 0 and len(warns) == 1
    assert "deleted less than 7 days ago: the apply undeletes it" in warns[0]["message"]


def test_a_bucket_name_taken_anywhere_fails_or_warns(gcp, capsys, repo_root, tmp_path):
    """Bucket names are global: one in this project fails; one that answers 403 (another
    project's) warns."""
    recipe = _custom_role_recipe(gcp, repo_root, tmp_path)
    gcp.project.taken = {"gcsBucket": {"my-ml-project-v4-profiles"}}
    rc, doc, _ = live(capsys, repo_root, recipe)
    fails = rows(doc, "FAIL")
    assert rc == 1 and [f["evidence"] for f in fails] == ["b/my-ml-project-v4-profiles"]
    assert "already exists in Cloud Storage" in fails[0]["message"]
    assert "diagnostics.profilesBucket.name" in fails[0]["hint"]
    gcp.project.taken = {"gcsBucketHidden": {"my-ml-project-v4-profiles"}}
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rc == 0 and "Cloud Storage answers 403" in rows(doc, "WARN", "names")[0]["message"]


def test_compute_names_that_exist_fail(gcp, capsys, repo_root):
    """A router and firewall rule (regional / global) and a TPU7x workload policy."""
    gcp.project.taken = {"computeRouter": {"tpu-v6e-multislice-spot-router"},
                         "computeFirewall": {"tpu-v6e-multislice-spot-webhooks"}}
    rc, doc, _ = live(capsys, repo_root, V6E)
    assert rc == 1 and sorted(r["evidence"] for r in rows(doc, "FAIL")) == [
        "projects/my-ml-project/global/firewalls/tpu-v6e-multislice-spot-webhooks",
        "projects/my-ml-project/regions/us-east5/routers/tpu-v6e-multislice-spot-router"]
    gcp.project.zones_offering["tpu7x-standard-4t"] = ["us-central1-c"]
    rc, doc, _ = live(capsys, repo_root, TPU7X)
    assert rc == 0 and rows(doc, "PASS", "names"), rows(doc, "FAIL")
    gcp.project.taken = {"computeResourcePolicy": {"tpu7x-standard-ironwood-16-workload"}}
    rc, doc, _ = live(capsys, repo_root, TPU7X)
    assert rc == 1 and [r["evidence"] for r in rows(doc, "FAIL")] == [
        "projects/my-ml-project/regions/us-central1/resourcePolicies/"
        "tpu7x-standard-ironwood-16-workload"]


def test_free_names_pass_and_the_stacks_own_are_not_asked(gcp, capsys, repo_root,
                                                         tmp_path):
    """With -o, the names of the work directory's plan that its state holds are the stack's
    own: taken in the project (it was applied), not asked about, no FAIL."""
    rc, doc, _ = live(capsys, repo_root, V6E)
    assert rc == 0 and rows(doc, "PASS", "names")
    work = tmp_path / "stack"
    code, out, err = run_cli(capsys, ["render", str(repo_root / "recipes" / f"{V6E}.yaml"),
                                      "-o", str(work)])
    assert code == 0, out + err
    plan = json.loads((work / ".mldiag/plan.json").read_text())
    account = plan["diagnostics"]["service_account"]["account_id"]
    router = plan["cluster"]["private"]["router"]
    gcp.project.taken = {"serviceAccount": {account}, "computeRouter": {router}}
    # rendered, never applied: nothing is the stack's own yet
    rc, doc, _ = live(capsys, repo_root, V6E, "-o", str(work))
    assert rc == 1 and len(rows(doc, "FAIL", "names")) == 2
    # applied: the local state (Terraform's format 4) holds both
    (work / "terraform.tfstate").write_text(json.dumps({"version": 4, "resources": [
        {"mode": "managed", "type": "google_service_account", "name": "this",
         "instances": [{"attributes": {"account_id": account}}]},
        {"mode": "managed", "type": "google_compute_router", "name": "nat",
         "instances": [{"attributes": {"name": router}}]}]}))
    gcp.requests.clear()
    rc, doc, _ = live(capsys, repo_root, V6E, "-o", str(work))
    assert rc == 0 and not rows(doc, "FAIL"), rows(doc, "FAIL")
    passed = rows(doc, "PASS", "names")
    assert passed and "are its own already" in passed[0]["message"]
    assert not any("routers" in path for _, path in gcp.requests)
    # the node account is asked about, the workload account (the stack's own) is not
    assert gcp.requests.count(("GRPC", "GetServiceAccount")) == 1
    # without -o the same project refuses them
    rc, doc, _ = live(capsys, repo_root, V6E)
    assert rc == 1 and len(rows(doc, "FAIL", "names")) == 2


def test_a_403_on_the_lookups_is_a_warn_per_kind(gcp, capsys, repo_root, tmp_path):
    recipe = _custom_role_recipe(gcp, repo_root, tmp_path)
    gcp.project.denied = {"storage"}
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rc == 0 and not rows(doc, "FAIL")
    warns = rows(doc, "WARN", "names")
    assert len(warns) == 1 and "answers 403" in warns[0]["message"]


def test_known_names_with_a_remote_backend_are_the_plans_and_without_a_plan_none(
        capsys, repo_root, tmp_path):
    """A gcs backend's state is not read here: every name of the work directory's plan
    counts as the stack's own (never wrongly refused). A local stack never applied: none."""
    from mldiag_provision.plan.owned import owned_names
    from mldiag_provision.preflight.live.target import known_names

    remote, local = tmp_path / "remote", tmp_path / "local"
    for recipe, work in (("tpu-v6e-4x4-multislice-autopilot", remote), (V4, local)):
        code, out, err = run_cli(capsys, ["render", str(repo_root / "recipes" /
                                                          f"{recipe}.yaml"), "-o", str(work)])
        assert code == 0, out + err
    assert 'backend "gcs"' in (remote / "versions.tf").read_text()
    plan = json.loads((remote / ".mldiag/plan.json").read_text())
    assert known_names(remote) == {o.key for o in owned_names(plan)} != set()
    assert known_names(local) == frozenset()
    assert known_names(tmp_path / "nothing-here") == frozenset()
    assert known_names(None) == frozenset()
