"""The cluster model from a live cluster's objects (cluster/from_live.py), without a server:
grouping of Nodes, the smallest allocatable of a group, Kueue queues (v1beta2 then v1beta1,
none when Kueue is absent) and the one-line errors a failed request becomes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from mldiag_provision.cluster import from_live
from mldiag_provision.cluster.check import check
from mldiag_provision.errors import EngineError, ExitCode


def _node(name: str, labels: dict[str, str], *, memory: str | None = None,
          cpu: str | None = None, taints: list[dict] | None = None,
          capacity_memory: str | None = None) -> dict[str, Any]:
    alloc: dict[str, str] = {"pods": "110"}
    cap: dict[str, str] = {"pods": "110"}
    if memory:
        alloc["memory"] = memory
        cap["memory"] = capacity_memory or memory
    if cpu:
        alloc["cpu"] = cpu
        cap["cpu"] = str(round(float(cpu.rstrip("m")) / 1000 + 0.5)) if cpu.endswith("m") else cpu
    return {"metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": alloc, "capacity": cap}}


def test_nodes_group_by_pool_with_shared_labels_and_smallest_allocatable():
    pool = {"cloud.google.com/gke-nodepool": "big", "node.kubernetes.io/instance-type":
            "n2-highmem-16"}
    nodes = [
        _node("a", {**pool, "topology.kubernetes.io/zone": "us-east5-a", "extra": "1"},
              memory="122210676Ki", cpu="15890m",
              taints=[{"key": "k", "value": "v", "effect": "NoSchedule"},
                      {"key": "only-a", "effect": "NoExecute"}]),
        _node("b", {**pool, "topology.kubernetes.io/zone": "us-east5-b"},
              memory="122000000Ki", cpu="15890m",
              taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        _node("c", {"cloud.google.com/gke-nodepool": "small"}, memory="1Gi"),
    ]
    groups = {g.name: g for g in from_live.node_groups(nodes)}
    big = groups["big"]
    assert big.nodes == 2 and big.machine_type == "n2-highmem-16"
    assert big.zones == ("us-east5-a", "us-east5-b")
    assert "extra" not in big.labels and "kubernetes.io/hostname" not in big.labels
    assert big.labels["cloud.google.com/gke-nodepool"] == "big"
    assert [t.key for t in big.taints] == ["k"]  # the taint every node carries
    assert big.allocatable["memory"] == 122000000 * 1024  # the smaller node
    assert big.allocatable["cpu"] == Decimal("15.890")
    assert groups["small"].allocatable["memory"] == 2 ** 30


def test_nodes_without_a_pool_label_group_by_identical_labels():
    nodes = [_node(n, {"node.kubernetes.io/instance-type": mt,
                       "topology.kubernetes.io/zone": z}, memory="8Gi")
             for n, mt, z in (("x1", "e2-standard-4", "a"), ("x2", "e2-standard-4", "b"),
                              ("y1", "n2-standard-8", "a"))]
    groups = from_live.node_groups(nodes)
    assert [(g.name, g.nodes) for g in groups] == [("e2-standard-4", 2), ("n2-standard-8", 1)]


def test_a_resource_some_node_lacks_is_not_allocatable_for_the_group():
    nodes = [_node("a", {"cloud.google.com/gke-nodepool": "p"}, memory="8Gi"),
             _node("b", {"cloud.google.com/gke-nodepool": "p"})]
    (group,) = from_live.node_groups(nodes)
    assert "memory" not in group.allocatable


def test_queues_and_the_model():
    cq = {"metadata": {"name": "cq"}, "spec": {"resourceGroups": [
        {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "f1"}]},
        {"coveredResources": ["google.com/tpu"], "flavors": [{"name": "f2"}]}]}}
    lq = {"metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": "cq"}}
    model = from_live.model_of([], [cq], [lq])
    assert model.source == "live" and model.mode == "unknown"
    assert not model.node_groups_complete
    assert model.cluster_queue("cq").covered == {"cpu", "memory", "google.com/tpu"}
    assert model.cluster_queue("cq").flavors == ("f1", "f2")
    assert model.local_queue("team", "lq").cluster_queue == "cq"


class _ApiError(Exception):
    def __init__(self, status: int, reason: str = "") -> None:
        super().__init__(f"({status}) {reason}")
        self.status, self.reason = status, reason


class _Custom:
    """A CustomObjectsApi stand-in: ``served`` maps (version, plural) to items."""

    def __init__(self, served: dict[tuple[str, str], list[dict]], fail: int | None = None,
                 ) -> None:
        self.served, self.fail, self.calls = served, fail, []

    def list_cluster_custom_object(self, group: str, version: str, plural: str,
                                   **_: object) -> dict:
        self.calls.append((group, version, plural))
        if self.fail:
            raise _ApiError(self.fail, "Forbidden")
        if (version, plural) not in self.served:
            raise _ApiError(404, "Not Found")
        return {"items": self.served[(version, plural)]}


def test_kueue_v1beta2_then_v1beta1_then_none():
    item = {"metadata": {"name": "cq"}, "spec": {}}
    both = _Custom({("v1beta2", "clusterqueues"): [item], ("v1beta1", "clusterqueues"): []})
    assert from_live._list_queues(both, "clusterqueues", "c") == [item]
    assert both.calls == [("kueue.x-k8s.io", "v1beta2", "clusterqueues")]
    old = _Custom({("v1beta1", "clusterqueues"): [item]})
    assert from_live._list_queues(old, "clusterqueues", "c") == [item]
    assert from_live._list_queues(_Custom({}), "clusterqueues", "c") is None  # no Kueue


def test_forbidden_queue_list_is_an_engine_error_with_a_hint():
    with pytest.raises(EngineError) as exc:
        from_live._list_queues(_Custom({}, fail=403), "localqueues", "kubeconfig k")
    assert exc.value.exit_code == ExitCode.ENGINE
    assert "refused reading localqueues.kueue.x-k8s.io (HTTP 403)" in exc.value.message
    assert "kubectl auth can-i" in (exc.value.hint or "")


@pytest.mark.parametrize("make, words", [
    (lambda: _ApiError(401, "Unauthorized"), "did not accept the credentials"),
    (lambda: _ApiError(500, "Internal Server Error"), "answered HTTP 500"),
    (lambda: ConnectionRefusedError(111, "refused"), "cannot reach the API server"),
])
def test_failures_are_one_line(make, words):
    err = from_live._failure("nodes", "kubeconfig k", make())
    assert words in err.message and "\n" not in err.message and err.hint


def test_a_timeout_names_the_setting():
    from urllib3.exceptions import ReadTimeoutError

    err = from_live._failure("nodes", "kubeconfig k", ReadTimeoutError(None, "/", "timed out"))
    assert "MLDIAG_REQUEST_TIMEOUT_S" in err.message


def test_live_groups_feed_the_scheduled_check():
    """A group read from Nodes is judged by its reported allocatable (check.scheduled)."""
    from mldiag_provision.lint.loading import Source, load_sources
    from mldiag_provision.lint.workloads import pod_templates

    nodes = [_node("a", {"cloud.google.com/gke-nodepool": "p"}, memory="10Gi",
                   capacity_memory="12Gi")]
    model = from_live.model_of(nodes)
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n"
            "  nodeSelector: {cloud.google.com/gke-nodepool: p}\n"
            "  containers: [{name: c, image: i, resources: {requests: {memory: 11Gi}}}]\n")
    loaded = load_sources([Source("pod.yaml", text)])
    templates = [t for r in loaded.resources for t in pod_templates(r)]
    (verdict,) = check(model, templates)
    assert verdict.check == "allocatable" and "10.00 GiB" in verdict.message


def test_the_forked_lint_path_keeps_the_live_model(monkeypatch: pytest.MonkeyPatch):
    """``lint --jobs 2`` (the schema checks in a forked process): the cluster rules still run
    in the parent against ``LintOptions.cluster``, so the findings are those of one process."""
    import sys

    from mldiag_provision.lint import linter
    from mldiag_provision.lint.context import LintOptions
    from mldiag_provision.lint.loading import Source
    from mldiag_provision.lint.schema import default_version

    if sys.platform != "linux":
        pytest.skip("the split forks (Linux only)")
    monkeypatch.setattr(linter, "workers_for", lambda count, jobs: 2)
    model = from_live.model_of([_node("a", {"cloud.google.com/gke-nodepool": "p"},
                                      memory="10Gi", capacity_memory="12Gi")])
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec:\n"
           "  nodeSelector: {{cloud.google.com/gke-nodepool: p}}\n"
           "  containers: [{{name: c, image: i, resources: {{requests: {{memory: {m}}}}}}}]\n")
    sources = [Source(f"p{i}.yaml", pod.format(i=i, m="11Gi" if i % 2 else "1Gi"))
               for i in range(130)]
    options = LintOptions(default_version(), cluster=model)
    serial = linter.lint_sources(sources, options, jobs=1)
    split = linter.lint_sources(sources, options, jobs=2)
    rules = [(p.file, p.rule, p.path) for p in serial.problems if p.rule == "node-allocatable"]
    assert len(rules) == 65
    assert [(p.file, p.rule, p.path, p.message) for p in split.problems] == [
        (p.file, p.rule, p.path, p.message) for p in serial.problems]


def test_a_server_that_answers_not_as_kubernetes_is_named_so(tmp_path) -> None:
    """An address that answers 200 with an HTML page (a login page, a load balancer): the
    server was reached, so the message says it is not a Kubernetes API server (found by the
    issue 25 review: it said "cannot reach")."""
    import http.server
    import threading

    from mldiag_provision.cluster.from_live import from_kubeconfig
    from mldiag_provision.errors import EngineError

    class Html(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<html>login</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kc = tmp_path / "kc"
        kc.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{server.server_port}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
        try:
            from_kubeconfig(str(kc))
        except EngineError as exc:
            assert "not as a Kubernetes API server" in str(exc)
        else:
            raise AssertionError("an HTML answer was read as a cluster")
    finally:
        server.shutdown()
