"""``verify --smoke --sandbox``: the smoke step of ``verify`` when the cluster is the sandbox's.

Containers do not run in the sandbox, so the smoke JobSet would never finish there. Instead:

1. the sandbox cluster is asked what a real one would answer first: whether it serves the
   JobSet API (``verify --smoke`` creates one JobSet per slice; without the API the real run
   fails at once with "the JobSet API is not installed", and so does this one);
2. the smoke program runs on this machine for each slice of the recipe, exactly as
   ``smoke RECIPE --local`` runs it (:func:`mldiag_provision.smoke.local.run_local`: XLA
   simulating the slice's devices on the CPU, then XProf reading the profile back).

Every result says SANDBOX and that the program ran locally, not in the cluster. Profiles go
to ``<DIR>/.mldiag/sandbox/smoke/<slice>/`` (with the program's ``smoke.log``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mldiag_provision.verify.checks import FAIL, JOBSET, PASS, SKIP, CheckResult, Cluster

if TYPE_CHECKING:
    from mldiag_provision.plan.types import StackPlan
    from mldiag_provision.smoke.local import LocalResult

LOCALLY = "SANDBOX, run locally as `smoke --local` (containers do not run in the sandbox)"
"""How every per-slice message of the sandbox's smoke step starts."""


def jobset_api_missing(cluster: Cluster, plan: StackPlan) -> CheckResult | None:
    """The FAIL a real ``verify --smoke`` gives when the cluster serves no JobSet API (404 on
    a list of JobSets in the stack's namespace), else None (served, or another error: the
    real run would get as far as creating the JobSet)."""
    from mldiag_provision.plan.smoke import jobset_name

    ns = plan.agents.namespace if plan.agents else "default"
    try:
        cluster.custom.list_namespaced_custom_object(JOBSET[0], JOBSET[1], ns, JOBSET[2],
                                                     limit=1)
    except Exception as exc:
        if getattr(exc, "status", None) != 404:
            return None
        first = jobset_name(plan.slices[0]) if plan.slices else "mldiag-smoke"
        return CheckResult(
            "smoke", FAIL, "the JobSet API is not installed (SANDBOX: the sandbox cluster "
            "answers as the real one would; the smoke program still ran locally below)",
            f"JobSet/{ns}/{first}",
            "install the JobSet controller (kubernetes-sigs/jobset): a recipe whose "
            "workloads are JobSets has the stack install it")
    return None


def judge_local(result: LocalResult) -> CheckResult:
    """One slice's CheckResult (``smoke:<slice>``) from its local run: PASS with the devices,
    the collective and the profile seen; FAIL with the first error."""
    spec = result.spec
    rep = result.report or {}
    coll = rep.get("collective") or {}
    prof = result.profile or {}
    evidence = str(result.profile_dir)
    if not result.ok:
        return CheckResult(f"smoke:{spec.slice}", FAIL,
                           f"{LOCALLY}: slice {spec.slice}: {result.errors[0]}", evidence,
                           f"read {result.profile_dir / 'smoke.log'}; try `mldiag-provision "
                           f"smoke RECIPE --local --slice {spec.slice}`")
    return CheckResult(
        f"smoke:{spec.slice}", PASS,
        f"{LOCALLY}: {rep.get('devices', '?')} of {spec.devices} simulated devices in "
        f"{spec.slices} slice(s), {coll.get('op', 'collective')} = {coll.get('got')} as "
        f"expected; XProf: overview {'ok' if prof.get('overview_rows') else 'missing'}, "
        f"{prof.get('trace_events', 0)} trace events", evidence)


def run_smoke_locally(cluster: Cluster, plan: StackPlan, *, profile_root: Path,
                      timeout_s: float, progress: Callable[[str], None] | None = None
                      ) -> list[CheckResult]:
    """The sandbox's smoke step: :func:`jobset_api_missing`, then
    :func:`mldiag_provision.smoke.local.run_local` for every slice of ``plan`` (profiles
    under ``profile_root/<slice>``; ``timeout_s`` bounds each of its two processes, in
    seconds). A slice with more devices than the local run simulates is a SKIP that says so.

    Raises:
      UsageError: JAX or xprof is not installed in this Python (the ``smoke`` extra).
    """
    from mldiag_provision.plan.smoke import spec_for
    from mldiag_provision.smoke.local import MAX_LOCAL_DEVICES, require_packages, run_local

    if not plan.slices:
        return [CheckResult("smoke", SKIP, "the recipe has no slice", "-")]
    require_packages()
    say = progress or (lambda _line: None)
    results: list[CheckResult] = []
    missing = jobset_api_missing(cluster, plan)
    if missing is not None:
        results.append(missing)
    for sp in plan.slices:
        spec = spec_for(sp, plan)
        if spec.devices > MAX_LOCAL_DEVICES:
            results.append(CheckResult(
                f"smoke:{sp.name}", SKIP, f"SANDBOX: slice {sp.name} has {spec.devices} "
                f"devices; the local run simulates at most {MAX_LOCAL_DEVICES}", "-"))
            continue
        say(f"smoke: slice {sp.name}: running the smoke program locally on {spec.devices} "
            f"simulated devices, mesh {spec.mesh_arg} (SANDBOX: containers do not run)")
        local = run_local(spec, name=f"{plan.name}-{sp.name}",
                          profile_dir=(profile_root / sp.name).resolve(), timeout_s=timeout_s)
        results.append(judge_local(local))
    return results
