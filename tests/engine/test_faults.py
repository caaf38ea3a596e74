"""Faults: Terraform failing mid-apply, and the process being interrupted or killed
mid-apply. Each time the error is one actionable line (plus the log path), the state stays
intact, and the next ``apply`` converges (a re-plan then shows no changes)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.conftest import cloud_objects, offline_recipe
from proc_support import kill_group, popen
from stack_support import RECIPES

pytestmark = pytest.mark.terraform


@pytest.fixture(autouse=True)
def _stand_in_cluster(offline_cluster, gcs):
    """Every run here may go past the project stage: the stand-in cluster (API server) and
    the stand-in Cloud Storage listing are up for the test's cloud."""
    yield

RECIPE = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")
CLUSTER = "module.cluster.google_container_cluster.this"


def state_addresses(work: Path) -> set[str]:
    path = work / "terraform.tfstate"
    if not path.is_file():
        return set()
    try:
        doc = json.loads(path.read_text())
    except ValueError:  # being written (terraform truncates, then writes)
        return set()
    out = set()
    for r in doc.get("resources", []):
        if not r.get("instances"):  # terraform lists a resource before it has an object
            continue
        prefix = (r["module"] + ".") if r.get("module") else ""
        mode = "data." if r["mode"] == "data" else ""
        out.add(f"{prefix}{mode}{r['type']}.{r['name']}")
    return out


def _state_settled(work: Path, quiet_s: float = 0.5) -> bool:
    """The state file is whole JSON and unchanged over ``quiet_s`` seconds."""
    path = work / "terraform.tfstate"
    try:
        first = path.read_bytes()
        json.loads(first)
        time.sleep(quiet_s)
        return path.read_bytes() == first
    except (OSError, ValueError):
        return False


