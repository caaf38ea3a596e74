"""``mldiag-provision preflight RECIPE --live`` against mldiag_provision/sandbox/gcp_apis.py
(the real
client libraries, REST/gRPC on the wire): every FAIL and WARN the live preflight can give,
a 403 on each API, a timeout, and a project where everything passes."""

from __future__ import annotations

import json
import time

import pytest

from cli_support import run_cli
from live.conftest import recipe_copy
from mldiag_provision.sandbox.gcp_apis import quota_dims, region_quota, reservation

V5P = "tpu-v5p-2x2x4-standard-reservation"  # us-east5-a, reservation v5p-reservation
V6E = "tpu-v6e-4x4-multislice-standard-spot"  # us-east5-b, 2 spot slices of 16 chips
V4 = "tpu-v4-2x2x4-autopilot"  # us-central2, no zone, on-demand 16 chips
EXISTING = "existing-gke-cluster"  # research-cluster in us-central1


def live(capsys, repo_root, recipe, *extra):
    path = recipe if str(recipe).endswith(".yaml") else repo_root / "recipes" / f"{recipe}.yaml"
    rc, out, err = run_cli(capsys, ["preflight", str(path), "--live", "--output", "json",
                                    *extra])
    doc = json.loads(out)
    return rc, doc, err


def rows(doc, status=None, check=None):
    return [r for r in doc["checks"] if (status is None or r["status"] == status)
            and (check is None or r["check"] == check)]


@pytest.mark.parametrize("recipe", [V5P, V6E, V4, EXISTING, "gpu-a3-ultra-standard"])
def test_everything_passes_in_a_ready_project(gcp, capsys, repo_root, recipe):
    rc, doc, _ = live(capsys, repo_root, recipe)
    bad = [r for r in doc["checks"] if r["status"] not in ("PASS", "SKIP")]
    assert rc == 0 and doc["ok"] and not bad, bad
    checks = {r["check"] for r in doc["checks"]}
    assert {"project", "permissions", "roles", "apis"} <= checks
    assert ("cluster" if recipe == EXISTING else "gke-version") in checks


def test_all_pass_text_output_names_each_object(gcp, capsys, repo_root):
    rc, out, _ = run_cli(capsys, ["preflight", str(repo_root / "recipes" / f"{V5P}.yaml"),
                                  "--live"])
    assert rc == 0
    assert "PASS project" in out and "projects/my-ml-project" in out
    assert "reservation v5p-reservation: 4 free ct5p-hightpu-4t VM(s) >= 4" in out
    assert "0 failed" in out


def test_project_not_active_fails(gcp, capsys, repo_root):
    gcp.project.state = "DELETE_REQUESTED"
    rc, doc, _ = live(capsys, repo_root, V5P)
    assert rc == 1 and not doc["ok"]
    assert [r["message"] for r in rows(doc, "FAIL")] == [
        "project my-ml-project is DELETE_REQUESTED, not ACTIVE"]


def test_missing_permission_names_it_and_a_role(gcp, capsys, repo_root):
    from mldiag_provision.cli.commands.preflight import _checked_plan
    from mldiag_provision.preflight.live.target import build_target
    from mldiag_provision.render.stack import render_stack

    _, plan = _checked_plan(str(repo_root / "recipes" / f"{V5P}.yaml"))
    needed = set(build_target(plan, render_stack(plan)).permissions)
    assert {"container.clusters.create", "resourcemanager.projects.setIamPolicy"} <= needed
    gcp.project.granted = needed - {"container.clusters.create",
                                    "resourcemanager.projects.setIamPolicy"}
    rc, doc, _ = live(capsys, repo_root, V5P)
    fails = rows(doc, "FAIL", "permissions")
    assert rc == 1 and len(fails) == 2
    by_msg = {f["message"]: f["hint"] for f in fails}
    gke = next(m for m in by_msg if "container.clusters.create" in m)
    assert "google_container_cluster" in gke
    assert "roles/container.clusterAdmin" in by_msg[gke]
    iam = next(m for m in by_msg if "resourcemanager.projects.setIamPolicy" in m)
    assert "roles/resourcemanager.projectIamAdmin" in by_msg[iam]


