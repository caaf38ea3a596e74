"""Start-up (issue 16): ``--version`` answers before the parser exists, and a command imports
only its own module; the outputs stay what the full parser prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mldiag_provision import __version__
from mldiag_provision.cli import _main
from mldiag_provision.cli.app import asks_version
from mldiag_provision.cli.commands import MODULES, SUMMARIES

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(*argv: str) -> set[str]:
    """The mldiag_provision modules (and argparse) a fresh process has imported after
    running the CLI with ``argv``."""
    code = ("import sys\nfrom mldiag_provision.cli.app import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "sys.stdout.flush()\n"
            "print('\\nMODULES', ' '.join(m for m in sys.modules "
            "if m.startswith('mldiag_provision') or m == 'argparse'))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         cwd=ROOT, check=False).stdout
    return set(out.rsplit("MODULES", 1)[1].split())


def test_version_imports_nothing_else() -> None:
    mods = _modules_after("--version")
    assert "argparse" not in mods
    assert mods <= {"mldiag_provision", "mldiag_provision.cli", "mldiag_provision.cli.app"}


def test_help_imports_no_command_module_and_a_command_only_its_own() -> None:
    for argv, expected in (
            (["--help"], set()),
            (["validate", str(ROOT / "recipes/tpu-v4-2x2x4-autopilot.yaml")], {"validate"}),
            (["lint", "--help"], {"lint"}), (["schema", "--help"], {"schema"})):
        mods = _modules_after(*argv)
        loaded = {m for m in MODULES if f"mldiag_provision.cli.commands.{m}" in mods}
        assert loaded == expected, (argv, loaded)


def test_stub_parser_prints_the_full_parsers_help() -> None:
    assert (_main.build_parser(full=False).format_help()
            == _main.build_parser(full=True).format_help())
    for name in MODULES:  # each command's own help too, and its one-line summary
        full = _main.build_parser(full=True)
        lean = _main.build_parser(name, full=False)
        sub_full = full._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
        sub_lean = lean._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
        assert sub_full.format_help() == sub_lean.format_help()
    assert set(SUMMARIES) == set(MODULES)


@pytest.mark.parametrize(("argv", "expected"), [
    (["--version"], True), (["--vers"], True), (["--v"], True), (["--debug", "--version"], True),
    (["--no-color", "--debug", "--ver"], True), (["--"], False), (["-v"], False),
    (["validate", "--version"], False), (["--help", "--version"], False), ([], False),
    (["--version=1"], False),
])
def test_asks_version_matches_argparse(argv: list[str], expected: bool) -> None:
    assert asks_version(argv) is expected
    if expected:  # argparse agrees: it prints the same line and exits 0
        with pytest.raises(SystemExit) as exc:
            _main.build_parser(full=True).parse_args(argv)
        assert exc.value.code == 0


def test_version_output(capsys: pytest.CaptureFixture[str]) -> None:
    from mldiag_provision.cli.app import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"mldiag-provision {__version__}\n"


def test_validate_of_every_example_imports_no_pydantic_model() -> None:
    """The recipe is checked with the committed core schema (recipe/validator.py); the
    pydantic models (recipe/model.py, ~0.2 s to import and build) stay off the validate
    path, the queued recipes' Kueue defaults included (issue 16)."""
    mods = _modules_after("validate", *map(str, sorted((ROOT / "recipes").glob("*.yaml"))))
    assert "mldiag_provision.recipe.validator" in mods  # the check ran
    assert "mldiag_provision.recipe.model" not in mods


def test_validate_imports_the_wired_step_only_for_a_workload_env(tmp_path: Path) -> None:
    """The renderer wires what it writes itself; only a workload's ``env`` can miswire it,
    so preflight imports and runs the *wired* step (cluster/wiring.py) only then (issue 25:
    validate's start no slower)."""
    plain = ROOT / "recipes/tpu-v6e-4x4-multislice-standard-spot.yaml"
    assert "mldiag_provision.cluster.wiring" not in _modules_after("validate", str(plain))
    text = plain.read_text(encoding="utf-8")
    marker = "      args: [MaxText/configs/base.yml, dcn_data_parallelism=2]\n"
    assert marker in text
    with_env = tmp_path / "env.yaml"
    with_env.write_text(text.replace(marker, marker + "      env: {JAX_PLATFORMS: tpu}\n"),
                        encoding="utf-8")
    assert "mldiag_provision.cluster.wiring" in _modules_after("validate", str(with_env))
