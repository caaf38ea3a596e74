"""What Google Cloud (and the hashicorp/google provider in front of it) refuses, for the
offline stand-in (the sandbox: a wire-level double of Google Cloud).

The stand-in plugin (plugin.py) calls four hooks:

* :func:`validate` from ``ValidateResourceConfig``: the provider's own argument checks, run
  at plan time (``ValidateFunc`` in hashicorp/google);
* :func:`adjust_plan` from ``PlanResourceChange``: the provider's diff suppressions;
* :func:`refuse` from ``ApplyResourceChange``: Google's API answers to a create, given what
  already exists in the stand-in's cloud directory (ordering faults: an object used before
  the object it needs exists);
* :func:`forget_only` for a delete Google never performs.

Each rule names its public source and returns Google's (or the provider's) message, so a
test sees the same words a real apply would print. Rules only refuse what Google refuses:
a correct stack applies cleanly.

:func:`seed_cluster` puts an existing GKE cluster into a cloud directory (for stacks that
use a cluster they do not create).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# -- the stand-in's cloud -----------------------------------------------------------------


def _root(cloud: Any) -> Path:
    return Path(cloud.root if hasattr(cloud, "root") else cloud)


def objects(cloud: Any, type_name: str) -> list[dict[str, Any]]:
    """States of every object of ``type_name`` in the cloud directory (plugin.Cloud layout:
    ``<root>/<type>/<digest>.json`` holding ``{"id", "type", "state"}``)."""
    out = []
    for path in sorted((_root(cloud) / type_name).glob("*.json")):
        try:
            out.append(json.loads(path.read_text(encoding="utf-8"))["state"])
        except (OSError, ValueError, KeyError):
            continue  # being replaced by another plugin process: os.replace is atomic
    return out


def _first(block: Any) -> dict[str, Any]:
    return block[0] if isinstance(block, list) and block and isinstance(block[0], dict) else {}


def _project(state: dict[str, Any], config: dict[str, Any]) -> str:
    """The object's project (a known string), else the provider's."""
    for value in (state.get("project"), config.get("project")):
        if isinstance(value, str) and value:
            return value
    return "standin-project"


def seed_cluster(cloud: Path, *, project: str, location: str, name: str,
                 workload_pool: str | None = None) -> None:
    """An existing GKE cluster (with Workload Identity on ``workload_pool``) in ``cloud``,
    as if created outside the stack."""
    from mldiag_provision.sandbox.plugin import Cloud

    object_id = f"projects/{project}/locations/{location}/clusters/{name}"
    Cloud(cloud).put("google_container_cluster", object_id, {
        "id": object_id, "project": project, "location": location, "name": name,
        "workload_identity_config": [{"workload_pool": workload_pool}] if workload_pool
        else []})


# -- plan time: the provider's argument checks -------------------------------------------

# hashicorp/terraform-provider-google google/verify/validation.go
_RFC1035 = "^[a-z](?:[-a-z0-9]{%d,%d}[a-z0-9])$"
_IAM_ROLE_ID = r"^[a-zA-Z0-9_\.]{3,64}$"
_GCE_NAME = "^(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$"


def _regexp(key: str, value: str, pattern: str) -> list[str]:
    """verify.ValidateRegexp's message."""
    if re.match(pattern, value):
        return []
    return [f'"{key}" ("{value}") doesn\'t match regexp "{pattern}"']


def _gcs_name(value: str) -> list[str]:
    """verify.ValidateGCSName (https://cloud.google.com/storage/docs/buckets#naming): the
    length rules and their messages."""
    errors = []
    if not re.match(r"^[a-z0-9_.-]*$", value):
        errors.append(f'"{value}" name value can only contain lowercase letters, numeric '
                      "characters, dashes (-), underscores (_), and dots (.)")
    too_long = (f'"{value}" name value must contain 3-63 characters. Names containing dots '
                "can contain up to 222 characters, but each dot-separated component can be "
                "no longer than 63 characters")
    if not 3 <= len(value) <= 222:
        errors.append(too_long)
    errors += [too_long for part in value.split(".") if not 1 <= len(part) <= 63]
    if value.startswith("goog"):
        errors.append(f'"{value}" name value cannot begin with the "goog" prefix')
    if "google" in value.replace("0", "o"):
        errors.append(f'"{value}" name value cannot contain "google" or close misspellings, '
                      'such as "g00gle"')
    return errors


