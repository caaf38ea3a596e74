"""Preflight rules of GPUDirect networking (``slices[].networking``; plan/gpunet.py).

Facts: catalog/data/gpu.yaml ``gpuNetworking`` (each with its source). The decisions (mode,
range) come from :func:`mldiag_provision.plan.gpunet.decide`, the same function the planner
uses, so what preflight checks is what renders.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldiag_provision.catalog.gke_version import GkeVersion
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule

if TYPE_CHECKING:
    from types import ModuleType

_MODES = "gpu.gpuNetworking.modes"


def _gpunet() -> ModuleType:
    """:mod:`mldiag_provision.plan.gpunet`, imported when a recipe has a GPU slice (a TPU
    recipe never loads the GPU networking facts)."""
    from mldiag_provision.plan import gpunet

    return gpunet


def _has_gpu(ctx: Context) -> bool:
    return any(s.gpu is not None for s in ctx.recipe.spec.slices)


def _machines(ctx: Context) -> dict[int, str | None]:
    return {i: s.machine_type for i, s in enumerate(ctx.recipe.spec.slices)}


@rule("gpunet-mode", facts=(f"{_MODES}.gpudirect-tcpxo", f"{_MODES}.gpudirect-rdma"))
def gpunet_mode(ctx: Context) -> Iterator[Problem]:
    """A GPUDirect networking mode fits the slice's machine type and orchestrator."""
    spec = ctx.recipe.spec
    gpunet = _gpunet() if _has_gpu(ctx) else None
    for i, s in enumerate(spec.slices):
        mode = s.networking.mode
        path = ("spec", "slices", i, "networking", "mode")
        if s.gpu is None:
            if mode not in ("auto", "none") or s.networking.cidr is not None:
                yield ctx.problem("gpunet-mode", path, "GPUDirect networking is for GPU "
                                  "slices; TPU slices use ICI and DCN", value=mode,
                                  expected="auto (or leave networking out)",
                                  hint="remove networking from this TPU slice")
            continue
        if mode in ("auto", "none"):
            continue
        assert gpunet is not None  # this slice is a GPU slice
        modes = gpunet.facts()["modes"]
        if not ctx.has(Capability.NODE_POOLS):
            autopilot = ctx.has(Capability.AUTOPILOT_RULES)
            yield ctx.problem(
                "gpunet-mode", path,
                f"networking.mode {mode} is rendered for gke-standard node pools only; "
                f"{spec.orchestrator.type} does not create GPU node pools here",
                value=mode, expected="auto or none",
                hint=("GKE documents GPUDirect on Autopilot separately (its own compute "
                      "classes and steps); use orchestrator gke-standard for GPUDirect pools"
                      if autopilot else "use orchestrator gke-standard, or set mode auto"),
                source=(gpunet.facts()["autopilot"]["supported"] if autopilot else None))
            continue
        machine = s.machine_type
        allowed = [str(m) for m in modes[mode]["machineTypes"]]
        if machine is not None and machine not in allowed:
            native = gpunet.mode_for_machine(machine)
            yield ctx.problem(
                "gpunet-mode", path,
                f"{mode} needs one of {', '.join(allowed)}; {machine} "
                + (f"uses {native}" if native else "has no GPUDirect NICs"),
                value=mode, expected=native or "none",
                hint=f"set networking.mode {native or 'none'} (or auto)",
                source=modes[mode])


@rule("gpunet-off", facts=(f"{_MODES}.gpudirect-tcpxo", f"{_MODES}.gpudirect-rdma"),
      severity=Severity.WARNING)
def gpunet_off(ctx: Context) -> Iterator[Problem]:
    """networking.mode none on a multi-VM slice whose machine type has GPUDirect NICs."""
    if not ctx.has(Capability.NODE_POOLS) or not _has_gpu(ctx):
        return
    gpunet = _gpunet()
    for i, s in enumerate(ctx.recipe.spec.slices):
        native = gpunet.mode_for_machine(s.machine_type)
        if s.gpu is not None and s.networking.mode == "none" and native and (s.nodes or 1) > 1:
            yield ctx.problem(
                "gpunet-off", ("spec", "slices", i, "networking", "mode"),
                f"{s.machine_type} has {native} NICs, but mode none leaves NCCL between its "
                f"{s.nodes} VMs on the primary NIC: a fraction of the bandwidth",
                value="none", expected=f"auto ({native})", severity=Severity.WARNING,
                hint="remove networking.mode (auto) unless the job is single-node",
                source=gpunet.facts()["modes"][native])


