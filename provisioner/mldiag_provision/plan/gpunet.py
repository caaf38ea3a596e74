"""High-bandwidth GPU networking of GKE Standard GPU node pools (issue 14).

A3 Mega (``a3-megagpu-8g``) runs GPUDirect-TCPXO over 8 extra NICs, one regular VPC with one
subnet each; A3 Ultra (``a3-ultragpu-8g``) and A4 (``a4-highgpu-8g``) run GPUDirect RDMA over
one extra gVNIC VPC and one RoCE VPC (network profile ``ZONE-vpc-roce``) with 8 subnets. The
cluster needs multi-networking (GKE Dataplane V2), the node pool one
``additional_node_network_configs`` entry per extra NIC, the cluster a ``GKENetworkParamSet``
+ ``Network`` pair per extra NIC, the NCCL plugin installer DaemonSet (and, for TCPXO, the
NRI device injector), and each pod the ``networking.gke.io`` interface annotations.

Every fact comes from ``catalog/data/gpu.yaml`` ``gpuNetworking`` (sources there).
:func:`resolve` is shared by preflight (``preflight/gpunet_rules.py``) and the planner, so
both decide the same mode, CIDR and names.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mldiag_provision.catalog.store import store

TCPXO = "gpudirect-tcpxo"
RDMA = "gpudirect-rdma"
MODES = (TCPXO, RDMA)
DEFAULT_POOL = ipaddress.IPv4Network("192.168.0.0/16")
"""Default ranges: the n-th networked slice gets the n-th /18 of this (the range Cluster
Toolkit's A3 Ultra blueprint uses, CT-A3U-BLUEPRINT; outside the default VPC's 10.128.0.0/9)."""
DEFAULT_PREFIX = 18
SPLIT_BITS = 4
"""Each slice's range is cut into 2**4 = 16 equal subnets (9 are used at most)."""
GCE_RESERVED = 4
"""Addresses Compute Engine reserves in every subnet's primary range
(https://cloud.google.com/vpc/docs/subnets#unusable-ip-addresses-in-every-subnet)."""


def facts() -> Any:
    """The ``gpuNetworking`` tree of gpu.yaml."""
    return store().doc("gpu")["gpuNetworking"]


def mode_for_machine(machine_type: str | None) -> str | None:
    """The GPUDirect mode a machine type has (catalog ``gpuNetworking.modes.*.machineTypes``),
    or None."""
    for mode, spec in facts()["modes"].items():
        if machine_type in spec["machineTypes"]:
            return str(mode)
    return None


@dataclass(frozen=True, slots=True)
class GpuSubnetPlan:
    name: str
    cidr: str


@dataclass(frozen=True, slots=True)
class GpuVpcPlan:
    """One extra VPC: ``network_profile`` set for the RoCE VPC (zone-bound; implicit allow
    firewall, VPC-RDMA-PROFILES), ``firewall_cidr`` the internal range a regular VPC
    admits (tcp, udp, icmp), as the Cluster Toolkit blueprints do."""

    name: str
    mtu: int
    network_profile: str | None
    firewall_cidr: str | None
    subnets: tuple[GpuSubnetPlan, ...]


@dataclass(frozen=True, slots=True)
class GpuInterfacePlan:
    """One extra NIC of every node of the pool and the pod interface on it, in NIC order."""

    interface: str  # eth1, eth2, ...
    network_object: str  # the Kubernetes Network (and GKENetworkParamSet) name
    vpc: str
    subnet: str
    device_mode: str  # NetDevice | RDMA


@dataclass(frozen=True, slots=True)
class GpuNetworkPlan:
    """GPUDirect networking of one GPU slice's node pool."""

    slice: str
    mode: str  # gpudirect-tcpxo | gpudirect-rdma
    accelerator: str  # cloud.google.com/gke-accelerator value (the installers' node affinity)
    gpus: int
    cidr: str
    vpcs: tuple[GpuVpcPlan, ...]
    interfaces: tuple[GpuInterfacePlan, ...]

    def pod_annotations(self) -> dict[str, str]:
        """``networking.gke.io/default-interface`` and ``networking.gke.io/interfaces``
        (GKE-MULTINET): eth0 on the default network, then one interface per extra NIC."""
        pod = facts()["pod"]
        items = [{"interfaceName": "eth0", "network": "default"}]
        items += [{"interfaceName": i.interface, "network": i.network_object}
                  for i in self.interfaces]
        return {str(pod["defaultInterface"]["key"]): str(pod["defaultInterface"]["value"]),
                str(pod["interfaces"]["key"]): json.dumps(items, separators=(",", ":"))}


