"""Every cache the tool reads back follows one rule (mldiag_provision.ondisk, issue 28): a
planted file, or one with a flipped bit, changes neither the rendered bytes nor what runs.

The reproductions of issue 28: one flipped bit in a compiled template made ``render`` write
different Terraform (7 of 36 tries), and Jinja's bytecode cache read its header with
``pickle``, so a planted file ran code in the next ``render``. Each planted file here would
write a marker file if it were unpickled or executed; a control shows that the same plant,
made trustworthy, does run (so the test cannot pass by never reaching the cache).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
from jinja2.bccache import Bucket, bc_magic

from mldiag_provision import ondisk, startcache
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.policy import policy_data
from mldiag_provision.render import stack

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "tpu-v5e-2x4-single-host-autopilot.yaml"


def _render() -> dict[str, bytes]:
    stack.template_env.cache_clear()  # a fresh process: nothing compiled in memory
    catalog = load_catalog()
    res = check_file(str(RECIPE), catalog)
    assert res.parsed.recipe is not None, res.report.problems
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    return stack.render_stack(plan, policy=policy_data(res.parsed.recipe))


@pytest.fixture
def jinja_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("MLDIAG_CACHE", raising=False)
    yield tmp_path / "prefix" / "mldiag-provision-jinja"
    stack.template_env.cache_clear()


class _Plant:
    """Unpickling it touches ``marker`` (what Jinja's pickle header read would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def _marker_code(marker: Path):  # type: ignore[no-untyped-def]
    return compile(f"open({str(marker)!r}, 'w').write('ran')\n", "<planted>", "exec")


def test_flipped_bits_in_compiled_templates_change_nothing(jinja_dir: Path) -> None:
    compiled = _render()
    files = sorted(jinja_dir.glob("*.jinja-code"))
    assert len(files) >= 5, files
    good = {p: p.read_bytes() for p in files}
    rng = random.Random(28)
    for _ in range(6):  # every file damaged at once, at a new bit each round
        for p, data in good.items():
            flipped = bytearray(data)
            bit = rng.randrange(len(data) * 8)
            flipped[bit // 8] ^= 1 << (bit % 8)
            p.write_bytes(bytes(flipped))
        assert _render() == compiled
        # and each damaged file was replaced by a good one
        assert {p: p.read_bytes() for p in files} == good


def test_a_planted_pickle_is_never_unpickled(jinja_dir: Path, tmp_path: Path) -> None:
    compiled = _render()
    marker = tmp_path / "unpickled"
    payload = bc_magic + pickle.dumps(_Plant(marker), 2)
    for p in sorted(jinja_dir.glob("*.jinja-code")):
        key = p.name.removesuffix(".jinja-code")
        (jinja_dir / f"{key}.jinja").write_bytes(payload)  # Jinja's own file name and format
        p.write_bytes(ondisk.seal(payload))  # ours, with a valid digest even
    assert _render() == compiled
    assert not marker.exists()
    # control: Jinja's own bytecode cache, which the tool used before, runs the plant
    Bucket(jinja2.Environment(), "key", "sum").bytecode_from_string(payload)
    assert marker.exists()


def _plant_code(jinja_dir: Path, marker: Path) -> None:
    """Replace every kept template by sealed code that writes ``marker``, headed as the real
    one is (so only the trust checks stand between it and ``render``)."""
    for p in sorted(jinja_dir.glob("*.jinja-code")):
        payload = ondisk.unseal(p.read_bytes())
        assert payload is not None
        header = payload[:payload.index(b"\n", len(bc_magic)) + 1]
        p.write_bytes(ondisk.seal(header + marshal.dumps(_marker_code(marker))))


@pytest.mark.parametrize("how", ["others may write the folder", "group may write the file",
                                 "another user owns the file"])
def test_planted_code_in_an_untrusted_template_cache_never_runs(
        jinja_dir: Path, tmp_path: Path, how: str) -> None:
    compiled = _render()
    marker = tmp_path / "ran"
    _plant_code(jinja_dir, marker)
    if how == "others may write the folder":
        jinja_dir.chmod(0o777)
    elif how == "group may write the file":
        for p in jinja_dir.glob("*.jinja-code"):
            p.chmod(0o620)
    else:
        if os.getuid() != 0:
            pytest.skip("only root can give a file to another user")
        for p in jinja_dir.glob("*.jinja-code"):
            os.chown(p, 12345, 12345)
    assert _render() == compiled
    assert not marker.exists()


def test_control_trusted_planted_code_is_what_the_cache_would_run(jinja_dir: Path,
                                                                    tmp_path: Path) -> None:
    """The plant above reaches the cache: left trustworthy, it runs (this is the same trust
    Python gives the user's own ``__pycache__``)."""
    _render()
    marker = tmp_path / "ran"
    _plant_code(jinja_dir, marker)
    with contextlib.suppress(Exception):  # the planted module defines no template
        _render()
    assert marker.exists()


def _plant_dataclass_code(cache: Path, marker: Path) -> None:
    code_file = cache / startcache._code_file()
    payload = ondisk.unseal(code_file.read_bytes())
    assert payload is not None
    codes = marshal.loads(payload)
    planted = {text: _marker_code(marker) for text in codes}
    code_file.write_bytes(ondisk.seal(marshal.dumps(planted)))


@pytest.mark.parametrize("trusted", [False, True])
def test_planted_dataclass_code_runs_only_from_a_trusted_startup_cache(
        tmp_path: Path, trusted: bool) -> None:
    """The start-up cache (compiled dataclass methods) by the same rule, through the CLI.
    The code shipped in the package (prebuilt_code*.py, issue 32) is turned off, so the
    runtime cache holds the methods, as it does for a dataclass the prebuilt code lacks."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "MLDIAG_PREBUILT": "0"}
    env.pop("MLDIAG_CACHE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "mldiag_provision", "validate", str(RECIPE)]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert first.returncode == 0, first.stderr
    cache = tmp_path / "xdg" / "mldiag-provision" / "startup"
    marker = tmp_path / "ran"
    _plant_dataclass_code(cache, marker)
    if not trusted:
        cache.chmod(0o770)
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    if trusted:  # control: the plant reaches what runs
        assert marker.exists()
    else:
        assert not marker.exists()
        assert (again.returncode, again.stdout) == (0, first.stdout), again.stderr


def test_one_implementation_for_every_cache() -> None:
    """Every cache the tool reads back (the start-up cache, the template cache, the policy
    gate's answers, its HCL parses) reads and writes through ondisk.read_sealed /
    write_sealed (no copy of the checks), and the template cache is not Jinja's pickle-based
    one."""
    import inspect

    from mldiag_provision import hclparse
    from mldiag_provision.policy import cache as gate_cache
    from mldiag_provision.render import template_cache

    assert not issubclass(template_cache.TemplateCache, jinja2.FileSystemBytecodeCache)
    for module in (startcache, template_cache, gate_cache, hclparse):
        source = inspect.getsource(module)
        assert "ondisk.read_sealed(" in source and "ondisk.write_sealed(" in source, module
        assert "import pickle" not in source and "pickle.load" not in source, module
        assert "st_uid" not in source and "0o022" not in source, module
