"""Preflight rule ``gcp-names``: every Google Cloud name the tool derives from the recipe
fits its limit, checked before anything is rendered (Google or the provider would refuse
it only at plan or apply time).

The names come from :mod:`mldiag_provision.plan.names` (the same functions plan/ uses), the
limits from ``catalog/data/names.yaml`` (each with its source and confidence: unverified
limits only warn). Each problem points at the recipe field that sets the name, so the hint
can say what to shorten. Names the user writes in full are checked where they are read
(``diagnostics``, ``engine``, ``slurm-*``) against the same limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from mldiag_provision.catalog.names import NameLimit, load_name_limits
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.orchestrators import Capability
from mldiag_provision.plan import names
from mldiag_provision.preflight.context import Context, rule
from mldiag_provision.recipe.sourcemap import Path

RULE = "gcp-names"


class DerivedName(NamedTuple):
    """A name and where it comes from: ``path`` is the recipe field the problem points at;
    ``made_of`` says how the name is built; ``hint`` what to change. (A named tuple: some
    five per recipe, and a tuple is made several times faster than a frozen dataclass.)"""

    kind: str  # key in names.yaml
    value: str
    path: Path
    made_of: str
    hint: str


def derived_names(ctx: Context) -> Iterator[DerivedName]:
    """Every name the rendered stack will create (or look up) that the recipe does not spell
    out in full, for the recipe's orchestrator."""
    yield from _stack_names(ctx)
    cluster = _ClusterName.of(ctx)
    if ctx.has(Capability.MANAGED_SLURM):
        yield from _slurm_names(ctx, cluster)
        return
    yield from _workload_account_names(ctx)
    if not ctx.has(Capability.CREATES_CLUSTER):
        return
    yield from _gke_cluster_names(ctx, cluster)
    if ctx.has(Capability.NODE_POOLS):
        yield from _node_pool_names(ctx, cluster)


class _ClusterName(NamedTuple):
    """The cluster's name (``value``), the recipe field that gives it (``path``) and that
    field in words (``field``): ``orchestrator.clusterName`` when set, else
    ``metadata.name``."""

    value: str
    path: Path
    field: str

    @staticmethod
    def of(ctx: Context) -> _ClusterName:
        name = ctx.recipe.spec.orchestrator.cluster_name
        if name:
            return _ClusterName(name, ("spec", "orchestrator", "clusterName"),
                                "orchestrator.clusterName")
        return _ClusterName(ctx.recipe.metadata.name, ("metadata", "name"), "metadata.name")


def _stack_names(ctx: Context) -> Iterator[DerivedName]:
    """Names of every stack: the default profiles bucket, the stack label's value and the
    custom role's id (given or derived)."""
    spec = ctx.recipe.spec
    meta = ctx.recipe.metadata
    diag = spec.diagnostics
    if diag.profiles_bucket.name is None:
        bucket = names.default_profiles_bucket(spec.project, meta.name)
        yield DerivedName(
            "gcsBucket", bucket, ("spec", "diagnostics", "profilesBucket", "name"),
            "the default profiles bucket '<spec.project>-<metadata.name>-profiles'",
            "set diagnostics.profilesBucket.name to a shorter bucket name, or shorten "
            "metadata.name")
    yield DerivedName("labelValue", meta.name, ("metadata", "name"),
                      "the label mldiag-stack=<metadata.name> on every resource",
                      "shorten metadata.name")
    if diag.iam.mode == "custom-role":
        if diag.iam.custom_role_id:
            yield DerivedName("customRoleId", diag.iam.custom_role_id,
                              ("spec", "diagnostics", "iam", "customRoleId"),
                              "the custom role", "choose another diagnostics.iam.customRoleId")
        else:
            yield DerivedName("customRoleId", names.custom_role_id(meta.name),
                              ("metadata", "name"),
                              "the custom role 'mlDiagnostics_<metadata.name>'",
                              "set diagnostics.iam.customRoleId, or shorten metadata.name")


