"""The policy gate: Rego policies (bundled ``policies/`` + your directories) over a rendered
stack and, when one exists, its saved plan.

A rule is a Rego package that defines ``deny`` (a set of ``{"msg": ..., "resource": ...}``
objects, or of strings) and ``metadata`` (an object with ``id``, ``severity`` ``error`` or
``warning``, ``title``, ``rationale`` and ``source``, a URL). Packages without ``deny`` are
helper libraries. Parameters reach the rules as ``input.params``; waivers (rule id + reason)
turn a rule's findings into waived ones, still printed with the reason, never failing.

``input.cost`` is the stack's priced bill of materials (:func:`cost_input`, issue 29):
``total_usd_per_hour`` (a number: the priced lines at their maximum size), ``lower_bound``
(true when a line's price is unknown or a "starting at" figure), ``lines`` (each with
``item``, ``kind``, ``capacity``, ``machine_type``, ``vms_min``/``vms_max``, ``chips``,
``hourly_max``, ``status`` and ``source``) and ``prices.date``; ``input.params.max_hourly_cost``
is the recipe's ``spec.policy.maxHourlyCost`` (US dollars per hour) or null. The bundled
``max-hourly-cost`` rule reads both; your own rules can too.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldiag_provision.errors import Problem, Severity
from mldiag_provision.policy.engine import Evaluation, Module, PolicyError

if TYPE_CHECKING:
    from mldiag_provision.policy.cache import GateCache

_PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_][A-Za-z0-9_.]*)\s*$", re.M)
_RULE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
PARAM_KEYS = ("required_labels", "allowed_regions", "allowed_zones", "allow_deletes")


def bundled_dir() -> Path:
    """The bundled policy bundle: ``policies/`` of the checkout, or of the wheel."""
    from mldiag_provision.resources import data_root

    return data_root() / "policies"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    title: str
    rationale: str
    source: str
    package: str
    file: str
    bundled: bool


@dataclass(frozen=True)
class Finding:
    rule: Rule
    message: str
    resource: str
    waived: str | None = None  # the waiver's reason

    def to_problem(self, file: str) -> Problem:
        """As a :class:`Problem` located in ``file`` (the recipe or stack directory)."""
        return Problem(rule=self.rule.id, message=self.message, path=self.resource,
                       severity=self.rule.severity, source=self.rule.source,
                       hint=f"waived: {self.waived}" if self.waived else None, file=file)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.id, "severity": self.rule.severity.value,
                "resource": self.resource, "message": self.message, "waived": self.waived,
                "source": self.rule.source}


@dataclass(frozen=True)
class Settings:
    """What a recipe's ``spec.policy`` (or ``--policy``/``--waive``) says."""

    directories: tuple[Path, ...] = ()
    params: dict[str, list[str]] = field(default_factory=dict)
    waivers: dict[str, str] = field(default_factory=dict)  # rule id -> reason
    max_hourly_cost: float | None = None
    """``spec.policy.maxHourlyCost``: budget in US dollars per hour (None: no budget)."""

    @classmethod
    def from_data(cls, policy: dict[str, Any] | None, base: Path) -> Settings:
        """From ``spec.policy`` as data (camelCase keys, as
        :func:`~mldiag_provision.render.stack.policy_data` gives it) or None; directories
        are relative to ``base`` (the recipe's folder)."""
        if not policy:
            return cls()
        return cls(directories=tuple(base / d for d in policy.get("directories", [])),
                   params={"required_labels": list(policy.get("requiredLabels", [])),
                           "allowed_regions": list(policy.get("allowedRegions", [])),
                           "allowed_zones": list(policy.get("allowedZones", [])),
                           "allow_deletes": list(policy.get("allowDeletes", []))},
                   waivers={w["rule"]: w["reason"] for w in policy.get("waivers", [])},
                   max_hourly_cost=_budget(policy.get("maxHourlyCost")))


