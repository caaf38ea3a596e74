"""The smoke test of a slice, planned: what the JAX + XProf program must see on a planned
slice, its command line, and the names of its in-cluster objects and profile.

:func:`spec_for` turns a planned slice into the expectations of ``smoke/program.py``
(devices, processes, slices, the mesh); :func:`program_args` into its command line;
:func:`jobset_name` and :func:`profile_path` name the JobSet and the profile. Plain data from
the plan's types: ``render`` writes the smoke objects from these
(:mod:`mldiag_provision.render.smoke`, ``render/slurm.py``), ``smoke.local`` runs the program
on this machine's CPU, and ``verify --smoke`` runs it in the cluster. Nothing here imports
JAX: only the program (run in its own process) and the XProf check do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mldiag_provision.plan.types import SlicePlan, StackPlan

# The smoke program ships in the smoke package (it runs there, in its own process, for
# `smoke --local`); render embeds its text (ConfigMap, sbatch script). A file path, not an
# import: nothing of smoke/ is loaded to plan or render it.
PROGRAM = Path(__file__).resolve().parents[1] / "smoke" / "program.py"

# JAX devices per TPU chip, by catalog version key.
# - v4, v5p: two TensorCores per chip run as one "megacore" device, so jax.device_count() is
#   the chip count (GKE "Deploy TPU workloads on GKE Autopilot", seed 004: a v4 2x2x4 slice
#   prints 16; https://cloud.google.com/kubernetes-engine/docs/how-to/tpus-autopilot).
# - v5e, v6e: one TensorCore per chip (https://cloud.google.com/tpu/docs/v5e,
#   https://cloud.google.com/tpu/docs/v6e).
# - tpu7x: "the Ironwood programming model lets you access two TPU devices" per chip
#   (dual-chiplet architecture, https://cloud.google.com/tpu/docs/tpu7x).
# A version not listed counts one device per chip (unverified).
DEVICES_PER_CHIP: dict[str, int] = {"v4": 1, "v5p": 1, "v5e": 1, "v6e": 1, "tpu7x": 2}


@dataclass(frozen=True)
class SmokeSpec:
    """What the smoke program must find on one recipe slice (all its ``count`` slices).

    ``devices``: jax.device_count() over every slice; ``per_slice``: devices of one slice;
    ``processes``: jax.process_count() (one per VM: pods of the JobSet); ``mesh``: axis name ->
    size, ``dcn`` first on multislice, then the ICI dimensions of the topology (``x``, ``y``,
    ``z``), ``core`` for chips with two JAX devices; on GPUs ``node`` x ``gpu``.
    """

    slice: str
    kind: str  # tpu | gpu
    devices: int
    per_slice: int
    processes: int
    slices: int
    vms: int
    devices_per_vm: int
    mesh: tuple[tuple[str, int], ...]

    @property
    def mesh_arg(self) -> str:
        return ",".join(f"{n}={s}" for n, s in self.mesh)


def units_per_vm(sp: SlicePlan, plan: StackPlan | None = None) -> int:
    """Chips (TPU) or GPUs of one VM. A GPU slice on Autopilot has no machine type in the
    plan (Autopilot picks it): then the most GPUs a workload of the slice asks per pod."""
    if sp.chips_per_vm:
        return sp.chips_per_vm
    asked = [w.chips_per_pod for w in (plan.workloads if plan else ()) if w.slice == sp.name]
    return max(asked, default=1)


def spec_for(sp: SlicePlan, plan: StackPlan | None = None) -> SmokeSpec:
    """The expectations for a planned slice (see :class:`SmokeSpec`); ``plan`` gives the GPUs
    per VM where the slice does not (:func:`units_per_vm`)."""
    if sp.kind == "tpu" and sp.topology:
        dims = [int(d) for d in sp.topology.split("x")]
        per_chip = DEVICES_PER_CHIP.get(sp.accelerator_type, 1)
        axes: list[tuple[str, int]] = [("dcn", sp.count)] if sp.count > 1 else []
        axes += list(zip(("x", "y", "z"), dims, strict=False))
        if per_chip > 1:
            axes.append(("core", per_chip))
        per_slice = (sp.chips or 0) * per_chip
        per_vm = (sp.chips_per_vm or 1) * per_chip
        return SmokeSpec(slice=sp.name, kind="tpu", devices=per_slice * sp.count,
                         per_slice=per_slice, processes=sp.vms * sp.count, slices=sp.count,
                         vms=sp.vms, devices_per_vm=per_vm, mesh=tuple(axes))
    gpus = units_per_vm(sp, plan)
    return SmokeSpec(slice=sp.name, kind="gpu", devices=gpus * sp.vms, per_slice=gpus * sp.vms,
                     processes=sp.vms, slices=1, vms=sp.vms, devices_per_vm=gpus,
                     mesh=(("node", sp.vms), ("gpu", gpus)))


def program_args(spec: SmokeSpec, *, name: str, profile_dir: str, local: bool = False,
                 project: str | None = None, region: str | None = None,
                 coordinator: str | None = None) -> list[str]:
    """The program's arguments. ``local``: one process sees every device (XLA simulates them
    on the CPU) and the slices are equal blocks of them."""
    args = ["--name", name, "--devices", str(spec.devices),
            "--processes", "1" if local else str(spec.processes),
            "--slices", str(spec.slices), "--mesh", spec.mesh_arg, "--profile-dir", profile_dir]
    if local and spec.slices > 1:
        args.append("--simulate-slices")
    if project:
        args += ["--project", project]
    if region:
        args += ["--region", region]
    if coordinator and not local:
        args += ["--distributed", "--coordinator", coordinator]
    return args


def jobset_name(sp: SlicePlan) -> str:
    """``mldiag-smoke-<slice>``, short enough for JobSet's generated pod names."""
    return ("mldiag-smoke-" + sp.name)[:40].rstrip("-")


def profile_path(plan: StackPlan, sp: SlicePlan) -> str:
    """Where the slice's profile goes: the stack's profiles bucket, ``mldiag-smoke/<slice>``."""
    return f"gs://{plan.diagnostics.profiles_bucket.name}/mldiag-smoke/{sp.name}"
