"""The offline stand-in for hashicorp/google and hashicorp/google-beta: a real Terraform
provider plugin (protocol 6 over gRPC), written in Python, serving the REAL provider schemas.

Part of the sandbox, a wire-level double of Google Cloud. It is not Google Cloud and
creates nothing: "applying" stores each
object as a JSON file in a local directory (the stand-in's "cloud", ``MLDIAG_STANDIN_CLOUD``,
default ``./.standin-cloud`` under Terraform's working directory).

How Terraform runs it (hashicorp/go-plugin): Terraform execs the plugin with
``TF_PLUGIN_MAGIC_COOKIE``, ``PLUGIN_PROTOCOL_VERSIONS`` and, for AutoMTLS,
``PLUGIN_CLIENT_CERT`` (its PEM client certificate). The plugin listens on a Unix socket with
TLS, trusts only that client certificate, and prints one handshake line on stdout:
``1|6|unix|<socket>|grpc|<base64 DER of its own self-signed certificate, no padding>``.
Besides ``tfplugin6.Provider`` it serves ``plugin.GRPCController`` (Shutdown) and the gRPC
health check; the broker and stdio services are optional and answer UNIMPLEMENTED.

Behaviour:
  * validation: Terraform core checks every configuration against the served schema
    (unknown arguments, blocks written as attributes, missing required ones, types); the
    stand-in adds nothing;
  * plan: computed attributes left null in the configuration are unknown on create and keep
    their prior value on update; a small table of identifying attributes
    (:data:`REPLACE_ON`) forces replacement, as the real provider's ForceNew does;
  * apply: unknowns get deterministic values; the object is written to the cloud directory;
  * create of an object that already exists fails with Google's 409 for named objects
    (:data:`CONFLICT_ON_CREATE`), as after a lost or interrupted state write;
  * read: returns what the cloud directory holds (a test that edits or deletes a file there
    simulates drift); import: refused;
  * Google's refusals (names over their limits, ordering, API enablement, TPU slice sizing,
    the _Default log bucket): :mod:`mldiag_provision.sandbox.rules`, each rule with its source.

Fault injection for tests (environment, inherited through Terraform):
  * ``MLDIAG_STANDIN_FAIL=TYPE:MESSAGE`` fails the apply of every TYPE resource with MESSAGE;
  * ``MLDIAG_STANDIN_DELAY=TYPE:SECONDS`` sleeps before an apply of TYPE completes;
  * ``MLDIAG_STANDIN_STARTS=FILE``: each start appends ``PID PROVIDER MODE`` to FILE (MODE
    ``managed``: Terraform started it, with AutoMTLS; ``reattach``: mldiag-provision's
    provider keeper did, see provisioner/mldiag_provision/engines/provider_pool.py).

The in-cluster stage: ``hashicorp/kubernetes`` and ``hashicorp/helm`` are served by the same
machinery with :class:`mldiag_provision.sandbox.kube_providers.KubeProvider`, acting on a
Kubernetes API server (the stand-in one, :mod:`mldiag_provision.sandbox.apiserver`). With
``MLDIAG_STANDIN_APISERVER`` (host:port)
and ``MLDIAG_STANDIN_APISERVER_CA`` (PEM file) set, clusters get that ``endpoint`` and CA, and
``data.google_container_cluster`` reads the stored cluster (see
:mod:`mldiag_provision.sandbox.gke_cluster`).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

from mldiag_provision.sandbox import rules

SANDBOX_PROJECT_NUMBER = "123456789012"
"""The sandbox project's number (the Resource Manager double answers the same:
:class:`mldiag_provision.sandbox.gcp_apis.FakeProject`), in the names Google derives from it
(the Compute Engine default service account)."""

MAGIC_COOKIE_KEY = "TF_PLUGIN_MAGIC_COOKIE"
MAGIC_COOKIE_VALUE = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"

# Attributes whose change replaces the object (the real provider's ForceNew), per type; the
# default applies to types not listed. Only attributes present in the schema are used.
REPLACE_ON: dict[str, tuple[str, ...]] = {
    "*": ("project", "name", "location"),
    "google_service_account": ("project", "account_id"),
    "google_project_service": ("project", "service"),
    "google_project_iam_member": ("project", "role", "member"),
    "google_project_iam_custom_role": ("project", "role_id"),
    "google_service_account_iam_member": ("service_account_id", "role", "member"),
    "google_logging_project_bucket_config": ("project", "location", "bucket_id"),
    "google_container_cluster": ("project", "name", "location", "enable_autopilot",
                                 "network"),
    "google_container_node_pool": ("project", "name", "location", "cluster"),
    # compute.routers / routers.nats / firewalls: the name (and region, network) identify them
    "google_compute_router": ("project", "name", "region", "network"),
    "google_compute_router_nat": ("project", "name", "region", "router"),
    "google_compute_firewall": ("project", "name", "network"),
}


# Types whose create fails when the object already exists (Google answers 409); creating an
# IAM member, enabling a service or configuring the _Default log bucket is idempotent.
CONFLICT_ON_CREATE = frozenset({
    "google_service_account", "google_storage_bucket", "google_container_cluster",
    "google_container_node_pool", "google_project_iam_custom_role", "google_compute_network",
    "google_compute_subnetwork", "google_compute_resource_policy",
    "google_hypercomputecluster_cluster", "google_compute_router", "google_compute_firewall"})


def _identity_attrs(type_name: str, block: Any) -> list[str]:
    names = REPLACE_ON.get(type_name, REPLACE_ON["*"])
    return [n for n in names if n in block.attributes]


def _self_signed_cert() -> tuple[bytes, bytes, bytes]:
    """(cert PEM, key PEM, cert DER) valid for "localhost", as go-plugin's client expects."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mldiag stand-in")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True,
                                         key_cert_sign=True, content_commitment=False,
                                         data_encipherment=False, key_agreement=True,
                                         crl_sign=False, encipher_only=False,
                                         decipher_only=False), True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return (cert.public_bytes(serialization.Encoding.PEM), key_pem,
            cert.public_bytes(serialization.Encoding.DER))