def validate(type_name: str, config: dict[str, Any] | None) -> list[str]:
    """Errors the provider's ValidateFuncs report for ``config`` (unknown values skipped).

    Sources (hashicorp/terraform-provider-google): google_storage_bucket.name
    ``verify.ValidateGCSName``; google_service_account.account_id
    ``ValidateRFC1035Name(6, 30)``; google_project_iam_custom_role.role_id
    ``ValidateIAMCustomRoleID``; google_compute_resource_policy.name ``ValidateGCEName``.
    """
    config = config or {}

    def text(key: str) -> str | None:
        value = config.get(key)
        return value if isinstance(value, str) else None

    if type_name == "google_storage_bucket" and text("name") is not None:
        return _gcs_name(text("name") or "")
    if type_name == "google_service_account" and text("account_id") is not None:
        return _regexp("account_id", text("account_id") or "", _RFC1035 % (4, 28))
    if type_name == "google_project_iam_custom_role" and text("role_id") is not None:
        return _regexp("role_id", text("role_id") or "", _IAM_ROLE_ID)
    if type_name == "google_compute_resource_policy" and text("name") is not None:
        return _regexp("name", text("name") or "", _GCE_NAME)
    return []


# -- plan time: the provider's diff suppressions -----------------------------------------

_DEFAULT_BUCKETS = ("_Default", "_Required")


def adjust_plan(type_name: str, prior: dict[str, Any] | None,
                planned: dict[str, Any] | None) -> dict[str, Any] | None:
    """Log Analytics, once on, stays on: hashicorp/google suppresses a diff of
    enable_analytics from true to false (resource_logging_project_bucket_config.go
    ``enableAnalyticsBackwardsChangeDiffSuppress``; "Cannot be disabled once enabled"), so
    the plan keeps true."""
    if (type_name == "google_logging_project_bucket_config" and prior and planned
            and prior.get("enable_analytics") is True
            and planned.get("enable_analytics") is False):
        return {**planned, "enable_analytics": True}
    return planned


# -- apply time: Google's answers -------------------------------------------------------

# Resource type -> (API it calls, the API's title in Google's 403). Services a new project
# has on from the start are not listed (https://cloud.google.com/service-usage/docs/
# enabled-service#default: Cloud Logging, Cloud Monitoring, Cloud Storage, Service Usage, ...).
_SERVICE = {
    "google_container_cluster": ("container.googleapis.com", "Kubernetes Engine API"),
    "google_container_node_pool": ("container.googleapis.com", "Kubernetes Engine API"),
    "google_compute_resource_policy": ("compute.googleapis.com", "Compute Engine API"),
    "google_compute_network": ("compute.googleapis.com", "Compute Engine API"),
    "google_compute_subnetwork": ("compute.googleapis.com", "Compute Engine API"),
    "google_compute_router": ("compute.googleapis.com", "Compute Engine API"),
    "google_compute_router_nat": ("compute.googleapis.com", "Compute Engine API"),
    "google_compute_firewall": ("compute.googleapis.com", "Compute Engine API"),
    "google_service_account": ("iam.googleapis.com",
                               "Identity and Access Management (IAM) API"),
    "google_service_account_iam_member": ("iam.googleapis.com",
                                          "Identity and Access Management (IAM) API"),
    "google_project_iam_custom_role": ("iam.googleapis.com",
                                       "Identity and Access Management (IAM) API"),
    "google_project_iam_member": ("cloudresourcemanager.googleapis.com",
                                 "Cloud Resource Manager API"),
    "google_hypercomputecluster_cluster": ("hypercomputecluster.googleapis.com",
                                           "Cluster Director API"),
}


def _api_disabled(cloud: Any, type_name: str, project: str) -> str | None:
    """Google's 403 for an API the project has not enabled (quoted in
    banzaicloud/cloudinfo#378 for container, midl-dev/tezos-on-gke#34 for compute,
    appvia/kore#286 for cloudresourcemanager). Enabled = a google_project_service of the
    stack exists in the cloud directory."""
    if type_name not in _SERVICE:
        return None
    service, title = _SERVICE[type_name]
    for s in objects(cloud, "google_project_service"):
        if s.get("service") == service and str(s.get("project")) == project:
            return None
    return (f"googleapi: Error 403: {title} has not been used in project {project} before "
            "or it is disabled. Enable it by visiting https://console.developers.google.com/"
            f"apis/api/{service}/overview?project={project} then retry. If you enabled this "
            "API recently, wait a few minutes for the action to propagate to our systems and "
            "retry., accessNotConfigured")


