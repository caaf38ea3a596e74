"""What a fresh-user review of main found (2026-12-02), each as a test: no exit 70, no hang,
no wrong words, no silent fall-back to Google Cloud."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stack_support import REPO_ROOT

RECIPE = str(REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")


def test_an_unknown_sandbox_switch_value_is_refused_not_read_as_off(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MLDIAG_SANDBOX guards against reaching Google Cloud: a typo must not mean off."""
    monkeypatch.setenv("MLDIAG_SANDBOX", "banana")
    work = tmp_path / "stack"
    rc, _, err = cli("plan", RECIPE, "-o", str(work))
    assert rc == 2, err
    assert "MLDIAG_SANDBOX='banana' is neither on nor off" in err
    assert not work.exists()  # nothing rendered, no terraform run
    for value in ("0", "off", "false", ""):
        monkeypatch.setenv("MLDIAG_SANDBOX", value)
        rc, _, err = cli("output", RECIPE, "-o", str(work))
        assert "neither on nor off" not in err, (value, err)


def test_policy_and_fleet_name_a_fifo_as_what_it_is(cli, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    rc, _, err = cli("policy", str(fifo))
    assert rc == 2 and "is not a regular file (a named pipe, device or socket)" in err, err
    for verb in ("validate", "matrix"):
        rc, _, err = cli("fleet", verb, str(fifo))
        assert rc == 2 and "not a regular file" in err, (verb, err)
        assert "no such file" not in err


def test_fleet_reads_a_recipe_that_is_not_utf8_without_crashing(cli, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "bin.yaml").write_bytes(b"kind: Recipe\nname: \xff\xfe\n")
    rc, out, err = cli("fleet", "validate", str(fleet))
    assert rc == 2 and "not UTF-8 text" in out + err, out + err
    for argv in (("matrix", str(fleet), "--output", "json"), ("atlantis", str(fleet))):
        rc, out, err = cli("fleet", *argv)
        assert rc != 70 and "internal error" not in err, (argv, err)
        assert "bin.yaml" in out


def test_a_file_given_as_the_sandbox_work_directory_is_named_as_a_file(
        cli, tmp_path: Path) -> None:
    """`-o FILE` with --sandbox, and `sandbox ls|reset|kubeconfig|serve -o FILE`: exit 2
    saying it is a file (was exit 70, NotADirectoryError, or 'has no sandbox')."""
    afile = tmp_path / "cheap.yaml"
    afile.write_text("x: 1\n")
    for verb in ("apply", "plan", "verify", "output", "destroy"):
        rc, _, err = cli(verb, RECIPE, "-o", str(afile), "--sandbox")
        assert rc == 2, (verb, err)
        assert f"{afile} is a file, not a work directory" in err, (verb, err)
    for action in ("ls", "reset", "kubeconfig"):
        rc, _, err = cli("sandbox", action, "-o", str(afile))
        assert rc == 2 and "is a file, not a work directory" in err, (action, err)
    assert afile.read_text() == "x: 1\n"


def test_a_mistyped_command_gets_the_closest_one(cli) -> None:
    """Python 3.11's argparse lists the choices but names none (second review: `aply`)."""
    for argv, close in ((("aply", RECIPE), "apply"), (("sandbox", "lss"), "ls"),
                        (("fleet", "valdate"), "validate")):
        rc, _, err = cli(*argv)
        assert rc == 2 and f"(did you mean '{close}'?)" in err, (argv, err)
    rc, _, err = cli("zzzz", RECIPE)
    assert rc == 2 and "did you mean" not in err and "invalid choice: 'zzzz'" in err


def test_the_top_level_help_names_every_sandbox_action(cli) -> None:
    """Second review: the one-line help listed ls and reset only."""
    rc, out, _ = cli("--help")
    text = " ".join(out.split())  # the help wraps
    entry = text[text.index(" sandbox the local double"):text.index(" fleet many recipes")]
    assert rc == 0 and all(a in entry for a in ("ls", "reset", "rules", "kubeconfig", "serve"))


def test_lint_of_a_recipe_says_to_validate_it(cli) -> None:
    """Second review: `lint recipes/X.yaml` said only that Kubernetes has no kind Recipe."""
    rc, out, _ = cli("lint", RECIPE)
    assert rc == 1, out
    assert "this is an mldiag-provision recipe, not a Kubernetes manifest: check it with " \
           "mldiag-provision validate FILE" in out
