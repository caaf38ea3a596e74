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
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "<stdin>: error[file-unreadable]: <stdin>: not UTF-8 text" in out and "byte 3" in out
    assert "internal error" not in out + err and "Traceback" not in out + err


def test_lint_utf8_stdin_still_reads() -> None:
    proc = _cli("--no-color", "lint", "-", stdin="a: é\n".encode())
    assert proc.returncode == 1  # a mapping without apiVersion/kind: a lint error, not a crash
    assert "not a Kubernetes object" in proc.stdout.decode()


def test_render_is_refused_while_another_run_holds_the_work_directory(tmp_path: Path) -> None:
    """render used to rewrite main.tf while an apply ran on the same directory."""
    from mldiag_provision.stack.lock import locked

    recipe = str(REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")
    out = tmp_path / "stack"
    assert _cli("render", recipe, "-o", str(out)).returncode == 0
    main_tf = out / "main.tf"
    main_tf.write_text(main_tf.read_text() + "\n# edited while a run holds the lock\n")
    before = main_tf.read_bytes()
    with locked(out, "apply"):  # what a running plan/apply/destroy holds
        proc = _cli("--no-color", "render", recipe, "-o", str(out), "--force")
    err = proc.stderr.decode()
    assert proc.returncode == 3, err
    assert "in use by another run" in err and '"command": "apply"' in err
    assert main_tf.read_bytes() == before
    # once the run is over, render works again (and the lock does not linger)
    assert _cli("render", recipe, "-o", str(out), "--force").returncode == 0
    assert main_tf.read_bytes() != before
