"""A real single-machine Slurm for the tests of tests/slurm/: munge, slurmctld, slurmd and an
sshd on localhost, all from Debian's packages, configured in a temporary directory.

The one Slurm node (``localhost``, CPUs from ``nproc``) sits in two partitions, ``gpu`` and
``cpu``. It carries the node set ids of tests/slurm/data/slurm-cpu-local.yaml (``a3u``,
``cpu``) as features, the way node sets are told apart (docs/slurm-verify.md), and eight
stand-in GPUs (``Gres=gpu:8``, device nodes that are /dev/null) so that rendered
``--gpus-per-node=8`` jobs run. sshd lets root in with a fresh key and sets ``SLURM_CONF``
for every session, so ``verify --ssh-target root@127.0.0.1`` reaches this Slurm as it
reaches a login node. Everything is torn down at the end of the session (process groups killed).

Missing binaries FAIL the tests, never skip them: ``.ci/run`` installs the packages.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BINARIES = ("munged", "slurmctld", "slurmd", "sinfo", "srun", "sbatch", "scontrol", "squeue",
            "ssh", "ssh-keygen", "/usr/sbin/sshd")
PACKAGES = "slurmctld slurmd slurm-client munge openssh-server openssh-client"
START_TIMEOUT_S = 120.0
"""How long the daemons may take to come up under load (polled, not slept)."""


@dataclass(frozen=True)
class LocalSlurm:
    root: Path
    conf: Path
    ssh_target: str
    ssh_options: tuple[str, ...]
    """``KEY=VALUE`` options for ``verify --ssh-option`` (port, key, known hosts)."""
    env: dict[str, str]
    """The environment for running Slurm commands here (``SLURM_CONF`` set)."""
    cpus: int

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _wait(what: str, probe: Callable[[], bool], procs: list[subprocess.Popen[bytes]],
          logs: list[Path]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    delay = 0.1
    while time.monotonic() < deadline:
        if probe():
            return
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            break
        time.sleep(delay)
        delay = min(delay * 2, 2.0)
    tails = "\n".join(f"--- {lg.name}\n" + (lg.read_text(errors="replace")[-2000:]
                                            if lg.exists() else "(none)") for lg in logs)
    pytest.fail(f"the local Slurm did not come up: {what} not reached in "
                f"{START_TIMEOUT_S:.0f} s\n{tails}", pytrace=False)


def _missing() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


@pytest.fixture(scope="session")
def local_slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    missing = _missing()
    if missing:
        pytest.fail(f"Slurm tests need {', '.join(missing)}: install the Debian packages "
                    f"({PACKAGES}) as .ci/run does", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("the local Slurm runs as root (SlurmUser=root, sshd on a port of its own): "
                    "run the Slurm tests as root, as .ci/run does", pytrace=False)
    root = tmp_path_factory.mktemp("slurm")
    root.chmod(0o755)
    for d in ("state", "spool", "run", "log", "ssh"):
        (root / d).mkdir()
    (root / "run").chmod(0o755)  # munged wants the socket's directory searchable by all
    log = root / "log"
    cpus = os.cpu_count() or 1
    ctld_port, slurmd_port, ssh_port = _free_port(), _free_port(), _free_port()
    sock = root / "run" / "munge.sock"
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = root / "slurm.conf"
    host = socket.gethostname().split(".")[0]
    node = (f"NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={cpus} "
            "Features=a3u,cpu Gres=gpu:8 State=UNKNOWN")
    # eight stand-in GPU devices (character devices with /dev/null's numbers: slurmd drops a
    # GPU without a device file): sbatch --gpus-per-node=8 is accepted and scheduled
    (root / "dev").mkdir()
    for i in range(8):
        os.mknod(root / "dev" / f"gpu{i}", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    (root / "gres.conf").write_text(f"NodeName=localhost Name=gpu File={root}/dev/gpu[0-7]\n")
    conf.write_text(f"""\
