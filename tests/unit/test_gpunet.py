"""GPUDirect networking of GKE Standard GPU pools (issue 14): the recipe field, the plan,
the rendered Terraform / manifests and the preflight rules. Every assertion here fails on the
code before slices[].networking existed (the field was refused as unknown)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_text
from stack_support import REPO_ROOT, render_files

A3_ULTRA = REPO_ROOT / "recipes" / "gpu-a3-ultra-standard.yaml"
A3_MEGA = REPO_ROOT / "recipes" / "gpu-a3-mega-standard.yaml"


def _recipe(slices: str, orchestrator: str = "gke-standard", extra: str = "") -> str:
    return f"""apiVersion: mldiag-provision/v1alpha1
kind: Recipe
metadata: {{name: gpunet-test}}
spec:
  project: my-ml-project
  region: us-central1
  zone: us-central1-c
  orchestrator: {{type: {orchestrator}{extra}}}
  slices:
{slices}
  diagnostics: {{logAnalytics: {{retentionDays: 30}}}}
"""


def _validate(tmp_path: Path, text: str) -> list[dict]:
    """Preflight problems of ``text`` as {rule, severity, message}."""
    res = check_text(text, "<test>", load_catalog())
    return [{"rule": p.rule, "severity": p.severity.value, "message": p.message}
            for p in res.report.problems]


def test_a3_ultra_renders_rdma_networks_cluster_and_pool(tmp_path: Path) -> None:
    files = render_files(A3_ULTRA)
    main = files["main.tf"].decode()
    assert 'module "gpu_network"' in main
    assert 'network_profile = "us-east5-a-vpc-roce"' in main
    assert main.count('name = "gpu-a3-ultra-standard-a3u-rdma-') == 8
    assert "enable_multi_networking       = true" in main
    assert 'additional_networks = [{ network = "gpu-a3-ultra-standard-a3u-gvnic"' in main
    assert "modules/network/gpu-vpcs/main.tf" in files
    objs = list(yaml.safe_load_all(files["k8s/workloads/00-gpu-networking.yaml"]))
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objs]
    assert ("GKENetworkParamSet", "a3u-rdma-7") in kinds and ("Network", "a3u-gvnic") in kinds
    params = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "GKENetworkParamSet"}
    assert params["a3u-gvnic"]["deviceMode"] == "NetDevice"
    assert params["a3u-rdma-0"] == {"vpc": "gpu-a3-ultra-standard-a3u-rdma",
                                    "vpcSubnet": "gpu-a3-ultra-standard-a3u-rdma-0",
                                    "deviceMode": "RDMA"}
    ds = [o for o in objs if o["kind"] == "DaemonSet"]
    assert [d["metadata"]["name"] for d in ds] == ["nccl-rdma-installer"]
    image = ds[0]["spec"]["template"]["spec"]["initContainers"][0]["image"]
    assert image.endswith("nccl-plugin-gib:v1.0.3")  # pinned upstream tag


def _pod_template(files: dict) -> dict:
    """The pod template of the rendered pretrain workload (the bundled GPU recipes run a
    JobSet of one slice; a Job keeps it at spec.template)."""
    [obj] = [o for o in yaml.safe_load_all(files["k8s/workloads/pretrain.yaml"])
             if o["kind"] in ("Job", "JobSet")]
    if obj["kind"] == "JobSet":
        [rjob] = obj["spec"]["replicatedJobs"]
        return rjob["template"]["spec"]["template"]
    return obj["spec"]["template"]


def test_workload_pods_carry_the_interface_annotations() -> None:
    files = render_files(A3_ULTRA)
    ann = _pod_template(files)["metadata"]["annotations"]
    assert ann["networking.gke.io/default-interface"] == "eth0"
    ifaces = json.loads(ann["networking.gke.io/interfaces"])
    assert ifaces[0] == {"interfaceName": "eth0", "network": "default"}
    assert [i["network"] for i in ifaces[1:]] == ["a3u-gvnic"] + [f"a3u-rdma-{n}"
                                                                  for n in range(8)]


def test_a3_mega_gets_tcpxo_daemon_and_nri_injector() -> None:
    files = render_files(A3_MEGA)
    main = files["main.tf"].decode()
    assert main.count("-gpunic-") >= 8 and "vpc-roce" not in main
    objs = list(yaml.safe_load_all(files["k8s/workloads/00-gpu-networking.yaml"]))
    names = {o["metadata"]["name"] for o in objs if o["kind"] == "DaemonSet"}
    assert names == {"nccl-tcpxo-installer", "device-injector"}
    pod = _pod_template(files)
    assert "devices.gke.io/container.tcpxo-daemon" in pod["metadata"]["annotations"]
    sidecar = pod["spec"]["initContainers"][0]
    assert sidecar["name"] == "tcpxo-daemon" and sidecar["restartPolicy"] == "Always"


def test_stacks_without_gpu_networking_keep_their_files() -> None:
    files = render_files(REPO_ROOT / "recipes" / "tpu7x-2x2x4-standard.yaml")
    assert "gpu_network" not in files["main.tf"].decode()
    assert not any(p.startswith("modules/network/") for p in files)
    assert "gpu_networks" not in json.loads(files[".mldiag/plan.json"])


def test_explicit_off_renders_nothing_and_warns(tmp_path: Path) -> None:
    text = _recipe("    - {name: g, gpu: h200-141gb, machineType: a3-ultragpu-8g, nodes: 2, "
                   "networking: {mode: none}}")
    assert "gpu_network" not in render_files(text=text)["main.tf"].decode()
    found = [p for p in _validate(tmp_path, text) if p["rule"] == "gpunet-off"]
    assert found and found[0]["severity"] == "warning"


def test_single_vm_auto_is_off() -> None:
    text = _recipe("    - {name: g, gpu: h200-141gb, machineType: a3-ultragpu-8g, nodes: 1}")
    assert "gpu_network" not in render_files(text=text)["main.tf"].decode()


def test_mode_must_fit_machine_type(tmp_path: Path) -> None:
    text = _recipe("    - {name: g, gpu: h100-mega-80gb, machineType: a3-megagpu-8g, nodes: 2, "
                   "networking: {mode: gpudirect-rdma}}")
    found = [p for p in _validate(tmp_path, text) if p["rule"] == "gpunet-mode"]
    assert found and found[0]["severity"] == "error" and "gpudirect-tcpxo" in found[0]["message"]


def test_autopilot_refuses_an_explicit_mode(tmp_path: Path) -> None:
    text = _recipe("    - {name: g, gpu: h100-mega-80gb, nodes: 2, "
                   "networking: {mode: gpudirect-tcpxo}}", orchestrator="gke-autopilot")
    found = [p for p in _validate(tmp_path, text) if p["rule"] == "gpunet-mode"]
    assert found and "gke-standard node pools only" in found[0]["message"]


def test_overlapping_and_too_small_ranges(tmp_path: Path) -> None:
    text = _recipe(
        "    - {name: a, gpu: h200-141gb, machineType: a3-ultragpu-8g, nodes: 2}\n"
        "    - {name: b, gpu: h200-141gb, machineType: a3-ultragpu-8g, nodes: 2, "
        "networking: {cidr: 192.168.0.0/17}}\n"
        "    - {name: c, gpu: h200-141gb, machineType: a3-ultragpu-8g, nodes: 300, "
        "networking: {cidr: 10.9.0.0/24}}")
    msgs = [p["message"] for p in _validate(tmp_path, text) if p["rule"] == "gpunet-cidr"]
    assert any("overlaps slice a" in m for m in msgs)
    assert any("300 VMs need 304" in m for m in msgs)


def test_old_gke_version_warns(tmp_path: Path) -> None:
    text = _recipe("    - {name: g, gpu: h100-mega-80gb, machineType: a3-megagpu-8g, nodes: 2}",
                   extra=", minVersion: 1.28.9-gke.1000000")
    found = [p for p in _validate(tmp_path, text) if p["rule"] == "gpunet-version"]
    assert found and "1.28.10-gke.1141000" in found[0]["message"]


def test_long_names_are_refused(tmp_path: Path) -> None:
    slice_name = "s" + "x" * 50
    text = _recipe(f"    - {{name: {slice_name}, gpu: h200-141gb, machineType: a3-ultragpu-8g, "
                   "nodes: 2}")
    found = [p for p in _validate(tmp_path, text) if p["rule"] == "gpunet-names"]
    assert found and found[0]["severity"] == "error"
    assert "characters" in found[0]["message"]


def test_lint_checks_network_objects_against_the_upstream_crd() -> None:
    from mldiag_provision.lint.context import LintOptions
    from mldiag_provision.lint.linter import lint_sources
    from mldiag_provision.lint.loading import Source
    from mldiag_provision.lint.schema import default_version

    opts = LintOptions(default_version(), diagnostics=False)
    files = render_files(A3_ULTRA)
    text = files["k8s/workloads/00-gpu-networking.yaml"].decode()
    assert lint_sources([Source("net.yaml", text)], opts).problems == []
    broken = text.replace("deviceMode: RDMA", "deviceMode: RoCE", 1)
    problems = lint_sources([Source("net.yaml", broken)], opts).problems
    assert [(p.rule, p.path) for p in problems] == [("k8s-schema", "spec.deviceMode")]
    assert problems[0].expected == "DPDK-VFIO, NetDevice, RDMA"
    assert "gke-networking-api" in str(problems[0].source)
