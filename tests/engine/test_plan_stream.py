"""The plan as Terraform's ``plan -json`` stream tells it equals the plan ``show -json``
reads from the saved plan (issue 16): the same counts, change list, drift, summary file and
red block, on real terraform runs against the stand-in; the saved plan is read only when
something needs the values (a danger that depends on them, the drift display, the policy
gate), and then once."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.conftest import offline_recipe
from mldiag_provision.cli.commands._stack import show_plan
from mldiag_provision.console import Console
from mldiag_provision.engines import PlanResult, ResourceChange
from mldiag_provision.engines.terraform import PLAN_FILE, TerraformEngine
from mldiag_provision.runner import CommandRunner, RunResult
from stack_support import RECIPES

pytestmark = pytest.mark.terraform

STANDARD = next(r for r in RECIPES if r.stem == "tpu-v5p-2x2x4-standard-reservation")


class _Tasks(CommandRunner):
    """A real runner that remembers the task of each command it ran."""

    def __init__(self) -> None:
        super().__init__(None)
        self.tasks: list[str] = []

    def run(self, argv: Any, **kw: Any) -> RunResult:  # type: ignore[override]
        self.tasks.append(kw["task"])
        return super().run(argv, **kw)


def _text(plan: PlanResult) -> str:
    buf = io.StringIO()
    show_plan(Console(buf, color=False), plan)
    return buf.getvalue()


def _key(c: ResourceChange) -> tuple[Any, ...]:
    return (c.address, c.type, c.action, json.dumps(c.before, sort_keys=True),
            json.dumps(c.after, sort_keys=True), c.replace_paths)


def _assert_same(lite: PlanResult, eng: TerraformEngine) -> PlanResult:
    """``lite`` (from the stream) against ``show -json`` of the same saved plan."""
    full = eng.show(eng.workdir / PLAN_FILE, destroy=lite.destroy)
    full.has_changes = lite.has_changes  # both from the exit code in TerraformEngine.plan
    summary = json.loads((eng.workdir / ".mldiag/plan-summary.json").read_text())
    assert summary == full.to_dict()
    assert lite.to_dict() == full.to_dict()
    assert lite.summary == full.summary
    assert lite.dangers == full.dangers
    assert _text(lite) == _text(full)
    detailed = lite.detailed()
    assert [_key(c) for c in detailed.changes] == [_key(c) for c in full.changes]
    assert [_key(c) for c in detailed.drift] == [_key(c) for c in full.drift]
    return full


def test_plan_from_the_stream_equals_the_saved_plan(tmp_path: Path, offline, gcs,
                                                    cli) -> None:
    if offline is None:
        return
    recipe = str(offline_recipe(STANDARD, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    code, out, err = cli("render", recipe, "-o", str(work))
    assert code == 0, out + err
    runner = _Tasks()
    eng = TerraformEngine(work, runner)
    eng.init()

    # 1. Nothing there: creates only. The stream says it all; the saved plan is not read.
    runner.tasks.clear()
    lite = eng.plan()
    assert runner.tasks == ["terraform plan"]
    assert lite.has_changes and lite.summary.create > 10 and lite.dangers == []
    _assert_same(lite, eng)
    eng.apply(lite)

    # 2. Drift (labels changed in the cloud), the update that undoes it, and a replacement
    #    of the TPU node pool (tainted): the red block reads the pool's machine type, the
    #    drift line the changed attributes.
    bucket = next((offline / "google_storage_bucket").glob("*.json"))
    doc = json.loads(bucket.read_text())
    doc["state"]["labels"] = {**doc["state"]["labels"], "edited": "by-hand"}
    bucket.write_text(json.dumps(doc))
    pool = next(r["address"] for r in eng.state_resources()
                if r["type"] == "google_container_node_pool"
                and "ct5p" in json.dumps(r["values"]))
    subprocess.run([eng.binary, "taint", pool], cwd=work, check=True, capture_output=True)
    runner.tasks.clear()
    lite = eng.plan()
    assert runner.tasks == ["terraform plan", "terraform show (saved plan)"]  # dangers
    assert {c.action for c in lite.changes} >= {"update", "replace"} and lite.drift
    assert any(d.startswith(f"REPLACES the TPU node pool/VM {pool}") for d in lite.dangers)
    full = _assert_same(lite, eng)
    assert "drift: " in _text(full) and "labels" in _text(full)
    assert runner.tasks.count("terraform show (saved plan)") == 2  # once, then the test's own

    # 3. Destroy: deletes, with the cluster, the pool and the bucket in the red block.
    runner.tasks.clear()
    lite = eng.plan(destroy=True)
    assert lite.summary.delete == lite.summary.total > 10
    assert len(lite.dangers) >= 3
    _assert_same(lite, eng)


_TINY = """terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 8.0.0, < 9.0.0"
    }
  }
}

provider "google" {
  project = "stream-test-project"
  region  = "us-central1"
}
"""


def _bucket(resource: str, name: str) -> str:
    return (f'resource "google_storage_bucket" "{resource}" {{\n  name     = "{name}"\n'
            '  location = "US"\n}\n')


def test_moved_and_removed_blocks_from_the_stream_equal_the_saved_plan(tmp_path: Path,
                                                                         offline) -> None:
    """The stream's "move" and "remove" (a ``moved`` block; a ``removed`` block with
    ``destroy = false``) read as ``show -json`` reads them: a moved object without other
    change is listed as unchanged ("no-op"), a removed one as forgotten ("forget"), in counts
    and change list alike."""
    if offline is None:
        return
    work = tmp_path / "tiny"
    work.mkdir()
    (work / "main.tf").write_text(_TINY + _bucket("a", "mldiag-stream-a")
                                  + _bucket("b", "mldiag-stream-b"))
    eng = TerraformEngine(work, _Tasks())
    try:
        eng.init()
        lite = eng.plan()
        _assert_same(lite, eng)
        eng.apply(lite)
        (work / "main.tf").write_text(
            _TINY + _bucket("renamed", "mldiag-stream-a")
            + "moved {\n  from = google_storage_bucket.a\n"
              "  to   = google_storage_bucket.renamed\n}\n"
            + "removed {\n  from = google_storage_bucket.b\n\n  lifecycle {\n"
              "    destroy = false\n  }\n}\n")
        eng.init()
        lite = eng.plan()
        full = _assert_same(lite, eng)
        assert {c.address: c.action for c in full.changes} == {
            "google_storage_bucket.renamed": "no-op", "google_storage_bucket.b": "forget"}
        assert lite.summary.total == 0 and lite.has_changes
        eng.apply(lite)
        assert [r["address"] for r in eng.state_resources()] == ["google_storage_bucket.renamed"]
    finally:
        eng.close()
