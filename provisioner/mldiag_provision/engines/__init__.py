"""Engines: what turns a rendered stack into real infrastructure (Terraform today).

An engine works in one rendered work directory and runs its tool through
:class:`~mldiag_provision.runner.CommandRunner` only. Commands talk to the :class:`Engine`
protocol and branch on :class:`EngineCapability`, never on an engine's name.

NOTE: if you add an :class:`EngineCapability`, update every engine's ``capabilities``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class EngineCapability(enum.Enum):
    PLAN_FILE = "plan-file"  # a saved plan that apply executes exactly
    PLAN_JSON = "plan-json"  # the saved plan as data (resource changes with before/after)
    DETAILED_EXITCODE = "detailed-exitcode"  # plan says "changes" vs "no changes" reliably
    PROGRESS_EVENTS = "progress-events"  # per-resource progress while applying
    STATE_LOCKING = "state-locking"  # the engine locks its state (local file, GCS)


# Resource types whose replacement or deletion loses a cluster, TPU capacity or profile
# data; a plan that would do it gets a loud warning and needs an explicit confirmation.
CLUSTER_TYPES = frozenset({"google_container_cluster"})
TPU_POOL_TYPES = frozenset({"google_container_node_pool", "google_tpu_v2_vm"})
BUCKET_TYPES = frozenset({"google_storage_bucket"})


@dataclass(frozen=True)
class ResourceChange:
    """One resource in a plan."""

    address: str
    type: str
    action: str  # create | update | replace | delete | read | no-op
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    replace_paths: tuple[str, ...] = ()  # attributes that force the replacement

    @property
    def danger(self) -> str | None:
        """Why this change is dangerous, or None."""
        if self.type in CLUSTER_TYPES and self.action in ("replace", "delete"):
            verb = "REPLACES" if self.action == "replace" else "DELETES"
            why = f" (because of {', '.join(self.replace_paths)})" if self.replace_paths else ""
            return (f"{verb} the GKE cluster {self.address}{why}: every workload, node and "
                    "TPU slice on it goes away")
        if self.type in TPU_POOL_TYPES and self.action in ("replace", "delete"):
            verb = "REPLACES" if self.action == "replace" else "DELETES"
            return f"{verb} the TPU node pool/VM {self.address}: running TPU jobs are killed"
        if self.type in BUCKET_TYPES and self.action in ("replace", "delete"):
            before = self.before or {}
            name = before.get("name", self.address)
            if before.get("force_destroy"):
                return (f"DELETES the profiles bucket {name} WITH every profile in it "
                        "(force_destroy = true)")
            return (f"deletes the profiles bucket {name} (Google refuses while it holds "
                    "profiles: force_destroy = false)")
        return None


@dataclass
class PlanSummary:
    """Counts of a plan, as a person reads them."""

    create: int = 0
    update: int = 0
    replace: int = 0
    delete: int = 0
    read: int = 0
    outputs_changed: int = 0

    @property
    def total(self) -> int:
        return self.create + self.update + self.replace + self.delete

    def text(self) -> str:
        return (f"{self.create} to create, {self.update} to update, {self.replace} to replace, "
                f"{self.delete} to delete")

    def to_dict(self) -> dict[str, int]:
        return {"create": self.create, "update": self.update, "replace": self.replace,
                "delete": self.delete, "read": self.read, "outputsChanged": self.outputs_changed}


@dataclass
class PlanResult:
    """A saved plan and what it would do."""

    has_changes: bool
    summary: PlanSummary
    changes: list[ResourceChange] = field(default_factory=list)
    plan_file: Path | None = None
    destroy: bool = False
    drift: list[ResourceChange] = field(default_factory=list)  # changed outside Terraform

    @property
    def dangers(self) -> list[str]:
        return [d for c in self.changes if (d := c.danger)]

    def to_dict(self) -> dict[str, Any]:
        return {"hasChanges": self.has_changes, "destroy": self.destroy,
                "summary": self.summary.to_dict(),
                "planFile": str(self.plan_file) if self.plan_file else None,
                "changes": [{"address": c.address, "type": c.type, "action": c.action}
                            for c in self.changes if c.action not in ("no-op", "read")],
                "drift": [{"address": c.address, "action": c.action} for c in self.drift],
                "dangers": self.dangers}


@dataclass(frozen=True)
class ProgressEvent:
    """One step of an apply, for live display."""

    kind: str  # start | progress | complete | error | refresh
    address: str
    action: str = ""
    elapsed_s: float = 0.0
    message: str = ""


ProgressHandler = Callable[[ProgressEvent], None]


@dataclass
class ApplyResult:
    summary: PlanSummary
    outputs: dict[str, Any] = field(default_factory=dict)


class Engine(Protocol):
    """What every engine offers; one instance works in one rendered directory."""

    name: str
    capabilities: frozenset[EngineCapability]

    def init(self) -> None:
        """Prepare the directory (providers, modules, backend); idempotent.

        Raises:
          EngineError: the tool failed; the message says why and names the log.
        """

    def validate(self) -> None:
        """Check the stack against the providers' schemas.

        Raises:
          EngineError: the stack is invalid (resource address + attribute path per problem).
        """

    def plan(self, *, destroy: bool = False,
             progress: ProgressHandler | None = None) -> PlanResult:
        """Plan and save the plan; ``destroy`` plans removing everything.

        Raises:
          EngineError: planning failed.
        """

    def apply(self, plan: PlanResult, *, progress: ProgressHandler | None = None,
              ) -> ApplyResult:
        """Execute exactly the saved ``plan``.

        Raises:
          EngineError: applying failed; what was done so far is in the state.
        """

    def outputs(self) -> dict[str, Any]:
        """The stack's outputs: name -> {"value": ..., "sensitive": bool}.

        Raises:
          EngineError: the tool failed.
        """
