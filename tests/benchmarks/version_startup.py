"""Benchmark: start-up of ``mldiag-provision --version``, ``--help`` and a cold ``validate``
of one TPU recipe, fresh processes, next to the interpreter floor measured in the same run
(bytecode compiled first, see ``_bench.py``).
Target (issue 16): ``--version`` median under 2x the floor.

    .venv/bin/python tests/benchmarks/version_startup.py [--runs 21]

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import ROOT, Bench, cli, report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=21)
    args = p.parse_args()
    recipe = str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")
    with Bench() as bench:
        samples = bench.paired({"mldiag-provision --version": [*cli(), "--version"],
                                "mldiag-provision --help": [*cli(), "--help"],
                                "mldiag-provision validate (TPU)": [*cli(), "validate",
                                                                    recipe]}, args.runs)
    ok = report("start-up", samples, {"mldiag-provision --version": ("x", 2.0)})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
