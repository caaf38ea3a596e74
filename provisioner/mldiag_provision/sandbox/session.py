"""One command's sandbox: the local double of Google Cloud that ``plan``/``apply``/``verify``/
``output``/``destroy --sandbox`` (or ``MLDIAG_SANDBOX=1``) run against.

State lives in one directory per stack work directory, ``<DIR>/.mldiag/sandbox/``, and
persists between commands; nothing keeps running once the command returns (the servers run
in this process, on threads, for the duration of :func:`session`):

* ``cloud/``: the "cloud", one JSON file per object the provider plugins applied
  (:class:`mldiag_provision.sandbox.plugin.Cloud`), and ``cloud/gcs-objects/`` the Cloud
  Storage objects the bucket listing serves (:mod:`mldiag_provision.sandbox.gcs`);
* ``providers/``: the Terraform filesystem mirror of the plugins
  (:mod:`mldiag_provision.sandbox.mirror`) and its ``terraformrc``;
* ``apiserver.json``, ``apiserver-*.pem``: the port, bearer token and certificates of the
  sandbox Kubernetes API server, kept so that the endpoint and CA the stack recorded at
  apply still answer at verify and destroy (as a GKE cluster keeps its endpoint and CA);
* ``kube-objects.json``: the Kubernetes objects of the sandbox cluster (the API server holds
  them in memory while a command runs; they are written back when it ends);
* ``gcloud/``: an empty gcloud configuration directory (``CLOUDSDK_CONFIG``), so that no
  client finds the user's real application default credentials.

The environment of what the command runs (Terraform, its plugins, the official clients) is
the user's minus every variable that names real credentials or a real cluster
(:data:`SCRUBBED`, :data:`SCRUBBED_PREFIXES`), plus the sandbox's endpoints: Terraform gets
only the mirror (``TF_CLI_CONFIG_FILE``), the Kubernetes client the sandbox API server's
endpoint and token, the Cloud Storage client ``STORAGE_EMULATOR_HOST`` (the variable the
client documents for emulators). The live checks against Google Cloud are skipped
(``MLDIAG_OFFLINE=1``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mldiag_provision.sandbox.apiserver import ApiServer

SANDBOX_ENV = "MLDIAG_SANDBOX"
"""``MLDIAG_SANDBOX=1``: the same as ``--sandbox`` on every command that has the switch."""

ACTIVE_ENV = "MLDIAG_SANDBOX_ROOT"
"""Set (to the sandbox directory) while a command runs in the sandbox: the run log
(:class:`mldiag_provision.runner.CommandRunner`) marks its lines with :data:`MARK`."""

MARK = "SANDBOX"

SCRUBBED = frozenset({
    # Google credentials the google provider, google-auth and gcloud read
    # (https://registry.terraform.io/providers/hashicorp/google/latest/docs/guides/provider_reference,
    # https://cloud.google.com/docs/authentication/application-default-credentials)
    "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS", "GOOGLE_CLOUD_KEYFILE_JSON",
    "GCLOUD_KEYFILE_JSON", "GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_IMPERSONATE_SERVICE_ACCOUNT",
    "GOOGLE_BACKEND_CREDENTIALS", "GOOGLE_BACKEND_IMPERSONATE_SERVICE_ACCOUNT",
    "GOOGLE_CLOUD_PROJECT", "GOOGLE_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT",
    # a real cluster
    "KUBECONFIG",
    # Terraform and clients pointed elsewhere
    "TF_CLI_CONFIG_FILE", "TF_REATTACH_PROVIDERS", "TF_PLUGIN_CACHE_DIR",
    "STORAGE_EMULATOR_HOST", "MLDIAG_GOOGLE_API_ENDPOINT",
    # the gcs backend's endpoint (a remote state elsewhere); the session sets its own
    # (https://developer.hashicorp.com/terraform/language/backend/gcs, storage_custom_endpoint)
    "GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT", "GOOGLE_STORAGE_CUSTOM_ENDPOINT",
    # the sandbox plugins' fault injection (tests only)
    "MLDIAG_STANDIN_FAIL", "MLDIAG_STANDIN_DELAY",
})
EXTRA_MODULES = ("grpc", "grpc_tools", "google.protobuf", "cryptography", "msgpack")
"""What the ``[sandbox]`` extra installs (pyproject.toml)."""

SCRUBBED_PREFIXES = ("CLOUDSDK_", "GOOGLE_APPLICATION_", "GCE_METADATA")


_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def enabled(flag: bool) -> bool:
    """``--sandbox`` given, or ``MLDIAG_SANDBOX`` set to a true value.

    Raises:
      UsageError: ``MLDIAG_SANDBOX`` holds a value that is neither on nor off: the switch
        guards against reaching Google Cloud, so a typo must not mean "off".
    """
    value = os.environ.get(SANDBOX_ENV, "").strip().lower()
    if value not in _ON + _OFF:
        from mldiag_provision.errors import UsageError

        raise UsageError(f"{SANDBOX_ENV}={os.environ[SANDBOX_ENV]!r} is neither on nor off",
                         hint=f"set {SANDBOX_ENV}=1 for the sandbox, or unset it (or 0) for "
                              "Google Cloud")
    return flag or value in _ON


def sandbox_dir(workdir: Path) -> Path:
    """Where the sandbox of the stack work directory ``workdir`` keeps its state."""
    return Path(workdir).resolve() / ".mldiag" / "sandbox"


@dataclass(frozen=True)
class Running:
    """A sandbox while a command runs in it."""

    root: Path
    cloud: Path
    apiserver: str  # host:port
    storage: str  # http://host:port (STORAGE_EMULATOR_HOST)
    env: dict[str, str]  # the variables set for the command (scrubbed ones are removed)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api_settings(root: Path) -> dict[str, object]:
    """The API server's port, token and certificates: made once, then read back."""
    path = root / "apiserver.json"
    if path.is_file():
        doc: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
        return doc
    from mldiag_provision.sandbox.apiserver import make_certs

    ca, cert, key = make_certs("127.0.0.1")
    (root / "apiserver-ca.pem").write_bytes(ca)
    (root / "apiserver-cert.pem").write_bytes(cert)
    key_file = root / "apiserver-key.pem"
    key_file.touch(mode=0o600)
    key_file.write_bytes(key)
    doc = {"port": _free_port(), "token": "sandbox-" + secrets.token_hex(12)}
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return doc


