"""One function over many inputs on several processes, results in input order.

``validate`` of many recipes (and any other per-file check) spends almost all of its time in
work that is independent per file. :func:`map_ordered` shares the inputs between this process
and helper processes *forked* after the caller's ``prepare`` has imported and loaded what the
work needs (once, here: the helpers share it), so a helper starts in a few milliseconds with
everything loaded; whoever is free takes the next small task (:class:`_Run`), and the results
come back in input order, so the output is the same bytes as a serial run. Small batches, one
CPU, or a platform whose default start method is not ``fork`` (macOS, Windows: a spawned
worker would import everything again) run serially in this process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

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
    """``[fn(x) for x in items]``, on :func:`workers_for` processes: this one and helpers
    forked from it.

    ``fn`` and its results must be picklable (a module-level function; plain data). An
    exception raised by ``fn`` in a helper is raised here. ``prepare``: called here before
    the helpers fork when there are several (imports, caches ``fn`` needs: done once and
    shared by the helpers instead of once in each).
    """
    workers = workers_for(len(items), jobs)
    if workers <= 1:
        return [fn(x) for x in items]
    import gc
    import signal

    # Ctrl-C is held until the helpers run. While ``prepare`` imports, an interrupt can land
    # in code CPython runs for a class definition (a dataclass's generated methods, a
    # ``__set_name__``, which wraps it in a RuntimeError) and surface as something else than
    # an interrupt; a helper forked with it held ignores it before it can arrive. Held, it is
    # raised here once the helpers exist, and they are stopped. (Held by this thread: the CLI
    # has no other.)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        if prepare is not None:
            prepare()
        # what exists now is never garbage for the helpers: their collections skip it (and
        # leave its pages shared with this process)
        gc.freeze()
        run = _Run(fn, items, workers)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a held Ctrl-C is raised here
        return run.collect()
    finally:
        run.stop()


# Tasks of one run, at most: their numbers are written into a pipe before the helpers start
# (4 bytes each: 16 KiB, a quarter of a Linux pipe's buffer).
MAX_TASKS = 4096


class _Run:
    """One :func:`map_ordered` call on several processes.

    The inputs are cut into tasks of :data:`MAX_CHUNK` (or fewer) consecutive items. The task
    numbers wait in a pipe that every process reads 4 bytes at a time (a pipe read is atomic),
    so whoever is free takes the next task, this process included: it checks tasks too, and
    between two of them reads what the helpers sent. A helper sends each finished task as
    one frame (8-byte length, then the pickled task number and results) on its own pipe, and
    exits when no task is left. No thread, no ``multiprocessing`` (its import alone costs
    ~20 ms, its pool's start and stop ~15 ms).
    """

    def __init__(self, fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> None:
        import os

        self.fn = fn
        self.items = items
        n = len(items)
        self.chunk = max(1, min(MAX_CHUNK, n // (workers * 4)), -(-n // MAX_TASKS))
        count = -(-n // self.chunk)
        self.results: list[list[Any] | None] = [None] * count
        self.tasks, tasks_w = os.pipe()
        numbers = b"".join(k.to_bytes(4, "little") for k in range(count))
        while numbers:
            numbers = numbers[os.write(tasks_w, numbers):]
        os.close(tasks_w)
        self.helpers: dict[int, int] = {}  # the read end of a helper's pipe -> its pid
        self.pending: dict[int, bytearray] = {}  # bytes of a frame not yet complete
        for _ in range(workers - 1):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the helper (tested through it)
                self._helper(r, w)
            os.close(w)
            self.helpers[r] = pid
            self.pending[r] = bytearray()

    def _next(self) -> int | None:
        import os

        data = os.read(self.tasks, 4)
        return int.from_bytes(data, "little") if len(data) == 4 else None

    def _task(self, k: int) -> list[Any]:
        return [self.fn(x) for x in self.items[k * self.chunk:(k + 1) * self.chunk]]

    def _helper(self, own_r: int, out: int) -> None:  # pragma: no cover - in the helper
        """A helper's life: ignore Ctrl-C (the parent answers it), check tasks until none is
        left, send each; exit without running this process's exit handlers."""
        import os
        import pickle
        import signal

        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # drops a held one
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            for fd in (own_r, *self.helpers):
                os.close(fd)
            while (k := self._next()) is not None:
                try:
                    frame = pickle.dumps((k, self._task(k)), pickle.HIGHEST_PROTOCOL)
                except Exception as exc:  # fn failed: the parent raises it
                    frame = _pickled_error(exc)
                    k = None
                _send(out, frame)
                if k is None:
                    break
            code = 0
        finally:
            os._exit(code)

    def collect(self) -> list[Any]:
        """Check tasks here until none is left, then wait for the helpers' last ones."""
        while (k := self._next()) is not None:
            self.results[k] = self._task(k)
            self._receive(wait=False)
        while self.helpers:
            self._receive(wait=True)
        if any(r is None for r in self.results):  # pragma: no cover - a helper vanished
            raise RuntimeError("a worker process ended without sending its results")
        return [r for task in self.results if task is not None for r in task]

    def _receive(self, wait: bool) -> None:
        """Read what the helpers sent (all that is there; with ``wait``, at least once)."""
        import os
        import pickle
        import select

        while self.helpers:
            ready, _, _ = select.select(list(self.helpers), [], [], None if wait else 0)
            if not ready:
                return
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if not data:  # the helper is done
                    pid = self.helpers.pop(fd)
                    os.close(fd)
                    _, status = os.waitpid(pid, 0)
                    if status != 0:
                        raise RuntimeError(f"a worker process failed (wait status {status})")
                    continue
                buf = self.pending[fd]
                buf += data
                while len(buf) >= 8:
                    size = int.from_bytes(buf[:8], "little")
                    if len(buf) < 8 + size:
                        break
                    k, value = pickle.loads(buf[8:8 + size])
                    del buf[:8 + size]
                    if k is None:
                        raise value
                    self.results[k] = value
            if wait:
                return

    def stop(self) -> None:
        """End the helpers still running (after an error or Ctrl-C here) and close pipes."""
        import os
        import signal

        for fd, pid in self.helpers.items():
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        self.helpers.clear()
        os.close(self.tasks)


def _send(fd: int, frame: bytes) -> None:  # pragma: no cover - in a helper
    import os

    data = len(frame).to_bytes(8, "little") + frame
    while data:
        data = data[os.write(fd, data):]


def _pickled_error(exc: Exception) -> bytes:  # pragma: no cover - in a helper
    import pickle

    try:
        return pickle.dumps((None, exc), pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that does not pickle: its type and text
        return pickle.dumps((None, RuntimeError(f"{type(exc).__name__}: {exc}")))
