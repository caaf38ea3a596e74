"""Preflight rules for Cluster Director managed Slurm (``orchestrator.type: slurm``).

Facts come from ``catalog/data/slurm.yaml`` and gpu.yaml's ``clusterDirectorSlurm``; each
problem names its source. The recipe is read through :mod:`mldiag_provision.recipe.slurm`,
so these rules see the same node sets and partitions (defaults applied) that plan/ renders.
Every rule except ``slurm-orchestrator`` and ``slurm-capacity`` returns at once for other
orchestrators, and the facts are only loaded for Slurm recipes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lazyre import lazy
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule
from mldiag_provision.preflight.stack_rules import bucket_name_problem, bucket_rule
from mldiag_provision.recipe import slurm as view
from mldiag_provision.suggest import suggest

if TYPE_CHECKING:
    from mldiag_provision.catalog.slurm import SlurmFacts
    from mldiag_provision.recipe.model import (
        Slice,
        SlurmFilestore,
        SlurmLustre,
        SlurmNodeSet,
        SlurmStorage,
    )

_SHELL_NAME = lazy(r"^[A-Za-z_][A-Za-z0-9_]*$")
# An absolute directory path without shell or Slurm metacharacters.
_MOUNT = lazy(r"^/[A-Za-z0-9._/-]*$")
_GCE_NAME = lazy(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_NETWORK_PATH = lazy(r"^projects/[a-z][-a-z0-9.:]*[a-z0-9]/global/networks/"
                           r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_SUBNET_PATH = lazy(r"^projects/[a-z][-a-z0-9.:]*[a-z0-9]/regions/[a-z]+-[a-z]+[0-9]+/"
                          r"subnetworks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_INSTANCE_PATH = lazy(r"^projects/[a-z][-a-z0-9.:]*[a-z0-9]/locations/[a-z0-9-]+/"
                            r"instances/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_EMAIL = lazy(r"^[a-z0-9][-a-z0-9._]*@[a-z0-9][-a-z0-9.]*\.[a-z]+$")
# The node-set startup script the module renders around the user's script (the user's part
# is carried base64-encoded: 4/3 of its size) must stay under the API's 256 KiB.
_WRAPPER_BYTES = 8192


def _slurm(ctx: Context) -> bool:
    return ctx.has(Capability.MANAGED_SLURM)


def _facts() -> SlurmFacts:
    """The managed-Slurm facts, loaded lazily: only Slurm recipes pay for the YAML."""
    from mldiag_provision.catalog.slurm import load_slurm_facts

    return load_slurm_facts()


def _given(ctx: Context, *path: str | int) -> bool:
    """Whether the user wrote this key (defaults are not 'given')."""
    return ctx.sourcemap.has_key(tuple(path))


@rule("slurm-orchestrator")
def orchestrator(ctx: Context) -> Iterator[Problem]:
    """spec.slurm only with orchestrator slurm; a Slurm cluster lives in one zone; GKE-only
    settings and agents do not apply."""
    if not _slurm(ctx):
        yield from _slurm_settings_ignored(ctx)
        return
    facts = _facts()
    yield from _cluster_zone(ctx, facts)
    yield from _gke_settings_ignored(ctx)
    yield from _login_zone(ctx, facts)
    yield from _kubernetes_agents(ctx, facts)
    yield from _node_identity(ctx)


def _slurm_settings_ignored(ctx: Context) -> Iterator[Problem]:
    """A warning at ``spec.slurm`` when the orchestrator is not Slurm (nothing reads it)."""
    if _given(ctx, "spec", "slurm"):
        yield ctx.problem("slurm-orchestrator", ("spec", "slurm"),
                          f"spec.slurm is only read when orchestrator.type is slurm "
                          f"(here: {ctx.recipe.spec.orchestrator.type})",
                          severity=Severity.WARNING, prefer_value=False,
                          hint="remove spec.slurm, or set orchestrator.type: slurm")


def _cluster_zone(ctx: Context, facts: SlurmFacts) -> Iterator[Problem]:
    """An error when ``spec.zone`` is missing: a Slurm cluster lives in one zone
    (slurm.yaml ``cluster.oneZone``)."""
    spec = ctx.recipe.spec
    if not spec.zone:
        fact = facts.fact("cluster", "oneZone")
        yield ctx.problem("slurm-orchestrator", ("spec", "zone"),
                          "a Slurm cluster needs spec.zone: its login nodes, node sets, "
                          "Filestore and Lustre live in one zone",
                          expected=f"a zone of {spec.region} that offers the node machine types",
                          hint=f"add 'zone: {spec.region}-b' (or the zone of your reservation)",
                          source=fact)


# GKE settings of spec.orchestrator a Slurm cluster ignores: key -> the Slurm field instead
_GKE_ONLY = (("releaseChannel", None), ("minVersion", None), ("systemPoolMachineType", None),
             ("workloadIdentity", None), ("network", "spec.slurm.network.name"),
             ("subnetwork", "spec.slurm.network.subnetwork"))


def _gke_settings_ignored(ctx: Context) -> Iterator[Problem]:
    """A warning at each GKE-only ``spec.orchestrator`` key the recipe gives (:data:`_GKE_ONLY`),
    in that order."""
    for key, instead in _GKE_ONLY:
        if _given(ctx, "spec", "orchestrator", key):
            yield ctx.problem("slurm-orchestrator", ("spec", "orchestrator", key),
                              f"orchestrator.{key} is a GKE setting; a Slurm cluster ignores it",
                              severity=Severity.WARNING, prefer_value=False,
                              hint=f"use {instead}" if instead else f"remove {key}")


def _login_zone(ctx: Context, facts: SlurmFacts) -> Iterator[Problem]:
    """An error when ``loginNodes.zone`` differs from ``spec.zone`` (slurm.yaml
    ``cluster.oneZone``)."""
    spec = ctx.recipe.spec
    login_zone = spec.slurm.login_nodes.zone
    if spec.zone and login_zone is not None and login_zone != spec.zone:
        fact = facts.fact("cluster", "oneZone")
        yield ctx.problem("slurm-orchestrator", ("spec", "slurm", "loginNodes", "zone"),
                          f"login nodes in {login_zone}, but the cluster is in {spec.zone}: "
                          "every resource of the cluster must be in one zone",
                          value=login_zone, expected=spec.zone, source=fact,
                          hint="remove loginNodes.zone (it defaults to spec.zone)")


def _kubernetes_agents(ctx: Context, facts: SlurmFacts) -> Iterator[Problem]:
    """A warning when diagnostics asks for the Kubernetes agents (``managed``/``manual``):
    on Slurm only the SDK exists (slurm.yaml ``sdk.package``)."""
    diagnostics = ctx.recipe.spec.diagnostics
    agents = diagnostics.agents
    if diagnostics.enabled and agents in ("managed", "manual"):
        fact = facts.fact("sdk", "package")
        yield ctx.problem("slurm-orchestrator", ("spec", "diagnostics", "agents"),
                          f"diagnostics.agents '{agents}' installs Kubernetes components; on "
                          "Slurm nothing but the SDK exists, and the node startup script "
                          "installs it", value=agents, expected="auto or none",
                          severity=Severity.WARNING, source=fact,
                          hint="use 'auto'")


def _node_identity(ctx: Context) -> Iterator[Problem]:
    """The nodes' service account: an error when ``nodeServiceAccount`` is not an email; with
    diagnostics on, a warning (a note when the recipe waives :data:`DEFAULT_SA_POLICY`) that
    the ML Diagnostics roles go project-wide to that account (the Cluster Director API has no
    field for the nodes' identity: slurm.yaml, L)."""
    spec = ctx.recipe.spec
    sa = spec.slurm.node_service_account
    if sa is not None and not _EMAIL.match(sa):
        yield ctx.problem("slurm-orchestrator", ("spec", "slurm", "nodeServiceAccount"),
                          f"'{sa}' is not a service account email", value=sa,
                          expected="NAME@PROJECT.iam.gserviceaccount.com")
    if spec.diagnostics.enabled and spec.diagnostics.agents != "none":
        who = sa or "the project's Compute Engine default service account"
        waived = _default_sa_waiver(ctx) if sa is None else None
        yield ctx.problem(
            "slurm-orchestrator", ("spec", "slurm") if sa is None
            else ("spec", "slurm", "nodeServiceAccount"),
            f"the ML Diagnostics roles are granted project-wide to {who}: every VM running "
            "as it can then write MLRuns, logs and objects in every bucket of the project"
            + ("" if sa is None else "; and the cluster API cannot make the nodes run as "
               "this account, so check that they do")
            + (f"; accepted in spec.policy.waivers ({DEFAULT_SA_POLICY}): {waived}"
               if waived else ""),
            # the recipe's waiver of the policy rule on the same grant, with its reason, is
            # the recorded decision: a note then, not a warning
            severity=Severity.INFO if waived else Severity.WARNING, value=sa,
            hint="use a dedicated project for the cluster, or narrow the storage grant to "
                 "the profiles bucket after apply")


# The policy gate's rule on the same grant (policies/mldiag/default_sa.rego: Slurm nodes run
# as the Compute Engine default service account, which the stack grants the workload roles).
DEFAULT_SA_POLICY = "no-default-compute-sa"


def _default_sa_waiver(ctx: Context) -> str | None:
    """The reason of the recipe's ``spec.policy.waivers`` entry for
    :data:`DEFAULT_SA_POLICY`, or None. Only that one rule: a waiver of another policy rule
    says nothing about this grant."""
    policy = ctx.recipe.spec.policy
    for w in policy.waivers if policy is not None else ():
        if w.rule == DEFAULT_SA_POLICY:
            return " ".join(w.reason.split())
    return None


@rule("slurm-tpu")
def tpu_on_slurm(ctx: Context) -> Iterator[Problem]:
    """TPU slices cannot run on managed Slurm: it schedules Compute Engine GPU and CPU VMs."""
    if not _slurm(ctx):
        return
    facts = _facts()
    tpu_fact = facts.managed["tpuSupported"]
    for i, s in enumerate(ctx.recipe.spec.slices):
        if s.tpu is None:
            continue
        yield ctx.problem(
            "slurm-tpu", ("spec", "slices", i, "tpu"),
            f"slice '{s.name}' asks for TPU {s.tpu}, but Cluster Director managed Slurm runs "
            "on Compute Engine GPU and CPU machines: its node sets take no TPU (the API's "
            "compute resources are machine types of "
            + ", ".join(facts.node_machine_types()) + ")",
            value=s.tpu, expected="a GPU slice: gpu + machineType + nodes",
            # an error whatever the fact's confidence: the Slurm blueprint renders GPU and
            # CPU node sets only, so the tool cannot build this recipe (the fact is cited)
            source=_facts().source_url(str(tpu_fact["source"])),
            hint="run TPU slices with orchestrator.type gke-standard or gke-autopilot")


def _slice_gpu_machines(gpu: str | None) -> list[str]:
    from mldiag_provision.catalog.gpu import load_gpu_catalog

    g = load_gpu_catalog().gpu(gpu) if gpu else None
    return [m.name for m in g.machines.values() if m.slurm] if g else []


@rule("slurm-machine-type")
def machine_types(ctx: Context) -> Iterator[Problem]:
    """Node sets use a machine type managed Slurm supports; login nodes an N2 standard type
    of at most 32 vCPUs."""
    if not _slurm(ctx):
        return
    facts = _facts()
    for v in view.node_sets(ctx.recipe):
        yield from _node_set_machine_type(ctx, facts, v)
    yield from _login_machine_type(ctx, facts)


def _node_set_machine_type(ctx: Context, facts: SlurmFacts, v: view.NodeSetView
                           ) -> Iterator[Problem]:
    """The machine type of one node set ``v``: given twice (a slice and a machineType), missing,
    or not one managed Slurm offers (slurm.yaml ``managed.supportedMachineTypes``). A TPU
    slice's node set is ``slurm-tpu``'s."""
    spec = ctx.recipe.spec
    ns = spec.slurm.node_sets[v.index] if v.index is not None else None
    if ns is not None and ns.slice is not None and ns.machine_type is not None:
        yield ctx.problem("slurm-machine-type", (*v.path, "machineType"),
                          f"node set '{v.id}' names a slice and a machine type; the "
                          "slice's machine type is used", value=ns.machine_type,
                          hint="remove machineType here, or set it on the slice")
        return
    sl = spec.slices[v.slice_index] if v.slice_index is not None else None
    if sl is not None and sl.tpu is not None:
        return  # slurm-tpu
    if v.machine_type is None:
        yield from _missing_machine_type(ctx, facts, v, sl, ns)
    elif not facts.node_machine_ok(v.machine_type):
        yield from _unoffered_machine_type(ctx, facts, v, v.machine_type, sl, ns)


def _missing_machine_type(ctx: Context, facts: SlurmFacts, v: view.NodeSetView,
                          sl: Slice | None, ns: SlurmNodeSet | None
                          ) -> Iterator[Problem]:
    """A node set without a machine type: at its GPU slice ``sl`` (expecting that GPU's Slurm
    machine types), else at the node set ``ns`` that names neither slice nor machine type."""
    if sl is not None and v.slice_index is not None:  # sl is set only with an index
        machines = _slice_gpu_machines(sl.gpu)
        yield ctx.problem(
            "slurm-machine-type", ("spec", "slices", v.slice_index, "machineType"),
            f"GPU slice '{sl.name}' needs a machine type on Slurm (its node set "
            f"'{v.id}')", expected=", ".join(machines) or ", ".join(
                facts.node_machine_types()),
            hint=f"add 'machineType: {machines[0]}'" if machines else None,
            source=facts.managed["supportedMachineTypes"])
    elif ns is not None and ns.slice is None:
        yield ctx.problem("slurm-machine-type", v.path,
                          f"node set '{v.id}' needs a slice or a machineType",
                          expected="slice: GPU_SLICE, or machineType: n2-standard-8",
                          prefer_value=False)


def _unoffered_machine_type(ctx: Context, facts: SlurmFacts, v: view.NodeSetView,
                            machine_type: str, sl: Slice | None, ns: SlurmNodeSet | None
                            ) -> Iterator[Problem]:
    """An error for ``machine_type`` that managed Slurm does not offer, at the slice's field
    when the node set takes it from its slice, else at the node set's; the hint names the
    slice GPU's Slurm machine types, else the nearest offered one."""
    path = (("spec", "slices", v.slice_index, "machineType") if v.index is None
            or (ns is not None and ns.slice is not None)
            else (*v.path, "machineType"))
    same_gpu = _slice_gpu_machines(sl.gpu) if sl is not None else []
    yield ctx.problem(
        "slurm-machine-type", path,
        f"machine type '{machine_type}' is not offered by Cluster Director managed "
        "Slurm", value=machine_type,
        expected=", ".join(facts.node_machine_types()),
        hint=(f"for {sl.gpu} use {', '.join(same_gpu)}" if sl is not None and same_gpu
              else suggest(machine_type, [m for m in facts.node_machine_types()
                                          if "*" not in m])),
        source=facts.managed["supportedMachineTypes"])


def _login_machine_type(ctx: Context, facts: SlurmFacts) -> Iterator[Problem]:
    """Login nodes on an N2 standard machine type of at most 32 vCPUs (slurm.yaml
    ``managed.loginNodeMachineTypes``)."""
    login = ctx.recipe.spec.slurm.login_nodes
    allowed = facts.login_machine_types()
    if login.machine_type not in allowed:
        fact = facts.managed["loginNodeMachineTypes"]
        yield ctx.problem(
            "slurm-machine-type", ("spec", "slurm", "loginNodes", "machineType"),
            f"login nodes run on N2 standard machine types of at most 32 vCPUs; "
            f"'{login.machine_type}' is not one", value=login.machine_type,
            expected=", ".join(allowed), source=fact,
            hint=suggest(login.machine_type, allowed) or f"use {allowed[1]}")


@rule("slurm-node-count")
def node_counts(ctx: Context) -> Iterator[Problem]:
    """Every node set has nodes, enough for its slice; A4X counts are multiples of 18."""
    if not _slurm(ctx):
        return
    facts = _facts()
    multiple, msource = facts.a4x_multiple()
    spec = ctx.recipe.spec
    for v in view.node_sets(ctx.recipe):
        sl = spec.slices[v.slice_index] if v.slice_index is not None else None
        dynamic = v.max_dynamic_node_count or 0
        base = v.path if v.index is not None else ("spec", "slices", v.slice_index)
        count_key = "staticNodeCount" if v.index is not None else "nodes"
        if v.static_node_count + dynamic == 0:
            yield ctx.problem("slurm-node-count", (*base, count_key),
                              f"node set '{v.id}' has no nodes: staticNodeCount and "
                              "maxDynamicNodeCount are both 0", value=0,
                              expected="at least 1 static or dynamic node")
        elif sl is not None and sl.gpu is not None and v.static_node_count + dynamic < (
                sl.nodes or 1):
            yield ctx.problem("slurm-node-count", (*base, count_key),
                              f"node set '{v.id}' can have at most "
                              f"{v.static_node_count + dynamic} nodes, but slice '{sl.name}' "
                              f"runs its workloads on {sl.nodes or 1}",
                              value=v.static_node_count,
                              expected=f"staticNodeCount + maxDynamicNodeCount >= {sl.nodes}",
                              hint="raise staticNodeCount or maxDynamicNodeCount")
        if v.machine_type is not None and v.machine_type.startswith("a4x-"):
            for key, n in ((count_key, v.static_node_count),
                           ("maxDynamicNodeCount", v.max_dynamic_node_count)):
                if n and n % multiple:
                    yield ctx.problem(
                        "slurm-node-count", (*base, key) if key != "maxDynamicNodeCount"
                        else (*v.path, key),
                        f"A4X ({v.machine_type}) node sets come in whole NVLink domains of "
                        f"{multiple} VMs; {n} is not a multiple of {multiple}", value=n,
                        expected=f"a multiple of {multiple} ({multiple}, {2 * multiple}, ...)",
                        source=facts.source_url(msource),
                        hint=f"use {max(multiple, n - n % multiple)} or "
                             f"{n - n % multiple + multiple}")


@rule("slurm-ids")
def ids(ctx: Context) -> Iterator[Problem]:
    """Node set, partition and storage ids are unique; node sets name existing GPU slices."""
    if not _slurm(ctx):
        return
    facts = _facts()
    fact = facts.fact("cluster", "ids")
    sspec = ctx.recipe.spec.slurm
    slices = [s.name for s in ctx.recipe.spec.slices]
    named: dict[str, int] = {}
    for i, ns in enumerate(sspec.node_sets):
        if ns.slice is None:
            continue
        if ns.slice not in slices:
            yield ctx.problem("slurm-ids", ("spec", "slurm", "nodeSets", i, "slice"),
                              f"no slice named '{ns.slice}'", value=ns.slice,
                              expected="one of: " + ", ".join(slices),
                              hint=suggest(ns.slice, slices))
        elif ns.slice in named:
            yield ctx.problem("slurm-ids", ("spec", "slurm", "nodeSets", i, "slice"),
                              f"slice '{ns.slice}' already has node set "
                              f"nodeSets[{named[ns.slice]}]", value=ns.slice,
                              hint="one node set per slice; add nodes to the slice instead")
        named.setdefault(ns.slice, i)
    groups = (("node set", [(v.id, v.path) for v in view.node_sets(ctx.recipe)]),
              ("partition", [(p.id, ("spec", "slurm", "partitions", i))
                             for i, p in enumerate(sspec.partitions)]),
              ("storage", [(s.id, ("spec", "slurm", "storage", i))
                           for i, s in enumerate(sspec.storage)]))
    for what, entries in groups:
        seen: set[str] = set()
        for ident, path in entries:
            where = (*path, "name") if path[1] == "slices" else (*path, "id")
            if ident in seen:
                yield ctx.problem("slurm-ids", where, f"{what} id '{ident}' is used twice",
                                  value=ident, source=fact,
                                  hint=f"give every {what} its own id"
                                  + (" (a GPU slice without a node set gets one named after "
                                     "it)" if what == "node set" else ""))
            seen.add(ident)
            if what != "storage" and "-" in ident:
                yield ctx.problem(
                    "slurm-ids", where,
                    f"{what} id '{ident}' has a hyphen; the API describes ids as lower-case "
                    "alphanumeric and Google's examples use none for node sets and partitions",
                    value=ident, severity=Severity.WARNING, source=fact,
                    hint=f"use '{ident.replace('-', '')}'")


@rule("slurm-partitions")
def partitions(ctx: Context) -> Iterator[Problem]:
    """Partitions name existing node sets; more than one partition needs a default one."""
    if not _slurm(ctx):
        return
    facts = _facts()
    sspec = ctx.recipe.spec.slurm
    views = view.node_sets(ctx.recipe)
    ids_ = [v.id for v in views]
    parts = view.partitions(ctx.recipe, views)
    ref_fact = facts.fact("cluster", "partitionNodeSets")
    for p in parts:
        if p.index is None:
            continue
        for j, ref in enumerate(p.node_sets):
            if ref not in ids_:
                yield ctx.problem(
                    "slurm-partitions", ("spec", "slurm", "partitions", p.index, "nodeSets", j),
                    f"partition '{p.id}' names node set '{ref}', which does not exist",
                    value=ref, expected="one of: " + ", ".join(ids_),
                    hint=suggest(ref, ids_) or "GPU slices without a node set entry get a "
                                               "node set named after the slice",
                    source=ref_fact)
    default_fact = facts.fact("cluster", "defaultPartition")
    pids = [p.id for p in parts]
    if sspec.default_partition is not None and sspec.default_partition not in pids:
        yield ctx.problem("slurm-partitions", ("spec", "slurm", "defaultPartition"),
                          f"no partition named '{sspec.default_partition}'",
                          value=sspec.default_partition, expected="one of: " + ", ".join(pids),
                          hint=suggest(sspec.default_partition, pids),
                          source=default_fact)
    elif sspec.default_partition is None and sspec.partitions and len(parts) > 1:
        yield ctx.problem("slurm-partitions", ("spec", "slurm", "partitions"),
                          f"{len(parts)} partitions and no defaultPartition: jobs submitted "
                          "without --partition need one", prefer_value=False,
                          expected="defaultPartition: one of " + ", ".join(pids),
                          hint=f"add 'defaultPartition: {pids[0]}' under spec.slurm",
                          source=default_fact)
    covered = {ref for p in parts for ref in p.node_sets}
    for v in views:
        if v.id not in covered:
            yield ctx.problem("slurm-partitions", v.path,
                              f"node set '{v.id}' is in no partition: no job can run on it",
                              severity=Severity.WARNING, prefer_value=False,
                              hint=f"add '{v.id}' to a partition's nodeSets")


@rule("slurm-storage")
def storage(ctx: Context) -> Iterator[Problem]:
    """Each storage resource is one Filestore, Lustre or bucket within the API's limits;
    mounts are absolute and unique; node sets mount storage that exists; /home is shared."""
    if not _slurm(ctx):
        return
    facts = _facts()
    sspec = ctx.recipe.spec.slurm
    mounts: dict[str, int] = {}
    for i, st in enumerate(sspec.storage):
        base = ("spec", "slurm", "storage", i)
        yield from _storage_kind(ctx, base, st)
        yield from _storage_mount(ctx, base, st.mount, mounts)
        mounts.setdefault(st.mount, i)
        if st.filestore is not None:
            yield from _filestore(ctx, facts, (*base, "filestore"), st.filestore)
        if st.lustre is not None:
            yield from _lustre(ctx, facts, (*base, "lustre"), st.lustre)
        if st.bucket is not None:
            why = bucket_name_problem(st.bucket.name)
            if why:
                yield ctx.problem("slurm-storage", (*base, "bucket", "name"),
                                  f"'{st.bucket.name}' is not a bucket name: {why}",
                                  value=st.bucket.name, expected=bucket_rule(),
                                  source="https://cloud.google.com/storage/docs/buckets#naming")
    yield from _storage_refs(ctx)
    if not any(st.filestore is not None and st.mount.rstrip("/") == "/home"
               for st in sspec.storage):
        fact = facts.fact("storage", "homeOnFilestore")
        yield ctx.problem("slurm-storage", ("spec", "slurm", "storage"),
                          "no Filestore is mounted at /home; the shared /home every node "
                          "needs comes from a Filestore instance", severity=Severity.WARNING,
                          prefer_value=False, source=fact,
                          hint="add {id: home, mount: /home, filestore: {tier: ZONAL, "
                               "capacityGb: 1024}} to spec.slurm.storage")


def _storage_kind(ctx: Context, base: tuple[Any, ...], st: SlurmStorage) -> Iterator[Problem]:
    """An error unless the storage entry at ``base`` is exactly one of filestore, lustre and
    bucket (at its second kind when it has several)."""
    kinds = [k for k in ("filestore", "lustre", "bucket") if getattr(st, k) is not None]
    if len(kinds) != 1:
        yield ctx.problem("slurm-storage", base if not kinds else (*base, kinds[1]),
                          f"storage '{st.id}' must be exactly one of filestore, lustre "
                          f"and bucket (has {', '.join(kinds) or 'none'})",
                          prefer_value=False, expected="one of filestore, lustre, bucket",
                          hint="split it into one storage entry per kind")


def _storage_mount(ctx: Context, base: tuple[Any, ...], mount: str, mounts: dict[str, int]
                   ) -> Iterator[Problem]:
    """An error when ``mount`` is not an absolute directory path without ``..``, else when an
    earlier entry already mounts there (``mounts``: mount point -> first storage index)."""
    if not _MOUNT.match(mount) or "/../" in mount + "/" or mount.endswith("/.."):
        yield ctx.problem("slurm-storage", (*base, "mount"),
                          f"mount '{mount}' is not an absolute directory path",
                          value=mount, expected="e.g. /home, /lustre or /data")
    elif mount in mounts:
        yield ctx.problem("slurm-storage", (*base, "mount"),
                          f"storage[{mounts[mount]}] already mounts at '{mount}'",
                          value=mount, hint="give each storage its own mount point")


def _filestore(ctx: Context, facts: SlurmFacts, path: tuple[Any, ...], fs: SlurmFilestore
               ) -> Iterator[Problem]:
    """A Filestore entry at ``path``: its instance name, a new one's capacity in GB
    (slurm.yaml ``storage.filestore.capacityGb``) and its file share name
    (``storage.fileShareName``)."""
    fs_fact = facts.fact("storage", "filestore")
    yield from _instance_name(ctx, path, "Filestore", fs.create, fs.name)
    lo, hi = fs_fact["capacityGb"]["min"], fs_fact["capacityGb"]["max"]
    if fs.create and not lo <= fs.capacity_gb <= hi:
        yield ctx.problem("slurm-storage", (*path, "capacityGb"),
                          f"Filestore capacity {fs.capacity_gb} GB is outside the "
                          f"{lo}-{hi} GB Cluster Director accepts", value=fs.capacity_gb,
                          expected=f"{lo} to {hi}", source=fs_fact)
    share = facts.fact("storage", "fileShareName")
    if not re.match(share["pattern"], fs.file_share):
        yield ctx.problem("slurm-storage", (*path, "fileShare"),
                          f"'{fs.file_share}' is not a Filestore file share name",
                          value=fs.file_share,
                          expected="1-63 of a-z, 0-9, '_', starting with a letter",
                          source=share)


def _lustre(ctx: Context, facts: SlurmFacts, path: tuple[Any, ...], lu: SlurmLustre
            ) -> Iterator[Problem]:
    """A Managed Lustre entry at ``path``: its instance name, a new one's capacity in GiB
    (slurm.yaml ``storage.lustre``), its filesystem name and its throughput tier."""
    lu_fact = facts.fact("storage", "lustre")
    yield from _instance_name(ctx, path, "Managed Lustre", lu.create, lu.name)
    lo, hi = lu_fact["capacityGb"]["min"], lu_fact["capacityGb"]["max"]
    if lu.create and lu.capacity_gb is None:
        yield ctx.problem("slurm-storage", (*path, "capacityGb"),
                          "a new Managed Lustre instance needs capacityGb",
                          expected=f"{lo} to {hi} GiB", prefer_value=False,
                          source=lu_fact)
    elif lu.create and lu.capacity_gb is not None and not lo <= lu.capacity_gb <= hi:
        yield ctx.problem("slurm-storage", (*path, "capacityGb"),
                          f"Lustre capacity {lu.capacity_gb} GiB is outside the "
                          f"{lo}-{hi} GiB Cluster Director accepts",
                          value=lu.capacity_gb, expected=f"{lo} to {hi}",
                          source=lu_fact)
    if not re.match(lu_fact["filesystemPattern"], lu.filesystem):
        yield ctx.problem("slurm-storage", (*path, "filesystem"),
                          f"Lustre filesystem name '{lu.filesystem}' is not allowed",
                          value=lu.filesystem, expected="1-8 letters and digits",
                          source=lu_fact)
    yield from _lustre_throughput(ctx, facts, path, lu)


def _lustre_throughput(ctx: Context, facts: SlurmFacts, path: tuple[Any, ...],
                       lu: SlurmLustre) -> Iterator[Problem]:
    """Warnings for a throughput (MBps per TiB) that is not a Managed Lustre tier, else for a
    new instance's capacity off that tier's minimum and step in GiB (slurm.yaml
    ``storage.lustreThroughput``)."""
    tp = facts.fact("storage", "lustreThroughput")
    step = tp["minAndStepGib"].get(lu.throughput)
    if lu.throughput is not None and lu.throughput not in tp["values"]:
        yield ctx.problem("slurm-storage", (*path, "throughput"),
                          f"{lu.throughput} MBps per TiB is not a Managed Lustre "
                          "performance tier", value=lu.throughput,
                          expected=", ".join(map(str, tp["values"])),
                          severity=Severity.WARNING, source=tp)
    elif (step and lu.create and lu.capacity_gb is not None
          and (lu.capacity_gb < step or lu.capacity_gb % step)):
        yield ctx.problem("slurm-storage", (*path, "capacityGb"),
                          f"at {lu.throughput} MBps per TiB, Lustre capacity is "
                          f"{step} GiB or more, in steps of {step} GiB",
                          value=lu.capacity_gb,
                          expected=f"{step}, {2 * step}, {3 * step}, ...",
                          severity=Severity.WARNING, source=tp)


def _storage_refs(ctx: Context) -> Iterator[Problem]:
    """An error for each storage id that the login nodes or a node set mount and no storage
    entry has, in that order."""
    sspec = ctx.recipe.spec.slurm
    ids_ = [s.id for s in sspec.storage]
    refs: list[tuple[tuple[str | int, ...], list[str] | None]] = [
        (("spec", "slurm", "loginNodes", "storage"), sspec.login_nodes.storage)]
    refs += [(("spec", "slurm", "nodeSets", i, "storage"), ns.storage)
             for i, ns in enumerate(sspec.node_sets)]
    for ref_path, names in refs:
        for j, ref in enumerate(names or []):
            if ref not in ids_:
                yield ctx.problem("slurm-storage", (*ref_path, j), f"no storage with id '{ref}'",
                                  value=ref, expected="one of: " + (", ".join(ids_) or
                                                                    "(no storage defined)"),
                                  hint=suggest(ref, ids_))


def _instance_name(ctx: Context, path: tuple[Any, ...], what: str, create: bool,
                   name: str | None) -> Iterator[Problem]:
    if name is None:  # the default name's length is rule gcp-names
        if not create:
            yield ctx.problem("slurm-storage", (*path, "name"),
                              f"an existing {what} instance needs its name",
                              prefer_value=False,
                              expected="NAME or projects/P/locations/L/instances/NAME")
        return
    ok = _INSTANCE_PATH.match(name) if not create else _GCE_NAME.match(name)
    if not ok and not (not create and _GCE_NAME.match(name)):
        yield ctx.problem("slurm-storage", (*path, "name"),
                          f"'{name}' is not a {what} instance name", value=name,
                          expected="1-63 lowercase letters, digits or '-', letter first"
                          + ("" if create else "; or projects/P/locations/L/instances/NAME"))


@rule("slurm-network")
def network(ctx: Context) -> Iterator[Problem]:
    """A new network has a name only; an existing one needs network and subnetwork."""
    if not _slurm(ctx):
        return
    net = ctx.recipe.spec.slurm.network
    base = ("spec", "slurm", "network")
    if net.create:
        if net.subnetwork is not None:
            yield ctx.problem("slurm-network", (*base, "subnetwork"),
                              "a new network gets its subnetwork from Cluster Director; "
                              "subnetwork is for an existing network", value=net.subnetwork,
                              hint="remove subnetwork, or set create: false")
        if net.name is not None and not _GCE_NAME.match(net.name):
            yield ctx.problem("slurm-network", (*base, "name"),
                              f"'{net.name}' is not a network name", value=net.name,
                              expected="1-63 lowercase letters, digits or '-', letter first")
        return
    for key, value, pattern, example in (
            ("name", net.name, _NETWORK_PATH, "NAME or projects/P/global/networks/NAME"),
            ("subnetwork", net.subnetwork, _SUBNET_PATH,
             "NAME or projects/P/regions/REGION/subnetworks/NAME")):
        if value is None:
            yield ctx.problem("slurm-network", (*base, key),
                              f"an existing network needs its {key}", prefer_value=False,
                              expected=example)
        elif not (_GCE_NAME.match(value) or pattern.match(value)):
            yield ctx.problem("slurm-network", (*base, key),
                              f"'{value}' is not a {key} name or path", value=value,
                              expected=example)


@rule("slurm-capacity")
def capacity(ctx: Context) -> Iterator[Problem]:
    """Flex-start node sets state a maximum run duration (at most 7 days); a slice's node set
    takes the slice's capacity."""
    spec = ctx.recipe.spec
    if not _slurm(ctx):
        for i, s in enumerate(spec.slices):
            # queued capacity renders it (queued_rules.py checks it)
            if s.capacity.max_run_duration is not None and s.capacity.type != "queued":
                yield ctx.problem("slurm-capacity", ("spec", "slices", i, "capacity",
                                                     "maxRunDuration"),
                                  f"maxRunDuration is only rendered for Slurm flex-start node "
                                  f"sets; {spec.orchestrator.type} ignores it",
                                  value=s.capacity.max_run_duration, severity=Severity.WARNING,
                                  hint="remove it")
        return
    facts = _facts()
    limit = facts.fact("capacity", "flexStartMaxSeconds")
    for v in view.node_sets(ctx.recipe):
        ns = spec.slurm.node_sets[v.index] if v.index is not None else None
        if ns is not None and v.index is not None and ns.slice is not None and _given(
                ctx, "spec", "slurm", "nodeSets", v.index, "capacity"):
            yield ctx.problem("slurm-capacity", (*v.path, "capacity"),
                              f"node set '{v.id}' runs slice '{ns.slice}', whose capacity is "
                              "used", prefer_value=False,
                              hint="move capacity to the slice (spec.slices[].capacity)")
            continue
        cap = v.capacity
        cpath = ((*v.path, "capacity") if ns is not None and ns.slice is None
                 else ("spec", "slices", v.slice_index, "capacity"))
        if cap.type == "flex-start" and cap.max_run_duration is None:
            yield ctx.problem("slurm-capacity", (*cpath, "maxRunDuration"),
                              f"flex-start node set '{v.id}' needs maxRunDuration: Cluster "
                              "Director terminates flex-start VMs at the end of it",
                              prefer_value=False, expected="e.g. 72h, 3d (at most 7d)",
                              source=facts.source_url("HCC-REF"),
                              hint="add 'maxRunDuration: 72h' to the capacity")
        elif cap.max_run_duration is not None and cap.type != "flex-start":
            yield ctx.problem("slurm-capacity", (*cpath, "maxRunDuration"),
                              f"maxRunDuration is for flex-start; capacity type is "
                              f"'{cap.type}'", value=cap.max_run_duration,
                              hint="remove it, or set type: flex-start")
        elif cap.max_run_duration is not None:
            secs = view.duration_seconds(cap.max_run_duration)
            if secs is not None and secs > int(limit["value"]):
                yield ctx.problem("slurm-capacity", (*cpath, "maxRunDuration"),
                                  f"{cap.max_run_duration} is longer than the seven days "
                                  "flex-start VMs may run", value=cap.max_run_duration,
                                  expected="at most 7d (168h)", severity=Severity.WARNING,
                                  source=limit)


@rule("slurm-startup-script")
def startup_scripts(ctx: Context) -> Iterator[Problem]:
    """User startup scripts fit the API's 256 KiB with the SDK installer around them."""
    if not _slurm(ctx):
        return
    facts = _facts()
    fact = facts.fact("cluster", "startupScriptMaxBytes")
    limit = int(fact["value"])
    budget = (limit - _WRAPPER_BYTES) * 3 // 4
    sspec = ctx.recipe.spec.slurm
    scripts: list[tuple[tuple[str | int, ...], str | None]] = [
        (("spec", "slurm", "loginNodes", "startupScript"), sspec.login_nodes.startup_script)]
    scripts += [(("spec", "slurm", "nodeSets", i, "startupScript"), ns.startup_script)
                for i, ns in enumerate(sspec.node_sets)]
    for path, script in scripts:
        if script is None:
            continue
        size = len(script.encode("utf-8", "surrogatepass"))
        if size > budget:
            yield ctx.problem("slurm-startup-script", path,
                              f"startup script of {size} bytes: with the ML Diagnostics "
                              f"installer around it, it exceeds the API's {limit // 1024} KiB",
                              expected=f"at most {budget} bytes",
                              hint="keep a short script that fetches the rest (e.g. from "
                                   "Cloud Storage)", source=fact,
                              prefer_value=False)
        if "\x00" in script:
            yield ctx.problem("slurm-startup-script", path,
                              "startup script contains a NUL character", prefer_value=False,
                              hint="remove it")


@rule("slurm-workload")
def workloads(ctx: Context) -> Iterator[Problem]:
    """Workloads become sbatch scripts: environment names are shell names, no NUL bytes,
    and the slice's node set is in a partition."""
    if not _slurm(ctx):
        return
    views = view.node_sets(ctx.recipe)
    parts = view.partitions(ctx.recipe, views)
    covered = {ref for p in parts for ref in p.node_sets}
    by_slice = {v.slice_index: v for v in views if v.slice_index is not None}
    runtime = ctx.recipe.spec.slurm.container_runtime
    for i, w in enumerate(ctx.recipe.spec.workloads):
        base = ("spec", "workloads", i)
        for key in w.env:
            if not _SHELL_NAME.match(key):
                yield ctx.problem("slurm-workload", (*base, "env", key),
                                  f"environment variable '{key}' cannot be exported by a "
                                  "Slurm batch script (bash)", value=key, prefer_value=False,
                                  expected="letters, digits and '_', not starting with a digit",
                                  hint=f"rename it, e.g. '{re.sub(r'[^A-Za-z0-9_]', '_', key)}'")
        texts: list[tuple[tuple[str | int, ...], str]] = [
            ((*base, "env", k), v) for k, v in w.env.items()]
        texts += [((*base, "command", j), c) for j, c in enumerate(w.command)]
        texts += [((*base, "args", j), a) for j, a in enumerate(w.args)]
        for path, text in texts:
            if "\x00" in text:
                yield ctx.problem("slurm-workload", path,
                                  "a NUL character cannot be passed to a Slurm job",
                                  hint="remove it")
        idx = ctx.slice_index(w.slice)
        v = by_slice.get(idx) if idx is not None else None
        if v is not None and v.id not in covered:
            yield ctx.problem("slurm-workload", (*base, "slice"),
                              f"slice '{w.slice}' runs on node set '{v.id}', which is in no "
                              "partition: sbatch has nowhere to send the job", value=w.slice,
                              hint=f"add '{v.id}' to a partition's nodeSets")
        for key in ("kind", "hostNetwork", "resources", "backoffLimit", "chipsPerPod"):
            if _given(ctx, *base, key):
                yield ctx.problem("slurm-workload", (*base, key),
                                  f"{key} is a Kubernetes setting; the sbatch script of a Slurm "
                                  "workload does not use it (one task per node, whole nodes)",
                                  severity=Severity.WARNING, prefer_value=False,
                                  hint=f"remove {key}")
        if runtime == "none":
            yield ctx.problem("slurm-workload", (*base, "image"),
                              "containerRuntime is none: the command runs on the nodes "
                              "themselves and the image is not used", value=w.image,
                              severity=Severity.WARNING,
                              hint="set spec.slurm.containerRuntime: pyxis to run the image")