@dataclass(frozen=True)
class Resolved:
    """Preflight's and the planner's view of one GPU slice: ``mode`` None = no GPUDirect;
    ``explicit`` whether the recipe set the mode; ``reason`` the decision in words."""

    index: int
    slice: str
    mode: str | None
    explicit: bool
    reason: str
    cidr: ipaddress.IPv4Network | None = None
    cidr_error: str | None = None


def decide(recipe: Any, creates_pools: bool,
           machine_types: Mapping[int, str | None]) -> list[Resolved]:
    """The GPUDirect mode and range of every GPU slice of ``recipe``.

    Args:
      creates_pools: the orchestrator creates GKE node pools (only gke-standard renders
        GPU networking; on Autopilot and existing clusters an explicit mode is reported by
        preflight's gpunet-mode and resolves to None here, so nothing of it is rendered).
      machine_types: slice index -> GPU machine type (None when unknown).
    Returns one :class:`Resolved` per GPU slice (TPU slices are left out). ``auto`` turns on
    the machine type's mode when the slice has 2 or more VMs: the extra NICs carry only
    node-to-node GPU traffic, so a single VM gains nothing from them.
    """
    out: list[Resolved] = []
    k = 0
    for i, s in enumerate(recipe.spec.slices):
        if s.gpu is None:
            continue
        net = s.networking
        machine = machine_types.get(i)
        native = mode_for_machine(machine)
        explicit = net.mode != "auto"
        if net.mode == "none":
            mode, reason = None, "networking.mode none (from the recipe)"
        elif explicit and not creates_pools:
            # preflight's gpunet-mode reports this; what it says is not rendered is not
            # rendered (issue 28: render and lint --recipe agree)
            mode, reason = None, (f"networking.mode {net.mode} (from the recipe) is not "
                                  "rendered: GPU networking is rendered for gke-standard "
                                  "node pools only")
        elif explicit:
            mode, reason = net.mode, f"networking.mode {net.mode} (from the recipe)"
        elif not creates_pools:
            mode, reason = None, "auto: GPU networking is rendered for gke-standard node pools only"
        elif native is None:
            mode, reason = None, f"auto: {machine or 'the machine type'} has no GPUDirect NICs"
        elif (s.nodes or 1) < 2:
            mode, reason = None, ("auto: one VM, no node-to-node GPU traffic for the extra "
                                  "NICs to carry")
        else:
            mode, reason = native, f"auto: {machine} has {native}"
        cidr: ipaddress.IPv4Network | None = None
        error = None
        if mode is not None:
            if net.cidr is not None:
                cidr, error = _network(net.cidr)
            else:
                parts = _default_ranges()
                if k < len(parts):
                    cidr = parts[k]
                else:
                    error = (f"only {len(parts)} networked slices get a default range "
                             f"(the /{DEFAULT_PREFIX}s of {DEFAULT_POOL})")
            k += 1
        out.append(Resolved(i, s.name, mode, explicit, reason, cidr, error))
    return out


# The ranges below are pure functions of their text or network, remembered: preflight asks
# for them for every networked GPU slice of every recipe (gpunet-cidr, gpunet-names), and
# building 16 IPv4Network objects was most of those rules' time (issue 16).

@functools.lru_cache(maxsize=256)
def _network(text: str) -> tuple[ipaddress.IPv4Network | None, str | None]:
    """``text`` as a strict IPv4 network: (network, None), or (None, why it is not one)."""
    try:
        return ipaddress.IPv4Network(text, strict=True), None
    except ValueError as exc:
        return None, str(exc)


@functools.cache
def _default_ranges() -> tuple[ipaddress.IPv4Network, ...]:
    """The default slice ranges: the /DEFAULT_PREFIXs of :data:`DEFAULT_POOL`, in order."""
    return tuple(DEFAULT_POOL.subnets(new_prefix=DEFAULT_PREFIX))


@functools.lru_cache(maxsize=256)
def subnets_of(cidr: ipaddress.IPv4Network) -> tuple[ipaddress.IPv4Network, ...]:
    """The 16 equal subnets of a slice's range (empty when it is too small to split)."""
    if cidr.prefixlen + SPLIT_BITS > 29:  # a subnet's primary range is at most /29
        return ()
    return tuple(cidr.subnets(prefixlen_diff=SPLIT_BITS))


