"""``--sandbox`` (or ``MLDIAG_SANDBOX=1``) on ``plan``/``apply``/``verify``/``output``/
``destroy``: the command runs unchanged, inside a :func:`mldiag_provision.sandbox.session.session`
for its work directory, and everything it prints says so.

Marking: a banner line first (on stderr), then every line on stderr, and every line on
stdout in text output, starts with ``[SANDBOX] `` (JSON output on stdout stays one JSON
document, with the banner on stderr). The marked streams are not terminals, so no live
view redraws over the marks. The run log marks its lines too
(:class:`mldiag_provision.runner.CommandRunner`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from mldiag_provision.console import Console

COMMANDS = frozenset({"plan", "apply", "verify", "output", "destroy"})
PREFIX = "[SANDBOX] "


class MarkedStream:
    """A text stream that writes :data:`PREFIX` at the start of every line to ``inner``."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self._at_start = True

    def write(self, text: str) -> int:
        out = []
        for piece in text.splitlines(keepends=True):
            if self._at_start:
                out.append(PREFIX)
            out.append(piece)
            self._at_start = piece.endswith("\n")
        self.inner.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.inner, "encoding", "utf-8") or "utf-8"


def requested(args: argparse.Namespace) -> bool:
    """Whether this command runs in the sandbox (its ``--sandbox``, or MLDIAG_SANDBOX)."""
    if args.command not in COMMANDS or not hasattr(args, "sandbox"):
        return False
    from mldiag_provision.sandbox.session import enabled

    return enabled(bool(args.sandbox))


def mark_streams(args: argparse.Namespace) -> Callable[[], None]:
    """Replace ``sys.stdout`` (text output only) and ``sys.stderr`` with marked streams;
    returns the function that puts them back."""
    saved = (sys.stdout, sys.stderr)
    if getattr(args, "output", "text") == "text":
        sys.stdout = MarkedStream(saved[0])
    sys.stderr = MarkedStream(saved[1])

    def restore() -> None:
        sys.stdout, sys.stderr = saved

    return restore


def _refuse_unsupported(recipe: str) -> None:
    """Stop before anything runs when the recipe needs what the sandbox does not have yet, so
    that nothing is sent to Google: a remote Terraform state (``spec.engine.backend`` of type
    ``gcs``: the gcs backend would talk to storage.googleapis.com) or engine ``pulumi``
    (its providers are not doubled).

    Raises:
      UsageError: either of those.
    """
    import yaml

    from mldiag_provision.errors import UsageError

    try:
        with open(recipe, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return  # the command itself reports an unreadable or invalid recipe
    engine = ((doc or {}).get("spec") or {}).get("engine") if isinstance(doc, dict) else None
    if not isinstance(engine, dict):
        return
    name = engine.get("name") or "terraform"
    backend = (engine.get("backend") or {}).get("type") if isinstance(
        engine.get("backend"), dict) else None
    if name != "terraform":
        raise UsageError(f"the sandbox runs engine terraform only; {recipe} uses engine "
                         f"{name!r}", hint="try the sandbox with a terraform recipe")
    if backend not in (None, "local"):
        raise UsageError(f"the sandbox has no remote Terraform state yet: {recipe} keeps its "
                         f"state in a {backend!r} backend (spec.engine.backend), which would "
                         "reach Google", hint="run the sandbox on a copy of the recipe "
                                              "without spec.engine.backend")


def wrap(run: Callable[[argparse.Namespace, Console], int]
         ) -> Callable[[argparse.Namespace, Console], int]:
    """``run`` inside the sandbox of ``args.out``, after the banner.

    Raises:
      UsageError: no ``-o DIR`` (the sandbox lives in the work directory).
    """
    def inner(args: argparse.Namespace, out: Console) -> int:
        from mldiag_provision.errors import UsageError
        from mldiag_provision.sandbox.session import session

        if not getattr(args, "out", None):
            raise UsageError(f"{args.command} --sandbox needs -o DIR: the sandbox cloud lives "
                             "in the stack's work directory",
                             hint=f"mldiag-provision {args.command} {args.recipe} -o DIR "
                                  "--sandbox")
        _refuse_unsupported(args.recipe)
        with session(Path(args.out)) as sb:
            sys.stderr.write(f"SANDBOX: {args.command} runs against a local double of Google "
                             f"Cloud kept in {sb.root} (no credentials read, nothing sent to "
                             "Google)\n")
            sys.stderr.flush()
            return run(args, out)

    return inner
