"""``verify --smoke --sandbox`` and ``verify --health --sandbox`` on a managed Slurm stack.

Jobs do not run in the sandbox (its login node is a double: ``sandbox/slurm_login.py``), so
neither the smoke batch jobs nor the Cluster Health Scanner's DCGM jobs can. As on GKE
(:mod:`mldiag_provision.verify.local_smoke`):

* ``--smoke``: for each node set the real run would smoke (the same choice,
  :func:`mldiag_provision.verify.slurm_smoke.targets`: every GPU node set, or
  ``--smoke-node-set``), the sandbox first answers what the real cluster would: a node set
  without enough nodes that can run a job (down, drained, failing, not responding, per the
  double's ``sinfo``) leaves the batch job PENDING until ``--smoke-timeout``, when it is
  cancelled and FAILs; the real run reports that, so this one does too. Otherwise the smoke
  program runs on this machine with the node set's devices simulated (nodes x GPUs per node,
  or one CPU device per node), exactly as ``smoke --local`` runs it
  (:func:`mldiag_provision.smoke.local.run_local`), and says so (``SANDBOX, run locally``).
  Profiles go to ``<DIR>/.mldiag/sandbox/smoke/<node set>/``.
* ``--health``: DCGM diagnostics exercise the GPUs themselves; nothing stands in for them on
  this machine, so each GPU node set is a SKIP that says why (SANDBOX), never a PASS.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mldiag_provision.verify.checks import FAIL, SKIP, CheckResult

if TYPE_CHECKING:
    from mldiag_provision.plan.slurm_types import SlurmPlan
    from mldiag_provision.plan.types import StackPlan
    from mldiag_provision.verify.slurm import NodeRow


def run_slurm_smoke_locally(plan: StackPlan, rows: Sequence[NodeRow], *,
                            node_sets: Sequence[str] | None, profile_root: Path,
                            timeout_s: float, progress: Callable[[str], None] | None = None
                            ) -> list[CheckResult]:
    """One ``smoke:<node set>`` result per chosen node set (plus the SKIP/FAIL of
    :func:`~mldiag_provision.verify.slurm_smoke.targets`). ``rows``: the login node's
    ``sinfo`` rows; ``timeout_s`` bounds each of the local run's two processes (seconds).

    Raises:
      UsageError: JAX or xprof is not installed in this Python (the ``smoke`` extra).
    """
    from mldiag_provision.smoke.local import MAX_LOCAL_DEVICES, require_packages, run_local
    from mldiag_provision.verify.local_smoke import judge_local
    from mldiag_provision.verify.slurm import bad_state, in_node_set
    from mldiag_provision.verify.slurm_smoke import targets

    require_packages()
    say = progress or (lambda _line: None)
    chosen, results = targets(plan, rows, node_sets, str(profile_root))
    for t in chosen:
        states = {r.node: r.state for r in rows
                  if r.partition == t.partition and in_node_set(r, t.node_set)}
        usable = [n for n, s in states.items() if not bad_state(s)]
        if len(usable) < t.nodes:
            bad = ", ".join(f"{n} {s}" for n, s in sorted(states.items()) if bad_state(s))
            results.append(CheckResult(
                t.check, FAIL,
                f"SANDBOX: node set {t.node_set}: {len(usable)} of the {t.nodes} node(s) the "
                f"job asks for can run a job ({bad or 'the rest are not in Slurm'}): the "
                "batch job would stay PENDING until --smoke-timeout and be cancelled; the "
                "program was not run", f"node set {t.node_set}",
                "scontrol show node NAME gives the Reason; scontrol update nodename=NAME "
                "state=resume once fixed"))
            continue
        spec = t.spec()
        if spec.devices > MAX_LOCAL_DEVICES:
            results.append(CheckResult(
                t.check, SKIP, f"SANDBOX: node set {t.node_set} has {spec.devices} devices; "
                f"the local run simulates at most {MAX_LOCAL_DEVICES}", "-"))
            continue
        say(f"smoke: node set {t.node_set}: running the smoke program locally on "
            f"{spec.devices} simulated {t.kind.upper()} devices, mesh {spec.mesh_arg} "
            "(SANDBOX: jobs do not run)")
        local = run_local(spec, name=f"{plan.name}-{t.node_set}",
                          profile_dir=(profile_root / t.node_set).resolve(),
                          timeout_s=timeout_s)
        results.append(judge_local(local))  # its message starts with LOCALLY
    return results


def health_in_sandbox(slurm: SlurmPlan) -> list[CheckResult]:
    """One ``health:<node set>`` SKIP per GPU node set (or one ``health`` SKIP without
    one): the scanner's DCGM diagnostics need the GPUs, which the sandbox does not have."""
    gpu_sets = [ns for ns in slurm.node_sets if ns.gpus_per_node]
    if not gpu_sets:
        return [CheckResult("health", SKIP, "no GPU node set: the Cluster Health Scanner "
                                            "checks GPUs (DCGM) and their network (NCCL)",
                            f"cluster {slurm.cluster_id}")]
    return [CheckResult(f"health:{ns.id}", SKIP,
                        f"SANDBOX: the Cluster Health Scanner's DCGM diagnostics exercise the "
                        f"{ns.gpus_per_node} GPUs of each {ns.machine_type} node; jobs do not "
                        "run in the sandbox and nothing stands in for the GPUs here",
                        f"node set {ns.id}") for ns in gpu_sets]
