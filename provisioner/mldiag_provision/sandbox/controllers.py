"""The sandbox cluster's workload controllers: JobSet → Jobs (+ headless Service) → Pods.

Pure functions over plain Kubernetes objects (dicts as the API serves them); the store
(:class:`mldiag_provision.sandbox.apiserver.Store`) calls them from its reconcile loop and
writes what they return. Nothing here runs a container: the Pods they make go to the
sandbox scheduler and stay Pending or bound.

What they write, and where each rule comes from (facts in catalog/data/kubernetes.yaml):
  * :func:`construct_jobs` — the JobSet v0.9.0 controller's ``constructJob`` /
    ``labelAndAnnotateObject`` (fact ``jobset.childJobs``, source JOBSET-CONTROLLER), read
    on the JobSet as its defaulting webhook leaves it (``jobset.webhookDefaults``);
  * :func:`headless_service` — its ``createHeadlessSvcIfNecessary``
    (``jobset.headlessService``);
  * :func:`job_template_labels` — what the API server's Job strategy adds to a Job's
    template and selector (``jobTemplateLabels``, K8S-JOB-LABELS);
  * :func:`indexed_pods` — the Job controller's pods of an Indexed Job
    (``indexedJob``, K8S-INDEXED-JOB: ``pkg/controller/job/indexed_job_utils.go``).

Not modelled: JobSet exclusive placement (the pod webhook's affinities), startupPolicy
InOrder (every replicated job is created at once), restarts and failure/success policies,
Job completion (no container runs, so no index ever succeeds).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import random
from typing import Any

# the apiserver's generateName alphabet (k8s.io/apiserver names.SimpleNameGenerator: no
# vowels, no 0, 1 or 3, so no words are spelled) and its 5 random characters
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_RANDOM_LENGTH = 5

JOBSET_GROUP = "jobset.x-k8s.io"
Obj = dict[str, Any]  # a Kubernetes object as the API serves it


def _fact(*keys: str) -> Any:
    from mldiag_provision.catalog.store import store

    return store().fact("kubernetes", *keys)


@functools.cache
def keys() -> dict[str, str]:
    """The JobSet label/annotation keys by role (``jobsetName`` → ``jobset.sigs.k8s.io/...``)."""
    return {str(k): str(v) for k, v in _fact("jobset", "childJobs")["keys"].items()}


@functools.cache
def _indexed() -> dict[str, Any]:
    return dict(_fact("indexedJob"))


def completion_index_key() -> str:
    """``batch.kubernetes.io/job-completion-index`` (annotation and label of a pod)."""
    return str(_indexed()["completionIndex"])


def owner_reference(owner: Obj) -> Obj:
    """A controller ownerReference to ``owner`` as ``SetControllerReference`` /
    ``NewControllerRef`` write it (controller and blockOwnerDeletion true)."""
    return {"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"),
            "name": owner["metadata"]["name"], "uid": owner["metadata"].get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def controller_uid(obj: Obj) -> str | None:
    """The uid of ``obj``'s controller owner (None: not controlled)."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


# --- JobSet ------------------------------------------------------------------------------------

def _network(js: Obj) -> Obj:
    """``spec.network`` as the JobSet webhook defaults it (enableDNSHostnames and
    publishNotReadyAddresses true when unset)."""
    net = dict((js.get("spec") or {}).get("network") or {})
    net.setdefault("enableDNSHostnames", True)
    net.setdefault("publishNotReadyAddresses", True)
    return net


def dns_hostnames(js: Obj) -> bool:
    return bool(_network(js)["enableDNSHostnames"])


def subdomain(js: Obj) -> str:
    """``GetSubdomain``: ``spec.network.subdomain``, else the JobSet's name."""
    return str(_network(js).get("subdomain") or js["metadata"]["name"])


def _rjobs(js: Obj) -> list[Obj]:
    """Replicated jobs with the CRD defaults (replicas 1, groupName ``default``)."""
    group = str(_fact("jobset", "childJobs")["defaultGroup"])
    out = []
    for r in (js.get("spec") or {}).get("replicatedJobs") or []:
        r = dict(r)
        r.setdefault("replicas", 1)
        r.setdefault("groupName", group)
        out.append(r)
    return out


def job_name(js: Obj, rjob: str, index: int) -> str:
    """``placement.GenJobName``: ``<jobset>-<replicatedJob>-<jobIndex>``."""
    return str(_fact("jobset", "childJobs")["name"]).format(
        jobset=js["metadata"]["name"], replicatedJob=rjob, jobIndex=index)


