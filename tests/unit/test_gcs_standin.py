"""The sandbox's Cloud Storage stand-in on the wire: the objects calls and generation
preconditions Terraform's ``gcs`` state lock depends on, without terraform.

Behaviours from https://cloud.google.com/storage/docs/json_api/v1/objects/insert and
https://cloud.google.com/storage/docs/request-preconditions (``ifGenerationMatch=0``: only
if no live object; a failed precondition is 412); the resumable path is driven by the official
``google-cloud-storage`` client through ``STORAGE_EMULATOR_HOST``.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mldiag_provision.sandbox.gcs import GcsStandIn, crc32c, put_object


@pytest.fixture
def gcs(tmp_path: Path) -> Iterator[GcsStandIn]:
    (tmp_path / "gcs-objects" / "b").mkdir(parents=True)
    with GcsStandIn(tmp_path) as server:
        yield server


def _call(gcs: GcsStandIn, method: str, path: str, body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    req = urllib.request.Request(gcs.url + path, data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.read(), res.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def _insert(gcs: GcsStandIn, name: str, data: bytes, cond: str = "") -> tuple[int, bytes]:
    code, body, _ = _call(gcs, "POST", f"/upload/storage/v1/b/b/o?uploadType=media&name={name}"
                          f"{cond}", data)
    return code, body


def test_create_only_if_absent_refuses_the_second_writer_with_412(gcs: GcsStandIn) -> None:
    code, body = _insert(gcs, "p/default.tflock", b"first", "&ifGenerationMatch=0")
    assert code == 200
    gen = json.loads(body)["generation"]
    code, body = _insert(gcs, "p/default.tflock", b"second", "&ifGenerationMatch=0")
    assert code == 412
    assert json.loads(body)["error"]["code"] == 412
    code, data, headers = _call(gcs, "GET", "/b/p/default.tflock")  # the XML API read
    assert (code, data) == (200, b"first")
    assert headers["x-goog-generation"] == gen


def test_of_many_concurrent_creates_exactly_one_wins(gcs: GcsStandIn) -> None:
    codes: list[int] = []

    def writer(i: int) -> None:
        codes.append(_insert(gcs, "lock", str(i).encode(), "&ifGenerationMatch=0")[0])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(codes) == [200] + [412] * 15


def test_delete_needs_the_matching_generation(gcs: GcsStandIn) -> None:
    gen = json.loads(_insert(gcs, "lock", b"x", "&ifGenerationMatch=0")[1])["generation"]
    stale = f"/storage/v1/b/b/o/lock?ifGenerationMatch={int(gen) + 1}"
    assert _call(gcs, "DELETE", stale)[0] == 412
    assert _call(gcs, "DELETE", f"/storage/v1/b/b/o/lock?ifGenerationMatch={gen}")[0] == 204
    assert _call(gcs, "DELETE", "/storage/v1/b/b/o/lock")[0] == 404
    assert _insert(gcs, "lock", b"y", "&ifGenerationMatch=0")[0] == 200  # free again


def test_generations_grow_and_replace_with_match(gcs: GcsStandIn) -> None:
    g1 = int(json.loads(_insert(gcs, "s", b"1")[1])["generation"])
    code, body = _insert(gcs, "s", b"2", f"&ifGenerationMatch={g1}")
    assert code == 200
    g2 = int(json.loads(body)["generation"])
    assert g2 > g1
    assert _insert(gcs, "s", b"3", f"&ifGenerationMatch={g1}")[0] == 412
    code, _, _ = _call(gcs, "GET", f"/storage/v1/b/b/o/s?ifGenerationNotMatch={g2}")
    assert code == 304


def test_multipart_upload_as_the_go_client_sends_it(gcs: GcsStandIn) -> None:
    body = (b"--XX\r\nContent-Type: application/json\r\n\r\n"
            b'{"name":"st/default.tfstate","bucket":"b"}\r\n'
            b"--XX\r\nContent-Type: application/octet-stream\r\n\r\n{\"version\": 4}\r\n--XX--\r\n")
    code, res, _ = _call(gcs, "POST", "/upload/storage/v1/b/b/o?alt=json&uploadType=multipart",
                         body, {"Content-Type": "multipart/related; boundary=XX"})
    assert code == 200, res
    assert json.loads(res)["name"] == "st/default.tfstate"
    code, data, _ = _call(gcs, "GET", "/storage/v1/b/b/o/st%2Fdefault.tfstate?alt=media")
    assert (code, data) == (200, b'{"version": 4}')


def test_listing_keeps_its_shape_and_rolls_up_prefixes(gcs: GcsStandIn, tmp_path: Path) -> None:
    put_object(tmp_path, "b", "profile.xplane.pb")
    put_object(tmp_path, "b", "env/a/default.tfstate")
    put_object(tmp_path, "b", "env/b.tfstate")
    code, body, _ = _call(gcs, "GET", "/storage/v1/b/b/o?prefix=env/&delimiter=/")
    doc = json.loads(body)
    assert code == 200
    assert [i["name"] for i in doc["items"]] == ["env/b.tfstate"]
    assert doc["prefixes"] == ["env/a/"]
    all_items = json.loads(_call(gcs, "GET", "/storage/v1/b/b/o?maxResults=2")[1])["items"]
    assert [i["name"] for i in all_items] == ["env/a/default.tfstate", "env/b.tfstate"]
    assert _call(gcs, "GET", "/storage/v1/b/nosuch/o/x?alt=media")[0] == 404
    assert _call(gcs, "GET", "/storage/v1/b/nosuch")[0] == 404


def test_resumable_upload_by_the_official_client(gcs: GcsStandIn,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    storage = pytest.importorskip("google.cloud.storage")
    from google.api_core.exceptions import PreconditionFailed
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url)
    client = storage.Client(project="p", credentials=AnonymousCredentials())
    data = bytes(range(256)) * 3000
    # the client's file writer always uploads resumably: here in 3 chunks of 256 KiB or less
    with client.bucket("b").blob("big").open("wb", chunk_size=256 * 1024,
                                             if_generation_match=0) as out:
        out.write(data)
    assert any("uploadType=resumable" in r for r in gcs.requests)
    assert sum(1 for r in gcs.requests if r.startswith("PUT ") and "upload_id=" in r) >= 3
    assert client.bucket("b").blob("big").download_as_bytes() == data
    with pytest.raises(PreconditionFailed):
        client.bucket("b").blob("big").upload_from_string(b"again", if_generation_match=0)


def test_crc32c_is_castagnoli() -> None:
    # RFC 3720 appendix B.4: 32 bytes of zeros give 0x8A9136AA, of 0xFF 0x62A8AB43
    assert crc32c(bytes(32)) == "ipE2qg=="
    assert crc32c(b"\xff" * 32) == "YqirQw=="
