"""Every example recipe through the sandbox (issue 27), each command as a user types it, with
the recipe as written (used from its path under recipes/, never copied or rewritten):

    mldiag-provision apply   R -o W --sandbox --auto-approve
    mldiag-provision verify  R -o W --sandbox
    mldiag-provision plan    R -o W --sandbox --detailed-exitcode      (0: no changes)
    mldiag-provision destroy R -o W --sandbox --auto-approve --disable-deletion-protection
    mldiag-provision sandbox ls -o W -O json

This is the one lifecycle of each example in the suite (it replaces the fixture-wired one of
tests/engine/test_e2e.py). The commands run in-process (the ``cli`` fixture: the parser and
``main`` a user's shell reaches, without a Python start per command); the quick-start test in
tests/cli/test_sandbox.py runs them as separate processes.

What each lifecycle checks:
  * apply: exit 0, every line says SANDBOX, "apply complete: N created", no step left for the
    user, ``sandbox ls`` lists what was made;
  * verify: exit 0 and no FAIL, every line marked; on the Slurm example its checks run over
    the login node double of the applied cluster
    (provisioner/mldiag_provision/sandbox/slurm_login.py): node sets, partitions, mounts, the
    SDK and the GPUs each PASS, and after destroy ``verify`` finds no login node (exit 2);
  * re-plan: exit 0 with --detailed-exitcode, "no changes", nothing deferred;
  * on a GKE example, the checks of the in-cluster (agents/) stage
    (tests/engine/agents_checks.py) on the sandbox cluster: its objects, no drift with plain
    terraform, ``destroy --stage workloads --sandbox`` then ``verify --sandbox`` without the
    workloads, ``terraform destroy`` in agents/;
  * destroy: exit 0, "destroy complete:", and ``sandbox ls`` then holds only what destroy keeps
    by design (docs/guides/sandbox.md): enabled APIs and the _Default log bucket's config
    (removed from the state only, as on Google Cloud: Log Analytics stays on), and on the
    existing-cluster example the cluster the sandbox made for it with its node pool and the
    JobSet CRD that helm leaves in it;
  * the recipe file is byte for byte what it was.

A recipe whose Terraform state is remote (``spec.engine.backend`` gcs) runs as written: its
state bucket is made in the sandbox before the first plan/apply (said on stderr), Terraform's
own gcs backend keeps the state there (through the sandbox's Cloud Storage double), no local
state is written, and destroy keeps the bucket with the (empty) state in it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine import agents_checks
from stack_support import RECIPES, terraform_binary

pytestmark = pytest.mark.terraform

KEPT = {"google_project_service", "google_logging_project_bucket_config"}
"""What destroy keeps on any stack: removed from the state only (destroy says so)."""
KEPT_WITH_EXISTING_CLUSTER = {"google_container_cluster", "google_container_node_pool",
                              "CustomResourceDefinition"}
"""And on an existing-cluster stack: the cluster the stack did not create, its node pool, and
the CRDs helm installed from a chart's crds/ directory, which helm never deletes
(https://helm.sh/docs/chart_best_practices/custom_resource_definitions/)."""


def _spec(recipe: Path) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(recipe.read_text(encoding="utf-8"))["spec"]
    return spec


def _remote_state(recipe: Path) -> bool:
    backend = (_spec(recipe).get("engine") or {}).get("backend") or {}
    return backend.get("type") not in (None, "local")


def _marked(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return all(line.startswith("[SANDBOX] ") for line in lines)


def _ls(cli: Any, work: Path) -> list[dict[str, str]]:
    code, out, err = cli("sandbox", "ls", "-o", str(work), "-O", "json")
    assert code == 0, out + err
    objects: list[dict[str, str]] = json.loads(out)["objects"]
    return objects


def _state_objects(recipe: Path, held: list[dict[str, str]]) -> list[str]:
    """The state objects a gcs-backend recipe keeps in its bucket (``PREFIX/default.tfstate``
    per stage: the project stage at PREFIX, the in-cluster stage at PREFIX/agents)."""
    backend = _spec(recipe)["engine"]["backend"]
    return sorted(o["name"] for o in held if o["kind"] == "storage#object"
                  and o["where"] == f"gs://{backend['bucket']}")


def _agents_stage(cli: Any, recipe: Path, work: Path) -> None:
    """The in-cluster stage's checks (tests/engine/agents_checks.py) on the sandbox cluster;
    the sandbox's API server answers while a session holds the sandbox (as ``sandbox serve``
    does), and plain ``terraform`` in agents/ runs in the session's environment."""
    from mldiag_provision.sandbox.session import kubeconfig, session

    plan = agents_checks.plan_of(work)
    with session(work, "test"):
        clients = agents_checks.k8s(kubeconfig(work))
        agents_checks.check_applied(plan, clients, work)
    code, out, err = cli("destroy", str(recipe), "-o", str(work), "--sandbox", "--stage",
                         "workloads", "--auto-approve")
    assert code == 0, out + err
    agents_checks.check_verify_without_workloads(cli, recipe, plan, "-o", str(work),
                                                 "--sandbox")
    with session(work, "test"):
        clients = agents_checks.k8s(kubeconfig(work))
        agents_checks.destroy_and_check(plan, clients, work)


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_example_apply_verify_replan_destroy_in_the_sandbox(recipe: Path, tmp_path: Path,
                                                            cli: Any) -> None:
    if terraform_binary() is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    as_written = recipe.read_bytes()
    work = tmp_path / "stack"
    r, w = str(recipe), str(work)
    remote = _remote_state(recipe)
    orchestrator = _spec(recipe)["orchestrator"]["type"]
    is_gke = orchestrator != "slurm"
    existing = orchestrator == "existing-kubernetes"

    code, out, err = cli("apply", r, "-o", w, "--sandbox", "--auto-approve")
    assert code == 0, out + err
    assert _marked(out) and _marked(err), out + err
    assert "apply complete:" in out and " created" in out, out
    assert "terraform -chdir" not in out  # no step left for the user
    if existing:
        assert "existing cluster" in err and "is created in the sandbox" in err, err
    held = _ls(cli, work)
    if remote:  # the state is in the sandbox's bucket, never in a local file
        assert "state bucket gs://" in err and "is created in the sandbox" in err, err
        assert [p for p in (*work.glob("*.tfstate"), *work.glob("*/*.tfstate"))
                if p.parent.name not in (".terraform", ".mldiag")] == []  # init's record only
        prefix = _spec(recipe)["engine"]["backend"]["prefix"]
        assert f"{prefix}/default.tfstate" in _state_objects(recipe, held), held
    assert len(held) >= 5, held
    # what Google computes is never shown as a sandbox placeholder (output, sandbox ls)
    assert [o for o in held if "standin:" in o["name"]] == [], held
    code, shown, said = cli("output", r, "-o", w, "--sandbox", "-O", "json")
    assert code == 0, shown + said
    assert "standin:" not in shown, shown
    assert (work / "agents" / "main.tf").is_file() == is_gke  # GKE: the in-cluster stage
    if is_gke:
        assert "stage cluster:" in out and "stage workloads:" in out, out
        assert {"google_container_cluster", "Namespace", "ServiceAccount"} <= {
            o["kind"] for o in held}, held

    code, out, err = cli("verify", r, "-o", w, "--sandbox")
    assert code == 0, out + err
    assert _marked(out), out
    assert "FAIL" not in out and " 0 failed of " in out, out
    if is_gke:
        assert "PASS namespace-label" in out and "PASS ksa-annotation" in out, out
    else:  # over the login node double of the applied Cluster Director cluster
        for check in ("login", "partition:", "node-set:", "storage:", "sdk:", "gpus:"):
            assert f"PASS {check}" in out, out
        assert "via SANDBOX login node " in out, out

    code, out, err = cli("plan", r, "-o", w, "--sandbox", "--detailed-exitcode")
    assert code == 0, out + err
    assert "no changes" in out and "deferred" not in out, out

    if is_gke:
        _agents_stage(cli, recipe, work)

    code, out, err = cli("destroy", r, "-o", w, "--sandbox", "--auto-approve",
                         "--disable-deletion-protection")
    assert code == 0, out + err
    assert _marked(out) and _marked(err), out + err
    assert "destroy complete:" in out, out
    if not is_gke:  # the cluster is gone, and its login node with it
        code, out, err = cli("verify", r, "-o", w, "--sandbox")
        assert code == 2 and "has no applied login node" in err, out + err
    left = _ls(cli, work)
    allowed = KEPT | (KEPT_WITH_EXISTING_CLUSTER if existing else set())
    if remote:  # the state bucket is not the stack's: it keeps the emptied states
        assert _state_objects(recipe, left), left
        left = [o for o in left if o["kind"] != "storage#object"
                or o["name"] not in _state_objects(recipe, left)]
    assert {o["kind"] for o in left} <= allowed, left
    if existing:
        assert [o["name"] for o in left if o["kind"] == "google_container_cluster"] == [
            _spec(recipe)["orchestrator"]["clusterName"]], left
    # Log Analytics stays on _Default: the config is only forgotten, as Google keeps it
    bucket = next((work / ".mldiag" / "sandbox" / "cloud"
                   / "google_logging_project_bucket_config").glob("*.json"))
    assert json.loads(bucket.read_text(encoding="utf-8"))["state"]["enable_analytics"] is True
    assert recipe.read_bytes() == as_written  # the recipe stays as written


def test_existing_cluster_is_created_once_and_only_for_existing_cluster_recipes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cluster an existing-kubernetes recipe names is put into the sandbox cloud before
    its first plan/apply (with a node pool per slice, served at the sandbox API server's
    endpoint), said on stderr, and not again once it is there; other recipes get nothing."""
    from mldiag_provision.cli.sandboxed import _seed_existing_cluster
    from mldiag_provision.sandbox.apiserver import make_certs

    (tmp_path / "apiserver-ca.pem").write_bytes(make_certs("127.0.0.1")[0])
    cloud = tmp_path / "cloud"
    existing = next(r for r in RECIPES if _spec(r)["orchestrator"]["type"]
                    == "existing-kubernetes")
    others = [r for r in RECIPES if r != existing]
    for recipe in others:
        _seed_existing_cluster(str(recipe), cloud, tmp_path, "127.0.0.1:6443")
    assert not cloud.exists() or not any(cloud.rglob("*.json"))
    _seed_existing_cluster(str(existing), cloud, tmp_path, "127.0.0.1:6443")
    _seed_existing_cluster(str(existing), cloud, tmp_path, "127.0.0.1:6443")
    err = capsys.readouterr().err
    assert err.count("is created in the sandbox as it would already exist") == 1, err
    clusters = [json.loads(p.read_text(encoding="utf-8"))["state"]
                for p in (cloud / "google_container_cluster").glob("*.json")]
    assert [(c["name"], c["endpoint"]) for c in clusters] == [
        (_spec(existing)["orchestrator"]["clusterName"], "127.0.0.1:6443")]
    assert clusters[0]["workload_identity_config"] == [
        {"workload_pool": f"{_spec(existing)['project']}.svc.id.goog"}]
    pools = list((cloud / "google_container_node_pool").glob("*.json"))
    assert len(pools) == len(_spec(existing)["slices"]), pools
