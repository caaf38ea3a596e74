"""Kubernetes validity: each object against the real OpenAPI schema of a Kubernetes version.

The built-in kinds' schemas come from the ``kubernetes-validate`` package (PyPI), which ships
JSON Schema conversions of the Kubernetes OpenAPI documents for every minor version from 1.25
on, in a "strict" flavour that rejects unknown fields as ``kubectl apply`` does by default. Only
its data files are used; validation runs here, so that every error becomes a located
:class:`~mldiag_provision.errors.Problem` and all errors of a document are reported at once.

Custom resources (JobSet, LeaderWorkerSet, RayJob, RayCluster, MLDiagnosticsConnection) are
checked against ``lint/data/crds.yaml``, whose embedded Kubernetes types point into the same
version's definitions. Kinds nobody ships a schema for are reported (info) and skipped.

Design constraints: validators are built once per (version, kind) and cached, because a
1,000-manifest run must stay under one second; nothing here raises for bad input.

Two validators per schema (issue 16): a compiled one (``jsonschema-rs``, PyPI
``jsonschema-rs``, Rust) only *decides* whether an object is valid; only an object it does
not accept (or cannot take: a YAML date, an integer beyond 64 bits) goes through
python-jsonschema, whose errors :func:`_translate` turns into problems. A valid object has no
schema problems either way, so the findings are the same; ``tests/lint/test_compiled_schema.py``
checks that over the lint corpus, the rendered goldens and type mutations. Set
``MLDIAG_LINT_COMPILED=0`` to use python-jsonschema alone.
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import json
import os
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any

import yaml

from mldiag_provision.errors import CatalogError, MldiagError, Problem, Severity, UsageError
from mldiag_provision.lint.loading import Resource, field_path
from mldiag_provision.lint.rules import DATA_DIR, define, suggest
from mldiag_provision.quantity import NONNEGATIVE_SOURCE, parse_quantity
from mldiag_provision.recipe.sourcemap import Path

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import jsonschema_rs

    from mldiag_provision.catalog.tpu import Catalog
    from mldiag_provision.rulebook import RuleInfo

K8S_DOCS = "https://kubernetes.io/docs/reference/kubernetes-api/"
SCHEMA = define("k8s-schema", "fields have the type, value and required children the Kubernetes "
                "API schema of the chosen version demands", source=K8S_DOCS)
UNKNOWN_FIELD = define("k8s-unknown-field", "no unknown fields (kubectl's default strict field "
                       "validation rejects them)",
                       source="https://kubernetes.io/docs/reference/using-api/api-concepts/"
                              "#field-validation")
API_VERSION = define("k8s-api-version", "the apiVersion/kind is served by the chosen Kubernetes "
                     "version", source="https://kubernetes.io/docs/reference/using-api/"
                                       "deprecation-guide/")
NO_SCHEMA = define("k8s-no-schema", "a kind without a known schema is not checked field by field",
                   severity=Severity.INFO)
NAME = define("k8s-name", "metadata.name is set and is a valid DNS subdomain name",
              source="https://kubernetes.io/docs/concepts/overview/working-with-objects/names/")
QUANTITY = define("k8s-quantity", "resource requests and limits are Kubernetes quantities",
                  source="https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/"
                         "quantity/")

# Quantities are signed, but the API server validates every resource request and limit of
# a container with ValidateResourceQuantityValue -> ValidateNonnegativeQuantity, whose error
# is IsNegativeErrorMsg, "must be greater than or equal to 0": NONNEGATIVE_SOURCE (quantity.py;
# the recipe's rules cite it too)

K8S_DEFS_URI = "https://kubernetes.io/api/_definitions.json"
CRD_URI = "urn:mldiag-provision:lint:crds"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
CRD_MARK = "x-mldiag-crd"  # set on every schema node that comes from crds.yaml

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:[.-].*)?$")


# --- Kubernetes versions ----------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def schema_root() -> FsPath:
    """The ``kubernetes-json-schema`` folder of the installed kubernetes-validate package."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise MldiagError("the kubernetes-validate package is not installed; it ships the "
                          "Kubernetes schemas that lint needs",
                          hint="pip install -e . (it is a dependency of mldiag-provision)")
    return FsPath(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@functools.lru_cache(maxsize=1)
def available_versions() -> tuple[str, ...]:
    """Kubernetes minor versions with schemas, e.g. ``("1.25", ..., "1.37")``."""
    found = set()
    for d in schema_root().iterdir():
        m = re.match(r"^v(\d+)\.(\d+)\.\d+-local-strict$", d.name)
        if m:
            found.add((int(m.group(1)), int(m.group(2))))
    return tuple(f"{a}.{b}" for a, b in sorted(found))


def resolve_version(text: str) -> str:
    """``"1.35"``, ``"v1.35.2"`` or a GKE version ``"1.35.0-gke.3065000"`` -> ``"1.35"``.

    Raises:
      UsageError: not a version, or no schemas for it.
    """
    versions = available_versions()
    m = _VERSION.match(text.strip())
    if not m:
        raise UsageError(f"--kubernetes-version '{text}' is not a Kubernetes version",
                         hint=f"use MAJOR.MINOR, one of {versions[0]} .. {versions[-1]}")
    minor = f"{int(m.group(1))}.{int(m.group(2))}"
    if minor not in versions:
        raise UsageError(f"no Kubernetes {minor} schemas in the installed kubernetes-validate",
                         hint=f"use one of {', '.join(versions)}")
    return minor


def default_version(catalog: Catalog | None = None) -> str:
    """The minor version that GKE-managed ML Diagnostics needs (catalog gke.yaml), if shipped.

    It is the oldest GKE a cluster with the managed add-on can run, so manifests that pass
    against it use no field that such a cluster lacks.
    """
    versions = available_versions()
    try:
        from mldiag_provision.catalog.tpu import load_catalog

        cat = catalog or load_catalog()
        v = cat.fact_version("mlDiagnostics", "managedMinVersion")
        minor = f"{v.major}.{v.minor}"
    except (CatalogError, AttributeError):
        return versions[-1]
    return minor if minor in versions else versions[-1]


# --- schemas ----------------------------------------------------------------------------------

def _expand(node: object) -> object:
    """crds.yaml shorthand -> JSON Schema (see the conventions at the top of that file)."""
    if not isinstance(node, dict):
        return node
    if "$k8s" in node:
        return {"$ref": f"{K8S_DEFS_URI}#/$defs/{node['$k8s']}"}
    if "$def" in node:
        return {"$ref": f"{CRD_URI}#/$defs/{node['$def']}"}
    if node.get("$intOrString"):
        return {"type": ["integer", "string", "null"], CRD_MARK: True}
    out = {k: v for k, v in node.items() if k not in ("properties", "items",
                                                       "additionalProperties")}
    out[CRD_MARK] = True
    if isinstance(node.get("type"), str):  # CRD fields may be null (the API server prunes it)
        out["type"] = [node["type"], "null"]
    if "properties" in node:
        out["properties"] = {k: _expand(v) for k, v in node["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _expand(node["additionalProperties"])
    if "items" in node:
        out["items"] = _expand(node["items"])
    return out


@dataclass(frozen=True)
class CrdKind:
    """One kind of one custom resource schema: which project and release it comes from."""

    api_version: str
    kind: str
    source: str
    project: str = ""   # jobset, lws, kuberay; "" for the hand-transcribed kinds of crds.yaml
    version: str = ""   # the project's release tag, e.g. v0.9.0

    @property
    def key(self) -> str:
        return _crd_key(self.api_version, self.kind) + (f"@{self.version}" if self.version
                                                        else "")


def _version_key(tag: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag))


# libyaml's reader where PyYAML has it (the same data for this file, see
# tests/lint/test_compiled_schema.py; PyYAML's own reader was ~5 ms of lint's start)
_YAML_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=1)
def crd_document() -> tuple[dict[str, Any], dict[tuple[str, str], list[CrdKind]]]:
    """The expanded CRD schemas as one JSON Schema resource, and per (apiVersion, kind) the
    schemas shipped for it, oldest release first.

    Sources: ``data/crds.generated.json`` (generated from the upstream CRDs pinned in
    tools/crds/pins.yaml by :mod:`mldiag_provision.lint.crdgen`) and ``data/crds.yaml``
    (MLDiagnosticsConnection, transcribed). Raises CatalogError when either is unreadable.
    """
    try:
        with open(DATA_DIR / "crds.yaml", encoding="utf-8") as f:
            raw = yaml.load(f, Loader=_YAML_LOADER)
        with open(DATA_DIR / "crds.generated.json", encoding="utf-8") as f:
            generated = json.load(f)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise CatalogError(f"cannot read lint CRD schemas: {exc}") from exc
    defs = {name: _expand(s) for name, s in raw["definitions"].items()}
    kinds: dict[tuple[str, str], list[CrdKind]] = {}
    for k in raw["kinds"]:
        src = k["source"]
        ck = CrdKind(k["apiVersion"], k["kind"],
                     f"{src['url']} (schema from {src['repo']}@{src['commit'][:8]} "
                     f"{src['path']})")
        defs[ck.key] = _expand(k["schema"])
        kinds.setdefault((ck.api_version, ck.kind), []).append(ck)
    for k in generated["kinds"]:
        src = k["source"]
        ck = CrdKind(k["apiVersion"], k["kind"],
                     f"{src['url']} ({k['project']} {k['version']}, commit "
                     f"{src['commit'][:8]})", k["project"], k["version"])
        defs[ck.key] = _expand(k["schema"])
        kinds.setdefault((ck.api_version, ck.kind), []).append(ck)
    for versions in kinds.values():
        versions.sort(key=lambda c: _version_key(c.version))
    return {"$schema": DRAFT, "$id": CRD_URI, "$defs": defs}, kinds


@functools.lru_cache(maxsize=1)
def crd_projects() -> dict[str, tuple[str, ...]]:
    """Project name -> the releases whose CRDs are shipped, oldest first
    (``{"jobset": ("v0.5.2", "v0.9.0", "v0.12.0"), ...}``)."""
    out: dict[str, set[str]] = {}
    for versions in crd_document()[1].values():
        for c in versions:
            if c.project:
                out.setdefault(c.project, set()).add(c.version)
    return {p: tuple(sorted(v, key=_version_key)) for p, v in sorted(out.items())}


_PROJECT_ALIASES = {"leaderworkerset": "lws", "ray": "kuberay", "kuberay-operator": "kuberay"}


def resolve_crd_versions(items: list[str] | dict[str, str] | None,
                         origin: str = "--crd-version") -> tuple[tuple[str, str], ...]:
    """``["jobset=v0.5.2"]`` or ``{"jobset": "0.5.2"}`` -> ``(("jobset", "v0.5.2"),)``.

    A stated version must be one whose CRD is shipped (a release between two shipped ones may
    add fields, so no nearest match is guessed). Raises UsageError naming ``origin``, the value
    and the shipped versions.
    """
    pairs = list(items.items()) if isinstance(items, dict) else \
        [tuple(i.partition("=")[::2]) for i in items or []]
    projects = crd_projects()
    out: dict[str, str] = {}
    for name, version in pairs:
        project = _PROJECT_ALIASES.get(name.strip().lower(), name.strip().lower())
        if project not in projects:
            raise UsageError(f"{origin} '{name}={version}': unknown project '{name}'",
                             hint=f"use one of {', '.join(projects)} (e.g. jobset=v0.9.0)")
        tag = version.strip() if version.strip().startswith("v") else f"v{version.strip()}"
        if tag not in projects[project]:
            raise UsageError(f"{origin} '{name}={version}': no {project} {tag} CRD is shipped",
                             hint=f"state one of {', '.join(projects[project])}, or pin "
                                  "the installed release in tools/crds/pins.yaml and run "
                                  "python -m mldiag_provision.lint.crdgen")
        out[project] = tag
    return tuple(sorted(out.items()))


def _crd_key(api_version: str, kind: str) -> str:
    return f"{kind}@{api_version.replace('/', '_')}"


def _file_stem(api_version: str, kind: str) -> str:
    """kubernetes-validate's file naming: ``rbac.authorization.k8s.io/v1`` -> ``role-rbac-v1``."""
    prefix = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{prefix}"


def builtin_group(group: str) -> bool:
    """Groups that Kubernetes itself serves (core, apps, batch, *.k8s.io but not *.x-k8s.io)."""
    return (group == "" or "." not in group
            or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io")))


class SchemaSet:
    """Validators for one Kubernetes minor version and a set of stated CRD releases, built on
    first use and cached.

    ``crd_versions``: ``(("jobset", "v0.5.2"), ...)``; a project not named gets its newest
    shipped release, and findings against it only warn (the cluster may run another release).
    ``compiled``: whether jsonschema-rs decides which objects are valid (see the module
    docstring); default on unless ``MLDIAG_LINT_COMPILED=0``.
    """

    def __init__(self, version: str, crd_versions: tuple[tuple[str, str], ...] = (),
                 compiled: bool | None = None) -> None:
        self.version = version
        # compiled: decide valid objects with jsonschema-rs (None: unless
        # MLDIAG_LINT_COMPILED=0); python-jsonschema alone otherwise
        self.compiled = (os.environ.get("MLDIAG_LINT_COMPILED", "1") != "0"
                         if compiled is None else compiled)
        self.crd_versions = dict(crd_versions)
        self.dir = schema_root() / f"v{version}.0-local-strict"
        self._stems = {p.name[:-5] for p in self.dir.iterdir() if p.name.endswith(".json")}
        self._validators: dict[tuple[str, str], object] = {}
        self._schemas: dict[tuple[str, str], tuple[dict[str, Any] | None, str]] = {}
        self._compiled: dict[tuple[str, str], object | None] = {}
        self._compiled_registry: jsonschema_rs.Registry | None = None
        # the (document, definition) pairs that registry holds; None: the whole documents
        self._compiled_refs: set[tuple[str, str]] | None = None
        self._planned: set[tuple[str, str]] = set()
        self._covered: set[tuple[str, str]] = set()  # the kinds that registry serves
        self._crd: dict[tuple[str, str], CrdKind | None] = {}
        self._defs: dict[str, Any] | None = None
        self._registry: object | None = None

    # -- plumbing ---------------------------------------------------------------------------
    def _load(self, stem: str) -> dict[str, Any]:
        with open(self.dir / f"{stem}.json", encoding="utf-8") as f:
            schema: dict[str, Any] = json.load(f)
        return schema

    @property
    def defs(self) -> dict[str, Any]:
        if self._defs is None:
            self._defs = self._load("_definitions")
        return self._defs

    def registry(self) -> object:
        if self._registry is None:
            from referencing import Registry, Resource

            crd_doc, _ = crd_document()
            self._registry = Registry().with_resources([
                (K8S_DEFS_URI, Resource.from_contents(self.defs)),
                (CRD_URI, Resource.from_contents(crd_doc)),
            ])
        return self._registry

    def _validator(self, schema: dict[str, Any]) -> object:
        return _validator_class()(schema, registry=self.registry())

    def _compiled_validator(self, key: tuple[str, str],
                            schema: dict[str, Any]) -> object | None:
        """The jsonschema-rs validator of ``schema``, the schema of the (apiVersion, kind)
        ``key`` (the same documents behind its $refs), or None when jsonschema-rs is
        missing, switched off or refuses the schema."""
        if not self.compiled:
            return None
        try:
            import jsonschema_rs
        except ImportError:
            return None
        try:
            # formats are annotations only, as for python-jsonschema without a format checker
            return jsonschema_rs.Draft202012Validator(
                schema, registry=self._compiled_registry_for(key, schema),
                validate_formats=False)
        except Exception:  # a schema it cannot compile: python-jsonschema decides alone
            return None

    def plan(self, kinds: Iterable[tuple[str, str]]) -> None:
        """Say which (apiVersion, kind) pairs are coming, so that the first compiled
        validator's registry holds the definitions all of them need (one registry, built
        once; see :meth:`_compiled_registry_for`)."""
        self._planned.update(kinds)

    def _compiled_registry_for(self, key: tuple[str, str],
                               schema: dict[str, Any]) -> jsonschema_rs.Registry:
        """A jsonschema-rs registry that resolves every ``$ref`` reachable from ``schema``
        (the schema of ``key``) and from the schemas of the kinds given to :meth:`plan` to the
        same definition as the whole documents would.

        It holds only those definitions (issue 32: the whole ``_definitions.json`` in the
        registry was ~7 MiB of lint's peak memory; the kinds of a typical input reach ~150
        of its ~735 definitions), found by :func:`_reachable`; where a reference is not one
        it can follow, the whole documents. The registry is kept for the kinds it covers; a
        kind that needs more gets a new registry with the union (validators built earlier
        keep theirs). Once built for planned kinds, the parsed ``_definitions.json`` is let go
        unless python-jsonschema holds it (~3 MiB; :attr:`defs` reads it again when asked).
        """
        import jsonschema_rs

        if self._compiled_registry is not None and (self._compiled_refs is None
                                                    or key in self._covered):
            return self._compiled_registry  # the whole documents, or this kind's
        crd_doc, _ = crd_document()
        docs = {K8S_DEFS_URI: self.defs, CRD_URI: crd_doc}
        need = _reachable(schema, docs)
        covered = {key}
        if need is not None and self._compiled_refs is not None:  # grow the registry
            need |= self._compiled_refs
            covered |= self._covered
        elif need is not None:  # the first registry: for the planned kinds too
            for other_key in sorted(self._planned - covered):
                other = self.schema_for(*other_key)[0]
                more = _reachable(other, docs) if other is not None else set()
                if more is None:
                    need = None
                    break
                need |= more
                covered.add(other_key)
        self._compiled_refs, self._covered = need, covered
        self._compiled_registry = jsonschema_rs.Registry(
            [(uri, _trimmed(doc, need, uri)) for uri, doc in docs.items()])
        if self._planned and self._registry is None:
            # planned (lint): the kinds to come are covered, so the definitions are not
            # needed again unless python-jsonschema explains a rejected object; unplanned
            # callers (the sandbox) keep them for the next kind's registry
            self._defs = None
        return self._compiled_registry

    @staticmethod
    def _gvk_matches(schema: dict[str, Any], api_version: str, kind: str) -> bool:
        group, _, version = api_version.rpartition("/")
        return any(g.get("group", "") == group and g.get("version") == version
                   and g.get("kind") == kind
                   for g in schema.get("x-kubernetes-group-version-kind", []))

    # -- questions --------------------------------------------------------------------------
    def crd_kind(self, api_version: str, kind: str) -> CrdKind | None:
        """The shipped CRD schema for this kind: the stated release of its project, else the
        newest one; None when the kind is not a shipped custom resource, or the stated
        release does not serve this apiVersion."""
        key = (api_version, kind)
        if key not in self._crd:
            versions = crd_document()[1].get(key, [])
            chosen = versions[-1] if versions else None
            if chosen is not None and chosen.project in self.crd_versions:
                stated = self.crd_versions[chosen.project]
                chosen = next((c for c in versions if c.version == stated), None)
            self._crd[key] = chosen
        return self._crd[key]

    def stated(self, crd: CrdKind | None) -> bool:
        """Whether the installed release of this CRD's project was stated."""
        return crd is not None and crd.project in self.crd_versions

    def schema_for(self, api_version: str, kind: str) -> tuple[dict[str, Any] | None, str]:
        """(schema, origin) where origin is ``"k8s"``, ``"crd"`` or ``""`` (no schema)."""
        key = (api_version, kind)
        if key in self._schemas:
            return self._schemas[key]
        result: tuple[dict[str, Any] | None, str] = (None, "")
        stem = _file_stem(api_version, kind)
        if stem in self._stems and builtin_group(api_version.rpartition("/")[0]):
            schema = self._load(stem)
            if self._gvk_matches(schema, api_version, kind):
                result = (schema, "k8s")
        if result[0] is None:
            crd = self.crd_kind(api_version, kind)
            if crd is not None:
                result = ({"$ref": f"{CRD_URI}#/$defs/{crd.key}"}, "crd")
        self._schemas[key] = result
        return result

    def validator_for(self, api_version: str, kind: str) -> tuple[object | None, str]:
        """(python-jsonschema validator, origin) where origin is ``"k8s"``, ``"crd"`` or
        ``""`` (no schema)."""
        key = (api_version, kind)
        if key not in self._validators:
            schema, origin = self.schema_for(api_version, kind)
            self._validators[key] = (None if schema is None else self._validator(schema),
                                     origin)
        return self._validators[key]  # type: ignore[return-value]

    def accepts(self, api_version: str, kind: str, data: object) -> bool:
        """True when the compiled validator finds ``data`` valid against this kind's schema;
        False when it does not, cannot take ``data`` (a YAML date, a huge integer), or there
        is no compiled validator (then python-jsonschema decides)."""
        key = (api_version, kind)
        if key not in self._compiled:
            schema, _ = self.schema_for(api_version, kind)
            self._compiled[key] = (None if schema is None
                                   else self._compiled_validator(key, schema))
        compiled = self._compiled[key]
        if compiled is None:
            return False
        try:
            return bool(compiled.is_valid(data))  # type: ignore[attr-defined]
        except Exception:  # a value it has no JSON type for
            return False

    def served_api_versions(self, kind: str) -> list[str]:
        """apiVersions under which this Kubernetes version serves ``kind`` (built-in kinds)."""
        out = []
        for stem in sorted(self._stems):
            if stem.split("-", 1)[0] != kind.lower():
                continue
            for g in self._load(stem).get("x-kubernetes-group-version-kind", []):
                if g.get("kind") == kind:
                    gv = f"{g['group']}/{g['version']}" if g.get("group") else g["version"]
                    out.append(gv)
        return sorted(set(out))

    def kinds(self) -> list[str]:
        """Names of the built-in kinds (CamelCase), for "did you mean"."""
        return sorted({name.rsplit(".", 1)[1] for name, d in self.defs.get("$defs", {}).items()
                       if isinstance(d, dict) and d.get("x-kubernetes-group-version-kind")})


_DEFS_PREFIX = "#/$defs/"
# keywords that change where a reference points, or refer by other means than a JSON pointer
_UNFOLLOWED = frozenset({"$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef",
                         "$recursiveAnchor"})
_K8S_DEFS_PATH = K8S_DEFS_URI.removeprefix("https://kubernetes.io")


def _ref_document(uri: str, doc: str | None, docs: dict[str, dict[str, Any]],
                  from_k8s: bool) -> str | None:
    """The URI of the document (one of ``docs``) that the URI part of a ``$ref`` names,
    read in document ``doc`` (None: the schema itself, no document of ``docs``):
    ``doc`` for an empty URI, the URI itself for one of ``docs``, and
    :data:`K8S_DEFS_URI` for ``/api/_definitions.json`` from a built-in kind's schema
    (``from_k8s``: its ``$id`` lies on kubernetes.io); None for any other."""
    if not uri:
        return doc
    if uri in docs:
        return uri
    if uri == _K8S_DEFS_PATH and from_k8s:
        return K8S_DEFS_URI
    return None


def _ref_target(ref: object, doc: str | None, docs: dict[str, dict[str, Any]],
                from_k8s: bool) -> tuple[str, str] | None:
    """(document URI, definition name) of a ``$ref`` of the form ``[URI]#/$defs/NAME``
    (see :func:`_ref_document`); None for a reference of any other form, or one that names
    no definition of that document."""
    if not isinstance(ref, str):
        return None
    uri, hash_, fragment = ref.partition("#")
    if not hash_ or not fragment.startswith("/$defs/"):
        return None
    name = fragment[len("/$defs/"):]
    target = _ref_document(uri, doc, docs, from_k8s)
    if target is None or "/" in name or "~" in name or \
            name not in docs[target].get("$defs", {}):
        return None
    return target, name


def _refs_below(node: object) -> list[object] | None:
    """The ``$ref`` values of every mapping in ``node`` (``node`` itself included), in no
    particular order; None where a mapping below ``node`` has a keyword that could move the
    base (:data:`_UNFOLLOWED`)."""
    refs: list[object] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "$ref" in item and item["$ref"] is not None:
                refs.append(item["$ref"])
            if item is not node and _UNFOLLOWED.intersection(item):
                return None
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return refs


def _reachable(schema: object, docs: dict[str, dict[str, Any]],
               ) -> set[tuple[str, str]] | None:
    """The (document URI, definition name) pairs that the ``$ref`` s reachable from
    ``schema`` name, following each definition's own references, for documents ``docs``
    (URI -> a document of ``$defs``). ``None`` where a reference is not of the forms this
    follows: ``#/$defs/NAME`` within a document, ``URI#/$defs/NAME`` of one of ``docs``,
    and ``/api/_definitions.json#/$defs/NAME`` from a built-in kind's schema (whose ``$id``
    lies on kubernetes.io), or a definition is missing, or a nested ``$id``/anchor could move
    the base."""
    found: set[tuple[str, str]] = set()
    top_id = schema.get("$id") if isinstance(schema, dict) else None
    from_k8s = isinstance(top_id, str) and top_id.startswith("https://kubernetes.io/")
    # the schema itself is no document of docs: a "#/..." reference in it is not followed
    work: list[tuple[object, str | None]] = [(schema, None)]
    while work:
        node, doc = work.pop()
        refs = _refs_below(node)
        if refs is None:
            return None
        for ref in refs:
            target = _ref_target(ref, doc, docs, from_k8s)
            if target is None:
                return None
            if target not in found:
                found.add(target)
                work.append((docs[target[0]]["$defs"][target[1]], target[0]))
    return found


def _trimmed(doc: dict[str, Any], need: set[tuple[str, str]] | None,
             uri: str) -> dict[str, Any]:
    """``doc`` with only the definitions in ``need`` (all of them when it is None)."""
    if need is None:
        return doc
    defs = doc.get("$defs", {})
    return {**doc, "$defs": {name: defs[name] for u, name in sorted(need) if u == uri}}


@functools.lru_cache(maxsize=1)
def _validator_class() -> type:
    """Draft 2020-12, except that an unquoted YAML date or timestamp counts as a string:
    kubectl's YAML-to-JSON conversion passes it on as the text the user wrote."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "string", lambda _checker, inst: isinstance(inst, (str, datetime.date)))
    base = Draft202012Validator.VALIDATORS

    def as_text(keyword: str) -> Any:
        # the string keywords see a date as the ISO text kubectl would pass on (a date in a
        # label value crashed len() before: found by the compiled-schema identity test)
        def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            if isinstance(instance, datetime.date):
                instance = instance.isoformat()
            yield from base[keyword](validator, value, instance, schema)
        return check

    extended: type = validators.extend(Draft202012Validator, type_checker=checker, validators={
        k: as_text(k) for k in ("maxLength", "minLength", "pattern", "format")})
    return extended


@functools.lru_cache(maxsize=8)
def schema_set(version: str, crd_versions: tuple[tuple[str, str], ...] = ()) -> SchemaSet:
    return SchemaSet(version, crd_versions)


def about_the_value(p: Problem) -> bool:
    """Whether ``p`` says that the value written at its field is unreadable, of the wrong
    type or out of range (YAML, the Kubernetes schema, quantities, object names): the one
    report of that value, which later rules must not report again in their own words
    (:func:`mldiag_provision.lint.linter.drop_consequences`). A missing field is not a value."""
    if p.rule in _VALUE_RULES:
        return p.rule != NAME.id or p.value is not None
    return p.rule == SCHEMA.id and not p.message.startswith(_MISSING)


_VALUE_RULES = frozenset({"yaml-value", QUANTITY.id, NAME.id})
_MISSING = "missing required field"


# --- errors -> problems -----------------------------------------------------------------------

_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number",
               "boolean": "true or false", "object": "a mapping (key: value)",
               "array": "a list"}


def _type_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a YAML {type(value).__name__}"


def _short(value: object) -> object:
    if isinstance(value, (dict, list)):
        return None
    text = repr(value)
    return value if len(text) <= 80 else text[:77] + "..."


class _Emit:
    """Collects problems for one resource, located and with the rule's source."""

    def __init__(self, res: Resource, origin: str, crd_source: str | None,
                 crd: CrdKind | None = None, stated: bool = False) -> None:
        self.res = res
        self.origin = origin
        self.crd_source = crd_source
        self.crd = crd
        self.stated = stated
        self.problems: list[Problem] = []

    def add(self, rule: RuleInfo, path: Path, message: str, *, value: object = None,
            expected: str | None = None, hint: str | None = None,
            severity: Severity | None = None, crd: bool = False,
            source: str | None = None) -> None:
        line, col = self.res.locate(path, prefer_value=value is not None)
        source = source or (self.crd_source if crd and self.crd_source else rule.source)
        self.problems.append(Problem(
            rule=rule.id, message=message, path=self.res.full_path(path), value=value,
            expected=expected, hint=hint, file=self.res.file, line=line, column=col,
            severity=severity or rule.severity, source=source))


def _is_named(schema: object, defs: dict[str, Any], name: str) -> bool:
    return bool(schema == defs.get("$defs", {}).get(name))


@dataclass(frozen=True)
class _Failure:
    """One python-jsonschema error of an object, with what every translation needs: the
    field path, the failing subschema (a mapping; {} otherwise), whether it comes from a CRD
    (:data:`CRD_MARK`), the severity of the CRD's own findings (``soft``: a warning until the
    installed release is stated, else None: the rule's) and the words that name the stated
    release (``release``, "" when none)."""

    err: Any
    emit: _Emit
    defs: dict[str, Any]
    path: Path
    schema: dict[str, Any]
    crd: bool
    soft: Severity | None
    release: str

    @classmethod
    def of(cls, err: Any, emit: _Emit, defs: dict[str, Any]) -> _Failure:
        schema = err.schema if isinstance(err.schema, dict) else {}
        crd = bool(schema.get(CRD_MARK))
        # the installed CRD release may differ from the newest shipped one: its own findings
        # only warn, except wrong types, which do not change between releases; once the
        # installed release is stated (--crd-version, recipe crdVersions) they are errors
        soft = Severity.WARNING if crd and not emit.stated else None
        release = f" ({emit.crd.project} {emit.crd.version} does not know it)" \
            if crd and emit.stated and emit.crd is not None else ""
        return cls(err, emit, defs, tuple(err.absolute_path), schema, crd, soft, release)


def _unknown_fields(f: _Failure) -> None:
    """``additionalProperties``: each key of the mapping that its schema does not list."""
    props = f.schema.get("properties", {})
    emit, crd_kind = f.emit, f.emit.crd
    for key in f.err.instance:
        if key in props:
            continue
        where = field_path(f.path) or "the top level"
        emit.add(UNKNOWN_FIELD, (*f.path, key),
                 f"unknown field '{key}' in {where}{f.release}",
                 value=None, severity=f.soft, crd=f.crd,
                 expected=("one of: " + ", ".join(sorted(props))) if len(props) <= 16
                 else None,
                 hint=suggest(key, props) or (
                     f"remove it, or install a {crd_kind.project} release that has it"
                     if f.release and crd_kind is not None else
                     "remove it; kubectl apply rejects unknown fields (strict field "
                     "validation)"))


def _missing_fields(f: _Failure) -> None:
    """``required``: each required key the mapping lacks."""
    for key in f.err.validator_value:
        if key not in f.err.instance:
            f.emit.add(SCHEMA, (*f.path, key), f"{_MISSING} '{key}'",
                       severity=f.soft, crd=f.crd,
                       hint=f"add {field_path((*f.path, key))}")


def _wrong_type(f: _Failure) -> None:
    """``type``: the type(s) the field takes (null left out), with a hint to quote a YAML
    boolean or number where a string is wanted; always the rule's severity."""
    inst, wanted = f.err.instance, f.err.validator_value
    wanted = wanted if isinstance(wanted, list) else [wanted]
    words = " or ".join(str(_TYPE_WORDS.get(t, t)) for t in wanted if t != "null")
    hint = None
    if "string" in wanted and isinstance(inst, (bool, int, float)):
        hint = (f"quote the value: \"{str(inst).lower() if isinstance(inst, bool) else inst}"
                "\" (YAML reads it as a " + ("boolean" if isinstance(inst, bool)
                                             else "number") + ")")
    f.emit.add(SCHEMA, f.path, f"expected {words}, got {_type_of(inst)}",
               value=_short(inst), expected=words, hint=hint, crd=f.crd)


def _not_allowed(f: _Failure) -> None:
    """``enum``: a value outside the allowed ones (not for apiVersion and kind, which chose
    the schema and so cannot differ)."""
    allowed = [str(v) for v in f.err.validator_value if v is not None]
    if f.path in (("apiVersion",), ("kind",)):
        return
    inst = f.err.instance
    f.emit.add(SCHEMA, f.path, f"'{inst}' is not an allowed value", value=_short(inst),
               expected=", ".join(allowed), hint=suggest(inst, allowed), severity=f.soft,
               crd=f.crd)


_FORMS = (("io.k8s.apimachinery.pkg.api.resource.Quantity",
           "a quantity such as 10, 500m or 500Gi"),
          ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", "an integer or a string"))
"""Named definitions whose ``oneOf``/``anyOf`` failure is worded as what they take."""


def _no_form(f: _Failure) -> None:
    """``oneOf``/``anyOf``: the value fits none of the forms (a quantity, an int-or-string,
    or any other union)."""
    what = next((words for name, words in _FORMS if _is_named(f.schema, f.defs, name)),
                "one of the allowed forms")
    inst = f.err.instance
    f.emit.add(SCHEMA, f.path, f"expected {what}, got {_type_of(inst)}", value=_short(inst),
               expected=what, crd=f.crd)


def _in_its_words(f: _Failure) -> None:
    """Any other keyword (minimum, maxItems, pattern, ...): jsonschema's own words are clear
    enough (cut at 200 characters)."""
    f.emit.add(SCHEMA, f.path, f.err.message[:200], value=_short(f.err.instance),
               severity=f.soft, crd=f.crd)


_TRANSLATIONS: dict[str, tuple[bool, Callable[[_Failure], None]]] = {
    "additionalProperties": (True, _unknown_fields),
    "required": (True, _missing_fields),
    "type": (False, _wrong_type),
    "enum": (False, _not_allowed),
    "oneOf": (False, _no_form),
    "anyOf": (False, _no_form),
}
"""jsonschema keyword -> (only for a mapping instance, the translation); a keyword not
listed, or one that needs a mapping and has another instance, is :func:`_in_its_words`."""


def _translate(err: Any, emit: _Emit, defs: dict[str, Any]) -> None:
    """Add the problem(s) that python-jsonschema's ``err`` stands for to ``emit``
    (``defs``: the built-in definitions, to name a failing union)."""
    mapping_only, translate = _TRANSLATIONS.get(err.validator, (False, _in_its_words))
    if mapping_only and not isinstance(err.instance, dict):
        translate = _in_its_words
    translate(_Failure.of(err, emit, defs))


def _check_name(res: Resource, emit: _Emit) -> None:
    name = res.get("metadata", "name")
    if name is None:
        if res.get("metadata", "generateName") is None:
            emit.add(NAME, ("metadata", "name"), f"{res.kind} has no metadata.name",
                     hint="add metadata.name: a lowercase DNS name such as my-tpu-job")
        return
    if isinstance(name, str) and (len(name) > 253 or not _DNS_SUBDOMAIN.match(name)):
        fixed = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")[:253]
        emit.add(NAME, ("metadata", "name"), f"'{name}' is not a valid object name",
                 value=name, expected="lowercase letters, digits, '-' and '.', starting and "
                                      "ending with a letter or digit, at most 253 characters",
                 hint=f"e.g. {fixed}" if fixed and _DNS_SUBDOMAIN.match(fixed) else None)


def _check_quantities(node: object, path: Path, emit: _Emit, depth: int = 0) -> None:
    """``resources.requests``/``limits`` values anywhere in the object parse as quantities."""
    _quantities(node, (None, path), path[-1:] == ("resources",), emit, depth)


_Link = tuple[Any, ...]
"""A path being walked: ``(None, path)`` at the start, then ``(parent link, step)`` per step
(one pair per step instead of a new tuple of the whole path, issue 16); :func:`_unlink`
makes the path tuple when a problem needs it."""


def _unlink(link: _Link) -> Path:
    steps: list[str | int] = []
    while link[0] is not None:
        link, step = link
        steps.append(step)
    return (*link[1], *reversed(steps))


def _amount(qty: object, key: str, res_name: str, sub: Path, emit: _Emit) -> None:
    """One amount of ``resources.<key>`` (``sub``: that mapping's path): negative, or not a
    Kubernetes quantity (a number is taken as written; other types are the schema's)."""
    if isinstance(qty, bool) or not isinstance(qty, (str, int, float)):
        return  # wrong types are the schema's finding
    parsed = parse_quantity(str(qty)) if not isinstance(qty, (int, float)) \
        else Decimal(str(qty))
    if parsed is not None and parsed.is_finite() and parsed < 0:
        emit.add(QUANTITY, (*sub, res_name),
                 f"{res_name}: {qty} is negative; resource {key} must be "
                 "greater than or equal to 0 (the API server refuses the "
                 "object)", value=qty, expected="0 or more",
                 hint=f"use an amount of 0 or more, e.g. {str(qty)[1:]}"
                 if str(qty).startswith("-") else None,
                 source=NONNEGATIVE_SOURCE)
    elif parsed is None or not parsed.is_finite():
        emit.add(QUANTITY, (*sub, res_name),
                 f"'{qty}' is not a Kubernetes quantity", value=qty,
                 expected="a number with an optional suffix: m, k, M, G, T, "
                          "Ki, Mi, Gi, Ti (e.g. 500m, 16Gi)",
                 hint="GB/MB are not quantity suffixes: write G or Gi"
                 if re.search(r"[KMGT]B$", str(qty)) else None)


def _quantities(node: object, link: _Link, in_resources: bool, emit: _Emit,
                depth: int) -> None:
    """Walk ``node`` (at ``link``; ``in_resources``: it is a ``resources`` mapping) to depth
    40, checking each amount of a ``requests``/``limits`` mapping of a ``resources``."""
    if depth > 40:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if in_resources and key in ("requests", "limits") and isinstance(value, dict):
                sub = (*_unlink(link), key)
                for res_name, qty in value.items():
                    _amount(qty, key, res_name, sub, emit)
            elif isinstance(value, (dict, list)):  # scalars hold no quantities
                _quantities(value, (link, key), key == "resources", emit, depth + 1)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            if isinstance(item, (dict, list)):
                _quantities(item, (link, i), False, emit, depth + 1)


def validate_resource(res: Resource, schemas: SchemaSet) -> list[Problem]:
    """All schema problems of one object (never raises for bad input)."""
    schema, origin = schemas.schema_for(res.api_version, res.kind)
    crd = schemas.crd_kind(res.api_version, res.kind) if origin == "crd" else None
    emit = _Emit(res, origin, crd.source if crd else None, crd, schemas.stated(crd))
    if schema is None:
        _unknown_kind(res, schemas, emit)
    elif not schemas.accepts(res.api_version, res.kind, res.data):
        # rejected (or undecided): python-jsonschema's errors, translated into problems
        validator, _ = schemas.validator_for(res.api_version, res.kind)
        seen: set[tuple[Path, str]] = set()
        errors = list(validator.iter_errors(res.data))  # type: ignore[union-attr]
        # a value of the wrong type is reported once, as that: not again as a value outside
        # the enum (or a pattern) of the type it does not have
        wrong_type = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
        for err in errors:
            key = (tuple(err.absolute_path), err.validator)
            if key in seen or (err.validator != "type" and key[0] in wrong_type):
                continue
            seen.add(key)
            _translate(err, emit, schemas.defs)
    _check_name(res, emit)
    _check_quantities(res.data, (), emit)
    return emit.problems


def _unknown_kind(res: Resource, schemas: SchemaSet, emit: _Emit) -> None:
    group = res.group
    gvk = f"{res.api_version} {res.kind}"
    if builtin_group(group):
        served = schemas.served_api_versions(res.kind)
        if served:
            emit.add(API_VERSION, ("apiVersion",),
                     f"Kubernetes {schemas.version} does not serve {res.kind} as "
                     f"{res.api_version}", value=res.api_version, expected=", ".join(served),
                     hint=f"use apiVersion: {served[-1]}")
        else:
            recipe = res.kind == "Recipe" and res.api_version.startswith("mldiag-provision/")
            emit.add(API_VERSION, ("kind",),
                     f"Kubernetes {schemas.version} has no kind '{res.kind}' in "
                     f"'{res.api_version}'", value=res.kind,
                     hint=("this is an mldiag-provision recipe, not a Kubernetes manifest: "
                           "check it with mldiag-provision validate FILE" if recipe
                           else suggest(res.kind, schemas.kinds())))
        return
    _, kinds = crd_document()
    shipped = kinds.get((res.api_version, res.kind))
    if shipped and shipped[0].project in schemas.crd_versions:
        stated = schemas.crd_versions[shipped[0].project]
        serving = sorted({c.version for c in shipped})
        emit.add(API_VERSION, ("apiVersion",),
                 f"{shipped[0].project} {stated} does not serve {gvk}", value=res.api_version,
                 expected=f"{shipped[0].project} {', '.join(serving)}",
                 hint="use an apiVersion that release serves, or state the installed release")
        return
    same_group = [v[-1] for v in kinds.values() if v[-1].api_version.rpartition("/")[0] == group]
    if same_group:
        options = [f"{k.api_version} {k.kind}" for k in same_group]
        emit.add(API_VERSION, ("apiVersion",) if any(k.kind == res.kind for k in same_group)
                 else ("kind",),
                 f"{gvk} is not a kind this linter knows for {group}", value=res.kind,
                 expected=", ".join(options), severity=Severity.WARNING,
                 hint=suggest(gvk, options))
        return
    emit.add(NO_SCHEMA, ("kind",), f"no schema for {gvk}; its fields are not checked",
             value=res.kind)
