"""The offline stand-in for hashicorp/kubernetes 3.4.0 and hashicorp/helm 3.3.0 (sandbox:
a wire-level double): the same plugin machinery as the google stand-in
(:mod:`mldiag_provision.sandbox.plugin`, real schemas from
:mod:`mldiag_provision.sandbox.schema`), but each resource acts, over HTTPS, on the
Kubernetes API server at the provider's configured ``host`` (with its
``cluster_ca_certificate`` and bearer ``token``, or a kubeconfig), normally the stand-in
API server of :mod:`mldiag_provision.sandbox.apiserver`.

Resources:
  * ``kubernetes_namespace_v1``, ``kubernetes_service_account_v1``,
    ``kubernetes_network_policy_v1``: create (POST), update (merge patch / PUT), delete,
    read (404: gone, so Terraform plans to create it again; labels and annotations are read
    back without the provider's "internal" keys, as the real provider's ``isInternalKey``
    does: ``*.kubernetes.io`` except ``app.kubernetes.io``);
  * ``kubernetes_labels``: server-side apply of ``metadata.labels`` on an existing object
    with ``field_manager`` (default ``Terraform``) and ``force``; delete applies no labels, so
    the server drops the ones this manager owned (hashicorp/terraform-provider-kubernetes
    resource_kubernetes_labels.go);
  * ``helm_release``: "installs" a chart by creating what the chart renders
    (:mod:`mldiag_provision.sandbox.charts`) in helm's install order, labelled and
    annotated as helm owns them
    (``app.kubernetes.io/managed-by: Helm``, ``meta.helm.sh/release-name``/``-namespace``), and
    writes the release Secret ``sh.helm.release.v1.<name>.v<revision>``; refuses when a
    kind is not served ("ensure CRDs are installed first"), when the namespace is missing
    (unless ``create_namespace``), when an object exists that the release does not own, and
    for an unknown chart; uninstall deletes the templates' objects in reverse order and keeps
    the CRDs of the chart's ``crds/`` directory, as ``helm uninstall`` does.

``kubernetes_manifest`` is not implemented (no module uses it).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlparse

from mldiag_provision.sandbox import charts
from mldiag_provision.sandbox.plugin import Provider, _fault

HELM_DEFAULTS: dict[str, Any] = {
    # hashicorp/helm 3.x helm_release argument defaults (registry docs, resources/release)
    "atomic": False, "cleanup_on_fail": False, "create_namespace": False,
    "dependency_update": False, "disable_crd_hooks": False,
    "disable_openapi_validation": False, "disable_webhooks": False, "force_update": False,
    "lint": False, "max_history": 0, "namespace": "default", "pass_credentials": False,
    "recreate_pods": False, "render_subchart_notes": True, "replace": False,
    "reset_values": False, "reuse_values": False, "skip_crds": False, "take_ownership": False,
    "timeout": 300, "upgrade_install": False, "verify": False, "wait": True,
    "wait_for_jobs": False, "description": None, "manifest": None,
}
# helm's kind install order (pkg/releaseutil/kind_sorter.go InstallOrder), the kinds we use.
INSTALL_ORDER = ["Namespace", "NetworkPolicy", "ServiceAccount", "Secret", "ConfigMap",
                 "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role",
                 "RoleBinding", "Service", "DaemonSet", "Pod", "Deployment", "Job",
                 "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]


class KubeError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def is_internal_key(key: str) -> bool:
    """The kubernetes provider's ``isInternalKey`` (kubernetes/structures.go; from memory of
    the provider source, unverified here): ``*.kubernetes.io`` keys are the server's, except
    ``app.kubernetes.io`` and ``service.beta.kubernetes.io``."""
    host = key.split("/", 1)[0] if "/" in key else ""
    if host in ("app.kubernetes.io", "service.beta.kubernetes.io"):
        return False
    return host.endswith("kubernetes.io") or "deprecated.daemonset.template.generation" in key


class KubeClient:
    """A minimal Kubernetes REST client (urllib), with discovery for kind -> path."""

    def __init__(self, host: str, token: str | None = None, ca_pem: str | None = None,
                 insecure: bool = False) -> None:
        if not host:
            raise KubeError(0, "the stand-in kubernetes provider has no host: set host (with "
                            "cluster_ca_certificate and token) or config_path")
        self.host = host if "://" in host else f"https://{host}"
        self.token = token
        try:
            self.ctx = ssl.create_default_context(cadata=ca_pem) if ca_pem else (
                ssl.create_default_context())
        except (ssl.SSLError, ValueError) as exc:  # as client-go's: the CA is not PEM
            raise KubeError(0, "Failed to configure client: unable to load root certificates: "
                            f"unable to parse bytes as PEM block ({exc})") from None
        if insecure:
            self.ctx.check_hostname = False
            self.ctx.verify_mode = ssl.CERT_NONE
        self._discovery: dict[str, list[dict[str, Any]]] = {}

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> KubeClient:
        """From the provider's (or helm's ``kubernetes = {...}``) configuration."""
        host, token, ca = cfg.get("host"), cfg.get("token"), cfg.get("cluster_ca_certificate")
        path = cfg.get("config_path") or (cfg.get("config_paths") or [None])[0]
        if not host and path:
            doc = _load_kubeconfig(Path(os.path.expanduser(str(path))))
            ctx_name = cfg.get("config_context") or doc.get("current-context")
            ctx = next((c["context"] for c in doc.get("contexts") or []
                        if c.get("name") == ctx_name), None)
            if ctx is None:
                raise KubeError(0, f'context "{ctx_name}" does not exist in {path}')
            cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
            user: dict[str, Any] = next((u["user"] for u in doc.get("users") or []
                         if u.get("name") == ctx.get("user")), {})
            host = cluster.get("server")
            ca = (base64.b64decode(cluster["certificate-authority-data"]).decode()
                  if cluster.get("certificate-authority-data") else None)
            token = user.get("token")
        return cls(str(host or ""), token, ca, bool(cfg.get("insecure")))

    def call(self, method: str, path: str, body: Any = None, *, query: dict[str, Any] | None = None,
             content_type: str = "application/json") -> Any:
        url = self.host.rstrip("/") + path + (f"?{urlencode(query)}" if query else "")
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                message = json.loads(raw).get("message") or err.reason
            except ValueError:
                message = raw.decode(errors="replace") or str(err.reason)
            raise KubeError(err.code, str(message)) from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            u = urlparse(url)
            verb = method.capitalize()
            if isinstance(reason, ConnectionRefusedError):
                raise KubeError(0, f'{verb} "{url}": dial tcp {u.netloc}: connect: connection '
                                "refused") from None
            raise KubeError(0, f'{verb} "{url}": {reason}') from None
        return json.loads(raw) if raw else None

    def resource(self, api_version: str, kind: str) -> tuple[str, dict[str, Any]]:
        """(group-version base path, APIResource) of a kind; KubeError when not served."""
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if api_version not in self._discovery:
            try:
                doc = self.call("GET", base)
            except KubeError as err:
                if err.code != 404:
                    raise
                doc = {"resources": []}
            self._discovery[api_version] = doc.get("resources") or []
        for r in self._discovery[api_version]:
            if r.get("kind") == kind and "/" not in r.get("name", ""):
                return base, r
        self._discovery.pop(api_version, None)  # a CRD may be added later
        raise KubeError(404, f'no matches for kind "{kind}" in version "{api_version}"')

    def path(self, api_version: str, kind: str, namespace: str | None,
             name: str | None = None) -> str:
        base, r = self.resource(api_version, kind)
        ns = f"/namespaces/{namespace or 'default'}" if r.get("namespaced") else ""
        return f"{base}{ns}/{r['name']}" + (f"/{name}" if name else "")

    def get(self, api_version: str, kind: str, namespace: str | None,
            name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] | None = self.call("GET",
                                                   self.path(api_version, kind, namespace, name))
            return obj
        except KubeError as err:
            if err.code == 404:
                return None
            raise


def _load_kubeconfig(path: Path) -> dict[str, Any]:
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise KubeError(0, f"invalid configuration: {path}: {exc}") from None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def to_k8s(block: Any, value: dict[str, Any]) -> dict[str, Any]:
    """A Terraform block value (snake_case, max-one blocks as lists) as the Kubernetes
    object field (camelCase, max-one blocks as objects), as the provider's expanders do."""
    out: dict[str, Any] = {}
    for name in block.attributes:
        v = value.get(name)
        if v is None or name == "id":
            continue
        if name == "port" and isinstance(v, str):  # IntOrString
            v = int(v) if v.isdigit() else v
        out[_camel(name)] = v
    for name, b in block.blocks.items():
        elems = value.get(name) or []
        if b.max_items == 1:
            if elems:
                out[_camel(name)] = to_k8s(b.block, elems[0] or {})
        elif elems:
            out[_camel(name)] = [to_k8s(b.block, e or {}) for e in elems]
    return out


