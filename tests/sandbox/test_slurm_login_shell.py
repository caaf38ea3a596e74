"""The login node double's shell (sandbox/slurm_login.py ``Shell``) against the real bash:
the constructs ``verify`` sends (``;``, ``&&``, ``||``, ``if/elif/else``, ``$(...)``, ``$?``,
quotes, ``>/dev/null``, ``2>&1``, ``[ ... ]``, ``command -v``, ``exit``) give the same exit
status, standard output and standard error; the names the scripts run are builtins or found
nowhere (neither on the double's host without programs nor on this machine's /usr/bin). What
the double does not read it says so, with a non-zero status."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mldiag_provision.sandbox.slurm_login import Host, Shell, SlurmCluster

SCRIPTS = [
    'echo host=$(echo x); false; echo "rc=$?"',
    "if command -v gcsfuse >/dev/null 2>&1; then echo yes; else echo no; fi",
    "command -v echo; command -v nosuch; echo $?",
    "nosuch 2>/dev/null || echo missing",
    "nosuch; echo after=$?",
    "nosuch",
    "echo a\nnosuch\necho b",
    "/opt/nowhere/tool; echo $?",
    "true && echo a || echo b",
    "false && echo a || echo b",
    '[ -x /nonexistent ] || [ -r /nonexistent ] && echo ok; echo "s=$?"',
    "[ -n '' ]; echo $?; [ -z '' ]; echo $?; [ a = a ] && [ 1 -lt 2 ] && echo both",
    "[ ! -e /nonexistent ] && echo absent",
    """echo "a  b" c'd'  "$(echo "in  ner")" """,
    "echo 'single $HOME $(x)'",
    "exit 3",
    "false; exit",
    "echo $(false); echo $?",
    "if false; then echo 1; elif true; then echo 2; else echo 3; fi",
    "if false; then echo 1; fi; echo $?",
    "echo to-err 1>&2; echo out",
    "nosuch >/dev/null 2>&1; echo rc=$?",
    "echo -n no-newline; echo",
    "echo a; # a comment\necho b",
    "x=1; echo $x",
    "x=1 env",
    "echo a | cat",
    "echo `echo a`",
    "for d in a b; do echo $d; done",
]


def _bash(script: str, tmp_path: Path) -> tuple[int, str, str]:
    bash = shutil.which("bash")
    assert bash is not None
    # argv[0] "bash", as sshd runs the command it is handed, its output captured (bash 5.2
    # then names the line in its messages: "bash: line 1: X: command not found")
    r = subprocess.run(["bash", "-c", script], executable=bash, stdin=subprocess.DEVNULL,
                       env={"PATH": f"{Path(bash).parent}", "HOME": "/home/sandbox"},
                       capture_output=True, text=True, timeout=30, check=False)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_double_s_shell_answers_as_bash(script: str, tmp_path: Path) -> None:
    host = Host("login")  # no programs: every name below is a builtin or not found
    shell = Shell(SlurmCluster("c", {}, None, {}, host), host)
    got = shell.run(script)
    want = _bash(script, tmp_path)
    if got[0] == 2 and "is not modelled" in got[2]:  # said so, never a pass
        assert got[1] == "" and "SANDBOX login node double" in got[2], got
        assert script in ("x=1 env", "echo a | cat", "echo `echo a`",
                          "for d in a b; do echo $d; done"), (script, got)
        return
    assert got == want, (script, got, want)
