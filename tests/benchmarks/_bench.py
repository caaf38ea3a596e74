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

Limit (issue 32): what no start of the tool can beat, the floor plus ``import yaml`` plus
libyaml loading the recipe (:func:`limit_command`, a row of its own, alternated like the
others); :func:`report` prints each row's ratio to it next to the ratio to the floor.

Without a writable cache: a command given as ``(argv, env)`` runs with those variables on
top (``MLDIAG_CACHE=0``: no start-up cache read or written, as in a CI image with
``PYTHONDONTWRITEBYTECODE`` and an empty cache home; bytecode is present as in every row).

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


FLOOR = "python -c pass"
LIMIT = "limit: python + import yaml + libyaml load"

Command = Sequence[str] | tuple[Sequence[str], dict[str, str]]
"""argv, or (argv, extra environment variables)."""


def _split(cmd: Command) -> tuple[list[str], dict[str, str]]:
    if isinstance(cmd, tuple) and len(cmd) == 2 and isinstance(cmd[1], dict):
        return list(cmd[0]), dict(cmd[1])
    return list(cmd), {}  # type: ignore[arg-type]


def limit_command(recipe: str) -> list[str]:
    """The limit of a cold command over ``recipe``: this interpreter, ``import yaml`` and
    libyaml's loader (CSafeLoader) reading the file; no tool code."""
    return [sys.executable, "-c",
            "import sys, yaml\n"
            "with open(sys.argv[1], 'rb') as f:\n"
            "    yaml.load(f.read(), Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))",
            recipe]


def load() -> str:
    """The load averages (1, 5, 15 minutes) and the CPU count, for the printed figures."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


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
        print(f"bytecode compiled first: compileall of the package into {self.prefix}, then one "
              "warm-up run of each command writing the .pyc it imports; timed runs read "
              f"bytecode and write none (PYTHONDONTWRITEBYTECODE=1); {load()}", flush=True)

    def close(self) -> None:
        shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm(self, argv: Command, cwd: Path | None = None,
             ok: Sequence[int] = (0,)) -> None:
        """Run ``argv`` once with bytecode writing on (fills the prefix); checks its exit."""
        argv, extra = _split(argv)
        proc = subprocess.run(argv, cwd=cwd, env={**self._write_env, **extra},
                              capture_output=True, check=False)
        if proc.returncode not in ok:
            sys.exit(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n"
                     f"{proc.stderr.decode()[-2000:]}{proc.stdout.decode()[-1000:]}")

    def once(self, argv: Command, cwd: Path | None = None,
             ok: Sequence[int] = (0,), name: str | None = None) -> float:
        """Seconds of one run of ``argv`` (bytecode read, never written); its CPU seconds go
        to ``self.cpu[name]`` when a name is given."""
        argv, extra = _split(argv)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env={**self.env, **extra},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if name is not None:
            self.cpu.setdefault(name, []).append(
                after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode not in ok:
            sys.exit(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n"
                     f"{proc.stderr.decode()[-2000:]}")
        return elapsed

    def paired(self, commands: dict[str, Command], runs: int,
               cwd: Path | None = None, ok: Sequence[int] = (0,),
               before: object = None) -> dict[str, list[float]]:
        """Times the floor and each command ``runs`` times, alternating; ``before`` (a
        callable) runs before each timed command (e.g. to empty an output directory)."""
        for argv in commands.values():
            if callable(before):
                before()
            self.warm(argv, cwd, ok)
        samples: dict[str, list[float]] = {FLOOR: []}
        samples.update({name: [] for name in commands})
        floor = [sys.executable, "-c", "pass"]
        for _ in range(runs):
            samples[FLOOR].append(self.once(floor, name=FLOOR))
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
    row, wall and CPU; with a :data:`LIMIT` row, the ratios to it too. ``targets`` maps a row
    to ``("ms", limit)`` (wall median), ``("x", limit)`` (wall ratio to floor), ``("cpu-x",
    limit)`` (CPU ratio to floor) or ``("x-of:ROW", limit)`` (CPU median over row ROW's CPU
    median). Prints the load averages before and after. Returns whether every target is
    met."""
    floor = statistics.median(samples[FLOOR])
    runs = len(samples[FLOOR])
    print(title)
    cpu = getattr(samples, "cpu", {})
    cpu_floor = statistics.median(cpu[FLOOR]) if cpu else 0.0
    limit_row = samples.get(LIMIT)
    wall_limit = statistics.median(limit_row) if limit_row else 0.0
    cpu_limit = statistics.median(cpu[LIMIT]) if limit_row and cpu.get(LIMIT) else 0.0
    print(f"  {'command':<48} {'min':>7} {'median':>7} {'max':>7} {'x floor':>7} "
          f"{'x limit':>7} {'CPU med':>7} {'x floor':>7} {'x limit':>7}   (ms, {runs} "
          f"runs alternating, bytecode compiled, start-up cache "
          f"{'off' if os.environ.get('MLDIAG_CACHE') == '0' else 'filled'} unless the row "
          f"says, {load()})")
    ok = True
    for name, s in samples.items():
        med = statistics.median(s)
        lim = f"{med / wall_limit:>7.2f}" if wall_limit else f"{'':>7}"
        line = (f"  {name:<48} {min(s) * 1000:>7.1f} {med * 1000:>7.1f} "
                f"{max(s) * 1000:>7.1f} {med / floor:>7.2f} {lim}")
        c = statistics.median(cpu[name]) if cpu.get(name) else 0.0
        if c:
            clim = f"{c / cpu_limit:>7.2f}" if cpu_limit else f"{'':>7}"
            line += f" {c * 1000:>7.1f} {c / cpu_floor if cpu_floor else 0:>7.2f} {clim}"
        if targets and name in targets:
            unit, limit = targets[name]
            if unit == "ms":
                value, said = med * 1000, f"{limit:g} ms"
            elif unit == "cpu-x":
                value, said = c / cpu_floor if cpu_floor else 0.0, f"{limit:g}x floor (CPU)"
            elif unit.startswith("x-of:"):
                other = statistics.median(cpu[unit[5:]])
                value, said = c / other, f"{limit:g}x of '{unit[5:]}' (CPU)"
            else:
                value, said = med / floor, f"{limit:g}x floor"
            met = value <= limit
            ok &= met
            line += f"   target <= {said}: {'OK' if met else 'OVER'} ({value:.2f})"
        print(line)
    print(f"  after: {load()}")
    return ok
