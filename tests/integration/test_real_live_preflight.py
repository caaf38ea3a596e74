"""``preflight --live`` against the real Google Cloud project named by ``MLDIAG_IT_PROJECT``
(with application default credentials or ``GOOGLE_OAUTH_ACCESS_TOKEN``); a visible skip
otherwise. Every other live-check test runs against mldiag_provision/sandbox/gcp_apis.py.

What a real project answers is not known in advance (quotas, reservations, versions), so this
asserts what must hold anywhere: the project is found ACTIVE, every check answers with a
status and the object it looked at, nothing crashes (no ``internal`` rows), and the whole run
stays within a few seconds, and the quota ids of our data are ids Cloud Quotas knows (they
are unverified in Google's own words; this is where they get verified).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from stack_support import REPO_ROOT

PROJECT = os.environ.get("MLDIAG_IT_PROJECT")
pytestmark = pytest.mark.skipif(
    not PROJECT, reason="no MLDIAG_IT_PROJECT: the real live preflight needs a project and "
                        "credentials (visible skip)")


def test_real_live_preflight(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from mldiag_provision.preflight.live import credentials_present

    monkeypatch.delenv("MLDIAG_OFFLINE", raising=False)
    if not credentials_present():
        pytest.skip("MLDIAG_IT_PROJECT is set but no Google credentials were found")
    doc = yaml.safe_load((REPO_ROOT / "recipes/tpu7x-2x2x2-autopilot.yaml").read_text())
    doc["spec"]["project"] = PROJECT
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out, err = cli("preflight", str(recipe), "--live", "--output", "json")
    assert code in (0, 1), out + err
    result = json.loads(out)
    rows = result["checks"]
    assert {"PASS"} == {r["status"] for r in rows if r["check"] == "project"}, rows
    assert all(r["status"] in ("PASS", "FAIL", "WARN", "SKIP") and r["evidence"] for r in rows)
    assert not [r for r in rows if r["check"] == "internal"], rows
    assert result["elapsedS"] < 15, result["elapsedS"]
    # the TPU quota ids in preflight/live/data/gcp.yaml are unverified: a real project
    # tells whether Cloud Quotas knows them
    unknown = [r for r in rows if "does not know this id" in r["message"]]
    assert not unknown, f"fix the quota ids in preflight/live/data/gcp.yaml: {unknown}"
    # the regions.get usage metrics of the newer TPUs (gcp.yaml quotas usage, confidence L)
    # are unverified too: a real region tells whether it lists them
    unlisted = [r for r in rows if r["check"] == "quota" and "lists no metric" in r["message"]]
    assert not unlisted, f"fix the usage metrics in preflight/live/data/gcp.yaml: {unlisted}"
