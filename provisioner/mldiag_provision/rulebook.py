"""The rulebook: one registry of every rule, for recipes (preflight) and manifests (lint).

A rule is declared once, with :func:`define` (lint's checks, the loader's and the schema's
ids) or with the preflight decorator :func:`mldiag_provision.preflight.context.rule`, which
calls :func:`define` and registers the function in the same statement, so a declaration and its
registration cannot drift apart. Ids are unique across both sides: declaring an id again with
other metadata raises at import time (a test imports every rule module).

Severity policy, in one place (:func:`settle`): a problem is an error only when every fact it
stands on is verified. A rule names the facts it reads when it is declared (``facts=``, fact
ids of the fact store) and, per problem, the facts of that case (a machine type's size); an
unverified one (confidence M or L) turns an error into a warning, whatever the rule asked for.

Adding a rule (docs/development/add-rule.md): one ``define(...)`` (or ``@rule(...)``) next to its
check, with a title, the facts it reads and, for lint, the check in its module's ``CHECKS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.errors import Severity

Scope = Literal["recipe", "manifest"]


@dataclass(frozen=True)
class RuleInfo:
    """What a rule checks, its worst severity, where its fact comes from, what it reads."""

    id: str
    title: str
    severity: Severity
    source: str | None
    group: str  # the id's first word: yaml, k8s, tpu, autopilot, mldiag, workload, slurm, ...
    scope: Scope
    facts: tuple[str, ...] = ()


RULES: dict[str, RuleInfo] = {}

# Ids renamed when preflight and lint shared a name for two different checks (issue 13);
# the old id now means only the lint rule.
RENAMED = {"tpu-multislice (recipe)": "slice-multislice",
           "tpu-capacity (recipe)": "slice-capacity"}


def define(rule_id: str, title: str, *, scope: Scope, severity: Severity = Severity.ERROR,
           source: str | None = None, facts: Iterable[str] = ()) -> RuleInfo:
    """Declare a rule. Idempotent for identical declarations.

    Args:
      rule_id: stable id, ``<group>-<what>``; unique across recipes and manifests.
      facts: ids of the fact-store facts the rule reads (``"kubernetes.autopilot.hostPath"``);
        each must exist. The rule's default severity is capped by them (:func:`settle`).
    Raises:
      ValueError: the id is declared twice with different metadata, or a fact id is unknown.
    """
    fact_ids = tuple(facts)
    for fid in fact_ids:
        fact_by_id(fid)  # raises CatalogError (a ValueError) for an unknown id
    info = RuleInfo(rule_id, title, severity, source, rule_id.split("-", 1)[0], scope, fact_ids)
    old = RULES.setdefault(rule_id, info)
    if old != info:
        raise ValueError(f"rule id {rule_id!r} is declared twice ({old.scope}: {old.title!r}; "
                         f"{info.scope}: {info.title!r}); rule ids are unique")
    return info


def fact_by_id(fact_id: str) -> Fact:
    """``"gke.ports.tpuWorker"`` -> that :class:`Fact` (file name, then the path)."""
    name, _, rest = fact_id.partition(".")
    keys: list[str | int] = [int(k) if k.isdigit() else k for k in rest.split(".")] if rest \
        else []
    return store().fact(name, *keys)


def settle(rule_id: str, requested: Severity | None, facts: Iterable[Fact | None] = (), *,
           declared: bool = True) -> Severity:
    """The severity a problem of ``rule_id`` gets: the one asked for (else the rule's), and
    never ERROR when the rule's declared facts or ``facts`` include an unverified one.

    ``declared=False``: this one problem does not stand on the rule's declared facts, only on
    ``facts`` (which must then say everything it stands on). A rule whose usual verdict rests
    on an estimate can so judge one case from a figure it read, such as ``node-allocatable``
    on a live Node's own ``status.allocatable`` instead of GKE's reservation tiers."""
    info = RULES[rule_id]
    sev = requested or info.severity
    if sev is not Severity.ERROR:
        return sev
    standing = [f for f in facts if f is not None]
    if declared:
        standing += [fact_by_id(fid) for fid in info.facts]
    elif not standing:
        raise ValueError(f"{rule_id}: a problem that does not stand on the rule's declared "
                         "facts must name its own")
    if any(not f.verified for f in standing):
        return Severity.WARNING
    return sev
