"""Fixtures for the engine tests: the offline stand-in providers installed as a Terraform
provider mirror (tests/standin/), and recipe copies that the stand-in can apply."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from stack_support import terraform_binary


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory):
    """The stand-in mirror (None when terraform is missing and that is explicitly allowed)."""
    if terraform_binary() is None:
        return None
    from standin.mirror import install

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
    return cloud


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
