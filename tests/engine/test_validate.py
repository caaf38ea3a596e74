"""``terraform validate`` with the REAL terraform binary against the offline stand-in
providers, which serve the REAL hashicorp/google and google-beta 8.7.0 schemas: every
example recipe's rendered stack passes, and a broken template fails with the resource
address and the attribute path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mldiag_provision.engines.terraform import TerraformEngine
from mldiag_provision.errors import EngineError
from mldiag_provision.runner import CommandRunner
from stack_support import RECIPES, render_files

pytestmark = pytest.mark.terraform


def write_stack(files: dict[str, bytes], out: Path) -> Path:
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return out


def engine_for(stack: Path) -> TerraformEngine:
    return TerraformEngine(stack, CommandRunner(stack / ".mldiag/logs/test.log"))


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.stem for r in RECIPES])
def test_every_example_stack_passes_terraform_validate(recipe: Path, tmp_path: Path,
                                                       offline) -> None:
    if offline is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    stack = write_stack(render_files(recipe), tmp_path / "stack")
    engine = engine_for(stack)
    engine.init(backend=False)  # a GCS backend is not reachable offline; validate needs none
    engine.validate()
    log = (stack / ".mldiag/logs/test.log").read_text()
    assert "terraform validate" in log and "Success" not in log  # -json, not text
    # The stand-in really served the schemas (not some other provider):
    lock = (stack / ".terraform.lock.hcl").read_text()
    assert 'provider "registry.terraform.io/hashicorp/google"' in lock


def _broken_cluster_module(stack: Path) -> Path:
    for tf in sorted(stack.glob("modules/**/*.tf")):
        text = tf.read_text()
        if 'resource "google_container_cluster"' in text and "release_channel {" in text:
            return tf
    raise AssertionError("no cluster module with a release_channel block was rendered")


def test_misspelt_attribute_and_misplaced_block_fail_with_address_and_path(
        tmp_path: Path, offline) -> None:
    if offline is None:
        return
    recipe = next(r for r in RECIPES if "autopilot" in r.stem and "tpu" in r.stem)
    stack = write_stack(render_files(recipe), tmp_path / "stack")
    tf = _broken_cluster_module(stack)
    text = tf.read_text()
    # 1. a misspelt attribute inside a nested block
    text = re.sub(r"(release_channel \{\n\s+)channel(\s+)=", r"\1chanel \2=", text, count=1)
    # 2. a block written in the wrong place: workload_identity_config inside release_channel
    text = text.replace("release_channel {\n",
                        "release_channel {\n    workload_identity_config {\n    }\n", 1)
    tf.write_text(text)
    engine = engine_for(stack)
    engine.init(backend=False)
    with pytest.raises(EngineError) as info:
        engine.validate()
    message = info.value.message
    module = engine.module_dirs()[tf.parent.relative_to(stack).as_posix()]
    address = f"{module}.google_container_cluster.this"
    assert f"{address}.release_channel.chanel: Unsupported argument" in message, message
    assert (f"{address}.release_channel.workload_identity_config: Unsupported block type"
            in message), message
    assert f"{tf.relative_to(stack).as_posix()}:" in message
    assert info.value.exit_code == 4
    assert "full log:" in (info.value.hint or "")


def test_an_init_error_shows_terraform_s_summary_and_whole_detail(tmp_path: Path,
                                                                  offline) -> None:
    """``init`` has no -json: its error used to be cut to the last line of a wrapped
    sentence. The summary and the whole detail, unwrapped, are shown (real terraform)."""
    if offline is None:
        return
    stack = tmp_path / "stack"
    stack.mkdir()
    (stack / "main.tf").write_text('module "agents" {\n  source = "./no-such-module"\n}\n')
    with pytest.raises(EngineError) as info:
        engine_for(stack).init(backend=False)
    first, detail = info.value.message.split("\n", 1)
    assert first == "terraform init failed: Unreadable module directory"
    assert detail == ("  terraform: Unreadable module directory: Unable to evaluate directory "
                      "symlink: lstat no-such-module: no such file or directory")
