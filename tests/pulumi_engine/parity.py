"""Compare a Terraform plan (``terraform show -json`` of a saved plan that creates the stack)
with the resources a Pulumi program registered under the mock runtime: one difference string
per resource or attribute that is not the same, matched against the explained differences of
``parity.yaml``."""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mldiag_provision.engines.pulumi import TERRAFORM_TO_PULUMI
from sampling import FULL, cover, recipe_families
from stack_support import RECIPES

PARITY = yaml.safe_load((Path(__file__).resolve().parent / "parity.yaml").read_text())


def parity_families(recipe: Path) -> set[str]:
    """The recipe's families (tests/sampling.py) plus ``parity:N`` for each explained
    difference N of parity.yaml whose ``examples`` name it: a sample covering these checks
    every explanation somewhere."""
    return recipe_families(recipe) | {
        f"parity:{i}" for i, d in enumerate(PARITY.get("differences") or [])
        if any(fnmatch.fnmatch(recipe.stem, g) for g in d["examples"])}


# The examples the parity test runs: all with MLDIAG_FULL=1, else the greedy cover of
# their families (docs/testing.md).
PARITY_SAMPLE = [next(r for r in RECIPES if r.stem == name)
                 for name in sorted(cover({r.stem: parity_families(r) for r in RECIPES}))]


def parity_recipes(full: bool = FULL) -> list[Path]:
    """Every example recipe when ``full``, else PARITY_SAMPLE."""
    return list(RECIPES) if full else PARITY_SAMPLE


PARITY_RECIPES = parity_recipes()
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(key: str) -> str:
    """A Pulumi property name (camelCase) as the Terraform attribute name; map keys (labels,
    values) are left alone by the callers."""
    return _CAMEL.sub(lambda m: "_" + m.group(1).lower(), key)


def _norm(value: Any, *, snake_keys: bool, depth_of_map: bool = False) -> Any:
    """Drop nulls and empty blocks; a block list of one object is the object (Terraform nests
    single blocks in lists, Pulumi does not)."""
    if isinstance(value, dict):
        if "__secret__" in value and len(value) == 1:
            return _norm(value["__secret__"], snake_keys=snake_keys)
        out = {}
        for k, v in value.items():
            key = snake(k) if snake_keys and not depth_of_map else k
            nv = _norm(v, snake_keys=snake_keys,
                       depth_of_map=depth_of_map or (key in _MAPS and not depth_of_map))
            if nv is None or nv == [] or nv == {}:
                continue
            out[key] = nv
        return out
    if isinstance(value, list):
        items = [_norm(v, snake_keys=snake_keys, depth_of_map=depth_of_map) for v in value]
        items = [v for v in items if v is not None and v != {}]
        if len(items) == 1 and isinstance(items[0], dict):
            return items[0]
        return items
    return value


# attributes whose value is a map with user keys (never renamed)
_MAPS = frozenset({"labels", "resource_labels", "default_labels", "annotations",
                   "match_labels", "values", "node_labels"})


def _get(obj: Any, path: str) -> Any:
    cur = obj
    for part in path.split("."):
        if isinstance(cur, list) and len(cur) == 1:
            cur = cur[0]
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = obj.setdefault(part, {})
        obj = nxt[0] if isinstance(nxt, list) and len(nxt) == 1 else nxt
    obj[parts[-1]] = value


def _pop(obj: dict[str, Any], path: str) -> Any:
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = obj.get(part)
        if isinstance(nxt, list) and len(nxt) == 1:
            nxt = nxt[0]
        if not isinstance(nxt, dict):
            return None
        obj = nxt
    return obj.pop(parts[-1], None)


def _sort_set(obj: dict[str, Any], path: str) -> None:
    """Terraform plans a set block in its own (hash) order, Pulumi keeps the program's list
    order: sort the elements at ``path`` (after renames) so that only content is compared."""
    parent, _, last = path.rpartition(".")
    holder = _get(obj, parent) if parent else obj
    if isinstance(holder, dict) and isinstance(holder.get(last), list):
        holder[last] = sorted(holder[last], key=lambda v: json.dumps(v, sort_keys=True))


