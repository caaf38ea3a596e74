"""Human output: problems with the user's own line and a caret, colours on a terminal only.

Colour follows the usual conventions: on when the stream is a TTY, off when piped, off with
``NO_COLOR`` set (https://no-color.org), forced with ``FORCE_COLOR``.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.recipe.sourcemap import SourceMap

_SNIPPET = 160  # characters of a source line shown under a problem

_CODES = {"red": "31", "yellow": "33", "green": "32", "cyan": "36", "bold": "1", "dim": "2"}


def use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "0") not in ("", "0", "false"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


class Console:
    def __init__(self, stream: TextIO | None = None, color: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.color = use_color(self.stream) if color is None else color

    def style(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def print(self, text: str = "") -> None:
        self.stream.write(text + "\n")

    def problem(self, p: Problem, sourcemap: SourceMap | None = None) -> None:
        """``file:line:col: error[rule]: message`` + the source line, caret and details."""
        colour = {"error": "red", "warning": "yellow"}.get(p.severity.value, "cyan")
        where = p.file or "<input>"
        if p.line:
            where += f":{p.line}:{p.column}"
        head = f"{self.style(where, 'bold')}: {self.style(p.severity.value, colour, 'bold')}"
        head += f"[{p.rule}]: {p.message}"
        self.print(head)
        src = sourcemap.source_line(p.line) if sourcemap and p.line else None
        if src is not None:
            col = max(p.column - 1, 0)
            if len(src) > _SNIPPET:  # show a window around the column of a very long line
                start = max(0, min(col - _SNIPPET // 2, len(src) - _SNIPPET))
                src, col = src[start:start + _SNIPPET], col - start
            gutter = f"{p.line:>5} | "
            self.print(self.style(gutter, "dim") + src)
            self.print(" " * (len(gutter) + col) + self.style("^", colour))
        details = []
        if p.path:
            details.append(("field", p.path))
        if p.value is not None and not isinstance(p.value, (dict, list)):
            text = repr(p.value) if isinstance(p.value, str) else str(p.value)
            details.append(("value", text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."))
        if p.expected:
            details.append(("expected", p.expected))
        if p.hint:
            details.append(("hint", p.hint))
        if p.source:
            details.append(("source", p.source))
        for key, val in details:
            self.print(f"        {self.style(key + ':', 'dim')} {val}")

    def summary(self, errors: int, warnings: int, files: int) -> None:
        if errors:
            text = self.style(f"{errors} error(s)", "red", "bold")
        else:
            text = self.style("ok", "green", "bold")
        if warnings:
            text += ", " + self.style(f"{warnings} warning(s)", "yellow")
        self.print(f"{text} in {files} file(s)")


def severity_counts(problems: list[Problem]) -> tuple[int, int]:
    errors = sum(p.severity is Severity.ERROR for p in problems)
    warnings = sum(p.severity is Severity.WARNING for p in problems)
    return errors, warnings
