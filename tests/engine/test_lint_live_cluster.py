"""``lint --cluster KUBECONFIG``: the cluster model read from a live cluster (the stand-in
Kubernetes API server, mldiag_provision/sandbox/) and lint's cluster rules judged against it.

The stand-in's Nodes carry cpu/memory as recorded from real GKE nodes
(mldiag_provision/sandbox/recorded_nodes.yaml), not as the model's reservation formula
computes them, so
``node-allocatable`` here is checked against the platform's own figures. No terraform: these
run in seconds.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config

from mldiag_provision.sandbox.gke_cluster import recorded_nodes, seed_gke_cluster, serve_cloud

TOKEN = "t0ken-live"
ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"
CLUSTER_RULES = {"kueue-covered-resources", "kueue-queue", "kueue-quota", "node-allocatable",
                 "node-taints"}
HIGHMEM = "n2-highmem-16"  # recorded: allocatable memory 122210676Ki, capacity 131919220Ki
TPU_POOLS = [{"name": "tpu", "machine_type": "ct6e-standard-4t", "node_count": 4,
              "zone": "us-east5-b", "tpu_topology": "4x4",
              "labels": {"mldiag-provision/slice": "train"}}]


@pytest.fixture
def cloud(tmp_path: Path) -> Path:
    d = tmp_path / "cloud"
    d.mkdir()
    return d


@pytest.fixture
def api(cloud: Path):
    server = serve_cloud(cloud, token=TOKEN)
    yield server
    server.stop()


def _seed(cloud: Path, api, pools: list[dict]) -> Path:
    seed_gke_cluster(cloud, project="p", location="us-east5", name="c", api=api,
                     node_pools=pools)
    return api.kubeconfig(cloud.parent / "kubeconfig")


def _kueue(kubeconfig: Path, objects: list[dict]) -> None:
    """Install Kueue's ClusterQueue/LocalQueue CRDs (v1beta2) in the stand-in and create
    ``objects`` (ClusterQueue, LocalQueue, ResourceFlavor; their namespaces first)."""
    api = config.new_client_from_config(str(kubeconfig))
    ext = client.ApiextensionsV1Api(api)
    for kind, scope in (("ClusterQueue", "Cluster"), ("LocalQueue", "Namespaced"),
                        ("ResourceFlavor", "Cluster")):
        plural = kind.lower() + "s"
        ext.create_custom_resource_definition({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.kueue.x-k8s.io"},
            "spec": {"group": "kueue.x-k8s.io", "scope": scope,
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                               "listKind": kind + "List"},
                     "versions": [{"name": "v1beta2", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}]}})
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    for ns in sorted({o["metadata"].get("namespace") for o in objects} - {None}):
        core.create_namespace({"metadata": {"name": ns}})
    for o in objects:
        plural = o["kind"].lower() + "s"
        body = {**o, "apiVersion": "kueue.x-k8s.io/v1beta2"}
        ns = o["metadata"].get("namespace")
        if ns:
            custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", ns, plural,
                                                   body)
        else:
            custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, body)
    api.close()


def _problems(out: str) -> list[dict]:
    return [p for f in json.loads(out)["files"] for p in f["problems"]
            if p["rule"] in CLUSTER_RULES]


def _findings(out: str) -> set[tuple[str, str, int, str]]:
    """(rule, file name, line, field path) of each cluster-model finding."""
    return {(p["rule"], Path(p["file"]).name, p["line"], p["path"]) for p in _problems(out)}


def _job(name: str, selector: dict, requests: dict, *, queue: str | None = None,
         namespace: str = "team") -> dict:
    meta: dict = {"name": name, "namespace": namespace}
    if queue:
        meta["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"template": {"spec": {
                "restartPolicy": "Never", "nodeSelector": selector,
                "containers": [{"name": "main", "image": "python:3.12",
                                "resources": {"requests": requests, "limits": requests}}]}}}}


CQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
      "metadata": {"name": "cq"},
      "spec": {"namespaceSelector": {}, "resourceGroups": [{
          "coveredResources": ["cpu", "memory", "google.com/tpu"],
          "flavors": [{"name": "tpu", "resources": [
              {"name": "cpu", "nominalQuota": 1000}, {"name": "memory", "nominalQuota": "4Ti"},
              {"name": "google.com/tpu", "nominalQuota": 64}]}]}]}}
LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
      "metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": "cq"}}
TPU_SELECTOR = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4"}


def test_recorded_nodes_are_data_with_sources_not_the_formula():
    """The stand-in's figures are recorded ones (each with its URL), and differ from what the
    model's reservation tiers compute for the same machine: the tests below are not
    circular."""
    from decimal import Decimal

    from mldiag_provision.cluster.model import allocatable
    from mldiag_provision.quantity import parse_quantity

    rec = recorded_nodes()
    assert rec and all(str(r["source"]).startswith("https://") for r in rec.values())
    # a recording shows capacity and allocatable together, or neither
    assert all(("capacity" in r) == ("allocatable" in r) for r in rec.values())
    node = rec[HIGHMEM]
    cap = {k: parse_quantity(str(v)) for k, v in node["capacity"].items()}
    computed = allocatable({k: v for k, v in cap.items() if v is not None})
    recorded = parse_quantity(node["allocatable"]["memory"])
    assert computed["memory"] != recorded
    assert abs(computed["memory"] - recorded) < Decimal(2 ** 30)  # close, not equal


def test_model_of_the_standin_cluster(cloud, api):
    from mldiag_provision.cluster.from_live import from_kubeconfig

    kc = _seed(cloud, api, [*TPU_POOLS, {"name": "highmem", "machine_type": HIGHMEM,
                                         "node_count": 2, "zone": "us-east5-a"}])
    model = from_kubeconfig(str(kc))
    assert model.source == "live" and model.mode == "unknown"
    assert not model.node_groups_complete
    assert model.cluster_queues == () and model.local_queues == ()  # Kueue not installed
    groups = {g.name: g for g in model.node_groups}
    assert set(groups) == {"tpu", "highmem"}
    tpu, hm = groups["tpu"], groups["highmem"]
    assert tpu.nodes == 4 and tpu.machine_type == "ct6e-standard-4t"
    assert tpu.labels["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert tpu.slice == "train" and tpu.zones == ("us-east5-b",)
    assert "kubernetes.io/hostname" not in tpu.labels
    assert [(t.key, t.effect) for t in tpu.taints] == [("google.com/tpu", "NoSchedule")]
    assert tpu.allocatable["google.com/tpu"] == 4 and "memory" not in tpu.allocatable
    assert hm.allocatable["memory"] == 122210676 * 1024
    assert hm.capacity["memory"] == 131919220 * 1024
    assert hm.allocatable["cpu"] == Decimal("15.890")


def test_an_autopilot_cluster_is_known_by_what_it_serves(cloud, api):
    from mldiag_provision.cluster.from_live import from_kubeconfig

    seed_gke_cluster(cloud, project="p", location="us-east5", name="c", api=api,
                     autopilot=True, node_pools=TPU_POOLS)
    model = from_kubeconfig(str(api.kubeconfig(cloud.parent / "kubeconfig")))
    assert model.mode == "autopilot" and not model.node_groups_complete


def test_lint_cluster_judges_against_the_live_cluster(cloud, api, tmp_path, cli):
    kc = _seed(cloud, api, [*TPU_POOLS, {"name": "highmem", "machine_type": HIGHMEM,
                                         "node_count": 2, "zone": "us-east5-a"}])
    _kueue(kc, [CQ, LQ])
    pool = {"cloud.google.com/gke-nodepool": "highmem"}
    docs = [
        _job("too-big", pool, {"cpu": "8", "memory": "120Gi"}),  # 120 GiB > 116.55 GiB
        _job("fits", pool, {"cpu": "8", "memory": "100Gi"}),
        _job("queued", TPU_SELECTOR, {"google.com/tpu": "4", "ephemeral-storage": "10Gi"},
             queue="lq"),
        _job("queued-ok", TPU_SELECTOR, {"google.com/tpu": "4", "memory": "64Gi"},
             queue="lq"),
    ]
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    code, out, err = cli("lint", str(path), "--cluster", str(kc), "-O", "json")
    assert code in (0, 1), err
    found = {(p["rule"], p["path"], p["message"].split(" requests ")[0])
             for p in _problems(out)}
    assert found == {
        ("node-allocatable", "spec.template.spec.containers[0].resources.requests.memory",
         "scheduled: Job 'too-big'"),
        ("kueue-covered-resources",
         "spec.template.spec.containers[0].resources.requests.ephemeral-storage",
         "admitted: Job 'queued'"),
    }, (out, err)
    message = next(p["message"] for p in _problems(out) if p["rule"] == "node-allocatable")
    assert "116.55 GiB" in message and "Insufficient memory" in message
    # without --cluster the same manifests name no queue object and no recorded machine:
    # the model built from the manifests judges neither
    _, out, _ = cli("lint", str(path), "-O", "json")
    assert _findings(out) == set()


def test_lint_cluster_from_kubeconfig_env_and_context(cloud, api, tmp_path, cli,
                                                       monkeypatch):
    kc = _seed(cloud, api, [{"name": "highmem", "machine_type": HIGHMEM, "node_count": 1}])
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(_job("big", {"cloud.google.com/gke-nodepool": "highmem"},
                                        {"memory": "120Gi"})), encoding="utf-8")
    monkeypatch.setenv("KUBECONFIG", str(kc))
    code, out, _ = cli("lint", str(path), "--cluster", "-O", "json")
    assert {f[0] for f in _findings(out)} == {"node-allocatable"}
    code, out, _ = cli("lint", str(path), "--cluster", "--context", "standin", "-O", "json")
    assert {f[0] for f in _findings(out)} == {"node-allocatable"}
    code, out, err = cli("lint", str(path), "--cluster", "--context", "nope")
    assert code == 2 and "nope" in err and "Traceback" not in err


def test_reservation_tiers_on_the_reported_capacity_give_the_recorded_allocatable():
    """Property over every recorded node with figures (recorded_nodes.yaml): GKE's reservation
    tiers (fact gke.nodeAllocatable), applied to the capacity the Node reports, give its
    recorded allocatable cpu exactly and its memory within 100 MiB. (Applied to the machine
    type's nominal memory instead, as the plan model does, they overstate it: the reported
    capacity is 1.6-2.1% below the nominal size; see gke.yaml nodeAllocatable.memory.)

    Sources: 2i2c-org/infrastructure#2121 (n2-highmem-4/16/64) and 2i2c's measured table
    https://github.com/2i2c-org/infrastructure/blob/1097ae3ce6239df9adb945807390848956dfb14f/deployer/commands/generate/resource_allocation/node-capacity-info.json
    (n2-highmem-32, n1-highmem-4)."""
    from mldiag_provision.cluster.model import allocatable
    from mldiag_provision.quantity import parse_quantity

    measured = {m: r for m, r in recorded_nodes().items() if "capacity" in r}
    assert len(measured) >= 5
    for machine, node in measured.items():
        cap = {k: parse_quantity(str(node["capacity"][k])) for k in ("cpu", "memory")}
        computed = allocatable({k: v for k, v in cap.items() if v is not None})
        recorded = {k: parse_quantity(str(node["allocatable"][k])) for k in ("cpu", "memory")}
        assert computed["cpu"] == recorded["cpu"], machine
        assert recorded["memory"] is not None
        assert abs(computed["memory"] - recorded["memory"]) < 100 * 2 ** 20, machine


@pytest.mark.parametrize("machine, asked, resource, shown", [
    # 2i2c-org/infrastructure#2121: allocatable memory 122210676Ki (116.55 GiB) of
    # capacity 131919220Ki (125.81 GiB)
    ("n2-highmem-16", {"memory": "120Gi"}, "memory", "116.55 GiB"),
    # 2i2c node-capacity-info.json @1097ae3: allocatable memory 257783492608 (240.08 GiB)
    # of capacity 270473359360 (251.90 GiB)
    ("n2-highmem-32", {"memory": "245Gi"}, "memory", "240.08 GiB"),
    # same table: n1-highmem-4 allocatable memory 23829102592 (22.19 GiB) of 27328200704
    ("n1-highmem-4", {"memory": "23Gi"}, "memory", "22.19 GiB"),
    # same table: n2-highmem-32 allocatable cpu 31.85 of 32: the whole machine is not
    # allocatable
    ("n2-highmem-32", {"cpu": "32"}, "cpu", "31.85 cores"),
])
def test_a_request_above_a_live_nodes_allocatable_is_an_error(machine, asked, resource,
                                                              shown, cloud, api, tmp_path,
                                                              cli):
    """A live Node's status.allocatable is what the scheduler compares requests with
    (Kubernetes: "The scheduler does not over-subscribe Allocatable",
    https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/): a
    request above it on every node the pod may land on stays Pending with "0/N nodes are
    available: N Insufficient memory", even below the machine's size. Read from the Node
    (recorded from a real GKE node, sources in the parameters), the verdict does not stand on
    GKE's M reservation tiers: an error, exit 1."""
    kc = _seed(cloud, api, [{"name": "pool", "machine_type": machine, "node_count": 2}])
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(_job("big", {"cloud.google.com/gke-nodepool": "pool"},
                                        asked)), encoding="utf-8")
    code, out, err = cli("lint", str(path), "--cluster", str(kc), "-O", "json")
    assert code == 1, (out, err)
    [p] = _problems(out)
    assert p["rule"] == "node-allocatable" and p["severity"] == "error"
    assert p["path"] == f"spec.template.spec.containers[0].resources.requests.{resource}"
    assert shown in p["message"] and "as the nodes report it" in p["message"]
    assert f"0/2 nodes are available: 2 Insufficient {resource}" in p["message"]
    assert p["source"] == ("https://kubernetes.io/docs/tasks/administer-cluster/"
                           "reserve-compute-resources/")


