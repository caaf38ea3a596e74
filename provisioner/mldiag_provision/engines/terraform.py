"""Terraform engine: ``init`` / ``validate`` / ``plan`` / ``apply`` / ``output`` in one
rendered directory, through Terraform's machine-readable interfaces only.

  * ``plan -json -detailed-exitcode -out=.mldiag/tfplan``: the event stream (diagnostics,
    drift, each planned change's address, type and action, the outputs' actions: the
    summary counts and change list, :func:`plan_from_events`) plus the exit code that says
    "changes" (2) or "no changes" (0);
  * ``show -json .mldiag/tfplan``: the saved plan as data, with every resource's
    before/after values. It needs every provider's schema, so it runs only when something
    reads values: a dangerous-change check that depends on them (a node
    pool's machine type, the bucket's name, the attributes forcing a cluster replacement),
    the drift display, the policy gate (its rules read every resource's planned values);
  * ``apply -json .mldiag/tfplan`` executes exactly that plan and streams per-resource
    progress; ``output -json``; ``validate -json``.

Provider plugins: ``plan``, ``show`` and ``apply`` of one stage reattach to plugins started
once for the run (:mod:`.provider_pool`: Terraform would start each plugin three times in a
``plan`` and again in every later command); ``init``, ``validate`` and ``output`` run as
Terraform alone would.

Why not python-terraform: its last release is from 2019 (Terraform 0.12 era); it builds
command lines from keyword arguments, returns the text output after the process ends, knows
nothing of ``-json`` event streams, saved-plan JSON or ``-detailed-exitcode``, and runs
processes itself, outside our one recorded seam. What we need from it is about 40 lines of
argv building, so we own them.

Errors: Terraform's diagnostics and Google API errors are translated into one actionable
line (:func:`translate`), and the message names the log file of the run.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldiag_provision import ondisk
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
from mldiag_provision.runner import CommandRunner, RunResult

if TYPE_CHECKING:
    from mldiag_provision.engines.provider_pool import ProviderPool
    from mldiag_provision.plan.types import StackPlan

PLAN_FILE = ".mldiag/tfplan"
PLAN_SUMMARY = ".mldiag/plan-summary.json"
INIT_STAMP = ".mldiag/terraform-init.json"
MIN_VERSION_HINT = "install Terraform >= 1.7 (https://developer.hashicorp.com/terraform/install)"


def find_terraform() -> str:
    """The terraform binary: ``$MLDIAG_TERRAFORM`` or ``terraform`` on PATH.

    Raises:
      EngineError: there is none.
    """
    explicit = os.environ.get("MLDIAG_TERRAFORM")
    found = shutil.which(explicit or "terraform")
    if found is None:
        where = f"MLDIAG_TERRAFORM={explicit}" if explicit else "not on PATH"
        raise EngineError(f"terraform not found ({where})",
                          hint=MIN_VERSION_HINT + ", or point MLDIAG_TERRAFORM at it")
    return found


# --- error translation ------------------------------------------------------------------------

# Google Cloud's failures as the google provider reports them (API error codes and texts,
# https://cloud.google.com/apis/design/errors#handling_errors), with hints in Terraform's
# terms (another engine keys its own: EngineUnit.translate); then Terraform's own failures.
_GOOGLE_RULES: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"could not find default credentials|default credentials.*not found|"
                r"application default credentials", re.I),
     "no Google Cloud credentials (application default credentials) were found",
     "run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS "
     "to a service account key file"),
    (re.compile(r"SERVICE_DISABLED|has not been used in project|it is disabled|"
                r"API (?:has not been|is not) enabled", re.I),
     "a Google Cloud API is disabled in the project",
     "the stack enables the APIs it needs: wait a minute and re-run `apply`; or enable it "
     "by hand with `gcloud services enable SERVICE --project PROJECT`"),
    (re.compile(r"reservation.*(not found|does not exist|unavailable|insufficient|exhausted)|"
                r"(specific|specified) reservation", re.I),
     "the TPU reservation named in the recipe is not usable",
     "check spec.slices[].capacity.reservation (and reservationProject) with `gcloud "
     "compute reservations describe`, or use capacity type on-demand or spot"),
    (re.compile(r"quota|QUOTA_EXCEEDED|RESOURCE_EXHAUSTED|Error 429|rateLimitExceeded", re.I),
     "a Google Cloud quota was exceeded",
     "request more quota (Console > IAM & Admin > Quotas) for the region in the message, "
     "or pick another region/zone or capacity type in the recipe"),
    (re.compile(r"Error 403|PERMISSION_DENIED|permission denied|does not have .*permission|"
                r"forbidden", re.I),
     "permission denied by Google Cloud",
     "grant your account (or the credentials in GOOGLE_APPLICATION_CREDENTIALS) the roles "
     "the message names on the project, e.g. roles/container.admin, roles/iam.securityAdmin"),
    (re.compile(r"deletion_protection", re.I),
     "the cluster has deletion protection on",
     "set spec.orchestrator.deletionProtection: false in the recipe, run `apply`, then "
     "`destroy` again"),
    # Before the generic 409: Cloud Storage answers 409 for other reasons than "exists".
    # Deleting a bucket with objects: the JSON API's 409 "The bucket you tried to delete is
    # not empty." (older wording "was not empty"; kestra-io/plugin-gcp#321 shows the body,
    # crossplane-contrib/provider-gcp#295 the googleapi form), and the google provider's own
    # refusal "Error trying to delete bucket NAME containing objects without `force_destroy`
    # set to true" (terraform-provider-google resource_storage_bucket.go, quoted in
    # hashicorp/terraform-provider-google#1509).
    (re.compile(r"bucket you tried to delete (?:is|was) not empty|containing objects without "
                r"`?force_destroy`? set to true", re.I),
     "the bucket still holds objects, and Google refuses to delete a non-empty bucket",
     "nothing is wrong with the state: keep the bucket (destroy keeps the profiles bucket "
     "unless you pass --delete-profiles), or copy what you need (gcloud storage cp -r "
     "gs://BUCKET DEST) and re-run destroy with --delete-profiles"),
    # Bucket names are global: "The requested bucket name is not available. The bucket
    # namespace is shared by all users of the system." (409; percona/mongo_terraform_ansible#24,
    # hashicorp/terraform-provider-google#6542)
    (re.compile(r"requested bucket name is not available", re.I),
     "the bucket name is taken by another project (bucket names are global)",
     "choose another name in spec.diagnostics.profilesBucket.name (or the stack name that "
     "derives it)"),
    (re.compile(r"Error 409|alreadyExists|already exists|already own it", re.I),
     "a resource already exists in Google Cloud but not in the Terraform state (an earlier "
     "apply was interrupted, or it was created by hand)",
     "import it (`terraform import ADDRESS ID` in the work directory) or delete it, then "
     "re-run `apply`"),
]

_LOCK_RULE = re.compile(r"Error acquiring the state lock|state lock", re.I)

_TERRAFORM_RULES: list[tuple[re.Pattern[str], str, str]] = [
    # A truncated or damaged terraform.tfstate: Terraform 1.11 reports it *inside* "Error
    # acquiring the state lock" ("Unsupported state file format: The state file could not be
    # parsed as JSON: syntax error at byte offset N." / "does not have a \"version\"
    # attribute"; captured from terraform 1.11 on a truncated local state, statefile/read.go
    # in hashicorp/terraform), so it must be matched before the lock rule.
    (re.compile(r"Unsupported state file format|state file could not be parsed", re.I),
     "the Terraform state file is damaged or unreadable (no other run holds a lock)",
     "do not force-unlock: restore the state, e.g. copy terraform.tfstate.backup over "
     "terraform.tfstate in the stage's directory (or an earlier object version of a GCS "
     "backend's state), then re-run the command"),
    # A local state path Terraform cannot open: it too is reported inside "Error acquiring
    # the state lock", with the system's reason as "Error message: open terraform.tfstate:
    # is a directory" (captured from terraform 1.x with a directory at terraform.tfstate,
    # issue 28). No run holds a lock then, and force-unlock would be wrong advice.
    (re.compile(r"Error message: (?:open|read|write) [^\n:]*tfstate[^\n:]*: (?:is a directory|"
                r"not a directory|permission denied|read-only file system|no space left|"
                r"too many levels of symbolic links|no such device)", re.I),
     "the Terraform state file cannot be opened (no other run holds a lock): it is a "
     "directory, a broken link, unreadable, or on a read-only or full file system",
     "do not force-unlock: look at terraform.tfstate in the stage's directory (named in the "
     "log) and make it the state file again, e.g. move a directory of that name aside, "
     "then re-run the command"),
    (_LOCK_RULE,
     "another Terraform run holds the state lock",
     "wait for it to finish; if none is running, see `terraform force-unlock` in the log"),
    (re.compile(r"Saved plan is stale", re.I),
     "the saved plan is stale: the state changed since it was made",
     "re-run the command: it plans again"),
    (re.compile(r"Failed to query available provider packages|could not connect to "
                r"registry|Failed to install provider", re.I),
     "terraform init could not install the Google providers",
     "check network access to registry.terraform.io, or configure a provider mirror "
     "(TF_CLI_CONFIG_FILE)"),
    (re.compile(r"Failed to get existing workspaces|storage: bucket doesn't exist|"
                r"Error loading state|Failed to load state", re.I),
     "the Terraform state backend is not reachable",
     "check spec.engine.backend (the GCS bucket must exist and be readable by you)"),
]


_RULES = _GOOGLE_RULES + _TERRAFORM_RULES


# Terraform's lock info under "Error acquiring the state lock" (statemgr.LockInfo.String in
# hashicorp/terraform): "Lock Info:\n  ID: <id>\n  Path: <path>\n  Operation: ...\n  Who: ...".
# The gcs backend's Path is gs://BUCKET/PREFIX/<workspace>.tflock and its ID the lock object's
# generation (internal/backend/remote-state/gcs/client.go); captured from terraform 1.11
# against the sandbox's Cloud Storage stand-in (tests/engine/test_gcs_backend_lock.py).
# (the -json diagnostic's detail keeps the lines; a wrapped one may be flattened to one line)
_LOCK_KEYS = r"(?:ID|Path|Operation|Who|Version|Created|Info)"
_LOCK_FIELD = re.compile(rf"({_LOCK_KEYS}): (.*?)(?= {_LOCK_KEYS}:|$)")


def _lock_hint(text: str) -> str | None:
    """The hint for a lock held in a ``gcs`` backend, naming its holder and the exact
    ``terraform force-unlock <ID>``; None for any other lock (a local state's lock is an OS
    file lock that dies with its process, so force-unlock is never the advice there)."""
    start = text.find("Lock Info:")
    if start < 0:
        return None
    fields: dict[str, str] = {}
    for key, value in _LOCK_FIELD.findall(" ".join(text[start + 10:].split())):
        fields.setdefault(key, value.strip())
    if not fields.get("ID") or not fields.get("Path", "").startswith("gs://"):
        return None
    about = ", ".join(filter(None, (fields.get("Operation"),
                                    fields.get("Created") and f"since {fields['Created']}")))
    holder = fields.get("Who") or "another run"
    holder += f" ({about})" if about else ""
    return (f"the lock {fields['Path']} is held by {holder}: wait for that "
            f"run (retry with a longer -lock-timeout); if it was killed and nothing else is "
            f"running, release it with `terraform force-unlock {fields['ID']}` in the "
            f"stage's work directory, then re-run")


def translate(text: str) -> tuple[str, str] | None:
    """(what went wrong, what to do) for a known failure in ``text`` (Google Cloud's errors
    first, then Terraform's: lock, stale plan, provider install, backend), else None. A lock
    held in a ``gcs`` backend gets a hint naming its holder and ``force-unlock <ID>``."""
    for pattern, what, hint in _RULES:
        if pattern.search(text):
            if pattern is _LOCK_RULE:
                hint = _lock_hint(text) or hint
            return what, hint
    return None


_BOX = "\u2502\u2577\u2575"  # the frame terraform draws around a diagnostic: │ ╷ ╵


def stderr_diagnostics(lines: Sequence[str]) -> list[dict[str, Any]]:
    """The error diagnostics of terraform's human-readable output (``init``, which has no
    ``-json`` here; any command's stderr), as ``-json`` gives them: ``[{"severity": "error",
    "summary": ..., "detail": ...}]``, in order.

    terraform writes a diagnostic as ``Error: <summary>``, a blank line, then its detail
    wrapped at ~78 columns (framed by ``│`` with colour on; plain with ``-no-color``). The last
    non-empty line alone, which ``_fail`` used to show, was the tail of a wrapped sentence
    (``registry.terraform.io on 10.0.0.53:53: no such host``); the summary and the whole
    detail, unwrapped, say what failed."""
    found: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    detail: list[str] = []
    for raw in lines:
        line = raw.lstrip(_BOX).strip() if raw[:1] in _BOX else raw.strip()
        if line.startswith(("Error: ", "Warning: ")) and raw[:1] in (*_BOX, "E", "W"):
            if current is not None:
                current["detail"] = " ".join(" ".join(detail).split())
            severity, _, summary = line.partition(": ")
            current = ({"severity": "error", "summary": summary.strip()}
                       if severity == "Error" else None)
            if current is not None:
                found.append(current)
            detail = []
        elif current is not None:
            detail.append(line)
    if current is not None:
        current["detail"] = " ".join(" ".join(detail).split())
    return found


# a ``backend "TYPE" {`` block (inside ``terraform {}``), not in a comment
_BACKEND_BLOCK = re.compile(r'(?m)^[ \t]*backend[ \t]+"[^"]+"[ \t]*\{')


def _diag_text(d: dict[str, Any]) -> str:
    return " ".join(str(d.get(k) or "") for k in ("summary", "detail"))


def _block_path(path: Path, line: int) -> list[str]:
    """Enclosing blocks of ``line`` in a canonically formatted .tf file, outermost first,
    e.g. ``['resource "google_container_cluster" "this"', 'release_channel']``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    stack: list[str] = []
    dynamic: list[bool] = []
    for text in lines[:max(line - 1, 0)]:
        s = text.strip()
        if s.startswith("#") or s.startswith("//"):
            continue
        if s.endswith("{") and "=" not in s.split("{", 1)[0]:
            head = s[:-1].strip()
            m = re.fullmatch(r'dynamic\s+"([^"]+)"', head)
            in_dynamic = bool(dynamic and dynamic[-1])
            stack.append("" if head == "content" and in_dynamic else (m.group(1) if m else head))
            dynamic.append(bool(m))
        elif s.endswith("{"):
            stack.append("")  # an object value: `x = {`
            dynamic.append(False)
        elif s.startswith("}") and stack:
            stack.pop()
            dynamic.pop()
    return stack


