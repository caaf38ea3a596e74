"""``mldiag-provision catalog gpu [NAME] [--output json]``: the GPU side of the catalog, with
the depth of ``catalog tpu``: every GPU with its GKE accelerator label, machine types (GPUs per
VM, vCPUs, memory, family, managed Slurm), the GPU networking modes its machine types have
(extra NICs, MTU, recommended GKE version) and the GKE minimums, each figure with its source
and confidence.

Every value is read from the fact store (``catalog/data/gpu.yaml``; sources in
``sources.yaml``); this module only lays it out. Imported by ``catalog gpu`` alone.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mldiag_provision.catalog.gpu import (
    GPU_ACCELERATOR_LABEL,
    GpuCatalog,
    GpuType,
    load_gpu_catalog,
)
from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.console import Console
from mldiag_provision.errors import UsageError


def _cite(fact: Fact | None) -> dict[str, Any]:
    """The source and confidence of ``fact`` as data (empty when there is none)."""
    if fact is None:
        return {}
    out: dict[str, Any] = {"source": fact.source.tag, "url": fact.url,
                           "confidence": fact.confidence}
    if fact.note:
        out["note"] = fact.note
    return out


def _fact(*keys: str) -> Fact:
    """The fact at ``keys`` of gpu.yaml."""
    return store().fact("gpu", *keys)


def networking_of(machine_type: str) -> list[dict[str, Any]]:
    """The GPU networking modes (gpu.yaml ``gpuNetworking.modes``) that list
    ``machine_type``: mode, extra NICs, MTU, recommended minimum GKE version(s), each with its
    source. Empty when the machine type has none this version renders."""
    modes = store().get("gpu", "gpuNetworking", "modes")
    found = []
    for mode, raw in modes.items():
        if machine_type not in raw.get("machineTypes", ()):
            continue
        entry: dict[str, Any] = {"mode": mode, **_cite(_fact("gpuNetworking", "modes", mode))}
        if "gpuNics" in raw:  # TCPXO: one regular VPC per GPU NIC
            nics = _fact("gpuNetworking", "modes", mode, "gpuNics")
            entry["extraNics"] = {"gpu": int(nics["value"]), **_cite(nics)}
        else:  # RDMA: gVNIC VPC(s) plus one RoCE VPC with a subnet per RDMA NIC
            gvnic = _fact("gpuNetworking", "modes", mode, "gvnicNetworks")
            rdma = _fact("gpuNetworking", "modes", mode, "rdmaSubnets")
            entry["extraNics"] = {"gvnic": int(gvnic["value"]), "rdma": int(rdma["value"]),
                                  **_cite(rdma)}
        mtu = _fact("gpuNetworking", "modes", mode, "mtu")
        entry["mtu"] = {"value": int(mtu["value"]), **_cite(mtu)}
        if "minVersions" in raw:
            mins = _fact("gpuNetworking", "modes", mode, "minVersions")
            entry["minGke"] = {"values": dict(mins["values"]), **_cite(mins)}
        elif "minVersion" in raw:
            mins = _fact("gpuNetworking", "modes", mode, "minVersion")
            entry["minGke"] = {"values": {"any": str(mins["value"])}, **_cite(mins)}
        found.append(entry)
    return found


def describe(catalog: GpuCatalog, gpu: GpuType) -> dict[str, Any]:
    """Everything ``catalog gpu NAME`` shows for ``gpu``, as data (the JSON output)."""
    facts = store()
    raw = catalog.raw["gpus"][gpu.key]
    general = facts.fact("gpu", "autopilotGeneral")
    auto = raw.get("autopilot") or {}
    auto_fact = facts.of(auto)
    machines = []
    for m in gpu.machines.values():
        family = m.fact.get("family") if m.fact is not None else None
        machines.append({"machineType": m.name, "family": family,
                         "gpusPerVm": m.gpus, "vcpu": m.vcpu, "memoryGb": m.memory_gb,
                         "slurm": m.slurm, "networking": [n["mode"] for n in
                                                          networking_of(m.name)],
                         **_cite(m.fact)})
    networking: dict[str, dict[str, Any]] = {}
    for machine_type in gpu.machines:
        for n in networking_of(machine_type):
            networking.setdefault(n["mode"], {**n, "machineTypes": []})[
                "machineTypes"].append(machine_type)
    multiple = raw.get("nodeCountMultipleOf")
    return {
        "gpu": gpu.key, "name": gpu.display_name, "accelerator": gpu.accelerator,
        "aliases": list(gpu.aliases), "arch": gpu.arch,
        **_cite(facts.of(raw)),
        "machineTypes": machines,
        "networking": list(networking.values()),
        "gke": {
            "autopilot": {"supported": auto.get("supported"),
                          "minVersion": auto.get("minVersion"),
                          "computeClass": auto.get("computeClass"), **_cite(auto_fact)},
            "autopilotAcceleratorClass": {
                "minVersion": general["acceleratorComputeClassMinVersion"],
                "requestOnlyFrom": general["requestOnlyFromVersion"], **_cite(general)},
        },
        "nodeCountMultipleOf": ({"value": multiple["value"], "scope": multiple.get("scope"),
                                 **_cite(facts.of(multiple))} if multiple else None),
    }


def _unknown(name: str, catalog: GpuCatalog) -> UsageError:
    """The usage error for a GPU name the catalog does not know: did you mean, or the TPU
    catalog when it names a TPU."""
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.suggest import suggest

    tpu = load_catalog().version(name)
    if tpu is not None:
        return UsageError(f"'{name}' is a TPU, not a GPU",
                          hint=f"mldiag-provision catalog tpu {tpu.key}")
    return UsageError(f"unknown GPU '{name}'",
                      hint=suggest(name, catalog.names())
                      or "known: " + ", ".join(sorted(catalog.gpus)))


def run(args: argparse.Namespace, out: Console) -> int:
    """``catalog gpu [NAME]``: 0, or a :class:`UsageError` (exit 2) for an unknown name or a
    TPU-only flag."""
    if args.diagram is not None or args.topology or args.chips_per_vm is not None:
        raise UsageError("--topology, --chips-per-vm and --diagram draw TPU slices",
                         hint="mldiag-provision catalog tpu VERSION --topology T --diagram")
    catalog = load_gpu_catalog()
    if args.version is None:
        return _list(catalog, out, args.output)
    gpu = catalog.gpu(args.version)
    if gpu is None:
        raise _unknown(args.version, catalog)
    data = describe(catalog, gpu)
    if args.output == "json":
        out.print(json.dumps(data, indent=2))
        return 0
    _show(data, out)
    return 0


def _list(catalog: GpuCatalog, out: Console, output: str) -> int:
    rows: list[dict[str, Any]] = [
        {"gpu": g.key, "name": g.display_name, "accelerator": g.accelerator,
         "autopilot": g.autopilot, "arch": g.arch,
         "machineTypes": {m.name: m.gpus for m in g.machines.values()}}
        for g in catalog.gpus.values()]
    if output == "json":
        out.print(json.dumps(rows, indent=2))
        return 0
    out.print(f"{'GPU':<15} {'ACCELERATOR LABEL':<22} {'AUTOPILOT':<9} "
              "MACHINE TYPES (GPUS PER VM)")
    for r in rows:
        auto = {True: "yes", False: "no", None: "?"}[r["autopilot"]]
        machines = ", ".join(f"{m} ({n})" for m, n in r["machineTypes"].items())
        out.print(f"{r['gpu']:<15} {r['accelerator']:<22} {auto:<9} {machines}")
    out.print("\nmldiag-provision catalog gpu NAME  explains one GPU's machine types, "
              "networking and GKE minimums")
    return 0


def _conf(entry: dict[str, Any]) -> str:
    return f"{entry.get('source', '-')} ({entry.get('confidence', '-')})"


def _show(d: dict[str, Any], out: Console) -> None:
    """``catalog gpu NAME`` as text: every figure with its source tag and confidence, and the
    tags' URLs at the end."""
    cited: dict[str, str] = {}

    def cite(entry: dict[str, Any]) -> str:
        if entry.get("source"):
            cited[entry["source"]] = entry.get("url") or entry["source"]
        return _conf(entry)

    name = d["name"] if d["gpu"].lower() in d["name"].lower() else f"{d['name']} ({d['gpu']})"
    out.print(out.style(name, "bold") +
              f"  nodeSelector {GPU_ACCELERATOR_LABEL}: {d['accelerator']}")
    out.print(f"aliases: {', '.join(d['aliases']) or '-'}; arch: {d['arch']}; source: "
              f"{cite(d)}")
    out.print(f"\n{'MACHINE TYPE':<24} {'FAMILY':<12} {'GPUS/VM':>7} {'VCPU':>5} "
              f"{'MEMORY GB':>9} {'SLURM':<5} {'NETWORKING':<15} SOURCE (CONFIDENCE)")
    for m in d["machineTypes"]:
        out.print(f"{m['machineType']:<24} {m['family'] or '-':<12} {m['gpusPerVm']:>7} "
                  f"{_num(m['vcpu']):>5} {_num(m['memoryGb']):>9} "
                  f"{'yes' if m['slurm'] else 'no':<5} {', '.join(m['networking']) or '-':<15} "
                  f"{cite(m)}")
    if d["networking"]:
        out.print("\nGPU networking (gke-standard, slices[].networking; 2 or more VMs):")
        for n in d["networking"]:
            nics = n["extraNics"]
            extra = (f"{nics['gpu']} GPU NICs, one VPC each" if "gpu" in nics else
                     f"{nics['gvnic']} gVNIC VPC + 1 RoCE VPC with {nics['rdma']} RDMA NICs")
            mins = n.get("minGke")
            versions = (", ".join(v for v in mins["values"].values()) if mins else "-")
            out.print(f"  {n['mode']}: {', '.join(n['machineTypes'])}: {extra} "
                      f"[{cite(nics)}]; MTU {n['mtu']['value']} [{cite(n['mtu'])}]; "
                      f"recommended GKE >= {versions}"
                      + (f" [{cite(mins)}]" if mins else ""))
    else:
        out.print("\nGPU networking: none rendered for these machine types (NCCL on the "
                  "primary NIC)")
    auto = d["gke"]["autopilot"]
    general = d["gke"]["autopilotAcceleratorClass"]
    supported = {True: "yes", False: "no", None: "not verified"}[auto["supported"]]
    out.print(f"\nGKE Autopilot: {supported}; minimum {auto['minVersion'] or 'not stated'} "
              f"[{cite(auto)}]")
    out.print(f"  Accelerator compute class from {general['minVersion']}; GPU requests alone "
              f"(no compute-class selector) from {general['requestOnlyFrom']} [{cite(general)}]")
    if d["nodeCountMultipleOf"]:
        multiple = d["nodeCountMultipleOf"]
        out.print(f"node count: a multiple of {multiple['value']} ({multiple['scope']}) "
                  f"[{cite(multiple)}]")
    out.print("\nsources:")
    for tag in sorted(cited):
        out.print(f"  {tag}: {cited[tag]}")


def _num(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
