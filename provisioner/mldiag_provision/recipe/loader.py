"""Load YAML with positions: text -> (data, :class:`SourceMap`) per document.

Built on PyYAML's composer (its C loader when available) so that every mapping key and list
item keeps its line and column. Unlike ``yaml.safe_load``, duplicate keys are reported
(they silently overwrite each other in plain PyYAML) and syntax errors become
:class:`~mldiag_provision.errors.Problem` objects pointing at the bad line.

Two passes (issue 16): a document is first built without positions (:class:`_Quick`), keeping
its node tree so that a position is looked up only when a problem needs it (:class:`_Tree`);
a document with anything to report (a duplicate key, an unreadable value, too many values, a
syntax error) is built again by the positional builder (:class:`_Builder`), which tables
every position and reports the problems with their paths. Both give the same data and
positions (tests/unit/test_loader_fastpath.py).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from mldiag_provision.errors import Problem
from mldiag_provision.lazyre import lazy
from mldiag_provision.recipe.sourcemap import Path, SourceMap
from mldiag_provision.yaml11 import NUMERIC_START, WORDS, confusable

try:  # the C loader is several times faster; fall back to pure Python when libyaml is absent
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Base = yaml.SafeLoader

_RESOLVER = yaml.resolver.Resolver()  # the safe loaders' implicit tag rules (C and Python)


@functools.lru_cache(maxsize=8192)
def _resolve(kind: type, value: str | None, implicit: object) -> str:
    """The implicit tag of a node: the safe loader's resolve(), remembered.

    The C composer asks the loader for every untagged node of every document; resolve()
    tries several regular expressions per plain scalar, while a set of manifests repeats the
    same keys and values. The safe loader has no path resolvers, so the answer depends on
    ``(kind, value, implicit)`` alone; the cache is functools' (C, no Python frame on a hit).
    """
    return _RESOLVER.resolve(kind, value, implicit)  # type: ignore[no-any-return,no-untyped-call]


class _Loader(_Base):  # type: ignore[misc]
    """The safe loader with cheaper per-node hooks (issue 16: the hooks were ~30 % of
    composing a manifest): implicit tags from :func:`_resolve`; and, as the safe loader has
    no path resolvers, the path-resolver hooks that the composer calls around every node
    (``descend_resolver(parent, index)``, ``ascend_resolver()``) are C callables that ignore
    their arguments instead of Python methods that return at once."""

    resolve = staticmethod(_resolve)
    if not _Base.yaml_path_resolvers:
        descend_resolver = staticmethod(operator.is_)
        ascend_resolver = staticmethod(tuple)


@dataclass
class Document:
    """One YAML document: its data (plain dicts/lists/scalars) and where each field is."""

    data: object
    sourcemap: SourceMap
    problems: list[Problem]
    index: int = 0  # position of the document in a multi-document stream


def _yaml_error_problem(exc: yaml.YAMLError, file: str, text: str = "") -> Problem:
    if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
        return _reader_problem(exc.character, file, text)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    what = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    unclosed = _unclosed(exc, context, text)
    if unclosed is not None:
        return Problem(rule="yaml-syntax", file=file, line=unclosed[0], column=unclosed[1],
                       message=f"YAML syntax error: the {unclosed[2]!r} here is never closed "
                               f"({what}, noticed at line {line}, column {col})",
                       hint=unclosed[3])
    if "cannot start any token" in what and _char_at(text, mark) == "\t":
        what = "found a tab character that cannot start any token"  # libyaml names no char
    message = f"YAML syntax error: {what}" + (f" ({context})" if context else "")
    hint = "fix the YAML syntax at this position (check indentation, quotes and colons)"
    if "tab character" in what:
        hint = ("YAML indents with spaces only: replace the tab on this line with spaces "
                "(as many as the lines above it use)")
    return Problem(rule="yaml-syntax", message=message, file=file, line=line, column=col,
                   hint=hint)


def _char_at(text: str, mark: object) -> str:
    """The character at a parser mark (0-based line and column) of ``text``, or ""."""
    line, column = getattr(mark, "line", -1), getattr(mark, "column", -1)
    lines = text.splitlines()
    if not 0 <= line < len(lines) or not 0 <= column < len(lines[line]):
        return ""
    return lines[line][column]


# what opened a construct the parser was still inside when it failed, and how to close it
_OPENERS = {"while parsing a flow sequence": ("[", "close it with ']' where the list ends, "
                                              "or write one '- item' per line instead"),
            "while parsing a flow mapping": ("{", "close it with '}' where the mapping ends, "
                                             "or write one 'key: value' per line instead"),
            "while scanning a quoted scalar": ("quote", "close the string with the same quote "
                                                        "it opens with")}


def _unclosed(exc: yaml.YAMLError, context: str | None, text: str,
              ) -> tuple[int, int, str, str] | None:
    """(line, column, opener, hint) of a ``[``, ``{`` or quote that is never closed, when the
    parser noticed it only on a later line: the error is then reported where the construct
    opens, where the fix is, not on the innocent line after it. None otherwise."""
    opened = getattr(exc, "context_mark", None)
    found = getattr(exc, "problem_mark", None)
    if context not in _OPENERS or opened is None or found is None or \
            found.line <= opened.line:
        return None
    opener, hint = _OPENERS[context]
    if opener == "quote":
        opener = _char_at(text, opened) or "quote"
    return opened.line + 1, opened.column + 1, opener, hint


def _reader_problem(code: int, file: str, text: str) -> Problem:
    """A character YAML does not allow (NUL, other control characters), at its line and
    column: the reader's own error names an offset (in bytes with libyaml, in characters
    without), which no editor shows. The reader stops at the first such character, so it is
    the first of that code in ``text``; lines are counted as the source map counts them."""
    index = text.find(chr(code))
    before = text[:max(index, 0)].splitlines(keepends=True)
    if not before or before[-1].splitlines()[0] != before[-1]:  # at a line's start
        line, col = len(before) + 1, 1
    else:
        line, col = len(before), len(before[-1]) + 1
    name = {0: "NUL", 0x7f: "DEL", 0xfffe: "U+FFFE", 0xffff: "U+FFFF"}.get(code, "control")
    return Problem(
        rule="yaml-syntax", file=file, line=line if index >= 0 else 0,
        column=col if index >= 0 else 0, value=f"U+{code:04X}",
        message=f"YAML syntax error: the {name} character U+{code:04X} is not allowed in YAML "
                "text", expected="printable text (tabs and line breaks are fine)",
        hint="remove it" + (" (a NUL byte is often a sign of a binary or UTF-16 file: "
                            "save the file as UTF-8 text)" if code == 0 else ""))


# Build documents without positions first (see the module docstring); False: always table
# every position while loading (what the quick pass is tested against).
QUICK = True

# Aliases can make a small file expand exponentially ("billion laughs"); a recipe or a
# manifest never needs more than this many values once aliases are expanded.
MAX_NODES = 100_000


# The constructors of the plain core scalar tags (str, int, float, bool, null): pure functions
# of the node, so calling them directly gives what construct_object gives. Timestamps,
# binary and unknown tags still go through construct_object.
# A str scalar's value is its text (SafeConstructor.construct_yaml_str -> construct_scalar).
_CONSTRUCT_INT = _Loader.yaml_constructors["tag:yaml.org,2002:int"]


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """SafeConstructor.construct_yaml_int, with decimal digits and no leading zero (most
    integers of a manifest: ports, counts) read at once: for those it returns
    ``int(text)`` too, after steps that find no '_', sign, base prefix or ':' (issue 16)."""
    text = node.value
    if text.isdecimal() and (text[0] != "0" or text == "0"):
        return int(text)
    return _CONSTRUCT_INT(loader, node)  # type: ignore[no-any-return]


_SCALAR_CONSTRUCTORS = {
    "tag:yaml.org,2002:str": lambda _loader, node: node.value,
    "tag:yaml.org,2002:int": _construct_int,
    **{tag: _Loader.yaml_constructors[tag] for tag in (
        "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null")}}
_FLATTENED = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")


def _key(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    """A mapping key as a path part: its value, made text when YAML read another type
    (``1`` -> ``"1"``; a non-scalar key -> its repr)."""
    construct = _SCALAR_CONSTRUCTORS.get(node.tag) if isinstance(node, yaml.ScalarNode) \
        else None
    key = construct(loader, node) if construct is not None \
        else loader.construct_object(node, deep=True)
    if isinstance(key, str):
        return key
    return str(key) if isinstance(key, (int, float, bool)) or key is None else repr(key)


class _TooLarge(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


class _Builder:
    """Turns a composed node tree into Python data while recording positions."""

    def __init__(self, loader: yaml.SafeLoader, sourcemap: SourceMap,
                 decimal: bool = False) -> None:
        self.loader = loader
        self.decimal = decimal
        self.sm = sourcemap
        self.problems: list[Problem] = []
        self._own: dict[int, set[int]] = {}
        self.count = 0
        self.active: set[int] = set()  # ids of the collections being built (recursion check)

    def build(self, node: yaml.Node, path: Path) -> object:
        self.count += 1
        if self.count > MAX_NODES:
            raise _TooLarge(node, f"the document expands to more than {MAX_NODES} values "
                                  "(aliases repeated too often?)")
        self.sm.values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return self._scalar(node, path)
        if id(node) in self.active:
            raise _TooLarge(node, "an alias refers to a collection that contains it "
                                  "(a recursive YAML alias)")
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            out = []
            for i, item in enumerate(node.value):
                self.sm.keys.setdefault((*path, i), (item.start_mark.line + 1,
                                                     item.start_mark.column + 1))
                out.append(self.build(item, (*path, i)))
            return out
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: yaml.Node, path: Path) -> object:
        """A scalar's value; an unreadable one becomes a problem at its own position."""
        if self.decimal and node.tag == _INT and isinstance(node.value, str):
            why = _surprising_int(node.value)
            if why is not None:
                self.problems.append(Problem(
                    rule="yaml-value", message=why, value=node.value,
                    hint="write the number in plain decimal (no leading zero, no ':'), or "
                         "quote it if it is text", **self._where(node, path)))
                return None
        try:
            # a plain scalar of a core tag: its constructor directly (what construct_object
            # would call, without its bookkeeping); anything else the generic way
            construct = _SCALAR_CONSTRUCTORS.get(node.tag) \
                if isinstance(node, yaml.ScalarNode) else None
            value = construct(self.loader, node) if construct is not None \
                else self.loader.construct_object(node, deep=True)
            if isinstance(value, str) and isinstance(node, yaml.ScalarNode) and not node.style:
                kind = confusable(value)
                if kind:
                    self.sm.confusables[path] = kind
            return value
        except yaml.constructor.ConstructorError as exc:
            where = self._where(node, path)
            what = exc.problem or "it cannot be read"
            tagged = "tag" in what
            self.problems.append(Problem(
                rule="yaml-value", message=f"YAML value cannot be read: {what}",
                hint="remove the '!' tag, or quote the value" if tagged
                else "quote the value to keep it a string", **where))
        except (ValueError, TypeError, OverflowError) as exc:
            self.problems.append(Problem(
                rule="yaml-value", message=f"YAML value {node.value!r} cannot be read ({exc})",
                hint="quote the value to keep it a string", **self._where(node, path)))
        return None

    def _where(self, node: yaml.Node, path: Path) -> dict[str, Any]:
        """A problem's location fields for ``node`` (formatted only when one is reported)."""
        return {"path": _fmt(path), "file": self.sm.file, "line": node.start_mark.line + 1,
                "column": node.start_mark.column + 1}

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, object]:
        # the node's own keys, remembered across visits: flatten_mapping changes the node in
        # place, and an alias visits the same node again. A mapping without a merge key (<<)
        # or a value key (=) is left as it is by flatten_mapping: every key is its own.
        own: set[int] | None = self._own.get(id(node))
        if own is None and any(k.tag in _FLATTENED for k, _ in node.value):
            own = self._own.setdefault(id(node), {id(k) for k, _ in node.value
                                                  if k.tag != "tag:yaml.org,2002:merge"})
        if own is not None:
            self.loader.flatten_mapping(node)  # resolves merge keys (<<); merged pairs first
        out: dict[str, object] = {}
        inherited: set[str] = set()  # keys that came from a merge: a later entry overrides
        for key_node, value_node in node.value:
            key = _key(self.loader, key_node)
            line, col = key_node.start_mark.line + 1, key_node.start_mark.column + 1
            child: Path = (*path, key)
            if key in inherited:  # an explicit key (or a later merge) overrides a merged one
                inherited.discard(key)
                del out[key]
                n = len(child)
                tables: tuple[dict[Path, Any], ...] = (self.sm.keys, self.sm.values,
                                                       self.sm.confusables)
                for table in tables:
                    for stale in [p for p in table if p[:n] == child]:
                        del table[stale]
            if own is not None and id(key_node) not in own:
                inherited.add(key)
            if key in out:
                first = self.sm.keys.get(child, (0, 0))
                self.problems.append(Problem(
                    rule="yaml-duplicate-key",
                    message=f"duplicate key '{key}' (first defined on line {first[0]})",
                    path=_fmt(child), value=key, file=self.sm.file, line=line, column=col,
                    hint="remove one of the two entries; YAML keeps only the last one",
                ))
                continue
            self.sm.keys[child] = (line, col)
            out[key] = self.build(value_node, child)
        return out


