"""Fixtures of the live-preflight tests: mldiag_provision/sandbox/gcp_apis.py (the
six Google Cloud APIs on the wire, answering from a FakeProject) with this test's environment
pointed at it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mldiag_provision.sandbox.gcp_apis import (
    FakeProject,
    GcpApis,
    quota_dims,
    region_quota,
    reservation,
)

ALL_VERSIONS = {"RAPID": ["1.36.1-gke.1000", "1.35.2-gke.1200", "1.34.3-gke.1100"],
                "REGULAR": ["1.35.2-gke.1200", "1.34.3-gke.1100"],
                "STABLE": ["1.34.3-gke.1100", "1.33.5-gke.1300"]}


def all_pass_project(project: str = "my-ml-project") -> FakeProject:
    """A project where the bundled example recipes can all succeed: every permission, every
    role, versions newer than every minimum, the machine types in the recipes' zones, the
    reservation of the v5p recipe, TPU/GPU quota; two APIs on (the stack turns on the rest)."""
    fp = FakeProject(project, enabled={"compute.googleapis.com", "storage.googleapis.com"},
                     channels={k: list(v) for k, v in ALL_VERSIONS.items()})
    fp.zones_offering = {
        "ct5p-hightpu-4t": ["us-east5-a", "us-east5-b"],
        "ct4p-hightpu-4t": ["us-central2-b"],
        "ct5lp-hightpu-4t": ["us-central1-a", "us-east5-b"],
        "ct6e-standard-4t": ["us-east5-b"],
        "a3-ultragpu-8g": ["us-east5-a"]}
    fp.reservations[(project, "us-east5-a", "v5p-reservation")] = reservation(
        "v5p-reservation", "us-east5-a", "ct5p-hightpu-4t", count=4)
    fp.reservations[(project, "us-east5-a", "a3-ultra-reservation")] = reservation(
        "a3-ultra-reservation", "us-east5-a", "a3-ultragpu-8g", count=2)
    for qid, region in [("TPU-V4-PODSLICE-per-project-region", "us-central2"),
                        ("TPU-V5-LITEPOD-per-project-region", "us-central1"),
                        ("PREEMPTIBLE-TPU-V6E-per-project-region", "us-east5")]:
        fp.quotas[qid] = [quota_dims(region, 64), {"dimensions": {}, "details":
                                                   {"value": "0"}}]
    fp.quotas["GPUS-PER-GPU-FAMILY-per-project-region"] = [
        quota_dims("us-east5", 16, gpu_family="NVIDIA_H200")]
    # current usage (Compute regions.get): some in use, enough left for every recipe
    fp.region_quotas = {
        "us-central2": [region_quota("CPUS", 96, 8), region_quota("TPU_PODSLICE_V4", 64, 16),
                        region_quota("E2_CPUS", 96, 8)],
        "us-central1": [region_quota("TPU_LITE_PODSLICE_V5", 64, 8),
                        region_quota("E2_CPUS", 96, 8)],
        "us-east5": [region_quota("PREEMPTIBLE_TPU_V6E", 64, 0),
                     region_quota("NVIDIA_H200_GPUS", 16, 0), region_quota("E2_CPUS", 96, 8),
                     region_quota("N2_CPUS", 96, 8)]}
    fp.clusters[("us-central1", "research-cluster")] = {
        "name": "research-cluster", "location": "us-central1",
        "currentMasterVersion": "1.35.2-gke.1200", "status": "RUNNING",
        "workloadIdentityConfig": {"workloadPool": f"{project}.svc.id.goog"}}
    return fp


@pytest.fixture
def gcp(monkeypatch: pytest.MonkeyPatch) -> Iterator[GcpApis]:
    """The stand-in APIs serving :func:`all_pass_project` (mutate ``gcp.project`` to break
    one thing); the environment points the live checks at it, with its bearer token."""
    with GcpApis(all_pass_project(), token="standin-" + secrets.token_hex(6)) as apis:
        for key, value in apis.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("MLDIAG_OFFLINE", raising=False)
        yield apis


def recipe_copy(repo_root: Path, name: str, dest: Path, **spec: object) -> Path:
    """``recipes/<name>.yaml`` with ``spec`` keys replaced (deep-merged one level)."""
    doc = yaml.safe_load((repo_root / "recipes" / f"{name}.yaml").read_text())
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(doc["spec"].get(key), dict):
            doc["spec"][key].update(value)
        else:
            doc["spec"][key] = value
    out = dest / f"{name}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out