def test_a_permission_the_api_calls_invalid_is_a_warn_not_a_crash(gcp, capsys, repo_root):
    gcp.project.invalid_permissions = {"container.operations.get"}
    rc, doc, _ = live(capsys, repo_root, V5P)
    warns = rows(doc, "WARN", "permissions")
    assert rc == 0 and [w["message"] for w in warns] == [
        "could not test container.operations.get: the API calls it invalid for a project"]
    assert rows(doc, "PASS", "permissions")  # the others were still tested, one by one


def test_a_role_the_stack_grants_that_does_not_exist_fails(gcp, capsys, repo_root):
    gcp.project.all_roles_exist = False
    from mldiag_provision.catalog.tpu import load_catalog

    roles = [str(r["role"]) for r in load_catalog().fact("mlDiagnostics", "predefinedRoles")]
    gone = roles[1]
    gcp.project.roles = {r: {"name": r, "title": r, "stage": "GA"} for r in roles
                         if r != gone}
    rc, doc, _ = live(capsys, repo_root, V4)
    assert rc == 1
    assert [r["message"] for r in rows(doc, "FAIL")] == [f"role {gone} does not exist"]
    gcp.project.roles[gone] = {"name": gone, "title": gone, "stage": "DEPRECATED"}
    rc, doc, _ = live(capsys, repo_root, V4)
    assert rc == 0 and [r["message"] for r in rows(doc, "WARN", "roles")] == [
        f"role {gone} is DEPRECATED"]


def test_custom_role_permission_not_supported_fails(gcp, capsys, repo_root, tmp_path):
    from mldiag_provision.catalog.tpu import load_catalog

    perms = sorted(str(p["permission"]) for p in
                   load_catalog().fact("mlDiagnostics", "customRolePermissions"))
    recipe = recipe_copy(repo_root, V4, tmp_path, diagnostics={
        "logAnalytics": {"retentionDays": 30}, "iam": {"mode": "custom-role"}})
    gcp.project.testable = {p: "SUPPORTED" for p in perms}
    gcp.project.testable[perms[0]] = "NOT_SUPPORTED"
    gcp.project.testable[perms[-1]] = "TESTING"
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rc == 1
    assert [r["message"] for r in rows(doc, "FAIL", "custom-role")] == [
        f"permission {perms[0]} cannot be used in custom roles (NOT_SUPPORTED)"]
    assert [r["message"] for r in rows(doc, "WARN", "custom-role")] == [
        f"permission {perms[-1]} is TESTING in custom roles (may change without notice)"]
    del gcp.project.testable[perms[1]]  # both pages read: a permission missing from both
    del gcp.project.testable[perms[2]]
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert f"permissions {perms[1]}, {perms[2]} of the custom role are not testable on " \
        "project my-ml-project" in rows(doc, "FAIL", "custom-role")[0]["message"]


def test_apis_off_and_caller_may_not_enable_them_fails(gcp, capsys, repo_root):
    from mldiag_provision.cli.commands.preflight import _checked_plan
    from mldiag_provision.preflight.live.target import build_target
    from mldiag_provision.render.stack import render_stack

    _, plan = _checked_plan(str(repo_root / "recipes" / f"{V4}.yaml"))
    target = build_target(plan, render_stack(plan))
    gcp.project.enabled = set(target.services) - {"container.googleapis.com"}
    rc, doc, _ = live(capsys, repo_root, V4)
    assert rc == 0 and "container.googleapis.com" in rows(doc, "PASS", "apis")[0]["message"]
    gcp.project.granted = set(target.permissions) - {"serviceusage.services.enable"}
    rc, doc, _ = live(capsys, repo_root, V4)
    fails = rows(doc, "FAIL", "apis")
    assert rc == 1 and fails[0]["message"] == (
        "container.googleapis.com is off and the caller lacks serviceusage.services.enable "
        "to turn it on")
    assert "roles/serviceusage.serviceUsageAdmin" in fails[0]["hint"]


def test_gke_version_not_offered_on_the_channel_fails(gcp, capsys, repo_root):
    gcp.project.channels["RAPID"] = ["1.34.3-gke.1100", "1.33.5-gke.1300"]
    rc, doc, _ = live(capsys, repo_root, V5P)  # RAPID, needs 1.35.0-gke.3065000
    assert rc == 1
    assert [r["message"] for r in rows(doc, "FAIL")] == [
        "GKE 1.35.0-gke.3065000 or later is not offered on the RAPID channel in us-east5 "
        "(newest offered: 1.34.3-gke.1100)"]


