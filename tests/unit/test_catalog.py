"""The TPU catalog (real data in catalog/data/*.yaml): resolve(), shape errors, sources."""

from __future__ import annotations

import math
import re

import pytest
import yaml

from mldiag_provision.catalog.tpu import DATA_DIR, ShapeError, load_catalog, parse_topology

CATALOG = load_catalog()

ENUMERATED = [
    (key, topo, mt)
    for key, version in CATALOG.versions.items()
    for topo, mts in version.topologies.items()
    for mt in mts
]


def _resolve_error(tpu: str, topology: str, chips_per_vm: int | None = None) -> ShapeError:
    with pytest.raises(ShapeError) as info:
        CATALOG.resolve(tpu, topology, chips_per_vm)
    return info.value


@pytest.mark.parametrize(("key", "topology", "machine"), ENUMERATED,
                         ids=[f"{k}-{t}-{m}" for k, t, m in ENUMERATED])
def test_every_enumerated_topology_resolves(key: str, topology: str, machine: str) -> None:
    version = CATALOG.versions[key]
    mt = version.machine_types[machine]
    shape = CATALOG.resolve(key, topology, mt.chips_per_vm)
    dims = [int(d) for d in topology.split("x")]
    assert len(dims) == version.dimensions
    assert shape.chips == math.prod(dims)
    assert shape.machine_type.name == machine
    assert shape.chips_per_vm == mt.chips_per_vm
    assert shape.chips % shape.chips_per_vm == 0
    assert shape.vms == shape.chips // mt.chips_per_vm
    assert shape.multi_host is (shape.vms > 1)
    assert shape.version is version


def test_every_version_has_topologies_and_known_machine_types() -> None:
    # the versions the examples and goldens use; a new version in tpu.yaml joins the loop
    # below with no edit here (docs/development/add-tpu-generation.md)
    assert set(CATALOG.versions) >= {"v4", "v5e", "v5p", "v6e", "tpu7x"}
    for version in CATALOG.versions.values():
        assert version.topologies
        for mts in version.topologies.values():
            assert mts and all(m in version.machine_types for m in mts)
        if version.large3d:
            assert version.large3d.machine_type in version.machine_types


def test_v4_2x2x4_is_four_vms_of_four_chips() -> None:
    shape = CATALOG.resolve("v4", "2x2x4")
    assert (shape.chips, shape.vms, shape.chips_per_vm) == (16, 4, 4)
    assert shape.multi_host
    assert shape.machine_type.name == "ct4p-hightpu-4t"


@pytest.mark.parametrize(("tpu", "prefix"), [("v5e", "ct5lp-hightpu"), ("v6e", "ct6e-standard")])
def test_2x4_with_8_chips_is_one_vm(tpu: str, prefix: str) -> None:
    shape = CATALOG.resolve(tpu, "2x4", 8)
    assert shape.machine_type.name == f"{prefix}-8t"
    assert (shape.vms, shape.chips) == (1, 8)
    assert not shape.multi_host


@pytest.mark.parametrize(("tpu", "prefix"), [("v5e", "ct5lp-hightpu"), ("v6e", "ct6e-standard")])
def test_2x4_with_4_chips_is_two_vms(tpu: str, prefix: str) -> None:
    shape = CATALOG.resolve(tpu, "2x4", 4)
    assert shape.machine_type.name == f"{prefix}-4t"
    assert (shape.vms, shape.chips) == (2, 8)
    assert shape.multi_host


@pytest.mark.parametrize(("tpu", "prefix"), [("v5e", "ct5lp-hightpu"), ("v6e", "ct6e-standard")])
def test_2x4_without_chips_per_vm_is_ambiguous(tpu: str, prefix: str) -> None:
    err = _resolve_error(tpu, "2x4")
    assert err.field == "chipsPerVm"
    assert f"{prefix}-8t" in err.message and f"{prefix}-4t" in err.message
    assert err.expected == "8 or 4"
    assert err.hint is not None and "8" in err.hint and "4" in err.hint


def test_2x4_with_chips_per_vm_of_no_machine() -> None:
    err = _resolve_error("v5e", "2x4", 2)
    assert err.field == "chipsPerVm"
    assert err.expected == "8 or 4"


def test_v5e_3x3_does_not_exist() -> None:
    err = _resolve_error("v5e", "3x3")
    assert err.field == "topology"
    assert "3x3" in err.message
    assert err.expected is not None and "2x4" in err.expected


def test_v6e_4x2_hints_2x4() -> None:
    err = _resolve_error("v6e", "4x2")
    assert err.field == "topology"
    assert err.hint is not None and "'2x4'" in err.hint


def test_v4_2x2_has_wrong_dimensions() -> None:
    err = _resolve_error("v4", "2x2")
    assert err.field == "topology"
    assert "3D" in err.message and "2 dimensions" in err.message


def test_v6e_2x2x1_has_wrong_dimensions() -> None:
    err = _resolve_error("v6e", "2x2x1")
    assert err.field == "topology"
    assert "2D" in err.message and "3 dimensions" in err.message


