"""A stack's work directory: what was rendered into it, and (re-)rendering a recipe there.

Layout (docs/design/rendered-stack.md): the project root module at the top, ``agents/`` (the
in-cluster stage), ``k8s/workloads/`` (the workloads stage), ``.mldiag/`` (plan.json,
manifest.json, the render stamp, logs, saved plans, the workloads inventory).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldiag_provision.errors import ConflictError, InputError, Problem, UsageError

RENDER_STAMP = ".mldiag/render-stamp.json"
PLAN_JSON = ".mldiag/plan.json"


def saved_plan(workdir: Path) -> dict[str, Any] | None:
    """``DIR/.mldiag/plan.json`` as data (every decision of the last render), or None."""
    try:
        data = json.loads((workdir / PLAN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recipe_name_in(workdir: Path) -> str | None:
    """The name of the recipe whose stack ``workdir`` holds, or None."""
    data = saved_plan(workdir)
    name = data.get("name") if data else None
    return name if isinstance(name, str) else None


def decisions(workdir: Path) -> list[str]:
    """What the plan decided for the rendered stack (slices, GKE version, agents strategy)."""
    data = saved_plan(workdir) or {}
    return [str(d) for d in data.get("decisions", [])]


def _walk(root: Path) -> Iterator[str]:
    """``path:size:mtime`` of every file under ``root`` (bytecode caches skipped)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            yield f"{full}:{st.st_size}:{st.st_mtime_ns}\n"


def render_inputs_digest(recipe_text: str) -> str:
    """What a render depends on: the recipe, and (by path, size and mtime) the package code,
    its catalog data, blueprints and modules. Equal digests give byte-identical trees."""
    from mldiag_provision import __version__
    from mldiag_provision.resources import data_root

    h = hashlib.sha256(f"{__version__}\n{recipe_text}".encode())
    pkg = Path(__file__).resolve().parents[1]
    for root in (pkg, data_root() / "blueprints", data_root() / "modules"):
        for entry in sorted(_walk(root)):
            h.update(entry.encode())
    return h.hexdigest()


def _up_to_date(workdir: Path, digest: str) -> bool:
    from mldiag_provision.render.writer import edited_files

    try:
        stamp = json.loads((workdir / RENDER_STAMP).read_text(encoding="utf-8"))
        files = json.loads((workdir / ".mldiag/manifest.json").read_text(
            encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if stamp.get("digest") != digest:
        return False
    return all((workdir / rel).is_file() for rel in files) and not edited_files(workdir)


def read_recipe(path: str) -> str:
    """The recipe's text.

    Raises:
      UsageError: the file cannot be read (with the usual hint).
    """
    from mldiag_provision.pipeline import read_text

    return read_text(path)[1]


@dataclass(frozen=True)
class RenderOutcome:
    """What :func:`render_into` did.

    ``cached``: the tree was already what a render would write (nothing re-checked);
    ``changed``: files written or removed; ``problems``: warnings of the preflight;
    ``sourcemap``: positions of the recipe's fields, for showing problems.
    """

    workdir: Path
    name: str
    decisions: tuple[str, ...]
    cached: bool
    changed: int = 0
    problems: tuple[Problem, ...] = ()
    sourcemap: Any = None


class RecipeInvalid(InputError):
    """The recipe has errors: nothing was rendered. Carries the sourcemap for display."""

    def __init__(self, message: str, *, problems: list[Problem], sourcemap: Any) -> None:
        super().__init__(message, problems=problems)
        self.sourcemap = sourcemap


def render_into(workdir: Path, recipe_path: str, *, force: bool = False,
                before_write: Callable[[str], None] | None = None) -> RenderOutcome:
    """Preflight ``recipe_path`` and (re-)render it into ``workdir``.

    When neither the recipe nor the tool changed since the last render of this directory
    (and no rendered file was edited or removed), preflight and render are skipped.
    ``before_write``: called with the plan's engine name (``terraform``, ``pulumi``) after
    the recipe was checked and planned and before anything is written; what it raises stops
    the render with ``workdir`` as it was.

    Raises:
      RecipeInvalid: the recipe has errors (``problems`` and ``sourcemap`` attached).
      ConflictError: the directory holds another recipe's stack, or edited files.
      UsageError: the recipe cannot be read.
    """
    recipe_text = read_recipe(recipe_path)
    digest = render_inputs_digest(recipe_text)
    if _up_to_date(workdir, digest):
        return RenderOutcome(workdir, recipe_name_in(workdir) or "?",
                             tuple(decisions(workdir)), cached=True)
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.pipeline import check_file
    from mldiag_provision.plan.stack import build_plan
    from mldiag_provision.policy import policy_data
    from mldiag_provision.render.stack import GENERATOR, render_stack
    from mldiag_provision.render.writer import write_tree

    catalog = load_catalog()
    res = check_file(recipe_path, catalog)
    errors = [p for p in res.report.problems if p.severity.value == "error"]
    if errors or res.parsed.recipe is None:
        raise RecipeInvalid(f"nothing changed: {len(errors)} error(s) in {res.report.file}",
                            problems=list(res.report.problems),
                            sourcemap=res.parsed.sourcemap)
    recipe = res.parsed.recipe
    existing = recipe_name_in(workdir)
    if existing is not None and existing != recipe.metadata.name:
        raise ConflictError(
            f"{workdir} holds the stack of recipe '{existing}', not '{recipe.metadata.name}'",
            hint="use the work directory of this recipe (-o), or a new one")
    from mldiag_provision.plan.previous import previous_plan_of, render_time_problems

    # the stack already in the directory keeps the names it has (issue 25)
    plan = build_plan(recipe, res.shapes, catalog,
                      previous_plan_of(workdir, recipe.metadata.name))

    # checks against the stack already in the directory (before its plan.json is replaced)
    problems = (*res.report.problems,
                *render_time_problems(workdir, recipe, res.parsed.sourcemap))
    if before_write is not None:
        before_write(plan.engine)
    written = write_tree(workdir, render_stack(plan, policy=policy_data(recipe)),
                         generator=GENERATOR, stack=plan.name, force=force)
    from mldiag_provision import ondisk

    ondisk.write_state(workdir / RENDER_STAMP, (json.dumps({"digest": digest}) + "\n").encode())
    return RenderOutcome(workdir, recipe.metadata.name, tuple(plan.decisions), cached=False,
                         changed=len(written.written) + len(written.removed),
                         problems=problems, sourcemap=res.parsed.sourcemap)


def check_workdir_recipe(workdir: Path, recipe_path: str | None) -> str:
    """The stack name in ``workdir``, checked against the recipe's ``metadata.name`` when the
    recipe can still be read (a deleted or invalid recipe is fine: the work directory's own
    plan is what counts).

    Raises:
      UsageError: ``workdir`` holds no rendered stack.
      ConflictError: the recipe names another stack.
    """
    name = recipe_name_in(workdir)
    if name is None:
        raise UsageError(f"{workdir} holds no rendered stack",
                         hint=f"run `mldiag-provision apply {recipe_path or 'RECIPE'} -o "
                              f"{workdir}` first")
    wanted = None
    if recipe_path:
        try:
            import yaml

            doc = yaml.safe_load(Path(recipe_path).read_text(encoding="utf-8"))
            wanted = doc["metadata"]["name"]
        except Exception:  # unreadable or invalid: `validate` explains it; the dir decides
            wanted = None
    if isinstance(wanted, str) and wanted != name:
        raise ConflictError(f"{workdir} holds the stack of recipe '{name}', not '{wanted}'",
                            hint="use the work directory of this recipe (-o)")
    return name
