"""``lint --jobs``: the Kubernetes schema checks of a large input set run in a forked process
while the parent runs the rules (issue 16). The findings are the same as one process's, in
the same order, for valid and broken manifests alike; a child that fails changes nothing (its
part is computed in the parent); an exception in the parent leaves no child behind."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

from mldiag_provision.console import Console
from mldiag_provision.lint import linter
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.output import to_json, write_text
from mldiag_provision.lint.schema import default_version

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
from mutate import dump, manifest_seeds, mutate_random  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the split forks (Linux only)")


def _sources() -> list[Source]:
    """200 manifests: the seeds as written, and typed mutants (schema errors, wrong kinds,
    confusable scalars, objects that are not objects)."""
    seeds = manifest_seeds()
    rng = random.Random(16)
    out = [Source(f"s{i}.yaml", dump(s)) for i, s in enumerate(seeds)]
    while len(out) < 200:
        tree = mutate_random(rng.choice(seeds), rng, rng.randint(1, 3))
        out.append(Source(f"m{len(out)}.yaml", dump(tree)))
    return out


def _report(result: linter.LintResult) -> str:
    import io

    text = io.StringIO()
    write_text(result, Console(text, color=False), strict=False)
    return to_json(result, strict=False) + text.getvalue()


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split whatever the machine's CPU count (the default needs 2 CPUs)."""
    monkeypatch.setattr(linter, "workers_for", lambda count, jobs: 2)


@pytest.mark.slow  # forks a linting child
def test_the_split_reports_what_one_process_reports(forced: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    sources = _sources()
    options = LintOptions(default_version(), autopilot=True)
    serial = linter.lint_sources(sources, options, jobs=1)
    parent, in_parent = os.getpid(), []
    real = linter._schema_problems

    def counted(*args: object) -> object:
        if os.getpid() == parent:
            in_parent.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(linter, "_schema_problems", counted)
    split = linter.lint_sources(sources, options, jobs=2)
    assert in_parent == []  # the child's result was used
    assert len(serial.problems) > 200
    assert {p.rule for p in serial.problems} >= {"k8s-schema", "k8s-object", "k8s-name"}
    assert _report(split) == _report(serial)


@pytest.mark.slow  # forks a linting child
def test_a_failing_child_changes_nothing(forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = os.getpid()
    real = linter._schema_problems

    def fails_in_the_child(*args: object) -> object:
        if os.getpid() != parent:
            raise RuntimeError("child failure")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(linter, "_schema_problems", fails_in_the_child)
    sources = _sources()[:150]
    options = LintOptions(default_version())
    split = linter.lint_sources(sources, options, jobs=2)
    monkeypatch.setattr(linter, "_schema_problems", real)
    assert _report(split) == _report(linter.lint_sources(sources, options, jobs=1))


@pytest.mark.slow  # forks a linting child
def test_an_error_in_the_parent_leaves_no_child(forced: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(ctx: object) -> list[object]:
        raise RuntimeError("rule failure")

    forks: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        forks.append(pid)
        return pid

    monkeypatch.setattr(linter.os, "fork", fork)
    monkeypatch.setattr(linter.tpu_rules, "CHECKS", (boom,))
    with pytest.raises(RuntimeError, match="rule failure"):
        linter.lint_sources(_sources()[:150], LintOptions(default_version()), jobs=2)
    assert forks and forks[0] > 0
    with pytest.raises(ChildProcessError):  # reaped: no child left, not even a zombie
        os.waitpid(forks[0], os.WNOHANG)


@pytest.mark.slow  # lints the whole corpus twice
def test_small_sets_and_jobs_1_stay_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(linter.os, "fork", no_fork)
    options = LintOptions(default_version())
    linter.lint_sources(_sources(), options, jobs=1)
    linter.lint_sources(_sources()[:100], options, jobs=0)  # fewer than 2 x 64 objects


def test_no_fork_no_split(forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where this process cannot fork (a process limit), lint runs in one process."""
    def cannot() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(linter.os, "fork", cannot)
    sources = _sources()[:150]
    options = LintOptions(default_version())
    assert _report(linter.lint_sources(sources, options, jobs=2)) == \
        _report(linter.lint_sources(sources, options, jobs=1))


@pytest.mark.parametrize(("load", "forks"), [(0.3, True), (1.4, True), (1.6, False),
                                             (3.0, False)])
def test_by_default_the_split_waits_for_an_idle_cpu(monkeypatch: pytest.MonkeyPatch,
                                                     load: float, forks: bool) -> None:
    """jobs 0 (the CLI's default) splits only while the load average leaves one of two CPUs
    idle; jobs 2 splits whatever the load."""
    monkeypatch.setattr(linter, "workers_for", lambda count, jobs: 2)
    monkeypatch.setattr(linter, "available_cpus", lambda: 2)
    monkeypatch.setattr(linter.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(linter, "_Forked", _Counted)
    _Counted.made = 0
    options = LintOptions(default_version())
    linter.lint_sources(_sources()[:10], options, jobs=0)
    assert _Counted.made == int(forks)
    linter.lint_sources(_sources()[:10], options, jobs=2)
    assert _Counted.made == int(forks) + 1


class _Counted(linter._Here):  # type: ignore[type-arg]
    """Stands in for the forked process: counts the splits (the fork itself is tested
    above)."""

    made = 0

    def __init__(self, fn: object) -> None:
        type(self).made += 1
        super().__init__(fn)  # type: ignore[arg-type]
