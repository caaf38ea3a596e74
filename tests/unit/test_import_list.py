"""What a cold ``validate`` of a TPU recipe imports (issue 32 item 1).

The list of the package's modules is the contract: a module added to it (an eager import of
the Slurm rules, the GPU catalog, pydantic...) fails
:func:`test_tpu_validate_imports_only_the_allowed_modules` until the list here is changed on
purpose, in the same commit that says why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TPU_RECIPE = ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"

ALLOWED = frozenset({
    "mldiag_provision", "mldiag_provision.batch", "mldiag_provision.catalog",
    "mldiag_provision.catalog.gke_version", "mldiag_provision.catalog.names",
    "mldiag_provision.catalog.places", "mldiag_provision.catalog.requirements",
    "mldiag_provision.catalog.store", "mldiag_provision.catalog.tpu", "mldiag_provision.cli",
    "mldiag_provision.cli._main", "mldiag_provision.cli.app", "mldiag_provision.cli.commands",
    "mldiag_provision.cli.commands._args",
    # the validate command itself (its code was in cli._main before issue 26 item 6)
    "mldiag_provision.cli.commands.validate", "mldiag_provision.cluster",
    "mldiag_provision.cluster.autopilot", "mldiag_provision.cluster.check",
    "mldiag_provision.cluster.from_plan", "mldiag_provision.cluster.kueue",
    "mldiag_provision.cluster.model", "mldiag_provision.console", "mldiag_provision.engine_names",
    "mldiag_provision.errors", "mldiag_provision.lazyre", "mldiag_provision.lint",
    "mldiag_provision.lint.cluster_rules",
    "mldiag_provision.lint.context", "mldiag_provision.lint.loading",
    "mldiag_provision.lint.rules", "mldiag_provision.lint.tpu_rules",
    "mldiag_provision.lint.workloads", "mldiag_provision.ondisk",
    "mldiag_provision.orchestrator_names", "mldiag_provision.orchestrators",
    "mldiag_provision.orchestrators.existing_kubernetes",
    "mldiag_provision.orchestrators.gke_autopilot", "mldiag_provision.orchestrators.gke_standard",
    # the unit's description (name, capabilities, blueprint), not its rules
    "mldiag_provision.orchestrators.slurm",
    "mldiag_provision.pipeline", "mldiag_provision.plan", "mldiag_provision.plan.kubernetes",
    "mldiag_provision.plan.names", "mldiag_provision.plan.parts",
    "mldiag_provision.plan.previous", "mldiag_provision.plan.project",
    "mldiag_provision.plan.types",
    "mldiag_provision.prebuilt_code",  # the dataclass methods' code, built ahead
    "mldiag_provision.preflight",
    "mldiag_provision.preflight.cluster_rules", "mldiag_provision.preflight.context",
    "mldiag_provision.preflight.diagnostics_rules", "mldiag_provision.preflight.format_rules",
    "mldiag_provision.preflight.manifest_rules", "mldiag_provision.preflight.name_rules",
    "mldiag_provision.preflight.place_rules", "mldiag_provision.preflight.policy_rules",
    "mldiag_provision.preflight.queued_rules", "mldiag_provision.preflight.stack_rules",
    "mldiag_provision.preflight.tpu_rules", "mldiag_provision.preflight.value_rules",
    "mldiag_provision.preflight.workload_rules", "mldiag_provision.quantity",
    "mldiag_provision.recipe", "mldiag_provision.recipe.loader", "mldiag_provision.recipe.parse",
    "mldiag_provision.recipe.patterns", "mldiag_provision.recipe.sourcemap",
    "mldiag_provision.recipe.validator", "mldiag_provision.render",
    "mldiag_provision.render.blueprint", "mldiag_provision.render.k8s",
    "mldiag_provision.resources", "mldiag_provision.rulebook", "mldiag_provision.startcache",
    "mldiag_provision.suggest", "mldiag_provision.yaml11",
})

# never on a TPU recipe's validate: what only Slurm or GPU recipes, or bad input, need
FORBIDDEN = frozenset({
    "pydantic", "pydantic_core", "pydantic_core.core_schema", "mldiag_provision.recipe.model",
    "mldiag_provision.preflight.slurm_rules", "mldiag_provision.preflight.gpunet_rules",
    "mldiag_provision.recipe.slurm", "mldiag_provision.catalog.slurm",
    "mldiag_provision.catalog.gpu", "mldiag_provision.plan.gpunet",
    "mldiag_provision.prebuilt_code_more",  # render's dataclass code
    "shutil",  # argparse's help formatter imports it for the terminal width: not ours
})


def _imported(*argv: str) -> set[str]:
    """Every module in ``sys.modules`` after a fresh process ran the CLI with ``argv``."""
    code = ("import sys, json, io, contextlib\n"
            "from mldiag_provision.cli.app import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        code = main(sys.argv[1:])\n"
            "    except SystemExit as exc:\n        code = exc.code\n"
            "print(json.dumps([code, sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    code, modules = json.loads(out.splitlines()[-1])
    assert code == 0, out
    return set(modules)


@pytest.fixture(scope="module")
def tpu_validate() -> set[str]:
    return _imported("validate", str(TPU_RECIPE))


def test_tpu_validate_imports_only_the_allowed_modules(tpu_validate: set[str]) -> None:
    ours = {m for m in tpu_validate if m.split(".")[0] == "mldiag_provision"}
    assert ours - ALLOWED == set(), "new eager imports on validate's path"


def test_tpu_validate_imports_no_pydantic_and_no_slurm_or_gpu_rules(
        tpu_validate: set[str]) -> None:
    assert tpu_validate & FORBIDDEN == set()
    assert not {m for m in tpu_validate if m.startswith(("pydantic", "annotated_types"))}


def test_every_bundled_tpu_recipe_stays_off_pydantic() -> None:
    """Each bundled TPU recipe on its own (a queued one reads the Kueue defaults)."""
    for path in sorted((ROOT / "recipes").glob("tpu*.yaml")):
        mods = _imported("validate", str(path))
        assert not {m for m in mods if m.startswith("pydantic")}, path.name
        assert "mldiag_provision.preflight.slurm_rules" not in mods, path.name


def test_slurm_and_gpu_recipes_still_load_their_rules() -> None:
    slurm = _imported("validate", str(ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"))
    assert {"mldiag_provision.preflight.slurm_rules",
            "mldiag_provision.preflight.gpunet_rules"} <= slurm
    gpu = _imported("validate", str(ROOT / "recipes" / "gpu-h100-autopilot.yaml"))
    assert "mldiag_provision.preflight.gpunet_rules" in gpu


def test_order_names_every_rule_module_once() -> None:
    import pkgutil

    from mldiag_provision import preflight

    modules = {m.name for m in pkgutil.iter_modules(preflight.__path__)
               if m.name.endswith("_rules")}
    assert sorted(preflight.ORDER) == sorted(modules)
    assert set(preflight.WHEN) <= modules


_PREFLIGHT_ALL = """
import glob, json, sys
from mldiag_provision import preflight
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
if sys.argv[1] == "eager":
    preflight.import_all()