KUBE_OBJECTS = "kube-objects.json"


def _load_objects(api: ApiServer, path: Path) -> None:
    """Put the objects a previous command left into the API server's store."""
    if not path.is_file():
        return
    doc = json.loads(path.read_text(encoding="utf-8"))
    store = api.store
    with store.lock:
        store.rv = int(doc.get("rv") or 0)
        store.cluster_id = doc.get("cluster_id")
        for group, plural, namespace, name, obj in doc.get("objects") or []:
            store.objects.setdefault((group, plural), {})[(namespace, name)] = obj


def _save_objects(api: ApiServer, path: Path) -> None:
    """Write the API server's objects for the next command (atomically)."""
    store = api.store
    with store.lock:
        if store.view.identity() is None:  # no cluster (deleted): nothing in it survives
            store.objects.clear()
            store.cluster_id = None
        doc = {"rv": store.rv, "cluster_id": store.cluster_id,
               "objects": [[g, p, ns, name, obj]
                           for (g, p), items in sorted(store.objects.items())
                           for (ns, name), obj in sorted(items.items())]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)


def _start_apiserver(root: Path, cloud: Path, doc: dict[str, object]) -> ApiServer:
    """The sandbox API server on its recorded port (a new free port when that one is taken,
    recorded for the next command)."""
    from mldiag_provision.sandbox.apiserver import ApiServer
    from mldiag_provision.sandbox.gke_cluster import GkeCloudView

    certs = ((root / "apiserver-ca.pem").read_bytes(), (root / "apiserver-cert.pem").read_bytes(),
             (root / "apiserver-key.pem").read_bytes())
    port = int(str(doc["port"]))
    try:
        api = ApiServer(GkeCloudView(cloud), token=str(doc["token"]), port=port, certs=certs)
    except OSError:  # the port is taken now: the cluster "moves"; Terraform re-reads it
        doc["port"] = _free_port()
        (root / "apiserver.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        api = ApiServer(GkeCloudView(cloud), token=str(doc["token"]), port=int(str(doc["port"])),
                        certs=certs)
    _load_objects(api, root / KUBE_OBJECTS)
    return api.start()


