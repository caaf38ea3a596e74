"""The fact store: every fact the tool stands on, from one data folder with one sources table.

``catalog/data/`` holds ``sources.yaml`` (every source, once) and one file per area:
``tpu.yaml`` (TPU versions, topologies, machine types), ``gpu.yaml``, ``gke.yaml`` (GKE, ML
Diagnostics agents, ports, limits), ``names.yaml`` (Google Cloud name limits), ``slurm.yaml``
(Cluster Director managed Slurm), ``kubernetes.yaml`` (Kubernetes, GKE Autopilot admission,
ML Diagnostics readiness: what ``lint`` and the recipe's workload rules check) and
``places.yaml`` (Google Cloud regions and zones, GPU machine series per zone, GKE's
per-cluster limits) and ``prices.yaml`` (the offline price table, dated and sourced; read
only by ``cost``, ``policy``, ``plan`` and ``apply``).

A *fact* is any mapping in those files with a ``source:`` key. It is loaded into a
:class:`Fact`: the source tag must be defined in ``sources.yaml`` and ``confidence`` must be
``H`` (verified verbatim at the source), ``M`` (consistent secondary sources or a strong
inference) or ``L`` (not verified); it defaults to ``H``. An unverified fact that decides a
severity says in ``confirm`` (text) what would verify it: the page, code or refusal to find
(``tests/rulebook/test_severity_sources.py`` keeps that true). Anything else raises
:class:`~mldiag_provision.errors.CatalogError` naming the file and the fact's path, when the
file is first read. :attr:`Fact.severity` is the only way a rule turns a fact into a severity:
an error only for a verified (``H``) fact, a warning otherwise.

Files are read lazily (one YAML parse each, on first use), which keeps ``validate``'s cold
start unchanged. Editors: ``schemas/facts.schema.json`` (generated from
:mod:`mldiag_provision.catalog.model`; a test keeps it fresh) checks the same rules.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mldiag_provision.errors import CatalogError, Severity

DATA_DIR = Path(__file__).parent / "data"
FILES = ("tpu", "gpu", "gke", "names", "slurm", "kubernetes", "places", "prices")
CONFIDENCES = ("H", "M", "L")

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


@dataclass(frozen=True)
class Source:
    """One entry of ``sources.yaml``: a title and where to read it (url and/or path; a
    ``commit`` pins a repository; a ``note`` says why a source has no address)."""

    tag: str
    title: str
    url: str | None = None
    path: str | None = None

    @property
    def ref(self) -> str:
        """What a problem cites: the URL, else the path in the shared folder."""
        return self.url or self.path or self.tag


@dataclass(frozen=True, eq=False)
class Fact(Mapping[str, Any]):
    """One fact: ``id`` (``file.path.to.it``), its source, confidence and data.

    Reads like the mapping it was in the YAML (``fact["key"]``), so the rules read values by
    the names the data file uses.
    """

    id: str
    source: Source
    confidence: str
    data: Mapping[str, Any]

    @property
    def verified(self) -> bool:
        return self.confidence == "H"

    @property
    def severity(self) -> Severity:
        """ERROR for a verified fact, WARNING otherwise: the rulebook's one severity policy."""
        return Severity.ERROR if self.verified else Severity.WARNING

    @property
    def url(self) -> str:
        return self.source.ref

    @property
    def note(self) -> str | None:
        note = self.data.get("note")
        return str(note) if note is not None else None

    @property
    def confirm(self) -> str | None:
        """What would verify an M or L fact (a page to read, code to find, a refusal to see),
        or None."""
        text = self.data.get("confirm")
        return str(text) if text is not None else None

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def _read(path: Path) -> Any:
    from mldiag_provision.startcache import load_yaml

    try:
        return load_yaml(path, _parse, _KIND)
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"cannot read the fact file {path}: {exc}") from exc


