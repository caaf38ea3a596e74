"""Helpers of the Pulumi tests: recipes with the engine overridden, rendering both engines'
programs, and running a Pulumi program under the mock runtime (tests/pulumi/mockrun.py)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from stack_support import read_tree

MOCKRUN = Path(__file__).resolve().parent / "mockrun.py"


def with_engine(recipe: Path, dest: Path, engine: str, *, local_backend: bool = False) -> Path:
    """A copy of ``recipe`` with ``spec.engine.name`` = ``engine`` (the backend kept unless
    ``local_backend``)."""
    doc = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    eng = doc["spec"].setdefault("engine", {})
    eng["name"] = engine
    if local_backend:
        eng["backend"] = {"type": "local"}
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return dest


def render(cli: Any, recipe: Path, out: Path) -> dict[str, bytes]:
    code, stdout, stderr = cli("--no-color", "render", str(recipe), "-o", str(out))
    assert code == 0, f"render {recipe.name} exited {code}\n{stdout}\n{stderr}"
    return read_tree(out)


_RUNS: dict[str, str] = {}


def mock_run(program_dir: Path) -> dict[str, Any]:
    """``{"resources": [...], "outputs": {...}}`` of the program in ``program_dir`` under
    Pulumi's mock runtime (in a fresh interpreter: the SDK's runtime state is global). The
    same program text runs once per test process (a fresh copy of the result each call)."""
    key = hashlib.sha256((program_dir / "__main__.py").read_bytes()).hexdigest()
    if key not in _RUNS:
        _RUNS[key] = _run(program_dir)
    return json.loads(_RUNS[key])


def _run(program_dir: Path) -> str:
    proc = subprocess.run([sys.executable, str(MOCKRUN), str(program_dir)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{program_dir}: the program failed under the mocks\n" + (
        proc.stderr[-4000:])
    return proc.stdout
