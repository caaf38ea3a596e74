"""Benchmark: start-up of ``mldiag-provision --version``, ``--help`` and a cold ``validate``
of one TPU recipe, fresh processes, next to the interpreter floor and the limit (the floor +
``import yaml`` + libyaml loading the recipe) measured in the same run, alternating (bytecode
compiled first, see ``_bench.py``); ``--help`` and ``validate`` also without a writable
cache (``MLDIAG_CACHE=0``, as in a CI image with ``PYTHONDONTWRITEBYTECODE``; ``.pyc``
present).
Targets: ``--version`` median under 2x the floor (issue 16); each command without a writable
cache within 10 % of it with the cache filled, in CPU (issue 32).

    .venv/bin/python tests/benchmarks/version_startup.py [--runs 21]

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import LIMIT, ROOT, Bench, Command, cli, limit_command, report

NO_CACHE = {"MLDIAG_CACHE": "0"}


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--runs", type=int, default=21)
    args = p.parse_args()
    recipe = str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")
    commands: dict[str, Command] = {
        LIMIT: limit_command(recipe),
        "mldiag-provision --version": [*cli(), "--version"],
        "mldiag-provision --help": [*cli(), "--help"],
        "mldiag-provision --help (no writable cache)": ([*cli(), "--help"], NO_CACHE),
        "mldiag-provision validate (TPU)": [*cli(), "validate", recipe],
        "mldiag-provision validate (TPU, no writable cache)": ([*cli(), "validate", recipe],
                                                               NO_CACHE),
    }
    with Bench() as bench:
        samples = bench.paired(commands, args.runs)
    ok = report("start-up", samples, {
        "mldiag-provision --version": ("x", 2.0),
        "mldiag-provision --help (no writable cache)": ("x-of:mldiag-provision --help", 1.10),
        "mldiag-provision validate (TPU, no writable cache)":
            ("x-of:mldiag-provision validate (TPU)", 1.10)})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
