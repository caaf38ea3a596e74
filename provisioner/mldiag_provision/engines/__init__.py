"""Engines: what turns a rendered stack into real infrastructure.

Each engine is a unit: a module of this package that defines ``UNIT = EngineUnit(...)``
(:mod:`~mldiag_provision.engines.terraform`, :mod:`~mldiag_provision.engines.pulumi`), found
on disk by :mod:`mldiag_provision.engine_names` (module ``engines/<name>.py`` with a top-level
``UNIT = EngineUnit(`` line) and imported by :func:`units` on first use. A
unit declares its :class:`EngineCapability` values, renders its files of a stack, names its
resource types by what they hold (:class:`ResourceKinds`: danger warnings), translates its
tool's and Google's errors, and makes the :class:`Engine` that works in one rendered
directory, running its tool through :class:`~mldiag_provision.runner.CommandRunner` only.
Commands talk to the :class:`Engine` protocol and branch on capabilities, never on an
engine's name. Adding an engine is adding one module (docs/development/add-engine.md).

NOTE: if you add an :class:`EngineCapability`, update every engine's ``capabilities``.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mldiag_provision.errors import UsageError

if TYPE_CHECKING:
    import jinja2

    from mldiag_provision.plan.types import StackPlan
    from mldiag_provision.runner import CommandRunner


class EngineCapability(enum.Enum):
    PLAN_FILE = "plan-file"  # a saved plan that apply executes exactly
    PLAN_JSON = "plan-json"  # the saved plan as data (resource changes with before/after)
    DETAILED_EXITCODE = "detailed-exitcode"  # plan says "changes" vs "no changes" reliably
    PROGRESS_EVENTS = "progress-events"  # per-resource progress while applying
    STATE_LOCKING = "state-locking"  # the engine locks its state (local file, GCS)
    # a file dropped into the stage directory overrides module arguments for one update-only
    # apply (Terraform override files): how `destroy` lifts deletion protection/force_destroy
    OVERRIDE_FILES = "override-files"


@dataclass(frozen=True)
class ResourceKinds:
    """An engine's resource type names, by what replacing or deleting them loses. Danger
    warnings (:attr:`ResourceChange.danger`), the kept-on-destroy list and the "cluster not
    there yet" check read these, so each engine unit keys them by its own type names.

    Attributes:
      cluster: a GKE cluster (every workload, node and slice on it).
      accelerator_pool: a node pool or TPU VM (TPU/GPU kind from its machine type).
      bucket: the profiles bucket.
      slurm: a Cluster Director managed Slurm cluster (with the storage it created).
      kept: removed from the state only on destroy (APIs with ``disable_on_destroy =
        false``; the ``_Default`` log bucket cannot be deleted).
    """

    cluster: frozenset[str]
    accelerator_pool: frozenset[str]
    bucket: frozenset[str]
    slurm: frozenset[str]
    kept: frozenset[str]


# Terraform (hashicorp/google, google-beta) type names. Replacing or deleting these loses a
# cluster, accelerator capacity, shared storage or profile data: a plan that would do it gets
# a loud warning and needs an explicit confirmation. Kept types: modules/project/services
# (`disable_on_destroy = false`) and the _Default log bucket
# (https://cloud.google.com/logging/docs/buckets#manage_buckets: _Default cannot be deleted).
TERRAFORM_KINDS = ResourceKinds(
    cluster=frozenset({"google_container_cluster"}),
    accelerator_pool=frozenset({"google_container_node_pool", "google_tpu_v2_vm"}),
    bucket=frozenset({"google_storage_bucket"}),
    slurm=frozenset({"google_hypercomputecluster_cluster"}),
    kept=frozenset({"google_project_service", "google_logging_project_bucket_config"}),
)
# The Terraform names under their earlier module-level names.
CLUSTER_TYPES = TERRAFORM_KINDS.cluster
TPU_POOL_TYPES = TERRAFORM_KINDS.accelerator_pool
BUCKET_TYPES = TERRAFORM_KINDS.bucket
SLURM_TYPES = TERRAFORM_KINDS.slurm
KEPT_TYPES = TERRAFORM_KINDS.kept

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
    kinds: ResourceKinds = field(default=TERRAFORM_KINDS, compare=False, repr=False)
    """The engine's type names (:class:`ResourceKinds`); Terraform's unless the engine that
    made this change says otherwise."""
    details: Callable[[], ResourceChange] | None = field(default=None, compare=False,
                                                         repr=False)
    """Set when the engine made this change without its values (``before``, ``after``,
    ``replace_paths`` left empty, e.g. from Terraform's ``plan -json`` stream): returns the
    same change with them, loading them on first use (:meth:`full`)."""

    def full(self) -> ResourceChange:
        """This change with its values: itself, or the one :attr:`details` loads."""
        return self.details() if self.details is not None else self

    @property
    def _danger_reads_values(self) -> bool:
        """Whether :attr:`danger` depends on the values (not only on action and type)."""
        if self.action == "replace" and self.type in self.kinds.cluster:
            return True  # the attributes forcing the replacement
        return self.action in ("replace", "delete") and self.type in (
            self.kinds.accelerator_pool | self.kinds.slurm | self.kinds.bucket)

    @property
    def is_cluster(self) -> bool:
        """The change is to a GKE cluster."""
        return self.type in self.kinds.cluster

    @property
    def kept(self) -> bool:
        """A delete that only forgets (the object stays in Google Cloud)."""
        return self.action == "delete" and self.type in self.kinds.kept

    @property
    def danger(self) -> str | None:
        """Why this change is dangerous (what is lost), or None."""
        if self.action not in ("replace", "delete"):
            return None
        if self.details is not None and self._danger_reads_values:
            return self.full().danger
        verb = "REPLACES" if self.action == "replace" else "DELETES"
        before = self.before or {}
        if self.type in self.kinds.cluster:
            why = f" (because of {', '.join(self.replace_paths)})" if self.replace_paths else ""
            return (f"{verb} the GKE cluster {self.address}{why}: every workload, node and "
                    "TPU slice on it goes away")
        if self.type in self.kinds.accelerator_pool:
            kind = node_pool_kind(before or self.after)
            if kind == "TPU":
                return f"{verb} the TPU node pool/VM {self.address}: running TPU jobs are killed"
            if kind == "GPU":
                return f"{verb} the GPU node pool {self.address}: running GPU jobs are killed"
            return None  # a system pool: goes with the cluster, nothing of value is lost
        if self.type in self.kinds.slurm:
            storage = slurm_storage(before)
            extra = (" and the storage it created: " + ", ".join(storage)) if storage else ""
            return (f"{verb} the managed Slurm cluster {self.address}: its login and compute "
                    f"nodes and running jobs{extra}")
        if self.type in self.kinds.bucket:
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
    details: Callable[[], PlanResult] | None = field(default=None, compare=False, repr=False)
    """Set when the engine made :attr:`changes` and :attr:`drift` without the values: the
    changes then list what changes (no unchanged resources), each change's values load
    on first use (:attr:`ResourceChange.details`), and this returns the whole plan, as
    :meth:`detailed` puts it in place."""

    def detailed(self) -> PlanResult:
        """This plan with every change's values and the unchanged resources (what a policy
        over the plan reads), loaded once when the engine deferred them; returns ``self``.

        Raises:
          EngineError: the engine failed to read its saved plan.
        """
        if self.details is not None:
            full = self.details()
            self.changes[:] = full.changes
            self.drift[:] = full.drift
            self.details = None
        return self

    @property
    def dangers(self) -> list[str]:
        return [d for c in self.changes if (d := c.danger)]

    @property
    def kept(self) -> list[str]:
        """Deletes that only forget: APIs stay enabled, the _Default log bucket stays."""
        return [c.address for c in self.changes if c.kept]

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

    def init(self, *, backend: bool = True) -> None:
        """Prepare the directory (providers, modules, and with ``backend`` the state
        backend); idempotent.

        Raises:
          EngineError: the tool failed; the message says why and names the log.
        """

    def validate(self) -> None:
        """Check the stack against the providers' schemas.

        Raises:
          EngineError: the stack is invalid (resource address + attribute path per problem).
        """

    def plan(self, *, destroy: bool = False, progress: ProgressHandler | None = None,
             targets: Iterable[str] = ()) -> PlanResult:
        """Plan and save the plan; ``destroy`` plans removing everything; ``targets``
        limits the plan to these addresses (and what they depend on).

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

    def never_applied(self) -> bool:
        """True when it is certain, without running the tool or reaching a backend, that
        nothing was ever applied here (so there are no outputs and no state to read);
        False when it may have been (a remote backend can only be asked by the tool)."""

    def state_resources(self) -> list[dict[str, Any]]:
        """Managed resources in the state, each ``{"address", "type", "values"}`` (type
        names as in the unit's :class:`ResourceKinds`); [] when nothing was applied.

        Raises:
          EngineError: the tool failed.
        """

    def forget(self, addresses: Iterable[str]) -> None:
        """Stop managing these objects without deleting them (the kept types on destroy).

        Raises:
          EngineError: the tool failed.
        """