def _budget(value: Any) -> float | None:
    """``maxHourlyCost`` as a float; None when unset.

    Raises:
      PolicyError: not a positive number (a hand-edited ``.mldiag/policy.json``).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or \
            value == float("inf"):
        raise PolicyError(f"maxHourlyCost {value!r} is not a positive number of US dollars "
                          "per hour", hint="set spec.policy.maxHourlyCost in the recipe and "
                                           "render again")
    return float(value)


def cost_input(stack: dict[str, Any]) -> dict[str, Any]:
    """``input.cost``: the priced bill of materials of the stack's ``decisions``
    (``.mldiag/plan.json``), without the table's age (so the gate's cache keeps its key from
    one day to the next). A plan that cannot be priced gives ``{"error": message,
    "total_usd_per_hour": null, ...}``: the budget rule then reports it."""
    from mldiag_provision.cost.bom import bill_of_materials
    from mldiag_provision.errors import CatalogError

    try:
        doc = bill_of_materials(stack.get("decisions") or {}).to_dict()
    except (CatalogError, KeyError, TypeError, ValueError) as exc:
        return {"error": f"the stack could not be priced: {exc}", "total_usd_per_hour": None,
                "lower_bound": True, "lines": [], "prices": {}}
    doc["prices"] = {k: v for k, v in doc["prices"].items() if k != "age_days"}
    return doc


@dataclass
class GateResult:
    rules: list[Rule]
    findings: list[Finding]
    engine: str
    with_plan: bool
    elapsed_s: float
    unused_waivers: list[str] = field(default_factory=list)
    external_waivers: list[dict[str, str]] = field(default_factory=list)
    cached: bool = False  # the engine's answers came from policy/cache.py (same input)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.waived is None
                and f.rule.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.waived is None
                and f.rule.severity is Severity.WARNING]

    @property
    def waived(self) -> list[Finding]:
        return [f for f in self.findings if f.waived is not None]

    def failed(self, strict: bool = False) -> bool:
        return bool(self.errors) or (strict and bool(self.warnings))

    def to_dict(self) -> dict[str, Any]:
        return {"ok": not self.errors, "engine": self.engine, "withPlan": self.with_plan,
                "elapsedSeconds": round(self.elapsed_s, 3),
                "errors": len(self.errors), "warnings": len(self.warnings),
                "waived": len(self.waived),
                "rules": [{"id": r.id, "severity": r.severity.value, "title": r.title,
                           "rationale": r.rationale, "source": r.source, "file": r.file}
                          for r in self.rules],
                "findings": [f.to_dict() for f in self.findings],
                "unusedWaivers": self.unused_waivers,
                "externalWaivers": self.external_waivers}


def load_modules(directories: list[Path]) -> tuple[list[Module], dict[str, str]]:
    """Every ``*.rego`` file below ``directories`` (``*_test.rego`` skipped) and the package
    each declares: (modules, {package: file}).

    Raises:
      PolicyError: a directory is missing or holds no policy, or a file has no package.
    """
    modules: list[Module] = []
    packages: dict[str, str] = {}
    for d in directories:
        if not d.is_dir():
            raise PolicyError(f"policy directory {d} does not exist",
                              hint="check --policy / spec.policy.directories (relative to "
                                   "the recipe file)")
        files = sorted(p for p in d.rglob("*.rego") if not p.name.endswith("_test.rego"))
        if not files:
            raise PolicyError(f"policy directory {d} holds no *.rego file")
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise PolicyError(f"cannot read the policy {path}: {exc}") from None
            m = _PACKAGE.search(text)
            if m is None:
                raise PolicyError(f"{path}: no `package` line",
                                  hint="start the file with e.g. `package myorg.rules.x`")
            modules.append(Module(name=str(path), source=text))
            packages.setdefault(m.group(1), str(path))
    return modules, packages


def _rule(meta: Any, pkg: str, file: str, bundled: bool) -> Rule:
    where = f"{file} (package {pkg})"
    if not isinstance(meta, dict):
        raise PolicyError(f"{where} defines `deny` but no `metadata` object",
                          hint='add metadata := {"id": "...", "severity": "error", "title": '
                               '"...", "rationale": "...", "source": "https://..."}')
    missing = [k for k in ("id", "severity", "title", "rationale", "source")
               if not isinstance(meta.get(k), str) or not meta.get(k)]
    if missing:
        raise PolicyError(f"{where}: metadata lacks {', '.join(missing)}",
                          hint="every rule needs id, severity, title, rationale and source")
    if not _RULE_ID.match(meta["id"]):
        raise PolicyError(f"{where}: metadata.id {meta['id']!r} is not a lowercase id "
                          "(letters, digits, '-')")
    if meta["severity"] not in ("error", "warning"):
        raise PolicyError(f"{where}: metadata.severity {meta['severity']!r} is not "
                          "'error' or 'warning'")
    return Rule(id=meta["id"], severity=Severity(meta["severity"]), title=meta["title"],
                rationale=meta["rationale"], source=meta["source"], package=pkg, file=file,
                bundled=bundled)


def _denials(value: Any, rule: Rule) -> list[tuple[str, str]]:
    items = value if isinstance(value, list) else (
        list(value) if isinstance(value, dict) else None)
    if items is None:
        raise PolicyError(f"{rule.file}: `deny` of rule {rule.id} is not a set")
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, ""))
        elif isinstance(item, dict) and isinstance(item.get("msg"), str):
            out.append((item["msg"], str(item.get("resource", ""))))
        else:
            raise PolicyError(f"{rule.file}: rule {rule.id} denies {item!r}, which is neither "
                              "a string nor an object with a string `msg`")
    return sorted(set(out))


class GateRun:
    """The gate started before its plan input exists: the engine process starts and compiles
    the policies, and ``stack`` (a function) is built on a thread, while the caller plans
    (``plan``/``apply`` start it before Terraform plans); :meth:`finish` then evaluates
    with the plan. Errors of the start (a broken policy, a stack that cannot be read) are
    raised by :meth:`finish`, where :func:`run_gate` raises them.

    Raises (finish):
      as :func:`run_gate`.
    """

    def __init__(self, stack: dict[str, Any] | Callable[[], dict[str, Any]],
                 settings: Settings, *, use_bundled: bool = True,
                 cache: Callable[[list[Module], list[str]], GateCache | None] | None = None,
                 ) -> None:
        import threading

        t0 = time.perf_counter()
        self.settings = settings
        self.error: BaseException | None = None
        self.evaluation: Evaluation | None = None
        self.cache: GateCache | None = None
        self.cached = False  # whether finish() took the answers from the cache
        self._stack: dict[str, Any] | None = None if callable(stack) else stack
        self._thread: threading.Thread | None = None
        try:
            dirs = ([bundled_dir()] if use_bundled else []) + list(settings.directories)
            self.modules, self.packages = load_modules(dirs)
            self.cache = cache(self.modules, sorted(self.packages)) if cache else None
            if self.cache is None or not self.cache.likely_hit:
                self.evaluation = Evaluation(self.modules, sorted(self.packages))
        except Exception as exc:  # raised again by finish()
            self.error = exc
            self._spent = time.perf_counter() - t0
            return
        if callable(stack):
            build = stack

            def run() -> None:
                try:
                    self._stack = build()
                except BaseException as exc:  # raised again by finish()
                    self.error = exc

            self._thread = threading.Thread(target=run, name="policy-stack", daemon=True)
            self._thread.start()
        self._spent = time.perf_counter() - t0

    def cancel(self) -> None:
        """Stop the engine process (the plan failed or was interrupted)."""
        if self._thread is not None:
            self._thread.join()
        if self.evaluation is not None:
            self.evaluation.cancel()
            self.evaluation = None

    def finish(self, plan: dict[str, Any] | None) -> GateResult:
        """Evaluate every rule with ``plan`` (``None``: no saved plan)."""
        t0 = time.perf_counter()
        if self._thread is not None:
            self._thread.join()
        if self.error is not None:
            self.cancel()
            raise self.error
        assert self._stack is not None
        return _answers(self, plan, self._stack, started=t0 - self._spent,
                        clock_from=time.monotonic() - self._spent - (time.perf_counter() - t0))

    def evaluate(self, document: dict[str, Any], clock_from: float,
                 ) -> tuple[str, dict[str, dict[str, Any]]]:
        """(engine, answers) for ``document``: from the cache on an exact key match, else
        from the engine (started now if it was not started ahead), then cached."""
        key = None
        if self.cache is not None:
            from mldiag_provision.policy.cache import input_key

            key = input_key(self.modules, sorted(self.packages), document)
            hit = self.cache.get(key)
            if hit is not None:
                self.cached = True
                if self.evaluation is not None:
                    self.evaluation.cancel()
                    self.evaluation = None
                return hit
        if self.evaluation is None:
            self.evaluation = Evaluation(self.modules, sorted(self.packages))
        evaluation, self.evaluation = self.evaluation, None
        engine, answers = evaluation.finish(document, clock_from=clock_from)
        if self.cache is not None and key is not None:
            self.cache.put(key, engine, _kept(answers))
        return engine, answers


def _kept(answers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What :func:`_answers` reads of each package's answer, and nothing else: a rule's
    ``deny`` and ``metadata``, any error; a helper library's value (which may repeat input
    data, planned values included) is dropped."""
    out = {}
    for pkg, answer in answers.items():
        value = answer.get("value")
        if isinstance(value, dict) and "deny" in value:
            value = {"deny": value["deny"], "metadata": value.get("metadata")}
        else:
            value = None
        out[pkg] = {"value": value, "error": answer.get("error")}
    return out


