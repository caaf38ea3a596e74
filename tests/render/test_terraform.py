"""Rendered Terraform is canonically formatted (``terraform fmt``) and every resource/data
block matches the real hashicorp/google(-beta) 8.7.0 schemas (tests/data/tf_schema/)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import hcl2
import pytest

from render.schema_walk import Schemas, check_text, check_tree
from stack_support import RECIPES, render_files, terraform_binary

pytestmark = pytest.mark.terraform


def write(files: dict[str, bytes], out: Path) -> Path:
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return out


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas.load()


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_terraform_fmt_check(recipe: Path, tmp_path: Path) -> None:
    tf = terraform_binary()
    if tf is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    out = write(render_files(recipe), tmp_path / "stack")
    proc = subprocess.run([tf, "fmt", "-check", "-recursive", "-diff", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f"terraform fmt would change {proc.stdout.strip() or '?'}\n{proc.stderr}")


def test_terraform_fmt_check_can_fail(tmp_path: Path) -> None:
    """The check above is live: a badly aligned file is reported."""
    tf = terraform_binary()
    if tf is None:
        return
    (tmp_path / "bad.tf").write_text('locals {\n  a = 1\n  bbb    = 2\n}\n')
    proc = subprocess.run([tf, "fmt", "-check", "-recursive", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "bad.tf" in proc.stdout


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_every_tf_parses_and_matches_provider_schema(recipe: Path, tmp_path: Path,
                                                     schemas: Schemas) -> None:
    files = render_files(recipe)
    tf_files = sorted(rel for rel in files if rel.endswith(".tf"))
    assert "main.tf" in tf_files and any(r.startswith("modules/") for r in tf_files)
    for rel in tf_files:
        hcl2.loads(files[rel].decode("utf-8"))  # raises on a syntax error
    out = write(files, tmp_path / "stack")
    problems, blocks = check_tree(out, schemas)
    assert blocks >= 5, f"only {blocks} resource/data blocks found: is the walker blind?"
    assert not problems, "\n".join(problems)


def test_cluster_is_checked_against_google_beta(tmp_path: Path, schemas: Schemas) -> None:
    """The managed ML Diagnostics block exists only in google-beta: the walker must pick the
    schema by the resource's ``provider`` meta-argument."""
    text = ('resource "google_container_cluster" "c" {\n  name = "x"\n'
            '  managed_machine_learning_diagnostics_config {\n    enabled = true\n  }\n}\n')
    assert any("managed_machine_learning_diagnostics_config: unknown" in p
               for p in check_text(text, "x.tf", schemas))
    beta = text.replace('  name = "x"\n', '  provider = google-beta\n  name = "x"\n')
    assert check_text(beta, "x.tf", schemas) == []


BROKEN = '''
resource "google_container_cluster" "c" {
  provider    = google-beta
  name        = "c"
  tpu_toplogy = "2x2"
  release_channel = { channel = "RAPID" }
  enable_autopilot {
  }
  endpoint = "1.2.3.4"
  dynamic "managed_machine_learning_diagnostics_config" {
    for_each = [true]
    content {
      enabeld = true
    }
  }
  dynamic "no_such_block" {
    for_each = []
    content {}
  }
  lifecycle {
    ignore_changes = [name]
  }
  count      = 1
  depends_on = []
}

resource "google_storage_bucket" "b" {
  for_each = toset([])
  name     = "b"
}

data "google_service_account" "sa" {
  acount_id = "x"
}
'''


def test_schema_walk_reports_broken_snippet(schemas: Schemas) -> None:
    got = check_text(BROKEN, "broken.tf", schemas)
    cluster = "broken.tf: google_container_cluster.c: "
    want = [
        cluster + "tpu_toplogy: unknown attribute or block",
        cluster + "release_channel: block written as an attribute (drop the `=`)",
        cluster + "enable_autopilot: attribute written as a block (use `=`)",
        cluster + "endpoint: computed-only attribute cannot be set",
        cluster + "managed_machine_learning_diagnostics_config.enabeld: unknown attribute "
                  "or block",
        cluster + "dynamic.no_such_block: unknown block type",
        "broken.tf: google_storage_bucket.b: location: missing required attribute",
        "broken.tf: data.google_service_account.sa: acount_id: unknown attribute or block",
        "broken.tf: data.google_service_account.sa: account_id: missing required attribute",
    ]
    assert sorted(got) == sorted(want)
