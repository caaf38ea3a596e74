"""``lint`` of an input without a Kubernetes object (issue 26): kubectl apply refuses it
("error: no objects passed to apply", kubernetes/kubectl pkg/cmd/apply/apply.go), so lint
says so instead of "ok ... 0 object(s)"; a file without objects among files with some is a
warning (kubectl skips it; kubeconform's validator calls it Empty, yannh/kubeconform
pkg/validator/validator.go). The inputs are the shapes such files take in practice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mldiag_provision.errors import Severity

from .support import by_rule, lint

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"
EMPTY_INPUTS = {
    # a file created and never filled (`touch job.yaml`; `curl ... | kubectl apply -f -` of
    # an empty answer, the rancher import case quoted with "no objects passed to apply")
    "empty": "",
    # a manifest whose objects were all commented out
    "comments": "# apiVersion: batch/v1\n# kind: Job\n#   name: train\n",
    # kubeconform's own note: "Empty ... is triggered for files starting with a --- separator"
    "separators": "---\n---\n",
    # `helm template` of a chart whose templates are all switched off: only source comments
    "helm-disabled": "---\n# Source: trainer/templates/job.yaml\n---\n"
                     "# Source: trainer/templates/service.yaml\n",
}


@pytest.mark.parametrize("text", EMPTY_INPUTS.values(), ids=EMPTY_INPUTS.keys())
def test_an_input_without_objects_is_an_error(text: str) -> None:
    result = lint(text, names=["job.yaml"])
    [p] = by_rule(result, "k8s-no-objects")
    assert p.severity is Severity.ERROR and p.file == "job.yaml"
    assert "no objects passed to apply" in p.message
    assert p.source == "https://github.com/kubernetes/kubectl/blob/master/pkg/cmd/apply/apply.go"
    assert p.hint and p.expected
    assert result.failed()
    assert [q.rule for q in result.problems] == ["k8s-no-objects"]


def test_every_empty_file_of_an_empty_input_is_named() -> None:
    result = lint("", "---\n", names=["a.yaml", "b.yaml"])
    assert [(p.file, p.severity) for p in by_rule(result, "k8s-no-objects")] == [
        ("a.yaml", Severity.ERROR), ("b.yaml", Severity.ERROR)]


def test_an_empty_file_beside_objects_warns() -> None:
    result = lint(CONFIGMAP, "# nothing here yet\n", names=["cm.yaml", "later.yaml"])
    [p] = by_rule(result, "k8s-no-objects")
    assert (p.file, p.severity) == ("later.yaml", Severity.WARNING)
    assert "kubeconform" in (p.source or "")
    assert not result.failed() and result.failed(strict=True)


def test_a_file_with_objects_or_its_own_problem_gets_none() -> None:
    assert not by_rule(lint(CONFIGMAP), "k8s-no-objects")
    broken = lint("kind: [unclosed\n", names=["broken.yaml"])  # yaml-syntax says it already
    assert not by_rule(broken, "k8s-no-objects")
    assert broken.failed()


def test_the_cli_fails_an_empty_file_and_says_why(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-m", "mldiag_provision", "lint", str(empty),
                          "-O", "json"], capture_output=True, text=True, cwd=root, check=False)
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] is False and report["objects"] == 0
    [problem] = report["files"][0]["problems"]
    assert problem["rule"] == "k8s-no-objects" and problem["severity"] == "error"
