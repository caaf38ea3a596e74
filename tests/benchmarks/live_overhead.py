"""Benchmark: what the live preflight's own code adds on top of Google Cloud round trips.

Runs the checks of a typical recipe (GKE Standard, reservation: 7 checks, ~15 calls) against
mldiag_provision/sandbox/gcp_apis.py (TEST INFRASTRUCTURE) in one process:
  * cold import of the six client libraries (paid once per `preflight --live`/plan/apply);
  * wall time with a 0-latency local server (client construction + requests + parsing +
    check logic: the code's overhead, plus the local server's own work);
  * wall time with every API answering after DELAY seconds, next to the longest chain of
    sequential calls x DELAY (what the round trips alone would cost when run concurrently).

    .venv/bin/python tests/benchmarks/live_overhead.py [--runs 5] [--delay 0.15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--delay", type=float, default=0.15)
    p.add_argument("--recipe", default=str(ROOT / "recipes" /
                                           "tpu-v5p-2x2x4-standard-reservation.yaml"))
    args = p.parse_args()
    started = time.perf_counter()
    import google.cloud.cloudquotas_v1
    import google.cloud.compute_v1
    import google.cloud.container_v1
    import google.cloud.iam_admin_v1
    import google.cloud.resourcemanager_v3
    import google.cloud.service_usage_v1  # noqa: F401
    import_s = time.perf_counter() - started

    from live.conftest import all_pass_project
    from mldiag_provision.cli.commands.preflight import _checked_plan
    from mldiag_provision.preflight.live.checks import run_live_checks
    from mldiag_provision.preflight.live.target import build_target
    from mldiag_provision.render.stack import render_stack
    from mldiag_provision.sandbox.gcp_apis import GcpApis

    _, plan = _checked_plan(args.recipe)
    t0 = time.perf_counter()
    target = build_target(plan, render_stack(plan))
    target_s = time.perf_counter() - t0
    print(f"cold import of the six clients: {import_s * 1000:.0f} ms")
    print(f"target (render in memory + permission list): {target_s * 1000:.0f} ms")
    for delay in (0.0, args.delay):
        fp = all_pass_project()
        fp.delay_s = {api: delay for api in ("cloudresourcemanager", "iam", "serviceusage",
                                              "container", "compute", "cloudquotas")}
        walls, calls = [], 0.0
        with GcpApis(fp, token="bench") as apis:
            os.environ.update(apis.env())
            for _ in range(args.runs):
                rows, timing = run_live_checks(target, timeout_s=10)
                assert all(r.status == "PASS" for r in rows), rows
                walls.append(timing["wall_s"])
                calls = timing["calls"]
        chain = 2 * delay  # testIamPermissions, then services.list waits on it (worst chain)
        med = statistics.median(walls)
        print(f"delay {delay * 1000:.0f} ms/call: {calls:.0f} calls, wall median "
              f"{med * 1000:.0f} ms (min {min(walls) * 1000:.0f}); longest sequential chain "
              f"{chain * 1000:.0f} ms -> code + local server add {(med - chain) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
