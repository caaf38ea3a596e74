"""The application layer: one object that renders, plans, applies and destroys a whole stack,
stage by stage, under the work-directory lock, and returns data. The CLI parses arguments and
presents what this returns; a test or another program drives it the same way::

    with Stack(Path("out/my-stack"), "apply") as stack:
        stack.render("recipe.yaml")
        plans = stack.plan()
        stack.apply(plans, confirm=lambda plans: None)

Side effects go through the engines (terraform via the recorded CommandRunner) and the
Kubernetes client (workloads stage); nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldiag_provision import ondisk
from mldiag_provision.engines import EngineCapability, EngineUnit, PlanSummary, ProgressEvent
from mldiag_provision.errors import ConflictError, EngineError, UsageError
from mldiag_provision.stack import guard
from mldiag_provision.stack.kube import ClusterTarget
from mldiag_provision.stack.lock import WorkdirLock
from mldiag_provision.stack.stages import ORDER, Stage, StageName, StagePlan, stages_of
from mldiag_provision.stack.workdir import RenderOutcome, render_into, saved_plan

LOG_DIR = ".mldiag/logs"


@dataclass(frozen=True)
class StackEvent:
    """Something a person following the run should see.

    ``kind``: ``stage`` (a stage starts: message says what), ``resource`` (``event`` holds a
    per-resource progress event), ``wait`` (waiting for readiness: message says for what),
    ``note`` (a one-line remark), ``done`` (a stage finished: message has the counts).
    """

    kind: str
    stage: str
    message: str = ""
    event: ProgressEvent | None = None
    elapsed_s: float = 0.0


Reporter = Callable[[StackEvent], None]
Confirm = Callable[[list[StagePlan]], None]


@dataclass
class StageResult:
    """What one stage did: counts, and the outputs of a Terraform stage."""

    stage: StageName
    summary: PlanSummary = field(default_factory=PlanSummary)
    outputs: dict[str, Any] = field(default_factory=dict)
    skipped: str = ""  # why nothing was done, if nothing was
    kept: int = 0  # destroy: objects removed from the state only (APIs, _Default)

    def to_dict(self) -> dict[str, Any]:
        return {"stage": str(self.stage), "summary": self.summary.to_dict(),
                "skipped": self.skipped or None, "kept": self.kept}


class Stack:
    """One rendered stack in ``workdir``, locked for the lifetime of the ``with`` block.

    Args:
      workdir: the work directory (created by :meth:`render` when missing).
      command: the command name, for the lock holder line and the log file name.
      reporter: receives :class:`StackEvent` objects (progress); None = silent.
      wait_timeout_s: bound of each readiness wait between stages (seconds).
      target: where the cluster is, when not from the stack's outputs (``--kubeconfig``).
    """

    def __init__(self, workdir: Path, command: str, *, reporter: Reporter | None = None,
                 wait_timeout_s: float = 900.0, target: ClusterTarget | None = None) -> None:
        self.workdir = workdir.resolve()
        self.command = command
        self.reporter = reporter
        self.wait_timeout_s = wait_timeout_s
        self.target_override = target
        self._lock: WorkdirLock | None = None
        self._runner: Any = None
        self._engines: dict[StageName, Any] = {}
        self._api: Any = None
        self._target: ClusterTarget | None = None  # memo of cluster_target()

    # -- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Stack:
        """Take the work-directory lock. A directory that does not exist yet is locked right
        after :meth:`render` has created it (atomically, as a whole tree)."""
        if self.workdir.exists() and not self.workdir.is_dir():
            raise UsageError(f"{self.workdir} is a file, not a work directory",
                             hint="give the stack's directory with -o DIR")
        if self.workdir.is_dir():
            # the state's shape before anything runs: .mldiag a file, its logs a file, the
            # lock a directory each get a precise message (exit 3), never a crash mid-run
            ondisk.state_dir(self.workdir, create=False)
            ondisk.state_entry(self.workdir / LOG_DIR, want_dir=True)
            ondisk.check_local_states(self.workdir)
            self._acquire()
        return self

    def _acquire(self) -> None:
        if self._lock is None:
            lock = WorkdirLock(self.workdir / ".mldiag" / "lock")
            lock.acquire(self.command)
            self._lock = lock

    def _require_lock(self) -> None:
        if self._lock is None:
            if not self.workdir.is_dir():
                raise UsageError(f"{self.workdir} holds no rendered stack",
                                 hint="run `mldiag-provision apply RECIPE -o DIR` first")
            self._acquire()

    def __exit__(self, *exc: object) -> None:
        for engine in self._engines.values():
            close = getattr(engine, "close", None)
            if close is not None:
                close()  # e.g. the provider plugins Terraform reattached to
        if self._runner is not None:
            self._runner.close()
        if self._lock is not None:
            self._lock.release()

    def log(self, text: str) -> None:
        """One line in this run's log (when a log was opened)."""
        if self._runner is not None:
            self._runner.log(text)

    @property
    def log_path(self) -> Path | None:
        return self._runner.log_path if self._runner is not None else None

    @property
    def stopped_at_once(self) -> bool:
        """Whether a second Ctrl-C told Terraform to stop without finishing what was in
        flight (its state may then lack objects Google Cloud created)."""
        return bool(self._runner is not None and self._runner.stopped_at_once)

    def _emit(self, kind: str, stage: StageName | str, message: str = "",
              event: ProgressEvent | None = None, elapsed_s: float = 0.0) -> None:
        if self.reporter is not None:
            self.reporter(StackEvent(kind, str(stage), message, event, elapsed_s))

    # -- render -----------------------------------------------------------------------------
    def render(self, recipe_path: str, *, force: bool = False,
               engine_needed: bool = False) -> RenderOutcome:
        """Preflight and (re-)render the recipe here (see :func:`render_into`).

        ``engine_needed``: the command goes on to run the stack's engine (plan, apply), so a
        missing engine executable is refused before anything is written
        (:meth:`require_engine`), not after the stack was rendered into the directory.
        """
        check = self.require_engine if engine_needed else None
        outcome = render_into(self.workdir, recipe_path, force=force, before_write=check)
        if self._lock is None:  # a fresh directory: lock it now, re-check under the lock
            self._acquire()
            again = render_into(self.workdir, recipe_path, force=force, before_write=check)
            if not again.cached:
                outcome = again
        if outcome.cached and check is not None:  # nothing rendered: the saved plan's engine
            check(self.engine_name)
        return outcome

    def require_engine(self, name: str) -> None:
        """Refuse to go on when the executable of engine ``name`` is missing.

        Raises:
          UsageError: the engine unit finds no executable (exit 2; its message says which,
            where it looked, and the hint how to install it or point at it).
          UnknownEngineError: no unit has that name.
        """
        from mldiag_provision import engines

        unit = engines.get(name)
        if unit.locate is None:
            return
        try:
            unit.locate()
        except EngineError as exc:
            raise UsageError(f"{self.command} needs engine {name}: {exc.message}; nothing "
                             f"was written to {self.workdir}", hint=exc.hint) from None

    @property
    def saved(self) -> dict[str, Any]:
        return saved_plan(self.workdir) or {}

    @property
    def creates_cluster(self) -> bool:
        """Whether the rendered stack's orchestrator creates its cluster in the project stage
        (:attr:`~mldiag_provision.orchestrators.Capability.CREATES_CLUSTER`; the orchestrator
        is ``plan.json`` ``cluster.type``; False for one this version does not know)."""
        from mldiag_provision import orchestrators
        from mldiag_provision.orchestrators import Capability

        cluster = self.saved.get("cluster")
        name = str(cluster.get("type", "")) if isinstance(cluster, dict) else ""
        unit = orchestrators.find(name)
        return unit is not None and unit.has(Capability.CREATES_CLUSTER)

    def stages(self, only: Iterable[StageName] | None = None) -> list[Stage]:
        """The rendered stages (in apply order), limited to ``only`` when given.

        Raises:
          UsageError: a stage in ``only`` does not exist in this stack.
        """
        have = stages_of(self.workdir, self.saved)
        if only is None:
            return have
        wanted = set(only)
        missing = wanted - {s.name for s in have}
        if missing:
            raise UsageError(f"this stack has no {', '.join(sorted(missing))} stage",
                             hint="its stages: " + ", ".join(s.name for s in have))
        return [s for s in have if s.name in wanted]

    # -- engines ----------------------------------------------------------------------------
    @property
    def engine_name(self) -> str:
        """The engine of the rendered stack: ``plan.json`` ``engine`` (absent: Terraform,
        :data:`~mldiag_provision.plan.stack.DEFAULT_ENGINE`)."""
        from mldiag_provision.plan.types import DEFAULT_ENGINE

        return str(self.saved.get("engine") or DEFAULT_ENGINE)

    @property
    def engine_unit(self) -> EngineUnit:
        """The unit of :attr:`engine_name` (its capabilities, resource kinds, errors).

        Raises:
          UnknownEngineError: no unit has that name (a usage error naming the known ones).
        """
        from mldiag_provision import engines

        return engines.get(self.engine_name)

    def engine(self, stage: Stage) -> Any:
        """The engine of an engine-driven stage (project, cluster), made by the stack's
        engine unit (:func:`mldiag_provision.engines.get`); one shared log per run.

        Raises:
          UnknownEngineError: no unit has the stack's engine (a usage error naming them).
        """
        if stage.name not in self._engines:
            from mldiag_provision.runner import CommandRunner, utc_stamp

            unit = self.engine_unit

            if self._runner is None:
                self._runner = CommandRunner(
                    self.workdir / LOG_DIR / f"{self.command}-{utc_stamp()}.log")
                self._runner.log(f"mldiag-provision {self.command} in {self.workdir}")
            keep = [self._lock.fd] if self._lock and self._lock.fd >= 0 else []
            self._engines[stage.name] = unit.make(stage.path, self._runner, keep)
        return self._engines[stage.name]

    def saved_plans(self) -> dict[str, dict[str, Any]]:
        """The plan ``plan`` saved in each engine-driven stage, as the stack's engine unit
        reads it (:data:`~mldiag_provision.engines.SavedPlanReader`): stage name -> document,
        in apply order, stages without a saved plan left out. Only reads: needs no lock and
        writes nothing (the tool runs without a log: a plan's JSON holds sensitive values).

        Raises:
          UnknownEngineError: no unit has the stack's engine.
          EngineError: a saved plan cannot be read (or its engine's tool is missing).
        """
        from mldiag_provision.runner import CommandRunner

        unit = self.engine_unit
        runner = CommandRunner(None)
        out: dict[str, dict[str, Any]] = {}
        for stage in self.stages():
            if stage.engine_driven:
                doc = unit.saved_plan(stage.path, runner)
                if doc is not None:
                    out[str(stage.name)] = doc
        return out

    def deployed_plan(self) -> dict[str, Any] | None:
        """The ``plan.json`` of what is deployed, as the "before" of a change's cost: None
        when no engine-driven stage holds an applied object (a new stack: everything the
        plan creates is the change, even after ``render``), else the last render (what the
        last ``plan``/``apply`` rendered). Call it before this command re-renders. A state
        that cannot be read counts as deployed (the last render, as before).

        Only reads files: no engine is started (a ``plan`` in steady state starts each
        provider plugin once, tests/engine/test_provider_reuse.py). A stage counts as holding
        nothing when the engine says it was never applied, or when its local
        ``terraform.tfstate`` (state format 4: a top-level ``resources`` list, each with its
        ``mode``) lists no managed resource; any other state (a remote backend, Pulumi's)
        counts as deployed.
        """
        saved = self.saved
        if not saved:
            return None
        from mldiag_provision.runner import CommandRunner

        try:
            unit = self.engine_unit
            for stage in self.stages():
                if not stage.engine_driven:
                    continue
                eng = unit.make(stage.path, CommandRunner(None), [])
                if not eng.never_applied() and not _local_state_empty(stage.path):
                    return saved
        except (EngineError, UsageError, OSError):
            return saved
        return None

    def _progress(self, stage: Stage) -> Callable[[ProgressEvent], None]:
        return lambda ev: self._emit("resource", stage.name, event=ev)

    # -- the cluster ------------------------------------------------------------------------
    def cluster_target(self) -> ClusterTarget | None:
        """Where the cluster is: ``--kubeconfig`` if given, else the endpoint and CA the
        project (created cluster) or cluster stage (existing cluster) outputs; None when
        neither has been applied."""
        if self.target_override is not None:
            return self.target_override
        if self._target is not None:
            return self._target
        for stage in self.stages():
            if not stage.engine_driven:
                continue
            eng = self.engine(stage)
            if not eng.state_resources() and stage.name is StageName.PROJECT:
                continue
            try:
                eng.init()
                outs = eng.outputs()
            except EngineError:
                continue
            endpoint = (outs.get("cluster_endpoint") or {}).get("value")
            if endpoint:
                ca = (outs.get("cluster_ca_certificate") or {}).get("value")
                self._target = ClusterTarget(endpoint=str(endpoint),
                                             ca_certificate_b64=ca or None)
                return self._target
        return None

    def _cluster_api(self, *, wait: bool) -> Any:
        """An API client for the cluster; with ``wait``, blocks until it answers.

        Raises:
          EngineError: the cluster is unknown or does not answer within the wait bound.
        """
        from mldiag_provision.stack import kube

        if self._api is None:
            target = self.cluster_target()
            if target is None:
                raise ConflictError("the cluster's endpoint is unknown: the project stage has "
                                    "not created the cluster yet",
                                    hint="apply every stage first: `mldiag-provision apply "
                                         f"RECIPE -o {self.workdir}` (without --stage)")
            self._api = (target, kube.api_client(target, self.workdir / ".mldiag"))
        target, api = self._api
        if wait:
            self._emit("wait", StageName.CLUSTER, f"waiting for the cluster's API server "
                                                  f"({target.describe})")
            kube.wait_until(lambda: kube.probe(api),
                            what=f"the cluster's API server ({target.describe})",
                            timeout_s=self.wait_timeout_s,
                            on_wait=lambda why, s: self._emit(
                                "wait", StageName.CLUSTER, f"cluster API: {why}", elapsed_s=s),
                            hint="check the cluster in the console (it may still be "
                                 "provisioning), then re-run the same command")
        return api

    def _wait_for_addons(self) -> None:
        """After the cluster stage: every kind the workloads use is served (its CRD and
        controller are installed) and the agents' Deployments are available."""
        from mldiag_provision.stack import kube

        api = self._cluster_api(wait=False)
        kinds = sorted({(r.api_version, r.kind) for r, _, _ in
                        kube.load_manifests(self.workdir)})
        agents = self.saved.get("agents") or {}
        namespaces = list(agents.get("agent_namespaces") or []) + [
            str(a.get("namespace")) for a in agents.get("addons") or []
            if isinstance(a, dict) and a.get("namespace")]

        def ready() -> str | None:
            from kubernetes import client
            from kubernetes.dynamic import DynamicClient
            from kubernetes.dynamic.exceptions import ResourceNotFoundError

            try:
                dyn = DynamicClient(api)
                for api_version, kind in kinds:
                    try:
                        dyn.resources.get(api_version=api_version, kind=kind)
                    except ResourceNotFoundError:
                        dyn.resources.invalidate_cache()
                        return f"{kind} ({api_version}) is not served yet (its CRD)"
                apps = client.AppsV1Api(api)
                for ns in namespaces:
                    for d in apps.list_namespaced_deployment(ns, _request_timeout=10).items:
                        spec_replicas = d.spec.replicas if d.spec else None
                        want = spec_replicas if spec_replicas is not None else 1
                        have = (d.status.available_replicas or 0) if d.status else 0
                        if have < want:
                            name = d.metadata.name if d.metadata else "?"
                            return f"Deployment {ns}/{name}: {have}/{want} available"
            except Exception as exc:
                return kube._short(exc)
            return None

        self._emit("wait", StageName.CLUSTER, "waiting for the agents and add-ons")
        kube.wait_until(ready, what="the cluster's agents and add-ons",
                        timeout_s=self.wait_timeout_s,
                        on_wait=lambda why, s: self._emit("wait", StageName.CLUSTER, why,
                                                          elapsed_s=s))

    def _workloads(self) -> Any:
        from mldiag_provision.stack.kube import Workloads

        return Workloads(self.workdir, self._cluster_api(wait=False))

    # -- plan ---------------------------------------------------------------------------------
    def plan(self, only: Iterable[StageName] | None = None, *,
             destroy: bool = False) -> list[StagePlan]:
        """Plan each stage (in apply order; reverse for ``destroy``). A stage that can only be
        planned once an earlier one is applied is ``deferred`` with the reason.

        Raises:
          EngineError: terraform failed.
        """
        self._require_lock()
        stages = self.stages(only)
        creates_cluster = self.creates_cluster
        plans: list[StagePlan] = []
        earlier_pending = ""
        for stage in stages:
            if destroy:
                plans.append(self._plan_destroy(stage))
                continue
            if earlier_pending:
                reason = ("planned once the cluster stage is applied"
                          if stage.name is StageName.WORKLOADS else earlier_pending)
                plans.append(StagePlan(stage, "deferred", reason=reason))
                continue
            if stage.name is StageName.PROJECT:
                self._emit("stage", stage.name, "planning " + stage.summary)
                eng = self.engine(stage)
                eng.init()
                sp = StagePlan(stage, "planned", eng.plan())
                if creates_cluster and any(
                        c.is_cluster and c.action in ("create", "replace")
                        for c in sp.plan.changes):  # type: ignore[union-attr]
                    earlier_pending = ("planned once the project stage has created the "
                                       "cluster")
            elif stage.name is StageName.CLUSTER:
                if creates_cluster and self.cluster_target() is None:
                    plans.append(StagePlan(stage, "deferred", reason="planned once the "
                                           "project stage has created the cluster"))
                    earlier_pending = "planned after the cluster stage"
                    continue
                self._emit("stage", stage.name, "planning " + stage.summary)
                eng = self.engine(stage)
                eng.init()
                sp = StagePlan(stage, "planned", eng.plan())
                if sp.plan and sp.plan.has_changes:
                    earlier_pending = "planned once the cluster stage is applied"
            else:
                self._emit("stage", stage.name, "planning " + stage.summary)
                self._cluster_api(wait=False)
                sp = StagePlan(stage, "planned", self._workloads().plan())
            plans.append(sp)
        return list(reversed(plans)) if destroy else plans

    def _plan_destroy(self, stage: Stage) -> StagePlan:
        if stage.name is StageName.WORKLOADS:
            from mldiag_provision.stack.kube import read_inventory

            if not read_inventory(self.workdir):
                return StagePlan(stage, "absent", reason="no workload was applied")
            try:
                self._cluster_api(wait=False)
                return StagePlan(stage, "planned", self._workloads().plan(destroy=True))
            except EngineError as exc:
                return StagePlan(stage, "absent", reason=f"cluster unreachable: "
                                                         f"{exc.message}")
        eng = self.engine(stage)
        if not eng.state_resources():
            return StagePlan(stage, "absent", reason="nothing of it exists")
        self._emit("stage", stage.name, "planning the removal of " + stage.summary)
        eng.init()
        return StagePlan(stage, "planned", eng.plan(destroy=True))

    # -- apply --------------------------------------------------------------------------------
    def apply(self, plans: list[StagePlan], *, confirm: Confirm) -> list[StageResult]:
        """Apply the planned stages in order; ``confirm`` is called once with every plan
        first, and again for a deferred stage whose plan deletes or replaces something.
        Between stages it waits (bounded) for the cluster to answer and for the agents and
        add-ons the workloads need.

        Raises:
          ConflictError: ``confirm`` refused.
          EngineError: a stage failed (what earlier stages did stays applied).
        """
        confirm(plans)
        results: list[StageResult] = []
        names = [p.stage.name for p in plans]
        for i, sp in enumerate(plans):
            stage = sp.stage
            if sp.status == "deferred":
                if stage.name is not StageName.PROJECT:
                    self._cluster_api(wait=True)
                if stage.name is StageName.WORKLOADS and StageName.CLUSTER in names:
                    self._wait_for_addons()
                sp = self.plan([stage.name])[0]
                plans[i] = sp
                if sp.plan is not None and any(c.action in ("delete", "replace")
                                               for c in sp.plan.changes):
                    confirm([sp])
            if sp.plan is None or not sp.plan.has_changes:
                results.append(StageResult(stage.name, skipped="no changes"))
                continue
            self._emit("stage", stage.name, "applying " + stage.summary)
            start = time.monotonic()
            if stage.engine_driven:
                res = self.engine(stage).apply(sp.plan, progress=self._progress(stage))
                result = StageResult(stage.name, res.summary, res.outputs)
                if stage.name is StageName.PROJECT:
                    self._api = self._target = None  # the endpoint may be new
            else:
                result = StageResult(stage.name, self._workloads().apply(
                    sp.plan, progress=self._progress(stage)))
            self._emit("done", stage.name, _counts(result.summary),
                       elapsed_s=time.monotonic() - start)
            results.append(result)
            later = names[i + 1:]
            if stage.name is StageName.CLUSTER and StageName.WORKLOADS in later:
                self._wait_for_addons()
        return results

    # -- destroy ------------------------------------------------------------------------------
    def destroy(self, *, confirm: Confirm, disable_deletion_protection: bool = False,
                delete_profiles: bool = False, only: Iterable[StageName] | None = None,
                bucket_objects: guard.ObjectCounter | None = None) -> list[StageResult]:
        """Remove the stack, stages in reverse order, after checking that nothing blocks it.

        Before anything is deleted: a cluster with deletion protection, or a non-empty
        profiles bucket without ``delete_profiles``, refuses the whole run (with the one
        command that lifts the block). With ``disable_deletion_protection`` /
        ``delete_profiles`` an update-only apply turns the protection off / lets the bucket
        go with its objects first. Log Analytics on ``_Default`` and the enabled APIs are
        forgotten (removed from the state), never deleted.

        Raises:
          ConflictError: blocked, or not confirmed; nothing was deleted.
          EngineError: a stage failed.
        """
        self._require_lock()
        stages = self.stages(only)
        project = next((s for s in stages if s.name is StageName.PROJECT), None)
        project_state = self.engine(project).state_resources() if project else []
        blockers = guard.destroy_blockers(
            project_state, disable_deletion_protection=disable_deletion_protection,
            delete_profiles=delete_profiles,
            bucket_objects=bucket_objects or guard.gcs_object_count,
            kinds=self.engine_unit.kinds)
        if blockers:
            raise guard.blocked_error(blockers)
        plans = self.plan([s.name for s in stages], destroy=True)
        confirm(plans)
        if project is not None:
            self._lift_blocks(project, project_state,
                              disable_deletion_protection=disable_deletion_protection,
                              delete_profiles=delete_profiles)
        results = []
        for sp in plans:
            stage = sp.stage
            if sp.status != "planned" or sp.plan is None or not sp.plan.has_changes:
                results.append(StageResult(stage.name, skipped=sp.reason or "nothing to do"))
                continue
            self._emit("stage", stage.name, "destroying " + stage.summary)
            start = time.monotonic()
            if stage.engine_driven:
                eng = self.engine(stage)
                kept = guard.forget_addresses(sp.plan)
                if kept:
                    self._emit("note", stage.name, "kept (removed from the state only): "
                               + ", ".join(kept))
                    eng.forget(kept)
                    sp = StagePlan(stage, "planned", eng.plan(destroy=True))
                summary = (eng.apply(sp.plan, progress=self._progress(stage)).summary
                           if sp.plan and sp.plan.has_changes else PlanSummary())
                result = StageResult(stage.name, summary, kept=len(kept))
            else:
                result = StageResult(stage.name, self._workloads().apply(
                    sp.plan, progress=self._progress(stage)))
            self._emit("done", stage.name, _counts(result.summary),
                       elapsed_s=time.monotonic() - start)
            results.append(result)
        return results

    def _lift_blocks(self, project: Stage, state: list[dict[str, Any]], *,
                     disable_deletion_protection: bool, delete_profiles: bool) -> None:
        """The update-only apply that turns deletion protection off / force_destroy on."""
        override = guard.override_for(state, disable_deletion_protection=
                                      disable_deletion_protection,
                                      delete_profiles=delete_profiles)
        if override is None:
            return
        text, targets = override
        if not self.engine_unit.has(EngineCapability.OVERRIDE_FILES):
            raise ConflictError(
                f"destroy refused before deleting anything: engine {self.engine_name} cannot "
                "lift deletion protection or force_destroy with an update-only apply",
                hint="set spec.orchestrator.deletionProtection: false (and "
                     "diagnostics.profilesBucket.deleteOnDestroy: true) in the recipe, run "
                     "`apply`, then `destroy` again")
        path = project.path / guard.OVERRIDE_FILE
        eng = self.engine(project)
        self._emit("stage", project.name, "update-only apply: " + ", ".join(targets))
        try:
            path.write_text(text, encoding="utf-8")
            eng.init()
            plan = eng.plan(targets=targets)
            bad = [c for c in plan.changes if c.action not in ("update", "no-op", "read")]
            if bad:
                raise ConflictError(
                    "the update-only apply that lifts the destroy blocks would also "
                    + ", ".join(f"{c.action} {c.address}" for c in bad),
                    hint="nothing was deleted; apply the recipe first so the stack matches "
                         "it, then destroy again")
            if plan.has_changes:
                eng.apply(plan, progress=self._progress(project))
        finally:
            path.unlink(missing_ok=True)

    # -- outputs ------------------------------------------------------------------------------
    def outputs(self, stage: StageName = StageName.PROJECT) -> dict[str, Any]:
        """The outputs of a Terraform stage: name -> {"value", "sensitive"}; {} without
        running the engine when the stage was certainly never applied (local state, none:
        ``init`` would need the provider registry just to say so)."""
        self._require_lock()
        st = self.stages([stage])[0]
        eng = self.engine(st)
        if eng.never_applied():
            return {}
        eng.init()
        return dict(eng.outputs())


def _counts(s: PlanSummary) -> str:
    return (f"{s.create} created, {s.update} updated, {s.replace} replaced, "
            f"{s.delete} deleted")


def stage_names(values: Iterable[str] | None) -> list[StageName] | None:
    """``--stage`` values as :class:`StageName` (None = all); order follows :data:`ORDER`."""
    if not values:
        return None
    wanted = {StageName(v) for v in values}
    return [n for n in ORDER if n in wanted]


def _local_state_empty(stage_dir: Path) -> bool:
    """Whether the stage's local ``terraform.tfstate`` exists and lists no managed resource
    (Terraform's state format version 4: ``{"version": 4, "resources": [{"mode": "managed",
    ...}]}``). False when there is no such file, or it cannot be read or parsed (then the
    caller assumes something is deployed)."""
    import json

    try:
        doc = json.loads((stage_dir / "terraform.tfstate").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or not isinstance(doc.get("resources"), list):
        return False
    return not any(isinstance(r, dict) and r.get("mode") == "managed"
                   for r in doc["resources"])
