"""Preflight rule ``gcp-format``: free-text recipe fields that name a Google Cloud thing
(region, zone, location, project, machine type, network) have that thing's documented form,
so a typo is found here and not by Google at apply time.

Formats and their sources:

* project id: 6-30 characters, lowercase letters, digits and hyphens, starting with a letter,
  not ending with a hyphen
  (https://cloud.google.com/resource-manager/docs/creating-managing-projects, "Project ID
  requirements");
* region ``us-east5`` / zone ``us-east5-a``: ``<area>-<location><n>`` plus ``-<letter>`` for
  a zone (https://cloud.google.com/compute/docs/regions-zones, "Each region ... zones
  ... us-central1-a"); a GKE cluster location is either
  (https://cloud.google.com/kubernetes-engine/docs/concepts/types-of-clusters);
* Cloud Storage bucket location: a region, a dual-region (``NAM4``, ``EUR4``, ...) or a
  multi-region (``US``, ``EU``, ``ASIA``), case-insensitive
  (https://cloud.google.com/storage/docs/locations);
* machine type: ``<series>-<type>[-<n>[suffix]]`` in lowercase, e.g. ``e2-standard-4``,
  ``ct5lp-hightpu-4t``, ``a3-ultragpu-8g``, or ``[series-]custom-CPUS-MEMORY[-ext]``
  (https://cloud.google.com/compute/docs/machine-resource, "Machine type names";
  https://cloud.google.com/compute/docs/instances/creating-instance-with-custom-machine-type);
* VPC network / subnetwork: an RFC 1035 name of at most 63 characters, or a resource path
  ``projects/P/global/networks/N`` / ``projects/P/regions/R/subnetworks/S``
  (https://cloud.google.com/compute/docs/naming-resources,
  https://cloud.google.com/vpc/docs/create-modify-vpc-networks);
* ML Diagnostics MLRun location: a region (the MLRun API's locations are regions:
  https://cloud.google.com/tpu/docs/ml-diagnostics; "global" unverified, so refused).

Bucket names, the image reference and service account emails are checked where they are
read (``engine``, ``diagnostics``, the model, ``slurm-orchestrator``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from mldiag_provision.errors import Problem
from mldiag_provision.lazyre import lazy
from mldiag_provision.preflight.context import Context, rule
from mldiag_provision.recipe.sourcemap import Path

RULE = "gcp-format"

_REGION = r"[a-z]+-[a-z]+[0-9]+"
_NAME = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
_PROJECT = r"[a-z][-a-z0-9]{4,28}[a-z0-9]"


@dataclass(frozen=True)
class Format:
    """One documented form: a regex (full match), its words, an example and the source."""

    what: str
    regex: re.Pattern[str]
    expected: str
    example: str
    source: str


PROJECT = Format("a project id", lazy(_PROJECT),
                 "6-30 lowercase letters, digits or hyphens, starting with a letter",
                 "my-ml-project",
                 "https://cloud.google.com/resource-manager/docs/creating-managing-projects")
REGION = Format("a region", lazy(_REGION), "a region such as us-east5 or europe-west4",
                "us-east5", "https://cloud.google.com/compute/docs/regions-zones")
ZONE = Format("a zone", lazy(_REGION + r"-[a-z]"), "a zone such as us-east5-a",
              "us-east5-a", "https://cloud.google.com/compute/docs/regions-zones")
REGION_OR_ZONE = Format("a region or zone", lazy(_REGION + r"(?:-[a-z])?"),
                        "a region (us-east5) or a zone (us-east5-a)", "us-east5",
                        "https://cloud.google.com/kubernetes-engine/docs/concepts/"
                        "types-of-clusters")
BUCKET_LOCATION = Format("a Cloud Storage location",
                         lazy(r"(?i:[a-z]+[0-9]*|" + _REGION + ")"),
                         "a region (us-east5), a dual-region (NAM4) or a multi-region (US)",
                         "us-east5", "https://cloud.google.com/storage/docs/locations")
MACHINE_TYPE = Format("a machine type",
                      lazy(r"[a-z][a-z0-9]*-(?:[a-z0-9]+-)*[a-z0-9]+"),
                      "a lowercase machine type name such as e2-standard-4 or "
                      "ct5lp-hightpu-4t", "e2-standard-4",
                      "https://cloud.google.com/compute/docs/machine-resource")
NETWORK = Format("a VPC network", lazy(f"{_NAME}|projects/{_PROJECT}/global/networks/"
                                             f"{_NAME}"),
                 "a network name (RFC 1035, at most 63 characters) or "
                 "projects/P/global/networks/N", "default",
                 "https://cloud.google.com/compute/docs/naming-resources")
SUBNETWORK = Format("a subnetwork", lazy(f"{_NAME}|projects/{_PROJECT}/regions/{_REGION}"
                                               f"/subnetworks/{_NAME}"),
                    "a subnetwork name (RFC 1035, at most 63 characters) or "
                    "projects/P/regions/R/subnetworks/S", "default",
                    "https://cloud.google.com/vpc/docs/create-modify-vpc-networks")


def fields(ctx: Context) -> Iterator[tuple[Path, str | None, Format]]:
    """(recipe path, value, format) of every free-text field that names a Google Cloud
    thing and is not checked elsewhere."""
    spec = ctx.recipe.spec
    orch = spec.orchestrator
    base = ("spec", "orchestrator")
    if orch.type != "slurm":  # Slurm's network lives in spec.slurm (slurm-network)
        yield (*base, "network"), orch.network, NETWORK
        yield (*base, "subnetwork"), orch.subnetwork, SUBNETWORK
    yield (*base, "systemPoolMachineType"), orch.system_pool_machine_type, MACHINE_TYPE
    yield (*base, "clusterLocation"), orch.cluster_location, REGION_OR_ZONE
    for i, s in enumerate(spec.slices):
        yield ("spec", "slices", i, "machineType"), s.machine_type, MACHINE_TYPE
        yield (("spec", "slices", i, "capacity", "reservationProject"),
               s.capacity.reservation_project, PROJECT)
    diag = ("spec", "diagnostics")
    yield (*diag, "mlrunRegion"), spec.diagnostics.mlrun_region, REGION
    yield ((*diag, "profilesBucket", "location"), spec.diagnostics.profiles_bucket.location,
           BUCKET_LOCATION)
    yield ("spec", "slurm", "loginNodes", "zone"), spec.slurm.login_nodes.zone, ZONE


@rule(RULE)
def formats(ctx: Context) -> Iterator[Problem]:
    for path, value, fmt in fields(ctx):
        if value is None or fmt.regex.fullmatch(value):
            continue
        cleaned = value.strip()
        hint = (f"remove the spaces around it: '{cleaned}'" if cleaned != value
                and fmt.regex.fullmatch(cleaned) else
                f"use the lowercase form: '{value.lower()}'" if fmt.regex.fullmatch(
                    value.lower()) else f"e.g. {fmt.example}")
        yield ctx.problem(RULE, path, f"'{value}' is not {fmt.what}", value=value,
                          expected=fmt.expected, hint=hint, source=fmt.source)
