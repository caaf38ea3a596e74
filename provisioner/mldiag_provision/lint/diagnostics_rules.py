"""ML Diagnostics readiness: will the TPU workload show up in ML Diagnostics?

Checks what the workload side needs (shared/reference/ml-diagnostics-facts.md): the
``managed-mldiagnostics-gke=true`` label on a kind the injection webhook supports (or on its
namespace) before the pods exist; no clash on the profiler port 9999; a Google identity through
Workload Identity, which ``hostNetwork`` pods do not use. The label and ports come from the
catalog (``catalog/data/gke.yaml``), the supported kinds from ``catalog/data/kubernetes.yaml``.
Skipped with ``--no-diagnostics``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.loading import Resource, get
from mldiag_provision.lint.rules import define, fact, fact_source
from mldiag_provision.lint.tpu_rules import TpuPod, tpu_pods

LABEL = define("mldiag-label", "TPU workloads of a kind ML Diagnostics supports carry "
               "managed-mldiagnostics-gke=true (or their namespace does)",
               severity=Severity.WARNING, source=fact_source("mlDiagnostics", "webhookKinds"))
HOST_NETWORK = define("mldiag-host-network", "hostNetwork TPU pods: node identity and a node-wide "
                      "profiler port", severity=Severity.WARNING,
                      source=fact_source("mlDiagnostics", "hostNetworkIdentity"))
PROFILER_PORT = define("mldiag-profiler-port", "nothing else in a TPU pod uses the ML "
                       "Diagnostics profiler port", severity=Severity.WARNING,
                       source="https://pypi.org/project/google-cloud-mldiagnostics/")
IDENTITY = define("mldiag-workload-identity", "the TPU pod's Kubernetes service account is "
                  "bound to a Google service account (Workload Identity)",
                  severity=Severity.WARNING,
                  source=fact_source("mlDiagnostics", "workloadIdentityAnnotation"))
CONNECTION = define("mldiag-connection", "MLDiagnosticsConnection captures from the profiler "
                    "port", severity=Severity.WARNING,
                    source=fact_source("mlDiagnostics", "connection"))

_GSA = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]@[a-z][-a-z0-9.:]*\.iam\.gserviceaccount\.com$")


def _workloads(ctx: LintContext) -> dict[int, tuple[Resource, list[TpuPod]]]:
    out: dict[int, tuple[Resource, list[TpuPod]]] = {}
    for tp in tpu_pods(ctx):
        res = tp.template.resource
        out.setdefault(id(res), (res, []))[1].append(tp)
    return out


def check_label(ctx: LintContext) -> Iterator[Problem]:
    label = ctx.catalog.fact("mlDiagnostics", "namespaceLabel")
    key, want = label["key"], str(label["value"])
    webhook = fact("mlDiagnostics", "webhookKinds")["kinds"]
    monitoring = fact("mlDiagnostics", "monitoringKinds")["kinds"]
    for res, pods in _workloads(ctx).values():
        ns_obj = ctx.namespace_object(res.namespace)
        places: list[tuple[Resource, tuple[str | int, ...], dict[str, Any]]] = [
            (res, ("metadata", "labels"), res.labels)]
        places += [(res, (*tp.template.path, "metadata", "labels"), tp.template.labels)
                   for tp in pods if tp.template.path]
        if ns_obj is not None:
            places.append((ns_obj, ("metadata", "labels"), ns_obj.labels))
        labelled = False
        for owner, path, labels in places:
            if key not in labels:
                continue
            if labels[key] == want:
                labelled = True
            elif isinstance(labels[key], str):
                yield ctx.problem(owner, LABEL.id, (*path, key),
                                  f"{key}: '{labels[key]}': ML Diagnostics acts only on "
                                  f"'{want}'", value=labels[key], expected=want,
                                  hint=f'set {key}: "{want}"')
        ns = res.namespace
        if res.kind in webhook:
            if not labelled:
                where = (f"nor is its namespace '{ns}'" if ns_obj is not None
                         else "and its namespace is not among the linted files")
                # the label's own path: a wrong-typed other label is another fault
                target = (ns_obj, ("metadata", "labels", key)) if ns_obj is not None \
                    else (res, ("metadata", "labels", key))
                yield ctx.problem(
                    target[0], LABEL.id, target[1],
                    f"{res.display()} is not labelled {key}={want}, {where}: the ML Diagnostics "
                    "webhook will not inject run metadata into its pods",
                    hint=f'add metadata.labels {key}: "{want}" (or kubectl label namespace '
                         f"{ns or '<namespace>'} {key}={want}) before the pods are created")
        elif res.kind in monitoring:
            yield ctx.problem(
                res, LABEL.id, ("metadata", "labels"),
                f"{res.display()}: workload monitoring covers {res.kind}s, but the ML "
                "Diagnostics webhook documents run-metadata injection only for "
                + ", ".join(webhook) + ("" if labelled else f"; it is not labelled {key}"),
                severity=Severity.INFO,
                hint="run it as a JobSet to get SDK run metadata, or keep the Job for system "
                     "metrics only")
        else:
            yield ctx.problem(
                res, LABEL.id, ("kind",),
                f"ML Diagnostics supports {', '.join(webhook)} (run metadata) and "
                f"{', '.join(monitoring)} (workload monitoring); a {res.kind} gets neither",
                value=res.kind, severity=Severity.INFO,
                hint="run the TPU program as a JobSet (or a Job) to see it in ML Diagnostics")


def _host_network(ctx: LintContext, tp: TpuPod, profiler: int) -> Iterator[Problem]:
    """A ``hostNetwork`` TPU pod: the node's identity, and the profiler port on the node."""
    t = tp.template
    yield ctx.problem(
        t.resource, HOST_NETWORK.id, (*t.spec_path, "hostNetwork"),
        "hostNetwork TPU pods run as the node's service account, not a Workload "
        f"Identity one, and the profiler port {profiler} becomes a node port that a "
        "second such pod on the node cannot bind", value=True,
        hint="grant the ML Diagnostics roles to the node pool's service account, or "
             "drop hostNetwork")


