"""Preflight rules for the stack around the slices: engine, cluster, versions, diagnostics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from mldiag_provision import engine_names, orchestrators
from mldiag_provision.catalog import requirements as req
from mldiag_provision.catalog.gke_version import GkeVersion
from mldiag_provision.catalog.names import load_name_limits
from mldiag_provision.errors import Problem, Severity
from mldiag_provision.lazyre import lazy
from mldiag_provision.orchestrators import Capability
from mldiag_provision.preflight.context import Context, rule

# Google Cloud labels: keys start with a lowercase letter; keys and values at most 63
# characters of lowercase letters, digits, '_' and '-'
# (https://cloud.google.com/resource-manager/docs/labels-overview#requirements).
_GCP_LABEL_KEY = lazy(r"^[a-z][a-z0-9_-]{0,62}$")
_GCP_LABEL_VALUE = lazy(r"^[a-z0-9_-]{0,63}$")
# At most 64 labels per resource (https://cloud.google.com/resource-manager/docs/labels-overview).
MAX_LABELS = 64
RESERVED_LABELS = ("managed-by", "mldiag-stack")  # the tool sets these on every resource


def bucket_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid Cloud Storage bucket name (catalog/data/names.yaml
    ``gcsBucket``, https://cloud.google.com/storage/docs/buckets#naming), or None."""
    return load_name_limits()["gcsBucket"].why_invalid(name)


def bucket_rule() -> str:
    """The bucket naming rule in words (a problem's ``expected``)."""
    return load_name_limits()["gcsBucket"].describe()


@rule("engine")
def engine(ctx: Context) -> Iterator[Problem]:
    """The engine has a unit (:mod:`mldiag_provision.engine_names`) and the orchestrator's
    blueprint lists it (``engines:`` of its blueprint.yaml); a backend fits its type."""
    from mldiag_provision.render.blueprint import load_blueprint, mismatch

    eng = ctx.recipe.spec.engine
    known = engine_names.names()
    if eng.name not in known:
        yield ctx.problem("engine", ("spec", "engine", "name"),
                          f"engine '{eng.name}' is not supported by this version yet",
                          value=eng.name, expected=", ".join(known),
                          hint="use " + " or ".join(f"'{k}'" for k in known))
    elif ctx.orchestrator is not None:
        found = mismatch(load_blueprint(ctx.orchestrator.blueprint), engine=eng.name)
        if found is not None:
            message, expected, hint = found
            yield ctx.problem("engine", ("spec", "engine", "name"), message, value=eng.name,
                              expected=expected, hint=hint)
    b = eng.backend
    base = ("spec", "engine", "backend")
    if b.type == "gcs" and not b.bucket:
        yield ctx.problem("engine", (*base, "bucket"), "a gcs backend needs a bucket",
                          expected="an existing GCS bucket name",
                          hint="add 'bucket: NAME' (the bucket must exist before `init`)")
    if b.type == "local" and (b.bucket or b.prefix):
        yield ctx.problem("engine", (*base, "bucket" if b.bucket else "prefix"),
                          "bucket/prefix are only used by the gcs backend",
                          value=b.bucket or b.prefix, hint="set 'type: gcs' or remove them")
    why = bucket_name_problem(b.bucket) if b.bucket else None
    if why:
        yield ctx.problem("engine", (*base, "bucket"),
                          f"'{b.bucket}' is not a bucket name: {why}", value=b.bucket,
                          expected=bucket_rule(),
                          source="https://cloud.google.com/storage/docs/buckets#naming")


@rule("orchestrator")
def orchestrator(ctx: Context) -> Iterator[Problem]:
    """The orchestrator has a unit (:mod:`mldiag_provision.orchestrators`); node pools need a
    zone; an existing cluster ignores minVersion and may lack Workload Identity."""
    orch = ctx.recipe.spec.orchestrator
    if ctx.orchestrator is None:
        yield ctx.problem("orchestrator", ("spec", "orchestrator", "type"),
                          f"orchestrator '{orch.type}' is not supported by this version yet",
                          value=orch.type, expected=", ".join(orchestrators.names()),
                          hint="use one of the supported orchestrators")
        return
    if ctx.has(Capability.NODE_POOLS) and not ctx.recipe.spec.zone:
        yield ctx.problem("orchestrator", ("spec", "zone"),
                          f"{orch.type} needs spec.zone: each slice's node pool lives in one "
                          "zone",
                          expected=f"a zone of {ctx.recipe.spec.region} that offers the "
                                   "slices' accelerators",
                          hint="see `mldiag-provision catalog tpu VERSION` for TPU zones, and "
                               "Compute Engine's GPU regions and zones page for GPUs",
                          source="https://cloud.google.com/kubernetes-engine/docs/concepts/tpus")
    if ctx.has(Capability.EXISTING_CLUSTER):
        if orch.min_version is not None:
            yield ctx.problem("orchestrator", ("spec", "orchestrator", "minVersion"),
                              "minVersion is ignored for an existing cluster (none is created)",
                              value=orch.min_version, severity=Severity.WARNING,
                              hint="remove it")
        if not orch.workload_identity and ctx.recipe.spec.diagnostics.enabled:
            yield ctx.problem(
                "orchestrator", ("spec", "orchestrator", "workloadIdentity"),
                "without Workload Identity the workloads need Google credentials of their own "
                "(for example a mounted service account key) to reach ML Diagnostics",
                value=False, severity=Severity.WARNING,
                hint="on GKE, keep workloadIdentity: true",
                source="https://cloud.google.com/tpu/docs/ml-diagnostics/gke")


