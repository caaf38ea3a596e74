"""Severity from sources (issue 25 item 4): a rule is an error when a Google or Kubernetes
source shows the object is refused, and only then.

- refusals whose facts were raised to H now fail ``lint``/``validate`` (exit 1); each test
  names the public source that shows the refusal;
- every verified fact a rule stands on for an error cites a URL, and every error over the
  bundled inputs cites one;
- every unverified (M or L) fact that decides a severity says in ``confirm`` what would
  verify it, so a warning is never left without a way to become an error.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_rulebook import FACT_FREE, _inputs

from cli_support import run_cli
from mldiag_provision import rulebook
from mldiag_provision.catalog.store import Fact, store
from mldiag_provision.catalog.tpu import Catalog
from mldiag_provision.errors import Severity
from mldiag_provision.lint import linter
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.loading import Source
from mldiag_provision.pipeline import check_text

ROOT = Path(__file__).resolve().parents[2]
FAULTKINDS = ROOT / "tests" / "lint" / "data" / "faultkinds"
RECIPES = ROOT / "recipes"


def y(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _import_every_rule() -> None:
    for pkg in ("mldiag_provision.preflight", "mldiag_provision.lint"):
        mod = importlib.import_module(pkg)
        for m in pkgutil.iter_modules(mod.__path__):
            importlib.import_module(f"{pkg}.{m.name}")


def _lint_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict]]:
    """``mldiag-provision lint -O json ARGV``: (exit code, every problem of every file)."""
    rc, out, _err = run_cli(capsys, ["lint", "-O", "json", *argv])
    doc = json.loads(out)
    return rc, [p for f in doc["files"] for p in f["problems"]]


def _by_rule(problems: list[dict], rule: str) -> list[dict]:
    return [p for p in problems if p["rule"] == rule]


# --- refusals that are errors now --------------------------------------------------------------

GPU_JOB = y("""
    apiVersion: batch/v1
    kind: Job
    metadata: {name: infer}
    spec:
      template:
        spec:
          restartPolicy: Never
          nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
          containers:
          - name: main
            image: server
            resources:
              requests: {nvidia.com/gpu: 1}
              limits: {nvidia.com/gpu: 1}
    """)


def test_init_container_gpu_on_autopilot_is_an_error(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """The issue's example. Source: GKE's own refusal, "GPU-using init containers are not
    supported in Autopilot." (https://github.com/ray-project/kuberay/issues/1349), which the
    KubeRay maintainers fixed in https://github.com/ray-project/kuberay/pull/1470 ("GKE's
    Autopilot does not support GPU-using init containers"). Kubernetes itself allows extended
    resources in init containers: on GKE Standard the same manifest passes."""
    path = str(FAULTKINDS / "autopilot-init-gpu.yaml")
    rc, problems = _lint_json(capsys, "--autopilot", "--no-diagnostics", path)
    assert rc == 1
    [p] = _by_rule(problems, "autopilot-init-container-gpu")
    assert p["severity"] == "error"
    assert p["path"] == 'spec.template.spec.initContainers[0].resources.requests["nvidia.com/gpu"]'
    assert p["line"] == 16 and "kuberay/issues/1349" in p["source"]
    rc, problems = _lint_json(capsys, "--no-diagnostics", path)
    assert rc == 0 and not _by_rule(problems, "autopilot-init-container-gpu")


def test_gpu_pod_without_gpu_selector_on_autopilot_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Source: GKE Warden's denial "[denied by autogke-gpu-limitation]: When requesting
    'nvidia.com/gpu' resources, you must specify either node selector
    'cloud.google.com/gke-accelerator' ... or node selector 'cloud.google.com/compute-class'",
    quoted in https://github.com/GoogleCloudPlatform/ai-on-gke/pull/983 (merged fix)."""
    manifest = tmp_path / "infer.yaml"
    manifest.write_text(GPU_JOB.replace(
        "      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}\n", ""))
    rc, problems = _lint_json(capsys, "--autopilot", "--no-diagnostics", str(manifest))
    assert rc == 1
    [p] = _by_rule(problems, "autopilot-gpu-selector")
    assert p["severity"] == "error" and p["path"] == (
        'spec.template.spec.nodeSelector["cloud.google.com/gke-accelerator"]')  # the missing key
    assert "ai-on-gke/pull/983" in p["source"]
    manifest.write_text(GPU_JOB)
    rc, problems = _lint_json(capsys, "--autopilot", "--no-diagnostics", str(manifest))
    assert rc == 0, problems