# --- units and the registry --------------------------------------------------------------------

EngineFactory = Callable[[Path, "CommandRunner", Iterable[int]], Engine]
"""(stage directory, the run's recorded runner, file descriptors the tool's processes keep)
-> the engine working there."""


@dataclass(frozen=True)
class RenderKit:
    """What the renderer (:func:`mldiag_provision.render.stack.render_stack`) lends an engine
    unit's :data:`StackRenderer`, so that the unit never imports ``render/``: render owns
    the stack's files and calls the unit, never the other way.

    Attributes:
      banner: ``(kind, recipe name)`` -> the "generated, do not edit" line of a file type
        (``hcl``, ``yaml``, ``md``).
      template_env: a blueprints folder -> its Jinja environment (kept per process).
      module_files: ``(modules folder, module, recipe name)`` -> relative path
        (``modules/<module>/...``) -> bytes of a module's files, each with the banner.
    """

    banner: Callable[[str, str], str]
    template_env: Callable[[Path], jinja2.Environment]
    module_files: Callable[[Path, str, str], dict[str, bytes]]


StackRenderer = Callable[["StackPlan", Mapping[str, Any], Path, RenderKit], dict[str, bytes]]
"""(plan, the blueprint's ``blueprint.yaml`` as data, the data root holding blueprints/ and
modules/, the renderer's :class:`RenderKit`) -> the engine's files of the stack, relative
path -> bytes. A pure function: it reads the data root and writes nothing."""


