"""A wire-level stand-in for the Cloud Storage JSON API's object listing, for the destroy
guard's "is the profiles bucket empty?" question.

Part of the sandbox, a wire-level double of Google Cloud. The official
``google-cloud-storage`` client talks to it through
``STORAGE_EMULATOR_HOST`` (the variable the client documents for emulators). Objects are the
files under ``<cloud>/gcs-objects/<bucket>/``; only ``GET /storage/v1/b/<bucket>/o`` is
served (JSON shaped like https://cloud.google.com/storage/docs/json_api/v1/objects/list).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse


def put_object(cloud: Path, bucket: str, name: str, data: bytes = b"x") -> Path:
    """Store one object (a test's way to "upload a profile")."""
    path = cloud / "gcs-objects" / bucket / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


class GcsStandIn:
    """Serves the objects of ``cloud`` on 127.0.0.1; ``url`` is for STORAGE_EMULATOR_HOST."""

    def __init__(self, cloud: Path) -> None:
        root = cloud / "gcs-objects"

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                parts = url.path.strip("/").split("/")
                if len(parts) != 5 or parts[:2] != ["storage", "v1"] or parts[2] != "b" \
                        or parts[4] != "o":
                    return self._send(404, {"error": {"code": 404, "message": "Not Found"}})
                bucket = unquote(parts[3])
                limit = int(parse_qs(url.query).get("maxResults", ["1000"])[0])
                folder = root / bucket
                names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                               if p.is_file()) if folder.is_dir() else []
                items = [{"kind": "storage#object", "bucket": bucket, "name": n,
                          "id": f"{bucket}/{n}/1", "generation": "1"} for n in names[:limit]]
                self._send(200, {"kind": "storage#objects", "items": items})

            def _send(self, code: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> GcsStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