def test_machine_type_not_offered_in_the_zone_fails(gcp, capsys, repo_root):
    gcp.project.zones_offering["ct5p-hightpu-4t"] = ["us-east5-b"]
    rc, doc, _ = live(capsys, repo_root, V5P)
    assert rc == 1
    assert rows(doc, "FAIL", "machine-type")[0]["message"] == (
        "ct5p-hightpu-4t (slice v5p-16) is not offered in zone us-east5-a; offered in "
        "us-east5-b")
    gcp.project.zones_offering["ct4p-hightpu-4t"] = ["us-east1-b"]
    rc, doc, _ = live(capsys, repo_root, V4)  # no zone: any zone of the region
    assert rows(doc, "FAIL", "machine-type")[0]["message"] == (
        "ct4p-hightpu-4t (slice v4-16) is not offered in any zone of us-central2")


@pytest.mark.parametrize("case,expected", [
    ("missing", "reservation v5p-reservation does not exist in project my-ml-project, zone "
                "us-east5-a"),
    ("machine", "reservation v5p-reservation holds ct5lp-hightpu-4t, not ct5p-hightpu-4t "
                "(slice v5p-16)"),
    ("full", "reservation v5p-reservation has 1 free of 4 VMs; slice v5p-16 needs 4"),
])
def test_reservation_failures(gcp, capsys, repo_root, case, expected):
    key = ("my-ml-project", "us-east5-a", "v5p-reservation")
    if case == "missing":
        del gcp.project.reservations[key]
    elif case == "machine":
        gcp.project.reservations[key] = reservation("v5p-reservation", "us-east5-a",
                                                    "ct5lp-hightpu-4t", count=4)
    else:
        gcp.project.reservations[key] = reservation("v5p-reservation", "us-east5-a",
                                                    "ct5p-hightpu-4t", count=4, in_use=3)
    rc, doc, _ = live(capsys, repo_root, V5P)
    assert rc == 1 and [r["message"] for r in rows(doc, "FAIL")] == [expected]
    assert [r["message"] for r in rows(doc, "SKIP", "quota")] == [
        "slice v5p-16: quota not checked (reserved capacity was counted against quota when "
        "the reservation was made)"]


def test_autopilot_reservation_is_found_in_the_region(gcp, capsys, repo_root):
    recipe = "tpu-v6e-4x4-multislice-autopilot"  # no zone, reservation trillium-reservation
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rc == 1 and rows(doc, "FAIL", "reservation")[0]["message"] == (
        "reservation trillium-reservation does not exist in project my-ml-project, region "
        "us-east5")
    key = ("my-ml-project", "us-east5-b", "trillium-reservation")
    gcp.project.reservations[key] = reservation("trillium-reservation", "us-east5-b",
                                                "ct6e-standard-4t", count=8)
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rows(doc, "PASS", "reservation")[0]["evidence"] == (
        "projects/my-ml-project/zones/us-east5-b/reservations/trillium-reservation")
    assert rc == 0, rows(doc, "FAIL")


def test_reservation_owned_elsewhere_must_be_shared(gcp, capsys, repo_root, tmp_path):
    recipe = recipe_copy(repo_root, V5P, tmp_path)
    import yaml

    doc = yaml.safe_load(recipe.read_text())
    doc["spec"]["slices"][0]["capacity"]["reservationProject"] = "capacity-owner"
    recipe.write_text(yaml.safe_dump(doc))
    key = ("capacity-owner", "us-east5-a", "v5p-reservation")
    gcp.project.reservations[key] = reservation("v5p-reservation", "us-east5-a",
                                                "ct5p-hightpu-4t", count=4,
                                                shared_with=["someone-else"])
    rc, out, _ = live(capsys, repo_root, recipe)
    assert rc == 1 and [r["message"] for r in rows(out, "FAIL")] == [
        "reservation v5p-reservation of project capacity-owner is not shared with project "
        "my-ml-project"]
    gcp.project.reservations[key] = reservation("v5p-reservation", "us-east5-a",
                                                "ct5p-hightpu-4t", count=4,
                                                shared_with=["my-ml-project"])
    rc, out, _ = live(capsys, repo_root, recipe)
    assert rc == 0, rows(out, "FAIL")


