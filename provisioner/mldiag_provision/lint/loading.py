"""Manifests in, Kubernetes objects with positions out.

Reads files, directories (every ``*.yaml``/``*.yml`` below them, hidden folders skipped, in
sorted order) and ``-`` (stdin); splits multi-document YAML with
:func:`~mldiag_provision.recipe.loader.load_documents`, so every field keeps its line and
column; unpacks ``v1 List`` objects. Each object becomes a :class:`Resource` that knows its
file, its position and how to locate any field path inside it.

Field paths are shown the way people search for them in a manifest: dotted keys and
``[index]``, with keys that are not plain words in brackets and quotes
(``spec.nodeSelector["cloud.google.com/gke-tpu-topology"]``).
"""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any, BinaryIO, ClassVar, overload

from mldiag_provision.errors import Problem, UsageError, not_utf8
from mldiag_provision.lazyre import lazy
from mldiag_provision.lint.rules import define
from mldiag_provision.ondisk import dangling, open_regular
from mldiag_provision.recipe.loader import load_documents
from mldiag_provision.recipe.sourcemap import Path, SourceMap, format_path
from mldiag_provision.yaml11 import confusable

OBJECT = define("k8s-object", "each YAML document is a Kubernetes object with apiVersion and kind",
                source="https://kubernetes.io/docs/concepts/overview/working-with-objects/")

CONFUSABLE = define(
    "yaml-confusable-scalar", "an unquoted value that Kubernetes' YAML 1.1 reader takes for a "
    "boolean, number, null or date, where this reader sees a string",
    source="https://github.com/go-yaml/yaml/blob/v2.4.0/resolve.go")

