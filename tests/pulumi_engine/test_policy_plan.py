"""``policy DIR --plan`` reads the saved plan through the stack's engine unit: a Pulumi work
directory's saved preview (``.mldiag/pulumi-preview.json``, written by the engine's ``plan``
in the shape of ``pulumi preview --json``) gives the gate the same resource changes, and so
the same findings, as a Terraform work directory's ``terraform show -json`` of the same plan.

Offline: the Pulumi engine's Automation API stack is replaced by one that answers ``preview``
with engine events (no pulumi CLI on this machine image), and Terraform's ``show -json`` by a
stand-in executable that prints the plan (MLDIAG_TERRAFORM), so both go through their unit."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.engines import PlanResult
from mldiag_provision.engines.pulumi import (
    PREVIEW_FILE,
    TERRAFORM_TO_PULUMI,
    PulumiEngine,
    changes_from_events,
    changes_from_preview,
    saved_plan_document,
)
from mldiag_provision.errors import EngineError
from mldiag_provision.runner import CommandRunner
from pulumi_engine.support import render, with_engine
from pulumi_engine.test_engine import AUTOPILOT, _pulumi_state

CLUSTER = "module.cluster.google_container_cluster.this"
BUCKET = "module.profiles_bucket.google_storage_bucket.this[0]"
EXTRA = "module.extra.google_container_cluster.this"
# (address, Terraform type, action, values before, values after)
SCENARIO: list[tuple[str, str, str, dict[str, Any], dict[str, Any]]] = [
    (CLUSTER, "google_container_cluster", "delete",
     {"name": "c", "location": "us-central2", "deletion_protection": False}, {}),
    (BUCKET, "google_storage_bucket", "replace", {"name": "p-profiles"},
     {"name": "p-profiles", "force_destroy": True, "location": "US"}),
    (EXTRA, "google_container_cluster", "create", {},
     {"name": "x", "location": "us-central2", "deletion_protection": False}),
    ("module.workload_identity.google_service_account.this[0]", "google_service_account",
     "no-op", {"account_id": "diag"}, {"account_id": "diag"}),
]
_TF_ACTIONS = {"create": ["create"], "replace": ["delete", "create"], "delete": ["delete"],
               "no-op": ["no-op"]}
_STEPS = {"create": [("create", False, True)], "delete": [("delete", True, False)],
          "no-op": [("same", True, True)],
          "replace": [("create-replacement", True, True), ("replace", True, True),
                      ("delete-replaced", True, False)]}


def _terraform_show() -> dict[str, Any]:
    """The scenario as ``terraform show -json`` prints a saved plan."""
    return {"format_version": "1.2", "resource_changes": [
        {"address": a, "type": t, "mode": "managed",
         "change": {"actions": _TF_ACTIONS[act], "before": b or None, "after": af or None}}
        for a, t, act, b, af in SCENARIO]}


def _events() -> list[Any]:
    """The scenario as the engine events of a ``pulumi preview`` (the Automation API's)."""
    from pulumi.automation.events import EngineEvent

    events = [EngineEvent.from_json({"sequence": 0, "timestamp": 0, "resourcePreEvent": {
        "metadata": {"op": "same", "urn": "urn:pulumi:default::s::pulumi:pulumi:Stack::s-default",
                     "type": "pulumi:pulumi:Stack", "provider": ""}}})]
    for i, (a, t, act, before, after) in enumerate(SCENARIO, start=1):
        token = TERRAFORM_TO_PULUMI[t]
        urn = f"urn:pulumi:default::stack::{token}::{a}"

        def state(values: dict[str, Any], token: str = token, urn: str = urn) -> dict[str, Any]:
            return {"type": token, "urn": urn, "custom": True,
                    "inputs": _pulumi_state(values), "outputs": _pulumi_state(values)}
        for op, has_old, has_new in _STEPS[act]:
            events.append(EngineEvent.from_json({
                "sequence": i, "timestamp": 0, "resourcePreEvent": {"metadata": {
                    "op": op, "urn": urn, "type": token, "provider": "",
                    "old": state(before) if has_old else None,
                    "new": state(after) if has_new else None,
                    "keys": ["location"] if act == "replace" else []}}}))
    events.append(EngineEvent.from_json({"sequence": 99, "timestamp": 0, "summaryEvent": {
        "maybeCorrupt": False, "durationSeconds": 1,
        "resourceChanges": {"create": 1, "replace": 1, "delete": 1, "same": 2},
        "PolicyPacks": {}}}))
    return events


class _PreviewStack:
    """The Automation API stack, answering ``preview``/``up`` offline."""

    def __init__(self, events: list[Any]) -> None:
        self.events = events

    def preview(self, *, on_event: Any, **_: Any) -> None:
        for ev in self.events:
            on_event(ev)

    def up(self, *, on_event: Any, **_: Any) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(summary=SimpleNamespace(resource_changes={"create": 1}))

    def outputs(self) -> dict[str, Any]:
        return {}


def _pulumi_engine(stage: Path) -> PulumiEngine:
    eng = PulumiEngine(stage, CommandRunner(None), binary=sys.executable)
    eng._stack = _PreviewStack(_events())
    return eng


def _fake_terraform(tmp_path: Path, show: dict[str, Any]) -> Path:
    """An executable that prints ``show`` for ``terraform show -json`` (and fails otherwise)."""
    doc = tmp_path / "show.json"
    doc.write_text(json.dumps(show))
    exe = tmp_path / "terraform"
    exe.write_text(f"#!{sys.executable}\nimport sys\n"
                   "if sys.argv[1:3] != ['show', '-json']:\n    sys.exit(9)\n"
                   f"sys.stdout.write(open({str(doc)!r}).read())\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def _plan_findings(cli: Any, work: Path) -> tuple[int, list[tuple[str, str, str, bool]]]:
    code, out, err = cli("policy", str(work), "--plan", "-O", "json")
    assert code in (0, 1), out + err
    doc = json.loads(out)
    assert doc["withPlan"] is True
    return code, sorted((f["rule"], f["severity"], f["message"], bool(f["waived"]))
                        for f in doc["findings"] if "the saved plan" in f["message"])


# --- the engine unit --------------------------------------------------------------------------

def test_plan_saves_the_preview_and_the_unit_reads_it_like_the_events(tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    stage.mkdir()
    plan = _pulumi_engine(stage).plan()
    saved = json.loads((stage / PREVIEW_FILE).read_text())
    # the shape of `pulumi preview --json` (pulumi/pulumi pkg/backend/display/json.go)
    assert set(saved) == {"steps", "changeSummary"}
    assert {"op", "urn", "provider"} <= set(saved["steps"][1])
    assert saved["changeSummary"]["delete"] == 1
    from_file, _ = changes_from_preview(saved)
    assert from_file == plan.changes == changes_from_events(_events())[0]
    doc = saved_plan_document(stage, CommandRunner(None))
    assert doc is not None and doc["pulumi_preview"] == saved
    by_address = {rc["address"]: rc for rc in doc["resource_changes"]}
    # Terraform type names and attribute names, Terraform's action lists
    assert by_address[CLUSTER] == {
        "address": CLUSTER, "type": "google_container_cluster",
        "change": {"actions": ["delete"], "after": None,
                   "before": {"name": "c", "location": "us-central2",
                              "deletion_protection": False}}}
    assert by_address[BUCKET]["change"]["actions"] == ["delete", "create"]
    assert by_address[EXTRA]["change"]["after"]["deletion_protection"] is False
    assert len(doc["resource_changes"]) == len(SCENARIO)  # no stack, no provider


def test_apply_removes_the_saved_preview(tmp_path: Path) -> None:
    eng = _pulumi_engine(tmp_path)
    plan = eng.plan()
    assert (tmp_path / PREVIEW_FILE).is_file()
    eng.apply(plan)
    assert not (tmp_path / PREVIEW_FILE).exists()
    assert saved_plan_document(tmp_path, CommandRunner(None)) is None


def test_a_hand_written_pulumi_preview_json_is_read(tmp_path: Path) -> None:
    """``pulumi preview --json > .mldiag/pulumi-preview.json`` by hand: steps carry no type of
    their own (it is in the states, or only in the URN), and keys this code does not write
    (``detailedDiff``, ``diagnostics``, ``duration``) are ignored."""
    token = TERRAFORM_TO_PULUMI["google_container_node_pool"]
    pool = 'module.node_pool["v4"].google_container_node_pool.this'
    doc = {"steps": [
        {"op": "delete", "urn": f"urn:pulumi:default::p::{token}::{pool}", "provider": "",
         "oldState": {"urn": f"urn:pulumi:default::p::{token}::{pool}", "custom": True,
                      "type": token, "inputs": {"name": "v4"}, "outputs": {"name": "v4"}}},
        {"op": "create", "urn": f"urn:pulumi:default::p::{token}::{pool}-2",
         "newState": {"inputs": {"name": "v4-2", "nodeCount": 4}},
         "detailedDiff": {"nodeCount": {"kind": "add", "inputDiff": True}}}],
        "diagnostics": [], "duration": 1000, "changeSummary": {"create": 1, "delete": 1}}
    (tmp_path / ".mldiag").mkdir()
    (tmp_path / PREVIEW_FILE).write_text(json.dumps(doc))
    out = saved_plan_document(tmp_path, CommandRunner(None))
    assert out is not None
    assert [(rc["address"], rc["type"], rc["change"]["actions"])
            for rc in out["resource_changes"]] == [
        (pool, "google_container_node_pool", ["delete"]),
        (f"{pool}-2", "google_container_node_pool", ["create"])]
    assert out["resource_changes"][1]["change"]["after"] == {"name": "v4-2", "node_count": 4}


@pytest.mark.parametrize("text, why", [("{not json", "Expecting property name"),
                                       ("[1, 2]", "not a JSON object"),
                                       ('{"steps": {"op": "x"}}', "not a list of objects")])
def test_a_broken_saved_preview_is_one_engine_error(tmp_path: Path, text: str,
                                                    why: str) -> None:
    (tmp_path / ".mldiag").mkdir()
    (tmp_path / PREVIEW_FILE).write_text(text)
    with pytest.raises(EngineError) as info:
        saved_plan_document(tmp_path, CommandRunner(None))
    assert f"cannot read the saved Pulumi preview {tmp_path / PREVIEW_FILE}" in info.value.message
    assert why in info.value.message
    assert "pulumi preview --json > .mldiag/pulumi-preview.json" in (info.value.hint or "")


# --- policy --plan, both engines ----------------------------------------------------------------

def test_policy_plan_finds_the_same_violations_for_pulumi_as_for_terraform(
        tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(_fake_terraform(tmp_path, _terraform_show())))
    tf = tmp_path / "tf"
    render(cli, with_engine(AUTOPILOT, tmp_path / "tf.yaml", "terraform"), tf)
    (tf / ".mldiag" / "tfplan").write_bytes(b"stand-in: the fake terraform prints the plan")
    pu = tmp_path / "pu"
    render(cli, with_engine(AUTOPILOT, tmp_path / "pu.yaml", "pulumi"), pu)
    _pulumi_engine(pu).plan()  # what `mldiag-provision plan` leaves in the project stage
    # reading the saved preview needs neither the pulumi CLI nor its stand-in
    monkeypatch.delenv("MLDIAG_PULUMI", raising=False)
    tf_code, tf_findings = _plan_findings(cli, tf)
    pu_code, pu_findings = _plan_findings(cli, pu)
    assert pu_findings == tf_findings
    assert tf_code == pu_code == 1  # an unwaived error
    messages = {m for _, _, m, _ in pu_findings}
    assert f"the saved plan deletes {CLUSTER} (cluster)" in messages
    assert f"the saved plan replaces {BUCKET} (profiles-bucket)" in messages
    assert (f"the saved plan leaves {EXTRA} with deletion_protection = false"
            in messages)
    unwaived = {(rule, m) for rule, severity, m, waived in pu_findings
                if severity == "error" and not waived}
    assert ("plan-destructive-delete", f"the saved plan deletes {CLUSTER} (cluster)"
            ) in unwaived
    assert ("bucket-force-destroy", f"the saved plan gives {BUCKET} force_destroy = true"
            ) in unwaived


def test_policy_plan_on_a_pulumi_dir_without_a_saved_preview(
        tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "pu"
    render(cli, with_engine(AUTOPILOT, tmp_path / "pu.yaml", "pulumi"), work)
    empty = tmp_path / "empty-path"  # no pulumi CLI (nor terraform) is looked for
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("MLDIAG_PULUMI", raising=False)
    code, out, err = cli("--no-color", "policy", str(work), "--plan")
    assert code == 2, out + err
    assert f"error: {work} holds no saved plan" in err
    assert "run `mldiag-provision plan RECIPE -o DIR` first" in err
    assert "engine pulumi" in err and "Traceback" not in err + out
    # with a recipe and -o DIR the same
    r = with_engine(AUTOPILOT, tmp_path / "pu2.yaml", "pulumi")
    code, _, err = cli("--no-color", "policy", str(r), "-o", str(work), "--plan")
    assert code == 2 and "holds no saved plan" in err, err


def test_plan_result_of_the_saved_preview_keeps_dangers(tmp_path: Path) -> None:
    """The preview written for the gate is the one the danger warnings came from."""
    plan: PlanResult = _pulumi_engine(tmp_path).plan()
    assert any("DELETES the GKE cluster" in d for d in plan.dangers)
    changes, _ = changes_from_preview(json.loads((tmp_path / PREVIEW_FILE).read_text()))
    again = PlanResult(has_changes=True, summary=plan.summary, changes=changes)
    assert again.dangers == plan.dangers


def test_terraform_unit_reads_the_saved_plan_through_its_runner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``terraform show -json`` of ``.mldiag/tfplan`` runs through the runner it is given (the
    process seam), in the stage directory, and its document comes back unchanged."""
    from mldiag_provision import engines
    from mldiag_provision.runner import RecordingRunner

    unit = engines.get("terraform")
    monkeypatch.setenv("MLDIAG_TERRAFORM", str(tmp_path / "no-terraform"))
    # no saved plan: None, and terraform is not even looked for
    assert unit.saved_plan(tmp_path, RecordingRunner()) is None
    monkeypatch.setenv("MLDIAG_TERRAFORM", sys.executable)
    (tmp_path / ".mldiag").mkdir()
    (tmp_path / ".mldiag" / "tfplan").write_bytes(b"stand-in")
    show = _terraform_show()
    runner = RecordingRunner(responder=lambda argv, cwd: (0, json.dumps(show, indent=1)))
    assert unit.saved_plan(tmp_path, runner) == show
    [call] = runner.calls
    assert call.argv[1:] == ("show", "-json", "-no-color", ".mldiag/tfplan")
    assert call.cwd == tmp_path.resolve()
    for answer, why in (((1, ""), "terraform show"), ((0, "not json"), "is not JSON"),
                        ((0, "[]"), "is not a JSON object")):
        with pytest.raises(EngineError) as info:
            unit.saved_plan(tmp_path, RecordingRunner(responder=lambda a, c, r=answer: r))
        assert why in info.value.message, info.value.message
