"""Provider reuse on real Terraform with the stand-in providers
(provisioner/mldiag_provision/engines/provider_pool.py): one start of each plugin per stage per
run, the same results as Terraform starting them itself, the lock file's hashes enforced."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from engine.conftest import offline_recipe
from mldiag_provision.engines.provider_pool import REUSE_ENV, package_hash
from mldiag_provision.hclparse import parse_hcl
from stack_support import RECIPES

pytestmark = pytest.mark.terraform

RECIPE = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")


def _starts(path: Path) -> list[tuple[int, str, str]]:
    if not path.is_file():
        return []
    return [(int(p), name, mode) for p, name, mode in
            (line.split() for line in path.read_text().splitlines())]


def _dead(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def _pool_notes(work: Path) -> str:
    """The provider pool's notes in every run log of ``work`` (why it declined, when it did),
    for assertion messages: a failure must say why the plugins were not reattached."""
    logs = sorted((work / ".mldiag/logs").glob("*.log"), key=lambda p: p.stat().st_mtime)
    return "\n".join(f"{log.name}: {line}" for log in logs
                     for line in log.read_text(errors="replace").splitlines()
                     if "providers:" in line)


def _setup(tmp_path: Path, monkeypatch) -> tuple[str, Path, Path, tuple[str, ...]]:
    """(recipe, stack directory, the stand-in's plugin-start record, the stage arguments),
    with provider reuse at its default."""
    recipe = str(offline_recipe(RECIPE, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    starts = tmp_path / "starts"
    monkeypatch.setenv("MLDIAG_STANDIN_STARTS", str(starts))
    monkeypatch.delenv(REUSE_ENV, raising=False)
    return recipe, work, starts, ("-o", str(work), "--stage", "project")


def test_each_plugin_starts_once_per_run_with_the_same_results(tmp_path: Path, offline, cli,
                                                               monkeypatch) -> None:
    if offline is None:
        return
    recipe, work, starts, project = _setup(tmp_path, monkeypatch)

    # apply = init + plan + show (the gate) + apply: each plugin started once, by the keeper
    code, out, err = cli("apply", recipe, *project, "--auto-approve")
    assert code == 0, out + err
    got = _starts(starts)
    assert sorted((name, mode) for _, name, mode in got) == [
        ("google", "reattach"), ("google-beta", "reattach")], (got, _pool_notes(work))
    assert all(_dead(pid) for pid, _, _ in got)  # stopped at the end of the run
    log = max((work / ".mldiag/logs").glob("apply-*.log"))
    assert "providers: started once for this run and reattached" in log.read_text()

    # what real `terraform init` recorded in the lock file is what we verify against
    lock = parse_hcl("lock", (work / ".terraform.lock.hcl").read_text())
    for block in lock["provider"]:
        for source, body in block.items():
            package = next((work / ".terraform/providers" / source / body["version"]).iterdir())
            assert package_hash(package) in body["hashes"], source

    # a plan in steady state, reattached, then the same plan with Terraform starting them
    summaries = {}
    for reuse in ("1", "0"):
        starts.unlink()
        monkeypatch.setenv(REUSE_ENV, reuse)
        code, out, err = cli("plan", recipe, *project, "--detailed-exitcode")
        assert code == 0, out + err
        summaries[reuse] = json.loads((work / ".mldiag/plan-summary.json").read_text())
        modes = [mode for _, _, mode in _starts(starts)]
        if reuse == "1":
            assert modes == ["reattach", "reattach"], (modes, _pool_notes(work))
        else:  # schemas, validation and the plan walk: Terraform starts each several times
            assert set(modes) == {"managed"} and len(modes) >= 4, modes
    assert summaries["1"] == summaries["0"]


def test_a_changed_plugin_package_is_refused_as_terraform_refuses_it(tmp_path: Path, offline,
                                                                     cli, monkeypatch) -> None:
    """Terraform checks the installed package against the lock file's h1 hash in every
    command; for a reattached plugin it does not, so the pool checks and declines: Terraform
    then starts it itself and refuses it with its own message."""
    if offline is None:
        return
    recipe, work, starts, project = _setup(tmp_path, monkeypatch)
    code, out, err = cli("plan", recipe, *project)
    assert code == 0, out + err
    exe = next((work / ".terraform/providers/registry.terraform.io/hashicorp/google")
               .glob("*/*/terraform-provider-google_*"))
    # `terraform init` links an unpacked filesystem mirror's package instead of copying it
    # (.terraform/providers/.../linux_amd64 -> the mirror): change a copy of this stack's
    # own, never the session's mirror that every later test in this process installs from
    package, before = exe.parent, package_hash(exe.parent)
    if package.is_symlink():
        mirrored = package.resolve()
        package.unlink()
        shutil.copytree(mirrored, package, symlinks=False)
        assert package_hash(package) == package_hash(mirrored)
    exe = package / exe.name
    exe.write_text(exe.read_text() + "# changed after terraform init\n")
    assert not package.is_symlink() and package_hash(package) != before
    starts.unlink()
    code, out, err = cli("plan", recipe, *project)
    assert code != 0, out + err
    log = max((work / ".mldiag/logs").glob("plan-*.log"), key=lambda p: p.stat().st_mtime)
    text = log.read_text()
    assert ("registry.terraform.io/hashicorp/google 8.7.0: Terraform starts it (the installed "
            "package") in text, _pool_notes(work)
    assert "does not match any of the checksums recorded in the dependency lock file" in \
        " ".join((out + err + text).split())
    assert all(name != "google" or mode == "managed" for _, name, mode in _starts(starts))


def test_a_terraform_init_that_runs_replaces_the_plugins(tmp_path: Path, offline, cli,
                                                         monkeypatch) -> None:
    """init may install other plugin versions: plugins started before it are stopped, and
    the next command reattaches to ones started from what init installed."""
    if offline is None:
        return
    from mldiag_provision.engines.terraform import INIT_STAMP, TerraformEngine
    from mldiag_provision.runner import CommandRunner

    recipe = str(offline_recipe(RECIPE, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    monkeypatch.delenv(REUSE_ENV, raising=False)
    code, out, err = cli("plan", recipe, "-o", str(work), "--stage", "project")
    assert code == 0, out + err
    engine = TerraformEngine(work, CommandRunner(tmp_path / "run.log"))
    try:
        first = json.loads(engine._providers()["TF_REATTACH_PROVIDERS"])
        (work / INIT_STAMP).unlink()  # the next init runs
        engine.init()
        assert all(_dead(entry["Pid"]) for entry in first.values())
        plan = engine.plan()
        second = json.loads(engine._providers()["TF_REATTACH_PROVIDERS"])
        assert {e["Pid"] for e in second.values()}.isdisjoint(e["Pid"] for e in first.values())
        assert plan.summary.create > 0 and plan.has_changes  # nothing applied yet
    finally:
        engine.close()
