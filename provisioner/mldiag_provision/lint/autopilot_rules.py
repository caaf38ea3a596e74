"""Autopilot rules (``--autopilot``): what GKE Autopilot's admission refuses, before it does.

Autopilot enforces the Kubernetes Pod Security Standards' Baseline profile plus its own
constraints (GKE Warden). Each rule names the constraint, and its severity follows the
confidence of the fact in ``catalog/data/kubernetes.yaml`` (or ``gke.yaml`` for the managed
namespaces): verified constraints are errors, those known only from GKE's error messages as
users quote them are warnings; raising a fact to H is all it takes to make its rule an error.
CPU and memory against the TPU machine type are checked for every mode by ``tpu-resources``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.loading import get
from mldiag_provision.lint.rules import define, fact, fact_source, severity_of, source_url
from mldiag_provision.lint.tpu_rules import tpu_pods
from mldiag_provision.lint.workloads import PodTemplate
from mldiag_provision.quantity import parse_quantity
from mldiag_provision.recipe.sourcemap import Path

HOST_NS = define("autopilot-host-namespaces", "no hostNetwork, hostPID or hostIPC",
                 source=fact_source("autopilot", "hostNamespaces"))
HOST_PORTS = define("autopilot-host-ports", "no hostPort on containers",
                    source=fact_source("autopilot", "hostPorts"))
HOST_PATH = define("autopilot-host-path", "hostPath volumes only under /var/log/, read-only",
                   source=fact_source("autopilot", "hostPath"))
PRIVILEGED = define("autopilot-privileged", "no privileged containers",
                    source=fact_source("autopilot", "privileged"))
CAPABILITIES = define("autopilot-capabilities", "only the Linux capabilities Autopilot allows",
                      severity=severity_of(fact("autopilot", "capabilities")),
                      source=fact_source("autopilot", "capabilities"),
                      facts=("kubernetes.autopilot.capabilities",))
AFFINITY = define("autopilot-node-affinity", "node selectors and affinity only on labels "
                  "Autopilot allows (or workload separation)",
                  severity=severity_of(fact("autopilot", "nodeAffinityKeys")),
                  source=fact_source("autopilot", "nodeAffinityKeys"),
                  facts=("kubernetes.autopilot.nodeAffinityKeys",))


def _worst(entries: Iterable[dict[str, Any]]) -> Severity:
    """The worst severity among a list of facts (a rule with one fact per case: each case's
    own fact settles its problem)."""
    return Severity.ERROR if any(severity_of(e) is Severity.ERROR for e in entries) \
        else Severity.WARNING


ANNOTATIONS = define("autopilot-annotations", "no annotations Autopilot refuses on workloads",
                     severity=_worst(fact("autopilot", "annotations")["refused"]),
                     source=source_url("WARDEN"))
NAMESPACE = define("autopilot-managed-namespace", "nothing created in namespaces Autopilot "
                   "manages",
                   severity=_worst(store().doc("gke")["autopilot"]["managedNamespaces"]),
                   source=source_url("AP-MANAGED-NS"))
WEBHOOK = define("autopilot-webhook", "admission webhooks do not match every group and resource",
                 severity=severity_of(fact("autopilot", "webhookWildcard")),
                 source=fact_source("autopilot", "webhookWildcard"),
                 facts=("kubernetes.autopilot.webhookWildcard",))
TPU_SUPPORT = define("autopilot-tpu", "the TPU version is offered on Autopilot",
                     source=source_url("GKE-AP"))

_CONTAINER_LISTS = ("initContainers", "containers")


def _containers(t: PodTemplate) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for key in _CONTAINER_LISTS:
        for i, c in t.containers(key):
            yield key, i, c


def _host_namespaces(ctx: LintContext, t: PodTemplate, ns: Any) -> Iterator[Problem]:
    """``hostNetwork``, ``hostPID``, ``hostIPC`` set to true (fact ``hostNamespaces``)."""
    for name in ns["fields"]:
        if t.spec.get(name) is True:
            yield ctx.problem(
                t.resource, HOST_NS.id, (*t.spec_path, name),
                f"{name}: true is not allowed in Autopilot ({ns['constraint']})",
                value=True, severity=severity_of(ns), hint=f"remove {name}")


def _host_ports(ctx: LintContext, t: PodTemplate, where: Path, c: dict[str, Any],
                ports: Any) -> Iterator[Problem]:
    """A non-zero ``hostPort`` on the container at ``where`` (fact ``hostPorts``)."""
    for j, p in enumerate(cp if isinstance(cp := c.get("ports"), list) else []):
        host_port = get(p, "hostPort")
        if isinstance(host_port, int) and not isinstance(host_port, bool) and host_port:
            yield ctx.problem(
                t.resource, HOST_PORTS.id, (*t.spec_path, *where, "ports", j, "hostPort"),
                f"hostPort {host_port} is not allowed in Autopilot "
                f"({ports['constraint']})", value=host_port,
                severity=severity_of(ports),
                hint="remove hostPort; reach the pod through a Service instead")


def _privileged(ctx: LintContext, t: PodTemplate, where: Path, c: dict[str, Any],
                priv: Any) -> Iterator[Problem]:
    """``securityContext.privileged: true`` on the container at ``where`` (fact
    ``privileged``)."""
    if get(c, "securityContext", "privileged") is True:
        yield ctx.problem(
            t.resource, PRIVILEGED.id, (*t.spec_path, *where, "securityContext", "privileged"),
            f"privileged containers are not allowed in Autopilot "
            f"({priv['constraint']}); TPUs need no privileged mode since GKE 1.28",
            value=True, severity=severity_of(priv),
            hint="remove securityContext.privileged")


def _capabilities(ctx: LintContext, t: PodTemplate, where: Path, c: dict[str, Any],
                  caps: Any) -> Iterator[Problem]:
    """Added Linux capabilities outside fact ``capabilities.allowed`` on the container at
    ``where`` (a ``CAP_`` prefix of an allowed one gets a hint to drop the prefix)."""
    added = get(c, "securityContext", "capabilities", "add")
    for j, cap in enumerate(added if isinstance(added, list) else []):
        if isinstance(cap, str) and cap not in caps["allowed"]:
            yield ctx.problem(
                t.resource, CAPABILITIES.id,
                (*t.spec_path, *where, "securityContext", "capabilities", "add", j),
                f"capability {cap} is not one Autopilot allows ({caps['constraint']})",
                value=cap, expected=", ".join(caps["allowed"]),
                severity=severity_of(caps),
                hint=f"use {cap[4:]} (without CAP_)" if cap.startswith("CAP_")
                and cap[4:] in caps["allowed"] else f"remove {cap}")


def _writable_mounts(ctx: LintContext, t: PodTemplate, vname: object,
                     hp: Any) -> Iterator[Problem]:
    """Mounts of the hostPath volume ``vname`` without ``readOnly: true``, in every
    container (fact ``hostPath``)."""
    for key, i, c in _containers(t):
        mounts = c.get("volumeMounts")
        for m, mount in enumerate(mounts if isinstance(mounts, list) else []):
            if get(mount, "name") == vname and get(mount, "readOnly") is not True:
                yield ctx.problem(
                    t.resource, HOST_PATH.id, (*t.spec_path, key, i, "volumeMounts", m, "readOnly"),
                    f"hostPath volume '{vname}' is mounted writable; Autopilot allows "
                    f"hostPath only read-only ({hp['constraint']})",
                    severity=severity_of(hp), hint="set readOnly: true")


def _host_paths(ctx: LintContext, t: PodTemplate, hp: Any) -> Iterator[Problem]:
    """hostPath volumes: a path outside fact ``hostPath.allowedPrefixes``; else a writable
    mount of the volume."""
    volumes = t.spec.get("volumes")
    for k, vol in enumerate(volumes if isinstance(volumes, list) else []):
        path = get(vol, "hostPath", "path")
        if not isinstance(path, str):
            continue
        norm = path if path.endswith("/") else path + "/"
        if any(norm.startswith(p) for p in hp["allowedPrefixes"]):
            yield from _writable_mounts(ctx, t, get(vol, "name"), hp)
            continue
        yield ctx.problem(
            t.resource, HOST_PATH.id, (*t.spec_path, "volumes", k, "hostPath", "path"),
            f"hostPath '{path}' is not allowed in Autopilot ({hp['constraint']})",
            value=path, expected="a path under " + ", ".join(hp["allowedPrefixes"]),
            severity=Severity.ERROR, source=fact_source("autopilot", "hostNamespaces"),
            hint="use an emptyDir, a PersistentVolumeClaim or Cloud Storage FUSE")


def check_host(ctx: LintContext) -> Iterator[Problem]:
    """Host namespaces, host ports, hostPath volumes, privileged containers, capabilities:
    per pod template, its host namespaces, then per container (init containers first) its
    host ports, privileged mode and capabilities, then its hostPath volumes."""
    ns = fact("autopilot", "hostNamespaces")
    ports = fact("autopilot", "hostPorts")
    hp = fact("autopilot", "hostPath")
    priv = fact("autopilot", "privileged")
    caps = fact("autopilot", "capabilities")
    for t in ctx.templates:
        yield from _host_namespaces(ctx, t, ns)
        for key, i, c in _containers(t):
            yield from _host_ports(ctx, t, (key, i), c, ports)
            yield from _privileged(ctx, t, (key, i), c, priv)
            yield from _capabilities(ctx, t, (key, i), c, caps)
        yield from _host_paths(ctx, t, hp)


def check_scheduling(ctx: LintContext) -> Iterator[Problem]:
    """Node selector / affinity keys and annotations that Autopilot refuses."""
    keys = fact("autopilot", "nodeAffinityKeys")
    allowed = set(keys["allowed"])
    annotations = fact("autopilot", "annotations")["refused"]
    for t in ctx.templates:
        res, spec, sp = t.resource, t.spec, t.spec_path
        tolerated = {get(tol, "key") for tol in spec.get("tolerations", [])
                     if isinstance(tol, dict)} if isinstance(spec.get("tolerations"), list) \
            else set()
        found: list[tuple[str, tuple[Any, ...]]] = []
        sel = spec.get("nodeSelector")
        if isinstance(sel, dict):
            found += [(k, (*sp, "nodeSelector", k)) for k in sel if isinstance(k, str)]
        na = ("affinity", "nodeAffinity")
        terms = get(spec, *na, "requiredDuringSchedulingIgnoredDuringExecution",
                    "nodeSelectorTerms")
        for i, term in enumerate(terms if isinstance(terms, list) else []):
            exprs = get(term, "matchExpressions")
            for j, e in enumerate(exprs if isinstance(exprs, list) else []):
                if isinstance(ekey := get(e, "key"), str):
                    found.append((ekey, (*sp, *na, "requiredDuringSchedulingIgnored"
                                                  "DuringExecution", "nodeSelectorTerms", i,
                                                  "matchExpressions", j, "key")))
        for key, path in found:
            if key in allowed or key in tolerated:
                continue
            yield ctx.problem(
                res, AFFINITY.id, path,
                f"Autopilot does not schedule on node label '{key}' ({keys['constraint']})",
                value=key, severity=severity_of(keys),
                hint=f"remove it, or use workload separation: also tolerate key {key}")
        for ann in annotations:  # read from the pods, so from the pod template
            if t.annotations.get(ann["key"]) == ann["value"]:
                yield ctx.problem(
                    res, ANNOTATIONS.id, (*t.path, "metadata", "annotations", ann["key"]),
                    f"{ann['key']}: \"{ann['value']}\" is refused on Autopilot workloads "
                    f"({ann['constraint']})", value=ann["value"], severity=severity_of(ann),
                    source=source_url(ann["source"]),
                    hint="remove it; use extended-duration Pods "
                         "(cloud.google.com/gke-extended-duration-pods) to avoid eviction")


def check_cluster_objects(ctx: LintContext) -> Iterator[Problem]:
    """Objects in managed namespaces; webhooks that match every resource; TPU support."""
    managed = {str(e["name"]): e for e in ctx.catalog.fact("autopilot", "managedNamespaces")}
    wild = fact("autopilot", "webhookWildcard")
    for res in ctx.resources:
        if res.namespace in managed:
            yield ctx.problem(
                res, NAMESPACE.id, ("metadata", "namespace"),
                f"namespace '{res.namespace}' is managed by Autopilot; creating objects in it "
                "is denied", value=res.namespace,
                facts=[ctx.catalog.store.of(managed[res.namespace])],
                hint="use a namespace of your own")
        if res.group == "admissionregistration.k8s.io" and res.kind in (
                "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            hooks = res.get("webhooks")
            for i, hook in enumerate(hooks if isinstance(hooks, list) else []):
                rules = get(hook, "rules")
                for j, rule in enumerate(rules if isinstance(rules, list) else []):
                    groups, resources = get(rule, "apiGroups"), get(rule, "resources")
                    if isinstance(groups, list) and "*" in groups \
                            and isinstance(resources, list) and "*" in resources:
                        yield ctx.problem(
                            res, WEBHOOK.id, ("webhooks", i, "rules", j),
                            "a webhook rule on every group and resource ('*', '*') is refused "
                            "by GKE's admission webhook controller", severity=severity_of(wild),
                            hint="list the groups and resources the webhook needs")
    for tp in tpu_pods(ctx):
        if tp.version is not None and not tp.version.autopilot_supported:
            yield ctx.problem(
                tp.template.resource, TPU_SUPPORT.id, tp.accelerator_path,
                f"{tp.version.display_name} is not offered on GKE Autopilot",
                value=tp.accelerator, hint="use a GKE Standard cluster, or another TPU version",
                source=ctx.catalog.source_url(tp.version.source))


EPHEMERAL = define("autopilot-ephemeral-storage", "accelerator containers state the ephemeral "
                   "storage they write (Autopilot's default is 1 GiB) and stay below the "
                   "maximum", severity=Severity.WARNING,
                   source=fact_source("ephemeralStorage", "autopilotDefault"),
                   facts=("kubernetes.ephemeralStorage.autopilotDefault",))

# XLA's dump directory flag (https://openxla.org/xla/flags_guidance: --xla_dump_to=DIR)
_XLA_DUMP = re.compile(r"--xla_dump_to=(\S+)")
_ACCELERATORS = (str(fact("tpu", "resource")["name"]), str(fact("gpu", "resource")["name"]))


def _mounted(c: dict[str, Any], path: str) -> bool:
    mounts = c.get("volumeMounts")
    return isinstance(mounts, list) and any(
        isinstance(m, dict) and isinstance(m.get("mountPath"), str)
        and (path + "/").startswith(m["mountPath"].rstrip("/") + "/") for m in mounts)


def _accelerator_resources(c: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The container's (requests, limits) when either names an accelerator resource
    (``google.com/tpu``, ``nvidia.com/gpu``: facts ``tpu.resource``, ``gpu.resource``);
    None for any other container. A field of the wrong type reads as empty."""
    res = got if isinstance(got := c.get("resources"), dict) else {}
    requests = got if isinstance(got := res.get("requests"), dict) else {}
    limits = got if isinstance(got := res.get("limits"), dict) else {}
    if not any(k in requests or k in limits for k in _ACCELERATORS):
        return None
    return requests, limits


