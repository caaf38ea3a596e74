"""``render --check``: is a committed work directory what a render would write now?

The render happens in memory; nothing is written. The tree on disk is compared, file by
file, with the fresh render (its ``.mldiag/manifest.json`` included, so a tool upgrade that
changes the output is stale too):

* ``changed``: a file of the fresh render whose bytes differ on disk; those whose bytes also
  differ from what the last render wrote (the manifest's sha256) are ``edited`` by hand;
* ``added``: a file a render would write that the directory lacks (every file, when the
  directory does not exist);
* ``removed``: a file the last render wrote (listed in the directory's manifest) that a
  render would no longer write;
* ``unmanaged``: a file no render wrote, that the stack's ``.gitignore`` does not keep out
  (local state such as ``.terraform/`` or state files is never reported), and that changes
  what the engine applies: ``*.tf``/``*.tf.json`` files and manifests under ``k8s/``.
  ``.terraform.lock.hcl`` is expected (it is committed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mldiag_provision.render import gitignore
from mldiag_provision.render.writer import MANIFEST, _read_manifest, manifest_bytes, sha256


@dataclass
class CheckResult:
    """Outcome of :func:`check_tree`; paths are POSIX, relative to ``out``, sorted."""

    out: Path
    exists: bool
    changed: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unmanaged: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.exists and not (self.changed or self.added or self.removed
                                    or self.unmanaged)

    def to_dict(self) -> dict[str, object]:
        return {"identical": self.identical, "out": str(self.out), "exists": self.exists,
                "changed": self.changed, "edited": self.edited, "added": self.added,
                "removed": self.removed, "unmanaged": self.unmanaged}


def _applied(rel: str) -> bool:
    return rel.endswith((".tf", ".tf.json")) or (
        rel.startswith("k8s/") and rel.endswith((".yaml", ".yml")))


def check_tree(out: Path, files: dict[str, bytes], *, generator: str,
               stack: str | None = None) -> CheckResult:
    """Compare the directory ``out`` with ``files`` (relative path -> bytes, as
    :func:`~mldiag_provision.render.stack.render_stack` returns) plus the manifest a render
    would write. Reads only.

    Raises:
      ConflictError: the directory's manifest is unreadable or lists paths outside it.
    """
    want = {**files, MANIFEST: manifest_bytes(files, generator, stack)}
    result = CheckResult(out=out, exists=out.is_dir())
    if not result.exists:
        result.added = sorted(want)
        return result
    old = _read_manifest(out)
    old_files = old.files if old else {}
    for rel, data in sorted(want.items()):
        p = out / rel
        if not p.is_file():
            result.added.append(rel)
            continue
        disk = p.read_bytes()
        if disk != data:
            result.changed.append(rel)
            if rel in old_files and sha256(disk) != old_files[rel]:
                result.edited.append(rel)
    result.removed = sorted(rel for rel in old_files
                            if rel not in want and (out / rel).is_file())
    for dirpath, dirnames, filenames in os.walk(out):
        rel_dir = Path(dirpath).relative_to(out).as_posix()
        prefix = "" if rel_dir == "." else f"{rel_dir}/"
        dirnames[:] = sorted(d for d in dirnames if not gitignore.is_local(f"{prefix}{d}/x"))
        for name in sorted(filenames):
            rel = prefix + name
            if (rel not in want and rel not in old_files and not gitignore.is_local(rel)
                    and _applied(rel)):
                result.unmanaged.append(rel)
    return result
