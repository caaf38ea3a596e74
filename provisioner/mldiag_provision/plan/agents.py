"""How ML Diagnostics reaches the workloads of one cluster: one strategy, decided here.

* ``managed``: the GKE-managed add-on (GKE at or above the managed minimum, or an existing GKE
  cluster whose owner turns it on);
* ``manual``: cert-manager, the injection webhook and the connection operator from their
  Helm charts (older GKE, self-managed Kubernetes, or ``agents: manual``);
* ``none``: diagnostics off, or ``agents: none``.

Never both. The second stage (``agents/``) always owns the workload namespace (labelled for the
webhook) and the KSA; the charts only for ``manual``. Facts and pins: ``catalog/data/gke.yaml``
``mlDiagnostics``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldiag_provision.catalog.tpu import Catalog

if TYPE_CHECKING:
    from mldiag_provision.recipe.model import Recipe


def _chart(spec: dict, namespace: str, version: str | None,
           values: dict[str, str] | None = None) -> dict:
    return {"chart": str(spec["chart"]), "repository": str(spec["repository"]),
            "version": str(version or spec["version"]), "namespace": namespace,
            "set": [{"name": k, "value": str(v)} for k, v in (values or {}).items()]}


def operator_args(jax_version: str | None, catalog: Catalog) -> list[str] | None:
    """Connection-operator controller args for the workloads' JAX version (compat table)."""
    if jax_version is None:
        return None
    table = catalog.fact("mlDiagnostics", "manualInstall", "connectionOperator")["argsByJax"]
    minor = ".".join(jax_version.split(".")[:2])
    return list(table[minor]) if minor in table else None


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


def plan_agents(recipe: Recipe, catalog: Catalog, *, creates_cluster: bool, managed_ok: bool,
                cluster_name: str, gsa_email: str | None) -> dict:
    """Everything the agents/ stage renders: strategy, charts, namespace, KSA, access."""
    diag = recipe.spec.diagnostics
    orch = recipe.spec.orchestrator
    strategy, why = decide_strategy(recipe, creates_cluster=creates_cluster,
                                    managed_ok=managed_ok)
    manual_facts = catalog.fact("mlDiagnostics", "manualInstall")
    agents_ns = str(manual_facts["namespace"]["value"])
    exempt = manual_facts["webhookExemptLabel"]
    label = catalog.fact("mlDiagnostics", "namespaceLabel")
    reasons = [why]
    charts: dict[str, dict | None] = {"cert_manager": None, "injection_webhook": None,
                                      "connection_operator": None, "diagon": None}
    agent_namespaces: list[str] = []
    if strategy == "manual":
        m = diag.manual
        cm = manual_facts["certManager"]
        if m is None or m.install_cert_manager:
            charts["cert_manager"] = _chart(cm, str(cm["namespace"]),
                                            m.cert_manager_version if m else None,
                                            {str(k): str(v) for k, v in cm["values"].items()})
            agent_namespaces.append(str(cm["namespace"]))
        agent_namespaces.append(agents_ns)
        charts["injection_webhook"] = _chart(manual_facts["injectionWebhook"], agents_ns,
                                             m.webhook_version if m else None)
        op = manual_facts["connectionOperator"]
        args = operator_args(diag.jax_version, catalog)
        values = {f"{op['argsKey']}": "{" + ",".join(args) + "}"} if args else {}
        charts["connection_operator"] = _chart(op, agents_ns, m.operator_version if m else None,
                                               values)
        reasons.append("charts: " + ", ".join(
            f"{c['chart']} {c['version']}" for c in charts.values() if c))
        if args:
            reasons.append(f"connection operator arguments for JAX {diag.jax_version}: "
                           + " ".join(args))
    if diag.enabled and diag.diagon is not None:
        d = diag.diagon
        charts["diagon"] = {"chart": d.chart, "repository": d.repository, "version": d.version,
                            "namespace": agents_ns,
                            "set": [{"name": k, "value": v} for k, v in d.values.items()]}
        reasons.append(f"Diagon DaemonSet from your chart {d.chart}")
    ns_labels = {"app.kubernetes.io/managed-by": "mldiag-provision"}
    if strategy != "none":
        ns_labels[str(label["key"])] = str(label["value"])
    source_ns = agents_ns if strategy == "manual" else str(
        catalog.fact("mlDiagnostics", "managedNamespace")["value"])
    port = int(catalog.fact("ports", "mlDiagnosticsProfiler")["port"])
    if creates_cluster or orch.workload_identity:
        access = {"kind": "gke", "cluster": orch.cluster_name or cluster_name,
                  "location": (orch.cluster_location if not creates_cluster else None)
                  or recipe.spec.region}
    else:
        access = {"kind": "kubeconfig", "context": orch.kubeconfig_context}
    return {
        "strategy": strategy,
        "reasons": reasons,
        "namespace": diag.kubernetes.namespace,
        "namespace_labels": ns_labels,
        "service_account": diag.kubernetes.service_account,
        "service_account_annotations": ({"iam.gke.io/gcp-service-account": gsa_email}
                                        if gsa_email else {}),
        "exempt_label": {str(exempt["key"]): str(exempt["value"])},
        "exempt_existing_namespaces": ["kube-system", "kube-public", "kube-node-lease"],
        "agent_namespaces": agent_namespaces,
        "charts": charts,
        "profiler_network_policy": ({"from_namespace": source_ns, "port": port}
                                    if diag.profiler_network_policy and strategy != "none"
                                    else None),
        "access": access,
    }
