"""Safe destroy: what would stop a destroy half-way, checked before anything is deleted, and
the update-only apply that lifts it.

Google refuses to delete
  * a GKE cluster whose ``deletion_protection`` is true in the Terraform state (the provider
    checks it before calling the API: terraform-provider-google
    ``resource_container_cluster.go``, "Cannot destroy cluster because deletion_protection is
    set to true");
  * a bucket that still holds objects unless ``force_destroy`` is true
    (https://cloud.google.com/storage/docs/deleting-buckets: "the bucket must be empty";
    the API answers 409 "The bucket you tried to delete is not empty").
A destroy that meets either one midway has already deleted the node pools, grants and
service accounts; so both are checked first and the run refuses, naming the flag that lifts
the block without recreating anything.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mldiag_provision.engines import TERRAFORM_KINDS, PlanResult, ResourceKinds
from mldiag_provision.errors import ConflictError

OVERRIDE_FILE = "mldiag_destroy_override.tf"  # Terraform override file, removed afterwards

# bucket name -> number of objects (0 = empty; at most 1 is counted); raises on failure
ObjectCounter = Callable[[str], int]


@dataclass(frozen=True)
class Blocker:
    """One thing that would stop the destroy: the resource, why, and the flag that lifts it."""

    address: str
    why: str
    flag: str


def _module(address: str) -> str | None:
    parts = address.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "module" else None


def destroy_blockers(state: list[dict[str, Any]], *, disable_deletion_protection: bool,
                     delete_profiles: bool, bucket_objects: ObjectCounter,
                     kinds: ResourceKinds = TERRAFORM_KINDS) -> list[Blocker]:
    """Blockers among the project stage's resources (``state``: address/type/values, type
    names as in the engine's ``kinds``; attribute names as the google provider's:
    ``deletion_protection``, ``force_destroy``, ``name``)."""
    out = []
    for r in state:
        values = r.get("values") or {}
        if (r.get("type") in kinds.cluster and values.get("deletion_protection")
                and not disable_deletion_protection):
            out.append(Blocker(r["address"], f"the GKE cluster {values.get('name', '?')} has "
                               "deletion protection on", "--disable-deletion-protection"))
        if (r.get("type") in kinds.bucket and not values.get("force_destroy")
                and not delete_profiles):
            name = str(values.get("name", "?"))
            try:
                count = bucket_objects(name)
            except Exception as exc:  # no credentials, network: cannot tell, so refuse
                out.append(Blocker(r["address"], f"cannot tell whether gs://{name} holds "
                                   f"profiles ({' '.join(str(exc).split())[:160]})",
                                   "--delete-profiles"))
                continue
            if count:
                out.append(Blocker(r["address"], f"the profiles bucket gs://{name} holds "
                                   "profiles (Google refuses to delete a non-empty bucket)",
                                   "--delete-profiles"))
    return out


def blocked_error(blockers: list[Blocker]) -> ConflictError:
    """The refusal: every blocker, and the one command that lifts them all."""
    flags = sorted({b.flag for b in blockers})
    lines = "; ".join(f"{b.why} ({b.address})" for b in blockers)
    changes = []
    if "--disable-deletion-protection" in flags:
        changes.append("deletion_protection = false")
    if "--delete-profiles" in flags:
        changes.append("force_destroy = true")
    hint = (f"run the same destroy with {' '.join(flags)}: it first applies an update-only "
            f"change ({', '.join(changes)}) and then destroys")
    if "--delete-profiles" in flags:
        hint += ("; --delete-profiles deletes the profiles with the bucket, so copy them "
                 "first (gcloud storage cp -r gs://BUCKET DEST) if you need them")
    return ConflictError(f"destroy refused before deleting anything: {lines}", hint=hint)


def override_for(state: list[dict[str, Any]], *, disable_deletion_protection: bool,
                 delete_profiles: bool) -> tuple[str, list[str]] | None:
    """A Terraform override file (text) and the targets of the update-only apply that lifts
    the blocks, or None when nothing needs lifting. Module arguments in an override file
    replace the module's (https://developer.hashicorp.com/terraform/language/files/override)."""
    modules: dict[str, dict[str, str]] = {}
    targets = []
    for r in state:
        values = r.get("values") or {}
        module = _module(str(r.get("address", "")))
        if module is None:
            continue
        if (disable_deletion_protection and r.get("type") == "google_container_cluster"
                and values.get("deletion_protection")):
            modules.setdefault(module, {})["deletion_protection"] = "false"
            targets.append(r["address"])
        if (delete_profiles and r.get("type") == "google_storage_bucket"
                and not values.get("force_destroy")):
            modules.setdefault(module, {})["force_destroy"] = "true"
            targets.append(r["address"])
    if not modules:
        return None
    text = "# Written by mldiag-provision destroy for one update-only apply; removed after.\n"
    for name, args in sorted(modules.items()):
        body = "".join(f"  {k} = {v}\n" for k, v in sorted(args.items()))
        text += f'\nmodule "{name}" {{\n{body}}}\n'
    return text, targets


def forget_addresses(plan: PlanResult) -> list[str]:
    """Deletes in a destroy plan that must only forget: APIs stay enabled and Log Analytics
    stays on ``_Default`` (it cannot be turned off: https://cloud.google.com/logging/docs/
    buckets#upgrade-bucket, "you can't downgrade"); the engine's
    :attr:`~mldiag_provision.engines.ResourceKinds.kept` types."""
    return [c.address for c in plan.changes if c.kept]


def gcs_object_count(bucket: str) -> int:
    """1 when ``bucket`` holds at least one object, else 0 (0 too when it is gone), with the
    official client (``STORAGE_EMULATOR_HOST`` points it elsewhere, as the client documents).

    Raises:
      Exception: no credentials, or the API failed.
    """
    import google.cloud.storage as storage  # (a namespace package typed in part)

    if os.environ.get("STORAGE_EMULATOR_HOST"):
        client = storage.Client()
    else:
        token = os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN", "").strip()
        if token:
            from google.oauth2.credentials import Credentials

            client = storage.Client(credentials=Credentials(token), project="-")
        else:
            client = storage.Client()
    from google.api_core.exceptions import NotFound

    try:
        return len(list(client.list_blobs(bucket, max_results=1)))
    except NotFound:
        return 0
