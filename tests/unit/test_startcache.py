"""The start-up cache (mldiag_provision.startcache, issue 16): compiled dataclass methods and
parsed fact files kept between runs, addressed by content, trusted only when owned by the
user, never failing a run."""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import marshal
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from mldiag_provision import startcache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache home; bytecode writing on, here and in the CLI processes started."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MLDIAG_CACHE", raising=False)
    # the runtime cache's own behaviour: without the prebuilt code and data (test_prebuild.py)
    monkeypatch.setenv("MLDIAG_PREBUILT", "0")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    return tmp_path / "xdg" / "mldiag-provision" / "startup"


def _make(module: str, cache: startcache._CodeCache | None) -> type:
    """A frozen dataclass made in a module called ``module``, through ``cache`` (or not)."""
    source = textwrap.dedent("""
        from dataclasses import dataclass, field

        @dataclass(frozen=True)
        class Shape:
            name: str
            chips: int = 4
            tags: tuple = field(default=())
    """)
    fake = types.ModuleType(module)  # dataclasses takes the globals from sys.modules
    sys.modules[module] = fake
    namespace = fake.__dict__
    saved = getattr(dataclasses, "exec", None)
    if cache is not None:
        dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    try:
        exec(compile(source, "<test>", "exec", dont_inherit=True), namespace)
    finally:
        del sys.modules[module]
        if saved is not None:
            dataclasses.exec = saved  # type: ignore[attr-defined]
        elif cache is not None:
            del dataclasses.exec  # type: ignore[attr-defined]
    return namespace["Shape"]


def _methods(cls: type) -> dict[str, tuple]:
    return {name: (fn.__code__.co_code, fn.__code__.co_consts, fn.__code__.co_names,
                   fn.__code__.co_varnames, fn.__annotations__, fn.__defaults__)
            for name in ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__",
                         "__hash__")
            if (fn := inspect.unwrap(getattr(cls, name))).__code__.co_filename == "<string>"}


def test_cached_code_makes_the_same_methods_as_dataclasses_alone(cache_dir: Path) -> None:
    plain = _make("mldiag_provision.fake", None)
    first = startcache._CodeCache()
    cached = _make("mldiag_provision.fake", first)
    assert first.codes and first.changed  # compiled, to be saved
    first.save()
    assert (cache_dir / startcache._code_file()).is_file()
    second = startcache._CodeCache()
    again = _make("mldiag_provision.fake", second)
    assert not second.changed  # every text was found in the file
    assert _methods(plain) == _methods(cached) == _methods(again)
    assert set(_methods(plain)) >= {"__init__", "__repr__", "__eq__", "__setattr__"}
    for cls in (plain, cached, again):
        s = cls("v5e")
        assert repr(s) == "Shape(name='v5e', chips=4, tags=())" and s == cls("v5e", 4)
        with pytest.raises(dataclasses.FrozenInstanceError):
            s.chips = 8  # type: ignore[misc]
    # annotations are objects, as dataclasses makes them (not this module's future strings)
    assert again.__init__.__annotations__ == plain.__init__.__annotations__


def test_other_packages_dataclasses_are_not_kept(cache_dir: Path) -> None:
    cache = startcache._CodeCache()
    _make("someone_else", cache)
    assert cache.codes is None and not cache.changed


def test_a_second_cli_run_compiles_no_dataclass_method(cache_dir: Path) -> None:
    code = ("import dataclasses, sys\n"
            "from mldiag_provision import startcache\n"
            "from mldiag_provision.cli.app import main\n"
            "rc = main(['validate', 'recipes/tpu-v4-2x2x4-autopilot.yaml'])\n"
            "print('RESULT', rc, startcache._CODE.changed, len(startcache._CODE.codes or {}))\n")
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, check=True, env=os.environ.copy()).stdout
        runs.append(next(line for line in out.splitlines() if line.startswith("RESULT")))
    first, second = (r.split() for r in runs)
    assert first[1] == second[1] == "0"
    assert first[2] == "True" and second[2] == "False"  # nothing new compiled the second time
    assert int(second[3]) >= 50  # the validate path's dataclasses came from the file
    files = sorted(p.name for p in cache_dir.iterdir())
    assert startcache._code_file() in files and any(f.startswith("data-") for f in files)
    assert oct(cache_dir.stat().st_mode & 0o777) == "0o700"
    assert {oct(p.stat().st_mode & 0o777) for p in cache_dir.iterdir()} == {"0o600"}


