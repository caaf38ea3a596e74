"""The gate started before its plan exists (issue 16): ``plan``/``apply`` start the Rego
engine and read the stack while Terraform plans, then finish with the plans. The result is
the one :func:`run_gate` gives; errors of the start come out of ``finish``; an unfinished
gate stops its engine process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mldiag_provision.policy.engine import PolicyError
from mldiag_provision.policy.gate import GateRun, Settings, run_gate
from mldiag_provision.policy.inputs import stack_document
from stack_support import REPO_ROOT, render_files

STANDARD = REPO_ROOT / "recipes" / "tpu-v6e-4x4-multislice-standard-spot.yaml"
PLAN = {"resource_changes": [{
    "address": "module.profiles_bucket.google_storage_bucket.this[0]",
    "type": "google_storage_bucket", "change": {
        "actions": ["create"], "before": None,
        "after": {"public_access_prevention": "inherited", "force_destroy": True}}}]}


def _summary(result: object) -> list[tuple[str, str, str]]:
    return sorted((f.rule.id, f.message, f.resource) for f in result.findings)  # type: ignore[attr-defined]


def test_started_early_gives_the_same_findings_as_run_gate() -> None:
    files = render_files(STANDARD)
    run = GateRun(lambda: stack_document(files), Settings())
    proc = run.evaluation._proc  # type: ignore[union-attr]
    time.sleep(0.2)  # "Terraform plans": the engine is up meanwhile
    assert proc.poll() is None
    early = run.finish(PLAN)
    late = run_gate(stack_document(files), PLAN, Settings())
    assert _summary(early) == _summary(late)
    assert {"bucket-public-access", "bucket-force-destroy"} <= {r for r, _, _ in _summary(early)}
    assert early.with_plan and early.elapsed_s < 60


def test_errors_of_the_start_come_out_of_finish(tmp_path: Path) -> None:
    broken = tmp_path / "policies"
    broken.mkdir()
    (broken / "bad.rego").write_text("package mine.bad\n\ndeny contains x if {\n")
    run = GateRun({"resources": []}, Settings(directories=(broken,)))  # no raise here
    with pytest.raises(PolicyError) as early:
        run.finish(None)
    with pytest.raises(PolicyError) as late:
        run_gate({"resources": []}, None, Settings(directories=(broken,)))
    assert str(early.value) == str(late.value)

    def unreadable() -> dict:
        raise PolicyError("cannot read the stack")

    run = GateRun(unreadable, Settings())
    proc = run.evaluation._proc  # type: ignore[union-attr]
    with pytest.raises(PolicyError, match="cannot read the stack"):
        run.finish(None)
    assert proc.wait(timeout=10) is not None  # the engine process was stopped


def test_an_unfinished_gate_stops_its_engine(tmp_path: Path) -> None:
    from mldiag_provision.cli.commands.policy import StagePlansGate

    work = tmp_path / "work"
    work.mkdir()
    for rel, data in render_files(STANDARD).items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(data)
    with StagePlansGate(work, str(STANDARD)) as gate:
        assert gate.run is not None and gate.run.evaluation is not None
        proc = gate.run.evaluation._proc
        assert proc.poll() is None
        # the plan fails or is interrupted here: the gate is left unfinished
    assert proc.wait(timeout=10) is not None
