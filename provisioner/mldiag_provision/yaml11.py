"""Strings that a YAML 1.1 reader does not read back as the same string.

Kubernetes reads manifests with ``sigs.k8s.io/yaml``, which converts YAML to JSON through its
fork of go-yaml v2 (``sigs.k8s.io/yaml/goyaml.v2``, "based on v2.4.0":
https://github.com/kubernetes/kubernetes/blob/master/vendor/sigs.k8s.io/yaml/goyaml.v2/README.md).
go-yaml v2 resolves plain scalars by YAML 1.1 rules plus Go's number syntax
(https://github.com/go-yaml/yaml/blob/v2.4.0/resolve.go): ``y``/``n``/``yes``/``no``/``on``/
``off`` (any of the spec's spellings) are booleans, ``~``/``null``/empty are null, anything Go's
``strconv.ParseInt(s, 0, 64)`` accepts after dropping ``_`` is an integer (``0o17``, ``0x1F``,
``0b101``), and anything matching ``[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?`` is
a float (``08``, ``1e3``, ``+.5``). The YAML 1.1 type definitions themselves:
https://yaml.org/type/bool.html, https://yaml.org/type/int.html,
https://yaml.org/type/float.html, https://yaml.org/type/null.html,
https://yaml.org/type/timestamp.html, https://yaml.org/type/merge.html.

PyYAML (what this tool emits with) follows YAML 1.1 too but without ``y``/``n`` and with a
narrower float syntax, so it writes ``y``, ``08`` or ``1e3`` unquoted; an env value ``"y"``
then reaches the API server as ``true``. :func:`confusable` is deliberately broad (quoting a
string that did not need it costs nothing).

Line breaks: YAML 1.1 also treats U+0085 (NEL), U+2028 and U+2029 as line breaks
(https://yaml.org/spec/1.1/#id868851, "b-char"), so in a plain, single-quoted or block
scalar they are folded or normalised; only a double-quoted scalar with escapes keeps them.
"""

from __future__ import annotations

import functools

from mldiag_provision.lazyre import lazy

_BOOLS = frozenset([
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
    "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"])
_NULLS = frozenset(["", "~", "null", "Null", "NULL"])
_SPECIAL = frozenset(["<<", "="])  # merge key and YAML 1.1 "value" key
# Every text :func:`confusable` flags is one of WORDS or starts with one of NUMERIC_START (the
# infinity, NaN, integer, float, base-60 and timestamp forms below start with a sign, a dot,
# a digit, or an '_' that the integer and float forms drop): a test cheaper than the call,
# for loops over every scalar of a document.
WORDS = _BOOLS | _NULLS | _SPECIAL
NUMERIC_START = frozenset("-+._0123456789")
_INF_NAN = lazy(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
# Go's ParseInt(s, 0, 64) forms (after go-yaml drops '_'), plus YAML 1.1's own int forms
_INT = lazy(r"[-+]?(?:0[bB][01]+|0[oO][0-7]+|0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_SEXAGESIMAL = lazy(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
# go-yaml's yamlStyleFloat, and YAML 1.1's float (which allows "1." and "." forms)
_FLOAT = lazy(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_FLOAT11 = lazy(r"[-+]?(?:[0-9][0-9_]*)?\.[0-9_.]*(?:[eE][-+]?[0-9]+)?")
_TIMESTAMP = lazy(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:$|[Tt\s])")
# characters a YAML reader changes unless they are escaped in a double-quoted scalar:
# line breaks other than \n, and control characters (C0 other than \t \n, DEL, C1, BOM)
_NEEDS_ESCAPE = lazy("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


@functools.lru_cache(maxsize=4096)
def confusable(text: str) -> str | None:
    """The type a YAML 1.1 / go-yaml v2 reader gives the plain scalar ``text`` when it is not
    a string: ``"boolean"``, ``"null"``, ``"integer"``, ``"float"``, ``"timestamp"`` or
    ``"merge key"``; ``None`` when it stays a string.

    Remembered (a pure function of the text): up to six regular expressions per scalar that
    starts like a number, and manifests and recipes repeat such values (``2x2x4``, ``-c``,
    versions, quantities; issue 16)."""
    if text in _BOOLS:
        return "boolean"
    if text in _NULLS:
        return "null"
    if text in _SPECIAL:
        return "merge key"
    if _INF_NAN.fullmatch(text):
        return "float"
    bare = text.replace("_", "")
    if (bare and _INT.fullmatch(bare)) or _SEXAGESIMAL.fullmatch(text):
        return "integer"
    if bare and (_FLOAT.fullmatch(bare) or _FLOAT11.fullmatch(text)):
        return "float"
    if _TIMESTAMP.match(text):
        return "timestamp"
    return None


def needs_escape(text: str) -> bool:
    """True when ``text`` holds a character that only a double-quoted, escaped scalar keeps
    (NEL, LS, PS, CR, other control characters, a BOM)."""
    return _NEEDS_ESCAPE.search(text) is not None
