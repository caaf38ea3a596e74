"""Hostile values stay inert: in HCL (render.hcl.hcl_value) and in the Kubernetes YAML."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import hcl2
import pytest
import yaml

from mldiag_provision.render.hcl import hcl_string, hcl_value
from stack_support import RECIPES, render_files, terraform_binary

HOSTILE = [
    'say "hi"',
    "back\\slash \\n not a newline",
    "${var.x}",
    "$${var.x} already escaped",
    "%{ if true }yes%{ endif }",
    "%%{ literal }",
    "line1\nline2\r\nline3",
    "tab\there",
    "---\nkind: Secret",
    "key: value",
    "# not a comment",
    "// nor this /* nor */ this",
    "<<EOF\nheredoc\nEOF",
    "\x00\x01\x1b[31mred\x7f",
    "\" } resource \"x\" \"y\" { a = \"",
    "ünïcödé 🚀 \u2028",
    "$",
    "%",
    "${",
    "",
]

# python-hcl2 8.1.4 cannot lex an escaped "$${" / "%%{" that is not closed by "}" later in
# the same literal (Terraform can: see the terraform test below). Such values are checked
# with the decoder and Terraform, but not fed to hcl2.
def _hcl2_can_lex(value: str) -> bool:
    for opener in ("${", "%{"):
        start = value.find(opener)
        while start != -1:
            if "}" not in value[start:]:
                return False
            start = value.find(opener, start + 1)
    return True


HCL2_OK = [v for v in HOSTILE if _hcl2_can_lex(v)]

_SIMPLE = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}


def decode_hcl_literal(literal: str) -> str:
    """Decode a quoted HCL string literal *that has no live template sequence*.

    Fails when it finds an unescaped ``${`` or ``%{``: that is exactly what must never come
    out of hcl_value.
    """
    assert literal[0] == literal[-1] == '"', literal
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1]
            if nxt == "u":
                out.append(chr(int(body[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_SIMPLE[nxt])
            i += 2
            continue
        if ch in "$%" and body.startswith(ch * 2 + "{", i):
            out.append(ch + "{")
            i += 3
            continue
        assert not (ch in "$%" and body.startswith(ch + "{", i)), (
            f"live template sequence at {i} in {literal!r}")
        assert ch not in '"\n\r', f"raw {ch!r} inside {literal!r}"
        out.append(ch)
        i += 1
    return "".join(out)


@pytest.mark.parametrize("value", HOSTILE)
def test_hcl_literal_is_inert_and_round_trips(value: str) -> None:
    literal = hcl_value(value)
    assert literal == hcl_string(value)
    assert decode_hcl_literal(literal) == value
    if not _hcl2_can_lex(value):
        return
    parsed = hcl2.loads(f"locals {{\n  v = {literal}\n}}\n")
    # python-hcl2 8.x hands back the literal as written: one string, nothing interpolated
    assert parsed["locals"][0]["v"] == literal


def test_hostile_dict_keys_and_lists_parse() -> None:
    value = {v: [v, 1, True, None] for v in HCL2_OK}
    parsed = hcl2.loads(f"locals {{\n  m = {hcl_value(value)}\n}}\n")
    m = parsed["locals"][0]["m"]
    assert len(m) == len(HCL2_OK) >= len(HOSTILE) - 3
    # keys are written with hcl_string, so they also decode back to the hostile values
    decoded = {decode_hcl_literal(k) for k in m}
    assert decoded == set(HCL2_OK)


def _terraform_eval(tf: str, tmp_path: Path, body: str) -> object:
    """Apply a provider-less root module and read ``output "v"`` back as JSON: Terraform's
    own reading of the literal (offline; local state in tmp_path)."""
    (tmp_path / "main.tf").write_text(body, encoding="utf-8")
    env = {**os.environ, "TF_IN_AUTOMATION": "1", "TF_DATA_DIR": str(tmp_path / ".tfdata"),
           "CHECKPOINT_DISABLE": "1"}
    for args in (["fmt", "-check", "-diff", "main.tf"],
                 ["apply", "-auto-approve", "-input=false", "-no-color"]):
        proc = subprocess.run([tf, f"-chdir={tmp_path}", *args], capture_output=True,
                              text=True, timeout=120, env=env)
        assert proc.returncode == 0, f"terraform {args[0]}: {proc.stdout}\n{proc.stderr}"
    proc = subprocess.run([tf, f"-chdir={tmp_path}", "output", "-json", "v"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.terraform
def test_terraform_reads_back_exactly_the_hostile_values(tmp_path: Path) -> None:
    tf = terraform_binary()
    if tf is None:
        return
    values = [v for v in HOSTILE if "\x00" not in v]  # Terraform strings cannot hold NUL
    body = ("locals {\n"
            + "".join(f"  v{i} = {hcl_value(v)}\n" for i, v in enumerate(values))
            + f"  m = {hcl_value({v: v for v in values})}\n"
            + "}\n\n"
            + 'output "v" {\n  value = ['
            + ", ".join(f"local.v{i}" for i in range(len(values)))
            + ", local.m]\n}\n")
    # fmt aligns the "=" of the locals itself; write the file as terraform fmt would
    lines = body.split("\n")
    width = max(len(f"v{i}") for i in range(len(values)))
    body = "\n".join(
        (f"  {ln.split(' = ', 1)[0].strip():<{width}} = {ln.split(' = ', 1)[1]}"
         if ln.startswith("  v") or ln.startswith("  m =") else ln) for ln in lines)
    got = _terraform_eval(tf, tmp_path, body)
    assert got[:-1] == values
    assert got[-1] == {v: v for v in values}


def test_hcl_value_types() -> None:
    assert hcl_value(None) == "null"
    assert hcl_value(True) == "true" and hcl_value(False) == "false"
    assert hcl_value(3) == "3"
    assert hcl_value([]) == "[]" and hcl_value({}) == "{}"
    with pytest.raises(TypeError):
        hcl_value(object())


def test_hcl_value_dataclass_is_the_object_of_its_fields_in_order() -> None:
    """A plan part renders as the HCL object of its fields, declaration order, nested parts
    and tuples included: exactly what the dict with those keys renders as."""
    from mldiag_provision.plan.agents import HelmChartPlan, HelmValue

    chart = HelmChartPlan(chart="c", repository=None, version=HOSTILE[2], namespace="ns",
                          set=(HelmValue(name="a.b", value=HOSTILE[0]),))
    as_dict = {"chart": "c", "repository": None, "version": HOSTILE[2], "namespace": "ns",
               "set": [{"name": "a.b", "value": HOSTILE[0]}]}
    assert hcl_value(chart) == hcl_value(as_dict)
    assert hcl_value(chart).startswith('{ "chart" = "c", "repository" = null, ')
    with pytest.raises(TypeError):
        hcl_value(HelmChartPlan)  # the class itself is no value


YAML_HOSTILE = [v for v in HOSTILE if v and "\x00" not in v and "\x1b" not in v
                and "\x7f" not in v and "\x01" not in v]


def _hostile_recipe() -> str:
    recipe = next(r for r in RECIPES if "v5e" in r.name)
    doc = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    w = doc["spec"]["workloads"][0]
    w["command"] = ["sh", "-c", "echo '$HOME' \"quoted\" # not a comment"]
    w["args"] = YAML_HOSTILE
    w["env"] = {f"HOSTILE_{i}": v for i, v in enumerate(YAML_HOSTILE)}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def test_k8s_yaml_gives_back_exactly_the_hostile_strings() -> None:
    files = render_files(text=_hostile_recipe())
    name = next(r for r in files if r.startswith("k8s/workloads/"))
    docs = list(yaml.safe_load_all(files[name].decode("utf-8")))
    assert len(docs) == 1, "a '---' inside a value must not start a new document"
    job = docs[0]
    assert job["kind"] == "Job"
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["sh", "-c", "echo '$HOME' \"quoted\" # not a comment"]
    assert container["args"] == YAML_HOSTILE
    env = {e["name"]: e["value"] for e in container["env"]
           if "value" in e and not e["name"].startswith("MLDIAG_")}
    assert env == {f"HOSTILE_{i}": v for i, v in enumerate(YAML_HOSTILE)}


def test_hostile_workload_values_never_reach_hcl() -> None:
    files = render_files(text=_hostile_recipe())
    for rel, data in files.items():
        if rel.endswith(".tf"):
            text = data.decode("utf-8")
            assert "%{ if true }" not in text and "heredoc" not in text, rel
            hcl2.loads(text)


def _hcl_string_per_character(value: str) -> str:
    """hcl_string as it was written before its fast path (issue 16): one step per character."""
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
    return '"' + "".join(out).replace("${", "$${").replace("%{", "%%{") + '"'


def test_hcl_string_fast_path_writes_what_the_loop_writes() -> None:
    import random

    from mldiag_provision.render.hcl import _AS_IS, hcl_string

    rng = random.Random(16)
    alphabet = ["a", " ", "$", "{", "%", "}", "\\", '"', "\n", "\r", "\t", "\x00", "\x1f",
                "\x7f", "\x80", "é", "\ud800", "\udfff", "\U0001f642"]
    fast = 0
    for _ in range(20000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert hcl_string(s) == _hcl_string_per_character(s), repr(s)
        fast += _AS_IS.match(s) is not None
    assert fast > 2000, fast
