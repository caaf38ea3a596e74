"""Stacks in one project (issue 25, item 5): every project-scoped name a new stack derives is
unique per stack; a stack that already exists keeps the names it has.

Collisions, each from its own public source (catalog/data/names.yaml ``uniqueness``):
  * service account ids are unique in a project; a second create answers 409 ALREADY_EXISTS
    (IAM v1 projects.serviceAccounts.create: https://cloud.google.com/iam/reference/rest/v1/projects.serviceAccounts/create;
    hashicorp/terraform-provider-google#16927);
  * custom role ids are unique in a project, and a deleted one stays taken for 7 to 37 days
    (hashicorp/google google_project_iam_custom_role:
    https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/google_project_iam_custom_role);
  * bucket names are global ("Bucket names reside in a single namespace that is shared by all
    Cloud Storage users": https://cloud.google.com/storage/docs/buckets#naming);
  * Compute Engine names "must be unique within a location within a project" (routers, NAT,
    firewall rules, resource policies, networks:
    https://cloud.google.com/compute/docs/naming-resources#name-uniqueness).

tests/data/legacy_plans/*.plan.json are the plan.json files the tool wrote before this
change (tests/golden/stacks/<recipe>/.mldiag/plan.json at commit 523aaba of main): what an
existing work directory holds.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag_provision.catalog.names import load_name_limits
from mldiag_provision.catalog.store import store
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_text
from mldiag_provision.plan import names
from mldiag_provision.plan.owned import owned_names
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.plan.types import StackPlan
from stack_support import RECIPES, REPO_ROOT

LEGACY = REPO_ROOT / "tests" / "data" / "legacy_plans"
SHARED_PROJECT = "shared-ml-project"
CATALOG = load_catalog()


def _doc(recipe: str | Path) -> dict[str, Any]:
    path = recipe if isinstance(recipe, Path) else REPO_ROOT / "recipes" / recipe
    return yaml.safe_load(path.read_text())


def _plan(doc: dict[str, Any], previous: dict[str, Any] | None = None) -> StackPlan:
    res = check_text(yaml.safe_dump(doc, sort_keys=False), "<test>", CATALOG)
    errors = [p.message for p in res.report.problems if p.severity.value == "error"]
    assert res.parsed.recipe is not None and not errors, errors
    return build_plan(res.parsed.recipe, res.shapes, CATALOG, previous)


def _renamed(recipe: str, name: str, project: str = SHARED_PROJECT) -> dict[str, Any]:
    doc = _doc(recipe)
    doc["metadata"]["name"] = name
    doc["spec"]["project"] = project
    return doc


def _names(plan: StackPlan) -> set[tuple[str, str]]:
    return {(o.kind, o.name) for o in owned_names(plan.to_dict())}


# --- the core test: every pair of bundled recipes in one project ----------------------------

def _bundled_in_one_project() -> dict[str, StackPlan]:
    out = {}
    for recipe in RECIPES:
        doc = _doc(recipe)
        doc["spec"]["project"] = SHARED_PROJECT
        out[recipe.stem] = _plan(doc)
    return out


def test_every_pair_of_bundled_recipes_shares_no_project_scoped_name() -> None:
    """Two new stacks in one project derive disjoint names (compared by kind and name,
    ignoring the region: stricter than Google's own scopes). On main before issue 25 every
    Kubernetes pair shared mldiag-workload (and the custom-role pairs mlDiagnosticsWorkload)."""
    plans = _bundled_in_one_project()
    assert len(plans) >= 10
    for a, b in itertools.combinations(sorted(plans), 2):
        shared = _names(plans[a]) & _names(plans[b])
        assert not shared, f"{a} and {b} in one project would both create {sorted(shared)}"
    # the kinds the issue names are all covered by some recipe
    kinds = {kind for p in plans.values() for kind, _ in _names(p)}
    assert {"serviceAccount", "gcsBucket", "computeRouter", "routerNat", "computeFirewall",
            "computeNetwork", "computeSubnetwork", "computeResourcePolicy", "customRole",
            "gkeCluster", "slurmCluster"} <= kinds, kinds


def test_the_stacks_recorded_before_collided() -> None:
    """The regression the pair test guards: two plans the old code wrote (recorded) create
    the same service account in one project."""
    a, b = (json.loads((LEGACY / f"{n}.plan.json").read_text())
            for n in ("tpu7x-2x2x4-standard", "tpu-v5e-2x4-single-host-autopilot"))
    shared = {o.key for o in owned_names(a)} & {o.key for o in owned_names(b)}
    assert ("serviceAccount", "projects/my-ml-project", "mldiag-workload") in shared


def test_every_kind_owned_has_a_sourced_uniqueness_fact() -> None:
    """The kinds plan/owned.py uses are the keys of names.yaml ``uniqueness``, each a fact
    with a source and a scope."""
    facts = store()
    unique = facts.doc("names")["uniqueness"]
    kinds = {kind for p in _bundled_in_one_project().values() for kind, _ in _names(p)}
    kinds |= {"filestoreInstance", "lustreInstance"}
    assert kinds <= set(unique), kinds - set(unique)
    for kind, raw in unique.items():
        fact = facts.as_fact(raw)
        assert fact.url and raw["scope"] in ("global", "project", "project-location",
                                             "router"), kind


# --- collisions, one source each -------------------------------------------------------------

def test_workload_service_accounts_of_two_stacks_differ() -> None:
    """IAM: an account id is unique in a project and a second create is 409 ALREADY_EXISTS,
    so two stacks that differ only in metadata.name must not derive one account."""
    one = _plan(_renamed("tpu-v4-2x2x4-autopilot.yaml", "team-a"))
    two = _plan(_renamed("tpu-v4-2x2x4-autopilot.yaml", "team-b"))
    ids = [p.diagnostics.service_account.account_id  # type: ignore[attr-defined]
           for p in (one, two)]
    assert ids == ["team-a-workload", "team-b-workload"]
    limit = load_name_limits()["serviceAccountId"]
    assert all(limit.why_invalid(i) is None for i in ids)
    assert one.diagnostics.service_account.email == (  # type: ignore[attr-defined]
        f"team-a-workload@{SHARED_PROJECT}.iam.gserviceaccount.com")


def test_long_stack_names_with_one_prefix_still_give_two_service_accounts() -> None:
    """Service account ids are at most 30 characters: a cut name gets a digest of the whole
    stack name. The old node account (cut at 24, no digest) gave two 40-character cluster
    names with one prefix the same account."""
    a = "research-tpu-v6e-multislice-training-a"
    b = "research-tpu-v6e-multislice-training-b"
    assert names.legacy_node_service_account_id(a) == names.legacy_node_service_account_id(b)
    limit = load_name_limits()["serviceAccountId"]
    for derive in (names.node_service_account_id, names.workload_service_account_id):
        ida, idb = derive(a), derive(b)
        assert ida != idb
        assert limit.why_invalid(ida) is None and limit.why_invalid(idb) is None, (ida, idb)
    plans = [_plan(_renamed("tpu-v5e-private-standard.yaml", n)) for n in (a, b)]
    assert not (_names(plans[0]) & _names(plans[1]))
    # short cluster names keep the account they always had
    assert names.node_service_account_id("tpu-v4-multihost") == "tpu-v4-multihost-nodes"


def test_custom_roles_of_two_stacks_differ_and_stay_put() -> None:
    """Custom role ids are unique in a project, and a deleted id stays taken for 7 to 37 days
    (the provider undeletes within 7): one role per stack, the same on every render of that
    stack, within 3-64 characters of [a-zA-Z0-9_.] even for a 40-character name."""
    one = _plan(_renamed("tpu-v5e-2x4-single-host-autopilot.yaml", "team-a"))
    two = _plan(_renamed("tpu-v5e-2x4-single-host-autopilot.yaml", "team-b"))
    again = _plan(_renamed("tpu-v5e-2x4-single-host-autopilot.yaml", "team-a"))
    roles = [p.diagnostics.iam.custom_role_id for p in (one, two, again)]
    assert roles == ["mlDiagnostics_team_a", "mlDiagnostics_team_b", "mlDiagnostics_team_a"]
    limit = load_name_limits()["customRoleId"]
    longest = names.custom_role_id("a" * 20 + "-" * 19 + "z")
    assert limit.why_invalid(longest) is None and len(longest) == 54
    # the reuse window the README and the module variables state is the fact's
    assert store().doc("names")["uniqueness"]["customRole"]["reuseAfterDeleteDays"] == 37
    # a slurm stack's node role is the same derived id
    slurm = _plan(_renamed("slurm-a3-ultra-lustre.yaml", "team-c"))
    assert slurm.diagnostics.iam.custom_role_id == "mlDiagnostics_team_c"


def test_profiles_buckets_are_global_so_project_and_stack_are_in_the_name() -> None:
    """Bucket names share one global namespace: the default has the project and the stack in
    it, and a long project + stack is cut to 63 characters with a digest, not refused."""
    a = _plan(_renamed("tpu-v4-2x2x4-autopilot.yaml", "team-a"))
    b = _plan(_renamed("tpu-v4-2x2x4-autopilot.yaml", "team-a", project="other-ml-project"))
    assert a.diagnostics.profiles_bucket.name == f"{SHARED_PROJECT}-team-a-profiles"
    assert b.diagnostics.profiles_bucket.name == "other-ml-project-team-a-profiles"
    project = "a-very-long-project-id-00001"  # 28 of 30 characters
    stack_1 = "research-tpu-v6e-multislice-training-one"
    stack_2 = "research-tpu-v6e-multislice-training-two"
    b1, b2 = (names.default_profiles_bucket(project, s) for s in (stack_1, stack_2))
    limit = load_name_limits()["gcsBucket"]
    assert b1 != b2 and limit.why_invalid(b1) is None and limit.why_invalid(b2) is None
    assert b1.endswith("-profiles") and len(b1) <= 63


def test_compute_names_of_two_stacks_with_one_slice_name_differ() -> None:
    """Compute Engine names are unique in a project (global resources) or in a region: two
    TPU7x stacks whose slices share a name got one workload policy '<pool>-workload' before;
    routers, NAT gateways and firewall rules carry the cluster name."""
    one = _plan(_renamed("tpu7x-2x2x4-standard.yaml", "team-a"))
    two = _plan(_renamed("tpu7x-2x2x4-standard.yaml", "team-b"))
    pools = [p.node_pools[0] for p in (one, two)]
    assert pools[0].name == pools[1].name == "ironwood-16"
    assert [p.workload_policy_name for p in pools] == ["team-a-ironwood-16-workload",
                                                       "team-b-ironwood-16-workload"]
    assert names.legacy_workload_policy_name(pools[0].name) == "ironwood-16-workload"
    privates = [p.cluster.private for p in (one, two)]  # type: ignore[attr-defined]
    assert {p.router for p in privates} == {"team-a-router", "team-b-router"}
    assert {p.nat for p in privates} == {"team-a-nat", "team-b-nat"}
    # a 40-character cluster and a 40-character slice name still fit 63 characters
    long = names.workload_policy_name("c" * 40, "s" * 38 + "-1")
    assert load_name_limits()["computeResource"].why_invalid(long) is None


def test_explicit_names_stay_as_written() -> None:
    doc = _renamed("tpu-v5e-2x4-single-host-autopilot.yaml", "team-a")
    doc["spec"]["diagnostics"]["serviceAccount"] = {"name": "shared-trainer", "create": True}
    doc["spec"]["diagnostics"]["iam"]["customRoleId"] = "myMlDiagRole"
    plan = _plan(doc)
    assert plan.diagnostics.service_account.account_id == "shared-trainer"  # type: ignore[attr-defined]
    assert plan.diagnostics.iam.custom_role_id == "myMlDiagRole"
    # recipes/tpu7x-2x2x2-autopilot.yaml names its account
    assert _plan(_doc("tpu7x-2x2x2-autopilot.yaml")).diagnostics.service_account.account_id \
        == "ironwood-workload"  # type: ignore[attr-defined]


def test_gcp_names_checks_the_derived_defaults(cli, tmp_path: Path) -> None:
    """preflight ``gcp-names`` checks the names the plan derives: a 40-character stack name
    validates (every derived name is cut to its limit)."""
    doc = _renamed("tpu7x-2x2x4-standard.yaml", "research-tpu7x-ironwood-standard-trainer1")
    doc["metadata"]["name"] = doc["metadata"]["name"][:40]
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, out, err = cli("validate", str(path))
    assert code == 0, out + err
    assert "gcp-names" not in out + err


# --- an existing stack keeps its names -------------------------------------------------------

def _replace_plan(workdir: Path, plan: dict[str, Any]) -> None:
    """Put ``plan`` in ``workdir`` as the tool that rendered it wrote it: plan.json and its
    hash in the manifest (so it is not an edit by hand)."""
    data = (json.dumps(plan, indent=2, sort_keys=True) + "\n").encode()
    (workdir / ".mldiag/plan.json").write_bytes(data)
    manifest_path = workdir / ".mldiag/manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][".mldiag/plan.json"] = hashlib.sha256(data).hexdigest()
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _render(cli, recipe: Path, out: Path) -> tuple[dict[str, Any], str]:
    code, stdout, stderr = cli("--no-color", "render", str(recipe), "-o", str(out))
    assert code == 0, stdout + stderr
    return json.loads((out / ".mldiag/plan.json").read_text()), stdout


# What the bundled recipes said when the legacy plans were recorded; the recipes changed
# since (issue 31: a JobSet workload, whose controller's webhook gets a firewall rule on the
# private cluster; the v5e seed moved from us-west4 to us-central1), which changes names that
# are not the kept ones.
_RECORDED_FROM = {
    "tpu7x-2x2x4-standard": [("      kind: JobSet\n", "")],
    "tpu-v5e-2x4-single-host-autopilot": [
        ("  region: us-central1\n", "  region: us-west4\n"),
        ("  diagnostics:\n", "  diagnostics:\n    mlrunRegion: us-central1\n")],
}


def _as_recorded(stem: str, tmp_path: Path) -> Path:
    """The bundled recipe as it was when ``LEGACY/<stem>.plan.json`` was rendered."""
    text = (REPO_ROOT / "recipes" / f"{stem}.yaml").read_text()
    for before, after in _RECORDED_FROM[stem]:
        assert text.count(before) == 1, (stem, before)
        text = text.replace(before, after)
    path = tmp_path / f"{stem}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("stem", ["tpu7x-2x2x4-standard", "tpu-v5e-2x4-single-host-autopilot"])
def test_a_stack_rendered_before_keeps_its_names(stem: str, cli, tmp_path: Path) -> None:
    """A work directory whose plan.json the old code wrote (recorded): render again, and the
    workload service account, custom role and TPU7x workload policy keep their old names (a
    decision line says so); rendering twice changes nothing; a fresh directory gets the new
    names."""
    recipe = _as_recorded(stem, tmp_path)
    old = json.loads((LEGACY / f"{stem}.plan.json").read_text())
    out = tmp_path / "stack"
    _render(cli, recipe, out)
    _replace_plan(out, old)
    kept, stdout = _render(cli, recipe, out)
    d = kept["diagnostics"]
    assert d["service_account"]["account_id"] == "mldiag-workload"
    assert d["service_account"]["email"] == old["diagnostics"]["service_account"]["email"]
    assert d["iam"]["custom_role_id"] == "mlDiagnosticsWorkload"
    for pool in kept.get("node_pools", ()):
        if pool["workload_policy"]:
            assert pool["workload_policy_name"] == f"{pool['name']}-workload"
    assert {o.key for o in owned_names(old)} == {o.key for o in owned_names(kept)}
    assert "workload service account mldiag-workload: kept" in stdout
    assert any("kept, the stack in this work directory has it" in line
               for line in kept["decisions"])
    if old["diagnostics"]["iam"]["mode"] == "custom-role":
        assert "custom role mlDiagnosticsWorkload: kept" in stdout
    main_tf = (out / "main.tf").read_text()
    assert 'account_id                       = "mldiag-workload"' in main_tf
    again, _ = _render(cli, recipe, out)  # stable: the kept names stay kept
    assert again == kept
    fresh, _ = _render(cli, recipe, tmp_path / "fresh")
    assert fresh["diagnostics"]["service_account"]["account_id"] == (
        names.workload_service_account_id(fresh["name"]))
    assert not any("kept, the stack" in line for line in fresh["decisions"])


def test_a_long_cluster_keeps_its_cut_node_account() -> None:
    """The node service account of a cluster name over 24 characters was cut without a
    digest; a previous plan with that account keeps it, a new stack gets the digest."""
    name = "research-tpu-v5e-private-standard-a"
    doc = _renamed("tpu-v5e-private-standard.yaml", name)
    new = _plan(doc)
    account = new.cluster.node_service_account.account_id  # type: ignore[attr-defined]
    legacy = names.legacy_node_service_account_id(name)
    assert account != legacy
    previous = copy.deepcopy(new.to_dict())
    previous["cluster"]["node_service_account"]["account_id"] = legacy
    kept = _plan(doc, previous)
    assert kept.cluster.node_service_account.account_id == legacy  # type: ignore[attr-defined]
    assert kept.cluster.node_service_account_id == legacy  # type: ignore[attr-defined]
    assert any(line.startswith(f"node service account {legacy}: kept")
               for line in kept.decisions)


def test_a_previous_plan_with_new_or_other_names_changes_nothing() -> None:
    """Only the old defaults are kept: a previous plan that already has the new names (or
    names a recipe once stated) does not pin anything."""
    doc = _renamed("tpu-v5e-2x4-single-host-autopilot.yaml", "team-a")
    new = _plan(doc)
    assert _plan(doc, new.to_dict()).to_dict() == new.to_dict()
    other = copy.deepcopy(new.to_dict())
    other["diagnostics"]["service_account"]["account_id"] = "hand-written"
    assert _plan(doc, other).diagnostics.service_account.account_id == "team-a-workload"  # type: ignore[attr-defined]


def test_a_previous_plan_of_another_stack_is_ignored(cli, tmp_path: Path) -> None:
    """previous_plan_of reads a work directory's plan only for the same stack name."""
    from mldiag_provision.plan.previous import previous_plan_of

    out = tmp_path / "stack"
    _render(cli, REPO_ROOT / "recipes/tpu-v4-2x2x4-autopilot.yaml", out)
    assert previous_plan_of(out, "tpu-v4-multihost") is not None
    assert previous_plan_of(out, "another-stack") is None
    assert previous_plan_of(None, "tpu-v4-multihost") is None
    assert previous_plan_of("", "tpu-v4-multihost") is None
