"""Property tests over the real catalog: valid recipes pass, single mutations are located,
and no input makes the pipeline raise."""

from __future__ import annotations

import copy
import math

import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mldiag_provision import pipeline
from mldiag_provision.catalog.tpu import ShapeError, load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.recipe.loader import load_documents
from mldiag_provision.recipe.sourcemap import Path, format_path

CATALOG = load_catalog()
MONITORED = list(CATALOG.fact("mlDiagnostics", "workloadMonitoringRegions")["regions"])

# (version key, topology, machine type) for every enumerated topology
SHAPES = sorted((k, t, m) for k, v in CATALOG.versions.items()
                for t, mts in v.topologies.items() for m in mts)

dns = st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,8})?", fullmatch=True)
label_keys = st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True)
label_values = st.from_regex(r"[a-z0-9_-]{0,20}", fullmatch=True)
# text YAML can round-trip: no surrogates
safe_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@st.composite
def valid_recipes(draw: st.DrawFn) -> dict:
    key, topology, machine = draw(st.sampled_from(SHAPES))
    version = CATALOG.versions[key]
    mt = version.machine_types[machine]
    tpu = draw(st.sampled_from(version.all_names()))
    tpu = draw(st.sampled_from([tpu, tpu.upper()]))
    slice_name = draw(dns)
    sl: dict = {"name": slice_name, "tpu": tpu, "topology": topology}
    if len(version.topologies[topology]) > 1 or draw(st.booleans()):
        sl["chipsPerVm"] = mt.chips_per_vm
    cap = draw(st.sampled_from(["default", "on-demand", "spot", "reservation"]))
    if cap == "reservation":
        sl["capacity"] = {"type": "reservation", "reservation": draw(dns)}
    elif cap != "default":
        sl["capacity"] = {"type": cap}
    workload: dict = {"name": draw(dns), "slice": slice_name, "image": "python:3.12"}
    if draw(st.booleans()):
        workload["chipsPerPod"] = mt.chips_per_vm
    if draw(st.booleans()) and mt.vcpu:
        workload["resources"] = {
            "cpu": str(draw(st.integers(1, int(mt.vcpu)))),
            "memory": f"{draw(st.integers(1, int(mt.memory_gb * 10**9 // 2**30)))}Gi",
        }
    if draw(st.booleans()):
        workload["env"] = draw(st.dictionaries(st.from_regex(r"[A-Z][A-Z_]{0,10}",
                                                             fullmatch=True),
                                               safe_text, max_size=2))
    workloads = [workload] if draw(st.booleans()) else []
    diagnostics: dict = {}
    agents = draw(st.sampled_from([None, "auto", "managed", "none"]))
    if agents:
        diagnostics["agents"] = agents
    if draw(st.booleans()):
        diagnostics["logAnalytics"] = {"retentionDays": draw(st.integers(1, 3650))}
    else:
        diagnostics["logAnalytics"] = {"enabled": False}
    orchestrator: dict = {"type": "gke-autopilot"}
    min_version = draw(st.sampled_from([None, "1.35.0-gke.3065000", "1.36", "1.36.1-gke.1"]))
    if min_version:
        orchestrator["minVersion"] = min_version
    if draw(st.booleans()):
        orchestrator["releaseChannel"] = draw(st.sampled_from(["RAPID", "REGULAR", "STABLE"]))
    spec: dict = {
        "project": "my-ml-project",
        "region": draw(st.sampled_from([*MONITORED, "us-west4", "us-central2"])),
        "orchestrator": orchestrator,
        "slices": [sl],
        "diagnostics": diagnostics,
        "workloads": workloads,
    }
    if draw(st.booleans()):
        spec["engine"] = {"backend": {"type": "gcs", "bucket": "tf-state-bucket",
                                      "prefix": draw(dns)}}
    return {
        "apiVersion": "mldiag-provision/v1alpha1",
        "kind": "Recipe",
        "metadata": {"name": draw(dns),
                     "labels": draw(st.dictionaries(label_keys, label_values, max_size=3))},
        "spec": spec,
    }


