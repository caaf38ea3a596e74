"""Start-up data built ahead, shipped in the package (issue 32 item 3).

``python -m mldiag_provision.prebuild`` writes three files next to this module; ``--check``
writes nothing and exits 1 when they are not what it would write
(``tests/unit/test_prebuild.py`` runs the same check):

- ``prebuilt_data.marshal``: every fact file (``catalog/data/*.yaml``) and blueprint manifest
  (``blueprints/*/blueprint.yaml``) as the safe loader gives it, keyed by a BLAKE2b digest of
  the file's bytes: ``{digest (16 bytes): marshal bytes of the data}``, the whole a
  :mod:`marshal` dict (format version 4, readable by every Python 3 since 3.4). A file whose
  bytes changed after the build is simply not found and is parsed as before
  (:func:`mldiag_provision.startcache.load_yaml`).
- ``prebuilt_code.py``: the source texts :mod:`dataclasses` compiles for this package's
  classes on the commands' paths (``validate`` of every bundled recipe; ``render`` of a TPU,
  a GPU and a Slurm recipe, whose own texts are in ``prebuilt_code_more.py``), each as a
  top-level ``def __create_fn__`` that Python compiles into the module's own ``.pyc``
  (``pip install`` and ``compileall`` write it like any module's) and, in ``TEXTS``, the
  text that names it. The texts are those of the Python minor version that built the file
  (``PYTHON``): on another one they are not found and the methods are compiled as before,
  kept by the runtime cache.

Neither needs a writable directory at run time: a CI image with ``PYTHONDONTWRITEBYTECODE``
starts as a workstation with a filled cache does (``docs/benchmarks.md``). The runtime cache
(:mod:`mldiag_provision.startcache`) keeps only what is not built here.
"""

from __future__ import annotations

import argparse
import json
import marshal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA_FILE = HERE / "prebuilt_data.marshal"
CODE_FILE = HERE / "prebuilt_code.py"
MORE_CODE_FILE = HERE / "prebuilt_code_more.py"
MARSHAL_VERSION = 4

# the recipes whose commands' dataclass texts are built ahead (relative to the data root)
RENDERED = ("recipes/tpu-v4-2x2x4-autopilot.yaml", "recipes/gpu-h100-autopilot.yaml",
            "recipes/slurm-a3-ultra-lustre.yaml")

_RECORD = r"""
import dataclasses, io, contextlib, json, sys, tempfile
texts = []
real = exec
def record(source, globals=None, locals=None):
    name = globals.get("__name__", "") if isinstance(globals, dict) else ""
    if isinstance(source, str) and str(name).startswith("mldiag_provision."):
        texts.append(source)
    real(source, globals, locals)
dataclasses.exec = record
from mldiag_provision import startcache
startcache.install = lambda: None  # record every text: none may come from a cache
from mldiag_provision.cli.app import main
recipes, rendered = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    main(["validate", "--jobs", "1", *recipes])
validated = list(texts)
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    for recipe in rendered:
        with tempfile.TemporaryDirectory() as out:
            main(["render", "-o", out, recipe])
print(json.dumps([validated, texts[len(validated):]]))
"""


def data_files() -> list[Path]:
    """The fact files and blueprint manifests built ahead."""
    from mldiag_provision.catalog.store import DATA_DIR
    from mldiag_provision.resources import data_root

    return [*sorted(DATA_DIR.glob("*.yaml")),
            *sorted((data_root() / "blueprints").glob("*/blueprint.yaml"))]


def build_data() -> bytes:
    """``prebuilt_data.marshal``'s bytes (see the module).

    Raises:
      ValueError: a file holds data marshal cannot keep (a date, a set).
    """
    import yaml

    from mldiag_provision.startcache import data_key

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    table: dict[bytes, bytes] = {}
    for path in data_files():
        raw = path.read_bytes()
        table[data_key(raw)] = marshal.dumps(yaml.load(raw, Loader=loader), MARSHAL_VERSION)
    return marshal.dumps(dict(sorted(table.items())), MARSHAL_VERSION)


def record_texts() -> tuple[list[str], list[str]]:
    """The dataclass texts of this package that ``validate`` compiles, and those that
    ``render`` compiles besides: each sorted, each text once (a fresh interpreter runs the
    commands)."""
    from mldiag_provision.resources import data_root

    root = data_root()
    recipes = sorted(str(p) for p in (root / "recipes").glob("*.yaml"))
    rendered = [str(root / r) for r in RENDERED]
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run([sys.executable, "-c", _RECORD, json.dumps([recipes, rendered])],
                             capture_output=True, text=True, check=True, cwd=cwd).stdout
    validated, rendered_more = json.loads(out.splitlines()[-1])
    return sorted(set(validated)), sorted(set(rendered_more) - set(validated))


def _checked(text: str) -> str:
    """``text`` when executing it only defines ``__create_fn__`` (what
    :func:`mldiag_provision.startcache._CodeCache.exec` replaces by a function made from the
    prebuilt code); else ValueError."""
    code = compile(text, "<string>", "exec", dont_inherit=True)
    if not text.startswith("def __create_fn__(") or code.co_names != ("__create_fn__",) or \
            sum(isinstance(c, type(code)) for c in code.co_consts) != 1:
        raise ValueError(f"not a dataclass method text: {text[:80]!r}")
    return text


def build_code(texts: list[str], more: bool = False) -> str:
    """``prebuilt_code.py``'s text (see the module); ``more``: ``prebuilt_code_more.py``'s,
    the texts of ``render`` that ``validate`` does not compile (imported only when a text is
    not found in the first: ``validate`` never loads it)."""
    lines = ['"""Generated by ``python -m mldiag_provision.prebuild``: do not edit.',
             "",
             "The methods :mod:`dataclasses` writes for this package's classes, compiled with",
             "the module (see :mod:`mldiag_provision.prebuild`)"
             + ("; the texts of render that validate does not compile." if more else
                "; the texts of validate."),
             "No ``from __future__``: the",
             'texts are compiled as dataclasses compiles them."""',
             "# ruff: noqa",
             "# fmt: off",
             "",
             f"PYTHON = {tuple(sys.version_info[:2])!r}",
             "TEXTS = {}",
             ""]
    for text in texts:
        lines += [_checked(text), f"TEXTS[{text!r}] = __create_fn__.__code__", ""]
    lines += [f"del __create_fn__  # {len(texts)} texts", ""]
    return "\n".join(lines)


def _decoded(data: bytes) -> dict[bytes, object]:
    """A ``prebuilt_data.marshal`` table with each entry's data decoded."""
    return {k: marshal.loads(v) for k, v in marshal.loads(data).items()}


def _same(path: Path, data: bytes) -> bool:
    """Whether ``path`` holds ``data``; the data table compared decoded (marshal's bytes for
    the same data may differ between runs: it marks objects referenced twice)."""
    if not path.is_file():
        return False
    have = path.read_bytes()
    if path == DATA_FILE:
        try:
            return _decoded(have) == _decoded(data)
        except Exception:  # damaged
            return False
    return have == data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mldiag_provision.prebuild",
                                description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when a file is not what would be written")
    args = p.parse_args(argv)
    validated, rendered = record_texts()
    wanted = {DATA_FILE: build_data(), CODE_FILE: build_code(validated).encode(),
              MORE_CODE_FILE: build_code(rendered, more=True).encode()}
    stale = [path for path, data in wanted.items() if not _same(path, data)]
    if args.check:
        for path in stale:
            print(f"{path.name} is stale: run python -m mldiag_provision.prebuild")
        return 1 if stale else 0
    for path in stale:
        path.write_bytes(wanted[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
