"""Which recipes a change affects: ``fleet matrix --changed-since REF``.

A recipe is affected when (each reason is kept, in words, for the output):
- its file was edited since REF;
- a file under one of its ``spec.policy.directories`` was edited;
- a ``--shared`` path it reads was edited (a file every recipe reads, e.g. a constraints
  file pinning the tool's version);
- the tool itself changed (:data:`TOOL_PATHS`, or ``--tool-path``): then every recipe is
  affected, and each entry says why.

"Edited since REF" is ``git diff --name-only REF...HEAD`` (what a pull request changes
against its base: from the merge base, so commits on the base branch after the fork do not
count), run through :class:`~mldiag_provision.runner.CommandRunner`. A deleted recipe is not
listed (it has no file to plan; destroying its stack is a separate, deliberate step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mldiag_provision.errors import UsageError

TOOL_PATHS = ("pyproject.toml", "provisioner/", "blueprints/", "modules/")
"""Paths (relative to the repository root; a trailing ``/`` is a directory) whose change is
a change to mldiag-provision itself, which may change every recipe's stack."""


@dataclass(frozen=True)
class Affected:
    """One recipe the change affects; ``reasons``: why, in words."""

    file: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    """What ``git diff`` listed, and whether the tool itself is among it."""

    ref: str | None
    paths: tuple[str, ...]
    """Edited paths relative to the repository root."""
    tool: tuple[str, ...]
    """Those of :attr:`paths` that are the tool's (every recipe is affected)."""


def git_root(cwd: Path) -> Path:
    """The top of the git work tree ``cwd`` is in.

    Raises:
      UsageError: ``cwd`` is not in a git work tree, or git is missing.
    """
    out = _git(["rev-parse", "--show-toplevel"], cwd, "find the repository root")
    return Path(out.strip())


def _git(args: Sequence[str], cwd: Path, task: str) -> str:
    from mldiag_provision.runner import CommandRunner

    try:
        res = CommandRunner(None).run(["git", *args], cwd=cwd, task=f"git: {task}",
                                      capture=True)
    except FileNotFoundError:
        raise UsageError("git is not installed", hint="install git, or leave out "
                                                      "--changed-since") from None
    if res.returncode != 0:
        tail = " ".join(res.stderr_tail[-3:]) or f"exit {res.returncode}"
        raise UsageError(f"git {' '.join(args)} failed: {tail}",
                         hint="fetch the base first (actions/checkout with fetch-depth: 0, "
                              "or git fetch origin BASE), and name it, e.g. "
                              "--changed-since origin/main")
    return res.stdout or ""


def changed_paths(ref: str, cwd: Path, tool_paths: Sequence[str] = TOOL_PATHS) -> Change:
    """``git diff --name-only REF...HEAD`` in ``cwd``'s repository.

    Raises:
      UsageError: not a git repository, or REF unknown.
    """
    if ref.startswith("-"):
        raise UsageError(f"--changed-since {ref!r}: not a git revision",
                         hint="e.g. --changed-since origin/main")
    out = _git(["diff", "--name-only", "--no-renames", f"{ref}...HEAD", "--"], cwd,
               f"paths changed since {ref}")
    paths = tuple(sorted({p for p in out.splitlines() if p.strip()}))
    tool = tuple(p for p in paths if _matches(p, tool_paths))
    return Change(ref, paths, tool)


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """``path`` is one of ``patterns`` or lies under one ending in ``/``."""
    for pat in patterns:
        pat = pat.strip().lstrip("./") if pat not in (".", "./") else ""
        if not pat:
            continue
        if pat.endswith("/") and path.startswith(pat):
            return True
        if path == pat.rstrip("/") or path.startswith(pat.rstrip("/") + "/"):
            return True
    return False


def policy_directories(file: str, data: object) -> list[Path]:
    """The resolved ``spec.policy.directories`` of a recipe (its raw YAML ``data``),
    relative to the recipe file, as the policy gate reads them; [] when it has none or the
    recipe is too broken to say."""
    spec = data.get("spec") if isinstance(data, dict) else None
    policy = spec.get("policy") if isinstance(spec, dict) else None
    dirs = policy.get("directories") if isinstance(policy, dict) else None
    if not isinstance(dirs, list):
        return []
    base = Path(file).resolve().parent
    return [(base / d).resolve() for d in dirs if isinstance(d, str) and d.strip()]


def affected(files: Sequence[str], data: Sequence[object], change: Change | None, root: Path,
             shared: Sequence[str] = ()) -> list[Affected]:
    """The recipes among ``files`` (with their raw YAML ``data``, same order) that
    ``change`` affects, in the order given. ``change`` ``None``: every recipe ("no
    --changed-since"). ``shared``: paths (relative to ``root``) every recipe reads."""
    if change is None:
        return [Affected(f, ("every recipe (no --changed-since)",)) for f in files]
    if change.tool:
        shown = ", ".join(change.tool[:3]) + (f" and {len(change.tool) - 3} more"
                                              if len(change.tool) > 3 else "")
        return [Affected(f, (f"the tool changed ({shown}): every recipe is affected",))
                for f in files]
    edited = {(root / p).resolve() for p in change.paths}
    shared_hit = [p for p in change.paths if _matches(p, shared)]
    out = []
    for f, doc in zip(files, data, strict=True):
        reasons = []
        if Path(f).resolve() in edited:
            reasons.append("recipe edited")
        for d in policy_directories(f, doc):
            hits = sorted(str(e.relative_to(root)) for e in edited if e.is_relative_to(d))
            if hits:
                where = d.relative_to(root) if d.is_relative_to(root) else d
                reasons.append(f"policy directory {where} edited ({', '.join(hits[:3])})")
        if shared_hit:
            reasons.append(f"shared file edited ({', '.join(shared_hit[:3])})")
        if reasons:
            out.append(Affected(f, tuple(reasons)))
    return out
