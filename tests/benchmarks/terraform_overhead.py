#!/usr/bin/env python3
"""Benchmark: mldiag-provision's own overhead over running the same terraform commands by
hand, on the offline stack (real terraform binary, offline stand-in providers).

For each scenario the tool runs as a user runs it (a fresh ``python -m mldiag_provision``
process: interpreter start, recipe preflight, render, lock, log, JSON parsing, output); its
per-run log records every terraform argv it ran, and the "by hand" run replays exactly those
argv lists, one terraform process each, in the same directory and from the same state. Runs
alternate (tool, hand, tool, hand, ...) so that drifts in machine load hit both.

  plan     steady state after an apply: ``plan`` (render, plan -out, show -json)
  apply    from nothing: ``apply --auto-approve`` (init, plan, show, apply)
  destroy  ``destroy --auto-approve`` (plan -destroy, show, apply)

Target: the tool's median overhead under 5 % per scenario.

Usage: .venv/bin/python tests/benchmarks/terraform_overhead.py [--runs N] [--recipe FILE]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0, 2):
        raise SystemExit(f"{shlex.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed


def logged_argv(log: Path) -> list[list[str]]:
    """The terraform commands a tool run executed, from its log (``$ argv`` lines)."""
    return [shlex.split(line[2:]) for line in log.read_text().splitlines()
            if line.startswith("$ ")]


def reset(work: Path, cloud: Path, *, keep_state: bool) -> None:
    shutil.rmtree(cloud, ignore_errors=True)
    cloud.mkdir()
    if not keep_state:
        for name in ("terraform.tfstate", "terraform.tfstate.backup"):
            (work / name).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--recipe", default=str(ROOT / "recipes/tpu-v4-2x2x4-autopilot.yaml"))
    args = p.parse_args(argv)
    if shutil.which("terraform") is None:
        print("terraform is not on PATH", file=sys.stderr)
        return 1

    from engine.conftest import offline_recipe
    from standin.mirror import install

    tmp = Path(tempfile.mkdtemp(prefix="mldiag-bench-"))
    try:
        standin = install(tmp / "standin")
        cloud = tmp / "cloud"
        env = {**os.environ, **standin.env, "MLDIAG_STANDIN_CLOUD": str(cloud),
               "NO_COLOR": "1", "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}
        recipe = offline_recipe(Path(args.recipe), tmp / "recipe.yaml")
        work = tmp / "work"
        tool = [sys.executable, "-m", "mldiag_provision"]
        logs = work / ".mldiag/logs"

        def tool_run(cmd: list[str]) -> tuple[float, list[list[str]]]:
            before = set(logs.glob("*.log")) if logs.is_dir() else set()
            elapsed = timed(tool + cmd, ROOT, env)
            (log,) = set(logs.glob("*.log")) - before
            return elapsed, logged_argv(log)

        def hand_run(commands: list[list[str]]) -> float:
            return sum(timed(c, work, env) for c in commands)

        # Warm up: render, init, the provider mirror, the page cache.
        reset(work, cloud, keep_state=False)
        tool_run(["apply", str(recipe), "-o", str(work), "--auto-approve"])
        tool_run(["destroy", str(recipe), "-o", str(work), "--auto-approve"])

        results: dict[str, tuple[list[float], list[float], list[list[str]]]] = {}
        for name in ("plan", "apply", "destroy"):
            tool_t: list[float] = []
            hand_t: list[float] = []
            commands: list[list[str]] = []
            for _ in range(args.runs):
                for who in ("tool", "hand"):
                    # Same starting point for both: an applied stack for plan/destroy,
                    # nothing for apply (and init done: its stamp and .terraform are kept).
                    reset(work, cloud, keep_state=False)
                    if name != "apply":
                        tool_run(["apply", str(recipe), "-o", str(work), "--auto-approve"])
                    if who == "tool":
                        cmd = [name, str(recipe), "-o", str(work)]
                        if name != "plan":
                            cmd.append("--auto-approve")
                        elapsed, commands = tool_run(cmd)
                        tool_t.append(elapsed)
                    else:
                        hand_t.append(hand_run(commands))
            results[name] = (tool_t, hand_t, commands)

        version = subprocess.run(["terraform", "version"], capture_output=True,
                                 text=True).stdout.split()[1]
        print(f"recipe {Path(args.recipe).name}, {args.runs} runs each, median seconds "
              f"(terraform {version}, offline stand-in providers, {os.cpu_count()} CPUs)")
        print(f"{'scenario':<9} {'tool':>7} {'by hand':>8} {'overhead':>9} "
              f"{'(best of each)':>15}  terraform commands")
        worst = 0.0
        for name, (tool_t, hand_t, commands) in results.items():
            t, h = statistics.median(tool_t), statistics.median(hand_t)
            over = (t - h) / h * 100
            best = (min(tool_t) - min(hand_t)) / min(hand_t) * 100
            worst = max(worst, over)
            cmds = ", ".join(" ".join(c[1:2]) for c in commands)
            print(f"{name:<9} {t:7.3f} {h:8.3f} {over:8.1f}% {best:14.1f}%  {cmds}")
        print(f"worst overhead {worst:.1f}% (target < 5 %)")
        return 0 if worst < 5 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
