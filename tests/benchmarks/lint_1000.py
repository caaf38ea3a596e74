"""Benchmark: ``mldiag-provision lint`` over 1,000 manifests, one fresh process, next to the
interpreter floor (``python -c pass``) measured in the same run.

Writes 1,000 manifest files to a temporary directory (a third each: the seed's v4 2x2x4 Job
with its headless Service, the seed's v5e 2x4 Pod, a v6e 4x4 two-slice JobSet; names vary),
then times ``mldiag-provision lint DIR --autopilot`` as a user runs it: interpreter start,
imports, reading, YAML with positions, Kubernetes schema validation and every rule (Autopilot
and ML Diagnostics rules on). Bytecode is compiled first (see ``_bench.py``).
Target (issue 16): median under 1 s on the project's machine (2 cores).

Memory (issue 32 item 4: under 55 MiB): after the timed runs, the peak resident set of the
same command, one fresh process per run: with ``--jobs 1`` (one process) the child's
``ru_maxrss`` from ``wait4``; with ``--jobs 2`` (lint forks a second process for the schema
checks of a large input) also the process tree, each process's ``VmHWM`` read from ``/proc``
every 2 ms while it runs: the largest single process, the sum of the processes' peaks (an
upper bound of the tree's peak: the two peaks need not coincide, and the forked child shares
the pages it has not written with its parent, which both resident sets count) and the
largest sum of their ``Pss`` (each shared page counted once, divided among the processes)
read at one moment.
The load average is printed with the figures; peak memory does not depend on it.

    .venv/bin/python tests/benchmarks/lint_1000.py [--files 1000] [--runs 7] [--mem-runs 3]

Exits 1 when the median time or the peak memory exceeds its target, so the script can gate
a pipeline.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import ROOT, Bench, cli, report

DATA = ROOT / "tests" / "lint" / "data"
TARGET_MS = 1000.0
TARGET_MIB = 55.0

JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
  labels: {{managed-mldiagnostics-gke: "true"}}
  annotations:
    alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool
spec:
  replicatedJobs:
  - name: slice
    replicas: 2
    template:
      spec:
        completionMode: Indexed
        completions: 4
        parallelism: 4
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            nodeSelector:
              cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
              cloud.google.com/gke-tpu-topology: 4x4
            containers:
            - name: train
              image: us-docker.pkg.dev/p/r/maxtext:latest
              ports: [{{containerPort: 8471}}, {{containerPort: 8080}}]
              env:
              - {{name: MEGASCALE_NUM_SLICES, value: "2"}}
              resources:
                requests: {{google.com/tpu: 4, cpu: 100, memory: 500G}}
                limits: {{google.com/tpu: 4, cpu: 100, memory: 500G}}
"""


def write_manifests(out: Path, count: int) -> None:
    """``count`` manifest files ``m0000.yaml``... in ``out`` (all pass lint)."""
    multi = (DATA / "available-chips-multihost.yaml").read_text()
    single = (DATA / "available-chips-singlehost.yaml").read_text()
    for i in range(count):
        kind = i % 3
        if kind == 0:
            text = multi.replace("tpu-available-chips", f"chips-{i}").replace(
                "headless-svc", f"svc-{i}")
        elif kind == 1:
            text = single.replace("tpu-job-jax-v5", f"jax-v5-{i}")
        else:
            text = JOBSET.format(name=f"train-{i}")
        (out / f"m{i:04d}.yaml").write_text(text)


GNU_TIME = "/usr/bin/time"


def peak_rss(argv: Sequence[str], env: dict[str, str]) -> float:
    """MiB: the peak resident set of one run of ``argv``: GNU time's ``%M`` where
    ``/usr/bin/time`` is GNU time, else ``ru_maxrss`` from ``wait4``. (Linux records in the
    latter the resident set of the process that spawned the command, as it was at the
    spawn; so a command smaller than this benchmark's own process reads as that size.)"""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as log:
        timed = os.path.exists(GNU_TIME) and subprocess.run(
            [GNU_TIME, "-f", "%M", "true"], capture_output=True, check=False).returncode == 0
        full = [GNU_TIME, "-f", "%M", "-o", log.name, *argv] if timed else list(argv)
        proc = subprocess.Popen(full, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} exited {proc.returncode}")
        kib = int(log.read().split()[-1]) if timed else usage.ru_maxrss
    return kib / 1024


def _hwm(pid: int) -> int | None:
    """KiB: ``VmHWM`` (peak resident set) of process ``pid``, None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _pss(pid: int) -> int | None:
    """KiB: ``Pss`` (the resident set with each shared page divided among the processes
    that map it) of process ``pid``, None once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def tree_peak(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """For one run of ``argv``, in MiB: the largest single process's peak, the sum of every
    process's peak (``VmHWM``) and the largest sum of the processes' ``Pss`` read at one
    moment; and the number of processes seen. Read every 2 ms until the command exits; the
    process's own ``ru_maxrss`` from ``wait4`` bounds the largest from below."""
    proc = subprocess.Popen(list(argv), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    peaks: dict[int, int] = {}
    pss = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = 0
        for p in (proc.pid, *_children(proc.pid)):
            hwm = _hwm(p)
            if hwm is not None:
                peaks[p] = max(peaks.get(p, 0), hwm)
            now += _pss(p) or 0
        pss = max(pss, now)
        time.sleep(0.002)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}")
    largest = max([usage.ru_maxrss, *peaks.values()])
    others = sum(v for p, v in peaks.items() if p != proc.pid)
    own = max(peaks.get(proc.pid, 0), usage.ru_maxrss if not others else 0)
    return largest / 1024, (own + others) / 1024, pss / 1024, len(peaks)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--mem-runs", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Bench() as bench:
        write_manifests(Path(tmp), args.files)
        name = f"lint {args.files} files --autopilot"
        argv = [*cli(), "lint", tmp, "--autopilot"]
        samples = bench.paired({name: argv}, args.runs)
        floor = [peak_rss([sys.executable, "-c", "pass"], bench.env)
                 for _ in range(args.mem_runs)]
        one = {out: [peak_rss([*argv, "--jobs", "1", "-O", out], bench.env)
                     for _ in range(args.mem_runs)] for out in ("text", "json", "sarif")}
        two = [tree_peak([*argv, "--jobs", "2"], bench.env) for _ in range(args.mem_runs)]
    ok = report(f"lint of {args.files} manifests (Autopilot + ML Diagnostics rules), "
                "fresh process each", samples, {name: ("ms", TARGET_MS)})
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"peak resident set (MiB, max of {args.mem_runs} runs; load average {load}; "
          f"target < {TARGET_MIB:g} MiB)")
    print(f"  {'python -c pass':<44} {max(floor):>8.1f}")
    for out, values in one.items():
        met = max(values) < TARGET_MIB
        ok &= met
        print(f"  {name + ' --jobs 1 -O ' + out:<44} {max(values):>8.1f}   "
              f"{'OK' if met else 'OVER'}")
    largest = max(t[0] for t in two)
    total = max(t[1] for t in two)
    pss = max(t[2] for t in two)
    procs = max(t[3] for t in two)
    met = largest < TARGET_MIB
    ok &= met
    print(f"  {name + ' --jobs 2':<44} {largest:>8.1f}   largest process "
          f"({'OK' if met else 'OVER'}); {procs} processes: {total:.1f} the sum of their "
          f"peaks, {pss:.1f} their largest Pss sum")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
