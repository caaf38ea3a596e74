"""The provider keeper: a small process that starts a stack's Terraform provider plugins once
and keeps them serving every ``terraform`` command of one mldiag-provision run (``plan``,
``show``, ``apply``), which reach them through ``TF_REATTACH_PROVIDERS``.

Run as ``python -I -S provider_keeper.py`` (standard library only, no site packages: it
starts in a few milliseconds) by :mod:`mldiag_provision.engines.provider_pool`, never by a
person. It is its own process, in its own session, for one reason: Terraform must be able to
finish an ``apply`` after the mldiag-provision process died (a SIGKILL, a closed terminal),
so the plugins may not die with it; they die with the keeper (``PR_SET_PDEATHSIG``), and
the keeper stops them only once no Terraform process uses them any more.

Protocol: one JSON line on stdin::

    {"providers": [{"source": "registry.terraform.io/hashicorp/google",
                    "exe": "/abs/.terraform/providers/.../terraform-provider-google_v8.7.0"}],
     "cwd": "/abs/stack", "sockets": "/tmp/mldiag-tfp-XXXX", "log": "/abs/x.log" | null,
     "timeout_s": 60}

and one JSON line on stdout: ``{"ok": true, "reattach": {source: {...}}, "pids": [...]}``
(the value of ``TF_REATTACH_PROVIDERS``), or ``{"ok": false, "error": "text"}``. Then the
keeper waits for end of file on stdin (the run is over, or mldiag-provision died), waits
until no process whose environment names ``sockets`` in ``TF_REATTACH_PROVIDERS`` is left
(a Terraform still applying), stops the plugins (SIGTERM, then SIGKILL after 5 s) and
removes ``sockets``.

Plugin start-up as Terraform does it (hashicorp/go-plugin, client.go and server.go):
``TF_PLUGIN_MAGIC_COOKIE`` (Terraform's handshake cookie, internal/plugin/serve.go),
``PLUGIN_PROTOCOL_VERSIONS=5,6`` (the protocols Terraform 1.x speaks), and
``PLUGIN_UNIX_SOCKET_DIR`` (where go-plugin >= 1.5 puts its socket: a 0700 directory of ours,
so only this user can connect; no ``PLUGIN_CLIENT_CERT``, so the plugin serves without
AutoMTLS, as in provider debug mode). The plugin prints one handshake line
``CORE|PROTOCOL|NETWORK|ADDRESS|grpc|CERT`` on stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

MAGIC_COOKIE_KEY = "TF_PLUGIN_MAGIC_COOKIE"
MAGIC_COOKIE_VALUE = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"
REATTACH = b"TF_REATTACH_PROVIDERS="


def _die_with_parent() -> None:
    """In the plugin, before exec: SIGKILL when the keeper dies (Linux prctl)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _drain(stream: object, log: object) -> None:
    """Copy what a plugin still writes on stdout after its handshake into the log (a pipe
    nobody reads would block it once full)."""
    for line in iter(stream.readline, b""):  # type: ignore[attr-defined]
        if log is not None:
            log.write(line)  # type: ignore[attr-defined]
            log.flush()  # type: ignore[attr-defined]


def _handshake(line: str) -> dict[str, object]:
    parts = line.strip().split("|")
    if len(parts) < 5 or parts[0] != "1" or parts[1] not in ("5", "6") or parts[4] != "grpc":
        raise ValueError(f"unexpected handshake line {line.strip()[:200]!r}")
    return {"Protocol": "grpc", "ProtocolVersion": int(parts[1]), "Test": True,
            "Addr": {"Network": parts[2], "String": parts[3]}}


def _users(sockets: str) -> list[int]:
    """Processes (other than ours) whose ``TF_REATTACH_PROVIDERS`` names ``sockets``."""
    needle = sockets.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(REATTACH) and needle in item:
                found.append(int(name))
                break
    return found


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 5.0
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Terraform decides when plugins stop
    request = json.loads(sys.stdin.readline())
    sockets = request["sockets"]
    log = open(request["log"], "ab") if request.get("log") else None  # noqa: SIM115
    env = {k: v for k, v in os.environ.items()
           if k not in ("PLUGIN_CLIENT_CERT", "TF_REATTACH_PROVIDERS")}
    env.update({MAGIC_COOKIE_KEY: MAGIC_COOKIE_VALUE, "PLUGIN_PROTOCOL_VERSIONS": "5,6",
                "PLUGIN_UNIX_SOCKET_DIR": sockets})
    procs: list[subprocess.Popen[bytes]] = []
    stopping = threading.Event()

    def on_term(signum: int, frame: object) -> None:
        stopping.set()
        _stop(procs)
        shutil.rmtree(sockets, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    answer: dict[str, object]
    try:
        for item in request["providers"]:
            procs.append(subprocess.Popen(
                [item["exe"]], cwd=request["cwd"], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=log if log is not None else subprocess.DEVNULL,
                preexec_fn=_die_with_parent))
        reattach: dict[str, object] = {}
        deadline = time.monotonic() + float(request.get("timeout_s", 60))
        for item, proc in zip(request["providers"], procs, strict=True):
            assert proc.stdout is not None
            left = deadline - time.monotonic()
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, left))
            line = proc.stdout.readline().decode(errors="replace") if ready else ""
            if not line:
                code = None
                if ready:  # end of output: it is exiting (give it a moment to be reaped)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        code = proc.wait(timeout=2)
                why = (f"exited with code {code}" if code is not None
                       else "closed its output without a handshake" if ready
                       else f"printed no handshake within {request.get('timeout_s', 60)} s")
                raise RuntimeError(f"{item['source']}: the plugin {why}")
            entry = _handshake(line)
            entry["Pid"] = proc.pid
            reattach[item["source"]] = entry
            threading.Thread(target=_drain, args=(proc.stdout, log), daemon=True).start()
        answer = {"ok": True, "reattach": reattach, "pids": [p.pid for p in procs]}
    except (OSError, ValueError, RuntimeError) as exc:
        answer = {"ok": False, "error": str(exc)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    if answer["ok"]:
        sys.stdin.read()  # until mldiag-provision closes it or dies
        while _users(sockets):  # a Terraform still runs (mldiag-provision died under it)
            time.sleep(0.2)
    _stop(procs)
    shutil.rmtree(sockets, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
