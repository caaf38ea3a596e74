"""The work-directory lock: one run at a time changes a stack (``DIR/.mldiag/lock``)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mldiag_provision.errors import ConflictError

LOCK_FILE = ".mldiag/lock"


@dataclass
class WorkdirLock:
    """An exclusive ``flock`` on ``DIR/.mldiag/lock`` while a command changes the stack.

    The lock belongs to the open file, which each terraform child inherits: if we die, the
    lock stays held until the terraform we started has exited too. The kernel drops it with
    the last holder, so a crash never leaves a stale lock behind.
    """

    path: Path
    fd: int = -1

    def acquire(self, command: str) -> None:
        """Take the lock or raise :class:`ConflictError` naming the holder.

        Raises:
          ConflictError (exit 3): another run holds it; or ``.mldiag`` or the lock is not
            what the tool keeps there (a file where its directory belongs, a directory
            where the lock file belongs, a link, someone else's: :mod:`mldiag_provision.ondisk`).
          UsageError (exit 2): the lock cannot be made: a read-only or full file system, no
            permission, a file system without ``flock``; the message names the path and the
            system's reason.
        """
        import fcntl

        from mldiag_provision import ondisk

        workdir = self.path.parent.parent
        ondisk.state_dir(workdir)
        ondisk.state_entry(self.path, want_dir=False)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise ondisk.write_error(exc, self.path, workdir) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            hint = ("wait for it to finish; a second plan/apply/destroy on the same work "
                    "directory is refused while one runs")
            try:
                pid = int(json.loads(holder)["pid"])
                os.kill(pid, 0)
            except (ValueError, KeyError, TypeError, ProcessLookupError):
                hint = ("the run named in the lock file has ended, but a process still holds "
                        "the lock: usually the terraform it started, finishing so that its state "
                        f"is saved; `fuser -v {self.path}` lists the holder: wait for it, or "
                        "stop it if it is not a terraform of this stack")
            except PermissionError:
                pass
            raise ConflictError(f"{self.path.parent.parent} is in use by another run "
                                f"({holder})", hint=hint) from None
        except OSError as exc:  # e.g. ENOLCK: a network file system without locks
            os.close(fd)
            raise ondisk.write_error(exc, self.path, workdir) from None
        info = json.dumps({"pid": os.getpid(), "command": command,
                           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode() + b"\n", 0)
        except OSError as exc:  # a full file system
            os.close(fd)
            raise ondisk.write_error(exc, self.path, workdir) from None
        self.fd = fd

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the flock goes with the last open copy (children too)
            self.fd = -1


@contextlib.contextmanager
def locked(workdir: Path, command: str) -> Iterator[WorkdirLock]:
    """Hold the lock of ``workdir`` for the ``with`` body."""
    lock = WorkdirLock(workdir / LOCK_FILE)
    lock.acquire(command)
    try:
        yield lock
    finally:
        lock.release()
