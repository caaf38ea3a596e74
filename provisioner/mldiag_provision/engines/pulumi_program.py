"""StackPlan -> a Pulumi Python project (``Pulumi.yaml`` + ``__main__.py``), the second engine's
rendering of the same plan the Terraform stack is rendered from.

Layout (beside ``k8s/``, ``README.md`` and ``.mldiag/plan.json``, which are engine-neutral)::

    Pulumi.yaml  __main__.py            project stage (APIs, IAM, Log Analytics, bucket,
                                        cluster / node pools / Slurm cluster)
    agents/Pulumi.yaml agents/__main__.py   in-cluster stage (own stack and state)

Templates: ``blueprints/<blueprint>/pulumi/__main__.py.j2`` (project stage, one per
orchestrator) and ``blueprints/_shared/pulumi/*.j2`` (Pulumi.yaml, shared parts, the agents
stage). Values reach Python source only through :func:`py_value` (Python literals), so no
recipe value can change the program's code.

Names: every resource's Pulumi logical name is the address the Terraform stack gives the same
object (``module.cluster.google_container_cluster.this``), so the two renderings can be
compared one to one (``tests/pulumi/test_parity.py``) and the danger warnings name the same
thing for both engines. Google-side names (cluster, bucket, account ids) come from the plan,
never from Pulumi's auto-naming.
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the engine registry imports this module; rendering imports these
    import jinja2

    from mldiag_provision.plan.types import StackPlan

# Orchestrators whose resources pulumi-gcp offers. Slurm needs
# gcp.hypercomputecluster.Cluster (Cluster Director), present in pulumi-gcp 10.x
# (pulumi_gcp/hypercomputecluster/cluster.py, bridged from google_hypercomputecluster_cluster).
PULUMI_BLUEPRINTS = ("gke-autopilot", "gke-standard", "existing-kubernetes", "slurm")
# blueprints/_shared/pulumi/ templates every program may include
SHARED_TEMPLATES = ("Pulumi.yaml.j2", "prelude.py.j2", "identity.py.j2", "nodes.py.j2",
                    "cluster.py.j2", "private.py.j2", "outputs.py.j2", "agents.py.j2")


def _ident(key: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) is not None


def py_value(value: Any, indent: int = 0) -> str:
    """``value`` as Python literal source (dataclasses as dicts, tuples as lists, mappings in
    their own order); nested containers break over lines indented by ``indent`` + 4.

    Raises:
      TypeError: a value of a type that has no literal here (a bug in the caller).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _py_str(value)
    pad = " " * (indent + 4)
    end = " " * indent
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [f"{pad}{_py_str(str(k))}: {py_value(v, indent + 4)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + f"\n{end}}}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        if all(isinstance(v, str | int | bool) for v in value) and sum(
                len(str(v)) + 4 for v in value) < 70:
            return "[" + ", ".join(py_value(v) for v in value) + "]"
        return "[\n" + "\n".join(f"{pad}{py_value(v, indent + 4)}," for v in value) + f"\n{end}]"
    raise TypeError(f"no Python literal for {type(value).__name__}")


