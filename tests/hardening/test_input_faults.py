"""Regression cases of issue 15 (hardening) for inputs: each once made the tool exit 70
(internal error) or misread a value. They run the real CLI (a subprocess where the fault is
in how the process reads its streams)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mldiag_provision", *argv], input=stdin,
                          capture_output=True, cwd=REPO_ROOT, timeout=120, check=False)


def test_lint_non_utf8_stdin_is_a_clear_usage_error_not_exit_70() -> None:
    proc = _cli("--no-color", "lint", "-", stdin=b"a: \xff\n")
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "<stdin>: not UTF-8 text" in err and "byte 3" in err
    assert "internal error" not in err and "Traceback" not in err


def test_lint_utf8_stdin_still_reads() -> None:
    proc = _cli("--no-color", "lint", "-", stdin="a: é\n".encode())
    assert proc.returncode == 1  # a mapping without apiVersion/kind: a lint error, not a crash
    assert "not a Kubernetes object" in proc.stdout.decode()
