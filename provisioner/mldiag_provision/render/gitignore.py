"""The ``.gitignore`` that makes a work directory safe to commit.

A work directory holds two kinds of files:

* **generated code**, safe and meant to be committed: every file listed in
  ``.mldiag/manifest.json`` (the Terraform roots and modules, ``k8s/``, ``slurm/``, the
  README, ``.mldiag/plan.json``, ``.mldiag/policy.json``, the manifest itself and this
  ``.gitignore``), plus
  Terraform's dependency lock file ``.terraform.lock.hcl``, which HashiCorp asks to be
  committed ("You should include this file in your version control repository",
  https://developer.hashicorp.com/terraform/language/files/dependency-lock);
* **local state**, never to be committed: Terraform's working directory ``.terraform/``
  (provider binaries, module copies, the backend config), local state and its backups
  (state holds every attribute in plain text, secrets included:
  https://developer.hashicorp.com/terraform/language/state/sensitive-data), saved plans
  (they hold the planned values, secrets included:
  https://developer.hashicorp.com/terraform/cli/commands/plan#out-filename), crash logs,
  override files (``destroy`` writes one for a single update-only apply), and everything
  else this tool keeps under ``.mldiag/``: logs, saved plans and their summaries, the lock,
  the render stamp, the init stamp, the workloads inventory and the cluster CA file.

Every local file of the tool lives under ``.mldiag/`` (``agents/.mldiag/`` for the second
stage); Terraform's own stay where Terraform puts them. The ignore rules below keep all of
them out of ``git add`` while re-including the two committed ``.mldiag`` files (a directory
whose *contents* are ignored, ``.mldiag/*``, lets ``!`` rules re-include files; an ignored
directory, ``.mldiag/``, would not: https://git-scm.com/docs/gitignore#_pattern_format).
"""

from __future__ import annotations

import fnmatch
from pathlib import PurePosixPath

PATH = ".gitignore"

# (comment, patterns); anchored patterns contain a "/" before the end (git semantics)
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Terraform's working directories: provider binaries, module copies, backend settings",
     (".terraform/",)),
    ("local state and its backups: every attribute in plain text, secrets included",
     ("*.tfstate", "*.tfstate.*")),
    ("saved plans: the planned values, secrets included", ("*.tfplan", "tfplan")),
    ("crash logs", ("crash.log", "crash.*.log")),
    ("override files (destroy writes one for a single update-only apply)",
     ("override.tf", "override.tf.json", "*_override.tf", "*_override.tf.json")),
    ("this tool's local files: logs, saved plans, lock, stamps, inventory, cluster CA; the "
     "stack's decisions (plan.json), policy settings (policy.json) and the manifest are "
     "generated code and stay",
     ("/.mldiag/*", "!/.mldiag/plan.json", "!/.mldiag/policy.json", "!/.mldiag/manifest.json",
      "/agents/.mldiag/")),
)

KEEP_NOTE = ("Commit everything else, including .terraform.lock.hcl (Terraform's dependency "
             "lock file).")


def text(banner: str) -> str:
    """The ``.gitignore`` file (``banner``: the "generated, do not edit" comment line)."""
    lines = [banner, "# Keeps this work directory's local state out of git. " + KEEP_NOTE]
    for comment, patterns in _RULES:
        lines += ["", f"# {comment}", *patterns]
    return "\n".join(lines) + "\n"


def _matches(pattern: str, rel: str) -> bool:
    """Whether one (non-negated) pattern of :data:`_RULES` ignores ``rel`` (a POSIX path
    relative to the work directory). Only the pattern forms used above are supported:
    ``name/`` (a directory at any depth), ``/a/b`` and ``/a/*`` (anchored), ``*.x`` (any
    depth)."""
    parts = PurePosixPath(rel).parts
    if pattern.endswith("/") and not pattern.startswith("/"):
        return pattern.rstrip("/") in parts[:-1]
    if pattern.startswith("/"):
        anchored = pattern.lstrip("/").rstrip("/")
        if pattern.endswith("/"):
            n = len(PurePosixPath(anchored).parts)
            return "/".join(parts[:n]) == anchored and len(parts) > n
        n = len(PurePosixPath(anchored).parts)
        return len(parts) >= n and fnmatch.fnmatchcase("/".join(parts[:n]), anchored)
    return fnmatch.fnmatchcase(parts[-1], pattern)


def is_local(rel: str) -> bool:
    """True when the ``.gitignore`` written by :func:`text` keeps ``rel`` out of git (the
    last matching rule wins, as in git)."""
    ignored = False
    for _, patterns in _RULES:
        for pattern in patterns:
            if pattern.startswith("!"):
                if _matches(pattern[1:], rel):
                    ignored = False
            elif _matches(pattern, rel):
                ignored = True
    return ignored
