"""The one seam through which mldiag-provision runs external programs.

Design constraints:
  * argv lists only, never a shell string;
  * every run of a command of ours gets one log file (``<work dir>/.mldiag/logs/
    <command>-<UTC time>.log``) holding each program's argv, working directory, output and
    exit status, so that an error message can point at the whole story;
  * stdout is streamed line by line to a callback (Terraform's ``-json`` event stream);
  * :class:`RecordingRunner` records argv instead of running (dry runs, transcripts, tests),
    answering with canned results;
  * the child runs in its own session: a Ctrl-C (or SIGTERM) reaching us is forwarded to it
    as SIGINT, so Terraform stops gracefully (finishes the operations in flight and writes
    its state), and if we are killed outright the child is not: it finishes and leaves a
    consistent state. ``keep_fds`` lets a lock file descriptor travel with the child, so that
    a lock outlives us while the child runs.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from mldiag_provision.secrets import redact, sensitive_in_json_text

LineHandler = Callable[[str], None]


@dataclass(frozen=True)
class RunResult:
    """What one program run returned."""

    argv: tuple[str, ...]
    returncode: int
    duration_s: float
    stdout_tail: tuple[str, ...] = ()
    stderr_tail: tuple[str, ...] = ()
    interrupted: bool = False
    stdout: str | None = None  # the whole stdout, only when ``capture=True``


def utc_stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")


class CommandRunner:
    """Runs argv lists, logging everything to one log file.

    Args:
      log_path: the log file of this run of our command (created on first use); ``None``
        logs nowhere.
      env: extra environment for every program (on top of ``os.environ``).
      tail_lines: how many trailing stdout/stderr lines a :class:`RunResult` keeps.
    """

    executes = True
    """Whether :meth:`run` runs programs (False: a :class:`RecordingRunner`)."""

    def __init__(self, log_path: Path | None = None, *, env: Mapping[str, str] | None = None,
                 tail_lines: int = 40) -> None:
        self.log_path = log_path
        self.env = dict(env or {})
        self.tail_lines = tail_lines
        self._log: IO[str] | None = None
        self._log_lock = threading.Lock()
        self.secrets: set[str] = set()  # sensitive values seen so far: never logged
        self.stopped_at_once = False  # a second Ctrl-C stopped a child without its clean-up
        self._swept = False  # stale spools of killed runs removed (once per runner)

    # -- logging ------------------------------------------------------------------------------
    def log(self, text: str) -> None:
        """Append ``text`` (one or more lines) to the log."""
        if self.log_path is None:
            return
        if self.secrets:
            text = redact(text, self.secrets)
        if os.environ.get("MLDIAG_SANDBOX_ROOT"):  # a --sandbox run (sandbox/session.py)
            text = "".join("[SANDBOX] " + line for line in text.splitlines(keepends=True))
        with self._log_lock:
            if self._log is None:
                _private_dir(self.log_path.parent)
                fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                self._log = open(fd, "a", encoding="utf-8")  # noqa: SIM115
            self._log.write(text if text.endswith("\n") else text + "\n")
            self._log.flush()

    def add_secrets(self, values: Iterable[str]) -> None:
        """Never log these values (nor their JSON-escaped forms) from now on."""
        self.secrets.update(v for v in values if v)

    def close(self) -> None:
        with self._log_lock:
            if self._log is not None:
                self._log.close()
                self._log = None

    def _spool_dir(self) -> str | None:
        if self.log_path is None:
            return None
        _private_dir(self.log_path.parent)
        if not self._swept:
            self._swept = True
            sweep_spools(self.log_path.parent)
        return str(self.log_path.parent)

    # -- running ------------------------------------------------------------------------------
    def run(self, argv: Sequence[str], *, cwd: Path, task: str,
            on_line: LineHandler | None = None, env: Mapping[str, str] | None = None,
            capture: bool = False, keep_fds: Iterable[int] = (),
            sensitive_json: bool = False) -> RunResult:
        """Run ``argv`` in ``cwd``; never raises for a non-zero exit (the caller decides).

        The child runs with umask 077, so what it writes (Terraform's state, saved plans,
        backups) is readable by the owner only.

        Args:
          task: a few words for the log ("terraform plan").
          on_line: called with each stdout line (without the newline), as it arrives.
          capture: keep the whole stdout in :attr:`RunResult.stdout`.
          keep_fds: file descriptors the child inherits (e.g. a held lock).
          sensitive_json: stdout is one Terraform JSON document (``show -json``, ``output
            -json``): it is logged only once complete, after its sensitive values
            (:mod:`mldiag_provision.secrets`) were added to :attr:`secrets`.

        Raises:
          FileNotFoundError: the program does not exist.
          KeyboardInterrupt: we were interrupted; the child was told to stop (SIGINT) and
            has exited by the time this is raised.
        """
        argv = [str(a) for a in argv]
        full_env = {**os.environ, **self.env, **(env or {})}
        self.log(f"\n=== {utc_stamp()} {task}\n$ {_quote(argv)}\n  (in {cwd})")
        # The child writes to files, never to pipes: if we die, its writes cannot fail
        # (a Go program exits on SIGPIPE), so it finishes its work and its state stays whole.
        # named by our process id, and the child's id written in it once started: a spool
        # left by a run killed outright is removed by a later run once both have exited
        spool = Path(tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-",
                                      dir=self._spool_dir()))
        out_path, err_path = spool / "stdout", spool / "stderr"
        out_tail: deque[str] = deque(maxlen=self.tail_lines)
        err_tail: deque[str] = deque(maxlen=self.tail_lines)
        captured: list[str] = []

        held: list[str] = []

        def take(line: str) -> None:
            out_tail.append(line)
            if capture:
                captured.append(line)
            if sensitive_json:
                held.append(line)
            else:
                self.log(line)
            if on_line is not None:
                on_line(line)

        started = time.monotonic()
        interrupted = False
        reason: KeyboardInterrupt = KeyboardInterrupt()
        previous = _install_sigterm_as_interrupt()
        try:
            with open(out_path, "wb") as fout, open(err_path, "wb") as ferr:
                proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                                        stdout=fout, stderr=ferr, start_new_session=True,
                                        pass_fds=tuple(keep_fds), umask=0o077)
            with contextlib.suppress(OSError):
                (spool / SPOOL_CHILD).write_text(str(proc.pid), encoding="ascii")
            exited = _exit_event(proc)
            with open(out_path, encoding="utf-8", errors="replace", newline="\n") as reader:
                try:
                    _follow(reader, exited, take)
                except KeyboardInterrupt as exc:
                    interrupted = True
                    reason = exc
                    self.log("[mldiag] interrupted: sending SIGINT to the child and waiting "
                             "for it to stop gracefully")
                    if _wait_gracefully(proc):
                        self.stopped_at_once = True
                        self.log("[mldiag] interrupted again: terraform was told to stop at "
                                 "once (its state may lack what was in flight)")
                    _follow(reader, exited, take)
            if held:
                self.add_secrets(sensitive_in_json_text("\n".join(held)))
                self.log("\n".join(held))
            for line in err_path.read_text(encoding="utf-8", errors="replace").splitlines():
                err_tail.append(line)
                self.log(f"[stderr] {line}")
        finally:
            _restore_sigterm(previous)
            shutil.rmtree(spool, ignore_errors=True)
        result = RunResult(tuple(argv), proc.returncode, time.monotonic() - started,
                           tuple(out_tail), tuple(err_tail), interrupted,
                           "\n".join(captured) if capture else None)
        self.log(f"=== exit {proc.returncode} after {result.duration_s:.2f}s")
        if interrupted:
            raise type(reason)()  # Ctrl-C, or SIGTERM (errors.Terminated)
        return result


SPOOL_PREFIX = ".run-"
SPOOL_CHILD = "child"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (someone else's counts: it may not be ours to judge)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists
        return True
    return True


def sweep_spools(where: Path) -> list[Path]:
    """Remove the output spools (``.run-<pid>-XXXX``) that runs killed outright left in
    ``where`` (a log directory), and return them. A spool is removed only when it is a
    directory of this user's own that others may not write (the rule of
    :mod:`mldiag_provision.ondisk`), and when the run that made it (the pid in its name) and
    the program that run started (the pid in its ``child`` file) have both exited: a
    Terraform that outlived a killed run still writes to its spool. Spools of older versions
    (no pid in the name) are kept. Errors are ignored."""
    from mldiag_provision import ondisk

    removed: list[Path] = []
    try:
        entries = list(os.scandir(where))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(SPOOL_PREFIX):
            continue
        owner, sep, _ = entry.name[len(SPOOL_PREFIX):].partition("-")
        if not sep or not owner.isdigit() or int(owner) == os.getpid():
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not entry.is_dir(follow_symlinks=False) or not ondisk.trusted(st):
                continue
            child_file = os.path.join(entry.path, SPOOL_CHILD)
            child = 0
            if os.path.lexists(child_file):
                with ondisk.open_regular(child_file) as f:
                    text = f.read(32).decode("ascii", "replace").strip()
                if not text.isdigit():
                    continue  # not what we write: left alone
                child = int(text)
        except OSError:
            continue
        if _alive(int(owner)) or _alive(child):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _private_dir(path: Path) -> None:
    """Create ``path`` (and parents) owner-only; tighten it if it exists looser. Raises
    ConflictError / UsageError (exit 3 / 2) for a file or someone else's directory there, or
    a file system that refuses (:func:`mldiag_provision.ondisk.private_dir`)."""
    from mldiag_provision import ondisk

    ondisk.private_dir(path)


FOLLOW_INTERVAL_S = 0.05
"""How long the follower sleeps when the child has written no complete line: the most a
progress line waits to be shown. The child's exit wakes it at once (:func:`_exit_event`)."""


