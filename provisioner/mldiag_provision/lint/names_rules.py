"""Names that controllers derive from yours must fit their limits.

A Job's pods get the hostname ``<job>-<index>`` and the label ``job-name: <job>``; a JobSet
makes child Jobs ``<jobset>-<replicatedJob>-<jobIndex>`` and pods with a further index and a
random suffix; KubeRay appends ``-serve-svc`` and a 6-character suffix; a LeaderWorkerSet runs
each group's workers as a StatefulSet ``<lws>-<group>``. Any of them longer than a DNS label or
label value (63 characters) means the controller's create call fails and the pods never exist,
although the object you wrote was accepted. Facts: ``derivedNames`` in lint/data/facts.yaml.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from mldiag_provision.catalog.store import store
from mldiag_provision.errors import Problem
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.loading import Resource
from mldiag_provision.lint.rules import define, fact, fact_source, severity_of
from mldiag_provision.lint.workloads import get_int

_F = ("derivedNames",)
_ID = "kubernetes.derivedNames"
_LIMIT = "gke.labelMaxLength"
JOB_HOSTNAME = define("names-job-hostname", "an Indexed Job's pod hostnames <job>-<index> fit "
                      "in 63 characters", source=fact_source(*_F, "indexedJobHostname"),
                      facts=(f"{_ID}.indexedJobHostname", _LIMIT))
JOB_LABEL = define("names-job-label", "a Job's name fits the job-name label of its pods "
                   "(63 characters)", source=fact_source(*_F, "jobNameLabel"),
                   facts=(f"{_ID}.jobNameLabel", _LIMIT))
JOBSET = define("names-jobset-children", "a JobSet's child Job and pod names fit in 63 "
                "characters", source=fact_source(*_F, "jobsetChildren"),
                facts=(f"{_ID}.jobsetChildren", _LIMIT))
KUBERAY = define("names-kuberay", "RayCluster and RayJob names leave room for KubeRay's "
                 "suffixes", source=fact_source(*_F, "kuberay"), facts=(f"{_ID}.kuberay",))
LWS = define("names-lws-groups", "a LeaderWorkerSet's group StatefulSets and worker pods fit "
             "their name limits", severity=severity_of(fact(*_F, "lwsGroups")),
             source=fact_source(*_F, "lwsGroups"),
             facts=(f"{_ID}.lwsGroups", _LIMIT))


def _shorten_hint(name: str, excess: int) -> str:
    keep = max(1, len(name) - excess)
    return f"shorten metadata.name by {excess} character(s), e.g. {name[:keep].rstrip('-')}"


def _job(ctx: LintContext, res: Resource, name: str, limit: int) -> Iterator[Problem]:
    """A Job: its name is its pods' ``job-name`` label; an Indexed Job's pods are also named
    ``<job>-<index>`` as hostnames (the last index: ``completions - 1``)."""
    if len(name) > limit:
        yield ctx.problem(
            res, JOB_LABEL.id, ("metadata", "name"),
            f"Job name has {len(name)} characters: its pods' job-name label takes the "
            f"name, and label values have at most {limit}; the Job is refused",
            value=name, hint=_shorten_hint(name, len(name) - limit))
        return
    if res.get("spec", "completionMode") != "Indexed":
        return
    last = (get_int(res.data, "spec", "completions") or 1) - 1
    host = f"{name}-{last}"
    if len(host) > limit:
        sub = res.get("spec", "template", "spec", "subdomain")
        yield ctx.problem(
            res, JOB_HOSTNAME.id, ("metadata", "name"),
            f"the pods of Indexed Job '{name}' get hostnames up to '{host}' "
            f"({len(host)} characters, more than {limit})"
            + (f"; with subdomain '{sub}' the workers cannot be created or "
               "resolved" if isinstance(sub, str) else "; the pods are refused"),
            value=name, hint=_shorten_hint(name, len(host) - limit))


def _jobset(ctx: LintContext, res: Resource, name: str, limit: int) -> Iterator[Problem]:
    """A JobSet: per replicated job, the last child Job ``<jobset>-<rj>-<replicas - 1>`` and
    the last pod ``<child>-<completions - 1>-<suffix>`` (suffix length: fact
    ``jobsetChildren.podSuffix``)."""
    f = fact(*_F, "jobsetChildren")
    jobs = res.get("spec", "replicatedJobs")
    for i, rj in enumerate(jobs if isinstance(jobs, list) else []):
        rname = rj.get("name") if isinstance(rj, dict) else None
        if not isinstance(rname, str):
            continue
        replicas = get_int(rj, "replicas")
        child = f"{name}-{rname}-{(replicas if replicas is not None else 1) - 1}"
        completions = get_int(rj, "template", "spec", "completions")
        pod = f"{child}-{(completions or 1) - 1}"
        longest = len(pod) + f["podSuffix"]
        if len(child) > limit:
            yield ctx.problem(
                res, JOBSET.id, ("spec", "replicatedJobs", i, "name"),
                f"child Job name '{child}' has {len(child)} characters (more than "
                f"{limit}); the JobSet webhook refuses the JobSet", value=rname,
                hint="shorten the JobSet or replicated job name")
        elif longest > limit:
            yield ctx.problem(
                res, JOBSET.id, ("spec", "replicatedJobs", i, "name"),
                f"pod names of replicated job '{rname}' reach {longest} characters "
                f"('{pod}-xxxxx', more than {limit}); the JobSet webhook refuses the "
                "JobSet", value=rname,
                hint=f"shorten the JobSet or replicated job name by {longest - limit}")


def _kuberay(ctx: LintContext, res: Resource, name: str, limit: int) -> Iterator[Problem]:
    """A RayCluster or RayJob: the longest name KubeRay's suffixes leave room for (fact
    ``kuberay``: ``maxRayClusterName``, ``maxRayJobName``); ``limit`` is not used."""
    f = fact(*_F, "kuberay")
    most = f["maxRayClusterName"] if res.kind == "RayCluster" else f["maxRayJobName"]
    if len(name) > most:
        why = ("KubeRay appends -serve-svc and other suffixes to name its Services"
               if res.kind == "RayCluster" else
               "its RayCluster is named <rayjob>-<5 random characters>")
        yield ctx.problem(
            res, KUBERAY.id, ("metadata", "name"),
            f"{res.kind} name has {len(name)} characters; KubeRay refuses more than "
            f"{most} ({why})", value=name, expected=f"at most {most} characters",
            hint=_shorten_hint(name, len(name) - most))


def _lws(ctx: LintContext, res: Resource, name: str, limit: int) -> Iterator[Problem]:
    """A LeaderWorkerSet: the last group's StatefulSet ``<lws>-<replicas - 1>`` (at most
    fact ``lwsGroups.maxStatefulSetName``) and, with workers, its last pod
    ``<group>-<size - 1>``."""
    f = fact(*_F, "lwsGroups")
    replicas = get_int(res.data, "spec", "replicas")
    size = get_int(res.data, "spec", "leaderWorkerTemplate", "size") or 1
    group = f"{name}-{(replicas if replicas is not None else 1) - 1}"
    worker = f"{group}-{size - 1}"
    if len(group) > f["maxStatefulSetName"]:
        yield ctx.problem(
            res, LWS.id, ("metadata", "name"),
            f"group StatefulSet '{group}' has {len(group)} characters: its pods' "
            f"controller-revision-hash label (<name>-<10 characters>) exceeds {limit} "
            "and the workers are never created", value=name,
            severity=severity_of(f),
            hint=_shorten_hint(name, len(group) - f["maxStatefulSetName"]))
    elif size > 1 and len(worker) > limit:
        yield ctx.problem(
            res, LWS.id, ("metadata", "name"),
            f"worker pod '{worker}' has {len(worker)} characters (more than {limit}); "
            "its hostname is refused", value=name, severity=severity_of(f),
            hint=_shorten_hint(name, len(worker) - limit))


_BY_KIND: dict[tuple[str, str],
               Callable[[LintContext, Resource, str, int], Iterator[Problem]]] = {
    ("batch", "Job"): _job,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("ray.io", "RayCluster"): _kuberay,
    ("ray.io", "RayJob"): _kuberay,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
}
"""(API group, kind) -> the check of the names its controller derives from ``metadata.name``
(called with the name and the label/hostname limit, 63)."""


def check_names(ctx: LintContext) -> Iterator[Problem]:
    """Hostnames, child names and label values derived from each workload's name."""
    limit = store().get("gke", "labelMaxLength")["value"]  # hostnames: the same 63
    for res in ctx.resources:
        name = res.name
        check = _BY_KIND.get((res.group, res.kind))
        if check is not None and isinstance(name, str) and name:
            yield from check(ctx, res, name, limit)


CHECKS = (check_names,)
