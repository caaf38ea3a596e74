"""Invalid recipes whose whole ``validate --no-color`` text output is pinned.

Each case is ``errors/<case>.yaml`` + ``errors/<case>.txt``. The recipe is passed relative to
the repository root so the pinned file names are stable. ``--update-goldens`` rewrites the
.txt files. ``EXPECTED`` names the position each case must point at, so a golden that was
regenerated with a wrong position still fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ERRORS = Path(__file__).resolve().parent / "errors"

# case -> (file:line:col of the key problem, rule id, a phrase of its message)
EXPECTED: dict[str, tuple[str, str, str]] = {
    "v5e-topology-3x3": ("16:17", "tpu-slice-shape", "topology '3x3' does not exist"),
    "v4-multihost-chips-per-pod-8": ("21:20", "workload-chips", "8 chips per pod"),
    "unknown-key-toplogy": ("16:7", "recipe-unknown-key", "did you mean 'topology'?"),
    "yaml-syntax-error": ("15:12", "yaml-syntax", "YAML syntax error"),
    "v5e-2x4-ambiguous": ("14:7", "tpu-slice-shape", "v5e 2x4 is ambiguous"),
    "tpu7x-min-version-too-low": ("10:17", "gke-version",
                                  "below 1.34.1-gke.3084001, the minimum for TPU tpu7x"),
    "duplicate-key": ("18:7", "yaml-duplicate-key", "duplicate key 'topology'"),
    "wrong-type-count": ("18:14", "recipe-type", "'two' is the wrong type"),
    "slurm-tpu-and-partitions": ("16:12", "slurm-tpu",
                                 "runs on Compute Engine GPU and CPU machines"),
}
CASES = sorted(p.stem for p in ERRORS.glob("*.yaml"))


def test_every_case_has_an_expectation() -> None:
    assert sorted(EXPECTED) == CASES


@pytest.mark.parametrize("case", CASES)
def test_error_output_is_pinned(case: str, cli, monkeypatch: pytest.MonkeyPatch,
                                update_goldens: bool) -> None:
    monkeypatch.chdir(REPO_ROOT)
    rel = f"tests/golden/errors/{case}.yaml"
    code, out, err = cli("--no-color", "validate", rel)
    assert code == 1, out + err
    assert err == "", err
    assert "Traceback" not in out
    where, rule, phrase = EXPECTED[case]
    assert f"{rel}:{where}: error[{rule}]: " in out, out
    assert phrase in out, out
    golden = ERRORS / f"{case}.txt"
    if update_goldens:
        golden.write_text(out, encoding="utf-8")
        return
    assert golden.is_file(), f"missing {golden.name}: run with --update-goldens"
    assert out == golden.read_text(encoding="utf-8")
