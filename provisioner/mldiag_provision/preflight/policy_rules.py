"""Recipe rule of the policy gate's settings: ``spec.policy.directories`` name directories of
Rego policies, relative to the recipe file (``<stdin>``: the current directory), that the gate
loads with the bundled ones (``policy/gate.py`` ``load_modules``).

``validate`` used to accept a directory that does not exist; the gate then refused it only
at ``plan``/``apply``/``policy`` time, after rendering. Preflight now says so with the recipe
line: a directory that is missing, is not a directory, or holds no ``*.rego`` policy (files
ending ``_test.rego`` are tests, not policies, as the gate reads them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from mldiag_provision.errors import Problem
from mldiag_provision.preflight.context import Context, rule

_EXPECTED = "a directory, relative to the recipe file, holding *.rego policy files"


def recipe_base(file: str) -> Path:
    """The directory ``spec.policy.directories`` are relative to: the recipe file's folder
    (resolved), or the current directory for ``<stdin>``, as the gate resolves them
    (:func:`mldiag_provision.policy.gate.settings_for`)."""
    if file in ("<stdin>", "-", ""):
        return Path.cwd()
    return Path(file).resolve().parent


def _has_policy(directory: Path) -> bool:
    for _root, _dirs, files in os.walk(directory):
        if any(f.endswith(".rego") and not f.endswith("_test.rego") for f in files):
            return True
    return False


@rule("policy-directories")
def policy_directories(ctx: Context) -> Iterator[Problem]:
    """Each policy directory of ``spec.policy.directories`` exists and holds a policy."""
    policy = ctx.recipe.spec.policy
    if policy is None or not policy.directories:
        return
    base = recipe_base(ctx.sourcemap.file)
    for i, name in enumerate(policy.directories):
        path = ("spec", "policy", "directories", i)
        where = base / name
        if not where.exists():
            yield ctx.problem("policy-directories", path,
                              f"policy directory '{name}' does not exist (looked for {where})",
                              value=name, expected=_EXPECTED,
                              hint="fix the path (it is relative to the recipe file), create "
                                   "the directory, or remove the entry")
        elif not where.is_dir():
            yield ctx.problem("policy-directories", path,
                              f"policy directory '{name}' is a file, not a directory ({where})",
                              value=name, expected=_EXPECTED,
                              hint="name the directory that holds the file")
        elif not _has_policy(where):
            yield ctx.problem("policy-directories", path,
                              f"policy directory '{name}' holds no *.rego policy ({where}; "
                              "*_test.rego files are tests)",
                              value=name, expected=_EXPECTED,
                              hint="add the policies, or remove the entry")
