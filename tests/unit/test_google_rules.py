"""Preflight rules for what Google Cloud refuses that the recipe schema cannot see:
``gcp-names`` (every derived name within its limit, catalog/data/names.yaml) and
``gke-channel`` (the cluster version offered by its release channel, gke.yaml
``releaseChannels``). Each test is one mutation of a valid recipe and the problem it must
produce, like tests/unit/test_rules.py."""

from __future__ import annotations

import copy

import pytest
import yaml

from mldiag_provision import pipeline
from mldiag_provision.catalog.names import load_name_limits
from mldiag_provision.catalog.tpu import DATA_DIR, Catalog, load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.plan.stack import build_plan

ERROR, WARNING = Severity.ERROR, Severity.WARNING

BASE: dict = {
    "apiVersion": "mldiag-provision/v1alpha1",
    "kind": "Recipe",
    "metadata": {"name": "rules-base"},
    "spec": {
        "project": "my-ml-project",
        "region": "us-central1",
        "zone": "us-central1-a",
        "orchestrator": {"type": "gke-standard"},
        "slices": [{"name": "s8", "tpu": "v5e", "topology": "2x4", "chipsPerVm": 8}],
        "diagnostics": {"logAnalytics": {"retentionDays": 30}},
        "workloads": [{"name": "train", "slice": "s8", "image": "python:3.12",
                       "chipsPerPod": 8, "kind": "JobSet"}],
    },
}


@pytest.fixture
def recipe() -> dict:
    return copy.deepcopy(BASE)


def check(data: dict, catalog: Catalog | None = None) -> list[Problem]:
    return pipeline.check_text(yaml.safe_dump(data, sort_keys=False), "r.yaml",
                               catalog).report.problems


def only(problems: list[Problem], rule: str, path: str, severity: Severity) -> Problem:
    hits = [p for p in problems if p.rule == rule and p.path == path]
    assert len(hits) == 1, f"want one {rule} at {path}; got {[(p.rule, p.path) for p in problems]}"
    p = hits[0]
    assert p.severity is severity, p
    assert p.line > 0 and p.column > 0, p
    return p


def test_base_recipe_is_clean(recipe: dict) -> None:
    assert check(recipe) == []


# -- gcp-names ----------------------------------------------------------------------------

def test_default_profiles_bucket_over_63_is_cut_to_fit(recipe: dict) -> None:
    """Issue 9's example: a 29-character project and a 39-character recipe name gave a
    78-character default bucket (refused by preflight since issue 9). Since issue 25 the
    derived name is cut to 63 characters with a digest of the whole name (plan/names.py
    fitted), so the default always fits; a bucket the recipe names is checked as written."""
    from mldiag_provision.plan.names import default_profiles_bucket

    recipe["spec"]["project"] = "p" + "x" * 27 + "1"
    recipe["metadata"]["name"] = "r" * 39
    assert len(recipe["spec"]["project"]) == 29
    assert [p for p in check(recipe) if p.rule == "gcp-names"] == []
    bucket = default_profiles_bucket(recipe["spec"]["project"], recipe["metadata"]["name"])
    assert len(bucket) <= 63 and bucket.endswith("-profiles")
    assert bucket != default_profiles_bucket(recipe["spec"]["project"], "r" * 38 + "s")
    # a long name written in the recipe is refused where it is read
    recipe["spec"]["diagnostics"]["profilesBucket"] = {"name": "b" * 64}
    assert [p for p in check(recipe)
            if p.path == "spec.diagnostics.profilesBucket.name" and p.severity is ERROR]


def test_default_profiles_bucket_with_google_in_it(recipe: dict) -> None:
    recipe["spec"]["project"] = "my-google-ml"
    p = only(check(recipe), "gcp-names", "spec.diagnostics.profilesBucket.name", ERROR)
    assert "reserved word 'google'" in p.message


def test_multislice_node_pool_names_count_the_suffix(recipe: dict) -> None:
    recipe["spec"]["slices"] = [{"name": "s" * 38, "tpu": "v5e", "topology": "4x4",
                                 "count": 11}]
    recipe["spec"]["workloads"] = []
    p = only(check(recipe), "gcp-names", "spec.slices[0].name", ERROR)  # one, the longest
    assert f"'{'s' * 38}-10'" in p.message and "41 characters; at most 40" in p.message
    assert p.hint == "shorten the slice name"