@contextlib.contextmanager
def session(workdir: Path, command: str | None = None) -> Iterator[Running]:
    """Run the body against the sandbox of ``workdir``: servers started, ``os.environ`` set
    (and put back afterwards), servers stopped on the way out. ``command``: the verb that
    holds the sandbox meanwhile (``apply``, ``sandbox serve``), named to a command refused
    because of it.

    Raises:
      UsageError: the ``[sandbox]`` extra is not installed.
      ConflictError: another command is running in this sandbox.
    """
    import importlib.util

    from mldiag_provision.errors import UsageError, extra_hint

    missing = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"the sandbox needs the [sandbox] extra ({', '.join(missing)} "
                         "missing)", hint=extra_hint("sandbox"))
    from mldiag_provision import ondisk

    root = sandbox_dir(workdir)
    ondisk.state_dir(root.parent.parent)  # .mldiag: a directory of the user's own
    ondisk.private_dir(root, workdir=root.parent.parent)
    with _exclusive(root, command):
        yield from _serve(root)


@contextlib.contextmanager
def _exclusive(root: Path, command: str | None = None) -> Iterator[None]:
    """One command at a time per sandbox (its API server port and its saved objects are the
    sandbox's own).

    Raises:
      ConflictError: another command holds the sandbox.
    """
    import fcntl


    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise _held(root, fd) from None
        # who holds it, for the next command's refusal: its pid and verb
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command}).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _held(root: Path, fd: int) -> Exception:
    """The refusal of a command that finds the sandbox held: it names the holder (its pid
    and verb, as the holder wrote them) and, for ``sandbox serve``, how to stop it."""
    from mldiag_provision.errors import ConflictError

    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        holder = {}
    pid = holder.get("pid") if isinstance(holder, dict) else None
    verb = str(holder.get("command") or "") if isinstance(holder, dict) else ""
    who = (f"`mldiag-provision {verb}` (pid {pid})" if pid and verb else
           f"another command (pid {pid})" if pid else "another command")
    if verb == "sandbox serve":
        hint = (f"stop it first (Ctrl-C where it runs, or kill {pid}); while it serves, "
                "kubectl reaches the sandbox cluster")
    else:
        hint = "wait for it to finish, then run this again"
    return ConflictError(f"{who} is running in the sandbox {root}", hint=hint)


def _serve(root: Path) -> Iterator[Running]:
    """The body of :func:`session` once the sandbox is held."""
    from mldiag_provision.sandbox.gcs import GcsStandIn
    from mldiag_provision.sandbox.mirror import install

    cloud = root / "cloud"
    cloud.mkdir(exist_ok=True)
    gcloud = root / "gcloud"
    gcloud.mkdir(exist_ok=True)
    mirror = install(root / "providers", cloud)
    doc = _api_settings(root)
    saved = dict(os.environ)
    api = _start_apiserver(root, cloud, doc)
    try:
        with GcsStandIn(cloud) as gcs:
            env = {**mirror.env,
                   "MLDIAG_STANDIN_CLOUD": str(cloud),
                   "MLDIAG_STANDIN_APISERVER": api.endpoint,
                   "MLDIAG_STANDIN_APISERVER_CA": str(root / "apiserver-ca.pem"),
                   "GOOGLE_OAUTH_ACCESS_TOKEN": str(doc["token"]),
                   "STORAGE_EMULATOR_HOST": gcs.url,
                   # Terraform's gcs backend (a recipe's remote state) reaches the same
                   # double: storage_custom_endpoint's backend-scoped variable, a URL ending
                   # in the JSON API's path; its access_token comes from
                   # GOOGLE_OAUTH_ACCESS_TOKEN (both documented at
                   # https://developer.hashicorp.com/terraform/language/backend/gcs)
                   "GOOGLE_BACKEND_STORAGE_CUSTOM_ENDPOINT": f"{gcs.url}/storage/v1/",
                   "CLOUDSDK_CONFIG": str(gcloud),
                   "MLDIAG_OFFLINE": "1",
                   ACTIVE_ENV: str(root)}
            for key in list(os.environ):
                if key in SCRUBBED or key.startswith(SCRUBBED_PREFIXES):
                    del os.environ[key]
            os.environ.update(env)
            yield Running(root=root, cloud=cloud,
                          apiserver=api.endpoint,
                          storage=gcs.url, env=env)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        api.stop()
        _save_objects(api, root / KUBE_OBJECTS)


