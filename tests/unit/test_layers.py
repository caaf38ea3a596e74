"""The package's layering (issue 26): the import-linter contract in pyproject.toml
(``[tool.importlinter]``) holds for the package, and breaks on an upward import planted in a
copy of it, whether the import sits at a module's top, inside a function or under
``TYPE_CHECKING``.

``lint-imports`` runs in a child process on a copy of the package under ``tmp_path``, so the
checkout is never changed and the child sees only the copy (``PYTHONPATH`` first).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "provisioner" / "mldiag_provision"
CONTRACT = "mldiag_provision layers (cli on top, leaf utilities at the bottom)"
POLICY_CONTRACT = "the policy gate imports no engine"

_RUN = ("import sys\nfrom importlinter.cli import lint_imports_command\n"
        "sys.exit(lint_imports_command())")


def _lint(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the package found under ``src`` (exit 0: every contract kept)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-c", _RUN, "--config", str(config), "--no-cache"],
                          cwd=config.parent, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package (``<dir>/src/mldiag_provision``) and of pyproject.toml."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(PACKAGE, root / "src" / "mldiag_provision",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def _plant(copy: Path, module: str, text: str) -> Path:
    """A fresh copy of ``copy`` with ``text`` appended to ``module`` (a path under the
    package); returns the new copy's root."""
    root = copy.parent / f"{copy.name}-{module.replace('/', '-')}-{abs(hash(text))}"
    shutil.copytree(copy, root)
    target = root / "src" / "mldiag_provision" / module
    target.write_text(target.read_text(encoding="utf-8") + text, encoding="utf-8")
    return root


def test_the_contract_declares_every_package_of_the_package() -> None:
    """Every package and top-level module of mldiag_provision sits in a layer, so a new one
    has to be placed deliberately (``__init__``, ``__main__`` and data folders aside)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    layered = {name.strip() for layer in contract["layers"]
               for name in layer.replace(":", "|").split("|")}
    present = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert present - {"__init__", "__main__"} == layered
    # each exception carries its reason in a comment right above it: an ignored import, or a
    # layer whose packages may import each other (``a : b``)
    lines = (REPO / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    exceptions = [*contract.get("ignore_imports", ()),
                  *(layer for layer in contract["layers"] if ":" in layer)]
    assert exceptions, "the contract lists no exception: drop this check"
    for exception in exceptions:
        [at] = [i for i, line in enumerate(lines) if line.strip() == f'"{exception}",']
        assert lines[at - 1].strip().startswith("#"), exception


def test_the_package_keeps_the_layers(copy: Path) -> None:
    proc = _lint(copy / "src", copy / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{CONTRACT} KEPT" in proc.stdout
    assert f"{POLICY_CONTRACT} KEPT" in proc.stdout


def test_the_policy_gate_running_an_engine_breaks_its_contract(copy: Path) -> None:
    """policy sits above engines in the layers, so only the forbidden contract stops the
    gate from running an engine's tool itself (as it ran ``terraform show`` before)."""
    root = _plant(copy, "policy/inputs.py", "\n\ndef _planted() -> None:\n"
                  "    from mldiag_provision.engines.terraform import PLAN_FILE  # noqa\n")
    proc = _lint(root / "src", root / "pyproject.toml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{POLICY_CONTRACT} BROKEN" in proc.stdout and f"{CONTRACT} KEPT" in proc.stdout
    assert "mldiag_provision.policy.inputs -> mldiag_provision.engines.terraform" in proc.stdout


@pytest.mark.parametrize(("module", "planted", "arrow"), [
    # a function-level import: the kind that hid the old knot
    ("catalog/tpu.py",
     "\n\ndef _planted() -> None:\n    from mldiag_provision.render import stack  # noqa\n",
     "mldiag_provision.catalog.tpu -> mldiag_provision.render.stack"),
    # an import under TYPE_CHECKING
    ("recipe/model.py",
     "\nimport typing\nif typing.TYPE_CHECKING:\n    from mldiag_provision import orchestrators\n",
     "mldiag_provision.recipe.model -> mldiag_provision.orchestrators"),
    # a top-level import, one layer up
    ("engines/__init__.py", "\nfrom mldiag_provision.render import k8s  # noqa\n",
     "mldiag_provision.engines -> mldiag_provision.render.k8s"),
])
def test_an_upward_import_breaks_the_contract(copy: Path, module: str, planted: str,
                                              arrow: str) -> None:
    root = _plant(copy, module, planted)
    proc = _lint(root / "src", root / "pyproject.toml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{CONTRACT} BROKEN" in proc.stdout
    assert arrow in proc.stdout