_INT = "tag:yaml.org,2002:int"
_LEADING_ZERO = lazy(r"[-+]?0[0-7_]+")


def _surprising_int(text: str) -> str | None:
    """Why a plain scalar YAML 1.1 reads as an integer does not mean the number it looks
    like, or None: ``030`` is octal (24), ``1:30`` is base 60 (90). PyYAML's int resolver
    (YAML 1.1 int type, https://yaml.org/type/int.html) reads both; YAML 1.2 and most
    people read 30 and a time."""
    if _LEADING_ZERO.fullmatch(text):
        value = int(text.replace("_", ""), 8)
        looks = text.replace("_", "").lstrip("+-").lstrip("0") or "0"
        return f"YAML 1.1 reads {text} as the octal number {value}, not {looks}"
    if ":" in text:
        value = 0
        for part in text.lstrip("+-").split(":"):
            value = value * 60 + int(part.replace("_", ""))
        return (f"YAML 1.1 reads {text} as the base-60 number "
                f"{-value if text.startswith('-') else value}")
    return None


class _NeedsPaths(Exception):
    """The quick pass met something to report: build the part again with positions."""


_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_ScalarNode = yaml.ScalarNode
_MappingNode = yaml.MappingNode


class _Quick:
    """Builds a document's data without positions (the common case: nothing to report).

    Keeps, for :class:`_Tree`, the keys as read (in the order of its flattened pairs) of
    each mapping with a merge key or a key that is not a plain string (the others' keys are
    their key nodes' text, read when a position is asked for) and, for mappings that had
    merge keys, which key nodes are its own; and whether
    any plain string scalar is one :func:`~mldiag_provision.yaml11.confusable` flags
    (``confusable``: False means the document's ``confusables`` table is empty, so lint need
    not build it). Raises :class:`_NeedsPaths` wherever :class:`_Builder` would report a
    problem.

    Speed (issue 16): scalars, most of a manifest, are read inline by the mapping and
    sequence loops (no call per string value); a mapping without a merge (``<<``) or value
    (``=``) key takes a loop without the merge bookkeeping; a text without an anchor has no
    alias, so no collection is visited twice and the recursion guard is skipped. All give
    what :meth:`build` gives (tests/unit/test_loader_fastpath.py).
    """

    def __init__(self, loader: yaml.SafeLoader, decimal: bool = False,
                 aliases: bool = True) -> None:
        self.loader = loader
        self.decimal = decimal
        self.aliases = aliases  # False: the text has no anchor, so no node is visited twice
        self.own: dict[int, set[int]] = {}
        self.keys: dict[int, list[str]] = {}
        self.count = 0
        self.active: set[int] = set()
        self.confusable = False

    def _plain(self, value: str) -> None:
        """Notes a plain string scalar that YAML 1.1 may read as another type."""
        if not self.confusable and confusable(value):
            self.confusable = True

    def build(self, node: yaml.Node) -> object:
        self.count += 1
        if self.count > MAX_NODES:
            raise _NeedsPaths
        if node.__class__ is _ScalarNode:
            return self._scalar(node)
        if not self.aliases:  # no alias, so no recursion to guard against
            return self._mapping(node) if node.__class__ is _MappingNode \
                else self._sequence(node)
        if id(node) in self.active:
            raise _NeedsPaths
        self.active.add(id(node))
        try:
            if node.__class__ is _MappingNode:
                return self._mapping(node)
            return self._sequence(node)
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode) -> object:
        if node.tag == _STR:
            value = node.value
            if not node.style and (value in WORDS or value[0] in NUMERIC_START):
                self._plain(value)
            return value
        if self.decimal and node.tag == _INT and _surprising_int(node.value):
            raise _NeedsPaths
        construct = _SCALAR_CONSTRUCTORS.get(node.tag)
        try:
            return construct(self.loader, node) if construct is not None \
                else self.loader.construct_object(node, deep=True)
        except (yaml.constructor.ConstructorError, ValueError, TypeError, OverflowError):
            raise _NeedsPaths from None

    def _sequence(self, node: yaml.Node) -> list[object]:
        out: list[object] = []
        append = out.append
        scalars = 0
        for item in node.value:
            if item.__class__ is _ScalarNode:  # build(item), inline
                scalars += 1
                if item.tag == _STR:
                    value = item.value
                    if not item.style and (value in WORDS or value[0] in NUMERIC_START):
                        self._plain(value)
                    append(value)
                else:
                    append(self._scalar(item))
            else:
                append(self.build(item))
        self.count += scalars
        if self.count > MAX_NODES:
            raise _NeedsPaths
        return out

    def _key(self, key_node: yaml.Node) -> str:
        try:
            return _key(self.loader, key_node)
        except (yaml.constructor.ConstructorError, ValueError, TypeError, OverflowError):
            raise _NeedsPaths from None

    def _mapping(self, node: yaml.MappingNode) -> dict[str, object]:
        own: set[int] | None = self.own.get(id(node)) if self.own else None
        if own is None:
            for k, _ in node.value:
                if k.tag in _FLATTENED:
                    own = self.own.setdefault(id(node), {id(k) for k, _ in node.value
                                                         if k.tag != _MERGE})
                    break
        if own is not None:
            self.loader.flatten_mapping(node)
            return self._merged(node, own)
        out: dict[str, object] = {}
        read = False  # a key YAML read as another type than a string (1, true, ...)
        scalars = 0
        for key_node, value_node in node.value:
            if key_node.tag == _STR and key_node.__class__ is _ScalarNode:
                key = key_node.value
            else:
                key = self._key(key_node)
                read = True
            if key in out:
                raise _NeedsPaths  # a duplicate key
            if value_node.__class__ is _ScalarNode:  # build(value_node), inline
                scalars += 1
                if value_node.tag == _STR:
                    value = value_node.value
                    if not value_node.style and (value in WORDS or value[0] in NUMERIC_START):
                        self._plain(value)
                    out[key] = value
                else:
                    out[key] = self._scalar(value_node)
            else:
                out[key] = self.build(value_node)
        self.count += scalars
        if self.count > MAX_NODES:
            raise _NeedsPaths
        if read:  # else _Tree reads the keys off the key nodes, when a position is asked for
            self.keys[id(node)] = list(out)  # no duplicate, so the keys in their order
        return out

    def _merged(self, node: yaml.MappingNode, own: set[int]) -> dict[str, object]:
        """A flattened mapping that had merge (``<<``) or value (``=``) keys."""
        out: dict[str, object] = {}
        keys: list[str] = []
        inherited: set[str] = set()
        for key_node, value_node in node.value:
            key = self._key(key_node)
            keys.append(key)
            if key in inherited:
                inherited.discard(key)
                del out[key]
            if id(key_node) not in own:
                inherited.add(key)
            if key in out:
                raise _NeedsPaths  # a duplicate key
            out[key] = self.build(value_node)
        self.keys[id(node)] = keys
        return out


