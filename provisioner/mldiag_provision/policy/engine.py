"""Run the Rego engine (``regopy``, the Python binding of Microsoft's rego-cpp) in a child
process, so that a crash of the native engine is an error message, not the end of the tool.

``regopy`` facts this relies on (checked against regopy 1.5.2 on PyPI, built on rego-cpp;
https://microsoft.github.io/rego-cpp/ and https://pypi.org/project/regopy/):

* Rego v1 syntax (``if``, ``contains``) is the default; ``import rego.v1`` is accepted.
* Known built-in gaps: ``http.send``, ``net.cidr_*``, ``strings.render_template``,
  ``print``, ``trace`` and ``rego.metadata.*`` are not available (``Interpreter.is_builtin``
  says False), so the bundled policies carry their metadata as a plain ``metadata`` rule
  instead of METADATA annotations, and use none of those built-ins.
* A call of a function that does not exist is an error at query time, which regopy 1.5.2
  turns into a ``JSONDecodeError``; the worker reads the raw output instead.
* Built-in errors are undefined by default (as in OPA); the worker makes them strict.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from mldiag_provision.errors import EngineError, UsageError

WORKER_ARGV: list[str] = [sys.executable, "-m", "mldiag_provision.policy.worker"]
"""The worker's command line (tests point it at a crashing process)."""

TIMEOUT_S = float(os.environ.get("MLDIAG_POLICY_TIMEOUT_S", "120") or 120)


class PolicyError(UsageError):
    """A policy cannot be used: it does not compile, lacks metadata, or its rule fails."""


class PolicyEngineError(EngineError):
    """The Rego engine process crashed, timed out, is missing or answered nonsense."""


@dataclass(frozen=True)
class Module:
    """One Rego source file: ``name`` (shown in errors: its path), ``source`` (text)."""

    name: str
    source: str


class Evaluation:
    """An engine process started with the policies (compiling them) before the input exists.

    ``Evaluation(modules, packages).finish(document)`` is :func:`evaluate`; in between the
    caller builds the input while the engine starts.
    """

    def __init__(self, modules: list[Module], packages: list[str]) -> None:
        self._started = time.monotonic()
        try:
            self._proc = subprocess.Popen(WORKER_ARGV, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)
        except OSError as exc:
            raise PolicyEngineError(f"cannot start the Rego engine process: {exc}",
                                    hint="reinstall mldiag-provision") from None
        self._sources = {m.name: m.source for m in modules}
        head = json.dumps({"modules": [{"name": m.name, "source": m.source} for m in modules],
                           "packages": packages}) + "\n"
        self._write(head)

    def _write(self, text: str) -> None:
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(text)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the worker already answered (a module that does not compile) or died

    def cancel(self) -> None:
        """Stop the engine (the input could not be built)."""
        self._proc.kill()
        self._proc.communicate()

    def finish(self, document: dict[str, Any], *, clock_from: float | None = None,
               ) -> tuple[str, dict[str, dict[str, Any]]]:
        """Send ``document`` as ``input``; see :func:`evaluate` for the result and errors.
        ``clock_from`` (``time.monotonic()``): where the :data:`TIMEOUT_S` bound counts
        from, when not from the start (the caller planned in between)."""
        self._write(json.dumps({"input": document}) + "\n")
        started = self._started if clock_from is None else clock_from
        left = max(1.0, TIMEOUT_S - (time.monotonic() - started))
        try:
            stdout, stderr = self._proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            self.cancel()
            raise PolicyEngineError(
                f"the Rego engine did not finish evaluating the policies within "
                f"{TIMEOUT_S:.0f} s",
                hint="a policy loops over a very large collection; simplify it, or raise "
                     "MLDIAG_POLICY_TIMEOUT_S") from None
        return _answer(self._proc.returncode, stdout, stderr, self._sources)


def evaluate(modules: list[Module], document: dict[str, Any], packages: list[str]
             ) -> tuple[str, dict[str, dict[str, Any]]]:
    """Evaluate ``data.<pkg>`` for every package with ``document`` as ``input``.

    Returns (engine name and version, {pkg: {"value": data or None, "error": text or
    None}}).

    Raises:
      PolicyError: a module does not compile (naming it).
      PolicyEngineError: regopy is missing, or the engine process crashed, timed out or
        answered nonsense.
    """
    return Evaluation(modules, packages).finish(document)


def _answer(returncode: int, stdout: str, stderr: str, sources: dict[str, str] | None = None,
            ) -> tuple[str, dict[str, dict[str, Any]]]:
    """The worker's answer, as :func:`evaluate` returns it; ``sources``: each module's text
    by name (to place a compile error at its line and column)."""
    if returncode != 0:
        if returncode < 0:
            try:
                what = f"signal {signal.Signals(-returncode).name}"
            except ValueError:
                what = f"signal {-returncode}"
        else:
            what = f"exit code {returncode}"
        tail = " ".join(stderr.split())[-300:]
        raise PolicyEngineError(
            f"the Rego engine (regopy) crashed ({what}) while evaluating the policies"
            + (f": {tail}" if tail else ""),
            hint="the gate stopped and nothing was changed; re-run with fewer --policy "
                 "directories to find the policy that triggers it, and report it to "
                 "https://github.com/microsoft/rego-cpp/issues")
    try:
        answer = json.loads(stdout)
    except ValueError:
        raise PolicyEngineError("the Rego engine process answered something that is not "
                                f"JSON: {stdout[:200]!r}",
                                hint="reinstall regopy (pip install regopy)") from None
    if not answer.get("ok"):
        if "module" in answer:
            placed = compile_errors(str(answer["error"]), sources or {})
            raise PolicyError(
                "the policy does not compile:\n" + "\n".join(placed) if placed else
                f"{answer['module']}: the policy does not compile: {answer['error']}",
                hint="fix the Rego file at the line and column named (Rego v1 syntax: "
                     "`deny contains x if {...}`)")
        raise PolicyEngineError(str(answer.get("error")),
                                hint="pip install regopy (a dependency of mldiag-provision)")
    return str(answer.get("engine", "regopy")), answer["packages"]


_ERROR = re.compile(r"\(error (\d+):")
_PLACE = re.compile(r"\|(\d+)\|(\d+) \(errormsg (\d+):")


def compile_errors(text: str, sources: dict[str, str]) -> list[str]:
    """rego-cpp's compile error (an S-expression such as ``(rego-errorseq (error
    16:bad/p.rego|73|1 (errormsg 27:Invalid arithmetic operator) ...))``: strings are
    prefixed with their length, ``|73|1`` is the byte offset and length in the module) as
    one ``FILE:LINE:COLUMN: MESSAGE`` line per error (line and column from 1, the column
    counted in characters). ``sources``: each module's text by name, as sent to the engine
    (a module not among them is named without a place). Returns [] when ``text`` holds no
    error in that shape (the caller shows it as it is)."""
    lines: list[str] = []
    for found in _ERROR.finditer(text):
        start = found.end()
        name = text[start:start + int(found.group(1))]
        place = _PLACE.match(text, start + len(name))
        if place is None:
            continue
        msg_start = place.end()
        message = text[msg_start:msg_start + int(place.group(3))].strip()
        source = sources.get(name)
        if source is None:
            lines.append(f"{name}: {message}")
            continue
        before = source.encode("utf-8")[:int(place.group(1))].decode("utf-8", "replace")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        lines.append(f"{name}:{line}:{column}: {message}")
    return lines
