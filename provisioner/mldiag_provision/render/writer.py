"""Write a rendered tree atomically, and never overwrite what a person edited.

The tree's ``.mldiag/manifest.json`` records the stack name and the sha256 of every file the
tool wrote. On the next render a file whose content no longer matches was edited by a person:
the render is refused (:class:`~mldiag_provision.errors.ConflictError`) unless ``force`` is
set; so is rendering a *different* stack into the directory. Files the tool did not write
(``.terraform/``, state, lock files) are never touched, and manifest entries that point
outside the directory are refused, never followed.

All or nothing: a new directory is built beside the target and renamed into place; an
existing one is updated by staging every file first, replacing them with backups kept, and
restoring the backups if any replacement fails. The manifest is written last.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from mldiag_provision.errors import ConflictError, UsageError

MANIFEST = ".mldiag/manifest.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@dataclass
class WriteResult:
    out: Path
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # with --force: files the tool did not write (or that were edited by hand) that this
    # render replaced, each copied first under ``kept_in`` (relative paths)
    kept: list[str] = field(default_factory=list)
    kept_in: Path | None = None


@dataclass
class _Manifest:
    stack: str | None
    files: dict[str, str]


def _safe_rel(rel: str, manifest: Path) -> str:
    """A manifest path must stay inside the stack directory."""
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts) \
            or "\\" in rel:
        raise ConflictError(f"{manifest} lists '{rel}', a path outside the stack directory",
                            hint="the manifest was edited or corrupted; render into a new "
                                 "directory")
    return p.as_posix()


def _read_manifest(out: Path) -> _Manifest | None:
    path = out / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
        stack = data.get("stack")
        return _Manifest(stack=str(stack) if stack is not None else None,
                         files={_safe_rel(str(k), path): str(v) for k, v in files.items()})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConflictError(f"{path} is unreadable ({exc})",
                            hint="re-render into an empty directory, or use --force") from exc


def manifest_bytes(files: dict[str, bytes], generator: str, stack: str | None = None) -> bytes:
    body: dict[str, object] = {"generator": generator,
                               "files": {rel: sha256(data) for rel, data in sorted(files.items())}}
    if stack is not None:
        body["stack"] = stack
    return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()


def edited_files(out: Path) -> list[str]:
    """Managed files in ``out`` whose content differs from what the tool wrote."""
    old = _read_manifest(out)
    edited = []
    for rel, digest in sorted((old.files if old else {}).items()):
        p = out / rel
        if p.is_file() and sha256(p.read_bytes()) != digest:
            edited.append(rel)
    return edited


def _io_error(out: Path, exc: OSError) -> UsageError:
    from mldiag_provision.ondisk import unwritable_hint

    return UsageError(f"cannot write the stack to {out}: {exc.strerror or exc}",
                      hint=unwritable_hint(exc, out))


def write_tree(out: Path, files: dict[str, bytes], *, generator: str, stack: str | None = None,
               force: bool = False) -> WriteResult:
    """Write ``files`` (relative path -> content) under ``out``, all or nothing.

    Raises:
      ConflictError: ``out`` is a file, is a non-empty directory this tool did not render,
        holds another stack, or holds files a person edited (unless ``force``); its
        ``.mldiag`` is not a directory of the user's own (:func:`.ondisk.state_dir`).
      UsageError: the directory cannot be written (permissions, read-only disk, ...).
    """
    out = out.resolve()
    try:
        return _write(out, files, generator=generator, stack=stack, force=force)
    except OSError as exc:
        raise _io_error(out, exc) from exc


def _mode_of(rel: str, file_mode: int) -> int:
    """``file_mode``, less group and other write for the tool's state files (``.mldiag/*``):
    the tool refuses a state file others may write (:func:`.ondisk.state_dir`)."""
    return file_mode & ~0o022 if rel.startswith(".mldiag/") or "/.mldiag/" in rel else file_mode


def _fill(root: str, files: dict[str, bytes], file_mode: int, dir_mode: int) -> None:
    """Write ``files`` under the new, empty directory ``root``: each file with ``file_mode``,
    ``root`` and every directory made for them with ``dir_mode``. Each directory is made
    once (per-file ``mkdir`` calls and pathlib were a tenth of a large render, issue 16)."""
    made = {root}
    for rel, data in sorted(files.items()):
        target = os.path.join(root, rel)
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            while parent not in made:
                made.add(parent)
                parent = os.path.dirname(parent)
        with open(target, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), _mode_of(rel, file_mode))
    for d in made:  # .mldiag never writable by group or others, whatever the umask:
        # the tool refuses a state directory others may write (mldiag_provision.ondisk)
        os.chmod(d, dir_mode & ~0o022 if os.path.basename(d) == ".mldiag" else dir_mode)


def _check_target(out: Path) -> None:
    """Refuse an ``out`` the stack cannot go to: a file (exit 2), an existing directory whose
    ``.mldiag`` is a file, a link or someone else's (exit 3, by
    :func:`~mldiag_provision.ondisk.state_dir`), or a path under a file (exit 2).

    Raises:
      UsageError: ``out`` or its nearest existing parent is a file.
    """
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file, not a work directory",
                         hint="choose another output directory with -o")
    if out.is_dir():  # .mldiag a file, a link or someone else's: refused by name (exit 3)
        from mldiag_provision import ondisk

        ondisk.state_dir(out, create=False)
    parent = next((p for p in out.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"cannot write the stack under {out}: {parent} is a file",
                         hint="choose another output directory with -o")


def _write_new(out: Path, files: dict[str, bytes], manifest: bytes, file_mode: int,
               dir_mode: int) -> None:
    """A new ``out``: every file and the manifest go into a temporary directory beside it,
    which is renamed into place (atomic on one filesystem); removed again on any failure."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        _fill(str(tmp), {**files, MANIFEST: manifest}, file_mode, dir_mode)
        os.rename(tmp, out)  # atomic on one filesystem
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _refuse_overwrite(out: Path, old: _Manifest | None, stack: str | None,
                      force: bool) -> None:
    """Unless ``force``, refuse to write into an existing ``out`` that is not empty and was
    not rendered by the tool, holds another stack, or has rendered files edited by hand
    (their names listed). The edited files are looked for even with ``force``.

    Raises:
      ConflictError: one of the three (exit 3).
    """
    # a directory holding only the tool's own .mldiag/ (e.g. the sandbox's cloud, made
    # before the first render) is as good as empty
    if old is None and any(p.name != ".mldiag" for p in out.iterdir()) and not force:
        raise ConflictError(
            f"{out} is not empty and was not rendered by mldiag-provision",
            hint="render into a new or empty directory, or pass --force to write into it")
    if old and stack and old.stack and old.stack != stack and not force:
        raise ConflictError(
            f"{out} holds stack '{old.stack}', not '{stack}'; rendering would replace it (and a "
            "Terraform state there would then plan to destroy the old stack)",
            hint="render into another directory, or pass --force if you mean to replace it")
    edited = edited_files(out) if old else []
    if edited and not force:
        raise ConflictError(
            f"{len(edited)} rendered file(s) in {out} were edited by hand: " + ", ".join(edited),
            hint="move your changes into the recipe (or a blueprint), or pass --force to "
                 "overwrite them")