if TYPE_CHECKING:  # annotations only: nothing for validate to import or build
    from collections.abc import Callable

    from mldiag_provision.recipe.sourcemap import LazyPositions

    # what load_documents(positions=...) is: (loader, decimal, document's root node) -> its
    # data, the _Quick that built it (for _Tree) and its positions, None where the tree
    # answers
    Located = Callable[[Any, bool, Any], tuple[object, "_Quick", LazyPositions | None]]


class _Tree:
    """Positions of a quickly built document, found in its node tree when asked
    (:class:`~mldiag_provision.recipe.sourcemap.LazyPositions`).

    A mapping key names the pair :class:`_Builder` keeps: its first own occurrence, else the
    last one merged in (``<<``)."""

    __slots__ = ("_entries", "confusable", "keys", "offset", "own", "root")

    def __init__(self, root: yaml.Node, quick: _Quick) -> None:
        self.root = root
        self.own = quick.own
        self.keys = quick.keys
        self.confusable = quick.confusable
        self.offset = 0
        self._entries: dict[int, dict[str, tuple[yaml.Node, yaml.Node]]] = {}

    def shift_lines(self, offset: int) -> None:
        self.offset += offset

    def _pos(self, node: yaml.Node) -> tuple[int, int]:
        mark = node.start_mark
        return (mark.line + 1 + self.offset, mark.column + 1)

    def _keys(self, node: yaml.MappingNode) -> list[str]:
        """A mapping's keys as the quick pass read them, in the order of its pairs: kept by
        the pass where a key is not a plain string or the mapping had merge keys, else the
        key nodes' own text (issue 32: no list per mapping while loading)."""
        found = self.keys.get(id(node))
        if found is None:
            found = self.keys[id(node)] = [k.value for k, _ in node.value]
        return found

    def entries(self, node: yaml.MappingNode) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """The pairs of a mapping by key, as the builder kept them."""
        found = self._entries.get(id(node))
        if found is None:
            found = {}
            own = self.own.get(id(node))
            owned: set[str] = set()
            for pair, key in zip(node.value, self._keys(node), strict=True):
                if key in owned:
                    continue
                found[key] = pair
                if own is None or id(pair[0]) in own:
                    owned.add(key)
            self._entries[id(node)] = found
        return found

    def find(self, path: Path) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        node = self.root
        key: yaml.Node | None = None
        for part in path:
            if isinstance(node, yaml.MappingNode):
                if not isinstance(part, str):
                    return None, None
                keys = self._keys(node)
                if len(keys) <= 16 and id(node) not in self.own:
                    # no merge and (the quick pass refuses duplicates) no repeated key: the
                    # pair is the one at the key's index, found without entries()' table
                    if part not in keys:  # a missing key (has_key asks) raises no ValueError
                        return None, None
                    key, node = node.value[keys.index(part)]
                    continue
                pair = self.entries(node).get(part)
                if pair is None:
                    return None, None
                key, node = pair
            elif isinstance(node, yaml.SequenceNode):
                if not isinstance(part, int) or not 0 <= part < len(node.value):
                    return None, None
                key = node = node.value[part]
            else:
                return None, None
        return (self._pos(key) if key is not None else None), self._pos(node)

    def tables(self) -> tuple[dict[Path, tuple[int, int]], dict[Path, tuple[int, int]],
                              dict[Path, str]]:
        keys: dict[Path, tuple[int, int]] = {}
        values: dict[Path, tuple[int, int]] = {}
        confusables: dict[Path, str] = {}
        self._walk(self.root, (), keys, values, confusables)
        return keys, values, confusables

    def _walk(self, node: yaml.Node, path: Path, keys: dict[Path, tuple[int, int]],
              values: dict[Path, tuple[int, int]], confusables: dict[Path, str]) -> None:
        """Tables every position below ``node`` (a method, not a closure that refers to
        itself: such a cycle kept the whole node tree alive until the next collection)."""
        values.setdefault(path, self._pos(node))
        if isinstance(node, yaml.MappingNode):
            for key, (key_node, value_node) in self.entries(node).items():
                child = (*path, key)
                keys[child] = self._pos(key_node)
                self._walk(value_node, child, keys, values, confusables)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                keys.setdefault((*path, i), self._pos(item))
                self._walk(item, (*path, i), keys, values, confusables)
        elif node.tag == _STR and not getattr(node, "style", None):
            kind = confusable(node.value)
            if kind:
                confusables[path] = kind