@rule("gpunet-cidr", facts=(f"{_MODES}.gpudirect-rdma.rdmaSubnets",))
def gpunet_cidr(ctx: Context) -> Iterator[Problem]:
    """The extra subnets' range is a valid IPv4 network, large enough for the pool, and
    overlaps no other networked slice's range."""
    if not _has_gpu(ctx):  # no GPU slice: no GPUDirect network to size
        return
    gpunet = _gpunet()
    resolved = gpunet.decide(ctx.recipe, ctx.has(Capability.NODE_POOLS), _machines(ctx))
    seen: list[tuple[str, ipaddress.IPv4Network]] = []
    slices = ctx.recipe.spec.slices
    for r in resolved:
        if r.mode is None:
            continue
        path = ("spec", "slices", r.index, "networking", "cidr")
        given = slices[r.index].networking.cidr
        if r.cidr_error is not None:
            yield ctx.problem("gpunet-cidr", path if given else
                              ("spec", "slices", r.index, "networking"),
                              f"no range for the extra subnets: {r.cidr_error}", value=given,
                              expected="an IPv4 network such as 192.168.128.0/18",
                              hint="set networking.cidr to an unused private range")
            continue
        assert r.cidr is not None
        parts = gpunet.subnets_of(r.cidr)
        nodes = slices[r.index].nodes or 1
        size = parts[0].num_addresses - gpunet.GCE_RESERVED if parts else 0
        if size < nodes:
            yield ctx.problem(
                "gpunet-cidr", path, f"range {r.cidr} is cut into 16 subnets of "
                f"{parts[0].num_addresses if parts else 0} addresses; {nodes} VMs need "
                f"{nodes + gpunet.GCE_RESERVED} per subnet (Compute Engine reserves "
                f"{gpunet.GCE_RESERVED})", value=str(r.cidr),
                expected=f"a prefix of at most /{max(32 - (nodes + 3).bit_length() - 4, 8)}",
                hint="use a larger range", source="https://cloud.google.com/vpc/docs/subnets")
        if not r.cidr.is_private:
            yield ctx.problem("gpunet-cidr", path, f"{r.cidr} is not a private (RFC 1918) "
                              "range", value=str(r.cidr), severity=Severity.WARNING,
                              hint="use a range inside 10.0.0.0/8, 172.16.0.0/12 or "
                                   "192.168.0.0/16")
        for other, net in seen:
            if net.overlaps(r.cidr):
                yield ctx.problem(
                    "gpunet-cidr", path, f"range {r.cidr} overlaps slice {other}'s {net}: "
                    "a node's NICs must not share addresses", value=str(r.cidr),
                    expected=f"a range outside {net}", hint="set a distinct networking.cidr")
        seen.append((r.slice, r.cidr))


@rule("gpunet-names")
def gpunet_names(ctx: Context) -> Iterator[Problem]:
    """The extra VPCs' and subnets' names (``<cluster>-<slice>-<role>``) fit 63 characters."""
    if not _has_gpu(ctx):
        return
    gpunet = _gpunet()
    orch = ctx.recipe.spec.orchestrator
    cluster = orch.cluster_name or ctx.recipe.metadata.name
    for r in gpunet.decide(ctx.recipe, ctx.has(Capability.NODE_POOLS), _machines(ctx)):
        if r.mode is None:
            continue
        longest = f"{cluster}-{r.slice}-" + ("gpunic-7" if r.mode == gpunet.TCPXO
                                              else "rdma-7")
        if len(longest) > 63:
            yield ctx.problem(
                "gpunet-names", ("spec", "slices", r.index, "name"),
                f"the extra subnets are named '<cluster>-<slice>-...'; '{longest}' has "
                f"{len(longest)} characters", value=r.slice, expected="at most 63 characters",
                hint="shorten the slice name or the cluster name",
                source="https://cloud.google.com/compute/docs/naming-resources")


@rule("gpunet-version", facts=("gpu.gpuNetworking.modes.gpudirect-tcpxo.minVersions",
                               "gpu.gpuNetworking.modes.gpudirect-rdma.minVersion"),
      severity=Severity.WARNING)
def gpunet_version(ctx: Context) -> Iterator[Problem]:
    """A recipe's GKE minimum version is at least the one its GPUDirect mode recommends."""
    orch = ctx.recipe.spec.orchestrator
    if orch.min_version is None or not ctx.has(Capability.NODE_POOLS) or not _has_gpu(ctx):
        return
    have = GkeVersion.parse(orch.min_version)
    if have is None:
        return  # the gke-version rule reports the format
    gpunet = _gpunet()
    modes = gpunet.facts()["modes"]
    for r in gpunet.decide(ctx.recipe, True, _machines(ctx)):
        if r.mode == gpunet.TCPXO:
            fact = modes[r.mode]["minVersions"]
            by_minor = {str(k): str(v) for k, v in fact["values"].items()}
            need = by_minor.get(f"{have.major}.{have.minor}")
            if need is None and (have.major, have.minor) < (1, 28):
                need = by_minor["1.28"]
        elif r.mode == gpunet.RDMA:
            fact = modes[r.mode]["minVersion"]
            need = str(fact["value"])
        else:
            continue
        floor = GkeVersion.parse(need) if need is not None else None
        if floor is not None and have < floor:
            yield ctx.problem(
                "gpunet-version", ("spec", "orchestrator", "minVersion"),
                f"slice {r.slice} uses {r.mode}, recommended from GKE {need}",
                value=orch.min_version, expected=f">= {need}", severity=Severity.WARNING,
                hint=f"set minVersion to {need} or later", source=fact)
