"""The policy gate's answer cache: a stack's last evaluation, reused when the input is the same.

The Rego engine is a pure function of the policies and the input document (the bundled and
your ``*.rego`` files, the rendered stack, the saved plans' changes, the parameters), so the
engine's answers for the same key are the same answers. A ``plan`` in steady state (the GitOps
drift check that runs every hour) evaluates the same input again and again; with the cache it
does not start the engine at all (about 0.6 CPU s of a ``plan``; issue 16).

Two keys, both SHA-256:
  * ``key``: the policies (names and sources), the package list, the engine's installed files
    and the whole input document (canonical JSON). A hit on it is the answer.
  * ``predict``: what is known before Terraform plans (the policies, the stack's files, the
    parameters and the bytes of each stage's local state). When it matches the last run's,
    the input will very likely match too, so the engine is not started speculatively while
    Terraform plans (:class:`~mldiag_provision.policy.gate.GateRun`); on a miss it starts
    then. A stage with a remote backend (its state is not here to read) never predicts.

The file ``.mldiag/gate-cache.json`` (owner-only; read back only by the rule of every cache
of the tool, :mod:`mldiag_provision.ondisk`: the user's own, nobody else may write it or its
directory, its BLAKE2b digest in front matches) holds one entry: the keys, the engine's name
and the raw answers per package (no input data). Policies that call a built-in reading the
clock, the environment, randomness or the network (:func:`impure`) are never cached. Settings
applied after the engine (waivers, which rules are errors) are applied to cached answers as to
fresh ones. Any problem reading
or writing it costs an evaluation, never a wrong answer: an entry is used only on an exact
``key`` match.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from mldiag_provision import ondisk
from mldiag_provision.policy.engine import Module

CACHE_FILE = ".mldiag/gate-cache.json"
_VERSION = 1

# Built-ins whose answer is not a function of the policies and the input: the clock, the
# process environment and configuration, randomness, the network
# (https://www.openpolicyagent.org/docs/policy-reference/builtins: time.now_ns, opa.runtime,
# rand.intn, uuid.rfc4122, http.send, net.lookup_ip_addr). A policy that calls one is never
# answered from the cache.
_IMPURE = re.compile(r"\b(time\.now_ns|opa\.runtime|rand\.intn|uuid\.rfc4122|http\.send|"
                     r"net\.lookup_ip_addr)\s*\(")


def impure(modules: list[Module]) -> str | None:
    """The first policy file that calls a built-in whose answer depends on more than the
    input (the clock, the environment, randomness, the network), or None."""
    for m in modules:
        if _IMPURE.search(m.source):
            return m.name
    return None


def _engine_id() -> str:
    """Which regopy is installed (see :func:`~mldiag_provision.policy.inputs.installed_id`)."""
    from mldiag_provision.policy.inputs import installed_id

    return installed_id("regopy")


def _policies(modules: list[Module], packages: list[str]) -> bytes:
    return json.dumps([_VERSION, _engine_id(), [[m.name, m.source] for m in modules],
                       sorted(packages)]).encode()


def state_fingerprint(workdir: Path) -> str | None:
    """SHA-256 over each stage's local state (``terraform.tfstate`` in the stack directory
    and in its stage folders: the folders with ``*.tf`` files, e.g. ``agents/``), or None
    when a stage keeps its state elsewhere (a backend configured by ``terraform init`` in
    ``.terraform/terraform.tfstate``)."""
    h = hashlib.sha256()
    stages = [p for p in workdir.iterdir() if p.is_dir() and not p.name.startswith(".")
              and any(p.glob("*.tf"))]  # the stage folders (agents/) beside the root
    for stage in [workdir, *sorted(stages)]:
        if (stage / ".terraform" / "terraform.tfstate").is_file():
            return None
        state = stage / "terraform.tfstate"
        h.update(f"{stage.name}\n".encode())
        try:
            h.update(state.read_bytes())
        except FileNotFoundError:
            h.update(b"-")
        except OSError:
            return None
    return h.hexdigest()


class GateCache:
    """The cache file of one stack directory.

    ``GateCache(workdir, predict)``: ``predict`` from :func:`predict_key` (None: never
    predicted); :attr:`likely_hit` says whether the last run's prediction matches;
    :meth:`get` and :meth:`put` read and write answers by :func:`input_key`.
    """

    def __init__(self, workdir: Path, predict: str | None) -> None:
        self.path = workdir / CACHE_FILE
        self.predict = predict
        # the rule of every cache the tool reads back (mldiag_provision.ondisk): the user's
        # own file in the user's own .mldiag, nobody else may write either, and its digest
        # matches; a planted answer ("no findings") would otherwise pass the gate
        raw = ondisk.read_sealed(str(self.path.parent), self.path.name)
        try:
            entry = json.loads(raw.decode("utf-8")) if raw is not None else None
        except ValueError:
            entry = None
        self._entry: dict[str, Any] = entry if isinstance(entry, dict) and entry.get(
            "version") == _VERSION else {}

    @property
    def likely_hit(self) -> bool:
        return self.predict is not None and self._entry.get("predict") == self.predict

    def get(self, key: str) -> tuple[str, dict[str, dict[str, Any]]] | None:
        """(engine, answers) of the last evaluation when its key is ``key``."""
        if self._entry.get("key") != key or not isinstance(self._entry.get("answers"), dict):
            return None
        return str(self._entry.get("engine", "")), self._entry["answers"]

    def put(self, key: str, engine: str, answers: dict[str, dict[str, Any]]) -> None:
        """Keep this evaluation (best effort: a read-only directory only costs the next
        run an evaluation)."""
        entry = {"version": _VERSION, "predict": self.predict, "key": key, "engine": engine,
                 "answers": answers}
        ondisk.write_sealed(str(self.path.parent), self.path.name,
                            json.dumps(entry).encode("utf-8"), always=True)


def predict_key(modules: list[Module], packages: list[str], files: dict[str, bytes],
                params: dict[str, Any], workdir: Path) -> str | None:
    """The key known before planning (see the module docstring); None when a stage's state
    is not local."""
    state = state_fingerprint(workdir)
    if state is None:
        return None
    h = hashlib.sha256(_policies(modules, packages))
    h.update(json.dumps(params, sort_keys=True).encode())
    for name in sorted(files):
        h.update(f"\0{name}\0{len(files[name])}\0".encode())
        h.update(files[name])
    h.update(state.encode())
    return h.hexdigest()


def for_stack(workdir: Path, modules: list[Module], packages: list[str],
              files: dict[str, bytes], params: dict[str, Any]) -> GateCache | None:
    """The cache of the stack in ``workdir`` for these policies, or None when they must be
    evaluated every time (:func:`impure`)."""
    if impure(modules):
        return None  # e.g. time.now_ns(): the same input may get another answer
    return GateCache(workdir, predict_key(modules, packages, files, params, workdir))


def input_key(modules: list[Module], packages: list[str], document: dict[str, Any]) -> str:
    """The key of one evaluation: the policies, the engine and the whole input document."""
    h = hashlib.sha256(_policies(modules, packages))
    h.update(json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()
