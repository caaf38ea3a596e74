"""Every example recipe with ``engine: pulumi``: ``validate`` and ``render`` accept it, the
rendered Pulumi program (both stages) runs under Pulumi's own mock runtime, and it exports the
Terraform stack's outputs (same names, same sensitivity) and carries its protections. Runs
without terraform and without the pulumi CLI."""

from __future__ import annotations

import re
from pathlib import Path

import hcl2
import pytest
import yaml

from pulumi_engine.support import mock_run, render, with_engine
from sampling import fast_sample
from stack_support import RECIPES, render_files

IDS = [r.stem for r in RECIPES]
# the program under mocks takes 5 to 40 s a recipe on the 2-core machine: the fast lane runs
# one recipe per orchestrator and accelerator kind (tests/sampling.py, fast_sample)
_FAST = fast_sample(RECIPES)
SAMPLED = [pytest.param(r, id=r.stem, marks=() if r.stem in _FAST else pytest.mark.slow)
           for r in RECIPES]


def _tf_outputs(files: dict[str, bytes], stage: str) -> dict[str, bool]:
    """Output name -> sensitive, from the Terraform stack's outputs.tf of a stage."""
    doc = hcl2.loads(files[f"{stage}outputs.tf"].decode())
    out: dict[str, bool] = {}
    for block in doc.get("output", []):
        for name, body in block.items():
            out[name.strip("\"")] = body.get("sensitive", False) in (True, "true")
    return out


@pytest.mark.parametrize("recipe", RECIPES, ids=IDS)
def test_validate_and_render_accept_engine_pulumi(recipe: Path, tmp_path: Path, cli) -> None:
    r = with_engine(recipe, tmp_path / recipe.name, "pulumi")
    code, out, err = cli("--no-color", "validate", str(r))
    assert code == 0, out + err
    files = render(cli, r, tmp_path / "out")
    assert "Pulumi.yaml" in files and "__main__.py" in files
    assert not [f for f in files if f.endswith(".tf")], "a Pulumi stack has no Terraform files"
    assert (("agents/__main__.py" in files)
            == ("agents/main.tf" in render_files(recipe)))
    assert b"pulumi up" in files["README.md"] and b"terraform" not in files["README.md"]
    spec = yaml.safe_load(recipe.read_text())["spec"]
    backend = (spec.get("engine") or {}).get("backend") or {}
    project = yaml.safe_load(files["Pulumi.yaml"])
    if backend.get("type") == "gcs":
        assert project["backend"]["url"].startswith(f"gs://{backend['bucket']}/")
    else:
        assert "backend" not in project


@pytest.mark.parametrize("recipe", SAMPLED)
def test_program_runs_under_mocks_with_terraform_outputs(recipe: Path, tmp_path: Path,
                                                         cli) -> None:
    tf_files = render_files(recipe)
    r = with_engine(recipe, tmp_path / recipe.name, "pulumi")
    render(cli, r, tmp_path / "out")
    stages = [("", tmp_path / "out")]
    if (tmp_path / "out" / "agents").is_dir():
        stages.append(("agents/", tmp_path / "out" / "agents"))
    spec = yaml.safe_load(recipe.read_text())["spec"]
    orch = spec["orchestrator"]
    for prefix, program in stages:
        run = mock_run(program)
        got = {k: v["sensitive"] for k, v in run["outputs"].items()}
        want = _tf_outputs(tf_files, prefix)
        assert got == want, f"{recipe.stem} {prefix or 'project '}outputs: {got} != {want}"
        resources = [x for x in run["resources"] if x["custom"]
                     and not x["type"].startswith("pulumi:providers:")]
        assert resources, f"{recipe.stem}: the program registered no resource"
        for x in resources:
            # Terraform addresses: in a module, or in the root module (TYPE.NAME[KEY])
            assert x["name"].startswith("module.") or re.match(
                r"^[a-z0-9_]+\.[a-z0-9_]+(\[.+\])?$", x["name"]), x["name"]
        if prefix:
            continue
        by_type: dict[str, list[dict]] = {}
        for x in resources:
            by_type.setdefault(x["type"], []).append(x)
        services = by_type["gcp:projects/service:Service"]
        assert services and all(s["retain_on_delete"] and not s["protect"] for s in services)
        protect = orch.get("deletionProtection", True)
        for token in ("gcp:container/cluster:Cluster", "gcp:hypercomputecluster/cluster:Cluster"):
            for c in by_type.get(token, []):
                assert c["protect"] is protect, (c["name"], protect)
        for x in resources:
            if x["type"] not in ("gcp:projects/service:Service",
                                 "gcp:logging/projectBucketConfig:ProjectBucketConfig"):
                assert not x["retain_on_delete"], x["name"]


