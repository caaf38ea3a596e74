"""Least privilege as a test (issue 28, item 6): for each IAM mode and each workload shape,
the project-level grants of the rendered stack are exactly the documented minimum.

The expected sets come from the fact store, never from the renderer:

- nodes: ``standard.nodeServiceAccountRoles`` (GKE-NODE-SA: "at a minimum ...
  roles/container.defaultNodeServiceAccount", plus Artifact Registry reader);
- the workloads' Google service account: ``mlDiagnostics.predefinedRoles`` (SEED-000, seed
  000 lists hypercomputecluster.editor, logging.logWriter and storage.objectUser; SDK-README
  adds storage.bucketViewer) with ``iam.mode: predefined``, or exactly one custom role with
  ``mlDiagnostics.customRolePermissions`` (SEED-000, MLD-FACTS) with ``iam.mode: custom-role``;
- hostNetwork pods do not use Workload Identity (SEED-000: "hostNetwork: true ... Pods do not
  use Workload Identity Federation for GKE"), so on GKE Standard the nodes' account also gets
  the workloads' ML Diagnostics access, in the same form: the predefined roles, or the
  custom role (the issue's bug: custom-role mode gave the nodes the broad predefined roles);
- Autopilot refuses hostNetwork pods (preflight ``workload-host-network``), so that shape
  renders nothing.

The rendered grants are read from the Terraform files (policy.inputs.stack_document, the
python-hcl2 view the policy gate uses): the node pool module's ``for_each`` over
``node_service_account_roles``, the workload-identity module's role map, and any root-level
``google_project_iam_member``; an IAM resource of another form fails the test, so a new grant
cannot slip past it. One case also runs the Pulumi program under Pulumi's mock runtime.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag_provision.catalog.store import store
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.errors import Severity
from mldiag_provision.pipeline import check_text
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.policy.inputs import stack_document
from mldiag_provision.render.stack import render_stack

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog()
BASES = {
    "standard": ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml",
    "autopilot": ROOT / "recipes" / "tpu-v5e-2x4-single-host-autopilot.yaml",
}
MODES = ("predefined", "custom-role")
PROJECT_IAM = re.compile(r"^google_project_iam_(member|binding|policy)$")


def _sources() -> dict[str, Any]:
    return store().sources


def _sourced(entry: Any) -> Any:
    """``entry`` (a fact's data) after checking it names a source defined in sources.yaml
    with a url or path, and a confidence."""
    data = entry.data if hasattr(entry, "data") else entry
    source = _sources().get(data.get("source"))
    assert source is not None and (source.url or source.path), entry
    assert data.get("confidence") in ("H", "M", "L"), entry
    return data


def node_minimum() -> set[str]:
    fact = _sourced(CATALOG.fact("standard", "nodeServiceAccountRoles"))
    return {str(r) for r in fact["roles"]}


def ml_predefined() -> set[str]:
    return {str(_sourced(r)["role"]) for r in CATALOG.fact("mlDiagnostics", "predefinedRoles")}


def ml_permissions() -> list[str]:
    return sorted(str(_sourced(p)["permission"])
                  for p in CATALOG.fact("mlDiagnostics", "customRolePermissions"))


def recipe_for(shape: str, mode: str, host_network: bool) -> dict[str, Any]:
    recipe = copy.deepcopy(yaml.safe_load(BASES[shape].read_text()))
    recipe["spec"]["diagnostics"]["iam"] = {"mode": mode}
    for w in recipe["spec"]["workloads"]:
        w["hostNetwork"] = host_network
    return recipe


def render(recipe: dict[str, Any]) -> tuple[Any, dict[str, bytes]]:
    res = check_text(yaml.safe_dump(recipe, sort_keys=False), "recipe.yaml", CATALOG)
    assert res.parsed.recipe is not None and res.report.ok, [
        p.message for p in res.report.problems if p.severity == Severity.ERROR]
    plan = build_plan(res.parsed.recipe, res.shapes, CATALOG)
    return plan, render_stack(plan)


def terraform_grants(files: dict[str, bytes]) -> dict[str, set[str]]:
    """{"nodes": roles, "workload": roles} granted on the project by the rendered Terraform
    (project stage). Custom roles appear by full name, ``projects/P/roles/ID``."""
    doc = stack_document(files)
    args = {m["name"]: m["instances"].get("") for m in doc["modules"]
            if m["stage"] == "project"}
    out: dict[str, set[str]] = {"nodes": set(), "workload": set()}
    for r in doc["resources"]:
        if not PROJECT_IAM.match(r["type"]):
            continue
        cfg = r["config"]
        if r["address"] == "module.cluster.google_project_iam_member.nodes":
            assert cfg["for_each"] == "${toset(var.node_service_account_roles)}", cfg
            assert cfg["role"] == "${each.value}", cfg
            assert cfg["member"] == "serviceAccount:${local.node_service_account}", cfg
            out["nodes"] |= set(args["cluster"]["node_service_account_roles"])
        elif r["address"] == "module.workload_identity.google_project_iam_member.workload":
            assert cfg["for_each"] == "${local.role_grants}" and cfg["role"] == "${each.value}"
            wi = args["workload_identity"]
            if wi["iam_mode"] == "custom-role":
                project = yaml.safe_load(files[".mldiag/plan.json"])["project"]
                out["workload"].add(f"projects/{project}/roles/{wi['custom_role_id']}")
            else:
                out["workload"] |= set(wi["roles"])
        else:
            raise AssertionError(f"a project IAM grant the test does not know: {r}")
    for block in doc["hcl"]["main.tf"].get("resource", []):
        for kind, named in block.items():
            if not PROJECT_IAM.match(kind):
                continue
            for name, cfg in named.items():
                who = {"serviceAccount:${module.cluster.node_service_account}": "nodes",
                       "${module.workload_identity.member}": "workload"}.get(cfg["member"])
                assert kind == "google_project_iam_member" and who, (kind, name, cfg)
                out[who].add(cfg["role"])
    return out


def expected(mode: str, host_network: bool, custom_role: str) -> dict[str, set[str]]:
    ml = ml_predefined() if mode == "predefined" else {custom_role}
    return {"nodes": node_minimum() | (ml if host_network else set()), "workload": ml}


CASES = [(shape, mode, hn) for shape in BASES for mode in MODES for hn in (False, True)
         if not (shape == "autopilot" and hn)]


@pytest.mark.parametrize(("shape", "mode", "host_network"), CASES,
                         ids=[f"{s}-{m}-{'hostNetwork' if h else 'pod-network'}"
                              for s, m, h in CASES])
def test_rendered_grants_are_exactly_the_documented_minimum(
        shape: str, mode: str, host_network: bool) -> None:
    plan, files = render(recipe_for(shape, mode, host_network))
    role_id = plan.diagnostics.iam.custom_role_id
    want = expected(mode, host_network, f"projects/{plan.project}/roles/{role_id}")
    assert terraform_grants(files) == want
    wi = next(m for m in stack_document(files)["modules"] if m["name"] == "workload_identity")
    if mode == "custom-role":
        # one role, with exactly the documented permissions, and no predefined role anywhere
        assert wi["instances"][""]["custom_role_permissions"] == ml_permissions()
        assert not ml_predefined() & (want["nodes"] | want["workload"])
    else:
        assert wi["instances"][""]["custom_role_permissions"] == []


def test_the_issue_reproduction_custom_role_with_host_network() -> None:
    """iam.mode custom-role + hostNetwork on Standard: the nodes get the custom role, not
    roles/hypercomputecluster.editor or roles/storage.objectUser project-wide."""
    plan, files = render(recipe_for("standard", "custom-role", True))
    nodes = terraform_grants(files)["nodes"]
    assert "roles/hypercomputecluster.editor" not in nodes
    assert "roles/storage.objectUser" not in nodes
    assert f"projects/{plan.project}/roles/{plan.diagnostics.iam.custom_role_id}" in nodes
    assert any("custom role" in d and "hostNetwork" in d for d in plan.decisions)


def test_autopilot_refuses_host_network_so_it_renders_no_grant() -> None:
    recipe = recipe_for("autopilot", "custom-role", True)
    res = check_text(yaml.safe_dump(recipe), "recipe.yaml", CATALOG)
    assert not res.report.ok
    assert any(p.rule == "workload-host-network" and p.severity == Severity.ERROR
               for p in res.report.problems)


def test_a_recipe_named_node_account_gets_the_same_minimum() -> None:
    """``orchestrator.nodeServiceAccount`` (an existing account): granted the same set."""
    recipe = recipe_for("standard", "custom-role", True)
    recipe["spec"]["orchestrator"]["nodeServiceAccount"] = (
        "gke-nodes@my-ml-project.iam.gserviceaccount.com")
    plan, files = render(recipe)
    custom = f"projects/{plan.project}/roles/{plan.diagnostics.iam.custom_role_id}"
    assert terraform_grants(files) == expected("custom-role", True, custom)


@pytest.mark.slow  # the Pulumi program under mocks
def test_the_pulumi_program_grants_the_same(tmp_path: Path) -> None:
    """The Pulumi engine's program, run under Pulumi's mock runtime, grants the same roles to
    the same accounts as the Terraform stack (custom-role + hostNetwork)."""
    pytest.importorskip("pulumi")
    from pulumi_engine.support import mock_run

    recipe = recipe_for("standard", "custom-role", True)
    recipe["spec"]["engine"] = {"name": "pulumi"}
    plan, files = render(recipe)
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    run = mock_run(tmp_path)
    nodes_sa = plan.cluster.node_service_account.email
    got: dict[str, set[str]] = {}
    for r in run["resources"]:
        if r["type"] == "gcp:projects/iAMMember:IAMMember":
            member = r["inputs"]["member"].removeprefix("serviceAccount:")
            who = "nodes" if member == nodes_sa else "workload"
            got.setdefault(who, set()).add(r["inputs"]["role"])
    custom = f"projects/{plan.project}/roles/{plan.diagnostics.iam.custom_role_id}"
    assert got == expected("custom-role", True, custom)


def test_the_node_custom_role_grant_matches_the_provider_schema(tmp_path: Path) -> None:
    """The root-level grant this mode adds is a valid google_project_iam_member (the real
    hashicorp/google 8.7.0 schema, tests/data/tf_schema/) and is formatted as terraform fmt
    writes it (the golden and fmt tests cover only the example recipes)."""
    from render.schema_walk import Schemas, check_tree

    _, files = render(recipe_for("standard", "custom-role", True))
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    problems, blocks = check_tree(tmp_path, Schemas.load())
    assert blocks >= 5 and not problems, problems
    assert b'resource "google_project_iam_member" "nodes_ml_diagnostics"' in files["main.tf"]
