"""The real path, against real Google Cloud: runs only when a project and credentials are
given (``MLDIAG_IT_PROJECT`` plus application default credentials or
``GOOGLE_OAUTH_ACCESS_TOKEN``), and network to registry.terraform.io and Google exists; a
visible skip otherwise. Everything else about Google Cloud is tested against the wire-level
stand-ins in mldiag_provision/sandbox/.

``plan`` only by default (creates nothing); ``MLDIAG_IT_APPLY=1`` also runs the whole
lifecycle (apply every stage -> verify -> no-change plan -> destroy) on the tpu7x Autopilot
example: it creates a cluster and costs money.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from stack_support import REPO_ROOT

PROJECT = os.environ.get("MLDIAG_IT_PROJECT")
pytestmark = pytest.mark.skipif(
    not PROJECT, reason="no MLDIAG_IT_PROJECT: the real Google Cloud test needs a project "
                        "and credentials (visible skip)")


def _recipe(tmp_path: Path) -> Path:
    doc = yaml.safe_load((REPO_ROOT / "recipes/tpu7x-2x2x2-autopilot.yaml").read_text())
    doc["spec"]["project"] = PROJECT
    doc["spec"]["engine"] = {"name": "terraform", "backend": {"type": "local"}}
    doc["spec"]["orchestrator"]["deletionProtection"] = False
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_real_plan_and_optional_lifecycle(tmp_path: Path, cli) -> None:
    r = str(_recipe(tmp_path))
    work = str(tmp_path / "work")
    code, out, err = cli("plan", r, "-o", work)
    assert code == 0, out + err
    assert "module.cluster.google_container_cluster.this" in out
    if os.environ.get("MLDIAG_IT_APPLY") != "1":
        return
    try:
        code, out, err = cli("apply", r, "-o", work, "--auto-approve")
        assert code == 0, out + err
        code, out, err = cli("verify", r, "-o", work)
        assert code == 0, out + err
        code, out, err = cli("plan", r, "-o", work, "--detailed-exitcode")
        assert code == 0, out + err
    finally:
        code, out, err = cli("destroy", r, "-o", work, "--auto-approve", "--delete-profiles")
        assert code == 0, out + err
