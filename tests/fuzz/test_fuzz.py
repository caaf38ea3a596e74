"""Structure-aware fuzzing of the four entry points (issue 15): ``validate``, ``render``,
``lint`` and ``verify``, each called in process the way its command calls it, with inputs
made by mutating real recipes and manifests by type (tests/fuzz/mutate.py), and for
``verify`` a hostile stand-in API server (hangs, HTML, wrong shapes, nulls, error codes).

The contract under test: bad input gives findings (problems, FAIL checks), never an
exception escaping the entry point (the CLI's exit 70) and never a hang. Every failure found
is kept under regressions/ (test_regressions.py replays them).

Budget: budget.EXAMPLES inputs per entry point (a sample of 500 by default, 2,000 with
``MLDIAG_FULL=1``; README has the longer run). Each entry point's run must reach every
family of its seeds (FAMILIES below), whatever the budget: the sample is only smaller, never
narrower.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from budget import EXAMPLES, FUZZ
from hypothesis import given
from hypothesis import strategies as st
from mutate import (
    TRICKY_STRINGS,
    dump,
    manifest_seeds,
    mutate_random,
    mutated,
    recipe_seeds,
    scalars,
)

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import default_version
from mldiag_provision.pipeline import check_text
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render import k8s
from mldiag_provision.render.stack import render_stack

pytestmark = pytest.mark.fuzz

CATALOG = load_catalog()
RECIPES = recipe_seeds()
RECIPE_NAMES = [p.stem for p in sorted((Path(__file__).parents[2] / "recipes").glob("*.yaml"))]
MANIFESTS = manifest_seeds()
COUNTS: dict[str, int] = {}
# what each entry point's inputs reached (families: recipe:NAME, kind:KIND, options:N,
# mode:MODE, path:PATH); FAMILIES (after the strategies) is what they must reach
REACHED: dict[str, set[str]] = {}


def _count(entry: str) -> None:
    COUNTS[entry] = COUNTS.get(entry, 0) + 1


def _reach(entry: str, family: str) -> None:
    REACHED.setdefault(entry, set()).add(family)


def _fuzz(entry: str, run: Callable[[], None]) -> None:
    """Run one entry point's examples, then check they reached every family of its seeds."""
    REACHED[entry] = set()
    run()
    missing = FAMILIES[entry] - REACHED[entry]
    assert not missing, (f"{entry}: the {EXAMPLES} inputs never reached {sorted(missing)}; "
                         "raise MLDIAG_FUZZ_EXAMPLES/budget.SAMPLE_EXAMPLES (docs/testing.md)")


@st.composite
def recipe_texts(draw: st.DrawFn) -> str:
    """A mutated recipe as YAML text; sometimes with a text splice that breaks the YAML."""
    text = dump(draw(mutated(RECIPES, max_mutations=4,
                             on_seed=lambda i: _reach("validate", f"recipe:{RECIPE_NAMES[i]}"))))
    if draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["\t", ":", "- ", "'", '"', "{", "]", "&a ",
                                                 "*a", "!!binary ", "\x85", "\n  x"])) + text[at:]
    return text


def test_validate_never_raises() -> None:
    _fuzz("validate", _validate_examples)


@FUZZ
@given(recipe_texts())
def _validate_examples(text: str) -> None:
    _count("validate")
    res = check_text(text, "fuzz.yaml", CATALOG)
    for p in res.report.problems:
        assert p.message and p.file == "fuzz.yaml"


@st.composite
def renderable_recipes(draw: st.DrawFn) -> str:
    """A real recipe with its free-text values (env, args, labels, names, image tags)
    replaced by tricky strings: most stay valid, so render runs on them."""
    index = draw(st.integers(0, len(RECIPES) - 1))
    _reach("render", f"recipe:{RECIPE_NAMES[index]}")
    doc = copy.deepcopy(RECIPES[index])
    spec = doc["spec"]
    for w in spec.get("workloads", []):
        if draw(st.booleans()):
            w["env"] = draw(st.dictionaries(st.sampled_from(["A", "B_1", "XLA_FLAGS"]),
                                            st.one_of(st.sampled_from(TRICKY_STRINGS),
                                                      st.text(max_size=10)), max_size=3))
        if draw(st.booleans()):
            w["args"] = draw(st.lists(st.one_of(st.sampled_from(TRICKY_STRINGS),
                                                st.text(max_size=10)), max_size=4))
    if draw(st.integers(0, 3)) == 0:  # most of these are refused: label values are strict
        doc["metadata"]["labels"] = {"team": draw(st.sampled_from(TRICKY_STRINGS))}
    if draw(st.integers(0, 3)) == 0:
        doc = draw(mutated([doc], max_mutations=1))
    return dump(doc)