def build(cluster: str, zone: str | None, r: Resolved, accelerator: str,
          gpus: int) -> GpuNetworkPlan:
    """The networks of one resolved slice (call only when preflight found no error).

    Names: VPCs and subnets ``<cluster>-<slice>-<role>`` (Compute Engine names, checked by
    preflight against 63 characters), Kubernetes Networks ``<slice>-<role>``.
    """
    assert r.mode is not None and r.cidr is not None
    spec = facts()["modes"][r.mode]
    parts = subnets_of(r.cidr)
    base = f"{cluster}-{r.slice}"
    vpcs: list[GpuVpcPlan] = []
    ifaces: list[GpuInterfacePlan] = []
    if r.mode == TCPXO:
        mode_fact = str(spec["deviceMode"]["value"])
        for n in range(int(spec["gpuNics"]["value"])):
            name = f"{base}-gpunic-{n}"
            vpcs.append(GpuVpcPlan(name=name, mtu=int(spec["mtu"]["value"]),
                                   network_profile=None, firewall_cidr=str(r.cidr),
                                   subnets=(GpuSubnetPlan(name, str(parts[n])),)))
            ifaces.append(GpuInterfacePlan(f"eth{n + 1}", f"{r.slice}-gpunic-{n}", name, name,
                                           mode_fact))
    else:
        modes = spec["deviceModes"]
        gvnic = f"{base}-gvnic"
        vpcs.append(GpuVpcPlan(name=gvnic, mtu=int(spec["gvnicMtu"]["value"]),
                               network_profile=None, firewall_cidr=str(r.cidr),
                               subnets=(GpuSubnetPlan(gvnic, str(parts[0])),)))
        ifaces.append(GpuInterfacePlan("eth1", f"{r.slice}-gvnic", gvnic, gvnic,
                                       str(modes["gvnic"])))
        rdma = f"{base}-rdma"
        count = int(spec["rdmaSubnets"]["value"])
        subnets = tuple(GpuSubnetPlan(f"{rdma}-{n}", str(parts[n + 1])) for n in range(count))
        vpcs.append(GpuVpcPlan(
            name=rdma, mtu=int(spec["mtu"]["value"]),
            network_profile=str(spec["networkProfile"]["value"]).format(zone=zone),
            firewall_cidr=None, subnets=subnets))
        for n, sub in enumerate(subnets):
            ifaces.append(GpuInterfacePlan(f"eth{n + 2}", f"{r.slice}-rdma-{n}", rdma,
                                           sub.name, str(modes["rdma"])))
    return GpuNetworkPlan(slice=r.slice, mode=r.mode, accelerator=accelerator, gpus=gpus,
                          cidr=str(r.cidr), vpcs=tuple(vpcs), interfaces=tuple(ifaces))


# --- in-cluster objects ----------------------------------------------------------------------

NET_API = "networking.gke.io/v1"
_MANAGED = {"app.kubernetes.io/managed-by": "mldiag-provision"}


def _network_objects(p: GpuNetworkPlan) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in p.interfaces:
        out.append({"apiVersion": NET_API, "kind": "GKENetworkParamSet",
                    "metadata": {"name": i.network_object, "labels": dict(_MANAGED)},
                    "spec": {"vpc": i.vpc, "vpcSubnet": i.subnet, "deviceMode": i.device_mode}})
        out.append({"apiVersion": NET_API, "kind": "Network",
                    "metadata": {"name": i.network_object, "labels": dict(_MANAGED)},
                    "spec": {"type": "Device", "parametersRef": {
                        "group": "networking.gke.io", "kind": "GKENetworkParamSet",
                        "name": i.network_object}}})
    return out


def _daemonset(name: str, node_match: dict[str, Any], init: list[dict[str, Any]],
               containers: list[dict[str, Any]], volumes: list[dict[str, Any]]
               ) -> dict[str, Any]:
    labels = {"k8s-app": name}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system",
                     "labels": {**labels, **_MANAGED}},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": name, **labels}},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "affinity": {"nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [node_match]}]}}},
                    "tolerations": [{"operator": "Exists"}],
                    "hostNetwork": True, "hostPID": True,
                    "volumes": volumes,
                    **({"initContainers": init} if init else {}),
                    "containers": containers,
                },
            },
        },
    }