def test_recorded_labels_and_taints_reach_the_standin_nodes(cloud, api, tmp_path, cli):
    """The stand-in's Nodes of a recorded machine carry the machine labels and the taints a
    real GKE node of it showed (`kubectl describe no`, GKE 1.33.5-gke.1201000,
    https://github.com/kiwonl/gke-aiml/blob/731d698bead9b50c81d83a1a9f8eb7e26f9bffe5/serving/07-tpu-gpu-fungibility/README.md):
    ct6e-standard-1t with google.com/tpu=present:NoSchedule and g2-standard-4 with
    nvidia.com/gpu=present:NoSchedule (the compute-class taint the source's user added is
    left out). A pod pinned to those machines by their recorded machine-family label that
    asks for no accelerator and tolerates nothing gets the scheduler's "had untolerated
    taint"; one that requests the chip or GPU schedules."""
    from mldiag_provision.cluster.from_live import from_kubeconfig

    kc = _seed(cloud, api, [
        {"name": "v6e-1", "machine_type": "ct6e-standard-1t", "node_count": 1},
        {"name": "l4", "machine_type": "g2-standard-4", "node_count": 1,
         "gpu_type": "nvidia-l4", "gpu_count": 1}])
    groups = {g.name: g for g in from_kubeconfig(str(kc)).node_groups}
    tpu, gpu = groups["v6e-1"], groups["l4"]
    assert tpu.labels["cloud.google.com/machine-family"] == "ct6e"
    assert tpu.labels["cloud.google.com/gke-accelerator-count"] == "1"
    assert tpu.labels["cloud.google.com/gke-tpu-topology"] == "1x1"
    assert gpu.labels["cloud.google.com/gke-gpu"] == "true"
    assert "cloud.google.com/compute-class" not in {**tpu.labels, **gpu.labels}
    assert [(t.key, t.value, t.effect) for t in tpu.taints] == [
        ("google.com/tpu", "present", "NoSchedule")]
    assert [(t.key, t.value, t.effect) for t in gpu.taints] == [
        ("nvidia.com/gpu", "present", "NoSchedule")]
    docs = [_job("tpu-sidecar", {"cloud.google.com/machine-family": "ct6e"}, {"cpu": "1"}),
            _job("gpu-sidecar", {"cloud.google.com/machine-family": "g2"}, {"cpu": "1"}),
            _job("tpu-ok", {"cloud.google.com/machine-family": "ct6e"},
                 {"google.com/tpu": "1"}),
            _job("gpu-ok", {"cloud.google.com/machine-family": "g2"},
                 {"nvidia.com/gpu": "1"})]
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    code, out, err = cli("lint", str(path), "--cluster", str(kc), "-O", "json")
    assert code == 1, (out, err)
    found = {(p["rule"], p["message"].split(" tolerates")[0].split(": ", 1)[1],
              p["severity"]) for p in _problems(out)}
    assert found == {("node-taints", "Job 'tpu-sidecar'", "error"),
                     ("node-taints", "Job 'gpu-sidecar'", "error")}, out
    said = " ".join(p["message"] for p in _problems(out))
    assert "1 node(s) had untolerated taint {google.com/tpu: present}" in said
    assert "1 node(s) had untolerated taint {nvidia.com/gpu: present}" in said


