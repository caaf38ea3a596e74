"""``mldiag-provision`` entry point: answers ``--version`` at once, hands everything else to
:mod:`mldiag_provision.cli._main` (the parser and the commands).

Start-up (issue 16): this module imports nothing but :mod:`sys`, so ``--version`` costs about
one interpreter start; ``_main`` imports only the module of the command being run.
Exit codes (stable, see :class:`~mldiag_provision.errors.ExitCode`):
  0 ok · 1 invalid input · 2 usage error · 3 refused (conflict) · 70 internal error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from types import TracebackType


def _quiet_interrupt(exc_type: type[BaseException], exc: BaseException,
                     tb: TracebackType | None) -> None:
    """Ctrl-C before main() is running (while importing): no traceback, exit 130."""
    if issubclass(exc_type, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
        raise SystemExit(130)
    sys.__excepthook__(exc_type, exc, tb)


sys.excepthook = _quiet_interrupt

_GLOBAL_FLAGS = ("--debug", "--no-color")


def asks_version(argv: Sequence[str]) -> bool:
    """True when argparse would print the version and exit 0 before anything else: the first
    argument after the top-level flags is ``--version`` or an abbreviation of it that no
    other top-level option shares (``--v`` ...)."""
    rest = list(argv)
    while rest and rest[0] in _GLOBAL_FLAGS:
        rest.pop(0)
    return bool(rest) and len(rest[0]) >= 3 and "--version".startswith(rest[0])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    argv_list = list(sys.argv[1:] if argv is None else argv)
    if asks_version(argv_list):
        from mldiag_provision import __version__

        sys.stdout.write(f"mldiag-provision {__version__}\n")
        return 0
    _tune_gc()
    from mldiag_provision import startcache

    startcache.install()  # before the commands' dataclasses are made
    from mldiag_provision.cli._main import main as run

    return run(argv_list)


# Collect the youngest generation after this many net allocations instead of CPython's 700,
# and the older ones less often. A run of the CLI is short and builds many small objects
# (YAML nodes, fact and plan records) that mostly live until it ends, so the default
# thresholds spend ~10 % of `validate` of 1,000 recipes rescanning them (measured in issue 16:
# 478 young collections, ~200 ms; with these, 82 and ~45 ms). Memory stays bounded: cycles
# are still collected, only in larger batches.
GC_THRESHOLDS = (20_000, 20, 20)


def _tune_gc() -> None:
    """Raise the collector's thresholds for this process (:data:`GC_THRESHOLDS`)."""
    import gc

    gc.set_threshold(*GC_THRESHOLDS)


def __getattr__(name: str) -> object:
    """The parser and its helpers (``build_parser``, ``command_name``...) still import from
    here; they live in ``_main``, loaded on first use (never for a dunder such
    as ``__path__``, which the import system probes)."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from mldiag_provision.cli import _main

    try:
        return getattr(_main, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
