"""Benchmark: cold ``mldiag-provision validate RECIPE`` next to the interpreter floor and the
limit (issue 32).

Each run is a new process, as in CI; bytecode is compiled first and every row is timed in the
same run, alternating (floor, limit, command, ...; see ``_bench.py``). Rows:

- ``python -c pass``: the floor;
- the limit: the floor + ``import yaml`` + libyaml loading the recipe (no tool code);
- ``validate``, start-up cache filled (as on a workstation after the first run);
- ``validate`` without a writable cache (``MLDIAG_CACHE=0``: nothing read or written, as in a
  CI image with ``PYTHONDONTWRITEBYTECODE`` and an empty cache home; ``.pyc`` present);
- with ``--unbuilt``, also that case without the data built ahead (``MLDIAG_PREBUILT=0``:
  what such a CI image paid before ``mldiag_provision.prebuild``).

Targets (issue 32): the filled row at most 7x the floor in CPU; the no-cache row within 10 %
of the filled one in CPU.

    .venv/bin/python tests/benchmarks/validate_cold.py [--runs 21] [--unbuilt] [RECIPE]

Exit code 1 when a target is missed, so the script can gate a pipeline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import LIMIT, ROOT, Bench, Command, cli, limit_command, report

FILLED = "validate (start-up cache filled)"
NO_CACHE = "validate (no writable cache: MLDIAG_CACHE=0)"
UNBUILT = "validate (no cache, MLDIAG_PREBUILT=0: before #32)"


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("recipe", nargs="?",
                   default=str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"))
    p.add_argument("--runs", type=int, default=21)
    p.add_argument("--unbuilt", action="store_true",
                   help="also time the no-cache start without the data built ahead")
    args = p.parse_args()
    validate = [*cli(), "validate", args.recipe]
    commands: dict[str, Command] = {LIMIT: limit_command(args.recipe), FILLED: validate,
                                    NO_CACHE: (validate, {"MLDIAG_CACHE": "0"})}
    if args.unbuilt:
        commands[UNBUILT] = (validate, {"MLDIAG_CACHE": "0", "MLDIAG_PREBUILT": "0"})
    with Bench() as bench:
        samples = bench.paired(commands, args.runs)
    ok = report(f"cold validate of {Path(args.recipe).name}", samples,
                {FILLED: ("cpu-x", 7.0), NO_CACHE: (f"x-of:{FILLED}", 1.10)})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
