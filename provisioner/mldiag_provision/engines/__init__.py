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


# Resource types whose replacement or deletion loses a cluster, accelerator capacity, shared
# storage or profile data; a plan that would do it gets a loud warning and needs an explicit
# confirmation.
CLUSTER_TYPES = frozenset({"google_container_cluster"})
TPU_POOL_TYPES = frozenset({"google_container_node_pool", "google_tpu_v2_vm"})
BUCKET_TYPES = frozenset({"google_storage_bucket"})
SLURM_TYPES = frozenset({"google_hypercomputecluster_cluster"})
# Removed from the state only: `disable_on_destroy = false` keeps the API enabled
# (modules/project/services); the _Default log bucket cannot be deleted.
KEPT_TYPES = frozenset({"google_project_service", "google_logging_project_bucket_config"})

# TPU machine types: ct<gen>...-<n>t (ct4p, ct5lp, ct5p, ct6e) and tpu7x-standard-4t
# (catalog/data/tpu.yaml machineTypes); GPU machine families carrying NVIDIA GPUs
# (catalog/data/gpu.yaml): a2, a3, a4, a4x, g2, g4.
_TPU_PREFIXES = ("ct", "tpu")
_GPU_PREFIXES = ("a2-", "a3-", "a4-", "a4x-", "g2-", "g4-")


def _first(value: Any) -> dict[str, Any]:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return value[0]
    return value if isinstance(value, dict) else {}


def node_pool_kind(values: dict[str, Any] | None) -> str:
    """``"TPU"``, ``"GPU"`` or ``""`` for a node pool / TPU VM, from its machine type."""
    values = values or {}
    machine = str(values.get("accelerator_type")
                  or _first(values.get("node_config")).get("machine_type") or "")
    if values.get("accelerator_type") or machine.startswith(_TPU_PREFIXES):
        return "TPU"
    if machine.startswith(_GPU_PREFIXES) or _first(values.get("node_config")).get(
            "guest_accelerator"):
        return "GPU"
    return ""


def slurm_storage(values: dict[str, Any] | None) -> list[str]:
    """The Filestore / Managed Lustre / bucket storage a Cluster Director cluster CREATED
    (``storage_resources[].config[].new_*``): deleting the cluster deletes them."""
    lost = []
    for res in (values or {}).get("storage_resources") or []:
        config = _first(res.get("config"))
        for key, label in (("new_filestore", "Filestore"), ("new_lustre", "Managed Lustre"),
                           ("new_bucket", "bucket")):
            item = _first(config.get(key))
            if item:
                name = item.get("filestore") or item.get("lustre") or item.get("bucket")
                lost.append(f"{label} {name or res.get('id', '?')}")
    return lost


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
        """Why this change is dangerous (what is lost), or None."""
        if self.action not in ("replace", "delete"):
            return None
        verb = "REPLACES" if self.action == "replace" else "DELETES"
        before = self.before or {}
        if self.type in CLUSTER_TYPES:
            why = f" (because of {', '.join(self.replace_paths)})" if self.replace_paths else ""
            return (f"{verb} the GKE cluster {self.address}{why}: every workload, node and "
                    "TPU slice on it goes away")
        if self.type in TPU_POOL_TYPES:
            kind = node_pool_kind(before or self.after)
            if kind == "TPU":
                return f"{verb} the TPU node pool/VM {self.address}: running TPU jobs are killed"
            if kind == "GPU":
                return f"{verb} the GPU node pool {self.address}: running GPU jobs are killed"
            return None  # a system pool: goes with the cluster, nothing of value is lost
        if self.type in SLURM_TYPES:
            storage = slurm_storage(before)
            extra = (" and the storage it created: " + ", ".join(storage)) if storage else ""
            return (f"{verb} the managed Slurm cluster {self.address}: its login and compute "
                    f"nodes and running jobs{extra}")
        if self.type in BUCKET_TYPES:
            name = before.get("name", self.address)
            if before.get("force_destroy"):
                return (f"{verb} the profiles bucket {name} WITH every profile in it "
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

    @property
    def kept(self) -> list[str]:
        """Deletes that only forget: APIs stay enabled, the _Default log bucket stays."""
        return [c.address for c in self.changes
                if c.action == "delete" and c.type in KEPT_TYPES]

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
