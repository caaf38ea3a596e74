"""The command seam: argv lists, one log per run, streamed stdout, recording for dry runs."""

from __future__ import annotations

import sys
from pathlib import Path

from mldiag_provision.runner import CommandRunner, RecordingRunner

PY = sys.executable


def test_run_streams_lines_logs_and_returns_exit_code(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "apply-x.log"
    runner = CommandRunner(log)
    seen: list[str] = []
    script = ("import sys\nprint('one', flush=True)\nprint('two')\n"
              "print('oops', file=sys.stderr)\nsys.exit(3)")
    result = runner.run([PY, "-c", script], cwd=tmp_path, task="demo", on_line=seen.append,
                        capture=True)
    runner.close()
    assert result.returncode == 3
    assert seen == ["one", "two"] and result.stdout == "one\ntwo"
    assert result.stderr_tail == ("oops",)
    text = log.read_text()
    assert "=== " in text and " demo\n$ " in text and "-c" in text
    assert "one\ntwo\n[stderr] oops\n=== exit 3 after" in text
    assert not list(log.parent.glob(".run-*")), "spool files are removed"


def test_partial_lines_are_joined(tmp_path: Path) -> None:
    script = ("import sys, time\nsys.stdout.write('par'); sys.stdout.flush(); time.sleep(0.2)\n"
              "sys.stdout.write('tial\\nlast-without-newline'); sys.stdout.flush()")
    seen: list[str] = []
    CommandRunner(None).run([PY, "-c", script], cwd=tmp_path, task="t", on_line=seen.append)
    assert seen == ["partial", "last-without-newline"]


def test_missing_program_raises_file_not_found(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(FileNotFoundError):
        CommandRunner(tmp_path / "l.log").run([str(tmp_path / "nope")], cwd=tmp_path, task="x")


def test_recording_runner_records_and_answers(tmp_path: Path) -> None:
    def responder(argv: tuple[str, ...], cwd: Path) -> tuple[int, str] | None:
        return (2, '{"a": 1}\nline2') if argv[1] == "plan" else None

    rec = RecordingRunner(responder=responder)
    seen: list[str] = []
    r1 = rec.run(["terraform", "plan", "-json"], cwd=tmp_path, task="plan", on_line=seen.append)
    r2 = rec.run(["terraform", "show", "-json", "x"], cwd=tmp_path, task="show", capture=True)
    assert (r1.returncode, r2.returncode, r2.stdout) == (2, 0, "")
    assert seen == ['{"a": 1}', "line2"]
    assert rec.transcript() == "$ terraform plan -json\n$ terraform show -json x\n"
