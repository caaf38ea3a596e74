"""Reaching a stack's cluster: credentials, readiness waits, and the workloads stage
(server-side apply of ``k8s/workloads/*.yaml`` with the official Kubernetes client).

Credentials, in the order the Terraform google provider uses them
(https://registry.terraform.io/providers/hashicorp/google/latest/docs/guides/provider_reference
"access_token" / GOOGLE_OAUTH_ACCESS_TOKEN first, then application default credentials):
``GOOGLE_OAUTH_ACCESS_TOKEN``, else ``google.auth.default()`` refreshed for the
cloud-platform scope. The endpoint and CA come from the stack's own outputs
(``cluster_endpoint``, ``cluster_ca_certificate``), so no kubeconfig is needed; an explicit
``--kubeconfig`` wins.

The workloads stage keeps an inventory of what it applied (``.mldiag/workloads.json``) and
stamps each object with the sha256 of its manifest (annotation :data:`HASH_ANNOTATION`), so
``plan`` can say create / update / replace / delete / no change without a diff engine.
Jobs and JobSets are replaced, not updated: their pod template is immutable
(https://kubernetes.io/docs/concepts/workloads/controllers/job/, "spec.template ... immutable").
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldiag_provision.engines import PlanResult, PlanSummary, ProgressEvent, ResourceChange
from mldiag_provision.errors import EngineError, UsageError

# the Kubernetes client's kubeconfig and timeouts: a leaf module, re-exported for the
# callers that take them from here
from mldiag_provision.kubeclient import (  # noqa: F401
    REQUEST_TIMEOUT_S,
    Deadline,
    DeadlineExceeded,
    bounded,
    check_kubeconfig,
    in_flight,
    is_timeout,
    kubeconfig_client,
    request_timeout_s,
    set_deadline,
    with_timeouts,
)

HASH_ANNOTATION = "mldiag-provision/manifest-sha256"
FIELD_MANAGER = "mldiag-provision"
INVENTORY = ".mldiag/workloads.json"
WORKLOADS_DIR = "k8s/workloads"
IMMUTABLE_KINDS = frozenset({"Job", "JobSet"})  # pod template immutable: replace on change
KUEUE_GROUP = "kueue.x-k8s.io"  # queue objects: deleted after the workloads


@dataclass(frozen=True)
class ClusterTarget:
    """Where the cluster is: an endpoint + CA from the stack, or a kubeconfig context."""

    endpoint: str | None = None  # IP or host[:port] of the API server
    ca_certificate_b64: str | None = None  # base64 PEM, as GKE's master_auth gives it
    kubeconfig: str | None = None
    context: str | None = None

    @property
    def describe(self) -> str:
        if self.endpoint:
            return f"https://{self.endpoint}"
        return f"kubeconfig {self.kubeconfig or '$KUBECONFIG'}" + (
            f" (context {self.context})" if self.context else "")


def access_token() -> str:
    """An OAuth2 access token of the caller (``GOOGLE_OAUTH_ACCESS_TOKEN`` or ADC).

    Raises:
      UsageError: no credentials can be found.
    """
    token = os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN", "").strip()
    if token:
        return token
    try:
        import google.auth
        import google.auth.transport.requests

        creds, _ = google.auth.default(
            scopes=["https://www.googleapis.com/auth/cloud-platform"])
        creds.refresh(google.auth.transport.requests.Request())
        return str(creds.token)
    except Exception as exc:  # DefaultCredentialsError, RefreshError, transport errors
        raise UsageError(f"no Google Cloud credentials to reach the cluster: {exc}",
                         hint="run `gcloud auth application-default login`, or set "
                              "GOOGLE_OAUTH_ACCESS_TOKEN / GOOGLE_APPLICATION_CREDENTIALS"
                         ) from None


def api_client(target: ClusterTarget, state_dir: Path) -> Any:
    """A ``kubernetes.client.ApiClient`` for ``target``; the CA is written (0600) under
    ``state_dir``.

    Raises:
      UsageError: the kubeconfig cannot be loaded, or no credentials.
    """
    from kubernetes import client

    if not target.endpoint:
        return kubeconfig_client(target.kubeconfig, target.context)
    conf = client.Configuration()
    conf.host = f"https://{target.endpoint}"
    conf.api_key = {"authorization": "Bearer " + access_token()}
    if target.ca_certificate_b64:
        state_dir.mkdir(parents=True, exist_ok=True)
        ca = state_dir / "cluster-ca.pem"
        fd = os.open(ca, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(base64.b64decode(target.ca_certificate_b64))
        conf.ssl_ca_cert = str(ca)
    return with_timeouts(client.ApiClient(conf))


def probe(api: Any) -> str | None:
    """None when the API server answers ``GET /version``; else why not (one line)."""
    from kubernetes import client

    try:
        client.VersionApi(api).get_code(_request_timeout=10)
        return None
    except Exception as exc:
        return _short(exc)


def _short(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    if status:
        return f"HTTP {status} {reason or ''}".strip()
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def wait_until(check: Callable[[], str | None], *, what: str, timeout_s: float,
               interval_s: float = 5.0, on_wait: Callable[[str, float], None] | None = None,
               hint: str = "") -> float:
    """Poll ``check`` (None = ready, else the reason) until ready; returns seconds waited.

    Raises:
      EngineError: not ready after ``timeout_s``, naming ``what`` and the last reason.
    """
    start = time.monotonic()
    while True:
        reason = check()
        elapsed = time.monotonic() - start
        if reason is None:
            return elapsed
        if elapsed >= timeout_s:
            raise EngineError(f"{what} is not ready after {timeout_s:.0f}s: {reason}",
                              hint=hint or "re-run the same command to go on from here "
                                           "(--wait-timeout SECONDS waits longer)")
        if on_wait is not None:
            on_wait(reason, elapsed)
        time.sleep(min(interval_s, max(0.1, timeout_s - elapsed)))


# --- the workloads stage ----------------------------------------------------------------------

@dataclass(frozen=True)
class ObjectRef:
    """One Kubernetes object: ``apiVersion``, ``kind``, namespace ("" if cluster-scoped), name."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def address(self) -> str:
        return "/".join(filter(None, (self.kind, self.namespace, self.name)))

    def to_dict(self) -> dict[str, str]:
        return {"apiVersion": self.api_version, "kind": self.kind,
                "namespace": self.namespace, "name": self.name}