ClusterName=mldiagtest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={log}/slurmctld.log
SlurmdLogFile={log}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=300
{node}
PartitionName=gpu Nodes=localhost Default=NO MaxTime=INFINITE State=UP
PartitionName=cpu Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    for k in [k for k in env if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))]:
        if k != "SLURM_CONF":
            del env[k]
    # sshd: a host key, a client key allowed for root, SLURM_CONF in every session
    ssh = root / "ssh"
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / name)],
                       check=True, capture_output=True)
    shutil.copy(ssh / "client_key.pub", ssh / "authorized_keys")
    (ssh / "sshd_config").write_text(f"""\
Port {ssh_port}
ListenAddress 127.0.0.1
HostKey {ssh}/host_key
PidFile {root}/run/sshd.pid
AuthorizedKeysFile {ssh}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv SLURM_CONF={conf}
""")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_start(["munged", "-F", "--force", f"--key-file={key}", "-S", str(sock),
                             f"--log-file={log}/munged.log", f"--pid-file={root}/run/munged.pid",
                             f"--seed-file={root}/run/munged.seed"], log / "munged.out", env))
        _wait("the munge socket", sock.exists, procs, [log / "munged.out"])
        procs.append(_start(["slurmctld", "-D", "-i"], log / "slurmctld.out", env))
        procs.append(_start(["slurmd", "-D", "-N", "localhost"], log / "slurmd.out", env))
        procs.append(_start(["/usr/sbin/sshd", "-D", "-f", str(ssh / "sshd_config"),
                             "-E", str(log / "sshd.log")], log / "sshd.out", env))
        logs = [log / n for n in ("slurmctld.out", "slurmctld.log", "slurmd.out",
                                  "slurmd.log", "sshd.out", "sshd.log")]

        def idle() -> bool:
            try:
                r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, timeout=20,
                                   capture_output=True, text=True, check=False)
            except subprocess.TimeoutExpired:
                return False
            states = r.stdout.split()
            return r.returncode == 0 and bool(states) and all(s == "idle" for s in states)

        _wait("every node idle in sinfo", idle, procs, logs)
        opts = (f"Port={ssh_port}", f"IdentityFile={ssh}/client_key",
                f"UserKnownHostsFile={ssh}/known_hosts", "StrictHostKeyChecking=accept-new")

        def ssh_ok() -> bool:
            argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
            for o in opts:
                argv += ["-o", o]
            r = subprocess.run([*argv, "root@127.0.0.1", "true"], capture_output=True,
                               timeout=30, check=False)
            return r.returncode == 0

        _wait("a login over ssh", ssh_ok, procs, logs)
        yield LocalSlurm(root=root, conf=conf, ssh_target="root@127.0.0.1", ssh_options=opts,
                         env=env, cpus=cpus)
    finally:
        subprocess.run(["scancel", "--full", "-u", "root"], env=env, capture_output=True,
                       timeout=30, check=False)
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


@dataclass(frozen=True)
class Controller:
    """munged + slurmctld alone, for ``sbatch --test-only`` against a given node layout."""

    env: dict[str, str]

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)


@pytest.fixture
def slurm_controller(tmp_path: Path) -> Iterator[Callable[[str], Controller]]:
    """``start(nodes_and_partitions)``: a controller whose slurm.conf ends with the given
    NodeName/PartitionName lines. Cloud nodes (``State=CLOUD``, powered down, made visible by
    ``PrivateData=cloud``) need no slurmd: ``sbatch --test-only`` places jobs on them."""
    missing = _missing()
    if missing:
        pytest.fail(f"Slurm tests need {', '.join(missing)}: install the Debian packages "
                    f"({PACKAGES}) as .ci/run does", pytrace=False)
    procs: list[subprocess.Popen[bytes]] = []

    def start(layout: str) -> Controller:
        assert not procs, "one controller per test"
        root = tmp_path / "ctl"
        for d in ("state", "run", "log"):
            (root / d).mkdir(parents=True)
        root.chmod(0o755)
        (root / "run").chmod(0o755)
        log, sock, key = root / "log", root / "run" / "munge.sock", root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        conf = root / "slurm.conf"
        host = socket.gethostname().split(".")[0]
        conf.write_text(f"""\
ClusterName=mldiagexample
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmctldLogFile={log}/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
GresTypes=gpu
PrivateData=cloud
SuspendProgram=/bin/true
ResumeProgram=/bin/true
SuspendTime=600
{layout}
""")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))}
        env["SLURM_CONF"] = str(conf)
        procs.append(_start(["munged", "-F", "--force", f"--key-file={key}", "-S", str(sock),
                             f"--log-file={log}/munged.log",
                             f"--pid-file={root}/run/munged.pid",
                             f"--seed-file={root}/run/munged.seed"], log / "munged.out", env))
        _wait("the munge socket", sock.exists, procs, [log / "munged.out"])
        procs.append(_start(["slurmctld", "-D", "-i"], log / "slurmctld.out", env))

        def answers() -> bool:
            try:
                r = subprocess.run(["scontrol", "ping"], env=env, timeout=20,
                                   capture_output=True, text=True, check=False)
            except subprocess.TimeoutExpired:
                return False
            return r.returncode == 0 and "UP" in r.stdout

        _wait("scontrol ping UP", answers, procs, [log / "slurmctld.out"])
        return Controller(env)

    try:
        yield start
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
