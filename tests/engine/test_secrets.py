"""Sensitive values (issue 15): never in a log or on the terminal; what must hold them
(Terraform's state and saved plans) and every log is owner-only.

The end-to-end test plants two values that Terraform marks sensitive (the cluster endpoint
and CA certificate outputs, served by the stand-in provider), runs apply / output / plan /
destroy through our commands, and greps every file the tool wrote and everything it printed.
"""

from __future__ import annotations

import base64
import json
import stat
import sys
import uuid
from pathlib import Path

import pytest

from engine.conftest import offline_recipe
from mldiag_provision.runner import CommandRunner
from mldiag_provision.secrets import MASK, redact, sensitive_values
from stack_support import RECIPES

# -- the rules on Terraform's JSON (documents shaped as terraform 1.11 writes them) ------------


def test_output_json_sensitive_values() -> None:
    doc = {"a": {"sensitive": True, "type": "string", "value": "s3cret-endpoint"},
           "b": {"sensitive": False, "type": "string", "value": "public-name"},
           "c": {"sensitive": True, "value": {"k": ["nested-secret", 1]}}}
    assert sensitive_values(doc) == {"s3cret-endpoint", "nested-secret"}


def test_show_json_state_and_plan_mirrors() -> None:
    state = {"values": {"outputs": {"ca": {"sensitive": True, "value": "Q0EtUEVN"}},
                        "root_module": {"resources": [{
                            "address": "x.y", "values": {"key": "private-key", "name": "n1",
                                                         "list": ["a-secret", "visible"]},
                            "sensitive_values": {"key": True, "list": [True, False]}}]}}}
    assert sensitive_values(state) == {"Q0EtUEVN", "private-key", "a-secret"}
    plan = {"resource_changes": [{"change": {
        "before": {"pw": "old-password"}, "after": {"pw": "new-password", "x": "shown"},
        "before_sensitive": {"pw": True}, "after_sensitive": {"pw": True}}}],
        "variables": {"token": {"value": "var-token"}, "region": {"value": "us-east5"}},
        "configuration": {"root_module": {"variables": {"token": {"sensitive": True},
                                                        "region": {}}}}}
    assert sensitive_values(plan) == {"old-password", "new-password", "var-token"}


def test_redact_covers_the_json_escaped_form() -> None:
    secret = 'line1\nline"2'
    text = "raw " + secret + " json " + json.dumps({"v": secret})
    out = redact(text, {secret})
    assert secret not in out and json.dumps(secret)[1:-1] not in out and out.count(MASK) == 2


def test_runner_logs_a_sensitive_json_document_masked_and_owner_only(tmp_path: Path) -> None:
    """A real child process prints `terraform output -json`-shaped text; the log gets it with
    the sensitive value masked, later lines mentioning it are masked too, and the log file and
    its folder are owner-only whatever the umask."""
    log = tmp_path / "work" / ".mldiag" / "logs" / "x.log"
    runner = CommandRunner(log)
    doc = {"ep": {"sensitive": True, "value": "10.9.8.7-planted"},
           "name": {"sensitive": False, "value": "visible-name"}}
    (tmp_path / "doc.json").write_text(json.dumps(doc, indent=1))
    code = "print(open('doc.json').read())"
    result = runner.run([sys.executable, "-c", code], cwd=tmp_path, task="output",
                        capture=True, sensitive_json=True)
    assert json.loads(result.stdout or "")["ep"]["value"] == "10.9.8.7-planted"  # data intact
    runner.run([sys.executable, "-c", "print('connecting to 10.9.8.7-planted')"],
               cwd=tmp_path, task="later")
    runner.run([sys.executable, "-c", "open('child-file', 'w').write('x')"], cwd=tmp_path,
               task="umask")
    runner.close()
    text = log.read_text()
    assert "10.9.8.7-planted" not in text and MASK in text and "visible-name" in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "child-file").stat().st_mode) == 0o600  # umask 077


# -- end to end through the stand-in provider ----------------------------------------------------

AUTOPILOT = next(r for r in RECIPES if r.stem == "tpu-v4-2x2x4-autopilot")


def _must_hold(name: str) -> bool:
    """Terraform's state and its backups (``terraform state rm`` leaves
    ``terraform.tfstate.<n>.backup``) hold the values by design."""
    return name.startswith("terraform.tfstate") or name == "errored.tfstate"



@pytest.mark.terraform
def test_planted_sensitive_values_reach_no_log_and_no_terminal(
        tmp_path: Path, offline, gcs, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    if offline is None:
        return
    marker = f"PLANTED-CA-{uuid.uuid4().hex}"
    ca_file = tmp_path / "planted-ca.pem"
    ca_file.write_text(marker)
    endpoint = "203.0.113.157"  # TEST-NET-3, planted as the cluster endpoint
    monkeypatch.setenv("MLDIAG_STANDIN_APISERVER_CA", str(ca_file))
    monkeypatch.setenv("MLDIAG_STANDIN_APISERVER", endpoint)
    ca_b64 = base64.b64encode(marker.encode()).decode()
    planted = [ca_b64, endpoint, marker]

    r = str(offline_recipe(AUTOPILOT, tmp_path / "recipe.yaml"))
    work = tmp_path / "work"
    printed = []
    for argv in (["apply", r, "-o", str(work), "--auto-approve", "--stage", "project"],
                 ["output", r, "-o", str(work)],
                 ["output", r, "-o", str(work), "--output", "json"],
                 ["plan", r, "-o", str(work), "--stage", "project"],
                 ["destroy", r, "-o", str(work), "--auto-approve", "--stage", "project"]):
        code, out, err = cli(*argv)
        assert code == 0, (argv, out + err)
        printed.append(out + err)
    terminal = "\n".join(printed)
    assert "cluster_endpoint = (sensitive)" in terminal
    for value in planted:
        assert value not in terminal, value

    files = [p for p in work.rglob("*") if p.is_file() and ".terraform" not in p.parts[
        len(work.parts):] and "modules" not in p.parts[len(work.parts):]]
    logs = [p for p in files if ".mldiag" in p.parts and "logs" in p.parts]
    assert logs, "every command writes a log"
    holders = []
    for path in files:
        data = path.read_bytes()
        found = [v for v in planted if v.encode() in data]
        if found:
            holders.append(path.name)
            assert _must_hold(path.name), (path, found)
        if _must_hold(path.name) or path.name == "tfplan" or path in logs:
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, (path, oct(
                path.stat().st_mode))
    assert any(_must_hold(h) for h in holders), \
        "the planted value reached the state (else the test planted nothing)"
    log_text = "".join(p.read_text(errors="replace") for p in logs)
    assert MASK in log_text and '"cluster_endpoint"' in log_text
