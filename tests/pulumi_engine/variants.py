"""Recipe variants that reach the template branches no example recipe takes (custom IAM role,
Log Analytics off, a flex-start node pool, a Diagon chart, reused service account and bucket,
no deletion protection), for the program and parity tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from stack_support import REPO_ROOT

STANDARD = REPO_ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml"
AUTOPILOT = REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"
SLURM = REPO_ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"


def _standard_custom_role(spec: dict[str, Any]) -> None:
    spec["diagnostics"]["iam"] = {"mode": "custom-role", "customRoleId": "mldiagWorkload"}
    spec["diagnostics"]["logAnalytics"] = {"enabled": False}
    spec["slices"][0]["capacity"] = {"type": "flex-start"}
    spec["orchestrator"]["deletionProtection"] = False
    spec["diagnostics"]["diagon"] = {"chart": "diagon", "version": "0.1.0",
                                     "repository": "https://charts.example.com/diagon",
                                     "values": {"image.tag": "v1", "hostNetwork": "true"}}


def _autopilot_reused(spec: dict[str, Any]) -> None:
    spec["diagnostics"] = {**(spec.get("diagnostics") or {}),
                           "serviceAccount": {"name": "existing-sa", "create": False},
                           "profilesBucket": {"name": "existing-profiles", "create": False}}


def _slurm_custom_role(spec: dict[str, Any]) -> None:
    spec["diagnostics"] = {**(spec.get("diagnostics") or {}),
                           "iam": {"mode": "custom-role", "customRoleId": "mldiagNodes"}}
    spec["orchestrator"]["deletionProtection"] = False


# name -> (base recipe, change, needs objects that exist before the stack)
VARIANTS = {
    "standard-custom-role-flex-start": (STANDARD, _standard_custom_role, False),
    "autopilot-reused-account-and-bucket": (AUTOPILOT, _autopilot_reused, True),
    "slurm-custom-role": (SLURM, _slurm_custom_role, False),
}


def write_variant(name: str, dest: Path) -> Path:
    base, change, _ = VARIANTS[name]
    doc = yaml.safe_load(base.read_text(encoding="utf-8"))
    change(doc["spec"])
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return dest