_PLAIN_KEY = lazy(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")
SUFFIXES = (".yaml", ".yml")


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def field_path(path: Iterable[str | int]) -> str:
    """``("spec", "nodeSelector", "a.io/b", 0)`` -> ``spec.nodeSelector["a.io/b"][0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out


@dataclass(frozen=True)
class Source:
    """One input: a display name (the path as given, or ``<stdin>``) and its text; ``error``
    says why it could not be read (missing, unreadable, not UTF-8, too large, a directory
    without YAML files), and ``hint`` what to do: it is reported as a ``file-unreadable``
    problem, the other inputs are still linted, and lint exits 2 (a usage error) at the end,
    as ``validate`` does."""

    name: str
    text: str
    error: str | None = None
    hint: str | None = None


# Manifests are kilobytes; a cap keeps /dev/zero or a mistaken huge file from hanging lint.
MAX_BYTES = 64 << 20


def _decode(raw: bytes, name: str) -> Source:
    """Bytes -> a :class:`Source`; the same size and UTF-8 rules for files and stdin.

    Raises:
      UsageError: over :data:`MAX_BYTES`, or not UTF-8.
    """
    if len(raw) > MAX_BYTES:
        raise UsageError(f"{name}: larger than {MAX_BYTES >> 20} MiB; not a manifest?")
    try:
        return Source(name, raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise not_utf8(name, raw, exc, "a manifest") from None


def _read_stdin() -> Source:
    """``-``: stdin read as bytes (not through the locale's text layer, which would turn
    undecodable bytes into surrogates), decoded like a file."""
    if sys.stdin is None:  # started with stdin closed (<&-)
        raise UsageError("<stdin>: standard input is closed",
                         hint="pipe the manifests in, or name the files")
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text-only stdin (tests replace sys.stdin with StringIO)
        text = sys.stdin.read(MAX_BYTES + 1)
        raw = text.encode("utf-8", "surrogateescape")
    else:
        raw = stream.read(MAX_BYTES + 1)
    return _decode(raw, "<stdin>")


def read_capped(f: BinaryIO, cap: int) -> bytes:
    """The first ``cap + 1`` bytes of ``f`` (or all of it, when shorter): one byte more than
    the cap shows that a file is over it.

    A regular file is asked for its size plus one byte, then for the rest only if it had
    more than its size said (it grew): asking every file for the cap allocated 64 MiB each
    time, and that was most of reading 1,000 manifests (issue 16); a recipe's 1 MiB cap,
    about 2 % of checking one (:func:`mldiag_provision.pipeline.read_text`)."""
    st = os.fstat(f.fileno())
    want = min(st.st_size, cap) + 1 if stat.S_ISREG(st.st_mode) else cap + 1
    raw = f.read(want)
    if len(raw) == want <= cap:
        raw += f.read(cap + 1 - want)
    return raw


def _read(path: FsPath | str, name: str) -> Source:
    try:
        with open_regular(path) as f:  # never blocks: a FIFO or a device is refused
            raw = read_capped(f, MAX_BYTES)
        return _decode(raw, name)
    except FileNotFoundError:
        link = dangling(path)
        if link:
            raise UsageError(f"{name}: {link}", hint="point the link at the manifest, or "
                             "name the file itself") from None
        raise UsageError(f"{name}: no such file or directory", hint="check the path") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot be read ({exc.strerror})") from None


def _yaml_files(root: FsPath) -> list[tuple[str, str]]:
    """(name, real path) of every ``*.yaml``/``*.yml`` file below the directory ``root``, in
    the order of their path parts; names start with ``root`` as given. What
    ``sorted(f for f in root.rglob("*") if f.suffix in SUFFIXES and f.is_file())`` finds,
    less anything below a hidden (dot) name, with ``str(f)`` and ``str(f.resolve())``, in one
    ``scandir`` walk: a file's real path is its folder's plus its name unless it is a link
    (``rglob`` does not enter linked folders either), so only links are resolved one by one
    (per-file ``resolve`` and pathlib were most of reading 1,000 files, issue 16)."""
    base = str(root)
    prefix = "" if base == "." else base.rstrip("/") + "/" if base != "/" else "/"
    real_root = os.path.realpath(base)
    found: list[tuple[tuple[str, ...], str, str]] = []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        rel = pending.pop()
        folder = os.path.join(base, *rel) if rel else base
        try:
            entries = list(os.scandir(folder))
        except OSError:  # rglob skips folders it cannot list
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((*rel, name))
                    continue
                if not name.endswith(SUFFIXES) or not entry.is_file():
                    continue
                link = entry.is_symlink()
            except OSError:
                continue
            parts = (*rel, name)
            shown = prefix + "/".join(parts)
            real = (os.path.realpath(shown) if link
                    else os.path.join(real_root, *parts))
            found.append((parts, shown, real))
    found.sort(key=lambda item: item[0])
    return [(shown, real) for _, shown, real in found]


def _unreadable(name: str, exc: UsageError) -> Source:
    return Source(name, "", error=exc.message, hint=exc.hint)


def read_sources(paths: Iterable[str]) -> list[Source]:
    """Expand the command line's PATHs into sources. An input that cannot be read (a missing
    or unreadable path, a file that is not UTF-8 or is too large, a directory holding no YAML
    file) is a source with ``error`` set, in its place: one bad path does not hide the others.

    Raises:
      UsageError: ``-`` is given twice (the command line itself is wrong).
    """
    paths = list(paths)
    if paths.count("-") > 1:
        raise UsageError("'-' (stdin) can be given only once")
    out: list[Source] = []
    seen: set[str] = set()
    for raw in paths:
        if raw == "-":
            try:
                out.append(_read_stdin())
            except UsageError as exc:
                out.append(_unreadable("<stdin>", exc))
            continue
        p = FsPath(raw)
        if p.is_dir():
            found = _yaml_files(p)
            if not found:
                out.append(Source(raw, "", error=f"{raw}: no *.yaml or *.yml files in this "
                                  "directory", hint="name YAML files or a directory that holds "
                                  "some (hidden directories are skipped)"))
            for name, key in found:
                if key not in seen:
                    seen.add(key)
                    try:
                        out.append(_read(name, name))
                    except UsageError as exc:
                        out.append(_unreadable(name, exc))
            continue
        key = str(p.resolve()) if p.exists() else raw
        if key not in seen:
            seen.add(key)
            try:
                out.append(_read(p, raw))
            except UsageError as exc:
                out.append(_unreadable(raw, exc))
    return out


@dataclass(eq=False)
class Resource:
    """One Kubernetes object of the input, where it is, and how to find its fields.

    ``base`` is the object's own path inside its YAML document: ``()`` for a top-level object,
    ``("items", 3)`` for the fourth item of a ``List``.
    """

    file: str
    sourcemap: SourceMap
    data: dict[str, Any]
    base: Path = ()
    document: int = 0

    @property
    def api_version(self) -> str:
        v = self.data.get("apiVersion")
        return v if isinstance(v, str) else ""

    @property
    def kind(self) -> str:
        v = self.data.get("kind")
        return v if isinstance(v, str) else ""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def name(self) -> str:
        v = self.get("metadata", "name")
        return v if isinstance(v, str) else ""

    @property
    def namespace(self) -> str | None:
        v = self.get("metadata", "namespace")
        return v if isinstance(v, str) and v else None

    @property
    def labels(self) -> dict[str, Any]:
        v = self.get("metadata", "labels")
        return v if isinstance(v, dict) else {}

    @property
    def annotations(self) -> dict[str, Any]:
        v = self.get("metadata", "annotations")
        return v if isinstance(v, dict) else {}

    @property
    def identified(self) -> bool:
        """Whether ``metadata``, its ``name`` and ``namespace`` are of their types (or absent).
        One that is not (``name: 7``) is the schema's finding; the rules still check the rest
        of the object (issue 25: independent faults in one run), but one that matches other
        objects by this object's name (a Service selecting ``job-name: <job>``) skips it: it
        would report the unreadable name again, in its own words, on another object."""
        meta = self.data.get("metadata")
        if meta is None:
            return True
        return isinstance(meta, dict) and all(
            meta.get(k) is None or isinstance(meta[k], str) for k in ("name", "namespace"))

    def display(self) -> str:
        return f"{self.kind or 'object'} '{self.name}'" if self.name else (self.kind or "object")

    def get(self, *path: str | int) -> object:
        """The value at ``path`` below this object, or ``None`` if any step is missing."""
        return get(self.data, *path)

    def locate(self, path: Path, *, prefer_value: bool = False) -> tuple[int, int]:
        """Line and column of a field (its value's when ``prefer_value``), or of its nearest
        existing parent when the field is missing."""
        return self.sourcemap.locate((*self.base, *path), prefer_value=prefer_value)

    def full_path(self, path: Path) -> str:
        return field_path((*self.base, *path))


def get(node: object, *path: str | int) -> object:
    """Walk dicts and lists without raising; ``None`` where the path does not exist."""
    for part in path:
        # the common step first, without isinstance: a plain dict and a key (the rules take
        # ~40,000 steps per 1,000 manifests; issue 16)
        if node.__class__ is dict and part.__class__ is str:
            node = node.get(part)
            continue
        if isinstance(node, dict):
            if isinstance(part, int):
                return None
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int):
            if not -len(node) <= part < len(node):
                return None
            node = node[part]
        else:
            return None
    return node


@dataclass
class Loaded:
    """Every object of every source, the problems found while reading, and each file's lines."""

    resources: list[Resource] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    sourcemaps: dict[str, SourceMap] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def _object_problem(sm: SourceMap, path: Path, message: str, hint: str) -> Problem:
    line, col = sm.locate(path)
    return Problem(rule=OBJECT.id, message=message, path=field_path(path), file=sm.file,
                   line=line, column=col, hint=hint, source=OBJECT.source)


_NUMERIC_START = frozenset("-+._0123456789")


def _may_hold_confusables(data: object) -> bool:
    """Whether any string value below ``data`` is one :func:`~mldiag_provision.yaml11.
    confusable` flags, quoted or not: only then can the source map list a confusable plain
    scalar here (it flags exactly the plain ones among them). Asking the source map builds
    every position of the document (the loader keeps them lazy), which was a third of lint's
    reading (issue 16); this walk over the data is a tenth of that. A string can only be
    flagged when it starts like a number or is a word of at most five characters (``false``,
    ``null``, ``<<``...), so :func:`confusable` runs only for those."""
    stack: list[object] = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and (len(node) <= 5 or node[0] in _NUMERIC_START) \
                and confusable(node):
            return True
    return False


def _confusable_strings(data: object) -> list[tuple[Path, str]]:
    """(path, value) of every string value below ``data`` that
    :func:`~mldiag_provision.yaml11.confusable` flags (paths built only for those)."""
    found: list[tuple[Path, str]] = []
    stack: list[tuple[object, tuple[Any, ...] | None]] = [(data, None)]
    while stack:
        node, link = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, (link, k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (link, i)) for i, v in enumerate(node))
        elif isinstance(node, str) and (len(node) <= 5 or node[0] in _NUMERIC_START) \
                and confusable(node):
            steps: list[str | int] = []
            while link is not None:
                link, step = link
                steps.append(step)
            found.append((tuple(reversed(steps)), node))
    return found