def run_gate(stack: dict[str, Any] | Callable[[], dict[str, Any]], plan: dict[str, Any] | None,
             settings: Settings, *, use_bundled: bool = True) -> GateResult:
    """Evaluate every rule over ``{"stack": stack, "plan": plan, "params": ...}``.

    ``stack`` may be a function that builds it: it is then called while the engine process
    starts and compiles the policies (parsing the HCL overlaps with it).

    Raises:
      PolicyError: a policy is broken (does not compile, lacks metadata, returns a
        malformed finding, fails at run time), two rules share an id, or a waiver names
        an unknown rule.
      PolicyEngineError: the engine process crashed or timed out.
    """
    return GateRun(stack, settings, use_bundled=use_bundled).finish(plan)


def _answers(run: GateRun, plan: dict[str, Any] | None, stack: dict[str, Any], *,
             started: float, clock_from: float) -> GateResult:
    """Evaluate and read the answers (:func:`run_gate`); ``started`` (perf_counter) and
    ``clock_from`` (monotonic) leave out the time the caller spent between start and
    finish."""
    start = started
    settings = run.settings
    packages = run.packages
    params: dict[str, Any] = {k: list(settings.params.get(k, [])) for k in PARAM_KEYS}
    params["max_hourly_cost"] = settings.max_hourly_cost
    document = {"stack": stack, "plan": plan, "params": params, "cost": cost_input(stack)}
    engine, answers = run.evaluate(document, clock_from)
    bundled_root = str(bundled_dir())
    rules: dict[str, Rule] = {}
    findings: list[Finding] = []
    for pkg in sorted(packages):
        answer = answers.get(pkg, {})
        value = answer.get("value")
        file = packages[pkg]
        if answer.get("error"):
            raise PolicyError(f"{file} (package {pkg}): the policy failed while evaluating: "
                              f"{answer['error']}",
                              hint="fix the rule; rego-cpp lacks http.send, net.cidr_*, "
                                   "strings.render_template, print, trace and rego.metadata.*")
        if not isinstance(value, dict) or "deny" not in value:
            continue  # a helper library
        rule = _rule(value.get("metadata"), pkg, file, file.startswith(bundled_root))
        if rule.id in rules:
            raise PolicyError(f"two policies use the rule id {rule.id}: {rules[rule.id].file} "
                              f"and {file}", hint="give each rule its own metadata.id")
        rules[rule.id] = rule
        for message, resource in _denials(value["deny"], rule):
            findings.append(Finding(rule=rule, message=message, resource=resource,
                                    waived=settings.waivers.get(rule.id)))
    unknown = sorted(set(settings.waivers) - set(rules))
    if unknown:
        raise PolicyError(f"waiver for unknown rule(s) {', '.join(unknown)}",
                          hint="known rules: " + ", ".join(sorted(rules)))
    fired = {f.rule.id for f in findings}
    return GateResult(rules=sorted(rules.values(), key=lambda r: r.id), findings=findings,
                      engine=engine, with_plan=plan is not None,
                      elapsed_s=time.perf_counter() - start,
                      unused_waivers=sorted(set(settings.waivers) - fired),
                      external_waivers=list(stack.get("external_waivers", [])),
                      cached=run.cached)