def _exit_event(proc: subprocess.Popen[bytes]) -> threading.Event:
    """An event set as soon as ``proc`` has exited: a daemon thread blocks in ``wait()``
    (``waitpid`` without a timeout), so nothing polls the child's status."""
    exited = threading.Event()

    def wait() -> None:
        try:
            proc.wait()
        finally:
            exited.set()

    threading.Thread(target=wait, name=f"wait-{proc.pid}", daemon=True).start()
    return exited


def _follow(reader: IO[str], exited: threading.Event, take: LineHandler, *,
            interval_s: float = FOLLOW_INTERVAL_S) -> None:
    """Feed each complete line the child writes to ``reader``'s file to ``take``, as it
    arrives, until the child has exited (``exited`` is set) and everything it wrote was read.

    Between bursts of output it sleeps on ``exited`` for up to ``interval_s`` (a wake-up
    costs a ``readline`` of nothing), never a busy loop: the child writes to a file, not a
    pipe (see :meth:`CommandRunner.run`), and a regular file has no portable "data ready"
    notification, so new lines are picked up within ``interval_s``, and the exit at once. A
    partial last line waits in the reader's position: ``readline`` returns it again once
    complete. ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM turned into it) interrupts the sleep.
    """
    while True:
        pos = reader.tell()
        chunk = reader.readline()
        if chunk.endswith("\n"):
            take(chunk[:-1])
            continue
        if exited.is_set():
            for line in (chunk + reader.read()).splitlines():
                take(line)
            return
        reader.seek(pos)  # incomplete line: read it again when the child has finished it
        exited.wait(interval_s)


