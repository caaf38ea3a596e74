"""Orchestrator and engine registries: lookups, capabilities, blueprint checks, catalog-driven
per-version behaviour (issue 11, item 1)."""

from __future__ import annotations

import copy
import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml

from mldiag_provision import engines, orchestrators, pipeline
from mldiag_provision.catalog.tpu import DATA_DIR, Catalog, load_catalog
from mldiag_provision.engines import (
    TERRAFORM_KINDS,
    EngineCapability,
    EngineUnit,
    ResourceChange,
    ResourceKinds,
    UnknownEngineError,
)
from mldiag_provision.errors import CatalogError, InputError, Severity, UsageError
from mldiag_provision.orchestrators import Capability, UnknownOrchestratorError
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render.blueprint import load_blueprint, mismatch
from mldiag_provision.render.stack import render_stack
from mldiag_provision.resources import data_root

REPO = Path(__file__).resolve().parents[2]
C = Capability

RECIPE: dict = {
    "apiVersion": "mldiag-provision/v1alpha1",
    "kind": "Recipe",
    "metadata": {"name": "reg-test"},
    "spec": {
        "project": "my-ml-project",
        "region": "us-central1",
        "zone": "us-central1-a",
        "orchestrator": {"type": "gke-standard"},
        "slices": [{"name": "p", "tpu": "v5p", "topology": "2x2x2"}],
        "diagnostics": {"logAnalytics": {"retentionDays": 30}},
        "workloads": [{"name": "train", "slice": "p", "image": "python:3.12"}],
    },
}


def _check(doc: dict, catalog: Catalog | None = None) -> pipeline.CheckResult:
    return pipeline.check_text(yaml.safe_dump(doc, sort_keys=False), "r.yaml", catalog)


# -- lookups ------------------------------------------------------------------------------

def test_the_four_orchestrators_are_registered_in_reading_order() -> None:
    # the recipe model's enum (and so the schema files) keep this order; units added later
    # follow by name
    assert orchestrators.names()[:4] == ("gke-autopilot", "gke-standard", "slurm",
                                         "existing-kubernetes")
    later = orchestrators.names()[4:]
    assert list(later) == sorted(later)