def parsed_min_version(ctx: Context) -> GkeVersion | None:
    text = ctx.recipe.spec.orchestrator.min_version
    return GkeVersion.parse(text) if text else None


@rule("gke-version")
def gke_version(ctx: Context) -> Iterator[Problem]:
    """A user-given minimum GKE version meets every TPU and ML Diagnostics minimum."""
    orch = ctx.recipe.spec.orchestrator
    unit = ctx.orchestrator
    if unit is None or not unit.has(Capability.CREATES_CLUSTER) or orch.min_version is None:
        return
    path = ("spec", "orchestrator", "minVersion")
    version = parsed_min_version(ctx)
    if version is None:
        yield ctx.problem("gke-version", path, f"'{orch.min_version}' is not a GKE version",
                          value=orch.min_version,
                          expected="MAJOR.MINOR[.PATCH[-gke.BUILD]], e.g. 1.35.0-gke.3065000")
        return
    shapes = [(s, ctx.recipe.spec.slices[i].count) for i, s in ctx.shapes.items() if s]
    for need in req.cluster_needs(unit.gke, shapes, ctx.catalog):
        ok = req.satisfies(version, need)
        if ok is False:
            # an error only where the minimum is verified (an M or L minimum warns)
            yield ctx.problem("gke-version", path,
                              f"GKE {version} is below {need.version}, the minimum for "
                              f"{need.reason}", value=orch.min_version,
                              expected=f">= {need.version}", facts=[need.fact],
                              source=need.source,
                              hint=f"set minVersion to {need.version} or later, or remove it "
                                   "to let the tool choose")
        elif ok is None:
            yield ctx.problem("gke-version", path,
                              f"'{version}' may resolve to a release below {need.version}, "
                              f"the minimum for {need.reason}", value=orch.min_version,
                              expected=f">= {need.version}", severity=Severity.WARNING,
                              source=need.source, hint=f"write the full version {need.version}")
    agents = ctx.recipe.spec.diagnostics.agents
    if ctx.recipe.spec.diagnostics.enabled and agents in ("managed", "auto"):
        need = req.managed_diagnostics_need(ctx.catalog)
        ok = req.satisfies(version, need)
        if ok is True:
            return
        relation = ("is below" if ok is False else
                    "may resolve to a release below")
        if agents == "managed":
            yield ctx.problem(
                "gke-version", path,
                f"managed ML Diagnostics needs GKE {need.version} or later; minVersion "
                f"{version} {relation} it", value=orch.min_version,
                expected=f">= {need.version}", source=need.source,
                hint=f"set minVersion to {need.version} or later (the full version), or set "
                     "diagnostics.agents")
        # agents: auto below the managed minimum -> the manual install (decided in plan/)


