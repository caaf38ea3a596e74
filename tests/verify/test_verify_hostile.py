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
    # line and column of the first bad byte, as for recipes and manifests (errors.not_utf8)
    "not-utf8-second-line": (b"apiVersion: v1\nkind: Conf\xe9g\n", ":2:11: not UTF-8 text"),
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


# --- the overall deadline (--timeout, issue 28) -------------------------------------------

def _verify_timed(tmp_path: Path, capsys: pytest.CaptureFixture, api: FakeApiServer,
                  *extra: str) -> tuple[int, dict, float]:
    """verify's exit code, JSON report, and the seconds from its first request (GET
    /version, just after the deadline starts: the recipe's preflight before it is not
    what the deadline bounds) to its end."""
    code = main(["verify", str(RECIPE), "--kubeconfig", str(api.kubeconfig(tmp_path / "kc")),
                 "-O", "json", *extra])
    end = time.monotonic()
    return code, json.loads(capsys.readouterr().out), end - api.arrived["/version"]


def test_a_server_that_stalls_every_call_ends_at_the_deadline(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: /version answers, every other call stalls; each call cost the per-request
    timeout, one after the other (201 s in the campaign). The deadline ends it, naming the
    check in flight and every check not run."""
    monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "2")
    with FakeApiServer() as api:
        api.objects.update(healthy())
        api.hang.update(p for p in healthy() if p != "/version")
        api.hang.add("/api/v1/namespaces/mldiag")
        code, report, took = _verify_timed(tmp_path, capsys, api, "--timeout", "6")
    assert code == 1
    # without the deadline: 2 s for each of the 7 checks after /version, one after another
    assert took < 6 + 2.5, f"ended {took:.1f} s after starting, past the 6 s deadline"
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["api-server"]["status"] == "PASS"
    cut = report["deadline"]["pending"]
    assert report["deadline"]["passed"] and cut and cut[-1] == list(checks)[-1]
    for name in cut:
        assert checks[name]["status"] == "FAIL"
        assert checks[name]["message"].startswith("not checked: the overall deadline of 6 s "
                                                  "(--timeout) passed"), checks[name]
        assert "--timeout SECONDS" in checks[name]["hint"]


def test_a_server_that_trickles_its_answers_ends_at_the_deadline(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """One byte every 0.2 s: no read ever waits past the per-request timeout, so without the
    overall deadline the first check would wait forever."""
    monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "1")
    with FakeApiServer() as api:
        api.objects.update(healthy())
        api.trickle.add("*")
        code, report, took = _verify_timed(tmp_path, capsys, api, "--timeout", "4")
    assert code == 1
    assert took < 4 + 2.5, f"took {took:.1f} s"
    [first_cut] = [c for c in report["checks"] if c["check"] == "namespace-label"]
    assert "while it waited for the API server's answer" in first_cut["message"]
    assert report["deadline"]["pending"][0] == "namespace-label"


def test_text_output_names_what_was_pending(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "1")
    with FakeApiServer() as api:
        api.objects.update(healthy())
        api.trickle.add("*")
        code = main(["--no-color", "verify", str(RECIPE), "--kubeconfig",
                     str(api.kubeconfig(tmp_path / "kc")), "--timeout", "4"])
    text = capsys.readouterr().out
    assert code == 1
    assert "deadline: --timeout 4 s passed; still pending: namespace-label, " in text


def test_a_healthy_cluster_is_unaffected_by_the_deadline(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with FakeApiServer() as api:
        api.objects.update(healthy())
        code, report, _ = _verify_timed(tmp_path, capsys, api, "--timeout", "60")
    assert code == 0, report
    assert report["deadline"] == {"seconds": 60.0, "passed": False, "pending": []}


@pytest.mark.parametrize("bad", ["0", "-5", "nan", "soon"])
def test_timeout_must_be_a_positive_number_of_seconds(bad: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["verify", str(RECIPE), "--timeout", bad])
    assert exc.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_requests_after_the_deadline_are_not_sent() -> None:
    """The client-level bound: once the deadline has passed, a request is refused before it
    is sent (DeadlineExceeded, not a timeout of the server's), a DELETE (clean-up) is not."""
    from kubernetes import client

    from mldiag_provision.stack import kube

    with FakeApiServer() as api:
        conf = client.Configuration()
        conf.host = api.url
        conf.verify_ssl = False
        c = kube.set_deadline(kube.with_timeouts(client.ApiClient(conf)), kube.Deadline(0))
        with pytest.raises(kube.DeadlineExceeded, match="--timeout"):
            client.VersionApi(c).get_code()
        assert not kube.is_timeout(kube.DeadlineExceeded("x"))
        sent = len(api.requests)
        client.CoreV1Api(c).delete_namespaced_config_map("x", "default")
        assert api.requests[sent:] == [("DELETE",
                                        "/api/v1/namespaces/default/configmaps/x", None)]


def test_lint_cluster_ends_at_its_deadline_naming_the_pending_request(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lint --cluster` talks to a server too: the same overall deadline (exit 4, as for a
    cluster that cannot be read), naming the request still unanswered."""
    monkeypatch.setenv("MLDIAG_REQUEST_TIMEOUT_S", "1")
    manifest = tmp_path / "ns.yaml"
    manifest.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n")
    with FakeApiServer() as api:
        api.trickle.add("*")
        start = time.monotonic()
        code = main(["--no-color", "lint", str(manifest), "--timeout", "5", "--cluster",
                     str(api.kubeconfig(tmp_path / "kc"))])
        took = time.monotonic() - start
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 4, text
    assert "the overall deadline of 5 s (--timeout) passed while reading the cluster; " \
           "still pending: GET /api/v1/nodes" in " ".join(text.split())
    assert "--timeout SECONDS" in text
    assert took < 30, f"took {took:.1f} s"  # a guard: without the deadline, never
