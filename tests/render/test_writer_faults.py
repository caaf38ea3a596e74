"""The stack writer under faults and hostile manifests (found by a fresh-clone review)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mldiag_provision.errors import ConflictError, UsageError
from mldiag_provision.render import writer
from mldiag_provision.render.writer import MANIFEST, write_tree

GEN = "mldiag-provision test"


def _files(tag: str) -> dict[str, bytes]:
    return {"main.tf": f"# {tag} main\n".encode(), "outputs.tf": f"# {tag} out\n".encode(),
            "k8s/a.yaml": f"# {tag} a\n".encode()}


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_manifest_path_outside_the_stack_is_refused(tmp_path: Path) -> None:
    out, victim = tmp_path / "stack", tmp_path / "victim" / "important.txt"
    victim.parent.mkdir()
    victim.write_text("keep me")
    write_tree(out, _files("v1"), generator=GEN, stack="s")
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"]["../victim/important.txt"] = writer.sha256(b"keep me")
    (out / MANIFEST).write_text(json.dumps(manifest))
    for force in (False, True):
        with pytest.raises(ConflictError, match="outside the stack directory"):
            write_tree(out, _files("v2"), generator=GEN, stack="s", force=force)
    assert victim.read_text() == "keep me"


def test_failed_replacement_restores_the_previous_stack(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "stack"
    write_tree(out, _files("v1"), generator=GEN, stack="s")
    before = _tree(out)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(src: str | os.PathLike, dst: str | os.PathLike) -> None:
        # fault injection at the OS seam: the 4th rename fails like an immutable file would
        calls["n"] += 1
        if calls["n"] == 4:
            raise PermissionError(1, "Operation not permitted", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(writer.os, "replace", flaky_replace)
    with pytest.raises(UsageError, match="cannot write the stack"):
        write_tree(out, _files("v2"), generator=GEN, stack="s")
    monkeypatch.setattr(writer.os, "replace", real_replace)
    assert _tree(out) == before, "a failed re-render must leave the old stack exactly as it was"
    # and the next render works (no stale temp/backup files count as edits)
    write_tree(out, _files("v2"), generator=GEN, stack="s")
    assert (out / "main.tf").read_bytes() == b"# v2 main\n"
    assert not [p for p in out.rglob("*") if p.name.endswith((".tmp", ".mldiag-backup"))]


def test_another_stack_is_not_replaced_silently(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    write_tree(out, _files("v1"), generator=GEN, stack="first")
    with pytest.raises(ConflictError, match="holds stack 'first'"):
        write_tree(out, _files("v2"), generator=GEN, stack="second")
    write_tree(out, _files("v2"), generator=GEN, stack="second", force=True)
    assert json.loads((out / MANIFEST).read_text())["stack"] == "second"


def test_files_get_the_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        out = tmp_path / "stack"
        write_tree(out, _files("v1"), generator=GEN, stack="s")
        write_tree(out, _files("v2"), generator=GEN, stack="s")
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    for p in out.rglob("*"):
        want = 0o755 if p.is_dir() else 0o644
        assert stat.S_IMODE(p.stat().st_mode) == want, p


def test_unwritable_parent_is_a_clear_error(tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        if os.access(parent, os.W_OK):  # root ignores mode bits; use a file as parent instead
            blocker = tmp_path / "file"
            blocker.write_text("x")
            target = blocker / "stack"
        else:
            target = parent / "stack"
        with pytest.raises((UsageError, ConflictError)):
            write_tree(target, _files("v1"), generator=GEN, stack="s")
    finally:
        parent.chmod(0o755)