@rule("gke-channel")
def gke_channel(ctx: Context) -> Iterator[Problem]:
    """The GKE version a new cluster is created with is one its release channel offers.

    The version is ``minVersion``, or the one plan/ picks (the highest minimum of the TPU
    slices, multislice and, with agents auto/managed, the managed ML Diagnostics add-on).
    Facts: gke.yaml ``releaseChannels`` (a dated copy of the GKE release notes; warnings
    unless marked verified).
    """
    orch = ctx.recipe.spec.orchestrator
    unit = ctx.orchestrator
    if unit is None or not unit.has(Capability.CREATES_CLUSTER):
        return
    fact = ctx.catalog.fact("releaseChannels")
    offer = fact["channels"].get(orch.release_channel)
    if offer is None:
        return
    managed_need = req.managed_diagnostics_need(ctx.catalog)
    asked = _created_version(ctx, managed_need)
    if asked is None:
        return
    lo, hi = req.channel_offer(ctx.catalog, orch.release_channel) or ((0, 0), (0, 0))
    mine = (asked.version.major, asked.version.minor)
    if lo <= mine <= hi or (mine < lo and orch.min_version is None and not asked.from_managed):
        return  # below the channel: plan/ leaves the version to the channel's default
    offered = (f"the {orch.release_channel} channel offers {offer['minMinor']} to "
               f"{offer['maxMinor']} for new clusters (GKE release notes as read on "
               f"{fact.get('read', '?')})")
    if mine > hi:
        hint = _newer_than_channel_hint(ctx, fact, mine, asked.from_managed, managed_need)
        message = (f"{asked.origin} is newer than {offered}: GKE would refuse to create the "
                   f"cluster ('Master version must be one of \"{orch.release_channel}\" "
                   "channel supported versions')")
    else:
        hint = (f"raise minVersion to {offer['minMinor']} or later, or remove it to let the "
                "tool choose")
        message = (f"{asked.origin} is older than {offered}: GKE would refuse to create the "
                   "cluster")
    yield ctx.problem("gke-channel", asked.path, message,
                      value=orch.min_version or orch.release_channel,
                      expected=f"{offer['minMinor']} <= version < {_next(hi)}",
                      hint=hint, facts=[ctx.catalog.store.as_fact(fact)],
                      source=ctx.catalog.source_url(str(fact["source"])))


class _CreatedVersion(NamedTuple):
    """The GKE version a new cluster is created with (``version``), the field to point at
    (``path``), the version in words (``origin``), and whether the managed ML Diagnostics
    add-on is what sets it (``from_managed``)."""

    version: GkeVersion
    path: tuple[Any, ...]
    origin: str
    from_managed: bool


def _created_version(ctx: Context, managed_need: req.VersionNeed) -> _CreatedVersion | None:
    """``minVersion`` when given (None when it does not parse: gke-version reports it), else
    the version plan/ picks: the highest of the slices' and multislice's needs
    (:func:`~mldiag_provision.catalog.requirements.cluster_needs`) and, with agents
    auto/managed, ``managed_need``; None when nothing needs a version."""
    orch = ctx.recipe.spec.orchestrator
    if orch.min_version is not None:
        version = parsed_min_version(ctx)
        if version is None:
            return None  # gke-version reports it
        return _CreatedVersion(version, ("spec", "orchestrator", "minVersion"),
                               f"minVersion {version}", False)
    unit = ctx.orchestrator
    assert unit is not None
    diag = ctx.recipe.spec.diagnostics
    shapes = [(s, ctx.recipe.spec.slices[i].count) for i, s in ctx.shapes.items() if s]
    needs = req.cluster_needs(unit.gke, shapes, ctx.catalog)
    if diag.enabled and diag.agents in ("auto", "managed"):
        needs.append(managed_need)
    if not needs:
        return None
    top = req.highest(needs)
    return _CreatedVersion(top.version, ("spec", "orchestrator", "releaseChannel"),
                           f"the minimum version the tool picks, {top.version} ({top.reason})",
                           top is managed_need)


def _newer_than_channel_hint(ctx: Context, fact: Any, mine: tuple[int, int],
                             from_managed: bool, managed_need: req.VersionNeed) -> str:
    """The ways out for a version (``mine``, major and minor) newer than the release channel
    offers: the channels that offer it (gke.yaml ``releaseChannels``, ``fact``), a lower
    minVersion, and manual agents when the managed add-on is what needs it."""
    orch = ctx.recipe.spec.orchestrator
    offer = fact["channels"][orch.release_channel]
    takers = [ch for ch in fact["channels"]
              if (rng := req.channel_offer(ctx.catalog, ch)) and rng[0] <= mine <= rng[1]]
    options = []
    if takers:
        options.append(f"set releaseChannel: {takers[0]}"
                       + (f" (or {', '.join(takers[1:])})" if takers[1:] else ""))
    options.append(f"a minVersion the {orch.release_channel} channel offers "
                   f"(up to {offer['maxMinor']})")
    if from_managed:
        options.append("diagnostics.agents: manual (the GKE-managed ML Diagnostics "
                       f"add-on is what needs {managed_need.version})")
    return "; or ".join(options)


def _next(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1] + 1}"


