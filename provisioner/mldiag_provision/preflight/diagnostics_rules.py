"""Preflight rules for how ML Diagnostics reaches the workloads: the agents' install strategy,
the workload kinds the injection webhook supports, and hostNetwork pods.

Facts: ``catalog/data/gke.yaml`` ``mlDiagnostics`` (managed minimum, manual install pins,
webhook-supported kinds), each with its source.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldiag_provision.catalog.requirements import jax_row
from mldiag_provision.catalog.store import store
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lazyre import lazy
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule

_JAX = lazy(r"^\d+\.\d+(\.\d+)?$")


@rule("diagnostics-strategy")
def strategy(ctx: Context) -> Iterator[Problem]:
    """One install strategy per cluster: managed add-on or manual charts, never both."""
    diag = ctx.recipe.spec.diagnostics
    orch = ctx.recipe.spec.orchestrator
    base = ("spec", "diagnostics")
    if not diag.enabled:
        return
    src = ctx.catalog.source_url(ctx.catalog.fact("mlDiagnostics", "managedMinVersion")["source"])
    if diag.agents == "managed" and diag.manual is not None:
        yield ctx.problem(
            "diagnostics-strategy", (*base, "manual"),
            "the recipe asks for both the GKE-managed add-on and the manual install; running "
            "both installs two injection webhooks and two operators", value=None,
            expected="agents: managed without 'manual', or agents: manual", source=src,
            hint="remove 'manual', or set agents: manual")
    if diag.agents == "none" and diag.manual is not None:
        yield ctx.problem("diagnostics-strategy", (*base, "manual"),
                          "'manual' settings are ignored with agents: none",
                          severity=Severity.WARNING, hint="remove them, or set agents: manual")
    if diag.agents == "managed" and ctx.has(Capability.EXISTING_CLUSTER) \
            and not orch.workload_identity:
        yield ctx.problem(
            "diagnostics-strategy", (*base, "agents"),
            "the managed add-on exists only on GKE; a self-managed cluster needs the manual "
            "install", value=diag.agents, expected="manual", source=src,
            hint="set agents: manual")
    if diag.jax_version is not None and not _JAX.match(diag.jax_version):
        yield ctx.problem("diagnostics-strategy", (*base, "jaxVersion"),
                          f"'{diag.jax_version}' is not a JAX version", value=diag.jax_version,
                          expected="MAJOR.MINOR[.PATCH], e.g. 0.8.1")


@rule("diagnostics-jax", facts=("gke.mlDiagnostics.manualInstall.connectionOperator.jaxOldest",))
def jax_version(ctx: Context) -> Iterator[Problem]:
    """``jaxVersion`` is in the connection operator's JAX compatibility table and not older
    than the slices' TPU needs.

    Facts: gke.yaml ``mlDiagnostics.manualInstall.connectionOperator.jaxCompatibility`` (the
    SDK README's rows, H) and ``jaxOldest`` (that nothing older is supported: an inference,
    M, so a warning); tpu.yaml ``versions.<v>.jax.minVersion`` (GKE's TPU page; the workload
    fails, GKE refuses nothing: a warning).
    """
    diag = ctx.recipe.spec.diagnostics
    text = diag.jax_version
    if not diag.enabled or text is None or not _JAX.match(text):
        return  # diagnostics-strategy reports a malformed one
    path = ("spec", "diagnostics", "jaxVersion")
    mine = _parts(text)
    op = ctx.catalog.fact("mlDiagnostics", "manualInstall", "connectionOperator")
    if jax_row(text, ctx.catalog) is None:
        oldest = ctx.catalog.fact("mlDiagnostics", "manualInstall", "connectionOperator",
                                  "jaxOldest")
        rows = ", ".join(f"{r['jax']}.x" + (" and later" if r.get("andLater") else "")
                         + f" (chart {r['chart']})" for r in op["jaxCompatibility"])
        yield ctx.problem(
            "diagnostics-jax", path,
            f"JAX {text} is in no row of the ML Diagnostics connection operator's JAX "
            f"compatibility table (its oldest row is {oldest['version']}.x): on-demand "
            "profiling of this workload is untested and may not connect", value=text,
            expected=rows, hint=f"upgrade the workloads to JAX {oldest['version']} or later "
                                "and set jaxVersion to it", source=oldest)
    seen: set[str] = set()
    for i, shape in ctx.shapes.items():
        need = (shape.version.raw.get("jax") or {}).get("minVersion") if shape else None
        if shape is None or need is None or mine >= _parts(str(need)) \
                or shape.version.key in seen:
            continue
        seen.add(shape.version.key)
        yield ctx.problem(
            "diagnostics-jax", path,
            f"JAX {text} is older than {need}, the JAX GKE lists for TPU "
            f"{shape.version.key} (slice '{ctx.recipe.spec.slices[i].name}')", value=text,
            expected=f">= {need}", hint=f"use JAX {need} or later",
            severity=Severity.WARNING,
            source=ctx.catalog.tpu_fact(shape.version, "jax"))


def _parts(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


@rule("workload-kind")
def workload_kind(ctx: Context) -> Iterator[Problem]:
    """JobSet for multislice; warn that the injection webhook does not handle batch/v1 Job."""
    kinds = ctx.catalog.store.fact("kubernetes", "mlDiagnostics", "webhookKinds")
    for i, w in enumerate(ctx.recipe.spec.workloads):
        idx = ctx.slice_index(w.slice)
        if idx is None:
            continue
        s = ctx.recipe.spec.slices[idx]
        path = ("spec", "workloads", i, "kind")
        kind = w.kind if w.kind != "auto" else ("JobSet" if s.count > 1 else "Job")
        if kind == "Job" and s.count > 1:
            yield ctx.problem("workload-kind", path,
                              f"a multislice of {s.count} slices runs as a JobSet, not a Job",
                              value=w.kind, expected="JobSet or auto")
        elif (kind == "Job" and w.ml_diagnostics and ctx.recipe.spec.diagnostics.enabled
              and ctx.has(Capability.IN_CLUSTER_AGENTS)):
            yield ctx.problem(
                "workload-kind", ("spec", "workloads", i, "kind"),
                f"workload '{w.name}' runs as a batch/v1 Job: workload monitoring sees it, but "
                "the injection webhook (GKE_DIAGON_* for the SDK's MLRuns and on-demand "
                f"profiling) supports {', '.join(kinds['kinds'])}",
                value=w.kind, severity=Severity.WARNING,
                hint="set kind: JobSet (the cluster needs the JobSet controller)",
                source=ctx.catalog.source_url(kinds["source"]))


@rule("workload-host-network")
def host_network(ctx: Context) -> Iterator[Problem]:
    """hostNetwork pods: not on Autopilot; one per node (port 9999); node identity."""
    for i, w in enumerate(ctx.recipe.spec.workloads):
        if not w.host_network:
            continue
        path = ("spec", "workloads", i, "hostNetwork")
        if ctx.has(Capability.AUTOPILOT_RULES):
            yield ctx.problem(
                "workload-host-network", path, "GKE Autopilot does not allow hostNetwork pods",
                value=True, expected="false", hint="use gke-standard, or drop hostNetwork",
                # Autopilot's host-namespace refusal (kubernetes.yaml, AP-SECURITY, H)
                source=store().fact("kubernetes", "autopilot", "hostNamespaces"))
            continue
        idx = ctx.slice_index(w.slice)
        gpu = ctx.gpu_shapes.get(idx) if idx is not None else None
        if gpu is not None and gpu.gpus_per_vm and (w.gpus_per_pod or gpu.gpus_per_vm) \
                < gpu.gpus_per_vm:
            yield ctx.problem(
                "workload-host-network", path,
                "hostNetwork pods that share a node collide on the profiler port 9999",
                value=True, expected=f"gpusPerPod: {gpu.gpus_per_vm} (one pod per node)",
                source=ctx.catalog.source_url(
                    ctx.catalog.fact("ports", "mlDiagnosticsProfiler")["source"]))
        if ctx.recipe.spec.diagnostics.enabled:
            yield ctx.problem(
                "workload-host-network", path,
                "hostNetwork pods do not use Workload Identity: they run as the node's service "
                "account, so the stack grants the ML Diagnostics roles to the node service "
                "account too", value=True, severity=Severity.INFO,
                source="https://cloud.google.com/tpu/docs/ml-diagnostics/gke")
