"""``mldiag-provision completion bash|zsh|fish`` (issue 31 item 2): the scripts list every
subcommand and the key flags and values; the bash script is run in a real bash, its completion
function called as bash would call it; ``validate`` never imports shtab."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mldiag_provision.cli import _main
from mldiag_provision.cli.app import main
from mldiag_provision.cli.commands import completion

ROOT = Path(__file__).resolve().parents[2]


def _subcommands() -> list[str]:
    parser = _main.build_parser(full=True)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


@pytest.fixture(scope="module")
def scripts() -> dict[str, str]:
    return {shell: completion.script(shell) for shell in completion.SHELLS}


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_script_lists_subcommands_flags_and_values(scripts: dict[str, str], shell: str) -> None:
    text = scripts[shell]
    for name in _subcommands():
        assert name in text, (shell, name)
    # key flags (fish writes long options without their dashes: -l output)
    for flag in ("output", "strict", "stage", "auto-approve", "sandbox", "topology",
                 "detailed-exitcode"):
        assert (f"--{flag}" in text) or (f"-l {flag}" in text), (shell, flag)
    # enum values: output formats, stages, TPU versions of the catalog
    for value in ("sarif", "markdown", "workloads", "v5e", "tpu7x", "2x2x4"):
        assert value in text, (shell, value)


def test_cli_prints_the_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "zsh"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#compdef mldiag-provision")
    assert "_files -g '*.(yaml|yml)'" in out  # recipe files


def test_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["completion", "tcshh"])
    assert exc.value.code == 2
    assert "invalid choice: 'tcshh'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no completion for shell 'powershell'"):
        completion.script("powershell")


BASH = shutil.which("bash")


def _complete(script: Path, cwd: Path, *words: str) -> list[str]:
    """COMPREPLY after bash completes the last of ``words`` (the command line typed so far)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = f"""
source {script}
COMP_WORDS=({quoted})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
COMPREPLY=()
cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
_shtab_mldiag_provision mldiag-provision "$cur" "$prev"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    run = subprocess.run([BASH, "--norc", "--noprofile", "-c", program], cwd=cwd,
                         capture_output=True, text=True, check=True, timeout=60)
    return sorted(line for line in run.stdout.splitlines() if line)


@pytest.mark.skipif(BASH is None, reason="needs bash")  # present on every Linux CI image
def test_bash_completion_function(scripts: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "mldiag-provision.bash"
    script.write_text(scripts["bash"])
    work = tmp_path / "work"
    (work / "stacks").mkdir(parents=True)
    for name in ("team.yaml", "other.yml", "notes.txt"):
        (work / name).write_text("")

    def c(*words: str) -> list[str]:
        return _complete(script, work, "mldiag-provision", *words)

    assert c("") == sorted(_subcommands())
    assert c("va") == ["validate"]
    assert c("validate", "--ou") == ["--output"]
    assert c("validate", "--output", "") == ["json", "text"]
    assert c("lint", "--output", "") == ["json", "sarif", "text"]
    assert c("plan", "team.yaml", "--stage", "") == ["cluster", "project", "workloads"]
    assert c("catalog", "tpu", "v5") == ["v5e", "v5p"]
    assert c("completion", "") == ["bash", "fish", "zsh"]
    # recipe files: YAML files and directories, not other files
    assert c("validate", "") == ["other.yml", "stacks", "team.yaml"]
    assert c("render", "te") == ["team.yaml"]
    # -o DIR: directories only
    assert c("render", "team.yaml", "-o", "") == ["stacks"]


def test_validate_does_not_import_shtab() -> None:
    code = ("import sys\nfrom mldiag_provision.cli.app import main\n"
            "main(['validate', 'recipes/tpu-v4-2x2x4-autopilot.yaml'])\n"
            "print('\\nSHTAB', 'shtab' in sys.modules, "
            "'mldiag_provision.cli.commands.completion' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=False).stdout
    assert out.rsplit("SHTAB", 1)[1].split() == ["False", "False"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse(scripts: dict[str, str], shell: str, tmp_path: Path) -> None:
    """``zsh -n`` / ``fish -n`` read the scripts without a syntax error (where installed)."""
    binary = shutil.which(shell)
    if binary is None:
        pytest.skip(f"{shell} is not installed")
    script = tmp_path / f"mldiag-provision.{shell}"
    script.write_text(scripts[shell])
    run = subprocess.run([binary, "-n", str(script)], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0, run.stderr


def test_fish_completes_commands_and_values(scripts: dict[str, str], tmp_path: Path) -> None:
    """fish's own ``complete -C`` over the sourced script (where fish is installed)."""
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    script = tmp_path / "mldiag-provision.fish"
    script.write_text(scripts["fish"])

    def c(line: str) -> list[str]:
        run = subprocess.run([fish, "--no-config", "-c", f"source {script}; complete -C '{line}'"],
                             capture_output=True, text=True, timeout=60, check=True,
                             cwd=tmp_path)
        return sorted(row.split("\t", 1)[0] for row in run.stdout.splitlines() if row)

    assert c("mldiag-provision ") == sorted(_subcommands())
    assert c("mldiag-provision lint --output ") == ["json", "sarif", "text"]
    assert c("mldiag-provision catalog tpu v5") == ["v5e", "v5p"]
    for name in ("team.yaml", "other.yml", "notes.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "stacks").mkdir()
    # recipe files: YAML files and directories only
    assert c("mldiag-provision validate ") == ["other.yml", "stacks/", "team.yaml"]
    assert c("mldiag-provision render team.yaml -o ") == ["stacks/"]
