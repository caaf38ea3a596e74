"""Provider reuse: one start of each provider plugin per stage per run, shared by every
``terraform`` command of that run through ``TF_REATTACH_PROVIDERS``.

Why: Terraform starts every provider plugin of the configuration again in each command, and
``terraform plan`` alone starts them three times (schemas, validation, the plan walk); a
``show -json`` of the saved plan (the policy gate reads planned values) and the saved-plan
``apply`` start them again. For ``plan`` + ``show`` + ``apply`` of one stage that is five or
six starts of each plugin (the Google provider is a ~100 MB program that serves a schema of
~1,000 resource types). Reattached, Terraform connects to the running plugins instead
(``TF_REATTACH_PROVIDERS``, the mechanism of provider debug mode:
https://developer.hashicorp.com/terraform/plugin/debugging#running-terraform-with-a-provider-in-debug-mode).

The plugins are started by a keeper process (:mod:`.provider_keeper`), not by us, so that a
Terraform ``apply`` whose mldiag-provision died still has its plugins until it finishes.

What Terraform does not do for a reattached plugin, we do here, or we do not reattach:
  * the package is the one ``terraform init`` installed for the version the dependency lock
    file pins, and matches one of the lock file's ``h1:`` hashes (Terraform checks this on
    every command: the package directory hash, golang.org/x/mod/sumdb/dirhash ``Hash1``);
  * one plugin process serves one provider configuration: a stack with provider ``alias``-es
    (or a module with ``configuration_aliases``), or with ``provider`` blocks of one provider
    in more than one module (``*.tf`` and ``*.tf.json`` alike), is never reattached, since
    all its configurations would share one process and its last ``ConfigureProvider`` call;
  * ``dev_overrides`` in the CLI configuration, a ``TF_REATTACH_PROVIDERS`` of your own, a
    platform other than Linux, or ``MLDIAG_TERRAFORM_REUSE_PROVIDERS=0``: Terraform starts
    the plugins itself, as before.

Anything unexpected (the keeper or a plugin failing to start) falls back to Terraform
starting the plugins itself; the reason is in the run's log. The plugins' own output
(stderr: logs, a panic) goes to ``<run log>.providers``, next to the run's log.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REUSE_ENV = "MLDIAG_TERRAFORM_REUSE_PROVIDERS"
"""Set to ``0`` (or ``false``, ``no``) to let Terraform start its plugins in every command."""

_ALIAS = re.compile(r"^\s*(alias|configuration_aliases)\s*=", re.M)
_PROVIDER_BLOCK = re.compile(r'^\s*provider\s+"([^"]+)"\s*\{', re.M)
_PROVIDERS_DIR = Path(".terraform/providers")


def package_hash(directory: Path) -> str:
    """The ``h1:`` hash of an unpacked provider package (Go's dirhash ``Hash1``, which
    Terraform records in ``.terraform.lock.hcl``): SHA-256 over the sorted lines
    ``"<sha256 hex of the file>  <path relative to the directory, / separated>\\n"``,
    base64. Source: golang.org/x/mod/sumdb/dirhash (HashDir, Hash1) and
    https://developer.hashicorp.com/terraform/language/files/dependency-lock#checksum-verification.

    Raises:
      OSError: a file cannot be read.
    """
    lines = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in files:
            path = Path(root, name)
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    digest.update(chunk)
            lines.append(f"{digest.hexdigest()}  {path.relative_to(directory).as_posix()}\n")
    summary = hashlib.sha256("".join(sorted(lines, key=lambda s: s.split("  ", 1)[1]))
                             .encode()).digest()
    return "h1:" + base64.b64encode(summary).decode()


def _platform() -> str:
    machine = os.uname().machine.lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386"}.get(
        machine, machine)
    return f"linux_{arch}"


def _cli_config_files() -> list[Path]:
    explicit = os.environ.get("TF_CLI_CONFIG_FILE")
    if explicit:
        return [Path(explicit)]
    return [Path.home() / ".terraformrc"]


def _environment_refusal() -> str | None:
    """Why this process's environment rules reuse out (not Linux, ``REUSE_ENV`` off, a
    ``TF_REATTACH_PROVIDERS`` of the caller's own, ``dev_overrides`` in the CLI
    configuration), or None. An unreadable CLI configuration is no reason."""
    if sys.platform != "linux":
        return f"provider reuse is implemented for Linux only, not {sys.platform}"
    if os.environ.get(REUSE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return f"{REUSE_ENV}={os.environ[REUSE_ENV]}"
    if os.environ.get("TF_REATTACH_PROVIDERS"):
        return "TF_REATTACH_PROVIDERS is set in the environment"
    for cfg in _cli_config_files():
        try:
            if "dev_overrides" in cfg.read_text(encoding="utf-8", errors="replace"):
                return f"{cfg} has provider dev_overrides"
        except OSError:
            pass
    return None


def _configuration_refusal(workdir: Path) -> str | None:
    """Why the stage's configuration rules reuse out (an alias, an unreadable file, a
    provider configured in more than one module; :func:`_configurations`), or None."""
    configurations = _configurations(workdir)
    if isinstance(configurations, str):
        return configurations
    several = sorted(name for name, n in configurations.items() if n > 1)
    if several:
        return (f"provider {several[0]} has {configurations[several[0]]} configurations "
                "(provider blocks in more than one module)")
    return None


def _verified_plugin(workdir: Path, source: str, body: dict[str, Any],
                     log: Callable[[str], None]) -> dict[str, str] | None:
    """``{"source": source, "exe": "/abs/path"}`` of the lock file entry ``body`` (its
    ``version`` and ``hashes``): the installed plugin executable, when its package matches
    one of the entry's ``h1:`` hashes; else None and the reason to ``log``."""
    version = str(body.get("version", ""))
    hashes = {h for h in body.get("hashes", []) if str(h).startswith("h1:")}
    package = workdir / _PROVIDERS_DIR / source / version / _platform()
    # the plugin is the executable named terraform-provider-TYPE[_vX.Y.Z] (Terraform's
    # rule: internal/getproviders, "the file whose name starts with terraform-provider-")
    prefix = f"terraform-provider-{source.rsplit('/', 1)[-1]}"
    exes = sorted(p for p in package.glob(prefix + "*")
                  if p.is_file() and os.access(p, os.X_OK)) if package.is_dir() else []
    if not exes or not hashes:
        log(f"[mldiag] providers: {source} {version}: Terraform starts it (no "
            f"{'installed package' if not exes else 'h1: hash in the lock file'})")
        return None
    try:
        actual = package_hash(package.resolve())
    except OSError as exc:
        log(f"[mldiag] providers: {source}: Terraform starts it ({exc})")
        return None
    if actual not in hashes:
        log(f"[mldiag] providers: {source} {version}: Terraform starts it (the "
            f"installed package {actual} matches no hash in the lock file)")
        return None
    return {"source": source, "exe": str(exes[0].resolve())}


