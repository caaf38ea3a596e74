"""The Google Cloud names a stack creates, each with the scope it must be unique in.

Two stacks in one project must never create a resource of the same kind and name in the
same scope: the second create fails (a service account: 409 ALREADY_EXISTS), and a destroy
of either deletes what the other uses. :func:`owned_names` lists what one stack creates, read
from its plan data (``StackPlan.to_dict()``, which is also what ``.mldiag/plan.json`` holds,
so the names an existing stack has come from its previous plan the same way). Resources the
stack only uses (an existing network, a service account the recipe names with ``create:
false``, the project's ``_Default`` log bucket) are not listed.

Kinds and scopes: ``catalog/data/names.yaml`` ``uniqueness`` (with sources).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

GKE_CLUSTERS = ("gke-autopilot", "gke-standard")
"""Cluster types whose cluster the stack creates (``existing-kubernetes`` uses one)."""


@dataclass(frozen=True, order=True)
class OwnedName:
    """One resource the stack creates.

    ``kind``: a key of names.yaml ``uniqueness``; ``scope``: where the name must be unique,
    e.g. ``global``, ``projects/P``, ``projects/P/locations/us-central1``,
    ``projects/P/locations/us-central1/routers/R``; ``name``: the resource's name or id;
    ``field``: where the plan holds it (``diagnostics.service_account.account_id``).
    """

    kind: str
    scope: str
    name: str
    field: str

    @property
    def key(self) -> tuple[str, str, str]:
        """What must differ between two stacks: (kind, scope, name)."""
        return (self.kind, self.scope, self.name)


def _get(doc: Any, *keys: str | int) -> Any:
    for key in keys:
        if isinstance(key, int):
            if not isinstance(doc, list) or key >= len(doc):
                return None
        elif not isinstance(doc, Mapping):
            return None
        doc = doc[key] if isinstance(key, int) else doc.get(key)
    return doc


def _path_parts(path: str) -> dict[str, str]:
    """``projects/P/locations/L/instances/N`` -> {projects: P, locations: L, instances: N}."""
    parts = path.split("/")
    return {parts[i]: parts[i + 1] for i in range(0, len(parts) - 1, 2)}


def owned_names(plan: Mapping[str, Any]) -> tuple[OwnedName, ...]:
    """Every name the stack of ``plan`` (plan.json data) creates, sorted. Missing or
    malformed parts (a plan.json of an older version) are skipped, never an error."""
    return tuple(sorted(set(_owned(plan))))


def _owned(plan: Mapping[str, Any]) -> Iterator[OwnedName]:
    """The names of every part of ``plan``: diagnostics, a GKE cluster the stack creates,
    node pools' workload policies, GPU networks and a Slurm cluster."""
    project = str(plan.get("project") or "")
    region = str(plan.get("region") or "")
    in_project = f"projects/{project}"
    in_region = f"{in_project}/locations/{region}"
    yield from _diagnostics(plan.get("diagnostics") or {}, in_project)
    cluster = plan.get("cluster") or {}
    if _get(cluster, "type") in GKE_CLUSTERS:
        yield from _gke_cluster(cluster, in_project, region)
    yield from _workload_policies(plan.get("node_pools") or (), in_region)
    yield from _gpu_networks(plan.get("gpu_networks") or (), in_project, in_region)
    slurm = plan.get("slurm")
    if isinstance(slurm, Mapping):
        yield from _slurm(slurm, in_project)


def _diagnostics(diag: Mapping[str, Any], in_project: str) -> Iterator[OwnedName]:
    """``plan["diagnostics"]``: the profiles bucket, the custom role and the workloads'
    service account, each when the stack creates it."""
    bucket = _get(diag, "profiles_bucket")
    if isinstance(bucket, Mapping) and bucket.get("create") and bucket.get("name"):
        yield OwnedName("gcsBucket", "global", str(bucket["name"]),
                        "diagnostics.profiles_bucket.name")
    if _get(diag, "iam", "mode") == "custom-role" and _get(diag, "iam", "custom_role_id"):
        yield OwnedName("customRole", in_project, str(diag["iam"]["custom_role_id"]),
                        "diagnostics.iam.custom_role_id")
    gsa = _get(diag, "service_account")
    if isinstance(gsa, Mapping) and gsa.get("create") and gsa.get("account_id"):
        yield OwnedName("serviceAccount", in_project, str(gsa["account_id"]),
                        "diagnostics.service_account.account_id")


