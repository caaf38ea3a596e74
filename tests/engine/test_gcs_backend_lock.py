"""Shared Terraform state in Cloud Storage, with its lock, exercised for real (issue 30 item 3).

Terraform's own ``gcs`` backend (built into terraform; no provider to download) runs against
the sandbox's Cloud Storage stand-in (:mod:`mldiag_provision.sandbox.gcs`) through the
backend's ``storage_custom_endpoint`` and ``access_token`` settings
(https://developer.hashicorp.com/terraform/language/backend/gcs). The lock is an object
``<prefix>/default.tflock`` created with ``ifGenerationMatch=0`` (412 when it exists); its
generation is the lock id.

Each stack uses only ``terraform_data`` resources. ``terraform_data.one`` carries a
``local-exec`` provisioner that touches ``started`` and then waits (polling, capped at 600 s)
for a ``gate`` file, so a test holds an apply inside the lock for as long as it needs and
releases it by creating the gate. Every terraform runs in its own process group, killed on
teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.engines.terraform import TerraformEngine, translate
from mldiag_provision.errors import EngineError
from mldiag_provision.runner import CommandRunner
from mldiag_provision.sandbox.gcs import GcsStandIn
from stack_support import terraform_binary

pytestmark = pytest.mark.terraform

BUCKET = "tfstate"
PREFIX = "fleet/one"
WAIT = 240.0  # generous: two CPUs shared by many


def _until(cond: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


class Stack:
    """One work directory of the stack (``terraform init`` done)."""

    def __init__(self, workdir: Path, url: str, gates: Path, procs: list[subprocess.Popen[str]],
                 *, two: bool = False, gated: bool = False) -> None:
        self.dir = workdir
        self.procs = procs
        workdir.mkdir(parents=True)
        two_block = 'resource "terraform_data" "two" {\n  input = "two"\n}\n' if two else ""
        # a provisioner changes no plan: the gated and plain copies are one stack
        wait = (f"touch {gates}/started; i=0; while [ ! -e {gates}/gate ] && [ $i -lt 3000 ]; "
                "do sleep 0.2; i=$((i+1)); done")
        gate = f'''
  provisioner "local-exec" {{
    command = "{wait}"
  }}''' if gated else ""
        (workdir / "main.tf").write_text(f'''terraform {{
  backend "gcs" {{
    bucket                  = "{BUCKET}"
    prefix                  = "{PREFIX}"
    access_token            = "sandbox-token"
    storage_custom_endpoint = "{url}/storage/v1/"
  }}
}}

resource "terraform_data" "one" {{
  input = "one"{gate}
}}
{two_block}''', encoding="utf-8")
        done = self.run("init", "-input=false")
        assert done.returncode == 0, done.stdout

    def start(self, *args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1",
               "TF_CLI_CONFIG_FILE": os.devnull}
        proc = subprocess.Popen(["terraform", args[0], "-no-color", *args[1:]], cwd=self.dir,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        self.procs.append(proc)
        return proc

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.start(*args)
        out, _ = proc.communicate(timeout=WAIT)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The stand-in (bucket ``tfstate`` present), a gates folder, and the started processes
    (their process groups are killed on teardown). terraform missing fails the test, as the
    project's other terraform tests do, unless MLDIAG_ALLOW_NO_TERRAFORM=1."""
    if terraform_binary() is None:
        pytest.skip("terraform is missing and MLDIAG_ALLOW_NO_TERRAFORM=1 allows it")
    cloud = tmp_path / "cloud"
    (cloud / "gcs-objects" / BUCKET).mkdir(parents=True)
    gates = tmp_path / "gates"
    gates.mkdir()
    procs: list[subprocess.Popen[str]] = []
    with GcsStandIn(cloud) as gcs:
        try:
            yield {"gcs": gcs, "cloud": cloud, "gates": gates, "procs": procs,
                   "stack": lambda name, two=False, gated=False: Stack(
                       tmp_path / name, gcs.url, gates, procs, two=two, gated=gated)}
        finally:
            (gates / "gate").touch()  # a provisioner's wait loop left behind ends itself
            for p in procs:
                if p.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGKILL)
                    p.communicate(timeout=30)


def _state(cloud: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        (cloud / "gcs-objects" / BUCKET / PREFIX / "default.tfstate").read_text("utf-8"))
    return doc


def _names(state: dict[str, Any]) -> set[str]:
    return {r["name"] for r in state["resources"] if r["type"] == "terraform_data"}


def _lock_id(world: dict[str, Any]) -> str | None:
    gen = world["gcs"].store.generation(BUCKET, f"{PREFIX}/default.tflock")
    return None if gen is None else str(gen)


def _hold(world: dict[str, Any], stack: Stack) -> tuple[subprocess.Popen[str], str]:
    """Start an apply that stops inside its lock (in the gated provisioner); its lock id."""
    proc = stack.start("apply", "-auto-approve", "-input=false")
    _until(lambda: (world["gates"] / "started").exists() or proc.poll() is not None,
           "the first apply to reach its provisioner")
    assert proc.poll() is None, proc.communicate()[0]
    lock = _lock_id(world)
    assert lock is not None, "the apply holds no lock object"
    return proc, lock


def _lock_info(out: str) -> dict[str, str]:
    info = out.split("Lock Info:", 1)[1]
    return {k.strip(): v.strip() for k, _, v in
            (line.partition(":") for line in info.splitlines()[:7]) if v.strip()}


