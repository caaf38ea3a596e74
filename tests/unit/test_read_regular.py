"""``ondisk.read_regular`` (issue 32: ``validate`` reads each recipe without a file object)
gives what ``open_regular`` + ``lint.loading.read_capped`` give, and raises what they raise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mldiag_provision.lint.loading import read_capped
from mldiag_provision.ondisk import NotRegularFile, open_regular, read_regular


def _both(path: Path, cap: int) -> tuple[bytes, bytes]:
    with open_regular(path) as f:
        before = read_capped(f, cap)
    return before, read_regular(path, cap)


@pytest.mark.parametrize("size", [0, 1, 99, 100, 101, 4096])
def test_same_bytes_as_open_regular_and_read_capped(tmp_path: Path, size: int) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(bytes(range(256)) * (size // 256) + bytes(range(size % 256)))
    before, now = _both(path, 100)
    assert now == before
    assert len(now) == min(size, 101)  # one byte over the cap shows a file is over it


def test_refuses_a_directory_a_fifo_and_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path, 100)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # no writer: opening it must not block
    with pytest.raises(NotRegularFile, match="named pipe"):
        read_regular(fifo, 100)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing.yaml", 100)


def test_a_device_is_refused_not_read_forever() -> None:
    with pytest.raises(NotRegularFile, match="character device"):
        read_regular("/dev/zero", 100)
