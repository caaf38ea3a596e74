"""The command seam: argv lists, one log per run, streamed stdout, recording for dry runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mldiag_provision.runner import CommandRunner, RecordingRunner
from proc_support import started

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


# -- following the child's output without a busy poll (issue 16) --------------------------------


class _CountingReader:
    """A real text file reader that counts ``readline`` calls (each wake-up of the follower)."""

    def __init__(self, path: Path) -> None:
        self.inner = open(path, encoding="utf-8", newline="\n")  # noqa: SIM115
        self.readlines = 0

    def tell(self) -> int:
        return self.inner.tell()

    def seek(self, pos: int) -> int:
        return self.inner.seek(pos)

    def readline(self) -> str:
        self.readlines += 1
        return self.inner.readline()

    def read(self) -> str:
        return self.inner.read()


def test_follow_sleeps_between_lines_and_returns_at_exit(tmp_path: Path) -> None:
    """A writer that is silent for 1 s: the follower wakes at most ~1/interval times (the old
    loop re-read every few ms: ~100+ reads a second), takes each line whole, and returns as
    soon as the exit event is set, not one interval later."""
    import threading
    import time

    from mldiag_provision.runner import FOLLOW_INTERVAL_S, _follow

    out = tmp_path / "stdout"
    out.write_text("")
    exited = threading.Event()
    exit_at: list[float] = []

    def child() -> None:
        with open(out, "a", encoding="utf-8") as f:
            f.write('{"type": "a"}\n{"type": "pa')
            f.flush()
            time.sleep(1.0)
            f.write('rtial"}\nlast-without-newline')
            f.flush()
        exit_at.append(time.monotonic())
        exited.set()

    reader = _CountingReader(out)
    seen: list[str] = []
    writer = threading.Thread(target=child)
    writer.start()
    _follow(reader, exited, seen.append, interval_s=0.1)  # type: ignore[arg-type]
    returned = time.monotonic()
    writer.join()
    assert seen == ['{"type": "a"}', '{"type": "partial"}', "last-without-newline"]
    assert reader.readlines <= 1.0 / 0.1 + 6, reader.readlines  # ~10 wake-ups, not ~100
    assert returned - exit_at[0] < 0.05  # woken by the exit, not by the next interval
    assert FOLLOW_INTERVAL_S <= 0.1  # a progress line waits at most this long


def test_lines_arrive_while_the_child_runs_and_run_returns_at_exit(tmp_path: Path) -> None:
    """on_line sees a line while the child still runs (the child waits for a file the
    callback writes), and run() returns promptly once the child exits."""
    import time

    go = tmp_path / "go"
    script = ("import os, sys, time\nprint('ready', flush=True)\n"
              "t = time.monotonic()\n"
              "while not os.path.exists(sys.argv[1]) and time.monotonic() - t < 10:\n"
              "    time.sleep(0.01)\n"
              "print('done' if os.path.exists(sys.argv[1]) else 'timed out', flush=True)\n"
              "open(sys.argv[1] + '.exit', 'w').close()")

    def on_line(line: str) -> None:
        if line == "ready":
            go.write_text("x")

    seen: list[str] = []
    t = time.monotonic()
    result = CommandRunner(None).run([PY, "-c", script, str(go)], cwd=tmp_path, task="t",
                                     on_line=lambda s: (seen.append(s), on_line(s)))
    elapsed = time.monotonic() - t
    assert result.returncode == 0 and seen == ["ready", "done"]
    assert elapsed < 5, elapsed  # would be ~10 s if 'ready' were only seen at exit


def test_a_slowly_written_sensitive_document_stays_masked(tmp_path: Path) -> None:
    """`output -json`-shaped text written in pieces across the follower's sleeps: the data
    comes back whole, the log holds it masked, and a later line naming the value is masked."""
    import json
    import stat

    from mldiag_provision.secrets import MASK

    log = tmp_path / "logs" / "x.log"
    runner = CommandRunner(log)
    doc = json.dumps({"ep": {"sensitive": True, "value": "10.1.2.3-slow-secret"},
                      "name": {"sensitive": False, "value": "visible-name"}}, indent=1)
    (tmp_path / "doc.json").write_text(doc)
    code = ("import sys, time\ntext = open('doc.json').read()\n"
            "for i in range(0, len(text), 17):\n"
            "    sys.stdout.write(text[i:i + 17]); sys.stdout.flush(); time.sleep(0.01)\n")
    result = runner.run([PY, "-c", code], cwd=tmp_path, task="output", capture=True,
                        sensitive_json=True)
    runner.run([PY, "-c", "print('reaching 10.1.2.3-slow-secret')"], cwd=tmp_path,
               task="later")
    runner.close()
    assert json.loads(result.stdout or "")["ep"]["value"] == "10.1.2.3-slow-secret"
    text = log.read_text()
    assert "10.1.2.3-slow-secret" not in text and text.count(MASK) >= 2
    assert "visible-name" in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


_CHILD = """import signal, sys, time
count = 0
def on_int(*_):
    global count
    count += 1
    if count >= {stop_after}:
        sys.exit(3)
