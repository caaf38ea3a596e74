"""Render and lint agree (issue 28, item 4): ``lint --recipe`` finds no error in the
manifests ``render`` wrote for a recipe that ``validate`` accepts.

The variants are every example recipe (recipes/*.yaml) x every orchestrator x every capacity
type (the recipe's own, then each of :class:`~mldiag_provision.recipe.model.Capacity`'s
types on every accelerator slice). A variant that preflight refuses with an error is skipped:
render refuses it too. The full cross product (18 x 4 x 6 = 432 variants, about 250 valid)
takes ~30 s on one CPU, so it runs by default; each example is one test case, and its failure
lists every disagreeing variant with the lint errors found.

The regression this pins: the A3 Mega example on ``gke-autopilot`` validated with a warning
(``gpunet-mode``: GPUDirect is rendered for gke-standard node pools only) but rendered the
GPUDirect objects anyway (hostNetwork DaemonSets in kube-system, hostPath mounts), and
``lint --recipe`` found 13 Autopilot errors in them.
"""

from __future__ import annotations

import copy
import itertools
import typing
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from cli_support import CliResult
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.cli.commands.lint import recipe_settings
from mldiag_provision.errors import Severity
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version, resolve_version
from mldiag_provision.orchestrators import names as orchestrator_names
from mldiag_provision.pipeline import check_text
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.recipe.model import Capacity
from mldiag_provision.render.stack import render_stack

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog()
EXAMPLES = sorted((ROOT / "recipes").glob("*.yaml"))
ORCHESTRATORS = orchestrator_names()
CAPACITY_TYPES: tuple[str | None, ...] = (
    None, *typing.get_args(Capacity.model_fields["type"].annotation))


def variant(base: dict, orchestrator: str, capacity: str | None) -> dict:
    """``base`` with ``orchestrator.type`` set (an existing cluster gets a ``clusterName``)
    and, unless ``capacity`` is None, every TPU/GPU slice's capacity set to that type (a
    reservation gets a name)."""
    recipe = copy.deepcopy(base)
    orch = recipe["spec"]["orchestrator"]
    orch["type"] = orchestrator
    if orchestrator == "existing-kubernetes":
        orch.setdefault("clusterName", recipe["metadata"]["name"])
    if capacity is not None:
        for s in recipe["spec"]["slices"]:
            if "tpu" in s or "gpu" in s:
                s["capacity"] = {"type": capacity}
                if capacity == "reservation":
                    s["capacity"]["reservation"] = "shared-res"
    return recipe


def render_then_lint(recipe: dict) -> list[str] | None:
    """Preflight ``recipe``; None when it has errors (render refuses it). Otherwise render
    the stack in memory and lint its ``k8s/`` manifests with the settings ``lint --recipe``
    takes from the recipe; the lint errors as ``file:line rule: message`` lines."""
    res = check_text(yaml.safe_dump(recipe, sort_keys=False), "recipe.yaml", CATALOG)
    parsed = res.parsed.recipe
    if parsed is None or not res.report.ok:
        return None
    files = render_stack(build_plan(parsed, res.shapes, CATALOG))
    sources = [Source(name, data.decode()) for name, data in sorted(files.items())
               if name.startswith("k8s/") and name.endswith((".yaml", ".yml"))]
    autopilot, min_version, crds = recipe_settings(parsed, "recipe.yaml")
    options = LintOptions(
        kubernetes_version=resolve_version(min_version) if min_version
        else default_version(CATALOG),
        autopilot=autopilot, crd_versions=crds, recipe=parsed)
    result = lint_sources(sources, options, CATALOG)
    return [f"{p.file}:{p.line} {p.rule}: {p.message}" for p in result.problems
            if p.severity == Severity.ERROR]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_lint_finds_no_error_in_what_render_wrote(example: Path) -> None:
    base = yaml.safe_load(example.read_text())
    checked = 0
    disagreements: list[str] = []
    for orchestrator, capacity in itertools.product(ORCHESTRATORS, CAPACITY_TYPES):
        errors = render_then_lint(variant(base, orchestrator, capacity))
        if errors is None:
            continue
        checked += 1
        if errors:
            disagreements.append(f"{orchestrator} / capacity {capacity or '(as given)'}:\n  "
                                 + "\n  ".join(errors))
    # the example itself validates, so at least its own orchestrator was rendered and linted
    assert checked >= 1
    assert not disagreements, "\n".join(disagreements)


def test_the_cross_product_covers_every_orchestrator_and_capacity_type() -> None:
    """The variants are not all refused: every orchestrator with a Kubernetes workload
    renders for some example and capacity type, and every capacity type for some example."""
    orchestrators: set[str] = set()
    capacities: set[str | None] = set()
    for example in EXAMPLES[::3]:
        base = yaml.safe_load(example.read_text())
        for orchestrator, capacity in itertools.product(ORCHESTRATORS, CAPACITY_TYPES):
            r = variant(base, orchestrator, capacity)
            if check_text(yaml.safe_dump(r), "recipe.yaml", CATALOG).report.ok:
                orchestrators.add(orchestrator)
                capacities.add(capacity)
    assert {"gke-standard", "gke-autopilot", "existing-kubernetes"} <= orchestrators
    assert set(CAPACITY_TYPES) <= capacities


def test_a3_mega_on_autopilot_renders_no_gpudirect_objects() -> None:
    """The issue's reproduction: validate warns (gpunet-mode) and render leaves GPUDirect
    out, saying so in its decisions."""
    base = yaml.safe_load((ROOT / "recipes" / "gpu-a3-mega-standard.yaml").read_text())
    recipe = variant(base, "gke-autopilot", None)
    res = check_text(yaml.safe_dump(recipe), "recipe.yaml", CATALOG)
    assert res.report.ok
    assert [p.rule for p in res.report.problems if p.severity == Severity.WARNING] \
        == ["gpunet-mode"]
    assert res.parsed.recipe is not None
    plan = build_plan(res.parsed.recipe, res.shapes, CATALOG)
    files = render_stack(plan)
    assert "k8s/workloads/00-gpu-networking.yaml" not in files
    text = "\n".join(d.decode() for n, d in files.items() if n.endswith((".tf", ".yaml")))
    for gpudirect in ("gpunic", "GKENetworkParamSet", "networking.gke.io/interfaces",
                      "additional_node_network_configs", "hostNetwork: true"):
        assert gpudirect not in text, gpudirect
    assert any("no GPUDirect networking" in d and "not rendered" in d
               for d in plan.decisions), plan.decisions
    assert render_then_lint(recipe) == []


def test_the_cli_render_then_lint_recipe_exits_0(tmp_path: Path,
                                                 cli: Callable[..., CliResult]) -> None:
    """The same through the commands a user runs: ``render`` then ``lint --recipe``."""
    base = yaml.safe_load((ROOT / "recipes" / "gpu-a3-mega-standard.yaml").read_text())
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(variant(base, "gke-autopilot", None)))
    code, _, err = cli("render", str(recipe), "-o", str(tmp_path / "out"))
    assert code == 0, err
    code, out, err = cli("lint", "--recipe", str(recipe), str(tmp_path / "out" / "k8s"))
    assert code == 0, out + err
    assert "error[" not in out + err
