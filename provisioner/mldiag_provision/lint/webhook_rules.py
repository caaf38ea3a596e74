"""Webhook and certificate wiring on GKE: what makes an admission webhook work, or silently not.

For every webhook of a Mutating/ValidatingWebhookConfiguration that calls a Service:

* the API server must trust the serving certificate: ``clientConfig.caBundle`` or a cert-manager
  CA-injection annotation; without either, calls fail with "x509: certificate signed by unknown
  authority" (``failurePolicy: Fail``: every matching request fails; ``Ignore``: the webhook is
  silently skipped);
* ``clientConfig.service.port`` (default 443) must be a port of that Service;
* on private GKE clusters the control plane reaches pods only on 443 and 10250 without an extra
  firewall rule, and it calls the Service's *targetPort* directly;
* GKE counts webhooks that intercept Nodes, TokenReviews, SubjectAccessReviews,
  CertificateSigningRequests, or Pods/leases in kube-system as unsafe: with ``failurePolicy:
  Fail`` they can stop control-plane upgrades.

The Service (and the pods behind it) are looked up in the same input set; what is not there is
not guessed. Facts: ``webhooks`` in lint/data/facts.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.loading import Resource, get
from mldiag_provision.lint.rules import define, fact, fact_source
from mldiag_provision.lint.workloads import selects

_F = ("webhooks",)
CA_BUNDLE = define("webhook-ca-bundle", "a webhook that calls a Service has a caBundle or a "
                   "cert-manager CA-injection annotation", source=fact_source(*_F, "caBundle"),
                   facts=("kubernetes.webhooks.caBundle",))
PORT = define("webhook-service-port", "clientConfig.service.port is a port of the webhook's "
              "Service", source=fact_source(*_F, "servicePort"),
              facts=("kubernetes.webhooks.servicePort",))
PRIVATE = define("webhook-private-cluster-port", "the webhook pod listens on a port the GKE "
                 "control plane can reach on private clusters (443 or 10250)",
                 severity=Severity.WARNING, source=fact_source(*_F, "privateClusterPorts"),
                 facts=("kubernetes.webhooks.privateClusterPorts",))
SCOPE = define("webhook-unsafe-scope", "a webhook that fails closed does not intercept what "
               "GKE's control plane needs", severity=Severity.WARNING,
               source=fact_source(*_F, "unsafeScope"), facts=("kubernetes.webhooks.unsafeScope",))

_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def _target_port(ctx: LintContext, svc: Resource, port_entry: dict[str, Any]) -> int | None:
    """The container port a Service port sends to (a named targetPort resolved through the
    pods the Service selects, when they are in the input set)."""
    target = port_entry.get("targetPort", port_entry.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if not isinstance(target, str):
        return None
    if target.isdigit():
        return int(target)
    for t in ctx.templates:
        if t.resource.namespace not in (None, svc.namespace) or \
                not selects(svc.get("spec", "selector"), t.labels):
            continue
        for _, c in t.containers():
            for p in ports if isinstance(ports := c.get("ports"), list) else []:
                if isinstance(p, dict) and p.get("name") == target \
                        and isinstance(p.get("containerPort"), int):
                    return int(p["containerPort"])
    return None


def _excludes(hook: dict[str, Any], namespace: str) -> bool:
    """The webhook's namespaceSelector leaves ``namespace`` out (by its metadata.name label)."""
    exprs = get(hook, "namespaceSelector", "matchExpressions")
    for e in exprs if isinstance(exprs, list) else []:
        values = get(e, "values")
        if get(e, "key") == "kubernetes.io/metadata.name" and isinstance(values, list) and (
                (get(e, "operator") == "NotIn" and namespace in values)
                or (get(e, "operator") == "In" and namespace not in values)):
            return True
    labels = get(hook, "namespaceSelector", "matchLabels")
    return isinstance(labels, dict) and labels.get("kubernetes.io/metadata.name") not in (
        None, namespace)