def test_second_concurrent_apply_is_refused_naming_the_holder_then_waits(
        world: dict[str, Any]) -> None:
    first = world["stack"]("a", gated=True)
    second = world["stack"]("b", two=True)
    holder, lock = _hold(world, first)

    refused = second.run("apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
    assert refused.returncode == 1, refused.stdout
    assert "Error acquiring the state lock" in refused.stdout
    info = _lock_info(refused.stdout)
    assert info["ID"] == lock
    assert info["Path"] == f"gs://{BUCKET}/{PREFIX}/default.tflock"
    assert info["Operation"] == "OperationTypeApply"
    assert info["Who"]  # user@host of the holder

    posts = lambda: sum(1 for r in world["gcs"].requests  # noqa: E731
                        if r.startswith("POST ") and "default.tflock" in r)
    before = posts()
    waiter = second.start("apply", "-auto-approve", "-input=false", "-lock-timeout=300s")
    _until(lambda: posts() >= before + 2, "the waiting apply to try the lock twice")
    assert waiter.poll() is None  # refused, it retries: it waits, it has not failed
    (world["gates"] / "gate").touch()
    out_first, _ = holder.communicate(timeout=WAIT)
    assert holder.returncode == 0, out_first
    serial_first = _state(world["cloud"])["serial"]
    out_second, _ = waiter.communicate(timeout=WAIT)
    assert waiter.returncode == 0, out_second
    assert "1 added" in out_second

    final = _state(world["cloud"])
    assert final["serial"] > serial_first
    assert _names(final) == {"one", "two"}
    assert _lock_id(world) is None  # both released the lock


def test_lock_left_by_a_killed_run_is_named_and_force_unlock_frees_it(
        world: dict[str, Any]) -> None:
    first = world["stack"]("a", gated=True)
    holder, lock = _hold(world, first)
    os.killpg(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=60)
    assert _lock_id(world) == lock  # the lock outlives its holder

    second = world["stack"]("b", two=True)
    refused = second.run("apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
    assert refused.returncode == 1
    assert _lock_info(refused.stdout)["ID"] == lock

    what, hint = translate(refused.stdout) or ("", "")
    assert "holds the state lock" in what
    assert f"terraform force-unlock {lock}" in hint
    assert f"gs://{BUCKET}/{PREFIX}/default.tflock" in hint
    assert "OperationTypeApply" in hint

    # what the tool itself says: its engine's plan (-json diagnostics) in the same directory
    engine = TerraformEngine(second.dir, CommandRunner(second.dir / "engine.log"),
                             lock_timeout="0s")
    with pytest.raises(EngineError) as told:
        engine.plan()
    assert "holds the state lock" in str(told.value)
    assert f"`terraform force-unlock {lock}`" in (told.value.hint or "")
    assert f"gs://{BUCKET}/{PREFIX}/default.tflock" in (told.value.hint or "")

    wrong = second.run("force-unlock", "-force", "12345")  # a wrong id frees nothing
    assert wrong.returncode != 0
    assert _lock_id(world) == lock
    freed = second.run("force-unlock", "-force", lock)
    assert freed.returncode == 0, freed.stdout
    assert _lock_id(world) is None

    again = second.run("apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
    assert again.returncode == 0, again.stdout
    assert _names(_state(world["cloud"])) == {"one", "two"}


def test_destroy_and_reapply_on_remote_state(world: dict[str, Any]) -> None:
    stack = world["stack"]("a", two=True)
    applied = stack.run("apply", "-auto-approve", "-input=false")
    assert applied.returncode == 0, applied.stdout
    first = _state(world["cloud"])
    assert _names(first) == {"one", "two"}

    destroyed = stack.run("destroy", "-auto-approve", "-input=false")
    assert destroyed.returncode == 0, destroyed.stdout
    gone = _state(world["cloud"])
    assert gone["resources"] == []
    assert gone["serial"] > first["serial"]
    assert gone["lineage"] == first["lineage"]

    other = world["stack"]("b", two=True)  # a fresh work directory reads the remote state
    reapplied = other.run("apply", "-auto-approve", "-input=false")
    assert reapplied.returncode == 0, reapplied.stdout
    assert "2 added" in reapplied.stdout
    back = _state(world["cloud"])
    assert _names(back) == {"one", "two"}
    assert back["serial"] > gone["serial"]
    assert back["lineage"] == first["lineage"]
    assert _lock_id(world) is None


def test_negative_control_without_the_lock_a_second_writer_goes_unseen(
        world: dict[str, Any]) -> None:
    """With ``-lock=false`` the same concurrent write that the tests above see refused is
    let through while another apply holds the lock: the lock, not luck, protects the state."""
    first = world["stack"]("a", gated=True)
    second = world["stack"]("b", two=True)
    holder, lock = _hold(world, first)

    unlocked = second.run("apply", "-auto-approve", "-input=false", "-lock=false")
    assert unlocked.returncode == 0, unlocked.stdout  # not refused: the writer is unseen
    assert "Error acquiring the state lock" not in unlocked.stdout
    assert _lock_id(world) == lock  # it neither took nor saw the holder's lock
    assert "two" in _names(_state(world["cloud"]))

    (world["gates"] / "gate").touch()
    out, _ = holder.communicate(timeout=WAIT)
    assert holder.returncode == 0, out
    # the holder writes the state it planned, without "two": the second writer's work is lost
    assert _names(_state(world["cloud"])) == {"one"}