def test_quota_below_the_chips_fails_naming_the_quota(gcp, capsys, repo_root):
    gcp.project.quotas["PREEMPTIBLE-TPU-V6E-per-project-region"] = [
        quota_dims("us-east5", 16), {"dimensions": {}, "details": {"value": "1000"}}]
    rc, doc, _ = live(capsys, repo_root, V6E)  # 2 spot slices x 16 chips
    assert rc == 1
    assert [r["message"] for r in rows(doc, "FAIL")] == [
        "quota PREEMPTIBLE-TPU-V6E-per-project-region region=us-east5: limit 16 - usage 0 = 16 "
        "free in us-east5; slice trillium need(s) 32"]
    gcp.project.quotas["TPU-V4-PODSLICE-per-project-region"] = [quota_dims("us-central1", 99)]
    rc, doc, _ = live(capsys, repo_root, V4)  # only other regions listed: not checked
    assert rows(doc, "WARN", "quota") and not rows(doc, "FAIL")


def test_gpu_quota_uses_the_family_dimension(gcp, capsys, repo_root, tmp_path):
    import yaml

    recipe = recipe_copy(repo_root, "gpu-a3-ultra-standard", tmp_path)
    doc = yaml.safe_load(recipe.read_text())
    doc["spec"]["slices"][0]["capacity"] = {"type": "on-demand"}
    recipe.write_text(yaml.safe_dump(doc))
    gcp.project.quotas["GPUS-PER-GPU-FAMILY-per-project-region"] = [
        quota_dims("us-east5", 0, gpu_family="NVIDIA_H200"),
        quota_dims("us-east5", 64, gpu_family="NVIDIA_H100")]
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rc == 1 and [r["message"] for r in rows(doc, "FAIL")] == [
        "quota GPUS-PER-GPU-FAMILY-per-project-region gpu_family=NVIDIA_H200 region=us-east5: "
        "limit 0 - usage 0 = 0 free in us-east5; slice a3u need(s) 16"]


# Quota with usage (issue 29): limit - current usage (Compute regions.get) against the need.
# Three shapes of "too little left", from three public accounts of it: TPU v6e spot chips held
# by another workload (GKE TPU quota page: quota is per region, shared by every zone in it,
# https://cloud.google.com/kubernetes-engine/docs/how-to/tpus#ensure-quota), v4 on-demand
# chips of another slice, and H200 GPUs of the same family in use (Cloud Quotas' usage example
# compares Monitoring usage to the QuotaInfo value:
# https://cloud.google.com/docs/quotas/implement-common-use-cases).
@pytest.mark.parametrize("recipe,region,metric,usage,expected", [
    (V6E, "us-east5", "PREEMPTIBLE_TPU_V6E", 40,
     "quota PREEMPTIBLE-TPU-V6E-per-project-region region=us-east5: limit 64 - usage 40 = 24 "
     "free in us-east5; slice trillium need(s) 32"),
    (V4, "us-central2", "TPU_PODSLICE_V4", 60,
     "quota TPU-V4-PODSLICE-per-project-region region=us-central2: limit 64 - usage 60 = 4 "
     "free in us-central2; slice v4-16 need(s) 16"),
    ("gpu-on-demand", "us-east5", "NVIDIA_H200_GPUS", 8,
     "quota GPUS-PER-GPU-FAMILY-per-project-region gpu_family=NVIDIA_H200 region=us-east5: "
     "limit 16 - usage 8 = 8 free in us-east5; slice a3u need(s) 16"),
])
def test_quota_usage_that_leaves_too_little_fails_naming_quota_region_and_numbers(
        gcp, capsys, repo_root, tmp_path, recipe, region, metric, usage, expected):
    if recipe == "gpu-on-demand":
        recipe = _gpu_on_demand(repo_root, tmp_path)
    for q in gcp.project.region_quotas[region]:
        if q["metric"] == metric:
            q["usage"] = float(usage)
    rc, doc, _ = live(capsys, repo_root, recipe)
    fails = rows(doc, "FAIL")
    assert rc == 1 and [r["message"] for r in fails] == [expected]
    assert f"request an increase of {expected.split()[1]} in {region}" in fails[0]["hint"]
    assert "--ignore-live-failures" in fails[0]["hint"]
    assert "QUOTA_EXCEEDED" in fails[0]["hint"]
    assert f"regions/{region} quotas[{metric}]" in fails[0]["evidence"]


