"""Batches on several processes give what one process gives (mldiag_provision.batch), and
`validate -j N` prints the same bytes as `validate -j 1`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mldiag_provision import batch
from proc_support import default_sigint, started

ROOT = Path(__file__).resolve().parents[2]

# These tests fork inside the pytest process, where other tests of the same worker may have
# imported JAX (tests/workloads), whose import warns at every later os.fork(). The CLI never
# imports JAX on the paths that fork (validate; tests/unit/test_batch.py checks what
# warm_up imports), and the forked helpers here run plain functions and os._exit: the
# warning is about this test process, not the product.
pytestmark = pytest.mark.filterwarnings(
    "ignore:os.fork\\(\\) was called.*JAX is multithreaded:RuntimeWarning")


def _square_or_fail(x: int) -> int:
    if x == 77:
        raise ValueError("seventy-seven")
    return x * x


def test_workers_for() -> None:
    assert batch.workers_for(10, None) == 1  # too few inputs to pay for a fork
    assert batch.workers_for(10_000, 1) == 1
    assert batch.workers_for(10_000, 3) == (3 if sys.platform == "linux" else 1)
    assert batch.workers_for(2 * batch.MIN_PER_WORKER, 8) == (2 if sys.platform == "linux"
                                                               else 1)
    assert batch.workers_for(10_000, None) == (batch.available_cpus()
                                               if sys.platform == "linux" else 1)


@pytest.mark.skipif(sys.platform != "linux", reason="workers fork on Linux only (serial "
                    "elsewhere, which the other tests cover)")
def test_results_come_back_in_input_order_from_workers() -> None:
    items = list(range(1000, 500, -1))
    assert batch.workers_for(len(items), 2) == 2
    assert batch.map_ordered(_square_or_fail, items, 2) == [x * x for x in items]


_PARENT = [0]


def _slowly(x: int) -> int:
    """In this process: leave the helpers time to take tasks too."""
    import time

    time.sleep(0.002)
    return x


def _fail_in_helper(x: int) -> int:
    import os

    if os.getpid() != _PARENT[0]:
        raise ValueError(f"failed in a helper at {x}")
    return _slowly(x)


class _Unpicklable(Exception):
    def __reduce__(self) -> object:
        raise TypeError("not picklable")


def _unpicklable_in_helper(x: int) -> int:
    import os

    if os.getpid() != _PARENT[0]:
        raise _Unpicklable(f"odd failure at {x}")
    return _slowly(x)


def _die_in_helper(x: int) -> int:
    import os

    if os.getpid() != _PARENT[0]:
        os._exit(3)
    return _slowly(x)


def _big(x: int) -> str:
    return str(x) * (50_000 if x % 7 == 0 else 1)  # frames larger than a pipe's buffer


linux_only = pytest.mark.skipif(sys.platform != "linux", reason="helpers fork on Linux only")


def _children() -> set[int]:
    """This process's child pids, running or unreaped (Linux ``/proc/self/task/*/children``):
    the helpers a map started must not outlive it, whatever other tests of this worker keep
    running (a session's Slurm daemons, say), so tests compare before and after."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found



@linux_only
@pytest.mark.parametrize(("jobs", "count", "max_tasks"), [(2, 1000, batch.MAX_TASKS),
                                                          (3, 999, batch.MAX_TASKS),
                                                          (2, 1000, 7)])
def test_every_task_comes_back_once_in_order(monkeypatch: pytest.MonkeyPatch, jobs: int,
                                             count: int, max_tasks: int) -> None:
    monkeypatch.setattr(batch, "MAX_TASKS", max_tasks)  # 7: tasks of 143 items
    items = list(range(count))
    assert batch.map_ordered(_big, items, jobs) == [_big(x) for x in items]


@linux_only
def test_a_helper_s_failure_is_raised_here_and_the_helpers_are_stopped() -> None:
    import os

    _PARENT[0] = os.getpid()
    before = _children()
    with pytest.raises(ValueError, match="failed in a helper"):
        batch.map_ordered(_fail_in_helper, list(range(2000)), 3)
    with pytest.raises(RuntimeError, match="_Unpicklable: odd failure"):
        batch.map_ordered(_unpicklable_in_helper, list(range(2000)), 2)
    with pytest.raises(RuntimeError, match="worker process failed"):
        batch.map_ordered(_die_in_helper, list(range(2000)), 2)
    assert _children() <= before  # none of the helpers left running or unreaped


_PREPARED: list[int] = []


def _prepare() -> None:
    _PREPARED.append(1)


def _prepared_count(_x: int) -> int:
    return len(_PREPARED)  # in a worker: what the parent had before the fork


def test_prepare_runs_here_once_before_the_workers_fork_and_never_serially() -> None:
    _PREPARED.clear()
    assert batch.map_ordered(_prepared_count, list(range(10)), 2, prepare=_prepare) \
        == [0] * 10  # one worker: runs here, fn loads what it needs itself
    assert _PREPARED == []
    if sys.platform == "linux":
        items = list(range(4 * batch.MIN_PER_WORKER))
        assert batch.map_ordered(_prepared_count, items, 2, prepare=_prepare) \
            == [1] * len(items)
        assert _PREPARED == [1]


def _prepare_interrupted() -> None:
    import signal
    import threading

    # Ctrl-C while the checks are being imported (sent to this thread: the CLI has no other,
    # a test runner may have some that do not hold it)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    _PREPARED.append(1)  # held: preparing goes on to the end


@pytest.mark.skipif(sys.platform != "linux", reason="workers fork on Linux only")
def test_ctrl_c_while_preparing_is_raised_once_the_pool_is_up() -> None:
    """An interrupt is held while ``prepare`` runs (in a class definition it could surface as
    a RuntimeError) and raised as KeyboardInterrupt after it, with the workers stopped."""

    _PREPARED.clear()
    before = _children()
    with default_sigint(), pytest.raises(KeyboardInterrupt):
        batch.map_ordered(_square_or_fail, list(range(4 * batch.MIN_PER_WORKER)), 2,
                          prepare=_prepare_interrupted)
    assert _PREPARED == [1]
    assert _children() <= before  # no helper left running, none left to reap


def test_warm_up_loads_everything_a_check_loads_on_first_use() -> None:
    """What a worker would import or load on its first recipes is loaded before the fork:
    after warm_up, checking every example imports no module of the package; and neither
    imports the engine units (a check needs their names only)."""
    code = ("import sys, glob\n"
            "from mldiag_provision.pipeline import check_file, warm_up\n"
            "warm_up()\n"
            "before = set(sys.modules)\n"
            "for path in sorted(glob.glob('recipes/*.yaml')):\n"
            "    assert check_file(path).report.ok, path\n"
            "print(sorted(m for m in set(sys.modules) - before "
            "if m.startswith('mldiag_provision')))\n"
            "print(sorted(m for m in sys.modules if m.startswith('mldiag_provision.engines')"
            " or m in ('subprocess', 'mldiag_provision.runner')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "[]"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failure_in_a_worker_is_raised_here(jobs: int) -> None:
    with pytest.raises(ValueError, match="seventy-seven"):
        batch.map_ordered(_square_or_fail, list(range(300)), jobs)


def test_validate_in_parallel_prints_what_one_process_prints(tmp_path: Path) -> None:
    examples = [p.read_text() for p in sorted((ROOT / "recipes").glob("*.yaml"))]
    files = []
    for i in range(150):  # every example, a broken one and an unreadable path among them
        text = examples[i % len(examples)]
        text = re.sub(r"(?m)^(  name: )(\S+)$", lambda m, i=i: f"{m[1]}{m[2]}-{i}", text,
                      count=1)
        if i == 40:
            text = text.replace("spec:", "spec:\n  bogus: 1", 1)
        path = tmp_path / f"r{i:03d}.yaml"
        path.write_text(text)
        files.append(str(path))
    files.insert(70, str(tmp_path / "missing.yaml"))
    outs = {}
    for jobs in ("1", "2"):
        for fmt in ("text", "json"):
            proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "validate",
                                   "-j", jobs, "-O", fmt, *files],
                                  capture_output=True, text=True, check=False)
            outs[jobs, fmt] = (proc.returncode, proc.stdout, proc.stderr)
    for fmt in ("text", "json"):
        assert outs["1", fmt] == outs["2", fmt]
        assert outs["1", fmt][0] == 2  # the missing file is a usage error
    text = outs["1", "text"][1]
    assert "unknown key 'bogus'" in text and "missing.yaml: no such file" in text


@pytest.mark.skipif(sys.platform != "linux", reason="workers fork on Linux only")
@pytest.mark.parametrize("delay", [0.3, 0.6, 1.2])  # workers importing, checking, ...
def test_ctrl_c_stops_a_parallel_validate_without_worker_tracebacks(tmp_path: Path,
                                                                    delay: float) -> None:
    """A terminal's Ctrl-C reaches the whole process group: the workers ignore it, the
    parent stops them and exits 130 with one line."""
    import os
    import signal
    import time

    text = (ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml").read_text()
    files = []
    for i in range(1500):
        path = tmp_path / f"r{i:04d}.yaml"
        path.write_text(text)
        files.append(str(path))
    with started([sys.executable, "-m", "mldiag_provision", "validate", "-j", "2", *files],
                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before the interrupt (a very fast machine)")
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
