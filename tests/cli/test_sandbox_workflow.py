"""``examples/github-actions/mldiag-sandbox.yml`` (issue 27): a pull-request workflow that
takes every recipe the pull request changes through preflight -> apply -> verify -> re-plan
-> destroy in the sandbox, with no credentials.

Checked: the file passes SchemaStore's published github-workflow schema (``check-jsonschema
--builtin-schema vendor.github-workflows``, as tests/fleet/test_fleet_engines.py checks the
other workflows); it asks for no credential (only ``contents: read``, no secret, no
Workload Identity); every ``mldiag-provision`` command it runs parses with the tool's own
argument parser, with the flags it gives, and each command that talks to Google Cloud
carries ``--sandbox``; the matrix keys it reads are in what ``fleet matrix --output json``
prints; and the sandbox job's shell steps, run here in order with bash against the
quick-start recipe, all exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_support import run_cli
from stack_support import REPO_ROOT, terraform_binary

WORKFLOW = REPO_ROOT / "examples" / "github-actions" / "mldiag-sandbox.yml"
FLEET_REPO = REPO_ROOT / "tests" / "fleet" / "data" / "repo"
QUICK_START = "recipes/tpu-v4-2x2x4-autopilot.yaml"
GOOGLE_FACING = {"plan", "apply", "verify", "output", "destroy", "preflight"}


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return doc


def _check_jsonschema() -> list[str] | None:
    exe = Path(sys.executable).parent / "check-jsonschema"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("check-jsonschema")
    return [found] if found else None


def _commands(script: str) -> list[str]:
    """The ``mldiag-provision ...`` command lines of a ``run:`` script (split at ``;``,
    ``&&``, ``|`` and braces; a redirection cut off)."""
    out = []
    for line in script.splitlines():
        for part in re.split(r";|&&|\|\||\||[{}]", line):
            part = re.split(r"\s>>?\s", part.strip())[0].strip()
            if part.startswith("mldiag-provision "):
                out.append(part)
    return out


def _argv(command: str, env: dict[str, str]) -> list[str]:
    words = shlex.split(command)
    assert words[0] == "mldiag-provision"
    return [re.sub(r"\$(\w+)", lambda m: env.get(m.group(1), m.group(0)), w)
            for w in words[1:]]


def _parse(argv: list[str]) -> argparse.Namespace:
    from mldiag_provision.cli._main import build_parser

    try:
        return build_parser(argv[0], full=True).parse_args(argv)
    except SystemExit:
        pytest.fail(f"mldiag-provision refuses: {' '.join(argv)}")


@pytest.mark.skipif(_check_jsonschema() is None, reason="check-jsonschema is not installed "
                                                        "(the test extra installs it)")
def test_the_workflow_passes_the_published_github_workflow_schema(tmp_path: Path) -> None:
    check = _check_jsonschema()
    assert check is not None
    res = subprocess.run([*check, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    # the same check refuses a misspelt key (so the pass above means something)
    doc = _doc()
    doc["jobs"]["sandbox"]["strategy"]["fail_fast"] = False  # the key is fail-fast
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(doc), encoding="utf-8")
    res = subprocess.run([*check, "--builtin-schema", "vendor.github-workflows", str(bad)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 1, res.stdout + res.stderr


def test_the_workflow_asks_for_no_credential() -> None:
    doc = _doc()
    text = json.dumps(doc)  # what GitHub reads (the comments say what is not there)
    assert doc["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in doc["jobs"].values())
    for needle in ("secrets.", "id-token", "google-github-actions/auth", "GOOGLE_",
                   "credentials_json", "workload_identity_provider"):
        assert needle not in text, needle
    on = doc.get("on", doc.get(True))
    assert list(on) == ["pull_request"]


def test_every_command_exists_with_those_flags_and_runs_in_the_sandbox() -> None:
    doc = _doc()
    sandbox = doc["jobs"]["sandbox"]
    env = {"RECIPE": QUICK_START, "WORK": "/tmp/w", "BASE": "origin/main"}
    seen: list[tuple[str, argparse.Namespace]] = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            for command in _commands(step.get("run", "")):
                argv = _argv(command, env)
                seen.append((job.get("name", ""), _parse(argv)))
    verbs = [a.command for _, a in seen]
    assert verbs.count("fleet") == 2
    sandbox_verbs = [a.command for name, a in seen if name == sandbox["name"]]
    # the order a user would run them in
    assert sandbox_verbs == ["preflight", "apply", "sandbox", "verify", "plan", "destroy"]
    for _, args in seen:
        if args.command in GOOGLE_FACING:
            assert args.sandbox, args
            assert args.recipe == QUICK_START
        if args.command in GOOGLE_FACING - {"preflight"}:
            assert args.out == "/tmp/w", args
    by_verb = {a.command: a for _, a in seen}
    assert by_verb["preflight"].live
    assert by_verb["apply"].auto_approve
    assert by_verb["plan"].detailed_exitcode
    assert by_verb["destroy"].auto_approve and by_verb["destroy"].disable_deletion_protection
    assert by_verb["sandbox"].action == "ls"
    fleet = [a for _, a in seen if a.command == "fleet"]
    assert all(a.changed_since == "origin/main" for a in fleet)
    # destroy runs whenever apply succeeded, even when verify or the re-plan failed
    destroy = next(s for s in sandbox["steps"] if "destroy" in s.get("run", ""))
    assert "steps.apply.outcome == 'success'" in destroy["if"] and "!cancelled()" in destroy["if"]
    # a fresh work directory per recipe, inside the checkout, never the committed stack
    assert sandbox["env"]["WORK"] == ".mldiag-sandbox/${{ matrix.id }}"


def test_the_matrix_keys_it_reads_are_what_fleet_matrix_prints(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FLEET_REPO)
    code, out, _ = run_cli(capsys, ["fleet", "matrix", ".", "--output", "json"])
    assert code == 0
    entries = json.loads(out)["include"]
    job = _doc()["jobs"]["sandbox"]
    assert job["strategy"]["matrix"] == "${{ fromJSON(needs.affected.outputs.matrix) }}"
    used = set(re.findall(r"matrix\.([a-z_]+)", json.dumps(job)))
    assert used == {"recipe", "id"}
    assert entries and all(used <= set(e) for e in entries)
    # the id names an artifact and a directory: no '/'
    assert all("/" not in e["id"] for e in entries)


@pytest.mark.terraform
def test_the_sandbox_job_runs_here(tmp_path: Path) -> None:
    """The sandbox job's ``run:`` steps, in order, in bash, as the runner would run them
    (``mldiag-provision`` on PATH, ``$GITHUB_STEP_SUMMARY`` a file), for the quick start."""
    if terraform_binary() is None:
        return
    job = _doc()["jobs"]["sandbox"]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "mldiag-provision"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m mldiag_provision "
                    '"$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    summary = tmp_path / "summary.md"
    env = dict(os.environ)
    env.update({
        "PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "provisioner"),
                                       *filter(None, [env.get("PYTHONPATH")])]),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RECIPE": QUICK_START,
        "WORK": str(tmp_path / "work"),
        "NO_COLOR": job["env"]["NO_COLOR"],
        # a runner with a credential lying around: the sandbox must not use it
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no-such-key.json"),
    })
    ran = []
    for step in job["steps"]:
        script = step.get("run")
        if script is None or script.startswith("pip install"):
            continue  # actions (checkout, setup-*) and the install: this checkout is it
        res = subprocess.run(["bash", "-e", "-c", script], cwd=REPO_ROOT, env=env,
                             capture_output=True, text=True, timeout=600, check=False)
        assert res.returncode == 0, (step.get("name"), res.stdout + res.stderr)
        ran.append(step.get("name", script))
    assert len(ran) == 6, ran
    text = summary.read_text(encoding="utf-8")
    assert f"### {QUICK_START} in the sandbox" in text
    assert "google_container_cluster" in text and "tpu-v4-multihost" in text
