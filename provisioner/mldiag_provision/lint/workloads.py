"""Where the pods are: the pod templates inside each workload kind, and what runs them.

A TPU rule asks the same questions of a Pod, a Job, a JobSet's replicated job, a
LeaderWorkerSet's worker template or a Ray worker group: which containers request
``google.com/tpu``, which node selectors apply, how many pods of one program run together.
:func:`pod_templates` answers the first two for every kind it knows, with the field path of
each template; the controller-specific counts stay with the rules that need them.

NOTE: a new workload kind needs an entry in :data:`_FINDERS` and, if it can run a multi-host
slice, a branch in ``tpu_rules.check_multihost``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from mldiag_provision.lint.loading import Resource, get
from mldiag_provision.recipe.sourcemap import Path


@dataclass(eq=False)
class PodTemplate:
    """One pod shape of a workload.

    Attributes:
      resource: the object that holds it.
      path: path of the template object (``{metadata, spec}``) in the resource; for a Pod,
        ``()`` (the Pod is its own template).
      role: which template of the kind this is, for messages ("worker template", "replicated
        job 'slice'"); empty when the kind has only one.
      job_path: path of the JobSpec that runs these pods (Job, CronJob, JobSet), else None.

    ``spec``, ``labels``, ``annotations`` and ``job`` are looked up once (rules ask them of
    every template many times, and lint never changes the objects it reads; issue 16).
    """

    resource: Resource
    path: Path
    role: str = ""
    job_path: Path | None = None

    @property
    def spec_path(self) -> Path:
        return (*self.path, "spec")

    @cached_property
    def spec(self) -> dict[str, Any]:
        v = self.resource.get(*self.spec_path)
        return v if isinstance(v, dict) else {}

    @cached_property
    def labels(self) -> dict[str, Any]:
        v = self.resource.get(*self.path, "metadata", "labels")
        return v if isinstance(v, dict) else {}

    @cached_property
    def annotations(self) -> dict[str, Any]:
        v = self.resource.get(*self.path, "metadata", "annotations")
        return v if isinstance(v, dict) else {}

    @cached_property
    def job(self) -> dict[str, Any]:
        v = self.resource.get(*self.job_path) if self.job_path is not None else None
        return v if isinstance(v, dict) else {}

    def containers(self, key: str = "containers") -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, container) for each mapping in ``spec.containers`` (or initContainers)."""
        items = self.spec.get(key)
        if isinstance(items, list):
            for i, c in enumerate(items):
                if isinstance(c, dict):
                    yield i, c

    def describe(self) -> str:
        what = self.resource.display()
        return f"{what} ({self.role})" if self.role else what


def _pod(res: Resource) -> Iterator[PodTemplate]:
    yield PodTemplate(res, ())


def _template(res: Resource) -> Iterator[PodTemplate]:
    yield PodTemplate(res, ("spec", "template"))


def _job(res: Resource) -> Iterator[PodTemplate]:
    yield PodTemplate(res, ("spec", "template"), job_path=("spec",))


def _cronjob(res: Resource) -> Iterator[PodTemplate]:
    yield PodTemplate(res, ("spec", "jobTemplate", "spec", "template"),
                      job_path=("spec", "jobTemplate", "spec"))


def _pod_template_kind(res: Resource) -> Iterator[PodTemplate]:
    yield PodTemplate(res, ("template",))


def _jobset(res: Resource) -> Iterator[PodTemplate]:
    jobs = res.get("spec", "replicatedJobs")
    for i, rj in enumerate(jobs if isinstance(jobs, list) else []):
        if isinstance(rj, dict):
            name = rj.get("name")
            role = f"replicated job '{name}'" if isinstance(name, str) else f"replicated job {i}"
            base = ("spec", "replicatedJobs", i, "template", "spec")
            yield PodTemplate(res, (*base, "template"), role=role, job_path=base)


def _lws(res: Resource) -> Iterator[PodTemplate]:
    if isinstance(res.get("spec", "leaderWorkerTemplate", "leaderTemplate"), dict):
        yield PodTemplate(res, ("spec", "leaderWorkerTemplate", "leaderTemplate"),
                          role="leader template")
    yield PodTemplate(res, ("spec", "leaderWorkerTemplate", "workerTemplate"),
                      role="worker template")


def _ray_cluster_spec(res: Resource, base: Path) -> Iterator[PodTemplate]:
    yield PodTemplate(res, (*base, "headGroupSpec", "template"), role="head group")
    groups = res.get(*base, "workerGroupSpecs")
    for i, g in enumerate(groups if isinstance(groups, list) else []):
        if isinstance(g, dict):
            name = g.get("groupName")
            role = f"worker group '{name}'" if isinstance(name, str) else f"worker group {i}"
            yield PodTemplate(res, (*base, "workerGroupSpecs", i, "template"), role=role)


def _rayjob(res: Resource) -> Iterator[PodTemplate]:
    yield from _ray_cluster_spec(res, ("spec", "rayClusterSpec"))
    if isinstance(res.get("spec", "submitterPodTemplate"), dict):
        yield PodTemplate(res, ("spec", "submitterPodTemplate"), role="submitter")


def _raycluster(res: Resource) -> Iterator[PodTemplate]:
    yield from _ray_cluster_spec(res, ("spec",))


_FINDERS: dict[tuple[str, str], Callable[[Resource], Iterator[PodTemplate]]] = {
    ("", "Pod"): _pod,
    ("", "PodTemplate"): _pod_template_kind,
    ("", "ReplicationController"): _template,
    ("apps", "Deployment"): _template,
    ("apps", "StatefulSet"): _template,
    ("apps", "ReplicaSet"): _template,
    ("apps", "DaemonSet"): _template,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
    ("ray.io", "RayJob"): _rayjob,
    ("ray.io", "RayCluster"): _raycluster,
}


def pod_templates(res: Resource) -> list[PodTemplate]:
    """Every pod template of a workload object; ``[]`` for other kinds."""
    finder = _FINDERS.get((res.group, res.kind))
    if finder is None:
        return []
    return [t for t in finder(res) if isinstance(res.get(*t.path) if t.path else res.data,
                                                 dict)]


def selects(selector: object, labels: dict[str, Any]) -> bool:
    """A Service-style equality selector matches ``labels`` (an empty selector selects nothing
    for a Service: it gets no endpoints)."""
    if not isinstance(selector, dict) or not selector:
        return False
    return all(labels.get(k) == v for k, v in selector.items())


def get_int(node: object, *path: str | int) -> int | None:
    """An integer field (bools are not integers here); ``None`` when absent or another type."""
    v = get(node, *path)
    return v if isinstance(v, int) and not isinstance(v, bool) else None
