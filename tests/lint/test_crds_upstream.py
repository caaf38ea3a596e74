"""CRD schemas generated from the upstream release manifests (issue 13 item 3): the committed
JSON is what the generator makes from the pinned inputs, and a stated installed release turns
fields that release does not know into errors."""

from __future__ import annotations

import gzip
import json
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from mldiag_provision.errors import Severity, UsageError
from mldiag_provision.lint import crdgen
from mldiag_provision.lint.context import LintOptions
from mldiag_provision.lint.linter import lint_sources
from mldiag_provision.lint.loading import Source
from mldiag_provision.lint.schema import crd_projects, default_version, resolve_crd_versions

ROOT = Path(__file__).resolve().parents[2]

JOBSET_NPRA = textwrap.dedent("""\
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata: {name: train}
    spec:
      network: {enableDNSHostnames: true, publishNotReadyAddresses: true}
      replicatedJobs:
      - name: slice
        replicas: 1
        template:
          spec:
            completionMode: Indexed
            completions: 2
            parallelism: 2
            template:
              spec:
                restartPolicy: Never
                containers: [{name: main, image: python}]
    """)


def _lint(text: str, crd_versions: tuple = ()) -> list:
    opts = LintOptions(default_version(), diagnostics=False, crd_versions=crd_versions)
    return lint_sources([Source("m.yaml", text)], opts).problems


def test_committed_schemas_match_the_generator() -> None:
    assert crdgen.OUTPUT.read_text(encoding="utf-8") == crdgen.generate(), (
        "crds.generated.json is stale: run python -m mldiag_provision.lint.crdgen")


def test_pins_name_tag_and_commit_and_every_input_is_vendored() -> None:
    pins = yaml.safe_load(crdgen.PINS.read_text())["projects"]
    assert set(pins) == {"jobset", "lws", "kuberay", "kueue", "gkenetworking"}
    sums = crdgen.UPSTREAM.joinpath("SHA256SUMS").read_text().split()
    for project, spec in pins.items():
        for tag, pin in spec["versions"].items():
            assert tag.startswith("v") and len(pin["commit"]) == 40
            for path in spec["paths"]:
                assert f"{project}/{tag}/{Path(path).name}.gz" in sums
    assert crd_projects()["jobset"] == ("v0.5.2", "v0.9.0", "v0.12.0")


def test_an_altered_input_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    up = tmp_path / "upstream"
    shutil.copytree(crdgen.UPSTREAM, up)
    f = up / "jobset" / "v0.9.0" / "jobset.x-k8s.io_jobsets.yaml.gz"
    f.write_bytes(gzip.compress(gzip.decompress(f.read_bytes()) + b"\n# edited\n"))
    monkeypatch.setattr(crdgen, "UPSTREAM", up)
    monkeypatch.setattr(crdgen, "SUMS", up / "SHA256SUMS")
    with pytest.raises(crdgen.GenerateError, match="sha256 differs"):
        crdgen.generate()


def test_embedded_pod_specs_point_at_the_kubernetes_definitions() -> None:
    doc = json.loads(crdgen.OUTPUT.read_text())
    text = json.dumps(doc)
    assert '"containers"' not in text  # every pod spec replaced by {$k8s: PodSpec}
    kinds = {(k["project"], k["version"], k["kind"]) for k in doc["kinds"]}
    assert ("lws", "v0.10.0", "LeaderWorkerSet") in kinds
    assert ("kuberay", "v1.7.0", "RayJob") in kinds and ("kuberay", "v1.7.0", "RayCluster") in kinds


def test_generator_refuses_a_pod_spec_left_inline() -> None:
    crd = {"kind": "CustomResourceDefinition",
           "spec": {"group": "x.io", "names": {"kind": "Thing"}, "versions": [{
               "name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {"pod": {
                       "type": "object", "properties": {"containers": {},
                                                        "restartPolicy": {}}}}}}}}}]}}
    with pytest.raises(crdgen.GenerateError, match=r"left inline at spec\.pod"):
        crdgen.convert(crd, "x", "v1.0.0", {"repo": "a/b", "commit": "0" * 40}, "p.yaml")