# --- errors ------------------------------------------------------------------------------

def test_lint_cluster_names_a_taint_no_toleration_matches(cloud, api, tmp_path, cli):
    """GKE taints TPU nodes google.com/tpu=present:NoSchedule (the stand-in's Nodes, as
    GKE's): a pod pinned to the TPU pool that requests no TPU gets no automatic toleration
    (ExtendedResourceToleration adds one only for a requested extended resource,
    kubernetes/kubernetes#55839) and stays Pending with the scheduler's "had untolerated
    taint" (Kubernetes' taint-and-toleration page); one that requests the chips, or
    tolerates the taint, schedules."""
    kc = _seed(cloud, api, TPU_POOLS)
    sidecar = _job("sidecar", TPU_SELECTOR, {"cpu": "1"})
    tolerant = _job("tolerant", TPU_SELECTOR, {"cpu": "1"})
    tolerant["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    docs = [sidecar, tolerant, _job("chips", TPU_SELECTOR, {"google.com/tpu": "4"})]
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    code, out, err = cli("lint", str(path), "--cluster", str(kc), "-O", "json")
    assert code == 1, (out, err)
    [p] = _problems(out)
    assert p["rule"] == "node-taints" and p["path"] == "spec.template.spec"
    assert "Job 'sidecar'" in p["message"]
    assert "node(s) had untolerated taint {google.com/tpu: present}" in p["message"]
    assert p["severity"] == "error"


def test_lint_cluster_names_a_queue_the_cluster_does_not_have(cloud, api, tmp_path, cli):
    """On a live cluster every queue is known: a Job sent to a LocalQueue that does not exist
    is an error in Kueue's words ("LocalQueue nope doesn't exist", its workload controller);
    one whose pods ask for more chips than the flavor holds gets Kueue's flavor assigner's
    "insufficient quota ... request > maximum capacity"."""
    kc = _seed(cloud, api, TPU_POOLS)
    _kueue(kc, [CQ, LQ])
    lost = _job("lost", TPU_SELECTOR, {"google.com/tpu": "4"}, queue="nope")
    wide = _job("wide", TPU_SELECTOR, {"google.com/tpu": "4"}, queue="lq")
    wide["spec"]["parallelism"] = 32  # 128 chips, the flavor holds 64
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all([lost, wide]), encoding="utf-8")
    code, out, err = cli("lint", str(path), "--cluster", str(kc), "-O", "json")
    assert code == 1, (out, err)
    found = {p["rule"]: p for p in _problems(out)}
    assert set(found) == {"kueue-queue", "kueue-quota"}, out
    assert found["kueue-queue"]["severity"] == "error"
    assert "LocalQueue nope doesn't exist" in found["kueue-queue"]["message"]
    assert "request > maximum capacity (128 > 64)" in found["kueue-quota"]["message"]


