"""Every filesystem shape is a clear error (issue 28 item 2): a file where a directory
belongs, a directory where a file belongs, a read-only file system, a FIFO, a device, a
dangling link. Each command run against each shape exits 2 or 3 with a message naming the
path, never 70 (internal error), never hangs, never gives wrong advice.

The commands run as the user runs them (a subprocess each). The 10 s limit is a guard
against a hang (a FIFO with no writer blocked validate/render/lint forever), not a speed
test: a command here fails before it does any real work.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mldiag_provision import ondisk, runner
from mldiag_provision.engines.terraform import translate

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "tpu-v5e-2x4-single-host-autopilot.yaml"
GUARD_S = 10


def _cli(*argv: str, cwd: Path = ROOT) -> tuple[int, str]:
    try:
        proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "--no-color", *argv],
                              capture_output=True, text=True, cwd=cwd, timeout=GUARD_S,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`mldiag-provision {' '.join(argv)}` still ran after {GUARD_S} s (a hang)")
    return proc.returncode, proc.stdout + proc.stderr


def _clean_error(code: int, text: str, *expected: str) -> None:
    assert code in (2, 3), (code, text)
    assert "internal error" not in text and "Traceback" not in text, text
    for words in expected:
        assert words in text, (words, text)


# --- inputs of every shape: validate, render, lint, plan ----------------------------------

def _input_shapes(tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (path, words the message must hold)."""
    fifo = tmp / "recipe.fifo"
    os.mkfifo(fifo)  # no writer: opening it for reading blocked forever
    dangling = tmp / "dangling.yaml"
    dangling.symlink_to(tmp / "gone.yaml")
    binary = tmp / "binary.yaml"
    binary.write_bytes(b"a: \xff\n")
    big = tmp / "big.yaml"
    big.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    return {
        "fifo": (str(fifo), "a named pipe (FIFO), not a regular file"),
        "device": ("/dev/zero", "a character device, not a regular file"),
        "dangling link": (str(dangling), "gone.yaml"),
        "directory": (str(tmp), "directory"),
        "not UTF-8": (str(binary), "not UTF-8"),
        "too large": (str(big), "larger than"),
    }


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    return _input_shapes(tmp_path_factory.mktemp("inputs"))


@pytest.mark.slow  # every reading command as a process, per shape
@pytest.mark.parametrize("shape", ["fifo", "device", "dangling link", "directory",
                                   "not UTF-8", "too large"])
def test_every_input_shape_is_a_usage_error_for_every_reading_command(
        inputs: dict[str, tuple[str, str]], shape: str, tmp_path: Path) -> None:
    path, words = inputs[shape]
    for argv in (("validate", path), ("render", path, "-o", str(tmp_path / "out")),
                 ("lint", path), ("plan", path, "-o", str(tmp_path / "out"), "--sandbox")):
        if argv[0] == "lint" and shape in ("directory", "too large"):
            continue  # lint reads a directory's manifests; its size limit is larger
        code, text = _cli(*argv)
        _clean_error(code, text, words)
        # one exit code for one fault: render agrees with validate (2, README exit codes)
        assert code == 2, (argv, text)
        assert not (tmp_path / "out").exists()