# --- stating the installed release ------------------------------------------------------------

def test_field_unknown_to_the_stated_jobset_release_is_an_error() -> None:
    found = by_rule_list(_lint(JOBSET_NPRA, (("jobset", "v0.5.2"),)), "k8s-unknown-field")
    assert [(p.severity, p.path) for p in found] == [
        (Severity.ERROR, "spec.network.publishNotReadyAddresses")]
    assert "jobset v0.5.2 does not know it" in found[0].message
    assert "v0.5.2" in found[0].source and "8637f29b" in found[0].source


def test_same_manifest_passes_on_a_release_that_has_the_field() -> None:
    assert _lint(JOBSET_NPRA, (("jobset", "v0.9.0"),)) == []
    assert _lint(JOBSET_NPRA) == []  # not stated: the newest shipped release


def test_unstated_release_only_warns_about_unknown_fields() -> None:
    text = JOBSET_NPRA.replace("publishNotReadyAddresses", "publishNotReadyAdresses")
    found = by_rule_list(_lint(text), "k8s-unknown-field")
    assert [p.severity for p in found] == [Severity.WARNING]
    assert found[0].hint == "did you mean 'publishNotReadyAddresses'?"


def by_rule_list(problems: list, rule: str) -> list:
    return [p for p in problems if p.rule == rule]


@pytest.mark.parametrize("items, match", [
    (["jobset=v0.8.2"], "no jobset v0.8.2 CRD is shipped"),
    (["kueue=v0.1.0"], "no kueue v0.1.0 CRD is shipped"),
    (["volcano=v1.0.0"], "unknown project 'volcano'"),
])
def test_unshipped_release_or_project_is_a_usage_error(items: list, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        resolve_crd_versions(items)


def test_aliases_and_bare_versions() -> None:
    assert resolve_crd_versions(["leaderworkerset=0.10.0", "ray=v1.7.0"]) == (
        ("kuberay", "v1.7.0"), ("lws", "v0.10.0"))


def test_cli_flag_and_recipe_field(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    m = tmp_path / "js.yaml"
    m.write_text(JOBSET_NPRA)
    code, out, _ = cli("lint", "--no-diagnostics", "--crd-version", "jobset=v0.5.2", str(m))
    assert code == 1 and "spec.network.publishNotReadyAddresses" in out
    recipe = (ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml").read_text().replace(
        "    minVersion: 1.34.1-gke.1000000\n",
        "    minVersion: 1.34.1-gke.1000000\n    crdVersions: {jobset: v0.5.2}\n")
    r = tmp_path / "r.yaml"
    r.write_text(recipe)
    code, out, _ = cli("lint", "--no-diagnostics", "--recipe", str(r), str(m))
    assert code == 1 and "jobset v0.5.2 does not know it" in out
    code, _, err = cli("lint", "--recipe", str(r), "--crd-version", "jobset=v0.9.0", str(m),
                       "--no-diagnostics")
    assert code == 0, err  # the command line wins over the recipe
    r.write_text(recipe.replace("jobset: v0.5.2", "jobset: v0.7.0"))
    code, out, _ = cli("validate", str(r))
    assert code == 1 and "spec.orchestrator.crdVersions.jobset" in out
    assert "one of: v0.5.2, v0.9.0, v0.12.0" in out
    code, _, err = cli("lint", "--recipe", str(r), str(m))
    assert code == 2 and "the recipe has errors" in err


def test_recipe_field_offers_exactly_the_shipped_releases() -> None:
    from typing import get_args

    from mldiag_provision.recipe.model import CrdVersions

    for project, versions in crd_projects().items():
        annotation = CrdVersions.model_fields[project].annotation
        offered = tuple(v for arg in get_args(annotation) for v in get_args(arg))
        assert offered == versions, (project, offered, versions)
