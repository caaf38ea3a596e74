"""Start-up work built ahead into the package, or kept between runs in the user's cache
directory (issues 16 and 32).

Built ahead (:mod:`mldiag_provision.prebuild`, shipped in the package, read first; no
writable directory needed, whatever ``PYTHONDONTWRITEBYTECODE`` says): the parsed fact files
and blueprint manifests (``prebuilt_data.marshal``, by a digest of the file's bytes) and the
code of the dataclass methods on the commands' paths (``prebuilt_code.py``: compiled into its
own ``.pyc``; a text found there becomes a function of that code with the class's globals,
what ``exec`` of the text makes). What is not found there (a file edited since the build,
another Python's texts, a class off those paths) goes to the runtime cache below.

Two things every run used to redo, about a third of the time ``validate`` spends before it
checks its first recipe (measured on the project's 2-core machine, bytecode compiled):

- **The code of dataclass methods.** :mod:`dataclasses` writes each class's ``__init__``,
  ``__repr__``, ``__eq__``, ``__setattr__`` ... as source text and compiles it at import time:
  ~40-50 ms for the 69 dataclasses ``validate`` imports (Python's ``.pyc`` files do not cover
  it). :func:`install` gives :mod:`dataclasses` a stand-in for ``exec`` that compiles each text
  once and keeps the code objects, by the text itself, in a ``marshal`` file (Python's own
  format for bytecode); a later run executes the kept code objects. Only this package's classes
  are cached (the text's globals are a module of ``mldiag_provision``); the functions come out
  the same (``tests/unit/test_startcache.py``).
- **The fact files.** :func:`load_yaml` returns a YAML file's data kept (with :mod:`marshal`)
  by a hash of the file's bytes: ~29 ms of YAML parsing per run for ``catalog/data/*.yaml``
  and the blueprint manifests.

Both are addressed by content (the source text; the file's bytes, with PyYAML's version and the
loader), so an entry can never be stale: a changed text or file is a new entry.

Where, following Python's own bytecode settings as the template cache does
(:mod:`mldiag_provision.render.template_cache`): under ``sys.pycache_prefix``
(``PYTHONPYCACHEPREFIX``) in ``mldiag-provision-startup/`` when set, else in
``$XDG_CACHE_HOME/mldiag-provision/startup`` (``~/.cache`` when unset); nothing is written
while ``sys.dont_write_bytecode`` holds (``PYTHONDONTWRITEBYTECODE``, ``-B``), what is there
is still read. ``MLDIAG_CACHE=0`` turns it off (nothing read, nothing written).

Trust, as Python gives ``__pycache__``, by the rule every cache of the tool shares
(:mod:`mldiag_provision.ondisk`): the directory is created 0700 and each file 0600,
written whole under a temporary name then renamed; a file is read only when it and its
directory belong to this user and nobody else may write them, and when its first 16 bytes,
a BLAKE2b digest of the rest, match (a damaged file, e.g. one flipped bit, is never used: it
made ``marshal`` raise ``SystemError`` at every start). Anything unreadable, damaged
or refused is ignored (the work is done as without a cache); a failure to write is ignored
too. Nothing here ever fails a run.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import FunctionType
from typing import TYPE_CHECKING, Any

from mldiag_provision import ondisk

if TYPE_CHECKING:  # pathlib is not imported at run time: --help imports this module too
    from collections.abc import Callable
    from pathlib import Path

_PREFIX = "mldiag_provision."


def directory() -> str | None:
    """The cache directory (not created here; see the module), or None when caching is off
    (``MLDIAG_CACHE=0``)."""
    if os.environ.get("MLDIAG_CACHE", "1") == "0":
        return None
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix, "mldiag-provision-startup")
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mldiag-provision", "startup")


def read(name: str) -> bytes | None:
    """The bytes stored as the cache file ``name``, or None: no cache, no file, not trusted,
    or its digest does not match (damaged): :func:`mldiag_provision.ondisk.read_sealed`,
    the one rule every cache of the tool follows."""
    where = directory()
    return None if where is None else ondisk.read_sealed(where, name)


def write(name: str, data: bytes) -> None:
    """Store ``data`` as the cache file ``name`` (whole, or not at all; errors ignored); not
    while ``sys.dont_write_bytecode`` holds (:func:`mldiag_provision.ondisk.write_sealed`)."""
    where = directory()
    if where is not None:
        ondisk.write_sealed(where, name, data)


# --- compiled dataclass methods ----------------------------------------------------------

def _code_file() -> str:
    """The code cache's file name: bytecode is specific to the interpreter and its -O level."""
    return (f"dataclass-code-{sys.implementation.cache_tag}-{sys.hexversion:x}"
            f"-O{sys.flags.optimize}.marshal")