SavedPlanReader = Callable[[Path, "CommandRunner"], "dict[str, Any] | None"]
"""(stage directory, the runner its tool runs through) -> the plan ``mldiag-provision plan``
saved in that stage, as the policy gate reads it: a document whose ``resource_changes`` are in
``terraform show -json``'s shape (each ``{"address", "type", "change": {"actions", "before",
"after"}}``, Terraform type names; https://developer.hashicorp.com/terraform/internals/json-format)
with whatever else the engine's own format holds; None when the stage holds no saved plan.
Writes nothing.

Raises:
  EngineError: the saved plan cannot be read (the tool failed, or the file is not its
    format), or the engine's tool is missing while a saved plan is there."""


@dataclass(frozen=True)
class ByHand:
    """The shell lines a person runs to apply a stack by hand (the stack's README.md).

    Attributes:
      project: apply the project stage, in the stack's root directory.
      cluster: apply the cluster stage (``agents/``), from the root directory.
      output: prints one output; ``{name}`` is replaced by the output's name.
      output_raw: prints one string output's bare value (for ``$(...)``), ``{name}`` as above.
    """

    project: tuple[str, ...]
    cluster: tuple[str, ...]
    output: str
    output_raw: str


@dataclass(frozen=True)
class EngineUnit:
    """One engine: what it can do and how to reach it.

    Attributes:
      name: the recipe's ``spec.engine.name``; a blueprint's ``engines:`` lists it.
      summary: one line for people.
      capabilities: what it can do (:class:`EngineCapability`).
      kinds: its resource type names (danger warnings, kept-on-destroy, cluster checks).
      translate: ``text`` of a failure -> (what went wrong, what to do), or None when the
        failure is not a known one (Google Cloud's errors as this engine's tool shows them).
      marker: a file every directory this engine works in holds (``main.tf``): which engine
        a rendered stage belongs to, without the recipe.
      render: the engine's files of a stack (:data:`StackRenderer`).
      make: the engine of one rendered stage (:data:`EngineFactory`).
      sources: a blueprint manifest -> the files and directories (relative to the data
        root: ``blueprints/...``, ``modules/...``) :attr:`render` reads for it; the tests
        check that each exists for every blueprint that lists the engine.
      by_hand: the commands the stack README shows for applying it by hand.
      saved_plan: a stage's saved plan as the policy gate reads it (:data:`SavedPlanReader`;
        ``policy --plan``).
      locate: the engine's executable, found the way :attr:`make` finds it (a path); raises
        :class:`~mldiag_provision.errors.EngineError` naming it, with how to install it, when
        there is none. None: the engine needs no executable of its own.
    """

    name: str
    summary: str
    capabilities: frozenset[EngineCapability]
    kinds: ResourceKinds
    translate: Callable[[str], tuple[str, str] | None]
    marker: str
    render: StackRenderer
    make: EngineFactory
    sources: Callable[[Mapping[str, Any]], list[str]]
    by_hand: ByHand
    saved_plan: SavedPlanReader
    locate: Callable[[], str] | None = None

    def has(self, capability: EngineCapability) -> bool:
        """Whether this engine has ``capability``."""
        return capability in self.capabilities


