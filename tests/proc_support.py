"""Child processes for the tests that signal them, independent of how the suite was launched.

A process inherits ignored signals across ``exec``: a suite started with SIGINT ignored
(``nohup``, a background job of a non-interactive shell, some CI runners) would start
children that never see a Ctrl-C, and a test of the Ctrl-C path would then fail, or skip
for the wrong reason. :func:`popen` starts the command with every signal reset to its
default action, in a new session (its own process group), so that :func:`kill_group` can
stop the command and whatever it started, at once.

How: GNU ``env --default-signal`` (coreutils 8.31 and later) resets the dispositions and
then ``exec``s the command (same PID, a millisecond, no Python start-up that would shift the
timing of the tests that signal at a given delay); where it is missing, a Python trampoline
does the same and also empties the signal mask. Not ``preexec_fn``: the suite runs threads
(stand-in API servers), and ``preexec_fn`` is documented as unsafe in a threaded parent
(https://docs.python.org/3/library/subprocess.html#popen-constructor); ``restore_signals``
covers SIGPIPE, SIGXFZ and SIGXFSZ only.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

# Where GNU env is missing: in the child before the command, default dispositions and an
# empty signal mask, then exec.
_RESET = """import os, signal, sys
for s in signal.valid_signals():
    try:
        if signal.getsignal(s) is signal.SIG_IGN:
            signal.signal(s, signal.SIG_DFL)
    except (OSError, ValueError, RuntimeError):
        pass
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execvp(sys.argv[1], sys.argv[1:])
"""


@functools.cache
def _reset_prefix() -> tuple[str, ...]:
    """The argv prefix that resets every signal to its default action, then execs the rest."""
    env = shutil.which("env")
    if env is not None and subprocess.run(
            [env, "--default-signal", "true"], capture_output=True, check=False,
    ).returncode == 0:
        return (env, "--default-signal")
    return (sys.executable, "-S", "-c", _RESET)


def popen(args: Sequence[str | Path], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **kwargs)`` with default signal dispositions in the child,
    in a new session (``start_new_session=True`` unless the caller says otherwise). Raises
    what ``Popen`` raises; a command that cannot be executed makes the child exit 126/127
    (``env``) or 1 (the trampoline), with the reason on its stderr."""
    kwargs.setdefault("start_new_session", True)
    return subprocess.Popen([*_reset_prefix(), *map(str, args)], **kwargs)


def kill_group(proc: subprocess.Popen[Any], timeout: float = 10) -> None:
    """SIGKILL the process group ``proc`` leads (the command and every descendant that
    stayed in it), then reap ``proc``. Safe to call when ``proc`` has exited already."""
    with suppress(ProcessLookupError, PermissionError):  # nothing left in the group
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, ValueError):
        proc.kill()
        proc.wait(timeout=timeout)


@contextmanager
def started(args: Sequence[str | Path], **kwargs: Any) -> Iterator[subprocess.Popen[Any]]:
    """``with started([...]) as proc:`` :func:`popen`, and :func:`kill_group` on the way out
    (the test's own ``communicate`` may have reaped it already)."""
    proc = popen(args, **kwargs)
    try:
        yield proc
    finally:
        kill_group(proc)


@contextmanager
def default_sigint() -> Iterator[None]:
    """In this process, SIGINT raises KeyboardInterrupt (Python's default handler) for the
    duration of the block, whatever the suite was launched with; restored afterwards."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
