"""Benchmark: ``mldiag-provision render`` of a recipe with N slices, each with its own
workload (GKE Standard: one node pool and one Job manifest per slice), into an empty
directory, one fresh process each, next to the interpreter floor measured in the same run
(bytecode compiled first, see ``_bench.py``).

The compiled blueprint templates are kept between runs like Python's bytecode
(``render/template_cache.py``: under the benchmark's pycache prefix, written by the warm-up
run), so the timed runs measure a render on a machine that has rendered before.

Slices alternate between a single-host TPU v5e 2x4 slice and a multi-host TPU v4 2x2x4 slice
(a Job with its headless Service), so both manifest shapes scale.
Targets (issue 16): median under 0.5 s for 64 pairs and under 1 s for 256.

    .venv/bin/python tests/benchmarks/render_scale.py [--pairs 64 256] [--runs 5]

Exits 1 when a median exceeds its target.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import Bench, cli, report

TARGETS_MS = {64: 500.0, 256: 1000.0}


def recipe(pairs: int) -> str:
    """A valid GKE Standard recipe with ``pairs`` slices, each with one workload."""
    slices, workloads = [], []
    for i in range(pairs):
        if i % 2:
            slices.append(f"    - name: v4-{i}\n      tpu: v4\n      topology: 2x2x4\n")
        else:
            slices.append(f"    - name: v5e-{i}\n      tpu: v5e\n      topology: 2x4\n"
                          "      chipsPerVm: 8\n")
        name = f"v4-{i}" if i % 2 else f"v5e-{i}"
        workloads.append(f"    - name: train-{i}\n      slice: {name}\n"
                         "      image: us-docker.pkg.dev/my-ml-project/train/jax:0.8.1\n"
                         "      command: [python3, train.py]\n"
                         f"      args: [--step={i}]\n")
    return ("apiVersion: mldiag-provision/v1alpha1\nkind: Recipe\nmetadata:\n"
            f"  name: scale-{pairs}\nspec:\n  project: my-ml-project\n"
            "  region: us-central2\n  zone: us-central2-b\n"
            "  orchestrator:\n    type: gke-standard\n  slices:\n" + "".join(slices)
            + "  diagnostics:\n    logAnalytics:\n      retentionDays: 30\n"
            + "  workloads:\n" + "".join(workloads))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, nargs="+", default=[64, 256])
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Bench() as bench:
        out = Path(tmp) / "out"
        commands, targets = {}, {}
        for n in args.pairs:
            path = Path(tmp) / f"scale-{n}.yaml"
            path.write_text(recipe(n))
            name = f"render {n} slice+workload pairs"
            commands[name] = [*cli(), "render", str(path), "-o", str(out)]
            if n in TARGETS_MS:
                targets[name] = ("ms", TARGETS_MS[n])
        samples = bench.paired(commands, args.runs,
                               before=lambda: shutil.rmtree(out, ignore_errors=True))
    ok = report("render into an empty directory (GKE Standard, TPU v5e/v4 slices)",
                samples, targets)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