def _meta_request(meta: dict[str, Any], namespaced: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("name", "generate_name", "labels", "annotations"):
        if meta.get(k) not in (None, {}):
            out[_camel(k)] = meta[k]
    if namespaced:
        out["namespace"] = meta.get("namespace") or "default"
    return out


def _meta_state(meta: dict[str, Any], obj: dict[str, Any], *,
                read_maps: bool = False) -> dict[str, Any]:
    om = obj.get("metadata") or {}
    m = dict(meta)
    m["name"] = om.get("name")
    m["generation"] = om.get("generation", 0)
    m["resource_version"] = om.get("resourceVersion")
    m["uid"] = om.get("uid")
    if read_maps:
        for k in ("labels", "annotations"):
            have = {x: y for x, y in (om.get(k) or {}).items() if not is_internal_key(x)}
            m[k] = have or (None if meta.get(k) is None else {})
    return m


class KubeProvider(Provider):
    """The logic of hashicorp/kubernetes and hashicorp/helm (values in, values out)."""

    def __init__(self, schema: Any, cloud: Any, provider_name: str) -> None:
        super().__init__(schema, cloud)
        self.provider_name = provider_name

    def client(self) -> KubeClient:
        cfg = self.config.get("kubernetes") if self.provider_name == "helm" else self.config
        return KubeClient.from_config(cfg or {})

    # -- plan ----------------------------------------------------------------------------------
    def plan(self, type_name: str, prior: dict[str, Any] | None, proposed: dict[str, Any] | None,
             config: dict[str, Any] | None) -> tuple[dict[str, Any] | None, list[str]]:
        """The planned state of a resource and the attributes that force its replacement
        (helm_release: ``name``, ``namespace``; the kubernetes resources: the metadata's name
        or namespace, ``api_version``, ``kind``); a replacement is planned afresh, as for a
        new resource."""
        if proposed is None:
            return None, []
        block = self.block(type_name)
        config = config or {}
        planned = self._plan_block(block, config, prior, proposed)
        if type_name == "helm_release":
            replace = self._plan_helm_release(planned, config, prior)
        else:
            replace = _identity_changes(block, planned, prior)
        if replace:
            planned = self._plan_block(block, config, None, proposed)
            if type_name == "helm_release":
                self._plan_helm_release(planned, config, None)
        return planned, replace

    def _plan_helm_release(self, planned: dict[str, Any], config: dict[str, Any],
                           prior: dict[str, Any] | None) -> list[str]:
        """Complete a helm_release plan in place: the provider's argument defaults where the
        configuration leaves them unset (on a new release, or where the plan left them
        unknown), ``metadata`` unknown when the chart, its version or its values change.
        Returns the attributes that force a replacement (``name``, ``namespace``)."""
        UNKNOWN = self.sch.UNKNOWN
        for k, v in HELM_DEFAULTS.items():
            if config.get(k) is None and k in planned and (
                    prior is None or planned[k] is UNKNOWN):
                planned[k] = v
        if prior is None:
            return []
        if any(planned.get(k) != prior.get(k) for k in
               ("chart", "repository", "version", "set", "values")):
            planned["metadata"] = UNKNOWN
        return [k for k in ("name", "namespace") if planned.get(k) != prior.get(k)]

    # -- apply ---------------------------------------------------------------------------------
    def apply(self, type_name: str, prior: dict[str, Any] | None, planned: dict[str, Any] | None,
              ) -> tuple[dict[str, Any] | None, str | None]:
        delay = _fault("MLDIAG_STANDIN_DELAY", type_name)
        if delay:
            time.sleep(float(delay))
        fail = _fault("MLDIAG_STANDIN_FAIL", type_name)
        if fail:
            return prior, fail
        handler = getattr(self, f"_apply_{type_name}", None)
        if handler is None:
            return prior, f"{type_name} is not implemented by the offline stand-in"
        try:
            state = handler(prior, planned)
        except (KubeError, charts.ChartNotFound) as err:
            return prior, str(err.args[0] if isinstance(err, LookupError) else err)
        if state is not None:
            block = self.block(type_name)
            state = self._fill(block.implied_type(), state, type_name, "", state,
                               str(state.get("id")))
        return state, None

    def _apply_kubernetes_namespace_v1(self, prior: dict[str, Any] | None,
                                       planned: dict[str, Any] | None) -> Any:
        c = self.client()
        if planned is None:
            assert prior is not None  # a destroy: Terraform sends the prior state
            name = prior["metadata"][0]["name"]
            try:
                c.call("DELETE", f"/api/v1/namespaces/{name}")
            except KubeError as err:
                if err.code != 404:
                    raise
            return None
        meta = planned["metadata"][0]
        if prior is None:
            obj = c.call("POST", "/api/v1/namespaces",
                         {"apiVersion": "v1", "kind": "Namespace",
                          "metadata": _meta_request(meta, False)})
            if planned.get("wait_for_default_service_account"):
                self._wait(lambda: c.get("v1", "ServiceAccount", obj["metadata"]["name"],
                                         "default"), "the default service account")
        else:
            obj = c.call("PATCH", f"/api/v1/namespaces/{meta['name']}",
                         {"metadata": self._map_patch(prior["metadata"][0], meta)},
                         content_type="application/merge-patch+json")
        state = dict(planned)
        state["metadata"] = [_meta_state(meta, obj)]
        state["id"] = obj["metadata"]["name"]
        state["wait_for_default_service_account"] = bool(
            planned.get("wait_for_default_service_account"))
        return state

    @staticmethod
    def _map_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for k in ("labels", "annotations"):
            before, after = old.get(k) or {}, new.get(k) or {}
            patch = {x: None for x in before if x not in after}
            patch.update(after)
            if patch:
                out[k] = patch
        return out

    @staticmethod
    def _wait(probe: Any, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while probe() is None:
            if time.monotonic() > deadline:
                raise KubeError(0, f"timed out waiting for {what}")
            time.sleep(0.2)

    @staticmethod
    def _delete_named(c: Any, base: str, name: str) -> None:
        """DELETE ``base/name``; already gone (404) is fine, as the provider treats it."""
        try:
            c.call("DELETE", f"{base}/{name}")
        except KubeError as err:
            if err.code != 404:
                raise

    @staticmethod
    def _create_or_replace(c: Any, base: str, name: str, body: dict[str, Any], *,
                           exists: bool) -> Any:
        """POST a new object, or PUT it over the existing one at its resourceVersion."""
        if not exists:
            return c.call("POST", base, body)
        old = c.call("GET", f"{base}/{name}")
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        return c.call("PUT", f"{base}/{name}", body)

    def _apply_kubernetes_service_account_v1(self, prior: dict[str, Any] | None,
                                             planned: dict[str, Any] | None) -> Any:
        c = self.client()
        src = planned or prior
        assert src is not None
        meta = src["metadata"][0]
        ns = meta.get("namespace") or "default"
        base = f"/api/v1/namespaces/{ns}/serviceaccounts"
        if planned is None:
            self._delete_named(c, base, meta["name"])
            return None
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": _meta_request(meta, True)}
        if planned.get("automount_service_account_token") is not None:
            body["automountServiceAccountToken"] = planned["automount_service_account_token"]
        for tf, k8s in (("secret", "secrets"), ("image_pull_secret", "imagePullSecrets")):
            if planned.get(tf):
                body[k8s] = [{"name": s.get("name")} for s in planned[tf]]
        obj = self._create_or_replace(c, base, meta["name"], body, exists=prior is not None)
        state = dict(planned)
        state["metadata"] = [_meta_state(meta, obj)]
        state["id"] = f"{ns}/{obj['metadata']['name']}"
        state["default_secret_name"] = ""
        return state

    def _apply_kubernetes_network_policy_v1(self, prior: dict[str, Any] | None,
                                            planned: dict[str, Any] | None) -> Any:
        c = self.client()
        src = planned or prior
        assert src is not None
        meta = src["metadata"][0]
        ns = meta.get("namespace") or "default"
        base = f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
        if planned is None:
            self._delete_named(c, base, meta["name"])
            return None
        block = self.block("kubernetes_network_policy_v1")
        spec = to_k8s(block.blocks["spec"].block, (planned.get("spec") or [{}])[0] or {})
        spec.setdefault("podSelector", {})
        body = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": _meta_request(meta, True), "spec": spec}
        obj = self._create_or_replace(c, base, meta["name"], body, exists=prior is not None)
        state = dict(planned)
        state["metadata"] = [_meta_state(meta, obj)]
        state["id"] = f"{ns}/{obj['metadata']['name']}"
        return state

    def _apply_kubernetes_labels(self, prior: dict[str, Any] | None,
                                 planned: dict[str, Any] | None) -> Any:
        c = self.client()
        src = planned or prior
        assert src is not None
        meta = src["metadata"][0]
        api_version, kind = src["api_version"], src["kind"]
        name, ns = meta["name"], meta.get("namespace")
        manager = src.get("field_manager") or "Terraform"
        path = c.path(api_version, kind, ns, name)
        if c.get(api_version, kind, ns, name) is None:
            if planned is None:
                return None
            raise KubeError(404, f'The resource "{name}" does not exist')
        patch_meta: dict[str, Any] = {"name": name, "labels": {} if planned is None else
                            dict(planned.get("labels") or {})}
        if ns:
            patch_meta["namespace"] = ns
        c.call("PATCH", path, {"apiVersion": api_version, "kind": kind, "metadata": patch_meta},
               query={"fieldManager": manager,
                      "force": "true" if src.get("force") else "false"},
               content_type="application/apply-patch+yaml")
        if planned is None:
            return None
        state = dict(planned)
        state["id"] = f"apiVersion={api_version},kind={kind},name={name}" + (
            f",namespace={ns}" if ns else "")
        return state

    def _apply_kubernetes_manifest(self, prior: dict[str, Any] | None,
                                   planned: dict[str, Any] | None) -> Any:
        raise KubeError(0, "kubernetes_manifest is not implemented by the offline stand-in")

    # -- helm ----------------------------------------------------------------------------------
    def _apply_helm_release(self, prior: dict[str, Any] | None,
                            planned: dict[str, Any] | None) -> Any:
        """``helm install`` (``prior`` None) or ``helm upgrade`` of a release, or ``helm
        uninstall`` (``planned`` None); returns the new state (None once uninstalled).
        KubeError with helm's words when the namespace is missing, the name is taken, a kind
        is not served or an object belongs to another release."""
        c = self.client()
        if planned is None:
            assert prior is not None
            self._uninstall(c, prior)
            return None
        name = planned["name"]
        ns = planned.get("namespace") or "default"
        chart = charts.resolve(planned["chart"], planned.get("repository"),
                               planned.get("version"))
        values = _values(planned)
        rendered = chart.render(name, ns, values)
        self._ensure_namespace(c, ns, bool(planned.get("create_namespace")))
        revision, old_objects = self._previous_release(c, prior, name, ns)
        objects = self._install_release(c, rendered, planned, old_objects, name, ns,
                                        upgrade=prior is not None)
        if planned.get("wait", True):
            self._wait_for_deployments(c, objects, ns, float(planned.get("timeout") or 300))
        now = int(time.time())
        version = planned.get("version") or "0.0.0"
        self._write_release_secret(c, name, ns, revision, chart.name, version, values)
        first = now if prior is None else ((prior.get("metadata") or [{}])[0] or {}).get(
            "first_deployed", now)
        state = dict(planned)
        state.update({
            "id": name, "status": "deployed", "namespace": ns, "version": version,
            "manifest": None, "resources": {},
            "metadata": [{"name": name, "namespace": ns, "revision": revision,
                          "chart": chart.name, "version": version,
                          "app_version": rendered.app_version, "first_deployed": first,
                          "last_deployed": now, "notes": rendered.notes,
                          "values": json.dumps(values, sort_keys=True)}]})
        return state

    @staticmethod
    def _ensure_namespace(c: KubeClient, ns: str, create: bool) -> None:
        """The release's namespace exists, created when ``create`` (helm's
        ``--create-namespace``); KubeError 404 otherwise."""
        if c.get("v1", "Namespace", None, ns) is not None:
            return
        if not create:
            raise KubeError(404, f'create: failed to create: namespaces "{ns}" not found')
        c.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": ns}})

    def _previous_release(self, c: KubeClient, prior: dict[str, Any] | None, name: str,
                          ns: str) -> tuple[int, list[dict[str, Any]]]:
        """The revision this install or upgrade writes and the objects the previous revision
        rendered (none on an install); KubeError when an install meets a release of the same
        name."""
        if prior is None:
            if self._release_secrets(c, name, ns):
                raise KubeError(0, "cannot re-use a name that is still in use")
            return 1, []
        revision = int(((prior.get("metadata") or [{}])[0] or {}).get("revision") or 0) + 1
        old_objects = charts.resolve(prior["chart"], prior.get("repository"),
                                     prior.get("version")).render(
            name, ns, _values(prior)).objects
        return revision, old_objects

    def _install_release(self, c: KubeClient, rendered: charts.Rendered, planned: dict[str, Any],
                         old_objects: list[dict[str, Any]], name: str, ns: str, *,
                         upgrade: bool) -> list[dict[str, Any]]:
        """Create or update what the chart rendered, in helm's install order, after its CRDs
        (unless ``skip_crds``), then delete what the previous revision had and this one has
        not. A failed install removes what it created (as ``atomic = true`` would). Returns
        the rendered objects in install order."""
        created: list[dict[str, Any]] = []
        try:
            if not planned.get("skip_crds"):
                _install_crds(c, rendered.crds)
            objects = sorted(rendered.objects, key=_install_rank)
            _check_kinds_served(c, objects, ns)
            for obj in objects:
                self._install_object(c, obj, name, ns, created)
            new_keys = {_key(o) for o in objects}
            for obj in sorted(old_objects, key=_install_rank, reverse=True):
                if _key(obj) not in new_keys:
                    self._delete_object(c, obj, ns)
        except KubeError:
            if not upgrade:  # leave nothing half-installed (as atomic = true would)
                for obj in reversed(created):
                    self._delete_object(c, obj, ns)
            raise
        return objects

    def _wait_for_deployments(self, c: KubeClient, objects: list[dict[str, Any]], ns: str,
                              timeout: float) -> None:
        """helm's ``--wait``: every Deployment of the release available within ``timeout``
        seconds."""
        for obj in objects:
            if obj["kind"] == "Deployment":
                self._wait(lambda o=obj: _available(c.get(
                    "apps/v1", "Deployment", ns, o["metadata"]["name"])),
                    f"Deployment {obj['metadata']['name']} to be available", timeout)

    @staticmethod
    def _install_object(c: KubeClient, obj: dict[str, Any], release: str, ns: str,
                        created: list[dict[str, Any]]) -> None:
        obj = json.loads(json.dumps(obj))
        meta = obj["metadata"]
        meta.setdefault("labels", {})["app.kubernetes.io/managed-by"] = "Helm"
        meta.setdefault("annotations", {}).update({"meta.helm.sh/release-name": release,
                                                   "meta.helm.sh/release-namespace": ns})
        target_ns = meta.get("namespace") or ns
        have = c.get(obj["apiVersion"], obj["kind"], target_ns, meta["name"])
        if have is None:
            c.call("POST", c.path(obj["apiVersion"], obj["kind"], target_ns), obj)
            created.append(obj)
            return
        owner = (have["metadata"].get("annotations") or {}).get("meta.helm.sh/release-name")
        if owner != release:
            where = f' in namespace "{target_ns}"' if "namespace" in have["metadata"] else ""
            why = (f'annotation validation error: key "meta.helm.sh/release-name" must equal '
                   f'"{release}": current value is "{owner}"' if owner else
                   'label validation error: missing key "app.kubernetes.io/managed-by": must '
                   'be set to "Helm"')
            raise KubeError(0, f"Unable to continue with install: {obj['kind']} "
                            f'"{meta["name"]}"{where} exists and cannot be imported into the '
                            f"current release: invalid ownership metadata; {why}")
        meta["resourceVersion"] = have["metadata"]["resourceVersion"]
        c.call("PUT", c.path(obj["apiVersion"], obj["kind"], target_ns, meta["name"]), obj)

    @staticmethod
    def _delete_object(c: KubeClient, obj: dict[str, Any], ns: str) -> None:
        try:
            c.call("DELETE", c.path(obj["apiVersion"], obj["kind"],
                                    obj["metadata"].get("namespace") or ns,
                                    obj["metadata"]["name"]))
        except KubeError as err:
            if err.code != 404:
                raise

    @staticmethod
    def _release_secrets(c: KubeClient, name: str, ns: str) -> list[dict[str, Any]]:
        try:
            doc = c.call("GET", f"/api/v1/namespaces/{ns}/secrets",
                         query={"labelSelector": f"owner=helm,name={name}"})
        except KubeError as err:
            if err.code == 404:
                return []
            raise
        return (doc or {}).get("items") or []

    def _write_release_secret(self, c: KubeClient, name: str, ns: str, revision: int,
                              chart: str, version: str, values: dict[str, Any]) -> None:
        for old in self._release_secrets(c, name, ns):
            if old["metadata"]["labels"].get("status") == "deployed":
                c.call("PATCH", f"/api/v1/namespaces/{ns}/secrets/{old['metadata']['name']}",
                       {"metadata": {"labels": {"status": "superseded"}}},
                       content_type="application/merge-patch+json")
        record = {"name": name, "namespace": ns, "version": revision,
                  "info": {"status": "deployed"},
                  "chart": {"metadata": {"name": chart, "version": version}},
                  "config": values}
        # helm's storage driver: base64(gzip(JSON)) in data.release (helm pkg/storage/driver)
        payload = base64.b64encode(gzip.compress(json.dumps(record).encode())).decode()
        c.call("POST", f"/api/v1/namespaces/{ns}/secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": f"sh.helm.release.v1.{name}.v{revision}", "namespace": ns,
                         "labels": {"name": name, "owner": "helm", "status": "deployed",
                                    "version": str(revision)}},
            "data": {"release": base64.b64encode(payload.encode()).decode()}})

    def _uninstall(self, c: KubeClient, prior: dict[str, Any]) -> None:
        name = prior["name"]
        ns = prior.get("namespace") or "default"
        if not self._release_secrets(c, name, ns):
            return  # already gone
        rendered = charts.resolve(prior["chart"], prior.get("repository"),
                                  prior.get("version")).render(name, ns, _values(prior))
        for obj in sorted(rendered.objects, key=_install_rank, reverse=True):
            self._delete_object(c, obj, ns)
        for s in self._release_secrets(c, name, ns):
            c.call("DELETE", f"/api/v1/namespaces/{ns}/secrets/{s['metadata']['name']}")

    # -- read ----------------------------------------------------------------------------------
    def read(self, type_name: str, current: dict[str, Any] | None) -> dict[str, Any] | None:
        """The refreshed state of a resource; None when it is gone (Terraform then plans to
        create it again)."""
        if current is None:
            return None
        c = self.client()
        if type_name == "helm_release":
            return self._read_helm_release(c, current)
        if type_name == "kubernetes_labels":
            return _read_labels(c, current)
        if type_name not in MANAGED_KINDS:
            return current
        meta = current["metadata"][0]
        obj = c.get(*MANAGED_KINDS[type_name], meta.get("namespace"), meta["name"])
        if obj is None:
            return None
        return {**current, "metadata": [_meta_state(meta, obj, read_maps=True)]}

    def _read_helm_release(self, c: KubeClient,
                           current: dict[str, Any]) -> dict[str, Any] | None:
        """A release is there while a release Secret of it says ``deployed``."""
        ns = current.get("namespace") or "default"
        deployed = [s for s in self._release_secrets(c, current["name"], ns)
                    if s["metadata"]["labels"].get("status") == "deployed"]
        return current if deployed else None

    def read_data(self, type_name: str, config: dict[str, Any]) -> dict[str, Any]:
        if type_name == "kubernetes_namespace_v1":
            c = self.client()
            meta = (config.get("metadata") or [{}])[0] or {}
            obj = c.get("v1", "Namespace", None, str(meta.get("name")))
            if obj is None:
                raise LookupError(f'namespaces "{meta.get("name")}" not found')
            block = self.block(type_name, data=True)
            state = self._plan_block(block, config, None, config)
            state["metadata"] = [_meta_state(state["metadata"][0], obj, read_maps=True)]
            state["id"] = obj["metadata"]["name"]
            filled: dict[str, Any] = self._fill(block.implied_type(), state, type_name, "", state,
                                                state["id"])
            return filled
        raise LookupError(f"data source {type_name} is not implemented by the offline stand-in")