def _job_file(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(_job("j", TPU_SELECTOR, {"google.com/tpu": "4"})),
                    encoding="utf-8")
    return path


def test_unreachable_server_is_one_clear_message(tmp_path, cli, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": f"https://127.0.0.1:{port}",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "5")
    code, out, err = cli("lint", str(_job_file(tmp_path)), "--cluster", str(kc))
    assert code == 4, (out, err)
    assert "cannot reach the API server reading nodes (Connection refused)" in err
    assert "hint" in err.lower() and "Traceback" not in err + out


def test_a_server_that_never_answers_times_out_in_one_message(tmp_path, cli, monkeypatch):
    import socket

    with socket.socket() as listener:  # accepts connections (backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        kc = tmp_path / "kubeconfig"
        kc.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "x", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                   "insecure-skip-tls-verify": True}}],
            "users": [{"name": "x", "user": {"token": "t"}}],
            "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
        monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "1")
        code, out, err = cli("lint", str(_job_file(tmp_path)), "--cluster", str(kc))
    assert code == 4, (out, err)
    assert "no answer reading nodes within 1 s (MLDIAG_REQUEST_TIMEOUT_S)" in err
    assert "Traceback" not in err + out


def test_rejected_token_is_one_clear_message(cloud, api, tmp_path, cli):
    kc = _seed(cloud, api, TPU_POOLS)
    doc = json.loads(kc.read_text())
    doc["users"][0]["user"]["token"] = "wrong"
    kc.write_text(json.dumps(doc))
    code, out, err = cli("lint", str(_job_file(tmp_path)), "--cluster", str(kc))
    assert code == 4 and "did not accept the credentials" in err and "HTTP 401" in err
    assert "Traceback" not in err + out


