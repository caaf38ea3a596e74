"""The stages of a stack, in apply order; ``destroy`` runs them in reverse.

  * ``project``: the root Terraform module (APIs, IAM, Log Analytics, bucket, cluster or
    Slurm cluster);
  * ``cluster``: ``agents/``, a second Terraform root with its own state whose providers read
    the now existing cluster (namespace label, KSA, the agents strategy, the add-ons the
    workloads need, e.g. the JobSet controller);
  * ``workloads``: ``k8s/workloads/*.yaml``, server-side applied with the Kubernetes client.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldiag_provision import engines
from mldiag_provision.engines import PlanResult


class StageName(enum.StrEnum):
    PROJECT = "project"
    CLUSTER = "cluster"
    WORKLOADS = "workloads"


ORDER = (StageName.PROJECT, StageName.CLUSTER, StageName.WORKLOADS)


@dataclass(frozen=True)
class Stage:
    """One stage of a rendered stack: its name, where it lives, what it does (in words)."""

    name: StageName
    path: Path
    summary: str

    @property
    def engine_driven(self) -> bool:
        """The stack's engine applies this stage (project, cluster); the workloads stage is
        server-side applied with the Kubernetes client."""
        return self.name is not StageName.WORKLOADS


def stages_of(workdir: Path, saved: dict[str, Any] | None) -> list[Stage]:
    """The stages the rendered tree in ``workdir`` has, in apply order (the cluster stage
    when ``agents/`` holds the stack engine's marker file, e.g. Terraform's ``main.tf``)."""
    saved = saved or {}
    out = [Stage(StageName.PROJECT, workdir, "project stack: " + str(saved.get("blueprint",
                                                                           "?")))]
    unit = engines.find(str(saved.get("engine") or "terraform"))
    marker = unit.marker if unit is not None else "main.tf"
    if (workdir / "agents" / marker).is_file():
        agents = saved.get("agents") or {}
        addons = ", ".join(a.get("name", "?") if isinstance(a, dict) else str(a)
                           for a in agents.get("addons", []) or [])
        out.append(Stage(StageName.CLUSTER, workdir / "agents",
                         f"in-cluster stage: agents {agents.get('strategy', '?')}"
                         + (f", add-ons {addons}" if addons else "")
                         + ", workload namespace and KSA"))
    files = sorted((workdir / "k8s" / "workloads").glob("*.yaml"))
    if files:
        out.append(Stage(StageName.WORKLOADS, workdir / "k8s" / "workloads",
                         "workloads: " + ", ".join(f.stem for f in files)))
    return out


@dataclass
class StagePlan:
    """What one stage would do.

    ``status``: ``planned`` (``plan`` holds the changes), ``deferred`` (it can only be
    planned once the stage before it is applied: ``reason`` says why), or ``absent``
    (nothing to do: e.g. nothing of it exists on destroy).
    """

    stage: Stage
    status: str
    plan: PlanResult | None = None
    reason: str = ""

    @property
    def has_changes(self) -> bool:
        return self.status == "deferred" or bool(self.plan and self.plan.has_changes)

    def to_dict(self) -> dict[str, Any]:
        return {"stage": str(self.stage.name), "status": self.status,
                "summary": self.stage.summary, "reason": self.reason or None,
                **({"plan": self.plan.to_dict()} if self.plan else {})}
