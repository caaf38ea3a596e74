"""Values reach the Pulumi program's source only as Python literals (py_value): any recipe
text reads back as itself and cannot change the code; helm --set pairs become the values tree
helm builds; Terraform's template strip markers behave as the HCL spec says."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mldiag_provision.engines.pulumi_program import helm_values, py_value, render_tftpl

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text())
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)


@given(values)
def test_any_value_reads_back_as_itself(value: object) -> None:
    source = py_value(value, indent=4)
    assert ast.literal_eval(source) == value
    # as the right-hand side of an assignment it is one expression statement, nothing else
    tree = ast.parse(f"X = {source}\n")
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Assign)


def test_hostile_text_stays_a_string() -> None:
    text = '"\nimport os; os.system("x")  # \\\n\'\'\' """'
    assert ast.literal_eval(py_value(text)) == text


def test_helm_set_pairs_to_values() -> None:
    class S:
        def __init__(self, name: str, value: str) -> None:
            self.name, self.value = name, value

    got = helm_values([S("installCRDs", "true"), S("global.leaderElection.namespace", "cm"),
                       S("a.args", "{--x=1,--y}"), S("replicas", "2"), S("empty", "{}"),
                       {"name": "tag", "value": "v1.0"}])
    # "{}" is a list of one empty string in helm's strvals parser (valList appends the runes
    # before '}' even when there are none)
    assert got == {"installCRDs": True, "global": {"leaderElection": {"namespace": "cm"}},
                   "a": {"args": ["--x=1", "--y"]}, "replicas": 2, "empty": [""],
                   "tag": "v1.0"}
    # indexes and escapes as helm reads them (issue 28: the recipe's Diagon values)
    assert helm_values([S("list[1]", "x"), S("tol[0].key", "k"),
                        S("nodeSelector.kubernetes\\.io/os", "linux"),
                        S("args", "a\\,b=c"), S("braces", "\\{p\\,q\\}")]) == {
        "list": [None, "x"], "tol": [{"key": "k"}],
        "nodeSelector": {"kubernetes.io/os": "linux"}, "args": "a,b=c", "braces": "{p,q}"}
    with pytest.raises(ValueError):
        helm_values([S("list", "{a,b")])  # "list must terminate with '}'"
    with pytest.raises(ValueError):
        helm_values([S("a[x]", "v")])


def test_template_strip_markers_take_one_line_break() -> None:
    tpl = "a\n%{ if on ~}\n  b\n\n%{ endif ~}\n\nc ${x} $${y}\n"
    assert render_tftpl(tpl, {"on": True, "x": 1}) == "a\n  b\n\n\nc 1 ${y}\n"
    assert render_tftpl(tpl, {"on": False, "x": True}) == "a\n\nc true ${y}\n"
    with pytest.raises(ValueError):
        render_tftpl("${missing}", {})
