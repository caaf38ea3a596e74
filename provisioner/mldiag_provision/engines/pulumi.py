"""Pulumi engine: ``preview`` / ``up`` / ``destroy`` / stack outputs of one rendered Pulumi
project (``Pulumi.yaml`` + ``__main__.py``, :mod:`mldiag_provision.engines.pulumi_program`),
driven through Pulumi's Automation API (``pulumi.automation``), which runs the ``pulumi`` CLI.

  * state: a local file backend in ``<stack dir>/.mldiag/pulumi-state`` by default, or the
    ``gs://`` backend ``Pulumi.yaml`` names when the recipe has a ``gcs`` backend; the stack is
    ``default``. Pulumi locks the stack's state in both
    (https://www.pulumi.com/docs/iac/concepts/state-and-backends/);
  * ``plan``: ``preview --diff`` (with ``--refresh`` for drift), each step's event turned into a
    :class:`ResourceChange` with the Terraform type name of the object (data/pulumi_types.yaml),
    so the danger warnings and the destroy guard are the same code for both engines;
  * ``apply``: ``up`` (or ``destroy``). Pulumi has no saved plan by default (update plans are
    experimental), so ``up`` previews again and applies that: :data:`EngineCapability.PLAN_FILE`
    is not claimed;
  * the saved preview: ``plan`` also writes each stage's preview to
    ``<stage>/.mldiag/pulumi-preview.json`` (:data:`PREVIEW_FILE`) in the shape of
    ``pulumi preview --json`` (so a person may write it by hand with that command instead), and
    ``apply`` removes it; the policy gate reads it (``policy DIR --plan``,
    :func:`saved_plan_document`). Not an update plan (``pulumi preview --save-plan``): those are
    experimental (``PULUMI_EXPERIMENTAL=true``, https://www.pulumi.com/docs/concepts/update-plans/)
    and record each resource's planned input diff, not its values before (``GoalV1.inputDiff``
    of pulumi/pulumi sdk/go/common/apitype/plan.go);
  * ``outputs``: the stack outputs, ``{"value", "sensitive"}`` like Terraform's.

The ``pulumi`` CLI is not a Python package (its npm/pip-less installers download a binary):
when it is missing every command says so in one line with how to install it
(:func:`find_pulumi`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mldiag_provision.engines import (
    TERRAFORM_KINDS,
    ApplyResult,
    ByHand,
    EngineCapability,
    EngineUnit,
    PlanResult,
    PlanSummary,
    ProgressEvent,
    ProgressHandler,
    RenderKit,
    ResourceChange,
)
from mldiag_provision.errors import EngineError
from mldiag_provision.runner import CommandRunner

if TYPE_CHECKING:
    from mldiag_provision.plan.types import StackPlan

INSTALL_HINT = ("install the Pulumi CLI (https://www.pulumi.com/docs/iac/download-install/, "
                "e.g. `curl -fsSL https://get.pulumi.com | sh`) and put it on PATH, or point "
                "MLDIAG_PULUMI at it; or use `engine: {name: terraform}`")
SDK_HINT = "pip install 'mldiag-provision[pulumi]' (pulumi, pulumi-gcp, pulumi-kubernetes)"
STACK = "default"
STATE_DIR = ".mldiag/pulumi-state"
# the preview ``plan`` saved in a stage directory, for the policy gate (module docstring)
PREVIEW_FILE = ".mldiag/pulumi-preview.json"


@cache
def _types() -> dict[str, str]:
    doc = yaml.safe_load((Path(__file__).parent / "data" / "pulumi_types.yaml").read_text(
        encoding="utf-8"))
    return dict(doc["types"])


TERRAFORM_TO_PULUMI: dict[str, str] = _types()
PULUMI_TO_TERRAFORM: dict[str, str] = {v: k for k, v in TERRAFORM_TO_PULUMI.items()}


def find_pulumi() -> str:
    """The pulumi CLI: ``$MLDIAG_PULUMI`` or ``pulumi`` on PATH.

    Raises:
      EngineError: there is none (one line, with how to install it).
    """
    explicit = os.environ.get("MLDIAG_PULUMI")
    found = shutil.which(explicit or "pulumi")
    if found is None:
        where = f"MLDIAG_PULUMI={explicit}" if explicit else "not on PATH"
        raise EngineError(f"the pulumi CLI was not found ({where}); engine: pulumi needs it",
                          hint=INSTALL_HINT)
    return found


def _automation() -> Any:
    try:
        from pulumi import automation
    except ImportError:
        raise EngineError("the Pulumi Python SDK is not installed (engine: pulumi)",
                          hint=SDK_HINT) from None
    return automation


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
_MAP_KEYS = frozenset({"labels", "resourceLabels", "annotations", "defaultLabels",
                       "effectiveLabels", "values"})


def snake_tree(value: Any, *, in_map: bool = False) -> Any:
    """Pulumi state (camelCase properties) with Terraform attribute names (snake_case); keys of
    label/annotation maps are left as they are."""
    if isinstance(value, dict):
        return {(k if in_map else _CAMEL.sub(lambda m: "_" + m.group(1).lower(), k)):
                snake_tree(v, in_map=(not in_map and k in _MAP_KEYS)) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_tree(v) for v in value]
    return value


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


_OPS = {"create": "create", "update": "update", "delete": "delete", "replace": "replace",
        "create-replacement": "replace", "delete-replaced": "replace", "read": "read",
        "read-replacement": "read", "same": "no-op", "import": "create",
        "import-replacement": "replace", "discard": "delete", "discard-replaced": "replace"}


def _state(state: Any) -> dict[str, Any] | None:
    """A step's old/new resource state from an engine event, as ``pulumi preview --json``
    writes it (``apitype.ResourceV3``: ``urn``, ``custom``, ``type``, ``inputs``,
    ``outputs``; secrets are already ``"[secret]"`` in the events)."""
    if state is None:
        return None
    return {"urn": state.urn, "custom": bool(state.custom), "type": str(state.type),
            "inputs": dict(state.inputs or {}), "outputs": dict(state.outputs or {})}


def preview_step(ev: Any) -> dict[str, Any] | None:
    """One engine event as a step of ``pulumi preview --json`` (``op``, ``urn``,
    ``provider``, ``oldState``, ``newState``, ``diffReasons``, ``replaceReasons``: the
    ``previewStep`` of pulumi/pulumi pkg/backend/display/json.go, ShowPreviewDigest); None for
    an event that is not a step (only ``resourcePreEvent`` is)."""
    pre = getattr(ev, "resource_pre_event", None)
    if pre is None or pre.metadata is None:
        return None
    md = pre.metadata
    step: dict[str, Any] = {"op": str(getattr(md.op, "value", md.op)), "urn": md.urn,
                            "provider": md.provider or ""}
    for key, state in (("oldState", md.old), ("newState", md.new)):
        doc = _state(state)
        if doc is not None:
            step[key] = doc
    if md.diffs:
        step["diffReasons"] = [str(k) for k in md.diffs]
    if md.keys:
        step["replaceReasons"] = [str(k) for k in md.keys]
    return step


def _urn_type(urn: str) -> str:
    """The type token of a URN ``urn:pulumi:STACK::PROJECT::[PARENT$]TYPE::NAME``."""
    parts = urn.split("::")
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


def _changes(steps: Iterable[tuple[str, str, str, Any, Any, Any, Any]]
             ) -> tuple[list[ResourceChange], list[ResourceChange]]:
    """(changes, drift) from steps ``(op, urn, type token, old state, new state, replace
    keys, diff keys)``, each state None or with ``inputs``/``outputs``."""
    changes: dict[str, ResourceChange] = {}
    drift: list[ResourceChange] = []
    for op, urn, ptype, old, new, keys, diffs in steps:
        if ptype.startswith("pulumi:providers:") or ptype == "pulumi:pulumi:Stack":
            continue
        address = _name(urn)
        rtype = PULUMI_TO_TERRAFORM.get(ptype, ptype)
        before = snake_tree(old[1] or old[0] or {}) if old is not None else None
        after = snake_tree(new[0] or {}) if new is not None else None
        if op == "refresh":
            if diffs:
                drift.append(ResourceChange(address, rtype, "update", before, after))
            continue
        action = _OPS.get(op, op)
        prev = changes.get(address)
        if prev is not None and prev.action == "replace":
            continue
        paths = tuple(str(k) for k in (keys or ())) if action == "replace" else ()
        changes[address] = ResourceChange(address, rtype, action, before, after,
                                          replace_paths=paths)
    return list(changes.values()), drift


def changes_from_events(events: Iterable[Any]) -> tuple[list[ResourceChange],
                                                         list[ResourceChange]]:
    """(changes, drift) of a preview from its engine events: one :class:`ResourceChange` per
    resource (a replacement's several steps are one ``replace``), named by its logical name
    (the Terraform address) and typed by its Terraform type; provider resources and the stack
    itself are left out. ``refresh`` steps that found a difference are the drift."""
    def steps() -> Iterable[tuple[str, str, str, Any, Any, Any, Any]]:
        for ev in events:
            pre = getattr(ev, "resource_pre_event", None)
            if pre is None or pre.metadata is None:
                continue
            md = pre.metadata
            yield (str(getattr(md.op, "value", md.op)), md.urn, str(md.type),
                   (md.old.inputs, md.old.outputs) if md.old else None,
                   (md.new.inputs, md.new.outputs) if md.new else None, md.keys, md.diffs)
    return _changes(steps())


def changes_from_preview(doc: Mapping[str, Any]) -> tuple[list[ResourceChange],
                                                           list[ResourceChange]]:
    """(changes, drift) of a ``pulumi preview --json`` document (``{"steps": [...], ...}``,
    https://www.pulumi.com/docs/iac/cli/commands/pulumi_preview/ ``--json``; each step as
    :func:`preview_step` writes it), the same as :func:`changes_from_events` makes of the
    preview's events.

    Raises:
      ValueError: ``doc`` has no list of step objects.
    """
    raw = doc.get("steps")
    if raw is None:
        raw = []
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        raise ValueError("its 'steps' is not a list of objects")

    def state(s: Any) -> tuple[Any, Any] | None:
        return (s.get("inputs"), s.get("outputs")) if isinstance(s, dict) else None

    def token(step: dict[str, Any]) -> str:
        """The type token: the states carry it (``apitype.ResourceV3.type``), else the URN."""
        for key in ("newState", "oldState"):
            st = step.get(key)
            if isinstance(st, dict) and st.get("type"):
                return str(st["type"])
        return _urn_type(str(step.get("urn", "")))

    return _changes((str(s.get("op", "")), str(s.get("urn", "")), token(s),
                     state(s.get("oldState")), state(s.get("newState")),
                     s.get("replaceReasons"), s.get("diffReasons")) for s in raw)


def summarize(changes: Iterable[ResourceChange]) -> PlanSummary:
    s = PlanSummary()
    for c in changes:
        if c.action in ("create", "update", "replace", "delete", "read"):
            setattr(s, c.action, getattr(s, c.action) + 1)
    return s


def _progress_event(ev: Any) -> ProgressEvent | None:
    for attr, kind in (("resource_pre_event", "start"), ("res_outputs_event", "complete"),
                       ("res_op_failed_event", "error")):
        e = getattr(ev, attr, None)
        if e is not None and e.metadata is not None:
            md = e.metadata
            if str(md.type).startswith("pulumi:providers:") or md.type == "pulumi:pulumi:Stack":
                return None
            op = str(getattr(md.op, "value", md.op))
            if op == "same":
                return None
            return ProgressEvent(kind, _name(md.urn), action=_OPS.get(op, op))
    diag = getattr(ev, "diagnostic_event", None)
    if diag is not None and diag.severity == "error":
        return ProgressEvent("error", _name(diag.urn or ""), message=diag.message.strip())
    return None


class PulumiEngine:
    """One Pulumi stage (a directory with ``Pulumi.yaml``), driven through the Automation
    API; the same public surface as :class:`~mldiag_provision.engines.terraform.TerraformEngine`
    offers :mod:`mldiag_provision.stack.service`.

    Args:
      workdir: the stage's directory (``Pulumi.yaml`` + ``__main__.py``).
      runner: the run's log (every Pulumi command and its output are recorded there).
      binary: the pulumi CLI (default :func:`find_pulumi`).
      keep_fds: unused (the Automation API starts the CLI itself); accepted for symmetry.

    Raises:
      EngineError: the CLI or the Python SDK is missing (one line, with how to install it).
    """

    name = "pulumi"
    capabilities = frozenset({EngineCapability.DETAILED_EXITCODE,
                              EngineCapability.PROGRESS_EVENTS,
                              EngineCapability.STATE_LOCKING})

    def __init__(self, workdir: Path, runner: CommandRunner, *, binary: str | None = None,
                 keep_fds: Iterable[int] = ()) -> None:
        self.workdir = workdir.resolve()
        self.runner = runner
        self.binary = binary or find_pulumi()
        self.auto = _automation()
        self._stack: Any = None

    # -- helpers -----------------------------------------------------------------------------
    def backend_url(self) -> str:
        """``gs://...`` from ``Pulumi.yaml`` (recipe ``gcs`` backend), else the local file
        backend in the stack directory's ``.mldiag/pulumi-state`` (both stages: the in-cluster
        stage's project is ``<name>-agents``)."""
        try:
            doc = yaml.safe_load((self.workdir / "Pulumi.yaml").read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise EngineError(f"{self.workdir / 'Pulumi.yaml'} cannot be read ({exc})",
                              hint="re-run the command: it renders the stack again") from None
        url = ((doc or {}).get("backend") or {}).get("url")
        if url:
            return str(url)
        # both stages in the stack directory's backend (their project names differ)
        root = (self.workdir.parent if self.workdir.name == "agents"
                and (self.workdir.parent / "Pulumi.yaml").is_file() else self.workdir)
        state = root / STATE_DIR
        state.mkdir(parents=True, exist_ok=True)
        return "file://" + state.as_posix()

    def env(self) -> dict[str, str]:
        """What the CLI and the program run with: the backend, this interpreter for the
        program (it has pulumi-gcp), no update checks, and an empty secrets passphrase unless
        ``PULUMI_CONFIG_PASSPHRASE`` is set (stack outputs such as the cluster CA are secrets
        in the state; set one to encrypt them)."""
        env = {"PULUMI_BACKEND_URL": self.backend_url(),
               "PULUMI_PYTHON_CMD": sys.executable,
               "PULUMI_SKIP_UPDATE_CHECK": "true",
               "PULUMI_CONFIG_PASSPHRASE": os.environ.get("PULUMI_CONFIG_PASSPHRASE", "")}
        return env

    def _command(self) -> Any:
        bin_dir = Path(self.binary).resolve().parent
        root = str(bin_dir.parent) if bin_dir.name == "bin" else None
        try:
            return self.auto.PulumiCommand(root=root, skip_version_check=True)
        except Exception as exc:
            raise EngineError(f"the pulumi CLI at {self.binary} cannot be used ({exc})",
                              hint=INSTALL_HINT) from None

    def stack(self) -> Any:
        """The ``default`` stack of this stage (created on first use)."""
        if self._stack is None:
            opts = self.auto.LocalWorkspaceOptions(work_dir=str(self.workdir),
                                                   env_vars=self.env(),
                                                   pulumi_command=self._command())
            self.runner.log(f"[mldiag] pulumi stack {STACK} in {self.workdir} "
                            f"(backend {self.env()['PULUMI_BACKEND_URL']})")
            try:
                self._stack = self.auto.create_or_select_stack(
                    stack_name=STACK, work_dir=str(self.workdir), opts=opts)
            except Exception as exc:
                raise self._fail("pulumi stack select", exc) from None
        return self._stack

    def _fail(self, what: str, exc: BaseException, events: Iterable[Any] = ()) -> EngineError:
        diags = [e.diagnostic_event for e in events
                 if getattr(e, "diagnostic_event", None) is not None
                 and e.diagnostic_event.severity == "error"]
        text = "\n".join([d.message for d in diags] + [str(exc)])
        self.runner.log(f"[mldiag] {what} failed:\n{text}")
        known = translate(text)
        address = next((_name(d.urn) for d in diags if d.urn), "")
        where = f" ({address})" if address else ""
        log = f"full log: {self.runner.log_path}" if self.runner.log_path else ""
        if known:
            message, hint = f"{what} failed{where}: {known[0]}", known[1]
        else:
            first = next((line.strip() for d in diags for line in d.message.splitlines()
                          if line.strip()), "") or next(
                (line.strip() for line in str(exc).splitlines() if line.strip()), repr(exc))
            message = f"{what} failed{where}: {first}"
            hint = "read the error above and the log; fix the recipe or the environment"
        return EngineError(message, hint=f"{hint}; {log}" if log else hint,
                           log_path=str(self.runner.log_path) if self.runner.log_path else None)

    def _collect(self, events: list[Any], progress: ProgressHandler | None) -> Any:
        def on_event(ev: Any) -> None:
            events.append(ev)
            if progress is not None:
                pe = _progress_event(ev)
                if pe is not None:
                    progress(pe)
        return on_event

    # -- the Engine surface ------------------------------------------------------------------
    def init(self, *, backend: bool = True) -> None:
        """Select (or create) the stack in its backend."""
        if backend:
            self.stack()

    def validate(self) -> None:
        """The program compiles (the providers' schemas are checked by ``preview``).

        Raises:
          EngineError: a syntax error, with file and line.
        """
        import py_compile

        for path in (self.workdir / "__main__.py",):
            try:
                py_compile.compile(str(path), doraise=True)
            except py_compile.PyCompileError as exc:
                raise EngineError(f"{path}: {exc.msg}",
                                  hint="fix the template under blueprints/ that wrote it") from None

    def plan(self, *, destroy: bool = False, progress: ProgressHandler | None = None,
             targets: Iterable[str] = ()) -> PlanResult:
        """``preview --diff --refresh`` (``preview_destroy`` for ``destroy``)."""
        events: list[Any] = []
        stack = self.stack()
        target = list(targets) or None
        try:
            if destroy:
                stack.preview_destroy(on_event=self._collect(events, progress),
                                      on_output=self.runner.log, target=target)
            else:
                stack.preview(diff=True, refresh=True, target=target,
                              on_event=self._collect(events, progress),
                              on_output=self.runner.log)
        except Exception as exc:
            raise self._fail("pulumi preview", exc, events) from None
        changes, drift = changes_from_events(events)
        summary = summarize(changes)
        self._save_preview(events)
        return PlanResult(has_changes=summary.total > 0, summary=summary, changes=changes,
                          destroy=destroy, drift=drift)

    def _save_preview(self, events: Iterable[Any]) -> None:
        """Write the preview to :data:`PREVIEW_FILE` as ``pulumi preview --json`` would
        (``steps``, and ``changeSummary`` from the summary event) for the policy gate."""
        steps = [step for ev in events if (step := preview_step(ev)) is not None]
        doc: dict[str, Any] = {"steps": steps}
        for ev in events:
            summary = getattr(ev, "summary_event", None)
            if summary is not None:
                doc["changeSummary"] = dict(summary.resource_changes or {})
        from mldiag_provision import ondisk

        ondisk.write_state(self.workdir / PREVIEW_FILE,
                           (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())

    def apply(self, plan: PlanResult, *, progress: ProgressHandler | None = None,
              ) -> ApplyResult:
        """``up`` (or ``destroy`` for a destroy plan). Protected resources make ``destroy``
        fail before deleting them; retained ones (APIs, _Default) are only forgotten."""
        events: list[Any] = []
        stack = self.stack()
        try:
            if plan.destroy:
                res = stack.destroy(on_event=self._collect(events, progress),
                                    on_output=self.runner.log)
            else:
                res = stack.up(on_event=self._collect(events, progress),
                               on_output=self.runner.log)
        except Exception as exc:
            raise self._fail("pulumi destroy" if plan.destroy else "pulumi up", exc,
                             events) from None
        (self.workdir / PREVIEW_FILE).unlink(missing_ok=True)  # applied: the preview is old
        counts = dict((res.summary.resource_changes or {}) if res.summary else {})
        summary = PlanSummary(create=counts.get("create", 0), update=counts.get("update", 0),
                              replace=counts.get("replace", 0), delete=counts.get("delete", 0))
        return ApplyResult(summary=summary, outputs=self.outputs() if not plan.destroy else {})

    def outputs(self) -> dict[str, Any]:
        """The stack outputs: name -> {"value", "sensitive"} (secrets are ``sensitive``)."""
        try:
            outs = self.stack().outputs()
        except EngineError:
            raise
        except Exception as exc:
            raise self._fail("pulumi stack output", exc) from None
        return {k: {"value": v.value, "sensitive": bool(v.secret)} for k, v in outs.items()}

    def never_applied(self) -> bool:
        """Never certain: the stack's state lives in its backend, which only Pulumi reads."""
        return False

    def state_resources(self) -> list[dict[str, Any]]:
        """Managed resources in the state: ``{"address", "type", "values"}`` with Terraform
        names (for the destroy guard); [] when nothing was applied yet."""
        try:
            deployment = self.stack().export_stack()
        except EngineError:
            raise
        except Exception as exc:
            raise self._fail("pulumi stack export", exc) from None
        out = []
        for r in (deployment.deployment or {}).get("resources") or []:
            ptype = r.get("type", "")
            if not r.get("custom") or ptype.startswith("pulumi:providers:"):
                continue
            out.append({"address": _name(r.get("urn", "")),
                        "type": PULUMI_TO_TERRAFORM.get(ptype, ptype),
                        "values": snake_tree(r.get("outputs") or {})})
        return out

    def forget(self, addresses: Iterable[str]) -> None:
        """Nothing to do: the objects a destroy must keep (APIs, Log Analytics on _Default)
        carry ``retain_on_delete`` in the program, so ``pulumi destroy`` only drops them from
        the state (https://www.pulumi.com/docs/iac/concepts/options/retainondelete/)."""
        kept = list(addresses)
        if kept:
            self.runner.log("[mldiag] retained on delete (state only): " + ", ".join(kept))


# --- the engine unit ---------------------------------------------------------------------------

def translate(text: str) -> tuple[str, str] | None:
    """Google Cloud's errors as the bridged pulumi-gcp provider reports them: the same API
    messages the Terraform provider shows (pulumi-gcp wraps terraform-provider-google), so
    the same rules apply."""
    from mldiag_provision.engines.terraform import translate as google_translate

    return google_translate(text)


# a change's action as ``terraform show -json`` lists it (change.actions)
_TERRAFORM_ACTIONS = {"create": ["create"], "update": ["update"], "delete": ["delete"],
                      "replace": ["delete", "create"], "read": ["read"], "no-op": ["no-op"]}


def saved_plan_document(workdir: Path, runner: CommandRunner) -> dict[str, Any] | None:
    """The preview ``plan`` saved in the stage ``workdir`` (:data:`PREVIEW_FILE`, or the same
    file written by ``pulumi preview --json``) as the policy gate reads a plan:
    ``{"resource_changes": [{"address", "type", "change": {"actions", "before", "after"}}],
    "pulumi_preview": the file's document}``, each change typed with its Terraform name
    (data/pulumi_types.yaml) and its values with Terraform's attribute names
    (:func:`snake_tree`), as the engine reports plans; None when the file is not there.
    Nothing runs (``runner`` is not used: the preview is already saved), so neither the
    pulumi CLI nor its SDK is needed.

    Raises:
      EngineError: the file cannot be read or is not a ``pulumi preview --json`` document.
    """
    path = workdir / PREVIEW_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        changes, _ = changes_from_preview(doc)
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot read the saved Pulumi preview {path}: {exc}",
                          hint="re-run `mldiag-provision plan RECIPE -o DIR` (or, in that "
                               "directory, `pulumi preview --json > " + PREVIEW_FILE + "`)"
                          ) from None
    return {"resource_changes": [
        {"address": c.address, "type": c.type,
         "change": {"actions": _TERRAFORM_ACTIONS.get(c.action, [c.action]),
                    "before": c.before, "after": c.after}} for c in changes],
        "pulumi_preview": doc}


def _make(workdir: Path, runner: CommandRunner, keep_fds: Iterable[int]) -> PulumiEngine:
    return PulumiEngine(workdir, runner, keep_fds=keep_fds)


def _render(plan: StackPlan, manifest: Mapping[str, Any], root: Path,
            kit: RenderKit) -> dict[str, bytes]:
    from mldiag_provision.engines.pulumi_program import render_program

    return render_program(plan, root, kit.banner("hcl", plan.name))


def _sources(manifest: Mapping[str, Any]) -> list[str]:
    """The templates a blueprint's Pulumi program comes from (and the Slurm startup script
    template, shared with the Terraform module)."""
    from mldiag_provision.engines.pulumi_program import SHARED_TEMPLATES

    out = [f"blueprints/{manifest['name']}/pulumi/__main__.py.j2",
           *(f"blueprints/_shared/pulumi/{t}" for t in SHARED_TEMPLATES)]
    if "slurm/cluster-director" in (manifest.get("modules") or []):
        out.append("modules/slurm/cluster-director/templates/nodeset-startup.sh.tftpl")
    return out


UNIT = EngineUnit(
    name="pulumi",
    summary="Pulumi (Automation API + the pulumi CLI) on the rendered Python program "
            "(pulumi-gcp 10.x, pulumi-kubernetes 4.x)",
    capabilities=PulumiEngine.capabilities,
    # plans and state are reported with Terraform type names (data/pulumi_types.yaml)
    kinds=TERRAFORM_KINDS,
    translate=translate,
    marker="Pulumi.yaml",
    render=_render,
    make=_make,
    sources=_sources,
    by_hand=ByHand(project=("pulumi login file://$PWD/.mldiag/pulumi-state  # or the gs:// "
                            "backend Pulumi.yaml names",
                            "pulumi stack select --create default", "pulumi preview --diff",
                            "pulumi up"),
                   cluster=("(cd agents && pulumi stack select --create default && pulumi up)",),
                   output="pulumi stack output {name}",
                   output_raw="pulumi stack output {name}"),
    saved_plan=saved_plan_document,
    locate=find_pulumi,
)
