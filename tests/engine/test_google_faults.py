"""A fresh Google Cloud project refuses what a stack does in the wrong order or with the
wrong shape; the offline stand-in refuses the same (mldiag_provision/sandbox/rules.py, each
rule with
its public source). Each test applies a rendered stack with the real terraform binary:

* the stack as rendered now applies (through our commands);
* the shape it had before (the module text of the old templates, written back into the
  rendered work directory, applied with plain terraform) is refused with Google's message,
  or, for an ordering that Google does not refuse outright, observably happens in the wrong
  order.

``MLDIAG_STANDIN_DELAY`` stretches one resource type's apply the way Google's long
operations do (a GKE cluster takes minutes), so an ordering fault shows up every time.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.conftest import cloud_objects, offline_recipe
from stack_support import RECIPES, terraform_binary

pytestmark = pytest.mark.terraform

BY_NAME = {r.stem: r for r in RECIPES}
LOG_CONFIG = "module.log_analytics.google_logging_project_bucket_config.default"


def recipe_copy(name: str, dest: Path, **changes: object) -> Path:
    """An offline copy of an example recipe; ``changes`` are dotted spec paths."""
    path = offline_recipe(BY_NAME[name], dest)
    doc = yaml.safe_load(path.read_text())
    for dotted, value in changes.items():
        node = doc["spec"]
        *parents, last = dotted.split("__")
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def terraform(work: Path, *args: str, env: dict[str, str] | None = None,
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([terraform_binary() or "terraform", *args, "-no-color"], cwd=work,
                          env={**os.environ, **(env or {})}, text=True, capture_output=True,
                          timeout=300)


def apply_with_terraform(work: Path, env: dict[str, str] | None = None,
                         ) -> subprocess.CompletedProcess[str]:
    """Plain `terraform init` + `apply` of the (patched) work directory."""
    init = terraform(work, "init", "-input=false")
    assert init.returncode == 0, init.stdout + init.stderr
    # parallelism above the stack's width: a slowed resource type never holds up others for
    # want of a slot (Terraform's default is 10), only for a dependency
    return terraform(work, "apply", "-auto-approve", "-input=false", "-parallelism=64",
                     env=env)


def patch(path: Path, old: str, new: str) -> None:
    """Write the old templates' text back into a rendered file."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def render(cli, recipe: Path, work: Path) -> str:
    """`mldiag-provision render`; returns what it printed."""
    code, out, err = cli("render", str(recipe), "-o", str(work))
    assert code == 0, out + err
    return out + err