def _unknown_paths(unknown: Any, prefix: str = "") -> set[str]:
    """Paths Terraform does not know at plan time (``after_unknown``: true)."""
    out: set[str] = set()
    if unknown is True:
        out.add(prefix)
    elif isinstance(unknown, dict):
        for k, v in unknown.items():
            out |= _unknown_paths(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(unknown, list):
        for v in unknown:
            out |= _unknown_paths(v, prefix)
    return out


def _diff(tf: Any, pu: Any, path: str, unknown: set[str], out: list[str]) -> None:
    if path in unknown or any(path.startswith(u + ".") for u in unknown):
        return
    if isinstance(tf, dict) and isinstance(pu, dict):
        for key in sorted(set(tf) | set(pu)):
            _diff(tf.get(key), pu.get(key), f"{path}.{key}" if path else key, unknown, out)
        return
    if isinstance(tf, list) and isinstance(pu, list) and len(tf) == len(pu) and all(
            isinstance(v, dict) for v in tf + pu):
        for i, (a, b) in enumerate(zip(tf, pu, strict=True)):
            _diff(a, b, f"{path}[{i}]", {u.replace(f"{path}.", f"{path}[{i}].", 1)
                                         for u in unknown}, out)
        return
    if _scalar(tf) != _scalar(pu):
        if tf is None:
            out.append(f"{path}: only in Pulumi ({_short(pu)})")
        elif pu is None:
            out.append(f"{path}: Pulumi does not set it (Terraform: {_short(tf)})")
        elif isinstance(tf, str) and isinstance(pu, str) and max(len(tf), len(pu)) > 80:
            at = next((i for i, (a, b) in enumerate(zip(tf, pu, strict=False)) if a != b),
                      min(len(tf), len(pu)))
            out.append(f"{path}: texts differ from character {at}: Terraform "
                       f"{_short(tf[at - 20:at + 40])} != Pulumi {_short(pu[at - 20:at + 40])}")
        else:
            out.append(f"{path}: Terraform {_short(tf)} != Pulumi {_short(pu)}")


def _scalar(v: Any) -> Any:
    if isinstance(v, list) and all(isinstance(x, str | int | bool) for x in v):
        return v
    return v


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass
class Compared:
    differences: list[str]  # unexplained
    explained: dict[int, int]  # index in PARITY["differences"] -> times matched
    resources: int  # resources compared


def compare(tf_plan: dict[str, Any], pulumi: dict[str, Any], *,
            helm_values: Any = None) -> Compared:
    """Every difference between the resources ``tf_plan`` creates and the ones the Pulumi
    program registered; ``helm_values`` turns a helm_release ``set`` list into values."""
    types: dict[str, str] = TERRAFORM_TO_PULUMI
    renames: dict[str, dict[str, str]] = PARITY.get("renames") or {}
    allowed = PARITY.get("differences") or []
    explained: dict[int, int] = {}
    found: list[str] = []

    tf = {rc["address"]: rc for rc in tf_plan.get("resource_changes", [])
          if rc.get("mode") == "managed" and "create" in rc["change"]["actions"]}
    pu = {r["name"]: r for r in pulumi["resources"] if r["custom"]}
    for name, r in sorted(pu.items()):
        if name not in tf:
            if r["type"] in PARITY["pulumi_only_types"]:
                continue
            found.append(f"{name} ({r['type']}): only in the Pulumi program")
    for address, rc in sorted(tf.items()):
        r = pu.get(address)
        if r is None:
            found.append(f"{address} ({rc['type']}): missing from the Pulumi program")
            continue
        want_type = types.get(rc["type"])
        if r["type"] != want_type:
            found.append(f"{address}: type {r['type']}, mapping says {want_type}")
        after = json.loads(json.dumps(rc["change"].get("after") or {}))
        unknown = _unknown_paths(rc["change"].get("after_unknown") or {})
        for old, new in (renames.get(rc["type"]) or {}).items():
            value = _pop(after, old)
            if old == "set" and helm_values is not None:
                value = helm_values(value or [])
            if value is not None:
                _set(after, new, value)
            unknown = {new + u[len(old):] if u == old or u.startswith(old + ".") else u
                       for u in unknown}
        after = _norm(after, snake_keys=False)
        inputs = _norm(r["inputs"], snake_keys=True)
        for set_path in (PARITY.get("sets") or {}).get(rc["type"], []):
            _sort_set(after, set_path)
            _sort_set(inputs, set_path)
        for implicit in ("api_version", "kind"):  # set by pulumi-kubernetes per class
            if rc["type"].startswith("kubernetes_") and implicit not in after:
                inputs.pop(implicit, None)
        diffs: list[str] = []
        _diff(after, inputs, "", unknown, diffs)
        diffs += _protection(rc, r)
        for d in diffs:
            attr, _, what = d.partition(": ")
            hit = next((i for i, a in enumerate(allowed)
                        if fnmatch.fnmatch(rc["type"], a["type"])
                        and fnmatch.fnmatch(attr, a["path"])
                        and fnmatch.fnmatch(what, a.get("when", "*"))), None)
            if hit is None:
                found.append(f"{address}: {d}")
            else:
                explained[hit] = explained.get(hit, 0) + 1
    return Compared(found, explained, len(tf))


def _protection(rc: dict[str, Any], r: dict[str, Any]) -> list[str]:
    """Protections the Terraform configuration implies, as Pulumi resource options:
    ``deletion_protection`` / ``deletion_policy = PREVENT`` -> ``protect``;
    ``disable_on_destroy = false`` and the _Default log bucket (destroy only forgets) ->
    ``retain_on_delete``."""
    after = rc["change"].get("after") or {}
    want_protect = bool(after.get("deletion_protection")) or (
        after.get("deletion_policy") == "PREVENT")
    want_retain = after.get("disable_on_destroy") is False or (
        rc["type"] == "google_logging_project_bucket_config")
    out = []
    if r["protect"] != want_protect:
        out.append(f"@protect: Pulumi {r['protect']}, Terraform implies {want_protect}")
    if r["retain_on_delete"] != want_retain:
        out.append(f"@retain_on_delete: Pulumi {r['retain_on_delete']}, Terraform implies "
                   f"{want_retain}")
    return out
