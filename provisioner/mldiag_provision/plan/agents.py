"""How ML Diagnostics reaches the workloads of one cluster: one strategy, decided here.

* ``managed``: the GKE-managed add-on (GKE at or above the managed minimum, or an existing GKE
  cluster whose owner turns it on);
* ``manual``: cert-manager, the injection webhook and the connection operator from their
  Helm charts (older GKE, self-managed Kubernetes, or ``agents: manual``);
* ``none``: diagnostics off, or ``agents: none``.

Never both. The second stage (``agents/``) always owns the workload namespace (labelled for the
webhook) and the KSA; the charts only for ``manual``. It also installs the cluster add-ons the
workloads need (a controller for each CRD-backed workload kind, e.g. JobSet), whatever the
strategy. Facts and pins: ``catalog/data/gke.yaml`` ``mlDiagnostics``, ``autopilot``,
``workloadAddons``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from mldiag_provision.catalog.requirements import jax_row
from mldiag_provision.catalog.tpu import Catalog

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import Recipe


@dataclass(frozen=True, slots=True)
class HelmValue:
    """One ``set`` entry of a Helm release: a value path and its value, in Helm's ``--set``
    syntax (the helm provider parses ``name=value`` with Helm's strvals parser, TF-HELM-SET):
    a value the recipe means as one string is escaped by :func:`helm_set_literal`."""

    name: str
    value: str


def helm_set_literal(value: str) -> str:
    """``value`` escaped so that Helm's ``--set`` parser reads it back as this one string:
    a backslash before each ``,`` (ends the pair), ``{`` / ``}`` (a list) and ``\\`` (the
    escape itself). E.g. ``a,b=c`` -> ``a\\,b=c``, ``{p,q}`` -> ``\\{p\\,q\\}``.

    Facts: catalog/data/names.yaml ``valueFormats.helmSetValue`` (HELM-STRVALS, HELM-SET).
    Helm still types a whole value of ``true``, ``false``, ``null`` or an integer, as
    ``--set`` does (the provider's ``type: auto``).
    """
    from mldiag_provision.catalog.store import store

    fact = store().doc("names")["valueFormats"]["helmSetValue"]
    escape = str(fact["escape"])
    special = {str(c) for c in fact["special"]}
    return "".join(escape + ch if ch in special else ch for ch in value)


@dataclass(frozen=True, slots=True)
class HelmChartPlan:
    """One Helm release of the agents/ stage."""

    chart: str
    repository: str | None
    """Chart repository URL; ``None`` when ``chart`` is a full reference (``oci://...``)."""
    version: str | None
    """Chart version (the catalog's pin unless the recipe names one)."""
    namespace: str
    set: tuple[HelmValue, ...]


@dataclass(frozen=True, slots=True)
class AgentChartsPlan:
    """The charts of the agents/ stage; ``None``: not installed. The first three only for the
    ``manual`` strategy (catalog ``mlDiagnostics.manualInstall``)."""

    cert_manager: HelmChartPlan | None = None
    injection_webhook: HelmChartPlan | None = None
    connection_operator: HelmChartPlan | None = None
    diagon: HelmChartPlan | None = None
    """The recipe's own Diagon chart (``diagnostics.diagon``)."""


@dataclass(frozen=True, slots=True)
class ProfilerNetworkPolicyPlan:
    """A NetworkPolicy that lets the agents reach the workloads' profiler port."""

    from_namespace: str
    """Namespace the agents run in."""
    port: int
    """TCP port of the ML Diagnostics profiler server (catalog ``ports.mlDiagnosticsProfiler``)."""


@dataclass(frozen=True, slots=True)
class GkeAccessPlan:
    """The agents/ stage reaches a GKE cluster through its endpoint."""

    kind: Literal["gke"] = field(default="gke", init=False)
    cluster: str
    location: str
    """Region (or zone) of the cluster."""


@dataclass(frozen=True, slots=True)
class KubeconfigAccessPlan:
    """The agents/ stage reaches a cluster through a kubeconfig context."""

    kind: Literal["kubeconfig"] = field(default="kubeconfig", init=False)
    context: str | None
    """Context name; ``None``: the kubeconfig's current context."""


@dataclass(frozen=True, slots=True)
class AddonPlan:
    """A cluster add-on the workloads need: the controller (Helm chart) of a CRD-backed
    workload kind (catalog ``workloadAddons``)."""

    name: str
    chart: str
    repository: str
    version: str
    namespace: str
    set: tuple[HelmValue, ...]
    kind: str
    """The workload kind that needs it, e.g. ``JobSet``."""
    crd: str
    """The CRD its chart installs, e.g. ``jobsets.jobset.x-k8s.io``."""


@dataclass(frozen=True, slots=True)
class AgentsPlan:
    """Everything the agents/ stage renders (and ``verify`` expects)."""

    strategy: str
    """``managed``, ``manual`` or ``none`` (:func:`decide_strategy`)."""
    reasons: tuple[str, ...]
    """Why: the strategy's reason first, then the charts and operator arguments."""
    namespace: str
    namespace_labels: Mapping[str, str]
    service_account: str
    service_account_annotations: Mapping[str, str]
    exempt_label: Mapping[str, str]
    """The label that exempts a namespace from the injection webhook (catalog
    ``mlDiagnostics.manualInstall.webhookExemptLabel``)."""
    exempt_existing_namespaces: tuple[str, ...]
    agent_namespaces: tuple[str, ...]
    """Namespaces the stage creates for the charts (``manual`` only)."""
    charts: AgentChartsPlan
    addons: tuple[AddonPlan, ...]
    """Controllers of CRD-backed workload kinds, installed before the workload namespace."""
    profiler_network_policy: ProfilerNetworkPolicyPlan | None
    access: GkeAccessPlan | KubeconfigAccessPlan


def _chart(spec: Mapping[str, Any], namespace: str, version: str | None,
           values: Mapping[str, str] | None = None) -> HelmChartPlan:
    return HelmChartPlan(chart=str(spec["chart"]), repository=str(spec["repository"]),
                         version=str(version or spec["version"]), namespace=namespace,
                         set=tuple(HelmValue(name=k, value=str(v))
                                   for k, v in (values or {}).items()))


def operator_args(jax_version: str | None, catalog: Catalog) -> list[str] | None:
    """Connection-operator controller args for the workloads' JAX version: the args of its row
    of the compatibility table (:func:`jax_row`); None when no version is given, no row
    covers it, or its row keeps the chart's defaults."""
    if jax_version is None:
        return None
    row = jax_row(jax_version, catalog)
    return list(row["args"]) if row is not None and row["args"] else None


def decide_strategy(recipe: Recipe, *, creates_cluster: bool, managed_ok: bool) -> tuple[str, str]:
    """(strategy, why) for the recipe; ``managed_ok``: the cluster's version allows the add-on."""
    diag = recipe.spec.diagnostics
    orch = recipe.spec.orchestrator
    if not diag.enabled:
        return "none", "diagnostics are disabled"
    if diag.agents == "none":
        return "none", "diagnostics.agents: none"
    if diag.agents == "manual":
        return "manual", "diagnostics.agents: manual"
    if creates_cluster:
        if managed_ok:
            return "managed", "the cluster's GKE version allows the GKE-managed add-on"
        if diag.agents == "managed":  # preflight refuses this; kept for a clear plan
            return "managed", "diagnostics.agents: managed"
        return "manual", "the cluster's GKE version is below the managed add-on's minimum"
    if orch.workload_identity:  # an existing GKE cluster: its owner controls the add-on
        return "managed", ("existing GKE cluster: the add-on is assumed on (turn it on with "
                           "gcloud beta container clusters update CLUSTER "
                           "--enable-managed-mldiagnostics); `verify` checks it")
    return "manual", "self-managed Kubernetes has no managed add-on"


def exempt_namespaces(managed_namespaces: bool,
                      catalog: Catalog) -> tuple[list[str], list[str]]:
    """(system namespaces to label exempt from the injection webhook, the ones skipped).

    ``managed_namespaces``: the orchestrator has GKE Autopilot's rules
    (:attr:`~mldiag_provision.orchestrators.Capability.AUTOPILOT_RULES`). On GKE Autopilot
    kube-system, kube-public and kube-node-lease are managed namespaces:
    GKE Warden refuses any write to them, the Namespace objects' labels included
    (``autopilot.managedNamespaces``), so none is labelled there. Autopilot itself keeps
    webhooks out of its system namespaces (``autopilot.webhookNamespaceExclusion``).
    """
    system = ["kube-system", "kube-public", "kube-node-lease"]
    if not managed_namespaces:
        return system, []
    entries = cast("list[dict[str, Any]]", catalog.fact("autopilot", "managedNamespaces"))
    managed = {str(n["name"]) for n in entries}
    return [n for n in system if n not in managed], [n for n in system if n in managed]


def workload_addons(kinds: list[str], catalog: Catalog) -> list[AddonPlan]:
    """The cluster add-ons the workload kinds need (``workloadAddons``: kind -> CRD ->
    controller chart), once each, in the catalog's order."""
    out: list[AddonPlan] = []
    for entry in cast("list[dict[str, Any]]", catalog.fact("workloadAddons")):
        if str(entry["kind"]) in kinds:
            a = entry["addon"]
            out.append(AddonPlan(name=str(a["name"]), chart=str(a["chart"]),
                                 repository=str(a["repository"]), version=str(a["version"]),
                                 namespace=str(a["namespace"]), set=(),
                                 kind=str(entry["kind"]), crd=str(entry["crd"])))
    return out


def kueue_addon(catalog: Catalog) -> AddonPlan:
    """Kueue, the queueing controller of queued capacity (its Helm chart, pinned in
    catalog/data/gke.yaml ``queuedProvisioning.kueue``; source: Kueue v0.19.2's chart README).
    It serves the kueue.x-k8s.io CRDs the stack's queue objects use and creates a
    ProvisioningRequest for each queued workload."""
    k = catalog.fact("queuedProvisioning", "kueue")
    c = k["chart"]
    return AddonPlan(name=str(c["name"]), chart=str(c["chart"]),
                     repository=str(c["repository"]), version=str(c["version"]),
                     namespace=str(c["namespace"]), set=(), kind="Kueue-queued",
                     crd="clusterqueues.kueue.x-k8s.io")


def _manual_charts(recipe: Recipe, catalog: Catalog,
                   reasons: list[str]) -> tuple[AgentChartsPlan, list[str]]:
    """(the charts of the ``manual`` strategy, the namespaces they install into): cert-manager
    (unless the recipe turns it off), the injection webhook and the connection operator with
    the arguments for the workloads' JAX version (catalog ``mlDiagnostics.manualInstall``).
    Appends the reasons: the chart versions, and the operator's JAX arguments."""
    diag = recipe.spec.diagnostics
    manual_facts = catalog.fact("mlDiagnostics", "manualInstall")
    agents_ns = str(manual_facts["namespace"]["value"])
    m = diag.manual
    cm = manual_facts["certManager"]
    cert_manager: HelmChartPlan | None = None
    namespaces: list[str] = []
    if m is None or m.install_cert_manager:
        cert_manager = _chart(cm, str(cm["namespace"]),
                              m.cert_manager_version if m else None,
                              {str(k): str(v) for k, v in cm["values"].items()})
        namespaces.append(str(cm["namespace"]))
    namespaces.append(agents_ns)
    injection_webhook = _chart(manual_facts["injectionWebhook"], agents_ns,
                               m.webhook_version if m else None)
    op = manual_facts["connectionOperator"]
    args = operator_args(diag.jax_version, catalog)
    values = {f"{op['argsKey']}": "{" + ",".join(args) + "}"} if args else {}
    connection_operator = _chart(op, agents_ns, m.operator_version if m else None, values)
    reasons.append("charts: " + ", ".join(
        f"{c.chart} {c.version}" for c in (cert_manager, injection_webhook,
                                           connection_operator) if c))
    if args:
        reasons.append(f"connection operator arguments for JAX {diag.jax_version}: "
                       + " ".join(args))
    charts = AgentChartsPlan(cert_manager=cert_manager, injection_webhook=injection_webhook,
                             connection_operator=connection_operator)
    return charts, namespaces


def _diagon_chart(recipe: Recipe, namespace: str, reasons: list[str]) -> HelmChartPlan | None:
    """The recipe's own Diagon DaemonSet chart (``diagnostics.diagon``, its values as
    ``--set`` literals), installed into the agents' namespace; None without one or with
    diagnostics off. Appends its reason."""
    diag = recipe.spec.diagnostics
    if not (diag.enabled and diag.diagon is not None):
        return None
    d = diag.diagon
    reasons.append(f"Diagon DaemonSet from your chart {d.chart}")
    return HelmChartPlan(chart=d.chart, repository=d.repository, version=d.version,
                         namespace=namespace,
                         set=tuple(HelmValue(name=k, value=helm_set_literal(v))
                                   for k, v in d.values.items()))


def _addons(catalog: Catalog, workload_kinds: list[str] | None, queued: bool,
            reasons: list[str]) -> list[AddonPlan]:
    """The workload kinds' add-ons (:func:`workload_addons`), then Kueue when ``queued``;
    appends one reason per add-on."""
    addons = workload_addons(list(workload_kinds or []), catalog)
    if queued:
        addons.append(kueue_addon(catalog))
    for a in addons:
        reasons.append(f"{a.kind} workloads: the {a.name} controller ({a.chart} "
                       f"{a.version} from {a.repository}, CRD {a.crd}) is installed "
                       "before the workload namespace")
    return addons


def _access(recipe: Recipe, creates_cluster: bool,
            cluster_name: str) -> GkeAccessPlan | KubeconfigAccessPlan:
    """How the agents stage reaches the cluster: a GKE cluster (the stack's, or an existing
    one with Workload Identity, in its location else the stack's region) or a kubeconfig
    context (self-managed Kubernetes)."""
    orch = recipe.spec.orchestrator
    if creates_cluster or orch.workload_identity:
        return GkeAccessPlan(cluster=orch.cluster_name or cluster_name,
                             location=(orch.cluster_location if not creates_cluster else None)
                             or recipe.spec.region)
    return KubeconfigAccessPlan(context=orch.kubeconfig_context)


def _profiler_network_policy(recipe: Recipe, catalog: Catalog,
                             strategy: str) -> ProfilerNetworkPolicyPlan | None:
    """The NetworkPolicy that lets the agents' namespace (``manual``) or the managed add-on's
    reach the workloads' profiler port (catalog ``ports.mlDiagnosticsProfiler``); None when
    the recipe does not ask for one or there are no agents."""
    if not (recipe.spec.diagnostics.profiler_network_policy and strategy != "none"):
        return None
    if strategy == "manual":
        source_ns = str(catalog.fact("mlDiagnostics", "manualInstall")["namespace"]["value"])
    else:
        source_ns = str(catalog.fact("mlDiagnostics", "managedNamespace")["value"])
    port = int(catalog.fact("ports", "mlDiagnosticsProfiler")["port"])
    return ProfilerNetworkPolicyPlan(from_namespace=source_ns, port=port)


def plan_agents(recipe: Recipe, catalog: Catalog, *, creates_cluster: bool, managed_ok: bool,
                cluster_name: str, gsa_email: str | None,
                workload_kinds: list[str] | None = None,
                managed_namespaces: bool = False, queued: bool = False) -> AgentsPlan:
    """Everything the agents/ stage renders: strategy, charts, add-ons, namespace, KSA,
    access. ``workload_kinds``: the kinds of the rendered workloads (``Job``, ``JobSet``);
    ``managed_namespaces``: see :func:`exempt_namespaces`; ``queued``: a slice has capacity
    type queued, so Kueue (:func:`kueue_addon`) joins the add-ons."""
    diag = recipe.spec.diagnostics
    strategy, why = decide_strategy(recipe, creates_cluster=creates_cluster,
                                    managed_ok=managed_ok)
    manual_facts = catalog.fact("mlDiagnostics", "manualInstall")
    agents_ns = str(manual_facts["namespace"]["value"])
    exempt = manual_facts["webhookExemptLabel"]
    label = catalog.fact("mlDiagnostics", "namespaceLabel")
    reasons = [why]
    charts, agent_namespaces = (_manual_charts(recipe, catalog, reasons) if strategy == "manual"
                                else (AgentChartsPlan(), []))
    charts = dataclasses.replace(charts, diagon=_diagon_chart(recipe, agents_ns, reasons))
    ns_labels = {"app.kubernetes.io/managed-by": "mldiag-provision"}
    if strategy != "none":
        ns_labels[str(label["key"])] = str(label["value"])
    exempt_ns, skipped = exempt_namespaces(managed_namespaces, catalog)
    if strategy == "manual" and skipped:
        reasons.append("Autopilot-managed namespaces are not labelled (GKE Warden refuses "
                       "writes there; Autopilot keeps webhooks out of them): "
                       + ", ".join(skipped))
    addons = _addons(catalog, workload_kinds, queued, reasons)
    return AgentsPlan(
        strategy=strategy,
        reasons=tuple(reasons),
        namespace=diag.kubernetes.namespace,
        namespace_labels=ns_labels,
        service_account=diag.kubernetes.service_account,
        service_account_annotations=({str(catalog.store.fact(
            "kubernetes", "mlDiagnostics", "workloadIdentityAnnotation")["key"]): gsa_email}
                                     if gsa_email else {}),
        exempt_label={str(exempt["key"]): str(exempt["value"])},
        exempt_existing_namespaces=tuple(exempt_ns),
        agent_namespaces=tuple(agent_namespaces),
        charts=charts,
        addons=tuple(addons),
        profiler_network_policy=_profiler_network_policy(recipe, catalog, strategy),
        access=_access(recipe, creates_cluster, cluster_name),
    )
