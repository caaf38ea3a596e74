"""The Rego engine's own process: ``python -m mldiag_provision.policy.worker``.

rego-cpp is native code (through ``regopy``); a crash in it must not take the tool down, so
it runs here, in a child process (:mod:`mldiag_provision.policy.engine`). Protocol: two JSON
lines on stdin, the second sent once the parent has built the input (the engine starts and
compiles the policies meanwhile)::

    {"modules": [{"name": "policies/x.rego", "source": "package ..."}],
     "packages": ["mldiag.rules.x", ...]}
    {"input": {...}}

and one JSON object on stdout: ``{"ok": true, "engine": "regopy 1.5.2", "packages":
{pkg: {"value": <data.pkg or null>, "error": null | "text"}}}``, or ``{"ok": false, "error":
"text", "module": name}`` when a module does not compile. Built-in errors are strict
(``strict_built_in_errors``): a rule whose built-in fails is reported as failing, never as
passing (rego-cpp's default, like OPA's, makes it undefined).
"""

from __future__ import annotations

import json
import sys
from typing import Any

# rego-cpp 1.5.2 loses or double-applies the escaping of '"', '\\' and control characters
# in strings (in its JSON output, json.marshal, and node values alike; tests/policy). The
# worker therefore hands the engine strings without them: each such character becomes a
# private-use code point (U+E000 + its code for control characters, U+E022 for '"', U+E05C
# for '\\'), and every string of the answer is mapped back. Policies see these characters
# in place of quotes and backslashes; none of the bundled policies compares them.
_ENCODE = {**{chr(c): chr(0xE000 + c) for c in range(0x20)}, '"': "\ue022", "\\": "\ue05c"}
_DECODE = {v: k for k, v in _ENCODE.items()}
_ENC_TABLE = str.maketrans(_ENCODE)
_DEC_TABLE = str.maketrans(_DECODE)


def _encode(value: Any) -> Any:
    if isinstance(value, str):
        return value.translate(_ENC_TABLE)
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {_encode(k): _encode(v) for k, v in value.items()}
    return value


def _decode_string(raw: str) -> str:
    # a string the engine computed comes back wrapped in '"' (with the encoding above, no
    # string of the input can start and end with one)
    if len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
        raw = raw[1:-1]
    return raw.translate(_DEC_TABLE)


def _to_python(node: Any) -> Any:
    """A rego-cpp result node as Python data, read node by node: regopy 1.5.2's JSON text
    of a result does not escape quotes, backslashes or newlines inside strings (a resource
    address such as ``module.x["a"]`` breaks it), while the nodes hold the raw values."""
    from regopy import NodeKind
    from regopy.rego_shared import rego_node_get, rego_node_size, rego_node_type, rego_node_value

    kind = NodeKind(rego_node_type(node))
    size = rego_node_size(node)
    children = [rego_node_get(node, i) for i in range(size)]
    if kind in (NodeKind.Term, NodeKind.Scalar):
        return _to_python(children[0]) if children else None
    if kind is NodeKind.Object:
        out: dict[str, Any] = {}
        for item in children:
            key = _to_python(rego_node_get(item, 0))
            out[key if isinstance(key, str) else json.dumps(key, sort_keys=True)] = \
                _to_python(rego_node_get(item, 1))
        return out
    if kind in (NodeKind.Array, NodeKind.Set):
        return [_to_python(c) for c in children]
    if kind is NodeKind.String:
        return _decode_string(rego_node_value(node))
    if kind is NodeKind.Int:
        return int(rego_node_value(node))
    if kind is NodeKind.Float:
        return float(rego_node_value(node))
    if kind is NodeKind.Boolean:
        return rego_node_value(node) == "true"
    if kind in (NodeKind.True_, NodeKind.False_):
        return kind is NodeKind.True_
    if kind in (NodeKind.Null, NodeKind.Undefined):
        return None
    raise ValueError(f"unexpected result node kind {kind.name}")


def _query(interp: Any, pkg: str) -> tuple[Any, str | None]:
    """``data.<pkg>`` as Python data, or an error text. Through regopy's C API bindings:
    its ``Interpreter.query`` raises a JSON error when rego-cpp answers with an error node
    (e.g. "Function not found") and mangles strings (see :func:`_to_python`)."""
    from regopy.rego_shared import (
        rego_output_binding_at_index,
        rego_output_ok,
        rego_output_string,
        rego_query,
    )

    impl = rego_query(interp._impl, f"x := data.{pkg}")
    if not rego_output_ok(impl):
        return None, ("a built-in function failed or a runtime error occurred (strict "
                      f"built-in errors); engine output: {rego_output_string(impl).strip()}")
    text = rego_output_string(impl).strip()
    if text == "undefined":
        return None, None
    if text.startswith("(error"):
        return None, " ".join(text.split())[:500]
    binding = rego_output_binding_at_index(impl, 0, "x")
    if not binding:
        return None, None
    return _to_python(binding), None


def main() -> int:
    # line 1: the modules and packages (compiled while the parent still builds the input)
    request = json.loads(sys.stdin.readline())
    # rego-cpp prints its diagnostics on the process's stdout: keep fd 1 for them (sent to
    # stderr) and answer on a private copy of the original stdout
    import os

    answer_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(answer_fd, "w", encoding="utf-8")
    try:
        import regopy
        from regopy import Interpreter
    except ImportError as exc:  # pragma: no cover - reported by the parent
        json.dump({"ok": False, "error": f"regopy cannot be imported: {exc}"}, sys.stdout)
        return 0
    interp = Interpreter()
    interp.strict_built_in_errors = True
    for module in request["modules"]:
        try:
            interp.add_module(module["name"], module["source"])
        except Exception as exc:  # regopy.RegoError: a syntax / well-formedness error
            json.dump({"ok": False, "module": module["name"],
                       "error": " ".join(str(exc).split())[:2000]}, sys.stdout)
            return 0
    line = sys.stdin.readline()  # line 2: the input document
    if not line.strip():
        return 0  # the parent gave up (it failed building the input)
    interp.set_input(_encode(json.loads(line)["input"]))
    out: dict[str, Any] = {}
    for pkg in request["packages"]:
        try:
            value, error = _query(interp, pkg)
        except Exception as exc:  # the binding failed: report it for this package only
            value, error = None, f"{type(exc).__name__}: {exc}"
        out[pkg] = {"value": value, "error": error}
    version = regopy.rego_version() if callable(regopy.rego_version) else "?"
    json.dump({"ok": True, "engine": f"regopy {version}", "packages": out}, sys.stdout)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
