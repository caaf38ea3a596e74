"""The sandbox cluster's JobSet and Job controllers (mldiag_provision/sandbox/controllers.py).

Expected child Jobs: kubernetes-sigs/jobset v0.9.0 (tag object
fa8a4bae85015ef96762f7f654d4b0a0a0b5f0ea, commit 2b148b99a008058b534aac8bf411e67ec9ea5c20),
pkg/controllers/jobset_controller_test.go, TestConstructJobsFromTemplate: each case below
names the Go case it ports; its ``want`` Job is built as that test's ``makeJob`` builds it
(labels and annotations jobset-name, jobset-uid, replicatedjob-name, group-name,
replicatedjob-replicas, job-index, restart-attempt, job-key; exclusive-topology as an
annotation) plus what the test's addJobGlobalIndex / addGlobalReplicas / addJobGroupIndex /
addGroupReplicas helpers add, with those values worked out here by hand. The Go test
builds its JobSets without the defaulting webhook (``Network: {}``, so DNS hostnames off);
the ported inputs say ``enableDNSHostnames: false`` where the Go JobSet leaves it unset.

Expected pods: the Kubernetes Job controller (pkg/controller/job/indexed_job_utils.go,
job_controller.go; facts ``indexedJob`` and ``jobTemplateLabels``).
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import yaml

from mldiag_provision.sandbox import controllers
from mldiag_provision.sandbox.apiserver import Request, Store
from mldiag_provision.sandbox.charts import render_jobset
from mldiag_provision.sandbox.gke_cluster import GkeCloudView, seed_gke_cluster

ROOT = Path(__file__).resolve().parents[2]
NS = "default"
JS = "test-jobset"
RJ = "replicated-job"
TOPOLOGY = "test-topology-domain"
P = "jobset.sigs.k8s.io/"


# --- constructJob against the v0.9.0 controller's unit test -----------------------------------

def _jobset(*rjobs: dict, annotations: dict | None = None, **spec: object) -> dict:
    """testutils.MakeJobSet(JS, NS) with its replicated jobs (uid empty, as in the Go test)."""
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": JS, "namespace": NS, "uid": "",
                         "annotations": annotations or {}},
            "spec": {"replicatedJobs": list(rjobs),
                     "network": spec.pop("network", {"enableDNSHostnames": False}), **spec}}


def _rjob(name: str, replicas: int, *, job_labels: dict | None = None,
          job_annotations: dict | None = None, pod_labels: dict | None = None,
          pod_annotations: dict | None = None) -> dict:
    return {"name": name, "replicas": replicas, "groupName": "default", "template": {
        "metadata": {"name": "test-job", "namespace": NS, "labels": job_labels or {},
                     "annotations": job_annotations or {}},
        "spec": {"template": {"metadata": {"labels": pod_labels or {},
                                           "annotations": pod_annotations or {}},
                              "spec": {}}}}}


def _want(job_name: str, rjob: str, replicas: int, index: int, *, global_index: int,
          global_replicas: int, topology: str = "", job_labels: dict | None = None,
          job_annotations: dict | None = None, pod_labels: dict | None = None,
          pod_annotations: dict | None = None, extra: dict | None = None, js: str = JS,
          ns: str = NS, uid: str = "") -> dict:
    """makeJob(&makeJobArgs{...}) + the add* helpers (one group, 'default')."""
    common = {P + "jobset-name": js, P + "jobset-uid": uid, P + "replicatedjob-name": rjob,
              P + "group-name": "default", P + "replicatedjob-replicas": str(replicas),
              P + "job-index": str(index), P + "restart-attempt": "0",
              P + "job-key": hashlib.sha1(f"{ns}/{job_name}".encode()).hexdigest(),
              P + "job-global-index": str(global_index),
              P + "global-replicas": str(global_replicas),
              P + "job-group-index": str(global_index),
              P + "group-replicas": str(global_replicas), **(extra or {})}
    notes = {**common, **({"alpha.jobset.sigs.k8s.io/exclusive-topology": topology}
                          if topology else {})}
    return {"name": job_name, "labels": {**common, **(job_labels or {})},
            "annotations": {**notes, **(job_annotations or {})},
            "podLabels": {**common, **(pod_labels or {})},
            "podAnnotations": {**(pod_annotations or {}), **notes}}


def _got(job: dict) -> dict:
    pod = job["spec"]["template"]
    return {"name": job["metadata"]["name"], "labels": job["metadata"]["labels"],
            "annotations": job["metadata"]["annotations"],
            "podLabels": pod["metadata"]["labels"],
            "podAnnotations": pod["metadata"]["annotations"]}


def test_all_jobs_pods_created_with_labels_and_annotations() -> None:
    """Go case 'all jobs/pods created with labels and annotations'."""
    jl = {"job-label-key1": "job-label-value1", "job-label-key2": "job-label-value2"}
    ja = {"job-annotation-key1": "job-annotation-value1",
          "job-annotation-key2": "job-annotation-value2"}
    pl = {"pod-label-key1": "pod-label-value1", "pod-label-key2": "pod-label-value2"}
    pa = {"pod-annotation-key1": "pod-annotation-value1",
          "pod-annotation-key2": "pod-annotation-value2"}
    jobs = controllers.construct_jobs(_jobset(_rjob(RJ, 2, job_labels=jl, job_annotations=ja,
                                                     pod_labels=pl, pod_annotations=pa)))
    assert [_got(j) for j in jobs] == [
        _want(f"{JS}-{RJ}-{i}", RJ, 2, i, global_index=i, global_replicas=2, job_labels=jl,
              job_annotations=ja, pod_labels=pl, pod_annotations=pa) for i in (0, 1)]
    assert all(j["spec"]["suspend"] is False for j in jobs)
    assert all("subdomain" not in j["spec"]["template"]["spec"] for j in jobs)


def test_multiple_replicated_jobs_count_global_indexes_across_them() -> None:
    """Go case 'multiple replicated jobs' (there B-0 already exists; here all three are
    created, and A-0 and B-1 equal that case's wanted Jobs)."""
    jobs = {j["metadata"]["name"]: _got(j) for j in controllers.construct_jobs(
        _jobset(_rjob("replicated-job-A", 1), _rjob("replicated-job-B", 2)))}
    assert list(jobs) == [f"{JS}-replicated-job-A-0", f"{JS}-replicated-job-B-0",
                          f"{JS}-replicated-job-B-1"]
    assert jobs[f"{JS}-replicated-job-A-0"] == _want(
        f"{JS}-replicated-job-A-0", "replicated-job-A", 1, 0, global_index=0,
        global_replicas=3)
    assert jobs[f"{JS}-replicated-job-B-1"] == _want(
        f"{JS}-replicated-job-B-1", "replicated-job-B", 2, 1, global_index=2,
        global_replicas=3)


def test_exclusive_placement_for_a_replicated_job_and_for_the_jobset() -> None:
    """Go cases 'exclusive placement for a ReplicatedJob' and '... for entire JobSet'."""
    key = "alpha.jobset.sigs.k8s.io/exclusive-topology"
    one = controllers.construct_jobs(_jobset(
        _rjob(RJ + "-A", 1, job_annotations={key: TOPOLOGY}), _rjob(RJ + "-B", 1)))
    assert [_got(j) for j in one] == [
        _want(f"{JS}-{RJ}-A-0", RJ + "-A", 1, 0, global_index=0, global_replicas=2,
              topology=TOPOLOGY),
        _want(f"{JS}-{RJ}-B-0", RJ + "-B", 1, 0, global_index=1, global_replicas=2)]
    both = controllers.construct_jobs(_jobset(_rjob(RJ + "-A", 1), _rjob(RJ + "-B", 1),
                                              annotations={key: TOPOLOGY}))
    assert [_got(j) for j in both] == [
        _want(f"{JS}-{RJ}-A-0", RJ + "-A", 1, 0, global_index=0, global_replicas=2,
              topology=TOPOLOGY),
        _want(f"{JS}-{RJ}-B-0", RJ + "-B", 1, 0, global_index=1, global_replicas=2,
              topology=TOPOLOGY)]


def test_coordinator_dns_hostnames_and_suspend() -> None:
    """Go cases 'coordinator' (label and annotation <js>-<rjob>-0-0.<subdomain>, subdomain
    set), 'pod dns hostnames enabled' and 'suspend job set' (Suspend(true))."""
    coord = {P + "coordinator": f"{JS}-{RJ}-0-0.{JS}"}
    jobs = controllers.construct_jobs(_jobset(
        _rjob(RJ, 1), network={"enableDNSHostnames": True, "subdomain": JS},
        coordinator={"replicatedJob": RJ, "jobIndex": 0, "podIndex": 0}))
    assert [_got(j) for j in jobs] == [_want(f"{JS}-{RJ}-0", RJ, 1, 0, global_index=0,
                                             global_replicas=1, extra=coord)]
    assert jobs[0]["spec"]["template"]["spec"]["subdomain"] == JS
    suspended = controllers.construct_jobs(_jobset(_rjob(RJ, 1), suspend=True))
    assert suspended[0]["spec"]["suspend"] is True
    # the webhook's default (enableDNSHostnames true) with no subdomain: the JobSet's name
    defaulted = _jobset(_rjob(RJ, 1), network={})
    assert controllers.construct_jobs(defaulted)[0]["spec"]["template"]["spec"][
        "subdomain"] == JS
    assert controllers.headless_service(defaulted)["spec"] == {
        "clusterIP": "None", "selector": {P + "jobset-name": JS},
        "publishNotReadyAddresses": True}


# --- the Job controller --------------------------------------------------------------------

def _indexed_job(name: str, completions: int, parallelism: int, *, suspend: bool = False,
                 env: list | None = None) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "uid": "u-1"},
            "spec": {"completionMode": "Indexed", "completions": completions,
                     "parallelism": parallelism, "suspend": suspend,
                     "template": {"metadata": {"labels": {"app": "a"}}, "spec": {
                         "subdomain": "sub", "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "i", "env": env or []}]}}}}


def test_indexed_job_pods_names_hostnames_index_and_env() -> None:
    pods = controllers.indexed_pods(_indexed_job("train", 4, 2), [], random.Random(0))
    assert len(pods) == 2  # parallelism, not completions
    for i, pod in enumerate(pods):
        meta = pod["metadata"]
        assert re.fullmatch(rf"train-{i}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", meta["name"])
        assert pod["spec"]["hostname"] == f"train-{i}"
        assert pod["spec"]["subdomain"] == "sub"
        assert meta["annotations"]["batch.kubernetes.io/job-completion-index"] == str(i)
        assert meta["labels"] == {
            "app": "a", "batch.kubernetes.io/controller-uid": "u-1",
            "batch.kubernetes.io/job-name": "train", "controller-uid": "u-1",
            "job-name": "train", "batch.kubernetes.io/job-completion-index": str(i)}
        assert pod["spec"]["containers"][0]["env"] == [{
            "name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}]
        assert meta["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job",
                                            "name": "train", "uid": "u-1",
                                            "controller": True, "blockOwnerDeletion": True}]
    # the next round adds nothing while two are active; a suspended Job makes none
    assert controllers.indexed_pods(_indexed_job("train", 4, 2), pods) == []
    assert controllers.indexed_pods(_indexed_job("train", 4, 2, suspend=True), []) == []
    # a container that defines JOB_COMPLETION_INDEX keeps its own
    own = [{"name": "JOB_COMPLETION_INDEX", "value": "x"}]
    pod = controllers.indexed_pods(_indexed_job("t", 1, 1, env=own), [])[0]
    assert pod["spec"]["containers"][0]["env"] == own


def test_a_long_job_name_is_cut_to_the_generated_name_limit() -> None:
    name = "j" * 70
    pod = controllers.indexed_pods(_indexed_job(name, 1, 1), [], random.Random(1))[0]
    assert len(pod["metadata"]["name"]) == 63
    assert pod["metadata"]["name"].startswith("j" * 55 + "-0-")
    assert pod["spec"]["hostname"] == f"{name}-0"


# --- a bundled example's JobSet in a sandbox Standard cluster --------------------------------

def _example_jobset(tmp: Path) -> dict:
    """The JobSet of recipes/tpu-v6e-4x4-multislice-standard-spot.yaml as `render` writes it."""
    from mldiag_provision.cli.app import main

    out = tmp / "render"
    rc = main(["render", str(ROOT / "recipes/tpu-v6e-4x4-multislice-standard-spot.yaml"),
               "-o", str(out)])
    assert rc == 0
    docs = [d for f in sorted((out / "k8s/workloads").glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d and d.get("kind") == "JobSet"]
    assert len(docs) == 1
    return docs[0]


def _cluster(tmp: Path, *, jobset_controller: bool = True) -> Store:
    cloud = tmp / "cloud"
    cloud.mkdir()
    pools = [{"name": f"trillium-{i}", "machine_type": "ct6e-standard-4t", "node_count": 4,
              "tpu_topology": "4x4", "spot": True,
              "labels": {"mldiag-provision/slice": "trillium"}} for i in (0, 1)]
    seed_gke_cluster(cloud, project="p", location="us-east5", name="c", node_pools=pools)
    store = Store(GkeCloudView(cloud))
    store.sync()
    chart = render_jobset("jobset", "jobset-system", {})
    _create(store, {"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "jobset-system"}})
    for obj in chart.crds + (chart.objects if jobset_controller else []):
        _create(store, obj)
    _create(store, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mldiag"}})
    return store


def _create(store: Store, obj: dict) -> dict:
    group, _, version = obj["apiVersion"].rpartition("/")
    res = next(r for r in store.resources() if r.group == group and r.version == version
               and r.kind == obj["kind"])
    ns = obj["metadata"].get("namespace", "") if res.namespaced else ""
    return store.create(Request("POST", res, ns, "", "", {}, obj))


def _delete(store: Store, group: str, plural: str, ns: str, name: str) -> None:
    res = next(r for r in store.resources() if r.group == group and r.plural == plural)
    store.delete(Request("DELETE", res, ns, name, "", {}))


def _all(store: Store, group: str, plural: str) -> list[dict]:
    return list(store.objects.get((group, plural), {}).values())


def test_the_example_jobset_gets_its_jobs_service_and_pods(tmp_path: Path) -> None:
    js = _example_jobset(tmp_path)
    store = _cluster(tmp_path)
    stored = _create(store, js)
    uid = stored["metadata"]["uid"]
    jobs = sorted(_all(store, "batch", "jobs"), key=lambda j: j["metadata"]["name"])
    assert [j["metadata"]["name"] for j in jobs] == ["multislice-train-slice-0",
                                                     "multislice-train-slice-1"]
    for i, job in enumerate(jobs):
        want = _want(f"multislice-train-slice-{i}", "slice", 2, i, global_index=i,
                     global_replicas=2, topology="cloud.google.com/gke-nodepool",
                     js="multislice-train", ns="mldiag", uid=uid)
        # the template's own pod labels, and the API server's Job labels, stay beside them
        template = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        want["podLabels"] = {**template["metadata"]["labels"], **want["podLabels"],
                             **controllers.job_template_labels(job)}
        assert _got(job) == want
        assert job["metadata"]["namespace"] == "mldiag"
        assert job["metadata"]["ownerReferences"][0]["uid"] == uid
        assert job["spec"]["suspend"] is False
        assert job["spec"]["template"]["spec"]["subdomain"] == "multislice-train"
        assert job["spec"]["selector"] == {
            "matchLabels": {"batch.kubernetes.io/controller-uid": job["metadata"]["uid"]}}
    svc = store.objects[("", "services")][("mldiag", "multislice-train")]
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["metadata"]["ownerReferences"][0]["uid"] == uid
    pods = _all(store, "", "pods")
    assert len(pods) == 8  # 2 slices x parallelism 4
    hosts = sorted(p["spec"]["hostname"] for p in pods)
    assert hosts == [f"multislice-train-slice-{j}-{i}" for j in (0, 1) for i in range(4)]
    for pod in pods:
        assert pod["spec"]["subdomain"] == "multislice-train"
        assert pod["metadata"]["annotations"][P + "job-index"] in ("0", "1")
        assert (pod["status"] or {}).get("phase") == "Pending"  # no container runs
        assert pod["spec"].get("nodeName")  # the scheduler bound it to a v6e node
    # garbage collection: the JobSet takes its Jobs, Service and Pods
    _delete(store, "jobset.x-k8s.io", "jobsets", "mldiag", "multislice-train")
    assert _all(store, "batch", "jobs") == []
    assert _all(store, "", "pods") == []
    assert ("mldiag", "multislice-train") not in store.objects[("", "services")]


def test_a_suspended_jobset_makes_suspended_jobs_and_no_pods(tmp_path: Path) -> None:
    js = _example_jobset(tmp_path)
    js["spec"]["suspend"] = True
    store = _cluster(tmp_path)
    _create(store, js)
    jobs = _all(store, "batch", "jobs")
    assert len(jobs) == 2 and all(j["spec"]["suspend"] is True for j in jobs)
    assert _all(store, "", "pods") == []
    # resumed (as Kueue does on admission): the Jobs follow and their pods appear
    res = next(r for r in store.resources() if r.plural == "jobsets")
    store.patch(Request("PATCH", res, "mldiag", "multislice-train", "", {},
                        {"spec": {"suspend": False}}, "application/merge-patch+json"))
    assert all(j["spec"]["suspend"] is False for j in _all(store, "batch", "jobs"))
    assert len(_all(store, "", "pods")) == 8


def test_without_a_jobset_controller_the_jobset_stays_as_written(tmp_path: Path) -> None:
    js = _example_jobset(tmp_path)
    store = _cluster(tmp_path, jobset_controller=False)
    _create(store, js)
    assert _all(store, "batch", "jobs") == []
    assert _all(store, "", "pods") == []


def test_deleting_a_job_deletes_its_pods(tmp_path: Path) -> None:
    store = _cluster(tmp_path, jobset_controller=False)
    job = _indexed_job("solo", 2, 2)
    job["metadata"] = {"name": "solo", "namespace": "mldiag"}
    _create(store, job)
    assert len(_all(store, "", "pods")) == 2
    _delete(store, "batch", "jobs", "mldiag", "solo")
    assert _all(store, "", "pods") == []


# --- every bundled example's JobSet ----------------------------------------------------------

def _rendered_jobsets(recipe: Path, out: Path) -> list[dict]:
    from mldiag_provision.cli.app import main

    assert main(["render", str(recipe), "-o", str(out)]) == 0
    return [d for f in sorted((out / "k8s/workloads").glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d and d.get("kind") == "JobSet"]


RECIPES = sorted((ROOT / "recipes").glob("*.yaml"))


def test_every_example_jobset_gets_the_children_jobset_v090_names(tmp_path: Path) -> None:
    """For each bundled recipe's JobSet: the child Jobs' names, labels and annotations as
    makeJob + the add* helpers of TestConstructJobsFromTemplate build them (global and
    group indexes counted over the replicated jobs before), the subdomain (webhook default:
    the JobSet's name), and pods per Job = min(parallelism, completions), none if
    suspended, hostnames <job>-<index>."""
    store = _cluster(tmp_path)
    seen = 0
    for n, recipe in enumerate(RECIPES):
        for js in _rendered_jobsets(recipe, tmp_path / f"r{n}"):
            seen += 1
            ns = js["metadata"]["namespace"]
            if ("", ns) not in store.objects[("", "namespaces")]:
                _create(store, {"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": ns}})
            name = js["metadata"]["name"]
            if (ns, name) in store.objects.get(("jobset.x-k8s.io", "jobsets"), {}):
                _delete(store, "jobset.x-k8s.io", "jobsets", ns, name)
            uid = _create(store, js)["metadata"]["uid"]
            jobs = {j["metadata"]["name"]: j for j in _all(store, "batch", "jobs")
                    if j["metadata"]["namespace"] == ns
                    and j["metadata"]["labels"].get(P + "jobset-name") == name}
            rjobs = js["spec"]["replicatedJobs"]
            total = sum(int(r.get("replicas", 1)) for r in rjobs)
            topology = (js["metadata"].get("annotations") or {}).get(
                "alpha.jobset.sigs.k8s.io/exclusive-topology", "")
            before = 0
            want_pods = set()
            for r in rjobs:
                replicas = int(r.get("replicas", 1))
                for i in range(replicas):
                    job_name = f"{name}-{r['name']}-{i}"
                    job = jobs.pop(job_name)
                    want = _want(job_name, r["name"], replicas, i, global_index=before + i,
                                 global_replicas=total, topology=topology, js=name, ns=ns,
                                 uid=uid)
                    got = _got(job)
                    assert {k: v for k, v in got["labels"].items() if k.startswith(P)} == \
                        want["labels"], (recipe.name, job_name)
                    assert got["annotations"] == want["annotations"], (recipe.name, job_name)
                    assert job["spec"]["template"]["spec"]["subdomain"] == name
                    spec = r["template"]["spec"]
                    count = 0 if js["spec"].get("suspend") else min(
                        int(spec.get("parallelism", 1)), int(spec.get("completions", 1)))
                    want_pods |= {f"{job_name}-{k}" for k in range(count)}
                before += replicas
            assert jobs == {}, recipe.name
            pods = {p["spec"]["hostname"] for p in _all(store, "", "pods")
                    if p["metadata"]["labels"].get(P + "jobset-name") == name
                    and p["metadata"]["namespace"] == ns}
            assert pods == want_pods, recipe.name
            _delete(store, "jobset.x-k8s.io", "jobsets", ns, name)
    assert seen >= 10  # the examples with a JobSet workload
    assert _all(store, "batch", "jobs") == [] and _all(store, "", "pods") == []
