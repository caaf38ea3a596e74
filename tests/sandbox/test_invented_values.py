"""The values the sandbox's google provider invents for computed attributes (what Google
would return) never leak a ``standin:`` placeholder into what a user sees: every computed
string attribute the shipped modules and blueprints read (outputs, locals, other
resources' arguments) and every attribute ``sandbox ls`` names an object by.

Cheap by design: the plugin's invent function over the provider schema subset the sandbox
serves, no Terraform run. The fresh-user finding it guards: ``output`` of the Slurm A3 Ultra
recipe showed ``cluster_name = "standin:google_hypercomputecluster_cluster.name"`` and
``node_service_account = "standin:google_compute_default_service_account.email"``; ``sandbox
ls`` showed ``standin:google_project_iam_custom_role.name``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mldiag_provision.sandbox import schema as sch
from mldiag_provision.sandbox.plugin import SANDBOX_PROJECT_NUMBER, Cloud, Provider

REPO = Path(__file__).resolve().parents[2]
_REF = re.compile(r"\b(data\.)?(google_[a-z0-9_]+)\.[a-z0-9_-]+(?:\[[^\]]*\])?\.([a-z_]+)")
LS_NAMES = ("bucket_id", "email", "name", "bucket", "service", "role", "member", "account_id")
"""What ``sandbox ls`` names an object by (:func:`mldiag_provision.sandbox.session._name_of`)."""
TOP = {"project": "my-project", "location": "us-central1", "role_id": "mldiagNode",
       "cluster_id": "slurm-a3u", "account_id": "mldiag-nodes", "name": "n",
       "bucket_id": "_Default"}
UNSEEN = {(True, "google_client_config", "access_token")}
"""Sensitive: never printed (the provider marks it sensitive); without a token in the
provider configuration the sandbox passes its placeholder on, as it always has."""


def _read_attributes() -> set[tuple[bool, str, str]]:
    """(data source?, type, attribute) for each google attribute a shipped .tf file reads."""
    found = set()
    for root in ("modules", "blueprints"):
        for path in (REPO / root).rglob("*.tf*"):
            for m in _REF.finditer(path.read_text(encoding="utf-8")):
                found.add((bool(m.group(1)), m.group(2), m.group(3)))
    return found


def _computed_strings(provider: Provider) -> list[tuple[bool, str, str]]:
    """Computed string attributes read by the modules, plus the ``sandbox ls`` names of every
    type they use, that Google (not the configuration) sets."""
    read = _read_attributes()
    types = {(data, t) for data, t, _ in read}
    wanted = read | {(data, t, a) for data, t in types for a in LS_NAMES}
    out = []
    for data, type_name, attr in sorted(wanted):
        table = provider.schema.data_sources if data else provider.schema.resources
        block = table.get(type_name)
        a = block.attributes.get(attr) if block is not None else None
        if (a is None or not a.computed or a.required or a.optional
                or (data, type_name, attr) in UNSEEN):
            continue
        if block.implied_type()[1].get(attr) == "string":
            out.append((data, type_name, attr))
    return out


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Provider:
    p = Provider(sch.load_provider("google"), Cloud(tmp_path_factory.mktemp("cloud")))
    p.config = {"project": "my-project", "region": "us-central1"}
    return p


def test_the_modules_read_the_attributes_of_the_finding(provider: Provider) -> None:
    got = set(_computed_strings(provider))
    assert {(False, "google_hypercomputecluster_cluster", "name"),
            (True, "google_compute_default_service_account", "email"),
            (False, "google_project_iam_custom_role", "name")} <= got


def test_no_computed_attribute_a_user_sees_is_a_placeholder(provider: Provider) -> None:
    leaks = []
    for data, type_name, attr in _computed_strings(provider):
        value = provider._invent_string(type_name, attr, dict(TOP), f"{type_name}/x")
        if str(value).startswith("standin:"):
            leaks.append(f"{'data.' if data else ''}{type_name}.{attr}")
    assert leaks == []


def test_the_invented_values_are_googles_formats(provider: Provider) -> None:
    def invent(type_name: str, attr: str) -> object:
        return provider._invent_string(type_name, attr, dict(TOP), f"{type_name}/x")

    # https://cloud.google.com/iam/reference/rest/v1/roles/get
    assert invent("google_project_iam_custom_role", "name") == (
        "projects/my-project/roles/mldiagNode")
    # https://cloud.google.com/compute/docs/access/service-accounts#default_service_account
    sa = f"{SANDBOX_PROJECT_NUMBER}-compute@developer.gserviceaccount.com"
    assert invent("google_compute_default_service_account", "email") == sa
    assert invent("google_compute_default_service_account", "member") == f"serviceAccount:{sa}"
    assert invent("google_compute_default_service_account", "name") == (
        f"projects/my-project/serviceAccounts/{sa}")
    uid = str(invent("google_compute_default_service_account", "unique_id"))
    assert len(uid) == 21 and uid.isdigit()
    assert invent("google_service_account", "member") == (
        "serviceAccount:mldiag-nodes@my-project.iam.gserviceaccount.com")
    # https://cloud.google.com/logging/docs/reference/v2/rest/v2/projects.locations.buckets
    assert invent("google_logging_project_bucket_config", "name") == (
        "projects/my-project/locations/us-central1/buckets/_Default")
    # https://docs.cloud.google.com/cluster-director/docs/reference/rest/v1/projects.locations.clusters/get
    assert invent("google_hypercomputecluster_cluster", "name") == (
        "projects/my-project/locations/us-central1/clusters/slurm-a3u")


def test_the_project_number_is_the_one_the_resource_manager_double_answers() -> None:
    from mldiag_provision.sandbox.gcp_apis import FakeProject

    assert FakeProject("p").number == SANDBOX_PROJECT_NUMBER
