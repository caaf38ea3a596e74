"""The second stage (``agents/``) on Autopilot with the agents installed by hand, applied with
the real terraform binary against the offline stand-ins: GKE Warden refuses writes to
managed namespaces, so the stage must not label kube-system there.

The stage of every GKE example recipe (applied, verified, re-planned and destroyed) is
checked on the example's one lifecycle in the sandbox
(tests/sandbox/test_examples_lifecycle.py), by
tests/engine/agents_checks.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.agents_checks import AGENTS_NS, EXEMPT, k8s, labels, terraform
from engine.conftest import offline_recipe
from stack_support import RECIPES

pytestmark = pytest.mark.terraform


def _apply_first_stage(cli, recipe: Path, work: Path, cluster) -> dict:
    if yaml.safe_load(recipe.read_text())["spec"]["orchestrator"]["type"] == "existing-kubernetes":
        cluster.seed_existing_cluster(recipe)
    code, out, err = cli("apply", str(recipe), "-o", str(work), "--auto-approve",
                         "--stage", "project")
    assert code == 0, out + err
    return json.loads((work / ".mldiag" / "plan.json").read_text())


AUTOPILOT = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")
OLD_EXEMPT_LINE = ('  exempt_existing_namespaces  = ["kube-system", "kube-public", '
                   '"kube-node-lease"]')


def _autopilot_manual(tmp_path: Path) -> Path:
    """An Autopilot recipe whose agents are installed by hand (e.g. a cluster pinned below
    the managed add-on's minimum)."""
    r = offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml")
    doc = yaml.safe_load(r.read_text())
    doc["spec"]["diagnostics"]["agents"] = "manual"
    r.write_text(yaml.safe_dump(doc, sort_keys=False))
    return r


def test_autopilot_manual_agents_leave_managed_namespaces_alone(tmp_path: Path,
                                                                offline_cluster, cli) -> None:
    if offline_cluster is None:
        return
    r = _autopilot_manual(tmp_path)
    work = tmp_path / "work"
    plan = _apply_first_stage(cli, r, work, offline_cluster)
    assert plan["agents"]["strategy"] == "manual"
    assert plan["agents"]["exempt_existing_namespaces"] == []
    assert any("Autopilot-managed namespaces are not labelled" in x
               for x in plan["agents"]["reasons"])
    main_tf = (work / "agents" / "main.tf").read_text()
    assert "exempt_existing_namespaces  = []" in main_tf
    core, apps, _, admission = k8s(offline_cluster.api.kubeconfig(tmp_path / "kubeconfig"))

    terraform(work / "agents", "init")
    terraform(work / "agents", "apply", "-auto-approve")
    assert EXEMPT not in labels(core, "kube-system")
    assert {d.metadata.name for d in apps.list_namespaced_deployment(AGENTS_NS).items} == {
        "mldiagnostics-injection-webhook", "mldiagnostics-connection-operator"}
    # failurePolicy Fail stays safe for the system namespaces: Autopilot added its exclusion.
    hook = admission.read_mutating_webhook_configuration(
        "mldiagnostics-injection-webhook-mutating-webhook-config").webhooks[0]
    assert hook.failure_policy == "Fail"
    assert {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
            "values": ["kube-system", "gke-gmp-system", "gke-managed-cim"]} in [
        e.to_dict() for e in hook.namespace_selector.match_expressions]
    code, out, err = cli("verify", str(r), "--kubeconfig", str(tmp_path / "kubeconfig"))
    assert code == 0, out + err
    terraform(work / "agents", "destroy", "-auto-approve")


def test_autopilot_refuses_the_old_exemptionlabels(tmp_path: Path, offline_cluster,
                                                    cli) -> None:
    """What the stage rendered before: it labelled kube-system & co. on Autopilot too, and
    GKE Warden (the stand-in API server) refuses that, so the stage never completed."""
    if offline_cluster is None:
        return
    r = _autopilot_manual(tmp_path)
    work = tmp_path / "work"
    _apply_first_stage(cli, r, work, offline_cluster)
    main_tf = work / "agents" / "main.tf"
    text = main_tf.read_text()
    main_tf.write_text(text.replace("  exempt_existing_namespaces  = []", OLD_EXEMPT_LINE))
    assert OLD_EXEMPT_LINE in main_tf.read_text()
    terraform(work / "agents", "init")
    proc = terraform(work / "agents", "apply", "-auto-approve", check=False)
    assert proc.returncode == 1, proc.stdout
    assert ('namespaces "kube-system" is forbidden: User "standin-user@example.com" cannot '
            'patch resource "namespaces" in API group "" in the namespace "kube-system": GKE '
            'Warden authz [denied by managed-namespaces-limitation]: the namespace '
            '"kube-system" is managed and the request\'s verb "patch" is denied'
            ) in " ".join(proc.stderr.split()), proc.stderr
    # the webhook, which depends on the exemptions, was never installed
    core, apps, _, _ = k8s(offline_cluster.api.kubeconfig(tmp_path / "kubeconfig"))
    assert apps.list_namespaced_deployment(AGENTS_NS).items == [] or all(
        d.metadata.name != "mldiagnostics-injection-webhook"
        for d in apps.list_namespaced_deployment(AGENTS_NS).items)
    assert EXEMPT not in labels(core, "kube-system")