def _ref(obj: dict[str, Any]) -> ObjectRef:
    meta = obj.get("metadata") or {}
    return ObjectRef(str(obj.get("apiVersion", "")), str(obj.get("kind", "")),
                     str(meta.get("namespace") or ""), str(meta.get("name", "")))


def load_manifests(workdir: Path) -> list[tuple[ObjectRef, dict[str, Any], str]]:
    """Every object of ``k8s/workloads/*.yaml``: (ref, object stamped with its hash, hash)."""
    import yaml

    out = []
    for path in sorted((workdir / WORKLOADS_DIR).glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(doc, dict):
                continue
            digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
            meta = dict(doc.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), HASH_ANNOTATION: digest}
            out.append((_ref(doc), {**doc, "metadata": meta}, digest))
    return out


def read_inventory(workdir: Path) -> list[ObjectRef]:
    """The objects the workloads stage applied and has not deleted yet."""
    try:
        items = json.loads((workdir / INVENTORY).read_text(encoding="utf-8"))["objects"]
        return [ObjectRef(i["apiVersion"], i["kind"], i["namespace"], i["name"])
                for i in items]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _write_inventory(workdir: Path, refs: list[ObjectRef]) -> None:
    path = workdir / INVENTORY
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"objects": [r.to_dict() for r in refs]}, indent=2) + "\n")
    os.replace(tmp, path)