def test_render_and_validate_agree_on_an_unreadable_recipe(
        inputs: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    """Issue 28: render exited 1 where validate exited 2 for the same recipe."""
    for shape in ("not UTF-8", "too large"):
        path, _ = inputs[shape]
        codes = {_cli("validate", path)[0], _cli("render", path, "-o", str(tmp_path / "o"))[0]}
        assert codes == {2}, (shape, codes)


def test_open_regular_refuses_without_blocking(inputs: dict[str, tuple[str, str]]) -> None:
    with pytest.raises(ondisk.NotRegularFile, match="FIFO"):
        ondisk.open_regular(inputs["fifo"][0])
    with pytest.raises(ondisk.NotRegularFile, match="character device"):
        ondisk.open_regular("/dev/null")
    with pytest.raises(FileNotFoundError):
        ondisk.open_regular(inputs["dangling link"][0])
    with pytest.raises(IsADirectoryError):
        ondisk.open_regular(inputs["directory"][0])
    with ondisk.open_regular(RECIPE) as f:
        assert f.read(10)


# --- work directories of every shape: render, plan, apply, destroy ------------------------

@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stack") / "st"
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "render", str(RECIPE),
                           "-o", str(out)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _commands(workdir: Path) -> list[tuple[str, ...]]:
    w, r = str(workdir), str(RECIPE)
    return [("render", r, "-o", w), ("plan", r, "-o", w, "--sandbox"),
            ("apply", r, "-o", w, "--sandbox", "--auto-approve"),
            ("destroy", r, "-o", w, "--sandbox", "--auto-approve")]


def _mldiag_file(w: Path) -> None:
    shutil.rmtree(w / ".mldiag")
    (w / ".mldiag").write_text("not a directory\n")


def _logs_file(w: Path) -> None:
    (w / ".mldiag" / "logs").write_text("not a directory\n")


def _lock_dir(w: Path) -> None:
    (w / ".mldiag" / "lock").mkdir()


def _state_dir(w: Path) -> None:
    (w / "terraform.tfstate").mkdir()


def _mldiag_link(w: Path) -> None:
    shutil.rmtree(w / ".mldiag")
    (w / ".mldiag").symlink_to(w / "nowhere")


def _mldiag_open_to_others(w: Path) -> None:
    (w / ".mldiag").chmod(0o777)


def _state_file_open_to_group(w: Path) -> None:
    (w / ".mldiag" / "plan.json").chmod(0o664)


def _state_file_of_another_user(w: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(w / ".mldiag" / "plan.json", 12345, 12345)


SHAPES = {  # name -> (make it, words every command's message holds)
    ".mldiag is a file": (_mldiag_file, ".mldiag is a file, where mldiag-provision keeps a "
                                        "directory"),
    ".mldiag/logs is a file": (_logs_file, "logs is a file"),
    ".mldiag/lock is a directory": (_lock_dir, "lock is a directory"),
    "terraform.tfstate is a directory": (_state_dir, "terraform.tfstate is a directory"),
    ".mldiag is a dangling link": (_mldiag_link, ".mldiag is a symbolic link"),
    ".mldiag is writable by others": (_mldiag_open_to_others, "may be written by"),
    ".mldiag/plan.json is writable by its group": (_state_file_open_to_group,
                                                   "plan.json may be written by group"),
    ".mldiag/plan.json belongs to another user": (_state_file_of_another_user,
                                                  "plan.json belongs to user id 12345"),
}


@pytest.mark.slow  # every command as a process, per shape
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_workdir_shape_is_a_clear_error_for_every_command(
        rendered: Path, tmp_path: Path, shape: str) -> None:
    make, words = SHAPES[shape]
    work = tmp_path / "st"
    shutil.copytree(rendered, work, symlinks=True)
    make(work)
    for argv in _commands(work):
        if argv[0] == "render" and shape in ("terraform.tfstate is a directory",
                                             ".mldiag/logs is a file"):
            continue  # render reads neither the state nor the logs
        code, text = _cli(*argv)
        _clean_error(code, text, words)
        assert "force-unlock`" not in text  # never the advice to break a lock


def test_a_state_file_that_is_a_directory_is_not_called_a_held_lock() -> None:
    """What Terraform prints (captured from terraform 1.x, issue 28) is translated to what
    it is; a real lock conflict keeps its own message."""
    text = ("Error: Error acquiring the state lock\n\nError message: open terraform.tfstate: is "
            "a directory\n\nTerraform acquires a state lock to protect the state from being "
            "written\nby multiple users at the same time.")
    what, hint = translate(text) or ("", "")
    assert "cannot be opened" in what and "another" not in what
    assert "do not force-unlock" in hint and "see `terraform force-unlock`" not in hint
    held = translate("Error: Error acquiring the state lock\n\nError message: resource "
                     "temporarily unavailable\nLock Info:\n  ID: 1234")
    assert held is not None and held[0] == "another Terraform run holds the state lock"


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed")
def test_terraform_itself_on_a_state_directory_is_translated(tmp_path: Path) -> None:
    """The same with the real terraform's output (no provider: nothing downloaded)."""
    (tmp_path / "main.tf").write_text('output "x" {\n  value = 1\n}\n')
    (tmp_path / "terraform.tfstate").mkdir()
    env = {**os.environ, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    subprocess.run(["terraform", "init", "-no-color", "-input=false"], cwd=tmp_path, env=env,
                   capture_output=True, timeout=60, check=False)
    proc = subprocess.run(["terraform", "plan", "-no-color", "-input=false"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0
    what, _ = translate(proc.stdout + proc.stderr) or ("", "")
    assert "cannot be opened" in what, proc.stdout + proc.stderr


@contextlib.contextmanager
def _read_only_copy(src: Path, where: Path) -> Iterator[Path]:
    """``src`` seen through a read-only bind mount at ``where`` (root only)."""
    where.mkdir()
    try:
        subprocess.run(["mount", "--bind", str(src), str(where)], check=True,
                       capture_output=True, timeout=10)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        pytest.skip("cannot bind-mount here (needs root and mount privileges)")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(where)], check=True,
                       capture_output=True, timeout=10)
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False, capture_output=True, timeout=10)


@pytest.mark.parametrize("with_state", [True, False])
def test_a_work_directory_on_a_read_only_file_system(rendered: Path, tmp_path: Path,
                                                     with_state: bool) -> None:
    """Issue 28: stack/lock.py crashed (exit 70) on a read-only work directory. chmod does
    not restrict root, so the read-only file system is a real (bind) mount."""
    src = tmp_path / "src"
    if with_state:
        shutil.copytree(rendered, src / "st", symlinks=True)
    else:  # an empty directory to render into
        (src / "st").mkdir(parents=True)
    with _read_only_copy(src, tmp_path / "ro") as ro:
        for argv in _commands(ro / "st"):
            code, text = _cli(*argv)
            _clean_error(code, text, "Read-only file system")
            assert code == 2, (argv, text)


# --- spools of killed runs ----------------------------------------------------------------

def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_stale_spools_of_killed_runs_are_swept(tmp_path: Path) -> None:
    """Issue 28: a converged re-apply left the ``.run-XXXX`` spool of a killed run behind.
    The next run removes spools whose run and child have both exited, and only those."""
    logs = tmp_path / ".mldiag" / "logs"
    logs.mkdir(parents=True, mode=0o700)
    dead = _dead_pid()
    stale = logs / f".run-{dead}-abc"
    stale.mkdir(mode=0o700)
    (stale / "stdout").write_text("{}\n")
    (stale / runner.SPOOL_CHILD).write_text(str(_dead_pid()))
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        busy = logs / f".run-{dead}-busy"  # its run was killed, its terraform still writes
        busy.mkdir(mode=0o700)
        (busy / runner.SPOOL_CHILD).write_text(str(sleeper.pid))
        living = logs / f".run-{os.getppid()}-live"  # a run that is still going
        living.mkdir(mode=0o700)
        legacy = logs / ".run-k2j3h4"  # an older version's: no process id to judge by
        legacy.mkdir(mode=0o700)
        foreign = logs / f".run-{dead}-open"
        foreign.mkdir(mode=0o777)
        foreign.chmod(0o777)
        log = runner.CommandRunner(logs / "apply-1.log")
        result = log.run(["true"], cwd=tmp_path, task="a later run")
        log.close()
        assert result.returncode == 0
        left = sorted(p.name for p in logs.iterdir() if p.name.startswith(".run-"))
        assert left == sorted(p.name for p in (busy, living, legacy, foreign))
        assert not stale.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert runner.sweep_spools(logs) == [busy]  # its terraform has exited now


def test_a_group_writable_umask_still_makes_a_trusted_state_directory(tmp_path: Path) -> None:
    """With umask 002 (user-private groups), rendered directories are 0775 but .mldiag is
    never group-writable: the tool would refuse its own state directory otherwise."""
    import stat

    from mldiag_provision.render.writer import write_tree

    old = os.umask(0o002)
    try:
        out = tmp_path / "stack"
        write_tree(out, {"main.tf": b"# x\n", ".mldiag/plan.json": b"{}\n"},
                   generator="test", stack="s")
        write_tree(out, {"main.tf": b"# y\n", ".mldiag/plan.json": b"{}\n"},
                   generator="test", stack="s")
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        made = ondisk.state_dir(fresh)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o775
    assert stat.S_IMODE((out / "main.tf").stat().st_mode) == 0o664  # the umask's
    assert stat.S_IMODE((out / ".mldiag").stat().st_mode) == 0o755
    assert {stat.S_IMODE(p.stat().st_mode) for p in (out / ".mldiag").iterdir()} == {0o644}
    assert ondisk.state_dir(out) == str(out / ".mldiag")  # trusted: no ConflictError
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o755


@contextlib.contextmanager
def _full_file_system(where: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs at ``where``: too small for a stack (root only)."""
    where.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                       check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        pytest.skip("cannot mount a tmpfs here (needs root and mount privileges)")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False, capture_output=True, timeout=10)


def test_a_full_file_system_is_a_usage_error_for_every_command(tmp_path: Path) -> None:
    """A disk that fills while the sandbox starts raised OSError (ENOSPC) past every check:
    exit 70. Any such refusal of the file system is the environment's, exit 2."""
    with _full_file_system(tmp_path / "full") as full:
        for argv in _commands(full / "st"):
            code, text = _cli(*argv)
            _clean_error(code, text, "No space left on device", "free some space")
            assert code == 2, (argv, text)


def test_only_the_file_systems_refusals_become_usage_errors() -> None:
    import errno

    full = ondisk.environment_error(OSError(errno.ENOSPC, "No space left on device"))
    assert full is not None and "free some space" in (getattr(full, "hint", "") or "")
    ro = ondisk.environment_error(OSError(errno.EROFS, "Read-only file system", "/x/y"))
    assert ro is not None and "/x/y" in str(ro)
    assert ondisk.environment_error(OSError(errno.EPIPE, "Broken pipe")) is None
    assert ondisk.environment_error(OSError(errno.EINVAL, "Invalid argument")) is None
