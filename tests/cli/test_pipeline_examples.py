"""The pipeline examples run: every ``mldiag-provision`` command line of the GitHub Actions
workflow, the Cloud Build config and the pre-commit hooks is executed here, with the same
arguments, against an example recipe and its rendered stack (the plan commands against the
offline stand-in providers, in the terraform lane), so that the examples cannot rot.

``pre-commit try-repo`` runs the hooks file itself when pre-commit is installed (it is not a
test dependency: it builds a virtual environment of this repository from PyPI).
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stack_support import REPO_ROOT

WORKFLOW = REPO_ROOT / "examples" / "github-actions" / "mldiag-provision.yml"
CLOUDBUILD = REPO_ROOT / "examples" / "cloud-build" / "cloudbuild.yaml"
HOOKS = REPO_ROOT / ".pre-commit-hooks.yaml"
RECIPE = REPO_ROOT / "recipes" / "tpu-v6e-4x4-multislice-standard-spot.yaml"


def _lines(script: str) -> list[str]:
    out = []
    for line in script.splitlines():
        line = line.strip()
        for part in line.split(";"):
            part = part.strip()
            for prefix in ("then ", "else "):
                part = part.removeprefix(prefix)
            if part.startswith("mldiag-provision "):
                out.append(part)
    return out


def workflow_commands() -> list[str]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    lines: list[str] = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            lines += _lines(step.get("run", ""))
    return lines


def cloudbuild_commands() -> list[str]:
    doc = yaml.safe_load(CLOUDBUILD.read_text())
    lines: list[str] = []
    for step in doc["steps"]:
        if step.get("entrypoint") == "bash":
            lines += _lines(step["args"][-1].replace("$$", "$"))
    return lines


def _argv(line: str, env: dict[str, str], cwd: Path) -> tuple[list[str], str | None]:
    """A command line -> (argv after `mldiag-provision`, file its stdout goes to)."""
    command, _, redirect = line.partition(" > ")
    words = []
    for w in shlex.split(command):
        for key, value in env.items():
            w = w.replace(f"${key}", value)
        if "*" in w:
            words += sorted(os.path.relpath(p, cwd) for p in glob.glob(str(cwd / w)))
        else:
            words.append(w)
    assert words[0] == "mldiag-provision", line
    return words[1:], (redirect.strip() or None)


def _needs_engine(argv: list[str]) -> bool:
    return argv[0] == "plan" or (argv[0] == "policy" and "--plan" in argv)


@pytest.fixture
def workspace(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A repository like the examples expect: recipes/, the committed stack, k8s/."""
    (tmp_path / "recipes").mkdir()
    for recipe in (REPO_ROOT / "recipes").glob("*.yaml"):  # validate recipes/*.yaml: all
        shutil.copy(recipe, tmp_path / "recipes" / recipe.name)
    stack = tmp_path / "stacks" / RECIPE.stem
    code, out, err = cli("render", str(tmp_path / "recipes" / RECIPE.name), "-o", str(stack))
    assert code == 0, out + err
    shutil.copytree(stack / "k8s" / "workloads", tmp_path / "k8s")
    monkeypatch.chdir(tmp_path)
    return {"RECIPE": f"recipes/{RECIPE.name}", "STACK": f"stacks/{RECIPE.stem}",
            "MANIFESTS": "k8s"}


def _run_all(cli, lines: list[str], env: dict[str, str], *, engine: bool) -> list[str]:
    ran = []
    for line in lines:
        argv, redirect = _argv(line, env, Path.cwd())
        if _needs_engine(argv) != engine:
            continue
        code, out, err = cli(*argv)
        allowed = {0, 2} if "--detailed-exitcode" in argv else {0}
        assert code in allowed, f"{line}\n-> exit {code}\n{out}\n{err}"
        if redirect:
            Path(redirect).write_text(out)
        ran.append(argv[0])
    return ran


def test_the_examples_name_every_step() -> None:
    for lines in (workflow_commands(), cloudbuild_commands()):
        verbs = [shlex.split(line)[1] for line in lines]
        assert {"validate", "lint", "render", "policy", "plan"} <= set(verbs), verbs
        assert any("--check" in line for line in lines)
        assert any("--output sarif" in line for line in lines)
        assert any("--output markdown" in line for line in lines)
        assert any("--detailed-exitcode" in line for line in lines)


@pytest.mark.parametrize("source", ["github-actions", "cloud-build"])
def test_example_check_commands_pass(source: str, workspace: dict[str, str], cli) -> None:
    lines = workflow_commands() if source == "github-actions" else cloudbuild_commands()
    ran = _run_all(cli, lines, workspace, engine=False)
    assert sorted(set(ran)) == ["lint", "policy", "render", "validate"]
    import json

    for sarif in ("lint.sarif", "policy.sarif"):
        assert json.loads(Path(sarif).read_text())["version"] == "2.1.0"


def test_example_render_check_fails_on_a_stale_stack(workspace: dict[str, str], cli) -> None:
    line = next(line for line in workflow_commands() if "--check" in line)
    recipe = Path(workspace["RECIPE"])
    recipe.write_text(recipe.read_text().replace("retentionDays: 30", "retentionDays: 31"))
    argv, _ = _argv(line, workspace, Path.cwd())
    code, out, _ = cli(*argv)
    assert code == 1 and "changed   main.tf" in out


def test_precommit_hooks_run_their_entries(workspace: dict[str, str], cli) -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text())}
    assert set(hooks) == {"mldiag-validate", "mldiag-lint", "mldiag-render-check",
                          "mldiag-policy"}
    files = {"mldiag-validate": [workspace["RECIPE"]],
             "mldiag-lint": sorted(str(p) for p in Path("k8s").glob("*.yaml")),
             "mldiag-render-check": [workspace["RECIPE"], "-o", workspace["STACK"]],
             "mldiag-policy": [workspace["RECIPE"]]}
    for hid, hook in hooks.items():
        argv = shlex.split(hook["entry"])[1:] + files[hid]
        code, out, err = cli(*argv)
        assert code == 0, f"{hid}: {argv} -> {code}\n{out}\n{err}"


@pytest.mark.skipif(shutil.which("pre-commit") is None and not (
    Path(sys.executable).parent / "pre-commit").exists(),
    reason="pre-commit is not installed (not a test dependency: `pip install pre-commit` "
           "to run the hooks file through `pre-commit try-repo`)")
def test_precommit_try_repo(tmp_path: Path) -> None:
    """``pre-commit try-repo`` installs this repository as pre-commit would (its own virtual
    environment, from PyPI) and runs the validate hook on an example recipe."""
    exe = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    work = tmp_path / "user-repo"
    (work / "recipes").mkdir(parents=True)
    shutil.copy(RECIPE, work / "recipes" / RECIPE.name)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "."], check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([exe, "try-repo", str(REPO_ROOT), "mldiag-validate",
                           "--all-files"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mldiag-provision validate (recipes)" in proc.stdout
    assert "Passed" in proc.stdout
