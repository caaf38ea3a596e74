"""Live preflight: ask Google Cloud, before anything is created, whether a recipe's stack can
succeed in its project (``mldiag-provision preflight RECIPE --live``; ``plan``/``apply`` run
the same checks before Terraform when credentials exist).

This package's ``__init__`` stays light (no Google Cloud import): :mod:`.checks` imports the
official client libraries (the ``live`` extra) only when checks run, so ``validate`` and
``render`` start as fast as before.

Public interface:
  * :func:`credentials_present` -- whether plan/apply should run the checks by themselves;
  * :func:`live_checks_disabled` -- ``MLDIAG_OFFLINE`` set to a true value;
  * :class:`LiveResult` and the statuses :data:`PASS`, :data:`FAIL`, :data:`WARN`, :data:`SKIP`;
  * :func:`mldiag_provision.preflight.live.checks.run_live_checks` (imports the clients).

Environment:
  * ``GOOGLE_OAUTH_ACCESS_TOKEN``: an access token used as is (as the google provider does);
    else application default credentials;
  * ``MLDIAG_GOOGLE_API_ENDPOINT``: one base URL (``http://127.0.0.1:PORT``) that replaces the
    endpoint of every API asked (the tests' local servers, ``mldiag_provision/sandbox/gcp_apis.py``;
    like ``STORAGE_EMULATOR_HOST`` for Cloud Storage);
  * ``MLDIAG_GOOGLE_GRPC_ENDPOINT``: ``HOST:PORT`` of a plaintext gRPC server for the IAM
    admin API (its client has no REST transport);
  * ``MLDIAG_OFFLINE=1``: plan/apply skip the live checks (same as ``--offline``);
    ``preflight --live`` still runs them, since it is asked for explicitly.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PASS, FAIL, WARN, SKIP = "PASS", "FAIL", "WARN", "SKIP"

ENDPOINT_ENV = "MLDIAG_GOOGLE_API_ENDPOINT"
GRPC_ENDPOINT_ENV = "MLDIAG_GOOGLE_GRPC_ENDPOINT"
OFFLINE_ENV = "MLDIAG_OFFLINE"


@dataclass(frozen=True)
class LiveResult:
    """One line of the live preflight.

    Attributes:
      check: short id, e.g. ``permissions``, ``gke-version``, ``quota``.
      status: PASS | FAIL | WARN | SKIP (WARN: could not be checked, or may fail later).
      message: what was found, naming the exact permission/role/version/zone/quota.
      evidence: the object looked at, e.g. ``projects/p/zones/z/reservations/r``.
      hint: the next action (on FAIL and WARN).
    """

    check: str
    status: str
    message: str
    evidence: str
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def live_checks_disabled() -> bool:
    """``MLDIAG_OFFLINE`` is set to something other than ``""``/``0``/``false``/``no``."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _gce_residency() -> bool:
    """On Google Compute Engine (its metadata server holds credentials): the DMI product name
    says ``Google`` (how google-auth detects GCE without a network call,
    https://github.com/googleapis/google-auth-library-python/blob/main/google/auth/compute_engine/_metadata.py)."""
    try:
        return Path("/sys/class/dmi/id/product_name").read_text().strip().startswith(
            "Google")
    except OSError:
        return False


def credentials_present() -> bool:
    """Whether Google credentials are there to use, without any network call: a
    ``GOOGLE_OAUTH_ACCESS_TOKEN``, ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's application
    default credentials file, or a Compute Engine VM (the places and order google-auth
    searches: https://cloud.google.com/docs/authentication/application-default-credentials).
    """
    if os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN", "").strip():
        return True
    if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS", "").strip():
        return True
    config = os.environ.get("CLOUDSDK_CONFIG") or str(
        Path(os.environ.get("APPDATA", "")) / "gcloud" if os.name == "nt"
        else Path.home() / ".config" / "gcloud")
    if (Path(config) / "application_default_credentials.json").is_file():
        return True
    return _gce_residency()