def test_render_never_raises_and_keeps_yaml_types() -> None:
    _fuzz("render", _render_examples)


@FUZZ
@given(renderable_recipes())
def _render_examples(text: str) -> None:
    from render.test_yaml11_roundtrip import mismatches, read_11

    _count("render")
    res = check_text(text, "fuzz.yaml", CATALOG)
    if res.parsed.recipe is None or not res.report.ok:
        return
    plan = build_plan(res.parsed.recipe, res.shapes, CATALOG)
    files = render_stack(plan)
    _count("render-rendered")
    for w in plan.workloads:
        read = read_11(files[f"k8s/workloads/{w.name}.yaml"].decode("utf-8"))
        assert not mismatches(k8s.workload(plan, w), read)


OPTIONS = [LintOptions(kubernetes_version=default_version(CATALOG), autopilot=a, diagnostics=d)
           for a in (False, True) for d in (True, False)]


def _manifest_reached(index: int) -> None:
    kind = MANIFESTS[index].get("kind") if isinstance(MANIFESTS[index], dict) else None
    _reach("lint", f"kind:{kind}")


def test_lint_never_raises() -> None:
    _fuzz("lint", _lint_examples)


@FUZZ
@given(st.lists(mutated(MANIFESTS, max_mutations=5, on_seed=_manifest_reached),
                min_size=1, max_size=3),
       st.sampled_from(OPTIONS))
def _lint_examples(objects: list, options: LintOptions) -> None:
    _count("lint")
    _reach("lint", f"options:{OPTIONS.index(options)}")
    text = "---\n".join(dump(o) for o in objects)
    result = lint_sources([Source("fuzz.yaml", text)], options, CATALOG)
    for p in result.problems:
        assert p.rule and p.message


# -- verify against a hostile stand-in API server --------------------------------------------

VERIFY_RECIPE = Path(__file__).parents[2] / "recipes" / "tpu-v5e-manual-agents-standard.yaml"
HTML = b"<!doctype html><title>Sign in</title>"
MODES = ["mutate"] * 12 + ["html", "null", "truncated", "scalar", "list", "status", "empty",
                          "hang"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):
    """One stand-in API server and one client (0.15 s request timeout) for all examples."""
    import os

    from fake_apiserver import FakeApiServer
    from test_verify import healthy

    from mldiag_provision.stack import kube

    res = check_text(VERIFY_RECIPE.read_text(), str(VERIFY_RECIPE), CATALOG)
    plan = build_plan(res.parsed.recipe, res.shapes, CATALOG)  # type: ignore[arg-type]
    old = os.environ.get("MLDIAG_REQUEST_TIMEOUT_S")
    os.environ["MLDIAG_REQUEST_TIMEOUT_S"] = "0.15"
    try:
        with FakeApiServer() as api:
            client = kube.kubeconfig_client(str(api.kubeconfig(
                tmp_path_factory.mktemp("kc") / "kubeconfig")), None)
            yield api, client, plan, healthy()
    finally:
        if old is None:
            os.environ.pop("MLDIAG_REQUEST_TIMEOUT_S", None)
        else:
            os.environ["MLDIAG_REQUEST_TIMEOUT_S"] = old


@st.composite
def server_faults(draw: st.DrawFn, paths: list[str]) -> list[tuple[str, str, object]]:
    picked = draw(st.lists(st.sampled_from(paths), min_size=1, max_size=4, unique=True))
    out = []
    for path in picked:
        mode = draw(st.sampled_from(MODES))
        extra: object = None
        if mode == "mutate":
            extra = draw(st.integers(0, 2**32 - 1))
        elif mode == "status":
            extra = draw(st.sampled_from([400, 401, 403, 404, 409, 429, 500, 503]))
        elif mode == "scalar":
            extra = draw(scalars())
        out.append((path, mode, extra))
        _reach("verify", f"mode:{mode}")
        _reach("verify", f"path:{path}")
    return out