_POOL_MEMBER = re.compile(r"^serviceAccount:(?P<pool>[^\[\s]+\.svc\.id\.goog)\[")


def _identity_pool_missing(cloud: Any, planned: dict[str, Any]) -> str | None:
    """Granting a role to serviceAccount:PROJECT.svc.id.goog[NS/KSA] before the project has a
    Workload Identity cluster: Google creates the pool with the first such cluster, and
    until then answers (terraform-google-modules/terraform-google-kubernetes-engine#916,
    google/kctf#193) with the 400 below."""
    m = _POOL_MEMBER.match(str(planned.get("member") or ""))
    if m is None:
        return None
    pool = m.group("pool")
    for c in objects(cloud, "google_container_cluster"):
        if _first(c.get("workload_identity_config")).get("workload_pool") == pool:
            return None
    return (f"googleapi: Error 400: Identity Pool does not exist ({pool}). Please check that "
            "you specified a valid resource name as returned in the `name` attribute in the "
            "configuration API., badRequest")


def _cluster_of(cloud: Any, project: str, location: str, cluster: str) -> dict[str, Any] | None:
    name = cluster.rsplit("/", 1)[-1]
    for c in objects(cloud, "google_container_cluster"):
        if (c.get("name") == name and str(c.get("location")) == location
                and str(c.get("project")) == project):
            return c
    return None


def _node_pool(cloud: Any, planned: dict[str, Any], project: str) -> str | None:
    location = str(planned.get("location") or "")
    cluster = str(planned.get("cluster") or "")
    name = str(planned.get("name") or "")
    # GKE's 40-character NodePool.name limit, an HTTP 400 at apply time
    # (GoogleCloudPlatform/magic-modules PR #18477); the wording follows GKE's 400 for
    # cluster names (rancher/rancher#12720), the node-pool text itself is unverified
    if not re.match(r"^(?:[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?)$", name):
        return (f'googleapi: Error 400: Invalid value for field "node_pool.name": "{name}". '
                "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?)' (only "
                "alphanumerics and '-' allowed, must start with a letter and end with an "
                "alphanumeric, and must be no longer than 40 characters)., badRequest")
    if _cluster_of(cloud, project, location, cluster) is None:
        # a node pool is created inside its cluster: the API path names the cluster
        # (projects.locations.clusters.nodePools.create); wording unverified
        return (f"googleapi: Error 404: Not found: projects/{project}/locations/{location}/"
                f"clusters/{cluster.rsplit('/', 1)[-1]}., notFound")
    node_config = _first(planned.get("node_config"))
    email = str(node_config.get("service_account") or "")
    if email.endswith(".iam.gserviceaccount.com") and not any(
            s.get("email") == email for s in objects(cloud, "google_service_account")):
        # sassoftware/viya4-iac-gcp#148
        return (f'error creating NodePool: googleapi: Error 400: Service account "{email}" '
                "does not exist., badRequest")
    placement = _first(planned.get("placement_policy"))
    autoscaling = _first(planned.get("autoscaling"))
    topology = placement.get("tpu_topology")
    if topology and autoscaling.get("total_max_node_count") and not autoscaling.get(
            "max_node_count"):
        # GKE sizes a multi-host TPU slice by the per-zone maximum, which is 0 with only
        # total_*_node_count (vllm-project/ci-infra PR #545 quotes the message)
        return (f"googleapi: Error 400: Maximum node count 0 is not a valid size of TPU pod "
                f"slice with topology {topology}., badRequest")
    return None


def _cluster(planned: dict[str, Any]) -> str | None:
    name = str(planned.get("name") or "")
    # GKE's 400 for a cluster name (quoted in rancher/rancher#12720)
    if not re.match(r"^(?:[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?)$", name):
        return (f'googleapi: Error 400: Invalid value for field "cluster.name": "{name}". '
                "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?)' (only "
                "alphanumerics and '-' allowed, must start with a letter and end with an "
                "alphanumeric, and must be no longer than 40 characters)., badRequest")
    return None


