"""The policy gate: Rego policies over a rendered stack and its saved plan (see gate.py).

Light on purpose (imported by the ``policy`` command's DIR mode and by ``render``'s callers).
"""

from __future__ import annotations

from typing import Any

# where a stack keeps its recipe's spec.policy: render writes it, so render owns the name
from mldiag_provision.render import POLICY_JSON as POLICY_JSON


def policy_data(recipe: Any) -> dict[str, Any] | None:
    """``recipe.spec.policy`` as JSON-ready data (the recipe's camelCase keys), or None.
    Works on the validator's attribute objects and on the pydantic models alike."""
    policy = getattr(recipe.spec, "policy", None)
    if policy is None:
        return None
    data: dict[str, Any] = {
        "directories": list(policy.directories),
        "requiredLabels": list(policy.required_labels),
        "allowedRegions": list(policy.allowed_regions),
        "allowedZones": list(policy.allowed_zones),
        "allowDeletes": list(policy.allow_deletes),
        "waivers": [{"rule": w.rule, "reason": w.reason} for w in policy.waivers]}
    budget = getattr(policy, "max_hourly_cost", None)
    if budget is not None:  # only when set: stacks rendered without it keep their bytes
        data["maxHourlyCost"] = float(budget)
    return data
