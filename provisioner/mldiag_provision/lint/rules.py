"""Lint's side of the rulebook: declare manifest rules and read the facts they stand on.

Every rule has a stable id (``tpu-chips-per-pod``), a one-line title, a default severity, the
source of the fact it enforces and the facts it reads; all are declared in the one registry,
:mod:`mldiag_provision.rulebook` (ids unique across recipes and manifests), so the SARIF rule
table, the JSON output and the README list the same set.

Facts come from the fact store (:mod:`mldiag_provision.catalog.store`): ``kubernetes.yaml``
for the Kubernetes, Autopilot and ML Diagnostics vocabulary, the TPU catalog for slices. A
fact's severity (:attr:`~mldiag_provision.catalog.store.Fact.severity`) is an error only when
it is verified, a warning otherwise. ``data/crds.yaml`` (custom resource schemas) stays here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.errors import CatalogError, Severity
from mldiag_provision.rulebook import RULES, RuleInfo
from mldiag_provision.rulebook import define as _define

# "did you mean ...?": a leaf module (no pydantic, no recipe validator), re-exported for the
# rule modules that take it from here
from mldiag_provision.suggest import suggest

DATA_DIR = Path(__file__).parent / "data"

__all__ = ["DATA_DIR", "RULES", "RuleInfo", "define", "fact", "fact_source", "severity_of",
           "source_url", "suggest"]


def define(rule_id: str, title: str, *, severity: Severity = Severity.ERROR,
           source: str | None = None, facts: Iterable[str] = ()) -> RuleInfo:
    """Declare a manifest rule (see :func:`mldiag_provision.rulebook.define`)."""
    return _define(rule_id, title, scope="manifest", severity=severity, source=source,
                   facts=facts)


# The loader's own problems (recipe/loader.py) keep their ids.
define("yaml-syntax", "YAML syntax error")
define("yaml-duplicate-key", "a mapping repeats a key; YAML keeps only the last one")
define("yaml-value", "a YAML value that cannot be read")


def fact(*keys: str | int) -> Any:
    """One fact of ``kubernetes.yaml`` by its path, e.g. ``fact("autopilot", "hostPorts")``
    (a :class:`Fact`), or a group of facts there (``fact("autopilot", "annotations")``).

    Raises:
      CatalogError: no such path.
    """
    return store().get("kubernetes", *keys)


def source_url(tag: str | None) -> str | None:
    """What to cite for a source tag of ``sources.yaml`` (the tag itself when unknown)."""
    return store().source_url(tag)


def fact_source(*keys: str) -> str | None:
    url: str | None = fact(*keys).url
    return url


def severity_of(f: Fact | dict[str, Any]) -> Severity:
    """Errors only for verified (H) facts; anything less certain only warns. Takes a
    :class:`Fact` or a fact mapping of a loaded file (an entry of a list of facts)."""
    found = f if isinstance(f, Fact) else store().of(f)
    if found is None:
        raise CatalogError(f"not a fact of the fact store: {f!r:.80}")
    return found.severity
