#!/usr/bin/env python3
"""Benchmark: mldiag-provision's overhead over the minimal terraform commands a person would
type for the same result, on the offline stack (real terraform binary, offline stand-in
providers, stand-in cloud and Cloud Storage listing).

Each scenario is a pair of runs from the same starting point, one by the tool (a fresh
``python -m mldiag_provision`` process, as a user runs it: interpreter start, recipe
preflight, render, lock, log, policy gate, JSON parsing, output) and one by hand (the bare
terraform commands, in a directory holding the same rendered stack). The order inside a
pair rotates (tool first, then hand first, ...) so that drifts in load hit both sides; the
figure is the median over the pairs of the ratio tool / hand, with its quartiles and range.
With ``--baseline PYTHON`` each pair also runs the tool as installed for that interpreter
(another checkout): before and after measured side by side under the same load.

  first    nothing there yet. Tool: ``apply RECIPE -o DIR --stage project --auto-approve`` into
           an empty directory (render, init, plan, apply). Hand: a fresh copy of the same
           rendered stack (no .terraform, no state): ``terraform init`` then
           ``terraform apply -auto-approve``.
  apply    initialised, nothing applied: ``apply --stage project --auto-approve`` vs
           ``terraform apply -auto-approve``.
  plan     steady state after an apply: ``plan --stage project`` vs ``terraform plan``.
  destroy  applied: ``destroy --stage project --auto-approve`` vs
           ``terraform destroy -auto-approve``.

``--stage project`` keeps the tool to the stack's root directory, the one the hand commands
work in (the in-cluster stages need a cluster API; the stand-in cluster has none here).

CPU: the tool runs under a small wrapper that writes, at exit, its own CPU time
(``getrusage(RUSAGE_SELF)``: the mldiag-provision process) and its children's
(``RUSAGE_CHILDREN``: terraform, the providers it starts, and the policy gate's Rego worker).
The self-CPU share is self / (self + children); the hand side's CPU is its children's.

Bytecode: :class:`_bench.Bench` compiles the package into a temporary pycache prefix, and
one warm-up round of every scenario fills it for the standard library, the third-party
packages and the stand-in providers (Python programs too), so every timed run reads bytecode
and none writes it, on both sides.

Target: the median paired overhead under 10 % for plan and apply (issue 16).

Usage: .venv/bin/python tests/benchmarks/terraform_overhead.py [--runs N] [--recipe FILE]
       [--only plan,apply] [--baseline OTHER_CHECKOUT/.venv/bin/python]
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
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(TESTS / "benchmarks"))

# Runs mldiag-provision as `python -m` does and writes its own and its children's CPU
# seconds to $MLDIAG_BENCH_CPU at exit (sys.exit included).
WRAPPER = """\
import atexit, os, resource, runpy, sys
def _dump():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ["MLDIAG_BENCH_CPU"], "w") as f:
        f.write(f"{s.ru_utime + s.ru_stime} {c.ru_utime + c.ru_stime}")
