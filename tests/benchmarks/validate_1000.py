"""Benchmark: ``mldiag-provision validate`` of 1,000 recipe files in one call, next to the
interpreter floor measured in the same run (bytecode compiled first, see ``_bench.py``).

The files are the example recipes (``recipes/*.yaml``, every orchestrator and accelerator
kind) copied in turn to 1,000 files, each with its own ``metadata.name``.
Target (issue 16): median under 1 s on the project's machine (2 cores).

    .venv/bin/python tests/benchmarks/validate_1000.py [--files 1000] [--runs 7]

Exits 1 when the median exceeds the target.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import ROOT, Bench, cli, report

TARGET_MS = 1000.0


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
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Bench() as bench:
        paths = write_recipes(Path(tmp), args.files)
        name = f"validate {args.files} recipes"
        samples = bench.paired({name: [*cli(), "validate", *paths]}, args.runs)
    ok = report(f"validate of {args.files} recipes in one call (the examples in turn)",
                samples, {name: ("ms", TARGET_MS)})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
