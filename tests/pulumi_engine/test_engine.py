"""The Pulumi engine without the pulumi CLI (not installable on this machine image): the
missing CLI is one line with how to install it for every command; the backend is a local file
backend or the recipe's gs:// one; and the engine contract (summary counts, danger warnings,
what a destroy keeps, drift) is the same for both engines, each fed its own tool's native
plan data (Terraform's ``show -json``, Pulumi's engine events). With the CLI on PATH, a real
Automation API round trip runs too (skipped here, with the reason)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.engines import PlanResult
from mldiag_provision.engines.pulumi import (
    TERRAFORM_TO_PULUMI,
    PulumiEngine,
    changes_from_events,
    summarize,
)
from mldiag_provision.engines.terraform import parse_plan_json
from mldiag_provision.runner import CommandRunner
from pulumi_engine.support import render, with_engine
from stack_support import RECIPES

AUTOPILOT = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")
NO_CLI = shutil.which("pulumi") is None


# --- the CLI is missing ------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["plan", "apply", "output", "destroy"])
def test_missing_cli_is_one_line_with_how_to_install(command: str, tmp_path: Path, cli,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("MLDIAG_PULUMI", raising=False)
    r = with_engine(AUTOPILOT, tmp_path / "recipe.yaml", "pulumi")
    work = tmp_path / "work"
    if command in ("destroy", "output"):  # these work on a rendered directory
        render(cli, r, work)
    extra = ["--auto-approve"] if command in ("apply", "destroy") else []
    code, out, err = cli("--no-color", command, str(r), "-o", str(work), *extra)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    missing = "the pulumi CLI was not found (not on PATH); engine: pulumi needs it"
    if command in ("plan", "apply"):
        # refused before anything is written (EngineUnit.locate): a usage error, exit 2
        assert code == 2, (code, out, err)
        assert len(errors) == 1 and errors[0].startswith(
            f"error: {command} needs engine pulumi: {missing}; nothing"), err
        assert not work.exists()
    else:  # on a rendered directory: the engine is started and fails, exit 4
        assert code == 4, (code, out, err)
        assert errors == [f"error: {missing}"], err
    assert "get.pulumi.com" in err and "Traceback" not in err + out
    assert not (work / ".mldiag" / "pulumi-state").exists()  # nothing was started


def test_mldiag_pulumi_names_a_missing_binary(tmp_path: Path, cli,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_PULUMI", str(tmp_path / "no-such-pulumi"))
    r = with_engine(AUTOPILOT, tmp_path / "recipe.yaml", "pulumi")
    code, _, err = cli("--no-color", "plan", str(r), "-o", str(tmp_path / "work"))
    # refused before anything is written: exit 2 (EngineUnit.locate), naming the variable
    assert code == 2 and f"MLDIAG_PULUMI={tmp_path / 'no-such-pulumi'}" in err, err


# --- backends ----------------------------------------------------------------------------------

def _engine(stage: Path) -> PulumiEngine:
    # an explicit binary: the backend and environment need no CLI
    return PulumiEngine(stage, CommandRunner(stage / ".mldiag/logs/test.log"),
                        binary=sys.executable)


def test_local_file_backend_by_default(tmp_path: Path, cli) -> None:
    r = with_engine(AUTOPILOT, tmp_path / "recipe.yaml", "pulumi", local_backend=True)
    render(cli, r, tmp_path / "work")
    state = (tmp_path / "work" / ".mldiag/pulumi-state").resolve()
    for stage in (tmp_path / "work", tmp_path / "work" / "agents"):  # one backend, two projects
        env = _engine(stage).env()
        assert env["PULUMI_BACKEND_URL"] == "file://" + state.as_posix()
        assert env["PULUMI_PYTHON_CMD"] == sys.executable  # the program finds pulumi-gcp
    assert state.is_dir() and not (tmp_path / "work" / "agents" / ".mldiag").exists()


def test_gcs_backend_when_the_recipe_names_one(tmp_path: Path, cli) -> None:
    import yaml

    r = with_engine(AUTOPILOT, tmp_path / "recipe.yaml", "pulumi")
    doc = yaml.safe_load(r.read_text())
    doc["spec"]["engine"]["backend"] = {"type": "gcs", "bucket": "my-state", "prefix": "ml/a"}
    r.write_text(yaml.safe_dump(doc))
    render(cli, r, tmp_path / "work")
    assert _engine(tmp_path / "work").backend_url() == "gs://my-state/ml/a"
    assert _engine(tmp_path / "work" / "agents").backend_url() == "gs://my-state/ml/a/agents"
    assert not (tmp_path / "work" / ".mldiag/pulumi-state").exists()


# --- the engine contract, both engines ---------------------------------------------------------

_CAMEL_MAPS = {"labels", "resource_labels"}


def _pulumi_state(values: dict[str, Any]) -> dict[str, Any]:
    """Terraform attribute values as Pulumi state: camelCase names, single blocks as objects."""
    def conv(v: Any, in_map: bool = False) -> Any:
        if isinstance(v, dict):
            return {(k if in_map else re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k)):
                    conv(x, k in _CAMEL_MAPS) for k, x in v.items()}
        if isinstance(v, list):
            items = [conv(x) for x in v]
            return items[0] if len(items) == 1 and isinstance(items[0], dict) else items
        return v
    return conv(values)


_OP = {"create": "create", "update": "update", "replace": "replace", "delete": "delete",
       "no-op": "same"}
_TF_ACTIONS = {"create": ["create"], "update": ["update"], "replace": ["delete", "create"],
               "delete": ["delete"], "no-op": ["no-op"]}

CLUSTER = "module.cluster.google_container_cluster.this"
SCENARIOS: dict[str, list[tuple[str, str, str, dict[str, Any], tuple[str, ...]]]] = {
    # (address, Terraform type, action, values before, replace paths)
    "cluster replaced": [(CLUSTER, "google_container_cluster", "replace",
                          {"name": "c", "location": "us-central2"}, ("location",))],
    "TPU pool and system pool deleted": [
        ('module.node_pool["v5e-16"].google_container_node_pool.this',
         "google_container_node_pool", "delete",
         {"name": "v5e-16", "node_config": [{"machine_type": "ct5lp-hightpu-4t"}]}, ()),
        ("module.cluster.google_container_node_pool.system", "google_container_node_pool",
         "delete", {"name": "system", "node_config": [{"machine_type": "e2-standard-4"}]}, ())],
    "profiles bucket deleted": [
        ("module.profiles_bucket.google_storage_bucket.this[0]", "google_storage_bucket",
         "delete", {"name": "p-profiles", "force_destroy": False}, ())],
    "slurm cluster with its Lustre deleted": [
        ("module.cluster.google_hypercomputecluster_cluster.this",
         "google_hypercomputecluster_cluster", "delete",
         {"cluster_id": "s", "storage_resources": [
             {"id": "lustre", "config": [{"new_lustre": [{"lustre": "s-lustre"}]}]},
             {"id": "data", "config": [{"existing_bucket": [{"bucket": "b"}]}]}]}, ())],
    "APIs and _Default forgotten, creates and updates": [
        ('module.services.google_project_service.this["container.googleapis.com"]',
         "google_project_service", "delete", {"service": "container.googleapis.com"}, ()),
        ("module.log_analytics.google_logging_project_bucket_config.default",
         "google_logging_project_bucket_config", "delete", {"bucket_id": "_Default"}, ()),
        ("module.workload_identity.google_service_account.this[0]", "google_service_account",
         "create", {}, ()),
        (CLUSTER, "google_container_cluster", "update", {"name": "c"}, ()),
        ("module.cluster.google_service_account.nodes", "google_service_account", "no-op",
         {}, ())],
}


def _terraform_plan(items: list) -> PlanResult:
    doc = {"resource_changes": [
        {"address": a, "type": t, "change": {"actions": _TF_ACTIONS[act],
                                             "before": (b or None) if act != "create" else None,
                                             "after": None if act == "delete" else b,
                                             "replace_paths": [[p] for p in paths]}}
        for a, t, act, b, paths in items]}
    return parse_plan_json(doc)


def _pulumi_plan(items: list) -> PlanResult:
    from pulumi.automation.events import EngineEvent

    events = []
    for i, (a, t, act, b, paths) in enumerate(items):
        token = TERRAFORM_TO_PULUMI[t]
        urn = f"urn:pulumi:default::stack::{token}::{a}"
        state = {"type": token, "urn": urn, "custom": True, "outputs": _pulumi_state(b),
                 "inputs": _pulumi_state(b)}
        steps = ([("create-replacement", state, state), ("replace", state, state),
                  ("delete-replaced", state, None)] if act == "replace"
                 else [(_OP[act], None if act == "create" else state,
                        None if act == "delete" else state)])
        for op, old, new in steps:
            events.append(EngineEvent.from_json({
                "sequence": i, "timestamp": 0, "resourcePreEvent": {"metadata": {
                    "op": op, "urn": urn, "type": token, "old": old, "new": new,
                    "keys": list(paths), "provider": ""}}}))
    changes, drift = changes_from_events(events)
    summary = summarize(changes)
    return PlanResult(has_changes=summary.total > 0, summary=summary, changes=changes,
                      drift=drift)


ENGINES = {"terraform": _terraform_plan, "pulumi": _pulumi_plan}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("engine", list(ENGINES))
def test_plan_contract(engine: str, scenario: str) -> None:
    """Counts, dangers and kept objects of one plan, for either engine, equal the expected
    ones (the expectations are the Terraform engine's established behaviour)."""
    items = SCENARIOS[scenario]
    plan = ENGINES[engine](items)
    reference = _terraform_plan(items)
    assert plan.summary.to_dict() == reference.summary.to_dict()
    assert plan.dangers == reference.dangers
    assert plan.kept == reference.kept
    assert plan.has_changes is any(act != "no-op" for _, _, act, _, _ in items)
    if scenario == "cluster replaced":
        assert plan.dangers == [f"REPLACES the GKE cluster {CLUSTER} (because of location): "
                                "every workload, node and TPU slice on it goes away"]
    if scenario == "TPU pool and system pool deleted":
        assert len(plan.dangers) == 1 and "TPU node pool" in plan.dangers[0]
    if scenario == "slurm cluster with its Lustre deleted":
        assert plan.dangers and plan.dangers[0].endswith(
            "and the storage it created: Managed Lustre s-lustre")
    if scenario == "profiles bucket deleted":
        assert "Google refuses while it holds profiles" in plan.dangers[0]
    if scenario.startswith("APIs"):
        assert len(plan.kept) == 2 and plan.summary.create == 1 and plan.summary.update == 1


def test_pulumi_refresh_difference_is_drift() -> None:
    from pulumi.automation.events import EngineEvent

    token = TERRAFORM_TO_PULUMI["google_container_cluster"]
    urn = f"urn:pulumi:default::stack::{token}::{CLUSTER}"
    state = {"type": token, "urn": urn, "outputs": {"name": "c"}}
    events = [EngineEvent.from_json({"sequence": 1, "timestamp": 0, "resourcePreEvent": {
        "metadata": {"op": op, "urn": urn, "type": token, "old": state, "new": state,
                     "diffs": diffs, "provider": ""}}})
        for op, diffs in (("refresh", ["resourceLabels"]), ("same", []))]
    changes, drift = changes_from_events(events)
    assert [(d.address, d.type, d.action) for d in drift] == [
        (CLUSTER, "google_container_cluster", "update")]
    assert [c.action for c in changes] == ["no-op"]


# --- with the real CLI ---------------------------------------------------------------------------

@pytest.mark.skipif(NO_CLI, reason="the pulumi CLI is not installed on this machine image "
                                   "(https://www.pulumi.com/docs/iac/download-install/)")
def test_real_cli_stack_in_the_file_backend(tmp_path: Path, cli) -> None:
    """A real Automation API round trip that needs no cloud: the stack is created in the
    local file backend, has no outputs and no resources yet."""
    r = with_engine(AUTOPILOT, tmp_path / "recipe.yaml", "pulumi", local_backend=True)
    render(cli, r, tmp_path / "work")
    eng = PulumiEngine(tmp_path / "work", CommandRunner(tmp_path / "test.log"))
    eng.init()
    assert eng.outputs() == {}
    assert eng.state_resources() == []
    assert any((tmp_path / "work" / ".mldiag/pulumi-state").rglob("*.json*"))


# --- the stack service picks the engine the directory was rendered for ----------------------

def test_stack_uses_the_pulumi_engine_for_a_pulumi_stack(tmp_path: Path, cli,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from mldiag_provision.engines.terraform import TerraformEngine
    from mldiag_provision.errors import ConflictError
    from mldiag_provision.stack.service import Stack
    from mldiag_provision.stack.stages import StageName

    monkeypatch.setenv("MLDIAG_PULUMI", sys.executable)  # any executable: nothing is run
    monkeypatch.setenv("MLDIAG_TERRAFORM", sys.executable)
    render(cli, with_engine(AUTOPILOT, tmp_path / "pu.yaml", "pulumi"), tmp_path / "pu")
    render(cli, with_engine(AUTOPILOT, tmp_path / "tf.yaml", "terraform"), tmp_path / "tf")
    with Stack(tmp_path / "pu", "plan") as stack:
        stages = stack.stages()
        assert [s.name for s in stages] == [StageName.PROJECT, StageName.CLUSTER,
                                            StageName.WORKLOADS]
        assert all(isinstance(stack.engine(s), PulumiEngine) for s in stages[:2])
        # the update-only apply that lifts destroy blocks is a Terraform override file: with
        # Pulumi it is refused before anything runs, with what to do instead
        state = [{"address": CLUSTER, "type": "google_container_cluster",
                  "values": {"name": "c", "deletion_protection": True}}]
        with pytest.raises(ConflictError) as info:
            stack._lift_blocks(stages[0], state, disable_deletion_protection=True,
                               delete_profiles=False)
        assert "deletionProtection: false" in (info.value.hint or "")
        assert not list((tmp_path / "pu").glob("*.tf"))  # no override file was written
    with Stack(tmp_path / "tf", "plan") as stack:
        assert isinstance(stack.engine(stack.stages()[0]), TerraformEngine)
