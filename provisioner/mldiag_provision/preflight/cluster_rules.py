"""Preflight rules for production cluster settings (issue 14): the nodes' service account,
private clusters and maintenance policies of the GKE clusters the stack creates.

Facts: ``catalog/data/gke.yaml`` ``cluster`` (each with its source in ``sources.yaml``).
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldiag_provision.catalog.gke_version import GkeVersion
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule

if TYPE_CHECKING:
    from mldiag_provision.cluster.model import Webhook

_ORCH = ("spec", "orchestrator")
_CREATED = "gke-autopilot or gke-standard (a cluster the stack creates)"


def _creates_gke(ctx: Context) -> bool:
    return ctx.has(Capability.CREATES_CLUSTER) and not ctx.has(Capability.MANAGED_SLURM)


@rule("cluster-node-identity", facts=("gke.cluster.serviceAccountEmail",
                                      "gke.cluster.computeDefaultServiceAccount"))
def node_identity(ctx: Context) -> Iterator[Problem]:
    """The nodes' service account is a user-managed account's email, never the Compute
    Engine default one, and only where the stack creates the GKE cluster."""
    email = ctx.recipe.spec.orchestrator.node_service_account
    if email is None:
        return
    path = (*_ORCH, "nodeServiceAccount")
    if not _creates_gke(ctx):
        yield ctx.problem(
            "cluster-node-identity", path,
            f"nodeServiceAccount is for {_CREATED}; orchestrator "
            f"'{ctx.recipe.spec.orchestrator.type}' creates no GKE nodes", value=email,
            hint="remove it (Slurm: spec.slurm.nodeServiceAccount)")
        return
    default = ctx.catalog.fact("cluster", "computeDefaultServiceAccount")
    if re.match(str(default["pattern"]), email):
        yield ctx.problem(
            "cluster-node-identity", path,
            f"'{email}' is the Compute Engine default service account: every VM of the "
            "project shares it and it usually holds the Editor role",
            value=email, expected="a dedicated service account, NAME@PROJECT.iam."
                                  "gserviceaccount.com",
            hint="leave nodeServiceAccount out: the stack creates '<cluster>-nodes' with "
                 "roles/container.defaultNodeServiceAccount", source=default)
        return
    fmt = ctx.catalog.fact("cluster", "serviceAccountEmail")
    if not re.match(str(fmt["pattern"]), email):
        yield ctx.problem(
            "cluster-node-identity", path, f"'{email}' is not a service account email",
            value=email, expected="ID@PROJECT.iam.gserviceaccount.com (ID: 6-30 lowercase "
                                  "letters, digits, hyphens; a letter first)",
            hint="copy it from `gcloud iam service-accounts list`", source=fmt)


@functools.lru_cache(maxsize=256)
def _cidr(text: str) -> ipaddress.IPv4Network | str:
    """``text`` as an IPv4 network, or why it is not one (host bits set, IPv6, garbage).

    Remembered (a pure function of the text): the same few ranges come back recipe after
    recipe, and parsing one is a dozen Python calls (issue 16)."""
    if "/" not in text:  # ipaddress reads a bare address as a /32; GKE wants CIDR notation
        return f"no prefix length: write {text}/32 for one address"
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        return str(exc)
    if not isinstance(net, ipaddress.IPv4Network):
        return "not an IPv4 range"
    return net


@rule("cluster-private", facts=("gke.cluster.masterCidrPrefix",
                                "gke.cluster.privateEndpointNeedsAuthorizedNetworks"))
def private_cluster(ctx: Context) -> Iterator[Problem]:
    """Private cluster settings: authorized networks are IPv4 CIDR blocks, the control-plane
    range a private /28 (needed below GKE 1.29), a private endpoint has authorized networks,
    and only clusters the stack creates have them."""
    if not _creates_gke(ctx):
        yield from _private_without_cluster(ctx)
        return
    yield from _authorized_network_cidrs(ctx)
    if ctx.recipe.spec.orchestrator.private.master_cidr is not None:
        yield from _master_cidr_given(ctx)
    else:
        yield from _master_cidr_needed(ctx)
    yield from _endpoint_reach(ctx)
    if ctx.recipe.spec.diagnostics.agents == "manual":
        yield from _webhook_firewall(ctx)


def _private_without_cluster(ctx: Context) -> Iterator[Problem]:
    """An error when private settings other than the model's defaults (recipe/model.py
    PrivateCluster; pydantic stays unimported) are given for an orchestrator that creates
    no GKE cluster."""
    orch = ctx.recipe.spec.orchestrator
    p = orch.private
    default = (p.nodes and not p.endpoint and p.master_cidr is None
               and p.authorized_networks is None and p.cloud_nat and p.webhook_firewall)
    if not default and ctx.orchestrator is not None:
        yield ctx.problem(
            "cluster-private", (*_ORCH, "private"),
            f"private cluster settings are for {_CREATED}; orchestrator '{orch.type}' "
            "creates no GKE cluster", hint="remove spec.orchestrator.private")


def _authorized_network_cidrs(ctx: Context) -> Iterator[Problem]:
    """An error for each authorized network that is not an IPv4 CIDR block."""
    p = ctx.recipe.spec.orchestrator.private
    for i, net in enumerate(p.authorized_networks or []):
        parsed = _cidr(net.cidr)
        if isinstance(parsed, str):
            yield ctx.problem(
                "cluster-private", (*_ORCH, "private", "authorizedNetworks", i, "cidr"),
                f"'{net.cidr}' is not an IPv4 CIDR block ({parsed})", value=net.cidr,
                expected="an IPv4 network address with its prefix, e.g. 203.0.113.0/24",
                source="https://cloud.google.com/kubernetes-engine/docs/how-to/"
                       "authorized-networks")


def _master_cidr_given(ctx: Context) -> Iterator[Problem]:
    """A given ``masterCidr``: an error unless it is a private range of the prefix length
    gke.yaml ``cluster.masterCidrPrefix`` gives; a warning when the nodes are not private
    (nothing uses it)."""
    p = ctx.recipe.spec.orchestrator.private
    assert p.master_cidr is not None
    prefix_fact = ctx.catalog.fact("cluster", "masterCidrPrefix")
    parsed = _cidr(p.master_cidr)
    want = int(prefix_fact["value"])
    if isinstance(parsed, str) or parsed.prefixlen != want or not parsed.is_private:
        why = parsed if isinstance(parsed, str) else (
            f"a /{parsed.prefixlen}" if parsed.prefixlen != want else "not a private range")
        yield ctx.problem(
            "cluster-private", (*_ORCH, "private", "masterCidr"),
            f"masterCidr '{p.master_cidr}' is not a private /{want} ({why})",
            value=p.master_cidr, expected=f"a /{want} of an RFC 1918 range, e.g. "
                                          "172.16.0.32/28", source=prefix_fact)
    if not p.nodes:
        yield ctx.problem("cluster-private", (*_ORCH, "private", "masterCidr"),
                          "masterCidr is only used by private clusters",
                          value=p.master_cidr, severity=Severity.WARNING,
                          hint="set private.nodes: true or remove masterCidr")


def _master_cidr_needed(ctx: Context) -> Iterator[Problem]:
    """An error when private nodes have no ``masterCidr`` and ``minVersion`` is below the
    GKE version from which the control plane needs no /28 (gke.yaml
    ``cluster.masterCidrNeededBefore``)."""
    orch = ctx.recipe.spec.orchestrator
    if not (orch.private.nodes and orch.min_version):
        return
    need = ctx.catalog.fact("cluster", "masterCidrNeededBefore")
    version = GkeVersion.parse(orch.min_version)
    below = GkeVersion.parse(str(need["version"]))
    if version is not None and below is not None and (
            (version.major, version.minor) < (below.major, below.minor)):
        yield ctx.problem(
            "cluster-private", (*_ORCH, "private", "masterCidr"),
            f"a private cluster created at GKE {orch.min_version} (below {need['version']})"
            " uses VPC Network Peering and needs a control-plane /28",
            expected="masterCidr: a free /28 of a private range, e.g. 172.16.0.32/28",
            source=need)


def _endpoint_reach(ctx: Context) -> Iterator[Problem]:
    """Who can reach the control plane: warnings for an empty ``authorizedNetworks`` list and
    for a private endpoint without authorized networks (gke.yaml
    ``cluster.privateEndpointNeedsAuthorizedNetworks``); an error for a private endpoint
    without private nodes."""
    p = ctx.recipe.spec.orchestrator.private
    base = (*_ORCH, "private")
    if p.authorized_networks == [] and not p.endpoint:
        yield ctx.problem(
            "cluster-private", (*base, "authorizedNetworks"),
            "an empty authorizedNetworks list turns authorized networks on with no range: the "
            "public endpoint then answers no outside address, so `apply`'s cluster stage and "
            "`verify` must run inside the VPC", value=[], severity=Severity.WARNING,
            hint="list your CI's or operators' ranges, or remove the key for no restriction",
            source="https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks")
    if p.endpoint and p.authorized_networks is None:
        fact = ctx.catalog.fact("cluster", "privateEndpointNeedsAuthorizedNetworks")
        yield ctx.problem(
            "cluster-private", (*base, "endpoint"),
            "a private endpoint without authorized networks: the control plane answers only "
            "inside the VPC, so `apply` and `verify` must run there",
            value=True, severity=Severity.WARNING, source=fact,
            hint="add private.authorizedNetworks with your CI's or bastion's range")
    if p.endpoint and not p.nodes:
        yield ctx.problem("cluster-private", (*base, "endpoint"),
                          "a private endpoint needs private nodes", value=True,
                          hint="set private.nodes: true",
                          source="https://cloud.google.com/kubernetes-engine/docs/how-to/"
                                 "private-clusters")


def _webhook_firewall(ctx: Context) -> Iterator[Problem]:
    """A warning for each manual-agent webhook the private control plane cannot reach
    (:func:`_unreachable_agent_webhooks`; the fact is the webhook's own)."""
    p = ctx.recipe.spec.orchestrator.private
    for hook in _unreachable_agent_webhooks(ctx):
        yield ctx.problem(
            "cluster-private", (*_ORCH, "private", "webhookFirewall"),
            f"the manual agents' injection webhook listens on {hook.port}, which a "
            "private cluster's control plane cannot reach without the firewall rule: "
            "its failurePolicy Fail then blocks every pod of the labelled namespace",
            value=p.webhook_firewall, severity=Severity.WARNING,
            hint="leave webhookFirewall on", source=hook.facts[0])


def _unreachable_agent_webhooks(ctx: Context) -> list[Webhook]:
    """The manual agents' webhooks that the control plane of the cluster the plan creates
    cannot reach, as the cluster model holds them (:func:`~mldiag_provision.cluster.
    from_plan.injection_webhooks` over the plan's private-cluster settings)."""
    from mldiag_provision.cluster import from_plan
    from mldiag_provision.plan.kubernetes import private_cluster

    recipe = ctx.recipe
    name = recipe.spec.orchestrator.cluster_name or recipe.metadata.name
    private = private_cluster(recipe, ctx.catalog, name, "manual", (), [])
    return [w for w in from_plan.injection_webhooks(private) if w.reachable is False]


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@rule("cluster-maintenance", facts=("gke.cluster.maintenanceAvailability",
                                    "gke.cluster.maintenanceScopes"))
def maintenance(ctx: Context) -> Iterator[Problem]:
    """Maintenance window and exclusions: end after start, at least 48 hours of contiguous
    (>= 4 h) windows in 92 days, unique exclusion names, NO_UPGRADES at most 30 days."""
    m = ctx.recipe.spec.orchestrator.maintenance
    if m is None:
        return
    base = (*_ORCH, "maintenance")
    if not _creates_gke(ctx):
        yield ctx.problem("cluster-maintenance", base,
                          f"maintenance settings are for {_CREATED}; orchestrator "
                          f"'{ctx.recipe.spec.orchestrator.type}' creates no GKE cluster",
                          hint="remove spec.orchestrator.maintenance")
        return
    avail = ctx.catalog.fact("cluster", "maintenanceAvailability")
    if m.window is not None:
        w = m.window
        hours = (_time(w.end) - _time(w.start)).total_seconds() / 3600
        if hours <= 0:
            yield ctx.problem("cluster-maintenance", (*base, "window", "end"),
                              f"the window ends ({w.end}) before it starts ({w.start})",
                              value=w.end, expected=f"a time after {w.start}")
        else:
            days = 7 if w.recurrence == "FREQ=DAILY" else len(w.recurrence.split("=")[-1]
                                                               .split(","))
            # occurrences in the rolling period: every day, or each weekday floor(N/7) times
            period = int(avail["rollingDays"])
            occurrences = period if days == 7 else days * (period // 7)
            contiguous = hours if hours >= float(avail["minContiguousHours"]) else 0.0
            total = contiguous * occurrences
            if total < float(avail["hours"]):
                yield ctx.problem(
                    "cluster-maintenance", (*base, "window"),
                    f"the window allows {total:g} hours of maintenance in {period} days "
                    f"({hours:g} h x {occurrences} occurrences; only stretches of at least "
                    f"{avail['minContiguousHours']} h count); GKE requires at least "
                    f"{avail['hours']} hours", value=w.recurrence,
                    expected=f">= {avail['hours']} h per {period} days in windows of >= "
                             f"{avail['minContiguousHours']} h",
                    hint="lengthen the window or add days to BYDAY", source=avail)
    limit = ctx.catalog.fact("cluster", "noUpgradesMaxDays")
    seen: set[str] = set()
    for i, e in enumerate(m.exclusions):
        path = (*base, "exclusions", i)
        if e.name in seen:
            yield ctx.problem("cluster-maintenance", (*path, "name"),
                              f"exclusion name '{e.name}' is used twice", value=e.name,
                              expected="unique exclusion names")
        seen.add(e.name)
        span = (_time(e.end) - _time(e.start)).total_seconds() / 86400  # days
        if span <= 0:
            yield ctx.problem("cluster-maintenance", (*path, "end"),
                              f"exclusion '{e.name}' ends ({e.end}) before it starts "
                              f"({e.start})", value=e.end, expected=f"a time after {e.start}")
        elif e.scope == "NO_UPGRADES" and span > float(limit["days"]):
            yield ctx.problem(
                "cluster-maintenance", (*path, "end"),
                f"a NO_UPGRADES exclusion lasts at most {limit['days']} days; "
                f"'{e.name}' lasts {span:g}", value=e.end,
                expected=f"at most {limit['days']} days after {e.start}",
                hint="use scope NO_MINOR_OR_NODE_UPGRADES (until the minor's end of support) "
                     "for a longer freeze", source=limit)
