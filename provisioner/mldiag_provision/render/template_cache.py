"""Compiled blueprint templates kept between runs, as Python keeps its bytecode (issue 16:
compiling the ``*.tf.j2`` templates was most of a one-workload render's own time).

Jinja's :class:`jinja2.FileSystemBytecodeCache` stores each template's compiled code under a
key of its name and file, with the source's checksum and Jinja's and Python's bytecode magic
inside: a changed template, Jinja or Python is compiled afresh, so the output is the same
with or without the cache. Where, following Python's own bytecode settings:

- nothing is written while ``sys.dont_write_bytecode`` holds (``PYTHONDONTWRITEBYTECODE``,
  ``-B``); what is there is still read;
- under ``sys.pycache_prefix`` (``PYTHONPYCACHEPREFIX``, ``-X pycache_prefix``) when set, in
  ``mldiag-provision-jinja/``; otherwise in ``$XDG_CACHE_HOME/mldiag-provision/jinja``
  (``~/.cache`` when unset).

A cache that cannot be read or written (read-only home, a damaged file) only costs the
compile: every error is swallowed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket


def cache_dir() -> Path:
    """Where compiled templates go (see the module's docstring)."""
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix) / "mldiag-provision-jinja"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mldiag-provision" / "jinja"


class TemplateCache(jinja2.FileSystemBytecodeCache):
    """:class:`jinja2.FileSystemBytecodeCache` that never fails a render."""

    def __init__(self, directory: Path | None = None) -> None:
        super().__init__(str(directory or cache_dir()), "%s.jinja")

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # a damaged cache file: compile instead
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        if sys.dont_write_bytecode:
            return
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass
