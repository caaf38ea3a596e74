"""A wire-level stand-in for the Cloud Storage JSON API: the object listing the destroy
guard asks ("is the profiles bucket empty?"), and enough of objects get/insert/delete, with
generation preconditions, for Terraform's own ``gcs`` state backend and its lock.

Part of the sandbox, a wire-level double of Google Cloud. The official
``google-cloud-storage`` client talks to it through ``STORAGE_EMULATOR_HOST`` (the variable
the client documents for emulators); Terraform's ``gcs`` backend through its
``storage_custom_endpoint`` setting (``<url>/storage/v1/``). Objects are the files under
``<cloud>/gcs-objects/<bucket>/``; a bucket exists when its folder does.

Served, each shaped like the Cloud Storage JSON API reference
(https://cloud.google.com/storage/docs/json_api/v1/objects):

* ``GET /storage/v1/b/<bucket>/o`` objects.list (``prefix``, ``delimiter`` giving
  ``prefixes``, ``maxResults``);
* ``GET /storage/v1/b/<bucket>/o/<object>`` objects.get (metadata; ``alt=media`` the bytes),
  and the media downloads ``GET /download/storage/v1/b/<bucket>/o/<object>`` and the XML API's
  ``GET /<bucket>/<object>`` (the Go client reads objects there by default), with the
  ``x-goog-generation`` header;
* ``POST /upload/storage/v1/b/<bucket>/o`` objects.insert with ``uploadType`` ``media``,
  ``multipart`` or ``resumable`` (then ``PUT`` of the session URI, ``Content-Range``, 308 until
  the last byte), https://cloud.google.com/storage/docs/json_api/v1/objects/insert and
  https://cloud.google.com/storage/docs/performing-resumable-uploads;
* ``DELETE /storage/v1/b/<bucket>/o/<object>`` objects.delete (204);
* ``GET /storage/v1/b/<bucket>`` buckets.get (404 when the folder is absent).

Preconditions (https://cloud.google.com/storage/docs/request-preconditions):
``ifGenerationMatch`` (``0``: the object must not exist) and ``ifGenerationNotMatch`` on
insert, get and delete; a failed one is ``412 Precondition Failed`` (``304 Not Modified`` for a
get with ``ifGenerationNotMatch``). The check and the write happen under one lock, so of two
concurrent ``ifGenerationMatch=0`` inserts exactly one succeeds, as Terraform's state lock
(an object created only if absent; its generation is the lock id) relies on. A missing object
or bucket is ``404``. Every object's generation is kept in memory (files put there by a test
take their modification time in nanoseconds) and only grows.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse

from mldiag_provision.sandbox.httpserve import QuietServer


def put_object(cloud: Path, bucket: str, name: str, data: bytes = b"x") -> Path:
    """Store one object (a test's way to "upload a profile")."""
    path = cloud / "gcs-objects" / bucket / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> str:
    """The object's ``crc32c`` field: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78,
    RFC 4960 appendix B), big-endian, base64 (objects resource,
    https://cloud.google.com/storage/docs/json_api/v1/objects#resource)."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return base64.b64encode((c ^ 0xFFFFFFFF).to_bytes(4, "big")).decode()


class _Failure(Exception):
    """An HTTP error answer: ``code`` and the JSON API's error message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Store:
    """The objects under ``root`` (``<bucket>/<name>`` files) and their generations; every
    method that reads a generation and then writes runs under ``self.lock``."""

    def __init__(self, root: Path, scratch: Path) -> None:
        self.root = root
        self.scratch = scratch
        self.lock = threading.Lock()
        self.generations: dict[tuple[str, str], int] = {}
        self.last = 0
        self.uploads: dict[str, dict[str, Any]] = {}

    def path(self, bucket: str, name: str) -> Path:
        if not bucket or not name or ".." in Path(name).parts or name.startswith("/"):
            raise _Failure(400, f"Invalid object name {name!r}")
        return self.root / bucket / name

    def bucket_exists(self, bucket: str) -> bool:
        return bool(bucket) and (self.root / bucket).is_dir()

    def generation(self, bucket: str, name: str) -> int | None:
        """The object's generation, or None when it does not exist."""
        path = self.path(bucket, name)
        if not path.is_file():
            self.generations.pop((bucket, name), None)
            return None
        gen = self.generations.get((bucket, name))
        return gen if gen is not None else path.stat().st_mtime_ns

    def resource(self, bucket: str, name: str) -> dict[str, Any]:
        """The objects resource (JSON API shape; numbers as strings, as the API sends)."""
        gen = self.generation(bucket, name)
        if gen is None:
            raise _Failure(404, f"No such object: {bucket}/{name}")
        data = self.path(bucket, name).read_bytes()
        return {"kind": "storage#object", "id": f"{bucket}/{name}/{gen}", "name": name,
                "bucket": bucket, "generation": str(gen), "metageneration": "1",
                "contentType": "application/octet-stream", "size": str(len(data)),
                "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode(),
                "crc32c": crc32c(data),
                "storageClass": "STANDARD",
                "selfLink": f"/storage/v1/b/{bucket}/o/{quote(name, safe='')}"}

    def check(self, bucket: str, name: str, query: dict[str, str], *, read: bool) -> None:
        """Raise the precondition failure ``query`` calls for, if any."""
        if not self.bucket_exists(bucket):
            raise _Failure(404, f"The specified bucket does not exist: {bucket}")
        gen = self.generation(bucket, name)
        match = query.get("ifGenerationMatch")
        if match is not None and (gen or 0) != int(match):
            raise _Failure(412, "At least one of the pre-conditions you specified did not hold.")
        not_match = query.get("ifGenerationNotMatch")
        if not_match is not None and (gen or 0) == int(not_match):
            if read:
                raise _Failure(304, "Not Modified")
            raise _Failure(412, "At least one of the pre-conditions you specified did not hold.")

    def write(self, bucket: str, name: str, data: bytes, query: dict[str, str]) -> dict[str, Any]:
        """Insert (or replace) the object if the preconditions hold; its new resource."""
        with self.lock:
            self.check(bucket, name, query, read=False)
            path = self.path(bucket, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.scratch.mkdir(parents=True, exist_ok=True)
            tmp = self.scratch / secrets.token_hex(8)
            tmp.write_bytes(data)
            os.replace(tmp, path)
            self.last = max(self.last + 1, time.time_ns())
            self.generations[(bucket, name)] = self.last
            return self.resource(bucket, name)

    def delete(self, bucket: str, name: str, query: dict[str, str]) -> None:
        with self.lock:
            self.check(bucket, name, query, read=False)
            if self.generation(bucket, name) is None:
                raise _Failure(404, f"No such object: {bucket}/{name}")
            self.path(bucket, name).unlink()
            self.generations.pop((bucket, name), None)

    def read(self, bucket: str, name: str, query: dict[str, str]) -> tuple[bytes, dict[str, Any]]:
        with self.lock:
            self.check(bucket, name, query, read=True)
            res = self.resource(bucket, name)
            return self.path(bucket, name).read_bytes(), res

    def listing(self, bucket: str, query: dict[str, str]) -> dict[str, Any]:
        """objects.list: names after ``prefix``; with ``delimiter``, names holding it past the
        prefix are rolled up into ``prefixes``."""
        folder = self.root / bucket
        names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                       if p.is_file()) if folder.is_dir() else []
        prefix = query.get("prefix", "")
        delim = query.get("delimiter", "")
        limit = int(query.get("maxResults", "1000"))
        items: list[dict[str, Any]] = []
        prefixes: list[str] = []
        with self.lock:
            for n in names:
                if not n.startswith(prefix):
                    continue
                rest = n[len(prefix):]
                if delim and delim in rest:
                    p = prefix + rest[:rest.index(delim) + len(delim)]
                    if p not in prefixes:
                        prefixes.append(p)
                    continue
                if len(items) < limit:
                    try:
                        items.append(self.resource(bucket, n))
                    except _Failure:
                        continue  # deleted since the walk
        out: dict[str, Any] = {"kind": "storage#objects", "items": items}
        if prefixes:
            out["prefixes"] = prefixes
        return out


def _multipart(content_type: str, body: bytes) -> tuple[dict[str, Any], bytes]:
    """(metadata, media) of a ``multipart/related`` upload body: the first part is the
    object's JSON metadata, the second its bytes."""
    boundary = next((p.split("=", 1)[1].strip().strip('"') for p in content_type.split(";")
                     if p.strip().startswith("boundary=")), "")
    if not boundary:
        raise _Failure(400, "multipart upload without a boundary")
    parts = []
    for chunk in body.split(b"--" + boundary.encode())[1:]:
        if chunk.startswith(b"--"):
            break
        _head, _, content = chunk.partition(b"\r\n\r\n")
        if content.endswith(b"\r\n"):
            content = content[:-2]
        parts.append(content)
    if len(parts) != 2:
        raise _Failure(400, f"multipart upload with {len(parts)} parts (expected 2)")
    return (json.loads(parts[0] or b"{}"), parts[1])


class GcsStandIn:
    """Serves the objects of ``cloud`` on 127.0.0.1; ``url`` is for STORAGE_EMULATOR_HOST,
    ``url + "/storage/v1/"`` for Terraform's ``storage_custom_endpoint``.

    ``requests`` records each request as ``"METHOD path?query"`` (tests read it)."""

    def __init__(self, cloud: Path) -> None:
        store = _Store(cloud / "gcs-objects", cloud / ".gcs-scratch")
        self.store = store
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _route(self, method: str) -> None:
                url = urlparse(self.path)
                seen.append(f"{method} {self.path}")
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                parts = [unquote(p) for p in url.path.strip("/").split("/")] if \
                    url.path.strip("/") else []
                try:
                    body = self._body() if method in ("POST", "PUT") else b""
                    self._dispatch(method, parts, query, body)
                except _Failure as f:
                    if f.code == 304:
                        self._send(304, None)
                    else:
                        self._send(f.code, {"error": {"code": f.code, "message": f.message,
                                                      "errors": [{"message": f.message}]}})
                except (ValueError, KeyError) as e:
                    self._send(400, {"error": {"code": 400, "message": str(e)}})

            def _dispatch(self, method: str, parts: list[str], query: dict[str, str],
                          body: bytes) -> None:
                api = parts[:2] == ["storage", "v1"] and len(parts) >= 4 and parts[2] == "b"
                if method == "GET" and api and len(parts) == 4:
                    if not store.bucket_exists(parts[3]):
                        raise _Failure(404, f"The specified bucket does not exist: {parts[3]}")
                    return self._send(200, {"kind": "storage#bucket", "id": parts[3],
                                            "name": parts[3]})
                if method == "GET" and api and len(parts) == 5 and parts[4] == "o":
                    return self._send(200, store.listing(parts[3], query))
                if api and len(parts) >= 6 and parts[4] == "o":
                    bucket, name = parts[3], "/".join(parts[5:])
                    if method == "DELETE":
                        store.delete(bucket, name, query)
                        return self._send(204, None)
                    if method == "GET" and query.get("alt") == "media":
                        return self._media(*store.read(bucket, name, query))
                    if method == "GET":
                        return self._send(200, store.read(bucket, name, query)[1])
                if method == "GET" and parts[:3] == ["download", "storage", "v1"] \
                        and len(parts) >= 7 and parts[3] == "b" and parts[5] == "o":
                    return self._media(*store.read(parts[4], "/".join(parts[6:]), query))
                if parts[:3] == ["upload", "storage", "v1"] and len(parts) == 6 \
                        and parts[3] == "b" and parts[5] == "o":
                    return self._upload(method, parts[4], query, body)
                if method == "GET" and len(parts) >= 2 and parts[0] not in (
                        "storage", "upload", "download"):  # XML API read: /<bucket>/<object>
                    return self._media(*store.read(parts[0], "/".join(parts[1:]), query))
                raise _Failure(404, f"Not Found: {method} {'/'.join(parts)}")

            def _upload(self, method: str, bucket: str, query: dict[str, str],
                        body: bytes) -> None:
                kind = query.get("uploadType", "")
                if method == "POST" and kind == "media":
                    return self._send(200, store.write(bucket, query["name"], body, query))
                if method == "POST" and kind == "multipart":
                    meta, data = _multipart(self.headers.get("Content-Type") or "", body)
                    name = query.get("name") or str(meta.get("name") or "")
                    return self._send(200, store.write(bucket, name, data, query))
                if method == "POST" and kind == "resumable" and "upload_id" not in query:
                    meta = json.loads(body or b"{}")
                    name = query.get("name") or str(meta.get("name") or "")
                    with store.lock:
                        store.check(bucket, name, query, read=False)
                    upload_id = secrets.token_hex(12)
                    store.uploads[upload_id] = {"bucket": bucket, "name": name,
                                                "query": query, "data": bytearray()}
                    host = self.headers.get("Host") or "127.0.0.1"
                    self._send(200, None, {"Location": f"http://{host}/upload/storage/v1/b/"
                                           f"{quote(bucket)}/o?uploadType=resumable"
                                           f"&upload_id={upload_id}"})
                    return None
                if method == "PUT" and "upload_id" in query:
                    up = store.uploads.get(query["upload_id"])
                    if up is None:
                        raise _Failure(404, "No such upload session")
                    up["data"] += body
                    # Content-Range: bytes FIRST-LAST/TOTAL, bytes */TOTAL or bytes FIRST-LAST/*
                    crange = (self.headers.get("Content-Range") or "").split("/")
                    total = crange[-1].strip() if len(crange) == 2 else str(len(up["data"]))
                    if total != "*" and int(total) == len(up["data"]):
                        del store.uploads[query["upload_id"]]
                        return self._send(200, store.write(up["bucket"], up["name"],
                                                           bytes(up["data"]), up["query"]))
                    extra = {"Range": f"bytes=0-{len(up['data']) - 1}"} if up["data"] else {}
                    return self._send(308, None, extra)
                raise _Failure(400, f"unsupported upload: {method} uploadType={kind!r}")

            def _media(self, data: bytes, res: dict[str, Any]) -> None:
                self._send(200, data, {
                    "x-goog-generation": res["generation"], "x-goog-metageneration": "1",
                    "x-goog-stored-content-length": str(len(data)),
                    "x-goog-hash": f"crc32c={res['crc32c']},md5={res['md5Hash']}",
                    "Last-Modified": self.date_time_string()})

            def _send(self, code: int, body: object,
                      headers: dict[str, str] | None = None) -> None:
                if isinstance(body, bytes):
                    data, ctype = body, "application/octet-stream"
                else:
                    data = b"" if body is None else json.dumps(body).encode()
                    ctype = "application/json"
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if code not in (204, 304):
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if code not in (204, 304):
                    self.wfile.write(data)

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def do_PUT(self) -> None:
                self._route("PUT")

            def do_DELETE(self) -> None:
                self._route("DELETE")

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> GcsStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