def _bucket_not_empty(cloud: Any, prior: dict[str, Any]) -> str | None:
    """Deleting a bucket that holds objects: Google answers 409 unless the provider empties it
    first (``force_destroy``). Objects are the files the stand-in Cloud Storage listing serves
    (gcs.py). Source: https://cloud.google.com/storage/docs/deleting-buckets
    ("you must delete the objects in the bucket first") and the JSON API's 409 for
    buckets.delete, message as the provider logs it."""
    if prior.get("force_destroy"):
        return None
    name = str(prior.get("name", ""))
    folder = _root(cloud) / "gcs-objects" / name
    if folder.is_dir() and any(p.is_file() for p in folder.rglob("*")):
        return (f"Error trying to delete bucket {name} containing objects without "
                "`force_destroy` set to true: googleapi: Error 409: The bucket you tried to "
                "delete is not empty., conflict")
    return None


def _firewall(planned: dict[str, Any]) -> str | None:
    """A firewall rule whose source range is not an IPv4 CIDR (Compute Engine answers 400
    for firewalls.insert; wording of the message unverified), e.g. a control-plane range that
    was never known."""
    import ipaddress

    for i, r in enumerate(planned.get("source_ranges") or []):
        try:
            ipaddress.ip_network(str(r), strict=False)
        except ValueError:
            return (f"googleapi: Error 400: Invalid value for field "
                    f"'resource.sourceRanges[{i}]': '{r}'. Must be a CIDR address range, "
                    "invalid")
    return None


def refuse(cloud: Any, type_name: str, prior: dict[str, Any] | None,
           planned: dict[str, Any] | None, config: dict[str, Any] | None = None) -> str | None:
    """Google's error for this create (or for deleting a non-empty bucket), or None when
    Google accepts it. Updates are not judged here (deletion protection is in plugin.py)."""
    if planned is None and prior is not None and type_name == "google_storage_bucket":
        return _bucket_not_empty(cloud, prior)
    if prior is not None or planned is None:
        return None
    project = _project(planned, config or {})
    refusal = _api_disabled(cloud, type_name, project)
    if refusal:
        return refusal
    if type_name in ("google_service_account_iam_member", "google_project_iam_member"):
        return _identity_pool_missing(cloud, planned)
    if type_name == "google_container_node_pool":
        return _node_pool(cloud, planned, project)
    if type_name == "google_container_cluster":
        return _cluster(planned)
    if type_name == "google_compute_firewall":
        return _firewall(planned)
    return None


def forget_only(type_name: str, prior: dict[str, Any] | None) -> bool:
    """A delete that leaves the object in Google Cloud: the _Default and _Required log
    buckets cannot be deleted, and the provider's Delete only drops the config from the state
    (resource_logging_bucket_config.go ``resourceLoggingBucketConfigDelete``)."""
    if prior is None:
        return False
    if type_name == "google_project_service":
        # disable_on_destroy = false: the provider's Delete leaves the API enabled
        # (resource_google_project_service.go resourceGoogleProjectServiceDelete)
        return prior.get("disable_on_destroy") is False
    return (type_name == "google_logging_project_bucket_config"
            and prior.get("bucket_id") in _DEFAULT_BUCKETS)


# -- what the sandbox enforces, listed (``mldiag-provision sandbox rules``) ----------------

@dataclass(frozen=True)
class Rule:
    """One Google Cloud (or provider, or GKE) behaviour the sandbox reproduces.

    ``when``: ``plan`` (the provider's checks), ``apply`` (Google's answer to a create),
    ``destroy``, ``cluster`` (the GKE API server) or ``slurm`` (the login node double of a
    Cluster Director cluster, slurm_login.py); ``source``: where the behaviour (and its
    message) comes from; ``verified``: False where the code above says the wording is
    unverified."""

    id: str
    when: str
    what: str
    source: str
    verified: bool = True


