"""A blueprint's manifest (``blueprints/<name>/blueprint.yaml``), read and checked.

A blueprint names the orchestrators it serves (``orchestrators:``) and the engines it can be
rendered for (``engines:``); an orchestrator unit points at one blueprint
(:attr:`~mldiag_provision.orchestrators.Orchestrator.blueprint`). :func:`mismatch` is the one
place that says, in words, when a recipe's engine or orchestrator is not one the blueprint
lists: preflight reports it against ``spec.engine.name``, and :func:`check` raises it for
callers that skipped preflight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from mldiag_provision.errors import CatalogError, InputError
from mldiag_provision.resources import data_root


@dataclass(frozen=True)
class Blueprint:
    """One blueprint manifest: ``path`` is its blueprint.yaml; ``manifest`` the whole file
    (templates, modules, agents stage, engine sections) as data."""

    name: str
    path: Path
    orchestrators: tuple[str, ...]
    engines: tuple[str, ...]
    manifest: Mapping[str, Any]

    def where(self) -> str:
        """``blueprints/<name>/blueprint.yaml`` (for messages)."""
        return f"blueprints/{self.name}/blueprint.yaml"


@cache
def _load(path: Path) -> Blueprint:
    from mldiag_provision.startcache import load_yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = load_yaml(path, lambda raw: yaml.load(raw, Loader=loader),
                        f"PyYAML {yaml.__version__} {loader.__name__}")
    except FileNotFoundError:
        raise CatalogError(f"{path} is missing: the blueprint named by an orchestrator unit "
                           "is not installed") from None
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path} cannot be read: {exc}") from None
    if not isinstance(doc, dict):
        raise CatalogError(f"{path}: a blueprint manifest is a mapping")
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("orchestrators", "engines"):
        value = doc.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str)
                                                                 for v in value):
            raise CatalogError(f"{path}: '{key}' must be a non-empty list of names "
                               f"(got {value!r})")
        lists[key] = tuple(value)
    return Blueprint(name=str(doc.get("name") or path.parent.name), path=path,
                     orchestrators=lists["orchestrators"], engines=lists["engines"],
                     manifest=doc)


@cache
def load_blueprint(name: str, root: Path | None = None) -> Blueprint:
    """The blueprint ``blueprints/<name>/`` under ``root`` (default: the installed data).

    Raises:
      CatalogError: the file is missing or malformed (a packaging bug, exit 70).
    """
    return _load((root or data_root()) / "blueprints" / name / "blueprint.yaml")


def mismatch(blueprint: Blueprint, *, orchestrator: str | None = None,
             engine: str | None = None) -> tuple[str, str, str] | None:
    """(message, expected, hint) when ``blueprint`` does not list ``orchestrator`` or
    ``engine`` (the orchestrator is checked first), else None."""
    if orchestrator is not None and orchestrator not in blueprint.orchestrators:
        return (f"blueprint '{blueprint.name}' ({blueprint.where()}) does not list "
                f"orchestrator '{orchestrator}' under orchestrators:",
                ", ".join(blueprint.orchestrators),
                f"add '{orchestrator}' to orchestrators: in {blueprint.where()}, or point the "
                "orchestrator unit at the blueprint that serves it")
    if engine is not None and engine not in blueprint.engines:
        return (f"engine '{engine}' is not available for blueprint '{blueprint.name}': "
                f"{blueprint.where()} lists engines: " + ", ".join(blueprint.engines),
                ", ".join(blueprint.engines),
                "set spec.engine.name to " + " or ".join(f"'{e}'" for e in blueprint.engines)
                + f", or add the engine's templates to {blueprint.where()}")
    return None


def check(blueprint: Blueprint, *, orchestrator: str, engine: str) -> None:
    """Raise when ``blueprint`` does not list ``orchestrator`` and ``engine``.

    Raises:
      InputError: one line saying which list lacks which name, and how to fix it.
    """
    found = mismatch(blueprint, orchestrator=orchestrator, engine=engine)
    if found is not None:
        message, expected, hint = found
        raise InputError(f"{message} (expected: {expected})", hint=hint)
