"""Shared parts of the start-up-sensitive benchmarks (issue 16): bytecode compiled first, the
interpreter floor measured in the same run, medians and ratios to the floor.

Bytecode: this workplace sets ``PYTHONDONTWRITEBYTECODE=1`` and the package is installed
editable (its sources have no ``__pycache__``), so a cold command would compile every module
of the package on every run and measure the compiler. :class:`Bench` therefore makes a
temporary pycache prefix (``PYTHONPYCACHEPREFIX``), fills it with ``compileall`` of the
package and one *warm-up* run of every timed command with bytecode writing switched on (that
compiles exactly the standard-library and third-party modules the command imports: with a
prefix set Python looks for every ``.pyc`` there, not in ``__pycache__``), and then times
every command, the floor included, with the same prefix and ``PYTHONDONTWRITEBYTECODE=1``:
all runs read bytecode, none writes it. The prefix is deleted at exit.

Floor: ``python -c pass`` with the same interpreter and environment, alternated with the
command (floor, command, floor, command, ...) so that load on the shared machine hits both.
"""

from __future__ import annotations

import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "provisioner" / "mldiag_provision"


def cli() -> list[str]:
    """The argv prefix of a fresh ``mldiag-provision`` process (this interpreter)."""
    return [sys.executable, "-m", "mldiag_provision"]


class Bench:
    """A benchmark session: a pycache prefix with the package's bytecode, and timers."""

    def __init__(self) -> None:
        self.prefix = Path(tempfile.mkdtemp(prefix="mldiag-pycache-"))
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        base["PYTHONPYCACHEPREFIX"] = str(self.prefix)
        self._write_env = base
        self.env = {**base, "PYTHONDONTWRITEBYTECODE": "1"}
        old = os.environ.get("PYTHONPYCACHEPREFIX")
        sys.pycache_prefix = str(self.prefix)  # compileall honours it
        try:
            compileall.compile_dir(str(PACKAGE), quiet=1)
        finally:
            sys.pycache_prefix = old
        self.warm([sys.executable, "-c", "pass"])

    def close(self) -> None:
        shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm(self, argv: Sequence[str], cwd: Path | None = None,
             ok: Sequence[int] = (0,)) -> None:
        """Run ``argv`` once with bytecode writing on (fills the prefix); checks its exit."""
        proc = subprocess.run(list(argv), cwd=cwd, env=self._write_env, capture_output=True,
                              check=False)
        if proc.returncode not in ok:
            sys.exit(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n"
                     f"{proc.stderr.decode()[-2000:]}{proc.stdout.decode()[-1000:]}")

    def once(self, argv: Sequence[str], cwd: Path | None = None,
             ok: Sequence[int] = (0,)) -> float:
        """Seconds of one run of ``argv`` (bytecode read, never written)."""
        t = time.perf_counter()
        proc = subprocess.run(list(argv), cwd=cwd, env=self.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - t
        if proc.returncode not in ok:
            sys.exit(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n"
                     f"{proc.stderr.decode()[-2000:]}")
        return elapsed

    def paired(self, commands: dict[str, Sequence[str]], runs: int,
               cwd: Path | None = None, ok: Sequence[int] = (0,),
               before: object = None) -> dict[str, list[float]]:
        """Times the floor and each command ``runs`` times, alternating; ``before`` (a
        callable) runs before each timed command (e.g. to empty an output directory)."""
        for argv in commands.values():
            if callable(before):
                before()
            self.warm(argv, cwd, ok)
        samples: dict[str, list[float]] = {"python -c pass": []}
        samples.update({name: [] for name in commands})
        floor = [sys.executable, "-c", "pass"]
        for _ in range(runs):
            samples["python -c pass"].append(self.once(floor))
            for name, argv in commands.items():
                if callable(before):
                    before()
                samples[name].append(self.once(argv, cwd, ok))
        return samples


def report(title: str, samples: dict[str, list[float]],
           targets: dict[str, tuple[str, float]] | None = None) -> bool:
    """Prints min / median / max (ms) and the median's ratio to the floor's median for each
    row; ``targets`` maps a row to ``("ms", limit)`` or ``("x", limit)`` (ratio to floor).
    Returns whether every target is met."""
    floor = statistics.median(samples["python -c pass"])
    runs = len(samples["python -c pass"])
    print(title)
    print(f"  {'command':<34} {'min':>8} {'median':>8} {'max':>8} {'x floor':>8}   "
          f"(ms, {runs} runs, bytecode compiled, load {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} CPUs)")
    ok = True
    for name, s in samples.items():
        med = statistics.median(s)
        line = (f"  {name:<34} {min(s) * 1000:>8.1f} {med * 1000:>8.1f} "
                f"{max(s) * 1000:>8.1f} {med / floor:>8.2f}")
        if targets and name in targets:
            unit, limit = targets[name]
            value = med * 1000 if unit == "ms" else med / floor
            met = value < limit
            ok &= met
            line += f"   target < {limit:g}{' ms' if unit == 'ms' else 'x floor'}: " \
                    f"{'OK' if met else 'OVER'}"
        print(line)
    return ok