def _gpu_on_demand(repo_root, tmp_path):
    import yaml

    recipe = recipe_copy(repo_root, "gpu-a3-ultra-standard", tmp_path)
    doc = yaml.safe_load(recipe.read_text())
    doc["spec"]["slices"][0]["capacity"] = {"type": "on-demand"}
    recipe.write_text(yaml.safe_dump(doc))
    return recipe


def test_quota_with_enough_left_passes_with_the_numbers(gcp, capsys, repo_root, tmp_path):
    rc, doc, _ = live(capsys, repo_root, V4)
    assert rc == 0 and [r["message"] for r in rows(doc, "PASS", "quota")] == [
        "quota TPU-V4-PODSLICE-per-project-region region=us-central2: limit 64 - usage 16 = 48 "
        "free in us-central2; slice v4-16 need(s) 16"]
    assert [p for m, p in gcp.requests if "/regions/" in p and "/regions/us-central2/" not in p
            ] == ["/compute/v1/projects/my-ml-project/regions/us-central2"]  # asked once
    # exactly enough left is enough
    gcp.project.region_quotas["us-east5"] = [region_quota("NVIDIA_H200_GPUS", 16, 0),
                                             region_quota("PREEMPTIBLE_TPU_V6E", 64, 32)]
    rc, doc, _ = live(capsys, repo_root, V6E)
    assert rc == 0 and rows(doc, "PASS", "quota")[0]["message"].endswith(
        "limit 64 - usage 32 = 32 free in us-east5; slice trillium need(s) 32")
    rc, doc, _ = live(capsys, repo_root, _gpu_on_demand(repo_root, tmp_path))
    assert rc == 0 and rows(doc, "PASS", "quota")[0]["message"] == (
        "quota GPUS-PER-GPU-FAMILY-per-project-region gpu_family=NVIDIA_H200 region=us-east5: "
        "limit 16 - usage 0 = 16 free in us-east5; slice a3u need(s) 16")


@pytest.mark.parametrize("how,why", [
    ("denied", "permission denied (compute.regions.get)"),
    ("unavailable", "regions.get returned no quota information (quotaStatusWarning)"),
    ("unlisted", "regions.get lists no metric TPU_PODSLICE_V4 in us-central2"),
])
def test_usage_unreadable_is_a_warn_saying_the_limit_alone_was_compared(gcp, capsys, repo_root,
                                                                        how, why):
    if how == "denied":
        gcp.project.denied = {"compute"}
    elif how == "unavailable":
        del gcp.project.region_quotas["us-central2"]
    else:
        gcp.project.region_quotas["us-central2"] = [region_quota("CPUS", 96, 8)]
    rc, doc, _ = live(capsys, repo_root, V4)
    warns = rows(doc, "WARN", "quota")
    assert rc == 0 and [w["message"] for w in warns] == [
        "quota TPU-V4-PODSLICE-per-project-region region=us-central2: the limit alone was "
        f"compared (64 >= 16 for slice v4-16); current usage could not be read: {why}"]
    assert "compute.regions.get" in warns[0]["hint"]
    # the limit alone below the need still FAILs
    gcp.project.quotas["TPU-V4-PODSLICE-per-project-region"] = [quota_dims("us-central2", 8)]
    rc, doc, _ = live(capsys, repo_root, V4)
    assert rc == 1 and [r["message"] for r in rows(doc, "FAIL", "quota")] == [
        "quota TPU-V4-PODSLICE-per-project-region region=us-central2 is 8; slice v4-16 "
        f"need(s) 16 (current usage not read: {why})"]


def test_unknown_quota_id_is_a_warn(gcp, capsys, repo_root):
    del gcp.project.quotas["TPU-V4-PODSLICE-per-project-region"]
    rc, doc, _ = live(capsys, repo_root, V4)
    assert rc == 0 and rows(doc, "WARN", "quota")[0]["message"] == (
        "could not check quota TPU-V4-PODSLICE-per-project-region: Cloud Quotas does not "
        "know this id")


