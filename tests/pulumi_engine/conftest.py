"""Fixtures of the Pulumi tests: the engine fixtures (stand-in providers, offline cloud and
cluster) are shared with tests/engine."""

from engine.conftest import gcs, offline, offline_cluster, standin  # noqa: F401