def _failed_address(first: dict[str, Any] | None,
                    events: Sequence[dict[str, Any]]) -> str | None:
    """The resource a failed command names: the first error diagnostic's ``address``, else
    the first resource of an ``apply_errored`` event; None when neither says."""
    failed = [e.get("hook", {}).get("resource", {}).get("addr") for e in events
              if e.get("type") == "apply_errored"]
    return (first.get("address") if first else None) or next(filter(None, failed), None)


def _failure_message(what: str, where: str, known: tuple[str, str] | None,
                     result: RunResult, first: dict[str, Any] | None) -> tuple[str, str]:
    """(message, hint) of a failed command: a known cause's (``known``, from
    :func:`translate`), a killed command's (negative return code: signal), or the first
    error's summary, else stderr's last line, else the exit code."""
    if known:
        return f"{what} failed{where}: {known[0]}", known[1]
    if result.returncode < 0:
        return (f"{what} was killed (signal {-result.returncode}){where}: what it "
                "finished is in the state",
                "re-run the same command: it plans from the state and converges")
    detail = (first.get("summary") if first else None) or next(
        (line for line in reversed(result.stderr_tail) if line.strip()),
        f"exit code {result.returncode}")
    return (f"{what} failed{where}: {detail}",
            "read the error above and the log; fix the recipe or the environment")


