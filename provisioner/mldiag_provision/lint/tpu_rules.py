"""TPU rules: a pod asks for a TPU slice that exists, takes every chip of its VM, and a
multi-host slice gets exactly one pod per VM, wired together the way GKE expects.

The TPU facts (accelerator labels, topologies, machine types, chips per VM, VM sizes) come from
the catalog (``catalog/data/tpu.yaml``) through :meth:`Catalog.resolve`, which also settles the
v5e/v6e ``2x4`` ambiguity by the pod's ``google.com/tpu`` request (8: one VM, 4: two VMs).
Label keys, env names and the multi-host Job recipe are in ``catalog/data/kubernetes.yaml``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from mldiag_provision.catalog.store import Fact
from mldiag_provision.catalog.tpu import ShapeError, SliceShape, TpuVersion
from mldiag_provision.cluster.model import machine_capacity
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.loading import Resource, get
from mldiag_provision.lint.rules import (
    define,
    fact,
    fact_source,
    severity_of,
    source_url,
    suggest,
)
from mldiag_provision.lint.workloads import PodTemplate, get_int, selects
from mldiag_provision.quantity import parse_quantity
from mldiag_provision.recipe.sourcemap import Path

ACC_KEY = fact("tpu", "acceleratorLabel")["key"]
TOPO_KEY = fact("tpu", "topologyLabel")["key"]
TPU = fact("tpu", "resource")["name"]

ACCELERATOR = define("tpu-accelerator", f"{ACC_KEY} names a TPU the catalog knows, by its GKE "
                     "node label", source=source_url("GKE-AP"))
TOPOLOGY = define("tpu-topology", "the topology exists for that TPU version",
                  source=source_url("GKE-ABOUT"))
CHIPS = define("tpu-chips-per-pod", f"{TPU} per pod equals the chips of one VM of the slice",
               source=source_url("GKE-ABOUT"))
REQ_LIM = define("tpu-requests-limits", f"{TPU} is a whole number of chips, with limits equal "
                 "to requests", source=fact_source("tpu", "resource"))
SELECTORS = define("tpu-selectors", "a TPU pod selects both the accelerator and the topology; "
                   "a pod that selects a TPU node requests its chips",
                   source=fact_source("tpu", "acceleratorLabel"))
CONTAINERS = define("tpu-containers", "only one container per pod requests TPUs",
                    source=fact_source("tpu", "oneTpuContainer"))
JOB_SHAPE = define("tpu-job-shape", "multi-host Jobs: completionMode Indexed and completions = "
                   "parallelism = VMs of the slice", source=fact_source("tpu", "multiHostJob"))
SERVICE = define("tpu-headless-service", "a multi-host Job's subdomain names a headless Service "
                 "of the input set that selects the Job's pods",
                 source=fact_source("tpu", "multiHostJob"))
KIND = define("tpu-workload-kind", "a multi-host slice gets one pod per VM: the controller's "
              "pod count matches the slice", source=source_url("GKE-ABOUT"))
MULTISLICE = define("tpu-multislice", "JobSet multislice: multi-host slices of one shape, one "
                    "node pool per slice", source=source_url("GKE-MULTISLICE"))
ENV = define("tpu-worker-env", "TPU_WORKER_ID/TPU_WORKER_HOSTNAMES are left to GKE where it "
             "injects them, and match the slice where set", source=fact_source("tpu", "workerEnv"))
PORTS = define("tpu-worker-ports", "multi-host TPU containers declare the TPU worker port",
               severity=Severity.WARNING, source=source_url("GKE-AP"))
CAPACITY = define("tpu-capacity", "Spot, reservation and provisioning selectors do not "
                  "contradict each other", severity=Severity.WARNING,
                  source=fact_source("capacity", "spotWithReservation"))
RESOURCES = define("tpu-resources", "CPU and memory requests fit the TPU VM's machine type",
                   source=source_url("GKE-ABOUT"))

# The rules this module reports (preflight runs them over the manifests a recipe renders).
RULES = (ACCELERATOR, TOPOLOGY, CHIPS, REQ_LIM, SELECTORS, CONTAINERS, JOB_SHAPE, SERVICE, KIND,
         MULTISLICE, ENV, PORTS, CAPACITY, RESOURCES)

_MAX_CHIPS = 10**6
_INJECTING = {("batch", "Job"), ("batch", "CronJob"), ("jobset.x-k8s.io", "JobSet")}
_SELF_WIRING = {("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), ("ray.io", "RayJob"),
                ("ray.io", "RayCluster")}


# --- analysis ---------------------------------------------------------------------------------

def chip_count(value: object) -> int | None:
    """``4`` or ``"4"`` -> 4; ``None`` when not a whole, non-negative number of chips."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        q = parse_quantity(value)
        # the bound keeps absurd quantities ("1e999999") from becoming million-digit ints
        if q is not None and 0 <= q <= _MAX_CHIPS and q == q.to_integral_value():
            return int(q)
    return None


@dataclass
class TpuContainer:
    """A container that names ``google.com/tpu`` in its requests or limits."""

    index: int
    resources: Path  # path of the container's ``resources``
    requests: object = None
    limits: object = None
    has_requests: bool = False
    has_limits: bool = False

    @property
    def chips(self) -> int | None:
        return chip_count(self.limits if self.has_limits else self.requests)

    @property
    def path(self) -> Path:
        """Where the request is written (requests first, as the seed writes it)."""
        return (*self.resources, "requests" if self.has_requests else "limits", TPU)


