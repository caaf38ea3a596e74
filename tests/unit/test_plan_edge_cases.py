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


def test_render_into_a_file_or_under_one_is_a_usage_error(tmp_path, cli) -> None:
    """Same exit code (2) as apply/plan for -o naming a file, and the real cause named when
    a parent of -o is a file."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    recipe = str(REPO_ROOT / "recipes/tpu-v4-2x2x4-autopilot.yaml")
    code, out, err = cli("render", recipe, "-o", str(afile))
    assert code == 2 and "is a file" in err, out + err
    code, out, err = cli("render", recipe, "-o", str(afile / "sub"))
    assert code == 2 and f"{afile} is a file" in err, out + err
    assert afile.read_text() == "x"
