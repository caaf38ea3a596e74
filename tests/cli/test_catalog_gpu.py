"""``catalog gpu [NAME]`` (issue 31 item 3): machine types, GPUs per VM, memory, networking
modes and GKE minimums, each with its source; "did you mean" for GPU names; and the catalog
header no longer repeats the version key ("TPU Trillium (v6e) (v6e)")."""

from __future__ import annotations

import json

import pytest

from mldiag_provision.catalog.gpu import load_gpu_catalog
from mldiag_provision.catalog.store import store


def _json(cli, *argv: str) -> object:
    code, out, err = cli("catalog", "gpu", *argv, "--output", "json")
    assert code == 0, err
    return json.loads(out)


def _cited(entry: dict) -> None:
    """``entry`` names a source defined in sources.yaml, its URL and a confidence."""
    src = store().sources[entry["source"]]
    assert entry["url"] == src.ref
    assert entry["confidence"] in ("H", "M", "L")


def test_list_has_every_gpu_with_its_label_and_machine_types(cli) -> None:
    code, out, err = cli("catalog", "gpu")
    assert code == 0 and err == ""
    for gpu in load_gpu_catalog().gpus.values():
        line = next(ln for ln in out.splitlines() if ln.startswith(gpu.key + " "))
        assert gpu.accelerator in line
        for machine in gpu.machines.values():
            assert f"{machine.name} ({machine.gpus})" in line
    rows = _json(cli)
    assert {r["gpu"] for r in rows} == set(load_gpu_catalog().gpus)


def test_h200_a3_ultra_rdma(cli) -> None:
    """A3 Ultra: 8 H200 per VM, 224 vCPUs, 2952 GB (cluster-toolkit gpu-definition, Compute
    Engine machine types); GPUDirect-RDMA with 8 RDMA NICs at MTU 8896 (VPC RDMA network
    profiles page)."""
    d = _json(cli, "h200")  # an alias resolves
    assert d["gpu"] == "h200-141gb" and d["accelerator"] == "nvidia-h200-141gb"
    (m,) = d["machineTypes"]
    assert (m["machineType"], m["gpusPerVm"], m["vcpu"], m["memoryGb"], m["slurm"]) == (
        "a3-ultragpu-8g", 8, 224, 2952, True)
    assert m["networking"] == ["gpudirect-rdma"]
    (net,) = d["networking"]
    assert net["mode"] == "gpudirect-rdma" and net["extraNics"]["rdma"] == 8
    assert net["mtu"]["value"] == 8896
    assert net["mtu"]["url"] == "https://docs.cloud.google.com/vpc/docs/rdma-network-profiles"
    for entry in (d, m, net, net["extraNics"], net["mtu"], net["minGke"],
                  d["gke"]["autopilot"], d["gke"]["autopilotAcceleratorClass"]):
        _cited(entry)


def test_a3_mega_tcpxo_text(cli) -> None:
    """A3 Mega: GPUDirect-TCPXO over eight secondary NICs ("up to eight on A3 Mega", GKE's
    GPU bandwidth page), recommended GKE 1.28.10-gke.1141000 / 1.29.5-gke.1121000 (the TCPXO
    README)."""
    code, out, err = cli("catalog", "gpu", "h100-mega-80gb")
    assert code == 0 and err == ""
    assert "nodeSelector cloud.google.com/gke-accelerator: nvidia-h100-mega-80gb" in out
    assert "gpudirect-tcpxo: a3-megagpu-8g: 8 GPU NICs" in out
    assert "1.28.10-gke.1141000, 1.29.5-gke.1121000" in out
    assert "GKE-GPUDIRECT-TCPX: https://cloud.google.com/kubernetes-engine/docs/how-to/" \
           "gpu-bandwidth-gpudirect-tcpx" in out
    assert "from 1.28.9-gke.1069000" in out  # the Accelerator compute class (GKE-AP-GPU)


def test_l4_has_no_networking_and_uneven_gpu_counts(cli) -> None:
    """G2: g2-standard-24 carries 2 L4s while g2-standard-32 carries 1 (cluster-toolkit
    gpu-definition): GPUs per VM are read per machine type, not from the name."""
    d = _json(cli, "nvidia-l4")  # the GKE label resolves too
    per_vm = {m["machineType"]: m["gpusPerVm"] for m in d["machineTypes"]}
    assert per_vm["g2-standard-24"] == 2 and per_vm["g2-standard-32"] == 1
    assert d["networking"] == []
    _, out, _ = cli("catalog", "gpu", "l4")
    assert "GPU networking: none rendered" in out


def test_gb200_node_count_and_arch(cli) -> None:
    """A4X: arm64, node pools of training clusters in multiples of 18 (Vertex AI training
    clusters' compute page)."""
    d = _json(cli, "gb200")
    assert d["arch"] == "arm64"
    assert d["nodeCountMultipleOf"]["value"] == 18
    _cited(d["nodeCountMultipleOf"])


@pytest.mark.parametrize(("argv", "message", "hint"), [
    (["gpu", "h20"], "unknown GPU 'h20'", "did you mean 'h200'?"),
    (["gpu", "nvidia-h100-80g"], "unknown GPU 'nvidia-h100-80g'",
     "did you mean 'nvidia-h100-80gb'?"),
    (["gpu", "b2000"], "unknown GPU 'b2000'", "did you mean 'b200'?"),
    (["gpu", "v5e"], "'v5e' is a TPU, not a GPU", "mldiag-provision catalog tpu v5e"),
    (["tpu", "h100"], "'h100' is a GPU, not a TPU version",
     "mldiag-provision catalog gpu h100-80gb"),
    (["tpu", "a3-ultra"], "'a3-ultra' is a GPU, not a TPU version",
     "mldiag-provision catalog gpu h200-141gb"),
])
def test_did_you_mean(cli, argv: list[str], message: str, hint: str) -> None:
    code, out, err = cli("catalog", *argv)
    assert code == 2 and out == ""
    assert f"error: {message}" in err and hint in err


def test_tpu_flags_are_refused_for_gpus(cli) -> None:
    code, _, err = cli("catalog", "gpu", "h200", "--topology", "2x2")
    assert code == 2
    assert "--topology, --chips-per-vm and --diagram draw TPU slices" in err


@pytest.mark.parametrize(("version", "title"), [
    ("v6e", "TPU Trillium (v6e)  nodeSelector"),
    ("tpu7x", "Ironwood (TPU7x)  nodeSelector"),
    ("v5p", "TPU v5p  nodeSelector"),
])
def test_catalog_header_names_the_version_once(cli, version: str, title: str) -> None:
    code, out, _ = cli("catalog", "tpu", version)
    assert code == 0
    assert out.splitlines()[0].startswith(title)