@dataclass(eq=False)
class TpuPod:
    """A pod template's TPU ask, resolved against the catalog where possible."""

    template: PodTemplate
    containers: list[TpuContainer] = field(default_factory=list)
    accelerator: object = None
    accelerator_path: Path = ()
    topology: object = None
    topology_path: Path = ()
    version: TpuVersion | None = None
    # the slice the accelerator and topology name; set also where the chips request does
    # not fit it (shape_error then says so) as long as the topology has one machine type
    shape: SliceShape | None = None
    shape_error: ShapeError | None = None

    @property
    def chips(self) -> int | None:
        """Chips per pod: the TPU container's request. Several TPU containers are an error
        (``tpu-containers``) except on TPU7x, where xpk splits a VM's chips between them."""
        if not self.containers:
            return None
        if len(self.containers) == 1 or not self.splits_chips:
            return self.containers[0].chips
        counts = [c.chips for c in self.containers]
        known = [c for c in counts if c is not None]
        return None if len(known) != len(counts) else sum(known)

    @property
    def splits_chips(self) -> bool:
        """TPU7x: xpk and the KubeRay TPU webhook split a VM's chips over two containers."""
        return self.version is not None and \
            self.version.key in fact("tpu", "oneTpuContainer")["splitChipsVersions"]

    @property
    def requested(self) -> bool:
        return bool(self.containers)

    @property
    def multi_host(self) -> bool:
        return bool(self.shape and self.shape.multi_host)

    def label(self) -> str:
        if self.shape:
            return f"{self.shape.version.key} {self.shape.topology}"
        return f"{self.accelerator} {self.topology}"


def _selector(t: PodTemplate, key: str) -> tuple[object, Path] | None:
    """A node label the pod requires: nodeSelector, or a single required affinity term with
    ``operator: In`` and one value."""
    sel = t.spec.get("nodeSelector")
    if isinstance(sel, dict) and key in sel:
        return sel[key], (*t.spec_path, "nodeSelector", key)
    base = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms")
    terms = get(t.spec, *base)
    if isinstance(terms, list) and len(terms) == 1:
        exprs = get(terms[0], "matchExpressions")
        for j, e in enumerate(exprs if isinstance(exprs, list) else []):
            values = get(e, "values")
            if get(e, "key") == key and get(e, "operator") == "In" \
                    and isinstance(values, list) and len(values) == 1:
                return values[0], (*t.spec_path, *base, 0, "matchExpressions", j, "values", 0)
    return None


def _tpu_containers(t: PodTemplate) -> list[TpuContainer]:
    """The containers of ``t`` whose requests or limits name ``google.com/tpu``, with the
    values as written (None where that side does not name it)."""
    out = []
    for i, c in t.containers():
        res = c.get("resources")
        req = get(res, "requests")
        lim = get(res, "limits")
        has_r = isinstance(req, dict) and TPU in req
        has_l = isinstance(lim, dict) and TPU in lim
        if has_r or has_l:
            out.append(TpuContainer(
                i, (*t.spec_path, "containers", i, "resources"),
                req.get(TPU) if has_r and isinstance(req, dict) else None,
                lim.get(TPU) if has_l and isinstance(lim, dict) else None,
                has_r, has_l))
    return out


def _resolve_shape(ctx: LintContext, tp: TpuPod) -> None:
    """Set ``tp.shape`` (or ``tp.shape_error``) from its version, topology and chips per pod
    through :meth:`Catalog.resolve`."""
    if tp.version is None or not isinstance(tp.topology, str):
        return
    chips = tp.chips if tp.chips else None
    try:
        tp.shape = ctx.catalog.resolve(tp.version.key, tp.topology, chips)
    except ShapeError as exc:
        tp.shape_error = exc
        if exc.field == "chipsPerVm" and chips is not None:
            # the request does not fit the topology's VMs (tpu-chips-per-pod); where the
            # topology has one machine type, the slice is still known, and the checks
            # that stand on it (pods per slice, the headless Service, CPU and memory)
            # report their own faults in the same run (issue 25)
            with contextlib.suppress(ShapeError):
                tp.shape = ctx.catalog.resolve(tp.version.key, tp.topology, None)


def _analyze(ctx: LintContext, t: PodTemplate) -> TpuPod | None:
    """``t``'s TPU ask (its TPU containers, accelerator and topology selectors, the version
    and slice they name); None when it neither requests nor selects TPUs."""
    tp = TpuPod(template=t, containers=_tpu_containers(t))
    acc = _selector(t, ACC_KEY)
    topo = _selector(t, TOPO_KEY)
    if not tp.containers and acc is None and topo is None:
        return None
    tp.accelerator, tp.accelerator_path = acc if acc else (None, (*t.spec_path, "nodeSelector"))
    tp.topology, tp.topology_path = topo if topo else (None, (*t.spec_path, "nodeSelector"))
    if isinstance(tp.accelerator, str):
        tp.version = ctx.catalog.version(tp.accelerator)
    _resolve_shape(ctx, tp)
    return tp


def tpu_pods(ctx: LintContext) -> list[TpuPod]:
    """Every pod template of the input set that asks for TPUs (memoised per run)."""
    def compute() -> list[TpuPod]:
        return [tp for t in ctx.templates if (tp := _analyze(ctx, t)) is not None]

    return ctx.memo("tpu_pods", compute)  # type: ignore[return-value]


# --- checks: one pod ------------------------------------------------------------------------

def _chips_hint(tp: TpuPod) -> str | None:
    v, topo = tp.version, tp.topology
    if v is None or not isinstance(topo, str):
        return None
    names = v.topologies.get(topo) or ((v.large3d.machine_type,) if v.large3d else ())
    try:
        chips = math.prod(int(x) for x in topo.split("x"))
    except ValueError:
        return None
    opts = [f"{m.chips_per_vm} for {chips // m.chips_per_vm} VM(s) of {m.name}"
            for m in (v.machine_types[n] for n in names if n in v.machine_types)]
    return ("set google.com/tpu (requests and limits) to " + " or ".join(opts)) if opts else None


