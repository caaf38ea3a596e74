"""What no single recipe can see: two stacks of one fleet that would fight over one thing.

Read from each recipe's plan data (:func:`mldiag_provision.plan.owned.owned_names` for the
names a stack creates; the plan's ``backend`` and ``diagnostics.log_analytics``), never by
re-reading the YAML, so the names are exactly what ``render`` would write. Rules:

- ``fleet-names``: two stacks create a resource of one kind with one name in one scope
  (``catalog/data/names.yaml`` ``uniqueness``, with sources): the second create fails with
  409 ALREADY_EXISTS, and either stack's destroy deletes what the other uses. An error where
  the scope is verified (H), else a warning.
- ``fleet-log-bucket``: two stacks in one project both manage the ``_Default`` log bucket's
  config (names.yaml ``projectSingletons.defaultLogBucket``): an error when their
  ``retentionDays`` differ (each apply undoes the other's), a warning when equal.
- ``fleet-state-path``: two stacks keep Terraform state in one ``gcs`` object (bucket and
  prefix; ``projectSingletons.gcsStateObject``): an error.
- ``fleet-policy-directory``: two recipes read one ``spec.policy.directories`` entry: a
  warning (a change there re-plans both; ``fleet matrix`` lists both).

Every finding names each recipe involved, with file, line and the field to change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldiag_provision.errors import Severity
from mldiag_provision.fleet.members import Member
from mldiag_provision.rulebook import define, fact_by_id, settle

NAMES = define("fleet-names", "two stacks of a fleet create no resource of one kind and "
               "name in one scope", scope="recipe", severity=Severity.ERROR)
LOG_BUCKET = define("fleet-log-bucket", "two stacks in one project do not set the _Default "
                    "log bucket's retention differently", scope="recipe",
                    severity=Severity.ERROR,
                    facts=("names.projectSingletons.defaultLogBucket",))
STATE_PATH = define("fleet-state-path", "two stacks do not keep Terraform state in one gcs "
                    "bucket and prefix", scope="recipe", severity=Severity.ERROR,
                    facts=("names.projectSingletons.gcsStateObject",))
POLICY_DIR = define("fleet-policy-directory", "a policy directory two recipes read is "
                    "reported (a change there affects both)", scope="recipe",
                    severity=Severity.WARNING)

Path_ = tuple[str | int, ...]
_M: Path_ = ("metadata", "name")
_CLUSTER: Path_ = ("spec", "orchestrator", "clusterName")
# plan field (plan/owned.py OwnedName.field) -> recipe fields that decide it, most specific
# first; a field the recipe does not write was derived from the next one
_DECIDED_BY: dict[str, tuple[Path_, ...]] = {
    "diagnostics.service_account.account_id": (("spec", "diagnostics", "serviceAccount",
                                                "name"), _M),
    "diagnostics.iam.custom_role_id": (("spec", "diagnostics", "iam", "customRoleId"), _M),
    "diagnostics.profiles_bucket.name": (("spec", "diagnostics", "profilesBucket", "name"),
                                         _M),
    "slurm.network.network": (("spec", "slurm", "network", "name"), _CLUSTER, _M),
}


@dataclass(frozen=True)
class Side:
    """One recipe's part in a finding: where it sets (or derives) the value."""

    file: str
    line: int
    column: int
    path: str
    value: object

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "column": self.column,
                "path": self.path, "value": self.value}

    def at(self) -> str:
        return f"{self.file}:{self.line}:{self.column}" if self.line else self.file


@dataclass(frozen=True)
class Finding:
    """One cross-recipe problem; ``sides``: every recipe involved (at least two)."""

    rule: str
    severity: Severity
    message: str
    sides: tuple[Side, ...]
    hint: str
    source: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "severity": self.severity.value, "message": self.message,
                "recipes": [s.to_dict() for s in self.sides], "hint": self.hint,
                "source": self.source}


def _source(fact_id: str) -> str | None:
    """The URL of the source behind a fact (``names.uniqueness.serviceAccount``)."""
    return fact_by_id(fact_id).source.url


def _decided_by(plan_field: str) -> tuple[Path_, ...]:
    if plan_field in _DECIDED_BY:
        return _DECIDED_BY[plan_field]
    if plan_field.startswith("slurm.storage"):
        return (("spec", "slurm", "storage"), _CLUSTER, _M)
    return (_CLUSTER, _M)  # cluster, node account, router, NAT, firewall, policies, VPCs