def render_and_apply(cli, recipe: Path, work: Path,
                     env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The stack as rendered now: its project stage (the root module) applied with plain
    terraform, as the rendered README says (the in-cluster stages need a cluster API)."""
    render(cli, recipe, work)
    return apply_with_terraform(work, env=env)


def created_at(cloud: Path, type_name: str, where) -> list[int]:
    """st_mtime_ns of the stand-in's objects of ``type_name`` whose state matches ``where``
    (an object is written once, when its create completes)."""
    out = []
    for p in (cloud / type_name).glob("*.json"):
        if where(json.loads(p.read_text())["state"]):
            out.append(p.stat().st_mtime_ns)
    return out


# -- ordering: the Workload Identity binding waits for its cluster -------------------------

OLD_POOL_OUTPUT = "google_container_cluster.this.workload_identity_config[0].workload_pool"


@pytest.mark.parametrize("name", ["tpu-v4-2x2x4-autopilot", "tpu7x-2x2x4-standard"])
def test_workload_identity_binding_waits_for_the_cluster(name: str, tmp_path: Path, offline,
                                                         cli) -> None:
    if offline is None:
        return
    slow_cluster = {"MLDIAG_STANDIN_DELAY": "google_container_cluster:2"}
    mode = "autopilot" if "autopilot" in name else "standard"
    # now: the binding reads the pool from the cluster and waits for it
    result = render_and_apply(cli, recipe_copy(name, tmp_path / "new.yaml"),
                              tmp_path / "new", env=slow_cluster)
    assert result.returncode == 0, result.stdout + result.stderr
    assert cloud_objects(offline).get("google_service_account_iam_member") == 1
    # before: the pool was "${var.project_id}.svc.id.goog", known without the cluster
    old = tmp_path / "old"
    render(cli, recipe_copy(name, tmp_path / "old.yaml"), old)
    patch(old / f"modules/gke/{mode}-cluster/outputs.tf", OLD_POOL_OUTPUT,
          '"${var.project_id}.svc.id.goog"')
    result = apply_with_terraform(old, env={**slow_cluster,
                                            "MLDIAG_STANDIN_CLOUD": str(tmp_path / "c1")})
    assert result.returncode != 0
    assert ("Identity Pool does not exist (my-ml-project.svc.id.goog)"
            in result.stdout + result.stderr)


# -- ordering: accelerator node pools wait for the node service account's roles ------------

OLD_NODE_SA_OUTPUT = ('  value = coalesce(\n'
                      '    one(distinct([for m in google_project_iam_member.nodes : '
                      'trimprefix(m.member, "serviceAccount:")])),\n'
                      '    local.node_service_account,\n'
                      '  )')


def _pools_after_grants(cloud: Path) -> tuple[list[int], list[int]]:
    grants = created_at(cloud, "google_project_iam_member",
                        lambda s: "-nodes@" in str(s.get("member")))
    pools = created_at(cloud, "google_container_node_pool", lambda s: s.get("name") != "system")
    assert grants and pools
    return grants, pools


def test_node_pools_wait_for_node_service_account_roles(tmp_path: Path, offline,
                                                        cli) -> None:
    """GKE does not refuse a pool whose nodes lack their roles; the nodes come up unable to
    write logs and metrics or pull images (hardening guide). The order is what is tested:
    every TPU pool is created after the last role grant of its node service account."""
    if offline is None:
        return
    slow_grants = "google_project_iam_member:2"
    result = render_and_apply(cli, recipe_copy("tpu7x-2x2x4-standard", tmp_path / "n.yaml"),
                              tmp_path / "new", env={"MLDIAG_STANDIN_DELAY": slow_grants})
    assert result.returncode == 0, result.stdout + result.stderr
    grants, pools = _pools_after_grants(offline)
    assert min(pools) > max(grants)
    # before: the pool took the account's email straight from the account
    old = tmp_path / "old"
    render(cli, recipe_copy("tpu7x-2x2x4-standard", tmp_path / "old.yaml"), old)
    patch(old / "modules/gke/standard-cluster/outputs.tf", OLD_NODE_SA_OUTPUT,
          "  value = local.node_service_account")
    old_cloud = tmp_path / "c1"
    result = apply_with_terraform(old, env={"MLDIAG_STANDIN_DELAY": slow_grants,
                                            "MLDIAG_STANDIN_CLOUD": str(old_cloud)})
    assert result.returncode == 0, result.stdout + result.stderr
    grants, pools = _pools_after_grants(old_cloud)
    assert min(pools) < max(grants)  # the TPU pool came up before its roles


# -- ordering: nothing uses an API before the stack enabled it -----------------------------

def test_workload_policy_waits_for_the_compute_api(tmp_path: Path, offline, cli) -> None:
    """The TPU7x workload policy references nothing of the cluster; before, it could be
    created before compute.googleapis.com was enabled on a new project."""
    if offline is None:
        return
    slow_services = "google_project_service:2"
    result = render_and_apply(cli, recipe_copy("tpu7x-2x2x4-standard", tmp_path / "n.yaml"),
                              tmp_path / "new", env={"MLDIAG_STANDIN_DELAY": slow_services})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cloud_objects(offline).get("google_compute_resource_policy") == 1
    old = tmp_path / "old"
    render(cli, recipe_copy("tpu7x-2x2x4-standard", tmp_path / "old.yaml"), old)
    patch(old / "main.tf", "project_id          = module.services.project_id",
          "project_id          = local.project_id")
    result = apply_with_terraform(old, env={"MLDIAG_STANDIN_DELAY": slow_services,
                                            "MLDIAG_STANDIN_CLOUD": str(tmp_path / "c1")})
    assert result.returncode != 0
    assert ("Compute Engine API has not been used in project my-ml-project before or it is "
            "disabled" in result.stdout + result.stderr)


def test_node_pool_needs_its_cluster(tmp_path: Path, offline, cli) -> None:
    """The pool names its cluster by the cluster's attribute (module.cluster.name); a name
    written out instead would not wait, and GKE has no cluster to put the pool in."""
    if offline is None:
        return
    work = tmp_path / "old"
    render(cli, recipe_copy("tpu-v5p-2x2x4-standard-reservation", tmp_path / "r.yaml"), work)
    patch(work / "main.tf", "cluster             = module.cluster.name",
          'cluster             = "tpu-v5p-reservation"')
    result = apply_with_terraform(work, env={"MLDIAG_STANDIN_DELAY":
                                             "google_container_cluster:2"})
    assert result.returncode != 0
    assert ("Error 404: Not found: projects/my-ml-project/locations/us-east5/clusters/"
            "tpu-v5p-reservation" in result.stdout + result.stderr)


# -- shape: flex-start multi-host TPU pools size per zone -----------------------------------

OLD_AUTOSCALING = '''      total_min_node_count = 0
      total_max_node_count = var.node_count
      location_policy      = "ANY"'''
NEW_AUTOSCALING = '''      min_node_count  = 0
      max_node_count  = var.node_count
      location_policy = "ANY"'''


def test_flex_start_multi_host_pool_uses_per_zone_limits(tmp_path: Path, offline,
                                                         cli) -> None:
    if offline is None:
        return
    flex = {"slices": [{"name": "v5p-16", "tpu": "v5p", "topology": "2x2x4",
                        "capacity": {"type": "flex-start"}}]}
    result = render_and_apply(cli, recipe_copy("tpu-v5p-2x2x4-standard-reservation",
                                               tmp_path / "n.yaml", **flex), tmp_path / "new")
    assert result.returncode == 0, result.stdout + result.stderr
    pool = next(json.loads(p.read_text())["state"] for p in
                (offline / "google_container_node_pool").glob("*.json")
                if json.loads(p.read_text())["state"]["name"] == "v5p-16")
    assert pool["autoscaling"][0]["max_node_count"] == 4
    assert pool["autoscaling"][0]["location_policy"] == "ANY"
    old = tmp_path / "old"
    render(cli, recipe_copy("tpu-v5p-2x2x4-standard-reservation", tmp_path / "o.yaml",
                            **flex), old)
    patch(old / "modules/gke/accelerator-node-pool/main.tf", NEW_AUTOSCALING, OLD_AUTOSCALING)
    result = apply_with_terraform(old, env={"MLDIAG_STANDIN_CLOUD": str(tmp_path / "c1")})
    assert result.returncode != 0
    assert ("Maximum node count 0 is not a valid size of TPU pod slice with topology 2x2x4"
            in result.stdout + result.stderr)


# -- Log Analytics: on stays on; _Default is never planned for deletion ---------------------

def _deletes(work: Path) -> list[str]:
    plan = terraform(work, "show", "-json", ".mldiag/tfplan")
    doc = json.loads(plan.stdout)
    return [rc["address"] for rc in doc.get("resource_changes", [])
            if "delete" in rc["change"]["actions"]]


def test_log_analytics_off_after_on_forgets_default_and_warns(tmp_path: Path, offline,
                                                              cli) -> None:
    if offline is None:
        return
    on = recipe_copy("tpu-v4-2x2x4-autopilot", tmp_path / "on.yaml")
    off = recipe_copy("tpu-v4-2x2x4-autopilot", tmp_path / "off.yaml",
                      diagnostics__logAnalytics__enabled=False)
    work = tmp_path / "work"
    result = render_and_apply(cli, on, work)
    assert result.returncode == 0, result.stdout + result.stderr
    state_on = (work / "terraform.tfstate").read_bytes()
    # now: a warning that says why, no delete planned, the bucket keeps analytics on
    printed = render(cli, off, work)
    assert "warning[log-analytics-off]" in printed and "cannot be turned off" in printed
    result = terraform(work, "plan", "-input=false", "-out", ".mldiag/tfplan")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _deletes(work) == []
    result = terraform(work, "apply", "-input=false", "-auto-approve", ".mldiag/tfplan")
    assert result.returncode == 0, result.stdout + result.stderr
    state = json.loads((work / "terraform.tfstate").read_text())
    assert not [r for r in state["resources"] if r["type"] ==
                "google_logging_project_bucket_config"]
    bucket = next((offline / "google_logging_project_bucket_config").glob("*.json"))
    assert json.loads(bucket.read_text())["state"]["enable_analytics"] is True
    assert terraform(work, "plan", "-input=false", "-detailed-exitcode").returncode == 0
    # before: the module simply disappeared, and terraform planned to delete the config
    old = tmp_path / "old"
    render(cli, off, old)
    (old / "terraform.tfstate").write_bytes(state_on)
    main = (old / "main.tf").read_text()
    start = main.index("removed {")
    (old / "main.tf").write_text(main[:start] + main[main.index("\n}\n", start) + 3:])
    assert terraform(old, "init", "-input=false").returncode == 0
    result = terraform(old, "plan", "-input=false", "-out", ".mldiag/tfplan")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _deletes(old) == [LOG_CONFIG]


def test_default_bucket_analytics_cannot_be_turned_off(tmp_path: Path, offline, cli) -> None:
    """The provider suppresses enable_analytics true -> false: a config that says false plans
    no change, and a destroy leaves _Default in place (the stand-in as Google and the
    provider behave)."""
    if offline is None:
        return
    work = tmp_path / "work"
    result = render_and_apply(cli, recipe_copy("tpu-v4-2x2x4-autopilot", tmp_path / "r.yaml"),
                              work)
    assert result.returncode == 0, result.stdout + result.stderr
    patch(work / "modules/logging/log-analytics/main.tf", "enable_analytics = true",
          "enable_analytics = false")
    assert terraform(work, "init", "-input=false").returncode == 0
    result = terraform(work, "plan", "-input=false", "-detailed-exitcode",
                       f"-target={LOG_CONFIG}")
    assert result.returncode == 0, result.stdout + result.stderr  # 0: no changes
    result = terraform(work, "destroy", "-auto-approve", "-input=false",
                       f"-target={LOG_CONFIG}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert cloud_objects(offline).get("google_logging_project_bucket_config") == 1


# -- names over their limits: refused by the provider or by Google ------------------------

def test_names_over_limits_are_refused(tmp_path: Path, offline, cli) -> None:
    """Issue 9's example: project id of 29 characters + recipe name of 39 -> a 78-character
    default bucket. Before issue 9 `validate` passed and the stack failed at plan; since
    issue 25 the derived name is cut to 63 characters with a digest (plan/names.fitted), so
    the stand-in, which refuses a bucket name over 63 as Google does, plans it; a name the
    recipe writes itself over the limit is still refused by preflight (the bucket-name rule), before
    anything is rendered."""
    if offline is None:
        return
    recipe = recipe_copy("tpu-v5p-2x2x4-standard-reservation", tmp_path / "r.yaml",
                         project="p" + "x" * 27 + "1")
    doc = yaml.safe_load(recipe.read_text())
    doc["metadata"]["name"] = "r" * 39
    recipe.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out, err = cli("validate", str(recipe))
    assert code == 0, out + err
    work = tmp_path / "work"
    code, out, err = cli("plan", str(recipe), "-o", str(work), "--stage", "project")
    assert code == 0, out + err
    plan = json.loads((work / ".mldiag" / "plan.json").read_text())
    bucket = plan["diagnostics"]["profiles_bucket"]["name"]
    assert len(bucket) <= 63 and bucket.endswith("-profiles"), bucket
    doc["spec"]["diagnostics"]["profilesBucket"] = {"name": "b" * 78}
    recipe.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out, err = cli("validate", str(recipe))
    assert code == 1, out + err
    assert "is not a valid bucket name: 78 characters; at most 63" in out + err
    assert "field: spec.diagnostics.profilesBucket.name" in out + err
    code, out, err = cli("plan", str(recipe), "-o", str(tmp_path / "work2"))
    assert code == 1 and not (tmp_path / "work2" / "main.tf").exists(), out + err


RAW_PROVIDER = """terraform {
  required_providers {
    google = { source = "hashicorp/google" }
  }
}
provider "google" {
  project = "my-ml-project"
  region  = "us-east5"
}
"""


@pytest.mark.parametrize(("body", "message"), [
    ('resource "google_storage_bucket" "b" {\n  name = "%s"\n  location = "US"\n}\n'
     % ("b" * 78), "name value must contain 3-63 characters"),
    ('resource "google_storage_bucket" "b" {\n  name = "goog-profiles"\n  location = "US"\n}\n',
     'cannot begin with the "goog" prefix'),
    ('resource "google_service_account" "a" {\n  account_id = "%s"\n}\n' % ("a" * 31),
     "doesn't match regexp"),
    ('resource "google_project_iam_custom_role" "r" {\n  role_id = "%s"\n  title = "t"\n'
     '  permissions = ["a.b.c"]\n}\n' % ("r" * 65), "doesn't match regexp"),
    ('resource "google_compute_resource_policy" "p" {\n  name = "%s"\n}\n' % ("p" * 64),
     "doesn't match regexp"),
], ids=["bucket-78", "bucket-goog", "service-account-31", "custom-role-65", "policy-64"])
def test_standin_refuses_names_at_plan_as_the_provider_does(body: str, message: str,
                                                            tmp_path: Path, offline) -> None:
    if offline is None:
        return
    (tmp_path / "main.tf").write_text(RAW_PROVIDER + body)
    assert terraform(tmp_path, "init", "-input=false").returncode == 0
    result = terraform(tmp_path, "plan", "-input=false")
    assert result.returncode != 0 and message in result.stderr, result.stdout + result.stderr


def test_standin_refuses_long_node_pool_and_cluster_names(tmp_path: Path, offline) -> None:
    if offline is None:
        return
    services = "".join(
        f'resource "google_project_service" "{s}" {{\n  project = "my-ml-project"\n'
        f'  service = "{s}.googleapis.com"\n}}\n'
        for s in ("container", "iam"))
    cluster = ('resource "google_container_cluster" "c" {\n  name = "%s"\n'
               '  project = "my-ml-project"\n'
               '  location = "us-east5"\n  initial_node_count = 1\n'
               '  deletion_protection = false\n'
               '  depends_on = [google_project_service.container]\n}\n')
    pool = ('resource "google_container_node_pool" "p" {\n  name = "%s"\n'
            '  project = "my-ml-project"\n'
            '  cluster = google_container_cluster.c.name\n  location = "us-east5"\n}\n')
    (tmp_path / "main.tf").write_text(RAW_PROVIDER + services + cluster % "c" + pool % ("p" * 41))
    assert terraform(tmp_path, "init", "-input=false").returncode == 0
    result = terraform(tmp_path, "apply", "-auto-approve", "-input=false")
    assert result.returncode != 0
    assert 'Invalid value for field "node_pool.name"' in result.stderr, result.stderr
    (tmp_path / "main.tf").write_text(RAW_PROVIDER + services + cluster % ("c" * 41)
                                      + pool % "p")
    result = terraform(tmp_path, "apply", "-auto-approve", "-input=false")
    assert result.returncode != 0
    assert 'Invalid value for field "cluster.name"' in result.stderr, result.stderr
    (tmp_path / "main.tf").write_text(RAW_PROVIDER + services + cluster % "c" + pool % "p")
    result = terraform(tmp_path, "apply", "-auto-approve", "-input=false")
    assert result.returncode == 0, result.stderr
