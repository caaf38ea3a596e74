"""Block-style YAML text of Kubernetes objects without PyYAML's per-node machinery (issue 16:
at scale, building a node per value and resolving every scalar's tag twice was most of
render's time even on libyaml's emitter).

Only the layout is written here; every scalar's text (plain, quoted or a ``|`` block) is what
PyYAML's own emitter writes for it, asked once per distinct value by :func:`emit`'s ``probe``
(one ``yaml.dump`` of a mapping of all the new values, memoised for the process). The layout
is PyYAML's block style with ``default_flow_style=False`` and an indent of 2:

- a mapping's keys at its indent; a nested mapping two further; an empty one ``{}``;
- a sequence inside a mapping at the mapping's indent (``indentless``), one inside a sequence
  two further, on the same line (``- - a``); an empty one ``[]``;
- a mapping inside a sequence starts on the ``- `` line (``- name: x``);
- a ``|`` block's lines two spaces in from the indent of the collection holding it;
- documents after the first start with ``---``.

:func:`emit` answers ``None`` (the caller then uses PyYAML) for anything outside what it is
sure of: a value that is not exactly a ``dict``, ``list``, ``str``, ``int``, ``bool`` or
``None``; a key that is not a non-empty ``str`` of at most 122 characters, or one with a
line break (PyYAML writes those as complex ``?`` keys); a document that is not a non-empty
mapping; a quoted scalar with a space on a line past the width (the emitter folds it; plain
scalars are folded here the way the emitter folds them). The caller admits only strings
that libyaml and the Python emitter write alike (``render.stack._c_safe_string``), so the
probe's answer is the same from either. tests/render/test_manifest_emitter.py compares this
writer with PyYAML's Python emitter on every golden manifest, every rendered example and
random documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Probe = Callable[[dict[Any, Any]], str]
"""Renders one block mapping with PyYAML (the caller's dumper and options): text."""

_Scalar = tuple[str, tuple[str, ...]]
"""A scalar's text: its first line (after ``key: `` or ``- ``) and the lines of a ``|`` block
below it (without indentation; empty for a one-line scalar)."""

_UNSAFE: _Scalar = ("", ("?",))  # marker: PyYAML folded or wrote it as a complex key

_values: dict[tuple[type, Any], _Scalar] = {}
_keys: dict[str, str | None] = {}

_TOKENS = re.compile(r" +|[^ ]+")
_SCALARS = (str, int, bool, type(None))  # floats go to PyYAML (0.0 == -0.0 as a key here)


class _Refused(Exception):
    """Something :func:`emit` does not write itself."""


def _collect(node: object, new_values: dict[tuple[type, Any], Any],
             new_keys: dict[str, None], admit: Callable[[str], bool]) -> None:
    """Gather the keys and scalars below ``node`` not met before; refuses other types and
    strings ``admit`` refuses."""
    t = type(node)
    if t is dict:
        for k, v in node.items():  # type: ignore[attr-defined]
            if k not in _keys and k not in new_keys:
                if type(k) is not str or not 0 < len(k) <= 122 or not admit(k):
                    raise _Refused
                new_keys[k] = None
            _collect(v, new_values, new_keys, admit)
    elif t is list:
        for v in node:  # type: ignore[attr-defined]
            _collect(v, new_values, new_keys, admit)
    elif t in _SCALARS:
        key = (t, node)
        if key not in _values and key not in new_values:
            if t is str and not admit(node):  # type: ignore[arg-type]
                raise _Refused
            new_values[key] = node
    else:
        raise _Refused


def _probe_values(new: dict[tuple[type, Any], Any], probe: Probe, width: int,
                  plain: Callable[[str], bool]) -> None:
    """Fill :data:`_values` for ``new`` from one dump of ``{"k0": v0, "k1": v1, ...}``
    (strings ``plain`` vouches for are written as themselves without asking)."""
    keys = []
    for key, value in new.items():
        if key[0] is str and plain(value):
            _values[key] = (value, ())
        else:
            keys.append(key)
    if not keys:
        return
    text = probe({f"k{i}": new[key] for i, key in enumerate(keys)})
    entries: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("k"):
            entries.append([line])
        elif entries and line.startswith("  "):
            entries[-1].append(line[2:])
        else:  # nothing else is expected from a mapping of scalars
            raise _Refused
    if len(entries) != len(keys):
        raise _Refused
    for i, (key, lines) in enumerate(zip(keys, entries, strict=True)):
        head = f"k{i}: "
        if not lines[0].startswith(head):
            raise _Refused
        first = lines[0][len(head):]
        if len(lines) == 1 or first in ("|", "|-"):
            _values[key] = (first, tuple(lines[1:]))
        elif type(new[key]) is str and " ".join([first, *lines[1:]]) == new[key]:
            _values[key] = (new[key], ())  # a plain scalar folded at the width here
        else:
            _values[key] = _UNSAFE  # a quoted scalar folded at the width


def _probe_keys(new: dict[str, None], probe: Probe, plain: Callable[[str], bool]) -> None:
    """Fill :data:`_keys` for ``new`` from one dump of ``{key0: 0, key1: 0, ...}``; a key
    PyYAML writes as a complex ``? `` key (with a line break) is None (the empty key and
    keys over 122 characters, also complex there, never reach here)."""
    names = []
    for name in new:
        if "\n" in name:
            _keys[name] = None
        elif plain(name):
            _keys[name] = name
        else:
            names.append(name)
    if not names:
        return
    lines = probe(dict.fromkeys(names, 0)).splitlines()
    if len(lines) != len(names):
        raise _Refused
    for name, line in zip(names, lines, strict=True):
        _keys[name] = line[:-3] if line.endswith(": 0") and not line.startswith("? ") \
            else None


class _Writer:
    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[str] = []

    def mapping(self, node: dict[str, Any], indent: int, prefix: str) -> None:
        pad = " " * indent
        first = True
        for k, v in node.items():
            key = _keys[k]
            if key is None:
                raise _Refused
            self.value(v, indent, (prefix if first else pad) + key + ":", True)
            first = False

    def sequence(self, node: list[Any], indent: int, prefix: str) -> None:
        pad = " " * indent
        first = True
        for v in node:
            self.value(v, indent, (prefix if first else pad) + "-", False)
            first = False

    def value(self, v: Any, indent: int, head: str, in_mapping: bool) -> None:
        t = type(v)
        if t is dict:
            if not v:
                self.lines.append(head + " {}")
            elif in_mapping:
                self.lines.append(head)
                self.mapping(v, indent + 2, " " * (indent + 2))
            else:
                self.mapping(v, indent + 2, head + " ")
        elif t is list:
            if not v:
                self.lines.append(head + " []")
            elif in_mapping:  # indentless: the dashes at the mapping's indent
                self.lines.append(head)
                self.sequence(v, indent, " " * indent)
            else:
                self.sequence(v, indent + 2, head + " ")
        else:
            first, block = _values[(t, v)]
            if block:
                if first not in ("|", "|-"):
                    raise _Refused
                self.lines.append(head + " " + first)
                pad = " " * (indent + 2)
                self.lines.extend(pad + line for line in block)
            else:
                line = head + " " + first
                if len(line) > self.width and " " in first:
                    if first != v:  # quoted: not folded here
                        raise _Refused
                    self.fold(line, len(head) + 1, indent + 2)
                else:
                    self.lines.append(line)

    def fold(self, line: str, start: int, indent: int) -> None:
        """A plain scalar starting at column ``start`` of ``line``, broken as PyYAML's and
        libyaml's ``write_plain`` break it: at a single space, in place of it, once the
        column before that space is past the width; the rest at ``indent``."""
        out = line[:start]
        column = start
        for token in _TOKENS.findall(line, start):
            if token == " " and column > self.width:
                self.lines.append(out)
                out, column = " " * indent, indent
            else:
                out += token
                column += len(token)
        self.lines.append(out)


def prime(files: list[list[dict[str, Any]]], probe: Probe, *, width: int,
          admit: Callable[[str], bool], plain: Callable[[str], bool]) -> None:
    """Ask the probe about the new scalars of many files at once (one ``yaml.dump``), so
    that :func:`emit` of each finds them known; a file :func:`emit` would refuse is left
    out. The same arguments as :func:`emit`."""
    new_values: dict[tuple[type, Any], Any] = {}
    new_keys: dict[str, None] = {}
    for docs in files:
        had_values, had_keys = len(new_values), len(new_keys)
        try:
            for doc in docs:
                if type(doc) is not dict:
                    raise _Refused
                _collect(doc, new_values, new_keys, admit)
        except _Refused:  # forget what this file added (dicts keep their order)
            for key in list(new_values)[had_values:]:
                del new_values[key]
            for name in list(new_keys)[had_keys:]:
                del new_keys[name]
    try:
        if new_values:
            _probe_values(new_values, probe, width, plain)
        if new_keys:
            _probe_keys(new_keys, probe, plain)
    except _Refused:
        pass  # each file asks again for itself


def emit(docs: list[dict[str, Any]], probe: Probe, *, width: int,
         admit: Callable[[str], bool], plain: Callable[[str], bool]) -> str | None:
    """``docs`` as block-style YAML, the text ``yaml.dump_all`` writes with the probe's
    dumper and options (``sort_keys=False``, ``default_flow_style=False``, indent 2, ``width``);
    ``None`` where this writer cannot be sure (see the module's docstring) or where a key or
    string is one ``admit`` refuses (asked once per string the process has not written).
    ``plain``: strings the dumper is known to write as themselves, on one line, as a key
    or a value (not probed: one ``yaml.dump`` per file was a seventh of a large render)."""
    try:
        new_values: dict[tuple[type, Any], Any] = {}
        new_keys: dict[str, None] = {}
        for doc in docs:
            if type(doc) is not dict or not doc:
                return None
            _collect(doc, new_values, new_keys, admit)
        if new_values:
            _probe_values(new_values, probe, width, plain)
        if new_keys:
            _probe_keys(new_keys, probe, plain)
        writer = _Writer(width)
        out: list[str] = []
        for i, doc in enumerate(docs):
            writer.lines = ["---"] if i else []
            writer.mapping(doc, 0, "")
            out.append("\n".join(writer.lines))
        return "\n".join(out) + "\n"
    except _Refused:
        return None
