"""Preflight and lint agree (issue 13, "Done when"): for a workload in a recipe and for the
manifest the recipe renders from it, the same verdict, rule ids, severities and messages.

Property test over every example recipe with TPU workloads and mutations of its first workload
(CPU and memory, from fitting to far above any VM; hand-set TPU worker variables, right and
wrong): preflight's findings under lint's TPU rule ids, against ``lint`` over the
``k8s/workloads/*.yaml`` files ``render_stack`` writes for the same recipe. Preflight's
findings must also point at a line of the recipe.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.errors import Severity
from mldiag_provision.lint import tpu_rules as lint_tpu
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version
from mldiag_provision.pipeline import check_text
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render.stack import render_stack

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog()
LINT_IDS = {r.id for r in lint_tpu.RULES}
EXAMPLES = {p.name: yaml.safe_load(p.read_text()) for p in sorted((ROOT / "recipes").glob("*.yaml"))
            if "tpu:" in p.read_text()}

CPU = st.sampled_from([None, 1, "500m", 8, 100, 224, 300, 1000, "100000"])
MEMORY = st.sampled_from([None, "1Gi", "100Gi", "190Gi", "300Gi", "500Gi", "2000Gi", "64Ti"])
ENV = st.dictionaries(
    st.sampled_from(["TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES", "OTHER"]),
    st.sampled_from(["0", "a,b", "a,b,c,d", "h-0.svc,h-1.svc,h-2.svc,h-3.svc"]), max_size=2)


def _verdicts(recipe: dict) -> tuple[Counter, Counter, list]:
    text = yaml.safe_dump(recipe, sort_keys=False)
    res = check_text(text, "recipe.yaml", CATALOG)
    pre = [p for p in res.report.problems if p.rule in LINT_IDS]
    assert res.parsed.recipe is not None
    plan = build_plan(res.parsed.recipe, res.shapes, CATALOG)
    files = render_stack(plan)
    sources = [Source(name, data.decode()) for name, data in sorted(files.items())
               if name.startswith("k8s/workloads/")]
    autopilot = recipe["spec"]["orchestrator"]["type"] == "gke-autopilot"
    linted = lint_sources(sources, LintOptions(default_version(), autopilot=autopilot), CATALOG)
    post = [p for p in linted.problems if p.rule in LINT_IDS]
    key = lambda p: (p.rule, p.severity.value, p.message)  # noqa: E731
    return Counter(map(key, pre)), Counter(map(key, post)), pre


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(EXAMPLES)), cpu=CPU, memory=MEMORY, env=ENV)
def test_preflight_and_lint_agree_on_a_workload_and_its_manifest(
        name: str, cpu: object, memory: object, env: dict) -> None:
    recipe = yaml.safe_load(yaml.safe_dump(EXAMPLES[name]))
    w = recipe["spec"]["workloads"][0]
    w["resources"] = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    w["env"] = env
    pre, post, problems = _verdicts(recipe)
    assert pre == post
    errors = [k for k in pre if k[1] == Severity.ERROR.value]
    assert bool(errors) == any(k[1] == Severity.ERROR.value for k in post)
    for p in problems:  # every finding points at the recipe
        assert p.file == "recipe.yaml" and p.line > 0 and p.path.startswith("spec."), p


def test_the_examples_themselves_agree_and_mutations_are_caught() -> None:
    seen: set[str] = set()
    for name, base in EXAMPLES.items():
        pre, post, _ = _verdicts(base)
        assert pre == post, name
        recipe = yaml.safe_load(yaml.safe_dump(base))
        recipe["spec"]["workloads"][0]["resources"] = {"cpu": "100000"}
        pre, post, problems = _verdicts(recipe)
        assert pre == post and pre, name
        assert any(p.rule == "tpu-resources" and p.path == "spec.workloads[0].resources.cpu"
                   for p in problems), name
        seen |= {k[0] for k in pre}
    assert "tpu-resources" in seen