def _chips_request(ctx: LintContext, res: Resource, c: TpuContainer) -> Iterator[Problem]:
    """One TPU container's ``google.com/tpu``: whole numbers, a limit next to the request and
    equal to it, not 0 (at most one finding: the first fault of that order)."""
    raw = c.requests if c.has_requests else c.limits
    if chip_count(raw) is None or (c.has_limits and chip_count(c.limits) is None):
        bad = c.limits if chip_count(raw) is not None else raw
        yield ctx.problem(res, REQ_LIM.id, c.path if chip_count(raw) is None
                          else (*c.resources, "limits", TPU),
                          f"{TPU} must be a whole number of chips, got {bad!r}",
                          value=bad, expected="1, 4 or 8 (the chips of one VM)")
    elif c.has_requests and not c.has_limits:
        yield ctx.problem(
            res, REQ_LIM.id, (*c.resources, "limits", TPU),
            f"{TPU} is requested ({c.requests}) without a limit; Kubernetes rejects "
            "extended resources without limits",
            expected=f"limits.{TPU} equal to requests.{TPU}",
            hint=f"add limits: {{{TPU}: {c.requests}}} next to the requests")
    elif c.has_requests and chip_count(c.requests) != chip_count(c.limits):
        yield ctx.problem(
            res, REQ_LIM.id, (*c.resources, "requests", TPU),
            f"{TPU} request {c.requests} differs from its limit {c.limits}; they must "
            "be equal", value=c.requests, expected=str(c.limits),
            hint="set requests and limits to the same number of chips")
    elif chip_count(raw) == 0:
        yield ctx.problem(res, REQ_LIM.id, c.path, f"{TPU}: 0 asks for no TPU chips",
                          value=raw, severity=Severity.WARNING,
                          hint=f"remove {TPU}, or request the chips of one VM")