@pytest.mark.parametrize("change,expected", [
    ("missing", "cluster research-cluster does not exist in us-central1"),
    ("old", "cluster research-cluster runs GKE 1.33.5-gke.1300, below 1.35.0-gke.3065000 that "
            "the stack needs"),
    ("pool", "cluster research-cluster has Workload Identity pool 'none', not "
             "my-ml-project.svc.id.goog"),
])
def test_existing_cluster_failures(gcp, capsys, repo_root, change, expected):
    key = ("us-central1", "research-cluster")
    if change == "missing":
        del gcp.project.clusters[key]
    elif change == "old":
        gcp.project.clusters[key]["currentMasterVersion"] = "1.33.5-gke.1300"
    else:
        del gcp.project.clusters[key]["workloadIdentityConfig"]
    rc, doc, _ = live(capsys, repo_root, EXISTING)
    assert rc == 1 and [r["message"] for r in rows(doc, "FAIL")] == [expected]


@pytest.mark.parametrize("api,check", [
    ("cloudresourcemanager", "project"), ("iam", "roles"), ("serviceusage", "apis"),
    ("container", "gke-version"), ("compute", "machine-type"), ("cloudquotas", "quota")])
def test_a_403_on_each_api_is_a_warn_naming_what_was_not_checked(gcp, capsys, repo_root,
                                                                  api, check):
    gcp.project.denied = {api}
    recipe = V4 if api == "cloudquotas" else V5P
    rc, doc, _ = live(capsys, repo_root, recipe)
    assert rc == 0 and not rows(doc, "FAIL"), rows(doc, "FAIL")
    warns = rows(doc, "WARN", check)
    assert warns and all("could not check" in w["message"] for w in warns)
    if api == "serviceusage":
        assert "serviceusage.services.list" in warns[0]["hint"]
    others = {r["check"] for r in rows(doc, "PASS")}
    assert "permissions" in others or api == "cloudresourcemanager"


def test_an_api_that_is_off_is_a_warn_naming_it(gcp, capsys, repo_root):
    gcp.project.disabled = {"cloudquotas"}
    rc, doc, _ = live(capsys, repo_root, V4)
    warn = rows(doc, "WARN", "quota")[0]
    assert rc == 0 and warn["message"] == (
        "could not check quota TPU-V4-PODSLICE-per-project-region: cloudquotas.googleapis.com "
        "is off in project my-ml-project")
    assert warn["hint"].startswith("gcloud services enable cloudquotas.googleapis.com")


def test_an_api_that_does_not_answer_in_time_is_a_warn(gcp, capsys, repo_root):
    # a 2 s bound (0.5 s was flaky: on a loaded 2-core box the other calls, which the stand-in
    # answers at once, sometimes took longer than that too) and a server 3x slower
    gcp.project.delay_s = {"container": 6.0}
    started = time.monotonic()
    rc, doc, _ = live(capsys, repo_root, V5P, "--live-timeout", "2")
    elapsed = time.monotonic() - started
    assert rc == 0
    assert rows(doc, "WARN", "gke-version")[0]["message"] == (
        "could not check the GKE versions of us-east5: no answer within 2s")
    assert rows(doc, "PASS", "reservation")  # the others answered meanwhile
    assert elapsed < 5.5, elapsed  # bounded by the timeout, not the slow server


def test_wrong_token_is_a_warn_per_check_not_a_crash(gcp, capsys, repo_root, monkeypatch):
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "not-the-token")
    rc, doc, _ = live(capsys, repo_root, V5P)
    assert rc == 0 and not rows(doc, "FAIL") and rows(doc, "WARN", "project")