signal.signal(signal.SIGINT, on_int)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""
_DRIVER = """import pathlib, sys
from mldiag_provision.runner import CommandRunner
runner = CommandRunner(None)
child = [sys.executable, "-c", sys.argv[1]]
try:
    runner.run(child, cwd=pathlib.Path("."), task="t", on_line=lambda l: print(l, flush=True))
except KeyboardInterrupt as exc:
    print(type(exc).__name__, "stopped_at_once", runner.stopped_at_once, flush=True)
"""


@pytest.mark.parametrize("presses, expected", [(1, "False"), (2, "True")])
def test_a_second_ctrl_c_is_remembered(presses: int, expected: str) -> None:
    """Ctrl-C once: the child is asked to stop and finishes cleanly; twice: it is told to
    stop at once, and the runner says so (the CLI then does not claim a saved state)."""
    import signal
    import subprocess
    import time

    with started([PY, "-c", _DRIVER, _CHILD.format(stop_after=presses)],
                 stdout=subprocess.PIPE, text=True) as driver:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "ready"
        for _ in range(presses):
            driver.send_signal(signal.SIGINT)
            time.sleep(1.0)  # the runner is waiting for the child by now
        out = driver.communicate(timeout=30)[0]
    assert out.strip() == f"KeyboardInterrupt stopped_at_once {expected}"


def test_sigterm_stops_the_child_gracefully_and_is_reported_as_sigterm() -> None:
    """SIGTERM (a CI timeout, ``kill``) is handled as Ctrl-C (the child gets SIGINT and
    finishes), but raised as errors.Terminated, so the CLI says "terminated" and exits 143."""
    import signal
    import subprocess

    with started([PY, "-c", _DRIVER, _CHILD.format(stop_after=1)],
                 stdout=subprocess.PIPE, text=True) as driver:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "ready"
        driver.send_signal(signal.SIGTERM)
        out = driver.communicate(timeout=30)[0]
    assert out.strip() == "Terminated stopped_at_once False"


@pytest.mark.parametrize("exc, code, said", [("Terminated", 143, "terminated (SIGTERM)"),
                                             ("KeyboardInterrupt", 130, "interrupted")])
def test_the_cli_exit_code_says_which_signal(exc: str, code: int, said: str,
                                             monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from mldiag_provision import errors
    from mldiag_provision.cli import _main
    from mldiag_provision.cli.commands import validate

    raised = getattr(errors, exc, KeyboardInterrupt)

    def run(args: object, out: object) -> int:
        raise raised()

    monkeypatch.setattr(validate, "run", run)
    assert _main.main(["validate", "x.yaml"]) == code
    assert capsys.readouterr().err.strip() == said
    # -O json: the document too, as for any other failure (stdout had nothing before)
    assert _main.main(["validate", "x.yaml", "-O", "json"]) == code
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"ok": False, "error": {
        "message": said, "hint": None, "exitCode": code, "problems": []}}
    assert captured.err.strip() == said