# the parser, for the start-up cache's key (mldiag_provision.startcache.load_yaml)
_KIND = f"PyYAML {yaml.__version__} {_Loader.__name__}"


def _parse(raw: bytes) -> Any:
    return yaml.load(raw, Loader=_Loader)


def _where(file: str, path: tuple[str | int, ...]) -> str:
    out = file
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def parse_sources(data: object, file: str = "sources.yaml") -> dict[str, Source]:
    """``sources.yaml`` -> tag -> :class:`Source`.

    Raises:
      CatalogError: not a ``sources:`` mapping, a tag without a title, or without url/path.
    """
    table = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not table:
        raise CatalogError(f"{file}: expected a non-empty 'sources:' mapping")
    out: dict[str, Source] = {}
    for tag, raw in table.items():
        if not isinstance(raw, dict) or not isinstance(raw.get("title"), str):
            raise CatalogError(f"{file}: source {tag!r} needs a 'title' (text)")
        url, path = raw.get("url"), raw.get("path")
        if not (isinstance(url, str) or isinstance(path, str) or isinstance(raw.get("note"), str)):
            raise CatalogError(f"{file}: source {tag!r} needs a 'url', a 'path', or a 'note' "
                               "saying why there is neither")
        unknown = set(raw) - {"title", "url", "path", "note", "commit"}
        if unknown:
            raise CatalogError(f"{file}: source {tag!r} has unknown keys {sorted(unknown)}")
        out[str(tag)] = Source(str(tag), raw["title"], url, path)
    return out


