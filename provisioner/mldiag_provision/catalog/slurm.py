"""Cluster Director managed Slurm facts: a typed reader over ``catalog/data/slurm.yaml``
and the ``clusterDirectorSlurm`` section of ``gpu.yaml``.

Facts and their sources live in the YAML; this module only answers questions. Loaded only
for recipes with ``orchestrator.type: slurm`` (validate of a GKE recipe never reads it).
"""

from __future__ import annotations

import fnmatch
import functools
from pathlib import Path
from typing import Any

import yaml

from mldiag_provision.catalog.gpu import load_gpu_catalog
from mldiag_provision.catalog.store import DATA_DIR, FactStore, store
from mldiag_provision.errors import CatalogError

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader


class SlurmFacts:
    """slurm.yaml plus gpu.yaml's ``clusterDirectorSlurm``."""

    def __init__(self, data: dict[str, Any], managed: dict[str, Any]) -> None:
        self.raw = data
        self.managed = managed

    def fact(self, *keys: str) -> dict[str, Any]:
        """``fact("storage", "filestore")`` -> that mapping of slurm.yaml.

        Raises:
          CatalogError: no such fact.
        """
        node: object = self.raw
        for k in keys:
            if not isinstance(node, dict) or k not in node:
                raise CatalogError(f"slurm.yaml has no fact {'.'.join(keys)}")
            node = node[k]
        if not isinstance(node, dict):
            raise CatalogError(f"slurm.yaml fact {'.'.join(keys)} is not a mapping")
        return node

    def source_url(self, tag: str) -> str:
        """What to cite for a source tag of ``sources.yaml`` (URL, else path)."""
        return store().source_url(tag) or tag

    def cite(self, fact: dict[str, Any]) -> str:
        return self.source_url(str(fact.get("source", "")))

    def node_machine_types(self) -> list[str]:
        """Node-set machine types managed Slurm accepts (patterns like ``n2-*`` included)."""
        return [str(v) for v in self.managed["supportedMachineTypes"]["values"]]

    def node_machine_ok(self, machine_type: str) -> bool:
        return any(fnmatch.fnmatchcase(machine_type, p) for p in self.node_machine_types())

    def login_machine_types(self) -> list[str]:
        return [str(v) for v in self.managed["loginNodeMachineTypes"]["values"]]

    def a4x_multiple(self) -> tuple[int, str]:
        fact = self.managed["a4xNodeCountMultipleOf"]
        return int(fact["value"]), str(fact["source"])

    def services(self, kinds: set[str]) -> list[dict[str, Any]]:
        """APIs the stack enables; entries with ``when`` only if that storage kind is used."""
        return [s for s in self.raw["services"] if s.get("when") in (None, *kinds)]


@functools.lru_cache(maxsize=1)
def load_slurm_facts(data_dir: Path = DATA_DIR) -> SlurmFacts:
    """Read slurm.yaml (and the GPU catalog's managed-Slurm section).

    Raises:
      CatalogError: a file is missing or malformed.
    """
    gpus = load_gpu_catalog(data_dir)
    data = (store() if data_dir == DATA_DIR else FactStore(data_dir)).doc("slurm")
    try:
        managed = gpus.raw["clusterDirectorSlurm"]
        for key in ("supportedMachineTypes", "loginNodeMachineTypes"):
            if not isinstance(managed[key]["values"], list):
                raise TypeError(f"clusterDirectorSlurm.{key}.values is not a list")
    except (KeyError, TypeError) as exc:
        raise CatalogError(f"cannot read the managed Slurm facts in {data_dir}: {exc!r}") from exc
    return SlurmFacts(data, managed)
