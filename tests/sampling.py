"""The representative samples the default test run uses in place of a full set, and the
switch to the full sets (docs/testing.md).

``MLDIAG_FULL=1`` in the environment runs every case (every example recipe in the Pulumi
parity test, 2,000 fuzz inputs per entry point); without it, a sample chosen by a stated
rule, never at random:

* :func:`recipe_families`: the families an example recipe stands for, read from the
  recipe itself: orchestrator type, engine, accelerator kind on that orchestrator (TPU and
  GPU node pools take different template branches), capacity type, workload kind,
  multi-slice or not, agents strategy, each orchestrator option and each optional top-level
  section it sets;
* :func:`cover`: the smallest set a greedy set cover finds: take the case that covers the
  most families not yet covered (ties: the first name in sorted order), until every family
  of any case is covered.

tests/unit/test_samples.py asserts that each sample covers every family of its full set.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml


def full_sets() -> bool:
    """Whether this run takes the full sets: ``MLDIAG_FULL=1`` in the environment."""
    return os.environ.get("MLDIAG_FULL") == "1"


FULL = full_sets()

# spec keys every recipe has: not a family of their own
_COMMON_SECTIONS = frozenset({"project", "region", "zone", "orchestrator", "slices",
                              "workloads", "diagnostics"})


def recipe_families(recipe: Path) -> set[str]:
    """The families ``recipe`` (an example recipe file) belongs to, as ``kind:value``
    strings, e.g. ``{"orchestrator:gke-standard", "accelerator:gke-standard/tpu",
    "capacity:spot",
    "workload:JobSet", "multislice:no", "agents:manual", "option:private", ...}``.
    Raises KeyError on a recipe without ``spec.orchestrator.type``."""
    spec: dict[str, Any] = yaml.safe_load(recipe.read_text(encoding="utf-8"))["spec"]
    orch = spec["orchestrator"]
    out = {f"orchestrator:{orch['type']}",
           f"engine:{(spec.get('engine') or {}).get('name', 'terraform')}",
           f"agents:{(spec.get('diagnostics') or {}).get('agents', 'default')}"}
    slices = spec.get("slices") or []
    for s in slices:
        out.add(f"accelerator:{orch['type']}/" + ("gpu" if "gpu" in s else "tpu"))
        out.add(f"capacity:{(s.get('capacity') or {}).get('type', 'on-demand')}")
    out.add("multislice:" + ("yes" if any(int(s.get("count", 1)) > 1 for s in slices)
                             else "no"))
    for w in spec.get("workloads") or []:
        out.add(f"workload:{w.get('kind', 'default')}")
    out |= {f"option:{k}" for k in orch if k != "type"}
    out |= {f"section:{k}" for k in spec if k not in _COMMON_SECTIONS}
    return out


def fast_sample(recipes: Iterable[Path]) -> set[str]:
    """The example recipes (stems) that a per-example test keeps in the fast lane, its other
    cases being marked ``slow``: the first by name of each orchestrator and accelerator kind
    pair (the ``accelerator:<orchestrator>/<tpu|gpu>`` families of :func:`recipe_families`),
    so the lane still runs every orchestrator with each accelerator kind it serves."""
    first: dict[str, str] = {}
    for recipe in sorted(recipes, key=lambda p: p.stem):
        for family in sorted(recipe_families(recipe)):
            if family.startswith("accelerator:"):
                first.setdefault(family, recipe.stem)
    return set(first.values())


def cover(families: Mapping[str, set[str]]) -> list[str]:
    """Greedy set cover of ``families`` (case name -> its families): the names picked, in
    the order picked; every family of any case is in the union of the picked ones."""
    left = set().union(*families.values()) if families else set()
    picked: list[str] = []
    while left:
        best = min(sorted(families), key=lambda n: -len(families[n] & left))
        picked.append(best)
        left -= families[best]
    return picked