def settings_for(recipe: Any, recipe_path: str | None, stack_files: dict[str, bytes],
                 extra_dirs: list[str], waive: dict[str, str]) -> Settings:
    """The gate's :class:`Settings`: the recipe's ``spec.policy`` (or, without a recipe,
    the stack's ``.mldiag/policy.json``), plus ``--policy`` directories and ``--waive``
    (the ``policy`` command, the gate of ``plan``/``apply`` and ``fleet`` share it).

    Raises:
      PolicyError: a rendered ``policy.json`` names directories that only the recipe can
        locate, and no ``--policy`` was given.
    """
    from mldiag_provision.policy import POLICY_JSON, policy_data

    base = Path(recipe_path).resolve().parent if recipe_path else Path.cwd()
    data = policy_data(recipe) if recipe is not None else None
    if recipe is None and POLICY_JSON in stack_files:
        try:
            data = json.loads(stack_files[POLICY_JSON])
        except ValueError as exc:
            raise PolicyError(f"{POLICY_JSON} of the stack is not JSON ({exc})",
                              hint="re-render the stack") from None
        if not recipe_path:  # directories are relative to a recipe we do not have
            if data.get("directories") and not extra_dirs:
                raise PolicyError(
                    "the stack's recipe names policy directories ("
                    + ", ".join(data["directories"]) + ") relative to the recipe file",
                    hint="run `mldiag-provision policy RECIPE`, or pass them with --policy")
            data = {**data, "directories": []}
    return _settings(data, base, extra_dirs, waive)


def _settings(data: dict[str, Any] | None, base: Path, extra_dirs: list[str],
              waive: dict[str, str]) -> Settings:
    s = Settings.from_data(data, base)
    return Settings(directories=(*s.directories, *(Path(d) for d in extra_dirs)),
                    params=s.params, waivers={**s.waivers, **waive},
                    max_hourly_cost=s.max_hourly_cost)
