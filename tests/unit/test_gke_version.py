"""GKE version strings: parsing, ordering and the prefix-aware at_least()."""

from __future__ import annotations

import pytest

from mldiag_provision.catalog.gke_version import GkeVersion, at_least, max_version

MANAGED = GkeVersion.parse("1.35.0-gke.3065000")


@pytest.mark.parametrize(("text", "parts"), [
    ("1.35.0-gke.3065000", (1, 35, 0, 3065000)),
    ("1.29.2-gke.1521000", (1, 29, 2, 1521000)),
    ("1.35", (1, 35, None, None)),
    ("1.35.4", (1, 35, 4, None)),
    ("  1.34.1-gke.3084001\n", (1, 34, 1, 3084001)),
])
def test_parse(text: str, parts: tuple) -> None:
    v = GkeVersion.parse(text)
    assert v is not None
    assert (v.major, v.minor, v.patch, v.build) == parts
    assert GkeVersion.parse(str(v)) == v
    assert str(v) == text.strip()


@pytest.mark.parametrize("text", [
    "", "1", "1.", "1.35.", "v1.35", "1.35.0-gke", "1.35-gke.1", "1.35.0-gke.x",
    "1.35.0-gke.1.2", "latest", "1.35.0-GKE.1", "1.x", "١.٣٥", "1." + "1" * 5000,
    "1.35.0+gke.1", "1,35",
])
def test_garbage_is_none(text: str) -> None:
    assert GkeVersion.parse(text) is None


@pytest.mark.parametrize("value", [None, 1.35, 135, ["1.35"]])
def test_non_strings_are_none(value: object) -> None:
    assert GkeVersion.parse(value) is None  # type: ignore[arg-type]


def test_ordering_of_full_versions() -> None:
    texts = ["1.35.0-gke.3065000", "1.29.2-gke.1521000", "1.35.0-gke.3064999",
             "1.100.0-gke.1", "1.35.1-gke.1", "1.9.9-gke.99999999", "2.0.0-gke.0"]
    versions = [GkeVersion.parse(t) for t in texts]
    assert [str(v) for v in sorted(versions)] == [
        "1.9.9-gke.99999999", "1.29.2-gke.1521000", "1.35.0-gke.3064999",
        "1.35.0-gke.3065000", "1.35.1-gke.1", "1.100.0-gke.1", "2.0.0-gke.0"]
    # numeric, not lexical
    assert GkeVersion.parse("1.100.0-gke.1") > GkeVersion.parse("1.99.0-gke.1")
    assert str(max_version(*versions)) == "2.0.0-gke.0"


def test_max_version_treats_missing_parts_as_zero() -> None:
    a, b = GkeVersion.parse("1.35"), GkeVersion.parse("1.34.9-gke.1")
    assert max_version(a, b) is a
    assert max_version(GkeVersion.parse("1.35.0-gke.1"), a) == GkeVersion.parse("1.35.0-gke.1")


@pytest.mark.parametrize(("text", "expected"), [
    ("1.35", None),
    ("1.35.0", None),
    ("1.36", True),
    ("1.34", False),
    ("1.35.0-gke.3065000", True),
    ("1.35.0-gke.3064999", False),
    ("1.35.0-gke.3065001", True),
    ("1.35.1", True),
    ("1.35.1-gke.1", True),
    ("1.34.99-gke.99999999", False),
    ("2.0", True),
    ("0.99", False),
])
def test_at_least_managed_minimum(text: str, expected: bool | None) -> None:
    assert at_least(GkeVersion.parse(text), MANAGED) is expected


@pytest.mark.parametrize(("text", "minimum", "expected"), [
    ("1.35", "1.35", True),        # a prefix meets its own prefix
    ("1.35", "1.35.0", True),      # ... and the lowest release of it
    ("1.35", "1.35.0-gke.0", True),
    ("1.35", "1.35.1", None),
    ("1.35.2", "1.35.2-gke.5", None),
    ("1.35.2", "1.35.1-gke.5", True),
    ("1.35.2", "1.35.3", False),
    ("1.35.0-gke.1", "1.35", True),
])
def test_at_least_prefixes(text: str, minimum: str, expected: bool | None) -> None:
    assert at_least(GkeVersion.parse(text), GkeVersion.parse(minimum)) is expected