@pytest.mark.parametrize("content, words", [
    ("clusters: [", "not YAML"),
    ("- a\n- b\n", "a YAML list"),
    ("clusters: {}\n", "clusters must be a list"),
])
def test_bad_kubeconfig_is_a_usage_error(tmp_path, cli, content, words):
    kc = tmp_path / "kubeconfig"
    kc.write_text(content)
    code, out, err = cli("lint", str(_job_file(tmp_path)), "--cluster", str(kc))
    assert code == 2 and words in err and "Traceback" not in err + out


def test_missing_kubeconfig_and_context_without_cluster(tmp_path, cli):
    code, _, err = cli("lint", str(_job_file(tmp_path)), "--cluster",
                       str(tmp_path / "absent"))
    assert code == 2 and "no such file" in err
    code, _, err = cli("lint", str(_job_file(tmp_path)), "--context", "x")
    assert code == 2 and "--context needs --cluster" in err


# --- agreement with lint --recipe on the rendered manifests --------------------------------

def _tpu_recipes() -> list[Path]:
    return sorted(p for p in RECIPES.glob("tpu*.yaml"))


def _recipe_pools(recipe: Path) -> list[dict]:
    """A node pool per slice of the recipe's plan (as tests/engine/conftest.py's
    seed_recipe_cluster does)."""
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan

    catalog = load_catalog()
    res = check_file(str(recipe), catalog)
    assert res.parsed.recipe is not None and not res.report.errors, res.report
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    pools = []
    for sp in plan.slices:
        for i in range(sp.count):
            pools.append({"name": sp.name if sp.count == 1 else f"{sp.name}-{i}",
                          "machine_type": sp.machine_type, "node_count": sp.vms,
                          "zone": plan.zone,
                          "tpu_topology": sp.topology if sp.multi_host else None,
                          "labels": {"mldiag-provision/slice": sp.name}})
    return pools


