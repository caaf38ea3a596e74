#!/usr/bin/env python3
"""Benchmark: the quick start in the sandbox (issue 27), timed as a user runs it after the
install: ``apply --sandbox --auto-approve``, ``verify --sandbox``, ``destroy --sandbox
--auto-approve --disable-deletion-protection`` of the README's quick-start recipe into a new
work directory, each a fresh ``python -m mldiag_provision`` process.

Reported per round: each command's wall time and the round trip's; the median round trip
over ``--runs`` rounds, each in its own new directory (the first round also pays for the
sandbox's one-off set-up: gRPC stub generation, the provider mirror, certificates, and
Terraform's provider install). Exit status 1 when a command fails, or when the median round
trip is over ``--target`` seconds (default 60: issue 27's "under 60 s after the install on
this 2-core machine").

Usage: .venv/bin/python tests/benchmarks/sandbox_quickstart.py [--runs N] [--recipe FILE]
       [--target SECONDS]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "recipes/tpu-v4-2x2x4-autopilot.yaml"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "provisioner"), *filter(None, [env.get("PYTHONPATH")])])
    env["NO_COLOR"] = "1"
    return env


def round_trip(recipe: str, work: Path, env: dict[str, str]) -> dict[str, float]:
    """Seconds per command of one apply -> verify -> destroy; raises on a failed command."""
    steps = {
        "apply": ["apply", recipe, "-o", str(work), "--sandbox", "--auto-approve"],
        "verify": ["verify", recipe, "-o", str(work), "--sandbox"],
        "destroy": ["destroy", recipe, "-o", str(work), "--sandbox", "--auto-approve",
                    "--disable-deletion-protection"],
    }
    times: dict[str, float] = {}
    for name, argv in steps.items():
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "mldiag_provision", *argv], cwd=ROOT,
                           env=env, capture_output=True, text=True, check=False)
        times[name] = time.monotonic() - start
        if r.returncode != 0:
            raise RuntimeError(f"{name} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    times["total"] = sum(times.values())
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--recipe", default=RECIPE)
    ap.add_argument("--target", type=float, default=60.0, metavar="SECONDS")
    args = ap.parse_args()
    if shutil.which("terraform") is None:
        print("terraform is not on PATH", file=sys.stderr)
        return 1
    env = _env()
    totals = []
    base = Path(tempfile.mkdtemp(prefix="mldiag-sandbox-bench-"))
    try:
        for i in range(args.runs):
            try:
                t = round_trip(args.recipe, base / f"run{i}", env)
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                return 1
            totals.append(t["total"])
            print(f"round {i + 1}: apply {t['apply']:.1f}s, verify {t['verify']:.1f}s, "
                  f"destroy {t['destroy']:.1f}s = {t['total']:.1f}s")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    median = statistics.median(totals)
    print(f"median round trip over {len(totals)} round(s): {median:.1f}s "
          f"(target < {args.target:.0f}s: {'met' if median < args.target else 'NOT met'}; "
          f"{os.cpu_count()} CPUs)")
    return 0 if median < args.target else 1


if __name__ == "__main__":
    sys.exit(main())