def _side(member: Member, candidates: Sequence[Path_], value: object) -> Side:
    path, line, col = member.where(candidates)
    return Side(member.file, line, col, path, value)


def find(members: Sequence[Member]) -> list[Finding]:
    """Every cross-recipe finding over the planned ``members`` (those without a plan, i.e.
    with preflight errors, are left out), sorted by rule, then first file and line."""
    planned = [m for m in members if m.plan is not None]
    found = [*_names(planned), *_log_bucket(planned), *_state_path(planned),
             *_policy_dirs(planned)]
    return sorted(found, key=lambda f: (f.rule, [(s.file, s.line) for s in f.sides]))


def _names(members: Sequence[Member]) -> Iterator[Finding]:
    from mldiag_provision.catalog.store import store
    from mldiag_provision.plan.owned import owned_names

    kinds: Mapping[str, Any] = store().doc("names")["uniqueness"]
    by_key: dict[tuple[str, str, str], list[tuple[Member, str]]] = defaultdict(list)
    for m in members:
        assert m.plan is not None
        for o in owned_names(m.plan):
            by_key[o.key].append((m, o.field))
    # one finding per set of recipes and recipe fields: two stacks of one name share many
    merged: dict[tuple[tuple[str, str], ...], list[tuple[str, str, str]]] = defaultdict(list)
    owners: dict[tuple[tuple[str, str], ...], list[tuple[Member, str]]] = {}
    for key, holders in by_key.items():
        if len({id(m) for m, _ in holders}) < 2:
            continue
        sig = tuple(sorted((m.file, m.where(_decided_by(f))[0]) for m, f in holders))
        merged[sig].append(key)
        owners.setdefault(sig, holders)
    for sig, keys in merged.items():
        holders = owners[sig]
        keys.sort()
        # an error when any one name's scope is verified (H); else a warning
        severities = {settle(NAMES.id, None, [fact_by_id(f"names.uniqueness.{k[0]}")])
                      for k in keys}
        severity = Severity.ERROR if Severity.ERROR in severities else Severity.WARNING
        listed = "; ".join(
            f"{kinds.get(kind, {}).get('what', kind)} {name} "
            f"({'globally' if scope == 'global' else 'in ' + scope})"
            for kind, scope, name in keys)
        sides = tuple(_side(m, _decided_by(f), _value(m, _decided_by(f)))
                      for m, f in sorted(holders, key=lambda h: h[0].file))
        fields = sorted({s.path for s in sides})
        derived = [s for s in sides if s.path == "metadata.name"]
        hint = (f"change {' or '.join(fields)} in all but one of them"
                + (" (the names are derived from metadata.name; a recipe can also name "
                   "them itself, e.g. spec.diagnostics.serviceAccount.name)" if derived
                   else ""))
        what = ("create" if len(keys) == 1 else f"create {len(keys)} resources with the same "
                "names:")
        yield Finding(
            NAMES.id, severity,
            f"{len(sides)} stacks {what} {listed}: the second create fails with 409 "
            "ALREADY_EXISTS, and either stack's destroy deletes what the other uses",
            sides, hint, _source(f"names.uniqueness.{keys[0][0]}"))


def _value(member: Member, candidates: Sequence[Path_]) -> object:
    """The value the recipe writes at the first written candidate (None when none is)."""
    sm = member.sourcemap
    recipe = member.data()
    for p in candidates:
        if sm is not None and sm.has_key(p):
            return _get(recipe, p)
    return None


def _get(doc: object, path: Path_) -> object:
    for key in path:
        if isinstance(key, int) and isinstance(doc, list) and key < len(doc):
            doc = doc[key]
        elif isinstance(key, str) and isinstance(doc, Mapping):
            doc = doc.get(key)
        else:
            return None
    return doc


