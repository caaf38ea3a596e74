"""The document the policies see as ``input``: the rendered stack, parsed, and the saved plan.

Shape (every key always present)::

    {"stack": {
        "name": "tpu-v6e-multislice-spot", "blueprint": "gke-standard",
        "decisions": {...},                 # .mldiag/plan.json: every decision as data
        "hcl": {"main.tf": {...}, ...},     # every *.tf file, parsed by python-hcl2
        "modules": [{"name", "stage", "source", "dir", "instances": {key: args},
                     "addresses": {key: 'module.name["key"]'}}],
        "resources": [{"address", "module", "type", "name", "config"}],
        "manifests": {"k8s/workloads/x.yaml": [docs]},
        "external_waivers": [{"tool": "checkov", "check", "reason", "file"}]},
     "plan": {...} | null,                   # the saved plan(s), `terraform show -json`'s shape
     "params": {"required_labels": [], "allowed_regions": [], "allowed_zones": [],
                "allow_deletes": []}}

python-hcl2 parses each file with quotes stripped from literal strings and keys and without
block markers; expressions stay as ``"${...}"`` strings. ``modules`` lists the root modules'
``module`` calls (stage ``project`` for the top directory, ``cluster`` for ``agents/``) with
their arguments, where an argument that is exactly ``${local.X}``, ``${each.key}`` or
``${each.value.K}`` and names a literal is replaced by it; a call with ``for_each`` over a
literal map gets one instance per key (else one instance, key ``""``). ``resources`` lists
each resource block of each called module per instance, its ``${var.X}`` arguments replaced
by the call's literal argument or the variable's literal default (a checkov-like view; dynamic
blocks and other expressions stay as written). The plan format is
https://developer.hashicorp.com/terraform/internals/json-format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from mldiag_provision import hclparse
from mldiag_provision.hclparse import installed_id as installed_id
from mldiag_provision.policy.engine import PolicyError
from mldiag_provision.render import gitignore

_REF = re.compile(r"^\$\{(local|var)\.([A-Za-z0-9_-]+)\}$")
_CHECKOV_SKIP = re.compile(r"#\s*checkov:skip=([A-Z0-9_]+):(.*)$", re.M)
_EACH = re.compile(r"^\$\{each\.(key|value\.([A-Za-z0-9_-]+))\}$")


def parse_hcl(rel: str, text: str) -> dict[str, Any]:
    """One HCL file as data (:func:`mldiag_provision.hclparse.parse_hcl`, cached by content).

    Raises:
      PolicyError: the file is not valid HCL (naming it and the parser's message).
    """
    try:
        return hclparse.parse_hcl(rel, text)
    except hclparse.HclError as exc:
        raise PolicyError(exc.message, hint=exc.hint) from None


def _literal(value: Any) -> bool:
    if isinstance(value, str):
        return "${" not in value
    if isinstance(value, list):
        return all(_literal(v) for v in value)
    if isinstance(value, dict):
        return all(_literal(v) for v in value.values())
    return True


def _resolve(value: Any, scope: dict[str, dict[str, Any]]) -> Any:
    """Replace exact ``${local.X}``/``${var.X}``/``${each...}`` references by literals."""
    if isinstance(value, str):
        m = _REF.match(value)
        if m and m.group(2) in scope.get(m.group(1), {}):
            found = scope[m.group(1)][m.group(2)]
            return found if _literal(found) else value
        m = _EACH.match(value)
        if m and "each" in scope:
            if m.group(1) == "key":
                return scope["each"]["key"]
            each_value = scope["each"]["value"]
            if isinstance(each_value, dict) and m.group(2) in each_value:
                return each_value[m.group(2)]
        return value
    if isinstance(value, list):
        return [_resolve(v, scope) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, scope) for k, v in value.items()}
    return value


def _blocks(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    found = doc.get(kind, [])
    return found if isinstance(found, list) else [found]


def _locals(files: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for doc in files:
        for block in _blocks(doc, "locals"):
            out.update(block)
    for _ in range(3):  # locals that name other locals
        out = {k: _resolve(v, {"local": out}) for k, v in out.items()}
    return out


def _module_dir(root: str, source: Any) -> str | None:
    if not isinstance(source, str) or not source.startswith("./"):
        return None
    return PurePosixPath(root, source[2:]).as_posix() if root else source[2:]


def _variables(docs: list[dict[str, Any]]) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for doc in docs:
        for block in _blocks(doc, "variable"):
            for name, body in block.items():
                if isinstance(body, dict) and "default" in body:
                    defaults[name] = body["default"]
    return defaults


def stack_document(files: dict[str, bytes]) -> dict[str, Any]:
    """``input.stack`` from the files of a rendered stack (relative path -> bytes).

    Raises:
      PolicyError: a file is not valid HCL/YAML/JSON, or ``.mldiag/plan.json`` is missing.
    """
    hcl = {rel: parse_hcl(rel, data.decode("utf-8", "replace"))
           for rel, data in sorted(files.items()) if rel.endswith(".tf")}
    try:
        decisions = json.loads(files[".mldiag/plan.json"])
    except (KeyError, ValueError):
        raise PolicyError("the stack has no readable .mldiag/plan.json (is it a directory "
                          "rendered by mldiag-provision?)",
                          hint="render it first: mldiag-provision render RECIPE -o DIR"
                          ) from None
    manifests: dict[str, list[Any]] = {}
    for rel, data in sorted(files.items()):
        if rel.startswith("k8s/") and rel.endswith((".yaml", ".yml")):
            try:
                manifests[rel] = [d for d in yaml.safe_load_all(data) if d is not None]
            except yaml.YAMLError as exc:
                raise PolicyError(f"{rel}: not valid YAML: {exc}") from None
    modules: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    for root, stage in (("", "project"), ("agents", "cluster")):
        root_docs = [doc for rel, doc in hcl.items()
                     if str(PurePosixPath(rel).parent) == (root or ".")]
        local = _locals(root_docs)
        for doc in root_docs:
            for block in _blocks(doc, "module"):
                for name, body in block.items():
                    _module_call(hcl, root, stage, name, body, local, modules, resources)
    return {"name": decisions.get("name"), "blueprint": decisions.get("blueprint"),
            "decisions": decisions, "hcl": hcl, "modules": modules, "resources": resources,
            "manifests": manifests, "external_waivers": external_waivers(files)}


def external_waivers(files: dict[str, bytes]) -> list[dict[str, str]]:
    """The checkov checks the stack's Terraform skips, with their reasons (checkov's inline
    ``#checkov:skip=CHECK_ID:reason`` comments,
    https://www.checkov.io/2.Basics/Suppressing%20and%20Skipping%20Policies.html): each
    ``{"tool": "checkov", "check", "reason", "file"}``, sorted."""
    found = set()
    for rel, data in files.items():
        if rel.endswith(".tf"):
            for m in _CHECKOV_SKIP.finditer(data.decode("utf-8", "replace")):
                found.add((m.group(1), m.group(2).strip(), rel))
    return [{"tool": "checkov", "check": c, "reason": r, "file": f}
            for c, r, f in sorted(found, key=lambda t: (t[2], t[0]))]


def _module_call(hcl: dict[str, dict[str, Any]], root: str, stage: str, name: str,
                 body: dict[str, Any], local: dict[str, Any], modules: list[dict[str, Any]],
                 resources: list[dict[str, Any]]) -> None:
    args = {k: v for k, v in body.items() if k not in ("source", "for_each", "depends_on",
                                                        "count", "providers")}
    for_each = _resolve(body.get("for_each"), {"local": local})
    if isinstance(for_each, dict):
        instances = {str(k): _resolve(args, {"local": local, "each": {"key": k, "value": v}})
                     for k, v in for_each.items()}
    else:
        instances = {"": _resolve(args, {"local": local})}
    mdir = _module_dir(root, body.get("source"))
    modules.append({"name": name, "stage": stage, "source": body.get("source"), "dir": mdir,
                    "instances": instances,
                    "addresses": {k: f"module.{name}" + (f'["{k}"]' if k else "")
                                  for k in instances}})
    if mdir is None:
        return
    mdocs = [doc for rel, doc in hcl.items() if str(PurePosixPath(rel).parent) == mdir]
    defaults = _variables(mdocs)
    for key, inst in instances.items():
        var = {**defaults, **inst}
        mlocal = {k: _resolve(v, {"var": var}) for k, v in _locals(mdocs).items()}
        prefix = f"module.{name}" + (f'["{key}"]' if key else "")
        for doc in mdocs:
            for block in _blocks(doc, "resource"):
                for rtype, named in block.items():
                    for rname, config in named.items():
                        resources.append({
                            "address": f"{prefix}.{rtype}.{rname}", "module": name,
                            "instance": key, "stage": stage, "type": rtype, "name": rname,
                            "config": _resolve(config, {"var": var, "local": mlocal})})


def read_stack_dir(workdir: Path) -> dict[str, bytes]:
    """The files of a work directory the policies read: everything that is not local state
    (``.gitignore`` rules), text files only (``.tf``, ``.json``, ``.yaml``, ``.md``...).

    Raises:
      PolicyError: ``workdir`` is not a directory.
    """
    if not workdir.is_dir():
        raise PolicyError(f"{workdir} is not a directory holding a rendered stack",
                          hint="give a recipe, or a directory written by `render`")
    files: dict[str, bytes] = {}
    for path in sorted(workdir.rglob("*")):
        rel = path.relative_to(workdir).as_posix()
        if (path.is_file() and not gitignore.is_local(rel)
                and path.suffix in (".tf", ".json", ".yaml", ".yml")):
            files[rel] = path.read_bytes()
    return files


def saved_plans_document(stages: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    """``input.plan`` from the saved plans of a work directory's stages (stage name ->
    the plan document its engine unit reads, :data:`~mldiag_provision.engines.SavedPlanReader`:
    Terraform's ``terraform show -json`` of ``.mldiag/tfplan``, Pulumi's saved preview with
    ``resource_changes`` in that shape), merged: ``{"resource_changes": [... each with
    "stage"], "stages": {"project": doc, ...}}``; None when no stage has one."""
    if not stages:
        return None
    changes = [dict(rc, stage=stage) for stage, doc in stages.items()
               for rc in doc.get("resource_changes", [])]
    return {"resource_changes": changes, "stages": dict(stages)}


_ACTIONS = {"create": ["create"], "update": ["update"], "delete": ["delete"],
            "replace": ["delete", "create"], "read": ["read"], "no-op": ["no-op"]}


def plan_document(stage_plans: list[Any]) -> dict[str, Any] | None:
    """``input.plan`` from the stage plans ``plan``/``apply`` just made (each with ``stage``
    and ``plan``, a :class:`~mldiag_provision.engines.PlanResult` of any engine):
    ``resource_changes`` in ``terraform show -json``'s shape (address, type,
    change.actions, change.before/after) with the stage added; None when no stage was
    planned."""
    changes = []
    for sp in stage_plans:
        if sp.plan is None:
            continue
        for c in sp.plan.changes:
            changes.append({"address": c.address, "type": c.type, "stage": str(sp.stage.name),
                            "change": {"actions": _ACTIONS.get(c.action, [c.action]),
                                       "before": c.before, "after": c.after}})
    if not any(sp.plan is not None for sp in stage_plans):
        return None
    return {"resource_changes": changes}