@dataclass(frozen=True)
class Entry:
    """One object the sandbox cloud holds."""

    kind: str  # a Terraform resource type (google_container_cluster), or a Kubernetes kind
    name: str  # the object's name (Kubernetes: namespace/name)
    where: str  # project/location, or "cluster <name>" for Kubernetes objects


def _name_of(state: dict[str, object], object_id: str) -> tuple[str, str]:
    name = next((str(state[k]) for k in ("bucket_id", "email", "name", "bucket", "service",
                                         "role", "member", "account_id") if state.get(k)),
                object_id)
    where = "/".join(str(state[k]) for k in ("project", "location") if state.get(k))
    return name, where


def _system(namespace: str) -> bool:
    """Kubernetes' own namespaces and GKE's (``gke-*``)."""
    return namespace in ("default", "kube-system", "kube-public", "kube-node-lease") or \
        namespace.startswith("gke-")


def inventory(workdir: Path) -> list[Entry]:
    """What the sandbox cloud of ``workdir`` holds: the Google Cloud objects (one JSON file
    each under ``cloud/``), the Cloud Storage objects, then the cluster's Kubernetes objects
    as the last command left them (system objects GKE puts there are left out)."""
    root = sandbox_dir(workdir)
    return [*_cloud_entries(root / "cloud"), *_kube_entries(root / KUBE_OBJECTS)]


def _cloud_entries(cloud: Path) -> list[Entry]:
    """The objects under ``cloud/``, folder by folder in name order: a folder per Terraform
    resource type, and ``gcs-objects`` for Cloud Storage objects. ``[]`` without ``cloud/``."""
    if not cloud.is_dir():
        return []
    out: list[Entry] = []
    for folder in sorted(p for p in cloud.iterdir() if p.is_dir()):
        if folder.name == "gcs-objects":
            out += _storage_entries(folder)
        else:
            out += _resource_entries(folder)
    return out


def _storage_entries(folder: Path) -> list[Entry]:
    """Cloud Storage objects, one file each at ``gcs-objects/BUCKET/NAME`` (kind
    ``storage#object``, where ``gs://BUCKET``), in path order."""
    out: list[Entry] = []
    for f in sorted(x for x in folder.rglob("*") if x.is_file()):
        bucket, _, name = f.relative_to(folder).as_posix().partition("/")
        out.append(Entry("storage#object", name, f"gs://{bucket}"))
    return out


def _resource_entries(folder: Path) -> list[Entry]:
    """The Google Cloud objects of one resource type (the folder's name), one JSON file
    each (``{"id": ..., "state": {...}}``), in file-name order; an unreadable file is left
    out."""
    out: list[Entry] = []
    for f in sorted(folder.glob("*.json")):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        name, where = _name_of(doc.get("state") or {}, str(doc.get("id")))
        out.append(Entry(folder.name, name, where))
    return out


def _kube_entries(path: Path) -> list[Entry]:
    """The Kubernetes objects the API server left in ``path`` (``{"cluster_id":
    "projects/P/locations/L/clusters/NAME", "objects": [[_, _, namespace, name, object],
    ...]}``), where ``cluster NAME``; what Kubernetes and GKE put there themselves is left
    out. ``[]`` without the file.

    Raises:
      ValueError: the file is not JSON.
    """
    if not path.is_file():
        return []
    doc = json.loads(path.read_text(encoding="utf-8"))
    cluster = str(doc.get("cluster_id") or "").split("/")
    label = f"cluster {cluster[2]}" if len(cluster) > 2 else "cluster"
    out: list[Entry] = []
    for _, _, namespace, name, obj in doc.get("objects") or []:
        kind = str(obj.get("kind"))
        if not _put_there_by_kubernetes(kind, namespace, name, obj):
            out.append(Entry(kind, f"{namespace}/{name}" if namespace else name, label))
    return out