def wait_for(predicate, timeout: float, what: str,
             proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"exited {proc.returncode} before {what}:\n{out}\n{err}")
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def lock_free(work: Path) -> bool:
    fd = os.open(work / ".mldiag/lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def converges(cli, recipe: str, work: Path) -> None:
    code, out, err = cli("apply", recipe, "-o", str(work), "--auto-approve")
    assert code == 0, out + err
    code, out, err = cli("plan", recipe, "-o", str(work), "--detailed-exitcode")
    assert code == 0, out + err


def test_terraform_failing_mid_apply(tmp_path: Path, offline, cli, monkeypatch) -> None:
    if offline is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    r = str(offline_recipe(RECIPE, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    monkeypatch.setenv("MLDIAG_STANDIN_FAIL", "google_container_cluster:googleapi: Error 403: "
                       "Permission denied on resource project my-ml-project., forbidden")
    code, out, err = cli("apply", r, "-o", str(work), "--auto-approve")
    assert code == 4, out + err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == [f"error: terraform apply failed ({CLUSTER}): permission denied by "
                      "Google Cloud"], err
    hint = next(line for line in err.splitlines() if "hint:" in line)
    log = Path(hint.split("full log: ")[1].strip())
    assert log.is_file() and "Error 403" in log.read_text()
    assert f"FAIL {CLUSTER}" in out  # the live progress showed which resource failed
    # What finished before the failure is in the state (and in the "cloud"); the cluster not.
    done = state_addresses(work)
    assert "module.services.google_project_service.this" in done
    assert CLUSTER not in done and "google_container_cluster" not in cloud_objects(offline)
    monkeypatch.delenv("MLDIAG_STANDIN_FAIL")
    converges(cli, r, work)
    assert CLUSTER in state_addresses(work)


def _start_apply(recipe: str, work: Path, delay: str) -> subprocess.Popen[str]:
    """``mldiag-provision apply`` as a child in its own process group, with the default
    signal dispositions whatever this suite was launched with (tests/proc_support.py)."""
    env = dict(os.environ, MLDIAG_STANDIN_DELAY=delay, NO_COLOR="1")
    return popen([sys.executable, "-m", "mldiag_provision", "apply", recipe,
                  "-o", str(work), "--auto-approve"], env=env, text=True,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_killed_mid_apply_keeps_state_and_lock_then_converges(tmp_path: Path, offline,
                                                              cli, monkeypatch) -> None:
    """Also: the provider plugins (started once and reattached, engines/provider_pool.py)
    serve the orphaned terraform until it has finished, and stop then."""
    if offline is None:
        return
    r = str(offline_recipe(RECIPE, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    starts = tmp_path / "plugin-starts"
    monkeypatch.setenv("MLDIAG_STANDIN_STARTS", str(starts))
    proc = _start_apply(r, work, "google_container_cluster:8")
    try:
        wait_for(lambda: "google_project_service" in cloud_objects(offline), 60,
                 "the apply to start creating resources", proc)
        proc.kill()  # SIGKILL: no cleanup at all in our process
        proc.wait(timeout=10)
        # terraform runs on in its own session and still holds the work-directory lock:
        code, out, err = cli("apply", r, "-o", str(work), "--auto-approve")
        assert code == 3, out + err
        assert "in use by another run" in err and '"command": "apply"' in err
        assert "usually the terraform it started, finishing" in err and "fuser -v" in err
        wait_for(lambda: lock_free(work), 60, "the orphaned terraform to finish")
        assert CLUSTER in state_addresses(work)  # it finished the apply and saved the state
        plugins = [line.split() for line in starts.read_text().splitlines()]
        assert sorted((name, mode) for _, name, mode in plugins) == [
            ("google", "reattach"), ("google-beta", "reattach")], plugins
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid, _, _ in plugins), 15,
                 "the keeper to stop the plugins once terraform had finished")
        monkeypatch.delenv("MLDIAG_STANDIN_STARTS")
        converges(cli, r, work)
    finally:  # after the checks: the keeper must stop the plugins by itself
        kill_group(proc)
        _kill_orphaned_terraform(work)


@pytest.mark.parametrize("signum, code, said", [
    (signal.SIGINT, 130, "interrupted"),  # Ctrl-C
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),  # kill, a CI job's timeout
])
def test_interrupted_apply_stops_gracefully_then_converges(tmp_path: Path, offline, cli,
                                                           signum: int, code: int,
                                                           said: str) -> None:
    if offline is None:
        return
    r = str(offline_recipe(RECIPE, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    proc = _start_apply(r, work, "google_container_cluster:8")
    try:
        wait_for(lambda: "google_project_service" in cloud_objects(offline), 60,
                 "the apply to start creating resources", proc)
        # The cluster takes 8 s on the stand-in: margin for a loaded CI box to signal
        # mid-apply.
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, out + err
        assert f"{said}: terraform was stopped gracefully and its state saved" in err
        assert said not in [line.strip() for line in err.splitlines()]  # said once, in full
        assert lock_free(work)
        # Terraform let the operations in flight finish and recorded them:
        assert state_addresses(work) and all(
            t in cloud_objects(offline) for t in ("google_project_service",))
        converges(cli, r, work)
    finally:
        kill_group(proc)
        _kill_orphaned_terraform(work)


def _kill_orphaned_terraform(work: Path) -> None:
    """A terraform this test's apply started runs in its own session (the product's
    choice, so that a Ctrl-C reaches it once); if the test failed before it ended, stop its
    process group (terraform and its plugins) too."""
    for pid in _terraform_pids(work.resolve()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _terraform_pids(work: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"terraform") and b"apply" in cmd and cwd == str(work):
            pids.append(int(proc.name))
    return pids


def test_terraform_killed_mid_apply_then_converges(tmp_path: Path, offline, cli) -> None:
    """terraform itself SIGKILLed (with its plugins) while the cluster is being created:
    what it had recorded stays in the state, the in-flight cluster was never created, and
    the next apply converges. (Terraform writes its state after each resource; a kill in
    the instant between Google creating an object and that write would leave the object out
    of the state, which the next apply reports as "already exists": see the next test.)"""
    if offline is None:
        return
    r = str(offline_recipe(RECIPE, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    independent = {"module.services.google_project_service.this",
                   "module.profiles_bucket.google_storage_bucket.this",
                   "module.log_analytics.google_logging_project_bucket_config.default",
                   "module.workload_identity.google_service_account.this"}
    proc = _start_apply(r, work, "google_container_cluster:10")
    try:
        # killed only between two state writes: terraform truncates the state file and then
        # writes it, so a kill inside that window leaves it empty (a race of the test, not a
        # fault it is about); the cluster is held for 10 s, so the state settles before then
        wait_for(lambda: independent <= state_addresses(work) and _state_settled(work)
                 and _terraform_pids(work.resolve()), 60,
                 "everything but the cluster to be applied", proc)
        pid = _terraform_pids(work.resolve())[0]
        _stop_between_state_writes(pid, work)  # frozen: no write can start before the kill
        os.killpg(pid, signal.SIGKILL)  # terraform and its provider plugins, no cleanup
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 4, out + err
        assert "terraform apply was killed (signal 9)" in err
        assert "re-run the same command" in err
        assert CLUSTER not in state_addresses(work)  # it was in flight
        assert independent <= state_addresses(work)
        converges(cli, r, work)
    finally:
        kill_group(proc)
        _kill_orphaned_terraform(work)


def _stop_between_state_writes(pgid: int, work: Path, timeout: float = 30) -> None:
    """SIGSTOP terraform's process group at an instant its state file is whole JSON.

    Terraform rewrites ``terraform.tfstate`` in place after each resource (truncate, then
    write): a check of the file followed by a kill leaves a window in which a write can
    start. Stopped, terraform cannot start one; if it was stopped inside a write (the file
    empty or cut short), it is resumed for a moment and stopped again. Raises
    AssertionError after ``timeout`` seconds (the group resumed)."""
    state = work / "terraform.tfstate"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        os.killpg(pgid, signal.SIGSTOP)
        try:
            json.loads(state.read_bytes())
            return
        except (OSError, ValueError):
            os.killpg(pgid, signal.SIGCONT)
            time.sleep(0.05)
    raise AssertionError(f"no instant in {timeout}s with {state} whole")


def test_object_missing_from_state_is_reported_as_already_exists(tmp_path: Path, offline,
                                                                 cli) -> None:
    if offline is None:
        return
    r = str(offline_recipe(RECIPE, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    assert cli("apply", r, "-o", str(work), "--auto-approve")[0] == 0
    (work / "terraform.tfstate").unlink()  # a lost state: the objects still exist
    code, out, err = cli("apply", r, "-o", str(work), "--auto-approve")
    assert code == 4, out + err
    line = next(x for x in err.splitlines() if x.startswith("error:"))
    assert "already exists in Google Cloud but not in the Terraform state" in line, err
    assert "terraform import" in err
