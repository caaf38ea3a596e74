"""Multi-host wiring as lint rules: the *wired* step of the cluster check
(:mod:`mldiag_provision.cluster.wiring`), one rule per kind of verdict.

Rules (ids stable): ``wiring-publish-not-ready``, ``wiring-jobset-network``,
``wiring-explicit-hostname`` (:func:`~mldiag_provision.cluster.wiring.published`),
``wiring-gcsfuse-annotation`` (:func:`~mldiag_provision.cluster.wiring.gcsfuse`) and
``wiring-coordinator-address`` and ``wiring-env-reference``
(:func:`~mldiag_provision.cluster.wiring.coordinators`). The
judging lives in the step; this module declares the rules and turns each verdict into a
problem of its rule at its field. Facts: ``wiring`` in catalog/data/kubernetes.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldiag_provision.cluster import wiring
from mldiag_provision.errors import Problem
from mldiag_provision.lint.context import LintContext
from mldiag_provision.lint.rules import define, fact, fact_source, severity_of

_F = ("wiring",)
NOT_READY = define("wiring-publish-not-ready", "the headless Service of a multi-pod Job "
                   "publishes pods before they are Ready", severity=severity_of(
                       fact(*_F, "publishNotReady")),
                   source=fact_source(*_F, "publishNotReady"),
                   facts=("kubernetes.wiring.publishNotReady",))
JOBSET_NETWORK = define("wiring-jobset-network", "a JobSet whose jobs run several pods keeps "
                        "its pod DNS names (network.enableDNSHostnames)",
                        source=fact_source(*_F, "jobsetNetwork"),
                        facts=("kubernetes.wiring.jobsetNetwork",))
HOSTNAME = define("wiring-explicit-hostname", "an Indexed Job's pod template leaves hostname "
                  "to the Job controller", severity=severity_of(fact(*_F, "explicitHostname")),
                  source=fact_source(*_F, "explicitHostname"),
                  facts=("kubernetes.wiring.explicitHostname",))
GCSFUSE = define("wiring-gcsfuse-annotation", "a pod that mounts a Cloud Storage FUSE volume "
                 "carries the gke-gcsfuse/volumes: \"true\" annotation",
                 source=fact_source("volumes", "gcsFuse"),
                 facts=("kubernetes.volumes.gcsFuse",))
COORDINATOR = define(
    "wiring-coordinator-address", "a coordinator address or worker hostname in env names a "
    "pod that the JobSet or Indexed Job creates", source=fact_source(*_F, "jobsetPodHostnames"),
    facts=("kubernetes.wiring.jobsetPodHostnames", "kubernetes.wiring.indexedJobHostnames",
           "kubernetes.wiring.envExpansion"))

ENV_REFERENCE = define(
    "wiring-env-reference", "a $(VAR) reference in a pod's env names a variable defined "
    "before it (Kubernetes leaves any other as written)",
    source=fact_source(*_F, "envLaterReference"),
    facts=("kubernetes.wiring.envLaterReference",))


def problem_of(ctx: LintContext, v: wiring.Wired) -> Problem:
    """A *wired* verdict as a problem of rule ``wiring-<check>`` at its field."""
    return ctx.problem(v.target, f"wiring-{v.check}", v.path, v.message, value=v.value,
                       expected=v.expected or None, hint=v.hint, severity=v.severity,
                       source=v.source, facts=v.facts)


def check_wiring(ctx: LintContext) -> Iterator[Problem]:
    """Services without publishNotReadyAddresses, JobSet network switched off, fixed
    hostnames in Indexed Jobs."""
    for v in wiring.published(ctx):
        yield problem_of(ctx, v)


def check_gcsfuse(ctx: LintContext) -> Iterator[Problem]:
    """Cloud Storage FUSE volumes without the sidecar annotation."""
    for v in wiring.gcsfuse(ctx):
        yield problem_of(ctx, v)


def check_coordinators(ctx: LintContext) -> Iterator[Problem]:
    """Coordinator addresses and worker hostnames that name no pod of the workload."""
    for v in wiring.coordinators(ctx):
        yield problem_of(ctx, v)


def check_all(ctx: LintContext) -> Iterator[Problem]:
    """The whole *wired* step (preflight runs it over the manifests a recipe renders)."""
    for v in wiring.wired(ctx):
        yield problem_of(ctx, v)


CHECKS = (check_wiring, check_gcsfuse, check_coordinators)