def _slurm_names(ctx: Context, cluster: _ClusterName) -> Iterator[DerivedName]:
    """A managed-Slurm stack's names: the Cluster Director cluster id, a new network's name
    and each new Filestore/Lustre instance's name left to the default."""
    spec = ctx.recipe.spec
    yield DerivedName("slurmId", cluster.value, cluster.path,
                      f"the Cluster Director cluster id (<{cluster.field}>)",
                      f"shorten {cluster.field}")
    net = spec.slurm.network
    if net.create and net.name is None:
        yield DerivedName("computeResource", names.slurm_network_name(cluster.value),
                          ("spec", "slurm", "network", "name"),
                          f"the new network '<{cluster.field}>-net'",
                          f"set slurm.network.name, or shorten {cluster.field}")
    for i, st in enumerate(spec.slurm.storage):
        for kind, cfg in (("filestoreInstance", st.filestore), ("lustreInstance", st.lustre)):
            if cfg is not None and cfg.create and cfg.name is None:
                field = "filestore" if kind == "filestoreInstance" else "lustre"
                yield DerivedName(
                    kind, names.slurm_instance_name(cluster.value, st.id),
                    ("spec", "slurm", "storage", i, field, "name"),
                    f"the new instance '<{cluster.field}>-<storage id>'",
                    f"set slurm.storage[{i}].{field}.name, or use a shorter storage id "
                    f"or {cluster.field}")


def _workload_account_names(ctx: Context) -> Iterator[DerivedName]:
    """The workload's Google service account id, when the stack creates it (given or
    derived from metadata.name)."""
    sa = ctx.recipe.spec.diagnostics.service_account
    if not sa.create:
        return
    if sa.name:
        yield DerivedName("serviceAccountId", sa.name,
                          ("spec", "diagnostics", "serviceAccount", "name"),
                          "the workload's Google service account",
                          "choose another diagnostics.serviceAccount.name")
    else:
        yield DerivedName("serviceAccountId",
                          names.workload_service_account_id(ctx.recipe.metadata.name),
                          ("metadata", "name"),
                          "the workload's Google service account "
                          "'<metadata.name>-workload'",
                          "set diagnostics.serviceAccount.name")


def _gke_cluster_names(ctx: Context, cluster: _ClusterName) -> Iterator[DerivedName]:
    """A created GKE cluster's name, and its node service account's id when derived."""
    yield DerivedName("gkeCluster", cluster.value, cluster.path,
                      f"the GKE cluster (<{cluster.field}>)", f"shorten {cluster.field}")
    if ctx.recipe.spec.orchestrator.node_service_account is None:
        yield DerivedName("serviceAccountId", names.node_service_account_id(cluster.value),
                          cluster.path, f"the node service account '<{cluster.field}>-nodes'",
                          f"shorten {cluster.field}")


def _node_pool_names(ctx: Context, cluster: _ClusterName) -> Iterator[DerivedName]:
    """Each slice's node pool names (one per slice of a multislice) and, for a multi-host
    slice placed by a workload policy (TPU7x), each pool's workload policy name."""
    for i, s in enumerate(ctx.recipe.spec.slices):
        pools = names.node_pool_names(s.name, s.count)
        for pool in pools:
            yield DerivedName("gkeNodePool", pool, ("spec", "slices", i, "name"),
                              "a node pool" + (" ('<slice name>-<i>', one per slice of "
                                               "the multislice)" if s.count > 1
                                               else " (the slice name)"),
                              "shorten the slice name")
        shape = ctx.shapes.get(i)
        if (shape is not None and shape.multi_host
                and shape.version.multi_host_placement == "workload-policy"):
            for pool in pools:
                yield DerivedName("computeResource",
                                  names.workload_policy_name(cluster.value, pool),
                                  ("spec", "slices", i, "name"),
                                  f"the TPU7x workload policy '<{cluster.field}>-<node "
                                  "pool>-workload'",
                                  "shorten the slice name")


def _problem(ctx: Context, limit: NameLimit, name: DerivedName, why: str) -> Problem:
    return ctx.problem(
        RULE, name.path,
        f"{name.made_of} would be the {limit.what} '{name.value}': {why}",
        value=name.value, expected=limit.describe(), hint=name.hint, source=limit.source,
        severity=Severity.ERROR if limit.verified else Severity.WARNING, prefer_value=False)


@rule(RULE)
def gcp_names(ctx: Context) -> Iterator[Problem]:
    """Each derived name fits its Google Cloud limit (catalog/data/names.yaml)."""
    limits = load_name_limits()
    # one problem per field and kind of name: the longest offender (a multislice of N gives
    # N pool names from one slice name)
    worst: dict[tuple[str, Path], tuple[DerivedName, str]] = {}
    for name in derived_names(ctx):
        why = limits[name.kind].why_invalid(name.value)
        key = (name.kind, name.path)
        if why and (key not in worst or len(name.value) > len(worst[key][0].value)):
            worst[key] = (name, why)
    for name, why in worst.values():
        yield _problem(ctx, limits[name.kind], name, why)
