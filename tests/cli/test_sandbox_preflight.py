"""``preflight --live --sandbox`` (issue 27): the live preflight asks the sandbox's local
double of Google Cloud's APIs (mldiag_provision/sandbox/gcp_apis.py, answering from the
project the sandbox holds: sandbox/live_project.py) instead of Google. Run as a user types it
(own process each), with a user environment that holds real-looking credentials.

Checked: every line says SANDBOX; the user's credentials are never used (the sandbox's API
servers accept only their own token, so a leaked one would turn the project check into a
401); what the sandbox does not model (permissions, roles, GKE versions, reservations,
quotas) is SKIP and says why; what it models answers from the sandbox: names that the
sandbox cloud already holds are taken (FAIL), an existing cluster exists only once seeded,
a machine type is offered in the zones the catalog lists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from stack_support import REPO_ROOT

V5P = "recipes/tpu-v5p-2x2x4-standard-reservation.yaml"  # reservation, quota: not modelled
EXISTING = "recipes/existing-gke-cluster.yaml"  # research-cluster in us-central1


def _cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mldiag_provision", *argv], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def _env(tmp_path: Path) -> dict[str, str]:
    """A user with Google credentials in the environment (never to be used here)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT / "provisioner"), *filter(None, [env.get("PYTHONPATH")])])
    env["NO_COLOR"] = "1"
    env["GOOGLE_OAUTH_ACCESS_TOKEN"] = "ya29.a-real-users-token"
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "no-such-key.json")
    env["MLDIAG_GOOGLE_API_ENDPOINT"] = "https://example.invalid"  # scrubbed by the sandbox
    env.pop("MLDIAG_SANDBOX", None)
    return env


def _marked(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith("[SANDBOX] ") for line in lines)


def _checks(stdout: str) -> dict[str, dict[str, str]]:
    doc = json.loads(stdout)
    assert doc["sandbox"] is True and doc["live"] is True
    return {r["check"]: r for r in doc["checks"]}


def test_live_preflight_in_a_new_sandbox(tmp_path: Path) -> None:
    env = _env(tmp_path)
    r = _cli("preflight", V5P, "--live", "--sandbox", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _marked(r.stdout) and _marked(r.stderr), r.stdout + r.stderr
    assert "a new, empty sandbox project; no credentials read, nothing sent to Google" in r.stderr
    assert "[SANDBOX] PASS project       project my-ml-project is ACTIVE" in r.stdout
    assert ("[SANDBOX] PASS machine-type  ct5p-hightpu-4t (slice v5p-16) is offered in "
            "us-east5-a") in r.stdout
    for check in ("permissions", "roles", "gke-version", "reservation", "quota"):
        line = next(x for x in r.stdout.splitlines() if f" {check} " in x)
        assert line.startswith(f"[SANDBOX] SKIP {check}"), line
        assert "not checked in the sandbox:" in line and "not modelled" in line, line
    assert "0 failed" in r.stdout

    # MLDIAG_SANDBOX=1 is the same switch; JSON stays one document with the marks on stderr
    r = _cli("preflight", V5P, "--live", "-O", "json", env={**env, "MLDIAG_SANDBOX": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    checks = _checks(r.stdout)
    assert checks["project"]["status"] == "PASS"
    assert checks["quota"]["status"] == "SKIP" and checks["quota"]["evidence"] == "sandbox"
    assert _marked(r.stderr)


def test_names_the_sandbox_holds_are_taken(tmp_path: Path) -> None:
    """A service account and a bucket of the same names already in the sandbox cloud (made
    outside this stack): the names check FAILs on each, as Google's 'already exists' would."""
    from mldiag_provision.sandbox.plugin import Cloud
    from mldiag_provision.sandbox.session import sandbox_dir

    work = tmp_path / "stack"
    cloud = Cloud(sandbox_dir(work) / "cloud")
    sa = "tpu-v5p-standard-workload"
    cloud.put("google_service_account",
              f"projects/my-ml-project/serviceAccounts/{sa}@my-ml-project.iam.gserviceaccount.com",
              {"account_id": sa, "project": "my-ml-project"})
    cloud.put("google_storage_bucket", "my-ml-project-tpu-v5p-standard-profiles",
              {"name": "my-ml-project-tpu-v5p-standard-profiles", "project": "my-ml-project"})
    r = _cli("preflight", V5P, "--live", "--sandbox", "-o", str(work), "-O", "json",
             env=_env(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    failed = [c["message"] for c in doc["checks"] if c["status"] == "FAIL"]
    assert len(failed) == 2 and all(c["check"] == "names" for c in doc["checks"]
                                    if c["status"] == "FAIL"), failed
    assert any(sa in m for m in failed) and any("tpu-v5p-standard-profiles" in m
                                                for m in failed), failed


def test_an_existing_cluster_exists_once_the_sandbox_holds_it(tmp_path: Path) -> None:
    from mldiag_provision.sandbox.gke_cluster import seed_gke_cluster
    from mldiag_provision.sandbox.session import sandbox_dir

    env = _env(tmp_path)
    work = tmp_path / "stack"
    r = _cli("preflight", EXISTING, "--live", "--sandbox", "-o", str(work), "-O", "json",
             env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    cluster = _checks(r.stdout)["cluster"]
    assert cluster["status"] == "FAIL"
    assert cluster["message"] == "cluster research-cluster does not exist in us-central1"

    seed_gke_cluster(sandbox_dir(work) / "cloud", project="my-ml-project",
                     location="us-central1", name="research-cluster")
    r = _cli("preflight", EXISTING, "--live", "--sandbox", "-o", str(work), "-O", "json",
             env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _checks(r.stdout)["cluster"]["status"] == "PASS"


def test_without_live_the_sandbox_preflight_is_the_offline_one(tmp_path: Path) -> None:
    r = _cli("preflight", V5P, "--sandbox", env=_env(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert _marked(r.stdout)
    assert "(add --live to ask the sandbox about project my-ml-project)" in r.stdout


def test_without_the_live_extra_it_says_how_to_install_it(cli, monkeypatch) -> None:
    """The sandbox's Google API stand-in serves the official clients' wire types: without
    the ``[live]`` extra (a quick-start install has ``[sandbox]`` only) it is a usage error
    naming the missing module and both ways to install the extra, never an internal error.
    The extra's absence is played by naming a module no install has."""
    from mldiag_provision.sandbox import live_project

    monkeypatch.setattr(live_project, "LIVE_MODULES",
                        (*live_project.LIVE_MODULES, "google.cloud.not_installed_v1"))
    code, out, err = cli("preflight", V5P, "--live", "--sandbox")
    assert code == 2, out + err
    assert "the live checks need the Google Cloud client libraries " \
           "(google.cloud.not_installed_v1 is missing)" in err, err
    assert "pip install 'mldiag-provision[live]'; in a clone: pip install -e '.[live]'" in err
    assert "internal error" not in err and "Traceback" not in err