def dump(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def check(data: object) -> list[Problem]:
    return pipeline.check_text(dump(data), "r.yaml").report.problems


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity is Severity.ERROR]


@settings(max_examples=150)
@given(valid_recipes())
def test_valid_recipes_have_no_errors(recipe: dict) -> None:
    result = pipeline.check_text(dump(recipe), "r.yaml")
    assert errors(result.report.problems) == [], [p.to_dict() for p in result.report.problems]
    shape = result.shapes[0]
    assert shape is not None
    dims = [int(d) for d in recipe["spec"]["slices"][0]["topology"].split("x")]
    assert shape.chips == math.prod(dims)
    assert shape.vms * shape.chips_per_vm == shape.chips


# -- single mutations ---------------------------------------------------------------------

def set_path(data: dict, path: Path, value: object) -> None:
    node: object = data
    for part in path[:-1]:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})  # type: ignore
    node[path[-1]] = value  # type: ignore[index]


def located_at(problems: list[Problem], path: Path) -> list[Problem]:
    want = format_path(path)
    return [p for p in errors(problems)
            if p.path == want or p.path.startswith((want + ".", want + "["))]


def mappings(node: object, path: Path = ()) -> list[Path]:
    """Paths of every mapping whose keys the model fixes (not labels/env/free-form maps)."""
    if isinstance(node, dict):
        out = [] if path and path[-1] in ("labels", "env") else [path]
        for k, v in node.items():
            out.extend(mappings(v, (*path, k)))
        return out
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in mappings(v, (*path, i))]
    return []


ENUMS: dict[Path, tuple[str, ...]] = {
    ("apiVersion",): ("mldiag-provision/v1alpha1",),
    ("kind",): ("Recipe",),
    ("spec", "orchestrator", "type"): ("gke-autopilot", "gke-standard", "slurm",
                                       "existing-kubernetes"),
    ("spec", "orchestrator", "releaseChannel"): ("RAPID", "REGULAR", "STABLE", "EXTENDED"),
    ("spec", "engine", "name"): ("terraform", "pulumi"),
    ("spec", "engine", "backend", "type"): ("local", "gcs"),
    ("spec", "slices", 0, "capacity", "type"): ("on-demand", "spot", "reservation"),
    ("spec", "diagnostics", "agents"): ("auto", "managed", "manual", "none"),
    ("spec", "diagnostics", "iam", "mode"): ("predefined", "custom-role"),
}


def _resolves(tpu: str, topology: str, cpv: int | None) -> bool:
    try:
        CATALOG.resolve(tpu, topology, cpv)
    except ShapeError:
        return False
    return True


@settings(max_examples=80)
@given(valid_recipes(), st.one_of(safe_text, st.from_regex(r"[0-9]{1,2}(x[0-9]{1,2}){1,3}",
                                                           fullmatch=True)))
def test_bad_topology_is_located(recipe: dict, topology: str) -> None:
    sl = recipe["spec"]["slices"][0]
    assume(not _resolves(sl["tpu"], topology, sl.get("chipsPerVm")))
    sl["topology"] = topology
    problems = check(recipe)
    hits = located_at(problems, ("spec", "slices", 0))
    assert hits, [p.to_dict() for p in problems]
    assert any(p.path in ("spec.slices[0].topology", "spec.slices[0].chipsPerVm")
               for p in hits)
    assert all(p.line > 0 for p in hits)