def _gke_cluster(cluster: Mapping[str, Any], in_project: str,
                 region: str) -> Iterator[OwnedName]:
    """``plan["cluster"]`` of a cluster the stack creates: the cluster (in its location,
    else the stack's region), its nodes' service account and its private-cluster parts."""
    location = str(_get(cluster, "location") or region)
    yield OwnedName("gkeCluster", f"{in_project}/locations/{location}",
                    str(cluster.get("name")), "cluster.name")
    nsa = _get(cluster, "node_service_account")
    if isinstance(nsa, Mapping) and nsa.get("create") and nsa.get("account_id"):
        yield OwnedName("serviceAccount", in_project, str(nsa["account_id"]),
                        "cluster.node_service_account.account_id")
    private = _get(cluster, "private")
    if isinstance(private, Mapping):
        yield from _private_cluster(private, in_project, f"{in_project}/locations/{region}")


def _private_cluster(private: Mapping[str, Any], in_project: str,
                     in_region: str) -> Iterator[OwnedName]:
    """``cluster.private``: the Cloud Router (in the region), its NAT (in the router) and
    the webhook firewall rule (in the project)."""
    if private.get("router"):
        router = str(private["router"])
        yield OwnedName("computeRouter", in_region, router, "cluster.private.router")
        if private.get("nat"):
            yield OwnedName("routerNat", f"{in_region}/routers/{router}",
                            str(private["nat"]), "cluster.private.nat")
    if private.get("firewall"):
        yield OwnedName("computeFirewall", in_project, str(private["firewall"]),
                        "cluster.private.firewall")


def _workload_policies(pools: Iterable[Any], in_region: str) -> Iterator[OwnedName]:
    """``plan["node_pools"]``: the workload policy of each pool that has one (TPU7x)."""
    for i, pool in enumerate(pools):
        if isinstance(pool, Mapping) and pool.get("workload_policy"):
            # plan.json of older versions has no workload_policy_name: the module named the
            # policy <pool>-workload then
            name = pool.get("workload_policy_name") or f"{pool.get('name')}-workload"
            yield OwnedName("computeResourcePolicy", in_region, str(name),
                            f"node_pools[{i}].workload_policy_name")


def _gpu_networks(networks: Iterable[Any], in_project: str,
                  in_region: str) -> Iterator[OwnedName]:
    """``plan["gpu_networks"]``: each slice's extra VPCs, their internal firewall rules and
    their subnetworks."""
    for g in networks:
        for v in _get(g, "vpcs") or ():
            yield OwnedName("computeNetwork", in_project, str(v["name"]),
                            f"gpu_networks[{g.get('slice')}].vpcs")
            if v.get("firewall_cidr"):  # modules/network/gpu-vpcs: <network>-internal
                yield OwnedName("computeFirewall", in_project, f"{v['name']}-internal",
                                f"gpu_networks[{g.get('slice')}].vpcs")
            for sub in v.get("subnets") or ():
                yield OwnedName("computeSubnetwork", in_region, str(sub["name"]),
                                f"gpu_networks[{g.get('slice')}].vpcs.subnets")


def _slurm(slurm: Mapping[str, Any], in_project: str) -> Iterator[OwnedName]:
    location = str(slurm.get("location") or "")
    yield OwnedName("slurmCluster", f"{in_project}/locations/{location}",
                    str(slurm.get("cluster_id")), "slurm.cluster_id")
    net = slurm.get("network")
    if isinstance(net, Mapping) and net.get("create") and net.get("network"):
        # projects/P/global/networks/N
        yield OwnedName("computeNetwork", in_project, str(net["network"]).rsplit("/", 1)[-1],
                        "slurm.network.network")
    for st in slurm.get("storage") or ():
        if not (isinstance(st, Mapping) and st.get("create") and st.get("name")):
            continue
        kind, name = st.get("kind"), str(st["name"])
        if kind == "bucket":
            yield OwnedName("gcsBucket", "global", name, f"slurm.storage[{st.get('id')}].name")
        elif kind in ("filestore", "lustre"):
            parts = _path_parts(name)
            yield OwnedName(f"{kind}Instance",
                            f"{in_project}/locations/{parts.get('locations', '')}",
                            parts.get("instances", name), f"slurm.storage[{st.get('id')}].name")
