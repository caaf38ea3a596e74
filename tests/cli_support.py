"""In-process CLI runner shared by tests (a plain module, not a conftest, so that test files
can import it by one unambiguous name: tests/fuzz has its own conftest.py)."""

from __future__ import annotations

import pytest

from mldiag_provision.cli.app import main as cli_main

CliResult = tuple[int, str, str]


def run_cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> CliResult:
    """Run ``mldiag-provision argv`` in-process: (exit code, stdout, stderr).

    argparse exits with SystemExit for usage errors and --help; that is mapped to its code.
    """
    capsys.readouterr()  # drop anything printed before
    try:
        code = cli_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    out, err = capsys.readouterr()
    return int(code), out, err
