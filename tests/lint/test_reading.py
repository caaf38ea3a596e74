"""lint's directory walk (lint.loading._yaml_files, issue 16) finds what the pathlib walk it
replaced found, in the same order, with the same names and real paths: hidden names, links
to files and folders, folders named like YAML files, names whose string order differs from
their path order, and the folder given as ``.``, with a trailing slash or as a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mldiag_provision.lint.loading import SUFFIXES, _yaml_files, read_sources


def _pathlib_walk(root: Path) -> list[tuple[str, str]]:
    """The walk as lint did it before: rglob, suffix, is_file, hidden parts, resolve."""
    files = sorted(f for f in root.rglob("*") if f.suffix in SUFFIXES and f.is_file()
                   and not any(part.startswith(".") for part in f.relative_to(root).parts))
    return [(str(f), str(f.resolve())) for f in files]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "manifests"
    for rel in ["a.yaml", "b.yml", "c.YAML", "d.json", "a-b.yaml", "a/b.yaml", "a/c/d.yml",
                "a.b/x.yaml", ".hidden.yaml", ".git/e.yaml", "z/.h/f.yaml", "z/g.yaml.bak",
                "z/h.yaml", "sub dir/i.yaml", "x.", "y.yaml/inner.yaml"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("kind: X\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.yaml").write_text("kind: O\n")
    os.symlink(root / "a.yaml", root / "link-to-a.yaml")  # a link to a file: dedup by real
    os.symlink(outside / "o.yaml", root / "z" / "link-out.yaml")
    os.symlink(outside, root / "linked-folder")  # not entered (nor by rglob)
    os.symlink(root / "missing.yaml", root / "broken.yaml")
    (tmp_path / "link-to-root").symlink_to(root)
    return root


def test_same_files_names_order_and_real_paths(tree: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    found = _yaml_files(tree)
    assert found == _pathlib_walk(tree)
    assert len(found) == 11
    link = tree.parent / "link-to-root"
    assert _yaml_files(link) == _pathlib_walk(link)
    assert _yaml_files(Path(str(tree) + "/")) == _pathlib_walk(Path(str(tree) + "/"))
    monkeypatch.chdir(tree)
    assert _yaml_files(Path(".")) == _pathlib_walk(Path("."))
    assert _yaml_files(Path("./a")) == _pathlib_walk(Path("./a"))
    monkeypatch.chdir(tree.parent)
    assert _yaml_files(Path("manifests")) == _pathlib_walk(Path("manifests"))


def test_read_sources_reads_each_real_file_once(tree: Path) -> None:
    names = [s.name for s in read_sources([str(tree)])]
    assert str(tree / "a.yaml") in names and str(tree / "link-to-a.yaml") not in names
    assert len(names) == len({os.path.realpath(n) for n in names}) == 10


def test_reading_asks_for_the_size_and_keeps_the_cap(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A file is read by its size (issue 16: asking for the 64 MiB cap allocated it per file)
    and still refused over the cap; a file longer than its size said (it grew) and a device
    are read up to the cap as before."""
    from mldiag_provision.lint import loading

    monkeypatch.setattr(loading, "MAX_BYTES", 64)
    at_cap, over = tmp_path / "at.yaml", tmp_path / "over.yaml"
    at_cap.write_text("a: " + "x" * 60 + "\n")
    over.write_text("a: " + "x" * 61 + "\n")
    assert len(at_cap.read_bytes()) == 64
    assert read_sources([str(at_cap)])[0].text == at_cap.read_text()
    [refused] = read_sources([str(over)])  # reported in its place, not raised
    assert refused.error == f"{over}: larger than 0 MiB; not a manifest?" and refused.text == ""
    assert read_sources(["/dev/null"])[0].text == ""

    grown = tmp_path / "grown.yaml"
    grown.write_bytes(b"k: " + b"v" * 40 + b"\n")
    real_fstat = os.fstat

    def stale(fd: int) -> os.stat_result:  # the size before the file grew to 44 bytes
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 10, *st[7:]))

    monkeypatch.setattr(loading.os, "fstat", stale)
    with open(grown, "rb") as f:
        assert loading.read_capped(f, loading.MAX_BYTES) == grown.read_bytes()
    grown.write_bytes(b"k: " + b"v" * 80 + b"\n")
    with open(grown, "rb") as f:
        assert loading.read_capped(f, loading.MAX_BYTES) == grown.read_bytes()[:65]
