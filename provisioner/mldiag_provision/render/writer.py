"""Write a rendered tree atomically, and never overwrite what a person edited.

The tree's ``.mldiag/manifest.json`` records the sha256 of every file the tool wrote. On the
next render a file whose content no longer matches was edited by a person: the render is
refused (:class:`~mldiag_provision.errors.ConflictError`) unless ``force`` is set. Files the
tool did not write (``.terraform/``, state, lock files) are never touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mldiag_provision.errors import ConflictError

MANIFEST = ".mldiag/manifest.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class WriteResult:
    out: Path
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _read_manifest(out: Path) -> dict[str, str] | None:
    path = out / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
        return {str(k): str(v) for k, v in files.items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConflictError(f"{path} is unreadable ({exc})",
                            hint="re-render into an empty directory, or use --force") from exc


def manifest_bytes(files: dict[str, bytes], generator: str) -> bytes:
    body = {"generator": generator,
            "files": {rel: sha256(data) for rel, data in sorted(files.items())}}
    return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()


def edited_files(out: Path) -> list[str]:
    """Managed files in ``out`` whose content differs from what the tool wrote."""
    old = _read_manifest(out) or {}
    edited = []
    for rel, digest in sorted(old.items()):
        p = out / rel
        if p.is_file() and sha256(p.read_bytes()) != digest:
            edited.append(rel)
    return edited


def write_tree(out: Path, files: dict[str, bytes], *, generator: str,
               force: bool = False) -> WriteResult:
    """Write ``files`` (relative path -> content) under ``out``, all or nothing.

    Raises:
      ConflictError: ``out`` is a file, is a non-empty directory this tool did not render,
        or holds files a person edited (unless ``force``).
    """
    out = out.resolve()
    all_files = dict(files)
    all_files[MANIFEST] = manifest_bytes(files, generator)
    result = WriteResult(out=out)
    if out.exists() and not out.is_dir():
        raise ConflictError(f"{out} exists and is not a directory",
                            hint="choose another output directory with -o")
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            for rel, data in sorted(all_files.items()):
                target = tmp / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            os.rename(tmp, out)  # atomic on one filesystem
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        result.written = sorted(files)
        return result

    old = _read_manifest(out)
    if old is None and any(out.iterdir()) and not force:
        raise ConflictError(
            f"{out} is not empty and was not rendered by mldiag-provision",
            hint="render into a new or empty directory, or pass --force to write into it")
    edited = edited_files(out) if old else []
    if edited and not force:
        raise ConflictError(
            f"{len(edited)} rendered file(s) in {out} were edited by hand: " + ", ".join(edited),
            hint="move your changes into the recipe (or a blueprint), or pass --force to "
                 "overwrite them")
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, data in sorted(all_files.items()):
            target = out / rel
            if target.is_file() and target.read_bytes() == data:
                if rel != MANIFEST:
                    result.unchanged.append(rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                            dir=target.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            staged.append((Path(tmp_name), target))
    except BaseException:
        for tmp_path, _ in staged:
            with contextlib.suppress(OSError):
                tmp_path.unlink()
        raise
    for tmp_path, target in staged:
        os.replace(tmp_path, target)
        rel = target.relative_to(out).as_posix()
        if rel != MANIFEST:
            result.written.append(rel)
    for rel in sorted(set(old or {}) - set(all_files)):
        p = out / rel
        if p.is_file():
            p.unlink()
            result.removed.append(rel)
            with contextlib.suppress(OSError):  # drop directories left empty
                p.parent.rmdir()
    return result