def reusable(workdir: Path, *, log: Callable[[str], None] = lambda _: None,
             ) -> list[dict[str, str]]:
    """The providers of an initialised stage that may be started once and reattached:
    ``[{"source": "registry.terraform.io/hashicorp/google", "exe": "/abs/path"}]``; [] when
    none may (every reason is passed to ``log``, one line each). Reads the dependency lock
    file, the installed packages and the stage's ``.tf`` files; never raises."""
    def no(why: str) -> list[dict[str, str]]:
        log(f"[mldiag] providers: Terraform starts them in every command ({why})")
        return []

    why = _environment_refusal() or _configuration_refusal(workdir)
    if why is not None:
        return no(why)
    try:
        from mldiag_provision.hclparse import parse_hcl

        lock = parse_hcl(".terraform.lock.hcl",
                         (workdir / ".terraform.lock.hcl").read_text(encoding="utf-8"))
    except Exception as exc:  # missing, unreadable or not HCL: Terraform will say so
        return no(f"the dependency lock file cannot be read: {exc}")
    out = []
    for block in lock.get("provider", []):
        for source, body in block.items():
            plugin = _verified_plugin(workdir, source, body, log)
            if plugin is not None:
                out.append(plugin)
    return out


def _has_alias(doc: Any) -> bool:
    if isinstance(doc, dict):
        return any(k in ("alias", "configuration_aliases") or _has_alias(v)
                   for k, v in doc.items())
    if isinstance(doc, list):
        return any(_has_alias(v) for v in doc)
    return False


def _config_dirs(workdir: Path) -> list[Path] | str:
    """The root and every module of it, as ``terraform init`` resolved them
    (``.terraform/modules/modules.json``; none without module calls), or why the manifest
    cannot be read."""
    dirs = [workdir]
    try:  # every module of this root, as `terraform init` resolved them
        manifest = json.loads((workdir / ".terraform/modules/modules.json").read_text())
        dirs += [(workdir / m["Dir"]).resolve() for m in manifest.get("Modules", [])
                 if m.get("Key")]
    except FileNotFoundError:
        pass  # a root without module calls has no manifest
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"the module manifest cannot be read: {exc}"
    return dirs


