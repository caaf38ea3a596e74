"""One rule for what the tool reads back from disk, and for the shape of what it reads at all
(issue 28).

**What the tool wrote earlier** (the start-up cache, :mod:`mldiag_provision.startcache`; the
compiled-template cache, :mod:`mldiag_provision.render.template_cache`; the work directory's
``.mldiag/`` state and its spools) is used only when:

- it belongs to the current user (``st_uid == os.getuid()``);
- neither it nor its directory may be written by group or others (mode ``& 0o022 == 0``);
- for a cache file, its first 16 bytes, a BLAKE2b digest of the rest, match the rest.

A cache entry that fails any of these is ignored (the work is done again and the entry
rewritten): :func:`read_sealed` / :func:`write_sealed`. Nothing in a cache is ever read with
:mod:`pickle`; the caches hold :mod:`marshal` data (Python's own format for bytecode, which
builds data and code objects but runs nothing while loading). The state directory is refused
with a precise message instead (:func:`state_dir`): it holds what a person would lose.

This is the rule Python itself applies to ``__pycache__`` in spirit (a file others may write
is someone else's code); the digest adds what Python's timestamp check does not: a damaged
file (one flipped bit made ``marshal`` raise ``SystemError``, or load other code) is never
used.

**Inputs named by the user** are opened with :func:`open_regular`: never blocking (a FIFO
with no writer blocked ``validate``/``render``/``lint`` forever) and refused up front unless
they are regular files.

Only :mod:`os` and :mod:`sys` are imported at module level: the start-up cache imports this
module before anything else runs (``validate``'s start-up time).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from pathlib import Path

CHECK = 16
"""Bytes of BLAKE2b digest in front of every cache file."""


def trusted(st: os.stat_result) -> bool:
    """Owned by this user and not writable by group or others."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def digest(data: bytes, size: int = 20) -> bytes:
    """BLAKE2b of ``data`` (``size`` bytes; ``_blake2`` is CPython's C module behind
    ``hashlib.blake2b``: importing ``hashlib`` itself loads OpenSSL, ~3 ms)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - another Python
        from hashlib import blake2b
    return blake2b(data, digest_size=size).digest()


def seal(data: bytes) -> bytes:
    """``data`` with its digest in front, as :func:`write_sealed` stores it."""
    return digest(data, CHECK) + data


def unseal(stored: bytes) -> bytes | None:
    """The payload of sealed bytes, or None when the digest does not match (damaged,
    truncated, or not written by :func:`seal`)."""
    check, payload = stored[:CHECK], stored[CHECK:]
    if len(check) != CHECK or digest(payload, CHECK) != check:
        return None
    return payload


def read_sealed(where: str, name: str) -> bytes | None:
    """The payload of cache file ``where/name``, or None: missing, unreadable, not a
    regular file, not trusted (it or ``where``, see the module), or damaged. Never raises."""
    try:
        if not trusted(os.stat(where)):
            return None
        fd = os.open(os.path.join(where, name),
                     os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not trusted(st):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            stored = f.read(st.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return unseal(stored)


def write_sealed(where: str, name: str, data: bytes, *, always: bool = False) -> None:
    """Store ``data`` as cache file ``where/name``, sealed, whole or not at all (written under
    a temporary name, then renamed; the directory made 0700, the file 0600). Not while
    ``sys.dont_write_bytecode`` holds, unless ``always`` (a cache of a work directory, not
    of compiled code); nothing is written into a directory :func:`read_sealed` would not
    trust. Errors are ignored: a cache never fails a run."""
    if sys.dont_write_bytecode and not always:
        return
    tmp = os.path.join(where, f".{name}.{os.getpid()}.tmp")
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        if not trusted(os.stat(where)):
            return  # read_sealed would not trust it: writing there is wasted
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(seal(data))
        os.replace(tmp, os.path.join(where, name))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# --- inputs named by the user --------------------------------------------------------------

_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class NotRegularFile(OSError):
    """A path names a FIFO, a device or a socket where a file's contents are wanted.
    ``strerror`` says which, so callers that report ``OSError.strerror`` say it too."""


def kind_of(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words (``"a named pipe (FIFO)"``)."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def open_regular(path: str | Path) -> BinaryIO:
    """Open ``path`` for reading in binary, without ever blocking.

    The open is non-blocking (a FIFO with no writer would otherwise block in ``open``
    itself), and what was opened is checked before a byte is read.

    Raises:
      FileNotFoundError: no such file, or a dangling symbolic link.
      IsADirectoryError: a directory.
      NotRegularFile: a FIFO, a device (``/dev/zero``) or a socket: its ``strerror`` names
        the kind and says that a regular file is wanted.
      OSError: anything else ``open`` raises (permission denied ...).
    """
    fd, _size = _open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, cap: int) -> bytes:
    """The first ``cap + 1`` bytes of the regular file ``path`` (or all of it, when shorter:
    one byte more than the cap shows that the file is over it), opened as
    :func:`open_regular` opens it, raising what it raises, and read straight from the file
    descriptor: the file's size plus one byte, then the rest only if it had more than its
    size said (it grew). What :func:`open_regular` and
    :func:`mldiag_provision.lint.loading.read_capped` give together, without a file object
    and its two more ``fstat`` calls (issue 32: ``validate`` reads 1,000 recipes)."""
    fd, size = _open_regular_fd(path)
    try:
        want = min(size, cap) + 1
        raw = _read_fd(fd, want)
        if len(raw) == want <= cap:
            raw += _read_fd(fd, cap + 1 - want)
        return raw
    finally:
        os.close(fd)


def _read_fd(fd: int, count: int) -> bytes:
    """Up to ``count`` bytes of ``fd``: fewer only at the end of the file."""
    parts = []
    while count > 0:
        chunk = os.read(fd, count)
        if not chunk:
            break
        parts.append(chunk)
        count -= len(chunk)
    return b"".join(parts)


def _open_regular_fd(path: str | Path) -> tuple[int, int]:
    """``path`` opened read-only without blocking, checked to be a regular file and switched
    back to blocking reads: (its file descriptor, its size in bytes). Raises as
    :func:`open_regular`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, f"{kind_of(mode)}, not a regular file", str(path))
        os.set_blocking(fd, True)
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