def test_the_orchestrator_name_table_is_exactly_the_registered_units() -> None:
    """orchestrator_names.NAMES is what the recipe model knows without importing the registry
    (read from the file names of orchestrators/): every public module of the package defines
    the unit its file name says, and the registry's names are exactly these, in its order."""
    import importlib
    import pkgutil

    from mldiag_provision import orchestrator_names
    from mldiag_provision.recipe.model import _ORCHESTRATORS

    defined = set()
    for info in pkgutil.iter_modules(orchestrators.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{orchestrators.__name__}.{info.name}")
        unit = getattr(module, "UNIT", None)
        assert isinstance(unit, orchestrators.Orchestrator), module.__name__
        assert unit.name == info.name.replace("_", "-"), module.__name__
        defined.add(unit.name)
    assert defined == set(orchestrator_names.NAMES)
    assert orchestrators.names() == orchestrator_names.names() == _ORCHESTRATORS


def test_orchestrator_names_come_from_file_names_in_reading_order(tmp_path: Path) -> None:
    """A new module is a new name, after the ones of ORDER, by name; private modules and
    other files are not units."""
    from mldiag_provision import orchestrator_names

    for name in ("slurm.py", "gke_standard.py", "nomad_cluster.py", "aardvark.py",
                 "_helpers.py", "__init__.py", "notes.txt"):
        (tmp_path / name).write_text("")
    assert orchestrator_names.discover(str(tmp_path)) == ("gke-standard", "slurm", "aardvark",
                                                          "nomad-cluster")


def test_unknown_orchestrator_names_the_known_ones() -> None:
    with pytest.raises(UnknownOrchestratorError) as err:
        orchestrators.get("nomad")
    assert str(err.value) == ("orchestrator 'nomad' is not registered; known: "
                              + ", ".join(orchestrators.names()))
    assert "gke-autopilot, gke-standard, slurm, existing-kubernetes" in str(err.value)
    assert orchestrators.find("nomad") is None


def test_unknown_engine_is_a_usage_error_naming_the_known_ones() -> None:
    with pytest.raises(UnknownEngineError) as err:
        engines.get("opentofu")
    assert isinstance(err.value, UsageError)
    assert err.value.message == "engine 'opentofu' is not supported by this version yet"
    assert "'terraform'" in (err.value.hint or "")


def test_terraform_is_a_registered_engine_unit() -> None:
    unit = engines.get("terraform")
    assert "terraform" in engines.names()
    assert unit.marker == "main.tf"
    assert unit.has(EngineCapability.PLAN_FILE) and unit.has(EngineCapability.OVERRIDE_FILES)
    assert unit.kinds is TERRAFORM_KINDS
    assert unit.translate("Error 403: PERMISSION_DENIED") is not None


# -- capabilities -------------------------------------------------------------------------

EXPECTED = {
    "gke-autopilot": {C.CREATES_CLUSTER, C.AUTOPILOT_RULES, C.NODES_ON_DEMAND,
                      C.KUBERNETES_WORKLOADS, C.IN_CLUSTER_AGENTS},
    "gke-standard": {C.CREATES_CLUSTER, C.NODE_POOLS, C.KUBERNETES_WORKLOADS,
                     C.IN_CLUSTER_AGENTS},
    "existing-kubernetes": {C.EXISTING_CLUSTER, C.KUBERNETES_WORKLOADS, C.IN_CLUSTER_AGENTS},
    "slurm": {C.MANAGED_SLURM},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capabilities(name: str) -> None:
    unit = orchestrators.get(name)
    assert set(unit.capabilities) == EXPECTED[name]
    for cap in Capability:
        assert unit.has(cap) is (cap in EXPECTED[name])
    # GKE version gates exactly where the stack creates a GKE cluster
    assert (unit.gke is not None) is unit.has(C.CREATES_CLUSTER)


def test_every_capability_is_used_by_some_unit() -> None:
    used = set().union(*(u.capabilities for u in orchestrators.units()))
    assert used == set(Capability)


def test_a_unit_with_other_capabilities_changes_the_behaviour(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Behaviour follows capabilities, not names: gke-standard without NODE_POOLS plans no
    node pools and selects capacity the Autopilot way."""
    real = orchestrators.units()
    std = orchestrators.get("gke-standard")
    poolless = dataclasses.replace(std, capabilities=std.capabilities - {C.NODE_POOLS})
    monkeypatch.setattr(orchestrators, "units",
                        lambda: tuple(poolless if u.name == "gke-standard" else u
                                      for u in real))
    res = _check(RECIPE)
    assert res.parsed.recipe is not None
    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    assert plan.node_pools == ()
    assert "mldiag-provision/slice" not in plan.slices[0].node_selector
    assert plan.cluster.type == "gke-standard"


# -- blueprints ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", orchestrators.names())
def test_every_orchestrator_unit_has_a_blueprint_with_existing_templates(name: str) -> None:
    unit = orchestrators.get(name)
    bp = load_blueprint(unit.blueprint)
    assert name in bp.orchestrators, bp.where()
    assert bp.engines, bp.where()
    root = data_root()
    for engine in bp.engines:
        eu = engines.find(engine)
        assert eu is not None, f"{bp.where()} lists engine {engine}, which has no unit"
        sources = eu.sources(bp.manifest)
        assert sources, f"{engine} reads nothing for {bp.where()}"
        missing = [s for s in sources if not (root / s).exists()]
        assert not missing, f"{bp.where()} ({engine}): missing {missing}"


def test_every_blueprint_is_served_by_a_unit() -> None:
    served = {orchestrators.get(n).blueprint for n in orchestrators.names()}
    on_disk = {p.parent.name for p in (data_root() / "blueprints").glob("*/blueprint.yaml")}
    assert on_disk == served


def test_engine_the_blueprint_does_not_list_is_named_in_preflight(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A registered engine the orchestrator's blueprint does not list: one error on
    spec.engine.name naming the blueprint file, what it lists, and the fix (the gke-standard
    blueprint as if it listed terraform only)."""
    from mldiag_provision.render import blueprint as bp_mod

    real_load = bp_mod.load_blueprint
    monkeypatch.setattr(bp_mod, "load_blueprint", lambda name, root=None: dataclasses.replace(
        real_load(name, root), engines=("terraform",)))
    doc = copy.deepcopy(RECIPE)
    doc["spec"]["engine"] = {"name": "pulumi"}
    problems = [p for p in _check(doc).report.problems if p.rule == "engine"]
    assert len(problems) == 1, problems
    p = problems[0]
    assert p.path == "spec.engine.name" and p.severity is Severity.ERROR
    assert p.message == ("engine 'pulumi' is not available for blueprint 'gke-standard': "
                         "blueprints/gke-standard/blueprint.yaml lists engines: terraform")
    assert p.expected == "terraform"
    assert "set spec.engine.name to 'terraform'" in (p.hint or "")


def _blueprint_copy(tmp_path: Path, name: str, **changes: object) -> Path:
    """A data root in tmp_path: blueprints/ and modules/ copied, ``name``'s manifest changed."""
    shutil.copytree(data_root() / "blueprints", tmp_path / "blueprints")
    shutil.copytree(data_root() / "modules", tmp_path / "modules")
    path = tmp_path / "blueprints" / name / "blueprint.yaml"
    doc = yaml.safe_load(path.read_text())
    doc.update(changes)
    path.write_text(yaml.safe_dump(doc))
    return tmp_path


def test_render_refuses_a_blueprint_that_does_not_list_the_orchestrator(
        tmp_path: Path) -> None:
    root = _blueprint_copy(tmp_path, "gke-standard", orchestrators=["gke-autopilot"])
    res = _check(RECIPE)
    assert res.parsed.recipe is not None
    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    with pytest.raises(InputError) as err:
        render_stack(plan, root=root)
    assert err.value.message == (
        "blueprint 'gke-standard' (blueprints/gke-standard/blueprint.yaml) does not list "
        "orchestrator 'gke-standard' under orchestrators: (expected: gke-autopilot)")
    assert "add 'gke-standard' to orchestrators:" in (err.value.hint or "")


def test_mismatch_engine_message_and_no_mismatch() -> None:
    bp = load_blueprint("slurm")
    assert mismatch(bp, orchestrator="slurm", engine="terraform") is None
    assert mismatch(bp, orchestrator="slurm", engine="pulumi") is None
    found = mismatch(bp, engine="cdktf")
    assert found is not None and found[1] == "terraform, pulumi"


def test_blueprint_without_engines_is_a_packaging_error(tmp_path: Path) -> None:
    root = _blueprint_copy(tmp_path, "slurm", engines=[])
    with pytest.raises(CatalogError, match="'engines' must be a non-empty list"):
        load_blueprint("slurm", root)


# -- engines: danger classification keyed per engine ---------------------------------------

OTHER_KINDS = ResourceKinds(cluster=frozenset({"gcp:container/cluster:Cluster"}),
                            accelerator_pool=frozenset(), bucket=frozenset(),
                            slurm=frozenset(), kept=frozenset({"gcp:projects/service:Service"}))


def test_danger_and_kept_follow_the_engine_kinds() -> None:
    tf = ResourceChange("a", "gcp:container/cluster:Cluster", "delete")
    other = ResourceChange("a", "gcp:container/cluster:Cluster", "delete", kinds=OTHER_KINDS)
    assert tf.danger is None and not tf.is_cluster
    assert other.is_cluster and "DELETES the GKE cluster a" in (other.danger or "")
    api = ResourceChange("s", "gcp:projects/service:Service", "delete", kinds=OTHER_KINDS)
    assert api.kept
    assert not ResourceChange("s", "gcp:projects/service:Service", "delete").kept
    assert ResourceChange("s", "google_project_service", "delete").kept


def test_the_engine_name_table_lists_every_module_that_defines_a_unit() -> None:
    """engine_names.MODULES is what ``validate`` knows without importing the engines: every
    module of the package that defines ``UNIT`` is in it under its unit's name, and units()
    is exactly the table's."""
    import importlib
    import pkgutil

    from mldiag_provision import engine_names

    defined = {}
    for info in pkgutil.iter_modules(engines.__path__):
        module = importlib.import_module(f"{engines.__name__}.{info.name}")
        unit = getattr(module, "UNIT", None)
        if unit is not None:
            defined[unit.name] = module.__name__
    assert defined == engine_names.MODULES
    assert engines.names() == tuple(u.name for u in engines.units())
    assert {"pulumi", "terraform"} <= set(engines.names())


def test_engine_modules_are_found_by_their_unit_line(tmp_path: Path) -> None:
    """A module is an engine unit when a line of it starts ``UNIT = EngineUnit(``; helpers,
    private modules and a mention inside a line or an indented block are not."""
    from mldiag_provision import engine_names

    (tmp_path / "open_tofu.py").write_text('"""x"""\nUNIT = EngineUnit(\n    name="open-tofu")\n')
    (tmp_path / "helper.py").write_text('KIND = "UNIT = EngineUnit("\n')
    (tmp_path / "nested.py").write_text("if True:\n    UNIT = EngineUnit(\n")
    (tmp_path / "_private.py").write_text("\nUNIT = EngineUnit(\n")
    assert engine_names.discover(str(tmp_path)) == {
        "open-tofu": "mldiag_provision.engines.open_tofu"}


def test_a_table_entry_whose_module_defines_another_unit_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mldiag_provision import engine_names

    monkeypatch.setitem(engine_names.MODULES, "opentofu", "mldiag_provision.engines.terraform")
    engines.units.cache_clear()
    try:
        with pytest.raises(TypeError, match=r"engines\.terraform\.UNIT is not the EngineUnit "
                                            r"named 'opentofu'"):
            engines.units()
    finally:
        monkeypatch.undo()
        engines.units.cache_clear()
    assert "opentofu" not in engines.names()


def test_engine_units_are_complete() -> None:
    for unit in engines.units():
        assert isinstance(unit, EngineUnit)
        assert unit.capabilities and unit.marker and unit.summary
        assert unit.kinds.cluster and unit.kinds.kept
        assert unit.by_hand.project and unit.by_hand.cluster
        assert "{name}" in unit.by_hand.output and "{name}" in unit.by_hand.output_raw
        assert callable(unit.saved_plan)  # policy --plan reads every engine's saved plan


def test_stack_readme_takes_the_engine_by_hand_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    from mldiag_provision.engines import ByHand

    fake = dataclasses.replace(
        engines.get("terraform"), name="pulumi",
        by_hand=ByHand(project=("pulumi up",), cluster=("pulumi -C agents up",),
                       output="pulumi stack output {name}",
                       output_raw="pulumi stack output {name} --show-secrets"))
    real = tuple(u for u in engines.units() if u.name != "pulumi")
    monkeypatch.setattr(engines, "units", lambda: (*real, fake))
    res = _check(RECIPE)
    assert res.parsed.recipe is not None
    plan = dataclasses.replace(build_plan(res.parsed.recipe, res.shapes, load_catalog()),
                               engine="pulumi")
    from mldiag_provision.render.stack import _readme

    text = _readme(plan)
    assert "pulumi up\n" in text and "pulumi -C agents up" in text
    assert "$(pulumi stack output get_credentials --show-secrets)" in text
    assert "terraform" not in text


# -- per-version TPU behaviour from the catalog -------------------------------------------

def test_multi_host_placement_is_catalog_data() -> None:
    cat = load_catalog()
    placements = {k: cat.versions[k].multi_host_placement
                  for k in ("v4", "v5e", "v5p", "v6e", "tpu7x")}
    assert placements == {"v4": "compact", "v5e": "compact", "v5p": "compact",
                          "v6e": "compact", "tpu7x": "workload-policy"}
    raw = yaml.safe_load((DATA_DIR / "tpu.yaml").read_text())
    fact = raw["versions"]["tpu7x"]["gke"]["multiHostPlacement"]
    assert fact["source"] == "GKE-IRONWOOD"


def test_sandbox_tpu_nodes_are_labelled_from_the_catalog() -> None:
    """The sandbox labels a TPU node from tpu.yaml (accelerator, single-host topology), so a
    new TPU generation needs no table there; these are GKE's labels of the known machines."""
    from mldiag_provision.sandbox.gke_cluster import tpu_machine_labels

    labels = tpu_machine_labels()
    assert labels["ct5lp-hightpu-8t"] == ("tpu-v5-lite-podslice", "2x4")
    assert labels["ct6e-standard-4t"] == ("tpu-v6e-slice", "2x2")
    assert labels["ct4p-hightpu-4t"] == ("tpu-v4-podslice", "2x2x1")
    assert labels["tpu7x-standard-4t"] == ("tpu7x", "2x2x1")
    every = {m for v in load_catalog().versions.values() for m in v.machine_types}
    assert set(labels) == every


def _catalog_with(tmp_path: Path, version: str, policy: str) -> Catalog:
    raw = yaml.safe_load((DATA_DIR / "tpu.yaml").read_text())
    raw["versions"][version]["gke"]["multiHostPlacement"]["policy"] = policy
    (tmp_path / "tpu.yaml").write_text(yaml.safe_dump(raw))
    for name in ("gke.yaml", "sources.yaml", "kubernetes.yaml"):  # catalog/store.py
        shutil.copy(DATA_DIR / name, tmp_path / name)
    return load_catalog(tmp_path)


def test_workload_policy_follows_the_catalog_not_the_version_name(tmp_path: Path) -> None:
    """v5p marked workload-policy in the data: its multi-host pool gets the workload policy
    (the code used to compare the version key with 'tpu7x')."""
    catalog = _catalog_with(tmp_path, "v5p", "workload-policy")
    res = _check(RECIPE, catalog)
    assert res.parsed.recipe is not None and res.report.ok, res.report.problems
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    assert [p.workload_policy for p in plan.node_pools] == [True]
    assert any("HIGH_THROUGHPUT workload policy" in d for d in plan.decisions)
    default = build_plan(res.parsed.recipe, _check(RECIPE).shapes, load_catalog())
    assert [p.workload_policy for p in default.node_pools] == [False]


def test_unknown_placement_policy_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"multiHostPlacement\.policy 'dense'"):
        _catalog_with(tmp_path, "v4", "dense")


# -- the Slurm plan is built, not stripped ------------------------------------------------

def test_slurm_plan_never_goes_through_the_kubernetes_planner(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mldiag_provision.plan import kubernetes

    def boom(*args: object) -> None:
        raise AssertionError("the Slurm plan must not be a Kubernetes plan stripped down")

    monkeypatch.setattr(kubernetes, "build", boom)
    catalog = load_catalog()
    res = pipeline.check_file(str(REPO / "recipes/slurm-a3-ultra-lustre.yaml"), catalog)
    assert res.parsed.recipe is not None
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    assert plan.slurm is not None and plan.agents is None and plan.workloads == ()
    assert not any(d.startswith(("GKE", "ML Diagnostics agents:")) for d in plan.decisions)


def test_plan_json_names_the_engine_only_when_it_is_not_terraform() -> None:
    res = _check(RECIPE)
    assert res.parsed.recipe is not None
    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    assert plan.engine == "terraform" and "engine" not in plan.to_dict()
    other = dataclasses.replace(plan, engine="pulumi")
    assert other.to_dict()["engine"] == "pulumi"


# -- engine capabilities are consulted ----------------------------------------------------

def _stack_with_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capabilities: frozenset[EngineCapability]):
    """A Stack over a work directory whose plan.json names engine 'fake', a registered unit
    with ``capabilities``."""
    from mldiag_provision.stack.service import Stack

    fake = dataclasses.replace(engines.get("terraform"), name="fake",
                               capabilities=capabilities)
    real = engines.units()
    monkeypatch.setattr(engines, "units", lambda: (*real, fake))
    (tmp_path / ".mldiag").mkdir()
    (tmp_path / ".mldiag/plan.json").write_text('{"engine": "fake", "cluster": '
                                                '{"type": "gke-standard"}}')
    return Stack(tmp_path, "destroy")


def test_stack_picks_the_engine_unit_from_plan_json(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    stack = _stack_with_engine(tmp_path, monkeypatch, frozenset({EngineCapability.PLAN_JSON}))
    assert stack.engine_name == "fake" and stack.engine_unit.name == "fake"
    assert stack.creates_cluster
    (tmp_path / ".mldiag/plan.json").write_text('{"cluster": {"type": "slurm"}}')
    assert stack.engine_name == "terraform" and not stack.creates_cluster


def test_destroy_lift_needs_override_files(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from mldiag_provision.errors import ConflictError
    from mldiag_provision.stack.stages import Stage, StageName

    stack = _stack_with_engine(tmp_path, monkeypatch, frozenset({EngineCapability.PLAN_JSON}))
    state = [{"address": "module.cluster.google_container_cluster.this",
              "type": "google_container_cluster",
              "values": {"name": "c", "deletion_protection": True}}]
    with pytest.raises(ConflictError) as err:
        stack._lift_blocks(Stage(StageName.PROJECT, tmp_path, "project"), state,
                           disable_deletion_protection=True, delete_profiles=False)
    assert "engine fake cannot lift deletion protection" in err.value.message
    assert not list(tmp_path.glob("*.tf")), "no override file may be written"


def test_detailed_exitcode_needs_the_capability() -> None:
    from mldiag_provision.cli.commands.plan import _require_detailed_exitcode

    _require_detailed_exitcode(engines.get("terraform"))  # has it: no error
    blind = dataclasses.replace(engines.get("terraform"), name="blind",
                                capabilities=frozenset({EngineCapability.PLAN_JSON}))
    with pytest.raises(UsageError, match="engine 'blind' cannot tell 'changes'"):
        _require_detailed_exitcode(blind)