@pytest.mark.parametrize("recipe", _tpu_recipes(), ids=lambda p: p.stem)
def test_lint_cluster_agrees_with_lint_recipe(recipe, cloud, api, tmp_path, cli):
    """The rendered manifests of a bundled TPU recipe, linted against the stand-in cluster
    seeded with the recipe's node pools (and its Kueue objects, where it renders them) and
    linted with ``--recipe``: the same (rule, path) set for the cluster-model rules.

    No TPU machine type has a recorded node (recorded_nodes.yaml), so on these the live
    model does not judge cpu/memory: agreement on ``node-allocatable`` here means neither
    reports it; ``kueue-covered-resources`` is compared on the queued recipes."""
    out_dir = tmp_path / "out"
    code, _, err = cli("render", str(recipe), "-o", str(out_dir))
    assert code == 0, err
    workloads = out_dir / "k8s" / "workloads"
    kc = _seed(cloud, api, _recipe_pools(recipe))
    queues = [d for f in sorted(workloads.glob("*.yaml"))
              for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
              if isinstance(d, dict) and str(d.get("apiVersion", "")).startswith("kueue.")
              and d.get("kind") in ("ClusterQueue", "LocalQueue", "ResourceFlavor")]
    if queues:
        _kueue(kc, queues)
    assert _both(workloads, recipe, kc, cli) is not None
    if not queues:
        return
    # the queued workloads also ask for ephemeral storage, which the recipe's ClusterQueue
    # does not cover: both models must say so, at the same fields
    for f in sorted(workloads.glob("*.yaml")):
        docs = list(yaml.safe_load_all(f.read_text(encoding="utf-8")))
        if _request_ephemeral(docs):
            f.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    found = _both(workloads, recipe, kc, cli)
    assert found and {f[0] for f in found} == {"kueue-covered-resources"}