@rule("diagnostics")
def diagnostics(ctx: Context) -> Iterator[Problem]:
    diag = ctx.recipe.spec.diagnostics
    spec = ctx.recipe.spec
    if not diag.enabled:
        return
    base = ("spec", "diagnostics")
    la = diag.log_analytics
    if la.enabled and la.retention_days is None:
        yield ctx.problem(
            "diagnostics", (*base, "logAnalytics", "retentionDays"),
            "retentionDays is required when Log Analytics is enabled: Terraform sets the "
            "_Default bucket's retention on apply, and the provider's default (30 days) would "
            "silently replace a custom retention",
            expected="the _Default bucket's current retention in days (1-3650)",
            hint="gcloud logging buckets describe _Default --location=global "
                 "--format='value(retentionDays)'",
            source="https://registry.terraform.io/providers/hashicorp/google/latest/docs/"
                   "resources/logging_project_bucket_config")
    bucket = diag.profiles_bucket.name
    why = bucket_name_problem(bucket) if bucket is not None else None
    if why:
        yield ctx.problem("diagnostics", (*base, "profilesBucket", "name"),
                          f"'{bucket}' is not a valid bucket name: {why}", value=bucket,
                          expected=bucket_rule(),
                          source="https://cloud.google.com/storage/docs/buckets#naming")
    regions_fact = ctx.catalog.fact("mlDiagnostics", "workloadMonitoringRegions")
    regions = list(regions_fact["regions"])
    for path, region in (((*base, "mlrunRegion"), diag.mlrun_region),
                         (("spec", "region"), spec.region)):
        if region and region not in regions:
            forced = _tpus_only_in(ctx, region) if path == ("spec", "region") else []
            yield ctx.problem(
                "diagnostics", path,
                f"region '{region}' has no ML Diagnostics workload monitoring (GA regions only)"
                + (f"; the catalog lists TPU {', '.join(forced)} in {region} only, so no "
                   "other region runs these slices" if forced else ""),
                value=region, expected=", ".join(regions),
                # a note, not a warning, where the slices' TPU leaves no choice of region
                severity=Severity.INFO if forced else Severity.WARNING,
                source=ctx.catalog.source_url(regions_fact["source"]),
                hint="MLRuns, SDK metrics and profiles still work; automatic workload "
                     "monitoring does not")


def _tpus_only_in(ctx: Context, region: str) -> list[str]:
    """The TPU versions of the recipe's slices when every slice is a TPU whose catalog zones
    (tpu.yaml ``versions.<v>.zones``) all lie in ``region`` and ``region`` is one only TPUs
    use (places.yaml ``tpuOnlyRegions``: us-central2 hosts TPU v4 only, whose one zone is
    us-central2-b, CTPU-REGIONS); else ``[]``: another region could run the slices.
    """
    from mldiag_provision.catalog.places import places

    if region not in places().tpu_only or not ctx.recipe.spec.slices:
        return []
    found: list[str] = []
    for i in range(len(ctx.recipe.spec.slices)):
        shape = ctx.shapes.get(i)
        if shape is None:  # a GPU slice, or a TPU the catalog does not resolve
            return []
        zones = [str(z) for z in ((shape.version.raw.get("zones") or {}).get("values") or [])]
        if not zones or any(z.rsplit("-", 1)[0] != region for z in zones):
            return []
        if shape.version.key not in found:
            found.append(shape.version.key)
    return found


@rule("labels")
def labels(ctx: Context) -> Iterator[Problem]:
    user = ctx.recipe.metadata.labels
    if len(user) + len(RESERVED_LABELS) > MAX_LABELS:
        yield ctx.problem("labels", ("metadata", "labels"),
                          f"{len(user)} labels; with the tool's own {len(RESERVED_LABELS)} that is "
                          f"more than the {MAX_LABELS} a resource may have",
                          expected=f"at most {MAX_LABELS - len(RESERVED_LABELS)} labels",
                          source="https://cloud.google.com/resource-manager/docs/labels-overview")
    for key, value in user.items():
        path = ("metadata", "labels", key)
        if key in RESERVED_LABELS:
            yield ctx.problem("labels", path, f"label '{key}' is set by mldiag-provision itself",
                              value=key, prefer_value=False,
                              hint="choose another key; the tool uses it to find its resources")
        if not _GCP_LABEL_KEY.match(key):
            yield ctx.problem("labels", path, f"label key '{key}' is not a Google Cloud label",
                              value=key, prefer_value=False,
                              expected="lowercase letter first, then up to 62 lowercase "
                                       "letters, digits, '_' or '-'")
        if not _GCP_LABEL_VALUE.match(value):
            yield ctx.problem("labels", path, f"label value '{value}' is not allowed",
                              value=value, expected="up to 63 lowercase letters, digits, '_' "
                                                    "or '-'")
