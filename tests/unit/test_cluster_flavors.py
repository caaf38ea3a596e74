"""Kueue's flavor assignment in the cluster model's *admitted* step (rule ``kueue-flavor``).

Kueue gives each resource group a pod set uses one of the group's ResourceFlavors: the first
whose ``nodeTaints`` the pod tolerates and whose ``nodeLabels`` its nodeSelector and required
node affinity allow, read only through the label keys the group's flavors declare. With no
such flavor the workload is never admitted. Each test names its public source.
"""

from __future__ import annotations

from tests.lint.support import by_rule, lint, one

from mldiag_provision.cluster.affinity import Placement, matches, placement, restricted
from mldiag_provision.cluster.from_live import model_of
from mldiag_provision.cluster.kueue import cluster_queue, resource_flavors
from mldiag_provision.errors import Severity

# kubernetes-sigs/kueue#3710 (PBundyra's reproduction): flavors cpu {example.com/mode: cpu}
# and gpu {example.com/gpu: "true"} in one resource group
QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: cpu}
spec:
  nodeLabels: {example.com/mode: cpu}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gpu}
spec:
  nodeLabels: {example.com/gpu: "true"}%s
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [memory, cpu, nvidia.com/gpu]
    flavors:
    - name: cpu
      resources:
      - {name: memory, nominalQuota: 10000Gi}
      - {name: cpu, nominalQuota: 10000}
      - {name: nvidia.com/gpu, nominalQuota: 0}
    - name: gpu
      resources:
      - {name: memory, nominalQuota: 10000Gi}
      - {name: cpu, nominalQuota: 100000}
      - {name: nvidia.com/gpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {namespace: default, name: user-queue}
spec: {clusterQueue: cluster-queue}
"""

JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: jobset-big
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  replicatedJobs:
  - name: head
    template:
      spec:
        parallelism: 3
        completions: 3
        template:
          spec:
            nodeSelector: {%s}
%s            containers:
            - name: dummy-job
              image: gcr.io/k8s-staging-perf-tests/sleep:v0.1.0
              resources: {requests: {cpu: 1, memory: 200Mi}}
            restartPolicy: Never
"""


def _lint(selector: str, extra: str = "", flavor_extra: str = ""):
    return lint(QUEUE % flavor_extra, JOBSET % (selector, extra))


def test_a_selector_no_flavor_carries_is_never_admitted() -> None:
    """kubernetes-sigs/kueue#3710: "couldn't assign flavors to pod set head: flavor gpu
    doesn't match node affinity". A head pod set selecting example.com/gpu: "false" (a key
    the gpu flavor declares) matches neither flavor: cpu lacks the label, gpu has "true"."""
    p = one(_lint('example.com/gpu: "false"'), "kueue-flavor")
    assert p.severity is Severity.ERROR
    assert p.path == ("spec.replicatedJobs[0].template.spec.template.spec.nodeSelector")
    assert ("couldn't assign flavors to pod set head: flavor cpu doesn't match node "
            "affinity, flavor gpu doesn't match node affinity") in p.message
    assert "ClusterQueue cluster-queue" in p.message
    assert "gpu: example.com/gpu=true" in p.expected
    assert p.source == "https://kueue.sigs.k8s.io/docs/concepts/resource_flavor/"


def test_a_selector_on_a_key_no_flavor_declares_is_not_kueues_business() -> None:
    """kubernetes-sigs/kueue#3710 (the maintainer's reproduction was admitted): the head pod
    set selects example.com/cpu: "true", a key neither flavor declares, so Kueue drops it and
    the first flavor fits; and a pod set selecting the gpu flavor's own label is admitted."""
    assert by_rule(_lint('example.com/cpu: "true"'), "kueue-flavor") == []
    assert by_rule(_lint('example.com/gpu: "true"'), "kueue-flavor") == []
    assert by_rule(_lint(""), "kueue-flavor") == []


def test_required_node_affinity_counts_and_an_empty_term_matches_every_flavor() -> None:
    """Kueue's flavorSelector (pkg/scheduler/flavorassigner, https://github.com/
    kubernetes-sigs/kueue/blob/main/pkg/scheduler/flavorassigner/flavorassigner.go): terms
    are ORed; a term whose every expression is on a key no flavor declares is dropped and
    then matches any flavor."""
    notin = ("            affinity:\n              nodeAffinity:\n"
             "                requiredDuringSchedulingIgnoredDuringExecution:\n"
             "                  nodeSelectorTerms:\n"
             "                  - matchExpressions:\n"
             "                    - {key: example.com/mode, operator: NotIn, values: [cpu]}\n"
             "                    - {key: example.com/gpu, operator: DoesNotExist}\n")
    p = one(_lint("", notin), "kueue-flavor")
    assert p.path.endswith("template.spec.affinity.nodeAffinity")
    other = notin + "                  - matchExpressions:\n" \
        "                    - {key: cloud.google.com/gke-spot, operator: Exists}\n"
    assert by_rule(_lint("", other), "kueue-flavor") == []


def test_a_flavor_taint_the_pod_does_not_tolerate() -> None:
    """Kueue's ResourceFlavor page: a flavor's nodeTaints keep off workloads that do not
    tolerate them ("untolerated taint ... in flavor ..."), checked before the labels."""
    taint = "\n  nodeTaints: [{key: dedicated, value: ml, effect: NoSchedule}]"
    p = one(_lint('example.com/gpu: "true"', "", taint), "kueue-flavor")
    assert "untolerated taint dedicated=ml:NoSchedule in flavor gpu" in p.message
    tol = ("            tolerations: [{key: dedicated, operator: Equal, value: ml, "
           "effect: NoSchedule}]\n")
    assert by_rule(_lint('example.com/gpu: "true"', tol, taint), "kueue-flavor") == []


def test_a_queue_naming_a_flavor_the_manifests_do_not_define_is_not_judged() -> None:
    """The flavor may exist in the cluster already: without its labels nothing is judged."""
    queue = QUEUE.split("---\n", 2)[2]
    assert by_rule(lint(queue, JOBSET % ('example.com/gpu: "false"', "")),
                   "kueue-flavor") == []


def test_the_union_of_label_keys_is_read_per_resource_group() -> None:
    """kubernetes-sigs/kueue#12446: within one resource group the pod's affinity is filtered
    by the union of every flavor's label keys, then matched per flavor, so a flavor that does
    not declare a key is refused for a pod that selects it."""
    flavors = resource_flavors([
        {"metadata": {"name": "old"}, "spec": {"nodeLabels": {"pool": "a"}}},
        {"metadata": {"name": "new"}, "spec": {"nodeLabels": {"pool": "b", "tier": "x"}}},
    ])
    keys = {k for f in flavors for k in f.node_labels}
    view = restricted(Placement({"pool": "a", "tier": "x"}), keys)
    assert not matches(flavors[0].node_labels, view)  # old lacks tier
    assert not matches(flavors[1].node_labels, view)  # new has pool b
    assert matches(flavors[0].node_labels, restricted(Placement({"pool": "a"}), keys))


def test_placement_reads_selector_and_terms_and_kubernetes_operators() -> None:
    """Kubernetes' node affinity operators (assign-pod-node page): In, NotIn, Exists,
    DoesNotExist, Gt, Lt; an empty term matches no node."""
    p = placement({"nodeSelector": {"a": "1"}, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["3"]}]}]}}}})
    assert matches({"a": "1", "n": "4"}, p)
    assert not matches({"a": "1", "n": "3"}, p)
    assert not matches({"a": "2", "n": "4"}, p)
    assert not matches({"a": "1"}, Placement({}, ((),)))


