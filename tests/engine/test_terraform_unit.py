"""The Terraform engine without Terraform: argv it builds, how it reads plans, progress and
errors (recorded runner with canned answers), and the error translations."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mldiag_provision.cli.commands._stack import Progress, show_plan
from mldiag_provision.console import Console
from mldiag_provision.engines import ProgressEvent, ResourceChange
from mldiag_provision.engines.terraform import TerraformEngine, parse_plan_json, translate
from mldiag_provision.errors import EngineError
from mldiag_provision.runner import RecordingRunner


def rc(address: str, rtype: str, actions: list[str], before=None, replace=()) -> dict:
    return {"address": address, "type": rtype,
            "change": {"actions": actions, "before": before, "after": {},
                       "replace_paths": [[p] for p in replace]}}


PLAN = {
    "resource_changes": [
        rc("module.services.google_project_service.this[\"a\"]", "google_project_service",
           ["create"]),
        rc("module.cluster.google_container_cluster.this", "google_container_cluster",
           ["delete", "create"], {"name": "c"}, ["location"]),
        rc("google_container_node_pool.tpu", "google_container_node_pool", ["delete"],
           {"node_config": [{"machine_type": "ct5lp-hightpu-4t"}]}),
        rc("module.profiles_bucket.google_storage_bucket.this[0]", "google_storage_bucket",
           ["delete"], {"name": "b", "force_destroy": True}),
        rc("module.log.google_logging_project_bucket_config.default",
           "google_logging_project_bucket_config", ["update"]),
        rc("data.google_service_account.x", "google_service_account", ["read"]),
        rc("google_service_account.same", "google_service_account", ["no-op"]),
    ],
    "output_changes": {"a": {"actions": ["update"]}, "b": {"actions": ["no-op"]}},
    "resource_drift": [rc("module.profiles_bucket.google_storage_bucket.this[0]",
                          "google_storage_bucket", ["update"])],
}


def test_plan_json_counts_and_dangers() -> None:
    plan = parse_plan_json(PLAN)
    s = plan.summary
    assert (s.create, s.update, s.replace, s.delete, s.read, s.outputs_changed) == (
        1, 1, 1, 2, 1, 1)
    assert plan.has_changes and s.text() == ("1 to create, 1 to update, 1 to replace, "
                                            "2 to delete")
    dangers = plan.dangers
    assert len(dangers) == 3
    assert dangers[0].startswith("REPLACES the GKE cluster module.cluster."
                                 "google_container_cluster.this (because of location)")
    assert dangers[1].startswith("DELETES the TPU node pool/VM google_container_node_pool.tpu")
    assert dangers[2] == ("DELETES the profiles bucket b WITH every profile in it "
                          "(force_destroy = true)")
    assert [c.address for c in plan.drift] == [
        "module.profiles_bucket.google_storage_bucket.this[0]"]
    assert parse_plan_json({}).has_changes is False


def test_red_block_names_what_is_lost_by_kind() -> None:
    """A system pool is not called a TPU pool; GPU pools, the Slurm cluster with the storage
    it created, and kept-only types (APIs, _Default) are told apart."""
    def pool(machine: str, **extra: object) -> ResourceChange:
        return ResourceChange("module.p.google_container_node_pool.this",
                              "google_container_node_pool", "delete",
                              {"node_config": [{"machine_type": machine, **extra}]})

    assert pool("e2-standard-4").danger is None
    assert "TPU node pool" in (pool("tpu7x-standard-4t").danger or "")
    assert "GPU node pool" in (pool("a3-ultragpu-8g").danger or "")
    slurm = ResourceChange("module.slurm.google_hypercomputecluster_cluster.this",
                           "google_hypercomputecluster_cluster", "delete", {
                               "storage_resources": [
                                   {"id": "home", "config": [{"new_filestore": [
                                       {"filestore": "projects/p/locations/z/instances/h"}]}]},
                                   {"id": "lustre", "config": [{"new_lustre": [
                                       {"lustre": "projects/p/locations/z/instances/l"}]}]},
                                   {"id": "data", "config": [{"existing_bucket": [
                                       {"bucket": "mine"}]}]}]})
    text = slurm.danger or ""
    assert "managed Slurm cluster" in text
    assert "Filestore projects/p/locations/z/instances/h" in text
    assert "Managed Lustre projects/p/locations/z/instances/l" in text
    assert "mine" not in text  # an existing bucket is not lost
    kept = parse_plan_json({"resource_changes": [
        rc("module.services.google_project_service.this[\"a\"]", "google_project_service",
           ["delete"]),
        rc("module.log.google_logging_project_bucket_config.default",
           "google_logging_project_bucket_config", ["delete"])]})
    assert kept.dangers == [] and len(kept.kept) == 2


def test_bucket_delete_without_force_destroy_is_still_announced() -> None:
    c = ResourceChange("b", "google_storage_bucket", "delete", {"name": "b"})
    assert c.danger and "refuses while it holds profiles" in c.danger
    assert ResourceChange("x", "google_container_cluster", "update").danger is None


@pytest.mark.parametrize(("text", "what"), [
    ("Error: Attempted to load application default credentials since neither `credentials` "
     "nor `access_token` was set: google: could not find default credentials.",
     "no Google Cloud credentials"),
    ("googleapi: Error 403: Kubernetes Engine API has not been used in project 1 before or "
     "it is disabled. SERVICE_DISABLED", "a Google Cloud API is disabled"),
    ("googleapi: Error 403: Required 'container.clusters.create' permission, forbidden",
     "permission denied"),
    ("googleapi: Error 403: Insufficient regional quota to satisfy request: resource "
     "\"TPUS\": request requires '16.0' and is short '16.0'. QUOTA_EXCEEDED",
     "quota was exceeded"),
    ("Error 400: The specific reservation 'r1' does not exist or is unavailable",
     "reservation named in the recipe is not usable"),
    ("googleapi: Error 409: Already exists: projects/p/buckets/b, conflict",
     "already exists in Google Cloud but not in the Terraform state"),
    ("Error acquiring the state lock: resource temporarily unavailable",
     "another Terraform run holds the state lock"),
])
def test_translate_known_failures(text: str, what: str) -> None:
    found = translate(text)
    assert found is not None and what in found[0], found
    assert found[1]  # always a next action


def _engine(tmp_path: Path, responder) -> tuple[TerraformEngine, RecordingRunner]:
    runner = RecordingRunner(responder=responder)
    runner.log_path = tmp_path / ".mldiag/logs/plan-x.log"
    return TerraformEngine(tmp_path, runner, binary="terraform"), runner


def stream_of(doc: dict) -> str:
    """The ``plan -json`` lines Terraform writes for the saved plan ``doc`` (show -json):
    planned_change for each resource that changes, resource_drift, outputs, change_summary
    (shapes as terraform 1.11 writes them; no-op resources are not streamed)."""
    def event(kind: str, rc: dict) -> str:
        actions = rc["change"]["actions"]
        action = "replace" if sorted(actions) == ["create", "delete"] else actions[0]
        return json.dumps({"type": kind, "change": {
            "resource": {"addr": rc["address"], "resource_type": rc["type"]},
            "action": action}})

    lines = [event("resource_drift", rc) for rc in doc.get("resource_drift", [])]
    lines += [event("planned_change", rc) for rc in reversed(doc.get("resource_changes", []))
              if rc["change"]["actions"] != ["no-op"]]
    lines.append(json.dumps({"type": "outputs", "outputs": {
        k: {"sensitive": False, "action": "noop" if v["actions"] == ["no-op"] else
            v["actions"][0]} for k, v in doc.get("output_changes", {}).items()}}))
    lines.append(json.dumps({"type": "change_summary", "changes": {"add": 1}}))
    return "\n".join(lines)


def test_plan_argv_and_exit_code_semantics(tmp_path: Path) -> None:
    # show -json lists resource changes by address, the stream in the order of the walk
    saved = {**PLAN, "resource_changes": sorted(PLAN["resource_changes"],
                                                key=lambda rc: rc["address"])}

    def responder(argv, cwd):
        if argv[1] == "plan":
            return 2, stream_of(PLAN)
        if argv[1] == "show":
            return 0, json.dumps(saved)
        return None

    engine, runner = _engine(tmp_path, responder)
    plan = engine.plan()
    assert plan.has_changes and plan.summary.create == 1
    # The dangers written to the summary read values (bucket, pool, forced replacement):
    # the saved plan is read for them, once.
    assert runner.transcript() == (
        "$ terraform plan -input=false -json -detailed-exitcode -lock-timeout=60s "
        "-out=.mldiag/tfplan\n"
        f"$ terraform show -json -no-color {tmp_path / '.mldiag/tfplan'}\n")
    summary = json.loads((tmp_path / ".mldiag/plan-summary.json").read_text())
    assert summary["summary"]["replace"] == 1 and len(summary["dangers"]) == 3
    assert summary == parse_plan_json(saved, plan_file=tmp_path / ".mldiag/tfplan").to_dict()
    assert [c.address for c in plan.detailed().changes] == [
        rc["address"] for rc in saved["resource_changes"]]  # no-op ones too, for policies
    assert len(runner.calls) == 2

    # Creates only: the stream says everything; the saved plan is not read.
    creates = {"resource_changes": [PLAN["resource_changes"][0]], "output_changes": {}}
    engine, runner = _engine(tmp_path, lambda a, c: (2, stream_of(creates))
                             if a[1] == "plan" else (0, json.dumps(creates)))
    plan = engine.plan()
    assert [c.argv[1] for c in runner.calls] == ["plan"]
    assert plan.summary.create == 1 and plan.dangers == []
    assert plan.detailed().changes[0].after == {} and [c.argv[1] for c in runner.calls] == [
        "plan", "show"]

    engine, runner = _engine(tmp_path, lambda a, c: (0, "") if a[1] == "plan" else None)
    assert engine.plan(destroy=True).has_changes is False
    assert runner.calls[0].argv[-1] == "-destroy"


def test_plan_failure_is_one_translated_line_with_address_and_log(tmp_path: Path) -> None:
    diag = {"type": "diagnostic", "diagnostic": {
        "severity": "error", "summary": "Error creating Cluster",
        "detail": "googleapi: Error 403: Permission denied on 'projects/p', forbidden",
        "address": "module.cluster.google_container_cluster.this"}}
    engine, _ = _engine(tmp_path, lambda a, c: (1, json.dumps(diag)))
    with pytest.raises(EngineError) as info:
        engine.plan()
    err = info.value
    assert err.message.splitlines()[0] == (
        "terraform plan failed (module.cluster.google_container_cluster.this): permission "
        "denied by Google Cloud")
    assert err.hint and err.hint.endswith(f"full log: {tmp_path}/.mldiag/logs/plan-x.log")
    assert err.exit_code == 4 and err.returncode == 1


def test_apply_streams_progress_and_collects_outputs(tmp_path: Path) -> None:
    events = [
        {"type": "apply_start", "hook": {"resource": {"addr": "a.b"}, "action": "create"}},
        {"type": "apply_progress", "hook": {"resource": {"addr": "a.b"}, "action": "create",
                                            "elapsed_seconds": 10}},
        {"type": "apply_complete", "hook": {"resource": {"addr": "a.b"}, "action": "create",
                                            "elapsed_seconds": 12}},
        {"type": "change_summary", "changes": {"add": 1, "change": 0, "remove": 0}},
        {"type": "outputs", "outputs": {"x": {"value": "v", "sensitive": False}}},
    ]
    engine, runner = _engine(tmp_path, lambda a, c: (0, "\n".join(map(json.dumps, events))))
    got: list[ProgressEvent] = []
    result = engine.apply(parse_plan_json(PLAN), progress=got.append)
    assert [e.kind for e in got] == ["start", "progress", "complete"]
    assert result.summary.create == 1 and result.outputs["x"]["value"] == "v"
    assert runner.calls[0].argv[-1] == ".mldiag/tfplan"

    # On a terminal: one live view (rich) holds the resources in flight; finished lines stay.
    buf = io.StringIO()
    with Progress(Console(buf, color=False), live=True) as printer:
        printer(got[0])
        assert "a.b" in printer.in_flight
        from rich.console import Console as RichConsole

        view = RichConsole(file=io.StringIO(), width=100)
        view.print(printer._view())
        assert "creating a.b" in view.file.getvalue()
        for e in got[1:]:
            printer(e)
        assert printer.in_flight == {}
    assert "ok  a.b: created (12s)" in buf.getvalue()
    buf = io.StringIO()
    printer = Progress(Console(buf, color=False), live=False)  # not a terminal: results only
    for e in got:
        printer(e)
    assert buf.getvalue() == "  ok  a.b: created (12s)\n"


def test_ci_progress_has_a_heartbeat_while_nothing_happens() -> None:
    """Not on a terminal, a long create is never silent: a heartbeat line names what is in
    flight whenever nothing was printed for heartbeat_s seconds."""
    import time

    buf = io.StringIO()
    with Progress(Console(buf, color=False), live=False, heartbeat_s=0.3) as printer:
        printer(ProgressEvent("start", "module.cluster.google_container_cluster.this",
                              "create"))
        deadline = time.monotonic() + 10
        while "still" not in buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.1)
    text = buf.getvalue()
    assert "... still" in text and "module.cluster.google_container_cluster.this" in text


def test_init_is_skipped_while_nothing_it_depends_on_changed(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text("# x\n")
    engine, runner = _engine(tmp_path, None)
    engine.init()
    (tmp_path / ".terraform").mkdir()
    (tmp_path / ".terraform.lock.hcl").write_text("")
    engine.init()
    assert len(runner.calls) == 1
    (tmp_path / "main.tf").write_text("# changed\n")
    engine.init()
    assert len(runner.calls) == 2


def test_describe_names_address_and_nested_path(tmp_path: Path) -> None:
    mod = tmp_path / "modules/gke/c"
    mod.mkdir(parents=True)
    (mod / "main.tf").write_text(
        'resource "google_container_cluster" "this" {\n  name = "x"\n\n'
        '  dynamic "node_config" {\n    for_each = [1]\n    content {\n'
        '      labels = {\n        a = "b"\n      }\n      machine_typ = "x"\n    }\n  }\n}\n')
    (tmp_path / ".terraform/modules").mkdir(parents=True)
    (tmp_path / ".terraform/modules/modules.json").write_text(json.dumps(
        {"Modules": [{"Key": "", "Dir": "."}, {"Key": "cluster", "Dir": "modules/gke/c"}]}))
    engine, _ = _engine(tmp_path, None)
    d = {"severity": "error", "summary": "Unsupported argument",
         "detail": 'An argument named "machine_typ" is not expected here.',
         "range": {"filename": "modules/gke/c/main.tf", "start": {"line": 10}}}
    assert engine.describe(d) == (
        "modules/gke/c/main.tf:10: module.cluster.google_container_cluster.this."
        "node_config.machine_typ: Unsupported argument: An argument named "
        '"machine_typ" is not expected here.')


def test_show_plan_text(tmp_path: Path) -> None:
    buf = io.StringIO()
    show_plan(Console(buf, color=False), parse_plan_json(PLAN, plan_file=tmp_path / "p"))
    text = buf.getvalue()
    assert "drift: module.profiles_bucket.google_storage_bucket.this[0] changed outside" in text
    assert "-/+ module.cluster.google_container_cluster.this  (forced by location)" in text
    assert "plan: 1 to create, 1 to update, 1 to replace, 2 to delete; 1 output(s) change" in text


def test_human_readable_diagnostics_are_read_whole() -> None:
    """init has no -json here: its stderr's diagnostics are read as -json gives them. The
    stderr below is real terraform 1.11 output (init offline, a provider version no registry
    answers for): a framed warning, then a plain error whose detail wraps over 5 lines."""
    from mldiag_provision.engines.terraform import stderr_diagnostics

    text = (Path(__file__).parent / "data" / "terraform-1.11-init-error.stderr.txt").read_text()
    (diag,) = stderr_diagnostics(text.splitlines())
    assert diag["summary"] == "Failed to query available provider packages"
    assert diag["detail"].startswith(
        "Could not retrieve the list of available versions for provider hashicorp/google: "
        "could not connect to registry.terraform.io: failed to request discovery document: "
        'Get "https://registry.terraform.io/.well-known/terraform.json": dial tcp: lookup ')
    assert diag["detail"].endswith("run the following command: terraform providers")
    framed = ["\u2577", "\u2502 Error: Invalid provider configuration", "\u2502",
              "\u2502 The provider needs a", "\u2502 project.", "\u2575",
              "\u2577", "\u2502 Warning: Deprecated", "\u2502", "\u2502 ignored", "\u2575"]
    assert stderr_diagnostics(framed) == [{"severity": "error",
                                           "summary": "Invalid provider configuration",
                                           "detail": "The provider needs a project."}]
    assert stderr_diagnostics(["no diagnostics here", "Error:no space"]) == []


def test_never_applied_only_when_the_state_is_certainly_local_and_absent(
        tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text('terraform {\n  # backend "gcs" {} is not used here\n}\n')
    engine, runner = _engine(tmp_path, None)
    assert engine.never_applied()
    (tmp_path / "versions.tf").write_text('terraform {\n  backend "gcs" {\n  }\n}\n')
    assert not engine.never_applied()  # a gcs backend not yet initialised may hold state
    (tmp_path / "versions.tf").unlink()
    (tmp_path / ".terraform").mkdir()
    (tmp_path / ".terraform" / "terraform.tfstate").write_text("{}")  # a backend recorded
    assert not engine.never_applied()
    (tmp_path / ".terraform" / "terraform.tfstate").unlink()
    (tmp_path / "terraform.tfstate").write_text("{}")
    assert not engine.never_applied()
    assert runner.calls == []  # decided without running terraform


def test_output_of_a_never_applied_stack_runs_no_terraform(tmp_path: Path, cli) -> None:
    """``output`` used to run ``terraform init`` first, which needs the provider registry
    (or a mirror) only to find that there is no state."""
    recipe = str(Path(__file__).resolve().parents[2] / "recipes" /
                 "tpu-v4-2x2x4-autopilot.yaml")
    work = str(tmp_path / "stack")
    assert cli("render", recipe, "-o", work)[0] == 0
    code, out, err = cli("output", recipe, "-o", work)
    assert (code, out.strip()) == (0, "no outputs yet: run `mldiag-provision apply` first"), err
    code, out, _ = cli("output", recipe, "-o", work, "--output", "json")
    assert code == 0 and json.loads(out) == {}
    assert not (tmp_path / "stack" / ".terraform").exists()  # terraform never ran


def test_an_init_error_listing_problems_reads_as_one_sentence_without_progress_text(
        tmp_path: Path) -> None:
    """Real terraform 1.11 stderr of init over a damaged lock file ("2 problems:" and a
    list), with its stdout progress line: the message had "2 problems:: - ..." and ended in
    "Initializing the backend..." (a fresh-user review)."""
    from mldiag_provision.runner import RunResult

    stderr = (Path(__file__).parent / "data" /
              "terraform-1.11-init-lockfile-error.stderr.txt").read_text().splitlines()
    engine, _ = _engine(tmp_path, None)
    result = RunResult(("terraform", "init"), 1, 0.1, stdout_tail=(
        "Initializing the backend...",), stderr_tail=tuple(stderr))
    err = engine._fail("terraform init", result, [])
    first, detail = err.message.split("\n", 1)
    assert first == ("terraform init failed: failed to read dependency lock file: 2 problems:")
    assert detail == (
        "  terraform: failed to read dependency lock file: 2 problems: - Invalid provider "
        "version number: The selected version number for provider "
        "registry.terraform.io/hashicorp/google must be written in normalized form: "
        '"8.0.0". - Invalid expression: A static list expression is required.')
