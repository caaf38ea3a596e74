"""`verify` against a hostile API server and broken kubeconfigs (issue 15): every case ends
in one named FAIL or a usage error (exit 2), never a hang or an internal error (exit 70)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fake_apiserver import FakeApiServer
from test_verify import RECIPE, by_check, healthy

from mldiag_provision.cli.app import main

HTML = b"<!doctype html><html><body>Sign in to continue</body></html>"


def _verify(tmp_path: Path, capsys: pytest.CaptureFixture, api: FakeApiServer) -> tuple[int,
                                                                                      dict]:
    code = main(["verify", str(RECIPE), "--kubeconfig", str(api.kubeconfig(tmp_path / "kc")),
                 "-O", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_server_that_never_answers_times_out_with_one_named_fail(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "1")
    with FakeApiServer() as api:
        api.hang.add("*")
        start = time.monotonic()
        code, report = _verify(tmp_path, capsys, api)
        took = time.monotonic() - start
    assert code == 1
    [only] = report["checks"]
    assert only["check"] == "api-server" and only["status"] == "FAIL"
    assert "GET /version got no answer within 1 s" in only["message"]
    assert took < 10, f"one timeout, no retries after it: took {took:.1f} s"


def test_a_check_whose_request_hangs_fails_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "1")
    with FakeApiServer() as api:
        api.objects.update(healthy())
        api.hang.add("/api/v1/namespaces/mldiag")
        code, report = _verify(tmp_path, capsys, api)
    assert code == 1
    failed = {c["check"]: c for c in report["checks"] if c["status"] == "FAIL"}
    assert set(failed) == {"namespace-label"}
    assert "did not answer in time" in failed["namespace-label"]["message"]


def test_200_with_html_is_named_not_called_unreachable(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with FakeApiServer() as api:
        api.raw["/version"] = (200, "text/html; charset=utf-8", HTML)
        code, report = _verify(tmp_path, capsys, api)
    assert code == 1
    [only] = report["checks"]
    assert "cannot reach" not in only["message"]
    assert "text/html" in only["message"] and "not a Kubernetes version object" in \
        only["message"]
    assert "not a Kubernetes API server" in only["hint"]


@pytest.mark.parametrize("body", [b"null", b"[]", b'{"gitVersion": null}', b'"v1.35"', b""])
def test_version_of_the_wrong_shape_is_a_fail(body: bytes, tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    with FakeApiServer() as api:
        api.raw["/version"] = (200, "application/json", body)
        code, report = _verify(tmp_path, capsys, api)
    assert code == 1 and report["checks"][0]["status"] == "FAIL"


@pytest.mark.parametrize("path", ["/api/v1/namespaces/mldiag", "/api/v1/nodes",
                                  "/apis/apps/v1/namespaces/gke-mldiagnostics/deployments"])
@pytest.mark.parametrize("body", [HTML, b"null", b'{"items": null, "metadata": 3}',
                                  b'{"items": [null, 1, "x"]}', b'{"spec": []}'])
def test_objects_of_the_wrong_shape_fail_their_check(path: str, body: bytes, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    with FakeApiServer() as api:
        api.objects.update(healthy())
        api.raw[path] = (200, "application/json", body)
        code, report = _verify(tmp_path, capsys, api)
    assert code in (0, 1), report  # an empty list may pass; never 70
    assert by_check(report)["api-server"]["status"] == "PASS"


KUBECONFIGS = {
    "not-yaml": ("[1, 2", "not YAML"),
    "yaml-list": ("- a\n- b\n", "is a YAML list, not a kubeconfig"),
    "yaml-scalar": ("just words", "is the scalar 'just words', not a kubeconfig"),
    "empty": ("", "is empty, not a kubeconfig"),
    "clusters-not-a-list": ("clusters: 3\n", "clusters must be a list"),
    "cluster-entry-not-a-mapping": ("clusters: [1]\n", "clusters[0] must be a mapping"),
    "not-utf8": (b"a: \xff\n", "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(KUBECONFIGS))
def test_broken_kubeconfig_is_a_usage_error(case: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    content, message = KUBECONFIGS[case]
    kc = tmp_path / "kubeconfig"
    if isinstance(content, bytes):
        kc.write_bytes(content)
    else:
        kc.write_text(content, encoding="utf-8")
    code = main(["verify", str(RECIPE), "--kubeconfig", str(kc)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"kubeconfig {kc}" in err and message in err
    assert "internal error" not in err


def test_missing_kubeconfig_from_env_is_a_usage_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    code = main(["verify", str(RECIPE)])
    assert code == 2 and "no such file" in capsys.readouterr().err
