"""Finding the recipes of a fleet and loading each one: parse, preflight, plan.

A fleet argument is a recipe file (taken as it is), a directory (every ``*.yaml``/``*.yml``
below it whose top level says ``kind: Recipe``; other YAML, such as policy data, is skipped)
or a glob (``teams/*/recipe.yaml``, ``**`` crosses directories; filtered the same way).
Each recipe is checked with the same :func:`mldiag_provision.pipeline.check_file` that
``validate`` runs; a recipe without errors
also gets its :class:`~mldiag_provision.plan.stack.StackPlan` (built offline, as ``render``
builds it for a new work directory), from which the cross-recipe checks read every name.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldiag_provision.errors import Severity, UsageError

if TYPE_CHECKING:
    from mldiag_provision.pipeline import CheckResult
    from mldiag_provision.recipe.model import Recipe
    from mldiag_provision.recipe.sourcemap import Path as FieldPath
    from mldiag_provision.recipe.sourcemap import SourceMap

_KIND_RECIPE = re.compile(r"^kind:\s*[\"']?Recipe[\"']?\s*(#.*)?$", re.MULTILINE)
SUFFIXES = (".yaml", ".yml")


def looks_like_recipe(path: Path) -> bool:
    """True when ``path``'s top level has ``kind: Recipe`` (read as text: a broken recipe is
    still a recipe, and validate reports what is wrong with it)."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return _KIND_RECIPE.search(head) is not None


def discover(args: Sequence[str]) -> list[str]:
    """The recipe files that ``args`` (files, directories, globs) name, each once, in the
    order given (a directory's and a glob's files sorted).

    Raises:
      UsageError: an argument names nothing (a missing file, an empty glob, a directory
        without recipes).
    """
    found: dict[str, None] = {}
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            files = [str(p) for p in sorted(path.rglob("*"))
                     if p.suffix in SUFFIXES and p.is_file() and looks_like_recipe(p)]
            if not files:
                raise UsageError(f"{arg}: no recipe (*.yaml with kind: Recipe) in this "
                                 "directory", hint="name the recipe files or a glob")
        elif path.is_file():
            files = [arg]
        elif glob.has_magic(arg):
            files = [p for p in sorted(glob.glob(arg, recursive=True))
                     if Path(p).is_file() and p.endswith(SUFFIXES)
                     and looks_like_recipe(Path(p))]
            if not files:
                raise UsageError(f"{arg}: the glob matches no recipe (*.yaml with kind: "
                                 "Recipe)",
                                 hint="quote the glob so that the shell does not expand it")
        elif path.exists():
            raise UsageError(f"{arg}: not a regular file (a named pipe, device or socket)",
                             hint="name the recipe files themselves, or a directory of them")
        else:
            raise UsageError(f"{arg}: no such file or directory", hint="check the path")
        for f in files:
            found.setdefault(f, None)
    return list(found)


@dataclass
class Member:
    """One recipe of the fleet after preflight (and plan, when preflight found no error).

    ``plan``: the plan's JSON-ready data (``StackPlan.to_dict()``, what ``.mldiag/plan.json``
    holds); ``None`` when the recipe has errors or could not be read.
    """

    file: str
    check: CheckResult | None
    plan: dict[str, Any] | None = None
    read_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def recipe(self) -> Recipe | None:
        return self.check.parsed.recipe if self.check is not None else None

    @property
    def sourcemap(self) -> SourceMap | None:
        return self.check.parsed.sourcemap if self.check is not None else None

    @property
    def errors(self) -> int:
        if self.check is None:
            return 1
        return sum(p.severity is Severity.ERROR for p in self.check.report.problems)

    def data(self) -> object:
        """The recipe file as plain YAML data (read once; ``None`` when unreadable)."""
        if "data" not in self.extra:
            import yaml

            try:
                self.extra["data"] = yaml.safe_load(Path(self.file).read_text(encoding="utf-8"))
            except (OSError, ValueError, yaml.YAMLError):  # ValueError: not UTF-8
                self.extra["data"] = None
        return self.extra["data"]

    def where(self, candidates: Iterable[FieldPath]) -> tuple[str, int, int]:
        """(dotted path, line, column) of the first of ``candidates`` the file writes; the
        last candidate (located even when not written: its nearest written ancestor) when
        none is written."""
        from mldiag_provision.recipe.sourcemap import format_path

        paths = list(candidates)
        sm = self.sourcemap
        if sm is None:
            return format_path(paths[-1]), 0, 0
        for p in paths:
            if sm.has_key(p):
                line, col = sm.locate(p)
                return format_path(p), line, col
        line, col = sm.locate(paths[-1])
        return format_path(paths[-1]), line, col


def load(files: Sequence[str]) -> list[Member]:
    """Check (and plan) every file; never raises for a bad recipe (its problems are in
    ``Member.check``; an unreadable file has ``read_error``)."""
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.errors import MldiagError
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan

    catalog = load_catalog()
    members = []
    for f in files:
        try:
            res = check_file(f, catalog)
        except MldiagError as exc:
            members.append(Member(file=f, check=None, read_error=exc.message))
            continue
        member = Member(file=f, check=res)
        if res.parsed.recipe is not None and member.errors == 0:
            stack = build_plan(res.parsed.recipe, res.shapes, catalog)
            member.extra["stack"] = stack  # the StackPlan itself (render reads it)
            member.plan = stack.to_dict()
        members.append(member)
    return members
