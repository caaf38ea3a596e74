"""``smoke RECIPE --local``: run the smoke program on this machine's CPU, then read its
profile back with XProf.

XLA's CPU client makes as many devices as ``--xla_force_host_platform_device_count`` asks
(an XLA flag, https://docs.jax.dev/en/latest/sharded-computation.html "run on 8 CPU
devices"), so one process plays the whole slice: same mesh, same collective, same profile
as in the cluster, only ``jax.process_count()`` is 1. The program and the XProf check each
run in their own Python process (``sys.executable``) with a timeout; their output goes to
``PROFILE_DIR/smoke.log``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldiag_provision.errors import UsageError, extra_hint
from mldiag_provision.plan.smoke import PROGRAM, SmokeSpec, program_args

# More simulated devices only make the CPU run slow; no example slice comes near it.
MAX_LOCAL_DEVICES = 512
PREFIX = "MLDIAG_SMOKE "


@dataclass
class LocalResult:
    """One slice's local smoke run. ``report``: the program's JSON line (None when it printed
    none); ``profile``: the XProf check's JSON (None when it did not run)."""

    spec: SmokeSpec
    profile_dir: Path
    report: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    program_s: float = 0.0
    check_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {"slice": self.spec.slice, "ok": self.ok, "errors": self.errors,
                "expected": {"devices": self.spec.devices, "slices": self.spec.slices,
                             "mesh": dict(self.spec.mesh)},
                "profileDir": str(self.profile_dir), "report": self.report,
                "profile": self.profile, "seconds": {"program": round(self.program_s, 2),
                                                     "xprofCheck": round(self.check_s, 2)}}


def require_packages() -> None:
    """JAX and xprof must be importable by this Python.

    Raises:
      UsageError: one is missing, with the install command.
    """
    missing = [m for m in ("jax", "xprof") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"running the smoke program on this machine (smoke --local, and "
                         f"verify --smoke in the sandbox) needs {' and '.join(missing)} in "
                         f"this Python ({sys.executable})",
                         hint=extra_hint("smoke", "jax for the CPU, xprof"))


def local_env(devices: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the program: JAX on the CPU with ``devices`` simulated devices
    (an XLA_FLAGS device count already there is replaced)."""
    env = dict(os.environ if base is None else base)
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    flags.append(f"--xla_force_host_platform_device_count={devices}")
    env.update(XLA_FLAGS=" ".join(flags), JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
    return env


def _json_line(text: str, prefix: str = "") -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        if line.startswith(prefix) and line[len(prefix):].lstrip().startswith("{"):
            try:
                value = json.loads(line[len(prefix):])
            except ValueError:
                continue
            return value if isinstance(value, dict) else None
    return None


def run_local(spec: SmokeSpec, *, name: str, profile_dir: Path, timeout_s: float = 600,
              python: str | None = None) -> LocalResult:
    """Run the program for ``spec`` with simulated devices, then the XProf check.

    Args:
      profile_dir: where jax.profiler writes (created); ``smoke.log`` lands there too.
      timeout_s: bound of each of the two processes, in seconds.
    Returns:
      the result; ``errors`` says what failed (device count, collective, profile, timeout).
    Raises:
      UsageError: more devices than :data:`MAX_LOCAL_DEVICES` would be simulated.
    """
    if spec.devices > MAX_LOCAL_DEVICES:
        raise UsageError(f"slice {spec.slice} has {spec.devices} devices; the local smoke "
                         f"simulates at most {MAX_LOCAL_DEVICES}",
                         hint="run it in the cluster: mldiag-provision verify RECIPE --smoke")
    python = python or sys.executable
    profile_dir.mkdir(parents=True, exist_ok=True)
    result = LocalResult(spec=spec, profile_dir=profile_dir)
    log = profile_dir / "smoke.log"
    cmd = [python, str(PROGRAM), *program_args(spec, name=name, profile_dir=str(profile_dir),
                                               local=True)]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=local_env(spec.devices), capture_output=True,
                              text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        result.program_s = time.monotonic() - started
        result.errors.append(f"the smoke program did not finish in {timeout_s:.0f} s")
        return result
    result.program_s = time.monotonic() - started
    log.write_text(f"$ {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}", encoding="utf-8")
    result.report = _json_line(proc.stdout, PREFIX)
    if result.report is None:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        result.errors.append(f"the smoke program printed no report (exit {proc.returncode}): "
                             f"{tail}")
        return result
    result.errors.extend(str(e) for e in result.report.get("errors") or [])
    if proc.returncode != 0 and not result.errors:
        result.errors.append(f"the smoke program exited {proc.returncode}")
    if not result.report.get("collective"):
        return result  # nothing was profiled
    started = time.monotonic()
    try:
        check = subprocess.run([python, "-m", "mldiag_provision.smoke.xprof_check",
                                str(profile_dir)], env=local_env(1), capture_output=True,
                               text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        result.check_s = time.monotonic() - started
        result.errors.append(f"the XProf check did not finish in {timeout_s:.0f} s")
        return result
    result.check_s = time.monotonic() - started
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"\n$ xprof_check {profile_dir}\n{check.stdout}\n{check.stderr}")
    result.profile = _json_line(check.stdout)
    if result.profile is None:
        result.errors.append(f"the XProf check printed no result (exit {check.returncode}); "
                             f"see {log}")
    else:
        result.errors.extend(f"profile: {e}" for e in result.profile.get("errors") or [])
    return result
