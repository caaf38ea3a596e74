"""The check's third step, *wired*: can the workers of each pod set find each other?

Workers of a multi-host Job (TPU slice, multi-node GPU) reach each other by the hostnames
``<job>-<index>.<subdomain>``, which exist only as DNS records of a headless Service. Kubernetes
publishes a pod's record once the pod is Ready unless the Service sets
``publishNotReadyAddresses: true``; JAX and the TPU runtime connect to every peer while they
start, before any pod is Ready, and time out. JobSet creates that Service itself (``spec.network``,
on by default); a Job needs one written beside it. The coordinator a program's env names (JAX,
Megascale, PyTorch) must be one of those names, as Kubernetes expands the env.

Unlike *admitted* and *scheduled* (:mod:`.check`, one pod set against the model), a pod set's
wiring is judged against the other objects of its input set (the Services, the JobSet that
names the pod, the LeaderWorkerSet), so the step reads the whole input set
(:class:`~mldiag_provision.lint.context.LintContext`: its templates, objects by kind and name).

Entry points, each an iterator of :class:`Wired` verdicts in template order:

* :func:`published`: headless Services publish not-ready pods, JobSet network on, no fixed
  hostname in an Indexed Job (checks ``publish-not-ready``, ``jobset-network``,
  ``explicit-hostname``);
* :func:`gcsfuse`: Cloud Storage FUSE volumes carry the sidecar annotation
  (``gcsfuse-annotation``);
* :func:`coordinators`: coordinator addresses and worker hostnames in env name a pod the
  JobSet, Indexed Job or LeaderWorkerSet creates, after Kubernetes' ``$(VAR)`` expansion
  (``coordinator-address``);
* :func:`wired`: all three.

Lint's rules ``wiring-<check>`` (``lint/wiring_rules.py``) turn each verdict into a problem;
preflight runs the same step over the manifests a recipe renders. Facts: ``wiring`` in
catalog/data/kubernetes.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.cluster.check import Verdict
from mldiag_provision.errors import Severity
from mldiag_provision.lint.loading import Resource, get
from mldiag_provision.lint.workloads import PodTemplate, get_int
from mldiag_provision.recipe.sourcemap import Path

if TYPE_CHECKING:
    from mldiag_provision.lint.context import LintContext

__all__ = ["Wired", "coordinators", "gcsfuse", "published", "wired"]


@dataclass(frozen=True)
class Wired(Verdict):
    """A verdict of the *wired* step. ``resource``: the object ``path`` is in when it is not
    the template's own (the headless Service a Job's pods use); ``severity`` and ``source``:
    the case's own where they differ from the rule's (``None``: the rule's)."""

    resource: Resource | None = None
    severity: Severity | None = None
    source: str | None = None

    @property
    def target(self) -> Resource:
        """The object the finding is in."""
        return self.resource if self.resource is not None else self.template.resource


def _fact(*keys: str) -> Any:
    return store().get("kubernetes", *keys)


def _severity(f: Fact | Mapping[str, Any]) -> Severity:
    """ERROR for a verified fact, WARNING otherwise (a mapping of a loaded fact list too)."""
    found = f if isinstance(f, Fact) else store().of(f)
    assert found is not None, f
    return found.severity


_F = ("wiring",)


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
    from mldiag_provision.lint.tpu_rules import tpu_pods

    return ctx.memo("wiring_multi_host", lambda: {  # type: ignore[return-value]
        id(tp.template.resource) for tp in tpu_pods(ctx) if tp.multi_host})


def published(ctx: LintContext) -> Iterator[Wired]:
    """Services without publishNotReadyAddresses, JobSet network switched off, fixed
    hostnames in Indexed Jobs."""
    nr = _fact(*_F, "publishNotReady")
    host = _fact(*_F, "explicitHostname")
    seen: set[int] = set()
    for t in ctx.templates:
        if t.job_path is None or not _multi_pod(t):
            continue
        res = t.resource
        if isinstance(t.spec.get("hostname"), str):
            yield Wired(
                t, "wired", "explicit-hostname", (*t.spec_path, "hostname"),
                f"hostname '{t.spec['hostname']}' is the same for every pod of {t.describe()}; "
                "the Job controller names them <job>-<index> only when hostname is unset, so "
                "the workers' addresses never resolve", value=t.spec["hostname"],
                expected="", hint="remove hostname; keep subdomain", severity=_severity(host))
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
                    network = key == "enableDNSHostnames"
                    yield Wired(
                        t, "wired", "jobset-network" if network else "publish-not-ready",
                        ("spec", "network", key),
                        f"network.{key}: false on {res.display()} whose replicated jobs "
                        "run several pods each: "
                        + ("the pods get no DNS names and the workers cannot find each other"
                           if network else
                           "a worker's DNS record appears only once it is Ready, and workers "
                           "that connect while they start time out"),
                        value=False, expected="true (the default)",
                        hint=f"remove network.{key} (JobSet defaults it to true)",
                        severity=None if network else _severity(nr))
            continue
        svc = _service(ctx, res, t.spec.get("subdomain"))
        if svc is None or id(svc) in seen:
            continue
        seen.add(id(svc))
        if svc.get("spec", "publishNotReadyAddresses") is not True:
            # the field's own path, written or not: a wrong-typed sibling (spec.type: 5) is
            # another fault, not a reason to drop this one (linter.drop_consequences)
            yield Wired(
                t, "wired", "publish-not-ready", ("spec", "publishNotReadyAddresses"),
                f"headless Service '{svc.name}' of multi-pod {res.display()} does not set "
                "publishNotReadyAddresses: true; each worker's DNS record appears only once "
                "that pod is Ready, so workers that connect while they start (JAX, the TPU "
                "runtime) can time out", value=svc.get("spec", "publishNotReadyAddresses"),
                expected="publishNotReadyAddresses: true",
                hint="add publishNotReadyAddresses: true under spec", resource=svc,
                severity=_severity(nr))


def gcsfuse(ctx: LintContext) -> Iterator[Wired]:
    """Cloud Storage FUSE CSI volumes (inline, driver gcsfuse.csi.storage.gke.io) in a pod
    template without the annotation that makes GKE inject the driver's sidecar: the volume
    never mounts and the pod stays in ContainerCreating (kubernetes.yaml volumes.gcsFuse)."""
    f = _fact("volumes", "gcsFuse")
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
            yield Wired(
                t, "wired", "gcsfuse-annotation", (*t.path, "metadata", "annotations", key),
                f"{t.describe()} mounts Cloud Storage FUSE volume(s) "
                f"{', '.join(map(str, named))} without the pod annotation {key}: \"{want}\"; "
                "GKE then injects no gcsfuse sidecar and the volume never mounts",
                value=value, expected=f'{key}: "{want}"',
                hint=f'add {key}: "{want}" under the pod template\'s metadata.annotations',
                severity=_severity(f))


# --- coordinator addresses (issue 25) ---------------------------------------------------------

_JOBSET = ("jobset.x-k8s.io", "JobSet")
_LWS = ("leaderworkerset.x-k8s.io", "LeaderWorkerSet")
# patterns, compiled on first use by re's own cache (most runs never need them: lint of
# manifests without coordinator addresses or $(VAR) references)
_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
_SCHEME = r"^[A-Za-z][A-Za-z0-9+.-]*://"
_REFERENCE = r"\$\$|\$\(([^)]*)\)"
_INDEX = r"^(0|[1-9][0-9]*)$"
_POD_INDICES = r"^(.+)-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$"
_FIELD_KEY = r"^metadata\.(labels|annotations)\['([^']+)'\]$"


@dataclass(frozen=True)
class _Group:
    """Pods of one replicated job (JobSet) or of an Indexed Job: ``jobs`` Jobs of ``pods``
    pods each; ``None`` where the manifest does not say (a wrong-typed count: the schema's
    finding) or the pods get no indexed hostname (completionMode NonIndexed)."""

    name: str
    jobs: int | None
    pods: int | None

    def describe(self) -> str:
        jobs = "?" if self.jobs is None else str(self.jobs)
        pods = "?" if self.pods is None else str(self.pods)
        return f"{self.name} ({jobs} job(s) x {pods} pod(s))" if self.name \
            else f"{pods} pod(s)"


@dataclass(frozen=True)
class _PodSet:
    """The pods of one workload that get a DNS name ``<hostname>.<subdomain>``: a JobSet
    with network.enableDNSHostnames on (kubernetes.yaml wiring.jobsetPodHostnames), or an
    Indexed Job whose template names a subdomain (wiring.indexedJobHostnames)."""

    resource: Resource
    subdomain: str
    groups: tuple[_Group, ...]

    @property
    def jobset(self) -> bool:
        return (self.resource.group, self.resource.kind) == _JOBSET

    @property
    def lws(self) -> bool:
        """A LeaderWorkerSet: ``groups[0]`` is its groups (``jobs``: replicas) of ``pods``
        (size) pods, leader ``<lws>-<group>``, workers ``<lws>-<group>-<worker>``
        (kubernetes.yaml wiring.lwsEnv)."""
        return (self.resource.group, self.resource.kind) == _LWS

    def form(self) -> str:
        if self.lws:
            return f"{self.resource.name}-<group>[-<worker>].{self.subdomain}"
        return (f"{self.resource.name}-<replicatedJob>-<jobIndex>-<podIndex>.{self.subdomain}"
                if self.jobset else f"{self.resource.name}-<index>.{self.subdomain}")

    def first(self) -> str:
        """The hostname of the first pod (process 0 where the program numbers them so)."""
        if self.jobset:
            return f"{self.resource.name}-{self.groups[0].name}-0-0" if self.groups else ""
        return f"{self.resource.name}-0"

    def pod_range(self) -> str:
        """An Indexed Job's hostnames, ``train-0 .. train-3``."""
        pods = self.groups[0].pods
        return f"{self.resource.name}-0 .. {self.resource.name}-{pods - 1}" if pods \
            else f"{self.resource.name}-<index>"

    def existing(self) -> str:
        """The pods there are, in words (the finding names them)."""
        if self.lws:
            g, name = self.groups[0], self.resource.name
            return (f"{g.jobs} group(s) of {g.pods} pod(s), leaders {name}-0 .. "
                    f"{name}-{(g.jobs or 1) - 1}")
        if self.jobset:
            return "replicated jobs: " + (", ".join(g.describe() for g in self.groups)
                                          or "none")
        return f"pods {self.pod_range()}"

    def match(self, host: str) -> tuple[str, str, int, int]:
        """Whether ``host`` is the hostname of one of these pods: ``("pod", group, job index,
        pod index)``, ``("unknown", ...)`` where a count cannot be read, or ``("none",
        reason, 0, 0)`` with the reason in words."""
        prefix = self.resource.name + "-"
        if not host.startswith(prefix):
            return "none", f"its pods are named {self.form().split('.')[0]}", 0, 0
        rest = host[len(prefix):]
        if self.lws:
            return self._match_lws(rest)
        if not self.jobset:
            g = self.groups[0]
            if not re.match(_INDEX, rest):
                return "none", f"its pods are {self.pod_range()}", 0, 0
            if g.pods is None:
                return "unknown", "", 0, 0
            index = int(rest)
            if index < g.pods:
                return "pod", "", 0, index
            return "none", f"it runs {g.pods} pod(s), {self.pod_range()}", 0, 0
        reason = ""
        for g in sorted(self.groups, key=lambda g: -len(g.name)):
            if not rest.startswith(g.name + "-"):
                continue
            indices = rest[len(g.name) + 1:].split("-")
            if len(indices) != 2 or not all(re.match(_INDEX, i) for i in indices):
                continue
            job, pod = int(indices[0]), int(indices[1])
            if g.jobs is None or g.pods is None:
                return "unknown", g.name, job, pod
            if job < g.jobs and pod < g.pods:
                return "pod", g.name, job, pod
            reason = reason or (
                f"replicated job '{g.name}' has {g.jobs} job(s) (job index 0..{g.jobs - 1})"
                if job >= g.jobs else
                f"each Job of replicated job '{g.name}' runs {g.pods} pod(s) (pod index "
                f"0..{g.pods - 1})")
        if reason:
            return "none", reason, 0, 0
        parsed = re.match(_POD_INDICES, rest)
        named = parsed.group(1) if parsed else rest
        return "none", f"it has no replicated job '{named}' ({self.existing()})", 0, 0


    def _match_lws(self, rest: str) -> tuple[str, str, int, int]:
        """:meth:`match` for a LeaderWorkerSet: ``rest`` is ``<group>`` (a leader) or
        ``<group>-<worker>``, worker 1 .. size-1."""
        g, name = self.groups[0], self.resource.name
        parsed = re.match(r"^(0|[1-9][0-9]*)(?:-(0|[1-9][0-9]*))?$", rest)
        if parsed is None:
            return "none", f"its pods are named {name}-<group>[-<worker>]", 0, 0
        group, worker = int(parsed.group(1)), int(parsed.group(2) or 0)
        if g.jobs is None or g.pods is None:
            return "unknown", "", group, worker
        if group >= g.jobs:
            return ("none", f"it runs {g.jobs} group(s) (group index 0..{g.jobs - 1})",
                    0, 0)
        if parsed.group(2) is not None and not 1 <= worker < g.pods:
            return ("none", f"each group has {g.pods} pod(s): leader {name}-{group}"
                    + (f" and workers {name}-{group}-1 .. {name}-{group}-{g.pods - 1}"
                       if g.pods > 1 else " and no worker"), 0, 0)
        return "pod", "", group, worker


def _count(node: object, key: str, default: int) -> int | None:
    """A count of the manifest: ``default`` where absent, ``None`` where not a whole number
    (the schema reports that)."""
    value = get(node, key)
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _pod_sets(ctx: LintContext) -> list[_PodSet]:
    """Every workload of the input set whose pods get stable DNS names (memoised per run)."""
    def compute() -> list[_PodSet]:
        out: list[_PodSet] = []
        for res in ctx.of_kind(*_JOBSET):
            if not res.identified or not res.name \
                    or res.get("spec", "network", "enableDNSHostnames") is False:
                continue
            sub = res.get("spec", "network", "subdomain")
            groups: list[_Group] = []
            jobs = res.get("spec", "replicatedJobs")
            for rj in jobs if isinstance(jobs, list) else []:
                name = get(rj, "name")
                if not isinstance(name, str) or not name:
                    continue
                spec = get(rj, "template", "spec")
                mode = get(spec, "completionMode")
                pods = _count(spec, "completions", 0) or _count(spec, "parallelism", 1)
                groups.append(_Group(name, _count(rj, "replicas", 1),
                                     pods if mode in (None, "Indexed") else None))
            out.append(_PodSet(res, sub if isinstance(sub, str) and sub else res.name,
                               tuple(groups)))
        for res in ctx.of_kind("batch", "Job"):
            spec = res.get("spec")
            sub = get(spec, "template", "spec", "subdomain")
            if not res.identified or not res.name or get(spec, "completionMode") != "Indexed" \
                    or not isinstance(sub, str) or not sub \
                    or get(spec, "template", "spec", "hostname") is not None:
                continue
            pods = _count(spec, "completions", 0) or _count(spec, "parallelism", 1)
            out.append(_PodSet(res, sub, (_Group("", 1, pods),)))
        for res in ctx.of_kind(*_LWS):
            # the headless Service is named after the LWS; UniquePerReplica gives each group
            # its own (<lws>-<group>): not modelled, not judged
            policy = res.get("spec", "networkConfig", "subdomainPolicy")
            if not res.identified or not res.name or policy not in (None, "Shared"):
                continue
            size = _count(res.get("spec", "leaderWorkerTemplate"), "size", 1)
            out.append(_PodSet(res, res.name,
                               (_Group("", _count(res.get("spec"), "replicas", 1), size),)))
        return out

    return ctx.memo("wiring_pod_sets", compute)  # type: ignore[return-value]


def _dark_jobsets(ctx: LintContext) -> list[_PodSet]:
    """JobSets with network.enableDNSHostnames: false whose replicated jobs run one pod per
    Job and whose templates name no subdomain of their own: JobSet gives their pods no DNS
    name (kubernetes.yaml wiring.jobsetNetwork). Where a replicated job runs several pods,
    wiring-jobset-network (or tpu-multislice) already reports the switch, once."""
    def compute() -> list[_PodSet]:
        out: list[_PodSet] = []
        for res in ctx.of_kind(*_JOBSET):
            if not res.identified or not res.name \
                    or res.get("spec", "network", "enableDNSHostnames") is not False:
                continue
            groups: list[_Group] = []
            jobs = res.get("spec", "replicatedJobs")
            for rj in jobs if isinstance(jobs, list) else []:
                name, spec = get(rj, "name"), get(rj, "template", "spec")
                if isinstance(name, str) and name:
                    groups.append(_Group(name, _count(rj, "replicas", 1),
                                         _count(spec, "completions", 0)
                                         or _count(spec, "parallelism", 1)))
            if any(g.pods != 1 for g in groups) or any(
                    get(rj, "template", "spec", "template", "spec", "subdomain") is not None
                    for rj in (jobs if isinstance(jobs, list) else [])):
                continue
            sub = res.get("spec", "network", "subdomain")
            out.append(_PodSet(res, sub if isinstance(sub, str) and sub else res.name,
                               tuple(groups)))
        return out

    return ctx.memo("wiring_dark_jobsets", compute)  # type: ignore[return-value]


def _host(address: str) -> tuple[list[str], str] | None:
    """``[scheme://]host[:port][/path]`` -> (the host's DNS labels, the port or ``""``);
    ``None`` for what is not a DNS name (an IP address, IPv6, text that is not a hostname)."""
    text = re.sub(_SCHEME, "", address.strip()).split("/", 1)[0]
    if not text or text.startswith("["):
        return None
    host, _, port = text.partition(":")
    labels = host.rstrip(".").split(".")
    if ":" in port or all(label.isdigit() for label in labels) \
            or not all(re.match(_LABEL, label) for label in labels):
        return None
    return labels, port


@dataclass(frozen=True)
class _Stuck:
    """A part of an env value that Kubernetes leaves as written, or empty: ``kind`` is
    ``later`` (``$(name)`` defined at env[``index``], after the reference), ``injected``
    (``$(JOB_COMPLETION_INDEX)``, which the Job controller appends after the template's env),
    ``escaped`` (``$$(name)``: the literal ``$(name)``), ``undefined`` (``$(name)`` defined
    nowhere the manifest shows) or ``unset-label`` (a fieldRef to ``name``, a JobSet key its
    pods do not carry: empty); ``via``: the variable whose own value holds it."""

    kind: str
    name: str
    via: str
    index: int = -1


@dataclass(frozen=True)
class _Env:
    """One env entry of a container: its index and name, the value as written, the value
    after Kubernetes' expansion (``None`` where it cannot be known here: read at run time;
    unresolvable references stay as ``$(VAR)``), the fieldRef path or ``None``, and the
    parts Kubernetes leaves as written or empty (:class:`_Stuck`)."""

    index: int
    name: str
    raw: object
    text: str | None
    field_ref: object
    stuck: tuple[_Stuck, ...] = ()


class _EnvScope(NamedTuple):
    """What the expansion of one container's env reads besides the env itself: the
    workload object and whether it is a JobSet; ``fields``: the JobSet pod label keys a
    fieldRef reads (key -> value, ``None`` where known to exist but not its value, ``""``
    for the coordinator label without spec.coordinator); ``runtime``: LWS's own variables;
    ``late``: the variables the Job controller appends after the template's env; ``opaque``:
    the container reads ``envFrom``; ``links``: Service link variable suffixes;
    ``pod_keys``: fact wiring.jobsetPodKeys (the prefix and the keys JobSet sets). (A named
    tuple, as :class:`_Address`: no dataclass text to compile on lint's path.)"""

    resource: Resource
    jobset: bool
    fields: Mapping[str, str | None]
    runtime: AbstractSet[str]
    late: AbstractSet[str]
    opaque: bool
    links: tuple[str, ...]
    pod_keys: Mapping[str, Any]


def _jobset_fields(t: PodTemplate, keys: Mapping[str, Any]) -> dict[str, str | None]:
    """The JobSet pod labels a fieldRef can read (wiring.jobsetPodMetadata, ``keys``): the
    JobSet's name, the replicated job's name (``None`` where not a string) and the
    coordinator label (``""``, empty, without spec.coordinator; ``None``: set, per pod).
    Empty for an object that is no identified, named JobSet."""
    res = t.resource
    if (res.group, res.kind) != _JOBSET or not (res.identified and res.name):
        return {}
    rj = res.get(*t.path[:3], "name") if t.path[:2] == ("spec", "replicatedJobs") else None
    coordinator = res.get("spec", "coordinator")
    return {keys["jobsetName"]: res.name,
            keys["replicatedJobName"]: rj if isinstance(rj, str) else None,
            keys["coordinator"]: None if coordinator is not None else ""}


def _env_scope(t: PodTemplate, c: dict[str, Any]) -> _EnvScope:
    """The :class:`_EnvScope` of container ``c`` of template ``t`` (facts wiring.lwsEnv,
    wiring.envInjectedLate for an Indexed Job or a JobSet's, wiring.envLinkSuffixes)."""
    keys = _fact(*_F, "jobsetPodMetadata")
    pod_keys = _fact(*_F, "jobsetPodKeys")
    res = t.resource
    runtime: set[str] = set()
    if (res.group, res.kind) == _LWS:
        runtime = {str(n) for n in _fact(*_F, "lwsEnv")["names"]}
    mode = t.job.get("completionMode")
    indexed = t.job_path is not None and (
        mode == "Indexed" or (mode is None and res.kind == "JobSet"))  # JobSet's default
    late = {str(n) for n in _fact(*_F, "envInjectedLate")["names"]} if indexed else set()
    return _EnvScope(
        resource=res, jobset=(res.group, res.kind) == _JOBSET,
        fields=_jobset_fields(t, keys), runtime=runtime, late=late,
        opaque=isinstance(c.get("envFrom"), list) and bool(c.get("envFrom")),
        links=tuple(str(x) for x in _fact(*_F, "envLinkSuffixes")["suffixes"]),
        pod_keys=pod_keys)


def _env_values(t: PodTemplate, c: dict[str, Any]) -> Iterator[_Env]:
    """Each env entry of container ``c``, in order, as the kubelet expands it
    (kubernetes.yaml wiring.envExpansion: a reference reads a variable defined before it; one
    that is not resolved stays as written, wiring.envLaterReference; ``$$`` escapes,
    wiring.envEscapedReference). Variables that controllers add: LWS puts LWS_LEADER_ADDRESS,
    LWS_GROUP_SIZE and LWS_WORKER_INDEX first (wiring.lwsEnv: known, value per pod); the Job
    controller appends JOB_COMPLETION_INDEX last (wiring.envInjectedLate). A reference to a
    variable defined nowhere is left unknown where the container reads ``envFrom`` or the
    name is a Service link variable's (wiring.envLinkSuffixes). A fieldRef to the JobSet's
    pod labels (wiring.jobsetPodMetadata) reads the JobSet's and the replicated job's
    names; the coordinator label is empty without spec.coordinator
    (wiring.missingLabelFieldRef), and a key of the JobSet's prefix it never sets is empty
    (wiring.jobsetPodKeys)."""
    env = c.get("env")
    if not isinstance(env, list) or not env:
        return
    scope = _env_scope(t, c)
    names = [get(e, "name") for e in env]
    known: dict[str, tuple[str | None, tuple[_Stuck, ...]]] = {
        n: (None, ()) for n in scope.runtime}
    for j, e in enumerate(env):
        name = names[j]
        if not isinstance(name, str):
            continue
        if name in scope.runtime:  # LWS puts its own first and drops the template's (lws#152)
            yield _Env(j, name, get(e, "value"), None, None)
            continue
        value = get(e, "value")
        path = get(e, "valueFrom", "fieldRef", "fieldPath")
        text: str | None
        stuck: tuple[_Stuck, ...] = ()
        if isinstance(value, str):
            text, stuck = _expand(value, name, known, names[j + 1:], j + 1, scope.late,
                                  scope.opaque, scope.links)
        elif isinstance(path, str):
            text, stuck = _field_value(scope, name, path)
        else:
            text = "" if value is None and get(e, "valueFrom") is None else None
        known[name] = (text, stuck)
        yield _Env(j, name, value, text, path, stuck)


def _field_value(scope: _EnvScope, name: str, path: str,
                 ) -> tuple[str | None, tuple[_Stuck, ...]]:
    """The value of variable ``name`` read by fieldRef ``path``: a JobSet pod label
    (``scope.fields``; ``None`` where not known here), the namespace, or empty for a key of
    JobSet's prefix that it never sets (an ``unset-label`` part); other fields are read at
    run time (``None``)."""
    found = re.match(_FIELD_KEY, path)
    key = found.group(2) if found else ""
    prefix = str(scope.pod_keys["prefix"])
    if scope.jobset and key.startswith(prefix) and key not in scope.fields \
            and key[len(prefix):] not in scope.pod_keys["keys"]:
        return "", (_Stuck("unset-label", key, name),)
    if found:
        return scope.fields.get(key), ()
    res = scope.resource
    return (res.namespace if path == "metadata.namespace" and res.identified else None), ()


def _expand(text: str, name: str, known: Mapping[str, tuple[str | None, tuple[_Stuck, ...]]],
            after: list[object], offset: int, late: AbstractSet[str], opaque: bool,
            links: tuple[str, ...]) -> tuple[str | None, tuple[_Stuck, ...]]:
    """``$(VAR)`` references of variable ``name`` replaced by earlier variables, ``$$`` by
    ``$``: (the value, ``None`` when a reference reads a value not known here; the parts
    left as written, inherited ones included). ``after``: the names defined after this
    entry (the first at env[``offset``])."""
    if "$" not in text:
        return text, ()
    resolved = True
    stuck: list[_Stuck] = []

    def one(m: re.Match[str]) -> str:
        nonlocal resolved
        if m.group(0) == "$$":
            if text[m.end():m.end() + 1] == "(":
                escaped = re.match(r"\(([^)]*)\)", text[m.end():])
                stuck.append(_Stuck("escaped", escaped.group(1) if escaped else "", name))
            return "$"
        ref = m.group(1)
        if ref in known:
            value, inherited = known[ref]
            stuck.extend(inherited)
            if value is None:
                resolved = False
                return m.group(0)
            return value
        if ref in late:
            stuck.append(_Stuck("injected", ref, name))
        elif ref in after:
            stuck.append(_Stuck("later", ref, name, offset + after.index(ref)))
        elif opaque or ref.endswith(links) or "_PORT_" in ref:
            resolved = False
        else:
            stuck.append(_Stuck("undefined", ref, name))
        return m.group(0)

    out = re.sub(_REFERENCE, one, text)
    return (out if resolved else None), tuple(stuck)


def _same_namespace(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


_STUCK_ORDER = {"later": 0, "injected": 1, "escaped": 2, "unset-label": 3, "undefined": 4}


def _stuck_verdict(t: PodTemplate, e: _Env, epath: Path, var: Mapping[str, Any] | None,
                   stuck: tuple[_Stuck, ...]) -> Wired:
    """The finding for a variable whose value Kubernetes leaves with a literal ``$(VAR)`` or
    an empty part: the first such part of ``stuck``, the surest kind first. ``var``: the
    coordinator variable's fact (check ``coordinator-address``), or ``None`` for any other
    variable (check ``env-reference``)."""
    s = min(stuck, key=lambda x: _STUCK_ORDER[x.kind])
    never = "the name never resolves" if var is not None else \
        "the program reads that text, not the value"
    through = "" if s.via == e.name else f" (through {s.via})"
    shown = e.text if e.text is not None else str(e.raw)
    said = f"{e.name} '{e.raw}'" if isinstance(e.raw, str) else e.name
    path = (*epath, "value") if isinstance(e.raw, str) else \
        (*epath, "valueFrom", "fieldRef", "fieldPath")
    value = e.raw if isinstance(e.raw, str) else e.field_ref
    if s.kind == "later":
        f = _fact(*_F, "envLaterReference")
        message = (f"{said}{through} refers to $({s.name}), which env[{s.index}] defines "
                   f"after it: Kubernetes expands a reference only from the variables "
                   f"defined before it, so {e.name} stays '{shown}' and {never}")
        expected, hint = (f"{s.name} defined before {s.via}",
                          f"move the {s.name} entry above {s.via} in env")
    elif s.kind == "injected":
        f = _fact(*_F, "envInjectedLate")
        annotation = str(f["annotation"])
        message = (f"{said}{through} refers to $({s.name}), which the Job controller adds "
                   "after the template's own env (kubernetes/kubernetes#121523): the reference "
                   f"stays as written, so {e.name} is '{shown}' and {never}")
        expected = f"{s.name} defined before {s.via}"
        hint = (f"define it first: {{name: {s.name}, valueFrom: {{fieldRef: {{fieldPath: "
                f"metadata.annotations['{annotation}']}}}}}}")
    elif s.kind == "escaped":
        f = _fact(*_F, "envEscapedReference")
        message = (f"{said}{through}: '$$({s.name})' is an escaped reference, which "
                   f"Kubernetes turns into the literal text '$({s.name})', so {e.name} is "
                   f"'{shown}' and {never}")
        expected, hint = f"$({s.name})", f"write $({s.name}) with one $ to expand it"
    elif s.kind == "unset-label":
        f = _fact(*_F, "jobsetPodKeys")
        keys = ", ".join(str(k) for k in f["keys"])
        message = (f"{e.name}{through} reads {s.name}, which JobSet never sets on its pods "
                   f"(it sets {f['prefix']}{{{keys}}}), so the value is empty and {e.name} "
                   f"is '{shown}': {never}")
        expected = f"a key JobSet sets, e.g. {f['prefix']}jobset-name"
        hint = "read one of the keys JobSet sets (see expected), or set the value yourself"
    else:
        f = _fact(*_F, "envUndefinedReference")
        message = (f"{said}{through} refers to $({s.name}), which no env entry before it "
                   f"defines: Kubernetes leaves the reference as written, so {e.name} is "
                   f"'{shown}' and {never}")
        expected, hint = (f"{s.name} defined before {s.via}",
                          f"define {s.name} above {s.via} in env, or drop the reference")
    return Wired(t, "wired", "coordinator-address" if var is not None else "env-reference",
                 path, message, value=value, expected=expected, hint=hint,
                 facts=(f, *(_var_fact(var) if var is not None else ())), source=f.url,
                 severity=f.severity)


# what a variable that is no coordinator is held to: references Kubernetes documents as left
# unexpanded whatever else the pod holds (an escaped or undefined one may be meant)
_ANY_VARIABLE = frozenset({"later", "injected"})


def coordinators(ctx: LintContext) -> Iterator[Wired]:
    """Coordinator addresses (MEGASCALE_COORDINATOR_ADDRESS, JAX_COORDINATOR_ADDRESS,
    MASTER_ADDR) and worker hostnames (TPU_WORKER_HOSTNAMES) in env that name a pod of a
    JobSet, Indexed Job or LeaderWorkerSet of the input set: the pod must exist (replicated
    job, job index < replicas, pod index < completions; LWS group < replicas) under that
    workload's subdomain and namespace; a name that never resolves leaves every worker
    waiting for a coordinator that does not exist. So must the value itself: a ``$(VAR)``
    Kubernetes leaves as written (defined later, escaped, defined nowhere, added by the Job
    controller after the template's env) or a label JobSet never sets. Values read at run
    time, IP addresses, Service names and names under subdomains of workloads not in the
    input set are left alone (no guess)."""
    variables = {str(v["name"]): v for v in _fact(*_F, "coordinatorEnv")}
    for t in ctx.templates:
        for key in ("initContainers", "containers"):
            for i, c in t.containers(key):
                for e in _env_values(t, c):
                    epath = (*t.spec_path, key, i, "env", e.index)
                    var = variables.get(e.name)
                    found = (_any_variable(t, e, epath) if var is None
                             else _coordinator(ctx, t, e, epath, var))
                    if found is not None:
                        yield found


def _any_variable(t: PodTemplate, e: _Env, epath: Path) -> Wired | None:
    """The *env-reference* verdict of a variable that is no coordinator: only a reference
    of its own value that Kubernetes documents as left unexpanded (:data:`_ANY_VARIABLE`)."""
    own_stuck = tuple(x for x in e.stuck if x.via == e.name and x.kind in _ANY_VARIABLE)
    return _stuck_verdict(t, e, epath, None, own_stuck) if own_stuck else None


def _coordinator(ctx: LintContext, t: PodTemplate, e: _Env, epath: Path,
                 var: Mapping[str, Any]) -> Wired | None:
    """The *coordinator-address* verdict of coordinator variable ``e`` (``var``: its fact of
    wiring.coordinatorEnv), checked in turn: a part Kubernetes leaves as written, the
    JobSet coordinator label read without spec.coordinator, then each address it names
    (one finding per variable). None where its value is empty or unknown here."""
    if e.stuck:
        return _stuck_verdict(t, e, epath, var, e.stuck)
    unset = _unset_coordinator_label(t, e, epath, var)
    if unset is not None or not e.text:
        return unset
    return _address_verdict(ctx, t, e, epath, var, e.text)


def _unset_coordinator_label(t: PodTemplate, e: _Env, epath: Path, var: Mapping[str, Any],
                             ) -> Wired | None:
    """A coordinator variable that reads JobSet's coordinator pod label by fieldRef, which
    is empty without spec.coordinator (wiring.missingLabelFieldRef); else None."""
    meta = _fact(*_F, "jobsetPodMetadata")
    coordinator_key = meta["coordinator"]
    if e.text != "" or not isinstance(e.field_ref, str) or coordinator_key not in e.field_ref:
        return None
    f = _fact(*_F, "missingLabelFieldRef")
    return Wired(
        t, "wired", "coordinator-address",
        (*epath, "valueFrom", "fieldRef", "fieldPath"),
        f"{e.name} reads the pod label {coordinator_key}, which JobSet sets "
        f"only when spec.coordinator names the coordinator pod; "
        f"{t.resource.display()} has no spec.coordinator, so {e.name} is empty and "
        "the workers find no coordinator", value=e.field_ref,
        expected="spec.coordinator: {replicatedJob, jobIndex, podIndex}",
        hint="add spec.coordinator (e.g. replicatedJob: <name>, jobIndex: 0,"
             " podIndex: 0), or set the address as a value",
        facts=(f, meta, *_var_fact(var)), source=f.url)


def _address_verdict(ctx: LintContext, t: PodTemplate, e: _Env, epath: Path,
                     var: Mapping[str, Any], text: str) -> Wired | None:
    """The first address of coordinator variable ``e`` (expanded value ``text``; a
    comma-separated list where ``var`` says ``list``) that names no pod it should
    (:func:`_judge`), as a verdict at the env entry's value; None where every one does."""
    entries = [h.strip() for h in text.split(",") if h.strip()] if var.get("list") else [text]
    own, by_sub, dark = _addressable(ctx)
    literal = e.raw == text
    for address in entries:
        said = f"{e.name} '{address}'" if literal else f"{e.name} '{e.raw}' (= '{address}')"
        found = _judge(t, own.get(id(t.resource)), by_sub, dark, e.name, said, var,
                       address, literal)
        if found is not None:
            return Wired(t, "wired", "coordinator-address", (*epath, "value"),
                         found[0], value=e.raw, expected=found[1], hint=found[2],
                         facts=(found[3], *_var_fact(var)), source=found[3].url)
    return None


def _addressable(ctx: LintContext) -> tuple[dict[int, _PodSet], dict[str, list[_PodSet]],
                                            list[_PodSet]]:
    """The pods an address can name (memoised per run, worked out only when some env holds
    a coordinator address): the pod sets by the id of their object and by subdomain (one
    lookup per address, not a scan of every set), and :func:`_dark_jobsets`."""
    def compute() -> tuple[dict[int, _PodSet], dict[str, list[_PodSet]], list[_PodSet]]:
        sets = _pod_sets(ctx)
        by_sub: dict[str, list[_PodSet]] = {}
        for ps in sets:
            by_sub.setdefault(ps.subdomain, []).append(ps)
        return {id(ps.resource): ps for ps in sets}, by_sub, _dark_jobsets(ctx)

    return ctx.memo("wiring_addressable", compute)  # type: ignore[return-value]


def _var_fact(var: Mapping[str, Any]) -> tuple[Fact, ...]:
    found = store().of(var)
    return (found,) if found is not None else ()


_Finding = tuple[str, str, str, Fact]
"""What is wrong with an address: (message, expected, hint, the fact it stands on)."""


class _Address(NamedTuple):
    """A coordinator address read as a pod's DNS name ``<pod>.<sub>[.<namespace>...]``:
    ``namespace`` is the one it names, else the pod's own (its DNS search path);
    ``written``: the address names it; ``port``: as written, or ``""``."""

    pod: str
    sub: str
    namespace: str | None
    written: bool
    port: str

    def with_port(self, host: str) -> str:
        """``host`` with the address's port, where it has one."""
        return f"{host}:{self.port}" if self.port else host


def _pod_address(t: PodTemplate, address: str) -> _Address | None:
    """``address`` as :class:`_Address`, or None for what is not ``<pod>.<subdomain>[.<ns>
    [.svc...]]`` (an IP address, one label, a Service's name)."""
    parsed = _host(address)
    if parsed is None or len(parsed[0]) < 2:
        return None
    labels, port = parsed
    rest = labels[2:]
    if rest and (rest[0] == "svc" or (len(rest) > 1 and rest[1] != "svc")):
        return None  # not <pod>.<subdomain>[.<namespace>[.svc...]]: another kind of name
    # a relative name resolves in the pod's own namespace (its DNS search path)
    namespace = rest[0] if rest else t.resource.namespace
    return _Address(labels[0], labels[1], namespace, bool(rest), port)


def _judge(t: PodTemplate, mine: _PodSet | None, by_sub: Mapping[str, list[_PodSet]],
           dark: list[_PodSet],
           name: str, said: str, var: Mapping[str, Any], address: str, literal: bool,
           ) -> _Finding | None:
    """What is wrong with one address of variable ``name`` in template ``t`` (``said``: how
    the message quotes it; ``literal``: written as is, no ``$(VAR)``): (message, expected,
    hint, the fact it stands on), or ``None`` when it names an existing pod of this workload
    (``mine``), or nothing this lint can judge. ``by_sub``: the pod sets of the input set
    by subdomain; ``dark``: :func:`_dark_jobsets`."""
    a = _pod_address(t, address)
    if a is None:
        return None
    candidates = [ps for ps in by_sub.get(a.sub, ())
                  if _same_namespace(ps.resource.namespace, a.namespace)]
    if candidates:
        return _judge_listed(candidates, mine, a, name, said, var, literal)
    found = _elsewhere(by_sub.get(a.sub, []), dark, a.pod, a.sub, a.namespace, a.written,
                       a.with_port, name, said)
    if found is not None or mine is None:
        return found
    return _wrong_subdomain(mine, a, name, said) or _other_jobset(mine, a, name, said)


def _judge_listed(candidates: list[_PodSet], mine: _PodSet | None, a: _Address, name: str,
                  said: str, var: Mapping[str, Any], literal: bool) -> _Finding | None:
    """An address under the subdomain of pod sets of the input set (``candidates``, in its
    namespace): a pod none of them creates (the first one's reason), else a pod that is not
    the one it should be; None where it names the right pod or a count is unknown."""
    verdicts = [(ps, ps.match(a.pod)) for ps in candidates]
    hit = next(((ps, v) for ps, v in verdicts if v[0] == "pod"), None)
    if hit is not None:
        ps, (_, group, job, index) = hit
        return (_other_program(ps, mine, a, name, said)
                or _lws_group_leader(ps, mine, a, name, said, literal, job)
                or _not_process_zero(ps, a, name, said, var, (group, job, index)))
    if any(v[0] == "unknown" for _, v in verdicts):
        return None
    ps, (_, reason, _, _) = verdicts[0]
    f = _fact(*_F, "jobsetPodHostnames" if ps.jobset else "indexedJobHostnames")
    good = f"{ps.first()}.{ps.subdomain}"
    return (f"{said} names pod '{a.pod}', which {ps.resource.display()} "
            f"never creates: {reason}; the name never resolves, so the workers wait "
            "for a coordinator that does not exist",
            f"{ps.form()} ({ps.existing()}), e.g. {good}",
            f"set {name} to {a.with_port(good)}" + ("" if ps.jobset else
                                                    " (or another index)"), f)


def _other_program(ps: _PodSet, mine: _PodSet | None, a: _Address, name: str, said: str,
                   ) -> _Finding | None:
    """A pod of another JobSet than the template's (wiring.coordinatorSameProgram): two
    JobSets are two programs; two Indexed Jobs behind one Service may be one (a leader Job
    and a worker Job), so only JobSets are held to this."""
    if mine is None or ps is mine or not (mine.jobset and ps.jobset):
        return None
    f = _fact(*_F, "coordinatorSameProgram")
    return (f"{said} names pod '{a.pod}' of {ps.resource.display()}, not of "
            f"{mine.resource.display()}: the coordinator is process 0 of the same "
            "program, so these workers wait for one that never joins them",
            f"a pod of {mine.resource.display()}: {mine.form()}",
            f"set {name} to {a.with_port(mine.first() + '.' + mine.subdomain)}", f)


def _lws_group_leader(ps: _PodSet, mine: _PodSet | None, a: _Address, name: str, said: str,
                      literal: bool, job: int) -> _Finding | None:
    """A literal leader address of group ``job`` in a LeaderWorkerSet of several groups,
    each with its own leader (wiring.lwsGroupLeader): LWS sets the pod's own per group."""
    if not (ps.lws and ps is mine and literal and (ps.groups[0].jobs or 1) > 1):
        return None
    f = _fact(*_F, "lwsGroupLeader")
    leader = _fact(*_F, "lwsEnv")["leaderAddress"]
    return (f"{said} names the leader of group {job} for every group of "
            f"{ps.resource.display()}, which runs {ps.groups[0].jobs} groups, each "
            f"with its own leader: the workers of the other groups join group {job}'s "
            "leader", f"the leader of the pod's own group: $({leader})",
            f"set {name} to {a.with_port(f'$({leader})')} (LWS sets it per group)", f)


def _not_process_zero(ps: _PodSet, a: _Address, name: str, said: str,
                      var: Mapping[str, Any], where: tuple[str, int, int]) -> _Finding | None:
    """A JAX coordinator (``var`` says ``processZero``) naming a JobSet pod other than job
    index 0, pod index 0 (wiring.coordinatorProcessZero). ``where``: (replicated job, job
    index, pod index) of the pod named."""
    group, job, index = where
    if not (var.get("processZero") and ps.jobset and (job, index) != (0, 0)):
        return None
    f = _fact(*_F, "coordinatorProcessZero")
    return (f"{said} names pod '{a.pod}' (job index {job}, pod index "
            f"{index}); JAX starts its coordinator on process 0 (job index 0, pod "
            "index 0) and connects every worker to this host, where none runs",
            f"{ps.resource.name}-<replicatedJob>-0-0.{ps.subdomain}",
            f"set {name} to "
            f"{a.with_port(f'{ps.resource.name}-{group}-0-0.{ps.subdomain}')}", f)


def _wrong_subdomain(mine: _PodSet, a: _Address, name: str, said: str) -> _Finding | None:
    """A pod of the template's own workload named under a subdomain it does not use
    (wiring.jobsetPodHostnames or wiring.indexedJobHostnames)."""
    if mine.match(a.pod)[0] != "pod" or not _same_namespace(mine.resource.namespace,
                                                             a.namespace):
        return None
    names = _fact(*_F, "jobsetPodHostnames" if mine.jobset else "indexedJobHostnames")
    where = ("network.subdomain" if mine.jobset and mine.subdomain != mine.resource.name
             else "the JobSet's name" if mine.jobset
             else "the LeaderWorkerSet's name" if mine.lws else "the template's subdomain")
    return (f"{said} names pod '{a.pod}' under subdomain '{a.sub}', but "
            f"{mine.resource.display()} puts its pods under '{mine.subdomain}' ({where}): "
            "the name never resolves, so the workers wait for a coordinator that does "
            "not exist", f"{a.pod}.{mine.subdomain}",
            f"set {name} to {a.with_port(f'{a.pod}.{mine.subdomain}')}", names)


def _other_jobset(mine: _PodSet, a: _Address, name: str, said: str) -> _Finding | None:
    """The DNS name of a pod of another JobSet, not among the linted files, where the
    coordinator must be a pod of the template's own JobSet
    (wiring.coordinatorSameProgram)."""
    other = re.match(rf"^{re.escape(a.sub)}-.+-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$", a.pod)
    if not (other and mine.jobset and a.sub != mine.resource.name
            and _same_namespace(mine.resource.namespace, a.namespace)):
        return None
    f = _fact(*_F, "coordinatorSameProgram")
    return (f"{said} has the DNS name of a pod of JobSet '{a.sub}', which is "
            f"not among the linted files; the coordinator is process 0 of this program, "
            f"a pod of {mine.resource.display()}",
            f"{mine.form()} ({mine.existing()})",
            f"set {name} to {a.with_port(mine.first() + '.' + mine.subdomain)}", f)


def _elsewhere(sets: list[_PodSet], dark: list[_PodSet], pod: str, sub: str,
               namespace: str | None, written: bool, with_port: Callable[[str], str],
               name: str, said: str) -> tuple[str, str, str, Fact] | None:
    """A name under no pod set of its namespace that still names a pod the input set
    creates (``sets``: those under subdomain ``sub``): one in another namespace
    (``written``: the address names its namespace; else the pod's own applies,
    kubernetes.yaml wiring.coordinatorNamespace), or one of a JobSet whose DNS hostnames are
    off (wiring.jobsetNetwork)."""
    if namespace is not None:
        away = [ps for ps in sets if ps.resource.namespace
                not in (None, namespace) and ps.match(pod)[0] == "pod"]
        if away:
            ps = away[0]
            there = ps.resource.namespace
            f = _fact(*_F, "coordinatorNamespace")
            why = (f"names namespace '{namespace}'" if written else
                   f"has no namespace, so it resolves in the pod's own namespace "
                   f"'{namespace}'")
            return (f"{said} {why}, but {ps.resource.display()} runs pod '{pod}' in "
                    f"namespace '{there}': the name never resolves, so the workers wait for "
                    "a coordinator that does not exist", f"{pod}.{sub}.{there}",
                    f"set {name} to {with_port(f'{pod}.{sub}.{there}')}", f)
    for ps in dark:
        if ps.subdomain == sub and _same_namespace(ps.resource.namespace, namespace) \
                and ps.match(pod)[0] in ("pod", "unknown"):
            f = _fact(*_F, "jobsetNetwork")
            return (f"{said} names pod '{pod}' of {ps.resource.display()}, which sets "
                    "network.enableDNSHostnames: false: JobSet then creates no headless "
                    "Service and gives its pods no DNS name, so the name never resolves",
                    "network.enableDNSHostnames: true (the default)",
                    "remove network.enableDNSHostnames: false from the JobSet", f)
    return None


def wired(ctx: LintContext) -> Iterator[Wired]:
    """Every *wired* verdict of the input set: :func:`published`, :func:`gcsfuse`,
    :func:`coordinators`, in that order."""
    yield from published(ctx)
    yield from gcsfuse(ctx)
    yield from coordinators(ctx)