def _scope(ctx: LintContext, res: Resource, i: int, hook: dict[str, Any]) -> Iterator[Problem]:
    f = fact(*_F, "unsafeScope")
    if hook.get("failurePolicy", "Fail") != "Fail":
        return
    rules = hook.get("rules")
    for j, rule in enumerate(rules if isinstance(rules, list) else []):
        resources = get(rule, "resources")
        if not isinstance(resources, list):
            continue
        names = {str(r).split("/")[0] for r in resources}
        unsafe = sorted(names & set(f["resources"]))
        if unsafe:
            yield ctx.problem(
                res, SCOPE.id, ("webhooks", i, "rules", j, "resources"),
                f"webhook '{hook.get('name')}' fails closed (failurePolicy: Fail) on "
                f"{', '.join(unsafe)}: GKE counts this unsafe; when the webhook is down, nodes "
                "and the control plane stop working",
                hint="drop those resources from the rule, or set failurePolicy: Ignore")
            continue
        system = ({"pods", "leases", "*"} & names)
        autopilot = ctx.options.autopilot  # Autopilot adds the kube-system exclusion itself
        left_in = [ns for ns in f["systemNamespaces"] if not _excludes(hook, ns)]
        if system and left_in and not autopilot:
            yield ctx.problem(
                res, SCOPE.id, ("webhooks", i, "namespaceSelector") if "namespaceSelector"
                in hook else ("webhooks", i, "rules", j, "resources"),
                f"webhook '{hook.get('name')}' fails closed on {', '.join(sorted(system))} in "
                f"every namespace, {', '.join(left_in)} included: GKE counts this unsafe, and "
                "a webhook that cannot answer blocks control-plane upgrades",
                hint="add namespaceSelector matchExpressions: [{key: kubernetes.io/metadata.name,"
                     " operator: NotIn, values: [kube-system, kube-node-lease]}]")


def _reached_ports(ctx: LintContext) -> list[int] | None:
    """The node ports a private cluster's control plane reaches, as the cluster model holds
    them (with ``--recipe``: GKE's 443 and 10250 plus the stack's webhook firewall rule);
    GKE's own two (fact ``privateClusterPorts``) when the model does not say; None when the
    model knows the nodes are public (nothing to judge)."""
    default = [int(p) for p in fact(*_F, "privateClusterPorts")["ports"]]
    if ctx.cluster is None and ctx.options.recipe is None:
        return default  # plain lint: the manifests do not say which cluster
    from mldiag_provision.lint.cluster_rules import cluster_model

    model = cluster_model(ctx)
    if model.private_nodes is False:
        return None
    return sorted(model.control_plane_ports) if model.control_plane_ports else default


def _injected(res: Resource) -> dict[str, object]:
    """The cert-manager CA-injection annotations (fact ``caBundle``) on a webhook
    configuration, name -> value as written; empty when there are none."""
    annotations = res.get("metadata", "annotations")
    if not isinstance(annotations, dict):
        return {}
    return {a: annotations[a] for a in fact(*_F, "caBundle")["annotations"] if a in annotations}


def _malformed_injection(ctx: LintContext, res: Resource,
                         injected: dict[str, object]) -> Iterator[Problem]:
    """An ``inject-ca-from``-style annotation whose value is not ``<namespace>/<name>``
    (``inject-apiserver-ca`` takes no reference, so any value goes)."""
    for a, value in injected.items():
        if a != "cert-manager.io/inject-apiserver-ca" and (
                not isinstance(value, str) or value.count("/") != 1
                or not all(value.split("/"))):
            yield ctx.problem(
                res, CA_BUNDLE.id, ("metadata", "annotations", a),
                f"{a} must be <namespace>/<name>; cert-manager injects nothing for "
                f"'{value}'", value=value, expected="<namespace>/<name>",
                hint="e.g. my-webhook-system/my-webhook-cert")


def _missing_ca(ctx: LintContext, res: Resource, i: int, hook: dict[str, Any],
                svc_ref: dict[str, Any], injected: dict[str, object]) -> Iterator[Problem]:
    """Webhook ``i`` calls a Service with neither ``clientConfig.caBundle`` nor an injection
    annotation on its configuration: the API server cannot verify the certificate."""
    if get(hook, "clientConfig", "caBundle") or injected:
        return
    policy = hook.get("failurePolicy", "Fail")
    yield ctx.problem(
        res, CA_BUNDLE.id, ("webhooks", i, "clientConfig", "caBundle"),
        f"webhook '{hook.get('name')}' calls Service "
        f"{svc_ref.get('namespace')}/{svc_ref.get('name')} with no caBundle and no "
        "CA-injection annotation: the API server cannot verify its certificate, so "
        + ("every matching request fails (failurePolicy: Fail)" if policy == "Fail"
           else "the webhook is silently skipped (failurePolicy: Ignore)"),
        hint="annotate the configuration with cert-manager.io/inject-ca-from: "
             "<namespace>/<certificate>, or set clientConfig.caBundle")