ALL_PATHS = ["/version", "/api/v1/namespaces/mldiag",
             "/api/v1/namespaces/mldiag/serviceaccounts/mldiag-workload",
             "/apis/apps/v1/namespaces/gke-mldiagnostics/deployments",
             "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
             "mldiagnosticsconnections.diagon.gke.io",
             "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
             "/api/v1/nodes"]


# Every family each entry point's inputs must reach (asserted after its run, by _fuzz).
FAMILIES: dict[str, set[str]] = {
    "validate": {f"recipe:{n}" for n in RECIPE_NAMES},
    "render": {f"recipe:{n}" for n in RECIPE_NAMES},
    "lint": ({f"kind:{m.get('kind') if isinstance(m, dict) else None}" for m in MANIFESTS}
             | {f"options:{i}" for i in range(len(OPTIONS))}),
    "verify": {f"mode:{m}" for m in MODES} | {f"path:{p}" for p in ALL_PATHS},
}


def _mutate_body(body: object, seed: int) -> object:
    import random

    return mutate_random(body, random.Random(seed), mutations=1 + seed % 3)


def test_verify_never_raises_nor_hangs(hostile) -> None:
    _fuzz("verify", lambda: _verify_examples(hostile))


@FUZZ
@given(server_faults(ALL_PATHS))
def _verify_examples(hostile, faults: list) -> None:
    from mldiag_provision.verify.checks import FAIL, Cluster, run_checks

    api, client, plan, good = hostile
    _count("verify")
    api.objects.clear()
    api.objects.update(copy.deepcopy(good))
    api.objects["/version"] = {"major": "1", "minor": "35", "gitVersion": "v1.35.0"}
    api.raw.clear()
    api.hang.clear()
    for path, mode, extra in faults:
        body = api.objects.get(path)
        if mode == "mutate" and body is not None:
            api.objects[path] = _mutate_body(body, int(extra))  # type: ignore[arg-type]
        elif mode == "html":
            api.raw[path] = (200, "text/html", HTML)
        elif mode == "null":
            api.raw[path] = (200, "application/json", b"null")
        elif mode == "truncated":
            api.raw[path] = (200, "application/json", json.dumps(body).encode()[:17])
        elif mode == "scalar":
            api.raw[path] = (200, "application/json", json.dumps(extra).encode())
        elif mode == "list":
            api.raw[path] = (200, "application/json", b"[1, null, {}]")
        elif mode == "status":
            api.raw[path] = (int(extra), "application/json",  # type: ignore[call-overload]
                             b'{"kind": "Status", "code": ' + str(extra).encode() + b"}")
        elif mode == "empty":
            api.raw[path] = (200, "application/json", b"")
        elif mode == "hang":
            api.hang.add(path)
    start = time.monotonic()
    results = run_checks(Cluster(client), plan, CATALOG)
    assert time.monotonic() - start < 30, "a hang: every request has a timeout"
    assert results and all(r.status in ("PASS", "FAIL", "SKIP") for r in results)
    if any(p == "/version" and m in ("html", "null", "hang", "status", "list", "empty")
           for p, m, _ in faults):
        assert [r.status for r in results] == [FAIL]


def test_zz_budget_was_spent() -> None:
    """The figure README states: at least EXAMPLES inputs reached each entry point (runs
    last in this file; skipped when the fuzz tests ran in another worker)."""
    if not COUNTS:
        pytest.skip("the fuzz tests ran in another process (pytest-xdist)")
    for entry in ("validate", "render", "lint", "verify"):
        if entry in COUNTS:
            assert COUNTS[entry] >= EXAMPLES, COUNTS
    if "render" in COUNTS:  # most render inputs are valid recipes, so render really ran
        assert COUNTS.get("render-rendered", 0) >= EXAMPLES // 3, COUNTS
