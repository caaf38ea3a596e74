"""What every preflight rule sees: the recipe, the catalog, positions, resolved slices."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mldiag_provision import orchestrators
from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.catalog.tpu import Catalog, SliceShape
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.recipe.sourcemap import Path, SourceMap, format_path
from mldiag_provision.rulebook import RULES as RULES_BY_ID
from mldiag_provision.rulebook import define, settle

if TYPE_CHECKING:
    from mldiag_provision.catalog.gpu import GpuShape
    from mldiag_provision.orchestrators import Capability, Orchestrator
    from mldiag_provision.recipe.model import Recipe


@dataclass
class Context:
    """Inputs of the rules; ``shapes`` / ``gpu_shapes`` map slice index -> resolved TPU / GPU
    shape (None if invalid); a slice appears in at most one of them."""

    recipe: Recipe
    catalog: Catalog
    sourcemap: SourceMap
    shapes: dict[int, SliceShape | None] = field(default_factory=dict)
    gpu_shapes: dict[int, GpuShape | None] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)
    """What several rules derive once per recipe (the project plan, the rendered
    workloads: ``preflight/manifest_rules.py``)."""
    data: object = None
    """The YAML data ``recipe`` was validated from (None when the caller did not pass it):
    the key under which the manifest rules reuse findings (``preflight/manifest_rules.py``)."""

    def problem(self, rule: str, path: Path, message: str, *, value: object = None,
                expected: str | None = None, hint: str | None = None,
                severity: Severity | None = None,
                source: str | Mapping[str, Any] | None = None,
                prefer_value: bool = True, facts: Iterable[Fact | None] = (),
                declared: bool = True) -> Problem:
        """A problem of a declared rule at ``path`` of the recipe.

        ``source``: a URL, or the fact the problem stands on (a :class:`Fact` or a fact
        mapping of a data file: cited by its source's URL and added to ``facts``).
        ``facts``: what this case stands on besides the rule's declared facts; the severity
        is settled by :func:`mldiag_provision.rulebook.settle` (never an error on an
        unverified fact; ``declared=False``: ``facts`` alone, not the rule's declared ones)."""
        line, col = self.sourcemap.locate(path, prefer_value=prefer_value)
        info = RULES_BY_ID[rule]
        if isinstance(source, Mapping):
            fact = store().as_fact(source)
            source, facts = fact.url, [*facts, fact]
        return Problem(rule=rule, message=message, path=format_path(path), value=value,
                       expected=expected, hint=hint, file=self.sourcemap.file, line=line,
                       column=col, severity=settle(rule, severity, facts, declared=declared),
                       source=source or info.source)

    def __post_init__(self) -> None:
        # Worked out once per recipe, up front: the rules ask for them many times, nearly
        # every recipe's rules at all (cached_property locked and looked up on each first
        # access, ~3 per recipe; issue 16).
        self.orchestrator: Orchestrator | None = orchestrators.find(
            self.recipe.spec.orchestrator.type)
        """The unit of the recipe's orchestrator type; None when no unit has that name (the
        ``orchestrator`` rule reports it)."""
        self._capabilities: frozenset[Capability] = (
            self.orchestrator.capabilities if self.orchestrator is not None else frozenset())
        # slice name -> index of its first slice (rules ask for every workload's slice)
        self._slice_indexes: dict[str, int] = {}
        for i, s in enumerate(self.recipe.spec.slices):
            self._slice_indexes.setdefault(s.name, i)

    def has(self, capability: Capability) -> bool:
        """Whether the recipe's orchestrator has ``capability`` (False when it is unknown)."""
        return capability in self._capabilities

    def slice_index(self, name: str) -> int | None:
        """Index of the first slice called ``name`` (None when there is none)."""
        return self._slice_indexes.get(name)


RuleFn = Callable[[Context], Iterator[Problem]]
RULES: list[tuple[str, RuleFn]] = []


def rule(rule_id: str, *, facts: Iterable[str] = (), source: str | None = None,
         severity: Severity = Severity.ERROR) -> Callable[[RuleFn], RuleFn]:
    """Declare a recipe rule in the rulebook and register its function, in one statement.

    The title is the first line of the function's docstring. Rules run in registration order
    and yield problems. ``facts``: fact ids the rule reads (their confidence caps its
    severity); see :func:`mldiag_provision.rulebook.define`.
    """

    def deco(fn: RuleFn) -> RuleFn:
        title = (fn.__doc__ or rule_id).strip().splitlines()[0]
        define(rule_id, title, scope="recipe", severity=severity, source=source, facts=facts)
        RULES.append((rule_id, fn))
        return fn

    return deco


def runs(*rule_ids: str) -> Callable[[RuleFn], RuleFn]:
    """Register a function that reports under rules declared elsewhere (lint's, run over the
    manifests a recipe renders); each id must already be declared."""

    def deco(fn: RuleFn) -> RuleFn:
        missing = [r for r in rule_ids if r not in RULES_BY_ID]
        if missing:
            raise ValueError(f"{fn.__name__} runs undeclared rules {missing}")
        RULES.append(("manifests:" + ",".join(rule_ids), fn))
        return fn

    return deco
