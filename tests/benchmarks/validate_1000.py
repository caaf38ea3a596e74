"""Benchmark: ``mldiag-provision validate`` of 1,000 recipe files in one call, next to the
interpreter floor and the parse limit measured in the same run (bytecode compiled first, see
``_bench.py``).

The files are the example recipes (``recipes/*.yaml``, every orchestrator and accelerator
kind) copied in turn to 1,000 files, each with its own ``metadata.name``.

Parse limit (issue 32): one process that reads the same files and parses each with PyYAML's
``CSafeLoader`` (``yaml.load``), nothing else: what any YAML tool pays to read them. It runs
in alternation with the floor and ``validate`` (floor, validate, parse, floor, ...), so load
on the shared machine hits all three, and its median CPU time is the limit.

Targets: median wall time under 1 s on the project's machine (2 cores; issue 16); median CPU
time at most 2.2x the parse limit's (issue 32). ``--jobs`` is passed to ``validate`` (default:
as a user runs it, one process per CPU; ``--jobs 1`` times one process, the same work the
limit does on one).

    .venv/bin/python tests/benchmarks/validate_1000.py [--files 1000] [--runs 7] [--jobs N]

Prints the load average with the figures; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import ROOT, Bench, cli, report

TARGET_MS = 1000.0
TARGET_X_PARSE = 2.2  # validate's CPU / the parse limit's CPU (issue 32)

# The parse limit: read each file named on the command line and parse it with libyaml.
PARSE_ONLY = """\
import sys, yaml
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        yaml.load(f.read(), Loader=yaml.CSafeLoader)
"""


def write_recipes(out: Path, count: int) -> list[str]:
    """``count`` valid recipe files in ``out``; returns their paths."""
    examples = [p.read_text() for p in sorted((ROOT / "recipes").glob("*.yaml"))]
    paths = []
    for i in range(count):
        text = examples[i % len(examples)]
        text = re.sub(r"(?m)^(  name: )(\S+)$", lambda m, i=i: f"{m[1]}{m[2]}-{i}",
                      text, count=1)
        path = out / f"r{i:04d}.yaml"
        path.write_text(text)
        paths.append(str(path))
    return paths


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--jobs", type=int, default=None,
                   help="passed to validate --jobs (default: not passed)")
    args = p.parse_args()
    jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    with tempfile.TemporaryDirectory() as tmp, Bench() as bench:
        paths = write_recipes(Path(tmp), args.files)
        name = f"validate {args.files} recipes" + (f" -j{args.jobs}" if jobs else "")
        parse = f"parse limit ({args.files} files)"
        samples = bench.paired({name: [*cli(), "validate", *jobs, *paths],
                                parse: [sys.executable, "-c", PARSE_ONLY, *paths]},
                               args.runs)
    ok = report(f"validate of {args.files} recipes in one call (the examples in turn)",
                samples, {name: ("ms", TARGET_MS)})
    cpu = statistics.median(samples.cpu[name])
    limit = statistics.median(samples.cpu[parse])
    wall = statistics.median(samples[name]) / statistics.median(samples[parse])
    met = cpu / limit <= TARGET_X_PARSE
    print(f"  ratio to the parse limit: CPU {cpu / limit:.2f}x (target <= "
          f"{TARGET_X_PARSE:g}x: {'OK' if met else 'OVER'}), wall {wall:.2f}x; "
          f"{cpu / args.files * 1000:.3f} ms CPU per recipe against "
          f"{limit / args.files * 1000:.3f} ms to read and parse it; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0 if ok and met else 1


if __name__ == "__main__":
    sys.exit(main())
