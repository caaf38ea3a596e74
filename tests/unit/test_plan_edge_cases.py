"""Plan edge cases found in review."""

from __future__ import annotations

import yaml

from stack_support import REPO_ROOT, render_files


def test_gpu_only_standard_with_manual_agents_and_no_min_version_renders() -> None:
    """GPU slices need no GKE minimum and manual agents need none either: the plan used to
    crash (max() of nothing); now the channel's default version is used and said so."""
    doc = yaml.safe_load((REPO_ROOT / "recipes/gpu-a3-ultra-standard.yaml").read_text())
    doc["spec"]["diagnostics"]["agents"] = "manual"
    doc["spec"]["orchestrator"].pop("minVersion", None)
    files = render_files(text=yaml.safe_dump(doc, sort_keys=False))
    main = files["main.tf"].decode()
    assert "min_master_version            = null" in main
    assert "the release channel's default" in files["README.md"].decode()
