"""StackPlan -> Kubernetes manifests (namespace, Workload Identity KSA, TPU workloads).

Built as Python data and dumped with PyYAML, so that values are always quoted as needed and
cannot change the YAML's structure. Shapes follow "Deploy TPU workloads on GKE Autopilot"
(seed 004): nodeSelectors for accelerator and topology, ``google.com/tpu`` requests equal to
limits, and for a multi-host slice an Indexed Job with completions = parallelism = VMs, a
headless Service and ``subdomain`` so that GKE injects ``TPU_WORKER_ID`` and
``TPU_WORKER_HOSTNAMES``. Multislice runs as a JobSet (jobset.x-k8s.io/v1alpha2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mldiag_provision.catalog.store import store
from mldiag_provision.plan.parts import DiagnosticsPlan, KubernetesDiagnosticsPlan
from mldiag_provision.plan.project import TPU_RESOURCE
from mldiag_provision.plan.types import SlicePlan, VolumePlan, WorkloadPlan

# Ports: the fact store's gke.yaml `ports` (TPU worker communication and runtime metrics from
# the GKE Autopilot TPU page; the megascale coordinator from xpk, confidence M).
_PORTS = store().doc("gke")["ports"]
TPU_WORKER_PORT = int(_PORTS["tpuWorker"]["port"])
TPU_METRICS_PORT = int(_PORTS["tpuRuntimeMetrics"]["port"])
MEGASCALE_PORT = int(_PORTS["megascaleCoordinator"]["port"])
_EXCLUSIVE = store().fact("kubernetes", "tpu", "exclusiveTopology")
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
GCSFUSE_DRIVER = str(store().fact("kubernetes", "volumes", "gcsFuse")["driver"])


class WorkloadSource(Protocol):
    """What rendering a workload reads of a plan: a :class:`~mldiag_provision.plan.stack.
    StackPlan`, or preflight's partial plan of the slices and diagnostics (preflight lints the
    manifests a recipe renders, before the whole plan exists)."""

    @property
    def blueprint(self) -> str: ...

    @property
    def diagnostics(self) -> DiagnosticsPlan: ...

    @property
    def slices(self) -> tuple[SlicePlan, ...]: ...


# The env variable that carries the profiles bucket (gs://<bucket>) into every workload whose
# recipe has diagnostics on; the default bucket's name holds the stack's name
# (preflight/manifest_rules.py shape_key relies on this being the only place it is rendered).
PROFILES_ENV = "MLDIAG_PROFILES_GCS_PATH"

def _diagnostics(plan: WorkloadSource) -> KubernetesDiagnosticsPlan:
    """The plan's diagnostics with the Kubernetes identity (every plan with workloads).

    Raises:
      ValueError: a Slurm plan (it has sbatch scripts, no Kubernetes workloads).
    """
    if not isinstance(plan.diagnostics, KubernetesDiagnosticsPlan):
        raise ValueError(f"{plan.blueprint} stacks have no Kubernetes workloads")
    return plan.diagnostics


def _limits(w: WorkloadPlan) -> dict[str, object]:
    """The container's resource limits (also its requests): CPU, memory and ephemeral
    storage when the workload sets them, then its chips or GPUs (``w.resource``)."""
    limits: dict[str, object] = {}
    if w.cpu is not None:
        limits["cpu"] = w.cpu
    if w.memory is not None:
        limits["memory"] = w.memory
    if w.ephemeral_storage is not None:
        limits["ephemeral-storage"] = w.ephemeral_storage
    limits[w.resource] = w.chips_per_pod
    return limits


def _container_env(plan: WorkloadSource, w: WorkloadPlan,
                   multi_host: bool) -> list[dict[str, Any]]:
    """The container's environment: the workload's own, the MLRun region and profiles path
    (diagnostics on, unless the workload sets them), the multislice variables (a JobSet of
    several slices) and the GPU rendezvous variables (a multi-host GPU workload with a
    headless Service or a one-slice JobSet)."""
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in w.env.items()]
    if plan.diagnostics.enabled:
        # Our convention, not read by the SDK: pass them on in the training code, e.g.
        # machinelearning_run(region=os.environ["MLDIAG_MLRUN_REGION"],
        #                     gcs_path=os.environ["MLDIAG_PROFILES_GCS_PATH"], ...)
        for name, value in (("MLDIAG_MLRUN_REGION", plan.diagnostics.mlrun_region),
                            (PROFILES_ENV, f"gs://{plan.diagnostics.profiles_bucket.name}")):
            if name not in w.env:
                env.append({"name": name, "value": value})
    if w.kind == "JobSet" and w.slices > 1:
        env.extend(_megascale_env(w))
    if w.resource != TPU_RESOURCE and multi_host and (
            w.headless_service or (w.kind == "JobSet" and w.slices == 1)):
        env.extend(_rendezvous_env(plan, w))
    return env


def _container_ports(w: WorkloadPlan, multi_host: bool) -> list[dict[str, object]]:
    """The named container ports: TPU worker (multi-host TPU) and TPU runtime metrics (TPU),
    then the megascale coordinator (a JobSet of several slices)."""
    ports: list[dict[str, object]] = []
    if w.resource == TPU_RESOURCE:
        ports.append({"containerPort": TPU_METRICS_PORT, "name": "tpu-metrics"})
        if multi_host:
            ports.insert(0, {"containerPort": TPU_WORKER_PORT, "name": "tpu-worker"})
    if w.kind == "JobSet" and w.slices > 1:
        ports.append({"containerPort": MEGASCALE_PORT, "name": "megascale"})
    return ports


def _container(plan: WorkloadSource, w: WorkloadPlan, multi_host: bool) -> dict[str, object]:
    """The workload's one container: name, image, command and args when set, env
    (:func:`_container_env`), ports (:func:`_container_ports`), requests equal to limits
    (:func:`_limits`) and the volume mounts; keys in that order."""
    limits = _limits(w)
    env = _container_env(plan, w, multi_host)
    ports = _container_ports(w, multi_host)
    c: dict[str, object] = {"name": w.name, "image": w.image}
    if w.command:
        c["command"] = list(w.command)
    if w.args:
        c["args"] = list(w.args)
    if env:
        c["env"] = env
    if ports:
        c["ports"] = ports
    c["resources"] = {"requests": dict(limits), "limits": dict(limits)}
    if w.volumes:
        c["volumeMounts"] = [{"name": v.name, "mountPath": v.mount_path,
                              **({"readOnly": True} if v.read_only else {})}
                             for v in w.volumes]
    return c


def _volume(v: VolumePlan) -> dict[str, Any]:
    """A pod volume. Cloud Storage FUSE: an ephemeral CSI volume of driver
    ``gcsfuse.csi.storage.gke.io`` with ``bucketName`` and ``mountOptions`` attributes
    (catalog kubernetes.yaml ``volumes.gcsFuse``; the pod carries the
    ``gke-gcsfuse/volumes: "true"`` annotation, WorkloadPlan.annotations)."""
    if v.source == "gcsFuse":
        attrs = {"bucketName": v.bucket}
        if v.mount_options:
            attrs["mountOptions"] = v.mount_options
        csi: dict[str, Any] = {"driver": GCSFUSE_DRIVER, "volumeAttributes": attrs}
        if v.read_only:
            csi["readOnly"] = True
        return {"name": v.name, "csi": csi}
    if v.source == "persistentVolumeClaim":
        pvc: dict[str, Any] = {"claimName": v.claim_name}
        if v.read_only:
            pvc["readOnly"] = True
        return {"name": v.name, "persistentVolumeClaim": pvc}
    empty: dict[str, Any] = {}
    if v.medium:
        empty["medium"] = v.medium
    if v.size_limit is not None:
        empty["sizeLimit"] = v.size_limit
    return {"name": v.name, "emptyDir": empty}


def _megascale_env(w: WorkloadPlan) -> list[dict[str, Any]]:
    """Multislice environment as xpk sets it (confidence M; tpu-rules R-D3)."""
    return [
        {"name": "MEGASCALE_COORDINATOR_ADDRESS",
         "value": f"{w.name}-slice-0-0.{w.name}:{MEGASCALE_PORT}"},
        {"name": "MEGASCALE_NUM_SLICES", "value": str(w.slices)},
        {"name": "MEGASCALE_SLICE_ID", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['jobset.sigs.k8s.io/job-index']"}}},
    ]


# torch.distributed's default rendezvous port (torchrun --master-port).
RENDEZVOUS_PORT = 29500


def _rendezvous_env(plan: WorkloadSource, w: WorkloadPlan) -> list[dict[str, Any]]:
    """Multi-node GPU Job, or JobSet of one slice: where pod 0 is, and this pod's rank, for
    torchrun / JAX.

    Pod 0 of an Indexed Job is ``<job>-0.<headless service>``; a JobSet's pods are
    ``<jobset>-<replicated job>-<job index>-<pod index>`` under the subdomain ``<jobset>``
    (JobSet's DNS hostnames, on by default; its PyTorch example's MASTER_ADDR
    ``pytorch-workers-0-0.pytorch``), so pod 0 of our one ``slice`` job is
    ``<jobset>-slice-0-0.<jobset>``. The rank is the annotation
    ``batch.kubernetes.io/job-completion-index`` of the Indexed (child) Job (Kubernetes
    Indexed Job docs). Use them as
    ``torchrun --nnodes=$(NNODES) --node-rank=$(NODE_RANK) --master-addr=$(MASTER_ADDR)``.
    """
    pod0 = (f"{w.name}-slice-0-0.{w.name}" if w.kind == "JobSet"
            else f"{w.name}-0.{w.headless_service}")
    return [
        {"name": "MASTER_ADDR", "value": pod0},
        {"name": "MASTER_PORT", "value": str(RENDEZVOUS_PORT)},
        {"name": "NNODES", "value": str(w.pods_per_slice)},
        {"name": "NODE_RANK", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
    ]


# the last slices tuple asked about and its slices by name (one slot: a stack renders every
# workload of one plan in a row; a dict by id() kept every plan of a validate batch alive)
_LAST_SLICES: list[tuple[tuple[Any, ...], dict[str, Any]]] = []


def _slice_named(slices: Sequence[Any], name: str) -> Any:
    """The first slice called ``name``: a dict for the last slices tuple (a scan per workload
    was quadratic in a stack of many slice+workload pairs, issue 16)."""
    if type(slices) is not tuple:  # only an immutable sequence is kept
        return next(s for s in slices if s.name == name)
    if not _LAST_SLICES or _LAST_SLICES[0][0] is not slices:
        by_name: dict[str, Any] = {}
        for s in slices:
            by_name.setdefault(s.name, s)
        _LAST_SLICES[:] = [(slices, by_name)]
    found = _LAST_SLICES[0][1].get(name)
    if found is None:  # as before: StopIteration (a plan always names its slices)
        return next(s for s in slices if s.name == name)
    return found


def _pod_template(plan: WorkloadSource, w: WorkloadPlan, labels: dict[str, str]) -> dict[str, Any]:
    sp = _slice_named(plan.slices, w.slice)
    spec: dict[str, object] = {
        "restartPolicy": "Never",
        "serviceAccountName": _diagnostics(plan).kubernetes.service_account,
        "nodeSelector": dict(sp.node_selector),
    }
    if w.host_network:
        # keep cluster DNS (headless Service names) working in the node's network namespace
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if w.headless_service:
        spec["subdomain"] = w.headless_service
    if w.priority_class_name:
        spec["priorityClassName"] = w.priority_class_name
    if w.tolerations:
        spec["tolerations"] = [dict(t) for t in w.tolerations]
    container = _container(plan, w, sp.multi_host)
    spec["containers"] = [container]
    if w.volumes:
        spec["volumes"] = [_volume(v) for v in w.volumes]
    metadata: dict[str, Any] = {"labels": labels}
    if w.annotations:
        metadata["annotations"] = dict(w.annotations)
    gpu_network = getattr(plan, "gpu_network", None)
    net = gpu_network(w.slice) if gpu_network is not None else None
    if net is not None:
        # GPUDirect: the extra NICs, the NCCL plugin from the node, the TCPXO daemon
        # (plan/gpunet.py pod_additions, sources there); preflight keeps the recipe's own
        # annotations, volumes and env from clashing with these names
        from mldiag_provision.plan import gpunet  # GPU slices only (issue 32)

        annotations, env, mounts, volumes, sidecars = gpunet.pod_additions(net)
        metadata["annotations"] = {**metadata.get("annotations", {}), **annotations}
        own: list[dict[str, Any]] = list(container.get("env") or [])  # type: ignore[call-overload]
        names = {e["name"] for e in own}
        container["env"] = [*own, *(e for e in env if e["name"] not in names)]
        container["volumeMounts"] = [*(container.get("volumeMounts") or []),  # type: ignore[misc]
                                     *mounts]
        spec["volumes"] = [*(spec.get("volumes") or []), *volumes]  # type: ignore[misc]
        if sidecars:
            spec["initContainers"] = sidecars
    return {"metadata": metadata, "spec": spec}


def _labels(plan: WorkloadSource, w: WorkloadPlan) -> dict[str, str]:
    labels = {"app.kubernetes.io/name": w.name, "app.kubernetes.io/managed-by": "mldiag-provision"}
    if w.ml_diagnostics_label:
        labels.update(_diagnostics(plan).namespace_label)
    return labels


def _failure_policy(w: WorkloadPlan) -> dict[str, Any]:
    """JobSet ``spec.failurePolicy``: ``maxRestarts`` always (0 unless the recipe or the Spot
    multislice default says otherwise), ``restartStrategy`` when the recipe states one."""
    fp: dict[str, Any] = {"maxRestarts": w.max_restarts}
    if w.restart_strategy:
        fp["restartStrategy"] = w.restart_strategy
    return fp


def _queued(w: WorkloadPlan, meta: dict[str, Any], spec: dict[str, Any]) -> None:
    """A workload on a queued slice: Kueue's queue-name label on the Job/JobSet, created
    suspended (Kueue unsuspends it once admitted: quota, then the ProvisioningRequest check),
    and the maximum run duration annotation when the slice states one. Source: Kueue v0.19.2
    site/content/en/docs/tasks/run/jobsets.md, site/static/examples/provisioning/sample-job.yaml
    (catalog/data/gke.yaml ``queuedProvisioning.kueue``)."""
    if w.queue is None:
        return
    facts = store().doc("gke")["queuedProvisioning"]["kueue"]
    meta["labels"] = {**meta["labels"], str(facts["queueNameLabel"]): w.queue}
    if w.max_run_seconds is not None:
        meta.setdefault("annotations", {})[str(facts["maxRunDurationAnnotation"])] = str(
            w.max_run_seconds)
    spec["suspend"] = True


def kueue_objects(plan: Any) -> list[dict[str, Any]]:
    """The Kueue objects of a plan with queued slices (``plan.queued``, a
    :class:`~mldiag_provision.plan.stack.QueuedPlan`), in the order they reference each
    other: ProvisioningRequestConfig, AdmissionCheck, ResourceFlavor, ClusterQueue,
    LocalQueue. Shapes: Kueue v0.19.2 site/static/examples/provisioning/provisioning-setup.yaml
    with GKE's provisioning class (https://cloud.google.com/kubernetes-engine/docs/how-to/
    provisioningrequest); [] without queued slices."""
    q = plan.queued
    if q is None:
        return []
    managed = {"app.kubernetes.io/managed-by": "mldiag-provision"}
    controller = str(store().doc("gke")["queuedProvisioning"]["kueue"][
        "admissionCheckController"])
    covered = list(q.quotas)
    return [
        {"apiVersion": q.api_version, "kind": "ProvisioningRequestConfig",
         "metadata": {"name": q.provisioning_request_config, "labels": managed},
         "spec": {"provisioningClassName": q.provisioning_class,
                  "managedResources": list(q.managed_resources)}},
        {"apiVersion": q.api_version, "kind": "AdmissionCheck",
         "metadata": {"name": q.admission_check, "labels": managed},
         "spec": {"controllerName": controller,
                  "parameters": {"apiGroup": q.api_version.split("/")[0],
                                 "kind": "ProvisioningRequestConfig",
                                 "name": q.provisioning_request_config}}},
        {"apiVersion": q.api_version, "kind": "ResourceFlavor",
         "metadata": {"name": q.resource_flavor, "labels": managed}},
        {"apiVersion": q.api_version, "kind": "ClusterQueue",
         "metadata": {"name": q.cluster_queue, "labels": managed},
         "spec": {"namespaceSelector": {"matchLabels": {
                      "kubernetes.io/metadata.name": q.namespace}},
                  "resourceGroups": [{
                      "coveredResources": covered,
                      "flavors": [{"name": q.resource_flavor, "resources": [
                          {"name": r, "nominalQuota": v} for r, v in q.quotas.items()]}]}],
                  "admissionChecksStrategy": {"admissionChecks": [
                      {"name": q.admission_check}]}}},
        {"apiVersion": q.api_version, "kind": "LocalQueue",
         "metadata": {"name": q.local_queue, "namespace": q.namespace, "labels": managed},
         "spec": {"clusterQueue": q.cluster_queue}},
    ]


def workload(plan: WorkloadSource, w: WorkloadPlan) -> list[dict[str, Any]]:
    """The objects of one workload: [headless Service,] Job or JobSet."""
    ns = _diagnostics(plan).kubernetes.namespace
    labels = _labels(plan, w)
    job_spec = {
        "backoffLimit": w.backoff_limit,
        "completions": w.pods_per_slice,
        "parallelism": w.pods_per_slice,
        "completionMode": "Indexed",
        "template": _pod_template(plan, w, labels),
    }
    if w.kind == "JobSet":
        meta = {"name": w.name, "namespace": ns, "labels": labels, "annotations": {
            # one slice per node pool (xpk, tpu-provisioner)
            str(_EXCLUSIVE["annotation"]): str(_EXCLUSIVE["value"])}}
        spec: dict[str, Any] = {
            "failurePolicy": _failure_policy(w),
            "replicatedJobs": [{"name": "slice", "replicas": w.slices,
                                "template": {"spec": job_spec}}],
        }
        _queued(w, meta, spec)
        return [{"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": meta, "spec": spec}]
    objs: list[dict[str, Any]] = []
    if w.headless_service:
        objs.append({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": w.headless_service, "namespace": ns,
                         "labels": {"app.kubernetes.io/managed-by": "mldiag-provision"}},
            # workers resolve each other while they start, before any pod is Ready: without
            # publishNotReadyAddresses a pod's DNS record appears only once it is Ready
            # (kubernetes.io/docs/concepts/services-networking/dns-pod-service; the multi-host
            # TPU timeout of ray-project/kuberay#2375; lint rule wiring-publish-not-ready)
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                     "selector": {"job-name": w.name}},
        })
    meta = {"name": w.name, "namespace": ns, "labels": labels}
    _queued(w, meta, job_spec)
    objs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec})
    return objs