def _wait_gracefully(proc: subprocess.Popen[bytes]) -> bool:
    """SIGINT the child; a second Ctrl-C sends another (Terraform then stops at once:
    "Two interrupts received. Exiting immediately. Note that data loss may have occurred.").
    Returns whether that second interrupt was sent."""
    forced = False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    while True:
        try:
            proc.wait()
            return forced
        except KeyboardInterrupt:
            forced = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)


def _install_sigterm_as_interrupt() -> object:
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: object) -> None:
        from mldiag_provision.errors import Terminated

        raise Terminated

    return signal.signal(signal.SIGTERM, handler)


def _restore_sigterm(previous: object) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)  # type: ignore[arg-type]


def _quote(argv: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


Responder = Callable[[tuple[str, ...], Path], "tuple[int, str] | None"]


@dataclass
class Recorded:
    task: str
    argv: tuple[str, ...]
    cwd: Path


@dataclass
class RecordingRunner(CommandRunner):
    """Records what would run instead of running it (dry runs, transcripts, tests).

    ``responder(argv, cwd)`` may return ``(exit code, stdout text)`` for a command; the
    default answer is ``(0, "")``. Each stdout line is fed to ``on_line`` as a real run would.
    """

    responder: Responder | None = None
    calls: list[Recorded] = field(default_factory=list)
    executes = False

    def __post_init__(self) -> None:
        CommandRunner.__init__(self, None)

    def run(self, argv: Sequence[str], *, cwd: Path, task: str,
            on_line: LineHandler | None = None, env: Mapping[str, str] | None = None,
            capture: bool = False, keep_fds: Iterable[int] = (),
            sensitive_json: bool = False) -> RunResult:
        args = tuple(str(a) for a in argv)
        self.calls.append(Recorded(task, args, cwd))
        answer = self.responder(args, cwd) if self.responder else None
        code, text = answer if answer is not None else (0, "")
        lines = text.splitlines()
        for line in lines:
            if on_line is not None:
                on_line(line)
        return RunResult(args, code, 0.0, tuple(lines[-self.tail_lines:]), (), False,
                         text if capture else None)

    def transcript(self) -> str:
        """One ``$ argv`` line per recorded call (paths relative to each call's cwd)."""
        return "".join(f"$ {_quote(c.argv)}\n" for c in self.calls)
