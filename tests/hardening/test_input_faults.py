"""Regression cases of issue 15 (hardening) for inputs: each once made the tool exit 70
(internal error) or misread a value. They run the real CLI (a subprocess where the fault is
in how the process reads its streams)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mldiag_provision", *argv], input=stdin,
                          capture_output=True, cwd=REPO_ROOT, timeout=120, check=False)


def test_lint_non_utf8_stdin_is_a_clear_usage_error_not_exit_70() -> None:
    proc = _cli("--no-color", "lint", "-", stdin=b"a: \xff\n")
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "<stdin>: error[file-unreadable]: <stdin>:1:4: not UTF-8 text" in out, out
    assert "byte 3" in out and "before piping it in" in out, out
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


@pytest.mark.parametrize("command", ["lint", "validate"])
def test_closed_stdin_is_an_unreadable_input_not_an_internal_error(command: str) -> None:
    """``lint - <&-`` / ``validate - <&-`` (stdin closed) were internal errors (exit 70)."""
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "--no-color", command, "-"],
                          stdin=None, capture_output=True, cwd=REPO_ROOT, timeout=120,
                          check=False, preexec_fn=lambda: os.close(0))
    out = proc.stdout.decode()
    assert proc.returncode == 2, out + proc.stderr.decode()
    assert "<stdin>: error[file-unreadable]: <stdin>: standard input is closed" in out
    assert "internal error" not in out + proc.stderr.decode()


def test_validate_exits_2_for_every_unreadable_file_as_lint_does(tmp_path: Path) -> None:
    """A file validate cannot read is a usage error (2) whatever the reason; a not-UTF-8 one
    used to give 1 and a missing one 2."""
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"a: \xff\n")
    recipe = str(REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")
    for bad in (str(binary), str(tmp_path / "missing.yaml"), str(tmp_path)):
        proc = _cli("--no-color", "validate", recipe, bad)
        assert proc.returncode == 2, (bad, proc.stdout.decode())
        assert f"{bad}: error[file-unreadable]" in proc.stdout.decode()
    proc = _cli("--no-color", "validate", str(tmp_path))
    assert "hint: name a recipe file, e.g. DIR/NAME.yaml (validate and fleet also take " \
           "several: DIR/*.yaml)" in proc.stdout.decode()
    # render and cost take one recipe: the hint does not send them to a glob alone
    for cmd in (("render", str(tmp_path), "-o", str(tmp_path / "out")), ("cost", str(tmp_path))):
        proc = _cli("--no-color", *cmd)
        text = proc.stdout.decode() + proc.stderr.decode()
        assert proc.returncode == 2 and "name a recipe file, e.g. DIR/NAME.yaml" in text, text


def test_a_file_that_is_not_utf8_names_where_and_how_to_convert_it(tmp_path) -> None:
    """Fresh-user review: a Latin-1 recipe gave only a byte offset and "a recipe is a YAML
    text file"; a UTF-16 one "invalid start byte at byte 0". Now: line and column of the
    first bad byte and the conversion; a byte-order mark is named as UTF-16/32."""
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"apiVersion: mldiag.dev/v1\nkind: Recipe\nmetadata:\n  name: caf\xe9\n")
    utf16 = tmp_path / "utf16.yaml"
    utf16.write_bytes("kind: Recipe\n".encode("utf-16"))
    for cmd in ("validate", "lint"):
        proc = _cli("--no-color", cmd, str(latin1))
        out = proc.stdout.decode() + proc.stderr.decode()
        assert proc.returncode in (1, 2), out
        assert f"{latin1}:4:12: not UTF-8 text (invalid continuation byte at byte 60)" in out
        assert f"iconv -f ISO-8859-1 -t UTF-8 {latin1} > converted.yaml" in out, out
        proc = _cli("--no-color", cmd, str(utf16))
        out = proc.stdout.decode() + proc.stderr.decode()
        assert f"{utf16}: UTF-16 text (byte-order mark at the start), not UTF-8" in out, out
        assert f"iconv -f UTF-16 -t UTF-8 {utf16}" in out, out
        assert "Traceback" not in out and "internal error" not in out
