"""Rendered Kubernetes YAML keeps every scalar's type and text through a YAML 1.1 reader of
the kind Kubernetes uses (issue 15).

Kubernetes reads manifests with sigs.k8s.io/yaml, i.e. its fork of go-yaml v2.4.0
(https://github.com/kubernetes/kubernetes/blob/master/vendor/sigs.k8s.io/yaml/goyaml.v2/README.md).
No Go toolchain runs here, so :class:`Yaml11Reader` is a test reader written from the YAML 1.1
type definitions (https://yaml.org/type/bool.html, int.html, float.html, null.html,
timestamp.html, merge.html) plus the two forms go-yaml v2 adds through Go's number parsing
(https://github.com/go-yaml/yaml/blob/v2.4.0/resolve.go: ``strconv.ParseInt(s, 0, 64)``
accepts ``0o17``; ``yamlStyleFloat`` accepts ``1e3`` and ``08``). It is independent of the
emitter's own check (mldiag_provision.yaml11): it only *reads*.

Every leaf is compared with the value the renderer meant to write: strings must come back as
the same string, numbers and booleans as the same type.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file, check_text
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render import k8s
from mldiag_provision.render.stack import render_stack
from stack_support import RECIPES

from .test_escaping import HOSTILE


class Typed:
    """A scalar the YAML 1.1 reader resolved to a non-string type."""

    def __init__(self, kind: str, text: str) -> None:
        self.kind, self.text = kind, text

    def __repr__(self) -> str:
        return f"<{self.kind} {self.text!r}>"


class Yaml11Reader(yaml.SafeLoader):
    """PyYAML's parser (a YAML 1.1 scanner: NEL, LS and PS are line breaks) with the YAML 1.1
    implicit types of yaml.org/type and go-yaml v2's number forms."""


Yaml11Reader.yaml_implicit_resolvers = {}
_TYPES = {
    "bool": r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
    "int": (r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
            r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"
            r"|[-+]?0o[0-7_]+"),  # go-yaml v2: Go's ParseInt base 0
    "float": (r"[-+]?(?:[0-9][0-9_]*)?\.[0-9.]*(?:[eE][-+][0-9]+)?"
              r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
              r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
              r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"),  # yamlStyleFloat
    "null": r"~|null|Null|NULL|",
    "timestamp": (r"[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?"
                  r"(?:(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?"
                  r"(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?"),
    "merge": r"<<",
}
for _kind, _regex in _TYPES.items():
    _tag = f"tag:yaml.org,2002:{_kind}"
    Yaml11Reader.add_implicit_resolver(_tag, re.compile(f"^(?:{_regex})$"), None)
    Yaml11Reader.add_constructor(
        _tag, lambda loader, node, kind=_kind: Typed(kind, loader.construct_scalar(node)))


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if value is None:
        return "null"
    return type(value).__name__


def mismatches(meant: Any, read: Any, path: str = "") -> list[str]:
    """Where the 1.1 reading differs from what was meant (type of every leaf, text of every
    string)."""
    if isinstance(meant, dict):
        if not isinstance(read, dict) or set(map(str, meant)) != set(map(str, read)):
            return [f"{path}: keys {sorted(map(str, meant))} read as {read!r}"[:300]]
        keyed = {str(k): v for k, v in read.items()}
        return [m for k, v in meant.items() for m in mismatches(v, keyed[str(k)], f"{path}.{k}")]
    if isinstance(meant, list):
        if not isinstance(read, list) or len(read) != len(meant):
            return [f"{path}: list read as {read!r}"[:300]]
        return [m for i, (a, b) in enumerate(zip(meant, read, strict=True))
                for m in mismatches(a, b, f"{path}[{i}]")]
    if isinstance(meant, str):
        return [] if read == meant else [f"{path}: {meant!r} read as {read!r}"]
    got = read.kind if isinstance(read, Typed) else _kind(read)
    return [] if got == _kind(meant) else [f"{path}: {meant!r} ({_kind(meant)}) read as {got}"]


def read_11(text: str) -> list[Any]:
    return [d for d in yaml.load_all(text, Loader=Yaml11Reader) if d is not None]


def _check_rendered(recipe_text: str | None = None, recipe: Path | None = None) -> int:
    """Render a recipe; every workload manifest must read back (YAML 1.1) as meant."""
    catalog = load_catalog()
    res = check_text(recipe_text, "<test>", catalog) if recipe is None \
        else check_file(str(recipe), catalog)
    assert res.parsed.recipe is not None and res.report.ok, res.report.errors
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    files = render_stack(plan)
    checked = 0
    for w in plan.workloads:
        meant = k8s.workload(plan, w)
        read = read_11(files[f"k8s/workloads/{w.name}.yaml"].decode("utf-8"))
        assert not mismatches(meant, read), mismatches(meant, read)
        checked += 1
    return checked


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_every_example_round_trips_through_yaml_1_1(recipe: Path) -> None:
    _check_rendered(recipe=recipe)


# strings YAML 1.1 / go-yaml v2 read as another type, and the line breaks it folds
CONFUSABLE = ["y", "Y", "n", "N", "yes", "No", "on", "OFF", "true", "False", "~", "null",
              "Null", "NULL", "08", "0o17", "0x1F", "0b101", "017", "1_000", "1e3", "1E-3",
              "+.5", "-.5", ".5", "1.", ".inf", "-.Inf", ".NaN", "12:30", "1:20:30.5",
              "2001-12-14", "2001-12-14t21:59:43.10-05:00", "<<", "-1", "+1", "0", "4.0"]
BREAKS = ["a\x85b", "\x85", "a\u2028b", "a\u2029b", "cr\rlf", "tab\tin", "x\x85\ny",
          "multi\nline\x85with nel\n"]
CORPUS = CONFUSABLE + BREAKS + [v for v in HOSTILE if v]


def _recipe_with(values: list[str]) -> str:
    recipe = next(r for r in RECIPES if "v5e" in r.name)
    doc = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    w = doc["spec"]["workloads"][0]
    w["args"] = values
    w["env"] = {f"V_{i}": v for i, v in enumerate(values)}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def test_injection_corpus_round_trips_through_yaml_1_1() -> None:
    usable = [v for v in CORPUS if check_text(_recipe_with([v]), "<t>").report.ok]
    assert set(CONFUSABLE + BREAKS) <= set(usable), "the recipe model must accept these"
    assert _check_rendered(_recipe_with(usable)) == 1


@pytest.mark.slow  # 150 rendered stacks
@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(CORPUS), st.text(min_size=1, max_size=12)),
                min_size=1, max_size=4))
def test_any_env_or_arg_text_round_trips(values: list[str]) -> None:
    text = _recipe_with(values)
    if not check_text(text, "<t>").report.ok:  # the recipe model refused a value: fine
        return
    _check_rendered(text)
