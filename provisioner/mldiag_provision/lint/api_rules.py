"""What the Kubernetes API server refuses that its OpenAPI schemas do not say.

The schemas (``k8s-schema``) give types and required fields; enums and ranges such as a Job's
``restartPolicy`` or a port number are checked in Go, in the API server's validation, so a
manifest can pass the schema and still be refused by ``kubectl apply`` (found by the issue 25
review: each fault below alone linted clean). Each check reads its fact in ``kubernetes.yaml``
``apiValidation`` (sources: pkg/apis/core/validation and pkg/apis/batch/validation). A value
of the wrong type is the schema's finding, not checked again here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mldiag_provision.errors import Problem
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.rules import define, fact, fact_source
from mldiag_provision.lint.workloads import PodTemplate
from mldiag_provision.recipe.sourcemap import Path

_F = ("apiValidation",)
RESTART = define("k8s-job-restart-policy", "a Job's pod template restarts OnFailure or Never",
                 source=fact_source(*_F, "jobRestartPolicy"),
                 facts=("kubernetes.apiValidation.jobRestartPolicy",))
BACKOFF = define("k8s-backoff-limit", "a Job's backoffLimit is not negative",
                 source=fact_source(*_F, "backoffLimit"),
                 facts=("kubernetes.apiValidation.backoffLimit",))
PULL = define("k8s-pull-policy", "a container's imagePullPolicy is Always, IfNotPresent or Never",
              source=fact_source(*_F, "pullPolicy"), facts=("kubernetes.apiValidation.pullPolicy",))
PORT = define("k8s-port-range", "container and host ports lie between 1 and 65535",
              source=fact_source(*_F, "containerPort"),
              facts=("kubernetes.apiValidation.containerPort",))
CONTAINERS = define("k8s-containers", "a pod has at least one container",
                    source=fact_source(*_F, "containers"),
                    facts=("kubernetes.apiValidation.containers",))


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _job_fields(ctx: LintContext, t: PodTemplate, job_path: Path,
                restart: list[str]) -> Iterator[Problem]:
    """A Job's pod template: its ``restartPolicy`` (one of ``restart``, fact
    ``jobRestartPolicy``) and the ``backoffLimit`` of the JobSpec at ``job_path`` (not
    negative)."""
    res, spec = t.resource, t.spec
    policy = spec.get("restartPolicy")
    if isinstance(policy, str) and policy not in restart:
        yield ctx.problem(
            res, RESTART.id, (*t.spec_path, "restartPolicy"),
            f"restartPolicy '{policy}' in {t.describe()}: the API server refuses a "
            "Job's pod template unless it is OnFailure or Never",
            value=policy, expected=" or ".join(restart),
            hint="set restartPolicy: Never (the Job, not the kubelet, retries failed "
                 "pods) or OnFailure")
    backoff = _int(t.job.get("backoffLimit"))
    if backoff is not None and backoff < 0:
        yield ctx.problem(
            res, BACKOFF.id, (*job_path, "backoffLimit"),
            f"backoffLimit {backoff} is negative: the API server refuses it",
            value=backoff, expected=">= 0", hint="set backoffLimit: 0 or more")


def _no_container(ctx: LintContext, t: PodTemplate) -> Iterator[Problem]:
    """An empty ``containers`` list (a missing one is the schema's finding)."""
    if t.spec.get("containers") == []:
        yield ctx.problem(
            t.resource, CONTAINERS.id, (*t.spec_path, "containers"),
            f"{t.describe()} has no container: the API server refuses an empty "
            "containers list", value=None, expected="at least one container",
            hint="add the container that runs the workload")


def _pull_policy(ctx: LintContext, t: PodTemplate, where: Path, c: dict[str, Any],
                 pulls: list[str]) -> Iterator[Problem]:
    """A container's ``imagePullPolicy`` outside ``pulls`` (fact ``pullPolicy``); ``where``:
    the container's path below the pod spec."""
    pull = c.get("imagePullPolicy")
    if isinstance(pull, str) and pull not in pulls:
        yield ctx.problem(
            t.resource, PULL.id, (*t.spec_path, *where, "imagePullPolicy"),
            f"imagePullPolicy '{pull}' is not one the API server accepts",
            value=pull, expected=", ".join(pulls),
            hint="use IfNotPresent (or Always for a moving tag)")


def _port_range(ctx: LintContext, t: PodTemplate, where: Path, c: dict[str, Any],
                lo: int, hi: int) -> Iterator[Problem]:
    """A container's ``containerPort`` or ``hostPort`` outside ``lo``-``hi`` (fact
    ``containerPort``; a hostPort of 0 means none)."""
    listed = c.get("ports")
    for j, port in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(port, dict):
            continue
        for field in ("containerPort", "hostPort"):
            n = _int(port.get(field))
            if n is None or lo <= n <= hi or (field == "hostPort" and n == 0):
                continue  # absent, of the wrong type (the schema's), or in range
            yield ctx.problem(
                t.resource, PORT.id, (*t.spec_path, *where, "ports", j, field),
                f"{field} {n} is outside 1-65535: the API server refuses it",
                value=n, expected=f"{lo}-{hi}",
                hint=f"use a port between {lo} and {hi}")


def check_api(ctx: LintContext) -> Iterator[Problem]:
    """Job restart policy and backoff limit; containers present; pull policies and ports of
    init and app containers, per pod template in document order."""
    restart = [str(v) for v in fact(*_F, "jobRestartPolicy")["values"]]
    pulls = [str(v) for v in fact(*_F, "pullPolicy")["values"]]
    ports = fact(*_F, "containerPort")
    lo, hi = int(ports["minimum"]), int(ports["maximum"])
    for t in ctx.templates:
        if t.job_path is not None:
            yield from _job_fields(ctx, t, t.job_path, restart)
        yield from _no_container(ctx, t)
        for key in ("initContainers", "containers"):
            for i, c in t.containers(key):
                yield from _pull_policy(ctx, t, (key, i), c, pulls)
                yield from _port_range(ctx, t, (key, i), c, lo, hi)


CHECKS = (check_api,)