class Workloads:
    """Plan / apply / delete the workloads of one stack through a dynamic client."""

    def __init__(self, workdir: Path, api: Any) -> None:
        from kubernetes.dynamic import DynamicClient

        self.workdir = workdir
        try:
            self.dyn = DynamicClient(api)
        except Exception as exc:
            raise EngineError(f"cannot read the cluster's API discovery: {_short(exc)}",
                              hint="check that the cluster answers (kubectl get --raw /apis)"
                              ) from None

    def _resource(self, ref: ObjectRef) -> Any:
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        try:
            return self.dyn.resources.get(api_version=ref.api_version, kind=ref.kind)
        except ResourceNotFoundError:
            raise EngineError(
                f"the cluster does not serve {ref.kind} ({ref.api_version}) for {ref.address}",
                hint="its controller and CRD are installed by the cluster stage: run "
                     "`mldiag-provision apply RECIPE -o DIR --stage cluster` first") from None

    def _get(self, ref: ObjectRef) -> dict[str, Any] | None:
        from kubernetes.dynamic.exceptions import NotFoundError

        res = self._resource(ref)
        try:
            got = res.get(name=ref.name, namespace=ref.namespace or None,
                          _request_timeout=REQUEST_TIMEOUT_S)
        except NotFoundError:
            return None
        return got.to_dict() if hasattr(got, "to_dict") else dict(got)

    def plan(self, *, destroy: bool = False) -> PlanResult:
        """What applying (or deleting) the workloads would do, read from the cluster: one
        change per wanted object (:meth:`_action`), in manifest order, then one ``delete``
        per object to remove that still exists (:meth:`_to_delete`)."""
        wanted = {} if destroy else {ref: digest for ref, _, digest in
                                     load_manifests(self.workdir)}
        changes = [ResourceChange(ref.address, f"{ref.api_version}/{ref.kind}",
                                  self._action(ref, digest))
                   for ref, digest in wanted.items()]
        changes += [ResourceChange(ref.address, f"{ref.api_version}/{ref.kind}", "delete")
                    for ref in self._to_delete(wanted, destroy)
                    if self._get(ref) is not None]
        summary = _summary(changes)
        return PlanResult(has_changes=summary.total > 0, summary=summary, changes=changes,
                          destroy=destroy)

    def _action(self, ref: ObjectRef, digest: str) -> str:
        """What applying the manifest of ``ref`` (content hash ``digest``) does to the live
        object: ``create`` where there is none, ``no-op`` where its hash annotation is the
        same, ``replace`` for a kind that cannot be changed in place, else ``update``."""
        live = self._get(ref)
        if live is None:
            return "create"
        have = ((live.get("metadata") or {}).get("annotations") or {}).get(HASH_ANNOTATION)
        if have == digest:
            return "no-op"
        return "replace" if ref.kind in IMMUTABLE_KINDS else "update"

    def _to_delete(self, wanted: Mapping[ObjectRef, str], destroy: bool) -> list[ObjectRef]:
        """The objects to delete, in order: those of the inventory no longer wanted (with
        ``destroy``, every rendered one too), Kueue's objects last."""
        gone = [r for r in read_inventory(self.workdir) if r not in wanted]
        if destroy:
            gone += [r for r, _, _ in load_manifests(self.workdir) if r not in gone]
        # Kueue's objects last, in reverse apply order: Kueue keeps its finalizer
        # kueue.x-k8s.io/resource-in-use on a queue while workloads use it, and on a
        # ResourceFlavor / AdmissionCheck while a ClusterQueue names it (kubernetes-sigs/kueue
        # v0.19.2 apis/kueue/v1beta2/constants.go), so any other order waits on a finalizer
        queues = [r for r in gone if r.api_version.startswith(KUEUE_GROUP + "/")]
        return [r for r in gone if r not in queues] + queues[::-1]

    def apply(self, plan: PlanResult, *, progress: Callable[[ProgressEvent], None] | None = None,
              wait_timeout_s: float = 300) -> PlanSummary:
        """Execute ``plan`` (server-side apply, field manager ``mldiag-provision``).

        Raises:
          EngineError: the API server refused an object (its message, the object).
        """
        manifests = {ref: obj for ref, obj, _ in load_manifests(self.workdir)}
        inventory = read_inventory(self.workdir)
        done = PlanSummary()
        for change in plan.changes:
            if change.action in ("no-op", "read"):
                continue
            ref = next((r for r in [*manifests, *inventory] if r.address == change.address),
                       None)
            if ref is None:
                continue
            start = time.monotonic()
            if progress:
                progress(ProgressEvent("start", change.address, change.action))
            try:
                if change.action in ("delete", "replace"):
                    self._delete(ref, wait_timeout_s)
                    inventory = [r for r in inventory if r != ref]
                    _write_inventory(self.workdir, inventory)
                if change.action in ("create", "update", "replace"):
                    self._apply(ref, manifests[ref])
                    if ref not in inventory:
                        inventory.append(ref)
                        _write_inventory(self.workdir, inventory)
            except EngineError as exc:
                if progress:
                    progress(ProgressEvent("error", change.address, change.action,
                                           message=exc.message))
                raise
            setattr(done, change.action, getattr(done, change.action) + 1)
            if progress:
                progress(ProgressEvent("complete", change.address, change.action,
                                       elapsed_s=time.monotonic() - start))
        return done

    def _apply(self, ref: ObjectRef, obj: dict[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        res = self._resource(ref)
        try:
            res.server_side_apply(body=obj, name=ref.name, namespace=ref.namespace or None,
                                  field_manager=FIELD_MANAGER, force_conflicts=True,
                                  _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as exc:
            raise EngineError(f"the cluster refused {ref.address}: {_api_message(exc)}",
                              hint=f"fix the workload in the recipe (rendered as "
                                   f"{WORKLOADS_DIR}/), then re-run apply") from None

    def _delete(self, ref: ObjectRef, wait_timeout_s: float) -> None:
        from kubernetes.client.exceptions import ApiException
        from kubernetes.dynamic.exceptions import NotFoundError

        res = self._resource(ref)
        try:
            res.delete(name=ref.name, namespace=ref.namespace or None,
                       body={"propagationPolicy": "Background"},
                       _request_timeout=REQUEST_TIMEOUT_S)
        except NotFoundError:
            return
        except ApiException as exc:
            raise EngineError(f"the cluster refused to delete {ref.address}: "
                              f"{_api_message(exc)}", hint="see the message") from None
        wait_until(lambda: None if self._get(ref) is None else "still terminating",
                   what=f"deletion of {ref.address}", timeout_s=wait_timeout_s,
                   interval_s=1.0)


def _summary(changes: list[ResourceChange]) -> PlanSummary:
    """The count of each action that changes the cluster (create, update, replace, delete)
    in ``changes``."""
    summary = PlanSummary()
    for c in changes:
        if c.action in ("create", "update", "replace", "delete"):
            setattr(summary, c.action, getattr(summary, c.action) + 1)
    return summary


def _api_message(exc: Any) -> str:
    try:
        return str(json.loads(exc.body).get("message")) or _short(exc)
    except (ValueError, TypeError, AttributeError):
        return _short(exc)