@pytest.mark.slow
def test_variants_take_the_other_template_branches(tmp_path: Path, cli) -> None:
    """Custom IAM role, Log Analytics off, flex-start pool, no deletion protection, reused
    service account and bucket: the branches no example recipe takes, under the mocks."""
    from pulumi_engine.variants import VARIANTS, write_variant

    runs = {}
    for name in VARIANTS:
        r = with_engine(write_variant(name, tmp_path / f"{name}.yaml"),
                        tmp_path / f"{name}-pu.yaml", "pulumi")
        render(cli, r, tmp_path / name)
        runs[name] = {x["name"]: x for x in mock_run(tmp_path / name)["resources"]}

    std = runs["standard-custom-role-flex-start"]
    role = std["module.workload_identity.google_project_iam_custom_role.this[0]"]
    assert role["inputs"]["roleId"] == "mldiagWorkload" and role["inputs"]["permissions"]
    grant = std['module.workload_identity.google_project_iam_member.workload['
                '"projects/my-ml-project/roles/mldiagWorkload"]']
    assert grant["inputs"]["role"] == "projects/my-ml-project/roles/mldiagWorkload"
    assert role["urn"] in grant["dependencies"]  # the grant waits for the role
    assert not [n for n in std if "log_analytics" in n]
    pool = std['module.node_pool["v5e-16"].google_container_node_pool.this']["inputs"]
    assert "nodeCount" not in pool and pool["autoscaling"] == {
        "minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}
    assert pool["nodeConfig"]["flexStart"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "NO_RESERVATION"}
    assert pool["management"]["autoRepair"] is False
    assert std["module.cluster.google_container_cluster.this"]["protect"] is False

    reused = runs["autopilot-reused-account-and-bucket"]
    # the workload's account and the bucket are reused; the nodes' dedicated account
    # (issue 14: never the Compute Engine default one) is the only account created
    assert [n for n, x in reused.items() if x["type"] in (
        "gcp:serviceaccount/account:Account", "gcp:storage/bucket:Bucket")] == [
        "module.cluster.google_service_account.nodes[0]"]
    members = [x["inputs"]["member"] for n, x in reused.items()
               if "google_project_iam_member.workload" in n]
    assert members and all(m == "serviceAccount:existing-sa@my-ml-project.iam.gserviceaccount.com"
                           for m in members), members

    slurm = runs["slurm-custom-role"]
    assert "module.node_iam.google_project_iam_custom_role.this[0]" in slurm
    assert slurm["module.cluster.google_hypercomputecluster_cluster.this"]["protect"] is False
    assert slurm["module.cluster.google_hypercomputecluster_cluster.this"]["inputs"][
        "deletionPolicy"] == "DELETE"


# Ordering the Terraform stack has (depends_on and references), as (dependent, dependency)
# name globs: every dependent must depend on every dependency that exists.
ORDER = [
    ("module.*", 'module.services.google_project_service.this[[]*'),
    ("module.node_pool[[]*].google_container_node_pool.this",
     "module.cluster.google_project_iam_member.nodes[[]*"),
    ("module.cluster.google_container_node_pool.system",
     "module.cluster.google_project_iam_member.nodes[[]*"),
    ("module.workload_identity.google_service_account_iam_member.workload_identity_user[[]0]",
     "module.cluster.google_container_cluster.this"),
    ("module.cluster.google_hypercomputecluster_cluster.this",
     "module.node_iam.google_project_iam_member.node[[]*"),
    ("module.cluster.google_hypercomputecluster_cluster.this",
     "module.profiles_bucket.google_storage_bucket.this[[]0]"),
    ("module.agents.kubernetes_namespace_v1.workload",
     "module.agents.helm_release.injection_webhook[[]0]"),
    ("module.agents.kubernetes_namespace_v1.workload",
     "module.agents.helm_release.connection_operator[[]0]"),
    ("module.agents.kubernetes_namespace_v1.workload", "module.agents.helm_release.addons[[]*"),
    ("module.agents.helm_release.injection_webhook[[]0]", "module.agents.kubernetes_labels.*"),
    ("module.agents.helm_release.injection_webhook[[]0]",
     "module.agents.kubernetes_namespace_v1.agents[[]*"),
    ("module.agents.helm_release.injection_webhook[[]0]",
     "module.agents.helm_release.cert_manager[[]0]"),
    ("module.agents.helm_release.connection_operator[[]0]",
     "module.agents.helm_release.injection_webhook[[]0]"),
    ("module.agents.helm_release.addons[[]*", "module.agents.kubernetes_namespace_v1.addons[[]*"),
    ("module.agents.kubernetes_service_account_v1.workload",
     "module.agents.kubernetes_namespace_v1.workload"),
]


@pytest.mark.parametrize("recipe", SAMPLED)
def test_program_orders_resources_as_terraform_does(recipe: Path, tmp_path: Path, cli) -> None:
    from fnmatch import fnmatch

    render(cli, with_engine(recipe, tmp_path / recipe.name, "pulumi"), tmp_path / "out")
    checked = 0
    for program in (tmp_path / "out", tmp_path / "out" / "agents"):
        if not program.is_dir():
            continue
        resources = [x for x in mock_run(program)["resources"] if x["custom"]
                     and not x["type"].startswith("pulumi:providers:")]
        for dependent, dependency in ORDER:
            for d in (x for x in resources if fnmatch(x["name"], dependent)):
                for y in (x for x in resources if fnmatch(x["name"], dependency)):
                    both_apis = all(x["name"].startswith("module.services.") for x in (d, y))
                    if y is d or both_apis:
                        continue
                    assert y["urn"] in d["dependencies"], (
                        f"{recipe.stem}: {d['name']} does not wait for {y['name']}")
                    checked += 1
    assert checked > 10, checked
