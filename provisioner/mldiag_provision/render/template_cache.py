"""Compiled blueprint templates kept between runs, as Python keeps its bytecode (issue 16:
compiling the ``*.tf.j2`` templates was most of a one-workload render's own time).

Each template's compiled code object is kept with :mod:`marshal` (Python's own format for
bytecode, as the start-up cache keeps dataclass code) in one file per template, named by
Jinja's key of its name and file (``<sha1>.jinja-code``), behind a header of Jinja's
bytecode magic (Jinja's and Python's versions) and the template source's checksum: a changed
template, Jinja or Python is compiled afresh, so the output is the same with or without the
cache.

Trust (issue 28): Jinja's own :class:`jinja2.FileSystemBytecodeCache` read each file's header
with :mod:`pickle` (a file planted in a cache directory others can write ran code in the
next ``render``) and had no integrity check (one flipped bit in a cached template made
``render`` write different Terraform, and ``render --check`` call it current). This cache
follows the rule every cache of the tool shares (:mod:`mldiag_provision.ondisk`): a file is
read only when it and its directory are the user's own and nobody else may write them, and
when its BLAKE2b digest matches; nothing is unpickled. Anything else is compiled again and
rewritten. Files of Jinja's old format (``*.jinja``) are never opened.

Where, following Python's own bytecode settings:

- nothing is written while ``sys.dont_write_bytecode`` holds (``PYTHONDONTWRITEBYTECODE``,
  ``-B``); what is there is still read;
- under ``sys.pycache_prefix`` (``PYTHONPYCACHEPREFIX``, ``-X pycache_prefix``) when set, in
  ``mldiag-provision-jinja/``; otherwise in ``$XDG_CACHE_HOME/mldiag-provision/jinja``
  (``~/.cache`` when unset or relative, as the XDG spec says);
- ``MLDIAG_CACHE=0`` turns it off (nothing read, nothing written), as for the start-up cache.

A cache that cannot be read or written (read-only home, a damaged file) only costs the
compile: every error is swallowed.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import types
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket, bc_magic

from mldiag_provision import ondisk

SUFFIX = ".jinja-code"


def cache_dir() -> Path:
    """Where compiled templates go (see the module's docstring)."""
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix) / "mldiag-provision-jinja"
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mldiag-provision" / "jinja"


def _header(bucket: Bucket) -> bytes:
    """Jinja's bytecode magic (its version and Python's), then the source's checksum."""
    return bc_magic + bucket.checksum.encode("ascii") + b"\n"


class TemplateCache(jinja2.BytecodeCache):
    """A Jinja bytecode cache of sealed :mod:`marshal` files that never fails a render
    (see the module). ``directory``: where (default :func:`cache_dir`)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = str(directory or cache_dir())
        self.enabled = os.environ.get("MLDIAG_CACHE", "1") != "0"

    def _name(self, bucket: Bucket) -> str:
        return bucket.key + SUFFIX

    def load_bytecode(self, bucket: Bucket) -> None:
        """Put the kept code in ``bucket`` when a trusted, undamaged entry of this very
        source exists; else leave it empty (Jinja compiles)."""
        if not self.enabled:
            return
        payload = ondisk.read_sealed(self.directory, self._name(bucket))
        header = _header(bucket)
        if payload is None or not payload.startswith(header):
            return
        try:
            code = marshal.loads(payload[len(header):])
        except Exception:  # damaged despite its digest: compiled again
            return
        if isinstance(code, types.CodeType):
            bucket.code = code

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep ``bucket``'s compiled code (errors ignored; not under ``-B``)."""
        if not self.enabled or bucket.code is None:
            return
        try:
            data = _header(bucket) + marshal.dumps(bucket.code)
        except ValueError:  # a code object marshal refuses: not kept
            return
        ondisk.write_sealed(self.directory, self._name(bucket), data)

    def clear(self) -> None:
        """Remove every kept template of this cache (errors ignored)."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if name.endswith(SUFFIX):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.directory, name))
