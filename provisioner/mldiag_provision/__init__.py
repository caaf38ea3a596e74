"""mldiag-provision: recipe -> preflight -> rendered Terraform stack for ML Diagnostics on TPUs.

The pipeline runs one way: ``recipe`` (load + model) -> ``preflight`` (rules over the
recipe and the TPU ``catalog``) -> ``plan`` (every decision, as data) -> ``render``
(templates only format what the plan decided).
"""

__version__ = "0.1.0"
