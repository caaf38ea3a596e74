"""One function over many inputs on several processes, results in input order.

``validate`` of many recipes (and any other per-file check) spends almost all of its time in
work that is independent per file. :func:`map_ordered` splits the inputs over worker
processes *forked* after the caller's ``prepare`` has imported and loaded what the work needs
(once, in this process: the workers share it), so a worker starts in a few milliseconds with
everything loaded; the results come back in input order, so the output
is the same bytes as a serial run. Small batches, one CPU, or a platform whose default start
method is not ``fork`` (macOS, Windows: a spawned worker would import everything again) run
serially in this process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Below this many inputs per worker, forking costs more than it saves (a recipe is checked in
# about a millisecond; starting and joining a forked worker costs several).
MIN_PER_WORKER = 64

# Inputs per task handed to a worker (at most): a worker that runs out of tasks waits, on
# average, for half of the other's last task, so tasks are kept to ~20 ms of recipes (a
# quarter of each worker's share was ~150 ms with 1,000 recipes on 2 workers); sending a task
# and its results costs ~0.1 ms.
MAX_CHUNK = 16


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def workers_for(count: int, jobs: int | None) -> int:
    """How many processes :func:`map_ordered` uses for ``count`` inputs.

    ``jobs``: the user's choice (``--jobs``); ``None`` or 0: one per available CPU. Never
    more than one per :data:`MIN_PER_WORKER` inputs, and 1 where forking is not the default.
    """
    if sys.platform != "linux":
        return 1
    wanted = jobs if jobs else available_cpus()
    return max(1, min(wanted, count // MIN_PER_WORKER))


def map_ordered(fn: Callable[[T], R], items: Sequence[T], jobs: int | None = None,
                prepare: Callable[[], object] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on :func:`workers_for` processes.

    ``fn`` and its results must be picklable (a module-level function; plain data). An
    exception raised by ``fn`` in a worker is raised here. ``prepare``: called here before
    the workers fork when there are several (imports, caches ``fn`` needs: done once and
    shared by the workers instead of once in each).
    """
    workers = workers_for(len(items), jobs)
    if workers <= 1:
        return [fn(x) for x in items]
    import gc
    import multiprocessing
    import signal

    # Ctrl-C is held until the pool is up. While ``prepare`` imports, an interrupt can land
    # in code CPython runs for a class definition (a dataclass's generated methods, a
    # ``__set_name__``, which wraps it in a RuntimeError) and surface as something else than
    # an interrupt; and a worker forked before its initializer ran would print a traceback.
    # Held, it is raised here once the pool exists, and the pool is stopped.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        if prepare is not None:
            prepare()
        # what exists now is never garbage for the workers: their collections skip it (and
        # leave its pages shared with this process)
        gc.freeze()
        ctx = multiprocessing.get_context("fork")
        pool = ctx.Pool(workers, initializer=_ignore_interrupt)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    # a few chunks per worker (even when some inputs take longer than others), and small ones
    chunk = max(1, min(MAX_CHUNK, len(items) // (workers * 4)))
    with pool:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a held Ctrl-C is raised here
        return pool.map(fn, items, chunksize=chunk)


def _ignore_interrupt() -> None:
    """In a worker: Ctrl-C reaches the whole process group, and only the parent answers it
    (it stops the workers and exits 130, as a serial run does), so a worker shows no
    traceback. The worker was forked with Ctrl-C held (:func:`map_ordered`); ignored, a held
    one is dropped, and it is no longer held."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
