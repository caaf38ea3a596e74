"""What every preflight rule sees: the recipe, the catalog, positions, resolved slices."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mldiag_provision.catalog.gpu import GpuShape
from mldiag_provision.catalog.tpu import Catalog, SliceShape
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.recipe.sourcemap import Path, SourceMap, format_path

if TYPE_CHECKING:
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

    def problem(self, rule: str, path: Path, message: str, *, value: object = None,
                expected: str | None = None, hint: str | None = None,
                severity: Severity = Severity.ERROR, source: str | None = None,
                prefer_value: bool = True) -> Problem:
        line, col = self.sourcemap.locate(path, prefer_value=prefer_value)
        return Problem(rule=rule, message=message, path=format_path(path), value=value,
                       expected=expected, hint=hint, file=self.sourcemap.file, line=line,
                       column=col, severity=severity, source=source)

    @property
    def orchestrator(self) -> Orchestrator | None:
        """The unit of the recipe's orchestrator type; None when no unit has that name (the
        ``orchestrator`` rule reports it)."""
        from mldiag_provision import orchestrators

        return orchestrators.find(self.recipe.spec.orchestrator.type)

    def has(self, capability: Capability) -> bool:
        """Whether the recipe's orchestrator has ``capability`` (False when it is unknown)."""
        unit = self.orchestrator
        return unit is not None and unit.has(capability)

    def slice_index(self, name: str) -> int | None:
        for i, s in enumerate(self.recipe.spec.slices):
            if s.name == name:
                return i
        return None


RuleFn = Callable[[Context], Iterator[Problem]]
RULES: list[tuple[str, RuleFn]] = []


def rule(rule_id: str) -> Callable[[RuleFn], RuleFn]:
    """Register a preflight rule; rules run in registration order and yield problems."""

    def deco(fn: RuleFn) -> RuleFn:
        RULES.append((rule_id, fn))
        return fn

    return deco
