"""Start-up data built ahead (mldiag_provision.prebuild, issue 32 item 3): fresh, the same as
what it replaces, and enough for a start without a writable cache."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from mldiag_provision import prebuild, prebuilt_code, prebuilt_code_more, startcache

ROOT = Path(__file__).resolve().parents[2]


def test_the_prebuilt_files_are_fresh() -> None:
    """What ``python -m mldiag_provision.prebuild`` would write now is what is committed
    (after a change to a fact file, a blueprint or a dataclass on the commands' paths: run
    it and commit the files)."""
    if tuple(prebuilt_code.PYTHON) != sys.version_info[:2]:
        pytest.skip(f"the dataclass texts were built by Python {prebuilt_code.PYTHON}")
    assert prebuild.main(["--check"]) == 0


def test_every_fact_file_and_blueprint_is_built_ahead_as_the_safe_loader_reads_it() -> None:
    table = marshal.loads(prebuild.DATA_FILE.read_bytes())
    files = prebuild.data_files()
    assert len(files) >= 12 and any(p.name == "blueprint.yaml" for p in files)
    for path in files:
        raw = path.read_bytes()
        assert marshal.loads(table[startcache.data_key(raw)]) == yaml.safe_load(raw), path


def test_load_yaml_answers_from_the_prebuilt_data_without_parsing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLDIAG_PREBUILT", raising=False)
    monkeypatch.setenv("MLDIAG_CACHE", "0")  # no runtime cache either
    path = prebuild.data_files()[0]
    first = startcache.load_yaml(path, lambda raw: pytest.fail("parsed"), "any")
    second = startcache.load_yaml(path, lambda raw: pytest.fail("parsed"), "any")
    assert first == second == yaml.safe_load(path.read_bytes())
    assert first is not second  # a fresh copy each time: a store may change its own


def _shape(code: types.CodeType) -> tuple[object, ...]:
    """A code object less where it was compiled (file name, lines): nested code by shape."""
    consts = tuple(_shape(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, code.co_argcount, code.co_kwonlyargcount, code.co_flags,
            code.co_name, code.co_qualname)


@pytest.mark.parametrize("module", [prebuilt_code, prebuilt_code_more],
                         ids=["validate", "render"])
def test_prebuilt_code_is_what_compiling_the_text_gives(module: types.ModuleType) -> None:
    if tuple(module.PYTHON) != sys.version_info[:2]:
        pytest.skip(f"built by Python {module.PYTHON}")
    assert len(module.TEXTS) > 100
    for text, code in module.TEXTS.items():
        compiled = compile(text, "<string>", "exec", dont_inherit=True)
        (inner,) = [c for c in compiled.co_consts if isinstance(c, types.CodeType)]
        assert _shape(inner) == _shape(code), text[:80]


def test_a_text_made_from_prebuilt_code_makes_the_same_function() -> None:
    """The exec stand-in puts into ``locals`` what ``exec`` of the text puts there."""
    text, _code = next(iter(prebuilt_code.TEXTS.items()))
    cache = startcache._CodeCache()
    g: dict[str, object] = {"__name__": "mldiag_provision.fake", "__builtins__": __builtins__}
    mine: dict[str, object] = {}
    cache.exec(text, g, mine)
    theirs: dict[str, object] = {}
    exec(text, g, theirs)
    a, b = mine["__create_fn__"], theirs["__create_fn__"]
    assert isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType)
    assert (a.__name__, a.__qualname__, a.__module__, a.__defaults__, a.__kwdefaults__,
            a.__annotations__, a.__globals__ is g) == (
        b.__name__, b.__qualname__, b.__module__, b.__defaults__, b.__kwdefaults__,
        b.__annotations__, True)
    assert cache.codes is None  # nothing compiled, no runtime cache read


_NO_CACHE_RUN = """
import sys
from mldiag_provision import startcache
from mldiag_provision.catalog import store
import yaml
def boom(*args, **kwargs):
    raise AssertionError("parsed a fact file or blueprint")
store._parse = boom
real_load = yaml.load
yaml.load = boom
from mldiag_provision.cli.app import main
rc = main(["validate", *sys.argv[1:]])
print("RESULT", rc, startcache._CODE.codes is None)
"""


def test_validate_without_a_writable_cache_compiles_and_parses_nothing_ahead(
        tmp_path: Path) -> None:
    """PYTHONDONTWRITEBYTECODE and an empty cache home, as in a CI image: validate of every
    bundled recipe parses no fact file or blueprint and compiles no dataclass method, and
    writes nothing."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("MLDIAG_PREBUILT", None)
    env.pop("MLDIAG_CACHE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    recipes = sorted(str(p) for p in (ROOT / "recipes").glob("*.yaml"))
    proc = subprocess.run([sys.executable, "-c", _NO_CACHE_RUN, *recipes], cwd=ROOT,
                          capture_output=True, text=True, env=env, check=False)
    assert "RESULT 0 True" in proc.stdout, proc.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
