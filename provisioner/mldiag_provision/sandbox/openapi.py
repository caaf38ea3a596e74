"""The sandbox API server's OpenAPI v3 discovery (``/openapi/v3``): enough of it for
``kubectl apply``/``create`` to find that the server does field validation itself.

kubectl (1.27 and later) fetches ``/openapi/v3``, then the document of the object's group
version, and looks for the PATCH operation of the object's kind (its
``x-kubernetes-group-version-kind``) taking the ``fieldValidation`` query parameter; where
it is there, kubectl sends ``fieldValidation=Strict`` and leaves the checking to the server
(kubernetes/kubernetes ``staging/src/k8s.io/cli-runtime/pkg/resource/
query_param_verifier_v3.go``; https://kubernetes.io/docs/reference/using-api/api-concepts/
#field-validation). Without the documents kubectl stops with "failed to download openapi".

Shapes (https://kubernetes.io/docs/concepts/overview/kubernetes-api/#openapi-v3): the root
is ``{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}``;
a group version's document is an OpenAPI 3.0 document whose paths are the resources' item
paths. Not served: the types' schemas (``components.schemas`` is empty), so ``kubectl
explain`` finds nothing here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mldiag_provision.sandbox.apiserver import Resource

_QUERY = ("dryRun", "fieldManager", "fieldValidation")


def _gv_path(r: Resource) -> str:
    return f"api/{r.version}" if r.group == "" else f"apis/{r.group}/{r.version}"


def _grouped(resources: Iterable[Resource]) -> dict[str, list[Resource]]:
    out: dict[str, list[Resource]] = {}
    for r in resources:
        out.setdefault(_gv_path(r), []).append(r)
    return out


def root_document(resources: Iterable[Resource]) -> dict[str, Any]:
    """``GET /openapi/v3``: one entry per group version served."""
    paths = {}
    for gv, members in sorted(_grouped(resources).items()):
        digest = hashlib.sha256(",".join(sorted(f"{r.plural}/{r.kind}" for r in members))
                                .encode()).hexdigest()[:32].upper()
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}


def _operation(r: Resource, verb: str) -> dict[str, Any]:
    return {"operationId": f"{verb}{r.kind}",
            "x-kubernetes-action": verb,
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version,
                                                "kind": r.kind},
            "parameters": [{"name": q, "in": "query", "schema": {"type": "string",
                                                                "uniqueItems": True}}
                           for q in _QUERY],
            "responses": {"200": {"description": "OK"}}}


def group_version_document(resources: Iterable[Resource], gv: str) -> dict[str, Any] | None:
    """``GET /openapi/v3/<gv>``: the item path of each resource, with its PUT and PATCH
    operations (taking ``fieldValidation``); None for a group version not served."""
    members = _grouped(resources).get(gv)
    if not members:
        return None
    paths = {}
    for r in members:
        base = f"/{gv}/namespaces/{{namespace}}/{r.plural}" if r.namespaced \
            else f"/{gv}/{r.plural}"
        paths[f"{base}/{{name}}"] = {"put": _operation(r, "replace"),
                                     "patch": _operation(r, "patch")}
        paths[base] = {"post": _operation(r, "create")}
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes (mldiag-provision sandbox)", "version": "unversioned"},
            "paths": paths, "components": {"schemas": {}}}