def _both(workloads: Path, recipe: Path, kc: Path, cli) -> set:
    """lint --cluster and lint --recipe of ``workloads``: their common finding set (asserted
    equal)."""
    code, live_out, err = cli("lint", str(workloads), "--cluster", str(kc), "-O", "json")
    assert code in (0, 1), err
    code, recipe_out, err = cli("lint", str(workloads), "--recipe", str(recipe), "-O", "json")
    assert code in (0, 1), err
    assert _findings(live_out) == _findings(recipe_out)
    return _findings(live_out)


def _request_ephemeral(docs: list) -> bool:
    """Add ``ephemeral-storage: 1Gi`` to the first container of every queued pod template
    (Job, JobSet) in ``docs``; True when one was changed."""
    changed = False
    for d in docs:
        if not isinstance(d, dict) or "kueue.x-k8s.io/queue-name" not in (
                (d.get("metadata") or {}).get("labels") or {}):
            continue
        if d.get("kind") == "JobSet":
            pods = [rj["template"]["spec"]["template"]["spec"]
                    for rj in d["spec"]["replicatedJobs"]]
        elif d.get("kind") == "Job":
            pods = [d["spec"]["template"]["spec"]]
        else:
            continue
        for pod in pods:
            res = pod["containers"][0].setdefault("resources", {})
            res.setdefault("requests", {})["ephemeral-storage"] = "1Gi"
            changed = True
    return changed


def _recorded_recipes() -> list[Path]:
    """The bundled TPU recipes whose machine type has a recorded real GKE node."""
    recorded = recorded_nodes()
    return [r for r in _tpu_recipes()
            if any(p["machine_type"] in recorded for p in _recipe_pools(r))]