class UnknownEngineError(UsageError):
    """No engine unit has this name; the message names the known ones."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"engine '{name}' is not supported by this version yet",
                         hint="use " + " or ".join(f"'{k}'" for k in known))
        self.name = name
        self.known = known


@cache
def units() -> tuple[EngineUnit, ...]:
    """Every registered engine unit, by name: the ``UNIT`` of each module that
    :data:`mldiag_provision.engine_names.MODULES` lists (found there on disk).

    Raises:
      TypeError: a listed module's ``UNIT`` is missing or not an :class:`EngineUnit`, or is
        named otherwise than the table says (a bug in that unit or in the table).
    """
    from mldiag_provision.engine_names import MODULES

    found: list[EngineUnit] = []
    for name in sorted(MODULES):
        module = importlib.import_module(MODULES[name])
        unit = getattr(module, "UNIT", None)
        if not isinstance(unit, EngineUnit) or unit.name != name:
            raise TypeError(f"{module.__name__}.UNIT is not the EngineUnit named '{name}'")
        found.append(unit)
    return tuple(found)


def names() -> tuple[str, ...]:
    """The registered engine names, sorted (without importing the engines)."""
    from mldiag_provision.engine_names import names as registered

    return registered()


def find(name: str) -> EngineUnit | None:
    """The engine unit called ``name``, or None."""
    global _index
    all_units = units()
    if _index is None or _index[0] is not all_units:  # units() is cached; tests replace it
        _index = (all_units, {u.name: u for u in all_units})
    return _index[1].get(name)


# (the units() tuple, its units by name): find() builds the index once per tuple
_index: tuple[tuple[EngineUnit, ...], dict[str, EngineUnit]] | None = None


def get(name: str) -> EngineUnit:
    """The engine unit called ``name``.

    Raises:
      UnknownEngineError: none is (a usage error naming the known engines).
    """
    unit = find(name)
    if unit is None:
        raise UnknownEngineError(name, names())
    return unit

