#!/usr/bin/env python3
"""Extracts the provider *configuration* schema (the ``provider "google" {}`` block) of
hashicorp/google, hashicorp/google-beta, hashicorp/kubernetes and hashicorp/helm from the
cdktn-provider-* PyPI wheels.

Companion of tests/data/tf_schema/extract.py (which extracts resources and data sources) and
written in the same way: the generated ``package/lib/provider/index.js`` of the wheel's
``.jsii.tgz`` has a flag comment per argument
(``// <name> - computed: X, optional: Y, required: Z``) and a ``synthesizeHclAttributes``
table with each argument's type and whether it is a block; nested block fields come from
``<struct>ToHclTerraform`` and their optionality from the ``.d.ts`` interface (``name?:``).
A nested struct is an HCL *block* only when the ``.d.ts`` documents it as "<name> block"
(SDKv2 providers: google's ``batching``, kubernetes' ``exec``); otherwise it is a nested
attribute (plugin-framework providers: helm 3.x ``kubernetes = { ... }``).
``alias`` is a cdktn meta-argument, not part of the schema, and is dropped.

Usage (regenerates provisioner/mldiag_provision/sandbox/provider_config.json):
  pip download --no-deps -d /tmp/wheels cdktn-provider-google==21.1.0 \
      cdktn-provider-google-beta==21.1.0 cdktn-provider-kubernetes==17.1.0 \
      cdktn-provider-helm==15.1.0
  python3 provisioner/mldiag_provision/sandbox/extract_provider_config.py \
      /tmp/wheels/cdktn_provider_google-*.whl \
      /tmp/wheels/cdktn_provider_google_beta-*.whl /tmp/wheels/cdktn_provider_kubernetes-*.whl \
      /tmp/wheels/cdktn_provider_helm-*.whl \
      --out provisioner/mldiag_provision/sandbox/provider_config.json
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tarfile
import zipfile
from typing import Any

FLAG_RE = re.compile(r"^    // ([a-z0-9_]+) - computed: (true|false), optional: (true|false), "
                     r"required: (true|false)$", re.M)
HCL_ENTRY_RE = re.compile(
    r"^ {12}([a-z0-9_]+): \{\n\s+value: (.*),\n\s+isBlock: (true|false),\n"
    r"\s+type: \"(\w+)\",\n\s+storageClassType: \"(\w+)\",\n", re.M)
NESTED_ENTRY_RE = re.compile(
    r"^ {8}([a-z0-9_]+): \{\n\s+value: (.*),\n\s+isBlock: (true|false),\n"
    r"\s+type: \"(\w+)\",\n\s+storageClassType: \"(\w+)\",\n", re.M)
TO_TF_RE = re.compile(r"^\s+([a-z0-9_]+): .*\(struct\.(\w+)\)", re.M)
PROVIDER_RE = re.compile(r"providerName: '([\w-]+)',\s+providerVersion: '([\w.\-]+)'|"
                         r"terraformProviderSource: '([\w/-]+)'")
STORAGE = {"string": "string", "boolean": "bool", "number": "number",
           "stringList": "list(string)", "numberList": "list(number)",
           "stringMap": "map(string)", "numberMap": "map(number)", "booleanMap": "map(bool)"}


def _provider_files(wheel: str) -> tuple[str, str, str]:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".jsii.tgz"))
        tgz = zf.read(name)
    js = dts = ""
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tf:
        for m in tf:
            if m.name not in ("package/lib/provider/index.js", "package/lib/provider/index.d.ts"):
                continue
            member = tf.extractfile(m)
            if member is None:
                raise ValueError(f"{wheel}: {m.name} in {name} is not a regular file")
            if m.name.endswith(".js"):
                js = member.read().decode()
            else:
                dts = member.read().decode()
    return name, js, dts


def _iface_optional(dts: str, iface: str) -> dict[str, bool]:
    m = re.search(r"^export interface " + iface + r" \{\n(.*?)^\}", dts, re.M | re.S)
    body = m.group(1) if m else ""
    return {k: bool(q) for k, q in re.findall(r"readonly (\w+)(\?)?:", body)}


def _block_docs(dts: str, iface: str) -> set[str]:
    """Fields the ``.d.ts`` interface documents as "<name> block" (HCL blocks, not
    nested attributes of a plugin-framework provider)."""
    m = re.search(r"^export interface " + iface + r" \{\n(.*?)^\}", dts, re.M | re.S)
    return set(re.findall(r"^\s+\* ([a-z0-9_]+) block\n", m.group(1) if m else "", re.M))


def _struct(js: str, dts: str, fn: str) -> dict[str, Any]:
    """Attributes and blocks of the nested struct whose HCL mapper is ``<fn>ToHclTerraform``.

    A struct field documented as "<name> block" is a block; any other struct field is a
    nested attribute (plugin-framework ``SingleNestedAttribute``/``ListNestedAttribute``,
    written ``name = { ... }`` / ``name = [{ ... }]`` in HCL), e.g. helm 3.x ``kubernetes``.
    """
    body = js[js.index(f"function {fn}ToHclTerraform(struct)"):]
    body = body[:body.index("\n}\n")]
    to_tf = js[js.index(f"function {fn}ToTerraform(struct)"):]
    to_tf = to_tf[:to_tf.index("\n}\n")]
    camel = dict(TO_TF_RE.findall(to_tf))
    iface = fn[0].upper() + fn[1:]
    optional_map = _iface_optional(dts, iface)
    block_names = _block_docs(dts, iface)
    attributes: dict[str, dict[str, Any]] = {}
    blocks: dict[str, dict[str, Any]] = {}
    for ne in NESTED_ENTRY_RE.finditer(body):
        n_name, value, is_block, typ, n_storage = ne.groups()
        opt = optional_map.get(camel.get(n_name, ""), True)
        flags = {"required": not opt, "optional": opt, "computed": False}
        if is_block == "true":
            _field(js, dts, n_name, value, typ, flags, n_name in block_names, attributes,
                   blocks)
        else:
            attributes[n_name] = {**flags, "type": STORAGE[n_storage]}
    return {"attributes": dict(sorted(attributes.items())),
            "blocks": dict(sorted(blocks.items()))}


def _field(js: str, dts: str, name: str, value: str, typ: str, flags: dict[str, Any],
           is_block: bool, attributes: dict[str, Any], blocks: dict[str, Any]) -> None:
    mapper = re.search(r"(\w+)ToHclTerraform", value.replace("cdktn.listMapperHcl(", ""))
    if mapper is None:
        raise ValueError(f"{name}: no <struct>ToHclTerraform mapper in {value!r}")
    fn = mapper.group(1)
    inner = _struct(js, dts, fn)
    if is_block:
        blocks[name] = {"nesting": "list" if typ == "struct" else typ,
                        "min_items": 1 if flags["required"] else 0,
                        "max_items": 1 if typ == "struct" else None,
                        "required": flags["required"], **inner}
    else:
        attributes[name] = {**flags, "type": "object" if typ == "struct" else f"{typ}(object)",
                            "nested_attribute": True, **inner}


def extract(wheel: str) -> dict[str, Any]:
    tgz_name, js, dts = _provider_files(wheel)
    version_m = re.search(r"providerVersion: '([\w.\-]+)'", js)
    source_m = re.search(r"terraformProviderSource: '([\w/-]+)'", js)
    flags = {m.group(1): tuple(m.group(i) == "true" for i in (2, 3, 4))
             for m in FLAG_RE.finditer(js)}
    config_iface = re.search(r"^export interface (\w+ProviderConfig) ", dts, re.M)
    block_names = _block_docs(dts, config_iface.group(1)) if config_iface else set()
    synth = js[js.index("synthesizeHclAttributes()"):]
    attributes: dict[str, dict[str, Any]] = {}
    blocks: dict[str, dict[str, Any]] = {}
    for e in HCL_ENTRY_RE.finditer(synth):
        name, value, is_block, typ, storage = e.groups()
        if name == "alias":
            continue
        computed, optional, required = flags[name]
        if is_block == "true":
            f = {"required": required, "optional": optional, "computed": computed}
            _field(js, dts, name, value, typ, f, name in block_names, attributes, blocks)
        else:
            attributes[name] = {"required": required, "optional": optional,
                                "computed": computed, "type": STORAGE[storage]}
    return {"provider": source_m.group(1) if source_m else "?",
            "version": version_m.group(1) if version_m else "?",
            "source": f"{wheel.rsplit('/', 1)[-1]}, {tgz_name} (package/lib/provider/index.js)",
            "attributes": dict(sorted(attributes.items())),
            "blocks": dict(sorted(blocks.items()))}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("wheels", nargs="+")
    p.add_argument("--out", default="-")
    a = p.parse_args(argv)
    doc = {"_meta": {
        "generator": "provisioner/mldiag_provision/sandbox/extract_provider_config.py"}}
    for w in a.wheels:
        cfg = extract(w)
        doc[cfg["provider"].split("/")[-1]] = cfg
    text = json.dumps(doc, indent=1) + "\n"
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
