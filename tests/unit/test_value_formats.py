"""Formats and escaping of free text that reaches another syntax (issue 28, item 5).

- Helm ``set`` (helm_release ``set`` list; the provider parses ``NAME=VALUE`` with Helm's
  strvals parser, TF-HELM-SET): a Diagon chart value reaches the chart as the very string the
  recipe wrote, checked against :func:`strvals`, a port of the parser's rules (HELM-STRVALS,
  https://github.com/helm/helm/blob/main/pkg/strvals/parser.go; HELM-SET,
  https://helm.sh/docs/intro/using_helm/#the-format-and-limitations-of---set); a value path
  that the parser would split differently is a preflight error.
- The state backend's prefix: Cloud Storage object-name rules (GCS-OBJECT-NAMING,
  https://cloud.google.com/storage/docs/objects#naming), and URL syntax under the Pulumi
  engine's ``gs://`` backend URL (RFC 3986).
- Chart repository / chart URL and Slurm's ``pipIndexUrl``: RFC 3986 absolute URLs
  (https://www.rfc-editor.org/rfc/rfc3986; pip: https://pip.pypa.io/en/stable/cli/pip_install/).
- kubeconfig context: no documented format (KUBECONFIG); control characters and surrounding
  spaces are a warning.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.pipeline import check_text
from mldiag_provision.plan.agents import helm_set_literal
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render.hcl import hcl_string
from mldiag_provision.render.stack import render_stack

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog()
GKE = yaml.safe_load((ROOT / "recipes" / "tpu-v5e-manual-agents-standard.yaml").read_text())
SLURM = yaml.safe_load((ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml").read_text())
EXISTING = yaml.safe_load((ROOT / "recipes" / "existing-gke-cluster.yaml").read_text())

# Hostile text: Helm's separators and list braces, escapes, quotes, shell and template
# syntax, HCL interpolation, YAML indicators, line breaks, NUL-free control characters,
# non-ASCII and a long value.
HOSTILE = ["a,b=c", "{p,q}", "{", "}", "}{", "a\\", "\\", "\\,", "a\\,b", "x=y", "a.b[0]=c",
           "${var.x}", "%{ if true }x%{ endif }", "$(rm -rf /)", "`id`", "'quoted'", '"dq"',
           "- item", "key: value", "# comment", "&anchor *alias", "two words", " lead",
           "trail ", "line\nbreak", "tab\there", "bell\a", "ünïcødé ✓", "null", "true", "",
           "{a,b},c", "a" * 300]


# -- a port of the rules of Helm's --set parser (pkg/strvals/parser.go) -----------------------

def _until(text: str, i: int, stops: str) -> tuple[str, str | None, int]:
    """Runes from ``i`` up to the first unescaped stop: (runes, the stop or None at the end,
    the index after it). A backslash takes the next rune literally (runesUntil)."""
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch in stops:
            return "".join(out), ch, i + 1
        if ch == "\\":
            i += 1
            if i == len(text):
                return "".join(out), None, i
            out.append(text[i])
        else:
            out.append(ch)
        i += 1
    return "".join(out), None, i


def strvals(line: str) -> dict[str, Any]:
    """``NAME=VALUE[,NAME=VALUE...]`` as Helm's ``ParseIntoString`` reads it (values kept as
    strings; names split at '.'; no list indexes: the keys used here have none). Raises
    ValueError where Helm returns an error."""
    data: dict[str, Any] = {}
    i = 0
    while i < len(line):
        node = data
        while True:
            key, stop, i = _until(line, i, "=[,.")
            if stop == ".":
                node = node.setdefault(key, {})
                continue
            if stop != "=":
                raise ValueError(f"key {key!r} has no value")
            break
        if i < len(line) and line[i] == "{":  # valList
            items: list[str] = []
            i += 1
            while True:
                item, stop, i = _until(line, i, ",}")
                if stop is None:
                    raise ValueError("list must terminate with '}'")
                items.append(item)
                if stop == "}":
                    if i < len(line) and line[i] == ",":
                        i += 1
                    break
            node[key] = items
        else:
            value, _, i = _until(line, i, ",")
            node[key] = value
    return data


def test_the_port_reads_helms_documented_examples() -> None:
    """HELM-SET's own examples: commas separate pairs, braces make lists, a backslash escapes
    a comma, dots nest."""
    assert strvals("name=value1,name2=value2") == {"name": "value1", "name2": "value2"}
    assert strvals("name={a,b,c}") == {"name": ["a", "b", "c"]}
    assert strvals("name=value1\\,value2") == {"name": "value1,value2"}
    assert strvals("outer.inner=value") == {"outer": {"inner": "value"}}
    assert strvals("nodeSelector.kubernetes\\.io/role=master") == {
        "nodeSelector": {"kubernetes.io/role": "master"}}
    # what the issue saw: unescaped, the recipe's value becomes another value
    assert strvals("args=a,b=c") == {"args": "a", "b": "c"}
    assert strvals("list={p,q}") == {"list": ["p", "q"]}


@pytest.mark.parametrize("value", HOSTILE, ids=[repr(v)[:24] for v in HOSTILE])
def test_helm_literal_reaches_the_chart_verbatim(value: str) -> None:
    assert strvals(f"args={helm_set_literal(value)}") == {"args": value}


# -- the rendered stack -----------------------------------------------------------------------

def _check(recipe: dict[str, Any]) -> Any:
    return check_text(yaml.safe_dump(recipe, sort_keys=False, allow_unicode=True),
                      "recipe.yaml", CATALOG)


def _render(recipe: dict[str, Any]) -> tuple[Any, dict[str, bytes]]:
    res = _check(recipe)
    assert res.parsed.recipe is not None and res.report.ok, [
        (p.rule, p.message) for p in res.report.problems if p.severity is Severity.ERROR]
    plan = build_plan(res.parsed.recipe, res.shapes, CATALOG)
    return plan, render_stack(plan)


def _with_diagon(**diagon: Any) -> dict[str, Any]:
    recipe = copy.deepcopy(GKE)
    recipe["spec"]["diagnostics"]["diagon"] = {"chart": "diagon",
                                               "repository": "https://charts.example.com",
                                               **diagon}
    return recipe


def test_every_hostile_diagon_value_reaches_helm_as_written() -> None:
    values = {f"v{i}": v for i, v in enumerate(HOSTILE)}
    plan, files = _render(_with_diagon(values=values))
    diagon = plan.agents.charts.diagon
    assert [s.name for s in diagon.set] == list(values)
    got = {}
    for s in diagon.set:
        got.update(strvals(f"{s.name}={s.value}"))
        # the HCL literal carries the escaped value (render/hcl.py escapes for HCL)
        assert hcl_string(s.value).encode() in files["agents/main.tf"]
    assert got == values


def _problems(recipe: dict[str, Any], path_prefix: str) -> list[Problem]:
    return [p for p in _check(recipe).report.problems
            if p.rule == "value-format" and p.path.startswith(path_prefix)]


BAD_KEYS = ["a..b", "a,b", "a=b", "a b", ".a", "a.", "a[x]", "a]", "", "tab\tkey", "a[0"]
GOOD_KEYS = ["image.repository", "tolerations[0].key", "nodeSelector.kubernetes\\.io/os",
             "env[1].value", "a_b-c", "x"]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_a_value_path_helm_would_split_otherwise_is_an_error(key: str) -> None:
    [p] = _problems(_with_diagon(values={key: "v"}), "spec.diagnostics.diagon.values")
    assert p.severity is Severity.ERROR and p.value == key
    assert p.expected and "Helm value path" in p.expected
    assert p.hint and "backslash" in p.hint and p.line > 0
    assert p.source == "https://github.com/helm/helm/blob/main/pkg/strvals/parser.go"


def test_value_paths_helm_reads_as_written_pass() -> None:
    assert _problems(_with_diagon(values=dict.fromkeys(GOOD_KEYS, "v")), "spec") == []


@pytest.mark.parametrize(("field", "value"), [
    ("repository", "charts.example.com"),            # no scheme
    ("repository", "ftp://charts.example.com"),      # not http(s)/oci
    ("repository", "https://charts.example.com/a b"),  # a space
    ("repository", "https://"),                      # no host
    ("repository", "https://charts.example.com/\n"),  # a line break
    ("repository", "https://charts.example.com/ä"),  # must be percent-encoded
    ("chart", "oci://reg istry.io/diagon"),
    ("chart", "my chart"),
    ("chart", " diagon"),
    ("version", "1.0\n0"),
])
def test_chart_fields_with_a_broken_format_are_errors(field: str, value: str) -> None:
    [p] = _problems(_with_diagon(**{field: value}), f"spec.diagnostics.diagon.{field}")
    assert p.severity is Severity.ERROR and p.value == value and p.expected and p.hint


@pytest.mark.parametrize("repository", ["https://charts.example.com",
                                        "oci://us-docker.pkg.dev/p/charts",
                                        "https://charts.example.com/a%20b/?x=1"])
def test_chart_urls_pass(repository: str) -> None:
    assert _problems(_with_diagon(repository=repository), "spec.diagnostics.diagon") == []


def _with_backend(prefix: str, engine: str = "terraform") -> dict[str, Any]:
    recipe = copy.deepcopy(GKE)
    recipe["spec"]["engine"] = {"name": engine, "backend": {"type": "gcs", "bucket":
                                                           "my-tf-state", "prefix": prefix}}
    return recipe


@pytest.mark.parametrize(("prefix", "says"), [
    ("stacks\nprod", "line feeds"),
    ("stacks\rprod", "carriage returns"),
    ("x" * 1010, "at most 1024"),
    ("é" * 505, "at most 1024"),  # 1010 bytes of UTF-8: the limit counts bytes
    (".well-known/acme-challenge/state", "cannot start with"),
])
def test_a_prefix_cloud_storage_refuses_is_an_error(prefix: str, says: str) -> None:
    [p] = _problems(_with_backend(prefix), "spec.engine.backend.prefix")
    assert p.severity is Severity.ERROR and says in p.message and p.expected
    assert p.source == "https://cloud.google.com/storage/docs/objects#naming"


@pytest.mark.parametrize("prefix", ["state#1", "a[b]", "x*", "what?", "bell\a"])
def test_a_prefix_cloud_storage_advises_against_is_a_warning(prefix: str) -> None:
    [p] = _problems(_with_backend(prefix), "spec.engine.backend.prefix")
    assert p.severity is Severity.WARNING


@pytest.mark.parametrize("prefix", ["a?b", "a#b", "100%", "two words"])
def test_a_prefix_that_changes_the_pulumi_backend_url_is_an_error(prefix: str) -> None:
    found = _problems(_with_backend(prefix, "pulumi"), "spec.engine.backend.prefix")
    assert any(p.severity is Severity.ERROR and "Pulumi backend URL" in p.message
               for p in found), found


@pytest.mark.parametrize("prefix", ["team/ml-stacks", "stacks/prod_2026", "ünïcødé/state",
                                    "x" * 1000])
def test_plain_prefixes_pass_and_render(prefix: str) -> None:
    recipe = _with_backend(prefix)
    assert _problems(recipe, "spec") == []
    _, files = _render(recipe)
    assert hcl_string(prefix).encode() in files["versions.tf"]


def _with_context(context: str) -> dict[str, Any]:
    recipe = copy.deepcopy(EXISTING)
    orch = recipe["spec"]["orchestrator"]
    orch["workloadIdentity"] = False
    orch["kubeconfigContext"] = context
    return recipe


@pytest.mark.parametrize("context", [" gke_ctx", "gke_ctx ", "", "ctx\x1b[31m", "a\nb"])
def test_a_kubeconfig_context_no_one_can_type_is_a_warning(context: str) -> None:
    [p] = _problems(_with_context(context), "spec.orchestrator.kubeconfigContext")
    # no documented format (KUBECONFIG, fact confidence M): never an error
    assert p.severity is Severity.WARNING and p.value == context and p.expected


@pytest.mark.parametrize("context", ["gke_my-ml-project_us-central1_research",
                                     "arn:aws:eks:us-east-1:1:cluster/x", "kind-kind",
                                     "user@cluster", "ctx,with{odd}chars"])
def test_kubeconfig_contexts_pass_and_are_escaped_for_hcl(context: str) -> None:
    recipe = _with_context(context)
    assert _problems(recipe, "spec") == []
    _, files = _render(recipe)
    assert hcl_string(context).encode() in files["agents/main.tf"]


def _with_index(url: str) -> dict[str, Any]:
    recipe = copy.deepcopy(SLURM)
    recipe["spec"]["slurm"]["pipIndexUrl"] = url
    return recipe


@pytest.mark.parametrize("url", ["pypi.example.com/simple", "ftp://pypi.example.com/simple",
                                 "https://pypi example.com/simple", "https:///simple",
                                 "https://pypi.example.com/simple\n--extra-index-url x",
                                 "https://pypi.example.com/<script>", "-i https://x",
                                 "file:///tmp/index"])
def test_a_pip_index_that_is_not_an_http_url_is_an_error(url: str) -> None:
    [p] = _problems(_with_index(url), "spec.slurm.pipIndexUrl")
    assert p.severity is Severity.ERROR and p.value == url
    assert p.expected and "https://" in p.expected and p.hint


@pytest.mark.parametrize("url", ["https://pypi.org/simple", "http://10.0.0.5:8080/simple/",
                                 "https://user:p%40ss@mirror.example.com/pypi/simple"])
def test_pip_index_urls_pass(url: str) -> None:
    assert _problems(_with_index(url), "spec") == []


@pytest.mark.parametrize("value", HOSTILE, ids=[repr(v)[:24] for v in HOSTILE])
def test_the_pulumi_program_builds_the_same_values(value: str) -> None:
    """The Pulumi engine has no ``set``: it builds the values tree helm would build from the
    same escaped pairs (engines/pulumi_program.helm_values), so both engines give the chart
    the recipe's string (typed as helm types ``true``/``null``, as --set does)."""
    from mldiag_provision.engines.pulumi_program import _helm_scalar, helm_values
    from mldiag_provision.plan.agents import HelmValue

    got = helm_values([HelmValue("image.args", helm_set_literal(value)),
                       HelmValue("tolerations[0].key", helm_set_literal(value))])
    assert got == {"image": {"args": _helm_scalar(value)},
                   "tolerations": [{"key": _helm_scalar(value)}]}
