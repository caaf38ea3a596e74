"""The sandbox doubles' HTTP server (mldiag_provision/sandbox/httpserve.py, used by the API
server, the Google API stand-in and the Cloud Storage double):
a client that hangs up mid-answer (an apply stopped with Ctrl-C, a closed kubectl) is not a
traceback on the user's terminal; any other error in a request still is."""

from __future__ import annotations

import ssl
from http.server import BaseHTTPRequestHandler

import pytest

from mldiag_provision.sandbox.httpserve import QuietServer as _Server


@pytest.mark.parametrize("gone", [
    ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
    BrokenPipeError(32, "Broken pipe"),
    ConnectionResetError(104, "Connection reset by peer"),
])
def test_a_client_that_hung_up_is_quiet(gone: Exception, capsys) -> None:
    server = _Server(("127.0.0.1", 0), BaseHTTPRequestHandler)
    try:
        try:
            raise gone
        except OSError:
            server.handle_error(None, ("127.0.0.1", 50000))
    finally:
        server.server_close()
    assert capsys.readouterr().err == ""


def test_any_other_error_is_still_reported(capsys) -> None:
    server = _Server(("127.0.0.1", 0), BaseHTTPRequestHandler)
    try:
        try:
            raise ValueError("a bug in the handler")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 50000))
    finally:
        server.server_close()
    err = capsys.readouterr().err
    assert "ValueError: a bug in the handler" in err and "127.0.0.1" in err