@pytest.mark.parametrize("bad", ["", "2x", "x2", "2x0", "02x4", "2*4", "2x2x2x2", "four", "²x2"])
def test_not_a_topology(bad: str) -> None:
    assert parse_topology(bad) is None
    err = _resolve_error("v5e", bad)
    assert err.field == "topology"
    assert "is not a topology" in err.message


def test_unknown_version_suggests() -> None:
    err = _resolve_error("v5", "2x2")
    assert err.field == "tpu"
    assert err.hint is not None and "did you mean" in err.hint


@pytest.mark.parametrize(("tpu", "topology", "chips"), [
    ("v5p", "4x4x8", 128), ("v5p", "8x8x8", 512), ("v5p", "16x16x24", 6144),
    ("v4", "12x16x16", 3072), ("tpu7x", "4x4x8", 128),
])
def test_large_3d_shapes_ok(tpu: str, topology: str, chips: int) -> None:
    shape = CATALOG.resolve(tpu, topology)
    assert shape.chips == chips
    assert shape.chips_per_vm == 4
    assert shape.vms == chips // 4
    assert shape.machine_type.name == CATALOG.version(tpu).large3d.machine_type


def test_large_3d_dimension_not_multiple_of_4() -> None:
    err = _resolve_error("v5p", "6x8x8")
    assert err.field == "topology"
    assert "multiple of 4" in err.message


def test_large_3d_order() -> None:
    err = _resolve_error("v5p", "8x4x4")
    assert err.field == "topology"
    assert "A <= B <= C" in err.message
    assert err.hint is not None and "'4x4x8'" in err.hint


def test_large_3d_above_the_largest() -> None:
    err = _resolve_error("v4", "16x16x16")
    assert err.field == "topology"
    assert "12x16x16" in err.message
    err = _resolve_error("v5p", "16x16x28")
    assert "16x16x24" in err.message


def test_small_3d_not_enumerated() -> None:
    # 32 chips is below the large-3D rule, and 2x4x4's reverse is not enumerated
    err = _resolve_error("v4", "4x4x2")
    assert err.field == "topology"
    assert err.hint is not None and "'2x4x4'" in err.hint


def test_every_source_tag_is_defined() -> None:
    tags_pattern = re.compile(r"\bsource:\s*([A-Z][A-Z0-9-]+)")
    from mldiag_provision.catalog.store import FILES, store

    defined = set(store().sources)
    for name in (f"{f}.yaml" for f in FILES):
        text = (DATA_DIR / name).read_text(encoding="utf-8")
        used = set(tags_pattern.findall(text))
        assert used, name
        assert used <= defined, f"{name}: undefined source tags {sorted(used - defined)}"
    for tag, src in store().sources.items():
        assert src.url or src.path or tag == "G4-3P", f"{tag} has neither url nor path"


def _sources_in(node: object) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "source" and isinstance(v, str):
                out.append(v)
            else:
                out.extend(_sources_in(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_sources_in(v))
    return out


def test_every_structured_source_resolves() -> None:
    from mldiag_provision.catalog.store import store

    for name in ("tpu.yaml", "gke.yaml"):
        data = yaml.safe_load((DATA_DIR / name).read_text(encoding="utf-8"))
        used = _sources_in(data)
        assert used
        for tag in used:
            assert tag in store().sources, f"{name}: source {tag!r} is not in sources.yaml"
            assert CATALOG.source_url(tag) != tag


def test_accelerator_labels() -> None:
    labels = {v.accelerator for v in CATALOG.versions.values()}
    assert len(labels) == len(CATALOG.versions)  # one GKE label per version
    assert labels >= {"tpu-v4-podslice", "tpu-v5-lite-podslice", "tpu-v5p-slice",
                      "tpu-v6e-slice", "tpu7x"}


@pytest.mark.parametrize(("name", "key"), [
    ("v4", "v4"), ("V4", "v4"), ("TPU-V4-PODSLICE", "v4"), ("tpu-v4", "v4"),
    ("v5E", "v5e"), ("Tpu-V5-Lite-PodSlice", "v5e"), ("V5LitePod", "v5e"),
    ("v5P", "v5p"), ("TPU-V5P-SLICE", "v5p"),
    ("Trillium", "v6e"), ("TPU-v6e-slice", "v6e"),
    ("TPU7X", "tpu7x"), ("Ironwood", "tpu7x"), (" v7x ", "tpu7x"),
])
def test_version_lookup_is_case_insensitive(name: str, key: str) -> None:
    version = CATALOG.version(name)
    assert version is not None and version.key == key
    assert CATALOG.resolve(name, next(iter(version.topologies)),
                           version.machine_types[next(iter(version.topologies.values()))[0]]
                           .chips_per_vm).version.key == key


@pytest.mark.parametrize("name", ["v3", "v5", "tpu", "", "podslice"])
def test_unknown_version_names(name: str) -> None:
    assert CATALOG.version(name) is None


def test_names_are_unique_across_versions() -> None:
    owner: dict[str, str] = {}
    for v in CATALOG.versions.values():
        for n in {n.lower() for n in v.all_names()}:
            assert owner.setdefault(n, v.key) == v.key, f"{n} names {owner[n]} and {v.key}"
            assert CATALOG.version(n).key == v.key
