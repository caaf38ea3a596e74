"""Installs the offline stand-in as a Terraform provider mirror, so that plain
``terraform init`` finds hashicorp/google, hashicorp/google-beta, hashicorp/kubernetes and
hashicorp/helm without a network.

:func:`install` writes, under one directory:
  * ``mirror/registry.terraform.io/hashicorp/<name>/<version>/<os>_<arch>/
    terraform-provider-<name>_v<version>``: an executable that starts the stand-in plugin
    with this interpreter (the "unpacked" filesystem-mirror layout);
  * ``stubs/``: the generated gRPC stubs;
  * ``terraformrc``: a CLI configuration whose ``provider_installation`` uses only that
    mirror for those providers and nothing else.

Point Terraform at it with the environment :attr:`StandIn.env` (``TF_CLI_CONFIG_FILE`` and
the stand-in's own variables); everything else about Terraform is unchanged.
"""

from __future__ import annotations

import json
import platform
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from mldiag_provision.sandbox import stubs

HERE = Path(__file__).resolve().parent
# the directory holding the mldiag_provision package, put first on the plugins' sys.path so
# that they run this very copy of the sandbox
PACKAGE_PARENT = HERE.parents[1]
PROVIDERS = ("google", "google-beta", "kubernetes", "helm")


def _platform() -> str:
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
    return f"{sys.platform}_{arch.get(platform.machine(), 'amd64')}"


@dataclass(frozen=True)
class StandIn:
    root: Path
    cli_config: Path
    cloud: Path
    versions: dict[str, str]

    @property
    def env(self) -> dict[str, str]:
        """Environment for terraform (and so for the plugins it starts)."""
        return {"TF_CLI_CONFIG_FILE": str(self.cli_config),
                "MLDIAG_STANDIN_CLOUD": str(self.cloud),
                "MLDIAG_STANDIN_STUBS": str(self.root / "stubs"),
                "CHECKPOINT_DISABLE": "1"}


def install(root: Path, cloud: Path | None = None) -> StandIn:
    """Build (or refresh) the mirror under ``root``; ``cloud`` is where applied objects go."""
    root = root.resolve()
    stubs.generate(root / "stubs")
    config = json.loads((HERE / "provider_config.json").read_text())
    versions = {}
    for name in PROVIDERS:
        version = config[name]["version"]
        versions[name] = version
        exe = (root / "mirror" / "registry.terraform.io" / "hashicorp" / name / version
               / _platform() / f"terraform-provider-{name}_v{version}")
        exe.parent.mkdir(parents=True, exist_ok=True)
        text = (f"#!{sys.executable}\n"
                f"# Offline stand-in for hashicorp/{name} {version} (mldiag-provision sandbox).\n"
                "import os, sys\n"
                f"sys.path.insert(0, {str(PACKAGE_PARENT)!r})\n"
                f"os.environ.setdefault('MLDIAG_STANDIN_STUBS', {str(root / 'stubs')!r})\n"
                f"os.environ.setdefault('MLDIAG_STANDIN_CERT_DIR', {str(root / 'cert')!r})\n"
                "from mldiag_provision.sandbox.plugin import main\n"
                f"main({name!r})\n")
        if not exe.is_file() or exe.read_text() != text:
            exe.write_text(text)
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    cert_dir = root / "cert"
    if not (cert_dir / "cert.der").is_file():
        from mldiag_provision.sandbox.plugin import _self_signed_cert

        cert_dir.mkdir(parents=True, exist_ok=True)
        cert_pem, key_pem, cert_der = _self_signed_cert()
        (cert_dir / "cert.pem").write_bytes(cert_pem)
        key = cert_dir / "key.pem"
        key.touch(mode=0o600)
        key.write_bytes(key_pem)
        (cert_dir / "cert.der").write_bytes(cert_der)
    include = ", ".join(f'"registry.terraform.io/hashicorp/{n}"' for n in PROVIDERS)
    cli_config = root / "terraformrc"
    cli_config.write_text(
        "# Offline stand-in providers for the mldiag-provision sandbox: hashicorp/google,\n"
        "# google-beta, kubernetes and helm come from a local mirror; nothing is downloaded.\n"
        "provider_installation {\n"
        "  filesystem_mirror {\n"
        f"    path    = {json.dumps(str(root / 'mirror'))}\n"
        f"    include = [{include}]\n"
        "  }\n"
        "}\n")
    cloud = (cloud or root / "cloud").resolve()
    cloud.mkdir(parents=True, exist_ok=True)
    return StandIn(root=root, cli_config=cli_config, cloud=cloud, versions=versions)