# the kubernetes resources read back by their object: apiVersion and kind
MANAGED_KINDS: dict[str, tuple[str, str]] = {
    "kubernetes_namespace_v1": ("v1", "Namespace"),
    "kubernetes_service_account_v1": ("v1", "ServiceAccount"),
    "kubernetes_network_policy_v1": ("networking.k8s.io/v1", "NetworkPolicy"),
}


def _identity_changes(block: Any, planned: dict[str, Any],
                      prior: dict[str, Any] | None) -> list[str]:
    """The attributes of a kubernetes resource whose change forces a replacement: the
    metadata's names or namespaces (``metadata``), ``api_version``, ``kind``."""
    if prior is None:
        return []

    def ident(v: dict[str, Any]) -> list[tuple[Any, Any]]:
        return [((m or {}).get("name"), (m or {}).get("namespace"))
                for m in v.get("metadata") or []]

    replace = ["metadata"] if ident(planned) != ident(prior) else []
    return replace + [k for k in ("api_version", "kind")
                      if k in block.attributes and planned.get(k) != prior.get(k)]


def _read_labels(c: KubeClient, current: dict[str, Any]) -> dict[str, Any] | None:
    """A kubernetes_labels resource as read back: the labels of its object that its field
    manager (default ``Terraform``) owns; None when the object is gone."""
    meta = current["metadata"][0]
    obj = c.get(current["api_version"], current["kind"], meta.get("namespace"),
                meta["name"])
    if obj is None:
        return None
    manager = current.get("field_manager") or "Terraform"
    owned: set[str] = set()
    for m in obj["metadata"].get("managedFields") or []:
        if m.get("manager") == manager:
            owned |= {k[2:] for k in ((m.get("fieldsV1") or {}).get("f:metadata", {})
                                      .get("f:labels") or {})}
    labels = obj["metadata"].get("labels") or {}
    return {**current, "labels": {k: v for k, v in labels.items() if k in owned}}


