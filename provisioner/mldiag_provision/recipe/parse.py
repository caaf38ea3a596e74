"""Recipe text -> :class:`~mldiag_provision.recipe.model.Recipe`, with every problem located.

Pydantic's errors are translated into :class:`~mldiag_provision.errors.Problem` objects that
name the file, line, column, field path, the bad value, what is allowed and a "did you mean"
hint. All problems are reported at once; nothing here raises for bad input.
"""

from __future__ import annotations

import datetime
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from mldiag_provision.errors import Problem
from mldiag_provision.recipe import patterns
from mldiag_provision.recipe import validator as _validator
from mldiag_provision.recipe.loader import load_single
from mldiag_provision.recipe.sourcemap import Path, SourceMap, format_path
from mldiag_provision.recipe.validator import allowed_keys as allowed_keys
from mldiag_provision.suggest import suggest

if typing.TYPE_CHECKING:
    from mldiag_provision.recipe.model import Recipe

_PATTERN_WORDS = {
    patterns.DNS_LABEL: "lowercase letters, digits and '-', starting with a letter and not "
                     "ending with '-'",
    r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$": "a Google Cloud project id: 6-30 lowercase letters, "
                                        "digits or '-', starting with a letter",
    r"^[a-z]+-[a-z]+[0-9]+$": "a Google Cloud region such as us-central1",
    r"^[a-z]+-[a-z]+[0-9]+-[a-z0-9]+$": "a Google Cloud zone such as us-central1-a",
    r"^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$": "a service account id: 6-30 lowercase letters, "
                                           "digits or '-', starting with a letter",
    r"^[a-zA-Z0-9_.]{3,64}$": "a custom role id: 3-64 letters, digits, '_' or '.'",
    patterns.GCE_NAME: "a Compute Engine name: lowercase letter first, then lowercase letters, "
                    "digits or '-', at most 63 characters",
    patterns.ENV_NAME: "an environment variable name: letters, digits, '_', '-' or '.', not "
                    "starting with a digit",
    patterns.IMAGE_REF: "a container image reference such as "
                     "us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG (lowercase repository path)",
    patterns.RFC3339_UTC: 'an RFC 3339 time in UTC, quoted, such as "2026-01-10T04:00:00Z"',
    patterns.RECURRENCE: "FREQ=DAILY, or FREQ=WEEKLY;BYDAY= with days such as SA,SU",
    patterns.DURATION: "a whole number and one unit (s, m, h or d), such as 36h",
    patterns.BUCKET: "a bucket name: 3-222 lowercase letters, digits, '-', '_' or '.', "
                     "starting and ending with a letter or digit",
    patterns.MOUNT_OPTION: "one gcsfuse option, such as implicit-dirs or file-mode=644 "
                           "(letters, digits, - _ . : = /)",
    patterns.ABSOLUTE_PATH: "an absolute path such as /data",
    patterns.DNS_SUBDOMAIN: "a Kubernetes object name: lowercase letters, digits, '-' and '.', "
                            "starting and ending with a letter or digit",
    patterns.DISK_TYPE: "a Compute Engine disk type such as pd-balanced or hyperdisk-balanced",
}

_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
    "list_type": "a list",
}


@dataclass
class ParsedRecipe:
    """Outcome of parsing one recipe file; ``recipe`` is ``None`` when it did not validate.
    ``data``: the YAML data ``recipe`` was validated from (plain dicts, lists and scalars;
    ``None`` without a recipe): preflight keys the findings it reuses on it."""

    file: str
    recipe: Recipe | None
    sourcemap: SourceMap
    problems: list[Problem] = field(default_factory=list)
    data: object = None


def _describe(value: object) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "an empty value (null)"
    return f"{value!r} ({type(value).__name__})"


def _raw_scalar(sm: SourceMap, line: int, col: int) -> str | None:
    """The plain scalar as written at ``line``:``col`` (up to a comment or the line's end)."""
    text = sm.source_line(line)
    if text is None or col < 1:
        return None
    raw = text[col - 1:].split(" #", 1)[0].strip()
    return raw or None


class _Where(TypedDict):
    """Where a problem is: the Problem fields path, file, line and column."""

    path: str
    file: str
    line: int
    column: int


def _problem_from_error(err: Mapping[str, Any], sm: SourceMap) -> Problem:
    """One pydantic-core error (``ValidationError.errors()`` item) as a positioned Problem."""
    loc: Path = tuple(err["loc"])
    if loc and loc[-1] == "[key]":  # a mapping key (e.g. an env var name) failed its pattern
        loc = loc[:-1]
        err = {**err, "input": loc[-1] if loc else err.get("input")}
    etype = err["type"]
    value = err.get("input")
    path = format_path(loc)
    # a bad value points at the value; an unknown or missing key at the key (or its parent)
    line, col = sm.locate(loc, prefer_value=etype not in ("extra_forbidden", "missing"))
    kw: _Where = {"path": path, "file": sm.file, "line": line, "column": col}
    if etype in ("extra_forbidden", "missing"):
        return _key_problem(etype, loc, kw)
    found = (_constraint_problem(etype, value, err.get("ctx") or {}, kw)
             or _type_problem(etype, value, sm, kw))
    if found is not None:
        return found
    return Problem(rule="recipe-value", message=err.get("msg", "invalid value"),
                   value=value if not isinstance(value, (dict, list)) else None, **kw)


