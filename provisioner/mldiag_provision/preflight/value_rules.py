"""Preflight rule ``value-format`` (issue 28): free text the recipe hands on to another syntax
has that syntax's form, or is escaped for it where any value is legal.

====================================  =======================  ==============================
field                                 destination              check
====================================  =======================  ==============================
``diagnostics.diagon.values`` keys    Helm ``--set`` name      value path (helmSetName)
``diagnostics.diagon.values`` values  Helm ``--set`` value     none: escaped when rendered
                                                               (plan.agents.helm_set_literal)
``diagnostics.diagon.repository``     chart repository URL     RFC 3986 http(s)/oci URL
``diagnostics.diagon.chart``          chart reference          a URL as above when it has
                                                               ``://``; no space or control
                                                               character otherwise
``diagnostics.diagon.version``        chart version            no control character
``engine.backend.prefix``             Cloud Storage object     object-name rules; with the
                                      name (and Pulumi's       Pulumi engine no ``#``, ``?``
                                      ``gs://`` URL)           or ``%`` (URL syntax)
``orchestrator.kubeconfigContext``    kubeconfig context       no control character or
                                                               surrounding space (warning)
``slurm.pipIndexUrl``                 pip ``--index-url``      RFC 3986 http(s) URL
====================================  =======================  ==============================

Facts: catalog/data/names.yaml ``valueFormats`` (sources HELM-SET, HELM-STRVALS, TF-HELM-SET,
GCS-OBJECT-NAMING, RFC-3986, PIP-INDEX-URL, KUBECONFIG in sources.yaml). HCL, YAML and shell
escaping of the same values is the renderers' (render/hcl.py, the YAML emitter, base64 in the
Slurm startup script) and is not repeated here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from mldiag_provision.catalog.store import store
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lazyre import lazy
from mldiag_provision.preflight.context import Context, rule

RULE = "value-format"

# RFC 3986 2.2/2.3: the characters a URI may hold as they are; anything else (space,
# control characters, '"', '<', '>', '\\', '^', '`', '{', '|', '}', non-ASCII) must be
# percent-encoded, and '%' starts an encoding of two hex digits (2.1).
_URI_CHARS = lazy(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")
# Terraform's gcs backend writes PREFIX/default.tfstate and .tflock; the agents stage
# PREFIX/agents/default.tfstate (blueprints/_shared/*/versions.tf.j2): the longest suffix.
_LONGEST_STATE_SUFFIX = "/agents/default.tflock"


@cache
def _facts() -> Mapping[str, Any]:
    return store().doc("names")["valueFormats"]  # type: ignore[no-any-return]


def _controls(value: str) -> list[str]:
    """The control characters of ``value`` (Unicode category Cc), as ``repr`` escapes."""
    return sorted({repr(c)[1:-1] for c in value if unicodedata.category(c) == "Cc"})


def url_problem(value: str, schemes: tuple[str, ...]) -> str | None:
    """Why ``value`` is not an absolute URL with one of ``schemes`` and a host (RFC 3986),
    or None."""
    bad = _controls(value) + (["a space"] if " " in value else [])
    if bad:
        return f"it has {', '.join(bad)}; a URL has none (RFC 3986 2.1: percent-encode them)"
    if not _URI_CHARS.fullmatch(value):
        return "it has characters a URL must percent-encode (RFC 3986 2.1-2.3)"
    try:
        parts = urlsplit(value)
    except ValueError as exc:  # an unbalanced '[' of an IPv6 host
        return f"it does not parse as a URL ({exc})"
    if parts.scheme.lower() not in schemes:
        return f"its scheme is {parts.scheme or 'missing'}, not {' or '.join(schemes)}"
    if not parts.hostname:
        return "it names no host (scheme://host/...)"
    return None


def _helm_values(ctx: Context) -> Iterator[Problem]:
    d = ctx.recipe.spec.diagnostics.diagon
    if d is None:
        return
    base = ("spec", "diagnostics", "diagon")
    name = _facts()["helmSetName"]
    pattern = re.compile(str(name["pattern"]))
    for key in d.values:
        if not pattern.fullmatch(key):
            yield ctx.problem(
                RULE, (*base, "values", key),
                f"'{key}' is not a Helm value path: Helm's --set parser splits it at "
                "'.', '[', '=' and ',' (and a space is kept), so it would set another value",
                value=key, expected=str(name["what"]), prefer_value=False,
                hint="write the path as Helm does: dots between keys, [N] for a list index, "
                     "a backslash before a literal '.', '=', ',' or '['", source=name)
    url = _facts()["url"]
    schemes = tuple(str(s) for s in url["schemes"])
    if d.repository is not None:
        why = url_problem(d.repository, schemes)
        if why:
            yield ctx.problem(RULE, (*base, "repository"),
                              f"'{d.repository}' is not a chart repository URL: {why}",
                              value=d.repository,
                              expected="an http(s):// or oci:// URL, e.g. "
                                       "https://charts.example.com",
                              hint="percent-encode what the URL cannot hold", source=url)
    chart = d.chart
    if "://" in chart:
        why = url_problem(chart, schemes)
        if why:
            yield ctx.problem(RULE, (*base, "chart"),
                              f"'{chart}' is not a chart URL: {why}", value=chart,
                              expected="oci://REGISTRY/PATH/CHART or a chart name",
                              hint="percent-encode what the URL cannot hold", source=url)
    elif chart != chart.strip() or _controls(chart) or " " in chart:
        yield ctx.problem(RULE, (*base, "chart"),
                          f"chart {chart!r} has a space or a control character; Helm reads a "
                          "chart as a name (REPO/NAME), a path or a URL", value=chart,
                          expected="a chart name such as diagon or myrepo/diagon",
                          hint="remove the spaces and control characters", source=url)
    if d.version is not None and _controls(d.version):
        yield ctx.problem(RULE, (*base, "version"),
                          f"version {d.version!r} has control characters "
                          f"({', '.join(_controls(d.version))})", value=d.version,
                          expected="a chart version or constraint such as 1.2.3 or ~1.2",
                          hint="remove them", source=url)


def _backend_prefix(ctx: Context) -> Iterator[Problem]:
    eng = ctx.recipe.spec.engine
    prefix = eng.backend.prefix
    if prefix is None or eng.backend.type != "gcs":
        return  # a local backend's prefix is reported by the engine rule
    path = ("spec", "engine", "backend", "prefix")
    gcs = _facts()["gcsObjectName"]
    forbidden = [c for c in gcs["forbidden"] if c in prefix]
    expected = ("1-1024 bytes of UTF-8 with the state file's name, no carriage return or "
                "line feed, not starting with " + str(gcs["reservedPrefix"]))
    if forbidden:
        yield ctx.problem(RULE, path,
                          f"prefix {prefix!r} has {', '.join(repr(c) for c in forbidden)}: "
                          "Cloud Storage object names cannot hold carriage returns or line "
                          "feeds", value=prefix, expected=expected,
                          hint="remove the line breaks", source=gcs)
    longest = len((prefix + _LONGEST_STATE_SUFFIX).encode("utf-8"))
    if longest > int(gcs["maxBytes"]):
        yield ctx.problem(RULE, path,
                          f"the state object PREFIX{_LONGEST_STATE_SUFFIX} is {longest} bytes "
                          f"(UTF-8); Cloud Storage object names are at most {gcs['maxBytes']}",
                          value=prefix, expected=expected, hint="shorten the prefix",
                          source=gcs)
    if prefix.lstrip("/").startswith(str(gcs["reservedPrefix"])):
        yield ctx.problem(RULE, path,
                          f"Cloud Storage object names cannot start with "
                          f"{gcs['reservedPrefix']}", value=prefix, expected=expected,
                          hint="choose another prefix", source=gcs)
    avoid = sorted(str(c) for c in gcs["avoid"] if c in prefix) + [
        c for c in _controls(prefix) if c not in ("\\r", "\\n")]  # those: an error above
    if avoid:
        yield ctx.problem(RULE, path,
                          f"prefix {prefix!r} has {', '.join(avoid)}: Cloud Storage advises "
                          "against them in object names (gcloud storage reads '#N' as a "
                          "version and '[', ']', '*', '?' as wildcards)", value=prefix,
                          expected="letters, digits, '-', '_', '.' and '/'",
                          severity=Severity.WARNING, hint="use a plainer prefix", source=gcs)
    if eng.name == "pulumi":
        url = _facts()["pulumiBackendPath"]
        special = [str(c) for c in url["special"] if str(c) in prefix]
        if special or " " in prefix:
            shown = special + (["a space"] if " " in prefix else [])
            yield ctx.problem(RULE, path,
                              f"the Pulumi backend URL gs://BUCKET/{prefix} would read "
                              f"{', '.join(shown)} as URL syntax (query, fragment, "
                              "percent-encoding), so the state would go to another path",
                              value=prefix, expected="a prefix without '#', '?', '%' or spaces",
                              hint="use a plainer prefix", source=url)


def _kubeconfig_context(ctx: Context) -> Iterator[Problem]:
    context = ctx.recipe.spec.orchestrator.kubeconfig_context
    if context is None:
        return
    if context.strip() and context == context.strip() and not _controls(context):
        return
    fact = _facts()["kubeconfigContext"]
    yield ctx.problem(RULE, ("spec", "orchestrator", "kubeconfigContext"),
                      f"kubeconfig context {context!r} is empty, has spaces around it or "
                      "control characters: no kubeconfig entry a user writes has that name",
                      value=context, expected="the name of a context in your kubeconfig "
                                              "(kubectl config get-contexts)",
                      hint=f"e.g. '{context.strip() or 'my-cluster'}'", source=fact)


def _pip_index(ctx: Context) -> Iterator[Problem]:
    slurm = getattr(ctx.recipe.spec, "slurm", None)
    index = getattr(slurm, "pip_index_url", None) if slurm is not None else None
    if index is None:
        return
    why = url_problem(index, ("http", "https"))
    if why:
        yield ctx.problem(RULE, ("spec", "slurm", "pipIndexUrl"),
                          f"'{index}' is not a package index URL: {why}", value=index,
                          expected="an http(s):// URL such as https://pypi.org/simple",
                          hint="use the mirror's full URL; percent-encode what it cannot hold",
                          source=_facts()["url"])


@rule(RULE)
def value_format(ctx: Context) -> Iterator[Problem]:
    """Free text passed on to Helm --set, a Cloud Storage object name, a URL or a kubeconfig
    has that syntax's form."""
    yield from _helm_values(ctx)
    yield from _backend_prefix(ctx)
    yield from _kubeconfig_context(ctx)
    yield from _pip_index(ctx)
