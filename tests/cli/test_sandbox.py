"""``--sandbox`` (issue 27): the quick-start recipe through ``apply`` -> ``verify`` -> ``plan``
-> ``destroy`` against the local double of Google Cloud, each command run as a user types it
(its own process, ``python -m mldiag_provision ...``), with the recipe as written.

Checked: the exit codes; every line the commands print says SANDBOX; the sandbox cloud in
``DIR/.mldiag/sandbox`` persists between the commands (``sandbox ls`` after apply lists the
cluster and the Kubernetes objects the in-cluster stage and the workloads made, and
``verify``, a new process, finds them); the user's credentials and cluster are never read
(the environment names a service-account key that does not exist and a kubeconfig that
points nowhere: both are scrubbed); after destroy the cloud holds only what destroy says it
keeps (enabled APIs, Log Analytics on ``_Default``: removed from the state only, as on
Google Cloud), and ``sandbox reset`` empties it. No server outlives a command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proc_support import started
from stack_support import REPO_ROOT, terraform_binary

pytestmark = pytest.mark.terraform

RECIPE = "recipes/tpu-v4-2x2x4-autopilot.yaml"  # the README's quick start
KEPT = {"google_project_service", "google_logging_project_bucket_config"}


def _cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mldiag_provision", *argv], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def _all_marked(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith("[SANDBOX] ") for line in lines)


def _ls(work: Path, env: dict[str, str]) -> list[dict[str, str]]:
    r = _cli("sandbox", "ls", "-o", str(work), "-O", "json", env=env)
    assert r.returncode == 0, r.stderr
    objects: list[dict[str, str]] = json.loads(r.stdout)["objects"]
    return objects


def _processes_naming(text: str) -> list[str]:
    """Command lines of running processes that mention ``text`` (Linux /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in argv:
            found.append(argv)
    return found


def _none_left(work: Path, timeout_s: float = 20.0) -> list[str]:
    """Processes still running for the stack ``work`` (its plugins run from the sandbox's
    provider mirror under it) once ``timeout_s`` has passed (the provider keeper stops its
    plugins shortly after the command exits)."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        left = _processes_naming(str(work))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def _user_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user who has (fake) Google credentials and a kubeconfig."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT / "provisioner"), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("MLDIAG_OFFLINE", None)  # the sandbox must skip the live checks by itself
    env["NO_COLOR"] = "1"
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "no-such-key.json")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\n", encoding="utf-8")
    env["KUBECONFIG"] = str(kubeconfig)
    env["CLOUDSDK_CORE_PROJECT"] = "a-real-project"
    return env


def test_quick_start_apply_verify_plan_destroy_in_the_sandbox(tmp_path: Path) -> None:
    if terraform_binary() is None:
        return
    env = _user_env(tmp_path)
    work = tmp_path / "stack"
    recipe_before = (REPO_ROOT / RECIPE).read_bytes()

    r = _cli("apply", RECIPE, "-o", str(work), "--sandbox", "--auto-approve", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _all_marked(r.stdout) and _all_marked(r.stderr), r.stdout + r.stderr
    assert "[SANDBOX] apply runs against a local double of Google Cloud" in r.stderr
    assert "apply complete: 28 created" in r.stdout
    log = next((work / ".mldiag" / "logs").glob("apply-*.log"))
    assert _all_marked(log.read_text(encoding="utf-8"))

    held = _ls(work, env)
    kinds = {o["kind"] for o in held}
    assert {"google_container_cluster", "google_storage_bucket", "Namespace", "ServiceAccount",
            "Job"} <= kinds, held
    assert {"kind": "google_container_cluster", "name": "tpu-v4-multihost",
            "where": "my-ml-project/us-central2"} in held

    # a new process, the same sandbox cloud: the cluster answers with what apply made
    r = _cli("verify", RECIPE, "-o", str(work), "--sandbox", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _all_marked(r.stdout)
    assert "PASS namespace-label" in r.stdout and "PASS ksa-annotation" in r.stdout
    assert "0 failed of" in r.stdout

    # one output for a script stays bare (V=$(mldiag-provision output ... --name N))
    r = _cli("output", RECIPE, "-o", str(work), "--sandbox", "--name", "cluster_name", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "tpu-v4-multihost\n", r.stdout
    assert "[SANDBOX]" in r.stderr

    # MLDIAG_SANDBOX=1 is the same switch; nothing changed since apply
    r = _cli("plan", RECIPE, "-o", str(work), "--detailed-exitcode",
             env={**env, "MLDIAG_SANDBOX": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert _all_marked(r.stdout)

    r = _cli("destroy", RECIPE, "-o", str(work), "--sandbox", "--auto-approve",
             "--disable-deletion-protection", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _all_marked(r.stdout) and _all_marked(r.stderr)
    assert "destroy complete:" in r.stdout

    left = _ls(work, env)
    assert left and {o["kind"] for o in left} <= KEPT, left
    assert _none_left(work) == []  # no server or plugin outlives the commands
    r = _cli("sandbox", "reset", "-o", str(work), env=env)
    assert r.returncode == 0 and "emptied" in r.stdout
    # the way back is named (second fresh-user review: verify and destroy then failed with
    # hints about kubeconfig and the recipe)
    assert f"mldiag-provision apply RECIPE -o {work} --sandbox` to recreate them" in \
        " ".join(r.stdout.split()), r.stdout
    assert _ls(work, env) == []
    assert (REPO_ROOT / RECIPE).read_bytes() == recipe_before  # the recipe stays as written


def test_sandbox_needs_a_work_directory_for_verify(tmp_path: Path) -> None:
    r = _cli("verify", RECIPE, "--sandbox", env=_user_env(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "[SANDBOX] error: verify --sandbox needs -o DIR" in r.stderr


def test_session_scrubs_credentials_and_restores_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a session: no variable that names real credentials or a real cluster; the
    sandbox's endpoints instead; afterwards the environment is the caller's again and the
    API server no longer answers."""
    import socket

    from mldiag_provision.errors import ConflictError
    from mldiag_provision.sandbox.session import session

    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/real/key.json")
    monkeypatch.setenv("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", "/real/token")
    monkeypatch.setenv("KUBECONFIG", "/real/kubeconfig")
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "real-token")
    before = dict(os.environ)
    with session(tmp_path / "stack", "sandbox serve") as sb:
        assert "GOOGLE_APPLICATION_CREDENTIALS" not in os.environ
        assert "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE" not in os.environ
        assert "KUBECONFIG" not in os.environ
        assert os.environ["GOOGLE_OAUTH_ACCESS_TOKEN"].startswith("sandbox-")
        assert os.environ["CLOUDSDK_CONFIG"] == str(sb.root / "gcloud")
        assert os.environ["STORAGE_EMULATOR_HOST"].startswith("http://127.0.0.1:")
        assert os.environ["MLDIAG_OFFLINE"] == "1"
        host, port = sb.apiserver.split(":")
        assert host == "127.0.0.1"
        # one command at a time per sandbox; the refusal names the holder and how to stop it
        with pytest.raises(ConflictError, match=r"`mldiag-provision sandbox serve` "
                                                 rf"\(pid {os.getpid()}\) is running") as held, \
                session(tmp_path / "stack"):
            pass
        assert held.value.hint is not None and f"kill {os.getpid()}" in held.value.hint
    assert dict(os.environ) == before
    with socket.socket() as s:  # nothing listens any more
        assert s.connect_ex((host, int(port))) != 0
    # the next session serves the same endpoint (the stack recorded it at apply)
    with session(tmp_path / "stack") as again:
        assert again.apiserver == sb.apiserver