def _profiler_port(ctx: LintContext, tp: TpuPod, port: dict[str, Any],
                   host_network: bool) -> Iterator[Problem]:
    """Any other use of the profiler port (fact ``ports.mlDiagnosticsProfiler``): a
    containerPort of a non-TPU container, or a hostPort; a TPU container's own containerPort
    is its profiler server, unless the pod is on the host network."""
    t, profiler = tp.template, port["port"]
    tpu_idx = {c.index for c in tp.containers}
    for i, c in t.containers():
        ports = c.get("ports")
        for j, p in enumerate(ports if isinstance(ports, list) else []):
            for field in ("containerPort", "hostPort"):
                if get(p, field) != profiler:
                    continue
                if field == "containerPort" and i in tpu_idx and not host_network:
                    continue  # the TPU process's own profiler server
                who = f"container '{c.get('name')}'" if i not in tpu_idx else "the pod"
                yield ctx.problem(
                    t.resource, PROFILER_PORT.id,
                    (*t.spec_path, "containers", i, "ports", j, field),
                    f"{who} uses {field} {profiler}, the port the ML Diagnostics "
                    "profiler (on_demand_xprof) listens on in the TPU process",
                    value=profiler, source=ctx.catalog.source_url(port["source"]),
                    hint=f"move that service off port {profiler}")


def _identity(ctx: LintContext, tp: TpuPod, annotation: str,
              seen_sa: set[int]) -> Iterator[Problem]:
    """The TPU pod's Kubernetes service account and its Workload Identity annotation
    (``annotation``); each ServiceAccount object of the input set is judged once
    (``seen_sa``: the ids of those already judged)."""
    t, res = tp.template, tp.template.resource
    sa = t.spec.get("serviceAccountName") or t.spec.get("serviceAccount")
    if not isinstance(sa, str):
        yield ctx.problem(
            res, IDENTITY.id, (*t.spec_path, "serviceAccountName"),
            "the TPU pods run as the namespace's default Kubernetes service account; ML "
            "Diagnostics calls Google APIs as the Google service account it is bound to",
            severity=Severity.INFO,
            hint=f"set serviceAccountName to a service account annotated {annotation}")
        return
    for sa_obj in ctx.find("", "ServiceAccount", sa, res.namespace)[:1]:
        if id(sa_obj) in seen_sa:
            continue
        seen_sa.add(id(sa_obj))
        gsa = sa_obj.annotations.get(annotation)
        if gsa is None:
            yield ctx.problem(
                sa_obj, IDENTITY.id, ("metadata", "annotations", annotation),
                f"ServiceAccount '{sa}' (used by {res.display()}) has no {annotation} "
                "annotation: its pods get no Google identity for ML Diagnostics",
                hint=f"add metadata.annotations {annotation}: "
                     "<name>@<project>.iam.gserviceaccount.com")
        elif not isinstance(gsa, str) or not _GSA.match(gsa):
            yield ctx.problem(
                sa_obj, IDENTITY.id, ("metadata", "annotations", annotation),
                f"{annotation}: '{gsa}' is not a Google service account email",
                value=gsa, expected="<name>@<project>.iam.gserviceaccount.com")


def check_pods(ctx: LintContext) -> Iterator[Problem]:
    """hostNetwork, the profiler port, Workload Identity (not judged for hostNetwork pods,
    which use the node's identity), for each pod template that requests TPU chips."""
    port = ctx.catalog.fact("ports", "mlDiagnosticsProfiler")
    annotation = fact("mlDiagnostics", "workloadIdentityAnnotation")["key"]
    seen_sa: set[int] = set()
    for tp in tpu_pods(ctx):
        if not tp.requested:
            continue
        host_network = tp.template.spec.get("hostNetwork") is True
        if host_network:
            yield from _host_network(ctx, tp, port["port"])
        yield from _profiler_port(ctx, tp, port, host_network)
        if not host_network:
            yield from _identity(ctx, tp, annotation, seen_sa)


def check_connections(ctx: LintContext) -> Iterator[Problem]:
    conn = fact("mlDiagnostics", "connection")
    group = conn["apiVersion"].rpartition("/")[0]
    profiler = ctx.catalog.fact("ports", "mlDiagnosticsProfiler")["port"]
    for res in ctx.of_kind(group, conn["kind"]):
        port = res.get("spec", "triggerCapture", "capturePort")
        if isinstance(port, int) and not isinstance(port, bool) and port != profiler:
            yield ctx.problem(
                res, CONNECTION.id, ("spec", "triggerCapture", "capturePort"),
                f"capturePort {port}, but the ML Diagnostics profiler listens on {profiler}",
                value=port, expected=str(profiler), hint=f"set capturePort: {profiler}")


CHECKS = (check_label, check_pods, check_connections)
