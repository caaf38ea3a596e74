"""Values -> HCL literals, escaped so that no recipe value can change the HCL's structure.

Terraform string literals treat ``\\``, ``"``, ``${`` and ``%{`` specially
(https://developer.hashicorp.com/terraform/language/expressions/strings); we escape all of
them, and every control character, so a value is always one inert string.
"""

from __future__ import annotations

import dataclasses
import re

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


# characters hcl_string writes as they are (the loop below escapes all others)
_AS_IS = re.compile(r'[^\\"\x00-\x1f\x7f\ud800-\udfff]*\Z')


def hcl_string(value: str) -> str:
    """A Python string -> a quoted HCL string literal with nothing interpolated."""
    value = str(value)
    if _AS_IS.match(value):  # nothing to escape (most values): no loop per character
        return '"' + value.replace("${", "$${").replace("%{", "%%{") + '"'
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    text = "".join(out)
    # template sequences: "${" -> "$${" and "%{" -> "%%{" (literal, never interpolated)
    text = text.replace("${", "$${").replace("%{", "%%{")
    return f'"{text}"'


def hcl_value(value: object) -> str:
    """Python value -> HCL expression (one line): str, bool, int, float, None, list or tuple,
    dict, and a dataclass instance as the object of its fields in declaration order (the
    plan's parts, e.g. a Helm chart or a boot disk).

    Raises:
      TypeError: any other type.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return hcl_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(hcl_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = ", ".join(f"{hcl_string(str(k))} = {hcl_value(v)}" for k, v in value.items())
        return "{ " + items + " }"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return hcl_value({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    raise TypeError(f"cannot render {type(value).__name__} as HCL")