def _terraform_detail(first: dict[str, Any] | None) -> str:
    """The ``\\n  terraform: summary: detail`` line of the first error, detail on one line;
    "" when it has no detail. A summary ending in ``:`` ("2 problems:") is followed by a
    space only."""
    if not (first and first.get("detail")):
        return ""
    summary = str(first["summary"])
    joint = " " if summary.endswith(":") else ": "  # "2 problems:" lists its details
    return f"\n  terraform: {summary}{joint}{' '.join(first['detail'].split())}"


def _attribute_path(blocks: list[str], d: dict[str, Any]) -> list[str]:
    """The attribute path of diagnostic ``d`` inside its resource: the nested block names
    (``blocks`` past the resource), then the argument the detail names (``argument named
    "x"``), else the one the snippet's code starts with (unless that is the last block)."""
    path = [b for b in blocks[1:] if b]
    arg = re.search(r'(?:argument|block type) named "([^"]+)"', d.get("detail") or "")
    if arg:
        path.append(arg.group(1))
    elif d.get("snippet", {}).get("code"):
        code = d["snippet"]["code"].strip()
        m = re.match(r"([a-z0-9_]+)\s*(=|\{)", code)
        if m and (not path or path[-1] != m.group(1)):
            path.append(m.group(1))
    return path


