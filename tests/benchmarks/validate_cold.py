"""Benchmark: cold `mldiag-provision validate RECIPE` next to a bare `python -c pass`.

Each run is a new process, as in CI. Reports min / median / max wall time in ms over N runs.
Target (issue 2): median of validate at most 200 ms on the project's machine (2 cores).

    .venv/bin/python tests/benchmarks/validate_cold.py [--runs 21] [RECIPE]

Exit code 1 when the median exceeds the target, so the script can gate a pipeline.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_MS = 200.0


def _time(argv: list[str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, check=False)
        samples.append((time.perf_counter() - start) * 1000)
        if proc.returncode not in (0,):
            sys.exit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return samples


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("recipe", nargs="?",
                   default=str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"))
    p.add_argument("--runs", type=int, default=21)
    args = p.parse_args()
    exe = shutil.which("mldiag-provision", path=str(Path(sys.executable).parent))
    if exe is None:
        sys.exit("mldiag-provision is not installed next to this Python; pip install -e . first")
    rows = [("python -c pass", _time([sys.executable, "-c", "pass"], args.runs)),
            ("mldiag-provision validate", _time([exe, "validate", args.recipe], args.runs))]
    print(f"{'command':<28} {'min':>8} {'median':>8} {'max':>8}   (ms, {args.runs} runs)")
    for name, s in rows:
        print(f"{name:<28} {min(s):>8.1f} {statistics.median(s):>8.1f} {max(s):>8.1f}")
    median = statistics.median(rows[1][1])
    overhead = median - statistics.median(rows[0][1])
    verdict = "OK" if median <= TARGET_MS else "OVER TARGET"
    print(f"validate median {median:.1f} ms (interpreter start {overhead:.1f} ms less); "
          f"target <= {TARGET_MS:.0f} ms: {verdict}")
    return 0 if median <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
