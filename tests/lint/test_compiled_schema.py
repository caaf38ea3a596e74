"""The compiled schema validator (jsonschema-rs) only decides which objects are valid; the
findings must be exactly those of python-jsonschema alone (issue 16).

Corpus: every manifest of the lint test data (seeds, fault kinds, fuzz regressions), every
rendered manifest of the golden stacks, and typed mutations of them (values of the wrong
shape, YAML dates, integers beyond 64 bits, integral floats, non-string keys, confusable
strings), each read through lint's own loader, against the default Kubernetes version, the
newest one, and a stated (older) JobSet release.
"""

from __future__ import annotations

import copy
import datetime
import random
import sys
from pathlib import Path

import pytest
import yaml

from mldiag_provision.lint.loading import Resource, Source, load_sources
from mldiag_provision.lint.schema import (
    SchemaSet,
    available_versions,
    default_version,
    resolve_crd_versions,
    validate_resource,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from fuzz.mutate import TRICKY_STRINGS, _paths, _set  # noqa: E402

pytest.importorskip("jsonschema_rs")

MUTANTS = 600
POOL: list[object] = [None, True, False, 0, -1, 2**40, 2**64, -(2**70), 1.0, 3.0, 1.5, -0.0,
                      float("inf"), "", "x", [], {}, [None], {"a": None}, {1: "x"},
                      {True: "y"}, datetime.date(2020, 1, 2),
                      datetime.datetime(2020, 1, 2, 3, 4, 5), "500m", "16Gi", "4",
                      *TRICKY_STRINGS[:40]]


def _corpus_files() -> list[Path]:
    files = sorted((ROOT / "tests" / "lint" / "data").rglob("*.yaml"))
    files += sorted((ROOT / "tests" / "fuzz" / "regressions").rglob("*.yaml"))
    files += sorted((ROOT / "tests" / "golden" / "stacks").glob("*/k8s/**/*.yaml"))
    return files


def _resources(texts: list[tuple[str, str]]) -> list[Resource]:
    return load_sources([Source(name, text) for name, text in texts]).resources


def _mutants(seed_docs: list[object]) -> list[tuple[str, str]]:
    rng = random.Random(16)
    out = []
    for i in range(MUTANTS):
        tree = copy.deepcopy(rng.choice(seed_docs))
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(_paths(tree)[1:] or [()])
            tree = _set(tree, path, copy.deepcopy(rng.choice(POOL)))
        try:
            text = yaml.safe_dump(tree, sort_keys=False, allow_unicode=True)
        except yaml.YAMLError:
            continue
        out.append((f"mutant-{i}.yaml", text))
    return out


@pytest.fixture(scope="module")
def corpus() -> list[Resource]:
    texts = [(str(f.relative_to(ROOT)), f.read_text(encoding="utf-8"))
             for f in _corpus_files()]
    docs = [d for _, t in texts for d in yaml.safe_load_all(t)
            if isinstance(d, dict) and d.get("kind")]
    resources = _resources(texts) + _resources(_mutants(docs))
    assert len(resources) > MUTANTS  # the corpus is not empty
    return resources


def _problems(res: Resource, schemas: SchemaSet) -> list[tuple]:
    return [(p.rule, p.message, p.path, repr(p.value), p.expected, p.hint, p.line, p.column,
             p.severity, p.source) for p in validate_resource(res, schemas)]


@pytest.mark.parametrize("setting", ["default", "newest", "stated-jobset"])
def test_same_findings_with_and_without_the_compiled_validator(corpus: list[Resource],
                                                              setting: str) -> None:
    version = available_versions()[-1] if setting == "newest" else default_version()
    crds = resolve_crd_versions(["jobset=v0.5.2"]) if setting == "stated-jobset" else ()
    fast = SchemaSet(version, crds, compiled=True)
    slow = SchemaSet(version, crds, compiled=False)
    accepted = rejected = 0
    for res in corpus:
        assert _problems(res, fast) == _problems(res, slow), (res.file, res.display())
        if slow.schema_for(res.api_version, res.kind)[0] is None:
            continue
        if fast.accepts(res.api_version, res.kind, res.data):
            accepted += 1
            # the unsafe direction: what the compiled validator accepts, python-jsonschema
            # must find no error in
            validator, _ = slow.validator_for(res.api_version, res.kind)
            assert not list(validator.iter_errors(res.data)), (res.file, res.display())
        else:
            rejected += 1
    # both paths are exercised: the fast one decides most objects, mutants reach the other
    assert accepted > 50 and rejected > 50, (accepted, rejected)


def test_switched_off_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_LINT_COMPILED", "0")
    off = SchemaSet(default_version())
    assert not off.compiled
    assert not off.accepts("batch/v1", "Job", {"apiVersion": "batch/v1", "kind": "Job",
                                               "metadata": {"name": "a"}})
    monkeypatch.delenv("MLDIAG_LINT_COMPILED")
    on = SchemaSet(default_version())
    assert on.accepts("batch/v1", "Job", {"apiVersion": "batch/v1", "kind": "Job",
                                          "metadata": {"name": "a"}})
    assert not on.accepts("batch/v1", "Job", {"apiVersion": "batch/v1", "kind": "Job",
                                              "metadata": {"name": 5}})
    # a YAML date is a string to kubectl; jsonschema-rs cannot take it: python decides
    assert not on.accepts("batch/v1", "Job", {"apiVersion": "batch/v1", "kind": "Job",
                                              "metadata": {"name": datetime.date(2020, 1, 1)}})


def test_crds_yaml_reads_the_same_through_libyaml() -> None:
    """lint.schema reads data/crds.yaml with libyaml's reader where PyYAML has it (issue 16):
    the same data as PyYAML's own reader, types and order included."""
    import yaml

    from mldiag_provision.lint.schema import _YAML_LOADER, DATA_DIR

    text = (DATA_DIR / "crds.yaml").read_text(encoding="utf-8")
    assert repr(yaml.load(text, Loader=_YAML_LOADER)) == repr(yaml.safe_load(text))