def _local_xla_dumps(c: dict[str, Any]) -> list[str]:
    """The ``--xla_dump_to`` directories of the container (in its env values, then its
    command and args) that are absolute and on no mounted volume: its own filesystem."""
    env = got if isinstance(got := c.get("env"), list) else []
    dumps = [m.group(1) for e in env if isinstance(e, dict)
             and isinstance(e.get("value"), str)
             for m in _XLA_DUMP.finditer(e["value"])]
    words = [a for key in ("command", "args") if isinstance(c.get(key), list) for a in c[key]]
    dumps += [m.group(1) for a in words if isinstance(a, str) for m in _XLA_DUMP.finditer(a)]
    return [d for d in dumps if d.startswith("/") and not _mounted(c, d)]


def _unstated(ctx: LintContext, t: PodTemplate, path: Path, c: dict[str, Any],
              default: Any) -> Iterator[Problem]:
    """An accelerator container with no ephemeral-storage that dumps XLA output to its own
    filesystem: Autopilot's default (``default``) is what it gets."""
    local = _local_xla_dumps(c)
    if local:
        yield ctx.problem(
            t.resource, EPHEMERAL.id, (*path, "resources"),
            f"{t.describe()} writes XLA dumps to {local[0]} on the container's "
            "own filesystem and requests no ephemeral-storage: Autopilot gives it "
            f"{default['quantity']}, and evicts the pod when the dumps outgrow it",
            expected="resources.requests/limits ephemeral-storage, e.g. 50Gi",
            hint="request ephemeral-storage (recipe: resources.ephemeralStorage), "
                 "or dump to a mounted volume", facts=[default])


