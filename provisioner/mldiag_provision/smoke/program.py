"""The JAX + XProf smoke program: does this slice work as the recipe promises?

A plain script (standard library + JAX, nothing from mldiag-provision), so the same file runs
on this machine (``mldiag-provision smoke RECIPE --local``: XLA simulates the slice's devices
on the CPU) and in the cluster (``verify --smoke`` and ``k8s/smoke/`` mount it from a
ConfigMap into a JobSet on the slice). Steps:

1. ``jax.device_count()`` / ``jax.process_count()`` against ``--devices`` / ``--processes``,
   and the devices of each slice (``device.slice_index`` on multislice TPUs; in local mode,
   ``--simulate-slices`` splits the devices into equal blocks) against ``--slices``;
2. a mesh shaped like the topology (``--mesh dcn=2,x=4,y=4``: the multislice DCN axis first,
   then the ICI dimensions), and a small sharded computation with ``psum`` over every axis in
   turn: one number per device, the device's position + 1, so the result must be
   n (n + 1) / 2 on every device; a wrong or missing collective gives another number;
3. a profile of that step with ``jax.profiler`` into ``--profile-dir`` (a ``gs://`` path in
   the cluster: the stack's profiles bucket; a local directory in local mode);
4. when the ML Diagnostics SDK (``google_cloud_mldiagnostics``) is importable and the profile
   goes to Cloud Storage, process 0 registers a run (``machinelearning_run``, SDK README:
   https://pypi.org/project/google-cloud-mldiagnostics/) so the profile shows up there.

It prints one line ``MLDIAG_SMOKE {json}`` and exits 0 when every check passed, 1 otherwise
(2: bad arguments). JAX sources: https://docs.jax.dev/en/latest/sharded-computation.html
(Mesh, shard_map, psum), https://docs.jax.dev/en/latest/profiling.html (start_trace/stop_trace
write ``<dir>/plugins/profile/<session>/<host>.xplane.pb``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

PREFIX = "MLDIAG_SMOKE "
STEP_NAME = "mldiag_smoke_step"  # the jitted function: XProf shows it as jit_mldiag_smoke_step


def parse_mesh(text: str) -> list[tuple[str, int]]:
    """``"dcn=2,x=4,y=4"`` -> ``[("dcn", 2), ("x", 4), ("y", 4)]``; ValueError when malformed."""
    axes = []
    for part in text.split(","):
        name, _, size = part.partition("=")
        if not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise ValueError(f"mesh axis {part!r} is not NAME=SIZE")
        axes.append((name.strip(), int(size)))
    if len({n for n, _ in axes}) != len(axes):
        raise ValueError(f"mesh {text!r} repeats an axis name")
    return axes


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="JAX + XProf smoke test of one slice")
    p.add_argument("--name", default="mldiag-smoke", help="run name (profile session, MLRun)")
    p.add_argument("--devices", type=int, required=True, help="expected jax.device_count()")
    p.add_argument("--processes", type=int, required=True, help="expected jax.process_count()")
    p.add_argument("--slices", type=int, default=1, help="expected slices (multislice)")
    p.add_argument("--mesh", required=True, help="axes NAME=SIZE,..., product = --devices")
    p.add_argument("--profile-dir", required=True, help="jax.profiler trace directory")
    p.add_argument("--simulate-slices", action="store_true",
                   help="local mode: split the devices into --slices equal blocks")
    p.add_argument("--project", default=None, help="MLRun project (SDK registration)")
    p.add_argument("--region", default=None, help="MLRun region (SDK registration)")
    p.add_argument("--distributed", action="store_true",
                   help="call jax.distributed.initialize() first (multi-process GPU)")
    p.add_argument("--coordinator", default=None,
                   help="with --distributed: HOST:PORT of process 0; this process's id is "
                        "$JOB_COMPLETION_INDEX (Kubernetes Indexed Job)")
    return p.parse_args(argv)


def _slice_of(device: object, index: int, per_slice: int, simulate: bool) -> int:
    if simulate:
        return index // max(per_slice, 1)
    value = getattr(device, "slice_index", None)
    return int(value) if value is not None else 0


def _build_mesh(jax: object, axes: list[tuple[str, int]], slices: int) -> object:
    """A Mesh over every device: topology-aware helpers first, a plain reshape otherwise."""
    import numpy as np
    from jax.sharding import Mesh

    names = tuple(n for n, _ in axes)
    shape = tuple(s for _, s in axes)
    devices = jax.devices()  # type: ignore[attr-defined]
    try:
        from jax.experimental import mesh_utils

        if slices > 1 and names[0] == "dcn":
            dcn = (shape[0],) + (1,) * (len(shape) - 1)
            ici = (1, *shape[1:])
            grid = mesh_utils.create_hybrid_device_mesh(ici, dcn, devices)
        else:
            grid = mesh_utils.create_device_mesh(shape, devices)
    except Exception:  # CPU/GPU or a shape the helpers do not know: order by slice, then id
        ordered = sorted(devices, key=lambda d: (getattr(d, "slice_index", 0) or 0,
                                                 d.process_index, d.id))
        grid = np.array(ordered, dtype=object).reshape(shape)
    return Mesh(grid, names)


def _make_step(jax: object, mesh: object, axes: list[tuple[str, int]]) -> tuple:
    """The jitted step (psum over each mesh axis in turn), its input (position + 1 on each
    device) and the value every device must end with, n (n + 1) / 2."""
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    try:
        shard_map = jax.shard_map  # type: ignore[attr-defined]
    except AttributeError:  # JAX before 0.6
        from jax.experimental.shard_map import shard_map
    names = tuple(n for n, _ in axes)
    shape = tuple(s for _, s in axes)
    n = int(np.prod(shape))

    def step(block):  # one element per device
        total = block
        for axis in names:
            total = jax.lax.psum(total, axis)  # type: ignore[attr-defined]
        return total

    step.__name__ = STEP_NAME
    # out_specs sharded like the input: every device keeps its own result, and each one is
    # compared (a replicated P() output would be read from one device only)
    fn = jax.jit(shard_map(step, mesh=mesh, in_specs=P(*names),  # type: ignore[attr-defined]
                           out_specs=P(*names)))
    values = np.arange(1, n + 1, dtype=np.float32).reshape(shape)
    x = jax.make_array_from_callback(  # type: ignore[attr-defined]
        shape, NamedSharding(mesh, P(*names)), lambda idx: values[idx])
    return fn, x, n * (n + 1) / 2


def _collective(step: object, x: object, want: float) -> float:
    """Run the step once; the value of this process's devices: the first one that is not
    ``want``, else ``want``."""
    import numpy as np

    out = step(x)  # type: ignore[operator]
    out.block_until_ready()
    values = [float(v) for shard in out.addressable_shards
              for v in np.asarray(shard.data).ravel()]
    return next((v for v in values if v != want), want)


def _register(args: argparse.Namespace, jax: object, report: dict) -> str:
    """Register the run with ML Diagnostics when the SDK is there; never fails the smoke."""
    try:
        from google_cloud_mldiagnostics import machinelearning_run
    except ImportError:
        return "sdk not installed"
    if not args.profile_dir.startswith("gs://"):
        return "skipped: the profile is not in Cloud Storage"
    if jax.process_index() != 0:  # type: ignore[attr-defined]
        return "process 0 registers"
    try:
        kwargs = {"name": args.name, "run_group": "mldiag-smoke", "gcs_path": args.profile_dir,
                  "configs": {"devices": report["devices"], "mesh": args.mesh}}
        if args.project:
            kwargs["project"] = args.project
        if args.region:
            kwargs["region"] = args.region
        machinelearning_run(**kwargs)
    except Exception as exc:  # the SDK raises on missing IAM/metadata (SDK README)
        return f"registration failed: {type(exc).__name__}: {exc}"[:300]
    return "registered"


def run(args: argparse.Namespace) -> dict:
    """Run every step; returns the report (``ok`` plus what was seen)."""
    started = time.monotonic()
    errors: list[str] = []
    report: dict = {"name": args.name, "errors": errors}
    import jax

    if args.distributed:
        if args.coordinator:
            jax.distributed.initialize(
                coordinator_address=args.coordinator, num_processes=args.processes,
                process_id=int(os.environ.get("JOB_COMPLETION_INDEX", "0")))
        else:
            jax.distributed.initialize()
    devices = jax.devices()
    per_slice = args.devices // max(args.slices, 1)
    by_slice: dict[str, int] = {}
    for i, d in enumerate(devices):
        key = str(_slice_of(d, i, per_slice, args.simulate_slices))
        by_slice[key] = by_slice.get(key, 0) + 1
    local = jax.local_devices()
    own_slices = sorted({_slice_of(d, devices.index(d), per_slice, args.simulate_slices)
                         for d in local})
    report.update({
        # the ML Diagnostics injection webhook's variables (SDK README: GKE metadata)
        "gke_metadata": bool(os.environ.get("GKE_DIAGON_IDENTIFIER")
                             and os.environ.get("GKE_DIAGON_METADATA")),
        "platform": devices[0].platform, "device_kind": devices[0].device_kind,
        "devices": jax.device_count(), "local_devices": len(local),
        "processes": jax.process_count(), "process_index": jax.process_index(),
        "slice_index": own_slices[0] if len(own_slices) == 1 else own_slices,
        "devices_by_slice": by_slice,
        "expected": {"devices": args.devices, "processes": args.processes,
                     "slices": args.slices},
    })
    if report["devices"] != args.devices:
        errors.append(f"jax.device_count() is {report['devices']}, expected {args.devices}")
    if report["processes"] != args.processes:
        errors.append(f"jax.process_count() is {report['processes']}, expected "
                      f"{args.processes}")
    if len(by_slice) != args.slices:
        errors.append(f"the devices are in {len(by_slice)} slice(s), expected {args.slices}")
    for key, count in sorted(by_slice.items()):
        if count != per_slice:
            errors.append(f"slice {key} has {count} devices, expected {per_slice}")
    axes = parse_mesh(args.mesh)
    size = 1
    for _, s in axes:
        size *= s
    report["mesh"] = dict(axes)
    if size != report["devices"]:
        errors.append(f"the mesh {args.mesh} needs {size} devices, there are "
                      f"{report['devices']}")
        report["ok"] = False
        report["seconds"] = round(time.monotonic() - started, 3)
        return report
    mesh = _build_mesh(jax, axes, args.slices)
    step, x, want = _make_step(jax, mesh, axes)
    _collective(step, x, want)  # compile + warm-up, outside the profile
    jax.profiler.start_trace(args.profile_dir)
    try:
        got = _collective(step, x, want)
    finally:
        jax.profiler.stop_trace()
    report["collective"] = {"op": "psum over " + ", ".join(n for n, _ in axes), "got": got,
                            "expected": want, "ok": got == want}
    if got != want:
        errors.append(f"the collective gave {got}, expected {want}")
    report["profile_dir"] = args.profile_dir
    report["sdk"] = _register(args, jax, report)
    report["ok"] = not errors
    report["seconds"] = round(time.monotonic() - started, 3)
    return report


def main(argv: list[str] | None = None) -> int:
    try:
        args = _args(argv)
        parse_mesh(args.mesh)
    except ValueError as exc:
        print(PREFIX + json.dumps({"ok": False, "errors": [str(exc)]}), flush=True)
        return 2
    try:
        report = run(args)
    except Exception as exc:  # report it in the one JSON line, not only as a traceback
        report = {"ok": False, "name": args.name,
                  "errors": [f"{type(exc).__name__}: {exc}"[:500]]}
    sys.stdout.flush()
    print(PREFIX + json.dumps(report, sort_keys=True), flush=True)
    return 0 if report.get("ok") else 1


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