def _extra_tpu_containers(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """Every TPU container after the first: one per pod (a warning on the versions whose
    VM's chips xpk splits between two containers, fact ``tpu.oneTpuContainer``)."""
    split = tp.splits_chips
    for c in tp.containers[1:]:
        yield ctx.problem(
            tp.template.resource, CONTAINERS.id, c.path,
            f"container {c.index} also requests {TPU}: only one container per pod "
            f"may use TPUs ({len(tp.containers)} do)"
            + (f"; two NUMA-aligned containers on {tp.version.display_name} are a "
               "pattern of xpk, not of GKE's docs" if split and tp.version else ""),
            value=c.requests if c.has_requests else c.limits,
            severity=Severity.WARNING if split else None,
            hint=f"remove {TPU} from every container but the one that runs the TPU "
                 "program")


def check_requests(ctx: LintContext) -> Iterator[Problem]:
    """requests = limits, whole numbers, one TPU container per pod."""
    for tp in tpu_pods(ctx):
        for c in tp.containers:
            yield from _chips_request(ctx, tp.template.resource, c)
        if len(tp.containers) > 1:
            yield from _extra_tpu_containers(ctx, tp)


def _missing_selectors(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """A pod that requests TPUs without an accelerator or topology selector (an error on
    Autopilot, which needs them to pick a node; a warning elsewhere)."""
    autopilot = ctx.options.autopilot
    for key, value in ((ACC_KEY, tp.accelerator), (TOPO_KEY, tp.topology)):
        if value is None:
            yield ctx.problem(
                tp.template.resource, SELECTORS.id, (*tp.template.spec_path, "nodeSelector", key),
                f"the pod requests {TPU} but has no nodeSelector {key}"
                + ("; Autopilot needs it to pick a TPU node" if autopilot else ""),
                severity=None if autopilot else Severity.WARNING,
                hint=f"add nodeSelector {key}: "
                     + ("<GKE accelerator label, see mldiag-provision catalog>"
                        if key == ACC_KEY else "<topology, e.g. 2x2x4>"))


def _selected_not_requested(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """A pod that selects a TPU node but has no container requesting chips."""
    hint = None
    if tp.shape is None and tp.version is not None and isinstance(tp.topology, str):
        hint = _chips_hint(tp)
    elif tp.shape is not None:
        hint = f"add {TPU}: {tp.shape.chips_per_vm} to requests and limits"
    yield ctx.problem(
        tp.template.resource, SELECTORS.id, (*tp.template.spec_path, "containers"),
        f"the pod selects a TPU node ({tp.label()}) but no container requests {TPU}",
        severity=Severity.WARNING, hint=hint)


def _which_tpu(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """The accelerator label: one the catalog knows, and GKE's own spelling of it (a label
    that is not a string is the schema's finding)."""
    res = tp.template.resource
    if not isinstance(tp.accelerator, str):
        return
    if tp.version is None:
        labels = sorted(v.accelerator for v in ctx.catalog.versions.values())
        yield ctx.problem(
            res, ACCELERATOR.id, tp.accelerator_path,
            f"'{tp.accelerator}' is not a TPU accelerator label GKE knows",
            value=tp.accelerator, expected=", ".join(labels),
            hint=suggest(tp.accelerator, labels)
            or suggest(tp.accelerator, ctx.catalog.version_names())
            or "see mldiag-provision catalog")
    elif tp.accelerator != tp.version.accelerator:
        yield ctx.problem(
            res, ACCELERATOR.id, tp.accelerator_path,
            f"'{tp.accelerator}' names {tp.version.display_name}, but GKE labels its "
            f"nodes '{tp.version.accelerator}'", value=tp.accelerator,
            expected=tp.version.accelerator,
            hint=f"set {ACC_KEY}: {tp.version.accelerator}")


def _slice_shape(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """The slice the selectors and the chips request name: a topology the version does not
    have; chips but no topology to resolve; chips per pod other than the VM's."""
    res, err = tp.template.resource, tp.shape_error
    if err is not None and err.field == "topology":
        # the catalog's entry for the version (its topologies and VMs) decides these
        # findings: an error only where it is verified (rulebook.settle)
        yield ctx.problem(res, TOPOLOGY.id, tp.topology_path, err.message,
                          value=tp.topology, expected=err.expected, hint=err.hint,
                          source=err.source, facts=[_version_fact(ctx, tp)])
    if (err is None or err.field == "topology") and tp.shape is None:
        yield from _chips_without_topology(ctx, tp)
    elif err is not None and err.field == "chipsPerVm" and tp.chips:
        v = tp.version
        assert v is not None
        yield ctx.problem(
            res, CHIPS.id, tp.containers[0].path,
            f"{TPU}: {tp.chips} per pod, but {v.key} {tp.topology} VMs have "
            f"{err.expected} chips; a TPU pod must take every chip of its VM",
            value=tp.chips, expected=err.expected, hint=_chips_hint(tp),
            source=err.source, facts=[ctx.catalog.version_fact(v)])


def check_selectors(ctx: LintContext) -> Iterator[Problem]:
    """Accelerator and topology selected, known to the catalog, and the pod takes a VM."""
    for tp in tpu_pods(ctx):
        if tp.requested:
            yield from _missing_selectors(ctx, tp)
        elif tp.accelerator is not None or tp.topology is not None:
            yield from _selected_not_requested(ctx, tp)
        yield from _which_tpu(ctx, tp)
        yield from _slice_shape(ctx, tp)


def _version_fact(ctx: LintContext, tp: TpuPod) -> Fact | None:
    return ctx.catalog.version_fact(tp.version) if tp.version is not None else None


def _chips_without_topology(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """A chips request that no VM of the TPU version has, where the topology is missing or
    wrong (``tpu-topology``, ``tpu-selectors``): the two faults are independent, since a
    v5p pod asking for 8 chips is wrong whatever the topology (every v5p VM has 4). Nothing
    where the request is one of the version's VM sizes (v5e/v6e: 1, 4 or 8): only the
    topology decides which."""
    v, chips = tp.version, tp.chips
    if v is None or not chips or not tp.containers:
        return
    sizes = sorted({m.chips_per_vm for m in v.machine_types.values()})
    if not sizes or chips in sizes:
        return
    shown = " or ".join(map(str, sizes))
    yield ctx.problem(
        tp.template.resource, CHIPS.id, tp.containers[0].path,
        f"{TPU}: {chips} per pod, but {v.key} VMs have {shown} chips; a TPU pod must take "
        "every chip of its VM", value=chips, expected=shown,
        hint=f"set {TPU} (requests and limits) to {shown}, the chips of one {v.key} VM "
             "(the topology decides which)" if len(sizes) > 1 else
             f"set {TPU} (requests and limits) to {sizes[0]}",
        source=ctx.catalog.source_url(v.source), facts=[ctx.catalog.version_fact(v)])


def check_resources(ctx: LintContext) -> Iterator[Problem]:
    """CPU and memory of a TPU pod fit its machine type (a bigger request never schedules).

    The pod's request is the cluster model's (:func:`~mldiag_provision.cluster.check.
    pod_requests`: requests, else limits; the larger of the containers' sum and any one init
    container), the machine's size the model's node capacity (:func:`~mldiag_provision.
    cluster.model.machine_capacity`: Compute Engine's machine-type "GB" are GiB, the API's
    ``memoryMb``: g1-small's "1.7 GB" is 1740 MiB); a request between allocatable and this
    size is ``node-allocatable``'s."""
    from mldiag_provision.cluster.check import pod_requests

    for tp in tpu_pods(ctx):
        if tp.shape is None:
            continue
        mt = tp.shape.machine_type
        requests = pod_requests(tp.template)
        if "cpu" not in requests and "memory" not in requests:
            continue
        size = machine_capacity(mt.vcpu, mt.memory_gb)
        for resource, cap, unit in (("cpu", mt.vcpu, "vCPU"), ("memory", mt.memory_gb, "GB")):
            req = requests.get(resource)
            if req is None or resource not in size or req.amount <= size[resource]:
                continue
            where, parts = req.path, req.parts
            text = parts[0] if len(parts) == 1 else f"{' + '.join(parts)} (all containers)"
            unverified = mt.fact is not None and not mt.fact.verified
            yield ctx.problem(
                tp.template.resource, RESOURCES.id, where,
                f"{resource} request {text} is more than the whole {mt.name} VM ({cap} {unit}"
                + (", an unverified catalog figure); the pod may not schedule" if unverified
                   else "); the pod can never schedule"),
                value=text, expected=f"below {cap} {unit} (allocatable is lower still)",
                source=ctx.catalog.source_url(mt.source), facts=[mt.fact])


# --- checks: the controller around the pods ---------------------------------------------------

def _job_shape(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    t, shape = tp.template, tp.shape
    assert t.job_path is not None and shape is not None
    job, res, jp = t.job, t.resource, t.job_path
    vms, what = shape.vms, f"{shape.version.key} {shape.topology}"
    # the VM count: the topology's chips over the chips of the version's VMs (its entry)
    facts = [ctx.catalog.version_fact(shape.version)]
    parallelism = get_int(job, "parallelism")
    completions = get_int(job, "completions")
    mode = job.get("completionMode")
    if mode is None and (res.group, res.kind) == ("jobset.x-k8s.io", "JobSet"):
        mode = "Indexed"  # JobSet's webhook defaults it (facts: controllers.jobsetIndexedDefault)
    if not shape.multi_host:
        if mode == "Indexed" and (parallelism or 1) > 1:
            yield ctx.problem(
                res, JOB_SHAPE.id, (*jp, "parallelism"),
                f"{parallelism} pods in parallel on single-host {what}: each lands on its own "
                "VM, and the VMs are not one ICI-connected slice", value=parallelism,
                severity=Severity.WARNING, facts=facts,
                hint="fine for independent workers; for one program across VMs pick a "
                     "multi-host topology")
        return
    if mode != "Indexed":
        yield ctx.problem(
            res, JOB_SHAPE.id, (*jp, "completionMode"),
            f"multi-host {what} needs completionMode: Indexed "
            + (f"(got '{mode}')" if mode is not None else "(it is not set)")
            + "; GKE injects TPU_WORKER_ID and TPU_WORKER_HOSTNAMES only into Indexed Jobs",
            value=mode, expected="Indexed", hint="set completionMode: Indexed", facts=facts)
    for key, value in (("completions", completions), ("parallelism", parallelism)):
        shown = value if value is not None else (1 if key == "parallelism" else None)
        if shown == vms:
            continue
        state = f"{key} {shown}" if shown is not None else f"{key} is not set"
        yield ctx.problem(
            res, JOB_SHAPE.id, (*jp, key),
            f"{state}, but {what} has {vms} VMs: a multi-host Job runs exactly one pod per VM, "
            "all at once", value=value, expected=str(vms), hint=f"set {key}: {vms}",
            facts=facts)


def _no_subdomain(ctx: LintContext, t: PodTemplate, what: str,
                  job_name: str | None) -> Iterator[Problem]:
    """A multi-host Job's pods name no ``subdomain``: GKE injects no worker hostnames."""
    yield ctx.problem(
        t.resource, SERVICE.id, (*t.spec_path, "subdomain"),
        f"multi-host {what} Job has no subdomain: without it GKE does not inject "
        "TPU_WORKER_HOSTNAMES and the workers cannot find each other",
        hint="set subdomain: <name of a headless Service> and add that Service "
             f"(clusterIP: None, selector job-name: {job_name or '<job>'})")


def _no_service(ctx: LintContext, t: PodTemplate, sub: str,
                job_name: str | None) -> Iterator[Problem]:
    """The ``subdomain`` names no Service of the input set: the hostnames do not resolve."""
    yield ctx.problem(
        t.resource, SERVICE.id, (*t.spec_path, "subdomain"),
        f"no Service named '{sub}' among the linted manifests: the multi-host Job's pod "
        f"hostnames ({job_name or '<job>'}-0.{sub}, ...) will not resolve", value=sub,
        hint=f"add a Service named {sub} with clusterIP: None and selector job-name: "
             f"{job_name or '<job>'}, or lint it together with this file")


def _not_headless(ctx: LintContext, res: Resource, svc: Resource,
                  sub: str) -> Iterator[Problem]:
    """The subdomain's Service has a cluster IP (``clusterIP`` other than ``None``)."""
    if svc.get("spec", "clusterIP") != "None":
        yield ctx.problem(
            svc, SERVICE.id, ("spec", "clusterIP"),
            f"Service '{sub}' is the subdomain of multi-host {res.display()} but is not "
            "headless", value=svc.get("spec", "clusterIP"), expected="None",
            hint="set clusterIP: None")


def _pod_labels(t: PodTemplate, job_name: str | None) -> dict[str, object]:
    """The labels the pods get: the template's, plus the Job controller's ``job-name``
    labels (fact ``tpu.jobPodLabels``) for a Job of that name."""
    labels = dict(t.labels)
    if job_name:
        for key in fact("tpu", "jobPodLabels")["keys"]:
            if "job-name" in key:
                labels.setdefault(key, job_name)
    return labels


def _unselected(ctx: LintContext, t: PodTemplate, svc: Resource, sub: str,
                job_name: str | None) -> Iterator[Problem]:
    """The subdomain's Service selector does not select the Job's pods."""
    labels = _pod_labels(t, job_name)
    selector = svc.get("spec", "selector")
    if selects(selector, labels):
        return
    shown = ", ".join(f"{k}: {v}" for k, v in selector.items()) \
        if isinstance(selector, dict) and selector else "(none)"
    yield ctx.problem(
        svc, SERVICE.id, ("spec", "selector"),
        f"Service '{sub}' selector {shown} does not select the pods of {t.resource.display()}",
        expected="labels of the pods: " + ", ".join(f"{k}: {v}" for k, v in labels.items()),
        hint=f"use selector: {{job-name: {job_name}}}" if job_name else None)


def _headless_service(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """A multi-host Job (not a JobSet, which makes its own) needs a ``subdomain`` naming a
    headless Service of the input set that selects its pods: the first missing link ends
    the check."""
    t, shape = tp.template, tp.shape
    assert shape is not None
    res = t.resource
    what = f"{shape.version.key} {shape.topology}"
    job_name = res.name if res.kind == "Job" else None
    sub = t.spec.get("subdomain")
    if not isinstance(sub, str) or not sub:
        yield from _no_subdomain(ctx, t, what, job_name)
        return
    services = ctx.find("", "Service", sub, res.namespace)
    if not services:
        yield from _no_service(ctx, t, sub, job_name)
        return
    svc = services[0]
    yield from _not_headless(ctx, res, svc, sub)
    if res.kind == "Job" and not res.identified:
        return  # the pods' job-name label is the Job's name, which cannot be read
    yield from _unselected(ctx, t, svc, sub, job_name)


def _single_pod(ctx: LintContext, tp: TpuPod, shape: SliceShape, what: str) -> Iterator[Problem]:
    """A bare Pod on a multi-host slice: one pod takes one VM, the program never starts."""
    # where a topology has two machine types, the request chose the multi-host one
    ambiguous = len(shape.version.topologies.get(shape.topology, ())) > 1
    yield ctx.problem(
        tp.template.resource, KIND.id, tp.containers[0].path if ambiguous and tp.containers
        else tp.topology_path,
        f"a single Pod cannot use multi-host {what}: the slice has {shape.vms} VMs of "
        f"{shape.chips_per_vm} chips and each pod takes one, so the program never "
        "starts", value=tp.topology,
        hint=f"run {shape.vms} pods as an Indexed Job (completions = parallelism = "
             f"{shape.vms}) with a headless Service, or pick a single-host topology")


def _lws_size(ctx: LintContext, tp: TpuPod, shape: SliceShape, what: str) -> Iterator[Problem]:
    """A LeaderWorkerSet's ``size`` against the slice's VMs: the workers, plus the leader
    when it requests TPUs too (or has no template of its own), are the slice's pods (fact
    ``controllers.lwsGroupSize``)."""
    t, res = tp.template, tp.template.resource
    if t.role != "worker template":
        return
    lwt = ("spec", "leaderWorkerTemplate")
    size = get_int(res.data, *lwt, "size") or 1
    leader = res.get(*lwt, "leaderTemplate")
    leader_tpu = not isinstance(leader, dict) or any(
        other.template.resource is res and other.template.role == "leader template"
        and other.requested for other in tpu_pods(ctx))
    per_group = size if leader_tpu else size - 1
    if per_group != shape.vms:
        f = fact("controllers", "lwsGroupSize")
        want = shape.vms if leader_tpu else shape.vms + 1
        yield ctx.problem(
            res, KIND.id, (*lwt, "size"),
            f"size {size} gives {per_group} TPU pod(s) per group, but {what} has "
            f"{shape.vms} VMs", value=size, expected=str(want),
            severity=severity_of(f), source=source_url(f["source"]),
            hint=f"set size: {want}")


def _ray_hosts(ctx: LintContext, tp: TpuPod, shape: SliceShape, what: str) -> Iterator[Problem]:
    """A Ray TPU worker group's ``numOfHosts`` against the slice's VMs (fact
    ``controllers.rayNumOfHosts``)."""
    t, res = tp.template, tp.template.resource
    group = res.get(*t.path[:-1])
    hosts = get_int(group, "numOfHosts")
    if t.role.startswith("worker group") and (hosts or 1) != shape.vms:
        f = fact("controllers", "rayNumOfHosts")
        yield ctx.problem(
            res, KIND.id, (*t.path[:-1], "numOfHosts"),
            f"numOfHosts {hosts or 1} but {what} has {shape.vms} VMs; each host of a "
            "Ray TPU worker group is one VM of the slice", value=hosts,
            expected=str(shape.vms), severity=severity_of(f),
            source=source_url(f["source"]), hint=f"set numOfHosts: {shape.vms}")


def _no_check(ctx: LintContext, tp: TpuPod, shape: SliceShape, what: str) -> Iterator[Problem]:
    """A DaemonSet: one pod per node by construction, nothing to count."""
    return iter(())


def _replicas(ctx: LintContext, tp: TpuPod, shape: SliceShape, what: str) -> Iterator[Problem]:
    """Any other controller (Deployment, StatefulSet, ...): ``spec.replicas`` (default 1)
    against the slice's VMs."""
    res = tp.template.resource
    replicas = get_int(res.data, "spec", "replicas")
    if (replicas if replicas is not None else 1) != shape.vms:
        yield ctx.problem(
            res, KIND.id, ("spec", "replicas"),
            f"{replicas if replicas is not None else 1} replica(s) on multi-host {what} "
            f"({shape.vms} VMs): fewer pods leave VMs idle, more stay Pending",
            value=replicas, expected=str(shape.vms), severity=Severity.WARNING,
            hint=f"set replicas: {shape.vms}, or use an Indexed Job or JobSet")


_PODS_PER_SLICE: dict[tuple[str, str],
                      Callable[[LintContext, TpuPod, SliceShape, str], Iterator[Problem]]] = {
    ("", "Pod"): _single_pod,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws_size,
    ("ray.io", "RayJob"): _ray_hosts,
    ("ray.io", "RayCluster"): _ray_hosts,
    ("apps", "DaemonSet"): _no_check,
}
"""(API group, kind) of a controller that is not a Job -> the check of how many pods of a
multi-host slice it runs (:func:`_replicas` for the kinds not listed)."""


def check_multihost(ctx: LintContext) -> Iterator[Problem]:
    """Pods per slice: Job shape and Service, LWS size, Ray numOfHosts, replicas."""
    for tp in tpu_pods(ctx):
        t, shape = tp.template, tp.shape
        if shape is None:
            continue
        res = t.resource
        key = (res.group, res.kind)
        if t.job_path is not None:
            yield from _job_shape(ctx, tp)
            if shape.multi_host and key != ("jobset.x-k8s.io", "JobSet"):
                yield from _headless_service(ctx, tp)
        elif shape.multi_host:
            what = f"{shape.version.key} {shape.topology}"
            yield from _PODS_PER_SLICE.get(key, _replicas)(ctx, tp, shape, what)


def _shown(value: object) -> str:
    """A label value as text: a string as is, any other YAML shape as its repr."""
    return value if isinstance(value, str) else repr(value)


def _tpu_jobsets(ctx: LintContext) -> list[list[TpuPod]]:
    """The TPU-requesting pod templates of each JobSet (one per replicated job), JobSets in
    input order."""
    by_jobset: dict[int, list[TpuPod]] = {}
    for tp in tpu_pods(ctx):
        r = tp.template.resource
        if (r.group, r.kind) == ("jobset.x-k8s.io", "JobSet") and tp.requested:
            by_jobset.setdefault(id(r), []).append(tp)
    return list(by_jobset.values())


def _no_hostnames(ctx: LintContext, res: Resource, pods: list[TpuPod]) -> Iterator[Problem]:
    """``enableDNSHostnames: false`` on a JobSet with a multi-host slice (fact
    ``controllers.jobsetDnsHostnames``)."""
    dns = res.get("spec", "network", "enableDNSHostnames")
    if dns is False and any(tp.multi_host for tp in pods):
        f = fact("controllers", "jobsetDnsHostnames")
        yield ctx.problem(
            res, MULTISLICE.id, ("spec", "network", "enableDNSHostnames"),
            "enableDNSHostnames: false on a multi-host TPU JobSet: the pods get no "
            "hostnames, so TPU_WORKER_HOSTNAMES cannot be built", value=False,
            severity=severity_of(f), source=source_url(f["source"]),
            hint="remove enableDNSHostnames or set it to true")


def _mixed_shapes(ctx: LintContext, res: Resource, pods: list[TpuPod]) -> Iterator[Problem]:
    """The replicated jobs of one JobSet select different accelerators or topologies."""
    # the labels as written may be of any YAML shape (a list or mapping by mistake; the
    # selector rules report that): compare them by their text, which is always hashable
    shapes = {(_shown(tp.accelerator), _shown(tp.topology)) for tp in pods}
    if len(shapes) > 1:
        tp = pods[1]
        yield ctx.problem(
            res, MULTISLICE.id, tp.topology_path,
            "the replicated jobs ask for different TPU slices ("
            + ", ".join(sorted(f"{a} {t}" for a, t in shapes)) + "); multislice needs "
            "every slice to share TPU type, size and topology", value=tp.topology,
            severity=Severity.WARNING)


def _slices_env(ctx: LintContext, res: Resource, tp: TpuPod, replicas: int) -> Iterator[Problem]:
    """A hand-set slice-count variable (fact ``tpu.megascaleSlices``) in a TPU container that
    is not the replicated job's ``replicas``."""
    slices_env = fact("tpu", "megascaleSlices")["env"]
    for c in tp.containers:
        env = get(tp.template.spec, "containers", c.index, "env")
        for j, e in enumerate(env if isinstance(env, list) else []):
            if get(e, "name") == slices_env and isinstance(get(e, "value"), str) \
                    and get(e, "value") != str(replicas):
                yield ctx.problem(
                    res, MULTISLICE.id,
                    (*tp.template.spec_path, "containers", c.index, "env", j, "value"),
                    f"{slices_env}={get(e, 'value')} but the replicated job has "
                    f"{replicas} replicas (slices)", value=get(e, "value"),
                    expected=str(replicas), severity=Severity.WARNING)


def _multislice_job(ctx: LintContext, res: Resource, tp: TpuPod, shape: SliceShape,
                    rj_path: Path, replicas: int) -> Iterator[Problem]:
    """A replicated job of more than one slice (``replicas`` > 1, at ``rj_path``): a
    multi-host slice of a version that supports multislice, the exclusive-topology
    annotation (fact ``tpu.exclusiveTopology``), and its slice-count variable."""
    what = f"{shape.version.key} {shape.topology}"
    if not shape.multi_host:
        yield ctx.problem(
            res, MULTISLICE.id, (*rj_path, "replicas"),
            f"{replicas} replicas of single-host {what}: multislice runs only on "
            "multi-host slices; these run as independent single-host jobs",
            value=replicas, severity=Severity.WARNING)
        return
    if not shape.version.multislice:
        yield ctx.problem(res, MULTISLICE.id, (*rj_path, "replicas"),
                          f"{shape.version.display_name} does not support multislice",
                          value=replicas)
    excl = fact("tpu", "exclusiveTopology")
    if res.annotations.get(excl["annotation"]) != excl["value"]:
        yield ctx.problem(
            res, MULTISLICE.id, ("metadata", "annotations", excl["annotation"]),
            f"multislice JobSet ({replicas} slices) without annotation "
            f"{excl['annotation']}: {excl['value']}; two slices may land on one node "
            "pool", severity=severity_of(excl), source=source_url(excl["source"]),
            hint=f"add metadata.annotations {excl['annotation']}: {excl['value']}")
    yield from _slices_env(ctx, res, tp, replicas)


def check_multislice(ctx: LintContext) -> Iterator[Problem]:
    """JobSet replicas > 1: multi-host slices only, one shape, exclusive node pools."""
    for pods in _tpu_jobsets(ctx):
        res = pods[0].template.resource
        yield from _no_hostnames(ctx, res, pods)
        yield from _mixed_shapes(ctx, res, pods)
        for tp in pods:
            if tp.shape is None or tp.template.job_path is None:
                continue
            rj_path = tp.template.job_path[:-2]
            replicas = get_int(res.data, *rj_path, "replicas")
            if replicas is not None and replicas > 1:
                yield from _multislice_job(ctx, res, tp, tp.shape, rj_path, replicas)


def _hand_set_env(ctx: LintContext, tp: TpuPod, shape: SliceShape, names: list[str],
                  injected: bool, seen: set[str]) -> Iterator[Problem]:
    """The worker variables (``names``, fact ``tpu.workerEnv``) a TPU container sets by hand
    (each name set is added to ``seen``): a ``TPU_WORKER_HOSTNAMES`` list of the wrong
    length; any of them where GKE injects them (``injected``)."""
    t, res = tp.template, tp.template.resource
    for c in tp.containers:
        env = get(t.spec, "containers", c.index, "env")
        for j, e in enumerate(env if isinstance(env, list) else []):
            name = get(e, "name")
            if not isinstance(name, str) or name not in names:
                continue
            seen.add(name)
            value = get(e, "value")
            epath = (*t.spec_path, "containers", c.index, "env", j)
            if name == "TPU_WORKER_HOSTNAMES" and isinstance(value, str) and value \
                    and "$(" not in value:
                count = len([h for h in value.split(",") if h.strip()])
                if count != shape.vms:
                    yield ctx.problem(
                        res, ENV.id, (*epath, "value"),
                        f"TPU_WORKER_HOSTNAMES lists {count} host(s), but "
                        f"{tp.label()} has {shape.vms} VMs", value=value,
                        expected=f"{shape.vms} comma-separated hostnames")
                    continue
            if injected:
                yield ctx.problem(
                    res, ENV.id, (*epath, "name"),
                    f"{name} is set by hand; GKE injects it into multi-host Indexed Jobs "
                    "and a fixed value breaks the other workers", value=name,
                    severity=Severity.WARNING, hint=f"remove {name}")


def _uninjected(ctx: LintContext, tp: TpuPod) -> Iterator[Problem]:
    """Pods of a controller that neither gets the worker variables from GKE nor wires them
    itself (nor is a bare Pod), and sets none by hand."""
    t, res, c = tp.template, tp.template.resource, tp.containers[0]
    yield ctx.problem(
        res, ENV.id, (*t.spec_path, "containers", c.index, "env"),
        f"{res.kind} pods on multi-host {tp.label()} get no TPU_WORKER_ID or "
        "TPU_WORKER_HOSTNAMES: GKE injects them only into Indexed Jobs and JobSets",
        severity=Severity.WARNING,
        hint="run the workers as an Indexed Job or JobSet, or set both variables "
             "per pod")


def check_worker_env(ctx: LintContext) -> Iterator[Problem]:
    """Hand-set TPU worker variables: harmful where GKE injects them, wrong if they do not
    describe the slice; missing where nothing injects them."""
    names = fact("tpu", "workerEnv")["names"]
    for tp in tpu_pods(ctx):
        if not tp.multi_host or tp.shape is None:
            continue
        res = tp.template.resource
        key = (res.group, res.kind)
        injected = key in _INJECTING
        seen: set[str] = set()
        yield from _hand_set_env(ctx, tp, tp.shape, names, injected, seen)
        if not injected and key not in _SELF_WIRING and not seen \
                and key != ("", "Pod") and tp.containers:
            yield from _uninjected(ctx, tp)


def check_ports(ctx: LintContext) -> Iterator[Problem]:
    """Multi-host TPU containers declare the TPU worker port (declaration only: a warning)."""
    worker = ctx.catalog.fact("ports", "tpuWorker")
    port = worker["port"]
    for tp in tpu_pods(ctx):
        if not tp.multi_host:
            continue
        for c in tp.containers:
            ports = get(tp.template.spec, "containers", c.index, "ports")
            declared = [get(p, "containerPort") for p in ports] if isinstance(ports, list) \
                else []
            if port not in declared:
                yield ctx.problem(
                    tp.template.resource, PORTS.id,
                    (*tp.template.spec_path, "containers", c.index, "ports"),
                    f"multi-host TPU container does not declare containerPort {port}, the port "
                    "TPU VMs of a slice use to talk to each other",
                    hint=f"add ports: [{{containerPort: {port}}}]",
                    source=ctx.catalog.source_url(worker["source"]))


def check_capacity(ctx: LintContext) -> Iterator[Problem]:
    """Spot, reservation and provisioning node selectors that no node can satisfy at once."""
    spot = fact("capacity", "spot")
    prov = fact("capacity", "provisioning")
    rname = fact("capacity", "reservationName")
    aff = fact("capacity", "reservationAffinity")
    for tp in tpu_pods(ctx):
        t = tp.template
        sel = t.spec.get("nodeSelector")
        if not isinstance(sel, dict):
            continue
        base = (*t.spec_path, "nodeSelector")
        is_spot = sel.get(spot["key"]) == spot["value"]
        p = sel.get(prov["key"])
        res = t.resource
        if is_spot and p is not None and p != prov["spotValue"]:
            yield ctx.problem(
                res, CAPACITY.id, (*base, prov["key"]),
                f"{spot['key']}: \"true\" and {prov['key']}: {p} select different kinds of "
                "node; none has both", value=p, expected=prov["spotValue"],
                hint=f"keep one of {spot['key']} and {prov['key']}")
        if (is_spot or p == prov["spotValue"]) and rname["key"] in sel:
            yield ctx.problem(
                res, CAPACITY.id, (*base, rname["key"]),
                f"the pod asks for Spot capacity and for reservation "
                f"'{sel[rname['key']]}' at once; they are different node pools",
                value=sel[rname["key"]], hint="drop the Spot selector or the reservation")
        if sel.get(aff["key"]) == aff["specific"] and rname["key"] not in sel:
            yield ctx.problem(
                res, CAPACITY.id, (*base, aff["key"]),
                f"{aff['key']}: specific without {rname['key']}: no reservation is named",
                value=aff["specific"], hint=f"add {rname['key']}: <reservation>",
                source=source_url(aff["source"]))
        if rname["key"] in sel and aff["key"] in sel and sel[aff["key"]] != aff["specific"]:
            yield ctx.problem(
                res, CAPACITY.id, (*base, aff["key"]),
                f"{rname['key']} is set but {aff['key']} is '{sel[aff['key']]}'",
                value=sel[aff["key"]], expected=aff["specific"],
                source=source_url(aff["source"]))


CHECKS = (check_requests, check_selectors, check_resources, check_multihost, check_multislice,
          check_worker_env, check_ports, check_capacity)