_PROVIDER = "hashicorp/terraform-provider-google"
RULES: tuple[Rule, ...] = (
    Rule("bucket-name", "plan", "google_storage_bucket.name: characters, 3-63 (222 with "
         "dots), no 'goog' prefix, no 'google'",
         f"{_PROVIDER} verify.ValidateGCSName; "
         "https://cloud.google.com/storage/docs/buckets#naming"),
    Rule("service-account-id", "plan", "google_service_account.account_id: RFC 1035, 6-30 "
         "characters", f"{_PROVIDER} ValidateRFC1035Name(6, 30)"),
    Rule("custom-role-id", "plan", "google_project_iam_custom_role.role_id: [a-zA-Z0-9_.], "
         "3-64 characters", f"{_PROVIDER} ValidateIAMCustomRoleID"),
    Rule("resource-policy-name", "plan", "google_compute_resource_policy.name: a GCE name",
         f"{_PROVIDER} ValidateGCEName"),
    Rule("log-analytics-stays-on", "plan", "Log Analytics on a log bucket cannot be turned "
         "off: the plan keeps enable_analytics = true",
         f"{_PROVIDER} resource_logging_project_bucket_config.go "
         "enableAnalyticsBackwardsChangeDiffSuppress"),
    Rule("api-not-enabled", "apply", "a create through an API the project has not enabled "
         "(no google_project_service for it) fails with Google's 403 accessNotConfigured",
         "403 quoted in banzaicloud/cloudinfo#378 (container), midl-dev/tezos-on-gke#34 "
         "(compute), appvia/kore#286 (cloudresourcemanager)"),
    Rule("identity-pool-missing", "apply", "a role for serviceAccount:PROJECT.svc.id.goog[..] "
         "before a Workload Identity cluster exists fails with 400 'Identity Pool does not "
         "exist'", "terraform-google-modules/terraform-google-kubernetes-engine#916, "
         "google/kctf#193"),
    Rule("cluster-name", "apply", "a GKE cluster name over 40 characters or not "
         "[a-z][-a-z0-9]* fails with 400", "GKE's 400 quoted in rancher/rancher#12720"),
    Rule("node-pool-name", "apply", "a node pool name over 40 characters fails with 400",
         "GoogleCloudPlatform/magic-modules PR #18477 (the limit); wording follows the "
         "cluster-name 400", verified=False),
    Rule("node-pool-needs-cluster", "apply", "a node pool whose cluster does not exist fails "
         "with 404", "projects.locations.clusters.nodePools.create (the path names the "
         "cluster)", verified=False),
    Rule("node-pool-service-account", "apply", "a node pool running as a service account "
         "that does not exist fails with 400", "sassoftware/viya4-iac-gcp#148"),
    Rule("tpu-slice-total-node-count", "apply", "a multi-host TPU node pool sized only by "
         "total_max_node_count fails with 400 'Maximum node count 0 is not a valid size'",
         "vllm-project/ci-infra PR #545"),
    Rule("firewall-source-range", "apply", "a firewall source range that is not a CIDR "
         "fails with 400", "Compute Engine firewalls.insert", verified=False),
    Rule("conflict-on-create", "apply", "creating a named object that already exists "
         "(service account, bucket, cluster, node pool, network, ...) fails with 409",
         "https://cloud.google.com/iam/reference/rest/v1/projects.serviceAccounts/create "
         "(an account id 'is unique within a project'); plugin.py CONFLICT_ON_CREATE"),
    Rule("bucket-not-empty", "destroy", "deleting a bucket that holds objects without "
         "force_destroy fails with 409", "https://cloud.google.com/storage/docs/"
         "deleting-buckets"),
    Rule("cluster-deletion-protection", "destroy", "deleting a cluster whose "
         "deletion_protection is true fails ('Cannot destroy cluster because "
         "deletion_protection is set to true')",
         f"{_PROVIDER} resource_container_cluster.go (the provider's Delete)"),
    Rule("project-service-kept", "destroy", "with disable_on_destroy = false, destroying a "
         "google_project_service leaves the API enabled",
         f"{_PROVIDER} resource_google_project_service.go resourceGoogleProjectServiceDelete"),
    Rule("default-log-bucket-kept", "destroy", "the _Default and _Required log buckets are "
         "never deleted: destroy drops their config from the state only",
         f"{_PROVIDER} resource_logging_bucket_config.go resourceLoggingBucketConfigDelete"),
    Rule("autopilot-managed-namespaces", "cluster", "on Autopilot, writes in kube-system, "
         "kube-public, kube-node-lease, gke-gmp-system, gke-managed-cim are refused by GKE "
         "Warden (managed-namespaces-limitation)",
         "terraform-google-modules/terraform-google-kubernetes-engine#2348, "
         "cert-manager/cert-manager#3713, open-policy-agent/gatekeeper#3045, "
         "tailscale/tailscale#9475, Dynatrace/dynatrace-operator#2194 (gke_cluster.py)"),
    Rule("autopilot-tpu-nodes", "cluster", "on Autopilot, a Pod that selects a TPU "
         "accelerator and topology and requests google.com/tpu chips gets the whole slice "
         "made at once (nodes of the machine type with that many chips, labelled, tainted), "
         "then is bound; other Pods get no node made (not modelled)",
         "https://cloud.google.com/kubernetes-engine/docs/how-to/tpus-autopilot (fact "
         "kubernetes.tpu.autopilotNodes; gke_cluster.py GkeCloudView.provision)"),
    Rule("recorded-nodes", "cluster", "Nodes of a node pool carry the capacity, allocatable "
         "and labels of real GKE Nodes of that machine type where one was recorded",
         "recorded_nodes.yaml (each node with its source)"),
    # the login node double of a Cluster Director cluster (slurm_login.py)
    Rule("slurm-login-node", "slurm", "verify on a Slurm stack reaches a login node double of "
         "the applied Cluster Director cluster (<cluster>-login-001); a command the node does "
         "not carry exits 127 'command not found', as bash does; what the double does not "
         "model says so and never passes",
         "https://www.gnu.org/software/bash/manual/bash.html#Exit-Status; the login node "
         "name is not documented by Cluster Director", verified=False),
    Rule("slurm-sinfo-nodes", "slurm", "sinfo -N lists each node set's nodes as "
         "<cluster>-<nodeset>-<n> in the partitions that name the node set: static nodes "
         "idle, dynamic nodes powered down (idle~); %N %n %R %P %f %T %t %D, sized and cut "
         "as sinfo(1) says",
         "https://slurm.schedmd.com/sinfo.html (OUTPUT FORMAT, NODE STATE CODES); "
         "GoogleCloudPlatform/cluster-toolkit schedmd-slurm-gcp-v6-nodeset README (naming; "
         "Cluster Director's is inferred)", verified=False),
    Rule("slurm-srun-allocation", "slurm", "srun to a partition the cluster lacks fails "
         "'Invalid partition name specified'; a job that cannot start now (its nodes down, "
         "drained or failing; more nodes than the partition has) queues, and --immediate "
         "ends it with 'Unable to allocate resources: Requested nodes are busy'",
         "SchedMD/slurm src/common/slurm_errno.c; https://slurm.schedmd.com/srun.html"
         "#OPT_immediate; each answer compared with Slurm 22.05's "
         "(tests/slurm/test_login_double_against_slurm.py)"),
    Rule("slurm-node-state", "slurm", "scontrol update NodeName=.. State=DOWN|DRAIN needs a "
         "Reason ('You must specify a reason when DOWNING or DRAINING a node. Request "
         "denied'); DRAIN is a flag over the state (a drained node set DOWN shows drained); "
         "the state is kept in the sandbox, and a node down or drained runs no job",
         "https://slurm.schedmd.com/scontrol.html#OPT_State_1; SchedMD/slurm "
         "src/scontrol/update_node.c; sinfo(1) NODE STATE CODES; compared with Slurm 22.05 "
         "(tests/slurm/test_login_double_against_slurm.py)"),
    Rule("slurm-mounts", "slurm", "a host mounts each storage its node set (or the login "
         "nodes) names that the cluster holds: Filestore as nfs (nfs4 with NFSV41), Managed "
         "Lustre as lustre, a bucket as fuse.gcsfuse; findmnt exits 1 when nothing is found",
         "https://cloud.google.com/filestore/docs (NFS file servers); mount.lustre(8) "
         "(mount -t lustre); https://docs.cloud.google.com/storage/docs/cloud-storage-fuse/"
         "mount-bucket; https://man7.org/linux/man-pages/man8/findmnt.8.html; the "
         "fuse.gcsfuse type is inferred", verified=False),
    Rule("slurm-gpus", "slurm", "nvidia-smi -L on a node lists the GPUs of its machine type "
         "(GPU catalog); a CPU machine type has no nvidia-smi",
         "https://docs.nvidia.com/deploy/nvidia-smi/index.html; catalog/data/gpu.yaml"),
    Rule("slurm-startup-files", "slurm", "a node set's startup script, as the cluster holds "
         "it, decides the ML Diagnostics job-env.sh and SDK venv on its nodes (its pip "
         "install is taken to succeed)",
         "modules/slurm/cluster-director/templates/nodeset-startup.sh.tftpl"),
)
