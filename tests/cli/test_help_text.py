"""Every command's ``--help`` (issue 31): each subcommand, nested ones included, has a
description, and every positional and option has a help string; no description shows raw
reStructuredText (````--strict````, ``:mod:`...```) from the module docstrings it is made of."""

from __future__ import annotations

import argparse
import re

import pytest

from mldiag_provision.cli._main import build_parser

RST = re.compile(r"``|:[a-z]+:`")


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
              ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(((*path, name), sub))
                found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(build_parser(full=True))


def test_the_walk_finds_every_command() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"validate", "render", "apply", "verify", "policy", "fleet plan",
            "fleet atlantis"} <= names
    assert len(names) >= 20


@pytest.mark.parametrize("path,parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_command_has_a_description_and_every_argument_a_help(
        path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
    assert parser.description and parser.description.strip(), f"{' '.join(path)}: no description"
    assert not RST.search(parser.description), parser.description
    missing = [a.option_strings[0] if a.option_strings else a.dest
               for a in parser._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
               and a.help is None]
    assert missing == [], f"{' '.join(path)}: no help for {missing}"
    for a in parser._actions:
        assert a.help is None or not RST.search(a.help), a.help


def test_help_has_a_plain_description_and_explains_the_smoke_flags(
        capsys: pytest.CaptureFixture[str]) -> None:
    from mldiag_provision.cli._main import main

    for argv in (["verify", "--help"], ["apply", "--help"], ["policy", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "``" not in text, text
        rest = text.partition("\n\n")[2]  # after the usage
        assert rest.strip() and not rest.startswith("positional arguments"), text
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--smoke-image IMAGE with --smoke: the container image" in text
    assert "RECIPE the recipe file" in text


@pytest.mark.parametrize("argv,prog", [
    (["validate", "recipes/tpu7x-2x2x2-autopilot.yaml", "--bogus"], "mldiag-provision validate"),
    (["render", "R", "-o", "out", "--bogus"], "mldiag-provision render"),
    (["policy", "R", "--bogus", "x"], "mldiag-provision policy"),
    (["fleet", "plan", "--bogus"], "mldiag-provision fleet plan"),
])
def test_unknown_flag_after_a_command_prints_that_commands_usage(cli, argv: list[str],
                                                                 prog: str) -> None:
    """Issue 31: ``validate R --bogus`` printed the top-level usage."""
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert err.startswith(f"usage: {prog} "), err
    assert f"{prog}: error: unrecognized arguments: --bogus" in err


def test_unknown_flag_without_a_command_prints_the_top_level_usage(cli) -> None:
    code, _, err = cli("--bogus")
    assert code == 2
    assert err.startswith("usage: mldiag-provision [-h]")
    assert "mldiag-provision: error: unrecognized arguments: --bogus" in err
