"""Defects a fresh-clone review found in lint, plan and the GPU manifests, pinned."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mldiag_provision.cli.app import main

ROOT = Path(__file__).resolve().parents[2]


def test_one_unreadable_file_does_not_hide_a_directory(tmp_path: Path, capsys) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"\xff\xfe\x00binary")
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n")
    code = main(["lint", str(tmp_path), "-O", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2  # as validate: an input that cannot be read is a usage error, reported
    text = json.dumps(report)
    assert "file-unreadable" in text and "not UTF-8" in text
    assert "ok.yaml" in text  # the readable file was linted too


def test_plan_with_out_naming_a_file_is_a_usage_error(tmp_path: Path, capsys) -> None:
    target = tmp_path / "afile"
    target.write_text("hi")
    code = main(["plan", str(ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"), "-o",
                 str(target), "-O", "json"])
    captured = capsys.readouterr()
    assert code == 2
    assert json.loads(captured.out)["error"]["message"].endswith("is a file, not a work directory")
    assert target.read_text() == "hi"


def test_sarif_output_on_a_usage_error_is_still_a_sarif_log(tmp_path: Path, capsys) -> None:
    code = main(["lint", str(tmp_path / "missing.yaml"), "-O", "sarif"])
    log = json.loads(capsys.readouterr().out)
    assert code == 2
    [run] = log["runs"]
    assert log["version"] == "2.1.0"
    assert run["invocations"][0]["executionSuccessful"] is False
    assert "no such file" in run["invocations"][0]["toolExecutionNotifications"][0]["message"][
        "text"]


def test_multi_node_gpu_job_gets_rendezvous_env(tmp_path: Path, capsys) -> None:
    # the bundled recipe runs a JobSet; as a Job it gets a headless Service instead
    recipe = tmp_path / "job.yaml"
    recipe.write_text((ROOT / "recipes" / "gpu-h100-autopilot.yaml").read_text()
                      .replace("      kind: JobSet\n", "      kind: Job\n"))
    out = tmp_path / "stack"
    assert main(["render", str(recipe), "-o", str(out)]) == 0
    capsys.readouterr()
    docs = list(yaml.safe_load_all((out / "k8s/workloads/llm-finetune.yaml").read_text()))
    service = next(d for d in docs if d["kind"] == "Service")
    job = next(d for d in docs if d["kind"] == "Job")
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"]["value"] == f"llm-finetune-0.{service['metadata']['name']}"
    assert env["NNODES"]["value"] == "2"
    assert "job-completion-index" in env["NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert job["spec"]["template"]["spec"]["subdomain"] == service["metadata"]["name"]


def test_multi_node_gpu_jobset_gets_rendezvous_env(tmp_path: Path, capsys) -> None:
    """A JobSet of one GPU slice: pod 0 is <jobset>-slice-0-0 under the subdomain <jobset>
    (JobSet's DNS hostnames), the rank the child Job's completion index; before, a JobSet
    got no MASTER_ADDR/NNODES/NODE_RANK, so torchrun's $(MASTER_ADDR) stayed literal."""
    out = tmp_path / "stack"
    assert main(["render", str(ROOT / "recipes" / "gpu-h100-autopilot.yaml"), "-o",
                 str(out)]) == 0
    capsys.readouterr()
    docs = list(yaml.safe_load_all((out / "k8s/workloads/llm-finetune.yaml").read_text()))
    assert [d["kind"] for d in docs] == ["JobSet"]
    [rjob] = docs[0]["spec"]["replicatedJobs"]
    assert rjob["name"] == "slice" and rjob["replicas"] == 1
    job = rjob["template"]["spec"]
    assert job["completionMode"] == "Indexed"
    env = {e["name"]: e for e in job["template"]["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"]["value"] == "llm-finetune-slice-0-0.llm-finetune"
    assert env["MASTER_PORT"]["value"] == "29500"
    assert env["NNODES"]["value"] == "2"
    assert env["NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert "subdomain" not in job["template"]["spec"]  # JobSet sets the pods' subdomain