def _quick_part(text: str, file: str, lines: list[str], first_index: int,
                decimal: bool = False,
                positions: Located | None = None) -> list[Document]:
    """Every document of ``text`` built by :class:`_Quick` (by ``positions``, where that is
    given and the text has no anchor).

    Raises:
      _NeedsPaths: a document has something to report, or the text does not parse.
    """
    docs: list[Document] = []
    aliases = "&" in text  # an alias needs an anchor (&name); without one no recursion
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                docs.append(Document(data=None, sourcemap=SourceMap(file=file, lines=lines),
                                     problems=[], index=first_index + len(docs)))
                continue
            lazy: LazyPositions | None = None
            if positions is not None and not aliases:
                data, quick, lazy = positions(loader, decimal, node)
            else:
                quick = _Quick(loader, decimal, aliases)
                data = quick.build(node)
            if lazy is None:
                lazy = _Tree(node, quick)
            docs.append(Document(data=data, sourcemap=SourceMap(
                file=file, lines=lines, lazy=lazy), problems=[],
                index=first_index + len(docs)))
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        raise _NeedsPaths from None
    finally:
        loader.dispose()
    return docs


def _fmt(path: Path) -> str:
    from mldiag_provision.recipe.sourcemap import format_path

    return format_path(path)


_DOC_START = lazy(r"^---(\s|$)")