out = []
for path in sorted(glob.glob("recipes/*.yaml")) + sorted(glob.glob("tests/golden/errors/*.yaml")):
    res = check_file(path, load_catalog())
    out.append([path, [p.to_dict() for p in res.report.problems]])
print(json.dumps(out))
"""


def test_rules_imported_on_demand_report_what_eager_ones_report() -> None:
    """Every bundled recipe and golden error recipe: the same problems, in the same order,
    whether the Slurm and GPU rule modules were imported up front or on demand."""
    runs = [subprocess.run([sys.executable, "-c", _PREFLIGHT_ALL, how], capture_output=True,
                           text=True, cwd=ROOT, check=True).stdout for how in ("eager", "lazy")]
    assert runs[0] == runs[1]
    assert len(json.loads(runs[0])) > 20


def test_validate_of_every_bundled_recipe_in_one_call_imports_no_pydantic() -> None:
    """The recipe validator's Python path takes every valid recipe, one or a batch (issue
    32): pydantic-core is for a recipe it leaves over (an error, a coercion)."""
    recipes = sorted(str(p) for p in (ROOT / "recipes").glob("*.yaml"))
    mods = _imported("validate", "--jobs", "1", *recipes)
    assert not {m for m in mods if m.startswith(("pydantic", "annotated_types"))}
