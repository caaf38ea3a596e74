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

Start-up cache (:mod:`mldiag_provision.startcache`: compiled dataclass methods, parsed fact
files) follows the bytecode settings: it goes under the prefix too, filled by the same warm-up
runs, as an installed tool fills it on its first run; ``MLDIAG_CACHE=0`` in the environment
measures without it.

Floor: ``python -c pass`` with the same interpreter and environment, alternated with the
command (floor, command, floor, command, ...) so that load on the shared machine hits both.

CPU: next to wall time each run's CPU time (user + system of the child, from
``getrusage(RUSAGE_CHILDREN)``) is recorded and its median printed: on a shared machine under
load, wall time mostly measures the queue for a core, CPU time much less so.
"""

from __future__ import annotations

import compileall
import os
import resource
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
        self.cpu: dict[str, list[float]] = {}
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
             ok: Sequence[int] = (0,), name: str | None = None) -> float:
        """Seconds of one run of ``argv`` (bytecode read, never written); its CPU seconds go
        to ``self.cpu[name]`` when a name is given."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(list(argv), cwd=cwd, env=self.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if name is not None:
            self.cpu.setdefault(name, []).append(
                after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
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
            samples["python -c pass"].append(self.once(floor, name="python -c pass"))
            for name, argv in commands.items():
                if callable(before):
                    before()
                samples[name].append(self.once(argv, cwd, ok, name=name))
        return _Samples(samples, self.cpu)


class _Samples(dict):  # type: ignore[type-arg]
    """Wall-time samples by row, with the CPU-time samples alongside (``cpu``)."""

    def __init__(self, wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
        super().__init__(wall)
        self.cpu = cpu


def report(title: str, samples: dict[str, list[float]],
           targets: dict[str, tuple[str, float]] | None = None) -> bool:
    """Prints min / median / max (ms) and the median's ratio to the floor's median for each
    row; ``targets`` maps a row to ``("ms", limit)`` or ``("x", limit)`` (ratio to floor).
    Returns whether every target is met."""
    floor = statistics.median(samples["python -c pass"])
    runs = len(samples["python -c pass"])
    print(title)
    cpu = getattr(samples, "cpu", {})
    cpu_floor = statistics.median(cpu["python -c pass"]) if cpu else 0.0
    print(f"  {'command':<34} {'min':>8} {'median':>8} {'max':>8} {'x floor':>8} "
          f"{'CPU med':>8} {'x floor':>8}   (ms, {runs} runs, bytecode compiled, "
          f"start-up cache {'off' if os.environ.get('MLDIAG_CACHE') == '0' else 'filled'}, "
          f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)")
    ok = True
    for name, s in samples.items():
        med = statistics.median(s)
        line = (f"  {name:<34} {min(s) * 1000:>8.1f} {med * 1000:>8.1f} "
                f"{max(s) * 1000:>8.1f} {med / floor:>8.2f}")
        if cpu.get(name):
            c = statistics.median(cpu[name])
            line += f" {c * 1000:>8.1f} {c / cpu_floor if cpu_floor else 0:>8.2f}"
        if targets and name in targets:
            unit, limit = targets[name]
            value = med * 1000 if unit == "ms" else med / floor
            met = value < limit
            ok &= met
            line += f"   target < {limit:g}{' ms' if unit == 'ms' else 'x floor'}: " \
                    f"{'OK' if met else 'OVER'}"
        print(line)
    return ok