def _stage(out: Path, files: dict[str, bytes], file_mode: int,
           result: WriteResult) -> list[tuple[Path, Path, str]]:
    """Step 1: write every changed file to a temporary file beside its target; list the
    unchanged ones in ``result.unchanged``. Returns ``[(temporary file, target, rel)]`` in
    ``rel`` order; on any failure the temporary files are removed and the error re-raised."""
    staged: list[tuple[Path, Path, str]] = []  # (tmp, target, rel)
    try:
        for rel, data in sorted(files.items()):
            target = out / rel
            if target.is_file() and target.read_bytes() == data:
                result.unchanged.append(rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True,
                                mode=0o755 if target.parent.name == ".mldiag" else 0o777)
            fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                            dir=target.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp_name, _mode_of(rel, file_mode))
            staged.append((Path(tmp_name), target, rel))
    except BaseException:
        for tmp_path, _, _ in staged:
            with contextlib.suppress(OSError):
                tmp_path.unlink()
        raise
    return staged


def _replace_staged(staged: list[tuple[Path, Path, str]], result: WriteResult) -> None:
    """Step 2: move each staged file over its target, keeping the original as a backup, and
    list it in ``result.written``; on any failure put every original back, remove the
    temporary files not yet moved and re-raise. The backups are removed at the end."""
    done: list[tuple[Path, Path | None]] = []  # (target, backup or None if it was new)
    try:
        for i, (tmp_path, target, rel) in enumerate(staged):
            backup = None
            if target.exists():
                backup = target.with_name(f".{target.name}.mldiag-backup")
                os.replace(target, backup)
            try:
                os.replace(tmp_path, target)
            except BaseException:
                if backup is not None:
                    os.replace(backup, target)
                raise
            done.append((target, backup))
            result.written.append(rel)
            staged[i] = (tmp_path, target, "")
    except BaseException:
        _restore(done, staged)
        raise
    for _, backup in done:
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()