def test_no_credentials_is_a_usage_error(repo_root, tmp_path):
    """A new process (google-auth reads NO_GCE_CHECK when imported: no metadata server
    probe), with no token, no key file and an empty gcloud config."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in (
        "GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "MLDIAG_OFFLINE")}
    env.update(CLOUDSDK_CONFIG=str(tmp_path), HOME=str(tmp_path), NO_GCE_CHECK="true")
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision", "preflight",
                           str(repo_root / "recipes" / f"{V5P}.yaml"), "--live"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "no Google Cloud credentials for the live checks" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_without_live_no_request_is_made(gcp, capsys, repo_root):
    rc, out, _ = run_cli(capsys, ["preflight", str(repo_root / "recipes" / f"{V5P}.yaml")])
    assert rc == 0 and "add --live" in out and gcp.requests == []


def test_validate_and_render_never_import_the_google_cloud_clients(repo_root, tmp_path):
    """Cold start: the client libraries (the ``live`` extra) load only for live checks."""
    import subprocess
    import sys

    code = ("import sys\nfrom mldiag_provision.cli.app import main\n"
            f"main(['validate', {str(repo_root / 'recipes' / (V5P + '.yaml'))!r}])\n"
            f"main(['render', {str(repo_root / 'recipes' / (V5P + '.yaml'))!r}, '-o', "
            f"{str(tmp_path / 'out')!r}])\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('google.cloud.compute',"
            " 'google.cloud.resourcemanager', 'google.cloud.iam_admin', 'grpc',"
            " 'google.cloud.container', 'google.cloud.cloudquotas',"
            " 'mldiag_provision.preflight.live')))\n"
            "print('IMPORTED', bad)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert "IMPORTED []" in proc.stdout, proc.stdout[-500:]


def _gate_args(recipe, **kw):
    import argparse

    base = {"recipe": recipe, "output": "text", "offline": False,
            "ignore_live_failures": False, "live_timeout": 5.0}
    base.update(kw)
    return argparse.Namespace(**base)


def test_plan_gate_runs_only_with_credentials(gcp, repo_root, monkeypatch, tmp_path):
    import io

    from mldiag_provision.cli.commands.preflight import live_gate
    from mldiag_provision.console import Console

    recipe = str(repo_root / "recipes" / f"{V5P}.yaml")
    out, err = io.StringIO(), io.StringIO()
    # credentials (the token the stand-in accepts): the checks run, all pass
    rows_ = live_gate(_gate_args(recipe), Console(out, color=False), Console(err, color=False))
    assert rows_ and all(r["status"] in ("PASS", "SKIP") for r in rows_)
    assert "live checks of project my-ml-project" in out.getvalue()
    asked = len(gcp.requests)
    # --offline, or MLDIAG_OFFLINE: nothing asked
    assert live_gate(_gate_args(recipe, offline=True), Console(out), Console(err)) == []
    monkeypatch.setenv("MLDIAG_OFFLINE", "1")
    assert live_gate(_gate_args(recipe), Console(out), Console(err)) == []
    monkeypatch.delenv("MLDIAG_OFFLINE")
    # no credentials anywhere: skipped with a note, nothing asked
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN")
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setattr("mldiag_provision.preflight.live._gce_residency", lambda: False)
    out = io.StringIO()
    assert live_gate(_gate_args(recipe), Console(out, color=False), Console(err)) == []
    assert "live checks skipped: no Google Cloud credentials found" in out.getvalue()
    assert len(gcp.requests) == asked


def test_plan_gate_fail_raises_before_terraform_and_override_announces(gcp, repo_root):
    import io

    from mldiag_provision.cli.commands.preflight import live_gate
    from mldiag_provision.console import Console
    from mldiag_provision.errors import InputError

    gcp.project.state = "DELETE_REQUESTED"
    recipe = str(repo_root / "recipes" / f"{V5P}.yaml")
    with pytest.raises(InputError) as info:
        live_gate(_gate_args(recipe), Console(io.StringIO()), Console(io.StringIO()))
    assert [p.rule for p in info.value.problems] == ["live-project"]
    err = io.StringIO()
    rows_ = live_gate(_gate_args(recipe, ignore_live_failures=True), Console(io.StringIO()),
                      Console(err, color=False))
    assert any(r["status"] == "FAIL" for r in rows_)
    assert "--ignore-live-failures: going on to Terraform despite 1 FAILED" in err.getvalue()


# --- CPU quotas with usage (issue 29) ----------------------------------------------------------

def test_cpu_quota_usage_that_leaves_too_little_fails_naming_the_quota(gcp, capsys, repo_root):
    """The GKE Standard system pool (e2-standard-4, one node per zone of us-east5) draws
    E2_CPUS; a usage that leaves fewer vCPUs than it needs FAILs with the numbers."""
    for q in gcp.project.region_quotas["us-east5"]:
        if q["metric"] == "E2_CPUS":
            q["usage"] = 90.0
    rc, doc, _ = live(capsys, repo_root, V5P)
    fails = rows(doc, "FAIL")
    assert rc == 1 and len(fails) == 1, fails
    msg = fails[0]["message"]
    assert msg.startswith("CPU quota E2_CPUS: limit 96 - usage 90 = 6 free in us-east5; "
                          "system node pool (")
    assert "x e2-standard-4, 4 vCPUs each) need(s)" in msg
    assert "request an increase of E2_CPUS in us-east5" in fails[0]["hint"]
    assert "--ignore-live-failures" in fails[0]["hint"]
    assert fails[0]["evidence"] == "projects/my-ml-project/regions/us-east5 quotas[E2_CPUS]"


def test_cpu_quota_with_enough_left_passes_with_the_numbers(gcp, capsys, repo_root):
    rc, doc, _ = live(capsys, repo_root, V5P)
    cpu = [r for r in rows(doc, "PASS", "quota") if r["message"].startswith("CPU quota")]
    assert rc == 0 and len(cpu) == 1
    assert "limit 96 - usage 8 = 88 free in us-east5" in cpu[0]["message"]


def test_slurm_login_nodes_and_spot_node_sets_draw_their_own_quotas(gcp, capsys, repo_root):
    """slurm-a3-ultra-lustre: the login node (n2-standard-8, on-demand) draws N2_CPUS; the
    cpu node set (up to 4 x n2-standard-16, Spot) draws PREEMPTIBLE_CPUS. Both short: two
    FAILs, each naming its quota and pool."""
    gcp.project.region_quotas["us-east5"] += [region_quota("PREEMPTIBLE_CPUS", 64, 40)]
    for q in gcp.project.region_quotas["us-east5"]:
        if q["metric"] == "N2_CPUS":
            q["limit"], q["usage"] = 64.0, 60.0
    rc, doc, _ = live(capsys, repo_root, "slurm-a3-ultra-lustre")
    cpu = sorted(r["message"] for r in rows(doc, "FAIL") if r["message"].startswith("CPU"))
    assert rc == 1 and cpu == [
        "CPU quota N2_CPUS: limit 64 - usage 60 = 4 free in us-east5; Slurm login nodes "
        "(1 x n2-standard-8, 8 vCPUs each) need(s) 8 vCPUs",
        "CPU quota PREEMPTIBLE_CPUS: limit 64 - usage 40 = 24 free in us-east5; Slurm node "
        "set cpu (4 x n2-standard-16, 16 vCPUs each) need(s) 64 vCPUs"], rows(doc, "FAIL")


def test_cpu_quota_not_listed_is_a_warn_not_a_fail(gcp, capsys, repo_root):
    gcp.project.region_quotas["us-east5"] = [
        q for q in gcp.project.region_quotas["us-east5"] if q["metric"] != "E2_CPUS"]
    rc, doc, _ = live(capsys, repo_root, V5P)
    warns = [r for r in rows(doc, "WARN") if "E2_CPUS" in r["message"]]
    assert rc == 0 and len(warns) == 1
    assert "regions.get lists no metric E2_CPUS in us-east5" in warns[0]["message"]


def test_cpu_metric_and_vcpus_by_machine_name():
    from mldiag_provision.preflight.live.checks import cpu_metric
    from mldiag_provision.preflight.live.target import CpuNeed, vcpus_of

    assert vcpus_of("e2-standard-4") == 4 and vcpus_of("c3-highcpu-22") == 22
    assert vcpus_of("n2-highmem-128") == 128
    assert vcpus_of("e2-medium") is None and vcpus_of("n2-custom-4-8192") is None
    assert cpu_metric(CpuNeed("x", "n2-standard-4", 1, 4, "on-demand")) == "N2_CPUS"
    assert cpu_metric(CpuNeed("x", "n1-standard-4", 1, 4, "on-demand")) == "CPUS"
    assert cpu_metric(CpuNeed("x", "n2-standard-4", 1, 4, "spot")) == "PREEMPTIBLE_CPUS"
