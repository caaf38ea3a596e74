"""Shared fixtures: the repository root, the TPU catalog, an in-process CLI runner and the
``--update-goldens`` option used by tests/golden/."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_support import CliResult, run_cli
from mldiag_provision.catalog.tpu import Catalog, load_catalog

REPO_ROOT = Path(__file__).resolve().parent.parent



def pytest_configure(config: pytest.Config) -> None:
    """The tool's caches between runs (mldiag_provision.startcache, render/template_cache.py)
    go to a directory of this test session, not the user's ~/.cache; removed at the end."""
    where = tempfile.mkdtemp(prefix="mldiag-test-cache-")
    os.environ["XDG_CACHE_HOME"] = where
    config.add_cleanup(lambda: shutil.rmtree(where, ignore_errors=True))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite tests/golden/** from the current output instead of "
                          "comparing against it")


@pytest.fixture(autouse=True)
def _no_live_google_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``plan``/``apply`` run live checks against Google Cloud when credentials are found
    (ADC, ``GOOGLE_OAUTH_ACCESS_TOKEN``; the engine fixtures set the latter for the stand-in
    API server). No test may reach Google: every test starts with ``MLDIAG_OFFLINE=1``; the
    live-check tests (tests/live/, tests/engine/test_live_gate.py) remove it and point the
    clients at mldiag_provision/sandbox/gcp_apis.py with ``MLDIAG_GOOGLE_API_ENDPOINT``."""
    monkeypatch.setenv("MLDIAG_OFFLINE", "1")
    monkeypatch.delenv("MLDIAG_GOOGLE_API_ENDPOINT", raising=False)
    # a developer's MLDIAG_SANDBOX=1 must not turn every engine test into a sandbox run
    monkeypatch.delenv("MLDIAG_SANDBOX", raising=False)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        ) -> Callable[..., CliResult]:
    """``cli("validate", "x.yaml")`` -> (exit code, stdout, stderr); colour forced off."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)

    def _run(*argv: str) -> CliResult:
        return run_cli(capsys, list(argv))

    return _run


@pytest.fixture(autouse=True, scope="session")
def _policy_parse_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The policy gate's HCL parse cache lives in a temporary directory, not in ~/.cache."""
    import os

    os.environ["MLDIAG_CACHE_DIR"] = str(tmp_path_factory.mktemp("mldiag-cache"))
