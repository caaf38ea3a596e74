"""Preflight rules of the production workload settings (issue 14): volumes, tolerations,
annotations, priority class, ephemeral storage and the JobSet failure policy.

Facts: ``catalog/data/kubernetes.yaml`` ``volumes``, ``scheduling``, ``ephemeralStorage`` and
``jobset`` (each with its source); the severity of every problem is settled by the rulebook
(never an error on an unverified fact).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mldiag_provision.catalog.store import store
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lazyre import lazy
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule
from mldiag_provision.preflight.stack_rules import bucket_name_problem, bucket_rule
from mldiag_provision.quantity import bad_amount, parse_quantity

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import GcsFuseVolume, WorkloadVolume

_DNS_SUBDOMAIN = lazy(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = lazy(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _k8s(*keys: str) -> Any:
    return store().fact("kubernetes", *keys)


def _wpath(i: int, *rest: str | int) -> tuple[str | int, ...]:
    return ("spec", "workloads", i, *rest)


@rule("workload-volumes", facts=("kubernetes.volumes.gcsFuse",))
def workload_volumes(ctx: Context) -> Iterator[Problem]:
    """Workload volumes: one source each, unique names and mount paths, Cloud Storage FUSE
    only where the pods have Workload Identity, emptyDir sizes are quantities."""
    wi = ctx.recipe.spec.orchestrator.workload_identity or not ctx.has(
        Capability.EXISTING_CLUSTER)
    gcs = _k8s("volumes", "gcsFuse")
    for i, w in enumerate(ctx.recipe.spec.workloads):
        names: set[str] = set()
        mounts: set[str] = set()
        for j, v in enumerate(w.volumes or ()):
            path = _wpath(i, "volumes", j)
            yield from _volume_identity(ctx, path, v, names, mounts)
            if v.gcs_fuse is not None:
                yield from _gcs_fuse_volume(ctx, path, v.gcs_fuse, w.host_network, wi, gcs)
            if v.empty_dir is not None and v.empty_dir.size_limit is not None:
                bad = bad_amount("sizeLimit", v.empty_dir.size_limit)
                if bad is not None:
                    yield ctx.problem(
                        "workload-volumes", (*path, "emptyDir", "sizeLimit"), bad[0],
                        value=v.empty_dir.size_limit, expected="e.g. 100Gi", hint=bad[1],
                        source=bad[2])


def _volume_identity(ctx: Context, path: tuple[str | int, ...], v: WorkloadVolume, names: set[str],
                     mounts: set[str]) -> Iterator[Problem]:
    """One volume's source count (exactly one), and its name and mount path against the
    workload's earlier ones (``names``, ``mounts``: updated here; a mount path without its
    trailing ``/``)."""
    sources = [k for k in ("gcs_fuse", "persistent_volume_claim", "empty_dir")
               if getattr(v, k) is not None]
    if len(sources) != 1:
        yield ctx.problem(
            "workload-volumes", path,
            f"volume '{v.name}' needs exactly one source, has {len(sources)}",
            value=v.name, expected="one of gcsFuse, persistentVolumeClaim, emptyDir",
            hint="e.g. gcsFuse: {bucket: my-data}")
    if v.name in names:
        yield ctx.problem("workload-volumes", (*path, "name"),
                          f"volume name '{v.name}' is used twice", value=v.name,
                          expected="unique volume names per workload")
    names.add(v.name)
    mount = v.mount_path.rstrip("/") or "/"
    if mount in mounts:
        yield ctx.problem("workload-volumes", (*path, "mountPath"),
                          f"mount path '{v.mount_path}' is used twice",
                          value=v.mount_path, expected="one volume per mount path")
    mounts.add(mount)


def _gcs_fuse_volume(ctx: Context, path: tuple[str | int, ...], fuse: GcsFuseVolume,
                     host_network: bool, wi: bool, gcs: Any) -> Iterator[Problem]:
    """A Cloud Storage FUSE volume: an error without Workload Identity (``wi``) and for a
    bucket name that is not one; a warning for hostNetwork pods, which the workload's
    service account does not reach. ``gcs``: kubernetes.yaml ``volumes.gcsFuse``."""
    if not wi:
        yield ctx.problem(
            "workload-volumes", (*path, "gcsFuse"),
            "Cloud Storage FUSE needs Workload Identity (the driver mounts the "
            "bucket as the pod's Kubernetes service account), and "
            "orchestrator.workloadIdentity is false",
            value=fuse.bucket, expected="a GKE cluster with Workload Identity",
            hint="use a persistentVolumeClaim instead, or set "
                 "spec.orchestrator.workloadIdentity: true on GKE",
            source=gcs.url, facts=[gcs])
    why = bucket_name_problem(fuse.bucket)
    if why:
        yield ctx.problem("workload-volumes", (*path, "gcsFuse", "bucket"),
                          f"'{fuse.bucket}' is not a bucket name: {why}",
                          value=fuse.bucket, expected=bucket_rule(),
                          hint="name the existing bucket without the gs:// prefix",
                          source="https://cloud.google.com/storage/docs/buckets#naming")
    if host_network:
        yield ctx.problem(
            "workload-volumes", (*path, "gcsFuse"),
            "hostNetwork pods do not use Workload Identity (they act as the node's "
            "service account), so the bucket grant of the workloads' service account "
            "does not reach them", value=fuse.bucket,
            expected="hostNetwork: false with Cloud Storage FUSE volumes",
            severity=Severity.WARNING, source=gcs.url, facts=[gcs])


@rule("workload-tolerations", facts=("kubernetes.scheduling.tolerations",))
def workload_tolerations(ctx: Context) -> Iterator[Problem]:
    """Tolerations the API server accepts: Exists takes no value, an empty key needs Exists,
    tolerationSeconds only with effect NoExecute; keys are qualified names."""
    for i, w in enumerate(ctx.recipe.spec.workloads):
        for j, t in enumerate(w.tolerations or ()):
            path = _wpath(i, "tolerations", j)
            if t.operator == "Exists" and t.value:
                yield ctx.problem("workload-tolerations", (*path, "value"),
                                  "operator Exists takes no value", value=t.value,
                                  expected="no value, or operator: Equal",
                                  hint="drop value, or set operator: Equal")
            if not t.key and t.operator != "Exists":
                yield ctx.problem("workload-tolerations", (*path, "operator"),
                                  "a toleration without a key must use operator Exists "
                                  "(it then tolerates every taint)", value=t.operator,
                                  expected="Exists, or a key")
            if t.toleration_seconds is not None and t.effect != "NoExecute":
                yield ctx.problem("workload-tolerations", (*path, "tolerationSeconds"),
                                  "tolerationSeconds applies to effect NoExecute only",
                                  value=t.toleration_seconds, expected="effect: NoExecute")
            if t.key and not _qualified_key(t.key):
                yield ctx.problem("workload-tolerations", (*path, "key"),
                                  f"'{t.key}' is not a valid taint key", value=t.key,
                                  expected="[prefix/]name, e.g. "
                                           "example.com/dedicated")


def _qualified_key(key: str) -> bool:
    """A Kubernetes qualified name: optional DNS-subdomain prefix (<= 253) + '/' + a name of
    at most 63 characters (kubernetes.yaml scheduling.annotationKey)."""
    fact = _k8s("scheduling", "annotationKey")
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > int(fact["maxPrefix"])
                  or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= int(fact["maxName"]) and bool(_QUALIFIED_NAME.match(name))


@rule("workload-annotations", facts=("kubernetes.scheduling.annotationKey",))
def workload_annotations(ctx: Context) -> Iterator[Problem]:
    """Pod annotation keys are qualified names and all of them fit 256 KiB; the Cloud Storage
    FUSE annotation is not turned off while the workload mounts a bucket."""
    fact = _k8s("scheduling", "annotationKey")
    gcs = _k8s("volumes", "gcsFuse")
    gcs_key, gcs_value = str(gcs["annotation"]["key"]), str(gcs["annotation"]["value"])
    for i, w in enumerate(ctx.recipe.spec.workloads):
        annotations = w.annotations or {}
        for key, value in annotations.items():
            if not _qualified_key(key):
                yield ctx.problem(
                    "workload-annotations", _wpath(i, "annotations", key),
                    f"annotation key '{key}' is not a Kubernetes qualified name", value=key,
                    expected="[DNS subdomain prefix (<= 253)/]name (<= 63 characters, "
                             "alphanumeric first and last; -, _ and . between)",
                    source=fact.url, facts=[fact], prefer_value=False)
            if key == gcs_key and value != gcs_value and any(
                    v.gcs_fuse is not None for v in w.volumes or ()):
                yield ctx.problem(
                    "workload-annotations", _wpath(i, "annotations", key),
                    f"{key}: '{value}' stops the Cloud Storage FUSE sidecar, and this "
                    "workload mounts a bucket", value=value, expected=f"'{gcs_value}'",
                    hint="drop the annotation: the tool sets it", source=gcs.url, facts=[gcs])
        size = sum(len(k) + len(v) for k, v in annotations.items())
        if size > int(fact["maxTotalBytes"]):
            yield ctx.problem("workload-annotations", _wpath(i, "annotations"),
                              f"the annotations total {size} bytes", value=size,
                              expected=f"at most {fact['maxTotalBytes']} bytes",
                              source=fact.url, facts=[fact], prefer_value=False)


@rule("workload-priority-class", facts=("kubernetes.scheduling.priorityClass",))
def workload_priority_class(ctx: Context) -> Iterator[Problem]:
    """priorityClassName is a DNS subdomain and not one of Kubernetes' system- classes (the
    class must exist in the cluster: the stack does not create it)."""
    fact = _k8s("scheduling", "priorityClass")
    reserved = str(fact["reservedPrefix"])
    for i, w in enumerate(ctx.recipe.spec.workloads):
        name = w.priority_class_name
        if not name:
            continue
        if name.startswith(reserved):
            yield ctx.problem(
                "workload-priority-class", _wpath(i, "priorityClassName"),
                f"'{name}' is a Kubernetes system priority class (prefix {reserved}), meant "
                "for cluster-critical pods; training jobs with it can preempt system pods",
                value=name, expected=f"a class of your own, not starting with {reserved}",
                hint="create a PriorityClass (e.g. value 1000000) and name it here",
                source=fact.url, facts=[fact])


@rule("workload-ephemeral-storage",
      facts=("kubernetes.ephemeralStorage.autopilotRejectsAboveMax",))
def workload_ephemeral_storage(ctx: Context) -> Iterator[Problem]:
    """resources.ephemeralStorage is a quantity, and on GKE Autopilot within the range
    Autopilot allows for accelerator Pods (above the maximum Autopilot rejects the Pod): the
    range the cluster model's Autopilot accelerator classes hold
    (:func:`mldiag_provision.cluster.autopilot.ephemeral_bounds`)."""
    autopilot = ctx.has(Capability.AUTOPILOT_RULES)
    for i, w in enumerate(ctx.recipe.spec.workloads):
        raw = getattr(w.resources, "ephemeral_storage", None)
        if raw is None:
            continue
        path = _wpath(i, "resources", "ephemeralStorage")
        bad = bad_amount("ephemeralStorage", raw)
        if bad is not None:
            yield ctx.problem("workload-ephemeral-storage", path, bad[0], value=raw,
                              expected="e.g. 50Gi", hint=bad[1], source=bad[2])
            continue
        qty = parse_quantity(raw)
        assert qty is not None  # bad_amount said it is a quantity
        if str(raw).strip().isdigit():  # a bare number is bytes in Kubernetes quantities
            yield ctx.problem("workload-ephemeral-storage", path,
                              f"ephemeral storage '{raw}' has no unit, so it is {raw} bytes",
                              value=raw, expected=f"a size with its unit, e.g. {raw}Gi",
                              severity=Severity.WARNING,
                              hint=f"write {raw}Gi (or {raw}Mi) if that is what you meant",
                              source="https://kubernetes.io/docs/reference/kubernetes-api/"
                                     "common-definitions/quantity/")
            continue
        if not autopilot:
            continue
        from mldiag_provision.cluster.autopilot import ephemeral_bounds  # Autopilot only

        (lo, lo_fact), (hi, hi_fact) = ephemeral_bounds()
        if qty > hi:
            yield ctx.problem(
                "workload-ephemeral-storage", path,
                f"ephemeral storage {raw} is above Autopilot's maximum for accelerator Pods "
                f"({hi_fact['quantity']}); Autopilot rejects such Pods",
                value=raw, expected=f"at most {hi_fact['quantity']}",
                hint="write large outputs (XLA dumps, checkpoints) to a Cloud Storage FUSE "
                     "volume instead", source=hi_fact.url, facts=[hi_fact])
        elif qty < lo:
            yield ctx.problem(
                "workload-ephemeral-storage", path,
                f"ephemeral storage {raw} is below Autopilot's minimum for accelerator Pods "
                f"({lo_fact['quantity']}); Autopilot raises it", value=raw,
                expected=f"at least {lo_fact['quantity']}", severity=Severity.WARNING,
                source=lo_fact.url, facts=[lo_fact])


def _jobset_release(ctx: Context) -> tuple[str, str]:
    """(JobSet release the workloads meet, where that comes from): the recipe's
    ``crdVersions.jobset``, else the chart the agents stage installs (gke.yaml
    ``workloadAddons``; chart versions carry no leading v)."""
    stated = ctx.recipe.spec.orchestrator.crd_versions.jobset
    if stated:
        return stated, "spec.orchestrator.crdVersions.jobset"
    for addon in store().doc("gke")["workloadAddons"]:
        if addon["kind"] == "JobSet":
            return "v" + str(addon["addon"]["version"]), "the JobSet chart the stack installs"
    raise LookupError("gke.yaml workloadAddons has no JobSet entry")


@rule("workload-failure-policy", facts=("kubernetes.jobset.failurePolicy",))
def workload_failure_policy(ctx: Context) -> Iterator[Problem]:
    """failurePolicy only on JobSet workloads, and a restartStrategy the installed JobSet
    release knows."""
    fact = _k8s("jobset", "failurePolicy")
    strategies: dict[str, list[str]] = fact["restartStrategies"]
    for i, w in enumerate(ctx.recipe.spec.workloads):
        fp = w.failure_policy
        if fp is None:
            continue
        idx = ctx.slice_index(w.slice)
        if idx is None:
            continue
        s = ctx.recipe.spec.slices[idx]
        kind = w.kind if w.kind != "auto" else ("JobSet" if s.count > 1 else "Job")
        # the plan's decision (plan/kubernetes.py workload_kind): auto is JobSet for multislice
        if kind != "JobSet":
            yield ctx.problem(
                "workload-failure-policy", _wpath(i, "failurePolicy"),
                "failurePolicy applies to JobSet workloads; this one renders as a Job",
                value=kind, expected="kind: JobSet, or a multislice (count > 1)",
                hint="set kind: JobSet, or use backoffLimit for a Job", source=fact.url,
                facts=[fact], prefer_value=False)
            continue
        if fp.restart_strategy is None:
            continue
        release, why = _jobset_release(ctx)
        allowed = strategies.get(release, [])
        if fp.restart_strategy not in allowed:
            yield ctx.problem(
                "workload-failure-policy", _wpath(i, "failurePolicy", "restartStrategy"),
                f"JobSet {release} ({why}) has no restartStrategy {fp.restart_strategy}",
                value=fp.restart_strategy,
                expected=", ".join(allowed) if allowed else "no restartStrategy (added in "
                                                             "v0.9.0)",
                hint="leave restartStrategy out, or state a newer JobSet release in "
                     "spec.orchestrator.crdVersions", source=fact.url, facts=[fact])


_KUBERNETES_ONLY = (("volumes", "volumes"), ("tolerations", "tolerations"),
                    ("annotations", "annotations"),
                    ("priority_class_name", "priorityClassName"),
                    ("failure_policy", "failurePolicy"))


@rule("workload-kubernetes-only")
def workload_kubernetes_only(ctx: Context) -> Iterator[Problem]:
    """Volumes, tolerations, annotations, priority class, failure policy and ephemeral storage
    are Kubernetes pod settings: an orchestrator without Kubernetes workloads (managed Slurm)
    would silently drop them."""
    if ctx.orchestrator is None or ctx.has(Capability.KUBERNETES_WORKLOADS):
        return
    for i, w in enumerate(ctx.recipe.spec.workloads):
        fields = [(attr, key) for attr, key in _KUBERNETES_ONLY if getattr(w, attr, None)]
        if getattr(w.resources, "ephemeral_storage", None) is not None:
            fields.append(("ephemeral_storage", "resources.ephemeralStorage"))
        for _attr, key in fields:
            yield ctx.problem(
                "workload-kubernetes-only", _wpath(i, *key.split(".")),
                f"{key} is a Kubernetes pod setting; orchestrator "
                f"{ctx.recipe.spec.orchestrator.type} runs this workload without Kubernetes",
                value=key, expected="no Kubernetes-only settings on this orchestrator",
                hint=f"remove {key}", prefer_value=False)
