"""The manifest rules' shape key writes the recipe data with ``marshal`` (issue 32), falling
back to ``repr`` where marshal cannot write it; equal keys only for equal data."""

from __future__ import annotations

import datetime

from mldiag_provision.preflight.manifest_rules import _written
from mldiag_provision.render import k8s


def test_plain_yaml_data_is_written_by_marshal_and_told_apart_by_type() -> None:
    base = {"spec": {"workloads": [{"env": {"A": "1"}, "replicas": 1}]}}
    assert isinstance(_written(base), bytes)
    assert _written(base) == _written({"spec": {"workloads": [{"env": {"A": "1"},
                                                                "replicas": 1}]}})
    for other in ({"spec": {"workloads": [{"env": {"A": 1}, "replicas": 1}]}},
                  {"spec": {"workloads": [{"env": {"A": "1"}, "replicas": True}]}},
                  {"spec": {"workloads": [{"env": {"A": "1"}, "replicas": 1.0}]}},
                  {"spec": {"workloads": [{"replicas": 1, "env": {"A": "1"}}]}}):
        assert _written(other) != _written(base)


def test_a_string_value_is_in_the_key_whole() -> None:
    """shape_key looks for the profiles variable's name in the key."""
    name = k8s.PROFILES_ENV
    assert name.encode() in _written({"env": [f"x$({name})", "é"]})


def test_data_marshal_cannot_write_falls_back_to_repr() -> None:
    stamp = {"when": datetime.date(2026, 1, 10)}
    assert _written(stamp) == repr(stamp)
    loop: list[object] = []
    loop.append(loop)
    assert _written(loop) == repr(loop)
