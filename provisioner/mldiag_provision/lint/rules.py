"""Rule ids, their metadata, and the facts the rules stand on.

Every rule has a stable id (``tpu-chips-per-pod``), a one-line title, a default severity and
the source of the fact it enforces (a doc URL). Rule modules declare their rules here with
:func:`define` and report problems only under declared ids, so the SARIF rule table, the JSON
output and the README all list the same set.

Facts that are not in the TPU catalog live in ``lint/data/facts.yaml`` with a source and a
confidence; :func:`severity_of` turns a fact's confidence into the severity a rule may use
(errors only on verified facts, warnings otherwise).

NOTE: a new rule needs a :func:`define` call, a test that pins its message, and a row in the
README's lint section if it adds a new rule family.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from mldiag_provision.errors import CatalogError, Severity

DATA_DIR = Path(__file__).parent / "data"

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


@dataclass(frozen=True)
class RuleInfo:
    """What a rule checks, how bad a hit is by default, and where the fact comes from."""

    id: str
    title: str
    severity: Severity
    source: str | None
    group: str  # yaml, k8s, tpu, autopilot, mldiag


RULES: dict[str, RuleInfo] = {}


def define(rule_id: str, title: str, *, severity: Severity = Severity.ERROR,
           source: str | None = None) -> RuleInfo:
    """Declare a rule (idempotent for identical declarations)."""
    info = RuleInfo(rule_id, title, severity, source, rule_id.split("-", 1)[0])
    old = RULES.setdefault(rule_id, info)
    assert old == info, f"rule {rule_id} declared twice with different metadata"
    return info


# The loader's own problems (recipe/loader.py) keep their ids.
define("yaml-syntax", "YAML syntax error")
define("yaml-duplicate-key", "a mapping repeats a key; YAML keeps only the last one")
define("yaml-value", "a YAML value that cannot be read")


@functools.lru_cache(maxsize=1)
def facts() -> dict:
    """``lint/data/facts.yaml``, loaded once. Raises CatalogError if the data is broken."""
    try:
        with open(DATA_DIR / "facts.yaml", encoding="utf-8") as f:
            data = yaml.load(f, Loader=_Loader)
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"cannot read lint facts: {exc}") from exc
    if not isinstance(data, dict) or "sources" not in data:
        raise CatalogError("lint facts file has no sources")
    return data


def fact(*keys: str) -> dict:
    """One fact by its path in facts.yaml, e.g. ``fact("autopilot", "hostPorts")``."""
    node: object = facts()
    for k in keys:
        if not isinstance(node, dict) or k not in node:
            raise CatalogError(f"lint facts have no {'.'.join(keys)}")
        node = node[k]
    if not isinstance(node, dict):
        raise CatalogError(f"lint fact {'.'.join(keys)} is not a mapping")
    return node


def source_url(tag: str | None) -> str | None:
    """The URL of a source tag of facts.yaml (the tag itself when it has none)."""
    if not tag:
        return None
    src = facts()["sources"].get(tag) or {}
    return str(src.get("url") or tag)


def fact_source(*keys: str) -> str | None:
    return source_url(fact(*keys).get("source"))


def severity_of(f: dict) -> Severity:
    """Errors only for verified (H) facts; anything less certain only warns."""
    return Severity.ERROR if str(f.get("confidence", "H")) == "H" else Severity.WARNING