class _CodeCache:
    """The ``exec`` :mod:`dataclasses` calls, with compiled texts kept (see the module)."""

    def __init__(self, prebuilt: dict[str, Any] | None = None) -> None:
        self.codes: dict[str, Any] | None = None  # source text -> code object
        self.changed = False
        # text -> code of its __create_fn__ (prebuilt_code.py); None: not imported yet
        self.prebuilt = prebuilt
        self.more: dict[str, Any] | None = None if prebuilt is None else {}

    def _load(self) -> dict[str, Any]:
        import marshal

        data = read(_code_file())
        if data:
            try:
                codes = marshal.loads(data)
                if isinstance(codes, dict):
                    return codes
            except Exception:  # a damaged file (SystemError seen): ignored
                pass
        return {}

    def exec(self, source: Any, globals: dict[str, Any] | None = None,
             locals: Any = None) -> None:
        name = globals.get("__name__", "") if isinstance(globals, dict) else ""
        if not isinstance(source, str) or not str(name).startswith(_PREFIX):
            exec(source, globals, locals)
            return
        if self.prebuilt is None:
            self.prebuilt = _prebuilt_code("prebuilt_code")
        made = self.prebuilt.get(source)
        if made is None and self.more is None:  # render's texts: validate never loads them
            self.more = _prebuilt_code("prebuilt_code_more")
            self.prebuilt = {**self.prebuilt, **self.more}
            made = self.prebuilt.get(source)
        if made is not None and isinstance(locals, dict):
            # what exec of the text does: define __create_fn__ with these globals
            # (prebuild._checked: the text defines that function and nothing else)
            locals["__create_fn__"] = FunctionType(made, globals)  # type: ignore[arg-type]
            return
        if directory() is None:  # MLDIAG_CACHE=0: compiled here, nothing kept
            exec(source, globals, locals)
            return
        if self.codes is None:
            self.codes = self._load()
        code = self.codes.get(source)
        if code is None:
            # dont_inherit: compiled as dataclasses compiles it, without this module's
            # ``from __future__`` flags
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.codes[source] = code
            if not self.changed:
                self.changed = True
                import atexit

                atexit.register(self.save)
        exec(code, globals, locals)

    def save(self) -> None:
        """Write the kept code (at exit, when this run compiled something new). Entries of
        other runs are kept, unless the file has grown past 4,096 texts: then only this
        run's."""
        import marshal

        if not self.changed or self.codes is None:
            return
        merged = self._load()
        merged.update(self.codes)
        if len(merged) > 4096:
            merged = self.codes
        with contextlib.suppress(ValueError):  # a code object marshal refuses
            write(_code_file(), marshal.dumps(merged))
        self.changed = False


def prebuilt_on() -> bool:
    """Whether the prebuilt code and data are used: yes, unless ``MLDIAG_PREBUILT=0`` (for
    measurements and the runtime cache's tests)."""
    return os.environ.get("MLDIAG_PREBUILT", "1") != "0"


def _prebuilt_code(module: str) -> dict[str, Any]:
    """``TEXTS`` of the generated module ``module`` (``prebuilt_code``, or
    ``prebuilt_code_more``) for this Python: empty for another minor version, when the
    module is missing, or with ``MLDIAG_PREBUILT=0``."""
    if not prebuilt_on():
        return {}
    found: Any
    try:  # import statements (not importlib): -X importtime shows them
        if module == "prebuilt_code":
            from mldiag_provision import prebuilt_code as found
        else:
            from mldiag_provision import prebuilt_code_more as found
    except ImportError:  # pragma: no cover - a package built without it
        return {}
    if tuple(found.PYTHON) != sys.version_info[:2]:
        return {}
    texts: dict[str, Any] = found.TEXTS
    return texts


_CODE = _CodeCache()


def install() -> None:
    """Let :mod:`dataclasses` compile through :class:`_CodeCache` (the CLI calls it before it
    imports its commands; a dataclass made earlier is simply not cached). ``MLDIAG_CACHE=0``
    turns off the runtime cache, not the prebuilt code."""
    import dataclasses

    dataclasses.exec = _CODE.exec  # type: ignore[attr-defined]  # shadows the builtin there


# --- parsed fact files -------------------------------------------------------------------

_digest = ondisk.digest


def data_key(raw: bytes) -> bytes:
    """The key of a file's bytes in ``prebuilt_data.marshal`` (BLAKE2b, 16 bytes)."""
    return _digest(raw, 16)


_PREBUILT_DATA: list[dict[bytes, bytes]] = []


def _prebuilt_data() -> dict[bytes, bytes]:
    """``prebuilt_data.marshal``: digest -> marshal bytes of the data (empty when missing or
    unreadable, or with ``MLDIAG_PREBUILT=0``: the files are then parsed, or read from the
    runtime cache)."""
    if not _PREBUILT_DATA:
        import marshal

        table: Any = {}
        try:
            if not prebuilt_on():
                raise FileNotFoundError
            with open(os.path.join(os.path.dirname(__file__), "prebuilt_data.marshal"),
                      "rb") as f:
                table = marshal.loads(f.read())
        except Exception:  # missing or damaged: not used
            pass
        _PREBUILT_DATA.append(table if isinstance(table, dict) else {})
    return _PREBUILT_DATA[0]


def load_yaml(path: Path, parse: Callable[[bytes], Any], kind: str) -> Any:
    """``parse(bytes of path)``, or the same data built ahead (``prebuilt_data.marshal``,
    by the file's bytes: what the safe loader gives, :mod:`mldiag_provision.prebuild`) or
    kept from an earlier run.

    ``kind`` names the parser and its version (e.g. ``"PyYAML 6.0.2 CSafeLoader"``): part of
    the key with the file's bytes. The data is kept with :mod:`marshal` (dicts, lists,
    strings, numbers, booleans, None: what the safe loader gives; data marshal refuses, such as
    a date, is simply not kept). Raises what reading ``path`` or ``parse`` raise.
    """
    import marshal

    with open(path, "rb") as f:
        raw = f.read()
    built = _prebuilt_data().get(data_key(raw))
    if built is not None:
        try:
            return marshal.loads(built)
        except Exception:  # damaged: parsed (or read from the runtime cache)
            pass
    key = _digest(kind.encode() + b"\0" + raw).hex()
    name = f"data-{key}.marshal"
    kept = read(name)
    if kept:
        try:
            return marshal.loads(kept)
        except Exception:  # damaged despite its digest: parsed again
            pass
    data = parse(raw)
    with contextlib.suppress(ValueError):  # not marshal's kind of data (a date)
        write(name, marshal.dumps(data))
    return data