def _py_str(text: str) -> str:
    """A double-quoted Python string literal (``repr`` picks quotes by content)."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    body = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in body)
    return f'"{body}"'


def _comment(value: object) -> str:
    return " ".join(str(value).split())


# --- Terraform's templatefile(), the subset the Slurm startup script uses ---------------------

_TFTPL_DIRECTIVE = re.compile(r"%\{(~?)\s*(if\s+(\w+)|endif)\s*(~?)\}")


def render_tftpl(text: str, variables: Mapping[str, Any]) -> str:
    """Render a Terraform template (``${name}``, ``$${`` escapes, ``%{ if name }`` /
    ``%{ endif }`` with ``~`` strip markers) as ``templatefile()`` does, so the Pulumi
    program carries byte-for-byte the startup script the Terraform module computes
    (https://developer.hashicorp.com/terraform/language/expressions/strings#directives).

    Raises:
      ValueError: a construct outside that subset (the template changed: extend this).
    """
    out: list[str] = []
    keep: list[bool] = []
    pos = 0
    strip_next = False
    for m in _TFTPL_DIRECTIVE.finditer(text):
        chunk = text[pos:m.start()]
        if strip_next:
            chunk = _strip_start(chunk)
        if m.group(1):
            chunk = _strip_end(chunk)
        if all(keep):
            out.append(_interpolate(chunk, variables))
        if m.group(3):
            keep.append(bool(variables[m.group(3)]))
        else:
            if not keep:
                raise ValueError("endif without if")
            keep.pop()
        strip_next = bool(m.group(4))
        pos = m.end()
    rest = text[pos:]
    if strip_next:
        rest = _strip_start(rest)
    if keep:
        raise ValueError("if without endif")
    out.append(_interpolate(rest, variables))
    return "".join(out)


def _strip_start(text: str) -> str:
    """``~}``: whitespace after the marker up to and including the next line break (HCL
    syntax spec, template literals: https://github.com/hashicorp/hcl/blob/main/hclsyntax/spec.md)."""
    m = re.match(r"[ \t]*\r?\n?", text)
    return text[m.end():] if m else text


def _strip_end(text: str) -> str:
    """``%{~``: whitespace before the marker back to and including the previous line break."""
    m = re.search(r"\r?\n?[ \t]*\Z", text)
    return text[:m.start()] if m else text


def _interpolate(text: str, variables: Mapping[str, Any]) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0).startswith("$$"):
            return "${"
        name = m.group(1)
        if name not in variables:
            raise ValueError(f"template refers to unknown ${{{name}}}")
        v = variables[name]
        return str(v).lower() if isinstance(v, bool) else str(v)

    if "%{" in text:
        raise ValueError("unsupported template directive")
    return re.sub(r"\$\$\{|\$\{(\w+)\}", sub, text)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def slurm_startup_scripts(plan: StackPlan, modules_root: Path, banner: str) -> dict[str, str]:
    """Node-set id -> the startup script the Terraform module ``slurm/cluster-director``
    renders for it (``local.startup_scripts``), from the same template file, with the
    generated-file ``banner`` after the shebang as the rendered module's copy has it."""
    assert plan.slurm is not None
    tpl = (modules_root / "slurm/cluster-director/templates/nodeset-startup.sh.tftpl"
           ).read_text(encoding="utf-8")
    if tpl.startswith("#!"):
        first, _, rest = tpl.partition("\n")
        tpl = f"{first}\n{banner}\n{rest}"
    sdk = plan.slurm.sdk
    out = {}
    for ns in plan.slurm.node_sets:
        out[ns.id] = render_tftpl(tpl, {
            "install_sdk": sdk.enabled,
            "sdk_package": _b64(sdk.package),
            "pip_index_url": _b64(sdk.pip_index_url or ""),
            "profiles_gcs_path": _b64(sdk.profiles_gcs_path),
            "mlrun_region": _b64(sdk.mlrun_region),
            "has_user_script": ns.startup_script is not None,
            "user_script": _b64(ns.startup_script or ""),
        })
    return out


_INT64 = (-(2 ** 63), 2 ** 63 - 1)


def _helm_scalar(text: str) -> Any:
    """A ``--set`` value as helm types it (strvals ``typedVal``): ``true``/``false``/``null``
    in any case, ``0``, and integers that do not start with ``0`` and fit 64 bits; else the
    string."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "null":
        return None
    if text == "0":
        return 0
    if text and text[0] != "0" and re.fullmatch(r"[+-]?[0-9]+", text):
        n = int(text)
        if _INT64[0] <= n <= _INT64[1]:
            return n
    return text


class _SetLine:
    """One ``NAME=VALUE`` of ``--set`` read as helm's strvals parser reads it
    (https://github.com/helm/helm/blob/main/pkg/strvals/parser.go, ``ParseInto``): names
    split at ``.`` and ``[N]``, a value that starts with ``{`` is a list, ``,`` ends a value,
    and a backslash takes the next character literally (catalog/data/names.yaml
    ``valueFormats``; plan.agents.helm_set_literal escapes for it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def until(self, stops: str) -> tuple[str, str | None]:
        out: list[str] = []
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            self.i += 1
            if ch in stops:
                return "".join(out), ch
            if ch == "\\":
                if self.i == len(text):
                    return "".join(out), None
                ch = text[self.i]
                self.i += 1
            out.append(ch)
        return "".join(out), None

    def value(self) -> Any:
        """After ``=``: a list ``{a,b}`` or one scalar up to ``,``."""
        if self.i < len(self.text) and self.text[self.i] == "{":
            self.i += 1
            items: list[Any] = []
            while True:
                item, stop = self.until(",}")
                if stop is None:
                    raise ValueError("list must terminate with '}'")
                items.append(_helm_scalar(item))
                if stop == "}":
                    if self.i < len(self.text) and self.text[self.i] == ",":
                        self.i += 1
                    return items
        rs, _ = self.until(",")
        return _helm_scalar(rs)

    def index(self) -> int:
        digits, stop = self.until("]")
        if stop is None or not re.fullmatch(r"[0-9]+", digits):
            raise ValueError(f"bad list index {digits!r}")
        return int(digits)

    def key(self, data: dict[str, Any]) -> bool:
        """Read one pair into ``data``; False at the end of the line."""
        k, stop = self.until("=[,.")
        if stop is None:
            if k:
                raise ValueError(f"key {k!r} has no value")
            return False
        if stop == "=":
            if k:
                data[k] = self.value()
            else:
                self.value()
            return True
        if stop == ",":
            raise ValueError(f"key {k!r} has no value (cannot end with ,)")
        if stop == "[":
            existing = data.get(k)
            data[k] = self.item(existing if isinstance(existing, list) else [], self.index())
            return True
        inner = data.get(k)
        inner = inner if isinstance(inner, dict) else {}
        more = self.key(inner)
        if inner:
            data[k] = inner
        return more

    def item(self, items: list[Any], i: int) -> list[Any]:
        rest, stop = self.until("[.=")
        if rest or stop is None:
            raise ValueError(f"unexpected data at end of array index: {rest!r}")
        items = items + [None] * (i + 1 - len(items))
        if stop == "=":
            items[i] = self.value()
        elif stop == "[":
            current = items[i] if isinstance(items[i], list) else []
            items[i] = self.item(current, self.index())
        else:
            inner = items[i] if isinstance(items[i], dict) else {}
            self.key(inner)
            items[i] = inner
        return items


def helm_values(sets: Any) -> dict[str, Any]:
    """Helm ``--set NAME=VALUE`` pairs (Terraform ``helm_release.set``) -> the values tree helm
    builds from them, for ``helm.v3.Release(values=...)``, which has no ``set``: each pair is
    read as helm's strvals parser reads ``NAME=VALUE`` (:class:`_SetLine`: dotted names nest,
    ``[N]`` indexes a list, ``{a,b}`` is a list, a backslash escapes, ``true``/``false``/
    integers/``null`` are typed).

    Raises:
      ValueError: a pair helm's parser refuses (a name without a value, an open list).
    """
    out: dict[str, Any] = {}
    for item in sets or ():
        if isinstance(item, Mapping):  # a Terraform plan's `set` entry
            name, value = str(item["name"]), str(item["value"])
        else:
            name, value = str(item.name), str(item.value)
        line = _SetLine(f"{name}={value}")
        while line.key(out):
            pass
    return out


def _env(root: Path) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["py"] = py_value
    env.filters["comment"] = _comment
    env.globals["helm_values"] = helm_values
    return env


def render_program(plan: StackPlan, root: Path, banner: str) -> dict[str, bytes]:
    """The Pulumi files of the stack: relative path -> bytes (writes nothing).

    Args:
      root: the data root holding ``blueprints/`` and ``modules/``.
      banner: the "generated, do not edit" comment line.
    Raises:
      ValueError: the plan's blueprint has no Pulumi rendering (preflight refuses it first).
      jinja2.TemplateError: a template is broken (a bug here).
    """
    if plan.blueprint not in PULUMI_BLUEPRINTS:
        raise ValueError(f"blueprint {plan.blueprint} has no Pulumi program")
    env = _env(root / "blueprints")
    ctx: dict[str, Any] = {"plan": plan, "banner": banner}
    if plan.slurm is not None:
        ctx["startup_scripts"] = slurm_startup_scripts(plan, root / "modules", banner)
    files = {
        "Pulumi.yaml": env.get_template("_shared/pulumi/Pulumi.yaml.j2").render(
            **ctx, stage="project"),
        "__main__.py": env.get_template(f"{plan.blueprint}/pulumi/__main__.py.j2").render(
            **ctx),
    }
    if plan.agents is not None:
        files["agents/Pulumi.yaml"] = env.get_template("_shared/pulumi/Pulumi.yaml.j2").render(
            **ctx, stage="agents")
        files["agents/__main__.py"] = env.get_template("_shared/pulumi/agents.py.j2").render(
            **ctx)
    return {k: v.encode("utf-8") for k, v in files.items()}