def _above_maximum(ctx: LintContext, t: PodTemplate, path: Path, stated: object,
                   hi_qty: Decimal, hi: Fact) -> Iterator[Problem]:
    """An ephemeral-storage quantity above the accelerator maximum ``hi`` (``hi_qty`` bytes)."""
    qty = parse_quantity(str(stated))
    if qty is not None and qty > hi_qty:
        yield ctx.problem(
            t.resource, EPHEMERAL.id, (*path, "resources"),
            f"ephemeral-storage {stated} is above Autopilot's maximum for accelerator "
            f"Pods ({hi['quantity']}" + ("" if hi.verified else ", an unverified figure")
            + "); Autopilot rejects such Pods", value=stated,
            expected=f"at most {hi['quantity']}",
            severity=severity_of(hi), source=hi.url, facts=[hi])


def check_ephemeral_storage(ctx: LintContext) -> Iterator[Problem]:
    """On Autopilot, an accelerator container that dumps XLA output to its own filesystem
    without an ephemeral-storage request gets the 1 GiB default (kubernetes.yaml
    ephemeralStorage.autopilotDefault, H; that the dumps outgrow it is an inference, so this
    warns), and one that asks for more than the accelerator maximum is rejected
    (autopilotAcceleratorMax; unverified figure, a warning): the bound the cluster model's
    Autopilot accelerator classes hold (:func:`mldiag_provision.cluster.autopilot.
    ephemeral_bounds`). The request is read first, then the limit."""
    from mldiag_provision.cluster.autopilot import ephemeral_bounds

    default = fact("ephemeralStorage", "autopilotDefault")
    _, (hi_qty, hi) = ephemeral_bounds()
    for t in ctx.templates:
        for i, c in t.containers():
            asked = _accelerator_resources(c)
            if asked is None:
                continue
            requests, limits = asked
            path = (*t.spec_path, "containers", i)
            stated = requests.get("ephemeral-storage", limits.get("ephemeral-storage"))
            if stated is None:
                yield from _unstated(ctx, t, path, c, default)
            else:
                yield from _above_maximum(ctx, t, path, stated, hi_qty, hi)


CHECKS = (check_host, check_scheduling, check_cluster_objects, check_ephemeral_storage)
