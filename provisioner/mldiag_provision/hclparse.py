"""HCL text -> data (python-hcl2), cached by content: the parser the policy gate and the
engine units share.

A leaf module (it imports nothing of the package but :mod:`mldiag_provision.errors`): the
policy gate (:mod:`mldiag_provision.policy.inputs`) reads the rendered stack with it, and the
Terraform unit's provider pool (:mod:`mldiag_provision.engines.provider_pool`) reads the
dependency lock file, without either reaching into the other's package.

Shape: python-hcl2 parses a file with quotes stripped from literal strings and keys and
without block markers; expressions stay as ``"${...}"`` strings.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from mldiag_provision import ondisk
from mldiag_provision.errors import UsageError


class HclError(UsageError):
    """A file is not valid HCL; the message names it and quotes the parser (one line, at
    most 300 characters of it)."""


def _cache_dir() -> Path:
    """``$MLDIAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/mldiag-provision``, else
    ``~/.cache/mldiag-provision``."""
    explicit = os.environ.get("MLDIAG_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mldiag-provision"


_PARSED: dict[str, dict[str, Any]] = {}


@functools.cache
def installed_id(package: str) -> str:
    """Which copy of ``package`` is installed (its files' location and time), without
    importing it or importlib.metadata (0.1 s): a reinstall changes it, so caches keyed on
    it (the HCL parses, the policy gate's answers) are invalidated."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    origin = spec.origin if spec is not None and spec.origin else package
    try:
        return f"{origin}:{os.stat(origin).st_mtime_ns}"
    except OSError:
        return origin


def _parser_id() -> str:
    """Which python-hcl2 is installed (importing it takes 0.4 s)."""
    return installed_id("hcl2")


def parse_hcl(rel: str, text: str) -> dict[str, Any]:
    """One HCL file as data. Results are cached by content (sha256 of the parser's version
    and the text; in memory and under :func:`_cache_dir` ``/hcl``): the modules are the same
    files in every stack, and a pipeline runs the gate several times. A kept parse is read
    back only by the rule of every cache of the tool (:mod:`mldiag_provision.ondisk`: the
    user's own file and directory, nobody else may write them, its digest matches): the
    policies judge what it says, so a planted parse would decide the gate (issue 28).

    Raises:
      HclError: the file is not valid HCL (naming it and the parser's message).
    """
    key = hashlib.sha256(f"{_parser_id()}\n{text}".encode()).hexdigest()
    if key in _PARSED:
        return _PARSED[key]
    where, name = str(_cache_dir() / "hcl"), f"{key}.json"
    kept = ondisk.read_sealed(where, name)
    try:
        got = json.loads(kept.decode("utf-8")) if kept is not None else None
    except ValueError:
        got = None
    if isinstance(got, dict):
        _PARSED[key] = got
        return got
    import hcl2
    from hcl2 import SerializationOptions

    opts = SerializationOptions(with_comments=False, explicit_blocks=False,
                                strip_string_quotes=True)
    try:
        doc = dict(hcl2.loads(text, serialization_options=opts))
    except Exception as exc:  # lark errors of many kinds
        raise HclError(f"{rel}: not valid HCL, so the policies cannot read it: "
                          f"{' '.join(str(exc).split())[:300]}",
                          hint="run `terraform fmt` on it, or re-render the stack") from None
    _PARSED[key] = doc
    # best effort: a read-only home only makes the next run slower
    ondisk.write_sealed(where, name, json.dumps(doc).encode("utf-8"), always=True)
    return doc