# --- the work directory's state ------------------------------------------------------------

def state_dir(workdir: str | Path, *, create: bool = True) -> str:
    """``workdir/.mldiag``, checked (and made, when ``create`` and absent): the directory
    where the tool keeps a stack's state, locks, logs and spools.

    Raises:
      ConflictError (exit 3): ``.mldiag`` is a file (or anything but a directory), a
        symbolic link, owned by another user, or writable by group or others; the message
        names the path, what it is and what to do.
      UsageError (exit 2): it cannot be made or read: a read-only file system, a work
        directory that is a file, permission denied (``strerror`` named).
    """
    from mldiag_provision.errors import ConflictError, UsageError

    where = os.path.join(os.fspath(workdir), ".mldiag")
    try:
        st = os.lstat(where)
    except FileNotFoundError:
        if not create:
            return where
        try:
            os.makedirs(where, mode=0o755, exist_ok=True)  # never group/other-writable
            st = os.lstat(where)
        except OSError as exc:
            raise UsageError(f"cannot create {where}: {exc.strerror}",
                             hint=unwritable_hint(exc, workdir)) from None
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror}",
                         hint="check the work directory (-o DIR)") from None
    check_state_entry(where, st, want_dir=True)
    if st.st_uid == os.getuid() and not st.st_mode & 0o022:
        _check_state_files(where)
    if st.st_uid != os.getuid():
        raise ConflictError(
            f"{where} belongs to user id {st.st_uid}, not to you (user id {os.getuid()}): "
            "its state, logs and saved plans are someone else's",
            hint="run as the owner of the work directory, or render into a directory of "
                 "your own (-o DIR)")
    if st.st_mode & 0o022:
        raise ConflictError(
            f"{where} may be written by {'group and others' if st.st_mode & 0o002 else 'its group'}"
            f" (mode {stat.S_IMODE(st.st_mode):04o}): anything read from it could have been "
            "put there by someone else",
            hint=f"chmod go-w {where} if its contents are yours, then re-run")
    return where


def _check_state_files(where: str) -> None:
    """Each entry of the state directory ``where`` belongs to the user, and (unless a link)
    may not be written by group or others: the tool writes them so (:func:`write_state`).

    Raises:
      ConflictError (exit 3): naming the first entry that is not, and how to fix it.
    """
    from mldiag_provision.errors import ConflictError

    try:
        entries = list(os.scandir(where))
    except OSError:
        return  # unreadable: what reads it says so
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_uid != os.getuid():
            raise ConflictError(
                f"{entry.path} belongs to user id {st.st_uid}, not to you (user id "
                f"{os.getuid()}): the tool's state holds only files of its user",
                hint=f"move {entry.path} aside if you do not know where it came from, then "
                     "re-run")
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
            raise ConflictError(
                f"{entry.path} may be written by group or others (mode "
                f"{stat.S_IMODE(st.st_mode):04o}): anything read from it could have been put "
                "there by someone else",
                hint=f"chmod go-w {entry.path} if its contents are yours (files written by "
                     "an older version follow the umask), then re-run")


def write_state(path: str | Path, data: bytes) -> None:
    """Write a state file of the work directory (``.mldiag/*``) whole: under a temporary
    name, then renamed; mode 0644 less the umask, so never writable by group or others
    whatever the umask (:func:`state_dir` refuses such a file); its directory made 0755
    (less the umask) when missing.

    Raises:
      OSError: it cannot be written.
    """
    target = os.fspath(path)
    os.makedirs(os.path.dirname(target) or ".", mode=0o755, exist_ok=True)
    tmp = f"{target}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_state_entry(path: str, st: os.stat_result, *, want_dir: bool) -> None:
    """Raise :class:`~mldiag_provision.errors.ConflictError` (exit 3) unless ``st`` (an
    ``lstat`` of ``path``) is what the tool keeps there: a directory (``want_dir``) or a
    regular file, not a symbolic link."""
    from mldiag_provision.errors import ConflictError

    mode = st.st_mode
    want = "a directory" if want_dir else "a regular file"
    if stat.S_ISLNK(mode):
        found = "a symbolic link"
    elif stat.S_ISDIR(mode):
        found = "" if want_dir else "a directory"
    elif stat.S_ISREG(mode):
        found = "" if not want_dir else "a file"
    else:
        found = kind_of(mode).removesuffix(", not a regular file")
    if found:
        raise ConflictError(
            f"{path} is {found}, where mldiag-provision keeps {want} of its own",
            hint=f"move {path} aside (mv {path} {path}.aside), then re-run")


def state_entry(path: str | Path, *, want_dir: bool) -> bool:
    """Whether ``path`` (inside a checked :func:`state_dir`) exists; raises as
    :func:`check_state_entry` when it is not the wanted kind or is not the user's own."""
    from mldiag_provision.errors import ConflictError

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    check_state_entry(os.fspath(path), st, want_dir=want_dir)
    if not trusted(st):
        raise ConflictError(
            f"{os.fspath(path)} belongs to user id {st.st_uid} or may be written by others "
            f"(mode {stat.S_IMODE(st.st_mode):04o}): it is not the tool's own",
            hint=f"move {os.fspath(path)} out of the way, then re-run")
    return True


def unwritable_hint(exc: OSError, workdir: str | Path) -> str:
    import errno

    if exc.errno == errno.EROFS:
        return (f"{os.fspath(workdir)} is on a read-only file system: render into a "
                "directory on a writable one (-o DIR)")
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return "the file system is full (or your quota is): free some space, then re-run"
    return "choose a directory you can write to (-o DIR)"


def write_error(exc: OSError, path: str | Path, workdir: str | Path) -> Exception:
    """A :class:`~mldiag_provision.errors.UsageError` (exit 2) for a failure to write the
    tool's state: the path, the system's reason and what to do (read-only, full, ...)."""
    from mldiag_provision.errors import UsageError

    return UsageError(f"cannot write {os.fspath(path)}: {exc.strerror}",
                      hint=unwritable_hint(exc, workdir))


