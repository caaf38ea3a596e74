"""Property tests of lint over the real catalog: generated valid TPU workloads pass; a single
mutation of one fails at the mutated field; no input, however broken, makes lint raise."""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mldiag_provision.catalog.tpu import ShapeError, load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.loading import field_path
from mldiag_provision.lint.schema import available_versions
from mldiag_provision.lint.tpu_rules import ACC_KEY, TOPO_KEY, TPU
from mldiag_provision.render.stack import manifest_yaml

from .support import lint, show

CATALOG = load_catalog()
SHAPES = sorted((k, t, m) for k, v in CATALOG.versions.items()
                for t, mts in v.topologies.items() for m in mts)
# LINT_PROPERTY_EXAMPLES=2000 for a deeper local run
EXAMPLES = int(os.environ.get("LINT_PROPERTY_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

dns = st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,8})?", fullmatch=True)


@dataclass
class Workload:
    """Generated manifests and where their TPU fields are."""

    docs: list[dict]
    main: int  # index of the workload document
    spec: tuple  # path of the TPU pod spec in it
    job: tuple | None  # path of the JobSpec, if any
    service: int | None
    vms: int
    chips: int
    key: str
    topology: str
    form: str
    autopilot: bool

    def text(self) -> str:
        # as render writes manifests: a name like "n" quoted, else Kubernetes reads false
        return manifest_yaml(self.docs)

    def at(self, *path: str | int) -> dict:
        node: object = self.docs[self.main]
        for p in path:
            node = node[p]  # type: ignore[index]
        return node  # type: ignore[return-value]


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    key, topology, machine = draw(st.sampled_from(SHAPES))
    version = CATALOG.versions[key]
    mt = version.machine_types[machine]
    chips = mt.chips_per_vm
    vms = math.prod(int(x) for x in topology.split("x")) // chips
    name = draw(dns)
    ns = draw(st.none() | dns)
    meta: dict = {"name": name, **({"namespace": ns} if ns else {})}
    selector = {ACC_KEY: version.accelerator, TOPO_KEY: topology}
    if draw(st.booleans()):
        selector["cloud.google.com/gke-spot"] = "true"
    resources: dict = {TPU: chips}
    if mt.confidence == "H" and mt.vcpu and mt.memory_gb:
        resources["cpu"] = draw(st.integers(1, max(1, int(mt.vcpu) // 2)))
        resources["memory"] = f"{draw(st.integers(1, max(1, int(mt.memory_gb) // 2)))}G"
    container: dict = {"name": "main", "image": "python:3.10",
                       "resources": {"requests": dict(resources), "limits": dict(resources)}}
    if vms > 1:
        container["ports"] = [{"containerPort": 8471}]
    spec: dict = {"nodeSelector": selector, "containers": [container]}
    forms = ["job", "jobset", "lws"] + (["pod"] if vms == 1 else [])
    form = draw(st.sampled_from(forms))
    autopilot = draw(st.booleans())
    docs: list[dict]
    service = job = None
    if form == "pod":
        docs = [{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                 "spec": {"restartPolicy": "Never", **spec}}]
        spec_path: tuple = ("spec",)
    elif form == "job":
        spec = {"restartPolicy": "Never", **spec}
        job_spec = {"backoffLimit": 0, "completions": vms, "parallelism": vms,
                    "completionMode": "Indexed", "template": {"spec": spec}}
        docs = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}]
        if vms > 1:
            svc = draw(dns)
            spec["subdomain"] = svc
            docs.append({"apiVersion": "v1", "kind": "Service",
                         "metadata": {"name": svc, **({"namespace": ns} if ns else {})},
                         "spec": {"clusterIP": "None", "selector": {"job-name": name}}})
            service = 1
            if draw(st.booleans()):
                docs.reverse()
        spec_path, job = ("spec", "template", "spec"), ("spec",)
    elif form == "jobset":
        replicas = draw(st.integers(1, 3)) if vms > 1 and version.multislice else 1
        spec = {"restartPolicy": "Never", **spec}
        meta["annotations"] = {"alpha.jobset.sigs.k8s.io/exclusive-topology":
                               "cloud.google.com/gke-nodepool"}
        job_spec = {"completions": vms, "parallelism": vms, "completionMode": "Indexed",
                    "template": {"spec": spec}}
        docs = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
                 "spec": {"replicatedJobs": [{"name": "slice", "replicas": replicas,
                                              "template": {"spec": job_spec}}]}}]
        job = ("spec", "replicatedJobs", 0, "template", "spec")
        spec_path = (*job, "template", "spec")
    else:
        docs = [{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                 "metadata": meta,
                 "spec": {"leaderWorkerTemplate": {"size": vms, "workerTemplate": {
                     "spec": spec}}}}]
        spec_path = ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")
    main = 0 if docs[0]["kind"] != "Service" else 1
    if service is not None:
        service = 1 - main
    return Workload(docs, main, spec_path, job, service, vms, chips, key, topology, form,
                    autopilot)