def _server_cert() -> tuple[bytes, bytes, bytes]:
    """The plugin's certificate: the one the mirror installed (``MLDIAG_STANDIN_CERT_DIR``)
    when there is one, which saves every plugin start a key generation; else a new one."""
    cert_dir = os.environ.get("MLDIAG_STANDIN_CERT_DIR")
    if cert_dir:
        try:
            d = Path(cert_dir)
            return ((d / "cert.pem").read_bytes(), (d / "key.pem").read_bytes(),
                    (d / "cert.der").read_bytes())
        except OSError:
            pass
    return _self_signed_cert()


class Cloud:
    """The stand-in's "cloud": one JSON file per object under ``root/<type>/``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, type_name: str, object_id: str) -> Path:
        digest = hashlib.sha256(object_id.encode()).hexdigest()[:24]
        return self.root / type_name / f"{digest}.json"

    def get(self, type_name: str, object_id: str) -> dict[str, Any] | None:
        try:
            doc = json.loads(self._path(type_name, object_id).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        state: dict[str, Any] | None = doc["state"]
        return state

    def put(self, type_name: str, object_id: str, state: dict[str, Any]) -> None:
        path = self._path(type_name, object_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"id": object_id, "type": type_name, "state": state}, f, indent=1,
                      sort_keys=True)
        os.replace(tmp, path)

    def delete(self, type_name: str, object_id: str) -> None:
        self._path(type_name, object_id).unlink(missing_ok=True)


def _fault(env_key: str, type_name: str) -> str | None:
    spec = os.environ.get(env_key, "")
    for item in filter(None, spec.split(";")):
        t, _, arg = item.partition(":")
        if t == type_name:
            return arg
    return None


class Provider:
    """The provider logic, independent of gRPC (values in, values out)."""

    def __init__(self, schema: Any, cloud: Cloud) -> None:
        from mldiag_provision.sandbox import schema as sch

        self.sch = sch
        self.schema = schema
        self.cloud = cloud
        self.config: dict[str, Any] = {}

    def block(self, type_name: str, data: bool = False) -> Any:
        table = self.schema.data_sources if data else self.schema.resources
        return table[type_name]

    # -- plan ----------------------------------------------------------------------------------
    def plan(self, type_name: str, prior: dict[str, Any] | None, proposed: dict[str, Any] | None,
             config: dict[str, Any] | None) -> tuple[dict[str, Any] | None, list[str]]:
        if proposed is None:
            return None, []
        block = self.block(type_name)
        planned = self._plan_block(block, config or {}, prior, proposed)
        replace = []
        if prior is not None:
            replace = [n for n in _identity_attrs(type_name, block)
                       if planned.get(n) != prior.get(n)]
        if replace:  # a replacement is a create: recompute computed values
            planned = self._plan_block(block, config or {}, None, proposed)
        return rules.adjust_plan(type_name, prior, planned), replace  # provider diff rules

    def _plan_block(self, block: Any, config: dict[str, Any], prior: dict[str, Any] | None,
                    proposed: dict[str, Any]) -> dict[str, Any]:
        """The planned value of a block (Terraform's PlanResourceChange, per attribute and
        nested block): a computed attribute left unset in ``config`` keeps its ``prior``
        value, or is unknown on a create; nested blocks are planned element by element."""
        UNKNOWN = self.sch.UNKNOWN
        out: dict[str, Any] = {}
        for name, a in block.attributes.items():
            value = proposed.get(name)
            if a.computed and config.get(name) is None:
                value = prior.get(name) if prior is not None else UNKNOWN
            out[name] = value
        for name, b in block.blocks.items():
            value = proposed.get(name)
            cfg = config.get(name)
            old = prior.get(name) if prior is not None else None
            if b.nesting in ("list", "set"):
                out[name] = self._plan_elements(b, cfg, old, value)
            else:
                out[name] = (None if value is None else self._plan_block(
                    b.block, cfg if isinstance(cfg, dict) else {},
                    old if isinstance(old, dict) else None, value))
        return out

    def _plan_elements(self, b: Any, cfg: Any, old: Any, value: Any) -> Any:
        """The planned elements of a list or set block ``b``: each planned against its
        configuration (by position) and its prior element (by position in a list, by its
        settable attributes in a set); an empty optional+computed block keeps its prior
        elements, or gets one element of computed values."""
        elems = value if isinstance(value, list) else []
        if not elems and self.sch.optional_computed_block(b):
            return old if old else [self._plan_block(b.block, {}, None, {})]
        cfgs = cfg if isinstance(cfg, list) else []
        olds = old if isinstance(old, list) else []
        planned: list[Any] = []
        for i, e in enumerate(elems):
            if e is self.sch.UNKNOWN:
                planned.append(e)
                continue
            c = cfgs[i] if i < len(cfgs) and isinstance(cfgs[i], dict) else {}
            o = olds[i] if b.nesting == "list" and i < len(olds) else None
            if b.nesting == "set":
                o = next((x for x in olds if self._same_settable(b.block, x, e)), None)
            planned.append(self._plan_block(b.block, c, o, e))
        return planned

    @staticmethod
    def _same_settable(block: Any, a: dict[str, Any], b: dict[str, Any]) -> bool:
        return all(a.get(n) == b.get(n) for n, x in block.attributes.items()
                   if x.optional or x.required)

    # -- apply ---------------------------------------------------------------------------------
    def apply(self, type_name: str, prior: dict[str, Any] | None, planned: dict[str, Any] | None,
              ) -> tuple[dict[str, Any] | None, str | None]:
        delay = _fault("MLDIAG_STANDIN_DELAY", type_name)
        if delay:
            time.sleep(float(delay))
        fail = _fault("MLDIAG_STANDIN_FAIL", type_name)
        if fail:
            return prior, fail
        refusal = rules.refuse(self.cloud, type_name, prior, planned, self.config)  # Google's
        if refusal or (planned is None and rules.forget_only(type_name, prior)):
            return (prior, refusal) if refusal else (None, None)
        block = self.block(type_name)
        if planned is None:
            if (type_name == "google_container_cluster" and prior is not None
                    and prior.get("deletion_protection")):
                # The real provider's Delete refuses the same way.
                return prior, ("Cannot destroy cluster because deletion_protection is set to "
                               "true. Set it to false to proceed with cluster deletion.")
            if prior is not None:
                self.cloud.delete(type_name, str(prior.get("id")))
            return None, None
        object_id = prior.get("id") if prior and prior.get("id") else self._new_id(
            type_name, block, planned)
        if (prior is None and type_name in CONFLICT_ON_CREATE
                and self.cloud.get(type_name, str(object_id)) is not None):
            return None, (f"googleapi: Error 409: the resource '{object_id}' already exists, "
                          "alreadyExists")
        state = self._fill(block.implied_type(), planned, type_name, "", planned,
                           str(object_id))
        if "id" in block.attributes:
            state["id"] = object_id
        self.cloud.put(type_name, str(object_id), state)
        return state, None

    def _new_id(self, type_name: str, block: Any, planned: dict[str, Any]) -> str:
        parts = [str(planned.get(n)) for n in _identity_attrs(type_name, block)]
        if not parts:
            parts = [hashlib.sha256(json.dumps(planned, default=str, sort_keys=True)
                                    .encode()).hexdigest()[:12]]
        return "/".join([type_name, *parts])

    def _fill(self, t: Any, value: Any, type_name: str, path: str, top: dict[str, Any],
              object_id: str) -> Any:
        """Replace unknowns under ``value`` (of type ``t``) with deterministic values."""
        if value is self.sch.UNKNOWN:
            return self._invent(t, type_name, path, top, object_id)
        if value is None or isinstance(t, str):
            return value
        kind, inner = t
        if kind == "object":
            return {k: self._fill(at, value.get(k), type_name, f"{path}{k}.", top, object_id)
                    for k, at in inner.items()}
        if kind == "map":
            return {k: self._fill(inner, v, type_name, path, top, object_id)
                    for k, v in value.items()}
        return [self._fill(inner, v, type_name, path, top, object_id) for v in value]

    def _invent(self, t: Any, type_name: str, path: str, top: dict[str, Any],
                object_id: str) -> Any:
        """A deterministic value of type ``t`` for the unknown at ``path`` (dotted, ending in
        a dot) of a ``type_name`` object ``top`` whose id is ``object_id``: a string from
        :meth:`_invent_string`, 0, false, a map (labels: the provider's ``default_labels``
        merged with the object's own), an object of invented attributes, an empty list."""
        name = path.rstrip(".")
        if t == "string":
            return self._invent_string(type_name, name, top, object_id)
        if t == "number":
            return 0
        if t == "bool":
            return False
        if isinstance(t, tuple) and t[0] == "map":
            if name in ("effective_labels", "terraform_labels"):
                labels = dict(self.config.get("default_labels") or {})
                labels.update(top.get("labels") or top.get("resource_labels") or {})
                return labels
            return {}
        if isinstance(t, tuple) and t[0] == "object":
            return {k: self._invent(at, type_name, f"{path}{k}.", top, object_id)
                    for k, at in t[1].items()}
        return []

    def _project(self, top: dict[str, Any]) -> Any:
        """The object's project, else the provider's, else ``standin-project``."""
        project = top.get("project")
        if project is self.sch.UNKNOWN or not project:  # e.g. google_client_config.project
            project = self.config.get("project") or "standin-project"
        return project

    def _invent_string(self, type_name: str, name: str, top: dict[str, Any],
                       object_id: str) -> Any:
        """The string Google would compute for attribute ``name`` (dotted) of a
        ``type_name`` object: the cases below by (resource type, attribute), then by
        attribute alone (type ""); ``standin:<type>.<name>`` for any other."""
        project = self._project(top)
        account = f"{top.get('account_id')}@{project}.iam.gserviceaccount.com"
        compute_sa = f"{SANDBOX_PROJECT_NUMBER}-compute@developer.gserviceaccount.com"
        cases: dict[tuple[str, str], Callable[[], Any]] = {
            ("", "id"): lambda: object_id,
            ("google_service_account", "email"): lambda: account,
            ("google_service_account", "name"):
                lambda: f"projects/{project}/serviceAccounts/{account}",
            # "The Identity of the service account in the form serviceAccount:{email}"
            # (https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/google_service_account)
            ("google_service_account", "member"): lambda: f"serviceAccount:{account}",
            # LogBucket.name: projects/[PROJECT_ID]/locations/[LOCATION_ID]/buckets/[BUCKET_ID]
            # (https://cloud.google.com/logging/docs/reference/v2/rest/v2/projects.locations.buckets)
            ("google_logging_project_bucket_config", "name"):
                lambda: (f"projects/{project}/locations/{top.get('location')}/buckets/"
                         f"{top.get('bucket_id')}"),
            ("google_storage_bucket", "url"): lambda: f"gs://{top.get('name')}",
            # IAM projects.roles: a project's custom role is named
            # projects/{PROJECT_ID}/roles/{CUSTOM_ROLE_ID}
            # (https://cloud.google.com/iam/reference/rest/v1/roles/get)
            ("google_project_iam_custom_role", "name"):
                lambda: f"projects/{project}/roles/{top.get('role_id')}",
            # the Compute Engine default service account,
            # PROJECT_NUMBER-compute@developer.gserviceaccount.com
            # (https://cloud.google.com/compute/docs/access/service-accounts#default_service_account)
            ("google_compute_default_service_account", "email"): lambda: compute_sa,
            ("google_compute_default_service_account", "member"):
                lambda: f"serviceAccount:{compute_sa}",
            ("google_compute_default_service_account", "name"):
                lambda: f"projects/{project}/serviceAccounts/{compute_sa}",
            ("google_compute_default_service_account", "display_name"):
                lambda: "Compute Engine default service account",
            ("google_compute_default_service_account", "unique_id"):
                lambda: _digits(compute_sa, 21),
            # Cluster Director: "Identifier. Relative resource name of the cluster, in the
            # format projects/{project}/locations/{location}/clusters/{cluster}"
            # (https://docs.cloud.google.com/cluster-director/docs/reference/rest/v1/projects.locations.clusters/get)
            ("google_hypercomputecluster_cluster", "name"):
                lambda: (f"projects/{project}/locations/{top.get('location')}/clusters/"
                         f"{top.get('cluster_id')}"),
            # an internal address of the node subnet (private clusters): RFC 1918
            ("", "private_cluster_config.private_endpoint"): lambda: "10.128.0.2",
            # GKE picks none for Private Service Connect clusters (GKE 1.29+): empty
            ("", "private_cluster_config.master_ipv4_cidr_block"): lambda: "",
            # the stand-in API server when one plays the cluster; else TEST-NET-1
            # (documentation range, never routed)
            ("", "endpoint"): lambda: os.environ.get("MLDIAG_STANDIN_APISERVER") or "192.0.2.10",
            ("", "master_auth.cluster_ca_certificate"): _standin_cluster_ca,
            # the real provider's access_token: its argument, else GOOGLE_OAUTH_ACCESS_TOKEN
            ("google_client_config", "access_token"):
                lambda: (self.config.get("access_token")
                         or os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN")
                         or f"standin:{type_name}.{name}"),
            ("", "project"): lambda: project,
            ("", "location"): lambda: self.config.get("region") or "standin-region",
            ("", "region"): lambda: self.config.get("region") or "standin-region",
        }
        make = cases.get((type_name, name)) or cases.get(("", name))
        return make() if make is not None else f"standin:{type_name}.{name}"

    # -- read ----------------------------------------------------------------------------------
    def read(self, type_name: str, current: dict[str, Any] | None) -> dict[str, Any] | None:
        if current is None:
            return None
        stored = self.cloud.get(type_name, str(current.get("id")))
        return stored  # None: the object is gone, Terraform plans to create it again

    def read_data(self, type_name: str, config: dict[str, Any]) -> dict[str, Any]:
        if type_name == "google_container_cluster":
            return self._read_cluster(config)
        block = self.block(type_name, data=True)
        planned = self._plan_block(block, config, None, config)
        object_id = "/".join([type_name] + [str(config.get(n)) for n in sorted(config)
                                            if isinstance(config.get(n), str)])
        state: dict[str, Any] = self._fill(block.implied_type(), planned, type_name, "", planned,
                                           object_id)
        if "id" in block.attributes and not state.get("id"):
            state["id"] = object_id
        return state

    def _read_cluster(self, config: dict[str, Any]) -> dict[str, Any]:
        """``data.google_container_cluster`` reads the stored cluster; a missing one fails as
        the real data source does: ``projects/P/locations/L/clusters/N not found``
        (terraform-provider-google data_source_google_container_cluster.go)."""
        from mldiag_provision.sandbox.gke_cluster import find_cluster

        project = config.get("project") or self.config.get("project")
        location = config.get("location") or self.config.get("region")
        name = config.get("name")
        stored = find_cluster(self.cloud.root, project=project, location=location, name=name)
        if stored is None:
            raise LookupError(f"projects/{project}/locations/{location}/clusters/{name} "
                              "not found")
        block = self.block("google_container_cluster", data=True)
        state: dict[str, Any] = self.sch.conform({k: stored.get(k) for k in block.attributes}
                                                 | {k: stored.get(k) for k in block.blocks},
                                                 block.implied_type())
        # a cluster seeded without its computed endpoint/CA (created outside the stack) has
        # them as any GKE cluster does
        if not state.get("endpoint"):
            state["endpoint"] = os.environ.get("MLDIAG_STANDIN_APISERVER") or "192.0.2.10"
        if not state.get("master_auth"):
            state["master_auth"] = self.sch.conform(
                [{"cluster_ca_certificate": _standin_cluster_ca()}],
                block.implied_type()[1]["master_auth"])
        state["id"] = f"projects/{project}/locations/{location}/clusters/{name}"
        return state


def _digits(seed: str, count: int) -> str:
    """``count`` decimal digits derived from ``seed`` (a stable numeric id such as a service
    account's 21-digit ``unique_id``), never starting with 0."""
    n = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    return str(10 ** (count - 1) + n % (9 * 10 ** (count - 1)))


def _standin_cluster_ca() -> str:
    """base64 PEM of the stand-in API server's CA (``MLDIAG_STANDIN_APISERVER_CA``); without
    one, base64 of a placeholder (still valid base64, so ``base64decode()`` in a
    configuration works; nothing answers at such a cluster's endpoint anyway)."""
    path = os.environ.get("MLDIAG_STANDIN_APISERVER_CA")
    if path:
        try:
            return base64.b64encode(Path(path).read_bytes()).decode()
        except OSError:
            pass
    return base64.b64encode(b"stand-in cluster CA: no stand-in API server").decode()


def _start_tls_relay(listen: str, backend: str, cert_pem: bytes, key_pem: bytes,
                     client_cert_pem: bytes) -> None:  # pragma: no cover - plugin process
    """mTLS on ``listen`` (only ``client_cert_pem`` is trusted; ALPN h2), relayed to the
    plaintext Unix socket ``backend``; runs an asyncio loop in a daemon thread."""
    import asyncio
    import ssl

    tmp = tempfile.mkdtemp(prefix="mldiag-standin-tls-")
    cert_file, key_file = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    with open(cert_file, "wb") as f:
        f.write(cert_pem)
    with os.fdopen(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(key_pem)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    os.unlink(key_file)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cadata=client_cert_pem.decode())
    ctx.set_alpn_protocols(["h2"])

    async def pump(reader: Any, writer: Any) -> None:
        try:
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(reader: Any, writer: Any) -> None:
        b_reader, b_writer = await asyncio.open_unix_connection(backend)
        await asyncio.gather(pump(reader, b_writer), pump(b_reader, writer))

    ready = threading.Event()

    def run() -> None:
        loop = asyncio.new_event_loop()
        loop.run_until_complete(asyncio.start_unix_server(handle, listen, ssl=ctx))
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True, name="tls-relay").start()
    ready.wait()


