"""What every lint rule sees: all objects of the input set, the catalog, the options, and
lookups across objects (the Service a Job names, the Namespace a workload lives in)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mldiag_provision.catalog.store import Fact
from mldiag_provision.catalog.tpu import Catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lint.loading import Resource
from mldiag_provision.lint.rules import RULES
from mldiag_provision.lint.workloads import PodTemplate, pod_templates
from mldiag_provision.recipe.sourcemap import Path
from mldiag_provision.rulebook import settle

if TYPE_CHECKING:
    from mldiag_provision.cluster.model import ClusterModel


@dataclass(frozen=True)
class LintOptions:
    """How to lint: Kubernetes minor version, Autopilot rules, ML Diagnostics rules, the
    installed CRD releases (``(("jobset", "v0.5.2"),)``, see schema.resolve_crd_versions),
    the recipe the manifests must fit (``lint --recipe``; None when not given) and the
    cluster they go to (``lint --cluster``: the model read from a live cluster, which
    :func:`~mldiag_provision.lint.linter.lint_loaded` puts in :attr:`LintContext.cluster`;
    None: a model built from the manifests)."""

    kubernetes_version: str
    autopilot: bool = False
    diagnostics: bool = True
    crd_versions: tuple[tuple[str, str], ...] = ()
    recipe: object | None = None
    cluster: ClusterModel | None = None


@dataclass
class LintContext:
    resources: list[Resource]
    catalog: Catalog
    options: LintOptions
    templates: list[PodTemplate] = field(default_factory=list)
    _memo: dict[object, object] = field(default_factory=dict[object, object])
    cluster: ClusterModel | None = None
    """The cluster the objects go to (preflight: the recipe's plan); None: lint builds one
    from the objects themselves (:func:`mldiag_provision.lint.cluster_rules.
    model_of_manifests`)."""

    def __post_init__(self) -> None:
        self.templates = [t for r in self.resources for t in pod_templates(r)]
        self._by_kind: dict[tuple[str, str], list[Resource]] = {}
        self._by_name: dict[tuple[str, str, str], list[Resource]] = {}
        for r in self.resources:
            self._by_kind.setdefault((r.group, r.kind), []).append(r)
            self._by_name.setdefault((r.group, r.kind, r.name), []).append(r)

    # -- lookups ----------------------------------------------------------------------------
    def of_kind(self, group: str, kind: str) -> list[Resource]:
        return self._by_kind.get((group, kind), [])

    def find(self, group: str, kind: str, name: str, namespace: str | None) -> list[Resource]:
        """Objects with this name in the same namespace; an unset namespace matches any,
        because ``kubectl apply -n NS`` puts both in NS."""
        return [r for r in self._by_name.get((group, kind, name), [])
                if namespace is None or r.namespace is None or r.namespace == namespace]

    def namespace_object(self, namespace: str | None) -> Resource | None:
        if namespace is None:
            return None
        found = [r for r in self.of_kind("", "Namespace") if r.name == namespace]
        return found[0] if found else None

    def memo(self, key: object, compute: Callable[[], object]) -> object:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # -- problems ---------------------------------------------------------------------------
    def problem(self, res: Resource, rule: str, path: Path, message: str, *,
                value: object = None, expected: str | None = None, hint: str | None = None,
                severity: Severity | None = None, source: str | None = None,
                facts: Iterable[Fact | None] = (), declared: bool = True) -> Problem:
        """A problem at ``path`` inside ``res``; severity and source default to the rule's.

        ``facts``: the facts this case stands on besides the rule's declared ones; the
        severity is settled by :func:`mldiag_provision.rulebook.settle` (never an error on
        an unverified fact); ``declared=False``: this problem stands on ``facts`` alone, not
        on the rule's declared facts (see :func:`~mldiag_provision.rulebook.settle`). The
        caret goes under the value when the problem is about a value, under the key
        otherwise (a missing or unknown field)."""
        info = RULES[rule]
        severity = settle(rule, severity, facts, declared=declared)
        line, col = res.locate(path, prefer_value=value is not None)
        if isinstance(value, (dict, list)):
            value = None
        return Problem(rule=rule, message=message, path=res.full_path(path), value=value,
                       expected=expected, hint=hint, file=res.file, line=line, column=col,
                       severity=severity, source=source or info.source)


Check = Callable[[LintContext], Iterator[Problem]]