def walk_facts(node: object, path: tuple[str | int, ...] = ()
               ) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """Every mapping with a ``source`` key below ``node``, with its path (outermost first)."""
    if isinstance(node, dict):
        if "source" in node:
            yield path, node
        for k, v in node.items():
            yield from walk_facts(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_facts(v, (*path, i))


def make_fact(file: str, path: tuple[str | int, ...], raw: dict[str, Any],
              sources: Mapping[str, Source]) -> Fact:
    """Check one fact mapping and type it.

    Raises:
      CatalogError: naming ``file.path``: unknown source tag, a confidence other than H/M/L,
        a note or confirm that is not text.
    """
    where = _where(file, path)
    tag = raw.get("source")
    if not isinstance(tag, str) or tag not in sources:
        raise CatalogError(f"fact {where}: source {tag!r} is not defined in sources.yaml",
                           )
    conf = raw.get("confidence", "H")
    if conf not in CONFIDENCES:
        raise CatalogError(f"fact {where}: confidence {conf!r} is not one of H, M, L")
    for key in ("note", "confirm"):
        if key in raw and not isinstance(raw[key], str):
            raise CatalogError(f"fact {where}: {key} must be text")
    return Fact(id=".".join(str(p) for p in (file.removesuffix(".yaml"), *path)),
                source=sources[tag], confidence=conf, data=raw)


class FactStore:
    """The data folder, read lazily: one :class:`Fact` per fact mapping, by id."""

    def __init__(self, data_dir: Path = DATA_DIR, *, unverified: bool = False) -> None:
        """``unverified=True`` reads every fact as confidence L (what-if for tests: with it,
        no rule that reads a fact may report an error)."""
        self.data_dir = data_dir
        self.unverified = unverified
        self._docs: dict[str, Any] = {}
        self._facts: dict[str, Fact] = {}
        self._by_obj: dict[int, Fact] = {}
        self._found: dict[tuple[str, tuple[str | int, ...]], Any] = {}  # get()'s answers

    @functools.cached_property
    def sources(self) -> dict[str, Source]:
        return parse_sources(_read(self.data_dir / "sources.yaml"))

    def doc(self, name: str) -> Any:
        """The parsed data file ``name`` (``"gke"``), every fact in it checked.

        Raises:
          CatalogError: the file is unreadable, has its own ``sources:`` (there is one
            table), or a fact in it is malformed.
        """
        if name not in self._docs:
            if name not in FILES:
                raise CatalogError(f"no fact file {name!r}; there are {', '.join(FILES)}")
            data = _read(self.data_dir / f"{name}.yaml")
            if not isinstance(data, dict):
                raise CatalogError(f"{name}.yaml: expected a mapping at the top")
            if "sources" in data:
                raise CatalogError(f"{name}.yaml: has its own 'sources:'; sources are defined "
                                   "once, in sources.yaml")
            for path, raw in walk_facts(data):
                if self.unverified:
                    raw["confidence"] = "L"
                f = make_fact(f"{name}.yaml", path, raw, self.sources)
                self._facts[f.id] = f
                self._by_obj[id(raw)] = f
            self._docs[name] = data
        return self._docs[name]

    def get(self, name: str, *keys: str | int) -> Any:
        """The data at ``keys`` in file ``name``: a :class:`Fact` where the mapping there names
        a source, else the plain data (a list of facts, a group of them).

        Remembered per store (the files are read once and never change): the rules ask for
        the same dozen facts for every recipe, ~13 walks per recipe (issue 16).

        Raises:
          CatalogError: no such path.
        """
        found = self._found.get((name, keys))
        if found is None:
            found = self._found[(name, keys)] = self._walk(name, keys)
        return found

    def _walk(self, name: str, keys: tuple[str | int, ...]) -> Any:
        node: object = self.doc(name)
        for k in keys:
            if (isinstance(node, dict) and k in node) or (
                    isinstance(node, list) and isinstance(k, int) and 0 <= k < len(node)):
                node = node[k]  # type: ignore[index]
            else:
                raise CatalogError(f"{name}.yaml has no fact {'.'.join(map(str, keys))}")
        return self._by_obj.get(id(node), node)

    def fact(self, name: str, *keys: str | int) -> Fact:
        """The fact at ``keys`` in data file ``name``: ``fact("gke", "ports", "tpuWorker")``.

        Raises:
          CatalogError: no such path, or the mapping there is not a fact (has no source).
        """
        found = self.get(name, *keys)
        if not isinstance(found, Fact):
            raise CatalogError(f"{name}.yaml {'.'.join(map(str, keys))} is not a fact "
                               "(it names no source)")
        return found

    def of(self, raw: object) -> Fact | None:
        """The :class:`Fact` for a mapping of an already loaded file (None if not a fact)."""
        return self._by_obj.get(id(raw))

    def as_fact(self, raw: Mapping[str, Any]) -> Fact:
        """``raw`` as a :class:`Fact`: itself, the store's fact for that mapping, or one typed
        now (a mapping of a file loaded outside the store, e.g. a test's catalog copy).

        Raises:
          CatalogError: the mapping is not a well-formed fact.
        """
        if isinstance(raw, Fact):
            return raw
        return self._by_obj.get(id(raw)) or make_fact("(data)", (), dict(raw), self.sources)

    def source_url(self, tag: str | None) -> str | None:
        """What to cite for a source tag (its URL, else its path; the tag if unknown)."""
        if not tag:
            return None
        src = self.sources.get(tag)
        return src.ref if src else tag

    def all_facts(self) -> dict[str, Fact]:
        """Every fact of every file (loads them all)."""
        for name in FILES:
            self.doc(name)
        return dict(self._facts)


_STORE: list[FactStore] = []


def store() -> FactStore:
    """The fact store in use: the bundled one (one per process), unless :func:`use_store`
    swapped it."""
    if not _STORE:
        _STORE.append(FactStore())
    return _STORE[-1]


@contextlib.contextmanager
def use_store(facts: FactStore) -> Iterator[FactStore]:
    """Use ``facts`` as :func:`store` inside the ``with`` block (tests: what-if stores)."""
    if not _STORE:
        store()
    _STORE.append(facts)
    try:
        yield facts
    finally:
        _STORE.pop()
