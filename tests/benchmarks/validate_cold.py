"""Benchmark: cold ``mldiag-provision validate RECIPE`` next to a bare ``python -c pass``.

Each run is a new process, as in CI; bytecode is compiled first and the floor is measured in
the same run, alternating with the command (see ``_bench.py``). Reports min / median / max in
ms and the median's ratio to the floor.
Target (issue 2): median of validate at most 200 ms on the project's machine (2 cores); issue
16: unchanged or better.

    .venv/bin/python tests/benchmarks/validate_cold.py [--runs 21] [RECIPE]

Exit code 1 when the median exceeds the target, so the script can gate a pipeline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import ROOT, Bench, cli, report

TARGET_MS = 200.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("recipe", nargs="?",
                   default=str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"))
    p.add_argument("--runs", type=int, default=21)
    args = p.parse_args()
    with Bench() as bench:
        samples = bench.paired({"mldiag-provision validate": [*cli(), "validate",
                                                              args.recipe]}, args.runs)
    ok = report(f"cold validate of {Path(args.recipe).name}", samples,
                {"mldiag-provision validate": ("ms", TARGET_MS)})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