def _checked_rules(p: Problem) -> bool:
    return p.rule.split("-", 1)[0] in ("tpu", "k8s", "autopilot", "yaml")


@SETTINGS
@given(workloads())
def test_generated_valid_workloads_pass(w: Workload) -> None:
    result = lint(w.text(), autopilot=w.autopilot)
    bad = [p for p in result.problems if p.severity is Severity.ERROR
           or (p.severity is Severity.WARNING and _checked_rules(p))]
    assert bad == [], (w.text(), show(result))


def _invalid_topology(draw: st.DrawFn, key: str) -> str:
    version = CATALOG.versions[key]
    dims = version.dimensions
    topo = "x".join(str(draw(st.integers(1, 9))) for _ in range(dims))
    try:
        CATALOG.resolve(key, topo, version.machine_types[next(iter(version.machine_types))]
                        .chips_per_vm)
    except ShapeError as exc:
        assume(exc.field == "topology")
        return topo
    assume(False)
    return topo


@st.composite
def mutations(draw: st.DrawFn) -> tuple[Workload, str, str]:
    """A valid workload with one wrong edit: (workload, expected rule, expected field path)."""
    w = draw(workloads())
    w = Workload(**{**w.__dict__, "docs": copy.deepcopy(w.docs)})
    version = CATALOG.versions[w.key]
    spec = w.at(*w.spec)
    c0 = spec["containers"][0]
    tpu_path = (*w.spec, "containers", 0, "resources", "requests", TPU)
    options = ["chips", "topology", "accelerator", "no-limit", "mismatch", "second-container",
               "unknown-field", "autopilot"]
    if w.job is not None and w.vms > 1:
        options += ["completions", "parallelism", "not-indexed"]
    if w.service is not None:
        options += ["no-service"]
    kind = draw(st.sampled_from(options))
    allowed = {m.chips_per_vm for m in version.machine_types.values()
               if m.name in version.topologies.get(w.topology, ())}
    if kind == "chips":
        n = draw(st.sampled_from([c for c in (1, 2, 3, 5, 6, 7, 16) if c not in allowed]))
        c0["resources"]["requests"][TPU] = c0["resources"]["limits"][TPU] = n
        return w, "tpu-chips-per-pod", field_path(tpu_path)
    if kind == "topology":
        spec["nodeSelector"][TOPO_KEY] = _invalid_topology(draw, w.key)
        return w, "tpu-topology", field_path((*w.spec, "nodeSelector", TOPO_KEY))
    if kind == "accelerator":
        bad = draw(st.from_regex(r"tpu-[a-z]{1,6}-[a-z]{2,8}", fullmatch=True))
        assume(CATALOG.version(bad) is None)
        spec["nodeSelector"][ACC_KEY] = bad
        return w, "tpu-accelerator", field_path((*w.spec, "nodeSelector", ACC_KEY))
    if kind == "no-limit":
        del c0["resources"]["limits"][TPU]
        return w, "tpu-requests-limits", field_path(
            (*w.spec, "containers", 0, "resources", "limits", TPU))
    if kind == "mismatch":
        c0["resources"]["requests"][TPU] = w.chips + draw(st.integers(1, 3))
        return w, "tpu-requests-limits", field_path(tpu_path)
    if kind == "second-container":
        assume(w.key not in ("tpu7x",))
        spec["containers"].append({"name": "second", "image": "x", "resources": {
            "requests": {TPU: w.chips}, "limits": {TPU: w.chips}}})
        return w, "tpu-containers", field_path(
            (*w.spec, "containers", 1, "resources", "requests", TPU))
    if kind == "unknown-field":
        field = draw(st.sampled_from(["nodeSelectr", "restartPolcy", "containrs", "hostNetwrk"]))
        spec[field] = "x"
        return w, "k8s-unknown-field", field_path((*w.spec, field))
    if kind == "autopilot":
        w.autopilot = True
        field = draw(st.sampled_from(["hostNetwork", "hostPID", "hostIPC", "privileged"]))
        if field == "privileged":
            c0["securityContext"] = {"privileged": True}
            return w, "autopilot-privileged", field_path(
                (*w.spec, "containers", 0, "securityContext", "privileged"))
        spec[field] = True
        return w, "autopilot-host-namespaces", field_path((*w.spec, field))
    job = w.at(*w.job)  # type: ignore[misc]
    if kind in ("completions", "parallelism"):
        job[kind] = draw(st.integers(1, w.vms * 2).filter(lambda n: n != w.vms))
        return w, "tpu-job-shape", field_path((*w.job, kind))  # type: ignore[misc]
    if kind == "not-indexed":
        # unset is fine in a JobSet: its webhook defaults completionMode to Indexed
        job["completionMode"] = draw(st.sampled_from(
            ["NonIndexed"] + ([None] if w.form == "job" else [])))
        if job["completionMode"] is None:
            del job["completionMode"]
        return w, "tpu-job-shape", field_path((*w.job, "completionMode"))  # type: ignore[misc]
    assert kind == "no-service"
    del w.docs[w.service]  # type: ignore[arg-type]
    w.main = 0
    return w, "tpu-headless-service", field_path((*w.spec, "subdomain"))


