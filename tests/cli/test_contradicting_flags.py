"""Flags that contradict each other are refused with a usage error (exit 2) naming both,
and the refusal says the command that would work (issue 31: "apply --stage workloads
--no-workloads exits 0 having done nothing", "render --check --force ignores --force").
Nothing is written."""

from __future__ import annotations

from pathlib import Path

from stack_support import REPO_ROOT

AUTOPILOT = str(REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")
STANDARD = str(REPO_ROOT / "recipes" / "tpu-v5e-private-standard.yaml")


def test_apply_of_only_the_workloads_without_the_workloads(cli, tmp_path: Path) -> None:
    work = tmp_path / "stack"
    rc, _, err = cli("apply", AUTOPILOT, "-o", str(work), "--stage", "workloads",
                     "--no-workloads", "--auto-approve")
    assert rc == 2, err
    assert "--stage workloads and --no-workloads contradict each other" in err
    assert f"`mldiag-provision apply {AUTOPILOT} -o {work} --stage workloads`" in err
    assert not work.exists()


def test_render_check_writes_nothing_so_force_cannot_apply(cli, tmp_path: Path) -> None:
    work = tmp_path / "stack"
    rc, _, err = cli("render", AUTOPILOT, "-o", str(work), "--check", "--force")
    assert rc == 2
    assert "--force" in err and "--check" in err and "not allowed with" in err
    assert not work.exists()


def test_lint_autopilot_against_a_standard_recipe(cli, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    rc, _, err = cli("lint", str(manifest), "--recipe", STANDARD, "--autopilot")
    assert rc == 2
    assert f"--autopilot contradicts --recipe {STANDARD}" in err
    assert "gke-standard is not Autopilot" in err and "drop --autopilot" in err
    # agreeing flags stay accepted
    rc, out, _ = cli("lint", str(manifest), "--recipe", AUTOPILOT, "--autopilot")
    assert rc == 0 and "Autopilot" in out


def test_the_suggested_command_can_be_pasted(cli, tmp_path: Path) -> None:
    """Paths with spaces are quoted for the shell, and inside the sandbox the suggestion
    keeps --sandbox (fresh-user review)."""
    import shutil

    recipe = tmp_path / "with space é.yaml"
    shutil.copy(AUTOPILOT, recipe)
    work = tmp_path / "sp dir é"
    rc, _, err = cli("apply", str(recipe), "-o", str(work), "--stage", "workloads",
                     "--no-workloads", "--sandbox", "--auto-approve")
    assert rc == 2, err
    assert f"`mldiag-provision apply '{recipe}' -o '{work}' --stage workloads --sandbox`" \
        in err, err
