"""The lint pipeline: sources -> objects -> Kubernetes schema -> TPU / Autopilot / ML
Diagnostics rules -> one sorted, de-duplicated list of problems.

Returns data only; the CLI chooses the output format and the exit code. Nothing here raises
for bad input: every finding is a :class:`~mldiag_provision.errors.Problem`.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import pickle
import re
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Generic, TypeVar

from mldiag_provision.batch import available_cpus, workers_for
from mldiag_provision.catalog.tpu import Catalog, load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint import (
    admission_rules,
    api_rules,
    autopilot_rules,
    cluster_rules,
    diagnostics_rules,
    names_rules,
    recipe_rules,
    tpu_rules,
    webhook_rules,
    wiring_rules,
)
from mldiag_provision.lint.context import Check, LintContext, LintOptions
from mldiag_provision.lint.loading import Loaded, Resource, Source, load_sources
from mldiag_provision.lint.rules import define, fact, fact_source, severity_of
from mldiag_provision.lint.schema import about_the_value, schema_set, validate_resource
from mldiag_provision.recipe.sourcemap import SourceMap

_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}

NO_OBJECTS = define("k8s-no-objects", "the input holds at least one Kubernetes object "
                    "(kubectl apply refuses an input without one)",
                    source=fact_source("input", "noObjects"),
                    facts=("kubernetes.input.noObjects", "kubernetes.input.emptyFile"))
T = TypeVar("T")


@dataclass
class LintResult:
    """Every problem of one run, and what was read."""

    options: LintOptions
    files: list[str]
    resources: int
    problems: list[Problem] = field(default_factory=list)
    sourcemaps: dict[str, SourceMap] = field(default_factory=dict)

    def count(self, severity: Severity) -> int:
        return sum(p.severity is severity for p in self.problems)

    def failed(self, strict: bool = False) -> bool:
        """Errors fail; with ``strict`` warnings fail too (infos never do)."""
        return self.count(Severity.ERROR) > 0 or (strict and self.count(Severity.WARNING) > 0)

    def by_file(self) -> dict[str, list[Problem]]:
        out: dict[str, list[Problem]] = {f: [] for f in self.files}
        for p in self.problems:
            out.setdefault(p.file, []).append(p)
        return out


def lint_sources(sources: Iterable[Source], options: LintOptions,
                 catalog: Catalog | None = None, jobs: int | None = 1) -> LintResult:
    """Lint a set of manifests together (a Job's Service may be in another file).

    ``jobs``: as :func:`lint_loaded`'s (1, the default here: one process)."""
    return lint_loaded(load_sources(sources), options, catalog, jobs)


def lint_loaded(loaded: Loaded, options: LintOptions, catalog: Catalog | None = None,
                jobs: int | None = 1) -> LintResult:
    """:func:`lint_sources` of sources already read by
    :func:`~mldiag_provision.lint.loading.load_sources`.

    ``jobs``: ``1`` runs everything in this process; ``2`` or more: a large input set (see
    :func:`mldiag_provision.batch.workers_for`) has its Kubernetes schema checks and the
    rules of :data:`_BESIDE` run by a forked process while this one runs the other rules
    (issue 16); ``None`` or ``0``: the same, when a CPU is idle (:func:`_a_cpu_is_idle`).
    The problems are put together in the serial order, so the result is the same either way
    (tests/lint/test_split.py). The split costs CPU time (a fork, the pages both processes
    write: ~60 ms for 1,000 manifests) and saves wall time only where the second process
    has a CPU of its own.
    """
    catalog = catalog or load_catalog()
    problems = list(loaded.problems)
    # every rule sees every object, one whose metadata it cannot read included: a wrong-typed
    # name is the schema's finding, and the TPU or wiring faults of the same object are
    # independent of it (issue 25: all faults in one run); the rules that match objects by
    # name skip an object whose name they cannot read (Resource.identified)
    ctx = LintContext(loaded.resources, catalog, options, cluster=options.cluster)
    checks = [*tpu_rules.CHECKS, *names_rules.CHECKS, *wiring_rules.CHECKS,
              *webhook_rules.CHECKS, *cluster_rules.CHECKS, *api_rules.CHECKS]
    if options.autopilot:
        checks += [*autopilot_rules.CHECKS, *admission_rules.CHECKS]
    if options.recipe is not None:
        checks += recipe_rules.CHECKS
    if options.diagnostics:
        checks += diagnostics_rules.CHECKS
    split = jobs != 1 and workers_for(len(loaded.resources), jobs) > 1 \
        and (bool(jobs) or _a_cpu_is_idle())
    beside = [c for c in checks if c in _BESIDE] if split else []
    work = partial(_beside_work, loaded.resources, options, ctx, beside)
    with (_forked(work) if split else _Here(work)) as pending:
        found = {c: list(c(ctx)) for c in checks if c not in beside}
        schema_problems, beside_found = pending.result()
    problems.extend(schema_problems)  # the serial order: schema, then the rules in order
    found.update(zip(beside, beside_found, strict=True))
    for check in checks:
        problems.extend(found[check])
    problems = drop_consequences(problems, loaded.resources)
    problems.extend(_without_objects(loaded))
    order = {f: i for i, f in enumerate(loaded.files)}
    unique: dict[tuple[str, str, str, str], Problem] = {}
    for p in problems:
        unique.setdefault((p.file, p.path, p.rule, p.message), p)
    ordered = sorted(unique.values(), key=lambda p: (order.get(p.file, len(order)), p.line,
                                                     p.column, _SEVERITY_ORDER[p.severity],
                                                     p.rule))
    return LintResult(options=options, files=loaded.files, resources=len(loaded.resources),
                      problems=ordered, sourcemaps=loaded.sourcemaps)


def _without_objects(loaded: Loaded) -> list[Problem]:
    """One ``k8s-no-objects`` problem per file that was read without a problem yet holds no
    object (empty, only comments, only ``---``): an error when no file of the input holds
    one, since ``kubectl apply`` refuses such an input ("no objects passed to apply",
    kubernetes.yaml ``input.noObjects``); a warning otherwise (kubectl skips the file and
    kubeconform calls it empty, ``input.emptyFile``: nothing in it was checked, so it may be
    a file left empty by mistake). A file that could not be read or parsed has its own
    problem already and gets none."""
    holding = {r.file for r in loaded.resources}
    spoken = {p.file for p in loaded.problems}
    empty = [f for f in loaded.files if f not in holding and f not in spoken]
    if not empty:
        return []
    none_at_all = not loaded.resources
    said = fact("input", "noObjects" if none_at_all else "emptyFile")
    return [Problem(
        rule=NO_OBJECTS.id, file=name, severity=severity_of(said) if none_at_all
        else Severity.WARNING, source=said.url,
        message=(f"{name} holds no Kubernetes object (it is empty, or only comments and "
                 "'---'), and no other input does: kubectl apply refuses it (\"no objects "
                 "passed to apply\") and nothing was checked" if none_at_all else
                 f"{name} holds no Kubernetes object (it is empty, or only comments and "
                 "'---'): kubectl apply skips it and nothing in it was checked"),
        expected="at least one object with apiVersion and kind",
        hint="add the manifest's objects, or give the file that holds them"
             + ("" if none_at_all else "; remove the file if it is empty on purpose"))
        for name in empty]


def drop_consequences(problems: list[Problem], resources: list[Resource]) -> list[Problem]:
    """``problems`` less the findings that stand on a value already reported as unreadable,
    of the wrong type or out of range (:func:`~mldiag_provision.lint.schema.about_the_value`).

    A rule reads a wrong-typed value as absent (``parallelism: four`` as "not set") or as
    something else, so its finding would be a second, misleading report of the one problem.
    Dropped: a finding of another rule at that field or below it, or at the mapping or list
    that holds it (``containers`` when ``containers[0]`` is a string: "no container requests
    google.com/tpu"; ``spec.selector`` when ``spec.selector.job-name`` is 7: "the selector
    does not select the pods"), but not at the object itself. The value findings themselves
    are all kept. Fields are compared per file and YAML document (paths repeat across the
    documents of one file)."""
    bad = [p for p in problems if about_the_value(p)]
    if not bad:
        return problems
    starts: dict[str, list[int]] = {}
    for res in resources:
        starts.setdefault(res.file, []).append(res.sourcemap.locate((), prefer_value=True)[0])
    for lines in starts.values():
        lines.sort()

    def document(p: Problem) -> int:
        return bisect.bisect_right(starts.get(p.file, []), p.line)

    poisoned: dict[tuple[str, int], list[str]] = {}
    holders: dict[tuple[str, int], set[str]] = {}
    for p in bad:
        where = (p.file, document(p))
        poisoned.setdefault(where, []).append(p.path)
        step = _LAST_STEP.search(p.path)
        if step and step.start():
            holders.setdefault(where, set()).add(p.path[:step.start()])

    def stands_on_bad_value(p: Problem) -> bool:
        where = (p.file, document(p))
        return p.path in holders.get(where, ()) or any(
            _within(p.path, path) for path in poisoned.get(where, ()))

    return [p for p in problems if about_the_value(p) or p.rule in _KEPT
            or not stands_on_bad_value(p)]


# findings about the reading or the shape of an object, never a consequence of a field's value
_KEPT = frozenset({"yaml-syntax", "yaml-duplicate-key", "yaml-too-large", "file-unreadable",
                   "k8s-object", "k8s-schema", "k8s-unknown-field", "k8s-api-version",
                   "k8s-no-schema", "yaml-confusable-scalar"})


# the last step of a field path as loading.field_path writes it: .key, [index] or ["key"]
_LAST_STEP = re.compile(r'(\.[A-Za-z_$][A-Za-z0-9_$-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])$')


def _within(path: str, outer: str) -> bool:
    """Whether the field path ``path`` is ``outer`` or lies below it."""
    return path == outer or (path.startswith(outer) and path[len(outer):len(outer) + 1]
                             in (".", "["))


# The rules that the forked process runs besides the schema checks (--jobs): none of them
# asks for tpu_rules.tpu_pods(), which the parent computes for the other rules (computing
# it in both would cost what the split saves).
_BESIDE = frozenset([names_rules.check_names, webhook_rules.check_webhooks,
                     wiring_rules.check_gcsfuse, wiring_rules.check_coordinators,
                     *api_rules.CHECKS, *autopilot_rules.CHECKS,
                     *admission_rules.CHECKS]) - {autopilot_rules.check_cluster_objects}


def _a_cpu_is_idle() -> bool:
    """Whether the 1-minute load average leaves a CPU for a second process (as ``make -l``
    decides): below the CPUs less one half; this process's own run counts about one. On the
    project's 2-core machine the split took lint of 1,000 manifests from 936 to 771 ms wall
    (medians, load 1.7) but made it slower when another program kept a core busy (load 2.4
    and more: 1,171 -> 1,211 ms, 1,218 -> 1,457 ms)."""
    try:
        return os.getloadavg()[0] < available_cpus() - 0.5
    except OSError:  # pragma: no cover - no load average on this platform
        return False


def _schema_problems(resources: list[Resource], options: LintOptions) -> list[Problem]:
    """The Kubernetes schema problems of every object, in input order."""
    schemas = schema_set(options.kubernetes_version, options.crd_versions)
    schemas.plan({(res.api_version, res.kind) for res in resources})
    return [p for res in resources for p in validate_resource(res, schemas)]


def _beside_work(resources: list[Resource], options: LintOptions, ctx: LintContext,
                 checks: Sequence[Check]) -> tuple[list[Problem], list[list[Problem]]]:
    """The schema problems, and each of ``checks``' problems: the part of a run that
    :func:`lint_loaded` can give to a forked process."""
    return _schema_problems(resources, options), [list(c(ctx)) for c in checks]


class _Here(Generic[T]):
    """``fn()`` computed at once, in this process (the serial counterpart of
    :class:`_Forked`)."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self.value = fn()

    def __enter__(self) -> _Here[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def result(self) -> T:
        return self.value


def _forked(fn: Callable[[], T]) -> _Forked[T] | _Here[T]:
    """:class:`_Forked`, or :class:`_Here` where this process cannot fork or make a pipe."""
    try:
        return _Forked(fn)
    except OSError:
        return _Here(fn)


class _Forked(Generic[T]):
    """``fn()`` computed by a forked child process while this one goes on; :meth:`result`
    waits for it and gives its (pickled) value.

    The child shares this process's memory as it was at the fork (nothing is sent to it)
    and ignores Ctrl-C, which the parent answers. Where the child fails (an exception, a
    signal, a value it cannot pickle), the value is computed here instead, so a failure of
    the split never changes what lint reports. Leaving the ``with`` block without taking
    the result (an exception in the parent) kills the child.
    """

    def __init__(self, fn: Callable[[], T]) -> None:
        self.fn = fn
        read, write = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            raise
        if self.pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(read)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                data = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)  # no atexit handlers, no flush of the parent's buffers
        os.close(write)
        self.read: int | None = read

    def __enter__(self) -> _Forked[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.read is not None:  # the result was not taken: stop the child
            os.close(self.read)
            self.read = None
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)

    def result(self) -> T:
        if self.read is None:
            raise RuntimeError("the forked result was already taken")
        try:
            with os.fdopen(self.read, "rb") as pipe:
                self.read = None
                data = pipe.read()
        finally:
            _, status = os.waitpid(self.pid, 0)
        if status == 0 and data:
            try:
                return pickle.loads(data)  # type: ignore[no-any-return]
            except Exception:  # a broken value: computed here instead
                pass
        return self.fn()