atexit.register(_dump)
sys.argv = ["mldiag-provision", *sys.argv[1:]]
runpy.run_module("mldiag_provision", run_name="__main__", alter_sys=True)
"""
TERRAFORM_STATE = ("terraform.tfstate", "terraform.tfstate.backup")


@dataclass
class Scenario:
    name: str
    tool: list[str]  # mldiag-provision arguments
    hand: list[list[str]]  # terraform commands (argv after "terraform")
    hand_ok: tuple[int, ...] = (0,)
    # per pair: "hand" -> (wall s, CPU s); "tool" / "baseline" -> (wall s, self CPU s,
    # children CPU s)
    runs: list[dict[str, tuple[float, ...]]] = field(default_factory=list)


class Run:
    """One benchmark session: the stand-in, the work and hand directories, the timers."""

    def __init__(self, tmp: Path, recipe: Path, env: dict[str, str],
                 baseline: str | None = None) -> None:
        self.tmp = tmp
        self.python = {"tool": sys.executable, "baseline": baseline or ""}
        self.recipe = recipe
        self.env = env
        self.cloud = tmp / "cloud"
        self.work = tmp / "work"  # the tool's stack directory
        self.hand = tmp / "hand"  # the person's: the same rendered files
        self.pristine = tmp / "rendered"  # the rendered stack, as the tool wrote it
        self.cpu_file = tmp / "cpu.txt"
        self.terraform = shutil.which("terraform") or "terraform"

    # -- running -------------------------------------------------------------------------
    def _check(self, proc: subprocess.CompletedProcess[bytes], argv: list[str],
               ok: tuple[int, ...]) -> None:
        if proc.returncode not in ok:
            sys.exit(f"{' '.join(argv)} exited {proc.returncode}:\n"
                     f"{proc.stderr.decode()[-3000:]}\n{proc.stdout.decode()[-2000:]}")

    def tool(self, args: list[str], env: dict[str, str] | None = None, who: str = "tool",
             ) -> tuple[float, float, float]:
        """(wall s, self CPU s, children CPU s) of one mldiag-provision run (``who``:
        "tool", this interpreter's package, or "baseline", --baseline's)."""
        argv = [self.python[who], "-c", WRAPPER, *args]
        run_env = {**(env or self.env), "MLDIAG_BENCH_CPU": str(self.cpu_file)}
        self.cpu_file.unlink(missing_ok=True)
        t = time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, env=run_env, stdin=subprocess.DEVNULL,
                              capture_output=True, check=False)
        wall = time.perf_counter() - t
        self._check(proc, ["mldiag-provision", *args], (0,))
        own, children = (float(x) for x in self.cpu_file.read_text().split())
        return wall, own, children

    def terraform_run(self, commands: list[list[str]], cwd: Path, ok: tuple[int, ...],
                      env: dict[str, str] | None = None) -> tuple[float, float]:
        """(wall s, CPU s) of the hand commands, one terraform process each, in sequence."""
        wall = cpu = 0.0
        for args in commands:
            argv = [self.terraform, *args]
            before = _children_cpu()
            t = time.perf_counter()
            proc = subprocess.run(argv, cwd=cwd, env=env or self.env,
                                  stdin=subprocess.DEVNULL, capture_output=True, check=False)
            wall += time.perf_counter() - t
            cpu += _children_cpu() - before
            self._check(proc, argv, ok)
        return wall, cpu

    # -- starting points (untimed) -----------------------------------------------------------
    def empty_cloud(self) -> None:
        shutil.rmtree(self.cloud, ignore_errors=True)
        self.cloud.mkdir()

    def no_state(self, where: Path) -> None:
        for name in TERRAFORM_STATE:
            (where / name).unlink(missing_ok=True)

    def applied(self, where: Path, env: dict[str, str] | None = None) -> None:
        """``where`` (initialised) applied into an empty cloud, by terraform itself."""
        self.empty_cloud()
        self.no_state(where)
        self.terraform_run([["apply", "-auto-approve", "-input=false"]], where, (0,), env)

    def fresh_hand_copy(self) -> None:
        shutil.rmtree(self.hand, ignore_errors=True)
        shutil.copytree(self.pristine, self.hand, symlinks=True)


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _tool_args(verb: str, recipe: Path, work: Path) -> list[str]:
    args = [verb, str(recipe), "-o", str(work), "--stage", "project"]
    return args if verb == "plan" else [*args, "--auto-approve"]


def scenarios(r: Run) -> dict[str, Scenario]:
    return {
        "first": Scenario("first", _tool_args("apply", r.recipe, r.work),
                          [["init", "-input=false"], ["apply", "-auto-approve", "-input=false"]]),
        "apply": Scenario("apply", _tool_args("apply", r.recipe, r.work),
                          [["apply", "-auto-approve", "-input=false"]]),
        "plan": Scenario("plan", _tool_args("plan", r.recipe, r.work), [["plan", "-input=false"]]),
        "destroy": Scenario("destroy", _tool_args("destroy", r.recipe, r.work),
                            [["destroy", "-auto-approve", "-input=false"]]),
    }


def prepare(r: Run, name: str, who: str, env: dict[str, str] | None = None) -> Path:
    """Put the starting point of ``name`` in place for ``who`` ("tool" or "hand"); returns
    the directory the hand commands run in."""
    if name == "first":
        r.empty_cloud()
        if who == "tool":
            shutil.rmtree(r.work, ignore_errors=True)
        else:
            r.fresh_hand_copy()
        return r.hand
    # The other scenarios share the tool's directory (initialised, its stamp current).
    if name == "apply":
        r.empty_cloud()
        r.no_state(r.work)
    else:
        r.applied(r.work, env)
    return r.work


def pair(r: Run, s: Scenario, turn: int) -> None:
    """One run of each side, in an order that rotates with ``turn``."""
    sides = ["tool", "hand"] + (["baseline"] if r.python["baseline"] else [])
    sides = sides[turn % len(sides):] + sides[:turn % len(sides)]
    if turn // len(sides) % 2:
        sides.reverse()
    result: dict[str, tuple[float, ...]] = {}
    for who in sides:
        where = prepare(r, s.name, "hand" if who == "hand" else "tool")
        if who == "hand":
            result["hand"] = r.terraform_run(s.hand, where, s.hand_ok)
        else:
            result[who] = r.tool(s.tool, who=who)
    s.runs.append(result)


def report(chosen: list[Scenario], runs: int, recipe: str) -> bool:
    version = subprocess.run(["terraform", "version"], capture_output=True,
                             text=True).stdout.split()[1]
    print(f"recipe {recipe}, {runs} pairs per scenario (terraform {version}, offline "
          f"stand-in providers, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    print("  wall: median seconds; overhead: median of the paired ratios tool/hand - 1, "
          "[quartiles] and (min..max); CPU: median seconds (self: the mldiag-provision "
          "process; children: terraform, providers, the gate's Rego worker); CPU over: "
          "median of the paired ratios (self + children) / hand CPU - 1 (less sensitive "
          "to load than wall)")
    print(f"  {'scenario':<19} {'tool':>6} {'hand':>6} {'overhead':>9} {'quartiles':>17} "
          f"{'min..max':>17}   {'self CPU':>8} {'children':>8} {'hand CPU':>8} {'self share':>10} "
          f"{'CPU over':>9}")
    ok = True
    for s in chosen:
        for who in ("baseline", "tool"):
            if who not in s.runs[0]:
                continue
            tool = [r[who] for r in s.runs]
            hand = [r["hand"] for r in s.runs]
            ratios = sorted(t[0] / h[0] - 1 for t, h in zip(tool, hand, strict=True))
            med = statistics.median(ratios)
            q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [med, med, med]
            share = statistics.median(t[1] / (t[1] + t[2]) for t in tool)
            cpu_over = statistics.median((t[1] + t[2]) / h[1] - 1
                                         for t, h in zip(tool, hand, strict=True))
            target = ""
            if s.name in ("plan", "apply") and who == "tool":
                met = med < 0.10
                ok &= met
                target = f"   target < 10 %: {'OK' if met else 'OVER'}"
            name = s.name + (" (baseline)" if who == "baseline" else "")
            print(f"  {name:<19} {statistics.median(t[0] for t in tool):6.2f} "
                  f"{statistics.median(h[0] for h in hand):6.2f} {med * 100:8.1f}% "
                  f"[{q[0] * 100:6.1f}, {q[2] * 100:6.1f}]% ({ratios[0] * 100:6.1f}.."
                  f"{ratios[-1] * 100:6.1f})%   {statistics.median(t[1] for t in tool):8.2f} "
                  f"{statistics.median(t[2] for t in tool):8.2f} "
                  f"{statistics.median(h[1] for h in hand):8.2f} {share * 100:9.1f}% "
                  f"{cpu_over * 100:8.1f}%{target}")
    return ok


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=11, help="pairs per scenario (default 11)")
    p.add_argument("--recipe", default=str(ROOT / "recipes/tpu-v4-2x2x4-autopilot.yaml"))
    p.add_argument("--only", default="first,apply,plan,destroy",
                   help="comma-separated scenarios (default: all four)")
    p.add_argument("--baseline", metavar="PYTHON",
                   help="also time the tool as installed for this interpreter (e.g. another "
                        "checkout's .venv/bin/python): a before/after comparison in one run, "
                        "each side in every pair")
    args = p.parse_args(argv)
    if shutil.which("terraform") is None:
        print("terraform is not on PATH", file=sys.stderr)
        return 1

    from _bench import Bench

    from engine.conftest import offline_recipe
    from mldiag_provision.sandbox.gcs import GcsStandIn
    from mldiag_provision.sandbox.mirror import install

    tmp = Path(tempfile.mkdtemp(prefix="mldiag-bench-"))
    try:
        standin = install(tmp / "standin")
        cloud = tmp / "cloud"
        cloud.mkdir()
        with GcsStandIn(cloud) as gcs:
            os.environ.update({**standin.env, "MLDIAG_STANDIN_CLOUD": str(cloud),
                               "STORAGE_EMULATOR_HOST": gcs.url, "NO_COLOR": "1",
                               "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"})
            with Bench() as bench:
                recipe = offline_recipe(Path(args.recipe), tmp / "recipe.yaml")
                r = Run(tmp, recipe, bench.env, args.baseline)
                all_s = scenarios(r)
                chosen = [all_s[n] for n in args.only.split(",")]
                warm_env = bench._write_env  # bytecode written: the warm-up round only
                # Warm-up (bytecode of the tool, the gate's worker and the providers; page
                # cache), and the rendered stack the hand side copies.
                for who in ("baseline", "tool") if args.baseline else ("tool",):
                    shutil.rmtree(r.work, ignore_errors=True)
                    r.empty_cloud()
                    for verb in ("apply", "plan", "destroy"):
                        r.tool(_tool_args(verb, recipe, r.work), warm_env, who=who)
                ignore = shutil.ignore_patterns(".terraform", ".mldiag", "terraform.tfstate*",
                                                 "tfplan")
                shutil.copytree(r.work, r.pristine, ignore=ignore, symlinks=True)
                r.fresh_hand_copy()
                r.terraform_run([["init", "-input=false"]], r.hand, (0,), warm_env)
                r.applied(r.hand, warm_env)
                r.terraform_run([["plan", "-input=false"]], r.hand, (0,), warm_env)
                r.terraform_run([["destroy", "-auto-approve"]], r.hand, (0,), warm_env)
                for i in range(args.runs):
                    for s in chosen:
                        pair(r, s, i)
                    done = ", ".join(f"{s.name} {s.runs[-1]['tool'][0] / s.runs[-1]['hand'][0]:.2f}"
                                     for s in chosen)
                    print(f"  pair {i + 1}/{args.runs}: tool/hand {done}", file=sys.stderr)
                ok = report(chosen, args.runs, Path(args.recipe).name)
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
