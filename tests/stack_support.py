"""Helpers shared by the tests (importable because tests/ is on sys.path via conftest.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mldiag_provision.catalog.tpu import Catalog, load_catalog
from mldiag_provision.pipeline import check_file, check_text
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.policy import policy_data
from mldiag_provision.render.stack import render_stack

REPO_ROOT = Path(__file__).resolve().parent.parent
RECIPES = sorted((REPO_ROOT / "recipes").glob("*.yaml"))


def read_tree(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (hidden ones too): relative posix path -> bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def render_files(recipe: Path | None = None, *, text: str | None = None,
                 catalog: Catalog | None = None) -> dict[str, bytes]:
    """Recipe (file or text) -> rendered files in memory; fails the test on any error."""
    catalog = catalog or load_catalog()
    res = (check_file(str(recipe), catalog) if text is None
           else check_text(text, "<test>", catalog))
    errors = [p for p in res.report.problems if p.severity.value == "error"]
    assert res.parsed.recipe is not None and not errors, [p.message for p in errors]
    return render_stack(build_plan(res.parsed.recipe, res.shapes, catalog),
                        policy=policy_data(res.parsed.recipe))


def terraform_binary() -> str | None:
    """The terraform binary; fails the test when it is missing, unless the environment says
    MLDIAG_ALLOW_NO_TERRAFORM=1 (then None: the caller returns without checking)."""
    found = shutil.which("terraform")
    if found is None:
        if os.environ.get("MLDIAG_ALLOW_NO_TERRAFORM") == "1":
            return None
        pytest.fail("terraform is not on PATH: install it (the project's machine image has "
                    "it), or set MLDIAG_ALLOW_NO_TERRAFORM=1 to run without these checks")
    return found
