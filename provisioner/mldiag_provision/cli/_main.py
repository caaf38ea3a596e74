"""The full command line behind :mod:`mldiag_provision.cli.app` (which answers
``--version`` itself, before importing this module): argument parsing, dispatch to the
command's module and the presentation of errors only. Every command lives in
``cli/commands/<verb>.py`` (:mod:`mldiag_provision.cli.commands` says how to add one).

Exit codes (stable, see :class:`~mldiag_provision.errors.ExitCode`):
  0 ok · 1 invalid input · 2 usage error · 3 refused (conflict) · 70 internal error.
Tracebacks are shown only with ``--debug``. Heavy imports (Jinja) stay off the validate path,
and only the command being run has its module imported (the others' parsers are one-line
stubs from :data:`~mldiag_provision.cli.commands.SUMMARIES`: the top-level help is the same).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from mldiag_provision import __version__
from mldiag_provision.console import Console
from mldiag_provision.errors import ExitCode, MldiagError

EPILOG = """exit codes: 0 ok, 1 invalid input, 2 usage error, 3 refused (e.g. edited files),
4 engine (terraform, cluster) failed, 70 internal error; plan --detailed-exitcode: 0 no
changes, 2 changes, 1 any error. Docs: docs/ (README.md links them); recipe schema:
mldiag-provision schema."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage and exits 2 = USAGE
        self.print_usage(sys.stderr)
        self.exit(int(ExitCode.USAGE), f"{self.prog}: error: {message}{_did_you_mean(message)}\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """As argparse's, but an unknown option after a command is refused with that
        command's usage (``validate R --bogus``), not the top-level one (exit 2)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = _innermost(self, parsed)
            parser.error(f"unrecognized arguments: {' '.join(extras)}"
                         f"{_option_did_you_mean(parser, extras)}")
        return parsed

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's formatter, given the width it would work out itself: argparse imports
        :mod:`shutil` for it on every start (issue 32: ~7 M instructions)."""
        # typeshed's formatter class takes prog only; every HelpFormatter takes width too
        return self.formatter_class(prog=self.prog,
                                    width=_terminal_columns() - 2)  # type: ignore[call-arg]


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, as it is worked out there: ``$COLUMNS`` when a
    positive number, else the terminal's width on standard output, else 80."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


def _did_you_mean(message: str) -> str:
    """For argparse's "invalid choice: 'aply' (choose from 'a', 'b')": the closest choice
    (Python 3.11's argparse names none), as " (did you mean 'apply'?)"; else ""."""
    import difflib
    import re

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if not found:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2))
    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _option_did_you_mean(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """For the first unknown option in ``extras`` (``--strcit``, ``--sandox=x``): the
    closest long option of ``parser`` (the command's own, as difflib ranks them, the same
    cutoff as for commands), as " (did you mean '--strict'?)"; else ""."""
    import difflib

    known = [o for o in parser._option_string_actions if o.startswith("--")]
    for extra in extras:
        if not extra.startswith("-") or extra == "-":
            continue
        typed = extra.split("=", 1)[0]
        close = difflib.get_close_matches(typed, known, n=1, cutoff=0.6)
        if close:
            return f" (did you mean '{close[0]}'?)"
    return ""


def _innermost(parser: argparse.ArgumentParser,
               parsed: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``parsed`` names, e.g. ``fleet plan``'s."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(parsed, subs[0].dest, None) if subs else None
        if not subs or name not in subs[0].choices:
            return parser
        parser = subs[0].choices[name]


def build_parser(command: str | None = None, *, full: bool = True) -> argparse.ArgumentParser:
    """The argument parser. ``full``: every command module's own parser (imports them all);
    otherwise only ``command``'s module is imported and the other module commands are stubs
    that carry just their one-line help (enough for the top-level ``--help`` and for the
    "invalid choice" error, which list the same commands in the same order)."""
    p = _Parser(prog="mldiag-provision", epilog=EPILOG,
                description="Recipe -> preflight -> Terraform stack for Google Cloud ML "
                            "Diagnostics on TPU clusters.",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"mldiag-provision {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--no-color", action="store_true", help="never colour the output")
    # the same flags are accepted after the command name too
    common = _Parser(add_help=False)  # its formatter needs no shutil either
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    common.add_argument("--no-color", action="store_true", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add: Callable[..., argparse.ArgumentParser] = sub.add_parser

    def add_parser(name: str, **kw: Any) -> argparse.ArgumentParser:
        return _add(name, parents=[common, *kw.pop("parents", [])], **kw)

    sub.add_parser = add_parser  # type: ignore[method-assign,assignment]

    from mldiag_provision.cli.commands import MODULES, SUMMARIES

    for name in MODULES:
        if full or name == command:
            _command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=SUMMARIES[name])
    return p


def _command_module(name: str):  # type: ignore[no-untyped-def]
    import importlib

    return importlib.import_module(f"mldiag_provision.cli.commands.{name}")


def command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first argument that is not an option (the top-level
    options, ``--debug`` and ``--no-color``, take no value); None when there is none."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv_list = list(sys.argv[1:] if argv is None else argv)
    # Under --detailed-exitcode, 2 means "changes" (drift): every error exits 1 instead, as
    # with Terraform's -detailed-exitcode, so a typo in a scheduled drift job is not drift.
    detailed = any(len(a) >= 5 and "--detailed-exitcode".startswith(a.split("=")[0])
                   for a in argv_list)  # argparse accepts unique prefixes (--detailed)
    command = command_name(argv_list)
    parser = build_parser(command, full=False)
    try:
        args = parser.parse_args(argv_list)
    except SystemExit as exc:
        if detailed and exc.code == int(ExitCode.USAGE):
            return int(ExitCode.INVALID)
        raise
    if not args.command:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    run = _command_module(args.command).run
    if hasattr(args, "sandbox"):  # plan/apply/verify/output/destroy: --sandbox or MLDIAG_SANDBOX
        from mldiag_provision.cli import sandboxed

        try:
            on = sandboxed.requested(args)
        except MldiagError as exc:  # MLDIAG_SANDBOX set to neither on nor off
            return _run(args, _raising(exc), detailed)
        if on:
            restore = sandboxed.mark_streams(args)
            try:
                return _run(args, sandboxed.wrap(run), detailed)
            finally:
                restore()
        return _run(args, sandboxed.guarded(run), detailed)
    return _run(args, run, detailed)


def _raising(exc: MldiagError) -> Callable[[argparse.Namespace, Console], int]:
    """A command that only raises ``exc``: an error found before the command could start,
    reported the way every command's errors are."""

    def run(_args: argparse.Namespace, _out: Console) -> int:
        raise exc

    return run


def _sarif_error(exc: MldiagError) -> str:
    """The SARIF 2.1.0 log of a run that did not complete: one invocation that says so
    (its exit code, the error as a notification) and the error's problems (an invalid
    recipe's findings, with file and line) as the results."""
    from mldiag_provision.sarif import sarif_document

    log = sarif_document([], exc.problems)
    log["runs"][0]["invocations"] = [{
        "executionSuccessful": False, "exitCode": int(exc.exit_code),
        "toolExecutionNotifications": [{"level": "error", "message": {"text": exc.message}}]}]
    return json.dumps(log, indent=2)


def _run(args: argparse.Namespace, run: Callable[[argparse.Namespace, Console], int],
         detailed: bool) -> int:
    """Run one parsed command; errors become their exit codes (see the module docstring)."""
    out = Console(sys.stdout, color=False if args.no_color else None)
    err = Console(sys.stderr, color=False if args.no_color else None)
    try:
        try:
            return run(args, out)
        except OSError as exc:  # the file system refused (full, read-only ...): not a bug
            from mldiag_provision.ondisk import environment_error

            converted = environment_error(exc)
            if converted is None or args.debug:
                raise
            raise converted from exc
    except MldiagError as exc:
        if getattr(args, "output", "text") == "sarif":
            out.print(_sarif_error(exc))
        elif getattr(args, "output", "text") == "json":
            out.print(json.dumps({"ok": False, "error": {
                "message": exc.message, "hint": exc.hint, "exitCode": int(exc.exit_code),
                "problems": [p.to_dict() for p in exc.problems]}}, indent=2))
        err.print(f"{err.style('error', 'red', 'bold')}: {exc.message}")
        if exc.hint:
            err.print(f"  hint: {exc.hint}")
        if detailed:  # 2 is "changes": every error is 1, as with terraform
            return int(ExitCode.INVALID)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        from mldiag_provision.errors import Terminated

        said, code = (("terminated (SIGTERM)", 143) if isinstance(exc, Terminated)
                      else ("interrupted", 130))
        if getattr(args, "output", "text") == "json":  # a pipeline still gets its document
            out.print(json.dumps({"ok": False, "error": {
                "message": said, "hint": None, "exitCode": code, "problems": []}}, indent=2))
        if not getattr(exc, "reported", False):  # apply/destroy said it in full already
            err.print(said)
        return code
    except BrokenPipeError:
        # the reader went away (| head): say nothing more, exit like a SIGPIPE'd program
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug: say so, hide the traceback unless --debug
        if args.debug:
            raise
        err.print(f"{err.style('internal error', 'red', 'bold')}: {type(exc).__name__}: {exc}")
        err.print("  this is a bug in mldiag-provision; re-run with --debug for the traceback")
        return int(ExitCode.INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