def private_dir(path: str | Path, *, workdir: str | Path | None = None) -> None:
    """Make ``path`` (a directory of the tool's state: ``.mldiag/logs``, the sandbox's)
    owner-only, or check the one there: a directory of this user's own; tightened to 0700
    when others may read it.

    Raises:
      ConflictError (exit 3): something else is there (a file, a link ...), or it is not
        the user's own (:func:`state_entry`).
      UsageError (exit 2): it cannot be made (read-only or full file system, permission).
    """
    if state_entry(path, want_dir=True) is False:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise write_error(exc, path, workdir or os.path.dirname(os.fspath(path))) from None
    with contextlib.suppress(OSError):
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, 0o700)


def check_local_states(workdir: str | Path) -> None:
    """Each Terraform local state of a stack (``DIR/*.tfstate``, ``DIR/*/*.tfstate`` and
    their ``.backup``) is a regular file when present. Terraform reports a directory there
    as "Error acquiring the state lock", which read as another run holding the lock, with
    ``terraform force-unlock`` as the advice (issue 28).

    Raises:
      ConflictError (exit 3): one is a directory, a FIFO, a device or a link to nothing;
        the message names it and says that no lock is involved.
    """
    import glob

    from mldiag_provision.errors import ConflictError

    base = os.fspath(workdir)
    for pattern in ("*.tfstate", "*.tfstate.backup", "*/*.tfstate", "*/*.tfstate.backup"):
        for path in sorted(glob.glob(os.path.join(glob.escape(base), pattern))):
            if ".mldiag" in path.split(os.sep):
                continue
            try:
                st = os.stat(path)
            except FileNotFoundError:
                raise ConflictError(
                    f"{path} is a symbolic link to {os.readlink(path)}, which does not exist: "
                    "Terraform cannot read the stack's state (no other run holds a lock)",
                    hint="point the link at the state file, or restore the state (e.g. from "
                         "terraform.tfstate.backup), then re-run; do not force-unlock") from None
            except OSError as exc:
                raise ConflictError(f"{path} cannot be read: {exc.strerror}",
                                    hint="restore the state file, then re-run") from None
            if not stat.S_ISREG(st.st_mode):
                found = ("a directory" if stat.S_ISDIR(st.st_mode)
                         else kind_of(st.st_mode).removesuffix(", not a regular file"))
                raise ConflictError(
                    f"{path} is {found}, where Terraform keeps the stack's state file (no "
                    "other run holds a lock: Terraform reports this as a lock error)",
                    hint=f"move {path} aside and put the state file there (e.g. from "
                         "terraform.tfstate.backup), then re-run; do not force-unlock")


def dangling(path: str | Path) -> str | None:
    """``"a symbolic link to TARGET, which does not exist"`` when ``path`` is a link to
    nothing (what ``FileNotFoundError`` alone does not say), else None."""
    try:
        if os.path.islink(path) and not os.path.exists(path):
            return f"a symbolic link to {os.readlink(path)}, which does not exist"
    except OSError:
        pass
    return None


# the file system's refusals that are the environment's doing, never a bug of the tool
_ENVIRONMENT = frozenset({"ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "ENOTDIR", "EISDIR",
                          "ELOOP", "ENAMETOOLONG", "EMFILE", "ENFILE", "EIO", "EXDEV"})


def environment_error(exc: OSError) -> Exception | None:
    """A :class:`~mldiag_provision.errors.UsageError` (exit 2) for an ``OSError`` the file
    system raised where no check of the tool caught it first (a full disk while the sandbox
    starts, a read-only directory deep in a command): the path when known, the system's
    reason, and what to do. None for any other error (a bug stays exit 70)."""
    import errno

    from mldiag_provision.errors import UsageError

    names = {getattr(errno, n) for n in _ENVIRONMENT if hasattr(errno, n)}
    if exc.errno not in names:
        return None
    where = f" {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        hint = "the file system is full (or your quota is): free some space, then re-run"
    elif exc.errno == errno.EROFS:
        hint = "the file system is read-only: use a work directory on a writable one (-o DIR)"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        hint = "check the permissions of the path (and that it is yours), or use another -o DIR"
    else:
        hint = "check the path: a file where a directory belongs, or the reverse?"
    return UsageError(f"the file system refused{where}: {reason}", hint=hint)