@settings(max_examples=60)
@given(valid_recipes(), st.integers(-8, 4096))
def test_wrong_chips_per_pod_is_located(recipe: dict, chips: int) -> None:
    if not recipe["spec"]["workloads"]:
        recipe["spec"]["workloads"] = [{"name": "w", "slice": recipe["spec"]["slices"][0]["name"],
                                        "image": "python:3.12"}]
    shape = CATALOG.resolve(recipe["spec"]["slices"][0]["tpu"],
                            recipe["spec"]["slices"][0]["topology"],
                            recipe["spec"]["slices"][0].get("chipsPerVm"))
    assume(chips != shape.chips_per_vm)
    path = ("spec", "workloads", 0, "chipsPerPod")
    set_path(recipe, path, chips)
    want = format_path(path)
    hits = [p for p in check(recipe) if p.path == want]
    assert [p.rule for p in hits] == ["workload-chips"]
    assert hits[0].line > 0
    # an error only where the topology's chips per VM is a verified fact (rulebook policy)
    fact = CATALOG.topology_fact(shape.version, shape.topology)
    assert hits[0].severity is fact.severity


@settings(max_examples=80)
@given(valid_recipes(), st.data(), st.from_regex(r"x[A-Za-z]{1,10}", fullmatch=True))
def test_unknown_key_is_located(recipe: dict, data: st.DataObject, key: str) -> None:
    target = data.draw(st.sampled_from(mappings(recipe)))
    path = (*target, key)
    set_path(recipe, path, data.draw(st.one_of(st.integers(), safe_text, st.booleans())))
    hits = located_at(check(recipe), path)
    assert [p.rule for p in hits] == ["recipe-unknown-key"], path
    assert hits[0].path == format_path(path)
    assert hits[0].line > 0


@settings(max_examples=80)
@given(valid_recipes(), st.sampled_from(sorted(ENUMS)), safe_text)
def test_bad_enum_is_located(recipe: dict, path: Path, value: str) -> None:
    assume(value not in ENUMS[path])
    set_path(recipe, path, value)
    hits = located_at(check(recipe), path)
    assert [p.rule for p in hits] == ["recipe-value"], path
    assert hits[0].path == format_path(path)
    assert hits[0].line > 0
    assert all(o in (hits[0].expected or "") for o in ENUMS[path])


# -- never raises -------------------------------------------------------------------------

def _assert_only_problems(text: str) -> None:
    result = pipeline.check_text(text, "r.yaml")
    assert all(isinstance(p, Problem) for p in result.report.problems)
    for p in result.report.problems:
        p.to_dict()  # every problem can be shown
        assert p.file == "r.yaml"
    docs = load_documents(text, "r.yaml")
    assert all(isinstance(p, Problem) for d in docs for p in d.problems)


@settings(max_examples=300)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    _assert_only_problems(text)


yaml_keys = st.one_of(safe_text, st.sampled_from(
    ["apiVersion", "kind", "metadata", "spec", "name", "slices", "tpu", "topology",
     "workloads", "chipsPerPod", "orchestrator", "minVersion", "resources", "cpu", "labels"]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), safe_text,
                    st.dates(), st.binary(max_size=8))
trees = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(yaml_keys, kids, max_size=4)), max_leaves=20)


@settings(max_examples=200)
@given(trees)
def test_arbitrary_yaml_never_raises(tree: object) -> None:
    _assert_only_problems(yaml.safe_dump(tree, allow_unicode=True))


@settings(max_examples=200)
@given(valid_recipes(), st.data(), trees)
def test_recipe_with_a_subtree_replaced_never_raises(recipe: dict, data: st.DataObject,
                                                     tree: object) -> None:
    paths: list[Path] = []

    def walk(node: object, path: Path) -> None:
        if path:
            paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, (*path, i))

    walk(recipe, ())
    mutated = copy.deepcopy(recipe)
    set_path(mutated, data.draw(st.sampled_from(paths)), tree)
    _assert_only_problems(dump(mutated))


@settings(max_examples=100)
@given(valid_recipes(), st.data())
def test_truncated_recipe_never_raises(recipe: dict, data: st.DataObject) -> None:
    text = dump(recipe)
    cut = data.draw(st.integers(0, len(text)))
    _assert_only_problems(text[:cut])