_PAUSE = {"name": "pause",
          "image": "gke.gcr.io/pause:3.8@sha256:"
                   "880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830",
          "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                        "limits": {"cpu": "10m", "memory": "16Mi"}}}
"""The installers' idle container (CE-ACCEL-*-INSTALLER pin this pause image by digest)."""


def _accel_match(accelerators: Sequence[str]) -> dict[str, Any]:
    from mldiag_provision.catalog.gpu import GPU_ACCELERATOR_LABEL

    return {"key": GPU_ACCELERATOR_LABEL, "operator": "In", "values": sorted(accelerators)}


def _tcpxo_installer(accelerators: Sequence[str]) -> dict[str, Any]:
    """nccl-tcpxo-installer as CE-ACCEL-TCPXO-INSTALLER ships it: the pre-installation step
    (iptables, import-helper module, aperture devices) and the plugin install into
    /home/kubernetes/bin/nvidia/lib64 on the node."""
    spec = facts()["modes"][TCPXO]
    pre = "\n".join([
        "/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper",
        "mkdir -p /dev/aperture_devices",
        "for dev in $(lspci -nn -D | grep '1ae0:0084' | awk '{print $1}'); do",
        "  target=/dev/aperture_devices/$dev",
        "  mkdir -p $target; umount -R $target 2>/dev/null || true",
        "  mount --bind $(readlink -f /sys/bus/pci/devices/$dev) $target",
        "done",
        "if [ -d /dev/aperture_devices ]; then chmod -R a+r /dev/aperture_devices/;"
        " chmod a+rw /dev/aperture_devices/*/resource*; fi", ""])
    install = "\n".join([
        "set -ex", "chmod 755 /scripts/container_entry.sh",
        "/scripts/container_entry.sh install --install-nccl",
        "mkdir -p /usr/local/nvidia/lib64", "cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64",
        "echo installation finishes", ""])
    init: list[dict[str, Any]] = [
        # upstream runs this step in the plain "ubuntu" image; pinned to a release here
        {"name": "pre-installation", "image": "ubuntu:22.04",
         "securityContext": {"privileged": True},
         "command": ["nsenter", "-at", "1", "--", "bash", "-c", pre]},
        {"name": "nccl-tcpxo-installer", "image": str(spec["installerImage"]["value"]),
         "securityContext": {"privileged": True},
         "resources": {"requests": {"cpu": "150m"}},
         "volumeMounts": [{"name": "var-lib", "mountPath": "/var/lib"},
                          {"name": "library-dir-host", "mountPath": "/usr/local"}],
         "command": ["/bin/sh", "-c", install]},
    ]
    volumes = [{"name": "var-lib", "hostPath": {"path": "/var/lib"}},
               {"name": "library-dir-host", "hostPath": {"path": "/home/kubernetes/bin"}}]
    return _daemonset("nccl-tcpxo-installer", _accel_match(accelerators), init, [_PAUSE],
                      volumes)


def _nri_injector() -> dict[str, Any]:
    """The NRI device injector (CE-ACCEL-NRI) that gives the TCPXO daemon sidecar the GPUs."""
    image = str(facts()["modes"][TCPXO]["nriInjector"]["value"])
    container = {"name": "device-injector", "image": image,
                 "securityContext": {"privileged": True},
                 "resources": {"requests": {"cpu": "150m"}},
                 "volumeMounts": [{"name": "dev", "mountPath": "/dev"},
                                  {"name": "nri", "mountPath": "/var/run/nri"}]}
    volumes = [{"name": "nri", "hostPath": {"path": "/var/run/nri"}},
               {"name": "dev", "hostPath": {"path": "/dev"}}]
    return _daemonset("device-injector", {"key": "cloud.google.com/gke-gpu",
                                          "operator": "Exists"}, [], [container], volumes)


def _rdma_installer(accelerators: Sequence[str]) -> dict[str, Any]:
    """nccl-rdma-installer as CE-ACCEL-RDMA-INSTALLER ships it: the gIB NCCL plugin into
    /home/kubernetes/bin/nvidia/lib64 and /home/kubernetes/bin/gib on the node."""
    spec = facts()["modes"][RDMA]
    install = "\n".join([
        "set -ex", "/scripts/container_entry.sh install --install-nccl",
        "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64",
        "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib",
        "echo installation finishes", ""])
    init = [{"name": "nccl-rdma-installer", "image": str(spec["installerImage"]["value"]),
             "securityContext": {"privileged": True},
             "resources": {"requests": {"cpu": "150m"}},
             "volumeMounts": [
                 {"name": "library-dir-host",
                  "mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"},
                 {"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"}],
             "command": ["/bin/sh", "-c", install]}]
    volumes = [{"name": "library-dir-host",
                "hostPath": {"path": str(spec["libDir"]["value"]), "type": "DirectoryOrCreate"}},
               {"name": "gib", "hostPath": {"path": str(spec["gibDir"]["value"])}}]
    return _daemonset("nccl-rdma-installer", _accel_match(accelerators), init, [_PAUSE],
                      volumes)


def cluster_objects(plans: Sequence[GpuNetworkPlan]) -> list[dict[str, Any]]:
    """Every in-cluster object the GPU networks need, applied before the workloads: the
    GKENetworkParamSet + Network pairs, then one installer DaemonSet per mode (node affinity
    on the accelerators of that mode's slices), and the NRI injector for TCPXO."""
    objs: list[dict[str, Any]] = []
    for p in plans:
        objs += _network_objects(p)
    by_mode: dict[str, set[str]] = {}
    for p in plans:
        by_mode.setdefault(p.mode, set()).add(p.accelerator)
    if TCPXO in by_mode:
        objs += [_tcpxo_installer(sorted(by_mode[TCPXO])), _nri_injector()]
    if RDMA in by_mode:
        objs.append(_rdma_installer(sorted(by_mode[RDMA])))
    return objs


# --- pods ------------------------------------------------------------------------------------

def pod_additions(p: GpuNetworkPlan) -> tuple[dict[str, str], list[dict[str, Any]],
                                              list[dict[str, Any]], list[dict[str, Any]],
                                              list[dict[str, Any]]]:
    """What a workload pod on a networked slice adds: (annotations, env, volumeMounts of the
    main container, volumes, extra containers).

    Both modes: the interface annotations and the NCCL plugin's libraries from the node
    (mounted at /usr/local/nvidia/lib64, ``NCCL_LIB_DIR`` / ``LD_LIBRARY_PATH`` as
    CE-ACCEL-TCPXO-README says). TCPXO also: the tcpxo-daemon (RxDM) sidecar with the NRI
    devices annotation (CE-ACCEL-TCPXO-NCCL); RDMA: the gIB directory at /usr/local/gib
    (CE-ACCEL-RDMA-INSTALLER). The workload still sources the plugin's NCCL environment
    script in its command (``nccl-env-profile.sh`` / ``set_nccl_env.sh``).
    """
    spec = facts()["modes"][p.mode]
    annotations = p.pod_annotations()
    env = [{"name": "NCCL_LIB_DIR", "value": "/usr/local/nvidia/lib64"},
           {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}]
    mounts = [{"name": "nccl-plugin", "mountPath": "/usr/local/nvidia/lib64"}]
    volumes: list[dict[str, Any]] = [
        {"name": "nccl-plugin", "hostPath": {"path": str(spec["libDir"]["value"])}}]
    sidecars: list[dict[str, Any]] = []
    if p.mode == RDMA:
        mounts.append({"name": "gib", "mountPath": "/usr/local/gib"})
        volumes.append({"name": "gib", "hostPath": {"path": str(spec["gibDir"]["value"])}})
    else:
        devices = [f"/dev/nvidia{n}" for n in range(p.gpus)]
        devices += ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/dmabuf_import_helper"]
        key = str(facts()["pod"]["devicesAnnotation"]["key"])
        annotations[key] = "".join(f"- path: {d}\n" for d in devices)
        volumes += [{"name": "sys", "hostPath": {"path": "/sys"}},
                    {"name": "proc-sys", "hostPath": {"path": "/proc/sys"}},
                    {"name": "aperture-devices",
                     "hostPath": {"path": "/dev/aperture_devices"}}]
        # the LLCM devices the installer's pre-installation step binds on the node
        mounts.append({"name": "aperture-devices", "mountPath": "/dev/aperture_devices"})
        env.append({"name": "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY",
                    "value": "/dev/aperture_devices"})
        # a native sidecar (init container with restartPolicy Always, Kubernetes >= 1.29):
        # it stops when the training container ends, so the Job can complete
        sidecars.append({
            "name": "tcpxo-daemon", "restartPolicy": "Always",
            "image": str(spec["daemonImage"]["value"]),
            "command": ["/fts/entrypoint_rxdm_container.sh"],
            "args": ["--num_hops=2", f"--num_nics={len(p.interfaces)}"],
            "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}},
            "volumeMounts": [{"name": "nccl-plugin", "mountPath": "/usr/local/nvidia/lib64"},
                             {"name": "sys", "mountPath": "/hostsysfs"},
                             {"name": "proc-sys", "mountPath": "/hostprocsysfs"}],
            "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}]})
    return annotations, env, mounts, volumes, sidecars