def test_sandbox_rules_lists_each_behaviour_with_its_source(tmp_path: Path) -> None:
    """``sandbox rules``: unique ids, each with a source; and the listed behaviours are the
    ones the plugin hooks enforce (three of them exercised here, one per hook)."""
    from mldiag_provision.sandbox import rules
    from mldiag_provision.sandbox.plugin import Cloud

    cloud = Cloud(tmp_path)  # what the plugin hands the rules
    r = _cli("sandbox", "rules", "-O", "json", env=_user_env(tmp_path))
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    ids = [x["id"] for x in listed]
    assert len(ids) == len(set(ids)) == len(rules.RULES)
    assert all(x["source"].strip() and x["what"].strip() for x in listed)
    assert {"bucket-name", "api-not-enabled", "bucket-not-empty"} <= set(ids)
    # plan: bucket-name
    assert rules.validate("google_storage_bucket", {"name": "goog-profiles"})
    # apply: api-not-enabled (an empty cloud has no google_project_service)
    refusal = rules.refuse(cloud, "google_container_cluster", None,
                           {"name": "c", "project": "p", "location": "us-central2"})
    assert refusal is not None and "Error 403" in refusal and "accessNotConfigured" in refusal
    # destroy: bucket-not-empty
    (tmp_path / "gcs-objects" / "b").mkdir(parents=True)
    (tmp_path / "gcs-objects" / "b" / "profile.xplane.pb").write_bytes(b"x")
    refusal = rules.refuse(cloud, "google_storage_bucket", {"name": "b"}, None)
    assert refusal is not None and "Error 409" in refusal
    text = _cli("sandbox", "rules", env=_user_env(tmp_path)).stdout
    assert text.startswith("SANDBOX rules:") and "source: " in text