def test_the_live_model_reads_flavors_and_groups() -> None:
    """``lint --cluster`` reads ResourceFlavors with the queues (from_live.model_of)."""
    cq = {"metadata": {"name": "cq"}, "spec": {"resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "a", "resources": []}]},
        {"coveredResources": ["google.com/tpu"], "flavors": [{"name": "b"}, {"name": "c"}]}]}}
    read = cluster_queue(cq)
    assert read is not None and read.groups == (
        (frozenset({"cpu"}), ("a",)), (frozenset({"google.com/tpu"}), ("b", "c")))
    model = model_of([], [cq], [], flavors=[
        {"metadata": {"name": "b"}, "spec": {"nodeTaints": [
            {"key": "k", "effect": "NoSchedule"}, {"effect": "NoSchedule"}]}}])
    flavor = model.resource_flavor("b")
    assert flavor is not None and [t.key for t in flavor.node_taints] == ["k"]
    assert model.resource_flavor("c") is None


def _pools_model(flavor_labels: dict[str, str]):
    """A live model of two node pools recorded from real GKE nodes (mldiag_provision/sandbox/
    recorded_nodes.yaml: n2-highmem-4 and n2-highmem-16 from 2i2c-org/infrastructure#2121),
    one queue whose single flavor carries ``flavor_labels``."""
    def node(pool: str, cpu: str, mem: str, alloc_cpu: str, alloc_mem: str) -> dict:
        return {"metadata": {"name": f"{pool}-0", "labels": {
            "cloud.google.com/gke-nodepool": pool}},
            "status": {"capacity": {"cpu": cpu, "memory": mem},
                       "allocatable": {"cpu": alloc_cpu, "memory": alloc_mem}}}
    cq = {"metadata": {"name": "cq"}, "spec": {"resourceGroups": [
        {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "small", "resources": [
            {"name": "cpu", "nominalQuota": 100}, {"name": "memory", "nominalQuota": "1Ti"}]}]}]}}
    lq = {"metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": "cq"}}
    return model_of([node("pool-a", "4", "32880872Ki", "3920m", "29085928Ki"),
                      node("pool-b", "16", "131919220Ki", "15890m", "122210676Ki")],
                    [cq], [lq], flavors=[{"metadata": {"name": "small"},
                                          "spec": {"nodeLabels": flavor_labels}}])


def test_kueue_binds_a_queued_pod_to_its_flavors_nodes() -> None:
    """Kueue's ResourceFlavor page: once admitted, "Kueue adds the ResourceFlavor labels to
    the .nodeSelector" of the pods (kubernetes-sigs/kueue#931 is the report of a user relying
    on it). A 30Gi pod fits pool-b's nodes, but its queue's only flavor selects pool-a
    (31.4 GiB machines, 27.7 GiB allocatable): it stays Pending there. Without the flavor's
    label it may land on pool-b."""
    from mldiag_provision.cluster.check import check
    from mldiag_provision.lint.loading import Resource
    from mldiag_provision.lint.workloads import pod_templates
    from mldiag_provision.recipe.sourcemap import SourceMap

    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "big", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"suspend": True, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{
                "name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": 1, "memory": "30Gi"}}}]}}}}
    templates = list(pod_templates(Resource("job.yaml", SourceMap(file="job.yaml"), job)))
    pinned = check(_pools_model({"cloud.google.com/gke-nodepool": "pool-a"}), templates)
    assert [v.check for v in pinned] == ["allocatable"]
    assert "Insufficient memory" in pinned[0].message
    assert check(_pools_model({}), templates) == []
