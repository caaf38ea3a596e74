"""A mistyped option gets the closest option of that command as a suggestion, as a
mistyped command does; the exit code stays 2 (usage) and ``--help`` is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag_provision.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
RECIPE = str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")


@pytest.mark.parametrize("argv,typo,option", [
    (["validate", RECIPE, "--strcit"], "--strcit", "--strict"),
    (["apply", RECIPE, "-o", "x", "--sandox"], "--sandox", "--sandbox"),
    (["plan", RECIPE, "-o", "x", "--ofline"], "--ofline", "--offline"),
    (["fleet", "plan", RECIPE, "--ouptut=json"], "--ouptut=json", "--output"),
    (["cost", RECIPE, "--live-timout", "3"], "--live-timout", "--live-timeout"),
])
def test_option_typo_suggests_the_closest_option(argv: list[str], typo: str, option: str,
                                                 capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    command = " ".join(a for a in argv[:2] if not a.startswith(("-", "/")))
    assert f"mldiag-provision {command}: error: unrecognized arguments: {typo}" in err, err
    assert err.rstrip().endswith(f"(did you mean '{option}'?)"), err


def test_an_option_like_no_other_gets_no_suggestion(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", RECIPE, "--zzzzzz"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith("unrecognized arguments: --zzzzzz"), err
    assert "did you mean" not in err


def test_suggestion_comes_from_that_commands_options(capsys) -> None:
    # --strict is validate's; apply has no --strict, so `--stric` there suggests none of it
    with pytest.raises(SystemExit):
        main(["apply", RECIPE, "-o", "x", "--stric"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --stric" in err and "'--strict'" not in err, err