def _key_problem(etype: str, loc: Path, kw: _Where) -> Problem:
    """An unknown key (``extra_forbidden``: the keys allowed there, the nearest one) or a
    missing required key (``missing``) at ``loc``."""
    key = loc[-1]
    if etype == "extra_forbidden":
        keys = allowed_keys(loc[:-1])
        return Problem(rule="recipe-unknown-key", message=f"unknown key '{key}'", value=key,
                       expected="one of: " + ", ".join(keys) if keys else None,
                       hint=suggest(key, keys) or "remove it, or check the indentation", **kw)
    return Problem(rule="recipe-missing-key", message=f"required key '{key}' is missing",
                   expected=f"a value for '{key}'",
                   hint=(f"add '{key}:' under '{format_path(loc[:-1])}'" if loc[:-1]
                         else f"add '{key}:' at the top level"),
                   **kw)


def _constraint_problem(etype: str, value: Any, ctx: Mapping[str, Any], kw: _Where
                        ) -> Problem | None:
    """A value of the right type that breaks its field's constraint (pydantic-core's
    ``ctx``): not one of the allowed values, the wrong pattern (in words,
    :data:`_PATTERN_WORDS`), too long, too short or out of range; None for other errors."""
    if etype in ("literal_error", "enum"):
        options = [o.strip().strip("'") for o in
                   str(ctx.get("expected", "")).replace(" or ", ", ").split(",")]
        options = [o for o in options if o]
        return Problem(rule="recipe-value", message=f"{_describe(value)} is not allowed here",
                       value=value, expected="one of: " + ", ".join(options),
                       hint=suggest(value, options), **kw)
    if etype == "string_pattern_mismatch":
        words = _PATTERN_WORDS.get(ctx.get("pattern", ""), f"pattern {ctx.get('pattern')}")
        return Problem(rule="recipe-format", message=f"{_describe(value)} has the wrong format",
                       value=value, expected=words, **kw)
    if etype in ("string_too_long", "too_long"):
        limit = ctx.get("max_length")
        return Problem(rule="recipe-too-long",
                       message=f"{_describe(value)} is longer than {limit} characters"
                       if etype == "string_too_long" else f"more than {limit} entries",
                       value=value, expected=f"at most {limit}", **kw)
    if etype in ("string_too_short", "too_short"):
        return Problem(rule="recipe-too-short", message="must not be empty", value=value,
                       expected=f"at least {ctx.get('min_length', 1)}", **kw)
    if etype in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        ops = {"ge": ">=", "le": "<=", "gt": ">", "lt": "<"}
        expected = " and ".join(f"{ops[k]} {v}" for k, v in ctx.items())
        return Problem(rule="recipe-range", message=f"{_describe(value)} is out of range",
                       value=value, expected=expected, **kw)
    return None


def _type_problem(etype: str, value: Any, sm: SourceMap, kw: _Where) -> Problem | None:
    """A value of the wrong type (:data:`_TYPE_WORDS`): an unquoted timestamp YAML read as a
    date (quoted as written), a number or boolean where text belongs (quote it), or any
    other; None for other errors."""
    if etype == "string_type" and isinstance(value, (datetime.date, datetime.datetime)):
        # YAML reads an unquoted 2026-01-10T04:00:00Z (or 2026-01-10) as a timestamp
        raw = _raw_scalar(sm, kw["line"], kw["column"]) or value.isoformat()
        return Problem(rule="recipe-type",
                       message=f"the unquoted {raw} is read by YAML as a timestamp, not text",
                       value=raw, expected=_TYPE_WORDS[etype], hint=f'quote it: "{raw}"', **kw)
    if etype in _TYPE_WORDS:
        hint = None
        if etype == "string_type" and isinstance(value, (int, float, bool)):
            hint = (f"YAML read this as {type(value).__name__} {value!r}; put it in quotes "
                    "to keep it a string")
        return Problem(rule="recipe-type", message=f"{_describe(value)} is the wrong type",
                       value=value if not isinstance(value, (dict, list)) else None,
                       expected=_TYPE_WORDS[etype], hint=hint, **kw)
    return None


def parse_recipe_text(text: str, file: str) -> ParsedRecipe:
    """Load and model-check one recipe; every problem carries its position. Never raises."""
    doc = load_single(text, file)
    parsed = ParsedRecipe(file=file, recipe=None, sourcemap=doc.sourcemap,
                          problems=list(doc.problems))
    if doc.data is None:
        if not parsed.problems:
            parsed.problems.append(Problem(rule="recipe-empty", message="the file is empty",
                                           file=file, line=1, column=1))
        return parsed
    if not isinstance(doc.data, dict):
        parsed.problems.append(Problem(
            rule="recipe-type", message=f"a recipe is a mapping; found {_describe(doc.data)}",
            file=file, line=1, column=1, expected="apiVersion, kind, metadata, spec"))
        return parsed
    try:
        parsed.recipe = _validator.validate(doc.data)
    except _validator.ValidationError as exc:  # pydantic-core's, imported only when raised
        # a value YAML itself could not read is already reported at its path
        unreadable = {p.path for p in doc.problems if p.rule == "yaml-value"}
        parsed.problems.extend(p for p in (_problem_from_error(e, doc.sourcemap)
                                           for e in exc.errors()) if p.path not in unreadable)
    if any(p.severity.value == "error" for p in parsed.problems):
        parsed.recipe = None
    if parsed.recipe is not None:
        parsed.data = doc.data
    return parsed
