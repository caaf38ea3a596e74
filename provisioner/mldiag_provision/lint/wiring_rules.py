"""Multi-host wiring: what lets the workers of one program find each other at start.

Workers of a multi-host Job (TPU slice, multi-node GPU) reach each other by the hostnames
``<job>-<index>.<subdomain>``, which exist only as DNS records of a headless Service. Kubernetes
publishes a pod's record once the pod is Ready unless the Service sets
``publishNotReadyAddresses: true``; JAX and the TPU runtime connect to every peer while they
start, before any pod is Ready, and time out. JobSet creates that Service itself (``spec.network``,
on by default); a Job needs one written beside it. Facts: ``wiring`` in lint/data/facts.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldiag_provision.errors import Problem
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.loading import Resource
from mldiag_provision.lint.rules import define, fact, fact_source, severity_of
from mldiag_provision.lint.tpu_rules import tpu_pods
from mldiag_provision.lint.workloads import PodTemplate, get_int

_F = ("wiring",)
NOT_READY = define("wiring-publish-not-ready", "the headless Service of a multi-pod Job "
                   "publishes pods before they are Ready", severity=severity_of(
                       fact(*_F, "publishNotReady")),
                   source=fact_source(*_F, "publishNotReady"),
                   facts=("kubernetes.wiring.publishNotReady",))
JOBSET_NETWORK = define("wiring-jobset-network", "a JobSet whose jobs run several pods keeps "
                        "its pod DNS names (network.enableDNSHostnames)",
                        source=fact_source(*_F, "jobsetNetwork"),
                        facts=("kubernetes.wiring.jobsetNetwork",))
HOSTNAME = define("wiring-explicit-hostname", "an Indexed Job's pod template leaves hostname "
                  "to the Job controller", severity=severity_of(fact(*_F, "explicitHostname")),
                  source=fact_source(*_F, "explicitHostname"),
                  facts=("kubernetes.wiring.explicitHostname",))


def _multi_pod(t: PodTemplate) -> bool:
    """Several pods of one Indexed Job run together (JobSet defaults to Indexed)."""
    mode = t.job.get("completionMode")
    if mode is None and t.resource.kind == "JobSet":
        mode = "Indexed"
    return mode == "Indexed" and (get_int(t.job, "parallelism") or 1) > 1


def _service(ctx: LintContext, res: Resource, sub: object) -> Resource | None:
    if not isinstance(sub, str) or not sub:
        return None
    found = [s for s in ctx.find("", "Service", sub, res.namespace)
             if s.get("spec", "clusterIP") == "None"]
    return found[0] if found else None


def _multi_host_resources(ctx: LintContext) -> set[int]:
    """ids of the objects with a multi-host TPU pod template (memoised per run: one pass
    over the TPU pods instead of one per JobSet)."""
    return ctx.memo("wiring_multi_host", lambda: {  # type: ignore[return-value]
        id(tp.template.resource) for tp in tpu_pods(ctx) if tp.multi_host})


def check_wiring(ctx: LintContext) -> Iterator[Problem]:
    """Services without publishNotReadyAddresses, JobSet network switched off, fixed
    hostnames in Indexed Jobs."""
    nr = fact(*_F, "publishNotReady")
    host = fact(*_F, "explicitHostname")
    seen: set[int] = set()
    for t in ctx.templates:
        if t.job_path is None or not _multi_pod(t):
            continue
        res = t.resource
        if isinstance(t.spec.get("hostname"), str):
            yield ctx.problem(
                res, HOSTNAME.id, (*t.spec_path, "hostname"),
                f"hostname '{t.spec['hostname']}' is the same for every pod of {t.describe()}; "
                "the Job controller names them <job>-<index> only when hostname is unset, so "
                "the workers' addresses never resolve", value=t.spec["hostname"],
                severity=severity_of(host), hint="remove hostname; keep subdomain")
        if res.kind == "JobSet":
            if id(res) in seen:
                continue
            seen.add(id(res))
            tpu_multihost = id(res) in _multi_host_resources(ctx)
            for key in ("enableDNSHostnames", "publishNotReadyAddresses"):
                value = res.get("spec", "network", key)
                if key == "enableDNSHostnames" and tpu_multihost:
                    continue  # tpu-multislice reports it for multi-host TPU JobSets
                if value is False:
                    rule = JOBSET_NETWORK if key == "enableDNSHostnames" else NOT_READY
                    yield ctx.problem(
                        res, rule.id, ("spec", "network", key),
                        f"network.{key}: false on {res.display()} whose replicated jobs "
                        "run several pods each: "
                        + ("the pods get no DNS names and the workers cannot find each other"
                           if key == "enableDNSHostnames" else
                           "a worker's DNS record appears only once it is Ready, and workers "
                           "that connect while they start time out"),
                        value=False, expected="true (the default)",
                        severity=None if rule is JOBSET_NETWORK else severity_of(nr),
                        hint=f"remove network.{key} (JobSet defaults it to true)")
            continue
        svc = _service(ctx, res, t.spec.get("subdomain"))
        if svc is None or id(svc) in seen:
            continue
        seen.add(id(svc))
        if svc.get("spec", "publishNotReadyAddresses") is not True:
            # the field's own path, written or not: a wrong-typed sibling (spec.type: 5) is
            # another fault, not a reason to drop this one (linter.drop_consequences)
            yield ctx.problem(
                svc, NOT_READY.id, ("spec", "publishNotReadyAddresses"),
                f"headless Service '{svc.name}' of multi-pod {res.display()} does not set "
                "publishNotReadyAddresses: true; each worker's DNS record appears only once "
                "that pod is Ready, so workers that connect while they start (JAX, the TPU "
                "runtime) can time out", value=svc.get("spec", "publishNotReadyAddresses"),
                expected="publishNotReadyAddresses: true", severity=severity_of(nr),
                hint="add publishNotReadyAddresses: true under spec")


GCSFUSE = define("wiring-gcsfuse-annotation", "a pod that mounts a Cloud Storage FUSE volume "
                 "carries the gke-gcsfuse/volumes: \"true\" annotation",
                 source=fact_source("volumes", "gcsFuse"),
                 facts=("kubernetes.volumes.gcsFuse",))


def check_gcsfuse(ctx: LintContext) -> Iterator[Problem]:
    """Cloud Storage FUSE CSI volumes (inline, driver gcsfuse.csi.storage.gke.io) in a pod
    template without the annotation that makes GKE inject the driver's sidecar: the volume
    never mounts and the pod stays in ContainerCreating (kubernetes.yaml volumes.gcsFuse)."""
    f = fact("volumes", "gcsFuse")
    driver, key = str(f["driver"]), str(f["annotation"]["key"])
    want = str(f["annotation"]["value"])
    for t in ctx.templates:
        volumes = t.spec.get("volumes")
        if not isinstance(volumes, list):
            continue
        named = [v.get("name") for v in volumes if isinstance(v, dict)
                 and isinstance(v.get("csi"), dict) and v["csi"].get("driver") == driver]
        if not named:
            continue
        annotations = t.resource.get(*t.path, "metadata", "annotations")
        value = annotations.get(key) if isinstance(annotations, dict) else None
        if value is not None and not isinstance(value, str):
            continue  # an annotation value of the wrong type: the schema's one finding
        if value != want:
            yield ctx.problem(
                t.resource, GCSFUSE.id, (*t.path, "metadata", "annotations", key),
                f"{t.describe()} mounts Cloud Storage FUSE volume(s) "
                f"{', '.join(map(str, named))} without the pod annotation {key}: \"{want}\"; "
                "GKE then injects no gcsfuse sidecar and the volume never mounts",
                value=value, expected=f'{key}: "{want}"', severity=severity_of(f),
                hint=f'add {key}: "{want}" under the pod template\'s metadata.annotations')


CHECKS = (check_wiring, check_gcsfuse)
