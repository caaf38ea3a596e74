"""Provider reuse (provisioner/mldiag_provision/engines/provider_pool.py): when the pool
declines, and the keeper process with real (tiny) plugin programs: handshake, fallback,
shutdown, and plugins kept alive while a Terraform still uses them. The Terraform side (real
terraform, stand-in providers) is tests/engine/test_provider_reuse.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mldiag_provision.engines import provider_pool
from mldiag_provision.engines.provider_pool import ProviderPool, package_hash, reusable
from proc_support import started

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="provider reuse is Linux-only")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def _wait_dead(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _program(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _serving(tmp_path: Path, name: str = "plugin") -> Path:
    """A plugin that prints a go-plugin handshake (protocol 6) and serves until stopped."""
    return _program(tmp_path / name, "echo plugin log line >&2\n"
                                     f'echo "1|6|unix|$PLUGIN_UNIX_SOCKET_DIR/{name}.sock|grpc|"\n'
                                     "exec sleep 300\n")


def _pool(tmp_path: Path, notes: list[str], **kw) -> ProviderPool:
    return ProviderPool(tmp_path, dict(os.environ), tmp_path / "run.log", notes.append, **kw)


def test_handshake_becomes_reattach_config_and_close_stops_plugins(tmp_path: Path) -> None:
    notes: list[str] = []
    pool = _pool(tmp_path, notes)
    pool.start([{"source": "registry.terraform.io/hashicorp/google",
                 "exe": str(_serving(tmp_path))}])
    env = pool.environment()
    config = json.loads(env["TF_REATTACH_PROVIDERS"])
    entry = config["registry.terraform.io/hashicorp/google"]
    sockets = entry["Addr"]["String"].rsplit("/", 1)[0]
    assert entry["Protocol"] == "grpc" and entry["ProtocolVersion"] == 6
    assert entry["Test"] is True and entry["Addr"]["Network"] == "unix"
    assert entry["Pid"] == pool.pids[0] and _alive(entry["Pid"])
    assert stat.S_IMODE(os.stat(sockets).st_mode) == 0o700
    assert pool.environment() is env  # asked once
    assert any("started once for this run" in n for n in notes)
    pool.close()
    assert _wait_dead(entry["Pid"])
    assert not os.path.exists(sockets)
    assert "plugin log line" in (tmp_path / "run.log.providers").read_text()


@pytest.mark.parametrize("body, why", [
    ("exit 3\n", "exited with code 3"),
    ('echo "not a handshake"\nexec sleep 300\n', "unexpected handshake line"),
    ("exec sleep 300\n", "printed no handshake within 1"),
])
def test_a_plugin_that_does_not_start_falls_back_to_terraform(tmp_path: Path, body: str,
                                                              why: str) -> None:
    notes: list[str] = []
    good = _serving(tmp_path, "good")
    pool = _pool(tmp_path, notes, timeout_s=1)
    pool.start([{"source": "a/b/good", "exe": str(good)},
                {"source": "a/b/bad", "exe": str(_program(tmp_path / "bad", body))}])
    assert pool.environment() == {}
    assert any("Terraform starts them" in n and why in n for n in notes), notes
    pool.close()
    out = subprocess.run(["pgrep", "-f", str(good)], capture_output=True, text=True).stdout
    assert out.strip() == ""  # the good plugin was stopped with the keeper


def test_plugins_outlive_the_run_while_a_terraform_still_uses_them(tmp_path: Path) -> None:
    """mldiag-provision gone (the keeper's stdin closed) while a process that reattached to
    the plugins still runs (the orphaned terraform apply): the plugins stay until it ends."""
    pool = _pool(tmp_path, [])
    pool.start([{"source": "a/b/p", "exe": str(_serving(tmp_path))}])
    env = pool.environment()
    pid = pool.pids[0]
    with started(["sleep", "2"], env={**os.environ, **env}) as user:
        began = time.monotonic()
        pool.close()  # returns once the keeper stopped the plugins
        waited = time.monotonic() - began
        assert user.poll() == 0  # the keeper waited for it to end...
    assert waited >= 1.0, waited
    assert _wait_dead(pid)  # ...and then stopped the plugin


def test_the_keeper_killed_takes_its_plugins_along(tmp_path: Path) -> None:
    pool = _pool(tmp_path, [])
    pool.start([{"source": "a/b/p", "exe": str(_serving(tmp_path))}])
    pool.environment()
    pid = pool.pids[0]
    assert pool._proc is not None
    sockets = pool._sockets
    pool._proc.kill()  # PR_SET_PDEATHSIG: SIGKILL for the plugin too
    assert _wait_dead(pid)
    pool.close()
    assert sockets and not os.path.exists(sockets)  # the keeper could not remove it


def _module(work: Path, name: str, file: str, text: str) -> None:
    """A local module as `terraform init` records it in .terraform/modules/modules.json."""
    (work / "modules" / name).mkdir(parents=True, exist_ok=True)
    (work / "modules" / name / file).write_text(text)
    manifest = work / ".terraform/modules/modules.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    doc = json.loads(manifest.read_text()) if manifest.is_file() else {
        "Modules": [{"Key": "", "Source": "", "Dir": "."}]}
    doc["Modules"].append({"Key": name, "Source": f"./modules/{name}", "Dir": f"modules/{name}"})
    manifest.write_text(json.dumps(doc))


def _stage(tmp_path: Path, tf: str = 'resource "null_resource" "x" {}\n') -> Path:
    (tmp_path / "main.tf").write_text(tf)
    return tmp_path


@pytest.mark.parametrize("setup, why", [
    (lambda d, mp: mp.setenv("MLDIAG_TERRAFORM_REUSE_PROVIDERS", "0"),
     "MLDIAG_TERRAFORM_REUSE_PROVIDERS=0"),
    (lambda d, mp: mp.setenv("TF_REATTACH_PROVIDERS", "{}"), "TF_REATTACH_PROVIDERS is set"),
    (lambda d, mp: (d.joinpath("rc").write_text(
        'provider_installation {\n  dev_overrides {\n    "hashicorp/google" = "/x"\n  }\n}\n'),
        mp.setenv("TF_CLI_CONFIG_FILE", str(d / "rc"))), "has provider dev_overrides"),
    (lambda d, mp: d.joinpath("p.tf").write_text(
        'provider "google" {\n  alias   = "eu"\n  region = "europe-west4"\n}\n'),
     "p.tf configures a provider alias"),
    (lambda d, mp: _module(d, "m", "versions.tf",
        'terraform {\n  required_providers {\n    google = {\n      source = "hashicorp/google"\n'
        '      configuration_aliases = [google.eu]\n    }\n  }\n}\n'),
     "modules/m/versions.tf configures a provider alias"),
    (lambda d, mp: d.joinpath("extra.tf.json").write_text(json.dumps(
        {"provider": {"google": [{"alias": "second", "project": "other"}]}})),
     "extra.tf.json configures a provider alias"),
    (lambda d, mp: (d.joinpath("p.tf").write_text('provider "google" {\n  project = "a"\n}\n'),
                    _module(d, "x", "main.tf", 'provider "google" {\n  project = "b"\n}\n')),
     "provider google has 2 configurations"),
    (lambda d, mp: (d.joinpath("p.tf").write_text('provider "google" {\n  project = "a"\n}\n'),
                    d.joinpath("p2.tf.json").write_text(json.dumps(
                        {"provider": {"google": {"project": "b"}}}))),
     "provider google has 2 configurations"),
    (lambda d, mp: None, "the dependency lock file cannot be read"),
])
def test_when_terraform_starts_the_plugins_itself(tmp_path: Path, monkeypatch, setup,
                                                  why: str) -> None:
    monkeypatch.delenv("TF_REATTACH_PROVIDERS", raising=False)
    monkeypatch.delenv("MLDIAG_TERRAFORM_REUSE_PROVIDERS", raising=False)
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(tmp_path / "no-such-rc"))
    work = _stage(tmp_path)
    setup(work, monkeypatch)
    notes: list[str] = []
    assert reusable(work, log=notes.append) == []
    assert len(notes) == 1 and why in notes[0], notes


def _installed(work: Path, source: str, version: str, files: dict[str, bytes]) -> Path:
    package = work / ".terraform/providers" / source / version / provider_pool._platform()
    package.mkdir(parents=True)
    for name, data in files.items():
        (package / name).write_bytes(data)
        if name.startswith("terraform-provider-"):
            (package / name).chmod(0o755)
    return package


def test_only_packages_matching_the_lock_file_are_reattached(tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.delenv("TF_REATTACH_PROVIDERS", raising=False)
    monkeypatch.delenv("MLDIAG_TERRAFORM_REUSE_PROVIDERS", raising=False)
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(tmp_path / "no-such-rc"))
    work = _stage(tmp_path)
    good = _installed(work, "registry.terraform.io/hashicorp/google", "8.7.0",
                      {"terraform-provider-google_v8.7.0": b"#!/bin/sh\n", "LICENSE": b"MPL"})
    bad = _installed(work, "registry.terraform.io/hashicorp/google-beta", "8.7.0",
                     {"terraform-provider-google-beta_v8.7.0": b"#!/bin/sh\n"})
    recorded_bad = package_hash(bad)
    (bad / "terraform-provider-google-beta_v8.7.0").write_bytes(b"#!/bin/sh\n# changed\n")
    (work / ".terraform.lock.hcl").write_text(
        'provider "registry.terraform.io/hashicorp/google" {\n  version = "8.7.0"\n'
        f'  hashes = [\n    "{package_hash(good)}",\n    "zh:00",\n  ]\n}}\n'
        'provider "registry.terraform.io/hashicorp/google-beta" {\n  version = "8.7.0"\n'
        f'  hashes = [\n    "{recorded_bad}",\n  ]\n}}\n'
        'provider "registry.terraform.io/hashicorp/helm" {\n  version = "3.0.0"\n'
        '  hashes = [\n    "h1:x=",\n  ]\n}\n')
    notes: list[str] = []
    found = reusable(work, log=notes.append)
    assert found == [{"source": "registry.terraform.io/hashicorp/google",
                      "exe": str((good / "terraform-provider-google_v8.7.0").resolve())}]
    assert any("google-beta 8.7.0" in n and "matches no hash in the lock file" in n
               for n in notes), notes
    assert any("helm 3.0.0" in n and "no installed package" in n for n in notes), notes


def test_package_hash_is_gos_dirhash_h1(tmp_path: Path) -> None:
    """Known answer: the h1 of a directory with files "a" ("hello\\n") and "sub/b" (""),
    computed independently: sha256 over "<hex>  a\\n<hex>  sub/b\\n", base64."""
    import base64
    import hashlib

    (tmp_path / "sub").mkdir()
    (tmp_path / "a").write_bytes(b"hello\n")
    (tmp_path / "sub" / "b").write_bytes(b"")
    summary = (f"{hashlib.sha256(b'hello' + bytes([10])).hexdigest()}  a\n"
               f"{hashlib.sha256(b'').hexdigest()}  sub/b\n")
    expected = "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()
    assert package_hash(tmp_path) == expected


def test_one_configuration_per_provider_is_what_terraform_reads(tmp_path: Path) -> None:
    """Counted over the files Terraform reads for this root: another root beside it (the
    cluster stage's agents/), a module no call uses and override files do not count."""
    work = _stage(tmp_path)
    (work / "p.tf").write_text('provider "google" {\n  project = "a"\n}\n')
    (work / "agents").mkdir()
    (work / "agents" / "main.tf").write_text('provider "google" {\n  project = "a"\n}\n')
    (work / "modules" / "unused").mkdir(parents=True)
    (work / "modules" / "unused" / "main.tf").write_text('provider "google" {}\n')
    (work / "p_override.tf").write_text('provider "google" {\n  region = "us-east5"\n}\n')
    _module(work, "used", "main.tf", 'resource "google_storage_bucket" "b" {}\n')
    assert provider_pool._configurations(work) == {"google": 1}