def _over_request_memory(docs: list, amount: str) -> int:
    """Set the first container's memory request of every TPU pod template (Job, JobSet) in
    ``docs`` to ``amount``; the number of templates changed."""
    changed = 0
    for d in docs:
        if not isinstance(d, dict):
            continue
        if d.get("kind") == "JobSet":
            pods = [rj["template"]["spec"]["template"]["spec"]
                    for rj in d["spec"]["replicatedJobs"]]
        elif d.get("kind") == "Job":
            pods = [d["spec"]["template"]["spec"]]
        else:
            continue
        for pod in pods:
            res = pod["containers"][0].setdefault("resources", {})
            if "google.com/tpu" in {**(res.get("requests") or {}), **(res.get("limits") or {})}:
                res.setdefault("requests", {})["memory"] = amount
                changed += 1
    return changed


@pytest.mark.parametrize("recipe", _recorded_recipes(), ids=lambda p: p.stem)
def test_lint_cluster_agrees_with_lint_recipe_on_recorded_machines(recipe, cloud, api,
                                                                    tmp_path, cli):
    """Property over the bundled recipes whose machine has a recorded GKE node
    (recorded_nodes.yaml: ct6e-standard-4t's labels, from a real Autopilot node,
    https://github.com/kiwonl/gke-aiml/blob/2e785c8c93ccdecf0a2955aa100e38bc44a45096/serving/06-tpu-vllm-gemma-3-gcsfuse/README.md):
    the stand-in cluster the recipe's plan creates, its Nodes carrying the recorded labels,
    and ``lint --recipe`` judge the rendered manifests alike; and in a variant whose TPU pods
    ask for memory between the plan model's allocatable and the machine's size, both agree
    on every rule but ``node-allocatable``, which the live model reports exactly where a
    recorded allocatable exists (an error) and the plan model everywhere (a warning: GKE's
    reservation tiers are M). No TPU machine has a recorded allocatable today, so on these
    the live model stays silent on memory: the variant pins that it says nothing it cannot
    read from a Node."""
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.cluster.from_plan import from_recipe
    from mldiag_provision.pipeline import check_file

    out_dir = tmp_path / "out"
    code, _, err = cli("render", str(recipe), "-o", str(out_dir))
    assert code == 0, err
    workloads = out_dir / "k8s" / "workloads"
    pools = _recipe_pools(recipe)
    kc = _seed(cloud, api, pools)
    queues = [d for f in sorted(workloads.glob("*.yaml"))
              for d in yaml.safe_load_all(f.read_text(encoding="utf-8"))
              if isinstance(d, dict) and str(d.get("apiVersion", "")).startswith("kueue.")
              and d.get("kind") in ("ClusterQueue", "LocalQueue", "ResourceFlavor")]
    if queues:
        _kueue(kc, queues)
    _both(workloads, recipe, kc, cli)
    # the variant: memory above the plan model's allocatable, below the machine's size
    catalog = load_catalog()
    model = from_recipe(check_file(str(recipe), catalog).parsed.recipe, catalog)
    assert model is not None
    group = next(g for g in model.node_groups if "memory" in g.allocatable)
    between = (group.allocatable["memory"] + group.capacity["memory"]) / 2
    amount = f"{int(between) // 2 ** 20}Mi"
    changed = 0
    for f in sorted(workloads.glob("*.yaml")):
        docs = list(yaml.safe_load_all(f.read_text(encoding="utf-8")))
        n = _over_request_memory(docs, amount)
        if n:
            f.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
            changed += n
    assert changed
    code, live_out, err = cli("lint", str(workloads), "--cluster", str(kc), "-O", "json")
    assert code in (0, 1), err
    code, recipe_out, err = cli("lint", str(workloads), "--recipe", str(recipe), "-O", "json")
    assert code in (0, 1), err
    live, planned = _findings(live_out), _findings(recipe_out)
    fits = {f for f in planned if f[0] == "node-allocatable"}
    assert len(fits) >= 1 and all(f[3].endswith("requests.memory") for f in fits)
    assert all(p["severity"] == "warning" for p in _problems(recipe_out)
               if p["rule"] == "node-allocatable")
    measured = {p["machine_type"] for p in pools
                if "allocatable" in recorded_nodes().get(p["machine_type"], {})}
    expected_live = planned if measured else planned - fits
    assert live == expected_live, (live_out, recipe_out)
