"""Human and JSON output of a lint run (SARIF is in :mod:`mldiag_provision.lint.sarif`).

Text: one block per problem, ``file:line:col: severity[rule]: message``, the user's own line
with a caret, then field path, value, what is allowed, a hint and the source; a summary line
last. JSON: the same problems as :meth:`Problem.to_dict`, grouped by file, with totals.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

from mldiag_provision.console import Console
from mldiag_provision.errors import Severity
from mldiag_provision.lint.linter import LintResult


def _counts(result: LintResult) -> tuple[int, int, int]:
    return (result.count(Severity.ERROR), result.count(Severity.WARNING),
            result.count(Severity.INFO))


# characters of text report gathered before a write (issue 32: the whole report, ~1.2 MB for
# 1,000 manifests, and its copies were ~4 MiB of lint's peak memory)
_CHUNK = 64 << 10


def write_text(result: LintResult, out: Console, *, strict: bool) -> None:
    """The text report, written to ``out`` in pieces of about :data:`_CHUNK` characters:
    line by line it was ~15,000 writes for 1,000 manifests, each a system call when stdout
    is unbuffered (issue 16); in one piece, a few copies of the whole report in memory."""
    text = io.StringIO()
    _write_text(result, Console(text, color=out.color), strict=strict,
                flush=lambda: _drain(text, out))
    _drain(text, out)


def _drain(text: io.StringIO, out: Console) -> None:
    """Writes what ``text`` gathered to ``out`` and empties it."""
    out.stream.write(text.getvalue())
    text.seek(0)
    text.truncate()


def _write_text(result: LintResult, out: Console, *, strict: bool,
                flush: Callable[[], None] | None = None) -> None:
    """The text report to ``out``; ``flush`` is called whenever ``out``'s stream (a
    :class:`io.StringIO`) holds :data:`_CHUNK` characters or more."""
    stream = out.stream
    for p in result.problems:
        out.problem(p, result.sourcemaps.get(p.file))
        if flush is not None and stream.tell() >= _CHUNK:
            flush()
    errors, warnings, infos = _counts(result)
    failed = result.failed(strict)
    parts = []
    if errors:
        parts.append(out.style(f"{errors} error(s)", "red", "bold"))
    if warnings:
        parts.append(out.style(f"{warnings} warning(s)", "yellow", "bold" if strict else "dim"))
    if infos:
        parts.append(f"{infos} note(s)")
    head = out.style("ok", "green", "bold") if not failed else out.style("failed", "red", "bold")
    o = result.options
    scope = f"Kubernetes {o.kubernetes_version}" + (", Autopilot" if o.autopilot else "") \
        + ("" if o.diagnostics else ", no ML Diagnostics rules")
    out.print(f"{head}: {', '.join(parts) or 'no problems'} in {len(result.files)} file(s), "
              f"{result.resources} object(s) ({scope})"
              + (" (--strict: warnings fail)" if strict and warnings else ""))


def to_json(result: LintResult, *, strict: bool) -> str:
    """The JSON report (text, without a final newline)."""
    return json.dumps(_json_document(result, strict=strict), indent=2)


def write_json_report(result: LintResult, stream: TextIO, *, strict: bool) -> None:
    """:func:`to_json` and a newline, written to ``stream`` in pieces (:func:`write_json`)."""
    write_json(_json_document(result, strict=strict), stream)


# stands for the streamed list's items while the rest of the document is encoded
_MARK = "\x00mldiag-provision: the streamed items\x00"


def write_json(doc: object, stream: TextIO, *,
               streamed: tuple[dict[str, Any], str, Iterable[object]] | None = None) -> None:
    """``json.dumps(doc, indent=2)`` and a newline, written to ``stream`` in pieces of about
    :data:`_CHUNK` characters (the same text: ``dumps`` joins the same encoder's pieces),
    instead of the whole text and its copies at once (issue 32).

    ``streamed``: ``(holder, key, items)``, ``holder`` a mapping inside ``doc``: the text is
    that of ``doc`` with ``holder[key]`` the list of ``items``, but each item is made and
    encoded only when its turn comes (a SARIF log's results; ``holder[key]`` is set and
    left as a one-element placeholder). An item of a list at indent ``pad`` is its own
    ``dumps(item, indent=2)`` with ``pad`` after every newline (JSON text has no raw newline
    inside a string), items joined by ``",\n" + pad``: what ``dumps`` writes for the list.
    """
    items: Iterator[object] = iter(())
    if streamed is not None:
        holder, key, given = streamed
        items = iter(given)
        first = next(items, _MARK)
        if first is _MARK:  # no items: an empty list, as dumps writes it
            holder[key] = []
        else:
            holder[key] = [_MARK]
            items = itertools.chain([first], items)
    marker = json.dumps(_MARK)
    out = _Pieces(stream)
    for piece in json.JSONEncoder(indent=2).iterencode(doc):
        at = piece.find(marker) if streamed is not None else -1
        if at < 0:
            out.write(piece)
            continue
        out.write(piece[:at])
        pad = out.line_start()
        for n, item in enumerate(items):
            if n:
                out.write(",\n" + pad)
            out.write(json.dumps(item, indent=2).replace("\n", "\n" + pad))
        out.write(piece[at + len(marker):])
    out.write("\n")
    out.flush()


class _Pieces:
    """Gathers text and writes it to a stream in pieces of about :data:`_CHUNK`."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pieces: list[str] = []
        self.size = 0
        self.last = ""  # the text written since the last newline

    def write(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)
        newline = text.rfind("\n")
        self.last = text[newline + 1:] if newline >= 0 else self.last + text
        if self.size >= _CHUNK:
            self.flush()

    def line_start(self) -> str:
        """What the current line holds so far (the indent, before a list's item)."""
        return self.last

    def flush(self) -> None:
        self.stream.write("".join(self.pieces))
        self.pieces.clear()
        self.size = 0


def _json_document(result: LintResult, *, strict: bool) -> dict[str, object]:
    errors, warnings, infos = _counts(result)
    o = result.options
    doc = {
        "ok": not result.failed(strict),
        "errors": errors,
        "warnings": warnings,
        "infos": infos,
        "strict": strict,
        "kubernetesVersion": o.kubernetes_version,
        "autopilot": o.autopilot,
        "diagnostics": o.diagnostics,
        "objects": result.resources,
        "files": [{"file": f, "ok": not any(p.severity is Severity.ERROR for p in probs),
                   "problems": [p.to_dict() for p in probs]}
                  for f, probs in result.by_file().items()],
    }
    return doc