def test_tpu7x_workload_policy_name_is_derived_too(recipe: dict) -> None:
    from mldiag_provision.preflight.context import Context
    from mldiag_provision.preflight.name_rules import derived_names
    from mldiag_provision.recipe.parse import parse_recipe_text

    recipe["spec"]["zone"] = "us-central1-c"
    recipe["spec"]["slices"] = [{"name": "ironwood", "tpu": "tpu7x", "topology": "2x2x4"}]
    recipe["spec"]["workloads"] = []
    text = yaml.safe_dump(recipe, sort_keys=False)
    res = pipeline.check_text(text, "r.yaml")
    parsed = parse_recipe_text(text, "r.yaml")
    ctx = Context(recipe=parsed.recipe, catalog=load_catalog(), sourcemap=parsed.sourcemap,
                  shapes={i: s for i, s in res.shapes.items()})
    kinds = {(n.kind, n.value) for n in derived_names(ctx)}
    assert ("computeResource", "rules-base-ironwood-workload") in kinds
    assert ("gkeNodePool", "ironwood") in kinds
    assert ("serviceAccountId", "rules-base-nodes") in kinds


def test_slurm_default_names(recipe: dict) -> None:
    recipe["metadata"]["name"] = "c" * 40
    recipe["spec"].update({
        "region": "us-east5", "zone": "us-east5-a", "orchestrator": {"type": "slurm"},
        "slices": [{"name": "a3u", "gpu": "h200-141gb", "machineType": "a3-ultragpu-8g",
                    "nodes": 2}],
        "slurm": {"storage": [{"id": "l" * 30, "mount": "/lustre",
                               "lustre": {"capacityGb": 18000}},
                              {"id": "home", "mount": "/home",
                               "filestore": {"capacityGb": 1024}}]},
        "workloads": []})
    problems = check(recipe)
    # Managed Lustre states no limit (names.yaml confidence L): a warning, not an error
    p = only(problems, "gcp-names", "spec.slurm.storage[0].lustre.name", WARNING)
    assert "71 characters" in p.message and "slurm.storage[0].lustre.name" in (p.hint or "")
    assert [p for p in problems if p.rule == "gcp-names" and "storage[1]" in p.path] == []


@pytest.mark.parametrize(("key", "name", "ok"), [
    ("gcsBucket", "a" * 63, True), ("gcsBucket", "a" * 64, False),
    ("gcsBucket", ".".join(["a" * 63] * 3), True), ("gcsBucket", "a." + "b" * 64, False),
    ("gcsBucket", "goog-x", False), ("gcsBucket", "my-g00gle-x", False),
    ("serviceAccountId", "abcde", False), ("serviceAccountId", "a" * 30, True),
    ("serviceAccountId", "a" * 31, False), ("gkeNodePool", "p" * 40, True),
    ("gkeNodePool", "p" * 41, False), ("customRoleId", "a.b_C", True),
    ("customRoleId", "ab", False), ("customRoleId", "a" * 65, False),
    ("labelValue", "x" * 64, False), ("computeResource", "n" * 63, True),
])
def test_limits(key: str, name: str, ok: bool) -> None:
    assert (load_name_limits()[key].why_invalid(name) is None) is ok


def test_every_limit_names_a_defined_source_and_a_confidence() -> None:
    from mldiag_provision.catalog.store import store

    doc = yaml.safe_load((DATA_DIR / "names.yaml").read_text())
    for key, raw in doc["names"].items():
        assert raw["source"] in store().sources, key
        assert raw["confidence"] in ("H", "M", "L"), key
        assert load_name_limits()[key].source.startswith("https://"), key


# -- gke-channel ---------------------------------------------------------------------------

def _catalog(**channels: tuple[str, str]) -> Catalog:
    tpu = yaml.safe_load((DATA_DIR / "tpu.yaml").read_text())
    gke = yaml.safe_load((DATA_DIR / "gke.yaml").read_text())
    for name, (lo, hi) in channels.items():
        gke["releaseChannels"]["channels"][name] = {"minMinor": lo, "maxMinor": hi}
    return Catalog(tpu, gke)


def test_min_version_newer_than_the_channel_offers(recipe: dict) -> None:
    recipe["spec"]["orchestrator"].update(releaseChannel="STABLE", minVersion="1.37")
    p = only(check(recipe), "gke-channel", "spec.orchestrator.minVersion", WARNING)
    assert "STABLE channel offers 1.34 to 1.35" in p.message
    assert "Master version must be one of" in p.message
    assert (p.hint or "").startswith("set releaseChannel: RAPID")
    assert p.source == "https://cloud.google.com/kubernetes-engine/docs/release-notes"


def test_managed_minimum_on_a_channel_without_it_hints_rapid_or_manual(recipe: dict) -> None:
    """A new cluster on STABLE got 1.35.x for the managed add-on whether or not STABLE offers
    it; with a STABLE that stops at 1.34 preflight says so, with the three ways out."""
    recipe["spec"]["orchestrator"]["releaseChannel"] = "STABLE"
    catalog = _catalog(STABLE=("1.32", "1.34"))
    p = only(check(recipe, catalog), "gke-channel", "spec.orchestrator.releaseChannel",
             WARNING)
    assert "1.35.0-gke.3065000 (GKE-managed ML Diagnostics)" in p.message
    assert "set releaseChannel: RAPID" in (p.hint or "")
    assert "diagnostics.agents: manual" in (p.hint or "")
    recipe["spec"]["orchestrator"]["releaseChannel"] = "RAPID"
    assert [x for x in check(recipe, catalog) if x.rule == "gke-channel"] == []


