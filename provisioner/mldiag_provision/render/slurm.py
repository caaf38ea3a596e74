"""The Slurm side of a stack: one sbatch script per workload (``slurm/<name>.sbatch``) and the
stack's README. Kubernetes manifests (:mod:`.k8s`) are for GKE only.

Every recipe value reaches a script through :func:`shlex.quote` (one inert shell word,
newlines and all); ``#SBATCH`` lines carry only names the recipe model restricts to DNS labels,
and numbers. Preflight (``slurm-workload``) has already refused environment names bash cannot
export and NUL characters.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from mldiag_provision.plan.types import SlicePlan, StackPlan

if TYPE_CHECKING:  # a GKE render does not import the Slurm plan (issue 16)
    from mldiag_provision.plan.slurm_types import SlurmJobPlan, SlurmPlan


def _q(value: object) -> str:
    return shlex.quote(str(value))


def _slurm(plan: StackPlan) -> SlurmPlan:
    """The plan's Slurm cluster.

    Raises:
      ValueError: not a Slurm plan.
    """
    if plan.slurm is None:
        raise ValueError(f"{plan.blueprint} stacks have no Slurm cluster")
    return plan.slurm


def sbatch(plan: StackPlan, job: SlurmJobPlan, banner: str) -> str:
    """The batch script of one workload."""
    slurm = _slurm(plan)
    sdk = slurm.sdk
    lines = [
        "#!/bin/bash",
        banner,
        f"# Workload {job.name}: slice {job.slice} = {job.nodes} x "
        f"{job.machine_type}, {job.gpus_per_node} GPUs per node.",
        f"# Submit from a login node: sbatch slurm/{job.name}.sbatch",
        f"#SBATCH --job-name={job.name}",
        f"#SBATCH --partition={job.partition}",
        f"#SBATCH --nodes={job.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={job.gpus_per_node}",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x-%j.out",
        "set -euo pipefail",
        "",
    ]
    if job.ml_diagnostics:
        lines += [
            "# ML Diagnostics: one MLRun for the whole job, whichever host calls",
            "# machinelearning_run(): SLURM_JOB_START_TIME and RUN_WORKLOAD_ID (the same on every",
            "# host), MLDIAG_RUN_NAME, MLDIAG_MLRUN_REGION and MLDIAG_PROFILES_GCS_PATH",
            "# (pass them on as region= and gcs_path=). Written by the node startup script.",
            f"source {_q(sdk.job_env)}",
            "",
        ]
    lines += [
        "# Rendezvous for multi-node launchers (torchrun, jax.distributed): the first node.",
        'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
        "export MASTER_ADDR",
        f"export MASTER_PORT={int(slurm.master_port)}",
    ]
    if job.env:
        lines += ["", "# The recipe's environment."]
        lines += [f"export {name}={_q(value)}" for name, value in job.env.items()]
    argv = [*job.command, *job.args]
    if job.container_runtime == "pyxis":
        srun = ["srun", f"--container-image={job.pyxis_image}"]
        if job.container_mounts:
            srun.append("--container-mounts=" + ",".join(f"{m}:{m}" for m in
                                                         job.container_mounts))
        lines += ["", "# The workload's image on every node (pyxis/enroot); the environment "
                      "above is passed in."]
    else:
        srun = ["srun"]
        lines += ["", "# No container: the command runs on the nodes, with the ML Diagnostics "
                      "SDK's venv first on PATH.",
                  f'export PATH={_q(sdk.venv + "/bin")}:"$PATH"']
    words = [_q(w) for w in srun + argv]
    lines.append(" \\\n  ".join(words))
    return "\n".join(lines) + "\n"


def smoke_sbatch(plan: StackPlan, sp: SlicePlan, banner: str) -> str | None:
    """``slurm/mldiag-smoke-<slice>.sbatch``: the JAX + XProf smoke program on every node of
    a GPU slice (opt-in: submit it yourself). The program travels in the job's environment
    (srun exports it to every task), so no shared file system is assumed; each task runs it
    with ``--distributed``, and ``jax.distributed.initialize()`` finds its peers from Slurm's
    variables (https://docs.jax.dev/en/latest/multi_process.html). ``None`` when no
    partition holds the slice's nodes.
    """
    from mldiag_provision.plan.smoke import (
        PROGRAM,
        jobset_name,
        profile_path,
        program_args,
        spec_for,
    )

    slurm = _slurm(plan)
    sets = {n.id for n in slurm.node_sets if n.slice == sp.name}
    partition = next((p.id for p in slurm.partitions if sets & set(p.node_set_ids)), None)
    if partition is None:
        return None
    spec = spec_for(sp, plan)
    name = jobset_name(sp)
    args = program_args(spec, name=f"{plan.name}-{sp.name}", profile_dir=profile_path(plan, sp),
                        project=plan.project, region=plan.diagnostics.mlrun_region)
    program = PROGRAM.read_text(encoding="utf-8")
    lines = [
        "#!/bin/bash",
        banner,
        f"# JAX + XProf smoke test of slice {sp.name}: {sp.vms} x {sp.machine_type}, "
        f"{spec.devices_per_vm} GPUs per node (opt-in).",
        f"# Submit from a login node: sbatch slurm/{name}.sbatch",
        f"#SBATCH --job-name={name}",
        f"#SBATCH --partition={partition}",
        f"#SBATCH --nodes={sp.vms}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={spec.devices_per_vm}",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x-%j.out",
        "set -euo pipefail",
        "",
    ]
    if plan.diagnostics.enabled:
        lines += ["# The ML Diagnostics SDK's job environment (written by the node startup "
                  "script).", f"source {_q(slurm.sdk.job_env)}"]
    lines += [f'export PATH={_q(slurm.sdk.venv + "/bin")}:"$PATH"',
              "srun --ntasks-per-node=1 pip install -q 'jax[cuda12]'",
              "",
              "# The program shipped with mldiag-provision (smoke/program.py), byte for byte.",
              "MLDIAG_SMOKE_PROGRAM=$(cat <<'MLDIAG_SMOKE_EOF'",
              program.rstrip("\n"),
              "MLDIAG_SMOKE_EOF",
              ")",
              "export MLDIAG_SMOKE_PROGRAM",
              "srun bash -c 'python3 -c \"$MLDIAG_SMOKE_PROGRAM\" \"$@\"' mldiag-smoke \\",
              "  " + " ".join(_q(a) for a in [*args, "--distributed"])]
    return "\n".join(lines) + "\n"


def files(plan: StackPlan, banner: str) -> dict[str, bytes]:
    """``slurm/<workload>.sbatch`` for every workload of a Slurm plan, and the opt-in smoke
    script of each slice (:func:`smoke_sbatch`)."""
    out = {f"slurm/{job.name}.sbatch": sbatch(plan, job, banner).encode("utf-8")
           for job in (plan.slurm.jobs if plan.slurm is not None else ())}
    for sp in plan.slices:
        script = smoke_sbatch(plan, sp, banner)
        if script is not None:
            from mldiag_provision.plan.smoke import jobset_name

            out[f"slurm/{jobset_name(sp)}.sbatch"] = script.encode("utf-8")
    return out


def readme(plan: StackPlan, banner: str) -> str:
    """README.md of a Slurm stack: decisions and the steps in order."""
    from mldiag_provision import engines

    by_hand = engines.get(plan.engine).by_hand
    slurm = _slurm(plan)
    lines = [banner, "", f"# Stack `{plan.name}`", "",
             f"Blueprint `{plan.blueprint}`, project `{plan.project}`, region `{plan.region}`, "
             f"zone `{slurm.zone}`.", "", "## Decisions", ""]
    lines += [f"- {d}" for d in plan.decisions]
    lines += ["", "## Apply", "", "```sh", "# 1. project pieces, IAM for the nodes, the cluster",
              *by_hand.project,
              f"# 2. on a login node ({by_hand.output.format(name='login_instances')}), with "
              "slurm/ copied there"]
    lines += [f"sbatch slurm/{job.name}.sbatch" for job in slurm.jobs]
    lines += ["```", "", "## ML Diagnostics on Slurm", "",
              "- Every compute node installs the SDK at boot "
              f"(`{slurm.sdk.package}` in `{slurm.sdk.venv}`) and writes "
              f"`{slurm.sdk.job_env}`; job scripts source it, so every host of a job "
              "joins one MLRun. Its log: `/var/log/mldiag-startup.log`.",
              "- The nodes need egress to the Python package index (Cloud NAT, or "
              "`spec.slurm.pipIndexUrl` for a mirror).",
              "- Container images bring their own SDK (`pip install google-cloud-mldiagnostics`); "
              "`srun --container-image` needs the pyxis plugin, and pulling from Artifact "
              "Registry needs enroot credentials on the nodes.",
              ""]
    return "\n".join(lines)