def test_gpu_toleration_without_gpu_request_on_autopilot_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Source: GKE Warden's denial "[denied by autogke-gpu-limitation]: The toleration with key
    'nvidia.com/gpu' and operator 'Exists' cannot be specified if the pod does not request to
    use GPU in Autopilot." (https://github.com/GoogleCloudPlatform/k8s-stackdriver/issues/1079,
    fixed by #1081; also https://github.com/skypilot-org/skypilot/issues/4542). The TPU taint's
    twin is only stated in passing (fact tpuToleration, M): it stays a warning."""
    adapter = y("""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: metrics-adapter}
        spec:
          selector: {matchLabels: {app: a}}
          template:
            metadata: {labels: {app: a}}
            spec:
              tolerations:
              - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
              containers: [{name: a, image: adapter}]
        """)
    manifest = tmp_path / "adapter.yaml"
    manifest.write_text(adapter)
    rc, problems = _lint_json(capsys, "--autopilot", "--no-diagnostics", str(manifest))
    assert rc == 1
    [p] = _by_rule(problems, "autopilot-accelerator-toleration")
    assert (p["severity"], p["path"], p["value"]) == (
        "error", "spec.template.spec.tolerations[0].key", "nvidia.com/gpu")
    assert "k8s-stackdriver/issues/1079" in p["source"]
    manifest.write_text(adapter.replace("nvidia.com/gpu", "google.com/tpu"))
    rc, problems = _lint_json(capsys, "--autopilot", "--no-diagnostics", str(manifest))
    [p] = _by_rule(problems, "autopilot-accelerator-toleration")
    assert rc == 0 and p["severity"] == "warning"
    assert "k8s-stackdriver/pull/1081" in p["source"]
    assert store().fact("kubernetes", "autopilotAdmission", "tpuToleration").confirm


def test_toleration_the_api_server_refuses_fails_validate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Source: the Kubernetes API server's ValidateTolerations
    (https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/validation/validation.go):
    "value must be empty when `operator` is 'Exists'"."""
    bundled = RECIPES / "tpu-v6e-training-volumes-standard.yaml"
    text = bundled.read_text()
    anchor = "      tolerations:\n"
    assert text.count(anchor) == 1
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text.replace(anchor, anchor + "        - {key: dedicated, operator: Exists,"
                                   " value: ml, effect: NoSchedule}\n"))
    rc, out, err = run_cli(capsys, ["--no-color", "validate", str(recipe)])
    assert rc == 1, out + err
    assert "error[workload-tolerations]" in out and "operator Exists takes no value" in out
    rc, out, err = run_cli(capsys, ["--no-color", "validate", str(bundled)])
    assert rc == 0 and "workload-tolerations" not in out, out + err


def test_object_in_kube_system_on_autopilot_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Source: GKE Warden's denial "[denied by managed-namespaces-limitation]: the namespace
    "kube-system" is managed" for a create in kube-system, quoted in
    https://github.com/terraform-google-modules/terraform-google-kubernetes-engine/issues/2348
    and https://github.com/cert-manager/cert-manager/issues/3713 (fact kube-system: H). The
    rule's default was a warning whatever the namespace's fact; kube-public's (M) still is."""
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\n"
                        "metadata: {name: c, namespace: kube-system}\n")
    rc, problems = _lint_json(capsys, "--autopilot", str(manifest))
    [p] = _by_rule(problems, "autopilot-managed-namespace")
    assert rc == 1 and p["severity"] == "error" and p["path"] == "metadata.namespace"
    manifest.write_text(manifest.read_text().replace("kube-system", "kube-public"))
    rc, problems = _lint_json(capsys, "--autopilot", str(manifest))
    [p] = _by_rule(problems, "autopilot-managed-namespace")
    assert rc == 0 and p["severity"] == "warning"