def test_min_version_older_than_the_channel_offers(recipe: dict) -> None:
    recipe["spec"]["orchestrator"].update(releaseChannel="REGULAR",
                                          minVersion="1.30.1-gke.1000000")
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    p = only(check(recipe), "gke-channel", "spec.orchestrator.minVersion", WARNING)
    assert "older than" in p.message and "raise minVersion to 1.34" in (p.hint or "")


def test_verified_channel_facts_fail(recipe: dict) -> None:
    tpu = yaml.safe_load((DATA_DIR / "tpu.yaml").read_text())
    gke = yaml.safe_load((DATA_DIR / "gke.yaml").read_text())
    gke["releaseChannels"]["confidence"] = "H"
    recipe["spec"]["orchestrator"].update(releaseChannel="STABLE", minVersion="1.37")
    only(check(recipe, Catalog(tpu, gke)), "gke-channel", "spec.orchestrator.minVersion",
         ERROR)


def test_manual_agents_below_the_channel_leave_the_version_to_gke(recipe: dict) -> None:
    """Without the managed add-on the TPU minimum (1.27/1.29) is older than any channel
    offers: plan renders no min_master_version (the channel default), and preflight is quiet.
    """
    recipe["spec"]["diagnostics"]["agents"] = "manual"
    res = pipeline.check_text(yaml.safe_dump(recipe, sort_keys=False), "r.yaml")
    assert [p for p in res.report.problems if p.rule == "gke-channel"] == []
    plan = build_plan(res.parsed.recipe, res.shapes, load_catalog())
    assert plan.cluster.min_master_version is None
    assert any("REGULAR channel's default" in d for d in plan.decisions), plan.decisions


# -- Log Analytics: render-time check against the work directory ---------------------------

def test_render_warns_when_log_analytics_is_turned_off_after_on(recipe: dict, tmp_path,
                                                               cli) -> None:
    """Preflight cannot see the work directory; `render` compares with the plan.json of the
    stack already there (plan/previous.py)."""
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    out_dir = str(tmp_path / "out")
    code, out, err = cli("render", str(path), "-o", out_dir)
    assert code == 0 and "log-analytics-off" not in out + err
    recipe["spec"]["diagnostics"]["logAnalytics"] = {"enabled": False}
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    code, out, err = cli("render", str(path), "-o", out_dir)
    assert code == 0, out + err
    assert "warning[log-analytics-off]" in out + err
    assert "cannot be turned off" in out + err and "r.yaml:" in out + err
    main = (tmp_path / "out" / "main.tf").read_text()
    assert "removed {" in main and "destroy = false" in main
    assert 'module "log_analytics"' not in main
    # a fresh directory with Log Analytics off: nothing to warn about
    code, out, err = cli("render", str(path), "-o", str(tmp_path / "fresh"))
    assert code == 0 and "log-analytics-off" not in out + err


def test_destroy_forgets_the_default_log_bucket_config() -> None:
    """The destroy path (stack/guard.py) forgets, never deletes, the _Default config and the
    enabled APIs."""
    from mldiag_provision.engines import PlanResult, PlanSummary, ResourceChange
    from mldiag_provision.stack.guard import forget_addresses

    address = "module.log_analytics.google_logging_project_bucket_config.default"
    api = 'module.services.google_project_service.this["x"]'
    plan = PlanResult(True, PlanSummary(delete=3), [
        ResourceChange(address, "google_logging_project_bucket_config", "delete"),
        ResourceChange(api, "google_project_service", "delete"),
        ResourceChange("module.cluster.google_container_cluster.this",
                       "google_container_cluster", "delete")], destroy=True)
    assert forget_addresses(plan) == [address, api]

def test_plan_and_apply_render_step_has_the_log_analytics_check(recipe: dict,
                                                                tmp_path) -> None:
    """plan/apply/destroy render through stack.workdir.render_into: the same check."""
    from mldiag_provision.stack.workdir import render_into

    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    first = render_into(tmp_path / "w", str(path))
    assert "log-analytics-off" not in {p.rule for p in first.problems}
    recipe["spec"]["diagnostics"]["logAnalytics"] = {"enabled": False}
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    second = render_into(tmp_path / "w", str(path))
    hits = [p for p in second.problems if p.rule == "log-analytics-off"]
    assert len(hits) == 1 and hits[0].severity is WARNING and hits[0].line > 0
