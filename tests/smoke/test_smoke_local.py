"""`mldiag-provision smoke RECIPE --local`: real JAX on the CPU (XLA simulating the slice's
devices) and the real xprof package reading the profile back.

The CI shapes of issue 17: a v5e 2x4 slice (8 devices) and a v4 2x2x4 slice (16 devices);
plus a v6e 4x4 multislice (2 x 16 devices, DCN axis). Each run's timings are printed (``-s``)
and asserted to be bounded. Faults: a wrong device count, a collective that skips an axis
and an unreadable profile each fail with a message that names them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mldiag_provision.plan.smoke import PROGRAM, SmokeSpec, program_args, spec_for
from mldiag_provision.smoke.local import local_env

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CASES = {  # recipe -> (devices, slices, mesh)
    "tpu-v5e-2x4-single-host-autopilot": (8, 1, {"x": 2, "y": 4}),
    "tpu-v4-2x2x4-autopilot": (16, 1, {"x": 2, "y": 2, "z": 4}),
    "tpu-v6e-4x4-multislice-autopilot": (32, 2, {"dcn": 2, "x": 4, "y": 4}),
}


# each case starts JAX in a process; the fast lane keeps the multi-slice one (the most axes)
@pytest.mark.parametrize("stem", [
    pytest.param(stem, marks=() if CASES[stem][1] > 1 else pytest.mark.slow)
    for stem in sorted(CASES)])
def test_local_smoke_passes_with_real_jax_and_xprof(stem: str, tmp_path: Path, cli) -> None:
    devices, slices, mesh = CASES[stem]
    started = time.monotonic()
    code, out, err = cli("smoke", str(ROOT / "recipes" / f"{stem}.yaml"), "--local",
                         "--profile-dir", str(tmp_path), "-O", "json")
    elapsed = time.monotonic() - started
    assert code == 0, out + err
    report = json.loads(out)
    [one] = report["slices"]
    rep = one["report"]
    assert rep["devices"] == devices and rep["platform"] == "cpu"
    assert rep["mesh"] == mesh
    assert len(rep["devices_by_slice"]) == slices
    assert set(rep["devices_by_slice"].values()) == {devices // slices}
    n = devices
    assert rep["collective"]["got"] == rep["collective"]["expected"] == n * (n + 1) / 2
    prof = one["profile"]
    assert prof["ok"] and prof["xplane_files"] and prof["overview_rows"] > 0
    assert prof["step_events"] > 0 and prof["trace_events"] > prof["step_events"]
    assert Path(prof["session"]).is_relative_to(tmp_path)
    print(f"\nlocal smoke {stem}: {devices} devices, program {one['seconds']['program']} s, "
          f"xprof check {one['seconds']['xprofCheck']} s, whole command {elapsed:.1f} s")
    assert elapsed < 300


def _program(spec: SmokeSpec, tmp_path: Path, simulated: int,
             wrapper: list[str] | None = None) -> tuple[int, dict]:
    args = program_args(spec, name="t", profile_dir=str(tmp_path / "p"), local=True)
    proc = subprocess.run([sys.executable, *(wrapper or []), str(PROGRAM), *args],
                          env=local_env(simulated), capture_output=True, text=True,
                          timeout=300, check=False)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("MLDIAG_SMOKE ")][-1]
    return proc.returncode, json.loads(line.removeprefix("MLDIAG_SMOKE "))


def _spec(devices: int, mesh: tuple[tuple[str, int], ...], slices: int = 1) -> SmokeSpec:
    return SmokeSpec(slice="s", kind="tpu", devices=devices, per_slice=devices // slices,
                     processes=1, slices=slices, vms=1, devices_per_vm=devices, mesh=mesh)


def test_wrong_device_count_fails(tmp_path: Path) -> None:
    code, rep = _program(_spec(8, (("x", 2), ("y", 4))), tmp_path, simulated=6)
    assert code == 1 and rep["ok"] is False
    assert "jax.device_count() is 6, expected 8" in rep["errors"]
    assert "collective" not in rep  # no mesh of 8 on 6 devices


def test_collective_that_skips_an_axis_fails(tmp_path: Path) -> None:
    code, rep = _program(_spec(8, (("x", 2), ("y", 4))), tmp_path, simulated=8,
                         wrapper=[str(HERE / "fault_psum.py"), "y"])
    assert code == 1 and rep["ok"] is False
    assert rep["collective"]["ok"] is False
    assert rep["collective"]["got"] != rep["collective"]["expected"] == 36
    assert any("the collective gave" in e for e in rep["errors"])


def test_multislice_with_a_short_slice_fails(tmp_path: Path) -> None:
    # 2 slices of 8 expected, 12 devices there: the split gives 8 + 4
    code, rep = _program(_spec(16, (("dcn", 2), ("x", 2), ("y", 4)), slices=2), tmp_path,
                         simulated=12)
    assert code == 1
    assert "slice 1 has 4 devices, expected 8" in rep["errors"]


def test_unreadable_profile_fails_the_xprof_check(tmp_path: Path) -> None:
    session = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    (session / "host.xplane.pb").write_bytes(os.urandom(4096))
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision.smoke.xprof_check",
                           str(tmp_path)], capture_output=True, text=True, timeout=120,
                          check=False)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 1 and result["ok"] is False
    assert any("could not build" in e for e in result["errors"])


def test_missing_profile_fails_the_local_run(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision.smoke.xprof_check",
                           str(tmp_path)], capture_output=True, text=True, timeout=120,
                          check=False)
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and "no profile session" in result["errors"][0]


def test_text_output_and_usage_errors(tmp_path: Path, cli) -> None:
    recipe = str(ROOT / "recipes" / "tpu-v5e-2x4-single-host-autopilot.yaml")
    code, out, err = cli("smoke", recipe)
    assert code == 2 and "verify RECIPE -o DIR --smoke" in err
    code, out, err = cli("smoke", recipe, "--local", "--slice", "nope")
    assert code == 2 and "no such slice" in err
    code, out, _ = cli("smoke", recipe, "--local", "--profile-dir", str(tmp_path))
    assert code == 0 and "PASS" in out and "1 of 1 slice(s) passed" in out


def test_spec_of_each_example_matches_the_catalog(catalog) -> None:
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan

    seen = {}
    for recipe in sorted((ROOT / "recipes").glob("*.yaml")):
        res = check_file(str(recipe), catalog)
        plan = build_plan(res.parsed.recipe, res.shapes, catalog)
        for sp in plan.slices:
            spec = spec_for(sp, plan)
            size = 1
            for _, s in spec.mesh:
                size *= s
            assert size == spec.devices == spec.per_slice * spec.slices, (recipe, spec)
            seen[(recipe.stem, sp.name)] = spec
    tpu7x = seen[("tpu7x-2x2x2-autopilot", next(s for r, s in seen if r.startswith("tpu7x-2"
                                                                                   "x2x2")))]
    assert dict(tpu7x.mesh) == {"x": 2, "y": 2, "z": 2, "core": 2} and tpu7x.devices == 16
    gpu = next(v for (r, _), v in seen.items() if r == "gpu-h100-autopilot")
    assert gpu.kind == "gpu" and dict(gpu.mesh) == {"node": 2, "gpu": 8} and gpu.devices == 16


def _load_program():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mldiag_smoke_program", PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_registers_the_run_with_the_sdk_when_it_is_there(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A module named like the SDK (test infrastructure) records the call; the program passes
    the run name, the profile's gs:// path and the project/region; without the SDK it says
    so; a raising SDK (missing IAM, SDK README) does not fail the smoke."""
    import types

    import jax

    program = _load_program()
    args = program._args(["--devices", "8", "--processes", "1", "--mesh", "x=8",
                          "--profile-dir", "gs://b/mldiag-smoke/s", "--name", "stack-s",
                          "--project", "p", "--region", "us-east5"])
    calls = []
    sdk = types.ModuleType("google_cloud_mldiagnostics")
    sdk.machinelearning_run = lambda **kw: calls.append(kw)
    monkeypatch.setitem(sys.modules, "google_cloud_mldiagnostics", sdk)
    assert program._register(args, jax, {"devices": 8}) == "registered"
    [kw] = calls
    assert kw["name"] == "stack-s" and kw["gcs_path"] == "gs://b/mldiag-smoke/s"
    assert kw["project"] == "p" and kw["region"] == "us-east5"

    def refuse(**kw):
        raise PermissionError("403 caller lacks hypercomputecluster.machineLearningRuns.create")

    sdk.machinelearning_run = refuse
    assert program._register(args, jax, {"devices": 8}).startswith(
        "registration failed: PermissionError: 403")
    local = program._args(["--devices", "8", "--processes", "1", "--mesh", "x=8",
                           "--profile-dir", "/tmp/x"])
    assert program._register(local, jax, {}) == "skipped: the profile is not in Cloud Storage"
    monkeypatch.setitem(sys.modules, "google_cloud_mldiagnostics", None)  # not installed
    assert program._register(args, jax, {}) == "sdk not installed"


def test_malformed_mesh_is_exit_2_with_a_json_line(capsys: pytest.CaptureFixture) -> None:
    program = _load_program()
    code = program.main(["--devices", "8", "--processes", "1", "--mesh", "x=2,x=4",
                         "--profile-dir", "/tmp/x"])
    line = capsys.readouterr().out.strip()
    assert code == 2 and json.loads(line.removeprefix("MLDIAG_SMOKE "))["errors"] == [
        "mesh 'x=2,x=4' repeats an axis name"]
