"""Preflight's manifest rules reuse their findings per workload shape (issue 32,
``preflight/manifest_rules.py`` ``shared_by_shape``): two recipes with the same shape get,
inside one ``validate`` batch, exactly the findings each gets when validated alone, with
their own file names, lines and columns; and the stack name, which the key leaves out,
reaches the rendered objects only where the key's reasoning says it does."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_text
from mldiag_provision.preflight import _ordered, manifest_rules
from mldiag_provision.preflight.context import RULES, Context
from mldiag_provision.recipe.parse import parse_recipe_text
from mldiag_provision.render.k8s import PROFILES_ENV

ROOT = Path(__file__).resolve().parents[2]
BASE = (ROOT / "recipes" / "tpu-v5e-private-standard.yaml").read_text()

# A workload line added to BASE's one workload, and the rules its findings come under:
# resources beyond the VM (lint's tpu-resources), TPU worker variables set by hand
# (tpu-worker-env: env set, no reference to the profiles variable, so the name stays out of
# the key), and a coordinator address through the profiles variable (wiring: the name stays
# in the key).
CASES = {
    "resources": ('      resources: {cpu: "500", memory: 2000Gi}', {"tpu-resources"}),
    "worker-env": ('      env: {TPU_WORKER_ID: "0", TPU_WORKER_HOSTNAMES: "a,b"}',
                   {"tpu-worker-env"}),
    "wiring": ('      env: {JAX_COORDINATOR_ADDRESS: "$(MLDIAG_PROFILES_GCS_PATH):1234"}',
               {"wiring-coordinator-address"}),
}


def _texts(extra: str) -> tuple[str, str]:
    """Two recipes of one shape: the second has another name and comment lines that move
    every field (and the added line's fields to other columns)."""
    first = f"{BASE}{extra}\n"
    second = re.sub(r"(?m)^(  name: )(\S+)$", r"\1other-stack", BASE, count=1)
    second = "# a comment\n# and another\n" + second.replace(
        "  workloads:\n", "  workloads:\n    # the training job\n")
    return first, f"{second}{extra.replace(': {', ':  {  ')}\n"


def _alone(text: str, file: str) -> list:
    return check_text(text, file, load_catalog()).report.problems


@pytest.mark.parametrize("case", sorted(CASES))
def test_recipes_of_one_shape_get_the_findings_each_gets_alone(
        case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    extra, rules = CASES[case]
    first, second = _texts(extra)
    alone = [_alone(first, "a.yaml"), _alone(second, "b.yaml")]
    for found in alone:
        assert rules <= {p.rule for p in found}, found
    # the findings sit at each file's own lines
    lines = [{(p.rule, p.line, p.column) for p in found if p.rule in rules} for found in alone]
    assert lines[0] != lines[1]
    assert {p.file for p in alone[0]} == {"a.yaml"}
    assert {p.file for p in alone[1]} == {"b.yaml"}

    worked: list[str] = []
    real = manifest_rules._workload_manifests
    monkeypatch.setattr(manifest_rules, "_workload_manifests",
                        lambda ctx, located: (worked.append(ctx.sourcemap.file),
                                              real(ctx, located))[1])
    with manifest_rules.shared_by_shape():
        shared = [_alone(first, "a.yaml"), _alone(second, "b.yaml"),
                  _alone(first, "c.yaml")]
    assert shared[:2] == alone
    assert shared[2] == [dataclasses.replace(p, file="c.yaml") for p in alone[0]]
    if case == "wiring":  # the name is part of this shape: each name is worked out
        assert worked == ["a.yaml", "b.yaml"]
    else:
        assert worked == ["a.yaml"]


def test_validate_prints_for_a_batch_what_it_prints_for_each_file(tmp_path: Path) -> None:
    """The CLI (which validates its files inside ``shared_by_shape``) reports each file of a
    batch as it reports that file alone."""
    paths = []
    for case in sorted(CASES):
        for i, text in enumerate(_texts(CASES[case][0])):
            path = tmp_path / f"{case}-{i}.yaml"
            path.write_text(text)
            paths.append(str(path))
    cli = [sys.executable, "-m", "mldiag_provision", "validate", "--jobs", "1", "-O", "json"]
    batch = json.loads(subprocess.run([*cli, *paths], capture_output=True, text=True,
                                      check=False).stdout)
    alone = [json.loads(subprocess.run([*cli, p], capture_output=True, text=True,
                                       check=False).stdout)["files"][0] for p in paths]
    assert batch["files"] == alone
    assert all(f["problems"] for f in alone)


def _rendered(text: str) -> list[object]:
    """Every object the manifest rules render for the recipe ``text``, and what the cluster
    model is built from (the plan's slices, the queued plan), as text."""
    parsed = parse_recipe_text(text, "r.yaml")
    assert parsed.recipe is not None, parsed.problems
    ctx = Context(recipe=parsed.recipe, catalog=load_catalog(), sourcemap=parsed.sourcemap)
    for fn in _ordered(len(RULES)):
        list(fn(ctx))
    rendered, origins = manifest_rules.rendered_workloads(ctx)
    done = {o.workload for o in origins.values()}
    queued, _ = manifest_rules._queued_workloads(ctx, done)
    gpus, _ = manifest_rules._autopilot_gpu_workloads(ctx, done)
    model: list[object] = []
    if "project" in ctx.memo:
        from mldiag_provision.plan.kubernetes import queued_plan

        slices = ctx.memo["project"].slices
        model = [repr(slices), repr(queued_plan(ctx.recipe, ctx.catalog, list(slices)))]
    return [*(r.data for r in (*rendered, *queued, *gpus)), *model]


def _differences(a: object, b: object, path: tuple = ()) -> list[tuple]:
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return [d for k in a for d in _differences(a[k], b[k], (*path, k))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _differences(x, y, (*path, i))]
    return [] if a == b else [path]


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "recipes").glob("*.yaml")))
def test_the_stack_name_reaches_rendered_objects_only_in_the_profiles_variable(
        example: str) -> None:
    """``shape_key`` leaves ``metadata.name`` out because the name reaches what the manifest
    rules check only as the value of PROFILES_ENV: if a change renders it anywhere else,
    this fails, and the key must take the name (or that place) in."""
    text = (ROOT / "recipes" / example).read_text()
    names = ["a", "stack-" + "x" * 34]  # the shortest and the longest allowed
    rendered = [_rendered(re.sub(r"(?m)^(  name: )(\S+)$", rf"\g<1>{n}", text, count=1))
                for n in names]
    for path in _differences(rendered[0], rendered[1]):
        assert path[-1] == "value" and path[-3] == "env", path
        entry = rendered[0]
        for part in path[:-1]:
            entry = entry[part]  # type: ignore[index]
        assert entry["name"] == PROFILES_ENV, path  # type: ignore[index]


def test_cluster_limits_follow_the_fact_store_in_use() -> None:
    """cluster_limits is remembered per mode (issue 32) and per fact store: a what-if store
    (``use_store``) gets its own facts, and the bundled store's come back after it."""
    from mldiag_provision.catalog.store import FactStore, store, use_store
    from mldiag_provision.cluster.from_plan import cluster_limits

    bundled = cluster_limits("standard")
    assert bundled is not None and bundled is cluster_limits("standard")
    assert bundled.fact("nodesPerClusterMax") is store().fact(
        "places", "gkeLimits", "nodesPerClusterMax")
    what_if = FactStore(unverified=True)
    with use_store(what_if):
        other = cluster_limits("standard")
        assert other is not None and other is not bundled
        assert other.fact("nodesPerClusterMax").confidence == "L"
    assert cluster_limits("standard") is not other