def job_key(namespace: str, name: str) -> str:
    """``jobHashKey``: hex SHA-1 of ``<namespace>/<jobName>``."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def _stamp(js: Obj, rjob: Obj, index: int) -> dict[str, str]:
    """What ``labelAndAnnotateObject`` sets, as labels and as annotations alike."""
    k = keys()
    rjobs = _rjobs(js)
    meta = js["metadata"]
    ns = meta.get("namespace") or "default"
    name = job_name(js, rjob["name"], index)
    before = 0
    for r in rjobs:
        if r["name"] == rjob["name"]:
            break
        before += int(r["replicas"])
    group = [r for r in rjobs if r["groupName"] == rjob["groupName"]]
    before_in_group = 0
    for r in group:
        if r["name"] == rjob["name"]:
            break
        before_in_group += int(r["replicas"])
    out = {
        k["jobsetName"]: meta["name"],
        k["jobsetUid"]: str(meta.get("uid", "")),
        k["replicatedJobName"]: rjob["name"],
        k["restartAttempt"]: str(int((js.get("status") or {}).get("restarts") or 0)),
        k["replicatedJobReplicas"]: str(int(rjob["replicas"])),
        k["globalReplicas"]: str(sum(int(r["replicas"]) for r in rjobs)),
        k["jobIndex"]: str(index),
        k["jobKey"]: job_key(ns, name),
        k["jobGlobalIndex"]: str(before + index),
        k["groupName"]: rjob["groupName"],
        k["groupReplicas"]: str(sum(int(r["replicas"]) for r in group)),
        k["jobGroupIndex"]: str(before_in_group + index),
    }
    coord = (js.get("spec") or {}).get("coordinator")
    if coord:
        out[k["coordinator"]] = (f"{meta['name']}-{coord.get('replicatedJob')}-"
                                 f"{int(coord.get('jobIndex') or 0)}-"
                                 f"{int(coord.get('podIndex') or 0)}.{subdomain(js)}")
    return out


def _exclusive(js: Obj, rjob: Obj) -> dict[str, str]:
    """The exclusive-placement annotations ``labelAndAnnotateObject`` copies (annotations
    only): the JobSet's, overridden by the replicated job template's."""
    k = keys()
    out: dict[str, str] = {}
    for source in (js["metadata"].get("annotations") or {},
                   ((rjob.get("template") or {}).get("metadata") or {}).get("annotations")
                   or {}):
        if k["exclusiveTopology"] in source:
            out[k["exclusiveTopology"]] = str(source[k["exclusiveTopology"]])
            if k["nodeSelectorStrategy"] in source:
                out[k["nodeSelectorStrategy"]] = str(source[k["nodeSelectorStrategy"]])
    return out


def construct_jobs(js: Obj) -> list[Obj]:
    """Every child Job of JobSet ``js`` (a stored object, with uid), as ``constructJob``
    builds them: ``[batch/v1 Job dict]`` in replicated-job order, index 0 first. The Jobs'
    own uid-dependent labels (:func:`job_template_labels`) are added once they are stored."""
    meta = js["metadata"]
    suspended = bool((js.get("spec") or {}).get("suspend") or False)
    jobs = []
    for rjob in _rjobs(js):
        tmpl = rjob.get("template") or {}
        for index in range(int(rjob["replicas"])):
            stamp = _stamp(js, rjob, index)
            notes = {**stamp, **_exclusive(js, rjob)}
            spec = copy.deepcopy(tmpl.get("spec") or {})
            spec.setdefault("completionMode", "Indexed")  # the JobSet webhook's default
            pod = spec.setdefault("template", {})
            pod.setdefault("spec", {}).setdefault("restartPolicy", "OnFailure")
            pmeta = pod.setdefault("metadata", {})
            pmeta["labels"] = {**(pmeta.get("labels") or {}), **stamp}
            pmeta["annotations"] = {**(pmeta.get("annotations") or {}), **notes}
            if dns_hostnames(js):
                pod["spec"]["subdomain"] = subdomain(js)
            spec["suspend"] = suspended
            tmeta = tmpl.get("metadata") or {}
            jobs.append({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": job_name(js, rjob["name"], index),
                             "namespace": meta.get("namespace") or "default",
                             "labels": {**(tmeta.get("labels") or {}), **stamp},
                             "annotations": {**(tmeta.get("annotations") or {}), **notes},
                             "ownerReferences": [owner_reference(js)]},
                "spec": spec})
    return jobs


def headless_service(js: Obj) -> Obj | None:
    """The headless Service ``createHeadlessSvcIfNecessary`` makes (None without DNS
    hostnames)."""
    if not dns_hostnames(js):
        return None
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": subdomain(js),
                         "namespace": js["metadata"].get("namespace") or "default",
                         "ownerReferences": [owner_reference(js)]},
            "spec": {"clusterIP": "None",
                     "selector": {keys()["jobsetName"]: js["metadata"]["name"]},
                     "publishNotReadyAddresses": bool(_network(js)["publishNotReadyAddresses"])}}


# --- Job -------------------------------------------------------------------------------------

def job_template_labels(job: Obj) -> dict[str, str]:
    """The four labels the API server puts on a Job's pod template (uid and name, prefixed
    and legacy), as ``{key: value}``; empty under ``manualSelector``."""
    if (job.get("spec") or {}).get("manualSelector"):
        return {}
    uid_key, name_key, legacy_uid, legacy_name = (str(k) for k in
                                                  _fact("jobTemplateLabels")["keys"])
    meta = job["metadata"]
    return {uid_key: str(meta.get("uid")), name_key: meta["name"],
            legacy_uid: str(meta.get("uid")), legacy_name: meta["name"]}


def default_job(job: Obj) -> None:
    """The API server's Job defaulting, in place: template labels and the generated
    selector (``batch.kubernetes.io/controller-uid``) unless ``manualSelector``."""
    extra = job_template_labels(job)
    if not extra:
        return
    spec = job.setdefault("spec", {})
    pmeta = spec.setdefault("template", {}).setdefault("metadata", {})
    pmeta["labels"] = {**(pmeta.get("labels") or {}), **extra}
    uid_key = next(iter(extra))
    spec.setdefault("selector", {"matchLabels": {uid_key: extra[uid_key]}})


def _pod_name_prefix(job_name_: str, index: int) -> str:
    """``podGenerateNameWithIndex``: ``<job>-<index>-``, the job part cut so the prefix
    fits ``MaxGeneratedNameLength`` (58)."""
    tail = f"-{index}-"
    prefix = job_name_ + tail
    limit = int(_indexed()["maxGeneratedNameLength"])
    if len(prefix) > limit:
        prefix = prefix[:limit - len(tail)] + tail
    return prefix


def _with_index_env(container: Obj) -> Obj:
    """``addCompletionIndexEnvVariable``: JOB_COMPLETION_INDEX from the index label,
    appended after the container's own env unless it defines it."""
    env = list(container.get("env") or [])
    name = str(_indexed()["env"])
    if not any(e.get("name") == name for e in env):
        env.append({"name": name, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.labels['{completion_index_key()}']"}}})
    return {**container, "env": env}


def indexed_pods(job: Obj, existing: list[Obj], rng: random.Random | None = None) -> list[Obj]:
    """The pods the Job controller creates next for Indexed Job ``job``, given the pods it
    already owns (``existing``): one per missing completion index, lowest first, so that
    at most ``parallelism`` (default 1) are active; none while ``suspend`` is true or when
    the Job is not Indexed (NonIndexed Jobs are not modelled). Returns Pod dicts with a
    full name (``<job>-<index>-<5 chars>``)."""
    spec = job.get("spec") or {}
    if spec.get("suspend") or spec.get("completionMode") != "Indexed":
        return []
    completions = int(spec.get("completions") or 1)
    raw = spec.get("parallelism")
    parallelism = 1 if raw is None else int(raw)
    key = completion_index_key()
    have = {str((p["metadata"].get("annotations") or {}).get(key)) for p in existing}
    room = max(0, min(parallelism, completions) - len(existing))
    missing = [i for i in range(completions) if str(i) not in have][:room]
    rng = rng or random.Random()
    return [_indexed_pod(job, index, rng) for index in missing]


def _indexed_pod(job: Obj, index: int, rng: random.Random) -> Obj:
    """The Pod of completion index ``index`` of Indexed Job ``job``: its template with the
    index in the containers' environment, ``hostname`` ``<job>-<index>``, the index label
    and annotation, the tracking finalizer and the Job as controller owner; the name ends in
    5 characters drawn from ``rng``."""
    meta = job["metadata"]
    tmpl = (job.get("spec") or {}).get("template") or {}
    key = completion_index_key()
    pspec = copy.deepcopy(tmpl.get("spec") or {})
    for field in ("initContainers", "containers"):
        if pspec.get(field):
            pspec[field] = [_with_index_env(c) for c in pspec[field]]
    pspec["hostname"] = f"{meta['name']}-{index}"
    tmeta = tmpl.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), **job_template_labels(job), key: str(index)}
    suffix = "".join(rng.choice(_NAME_ALPHABET) for _ in range(_RANDOM_LENGTH))
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": _pod_name_prefix(meta["name"], index) + suffix,
                     "namespace": meta.get("namespace") or "default",
                     "labels": labels,
                     "annotations": {**(tmeta.get("annotations") or {}), key: str(index)},
                     "finalizers": [str(_indexed()["finalizer"])],
                     "ownerReferences": [owner_reference(job)]},
        "spec": pspec}
