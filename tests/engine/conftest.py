"""Fixtures for the engine tests: the offline stand-in providers installed as a Terraform
provider mirror (mldiag_provision/sandbox/), the stand-in Kubernetes API server playing the
cluster of
the stand-in cloud, and recipe copies that the stand-in can apply.

Fixtures:
  * ``standin`` (session): the provider mirror (hashicorp/google, google-beta, kubernetes,
    helm); ``None`` when terraform is missing and that is explicitly allowed;
  * ``offline``: a fresh cloud directory with this test's environment pointed at the
    stand-in (returns the cloud directory);
  * ``offline_cluster``: ``offline`` plus a stand-in API server for that cloud
    (:class:`OfflineCluster`: ``.cloud``, ``.api``, ``.token``, ``.env``); the environment gets
    ``MLDIAG_STANDIN_APISERVER``, ``MLDIAG_STANDIN_APISERVER_CA`` and
    ``GOOGLE_OAUTH_ACCESS_TOKEN`` (the token the API server accepts), so a cluster the
    google stand-in creates answers at that server.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from stack_support import terraform_binary


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory):
    """The stand-in mirror (None when terraform is missing and that is explicitly allowed)."""
    if terraform_binary() is None:
        return None
    from mldiag_provision.sandbox.mirror import install

    return install(tmp_path_factory.mktemp("standin"))


@pytest.fixture
def offline(standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Environment of this test pointed at the stand-in, with a fresh "cloud" directory.

    Returns the cloud directory (None when terraform is missing and allowed).
    """
    if standin is None:
        return None
    cloud = tmp_path / "cloud"
    cloud.mkdir()
    for key, value in standin.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("MLDIAG_STANDIN_CLOUD", str(cloud))
    monkeypatch.delenv("MLDIAG_STANDIN_FAIL", raising=False)
    monkeypatch.delenv("MLDIAG_STANDIN_DELAY", raising=False)
    monkeypatch.delenv("TF_LOG", raising=False)
    for key in ("MLDIAG_STANDIN_APISERVER", "MLDIAG_STANDIN_APISERVER_CA",
                "GOOGLE_OAUTH_ACCESS_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    return cloud


@dataclass
class OfflineCluster:
    """A stand-in cloud with its stand-in API server (see ``offline_cluster``)."""

    cloud: Path
    api: object  # mldiag_provision.sandbox.apiserver.ApiServer
    token: str
    ca_file: Path
    env: dict[str, str]

    def seed_existing_cluster(self, recipe: Path, **kwargs: object) -> dict:
        """Put the GKE cluster an existing-cluster recipe names into the empty cloud, with a
        node pool per slice (machine type, VMs and topology from the recipe's plan), as if
        it had been created outside this tool. Keyword arguments go to
        :func:`mldiag_provision.sandbox.gke_cluster.seed_gke_cluster` (``autopilot``,
        ``managed_ml_diagnostics``, ``version``)."""
        return seed_recipe_cluster(self.cloud, recipe, self.api, **kwargs)


def seed_recipe_cluster(cloud: Path, recipe: Path, api: object, **kwargs: object) -> dict:
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan
    from mldiag_provision.sandbox.gke_cluster import seed_gke_cluster

    catalog = load_catalog()
    res = check_file(str(recipe), catalog)
    assert res.parsed.recipe is not None and not res.report.errors, res.report
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    orch = yaml.safe_load(recipe.read_text(encoding="utf-8"))["spec"]["orchestrator"]
    pools = []
    for sp in plan.slices:
        for i in range(sp.count):
            pool = {"name": sp.name if sp.count == 1 else f"{sp.name}-{i}",
                    "machine_type": sp.machine_type or "a3-highgpu-8g",
                    "node_count": sp.vms, "zone": plan.zone,
                    "tpu_topology": sp.topology if sp.kind == "tpu" and sp.multi_host else None,
                    "labels": {"mldiag-provision/slice": sp.name}}
            if sp.kind == "gpu":
                pool.update(gpu_type=sp.accelerator, gpu_count=sp.chips_per_vm)
            pools.append(pool)
    return seed_gke_cluster(cloud, project=plan.project,
                            location=orch.get("clusterLocation") or plan.region,
                            name=plan.agents.access.cluster, api=api,  # type: ignore[union-attr]
                            node_pools=pools, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def offline_cluster(offline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``offline`` plus a stand-in Kubernetes API server bound to its cloud directory.

    The server answers once a ``google_container_cluster`` exists in the cloud (503 before);
    it requires the bearer token put in ``GOOGLE_OAUTH_ACCESS_TOKEN``. Returns an
    :class:`OfflineCluster` (None when terraform is missing and allowed).
    """
    if offline is None:
        yield None
        return
    from mldiag_provision.sandbox.gke_cluster import serve_cloud

    token = "standin-" + secrets.token_hex(8)
    api = serve_cloud(offline, token=token)
    ca_file = api.write_ca(tmp_path / "apiserver-ca.pem")
    env = {"MLDIAG_STANDIN_APISERVER": api.endpoint,
           "MLDIAG_STANDIN_APISERVER_CA": str(ca_file),
           "GOOGLE_OAUTH_ACCESS_TOKEN": token}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        yield OfflineCluster(cloud=offline, api=api, token=token, ca_file=ca_file,
                             env=dict(os.environ))
    finally:
        api.stop()


@pytest.fixture
def gcs(offline, monkeypatch: pytest.MonkeyPatch):
    """The stand-in Cloud Storage object listing for this test's cloud
    (``STORAGE_EMULATOR_HOST``; mldiag_provision/sandbox/gcs.py)."""
    if offline is None:
        yield None
        return
    from mldiag_provision.sandbox.gcs import GcsStandIn

    with GcsStandIn(offline) as server:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
        yield server


def offline_recipe(recipe: Path, dest: Path, *, deletion_protection: bool | None = False,
                   **spec_changes: object) -> Path:
    """A copy of ``recipe`` the stand-in can apply and destroy: local state (the stand-in has
    no GCS), cluster deletion protection as asked, plus ``spec_changes``."""
    doc = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    spec = doc["spec"]
    spec.setdefault("engine", {"name": "terraform"})["backend"] = {"type": "local"}
    orch = spec.get("orchestrator", {})
    if deletion_protection is not None and orch.get("type") in ("gke-autopilot",
                                                                "gke-standard"):
        orch["deletionProtection"] = deletion_protection
        if not deletion_protection:  # the policy gate of plan/apply would stop it
            waivers = spec.setdefault("policy", {}).setdefault("waivers", [])
            waivers.append({"rule": "gke-deletion-protection",
                            "reason": "offline test stack, destroyed by the test itself"})
    spec.update(spec_changes)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return dest


def cloud_objects(cloud: Path) -> dict[str, int]:
    """Objects in the stand-in's cloud: type -> count."""
    out: dict[str, int] = {}
    for p in cloud.rglob("*.json"):
        out[p.parent.name] = out.get(p.parent.name, 0) + 1
    return out


def env_without_color() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    return env