def test_a_damaged_code_cache_is_ignored_and_rebuilt(cache_dir: Path) -> None:
    """A fresh-user review flipped 3 bits in the dataclass-code file: marshal raised
    SystemError and every command failed with a traceback, for good. Now the file's digest
    does not match, the code is compiled as without a cache, and the file is rewritten."""
    cmd = [sys.executable, "-m", "mldiag_provision", "validate",
           "recipes/tpu-v4-2x2x4-autopilot.yaml"]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    code_file = cache_dir / startcache._code_file()
    good = code_file.read_bytes()
    for position in (20, len(good) // 2, len(good) - 3):  # header, middle, end
        damaged = bytearray(good)
        damaged[position] ^= 0x21
        code_file.write_bytes(bytes(damaged))
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                              env=os.environ.copy())
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            first.returncode, first.stdout, first.stderr)
        assert code_file.read_bytes() != bytes(damaged)  # rebuilt at exit
    code_file.write_bytes(good[: len(good) // 3])  # truncated
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    assert proc.returncode == first.returncode and "Traceback" not in proc.stderr


def test_a_relative_xdg_cache_home_is_ignored(cache_dir: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relcache")  # the XDG spec: ignored, not ./relcache
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert startcache.directory() == str(tmp_path / "home" / ".cache" / "mldiag-provision"
                                         / "startup")


def test_off_switch_writes_nothing(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_CACHE", "0")
    assert startcache.directory() is None
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "validate",
                           "recipes/tpu-v4-2x2x4-autopilot.yaml"], cwd=ROOT,
                          capture_output=True, text=True, env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr
    assert not cache_dir.exists()


def _counting(calls: list[bytes]) -> Callable[[bytes], object]:
    """A YAML parser that records each text it is given in ``calls``."""
    def parse(raw: bytes) -> object:
        calls.append(raw)
        return yaml.safe_load(raw)

    return parse


def _data_file(cache_dir: Path) -> Path:
    (found,) = [p for p in cache_dir.iterdir() if p.name.startswith("data-")]
    return found


def test_load_yaml_keeps_the_data_by_content(cache_dir: Path, tmp_path: Path) -> None:
    calls: list[bytes] = []
    parse = _counting(calls)

    src = tmp_path / "facts.yaml"
    src.write_text("a: 1\nb: [x, 2.5, null, true]\n")
    assert startcache.load_yaml(src, parse, "test") == {"a": 1, "b": ["x", 2.5, None, True]}
    assert startcache.load_yaml(src, parse, "test") == {"a": 1, "b": ["x", 2.5, None, True]}
    assert len(calls) == 1  # the second came from the cache
    src.write_text("a: 2\n")  # a changed file is a new entry, never a stale answer
    assert startcache.load_yaml(src, parse, "test") == {"a": 2}
    assert startcache.load_yaml(src, parse, "other parser") == {"a": 2}
    assert len(calls) == 3


def test_damaged_or_untrusted_entries_are_parsed_again(cache_dir: Path, tmp_path: Path) -> None:
    calls: list[bytes] = []
    parse = _counting(calls)

    src = tmp_path / "facts.yaml"
    src.write_text("a: 1\n")
    startcache.load_yaml(src, parse, "t")
    entry = _data_file(cache_dir)
    entry.write_bytes(b"\xff\x00garbage")
    assert startcache.load_yaml(src, parse, "t") == {"a": 1}  # damaged: parsed again
    assert marshal.loads(startcache.read(entry.name) or b"") == {"a": 1}  # and rewritten
    good = entry.read_bytes()
    flipped = bytearray(good)
    flipped[-2] ^= 0x04  # one bit of the data: the digest no longer matches
    entry.write_bytes(bytes(flipped))
    assert startcache.read(entry.name) is None
    assert startcache.load_yaml(src, parse, "t") == {"a": 1}
    # a file others may write is not trusted (someone could have put other data there)
    entry.write_bytes(good)
    entry.chmod(0o666)
    assert startcache.load_yaml(src, parse, "t") == {"a": 1}
    assert marshal.loads(startcache.read(entry.name) or b"") == {"a": 1}  # replaced
    assert entry.stat().st_mode & 0o777 == 0o600
    assert startcache.read(entry.name) is not None
    cache_dir.chmod(0o777)
    assert startcache.read(entry.name) is None  # nor a directory others may write
    before = entry.read_bytes()
    startcache.write(entry.name, b"other")  # and nothing is written there (never read back)
    assert entry.read_bytes() == before
    cache_dir.chmod(0o700)
    if os.getuid() == 0:  # only root can give a file away
        os.chown(entry, 12345, 12345)
        assert startcache.read(entry.name) is None


def test_data_marshal_refuses_is_returned_and_not_kept(cache_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "dated.yaml"
    src.write_text("verified: 2026-11-30\n")
    data = startcache.load_yaml(src, yaml.safe_load, "t")
    assert data == {"verified": datetime.date(2026, 11, 30)}
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_bytecode_settings_are_followed(cache_dir: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """As Python's bytecode: nothing written under -B / PYTHONDONTWRITEBYTECODE (what is
    there is read); under PYTHONPYCACHEPREFIX when that is set."""
    src = tmp_path / "facts.yaml"
    src.write_text("a: 1\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert startcache.load_yaml(src, yaml.safe_load, "t") == {"a": 1}
    assert not cache_dir.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    startcache.load_yaml(src, yaml.safe_load, "t")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert startcache.load_yaml(src, lambda raw: pytest.fail("parsed"), "t") == {"a": 1}
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    assert startcache.directory() == str(tmp_path / "prefix" / "mldiag-provision-startup")


def test_an_unwritable_cache_never_fails_a_run(cache_dir: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    src = tmp_path / "facts.yaml"
    src.write_text("a: 1\n")
    assert startcache.load_yaml(src, yaml.safe_load, "t") == {"a": 1}
    startcache.write("x", b"data")  # ignored
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "validate",
                           "recipes/tpu-v4-2x2x4-autopilot.yaml"], cwd=ROOT,
                          capture_output=True, text=True, env=os.environ.copy())
    assert proc.returncode == 0 and not proc.stderr, proc.stderr


def test_validate_prints_the_same_with_and_without_the_cache(cache_dir: Path) -> None:
    recipes = sorted(str(p) for p in (ROOT / "recipes").glob("*.yaml"))
    outs = []
    for env in ({"MLDIAG_CACHE": "0"}, {}, {}):  # off; filling; filled
        proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "validate",
                               "--output", "json", *recipes], cwd=ROOT, capture_output=True,
                              text=True, env={**os.environ, **env})
        outs.append((proc.returncode, proc.stdout, proc.stderr))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0][0] == 0