def test_a_recipe_with_remote_state_keeps_it_in_the_sandbox_bucket(tmp_path: Path) -> None:
    """The gcs backend reaches the sandbox's Cloud Storage double (the session sets the
    backend's endpoint and token), never storage.googleapis.com: the state bucket is made in
    the sandbox, as it would exist before the first init, and said so. A work directory whose
    `terraform init` set the backend up outside the sandbox is refused (exit 2)."""
    recipe = "recipes/tpu-v6e-4x4-multislice-autopilot.yaml"
    work = tmp_path / "stack"
    r = _cli("plan", recipe, "-o", str(work), "--sandbox", env=_user_env(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("the recipe's state bucket gs://my-ml-project-tfstate is created in the sandbox"
            in r.stderr), r.stderr
    assert _all_marked(r.stderr)
    assert (work / ".mldiag/sandbox/cloud/gcs-objects/my-ml-project-tfstate").is_dir()
    assert not list(work.glob("*.tfstate"))  # no local state
    elsewhere = tmp_path / "set-up-for-google"
    (elsewhere / ".terraform").mkdir(parents=True)
    (elsewhere / ".terraform/terraform.tfstate").write_text('{"backend": {"type": "gcs"}}')
    r = _cli("plan", recipe, "-o", str(elsewhere), "--sandbox", env=_user_env(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "holds a Terraform state or backend set up against Google Cloud" in r.stderr
    assert not (elsewhere / ".mldiag").exists()


def test_serve_and_kubeconfig_let_a_client_use_the_sandbox_cluster(tmp_path: Path) -> None:
    """``sandbox serve`` keeps the cluster's API server up (foreground) until SIGTERM;
    ``sandbox kubeconfig`` points a client at it; what the client created is kept (``sandbox
    ls`` lists it after the server stopped)."""
    import signal

    from kubernetes import client, config

    from mldiag_provision.sandbox.gke_cluster import seed_gke_cluster
    from mldiag_provision.sandbox.session import sandbox_dir

    env = _user_env(tmp_path)
    work = tmp_path / "stack"
    seed_gke_cluster(sandbox_dir(work) / "cloud", project="p", location="us-central2",
                     name="c")
    with started([sys.executable, "-m", "mldiag_provision", "sandbox", "serve",
                  "-o", str(work)], cwd=REPO_ROOT, env=env,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as serve:
        try:
            assert serve.stdout is not None
            first = serve.stdout.readline()
            assert first.startswith("SANDBOX cluster API server at https://127.0.0.1:"), first
            r = _cli("sandbox", "kubeconfig", "-o", str(work), env=env)
            assert r.returncode == 0, r.stderr
            api = client.CoreV1Api(config.new_client_from_config(
                config_file=r.stdout.strip()))
            assert "kube-system" in {n.metadata.name for n in api.list_namespace().items}
            api.create_namespace({"metadata": {"name": "mine"}})
            api.create_namespaced_config_map("mine", {"metadata": {"name": "hello"},
                                                      "data": {"a": "b"}})
        finally:
            serve.send_signal(signal.SIGTERM)
            out, err = serve.communicate(timeout=30)
    assert serve.returncode == 0, err
    assert "stopped; its objects are kept" in out
    held = {(o["kind"], o["name"]) for o in _ls(work, env)}
    assert {("Namespace", "mine"), ("ConfigMap", "mine/hello")} <= held, held


def test_a_sandbox_stack_and_a_google_cloud_stack_never_share_a_directory(
        tmp_path: Path) -> None:
    """Forgetting --sandbox on a sandbox stack would run Terraform against Google Cloud with
    the sandbox's state; --sandbox on a stack applied to Google Cloud would plan the sandbox
    against real objects. Both are refused before anything runs (exit 2), naming the fix."""
    env = _user_env(tmp_path)
    sandboxed = tmp_path / "sandboxed"
    (sandboxed / ".mldiag" / "sandbox").mkdir(parents=True)
    for command in ("plan", "output", "destroy"):
        r = _cli(command, RECIPE, "-o", str(sandboxed), env=env)
        assert r.returncode == 2, (command, r.stdout + r.stderr)
        assert "is a sandbox stack" in r.stderr and "add --sandbox" in r.stderr
    real = tmp_path / "real"
    real.mkdir()
    (real / "terraform.tfstate").write_text("{}", encoding="utf-8")
    r = _cli("apply", RECIPE, "-o", str(real), "--sandbox", "--auto-approve", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "holds a Terraform state or backend set up against Google Cloud" in r.stderr
    assert not (real / ".mldiag").exists()


def test_a_failed_sandbox_command_leaves_no_files_and_kubeconfig_needs_a_cluster(
        tmp_path: Path) -> None:
    """verify on a directory with no stack, and apply of an invalid recipe, fail (exit 2, 1)
    and leave no sandbox scaffolding behind; kubeconfig/serve refuse a directory whose
    sandbox holds no cluster instead of pointing a client at nothing."""
    env = _user_env(tmp_path)
    work = tmp_path / "never"
    r = _cli("verify", RECIPE, "-o", str(work), "--sandbox", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert not work.exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text((REPO_ROOT / RECIPE).read_text(encoding="utf-8").replace(
        "region: us-central2", "region: mars-north1"), encoding="utf-8")
    r = _cli("apply", str(bad), "-o", str(work), "--sandbox", "--auto-approve", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert not (work / ".mldiag" / "sandbox").exists()
    for action in ("kubeconfig", "serve"):
        r = _cli("sandbox", action, "-o", str(work), env=env)
        assert r.returncode == 2, (action, r.stdout + r.stderr)
        assert "has no sandbox cluster" in r.stderr


def test_hints_given_in_the_sandbox_name_the_sandbox_command(tmp_path: Path) -> None:
    """A refusal inside the sandbox suggests the command that works there: each
    plan/apply/verify/output/destroy it names carries --sandbox (without it, the suggested
    command would run against Google Cloud)."""
    from mldiag_provision.cli.sandboxed import sandbox_hint

    assert sandbox_hint("run `mldiag-provision apply RECIPE -o DIR` first") == (
        "run `mldiag-provision apply RECIPE -o DIR --sandbox` first")
    assert sandbox_hint("`mldiag-provision destroy R -o D --sandbox` then "
                        "`mldiag-provision plan R -o D`") == (
        "`mldiag-provision destroy R -o D --sandbox` then "
        "`mldiag-provision plan R -o D --sandbox`")
    # other verbs (validate, render) need no sandbox and stay as they are
    assert sandbox_hint("run `mldiag-provision validate R`") == "run `mldiag-provision validate R`"
    assert sandbox_hint(None) is None
    r = _cli("output", RECIPE, "-o", str(tmp_path / "none"), "--sandbox",
             env=_user_env(tmp_path))
    assert r.returncode != 0
    assert "hint: run `mldiag-provision apply" in r.stderr, r.stderr
    assert "--sandbox` first" in r.stderr, r.stderr


def test_a_no_op_sandbox_command_on_a_rendered_stack_leaves_no_sandbox(
        tmp_path: Path) -> None:
    """``output``/``destroy --sandbox`` on a directory that was only rendered have nothing
    to do in the sandbox: they leave no ``.mldiag/sandbox`` behind, so plain ``output``
    still runs there (no "is a sandbox stack" refusal). ``sandbox reset`` on a directory
    an older release marked that way removes the empty sandbox and says so."""
    env = _user_env(tmp_path)
    work = tmp_path / "rendered"
    r = _cli("render", RECIPE, "-o", str(work), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("output", RECIPE, "-o", str(work), "--sandbox", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (work / ".mldiag" / "sandbox").exists()
    r = _cli("destroy", RECIPE, "-o", str(work), "--sandbox", "--auto-approve", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing to destroy" in r.stdout + r.stderr
    assert not (work / ".mldiag" / "sandbox").exists()
    r = _cli("output", RECIPE, "-o", str(work), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "is a sandbox stack" not in r.stderr
    # a marker left by an earlier release: reset clears it, with an accurate message
    (work / ".mldiag" / "sandbox" / "providers").mkdir(parents=True)
    r = _cli("sandbox", "reset", "-o", str(work), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "plain work directory again" in r.stdout
    assert "still lists what it applied" not in r.stdout
    assert not (work / ".mldiag" / "sandbox").exists()
    r = _cli("output", RECIPE, "-o", str(work), env=env)
    assert r.returncode == 0, r.stdout + r.stderr


def test_reset_keeps_a_sandbox_whose_state_lists_what_it_applied(tmp_path: Path) -> None:
    """An empty sandbox cloud whose stack state still lists resources (objects removed
    behind Terraform's back) is emptied, not removed: the directory stays a sandbox stack
    and the message says the state still lists what it applied."""
    env = _user_env(tmp_path)
    work = tmp_path / "applied"
    (work / ".mldiag" / "sandbox").mkdir(parents=True)
    (work / "project").mkdir()
    (work / "project" / "terraform.tfstate").write_text(json.dumps(
        {"version": 4, "resources": [{"type": "google_project_service", "name": "x"}]}),
        encoding="utf-8")
    r = _cli("sandbox", "reset", "-o", str(work), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "still lists what it applied" in r.stdout
    assert (work / ".mldiag" / "sandbox").is_dir()