def _install_crds(c: KubeClient, crds: list[dict[str, Any]]) -> None:
    """A chart's ``crds/`` first; one that is present is left alone (helm never upgrades
    CRDs)."""
    for crd in crds:
        if c.get(crd["apiVersion"], crd["kind"], None, crd["metadata"]["name"]) is None:
            c.call("POST", c.path(crd["apiVersion"], crd["kind"], None), crd)


def _check_kinds_served(c: KubeClient, objects: list[dict[str, Any]], ns: str) -> None:
    """helm builds every object before it creates any: KubeError with helm's "ensure CRDs
    are installed first" when the server does not serve a kind."""
    for obj in objects:
        try:
            c.resource(obj["apiVersion"], obj["kind"])
        except KubeError as err:
            if err.code != 404:
                raise
            raise KubeError(0, "unable to build kubernetes objects from release "
                            "manifest: resource mapping not found for name: "
                            f'"{obj["metadata"]["name"]}" namespace: "{ns}" from "": '
                            f'no matches for kind "{obj["kind"]}" in version '
                            f'"{obj["apiVersion"]}"\nensure CRDs are installed first'
                            ) from None


def _values(release: dict[str, Any]) -> dict[str, str]:
    """A release's values, flattened to dotted keys (``set`` over ``values`` YAML)."""
    import yaml

    out: dict[str, str] = {}

    def flatten(prefix: str, v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                flatten(f"{prefix}.{k}" if prefix else str(k), x)
        else:
            out[prefix] = str(v).lower() if isinstance(v, bool) else str(v)

    for doc in release.get("values") or []:
        flatten("", yaml.safe_load(doc) or {})
    for s in release.get("set") or []:
        out[str(s.get("name"))] = str(s.get("value"))
    return out


def _install_rank(obj: dict[str, Any]) -> int:
    kind = obj.get("kind")
    return INSTALL_ORDER.index(kind) if kind in INSTALL_ORDER else len(INSTALL_ORDER)


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    m = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], m.get("namespace", ""), m["name"])


def _available(dep: dict[str, Any] | None) -> bool | None:
    if dep is None:
        return None
    want = (dep.get("spec") or {}).get("replicas", 1)
    return True if ((dep.get("status") or {}).get("availableReplicas") or 0) >= want else None

