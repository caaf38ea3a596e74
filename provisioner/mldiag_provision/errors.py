"""Problems, errors and exit codes shared by every stage.

A :class:`Problem` is one finding about the user's input (a recipe or a manifest): where it
is (file, line, column, field path), what is wrong, what is allowed and how to fix it.
Stages collect problems and never raise for bad input; they raise :class:`MldiagError`
subclasses only when they cannot go on at all. The CLI maps each error class to a stable
exit code (see :class:`ExitCode`), and never shows a traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a CI job's timeout, ``docker stop``) while a tool such as terraform
    runs: handled as Ctrl-C is (the child is told to stop gracefully, its state saved), but
    reported as what it was, with exit code 143 (128 + SIGTERM) instead of Ctrl-C's 130."""


class ExitCode(enum.IntEnum):
    """Stable, documented exit codes of every ``mldiag-provision`` command."""

    OK = 0
    INVALID = 1  # the input (recipe, manifest) has at least one error-level problem
    USAGE = 2  # bad command line: unknown flag, missing argument, file not found
    CONFLICT = 3  # refused to act: e.g. render would overwrite a file a person edited
    ENGINE = 4  # an external engine (terraform) failed; the message says why, with its log
    INTERNAL = 70  # a bug in mldiag-provision (EX_SOFTWARE); please report it


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Problem:
    """One finding about the user's input.

    Attributes:
      rule: stable rule id, e.g. ``"tpu-topology"``; tests and suppressions key on it.
      message: what is wrong, naming the bad value.
      path: dotted field path in the user's document, e.g. ``spec.slices[0].topology``.
      value: the offending value as the user wrote it (``None`` when absent).
      expected: what is allowed, in words or as a list.
      hint: how to fix it ("did you mean ...?").
      file, line, column: 1-based position of the field in the file; 0 when unknown.
      severity: error (fails the command), warning or info.
      source: where the rule's fact comes from (doc URL or repo path).
    """

    rule: str
    message: str
    path: str = ""
    value: object = None
    expected: str | None = None
    hint: str | None = None
    file: str = ""
    line: int = 0
    column: int = 0
    severity: Severity = Severity.ERROR
    source: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
            "value": _jsonable(self.value),
            "expected": self.expected,
            "hint": self.hint,
            "source": self.source,
        }


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


class MldiagError(Exception):
    """Base of every error the tool raises on purpose; carries an exit code and a hint."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, *, hint: str | None = None,
                 problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.problems: list[Problem] = list(problems or [])


class InputError(MldiagError):
    """The user's input is invalid; ``problems`` lists every finding."""

    exit_code = ExitCode.INVALID


class UsageError(MldiagError):
    """The command line is wrong, or a named file cannot be read."""

    exit_code = ExitCode.USAGE


class ConflictError(MldiagError):
    """The tool refused to act to protect the user's work (e.g. an edited rendered file)."""

    exit_code = ExitCode.CONFLICT


class EngineError(MldiagError):
    """An external engine run (terraform) failed; carries the command and its log."""

    exit_code = ExitCode.ENGINE

    def __init__(self, message: str, *, hint: str | None = None,
                 argv: list[str] | None = None, returncode: int | None = None,
                 log_path: str | None = None, tail: list[str] | None = None) -> None:
        super().__init__(message, hint=hint)
        self.argv = list(argv or [])
        self.returncode = returncode
        self.log_path = log_path
        self.tail = list(tail or [])


class CatalogError(MldiagError):
    """The bundled catalog data is broken: a bug in this package, not in the user's input."""

    exit_code = ExitCode.INTERNAL


@dataclass
class Report:
    """All problems found in one input file."""

    file: str
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors


def extra_hint(extra: str, more: str = "") -> str:
    """The hint for a missing optional extra (``live``, ``sandbox``, ``smoke``): how to
    install it from PyPI and from a clone (an editable install names the checkout, not the
    package); ``more`` is added in parentheses (what the extra brings)."""
    what = f" ({more})" if more else ""
    return (f"pip install 'mldiag-provision[{extra}]'{what}; in a clone: "
            f"pip install -e '.[{extra}]'")


def not_utf8(name: str, raw: bytes, exc: UnicodeDecodeError, what: str) -> UsageError:
    """The error for a file that is not UTF-8 text: where the first bad byte is (line and
    column, counted in bytes from 1, and its offset) and how to convert the file. ``what``
    names the kind of file (``a recipe``, ``a manifest``). A UTF-16/32 byte-order mark at the
    start is named as such (editors on Windows save that way)."""
    start = exc.start
    line = raw.count(b"\n", 0, start) + 1
    column = start - (raw.rfind(b"\n", 0, start) + 1) + 1
    boms = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
            (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
    found = next((enc for bom, enc in boms if raw.startswith(bom)), None)
    source = found or "ISO-8859-1"
    how = (f"convert it before piping it in, e.g. through iconv -f {source} -t UTF-8"
           if name.startswith("<") else
           f"iconv -f {source} -t UTF-8 {name} > converted.yaml")
    if found:
        return UsageError(f"{name}: {found} text (byte-order mark at the start), not UTF-8",
                          hint=f"save it as UTF-8, e.g. {how}; {what} is a YAML text file "
                               "in UTF-8")
    return UsageError(f"{name}:{line}:{column}: not UTF-8 text ({exc.reason} at byte {start})",
                      hint=f"save it as UTF-8 (from Latin-1, e.g. {how}); {what} is a YAML "
                           "text file in UTF-8")