def _shift(doc: Document, offset: int) -> Document:
    """Move a document parsed from a later part of the file to its lines in the whole file."""
    if offset == 0:
        return doc
    doc.sourcemap.shift_lines(offset)
    doc.problems = [dataclasses.replace(p, line=p.line + offset) if p.line else p
                    for p in doc.problems]
    return doc


def load_documents(text: str, file: str, *, decimal: bool = False,
                   positions: Located | None = None) -> list[Document]:
    """Parse every YAML document in ``text``.

    Returns one :class:`Document` per document. A syntax error yields a document whose
    ``data`` is ``None`` and whose ``problems`` holds the error; parsing then resumes at the
    next ``---`` line, so one broken document does not hide the ones after it. Never raises
    for bad input. ``decimal``: an integer YAML 1.1 reads in another base (octal ``030``,
    base-60 ``1:30``) is a ``yaml-value`` problem instead of a value. ``positions``: builds
    a document of a text without anchors in place of :class:`_Quick` (a subclass that also
    records its positions: lint's ``lint.positions.located``, flat arrays instead of the
    node tree), see :data:`Located`; where it gives no positions the tree answers.
    """
    lines = text.splitlines()
    docs: list[Document] = []
    offset = 0
    while True:
        part = "\n".join(lines[offset:]) if offset else text
        found, error_line = _load_part(part, file, lines, len(docs), decimal, positions)
        docs.extend(_shift(d, offset) for d in found)
        if error_line is None:
            return docs
        resume = next((n for n in range(offset + error_line, len(lines))
                       if n > offset and _DOC_START.match(lines[n])), None)
        if resume is None:
            return docs
        offset = resume


