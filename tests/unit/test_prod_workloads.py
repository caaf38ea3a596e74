"""Issue 14, production workloads: volumes (Cloud Storage FUSE, PVC, emptyDir), tolerations,
annotations, priority class, ephemeral storage and the JobSet failure policy, from the recipe
through preflight, the plan, the rendered manifests and the Terraform stack; lint's
wiring-gcsfuse-annotation.

Each test fails on the code before issue 14: the recipe model refused every one of these
fields as unknown (``recipe-unknown-key``), and the JobSet carried ``maxRestarts: 0`` always.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from mldiag_provision.catalog.store import store
from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.plan.types import StackPlan
from mldiag_provision.quantity import parse_quantity
from mldiag_provision.render.stack import render_stack

ROOT = Path(__file__).resolve().parents[2]
VOLUMES = ROOT / "recipes" / "tpu-v6e-training-volumes-standard.yaml"
AUTOPILOT = ROOT / "recipes" / "tpu-v6e-4x4-multislice-autopilot.yaml"
SPOT = ROOT / "recipes" / "tpu-v6e-4x4-multislice-standard-spot.yaml"


def _write(tmp_path: Path, data: dict, name: str = "r.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return p


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _problems(path: Path) -> list:
    return list(check_file(str(path)).report.problems)


def plan_stack(path: Path) -> StackPlan:
    res = check_file(str(path))
    errors = [p.message for p in res.report.problems if p.severity.value == "error"]
    assert not errors, errors
    assert res.parsed.recipe is not None
    return build_plan(res.parsed.recipe, res.shapes, load_catalog())


def _rules(path: Path, severity: str | None = None) -> set[str]:
    return {p.rule for p in _problems(path)
            if severity is None or p.severity.value == severity}


def _manifest(path: Path, tmp_path: Path, workload: str) -> list[dict]:
    plan = plan_stack(path)
    files = render_stack(plan)
    return [d for d in yaml.safe_load_all(files[f"k8s/workloads/{workload}.yaml"]) if d]


def _pod_template(obj: dict) -> dict:
    if obj["kind"] == "JobSet":
        return obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return obj["spec"]["template"]


# --- the examples ------------------------------------------------------------------------------

def test_volumes_example_validates_clean() -> None:
    assert [p for p in _problems(VOLUMES)] == []


def test_volumes_example_renders_every_setting(tmp_path: Path) -> None:
    (jobset,) = _manifest(VOLUMES, tmp_path, "llm-train")
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 5,
                                               "restartStrategy": "BlockingRecreate"}
    tpl = _pod_template(jobset)
    gcs = store().fact("kubernetes", "volumes", "gcsFuse")
    assert tpl["metadata"]["annotations"] == {
        "team.example.com/cost-center": "ml-research",
        gcs["annotation"]["key"]: gcs["annotation"]["value"]}
    spec = tpl["spec"]
    assert spec["priorityClassName"] == "training-high"
    assert spec["tolerations"] == [{"key": "cloud.google.com/gke-spot", "operator": "Equal",
                                    "value": "true", "effect": "NoSchedule"}]
    by_name = {v["name"]: v for v in spec["volumes"]}
    assert by_name["training-data"]["csi"] == {
        "driver": gcs["driver"], "readOnly": True,
        "volumeAttributes": {"bucketName": "my-ml-project-datasets",
                             "mountOptions": "implicit-dirs,file-cache:max-size-mb:-1"}}
    assert "readOnly" not in by_name["checkpoints"]["csi"]
    assert by_name["shared-cache"] == {"name": "shared-cache",
                                       "persistentVolumeClaim": {"claimName": "compile-cache"}}
    assert by_name["scratch"] == {"name": "scratch", "emptyDir": {"sizeLimit": "40Gi"}}
    c = spec["containers"][0]
    assert {m["mountPath"]: m.get("readOnly", False) for m in c["volumeMounts"]} == {
        "/data": True, "/checkpoints": False, "/cache": False, "/scratch": False}
    assert c["resources"]["requests"]["ephemeral-storage"] == "50Gi"
    assert c["resources"]["limits"]["ephemeral-storage"] == "50Gi"


def test_volumes_example_stack_turns_on_the_driver_and_grants_the_buckets() -> None:
    plan = plan_stack(VOLUMES)
    assert plan.cluster.gcs_fuse_csi_driver is True  # type: ignore[attr-defined]
    assert [(g.bucket, g.role) for g in plan.bucket_grants] == [
        ("my-ml-project-checkpoints", "roles/storage.objectUser"),
        ("my-ml-project-datasets", "roles/storage.objectViewer")]
    files = render_stack(plan)
    main = files["main.tf"].decode()
    assert "enable_gcs_fuse_csi_driver    = true" in main
    assert 'resource "google_storage_bucket_iam_member" "workload_volumes"' in main
    assert '{ bucket = "my-ml-project-datasets", role = "roles/storage.objectViewer" }' in main
    assert "member = module.workload_identity.member" in main
    module = files["modules/gke/standard-cluster/main.tf"].decode()
    assert "gcs_fuse_csi_driver_config" in module


def test_stacks_without_volumes_keep_the_driver_off_and_grant_nothing() -> None:
    plan = plan_stack(SPOT)
    assert plan.cluster.gcs_fuse_csi_driver is False  # type: ignore[attr-defined]
    assert plan.bucket_grants == ()
    main = render_stack(plan)["main.tf"].decode()
    assert "enable_gcs_fuse_csi_driver" not in main
    assert "google_storage_bucket_iam_member" not in main


def test_multislice_autopilot_example_states_ephemeral_storage_and_restarts(
        tmp_path: Path) -> None:
    w = _load(AUTOPILOT)["spec"]["workloads"][0]
    assert "/tmp" in w["env"]["XLA_FLAGS"]
    stated = parse_quantity(w["resources"]["ephemeralStorage"])
    default = parse_quantity(str(store().fact("kubernetes", "ephemeralStorage",
                                              "autopilotDefault")["quantity"]))
    assert stated is not None and default is not None and stated > default
    (jobset,) = _manifest(AUTOPILOT, tmp_path, "maxtext-train")
    assert jobset["spec"]["failurePolicy"]["maxRestarts"] == w["failurePolicy"]["maxRestarts"] > 0
    res = _pod_template(jobset)["spec"]["containers"][0]["resources"]
    assert res["requests"]["ephemeral-storage"] == w["resources"]["ephemeralStorage"]


# --- JobSet restarts default -------------------------------------------------------------------

def test_spot_multislice_restarts_by_default(tmp_path: Path) -> None:
    from mldiag_provision.plan.kubernetes import SPOT_MULTISLICE_MAX_RESTARTS

    (jobset,) = _manifest(SPOT, tmp_path, "multislice-train")
    assert SPOT_MULTISLICE_MAX_RESTARTS > 0
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": SPOT_MULTISLICE_MAX_RESTARTS}
    assert any("maxRestarts" in d for d in plan_stack(SPOT).decisions)


def test_non_spot_multislice_keeps_zero_restarts(tmp_path: Path) -> None:
    data = _load(SPOT)
    data["spec"]["slices"][0]["capacity"] = {"type": "on-demand"}
    (jobset,) = _manifest(_write(tmp_path, data), tmp_path, "multislice-train")
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 0}


def test_stated_zero_restarts_win_over_the_spot_default(tmp_path: Path) -> None:
    data = _load(SPOT)
    data["spec"]["workloads"][0]["failurePolicy"] = {"maxRestarts": 0}
    (jobset,) = _manifest(_write(tmp_path, data), tmp_path, "multislice-train")
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 0}


# --- preflight ---------------------------------------------------------------------------------

def _volumes_variant(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = copy.deepcopy(_load(VOLUMES))
    edit(data["spec"]["workloads"][0], data)
    return _write(tmp_path, data)


@pytest.mark.parametrize("edit, rule", [
    (lambda w, d: w["volumes"].append({"name": "x", "mountPath": "/x"}), "workload-volumes"),
    (lambda w, d: w["volumes"].append({"name": "scratch", "mountPath": "/y",
                                       "emptyDir": {}}), "workload-volumes"),
    (lambda w, d: w["volumes"].append({"name": "again", "mountPath": "/data/",
                                       "emptyDir": {}}), "workload-volumes"),
    (lambda w, d: w["volumes"][3]["emptyDir"].update(sizeLimit="lots"), "workload-volumes"),
    (lambda w, d: w["tolerations"].append({"key": "a", "operator": "Exists", "value": "b"}),
     "workload-tolerations"),
    (lambda w, d: w["tolerations"].append({"operator": "Equal", "value": "b"}),
     "workload-tolerations"),
    (lambda w, d: w["tolerations"].append({"key": "a", "tolerationSeconds": 5,
                                           "effect": "NoSchedule"}), "workload-tolerations"),
    (lambda w, d: w["annotations"].update({"-bad-/key": "v"}), "workload-annotations"),
    (lambda w, d: w["annotations"].update({"gke-gcsfuse/volumes": "false"}),
     "workload-annotations"),
    (lambda w, d: w.update(priorityClassName="system-cluster-critical"),
     "workload-priority-class"),
    (lambda w, d: w["resources"].update(ephemeralStorage="fifty"),
     "workload-ephemeral-storage"),
    (lambda w, d: w["failurePolicy"].update(restartStrategy="InPlaceRestart"),
     "workload-failure-policy"),
    (lambda w, d: d["spec"]["orchestrator"]["crdVersions"].update(jobset="v0.5.2"),
     "workload-failure-policy"),
])
def test_preflight_reports(tmp_path: Path, edit, rule: str) -> None:  # type: ignore[no-untyped-def]
    problems = _problems(_volumes_variant(tmp_path, edit))
    assert rule in {p.rule for p in problems}, [p.message for p in problems]
    p = next(p for p in problems if p.rule == rule)
    assert p.path.startswith("spec.workloads[0]") and p.message


def test_restart_strategy_of_v0_12_is_fine_when_the_recipe_states_v0_12(tmp_path: Path) -> None:
    def edit(w: dict, d: dict) -> None:
        w["failurePolicy"]["restartStrategy"] = "InPlaceRestart"
        d["spec"]["orchestrator"]["crdVersions"]["jobset"] = "v0.12.0"
    assert "workload-failure-policy" not in _rules(_volumes_variant(tmp_path, edit))


def test_restart_strategies_fact_matches_the_vendored_crds() -> None:
    import json

    from mldiag_provision.lint import crdgen

    data = json.loads((Path(crdgen.__file__).parent / "data" / "crds.generated.json")
                      .read_text(encoding="utf-8"))
    fact = store().fact("kubernetes", "jobset", "failurePolicy")["restartStrategies"]
    for kind in data["kinds"]:
        if kind["kind"] != "JobSet":
            continue
        fp = kind["schema"]["properties"]["spec"]["properties"]["failurePolicy"]["properties"]
        assert "maxRestarts" in fp
        assert fact[kind["version"]] == fp.get("restartStrategy", {}).get("enum", []), (
            kind["version"])


def test_failure_policy_on_a_job_is_refused(tmp_path: Path) -> None:
    data = _load(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml")
    data["spec"]["workloads"][0]["failurePolicy"] = {"maxRestarts": 2}
    problems = _problems(_write(tmp_path, data))
    assert [p.severity.value for p in problems if p.rule == "workload-failure-policy"] == [
        "error"]


@pytest.mark.parametrize(("bucket", "why"), [
    ("192.168.5.4", "IP address"), ("goog-data", "reserved prefix"),
    ("my..bucket", "dot-separated"), ("a" * 70, "at most 63"), ("my-google-data", "google")])
def test_gcsfuse_bucket_names_follow_cloud_storage_naming(tmp_path: Path, bucket: str,
                                                         why: str) -> None:
    """The same naming check as the profiles bucket (catalog/data/names.yaml gcsBucket)."""
    data = _load(ROOT / "recipes" / "tpu-v6e-training-volumes-standard.yaml")
    vols = data["spec"]["workloads"][0]["volumes"]
    gcs = next(v for v in vols if "gcsFuse" in v)
    gcs["gcsFuse"]["bucket"] = bucket
    problems = [p for p in _problems(_write(tmp_path, data)) if p.rule == "workload-volumes"]
    assert [p.severity.value for p in problems] == ["error"], problems
    assert why in problems[0].message and problems[0].path.endswith(".gcsFuse.bucket")


def test_gcsfuse_without_workload_identity_is_refused(tmp_path: Path) -> None:
    data = _load(ROOT / "recipes" / "existing-gke-cluster.yaml")
    data["spec"]["orchestrator"]["workloadIdentity"] = False
    data["spec"]["workloads"][0]["volumes"] = [
        {"name": "d", "mountPath": "/d", "gcsFuse": {"bucket": "my-bucket"}}]
    problems = [p for p in _problems(_write(tmp_path, data)) if p.rule == "workload-volumes"]
    assert problems and problems[0].severity.value == "error"


def test_autopilot_ephemeral_storage_above_the_accelerator_maximum_is_reported(
        tmp_path: Path) -> None:
    data = _load(AUTOPILOT)
    hi = store().fact("kubernetes", "ephemeralStorage", "autopilotAcceleratorMax")
    data["spec"]["workloads"][0]["resources"]["ephemeralStorage"] = "100Ti"
    problems = [p for p in _problems(_write(tmp_path, data))
                if p.rule == "workload-ephemeral-storage"]
    assert len(problems) == 1 and str(hi["quantity"]) in problems[0].message
    # the maximum is not verified (confidence L): it warns, never blocks
    assert problems[0].severity.value == ("error" if hi.verified else "warning")


@pytest.mark.parametrize("recipe", ["AUTOPILOT", "STANDARD"])
def test_ephemeral_storage_without_a_unit_warns(tmp_path: Path, recipe: str) -> None:
    """`50` is 50 bytes (Kubernetes quantity): the pod is evicted on its first write."""
    data = _load({"AUTOPILOT": AUTOPILOT,
                  "STANDARD": ROOT / "recipes" / "tpu-v6e-training-volumes-standard.yaml"}[recipe])
    data["spec"]["workloads"][0]["resources"]["ephemeralStorage"] = "50"
    problems = [p for p in _problems(_write(tmp_path, data))
                if p.rule == "workload-ephemeral-storage"]
    assert [p.severity.value for p in problems] == ["warning"]
    assert "50 bytes" in problems[0].message and "50Gi" in (problems[0].hint or "")


def test_ephemeral_storage_was_an_unknown_key_before(tmp_path: Path) -> None:
    """The field the issue names is accepted now (it was refused as unknown)."""
    data = _load(AUTOPILOT)
    assert "recipe-unknown-key" not in _rules(_write(tmp_path, data))


# --- lint ----------------------------------------------------------------------------------------

def _lint(tmp_path: Path, docs: list[dict]) -> list:
    from mldiag_provision.lint.context import LintOptions
    from mldiag_provision.lint.linter import lint_sources
    from mldiag_provision.lint.loading import Source

    text = yaml.safe_dump_all(docs, sort_keys=False)
    return list(lint_sources([Source("m.yaml", text)],
                             LintOptions(kubernetes_version="1.35")).problems)


def test_lint_gcsfuse_volume_without_annotation(tmp_path: Path) -> None:
    (jobset,) = _manifest(VOLUMES, tmp_path, "llm-train")
    assert "wiring-gcsfuse-annotation" not in {p.rule for p in _lint(tmp_path, [jobset])}
    del _pod_template(jobset)["metadata"]["annotations"]["gke-gcsfuse/volumes"]
    found = [p for p in _lint(tmp_path, [jobset]) if p.rule == "wiring-gcsfuse-annotation"]
    assert len(found) == 1 and found[0].severity.value == "error"
    assert "training-data" in found[0].message


@pytest.mark.parametrize("value", [True, 1, ["true"]], ids=["bool", "int", "list"])
def test_lint_gcsfuse_annotation_of_the_wrong_type_is_one_finding(tmp_path: Path,
                                                                  value: object) -> None:
    """gke-gcsfuse/volumes: true (unquoted) is the schema's "expected a string", not also
    "mounts ... without the pod annotation"."""
    (jobset,) = _manifest(VOLUMES, tmp_path, "llm-train")
    _pod_template(jobset)["metadata"]["annotations"]["gke-gcsfuse/volumes"] = value
    found = [p for p in _lint(tmp_path, [jobset]) if p.severity.value == "error"]
    assert [(p.rule, p.path) for p in found] == [(
        "k8s-schema", "spec.replicatedJobs[0].template.spec.template.metadata"
        '.annotations["gke-gcsfuse/volumes"]')]
    kind = {bool: "a boolean", int: "an integer", list: "a list"}[type(value)]
    assert found[0].message == f"expected a string, got {kind}"
    lines = yaml.safe_dump_all([jobset], sort_keys=False).splitlines()
    key_line = next(i for i, t in enumerate(lines, 1) if "gke-gcsfuse/volumes:" in t)
    assert found[0].line == key_line


def _lint_autopilot(docs: list[dict]) -> list:
    from mldiag_provision.lint.context import LintOptions
    from mldiag_provision.lint.linter import lint_sources
    from mldiag_provision.lint.loading import Source

    text = yaml.safe_dump_all(docs, sort_keys=False)
    return list(lint_sources([Source("m.yaml", text)],
                             LintOptions(kubernetes_version="1.35", autopilot=True)).problems)


def test_lint_autopilot_xla_dumps_need_ephemeral_storage(tmp_path: Path) -> None:
    """The multislice Autopilot example as rendered before issue 14 (no ephemeral-storage,
    XLA dumps to /tmp) warns, so `lint --strict` fails it; as rendered now it is clean."""
    (jobset,) = _manifest(AUTOPILOT, tmp_path, "maxtext-train")
    assert not [p for p in _lint_autopilot([jobset]) if p.severity.value != "info"]
    c = _pod_template(jobset)["spec"]["containers"][0]
    for side in ("requests", "limits"):
        del c["resources"][side]["ephemeral-storage"]
    found = [p for p in _lint_autopilot([jobset]) if p.rule == "autopilot-ephemeral-storage"]
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert "/tmp/xla" in found[0].message
    # dumping to a mounted volume instead is fine
    c["volumeMounts"] = [{"name": "scratch", "mountPath": "/tmp"}]
    _pod_template(jobset)["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    assert "autopilot-ephemeral-storage" not in {p.rule for p in _lint_autopilot([jobset])}


def test_lint_autopilot_ephemeral_storage_above_the_maximum(tmp_path: Path) -> None:
    (jobset,) = _manifest(AUTOPILOT, tmp_path, "maxtext-train")
    c = _pod_template(jobset)["spec"]["containers"][0]
    for side in ("requests", "limits"):
        c["resources"][side]["ephemeral-storage"] = "100Ti"
    found = [p for p in _lint_autopilot([jobset]) if p.rule == "autopilot-ephemeral-storage"]
    assert len(found) == 1 and "100Ti" in found[0].message


def test_autopilot_bucket_mount_grants_access_without_an_addon_switch(tmp_path: Path) -> None:
    """Autopilot has the Cloud Storage FUSE driver on: the stack grants the bucket and leaves
    the cluster alone (its plan has no add-on field at all)."""
    data = _load(AUTOPILOT)
    data["spec"]["workloads"][0]["volumes"] = [
        {"name": "ckpt", "mountPath": "/ckpt", "gcsFuse": {"bucket": "my-ckpts"}},
        {"name": "ro", "mountPath": "/ro", "readOnly": True,
         "gcsFuse": {"bucket": "my-ckpts", "grantAccess": True}},
        {"name": "mine", "mountPath": "/mine", "gcsFuse": {"bucket": "granted-elsewhere",
                                                           "grantAccess": False}}]
    plan = plan_stack(_write(tmp_path, data))
    assert not hasattr(plan.cluster, "gcs_fuse_csi_driver")
    # one writable mount makes the grant objectUser; grantAccess: false grants nothing
    assert [(g.bucket, g.role) for g in plan.bucket_grants] == [
        ("my-ckpts", "roles/storage.objectUser")]
    files = render_stack(plan)
    assert '{ bucket = "my-ckpts", role = "roles/storage.objectUser" }' in files[
        "main.tf"].decode()
    assert "granted-elsewhere" not in files["main.tf"].decode()
    (jobset,) = [d for d in yaml.safe_load_all(files["k8s/workloads/maxtext-train.yaml"]) if d]
    assert _pod_template(jobset)["metadata"]["annotations"] == {"gke-gcsfuse/volumes": "true"}


def test_kubernetes_only_settings_are_refused_on_slurm(tmp_path: Path) -> None:
    data = _load(ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml")
    data["spec"]["workloads"][0]["tolerations"] = [{"key": "a", "operator": "Exists"}]
    data["spec"]["workloads"][0].setdefault("resources", {})["ephemeralStorage"] = "10Gi"
    found = sorted(p.path for p in _problems(_write(tmp_path, data))
                   if p.rule == "workload-kubernetes-only")
    assert found == ["spec.workloads[0].resources.ephemeralStorage",
                     "spec.workloads[0].tolerations"]
    assert "workload-kubernetes-only" not in _rules(SPOT)
