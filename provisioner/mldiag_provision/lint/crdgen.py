"""Generate ``lint/data/crds.generated.json`` from the upstream CRD manifests pinned in
``tools/crds/pins.yaml`` (JobSet, LeaderWorkerSet, KubeRay at release tags).

    python -m mldiag_provision.lint.crdgen            # regenerate the JSON from tools/crds/
    python -m mldiag_provision.lint.crdgen --check    # exit 1 when the committed JSON differs
    python -m mldiag_provision.lint.crdgen --vendor jobset=/path/to/jobset/git  # re-copy inputs

What the generator does to each ``openAPIV3Schema`` (per served version of the CRD):

* drops ``description``, ``default``, ``format`` and the ``x-kubernetes-list-*``/``map-type``/
  ``validations`` markers (lint does not evaluate CEL), and ``status`` (written by controllers);
* turns ``x-kubernetes-int-or-string`` into the ``{$intOrString: true}`` shorthand;
* replaces the embedded Kubernetes types listed in :data:`EMBEDDED` (pod and job specs) with
  ``{$k8s: NAME}``, so a pod template inside a JobSet is validated against the chosen
  ``--kubernetes-version``'s own PodSpec, like one inside a Job. The generator refuses to run
  when such a node is missing, or when a pod spec is left inline (``containers`` beside
  ``restartPolicy``), so a new upstream template cannot slip through unreplaced.

The output is deterministic (sorted keys), so :func:`generate` == the committed file is the
up-to-date test (tests/lint/test_crds_upstream.py).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
PINS = ROOT / "tools" / "crds" / "pins.yaml"
UPSTREAM = ROOT / "tools" / "crds" / "upstream"
SUMS = UPSTREAM / "SHA256SUMS"
OUTPUT = Path(__file__).parent / "data" / "crds.generated.json"

PODSPEC = "io.k8s.api.core.v1.PodSpec"
JOBSPEC = "io.k8s.api.batch.v1.JobSpec"
SERVICESPEC = "io.k8s.api.core.v1.ServiceSpec"
# (kind, path of property names inside spec; "[]" = array items) -> Kubernetes definition
_RAY = ((("headGroupSpec", "template", "spec"), PODSPEC),
        (("workerGroupSpecs", "[]", "template", "spec"), PODSPEC),
        (("headGroupSpec", "headService", "spec"), SERVICESPEC))
EMBEDDED: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "JobSet": ((("replicatedJobs", "[]", "template", "spec"), JOBSPEC),),
    "LeaderWorkerSet": ((("leaderWorkerTemplate", "leaderTemplate", "spec"), PODSPEC),
                        (("leaderWorkerTemplate", "workerTemplate", "spec"), PODSPEC)),
    "RayCluster": _RAY,
    "RayJob": (*((("rayClusterSpec", *p), d) for p, d in _RAY),
               (("submitterPodTemplate", "spec"), PODSPEC)),
}
_DROP = {"description", "default", "format", "x-kubernetes-list-map-keys",
         "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations",
         "x-kubernetes-embedded-resource", "nullable"}


class GenerateError(Exception):
    """The pinned inputs are missing, altered, or no longer have the expected shape."""


_RE2_FLAGS_AFTER_ANCHOR = re.compile(r"^\^(\(\?[a-zA-Z]+\))")


def _python_pattern(pattern: str) -> str:
    """An upstream ``pattern`` (RE2: the API server is Go) that Python's ``re`` accepts:
    inline global flags after the anchor, e.g. Kueue v0.19.2's ``^(?i)[a-z]...``, move in
    front of it (Python refuses global flags that are not at the start; same meaning)."""
    return _RE2_FLAGS_AFTER_ANCHOR.sub(lambda m: m.group(1) + "^", pattern)


def _strip(node: object) -> object:
    if isinstance(node, list):
        return [_strip(v) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("x-kubernetes-int-or-string"):
        return {"$intOrString": True}
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in _DROP:
            continue
        if k == "properties":
            out[k] = {name: _strip(sub) for name, sub in v.items()}
        elif k == "pattern" and isinstance(v, str):
            out[k] = _python_pattern(v)
        else:
            out[k] = _strip(v)
    return out


def _replace(spec: dict[str, Any], path: tuple[str, ...], definition: str, where: str) -> None:
    node: Any = spec  # a walk down the CRD's schema tree (YAML)
    for i, step in enumerate(path):
        parent = node
        node = node.get("items") if step == "[]" else node.get("properties", {}).get(step)
        if not isinstance(node, dict):
            raise GenerateError(f"{where}: no spec.{'.'.join(path[:i + 1])} in the upstream "
                                "schema; update EMBEDDED in crdgen.py")
    if step == "[]":
        parent["items"] = {"$k8s": definition}
    else:
        parent["properties"][step] = {"$k8s": definition}


def _inline_podspecs(node: object, path: str) -> list[str]:
    if not isinstance(node, dict):
        return []
    props = node.get("properties")
    found = []
    if isinstance(props, dict):
        if "containers" in props and "restartPolicy" in props:
            found.append(path)
        for k, v in props.items():
            found += _inline_podspecs(v, f"{path}.{k}")
    if "items" in node:
        found += _inline_podspecs(node["items"], f"{path}[]")
    return found


def convert(crd: dict[str, Any], project: str, version: str, pin: dict[str, Any],
            path: str) -> list[dict[str, Any]]:
    """One upstream CRD document -> one entry per served API version (see module doc).

    Raises:
      GenerateError: not a CRD, an EMBEDDED path is missing, or a pod spec stays inline.
    """
    if crd.get("kind") != "CustomResourceDefinition":
        raise GenerateError(f"{path}@{version}: not a CustomResourceDefinition")
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    out = []
    for v in crd["spec"]["versions"]:
        if not v.get("served", True):
            continue
        where = f"{project} {version} {kind} {group}/{v['name']}"
        schema = _strip(v["schema"]["openAPIV3Schema"])
        assert isinstance(schema, dict)
        schema.get("properties", {}).pop("status", None)
        spec = schema.get("properties", {}).get("spec")
        if not isinstance(spec, dict):
            raise GenerateError(f"{where}: no spec in the schema")
        for p, definition in EMBEDDED.get(kind, ()):
            _replace(spec, p, definition, where)
        left = _inline_podspecs(spec, "spec")
        if left:
            raise GenerateError(f"{where}: pod specs left inline at {', '.join(left)}; add "
                                "them to EMBEDDED in crdgen.py")
        out.append({
            "project": project, "version": version, "apiVersion": f"{group}/{v['name']}",
            "kind": kind,
            "source": {"repo": pin["repo"], "tag": version, "commit": pin["commit"],
                       "path": path,
                       "url": f"https://github.com/{pin['repo']}/blob/{version}/{path}"},
            "schema": schema,
        })
    return out


def _input(project: str, version: str, path: str) -> Path:
    return UPSTREAM / project / version / (Path(path).name + ".gz")


def load_pins() -> dict[str, Any]:
    with open(PINS, encoding="utf-8") as f:
        pins: dict[str, Any] = yaml.safe_load(f)["projects"]
    return pins


def _sums() -> dict[str, str]:
    if not SUMS.exists():
        return {}
    return {name: digest for digest, name in
            (line.split(None, 1) for line in SUMS.read_text().splitlines() if line.strip())}


def generate() -> str:
    """The JSON text the committed ``crds.generated.json`` must equal.

    Raises:
      GenerateError: an input is missing or does not match its recorded sha256.
    """
    sums = _sums()
    kinds: list[dict[str, Any]] = []
    for project, spec in load_pins().items():
        for version, pin in spec["versions"].items():
            for path in spec["paths"]:
                f = _input(project, version, path)
                if not f.exists():
                    raise GenerateError(f"{f} is missing; vendor it with --vendor")
                raw = gzip.decompress(f.read_bytes())
                rel = str(f.relative_to(UPSTREAM))
                if sums.get(rel) != hashlib.sha256(raw).hexdigest():
                    raise GenerateError(f"{rel}: sha256 differs from SHA256SUMS (altered input)")
                crd = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                kinds += convert(crd, project, version, {**pin, "repo": spec["repo"]}, path)
    doc = {"generatedBy": "python -m mldiag_provision.lint.crdgen (from tools/crds/pins.yaml)",
           "kinds": kinds}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n"


def vendor(project: str, gitdir: str) -> None:
    """Copy the pinned files of ``project`` from a git clone (``git show COMMIT:PATH``),
    checking that each tag still points at the pinned commit."""
    spec = load_pins()[project]
    sums = _sums()
    for version, pin in spec["versions"].items():
        tagged = subprocess.run(["git", "-C", gitdir, "rev-parse", f"{version}^{{commit}}"],
                                check=True, capture_output=True, text=True).stdout.strip()
        if tagged != pin["commit"]:
            raise GenerateError(f"{project} {version}: tag is {tagged}, pinned {pin['commit']}")
        for path in spec["paths"]:
            raw = subprocess.run(["git", "-C", gitdir, "show", f"{pin['commit']}:{path}"],
                                 check=True, capture_output=True).stdout
            f = _input(project, version, path)
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(gzip.compress(raw, mtime=0))
            sums[str(f.relative_to(UPSTREAM))] = hashlib.sha256(raw).hexdigest()
    SUMS.write_text("".join(f"{d}  {n}\n" for n, d in sorted(sums.items())))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mldiag_provision.lint.crdgen")
    ap.add_argument("--check", action="store_true", help="exit 1 if the output is stale")
    ap.add_argument("--vendor", action="append", default=[], metavar="PROJECT=GITDIR")
    args = ap.parse_args(argv)
    try:
        for item in args.vendor:
            project, _, gitdir = item.partition("=")
            vendor(project, gitdir)
        text = generate()
    except (GenerateError, subprocess.CalledProcessError, OSError) as exc:
        print(f"crdgen: {exc}", file=sys.stderr)
        return 1
    if args.check:
        same = OUTPUT.exists() and OUTPUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUTPUT} is stale; run without --check")
        return 0 if same else 1
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
