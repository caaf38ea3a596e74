"""Error translation against Google's and Terraform's real messages (issue 15).

Each message below is quoted from a public source (named next to it) or captured from the
real terraform binary; each must give the advice that fits it. The regression cases are the
two that gave wrong advice before: a non-empty bucket on destroy (was "already exists ...
terraform import") and a truncated terraform.tfstate (was "another run holds the state lock"
with a force-unlock hint).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mldiag_provision.engines.terraform import translate

REAL = [
    # JSON API body of buckets.delete on a non-empty bucket (kestra-io/plugin-gcp#321)
    ("googleapi: Error 409: The bucket you tried to delete is not empty., conflict",
     "still holds objects", "--delete-profiles"),
    # older wording of the same (crossplane-contrib/provider-gcp#295)
    ("delete failed: cannot delete GCP bucket: googleapi: Error 409: The bucket you tried to "
     "delete was not empty., conflict", "still holds objects", "--delete-profiles"),
    # the google provider's own refusal (hashicorp/terraform-provider-google#1509)
    ("Error: Error trying to delete bucket my-ml-project-x-profiles containing objects without "
     "`force_destroy` set to true", "still holds objects", "--delete-profiles"),
    # global bucket namespace (percona/mongo_terraform_ansible#24)
    ("Error: googleapi: Error 409: The requested bucket name is not available. The bucket "
     "namespace is shared by all users of the system. Please select a different name and try "
     "again., conflict", "taken by another project", "profilesBucket.name"),
    # a real "exists" 409 (terraform-google-modules/terraform-google-cloud-storage#238)
    ("Error: googleapi: Error 409: Your previous request to create the named bucket succeeded "
     "and you already own it., conflict", "already exists", "terraform import"),
    # BigQuery's form (GoogleCloudPlatform/agent-starter-pack#196)
    ("Error: Error creating Dataset: googleapi: Error 409: Already Exists: Dataset p:d, "
     "duplicate", "already exists", "terraform import"),
    # the provider's deletion protection refusal (GoogleCloudPlatform/microservices-demo#2240)
    ("Error: Cannot destroy cluster because deletion_protection is set to true. Set it to "
     "false to proceed with cluster deletion.", "deletion protection", "deletionProtection"),
    # terraform 1.11 on a truncated local terraform.tfstate (captured; see the test below)
    ("Error: Error acquiring the state lock\n\nError message: 2 problems:\n\n- Unsupported state "
     "file format: The state file could not be parsed as JSON: syntax error at byte offset "
     "60.\n- Unsupported state file format: The state file does not have a \"version\" "
     "attribute, which is required to identify the format version.",
     "state file is damaged", "terraform.tfstate.backup"),
    # a real lock held by another run (Terraform's lock error with its lock info)
    ("Error: Error acquiring the state lock\n\nError message: resource temporarily "
     "unavailable\nLock Info:\n  ID:        1f2c\n  Path:      terraform.tfstate\n  "
     "Operation: OperationTypeApply", "holds the state lock", "force-unlock"),
]


@pytest.mark.parametrize(("text", "what", "hint"), REAL, ids=lambda v: str(v)[:40])
def test_real_messages_get_the_advice_that_fits(text: str, what: str, hint: str) -> None:
    found = translate(text)
    assert found is not None, text
    assert what in found[0], found
    assert hint in found[1], found


def test_damaged_state_is_never_a_lock_or_import_hint() -> None:
    what, hint = translate(REAL[7][0])  # type: ignore[misc]
    assert "lock" not in what.replace("no other run holds a lock", "")
    assert "do not force-unlock" in hint


def test_non_empty_bucket_is_never_an_import_hint() -> None:
    for text, _, _ in REAL[:3]:
        what, hint = translate(text)  # type: ignore[misc]
        assert "import" not in hint and "already exists" not in what


@pytest.mark.terraform
def test_terraform_itself_says_this_about_a_truncated_state(tmp_path: Path) -> None:
    """The captured message above is what the real terraform prints (guards the source)."""
    tf = shutil.which("terraform")
    assert tf, "terraform is on the project's machine image"
    (tmp_path / "main.tf").write_text('output "x" { value = 1 }\n')
    run = lambda *a: subprocess.run([tf, *a, "-no-color"], cwd=tmp_path,  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    assert run("init", "-input=false").returncode == 0
    assert run("apply", "-auto-approve", "-input=false").returncode == 0
    state = tmp_path / "terraform.tfstate"
    json.loads(state.read_text())
    state.write_bytes(state.read_bytes()[:60])  # truncated, as a full disk or a kill leaves it
    done = run("plan", "-input=false")
    assert done.returncode != 0
    found = translate(done.stdout + done.stderr)
    assert found is not None and "state file is damaged" in found[0], done.stderr


# terraform 1.11.4's refusal when a gcs backend's lock object exists (captured against the
# sandbox's Cloud Storage stand-in, tests/engine/test_gcs_backend_lock.py)
GCS_LOCKED = (
    'Error: Error acquiring the state lock\n\nError message: writing '
    '"gs://tfstate/fleet/one/default.tflock" failed:\ngoogleapi: Error 412: At least one of '
    'the pre-conditions you specified did\nnot hold., \nLock Info:\n  ID:        '
    '1796193609363898749\n  Path:      gs://tfstate/fleet/one/default.tflock\n  Operation: '
    'OperationTypeApply\n  Who:       root@vm\n  Version:   1.11.4\n  Created:   2026-12-02 '
    '06:40:09.345973613 +0000 UTC\n  Info:      \n\n\nTerraform acquires a state lock to '
    'protect the state from being written\nby multiple users at the same time.')


@pytest.mark.parametrize("text", [GCS_LOCKED, " ".join(GCS_LOCKED.split())],
                         ids=["as-printed", "flattened"])
def test_a_gcs_lock_names_its_holder_and_the_exact_force_unlock(text: str) -> None:
    what, hint = translate(text)  # type: ignore[misc]
    assert "holds the state lock" in what
    assert "412" not in what and "precondition" not in what.lower()
    assert "`terraform force-unlock 1796193609363898749`" in hint
    assert "gs://tfstate/fleet/one/default.tflock" in hint
    assert ("held by root@vm (OperationTypeApply, since 2026-12-02 06:40:09.345973613 "
            "+0000 UTC)") in hint


@pytest.mark.parametrize("text", [
    next(t for t, _, _ in REAL if "Path:      terraform.tfstate" in t),  # a local (OS) lock
    "Error: Error acquiring the state lock\n\nError message: timeout",  # no lock info
    GCS_LOCKED.replace("  ID:        1796193609363898749\n", ""),  # lock info without an ID
], ids=["local-lock", "no-info", "no-id"])
def test_only_a_gcs_lock_with_an_id_gets_a_force_unlock_command(text: str) -> None:
    what, hint = translate(text)  # type: ignore[misc]
    assert "holds the state lock" in what
    assert "terraform force-unlock " not in hint.replace("`terraform force-unlock` in the log",
                                                         "")