# --- every error cites a URL ---------------------------------------------------------------------

# Findings about the input's own form: no catalog fact, so no source to cite.
FORM_RULES = ("recipe-", "k8s-", "yaml-")


def test_every_verified_fact_behind_an_error_cites_a_url() -> None:
    _import_every_rule()
    checked = 0
    for info in rulebook.RULES.values():
        for fid in info.facts:
            f = rulebook.fact_by_id(fid)
            if info.severity is Severity.ERROR and f.verified:
                checked += 1
                assert (f.source.url or "").startswith("https://"), (info.id, fid, f.source)
    assert checked > 20


def test_every_error_over_the_bundled_inputs_cites_a_url() -> None:
    recipes, manifests = _inputs()
    catalog = Catalog(store().doc("tpu"), store().doc("gke"))
    errors = [p for name, text in recipes for p in check_text(text, name, catalog).report.problems
              if p.severity is Severity.ERROR]
    for autopilot in (False, True):
        res = linter.lint_sources([Source(str(m), m.read_text()) for m in manifests],
                                  LintOptions("1.35", autopilot=autopilot), catalog)
        errors += [p for p in res.problems if p.severity is Severity.ERROR]
    cited = [p for p in errors if p.rule not in FACT_FREE and not p.rule.startswith(FORM_RULES)]
    assert len(cited) > 10
    bad = [(p.rule, p.file, p.line, p.source) for p in cited
           if not (p.source or "").startswith(("https://", "http://"))]
    assert not bad, bad


# --- every unverified fact that decides a severity says what would confirm it -----------------

# Facts a rule reads per case (not declared with ``facts=``, which covers every problem of a
# rule): the fact of that namespace, machine type, TPU version, topology or name kind. Each
# entry names the rule that reads it; the test checks the id exists and its key is in that
# rule's module.
PER_CASE: dict[str, tuple[str, tuple[str, ...]]] = {
    "kubernetes.autopilot.hostPath": ("autopilot-host-path", ("hostPath",)),
    "kubernetes.autopilot.annotations.refused.0": ("autopilot-annotations", ("annotations",)),
    "gke.autopilot.managedNamespaces.0": ("autopilot-managed-namespace", ("managedNamespaces",)),
    "gke.autopilot.managedNamespaces.1": ("autopilot-managed-namespace", ("managedNamespaces",)),
    "gke.autopilot.managedNamespaces.2": ("autopilot-managed-namespace", ("managedNamespaces",)),
    "gke.autopilot.managedNamespaces.3": ("autopilot-managed-namespace", ("managedNamespaces",)),
    "gke.autopilot.managedNamespaces.4": ("autopilot-managed-namespace", ("managedNamespaces",)),
    "kubernetes.autopilotAdmission.tpuToleration": ("autopilot-accelerator-toleration",
                                                    ("tpuToleration",)),
    "kubernetes.ephemeralStorage.autopilotAcceleratorMax": (
        "autopilot-ephemeral-storage", ("autopilotAcceleratorMax",)),
    "kubernetes.tpu.exclusiveTopology": ("tpu-multislice", ("exclusiveTopology",)),
    "kubernetes.controllers.jobsetDnsHostnames": ("tpu-multislice", ("jobsetDnsHostnames",)),
    "kubernetes.controllers.lwsGroupSize": ("tpu-workload-kind", ("lwsGroupSize",)),
    "kubernetes.recipeFit.reservation": ("recipe-capacity", ('"reservation"',)),
    "gke.releaseChannels": ("gke-channel", ("releaseChannels",)),
    "gke.cluster.masterCidrNeededBefore": ("cluster-private", ("masterCidrNeededBefore",)),
    "gke.cluster.noUpgradesMaxDays": ("cluster-maintenance", ("noUpgradesMaxDays",)),
    "names.names.filestoreInstance": ("gcp-names", ("verified",)),
    "names.names.lustreInstance": ("gcp-names", ("verified",)),
    "tpu.versions.tpu7x.topologies.0": ("workload-chips", ("topology_fact",)),
    "tpu.versions.v5p.topologies.2": ("workload-chips", ("topology_fact",)),
    "tpu.versions.tpu7x.large3d": ("workload-chips", ("topology_fact",)),
    "tpu.versions.v6e.gke.multislice": ("slice-multislice", ("tpu_fact",)),
    "tpu.versions.tpu7x.gke.multislice": ("slice-multislice", ("tpu_fact",)),
    **{f"tpu.versions.{v}.gke.{mode}": ("gke-version", ("need.fact",))
       for v in ("v4", "v5e", "v5p", "v6e") for mode in ("autopilot", "standard")},
    "tpu.versions.v4.machineTypes.ct4p-hightpu-4t": ("workload-resources", ("machine.fact",)),
    **{f"gpu.gpus.{g}.machineTypes.{m}": ("workload-resources", ("machine.fact",))
       for g, m in (("h100-80gb", "a3-highgpu-4g"), ("h100-80gb", "a3-highgpu-2g"),
                    ("h100-80gb", "a3-highgpu-1g"), ("h100-80gb", "a3-edgegpu-8g"),
                    ("b200", "a4-highgpu-8g"), ("b200", "a4-highgpu-8g-lowmem"),
                    ("gb200", "a4x-highgpu-4g-nolssd"), ("rtx-pro-6000", "g4-standard-48"),
                    ("rtx-pro-6000", "g4-standard-96"), ("rtx-pro-6000", "g4-standard-192"),
                    ("rtx-pro-6000", "g4-standard-384"))},
}