@SETTINGS
@given(mutations())
def test_mutated_workloads_fail_at_the_mutated_path(case: tuple[Workload, str, str]) -> None:
    w, rule, path = case
    result = lint(w.text(), autopilot=w.autopilot)
    hits = [p for p in result.problems if p.severity is Severity.ERROR and p.rule == rule
            and p.path == path]
    assert hits, (rule, path, w.text(), show(result))
    assert hits[0].line > 0


# --- robustness ----------------------------------------------------------------------------

KEYS = ["apiVersion", "kind", "metadata", "name", "namespace", "labels", "spec", "template",
        "containers", "resources", "requests", "limits", TPU, "nodeSelector", ACC_KEY, TOPO_KEY,
        "replicatedJobs", "completions", "parallelism", "completionMode", "subdomain", "items",
        "selector", "clusterIP", "env", "ports", "containerPort", "hostNetwork", "volumes",
        "hostPath", "leaderWorkerTemplate", "workerTemplate", "size", "workerGroupSpecs",
        "numOfHosts", "triggerCapture", "capturePort", "securityContext", "capabilities", "add"]
KINDS = [("v1", "Pod"), ("batch/v1", "Job"), ("v1", "Service"), ("v1", "List"),
         ("jobset.x-k8s.io/v1alpha2", "JobSet"), ("leaderworkerset.x-k8s.io/v1",
                                                   "LeaderWorkerSet"),
         ("ray.io/v1", "RayJob"), ("apps/v1", "Deployment"), ("v1", "ServiceAccount"),
         ("diagon.gke.io/v1alpha1", "MLDiagnosticsConnection"), ("x.io/v1", "Thing")]
scalars = (st.none() | st.booleans() | st.integers(-10**12, 10**12)
           | st.floats(allow_nan=True) | st.text(max_size=12)
           | st.sampled_from(["Indexed", "None", "2x2x4", "2x4", "tpu-v4-podslice", "4", "500Gi",
                              "tpu7x", "true", "9999", "1e999999", "-4", "4000m", ".nan"]))
junk = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner,
                                      max_size=5), max_leaves=30)


@st.composite
def k8s_like(draw: st.DrawFn) -> dict:
    api, kind = draw(st.sampled_from(KINDS))
    doc = draw(st.dictionaries(st.sampled_from(KEYS), junk, max_size=6))
    if draw(st.booleans()):
        doc["apiVersion"], doc["kind"] = api, kind
    return doc


@settings(max_examples=EXAMPLES * 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(k8s_like(), min_size=1, max_size=3), st.booleans(), st.booleans())
def test_arbitrary_objects_never_raise(docs: list[dict], autopilot: bool, diag: bool) -> None:
    text = yaml.safe_dump_all(docs, sort_keys=False)
    lint(text, autopilot=autopilot, diagnostics=diag)


@settings(max_examples=EXAMPLES * 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    lint(text, autopilot=True)


@SETTINGS
@given(workloads(), st.data())
def test_valid_workloads_with_a_subtree_replaced_never_raise(w: Workload,
                                                             data: st.DataObject) -> None:
    docs = copy.deepcopy(w.docs)
    node: object = docs[w.main]
    for _ in range(data.draw(st.integers(1, 8))):
        if isinstance(node, dict) and node:
            k = data.draw(st.sampled_from(sorted(node, key=str)))
            if isinstance(node[k], (dict, list)) and data.draw(st.booleans()):
                node = node[k]
                continue
            node[k] = data.draw(junk)
            break
        if isinstance(node, list) and node:
            i = data.draw(st.integers(0, len(node) - 1))
            if isinstance(node[i], (dict, list)) and data.draw(st.booleans()):
                node = node[i]
                continue
            node[i] = data.draw(junk)
            break
        break
    version = data.draw(st.sampled_from(available_versions()))
    lint(yaml.safe_dump_all(docs, sort_keys=False), autopilot=True, version=version)
