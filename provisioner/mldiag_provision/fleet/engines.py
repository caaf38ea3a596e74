"""The shapes CI engines read: a job matrix per engine, and Atlantis's ``atlantis.yaml``.

- ``github-actions``: ``{"include": [{...}, ...]}``, the object ``strategy.matrix`` takes
  through ``fromJSON`` (https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#jobsjob_idstrategymatrixinclude);
  only ``include`` at the top level (any other key would become a matrix dimension).
- ``cloud-build``: ``{"builds": [{"substitutions": {"_RECIPE": ..., "_STACK": ...}}]}``:
  one ``gcloud builds submit --substitutions`` per entry (Cloud Build has no matrix).
- ``atlantis``: one ``atlantis plan -p PROJECT`` comment line per recipe, for the projects
  of :func:`atlantis_config`.
- ``lines``: one recipe path per line (a shell loop).

:func:`atlantis_config` writes a repo-level ``atlantis.yaml`` (version 3) with the fields
documented at https://www.runatlantis.io/docs/repo-level-atlantis-yaml (projects) and
https://www.runatlantis.io/docs/custom-workflows (workflows, ``run`` steps and the
``PROJECT_NAME``/``PLANFILE`` variables they get).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

ENGINES = ("github-actions", "cloud-build", "atlantis", "lines")
WORKFLOW = "mldiag-provision"
"""Name of the Atlantis custom workflow :func:`atlantis_config` writes."""
STACKS_DIR = "stacks"
"""Where the examples keep each recipe's work directory: ``stacks/<recipe path without
its suffix>``."""


def stack_dir(recipe: str) -> str:
    """``teams/a/train.yaml`` -> ``stacks/teams/a/train``: the recipe's work directory."""
    return str(PurePosixPath(STACKS_DIR) / PurePosixPath(recipe).with_suffix(""))


def job_id(recipe: str) -> str:
    """A name for the recipe usable where ``/`` is not (artifact names, job ids):
    ``teams/a/train.yaml`` -> ``teams-a-train``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(PurePosixPath(recipe).with_suffix(""))).strip("-")


def entry(recipe: str, name: str | None, project: str | None, reasons: Sequence[str]
          ) -> dict[str, str]:
    """One matrix entry: the recipe path (relative to the repository root), its stack's
    work directory and id, metadata.name and project (empty when unreadable), why."""
    return {"recipe": recipe, "stack": stack_dir(recipe), "id": job_id(recipe),
            "name": name or "", "project": project or "", "reason": "; ".join(reasons)}


def matrix(entries: Sequence[Mapping[str, str]], engine: str) -> str:
    """The matrix text for ``engine`` (one of :data:`ENGINES`)."""
    if engine == "github-actions":
        return json.dumps({"include": list(entries)}, indent=2)
    if engine == "cloud-build":
        return json.dumps({"builds": [{"substitutions": {"_RECIPE": e["recipe"],
                                                         "_STACK": e["stack"]}}
                                      for e in entries]}, indent=2)
    if engine == "atlantis":
        return "".join(f"atlantis plan -p {e['recipe']}\n" for e in entries).rstrip("\n")
    if engine == "lines":
        return "\n".join(e["recipe"] for e in entries)
    raise ValueError(f"unknown engine {engine!r}")


def atlantis_config(recipes: Sequence[tuple[str, Sequence[str]]],
                    tool_paths: Sequence[str], command: str = "mldiag-provision"
                    ) -> dict[str, Any]:
    """A repo-level ``atlantis.yaml`` (version 3): one project per recipe, every project on
    the custom workflow :data:`WORKFLOW`, whose ``run`` steps call this tool.

    Args:
      recipes: (recipe path relative to the repository root, the paths that also re-plan it:
        its policy directories, relative to the root, ending in ``/``).
      tool_paths: paths whose change re-plans every project (the tool's own files).
    Each project is ``dir: .`` with ``name`` = the recipe path (Atlantis requires a name
    when several projects share a dir and workspace); ``autoplan.when_modified`` (relative
    to ``dir``, .dockerignore syntax) lists the recipe, its policy directories and the
    tool's paths. The ``run`` steps read ``$PROJECT_NAME`` (the recipe) and write the plan
    summary to ``$PLANFILE``, where Atlantis expects a plan before it allows ``apply``.
    """
    def when(paths: Sequence[str]) -> list[str]:
        return [p + "**" if p.endswith("/") else p for p in paths]

    projects = [{"name": recipe, "dir": ".", "workflow": WORKFLOW,
                 "autoplan": {"enabled": True,
                              "when_modified": [recipe, *when(extra), *when(tool_paths)]}}
                for recipe, extra in recipes]
    work = f'"{STACKS_DIR}/${{PROJECT_NAME%.*}}"'
    plan = (f'{command} plan "$PROJECT_NAME" -o {work} --output markdown > "$PLANFILE"; '
            'rc=$?; cat "$PLANFILE"; exit $rc')
    apply = f'{command} apply "$PROJECT_NAME" -o {work} --auto-approve'
    return {"version": 3, "automerge": False, "parallel_plan": True, "parallel_apply": False,
            "projects": projects,
            "workflows": {WORKFLOW: {
                "plan": {"steps": [{"run": f"{command} validate \"$PROJECT_NAME\""},
                                   {"run": plan}]},
                "apply": {"steps": [{"run": apply}]}}}}


def atlantis_yaml(config: Mapping[str, Any]) -> str:
    """``config`` as YAML text, with a banner saying how it was made."""
    import yaml

    banner = ("# Generated by `mldiag-provision fleet atlantis`: one project per recipe, "
              "planned and\n# applied by mldiag-provision (custom workflow). Regenerate "
              "after adding or moving a recipe.\n")
    return banner + yaml.safe_dump(dict(config), sort_keys=False, width=100)