def _rule_module(rule_id: str) -> Path:
    """The source file that declares ``rule_id`` (its id as a string literal)."""
    pkg = ROOT / "provisioner" / "mldiag_provision"
    for py in sorted([*pkg.glob("preflight/*.py"), *pkg.glob("lint/*.py")]):
        text = py.read_text(encoding="utf-8")
        if f'"{rule_id}"' in text:
            return py
    raise AssertionError(f"no module declares {rule_id}")


def _observed_facts() -> Iterator[Fact]:
    """Every fact whose confidence a rule consulted over the bundled inputs."""
    seen: dict[str, Fact] = {}
    verified = Fact.verified

    def spy(self: Fact) -> bool:
        seen[self.id] = self
        return bool(verified.fget(self))  # type: ignore[attr-defined]

    recipes, manifests = _inputs()
    catalog = Catalog(store().doc("tpu"), store().doc("gke"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Fact, "verified", property(spy))
        for name, text in recipes:
            check_text(text, name, catalog)
        for autopilot in (False, True):
            linter.lint_sources([Source(str(m), m.read_text()) for m in manifests],
                                LintOptions("1.35", autopilot=autopilot), catalog)
    yield from seen.values()


def severity_facts() -> dict[str, Fact]:
    """Every fact that decides a severity: declared by a rule, read per case (PER_CASE), or
    consulted over the bundled inputs."""
    _import_every_rule()
    out = {fid: rulebook.fact_by_id(fid) for info in rulebook.RULES.values()
           for fid in info.facts}
    out.update({fid: rulebook.fact_by_id(fid) for fid in PER_CASE})
    out.update({f.id: f for f in _observed_facts()})
    return out


def test_per_case_facts_are_read_by_the_rule_named() -> None:
    _import_every_rule()
    for fid, (rule_id, needles) in PER_CASE.items():
        rulebook.fact_by_id(fid)  # raises for an unknown id
        assert rule_id in rulebook.RULES, (fid, rule_id)
        text = _rule_module(rule_id).read_text(encoding="utf-8")
        assert all(n in text for n in needles), (fid, rule_id, needles)


def test_every_unverified_fact_deciding_a_severity_says_what_would_confirm_it() -> None:
    facts = severity_facts()
    unverified = {fid: f for fid, f in facts.items() if not f.verified}
    assert len(unverified) > 30
    missing = sorted(fid for fid, f in unverified.items() if not (f.confirm or "").strip())
    assert not missing, f"M/L facts that decide a severity without `confirm:`: {missing}"
    # and a verified fact needs none: confirm on an H fact is a leftover
    leftover = sorted(fid for fid, f in store().all_facts().items() if f.verified and f.confirm)
    assert not leftover, leftover
