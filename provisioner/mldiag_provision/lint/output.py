"""Human and JSON output of a lint run (SARIF is in :mod:`mldiag_provision.lint.sarif`).

Text: one block per problem, ``file:line:col: severity[rule]: message``, the user's own line
with a caret, then field path, value, what is allowed, a hint and the source; a summary line
last. JSON: the same problems as :meth:`Problem.to_dict`, grouped by file, with totals.
"""

from __future__ import annotations

import io
import json

from mldiag_provision.console import Console
from mldiag_provision.errors import Severity
from mldiag_provision.lint.linter import LintResult


def _counts(result: LintResult) -> tuple[int, int, int]:
    return (result.count(Severity.ERROR), result.count(Severity.WARNING),
            result.count(Severity.INFO))


def write_text(result: LintResult, out: Console, *, strict: bool) -> None:
    """The text report, written to ``out`` in one piece: line by line it was ~15,000 writes
    for 1,000 manifests, each a system call when stdout is unbuffered (issue 16)."""
    text = io.StringIO()
    _write_text(result, Console(text, color=out.color), strict=strict)
    out.stream.write(text.getvalue())


def _write_text(result: LintResult, out: Console, *, strict: bool) -> None:
    for p in result.problems:
        out.problem(p, result.sourcemaps.get(p.file))
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
    return json.dumps(doc, indent=2)