def _serve(provider_name: str) -> int:  # pragma: no cover - runs as Terraform's child
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This binary is a plugin (the mldiag offline stand-in for "
                         f"hashicorp/{provider_name}). It is run by Terraform, not directly.\n")
        return 1
    import signal

    # As go-plugin's Serve does: Ctrl-C reaches the whole process group; Terraform decides
    # when its plugins stop (GRPCController.Shutdown), so ignore SIGINT here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    starts = os.environ.get("MLDIAG_STANDIN_STARTS")
    if starts:  # tests count plugin starts: "<pid> <provider> managed|reattach" per start
        mode = "managed" if os.environ.get("PLUGIN_CLIENT_CERT") else "reattach"
        with open(starts, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {provider_name} {mode}\n")
    versions = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", "6").split(",")
    if "6" not in versions:
        sys.stderr.write(f"stand-in speaks plugin protocol 6 only; Terraform offers {versions}\n")
        return 1

    import grpc

    from mldiag_provision.sandbox import schema as sch
    from mldiag_provision.sandbox import stubs

    mods = stubs.load(Path(os.environ["MLDIAG_STANDIN_STUBS"]))
    pb, pb_grpc = mods["tfplugin6_pb2"], mods["tfplugin6_pb2_grpc"]
    gp, gp_grpc = mods["goplugin_pb2"], mods["goplugin_pb2_grpc"]
    hp, hp_grpc = mods["health_pb2"], mods["health_pb2_grpc"]

    schema = sch.load_provider(provider_name)
    cloud = Cloud(Path(os.environ.get("MLDIAG_STANDIN_CLOUD", ".standin-cloud")).resolve())
    if provider_name in ("kubernetes", "helm"):
        from mldiag_provision.sandbox.kube_providers import KubeProvider

        logic: Provider = KubeProvider(schema, cloud, provider_name)
    else:
        logic = Provider(schema, cloud)
    done = threading.Event()

    def dv(value: Any, t: Any) -> Any:
        return pb.DynamicValue(msgpack=sch.encode(value, t))

    def diag(summary: str, detail: str = "") -> Any:
        return pb.Diagnostic(severity=pb.Diagnostic.ERROR, summary=summary, detail=detail)

    schema_response = pb.GetProviderSchema.Response(
        provider=pb.Schema(block=sch.block_pb(pb, schema.provider)),
        server_capabilities=pb.ServerCapabilities(plan_destroy=False))
    for n, b in schema.resources.items():
        schema_response.resource_schemas[n].CopyFrom(pb.Schema(block=sch.block_pb(pb, b)))
    for n, b in schema.data_sources.items():
        schema_response.data_source_schemas[n].CopyFrom(pb.Schema(block=sch.block_pb(pb, b)))

    class ProviderService(pb_grpc.ProviderServicer):  # type: ignore[misc,name-defined]  # generated at run time (stubs.py): Any
        def GetProviderSchema(self, request: Any, context: Any) -> Any:
            return schema_response

        def ValidateProviderConfig(self, request: Any, context: Any) -> Any:
            return pb.ValidateProviderConfig.Response()

        def ValidateResourceConfig(self, request: Any, context: Any) -> Any:
            return pb.ValidateResourceConfig.Response(diagnostics=[diag(m) for m in rules.validate(
                request.type_name, sch.decode(request.config.msgpack))])  # provider checks

        def ValidateDataResourceConfig(self, request: Any, context: Any) -> Any:
            return pb.ValidateDataResourceConfig.Response()

        def ConfigureProvider(self, request: Any, context: Any) -> Any:
            logic.config = sch.decode(request.config.msgpack) or {}
            return pb.ConfigureProvider.Response()

        def UpgradeResourceState(self, request: Any, context: Any) -> Any:
            t = logic.block(request.type_name).implied_type()
            raw = json.loads(request.raw_state.json or b"null")
            return pb.UpgradeResourceState.Response(upgraded_state=dv(raw, t))

        def ReadResource(self, request: Any, context: Any) -> Any:
            t = logic.block(request.type_name).implied_type()
            new = logic.read(request.type_name, sch.decode(request.current_state.msgpack))
            return pb.ReadResource.Response(new_state=dv(new, t), private=request.private)

        def PlanResourceChange(self, request: Any, context: Any) -> Any:
            t = logic.block(request.type_name).implied_type()
            planned, replace = logic.plan(request.type_name,
                                          sch.decode(request.prior_state.msgpack),
                                          sch.decode(request.proposed_new_state.msgpack),
                                          sch.decode(request.config.msgpack))
            return pb.PlanResourceChange.Response(
                planned_state=dv(planned, t), legacy_type_system=True,
                planned_private=request.prior_private,
                requires_replace=[pb.AttributePath(steps=[
                    pb.AttributePath.Step(attribute_name=n)]) for n in replace])

        def ApplyResourceChange(self, request: Any, context: Any) -> Any:
            t = logic.block(request.type_name).implied_type()
            new, error = logic.apply(request.type_name, sch.decode(request.prior_state.msgpack),
                                     sch.decode(request.planned_state.msgpack))
            resp = pb.ApplyResourceChange.Response(new_state=dv(new, t),
                                                   legacy_type_system=True)
            if error:
                verb = "deleting" if sch.decode(request.planned_state.msgpack) is None else (
                    "creating" if sch.decode(request.prior_state.msgpack) is None else "updating")
                resp.diagnostics.append(diag(f"Error {verb} {request.type_name}: {error}"))
            return resp

        def ImportResourceState(self, request: Any, context: Any) -> Any:
            return pb.ImportResourceState.Response(diagnostics=[diag(
                "import is not supported by the offline stand-in")])

        def ReadDataSource(self, request: Any, context: Any) -> Any:
            t = logic.block(request.type_name, data=True).implied_type()
            try:
                state = logic.read_data(request.type_name,
                                        sch.decode(request.config.msgpack) or {})
            except LookupError as exc:  # e.g. the cluster a data source names does not exist
                return pb.ReadDataSource.Response(diagnostics=[diag(str(exc.args[0]))])
            return pb.ReadDataSource.Response(state=dv(state, t))

        def StopProvider(self, request: Any, context: Any) -> Any:
            return pb.StopProvider.Response()

    class Controller(gp_grpc.GRPCControllerServicer):  # type: ignore[misc,name-defined]  # generated at run time (stubs.py): Any
        def Shutdown(self, request: Any, context: Any) -> Any:
            done.set()
            return gp.Empty()

    class Health(hp_grpc.HealthServicer):  # type: ignore[misc,name-defined]  # generated at run time (stubs.py): Any
        def Check(self, request: Any, context: Any) -> Any:
            return hp.HealthCheckResponse(status=hp.HealthCheckResponse.SERVING)

    cert_pem, key_pem, cert_der = _server_cert()
    client_cert = os.environ.get("PLUGIN_CLIENT_CERT", "").encode()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16),
                         options=[("grpc.max_receive_message_length", 256 << 20),
                                  ("grpc.max_send_message_length", 256 << 20)])
    pb_grpc.add_ProviderServicer_to_server(ProviderService(), server)
    gp_grpc.add_GRPCControllerServicer_to_server(Controller(), server)
    hp_grpc.add_HealthServicer_to_server(Health(), server)
    sock_dir = tempfile.mkdtemp(prefix="mldiag-standin-",
                                dir=os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or None)
    sock = os.path.join(sock_dir, "plugin.sock")
    if client_cert:
        # grpc's BoringSSL does not accept the P-521 client key go-plugin generates (it
        # never asks for ecdsa_secp521r1_sha512, so Terraform sends no certificate): terminate
        # TLS with Python's ssl (OpenSSL) and relay the plaintext HTTP/2 to the gRPC server.
        backend = os.path.join(sock_dir, "backend.sock")
        server.add_insecure_port(f"unix:{backend}")
        server.start()
        _start_tls_relay(sock, backend, cert_pem, key_pem, client_cert)
        cert_field = base64.b64encode(cert_der).decode().rstrip("=")
    else:
        server.add_insecure_port(f"unix:{sock}")
        server.start()
        cert_field = ""
    sys.stdout.write(f"1|6|unix|{sock}|grpc|{cert_field}\n")
    sys.stdout.flush()
    parent = os.getppid()

    def watchdog() -> None:  # Terraform killed outright: do not linger (nor hold its files)
        while not done.wait(0.5):
            if os.getppid() != parent:
                done.set()

    threading.Thread(target=watchdog, daemon=True).start()
    done.wait()
    import shutil

    shutil.rmtree(sock_dir, ignore_errors=True)
    sys.stdout.flush()
    os._exit(0)  # no slow interpreter/gRPC teardown; nothing is left to write


def main(provider_name: str) -> None:  # pragma: no cover - entry of the plugin executable
    sys.exit(_serve(provider_name))
