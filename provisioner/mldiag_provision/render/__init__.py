"""Render: a :class:`~mldiag_provision.plan.types.StackPlan` -> the stack's files.

Light on purpose: the names here are read by the layers above (the policy gate) without
importing the renderer.
"""

POLICY_JSON = ".mldiag/policy.json"
"""Where a rendered stack keeps its recipe's ``spec.policy`` (only when the recipe has one);
the policy gate's DIR mode reads it back."""
