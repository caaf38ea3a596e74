"""Issue 25, "problems reported in rounds": every independent fault of a manifest shows in one
`lint` run, not only once the faults before it are fixed.

The manifest is tests/lint/data/independent-faults.yaml: a multislice JobSet as the renderer
writes it, a multi-host TPU v5p Indexed Job and its headless Service, with twelve faults in
schema, TPU, wiring and Autopilot rules. On the code before this change one run showed six of
them: the JobSet's chips request hid its Job shape and multislice annotation, its coordinator
address was not checked at all, and the Service's wrong-typed ``type`` dropped its
publishNotReadyAddresses finding as a "consequence".

:data:`FAULTS` lists each fault with the edit that fixes it, so the fault-free manifest is the
file with every fix applied, and each fault can be put back alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from mldiag_provision.errors import Severity

from .support import DATA, lint

MANIFEST = DATA / "independent-faults.yaml"
JS = "spec.replicatedJobs[0].template.spec"
POD = f"{JS}.template.spec"


@dataclass(frozen=True)
class Fault:
    """One fault of the manifest: the rule and field path of its finding, and the text edit
    (``written`` -> ``fixed``) that removes it; ``written`` occurs once in the file."""

    name: str
    rule: str
    path: str
    severity: Severity
    written: str
    fixed: str


FAULTS = (
    Fault("schema: backoffLimit is text", "k8s-schema", f"{JS}.backoffLimit", Severity.ERROR,
          '        backoffLimit: "zero"\n', "        backoffLimit: 0\n"),
    Fault("TPU: 8 chips on v6e 4x4 (4 per VM)", "tpu-chips-per-pod",
          f'{POD}.containers[0].resources.requests["google.com/tpu"]', Severity.ERROR,
          "\n                requests: {google.com/tpu: 8}\n"
          "                limits: {google.com/tpu: 8}\n",
          "\n                requests: {google.com/tpu: 4}\n"
          "                limits: {google.com/tpu: 4}\n"),
    Fault("TPU: parallelism 3 on a 4-VM slice", "tpu-job-shape", f"{JS}.parallelism",
          Severity.ERROR, "        parallelism: 3\n", "        parallelism: 4\n"),
    Fault("TPU: multislice without exclusive topology", "tpu-multislice",
          'metadata.annotations["alpha.jobset.sigs.k8s.io/exclusive-topology"]',
          Severity.WARNING,
          '  labels: {managed-mldiagnostics-gke: "true"}\nspec:\n',
          '  labels: {managed-mldiagnostics-gke: "true"}\n  annotations:\n'
          "    alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool\n"
          "spec:\n"),
    Fault("wiring: coordinator in replicated job 'worker'", "wiring-coordinator-address",
          f"{POD}.containers[0].env[0].value", Severity.ERROR,
          "value: multislice-train-worker-0-0.multislice-train:8080",
          "value: multislice-train-slice-0-0.multislice-train:8080"),
    Fault("schema: activeDeadlineSeconds is text", "k8s-schema", "spec.activeDeadlineSeconds",
          Severity.ERROR, '  activeDeadlineSeconds: "1h"\n', "  activeDeadlineSeconds: 3600\n"),
    Fault("TPU: v5p topology 2x2x3", "tpu-topology",
          'spec.template.spec.nodeSelector["cloud.google.com/gke-tpu-topology"]',
          Severity.ERROR, "gke-tpu-topology: 2x2x3", "gke-tpu-topology: 2x2x4"),
    Fault("TPU: 8 chips on v5p (4 per VM)", "tpu-chips-per-pod",
          'spec.template.spec.containers[0].resources.requests["google.com/tpu"]',
          Severity.ERROR,
          "\n          requests: {google.com/tpu: 8}\n          limits: {google.com/tpu: 8}\n",
          "\n          requests: {google.com/tpu: 4}\n          limits: {google.com/tpu: 4}\n"),
    Fault("Autopilot: privileged container", "autopilot-privileged",
          "spec.template.spec.containers[0].securityContext.privileged", Severity.ERROR,
          "        securityContext: {privileged: true}\n", ""),
    Fault("schema: Service type is a number", "k8s-schema", "spec.type", Severity.ERROR,
          "  type: 5\n", ""),
    Fault("wiring: headless Service without publishNotReadyAddresses",
          "wiring-publish-not-ready", "spec.publishNotReadyAddresses", Severity.WARNING,
          "  clusterIP: None\n  selector: {job-name: train-v5p}\n",
          "  clusterIP: None\n  publishNotReadyAddresses: true\n"
          "  selector: {job-name: train-v5p}\n"),
    # kubernetes/kubernetes#121523: the reference stays '$(JOB_COMPLETION_INDEX)'; defining
    # the variable first from the pod's completion-index annotation expands it
    Fault("wiring: $(JOB_COMPLETION_INDEX) in the template's env", "wiring-env-reference",
          "spec.template.spec.containers[0].env[1].value", Severity.ERROR,
          "        - name: PROCESS_ID\n          value: $(JOB_COMPLETION_INDEX)\n",
          "        - name: JOB_COMPLETION_INDEX\n          valueFrom: {fieldRef: {fieldPath: "
          "\"metadata.annotations['batch.kubernetes.io/job-completion-index']\"}}\n"
          "        - name: PROCESS_ID\n          value: $(JOB_COMPLETION_INDEX)\n"),
)


def with_faults(keep: frozenset[str]) -> str:
    """The manifest with the faults named in ``keep`` and every other one fixed."""
    text = MANIFEST.read_text(encoding="utf-8")
    for f in FAULTS:
        assert text.count(f.written) == 1, f.name
        if f.name not in keep:
            text = text.replace(f.written, f.fixed)
    return text


Finding = tuple[str, str, str]  # (rule, field path, severity)


@cache
def findings(keep: frozenset[str]) -> frozenset[Finding]:
    """Every finding of one `lint --autopilot` run of the manifest with these faults."""
    result = lint(with_faults(keep), autopilot=True, names=[MANIFEST.name])
    return frozenset((p.rule, p.path, p.severity.value) for p in result.problems)


ALL = frozenset(f.name for f in FAULTS)
NONE: frozenset[str] = frozenset()


def test_the_manifest_has_at_least_five_faults_across_schema_tpu_and_wiring() -> None:
    assert len(FAULTS) >= 5
    groups = {f.rule.split("-")[0] for f in FAULTS}
    assert {"k8s", "tpu", "wiring"} <= groups


def test_without_the_faults_nothing_fails() -> None:
    """The fixed manifest is clean of errors and warnings (a note or two may remain)."""
    assert {f for f in findings(NONE) if f[2] != "info"} == set()


def test_one_run_reports_every_fault_through_the_cli(cli, tmp_path: Path) -> None:
    """`lint --autopilot FILE`, text and JSON: each fault by rule id and field path."""
    path = tmp_path / MANIFEST.name
    path.write_text(MANIFEST.read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = cli("lint", "--autopilot", str(path))
    assert code == 1, out + err
    blocks = out.split(f"\n{path}:")
    for f in FAULTS:
        assert any(f"{f.severity.value}[{f.rule}]" in b and f"field: {f.path}\n" in b
                   for b in blocks), (f.name, out)
    errors = sum(f.severity is Severity.ERROR for f in FAULTS)
    assert f"failed: {errors} error(s)" in out.splitlines()[-1]

    code, out, err = cli("lint", "--autopilot", "-O", "json", str(path))
    assert code == 1, err
    doc = json.loads(out)
    reported = {(p["rule"], p["path"], p["severity"])
                for file in doc["files"] for p in file["problems"]}
    assert {(f.rule, f.path, f.severity.value) for f in FAULTS} <= reported
    assert doc["errors"] == errors


def test_each_fault_alone_is_found() -> None:
    base = findings(NONE)
    for f in FAULTS:
        alone = findings(frozenset({f.name})) - base
        assert (f.rule, f.path, f.severity.value) in alone, (f.name, sorted(alone))


def test_all_faults_together_are_the_union_of_each_alone() -> None:
    """Independence: no fault hides another, and together they add no finding that none of
    them makes alone."""
    base = findings(NONE)
    union = set().union(*(findings(frozenset({f.name})) - base for f in FAULTS))
    assert findings(ALL) - base == union


@pytest.mark.parametrize("left_out", [f.name for f in FAULTS])
def test_fixing_one_fault_leaves_the_findings_of_the_others(left_out: str) -> None:
    """All faults but one: the union of the others' findings, exactly."""
    base = findings(NONE)
    others = frozenset(ALL - {left_out})
    union = set().union(*(findings(frozenset({n})) - base for n in others))
    assert findings(others) - base == union
