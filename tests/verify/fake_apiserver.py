"""A wire-level stand-in for the Kubernetes API server, for `verify` tests.

No kube-apiserver can run on this machine (no package ships one), so the tests serve JSON
shaped like the API server's responses (built here, not captured from a cluster) over real
HTTP on 127.0.0.1, and the official Kubernetes Python client talks to it exactly as it would
to a cluster. Routes are exact paths; list endpoints honour ``labelSelector`` (equality
terms) so node checks see only matching nodes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse


class FakeApiServer:
    def __init__(self) -> None:
        self.objects: dict[str, object] = {  # path -> JSON body (GET)
            "/version": {"major": "1", "minor": "35", "gitVersion": "v1.35.0-gke.3065000",
                         "gitCommit": "0" * 40, "gitTreeState": "clean",
                         "buildDate": "2026-11-01T00:00:00Z", "goVersion": "go1.25",
                         "compiler": "gc", "platform": "linux/amd64"},
        }
        self.logs: dict[str, str] = {}  # pod log path -> text
        # hostile behaviour, for the hardening and fuzz tests: a path in ``hang`` is accepted
        # and never answered (until the server stops); a path in ``raw`` is answered with
        # exactly (status, content type, body bytes), e.g. 200 with an HTML login page
        self.hang: set[str] = set()
        # a path in ``trickle`` (or "*") is answered 200 with its headers, then one byte of a
        # body that never ends every 0.2 s: each read is within any per-request timeout, so
        # only an overall deadline ends the wait (issue 28); "/version" is exempt from "*"
        self.trickle: set[str] = set()
        self.raw: dict[str, tuple[int, str, bytes]] = {}
        self.stopping = threading.Event()
        self.requests: list[tuple[str, str, object]] = []
        self.arrived: dict[str, float] = {}  # path -> time.monotonic() of its first GET
        # called with (path, body) after a POST is accepted: a test plays a controller here
        # (e.g. the pods a JobSet controller would create)
        self.on_post: Callable[[str, dict], None] | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, code: int, body: object, ctype: str = "application/json") -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                url = url._replace(path=url.path.rstrip("/") or "/")  # "/version/" == "/version"
                server.requests.append(("GET", url.path, None))
                server.arrived.setdefault(url.path, time.monotonic())
                if url.path in server.hang or "*" in server.hang:
                    server.stopping.wait(120)  # accepted, never answered
                    return None
                if url.path in server.trickle or ("*" in server.trickle
                                                  and url.path != "/version"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(1 << 30))
                    self.end_headers()
                    try:
                        self.wfile.write(b"{")
                        while not server.stopping.wait(0.2):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                    except OSError:  # the client gave up
                        pass
                    return None
                if url.path in server.raw:
                    code, ctype, data = server.raw[url.path]
                    self.send_response(code)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return None
                if url.path in server.logs:
                    return self._send(200, server.logs[url.path], "text/plain")
                body = server.objects.get(url.path)
                if body is None:
                    return self._send(404, {"kind": "Status", "apiVersion": "v1",
                                            "status": "Failure", "reason": "NotFound",
                                            "code": 404, "message": f"{url.path} not found"})
                selector = parse_qs(url.query).get("labelSelector", [""])[0]
                if selector and isinstance(body, dict) and "items" in body:
                    terms = dict(t.split("=", 1) for t in selector.split(",") if "=" in t)
                    items = [i for i in body["items"] if all(
                        (i.get("metadata", {}).get("labels") or {}).get(k) == v
                        for k, v in terms.items())]
                    body = {**body, "items": items}
                return self._send(200, body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                path = urlparse(self.path).path
                server.requests.append(("POST", path, payload))
                if path not in server.objects:
                    return self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
                if server.on_post is not None:
                    server.on_post(path, payload)
                return self._send(201, payload)

            def do_DELETE(self) -> None:
                server.requests.append(("DELETE", urlparse(self.path).path, None))
                return self._send(200, {"kind": "Status", "status": "Success"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "not-a-real-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
        }), encoding="utf-8")
        return path