def _put_there_by_kubernetes(kind: str, namespace: str | None, name: str,
                             obj: dict[str, Any]) -> bool:
    """Whether GKE or Kubernetes made the object itself: an Event, a stand-in's object
    (a ``standin.mldiag/`` label), anything in (or being) a system namespace, a namespace's
    ``default`` ServiceAccount."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return (kind == "Event" or any(k.startswith("standin.mldiag/") for k in labels)
            or _system(namespace or (name if kind == "Namespace" else ""))
            or (kind == "ServiceAccount" and name == "default"))


def has_cluster(workdir: Path) -> bool:
    """Whether the sandbox of ``workdir`` holds a cluster: its cloud has a GKE cluster
    object (apply created it, destroy has not deleted it), or the last command left the API
    server's objects with a cluster that exists."""
    root = sandbox_dir(workdir)
    if any((root / "cloud" / "google_container_cluster").glob("*.json")):
        return True
    path = root / KUBE_OBJECTS
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and bool(doc.get("cluster_id"))


def holds_objects(workdir: Path) -> bool:
    """Whether the sandbox cloud of ``workdir`` holds any Google Cloud, Cloud Storage or
    Kubernetes object (what ``sandbox ls`` lists)."""
    return bool(inventory(workdir))


def reset(workdir: Path) -> int:
    """Empty the sandbox cloud of ``workdir`` (every Google Cloud, Cloud Storage and
    Kubernetes object); the provider mirror, certificates and token stay. Returns how many
    objects were removed. The stack's Terraform state is not touched: its next plan finds
    the objects gone and plans to create them again.

    Raises:
      ConflictError: a command is running in this sandbox.
    """
    import shutil

    root = sandbox_dir(workdir)
    if not root.is_dir():
        return 0
    with _exclusive(root, "sandbox reset"):
        count = len(inventory(workdir))
        shutil.rmtree(root / "cloud", ignore_errors=True)
        (root / KUBE_OBJECTS).unlink(missing_ok=True)
    return count


def applied_states(workdir: Path) -> list[Path]:
    """The stack's local Terraform states (``DIR/*.tfstate``, ``DIR/*/*.tfstate``, outside
    ``.mldiag``) that list at least one resource: what ``apply --sandbox`` recorded. A
    state Terraform cannot read counts as applied (nothing is removed on a guess)."""
    found = []
    for path in (*workdir.glob("*.tfstate"), *workdir.glob("*/*.tfstate")):
        if ".mldiag" in path.parts or not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            found.append(path)
            continue
        if not isinstance(doc, dict) or doc.get("resources"):
            found.append(path)
    return found


def forget_unused(workdir: Path) -> bool:
    """Remove the sandbox of ``workdir`` when nothing was applied in it: its cloud holds no
    object and no Terraform state of the stack lists a resource (a sandbox an
    ``output``/``destroy --sandbox`` left on a directory that was only rendered). Then the
    directory is a plain work directory again. Returns whether it was removed.

    Raises:
      ConflictError: a command is running in this sandbox.
    """
    import shutil

    root = sandbox_dir(workdir)
    if not root.is_dir() or holds_objects(workdir) or applied_states(workdir):
        return False
    with _exclusive(root, "sandbox reset"):
        pass  # nobody holds it now; the lock file goes with the directory
    shutil.rmtree(root, ignore_errors=True)
    return True


def kubeconfig(workdir: Path, path: Path | None = None, *, endpoint: str | None = None) -> Path:
    """Write a kubeconfig for the sandbox cluster of ``workdir`` (context ``sandbox``: the API
    server's address, its CA, the bearer token) to ``path`` (default
    ``DIR/.mldiag/sandbox/kubeconfig``, mode 0600) and return where. It answers while a
    command runs in the sandbox, or ``mldiag-provision sandbox serve -o DIR``.

    ``endpoint``: ``host:port`` of a running server (default: the recorded port)."""
    import base64

    root = sandbox_dir(workdir)
    root.mkdir(parents=True, exist_ok=True)
    doc = _api_settings(root)
    ca = (root / "apiserver-ca.pem").read_bytes()
    server = "https://" + (endpoint or f"127.0.0.1:{doc['port']}")
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "sandbox",
        "clusters": [{"name": "sandbox", "cluster": {
            "server": server, "certificate-authority-data": base64.b64encode(ca).decode()}}],
        "users": [{"name": "sandbox", "user": {"token": str(doc["token"])}}],
        "contexts": [{"name": "sandbox", "context": {"cluster": "sandbox", "user": "sandbox"}}],
    }
    target = path or root / "kubeconfig"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(mode=0o600)
    target.write_text(json.dumps(config, indent=1), encoding="utf-8")
    return target
