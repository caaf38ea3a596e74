"""Values Terraform marks sensitive, found in its JSON, and kept out of logs and terminals.

Terraform's machine-readable documents mark sensitivity beside the values
(https://developer.hashicorp.com/terraform/internals/json-format):

* ``terraform output -json``: ``{NAME: {"sensitive": true, "value": ...}}``;
* ``terraform show -json`` of a state or plan: outputs as above (``values.outputs``,
  ``prior_state``), resources' ``values`` with a ``sensitive_values`` mirror (``true`` where
  a value is sensitive), and in a plan ``before``/``after`` with ``before_sensitive`` /
  ``after_sensitive`` mirrors (``resource_changes``, ``output_changes``), and root
  ``variables`` whose declaration in ``configuration.root_module.variables`` says
  ``"sensitive": true``.

:func:`sensitive_values` collects every such leaf; :func:`redact` removes them from any text
(also their JSON-escaped form), so a value that also appears unmarked elsewhere (a resource
attribute that feeds a sensitive output) is hidden there too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MASK = "(sensitive value)"
MIN_LENGTH = 4  # shorter leaves ("1", "true") would redact ordinary text


def _leaves(value: Any, marks: Any, out: set[str]) -> None:
    """Leaves of ``value`` where ``marks`` (a sensitivity mirror, or True) says sensitive."""
    if marks is True:
        _all_leaves(value, out)
    elif isinstance(marks, dict) and isinstance(value, dict):
        for k, m in marks.items():
            if k in value:
                _leaves(value[k], m, out)
    elif isinstance(marks, list) and isinstance(value, list):
        for v, m in zip(value, marks, strict=False):
            _leaves(v, m, out)


def _all_leaves(value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _all_leaves(v, out)
    elif isinstance(value, list):
        for v in value:
            _all_leaves(v, out)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value)
        if len(text) >= MIN_LENGTH:
            out.add(text)


def sensitive_values(doc: Any) -> set[str]:
    """Every sensitive leaf (as text) in a Terraform JSON document; an empty set for
    anything else. Never raises."""
    out: set[str] = set()
    _walk(doc, out)
    if isinstance(doc, dict):
        variables = doc.get("variables")
        declared = ((doc.get("configuration") or {}).get("root_module") or {}).get("variables")
        if isinstance(variables, dict) and isinstance(declared, dict):
            for name, decl in declared.items():
                if isinstance(decl, dict) and decl.get("sensitive") is True:
                    v = variables.get(name)
                    if isinstance(v, dict):
                        _all_leaves(v.get("value"), out)
    return out


def _walk(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        if node.get("sensitive") is True and "value" in node:
            _all_leaves(node["value"], out)
        if "values" in node and "sensitive_values" in node:
            _leaves(node["values"], node["sensitive_values"], out)
        for key in ("before", "after"):
            if f"{key}_sensitive" in node and key in node:
                _leaves(node[key], node[f"{key}_sensitive"], out)
        for v in node.values():
            _walk(v, out)
    elif isinstance(node, list):
        for v in node:
            _walk(v, out)


def sensitive_in_json_text(text: str) -> set[str]:
    """:func:`sensitive_values` of a JSON text (empty when it is not JSON)."""
    try:
        return sensitive_values(json.loads(text))
    except ValueError:
        return set()


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its JSON-escaped form) replaced by :data:`MASK`."""
    forms: set[str] = set()
    for s in secrets:
        forms.add(s)
        escaped = json.dumps(s, ensure_ascii=False)[1:-1]
        forms.add(escaped)
        forms.add(json.dumps(s)[1:-1])
    for form in sorted(forms, key=len, reverse=True):
        if form and form in text:
            text = text.replace(form, MASK)
    return text
