"""The Terraform engine's files of a stack: the root module from the blueprint's
``templates:``, the modules it calls (``modules:``), and the second stage under ``agents/``
(``agents.templates`` / ``agents.modules``), each with the generated-file banner.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mldiag_provision.engines import RenderKit
    from mldiag_provision.plan.types import StackPlan


def terraform_files(plan: StackPlan, manifest: Mapping[str, Any], root: Path,
                    kit: RenderKit) -> dict[str, bytes]:
    """Relative path -> bytes of the Terraform part of the stack (the Terraform unit's
    :data:`~mldiag_provision.engines.StackRenderer`, called by ``render/``).

    Args:
      manifest: the blueprint's ``blueprint.yaml`` as data (``modules_when``: plan attribute
        -> modules copied only when that attribute of the plan is truthy).
      root: the data root holding ``blueprints/`` and ``modules/``.
      kit: the renderer's banner, template environment and module copier.
    Raises:
      jinja2.TemplateError: a template is broken (a bug here).
      FileNotFoundError: a module is missing from the installation.
    """
    banner, module_files = kit.banner, kit.module_files
    env = kit.template_env(root / "blueprints")
    files: dict[str, bytes] = {}
    for output, template in manifest["templates"].items():
        text = env.get_template(template).render(plan=plan, banner=banner("hcl", plan.name))
        files[output] = text.encode("utf-8")
    for module in manifest["modules"]:
        files.update(module_files(root / "modules", module, plan.name))
    for attribute, modules in (manifest.get("modules_when") or {}).items():
        # modules only some stacks call: included when the plan's attribute is truthy
        # (e.g. gpu_networks), so the other stacks keep their files
        if getattr(plan, attribute):
            for module in modules:
                files.update(module_files(root / "modules", module, plan.name))
    stage = manifest.get("agents")
    if stage and plan.agents is not None:
        for output, template in stage["templates"].items():
            text = env.get_template(template).render(plan=plan, banner=banner("hcl", plan.name))
            files[f"agents/{output}"] = text.encode("utf-8")
        for module in stage["modules"]:
            files.update({f"agents/{rel}": data for rel, data in
                          module_files(root / "modules", module, plan.name).items()})
    return files