def _written_quoted(sm: SourceMap, path: Path, value: str) -> bool:
    """Whether the source writes the value at ``path`` as exactly ``"value"`` or ``'value'``
    where the source map places it (a quoted scalar starts at its quote, which no plain
    scalar can; anything else, escapes or a scalar over lines included, says False)."""
    line, col = sm.locate(path, prefer_value=True)
    text = sm.source_line(line)
    if text is None or col < 1 or "\ufeff" in text:
        return False
    quote = text[col - 1:col]
    return quote in ("'", '"') and text[col:col + len(value) + 1] == value + quote


def _type_words(value: object) -> str:
    """``1`` -> ``the integer 1``: a wrong-typed value as a message names it."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"the {type(value).__name__} {value!r}"[:60]


_HEADER = {"apiVersion": ("a string group/version", "apiVersion: batch/v1"),
           "kind": ("a string", "kind: Job")}


def _header_problem(sm: SourceMap, base: Path, data: dict[str, Any], key: str) -> Problem:
    """apiVersion or kind is there but not a string (``apiVersion: 1``)."""
    value = data[key]
    expected, example = _HEADER[key]
    line, col = sm.locate((*base, key), prefer_value=True)
    shown = value if isinstance(value, (bool, int, float)) else None
    return Problem(rule=OBJECT.id, message=f"{key} is {_type_words(value)}, not "
                   f"{expected}", path=field_path((*base, key)), value=shown,
                   expected=f"{expected} such as {example.split(': ')[1]}",
                   hint=f"write the {key} as text, e.g. {example}",
                   file=sm.file, line=line, column=col, source=OBJECT.source)


def _add(out: Loaded, sm: SourceMap, data: object, base: Path, document: int,
         unreadable: frozenset[str] = frozenset()) -> None:
    """Add ``data`` (a document, or an item of a List) as a :class:`Resource`, or the
    problem that keeps it from being one. ``unreadable``: the fields the loader could not
    read (a ``yaml-value`` problem each, reported already)."""
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"the scalar {data!r}"[:60]
        out.problems.append(_object_problem(
            sm, base, f"this YAML document is {kind}, not a Kubernetes object",
            "each document between '---' lines holds one object with apiVersion, kind and "
            "metadata"))
        return
    for key in ("apiVersion", "kind"):
        if field_path((*base, key)) in unreadable:
            return  # the loader's problem is the one report of it
        if data.get(key) is not None and not isinstance(data[key], str):
            out.problems.append(_header_problem(sm, base, data, key))
            return
    missing = [k for k in ("apiVersion", "kind") if not data.get(k)]
    if missing:
        out.problems.append(_object_problem(
            sm, (*base, missing[0]),
            f"missing {' and '.join(missing)}: not a Kubernetes object",
            "start the document with apiVersion: and kind: (e.g. apiVersion: batch/v1, "
            "kind: Job)"))
        return
    items = data.get("items")
    if data["kind"].endswith("List") and data["apiVersion"] == "v1" and isinstance(items, list):
        for i, item in enumerate(items):
            _add(out, sm, item, (*base, "items", i), document, unreadable)
        return
    res = Resource(sm.file, sm, data, base, document)
    out.resources.append(res)
    if not sm.may_have_confusables() or not _may_hold_confusables(data) or all(
            _written_quoted(sm, (*base, *path), value)
            for path, value in _confusable_strings(data)):
        return  # no plain confusable scalar below here: the source map need not be asked
    n = len(base)
    for path, kind in sorted(sm.confusables.items(), key=lambda kv: sm.locate(kv[0])):
        if path[:n] != base:
            continue
        value = get(data, *path[n:])
        line, col = sm.locate(path, prefer_value=True)
        out.problems.append(Problem(
            rule=CONFUSABLE.id, file=sm.file, line=line, column=col, path=field_path(path),
            value=value,
            message=f"unquoted {value!r} reads as {_article(kind)} {kind} in Kubernetes (its "
                    "YAML reader follows "
                    "YAML 1.1: y/n/on/off, 08, 0o17, 1e3, +.5, ~ ...), not the string "
                    f"{value!r}; the object is refused or means something else",
            hint=f"quote it: \"{value}\"", source=CONFUSABLE.source))


def _lint_paths(problems: list[Problem], data: object) -> list[Problem]:
    """The loader's problems with their field paths as lint writes them
    (``spec.nodeSelector["cloud.google.com/gke-tpu-topology"]``, not the loader's
    ``spec.nodeSelector.cloud.google.com/gke-tpu-topology``), so that the findings of one
    field name it alike and :func:`~mldiag_provision.lint.linter.drop_consequences` can
    match them. An unreadable value is ``None`` in ``data``; only those are looked for."""
    if not any(p.rule == "yaml-value" and p.path for p in problems):
        return problems
    shown: dict[str, str] = {}
    stack: list[tuple[object, Path]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
        elif node is None and path:
            shown.setdefault(format_path(path), field_path(path))
    return [dataclasses.replace(p, path=shown[p.path])
            if p.rule == "yaml-value" and p.path in shown else p for p in problems]


class _Lines(Sequence[str]):
    """``text.splitlines()``, split when read: the lines of a file for its source maps
    (the lines shown under a problem). A run keeps every file's text anyway (its
    :class:`Source`), and the split lines of 1,000 manifests were ~3 MiB more (issue 32);
    the last file's split is kept, as problems are shown file by file."""

    __slots__ = ("text",)
    _last: ClassVar[tuple[_Lines, list[str]] | None] = None

    def __init__(self, text: str) -> None:
        self.text = text

    def _split(self) -> list[str]:
        last = _Lines._last
        if last is not None and last[0] is self:
            return last[1]
        lines = self.text.splitlines()
        _Lines._last = (self, lines)
        return lines

    def __len__(self) -> int:
        return len(self._split())

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._split()[index]


def load_sources(sources: Iterable[Source]) -> Loaded:
    """Parse every source; never raises for bad input."""
    from mldiag_provision.lint import positions  # not for validate's Resources
    out = Loaded()
    for src in sources:
        out.files.append(src.name)
        if src.error is not None:
            out.problems.append(Problem(rule="file-unreadable", message=src.error,
                                        file=src.name, hint=src.hint or "fix or remove the file"))
            out.sourcemaps[src.name] = SourceMap(file=src.name, lines=[])
            continue
        # positions as flat arrays, recorded while each document is built (issue 32: the
        # node trees were most of lint's memory); a text with anchors keeps its trees
        docs = load_documents(src.text, src.name, positions=positions.located)
        lines = _Lines(src.text)
        for doc in docs:
            doc.sourcemap.lines = lines
        out.sourcemaps[src.name] = (docs[0].sourcemap if docs
                                    else SourceMap(file=src.name, lines=lines))
        for doc in docs:
            found = _lint_paths(doc.problems, doc.data)
            out.problems.extend(found)
            if doc.data is None:  # an empty document ('---' twice) or a syntax error
                continue
            _add(out, doc.sourcemap, doc.data, (), doc.index, frozenset(
                p.path for p in found if p.rule == "yaml-value"))
    return out