def _service_ports(svc: Resource) -> list[dict[str, Any]] | None:
    """The Service's ``spec.ports`` entries; None when ``spec``, ``ports`` or an entry's
    ``port`` has the wrong type (the schema's one finding: nothing to compare with)."""
    listed = svc.get("spec", "ports")
    if not isinstance(svc.get("spec"), (dict, type(None))) or not isinstance(
            listed, (list, type(None))) or any(
            not isinstance(p, dict) or p.get("port").__class__ is not int for p in listed or ()):
        return None
    return [p for p in listed or () if isinstance(p, dict)]


def _private_port(ctx: LintContext, svc: Resource, hook: dict[str, Any],
                  entries: list[dict[str, Any]], entry: dict[str, Any],
                  ports: list[int] | None) -> Iterator[Problem]:
    """The pod port behind the Service port ``entry`` is not one the control plane of a
    private cluster reaches (``ports``; None: the nodes are public, nothing to judge)."""
    target = _target_port(ctx, svc, entry)
    if target is None or ports is None or target in ports:
        return
    index = entries.index(entry)
    yield ctx.problem(
        svc, PRIVATE.id, ("spec", "ports", index, "targetPort")
        if "targetPort" in entry else ("spec", "ports", index),
        f"webhook '{hook.get('name')}' is served on pod port {target}; on a private "
        f"GKE cluster the control plane reaches pods only on "
        f"{' and '.join(map(str, ports))} unless a firewall rule allows {target}, so "
        "calls time out", value=target,
        hint="serve the webhook on 10250 (or 443), or add a firewall rule from the "
             "control plane range to the nodes on this port")


def _service_port(ctx: LintContext, res: Resource, i: int, hook: dict[str, Any],
                  svc_ref: dict[str, Any], ports: list[int] | None) -> Iterator[Problem]:
    """Webhook ``i``'s ``clientConfig.service.port`` (default from fact ``servicePort``)
    against the ports of its Service, when that Service is in the input set; then the
    private-cluster reachability of the pod port behind it."""
    name, ns = svc_ref.get("name"), svc_ref.get("namespace")
    if not isinstance(name, str):
        return
    services = ctx.find("", "Service", name, ns if isinstance(ns, str) else None)
    if not services:
        return
    svc = services[0]
    entries = _service_ports(svc)
    if entries is None:
        return
    want = svc_ref.get("port", fact(*_F, "servicePort")["default"])
    entry = next((p for p in entries if p.get("port") == want), None)
    if entry is None:
        have = ", ".join(str(p.get("port")) for p in entries) or "none"
        yield ctx.problem(
            res, PORT.id, ("webhooks", i, "clientConfig", "service", "port"),
            f"webhook '{hook.get('name')}' calls port {want} of Service '{name}', which "
            f"has ports {have}: every call fails", value=want,
            expected=have, hint="set clientConfig.service.port to the Service's port")
        return
    yield from _private_port(ctx, svc, hook, entries, entry, ports)


def _configuration(ctx: LintContext, res: Resource,
                   ports: list[int] | None) -> Iterator[Problem]:
    """One Mutating/ValidatingWebhookConfiguration: its injection annotations, then per
    webhook its scope, and for one that calls a Service its CA, port and reachability."""
    injected = _injected(res)
    yield from _malformed_injection(ctx, res, injected)
    hooks = res.get("webhooks")
    for i, hook in enumerate(hooks if isinstance(hooks, list) else []):
        if not isinstance(hook, dict):
            continue
        yield from _scope(ctx, res, i, hook)
        svc_ref = get(hook, "clientConfig", "service")
        if isinstance(svc_ref, dict):
            yield from _missing_ca(ctx, res, i, hook, svc_ref, injected)
            yield from _service_port(ctx, res, i, hook, svc_ref, ports)


def check_webhooks(ctx: LintContext) -> Iterator[Problem]:
    """CA bundle, Service port, private-cluster reachability and unsafe scope of webhooks."""
    configurations = [res for res in ctx.resources
                      if res.group == "admissionregistration.k8s.io" and res.kind in _KINDS]
    if not configurations:
        return
    ports = _reached_ports(ctx)  # the cluster model is built only when there is a webhook
    for res in configurations:
        yield from _configuration(ctx, res, ports)


CHECKS = (check_webhooks,)