def _provider_blocks(path: Path, rel: Path) -> list[str] | str:
    """The provider name of each ``provider`` block in one ``*.tf`` or ``*.tf.json`` file
    (``rel``: its name in messages), or why reuse is off (unreadable, not JSON, an alias)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"cannot read {rel}"
    if not path.name.endswith(".json"):
        if _ALIAS.search(text):
            return f"{rel} configures a provider alias"
        return list(_PROVIDER_BLOCK.findall(text))
    try:
        doc = json.loads(text)
    except ValueError:
        return f"{rel} is not JSON"
    if _has_alias(doc):
        return f"{rel} configures a provider alias"
    blocks = doc.get("provider", {}) if isinstance(doc, dict) else {}
    return [name for name, body in (blocks.items() if isinstance(blocks, dict) else [])
            for _ in (body if isinstance(body, list) else [body])]


def _configurations(workdir: Path) -> dict[str, int] | str:
    """How many ``provider`` blocks each provider name has over the files Terraform reads
    for this root (``*.tf`` and ``*.tf.json`` of the root and of every module in
    ``.terraform/modules/modules.json``; override files, which merge into a block, not
    counted); or why reuse is off (an alias, an unreadable file)."""
    dirs = _config_dirs(workdir)
    if isinstance(dirs, str):
        return dirs
    paths = [p for d in dict.fromkeys(dirs) for pattern in ("*.tf", "*.tf.json")
             for p in sorted(d.glob(pattern))]
    counts: dict[str, int] = {}
    for path in paths:
        rel = path.relative_to(workdir) if path.is_relative_to(workdir) else path
        override = path.name in ("override.tf", "override.tf.json") or path.name.endswith(
            ("_override.tf", "_override.tf.json"))
        names = _provider_blocks(path, rel)
        if isinstance(names, str):
            return names
        if not override:
            for name in names:
                counts[name] = counts.get(name, 0) + 1
    return counts


class ProviderPool:
    """The plugins of one stage, started once (by the keeper) and reattached.

    ``ProviderPool(workdir, env, log_path, log)``; :meth:`start` launches the keeper without
    waiting; :meth:`environment` waits for the plugins' handshakes and returns the variables
    to add to every Terraform command ({} when Terraform should start them itself);
    :meth:`close` stops them. ``log`` receives one-line notes for the run's log.
    """

    def __init__(self, workdir: Path, env: dict[str, str], log_path: Path | None,
                 log: Callable[[str], None], *, timeout_s: float = 60.0) -> None:
        self.workdir = workdir
        self.timeout_s = timeout_s  # a plugin's handshake (go-plugin's StartTimeout: 1 min)
        self.env = env
        self.log_path = Path(f"{log_path}.providers") if log_path else None
        self.log = log
        self._proc: subprocess.Popen[str] | None = None
        self._sockets: str | None = None
        self._answer: dict[str, str] | None = None
        self.pids: list[int] = []

    def start(self, providers: Iterable[dict[str, str]]) -> None:
        """Launch the keeper for ``providers`` (from :func:`reusable`); returns at once."""
        providers = list(providers)
        if not providers or self._proc is not None:
            return
        self._sockets = tempfile.mkdtemp(prefix="mldiag-tfp-")  # 0700; short socket paths
        keeper = Path(__file__).with_name("provider_keeper.py")
        request = {"providers": providers, "cwd": str(self.workdir), "sockets": self._sockets,
                   "log": str(self.log_path) if self.log_path else None,
                   "timeout_s": self.timeout_s}
        try:
            if self.log_path:  # private, like the run's log
                os.close(os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", str(keeper)],
                                          cwd=self.workdir, env=self.env, text=True,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, start_new_session=True)
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            atexit.register(self.close)  # an engine used without Stack's `with`
        except OSError as exc:
            self.log(f"[mldiag] providers: Terraform starts them (the keeper: {exc})")
            self._abandon()

    def environment(self) -> dict[str, str]:
        """``{"TF_REATTACH_PROVIDERS": ...}`` once the plugins serve; {} without a pool or
        when it failed to start (then Terraform starts the plugins, as without a pool)."""
        if self._answer is not None:
            return self._answer
        self._answer = {}
        if self._proc is None:
            return self._answer
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        try:
            answer: dict[str, Any] = json.loads(line)
        except ValueError:
            answer = {"ok": False, "error": f"the keeper answered {line[:200]!r}"}
        if not answer.get("ok"):
            self.log(f"[mldiag] providers: Terraform starts them ({answer.get('error')})")
            self._abandon()
            return self._answer
        self.pids = [int(p) for p in answer.get("pids", [])]
        self._answer = {"TF_REATTACH_PROVIDERS": json.dumps(answer["reattach"],
                                                            sort_keys=True)}
        self.log(f"[mldiag] providers: started once for this run and reattached "
                 f"({', '.join(sorted(answer['reattach']))}; sockets in {self._sockets}); "
                 f"their output: {self.log_path}")
        return self._answer

    def _abandon(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None
        if self._sockets:
            shutil.rmtree(self._sockets, ignore_errors=True)

    def close(self) -> None:
        """Stop the plugins (the keeper does, once no Terraform uses them) and wait for it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if self._sockets:  # the keeper removes it; not when it was killed
            shutil.rmtree(self._sockets, ignore_errors=True)
        try:  # the plugins said nothing: no empty file next to the log
            if self.log_path and self.log_path.stat().st_size == 0:
                self.log_path.unlink()
        except OSError:
            pass