def _restore(done: list[tuple[Path, Path | None]], staged: list[tuple[Path, Path, str]]) -> None:
    """Undo step 2: each replaced target gets its backup back (a new one is removed), newest
    first; the staged files not yet moved (``rel`` not blanked) are removed. Errors ignored."""
    for target, backup in reversed(done):
        with contextlib.suppress(OSError):
            if backup is not None:
                os.replace(backup, target)
            else:
                target.unlink()
    for tmp_path, _, rel in staged:
        if rel:
            with contextlib.suppress(OSError):
                tmp_path.unlink()


def _drop_stale(out: Path, old: _Manifest | None, files: dict[str, bytes],
                result: WriteResult) -> None:
    """Step 3: remove the files the old manifest lists and this render does not (listed in
    ``result.removed``), and the directories that leaves empty."""
    for rel in sorted(set(old.files if old else {}) - set(files) - {MANIFEST}):
        p = out / rel
        if p.is_file():
            p.unlink()
            result.removed.append(rel)
            with contextlib.suppress(OSError):  # drop directories left empty
                p.parent.rmdir()


def _write_manifest(out: Path, manifest: bytes, file_mode: int) -> None:
    """Replace ``out/.mldiag/manifest.json`` through a temporary file (the last step)."""
    mpath = out / MANIFEST
    mpath.parent.mkdir(parents=True, exist_ok=True, mode=0o755)  # .mldiag: see _fill
    fd, tmp_name = tempfile.mkstemp(prefix=".manifest.", suffix=".tmp", dir=mpath.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(manifest)
    os.chmod(tmp_name, _mode_of(MANIFEST, file_mode))
    os.replace(tmp_name, mpath)


def _keep_replaced(out: Path, old: _Manifest | None, files: dict[str, bytes],
                   result: WriteResult) -> None:
    """With ``force``: before a file the tool did not write (``old`` is None: the directory
    was not rendered by it) or one edited by hand is replaced, copy it under
    ``out/.mldiag/replaced/<UTC time>/`` (same relative path) and list it in
    ``result.kept``: --force never loses a person's file.

    Raises:
      OSError: a copy cannot be written (nothing is replaced then).
    """
    import datetime as dt
    import shutil

    theirs = set(edited_files(out)) if old else None
    replaced = [rel for rel, data in sorted(files.items())
                if (out / rel).is_file() and (theirs is None or rel in theirs)
                and (out / rel).read_bytes() != data]
    if not replaced:
        return
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    where = out / ".mldiag" / "replaced" / stamp
    for rel in replaced:  # private, like the tool's other state (ondisk.private_dir)
        os.makedirs((where / rel).parent, mode=0o700, exist_ok=True)
        shutil.copy2(out / rel, where / rel)
    result.kept, result.kept_in = replaced, where


def _write(out: Path, files: dict[str, bytes], *, generator: str, stack: str | None,
           force: bool) -> WriteResult:
    """Write ``files`` ({rel path: bytes}) into ``out``: a new directory at once, an existing
    one in three steps (stage, replace with backups, drop stale files), the manifest last.

    Raises:
      ConflictError: a path outside the stack; without ``force``, a directory the tool did
        not render, another stack's, or one with edited files.
      UsageError: ``out`` cannot be a directory (:func:`_check_target`).
    """
    for rel in files:
        _safe_rel(rel, Path("<render>"))
    manifest = manifest_bytes(files, generator, stack)
    result = WriteResult(out=out)
    file_mode, dir_mode = 0o666 & ~_umask(), 0o777 & ~_umask()
    _check_target(out)
    if not out.exists():
        _write_new(out, files, manifest, file_mode, dir_mode)
        result.written = sorted(files)
        return result

    old = _read_manifest(out)
    _refuse_overwrite(out, old, stack, force)
    if force:
        _keep_replaced(out, old, files, result)
    staged = _stage(out, files, file_mode, result)
    _replace_staged(staged, result)
    _drop_stale(out, old, files, result)
    _write_manifest(out, manifest, file_mode)
    return result