class TerraformEngine:
    """Terraform in one rendered directory. See the module docstring.

    Args:
      workdir: the rendered stack (root module) directory.
      runner: the seam every command goes through.
      binary: the terraform executable (default: :func:`find_terraform`).
      keep_fds: file descriptors each terraform child inherits (our work-dir lock).
      lock_timeout: Terraform's own state-lock wait (``-lock-timeout``).
    """

    name = "terraform"
    capabilities = frozenset({EngineCapability.PLAN_FILE, EngineCapability.PLAN_JSON,
                              EngineCapability.DETAILED_EXITCODE,
                              EngineCapability.PROGRESS_EVENTS,
                              EngineCapability.STATE_LOCKING,
                              EngineCapability.OVERRIDE_FILES})

    def __init__(self, workdir: Path, runner: CommandRunner, *, binary: str | None = None,
                 keep_fds: Iterable[int] = (), lock_timeout: str = "60s") -> None:
        self.workdir = workdir.resolve()
        self.runner = runner
        self.binary = binary or find_terraform()
        self.keep_fds = tuple(keep_fds)
        self.lock_timeout = lock_timeout
        self._pool: ProviderPool | None = None

    # -- helpers -----------------------------------------------------------------------------
    def _run(self, args: list[str], task: str, *, pooled: bool = False,
             **kw: Any) -> RunResult:
        env = {"TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}
        if pooled:
            env.update(self._providers())
        try:
            return self.runner.run([self.binary, *args], cwd=self.workdir, task=task,
                                   env=env, keep_fds=self.keep_fds, **kw)
        except FileNotFoundError:
            raise EngineError(f"cannot run {self.binary}", hint=MIN_VERSION_HINT) from None

    def _providers(self) -> dict[str, str]:
        """The environment that reattaches this stage's provider plugins, started once for
        the run (:mod:`.provider_pool`); {} when Terraform starts them itself (a recording
        runner, or a reason the pool logged)."""
        if not self.runner.executes:
            return {}
        if self._pool is None:
            from mldiag_provision.engines.provider_pool import ProviderPool, reusable

            env = {**os.environ, **self.runner.env, "TF_IN_AUTOMATION": "1", "TF_INPUT": "0"}
            self._pool = ProviderPool(self.workdir, env, self.runner.log_path, self.runner.log)
            self._pool.start(reusable(self.workdir, log=self.runner.log))
        return self._pool.environment()

    def close(self) -> None:
        """Stop the provider plugins started for this run (see :mod:`.provider_pool`)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _fail(self, what: str, result: RunResult, diags: list[dict[str, Any]],
              events: list[dict[str, Any]] = ()) -> EngineError:  # type: ignore[assignment]
        """The :class:`EngineError` of a failed command ``what``: its first error diagnostic
        (``diags``, else the ones in stderr), the resource that failed (``events``:
        ``apply_errored``), a known cause's message and hint (:func:`translate`), and the
        run's log."""
        # terraform writes its diagnostics to stderr; stdout holds progress ("Initializing
        # the backend..."), which must not run into an error's detail
        errors = [d for d in diags if d.get("severity") == "error"] or stderr_diagnostics(
            result.stderr_tail)
        first = errors[0] if errors else None
        address = _failed_address(first, events)
        where = f" ({address})" if address else ""
        text = "\n".join([_diag_text(d) for d in errors] + list(result.stderr_tail)
                         + list(result.stdout_tail))
        message, hint = _failure_message(what, where, translate(text), result, first)
        message += _terraform_detail(first)
        log = f"full log: {self.runner.log_path}" if self.runner.log_path else ""
        return EngineError(message, hint=f"{hint}; {log}" if log else hint,
                           argv=list(result.argv), returncode=result.returncode,
                           log_path=str(self.runner.log_path) if self.runner.log_path else None,
                           tail=list(result.stderr_tail))

    def _stream(self, events: list[dict[str, Any]],
                progress: ProgressHandler | None) -> Any:
        def on_line(line: str) -> None:
            if not line.startswith("{"):
                return
            try:
                ev = json.loads(line)
            except ValueError:
                return
            events.append(ev)
            if progress is not None:
                pe = _progress_event(ev)
                if pe is not None:
                    progress(pe)
        return on_line

    # -- init ----------------------------------------------------------------------------------
    def _init_fingerprint(self) -> str:
        h = hashlib.sha256()
        h.update(f"{self.binary}\n{os.environ.get('TF_CLI_CONFIG_FILE', '')}\n".encode())
        for p in sorted(self.workdir.glob("*.tf")) + sorted(self.workdir.glob("modules/**/*.tf")):
            h.update(p.relative_to(self.workdir).as_posix().encode())
            h.update(p.read_bytes())
        return h.hexdigest()

    def init(self, *, backend: bool = True) -> None:
        """``terraform init``, skipped while nothing it depends on changed; ``backend=False``
        (``-backend=false``) prepares only providers and modules, e.g. for ``validate``."""
        stamp = self.workdir / INIT_STAMP
        fingerprint = self._init_fingerprint() + ("" if backend else "-no-backend")
        if ((self.workdir / ".terraform").is_dir() and stamp.is_file()
                and (self.workdir / ".terraform.lock.hcl").is_file()):
            try:
                if json.loads(stamp.read_text())["fingerprint"] == fingerprint:
                    self.runner.log("[mldiag] terraform init skipped: configuration, modules "
                                    f"and provider settings unchanged ({INIT_STAMP})")
                    return
            except (ValueError, KeyError, OSError):
                pass
        self.close()  # init may install other plugin versions: start them afresh after it
        args = ["init", "-input=false", "-no-color", f"-lock-timeout={self.lock_timeout}"]
        if not backend:
            args.append("-backend=false")
        result = self._run(args, "terraform init")
        if result.returncode != 0:
            raise self._fail("terraform init", result, [])
        ondisk.write_state(stamp, (json.dumps({"fingerprint": fingerprint}) + "\n").encode())

    # -- validate ------------------------------------------------------------------------------
    def validate(self) -> None:
        result = self._run(["validate", "-json", "-no-color"], "terraform validate",
                           capture=True)
        try:
            doc = json.loads(result.stdout or "")
        except ValueError:
            raise self._fail("terraform validate", result, []) from None
        problems = [self.describe(d) for d in doc.get("diagnostics", [])
                    if d.get("severity") == "error"]
        if problems or result.returncode != 0:
            log = f"; full log: {self.runner.log_path}" if self.runner.log_path else ""
            raise EngineError(
                f"terraform validate: {len(problems)} problem(s) in {self.workdir}\n  "
                + "\n  ".join(problems),
                hint="fix the template or module named above (the provider schema is "
                     "hashicorp/google(-beta) 8.x)" + log,
                argv=list(result.argv), returncode=result.returncode,
                log_path=str(self.runner.log_path) if self.runner.log_path else None)

    def module_dirs(self) -> dict[str, str]:
        """Module source directory -> module address (from ``.terraform/modules``)."""
        try:
            doc = json.loads((self.workdir / ".terraform/modules/modules.json").read_text())
        except (OSError, ValueError):
            return {}
        out = {}
        for m in doc.get("Modules", []):
            if m.get("Key"):
                out[Path(m["Dir"]).as_posix().removeprefix("./")] = "module." + ".module.".join(
                    m["Key"].split("."))
        return out

    def _resource_address(self, blocks: list[str], filename: str) -> str:
        """The address (``[module.M.]TYPE.NAME``, ``data.`` for a data source) of the
        resource whose block opens ``blocks`` (``resource "T" "N"``) in ``filename`` (a
        path in the work directory; its module from :meth:`module_dirs`); "" when the
        outermost block is no resource."""
        head = blocks[0].split() if blocks else []
        if not (len(head) == 3 and head[0] in ("resource", "data")):
            return ""
        kind, rtype, rname = head[0], head[1].strip('"'), head[2].strip('"')
        address = ("data." if kind == "data" else "") + f"{rtype}.{rname}"
        module = self.module_dirs().get(Path(filename).parent.as_posix())
        return f"{module}.{address}" if module else address

    def describe(self, d: dict[str, Any]) -> str:
        """``file:line: <resource address>.<attribute path>: summary: detail`` of one
        diagnostic, with the address and the block path worked out from the source."""
        rng = d.get("range") or {}
        filename = rng.get("filename", "")
        line = (rng.get("start") or {}).get("line", 0)
        where = f"{filename}:{line}" if filename else "<config>"
        blocks = _block_path(self.workdir / filename, line) if filename else []
        address = self._resource_address(blocks, filename)
        path = _attribute_path(blocks, d)
        target = ".".join(filter(None, [address, *path])) or "(configuration)"
        detail = " ".join((d.get("detail") or "").split())
        return f"{where}: {target}: {d.get('summary')}" + (f": {detail}" if detail else "")

    # -- plan ----------------------------------------------------------------------------------
    def plan(self, *, destroy: bool = False, progress: ProgressHandler | None = None,
             targets: Iterable[str] = ()) -> PlanResult:
        plan_file = self.workdir / PLAN_FILE
        plan_file.parent.mkdir(parents=True, exist_ok=True)
        plan_file.unlink(missing_ok=True)
        args = ["plan", "-input=false", "-json", "-detailed-exitcode",
                f"-lock-timeout={self.lock_timeout}", f"-out={PLAN_FILE}"]
        if destroy:
            args.append("-destroy")
        args += [f"-target={t}" for t in targets]
        events: list[dict[str, Any]] = []
        result = self._run(args, "terraform plan" + (" -destroy" if destroy else ""),
                           on_line=self._stream(events, progress), pooled=True)
        diags = [e["diagnostic"] for e in events if e.get("type") == "diagnostic"]
        if result.returncode not in (0, 2):
            raise self._fail("terraform plan", result, diags, events)
        plan = plan_from_events(events, plan_file=plan_file, destroy=destroy,
                                saved=SavedPlan(lambda: self.show(plan_file, destroy=destroy)))
        plan.has_changes = result.returncode == 2
        ondisk.write_state(self.workdir / PLAN_SUMMARY,
                           (json.dumps(plan.to_dict(), indent=2) + "\n").encode())
        return plan

    def show(self, plan_file: Path, *, destroy: bool = False) -> PlanResult:
        """The saved plan as data (``terraform show -json``): every resource with its
        before/after values (a second start of every provider, for their schemas)."""
        result = self._run(["show", "-json", "-no-color", str(plan_file)],
                           "terraform show (saved plan)", capture=True, sensitive_json=True,
                           pooled=True)
        if result.returncode != 0:
            raise self._fail("terraform show", result, [])
        try:
            doc = json.loads(result.stdout or "{}")
        except ValueError:
            doc = {}  # a dry run records the command and has no plan to read
        return parse_plan_json(doc, plan_file=plan_file, destroy=destroy)

    def saved_plan(self) -> dict[str, Any] | None:
        """The plan :meth:`plan` saved here (:data:`PLAN_FILE`) as ``terraform show -json``
        gives it (https://developer.hashicorp.com/terraform/internals/json-format), unchanged;
        None when there is none. Run through the runner without the provider pool (one short
        read); the runner keeps the JSON's sensitive values out of its log.

        Raises:
          EngineError: ``terraform show`` fails or does not print one JSON document.
        """
        if not (self.workdir / PLAN_FILE).is_file():
            return None
        result = self._run(["show", "-json", "-no-color", PLAN_FILE],
                           "terraform show (saved plan, policy gate)", capture=True,
                           sensitive_json=True)
        if result.returncode != 0:
            raise self._fail("terraform show", result, [])
        try:
            doc = json.loads(result.stdout or "")
        except ValueError as exc:
            raise EngineError(f"terraform show -json of {self.workdir / PLAN_FILE} is not JSON "
                              f"({exc})", hint="re-run `mldiag-provision plan RECIPE -o DIR`"
                              ) from None
        if not isinstance(doc, dict):
            raise EngineError(f"terraform show -json of {self.workdir / PLAN_FILE} is not a "
                              "JSON object", hint="re-run `mldiag-provision plan RECIPE -o DIR`")
        return doc

    # -- apply ---------------------------------------------------------------------------------
    def apply(self, plan: PlanResult, *, progress: ProgressHandler | None = None,
              ) -> ApplyResult:
        events: list[dict[str, Any]] = []
        result = self._run(["apply", "-input=false", "-json",
                            f"-lock-timeout={self.lock_timeout}", PLAN_FILE],
                           "terraform apply (saved plan)" + (" [destroy]" if plan.destroy
                                                              else ""),
                           on_line=self._stream(events, progress), pooled=True)
        diags = [e["diagnostic"] for e in events if e.get("type") == "diagnostic"]
        if result.returncode != 0:
            raise self._fail("terraform destroy" if plan.destroy else "terraform apply",
                             result, diags, events)
        summary = PlanSummary()
        outputs: dict[str, Any] = {}
        for e in events:
            if e.get("type") == "change_summary":
                c = e.get("changes", {})
                summary = PlanSummary(create=c.get("add", 0), update=c.get("change", 0),
                                      delete=c.get("remove", 0))
            elif e.get("type") == "outputs":
                outputs = e.get("outputs", {})
        (self.workdir / PLAN_FILE).unlink(missing_ok=True)  # applied: never apply it twice
        return ApplyResult(summary=summary, outputs=outputs)

    # -- state ---------------------------------------------------------------------------------
    def _state_file_here(self) -> bool:
        """A local state (``*.tfstate``) or a backend recorded by ``init``
        (``.terraform/terraform.tfstate``) is in the stage's directory."""
        return any(self.workdir.glob("*.tfstate")) or (
            self.workdir / ".terraform" / "terraform.tfstate").is_file()

    def never_applied(self) -> bool:
        """The state is local and there is none: no ``terraform.tfstate`` here, no backend
        recorded by ``init`` (``.terraform/terraform.tfstate``) and no ``backend`` block in
        the stage's ``*.tf`` files (a ``gcs`` backend not yet initialised may hold state)."""
        if self._state_file_here():
            return False
        for tf in self.workdir.glob("*.tf"):
            try:
                if _BACKEND_BLOCK.search(tf.read_text(encoding="utf-8", errors="replace")):
                    return False
            except OSError:
                return False
        return True

    def state_resources(self) -> list[dict[str, Any]]:
        """Managed resources in the state (``terraform show -json``): each
        ``{"address", "type", "values"}``; [] when nothing was applied yet."""
        if not self._state_file_here():
            return []
        result = self._run(["show", "-json", "-no-color"], "terraform show (state)",
                           capture=True, sensitive_json=True, pooled=True)
        if result.returncode != 0:
            raise self._fail("terraform show", result, [])
        try:
            doc = json.loads(result.stdout or "{}")
        except ValueError:
            return []
        out: list[dict[str, Any]] = []

        def walk(module: dict[str, Any]) -> None:
            for r in module.get("resources", []):
                if r.get("mode") == "managed":
                    out.append({"address": r.get("address"), "type": r.get("type"),
                                "values": r.get("values") or {}})
            for child in module.get("child_modules", []):
                walk(child)

        walk((doc.get("values") or {}).get("root_module") or {})
        return out

    def forget(self, addresses: Iterable[str]) -> None:
        """``terraform state rm``: stop managing objects without deleting them."""
        addrs = list(addresses)
        if not addrs:
            return
        result = self._run(["state", "rm", f"-lock-timeout={self.lock_timeout}", *addrs],
                           "terraform state rm")
        if result.returncode != 0:
            raise self._fail("terraform state rm", result, [])

    # -- outputs -------------------------------------------------------------------------------
    def outputs(self) -> dict[str, Any]:
        result = self._run(["output", "-json", "-no-color"], "terraform output", capture=True,
                           sensitive_json=True)
        if result.returncode != 0:
            raise self._fail("terraform output", result, [])
        try:
            doc = json.loads(result.stdout or "{}")
        except ValueError:
            doc = {}
        return doc if isinstance(doc, dict) else {}


def _action(actions: list[str]) -> str:
    if actions in (["delete", "create"], ["create", "delete"]):
        return "replace"
    if len(actions) == 1:
        return actions[0]
    return "/".join(actions)


def _path_text(path: list[Any]) -> str:
    return ".".join(str(p) for p in path)


def parse_plan_json(doc: dict[str, Any], *, plan_file: Path | None = None,
                    destroy: bool = False) -> PlanResult:
    """``terraform show -json PLAN`` -> :class:`PlanResult` (``has_changes`` from the
    resource and output changes; :meth:`TerraformEngine.plan` overrides it with the
    exit code)."""
    summary = PlanSummary()
    changes: list[ResourceChange] = []
    for rc in doc.get("resource_changes", []):
        change = rc.get("change", {})
        action = _action(change.get("actions", []))
        changes.append(ResourceChange(
            address=rc.get("address", "?"), type=rc.get("type", "?"), action=action,
            before=change.get("before"), after=change.get("after"),
            replace_paths=tuple(_path_text(p) for p in change.get("replace_paths", []))))
        if action == "create":
            summary.create += 1
        elif action == "update":
            summary.update += 1
        elif action == "replace":
            summary.replace += 1
        elif action == "delete":
            summary.delete += 1
        elif action == "read":
            summary.read += 1
    summary.outputs_changed = sum(
        1 for oc in doc.get("output_changes", {}).values()
        if oc.get("actions") not in (["no-op"], None))
    drift = [ResourceChange(address=rc.get("address", "?"), type=rc.get("type", "?"),
                            action=_action(rc.get("change", {}).get("actions", [])),
                            before=rc.get("change", {}).get("before"),
                            after=rc.get("change", {}).get("after"))
             for rc in doc.get("resource_drift", [])]
    return PlanResult(has_changes=summary.total > 0 or summary.outputs_changed > 0,
                      summary=summary, changes=changes, plan_file=plan_file, destroy=destroy,
                      drift=drift)


# The plan stream's action names (views/json/change.go in hashicorp/terraform) as
# ``show -json`` spells the same change: a move or an import without other change is a
# "no-op" there, a ``removed`` block a "forget"; the rest are the same words.
_STREAM_ACTIONS = {"noop": "no-op", "move": "no-op", "import": "no-op", "remove": "forget"}


class SavedPlan:
    """The saved plan's values, read at most once, when something first needs them.

    Args:
      load: reads the whole saved plan (:meth:`TerraformEngine.show`).
    """

    def __init__(self, load: Callable[[], PlanResult]) -> None:
        self._load = load
        self._plan: PlanResult | None = None
        self._index: dict[tuple[bool, str, str], ResourceChange] = {}

    def plan(self) -> PlanResult:
        """The whole plan (``show -json``), loaded on the first call."""
        if self._plan is None:
            self._plan = self._load()
            for drift, changes in ((False, self._plan.changes), (True, self._plan.drift)):
                for c in changes:
                    self._index.setdefault((drift, c.address, c.action), c)
        return self._plan

    def change(self, lite: ResourceChange, *, drift: bool = False) -> ResourceChange:
        """``lite`` (a change from the stream) with its values from the saved plan."""
        self.plan()
        found = self._index.get((drift, lite.address, lite.action))
        return found if found is not None else dataclasses.replace(lite, details=None)


def plan_from_events(events: Iterable[dict[str, Any]], *, plan_file: Path | None = None,
                     destroy: bool = False, saved: SavedPlan | None = None) -> PlanResult:
    """The plan as Terraform's ``plan -json`` stream tells it
    (https://developer.hashicorp.com/terraform/internals/machine-readable-ui):
    ``planned_change`` (address, resource type, action) for every resource that changes,
    ``resource_drift`` for what changed outside Terraform, ``outputs`` (each root output's
    action). Counts, change list and order (by address) are those :func:`parse_plan_json`
    gives for the same saved plan; what the stream lacks (each change's before/after
    values, the attributes that force a replacement, the unchanged resources) comes from
    ``saved`` when first needed (:attr:`PlanResult.details`, :attr:`ResourceChange.details`).
    ``has_changes`` as :func:`parse_plan_json`; :meth:`TerraformEngine.plan` sets it from
    the exit code.
    """
    summary = PlanSummary()
    changes: list[ResourceChange] = []
    drift: list[ResourceChange] = []
    for ev in events:
        kind = ev.get("type")
        if kind in ("planned_change", "resource_drift"):
            change = ev.get("change") or {}
            resource = change.get("resource") or {}
            action = str(change.get("action", "?"))
            item = ResourceChange(address=resource.get("addr", "?"),
                                  type=resource.get("resource_type", "?"),
                                  action=_STREAM_ACTIONS.get(action, action))
            (changes if kind == "planned_change" else drift).append(item)
        elif kind == "outputs":
            summary.outputs_changed = sum(
                1 for o in (ev.get("outputs") or {}).values()
                if isinstance(o, dict) and o.get("action") not in ("noop", None))
    changes.sort(key=lambda c: c.address)
    drift.sort(key=lambda c: c.address)
    for c in changes:
        if c.action in ("create", "update", "replace", "delete", "read"):
            setattr(summary, c.action, getattr(summary, c.action) + 1)
    if saved is not None:
        changes = [dataclasses.replace(c, details=functools.partial(saved.change, c))
                   for c in changes]
        drift = [dataclasses.replace(c, details=functools.partial(saved.change, c, drift=True))
                 for c in drift]
    return PlanResult(has_changes=summary.total > 0 or summary.outputs_changed > 0,
                      summary=summary, changes=changes, plan_file=plan_file, destroy=destroy,
                      drift=drift, details=saved.plan if saved is not None else None)


def _progress_event(ev: dict[str, Any]) -> ProgressEvent | None:
    kind = {"apply_start": "start", "apply_progress": "progress",
            "apply_complete": "complete", "apply_errored": "error",
            "refresh_start": "refresh"}.get(ev.get("type", ""))
    if kind is None:
        if ev.get("type") == "diagnostic" and ev["diagnostic"].get("severity") == "error":
            d = ev["diagnostic"]
            return ProgressEvent("error", d.get("address", ""), message=d.get("summary", ""))
        return None
    hook = ev.get("hook", {})
    return ProgressEvent(kind, hook.get("resource", {}).get("addr", "?"),
                         action=hook.get("action", ""),
                         elapsed_s=float(hook.get("elapsed_seconds") or 0))


def _make(workdir: Path, runner: CommandRunner, keep_fds: Iterable[int]) -> TerraformEngine:
    return TerraformEngine(workdir, runner, keep_fds=keep_fds)


def _saved_plan(workdir: Path, runner: CommandRunner) -> dict[str, Any] | None:
    """The stage's saved plan (:meth:`TerraformEngine.saved_plan`); without one, None and
    terraform is not looked for."""
    if not (workdir / PLAN_FILE).is_file():
        return None
    return TerraformEngine(workdir, runner).saved_plan()


def _render(plan: StackPlan, manifest: Mapping[str, Any], root: Path,
            kit: RenderKit) -> dict[str, bytes]:
    from mldiag_provision.engines.terraform_files import terraform_files

    return terraform_files(plan, manifest, root, kit)


def _sources(manifest: Mapping[str, Any]) -> list[str]:
    """The templates and modules a blueprint's Terraform files come from."""
    agents = manifest.get("agents") or {}
    return ([f"blueprints/{t}" for t in manifest.get("templates", {}).values()]
            + [f"modules/{m}" for m in manifest.get("modules", [])]
            + [f"modules/{m}" for ms in (manifest.get("modules_when") or {}).values()
               for m in ms]
            + [f"blueprints/{t}" for t in agents.get("templates", {}).values()]
            + [f"modules/{m}" for m in agents.get("modules", [])])


UNIT = EngineUnit(
    name="terraform",
    summary="Terraform >= 1.7 on the rendered HCL (hashicorp/google, google-beta 8.x)",
    capabilities=TerraformEngine.capabilities,
    kinds=TERRAFORM_KINDS,
    translate=translate,
    marker="main.tf",
    render=_render,
    make=_make,
    sources=_sources,
    by_hand=ByHand(project=("terraform init", "terraform plan -out tfplan",
                            "terraform apply tfplan"),
                   cluster=("terraform -chdir=agents init", "terraform -chdir=agents apply"),
                   output="terraform output {name}", output_raw="terraform output -raw {name}"),
    saved_plan=_saved_plan,
    locate=find_terraform,
)