def _log_bucket(members: Sequence[Member]) -> Iterator[Finding]:
    by_project: dict[str, list[tuple[Member, object]]] = defaultdict(list)
    for m in members:
        assert m.plan is not None
        la = (m.plan.get("diagnostics") or {}).get("log_analytics") or {}
        if la.get("enabled"):
            by_project[str(m.plan.get("project"))].append((m, la.get("retention_days")))
    path: Path_ = ("spec", "diagnostics", "logAnalytics", "retentionDays")
    for project, holders in sorted(by_project.items()):
        if len(holders) < 2:
            continue
        values = {v for _, v in holders}
        sides = tuple(_side(m, (path,), v) for m, v in holders)
        if len(values) > 1:
            severity = settle(LOG_BUCKET.id, None)
            groups: dict[object, list[str]] = defaultdict(list)
            for s in sides:
                groups[s.value].append(s.file)
            said = "; ".join(
                f"{value} in " + (", ".join(files) if len(files) <= 3
                                  else f"{len(files)} recipes")
                for value, files in sorted(groups.items(), key=lambda g: len(g[1])))
            message = (f"{len(sides)} stacks in project {project} manage the _Default log "
                       f"bucket with different retentionDays ({said}): each apply resets "
                       "the retention the other set")
            hint = ("set spec.diagnostics.logAnalytics.retentionDays to one value in all of "
                    "them, or spec.diagnostics.logAnalytics.enabled: false in all but one")
        else:
            severity = Severity.WARNING
            message = (f"{len(sides)} stacks in project {project} manage the _Default log "
                       f"bucket (Log Analytics, retentionDays {values.pop()}): the same "
                       "setting, so they do not undo each other, but a change to one must be "
                       "made to all")
            hint = ("keep spec.diagnostics.logAnalytics.retentionDays equal, or let one stack "
                    "own it "
                    "(spec.diagnostics.logAnalytics.enabled: false in the others)")
        yield Finding(LOG_BUCKET.id, severity, message, sides, hint,
                      _source("names.projectSingletons.defaultLogBucket"))


def _state_path(members: Sequence[Member]) -> Iterator[Finding]:
    by_object: dict[tuple[str, str], list[Member]] = defaultdict(list)
    for m in members:
        assert m.plan is not None
        backend = m.plan.get("backend") or {}
        if backend.get("type") == "gcs" and backend.get("bucket"):
            # the templates write prefix = backend.prefix or the stack name; Terraform trims
            # the slashes at either end
            prefix = str(backend.get("prefix") or m.plan.get("name") or "").strip("/")
            by_object[(str(backend["bucket"]), prefix)].append(m)
    for (bucket, prefix), holders in sorted(by_object.items()):
        if len(holders) < 2:
            continue
        sides = tuple(_side(m, (("spec", "engine", "backend", "prefix"), _M),
                            _value(m, (("spec", "engine", "backend", "prefix"),)) or
                            m.plan.get("name") if m.plan else None)
                      for m in holders)
        yield Finding(
            STATE_PATH.id, settle(STATE_PATH.id, None),
            f"{len(sides)} stacks keep Terraform state in gs://{bucket}/{prefix}/"
            "default.tfstate: each one's plan proposes to delete what the other created",
            sides, "give each a spec.engine.backend.prefix of its own (e.g. the stack name)",
            _source("names.projectSingletons.gcsStateObject"))


def policy_directories(member: Member) -> list[tuple[int, Path]]:
    """(index, resolved directory) of each ``spec.policy.directories`` entry (relative to
    the recipe file, as the policy gate reads them)."""
    recipe = member.recipe
    if recipe is None or recipe.spec.policy is None:
        return []
    base = Path(member.file).resolve().parent
    return [(i, (base / d).resolve()) for i, d in enumerate(recipe.spec.policy.directories)]


def _shown(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _policy_dirs(members: Iterable[Member]) -> Iterator[Finding]:
    by_dir: dict[Path, list[tuple[Member, int, str]]] = defaultdict(list)
    for m in members:
        assert m.recipe is not None
        raw = m.recipe.spec.policy.directories if m.recipe.spec.policy else []
        for i, d in policy_directories(m):
            by_dir[d].append((m, i, raw[i]))
    for d, holders in sorted(by_dir.items()):
        if len({id(m) for m, _, _ in holders}) < 2:
            continue
        sides = tuple(_side(m, (("spec", "policy", "directories", i),), raw)
                      for m, i, raw in holders)
        yield Finding(
            POLICY_DIR.id, Severity.WARNING,
            f"{len(sides)} recipes read the policy directory {_shown(d)}: a change there affects "
            "all of them (fleet matrix lists them all)", sides,
            "nothing to do if it is meant to be shared; otherwise give each recipe its own "
            "directory in spec.policy.directories")