def _load_part(text: str, file: str, lines: list[str], first_index: int,
               decimal: bool = False,
               positions: Located | None = None) -> tuple[list[Document], int | None]:
    """Documents of ``text``; and the 0-based line of a syntax error in it, if one stopped it."""
    if QUICK:
        try:
            return _quick_part(text, file, lines, first_index, decimal, positions), None
        except _NeedsPaths:
            pass
    docs: list[Document] = []
    loader = _Loader(text)
    error_line: int | None = None
    try:
        while loader.check_node():
            node = loader.get_node()
            sm = SourceMap(file=file, lines=lines)
            builder = _Builder(loader, sm, decimal)
            try:
                data = builder.build(node, ()) if node is not None else None
            except _TooLarge as exc:
                mark = exc.node.start_mark
                docs.append(Document(data=None, sourcemap=sm, problems=[Problem(
                    rule="yaml-too-large", message=exc.message, file=file,
                    line=mark.line + 1, column=mark.column + 1,
                    hint="write the values out instead of nesting aliases")],
                    index=first_index + len(docs)))
                break
            docs.append(Document(data=data, sourcemap=sm, problems=builder.problems,
                                 index=first_index + len(docs)))
    except yaml.YAMLError as exc:
        problem = _yaml_error_problem(exc, file, text)
        docs.append(Document(data=None, sourcemap=SourceMap(file=file, lines=lines),
                             problems=[problem], index=first_index + len(docs)))
        error_line = max(problem.line - 1, 0)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # what the per-value handling above cannot attribute to one value
        docs.append(Document(data=None, sourcemap=SourceMap(file=file, lines=lines),
                             problems=[Problem(rule="yaml-value", file=file,
                                               message=f"YAML value cannot be read: {exc}",
                                               hint="quote the value to keep it a string")],
                             index=first_index + len(docs)))
    finally:
        loader.dispose()
    return docs, error_line


def load_single(text: str, file: str) -> Document:
    """Parse a file that must hold exactly one YAML document (a recipe). An integer written
    so that YAML 1.1 reads another number (``030``, ``1:30``) is a problem here."""
    docs = load_documents(text, file, decimal=True)
    if not docs:
        return Document(None, SourceMap(file=file, lines=text.splitlines()), [Problem(
            rule="recipe-empty", message="the file is empty", file=file, line=1, column=1,
            hint="start from an example: mldiag-provision schema, or recipes/*.yaml",
        )])
    if len(docs) > 1 and not any(d.problems for d in docs):
        second = docs[1].sourcemap.locate((), prefer_value=True)
        docs[0].problems.append(Problem(
            rule="recipe-multiple-documents",
            message=f"a recipe file holds one YAML document; found {len(docs)}",
            file=file, line=second[0], column=second[1],
            hint="split the documents into one recipe file each",
        ))
    first_error = next((d for d in docs if d.data is None and d.problems), None)
    return first_error or docs[0]
