"""The login node double of a sandbox Cluster Director cluster: what ``verify --sandbox``
reaches instead of ``ssh``/``gcloud compute ssh`` on a managed Slurm stack.

It is a double at the command level: :meth:`LoginNodeDouble.run` takes the shell command
line ``verify`` would send over ssh and answers it as the login node of the applied cluster
would, from what the sandbox's Cluster Director double holds (the
``google_hypercomputecluster_cluster`` object the provider plugin stored under
``<sandbox>/cloud/``): its node sets, partitions, compute resources (machine types) and
storage resources with their mounts. Nothing runs: no VM, no slurmctld, no job, no
container. A command line is read by a small shell (:class:`Shell`: ``;``, ``&&``, ``||``,
``if/then/else/fi``, ``$(...)``, ``$?``, ``$NAME``, quotes, ``>/dev/null``, ``2>&1``) and each
command is one of the programs a Cluster Director node carries, modelled below. A program
the node does not carry is answered as bash answers it, ``bash: line N: NAME: command not
found``, exit 127 (bash(1), EXIT STATUS: https://www.gnu.org/software/bash/manual/bash.html#Exit-Status);
a construct or an option the double does not model is said so (``SANDBOX ... not
modelled``), with a non-zero exit, never a made-up success.

What each program answers, and where that comes from:

* ``sinfo -N [-h] [-o FORMAT] [-p PARTITION]``: one line per node and partition; format
  fields ``%N %n`` (node), ``%R`` (partition), ``%P`` (partition, ``*`` on the default one),
  ``%f`` (features, ``(null)`` when none), ``%T`` (state, long), ``%t`` (state, compact),
  ``%D`` (node count), each as ``%[.][size]type`` (sinfo(1), OUTPUT FORMAT and NODE STATE
  CODES: https://slurm.schedmd.com/sinfo.html). Node names are ``<cluster>-<nodeset>-<n>``,
  the Slurm on Google Cloud naming (the Cluster Toolkit's schedmd-slurm-gcp-v6-nodeset
  README, https://github.com/GoogleCloudPlatform/cluster-toolkit/blob/main/community/modules/compute/schedmd-slurm-gcp-v6-nodeset/README.md,
  ``cluster-compute-group-[0-2]``; that Cluster Director names them so is an inference,
  confidence M, docs/guides/slurm-verify.md). Static nodes are ``idle``; dynamic nodes
  (``max_dynamic_node_count``) are listed powered down, ``idle~`` (sinfo(1): ``~`` "The node
  is presently powered off"), as Slurm on Google Cloud defines them up front (confidence M,
  same guide). Nodes carry no features (the double does not claim Cluster Director's).
* ``srun [-N n] [-n n] [-p P] [-C F] [-t T] [--immediate[=S]] CMD...``: picks
  nodes of the partition (default: the cluster's default partition) and runs ``CMD`` on
  them, in the node's own model. Refusals use Slurm's own messages
  (src/common/slurm_errno.c, https://github.com/SchedMD/slurm/blob/master/src/common/slurm_errno.c):
  ``Invalid partition name specified``, ``Invalid feature specification``; a job that
  cannot start now (its nodes down, drained or failing: "Required node not available (down,
  drained or reserved)"; more nodes than the partition has: "Requested partition
  configuration not available now") is queued ("job N queued and waiting for resources"),
  and with ``--immediate`` srun gives up: "Unable to allocate resources: Requested nodes
  are busy" (srun(1), https://slurm.schedmd.com/srun.html#OPT_immediate; every one of these
  answers is compared with Slurm 22.05's own in tests/slurm/test_login_double_against_slurm.py);
  without it srun waits: the double reports no exit (a deadline passed). Time is not
  simulated: the answer comes at once. A powered-down node is used as it is powered up
  (its boot is not simulated).
* ``scontrol update NodeName=N[,N...] State=DOWN|DRAIN|RESUME|UNDRAIN [Reason=...]``:
  changes the node's state, kept in ``<sandbox>/slurm-nodes.json`` for the next command
  until the cluster object is written again (a new apply, a reset: new VMs); DOWN and
  DRAIN need a Reason (scontrol(1), ``State``/``Reason``:
  https://slurm.schedmd.com/scontrol.html#OPT_State_1; the refusal's words are those of
  src/scontrol/update_node.c, "You must specify a reason when DOWNING or DRAINING a node.
  Request denied"). The same file is how a test puts a node down (:func:`set_node_state`).
* ``findmnt -n -o FSTYPE|TARGET -M PATH``: the mounts of the host: each
  ``storage_configs`` entry of its node set (or of the login nodes) whose storage resource
  the cluster holds; Filestore as ``nfs`` (``nfs4`` with protocol NFSV41), Managed Lustre as
  ``lustre``, a bucket as ``fuse.gcsfuse`` (Filestore instances "are fully managed NFS file
  servers", https://cloud.google.com/filestore/docs, NFSv3 unless the protocol says NFSV41;
  a Lustre client mounts with ``mount -t lustre``, mount.lustre(8),
  https://manpages.ubuntu.com/manpages/precise/man8/mount.lustre.8.html; a bucket is
  mounted by Cloud Storage FUSE,
  https://docs.cloud.google.com/storage/docs/cloud-storage-fuse/mount-bucket, a FUSE file
  system whose type carries the ``fuse.`` prefix: inference, confidence M). A storage the
  cluster does not hold is not mounted. Exit 1 when nothing is found (findmnt(8),
  https://man7.org/linux/man-pages/man8/findmnt.8.html). Every host has the NFS, Lustre
  and Cloud Storage FUSE clients (``mount.nfs``, ``mount.lustre``, ``gcsfuse``): Cluster
  Director mounts all three kinds (its StorageResource API), so its images carry them
  (inference, confidence M).
* ``nvidia-smi -L``: one ``GPU i: NAME (UUID: GPU-...)`` line per GPU of the node's machine
  type in the GPU catalog (catalog/data/gpu.yaml), only on GPU machine types
  (nvidia-smi(1), ``-L, --list-gpus``: https://docs.nvidia.com/deploy/nvidia-smi/index.html).
  A reserved compute resource's machine type is the reservation's, which the sandbox does
  not hold (reservations are outside the stack): the caller names it
  (``reservations``; ``verify`` passes the machine type the recipe gives the node set).
* the node set's startup script, as the cluster holds it, decides the ML Diagnostics files
  on its nodes: ``$MLDIAG_DIR/job-env.sh`` where the script writes it, and
  ``$MLDIAG_DIR/venv/bin/python`` with the SDK importable where it installs the SDK
  (modules/slurm/cluster-director/templates/nodeset-startup.sh.tftpl). Its pip install is
  taken to succeed (no package index is reached). ``PYTHON -c 'import M[, M...]'`` is the
  one Python program modelled: it succeeds for the standard library and the SDK
  (``google_cloud_mldiagnostics``, the distribution name with ``_``), else prints Python's
  ``ModuleNotFoundError``.
* ``hostname``, ``echo``, ``true``, ``false``, ``[``/``test``, ``command -v``, ``exit``,
  ``bash -c``/``sh -c``: as bash runs them.

Login node name: ``<cluster>-login-001`` (Cluster Director does not document it; a real
cluster's names are in the stack's ``login_instances`` output; confidence L).
"""

from __future__ import annotations

import base64
import functools
import json
import operator
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLUSTER_TYPE = "google_hypercomputecluster_cluster"
STATE_FILE = "slurm-nodes.json"
"""Node states changed in the sandbox (``scontrol update``), per cluster, under the sandbox
directory: ``{"<cluster id>": {"stamp": N, "nodes": {"<node>": {"state": "drained",
"reason": "..."}}}}``. ``stamp``: the ``st_mtime_ns`` of the cluster object the states were
set on; once the object is written again (a re-apply that changes it, a destroy and a new
apply, a reset), its nodes are new VMs and the saved states no longer apply."""

PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""The login shell's PATH (Debian/Ubuntu's default for a login shell)."""

FSTYPE = {"filestore": "nfs", "lustre": "lustre", "bucket": "fuse.gcsfuse"}
"""What ``findmnt -o FSTYPE`` shows for each storage kind (sources: module docstring)."""

SDK_MODULE = "google_cloud_mldiagnostics"

UNUSABLE = ("down", "drain", "fail")
"""Node states (prefixes of sinfo's long names) in which Slurm starts no job (sinfo(1),
NODE STATE CODES: DOWN "unavailable for use", DRAINED "unavailable for use per system
administrator request", FAIL "expected to fail soon and is unavailable for use"). DRAIN is
a flag over the node's state: a drained node set DOWN still shows ``drained``, and UNDRAIN
leaves it ``down`` (seen on Slurm 22.05, as ``down*``: the test machine's node was then not
responding; the test against it compares DRAIN only, so as not to leave the shared test
Slurm's node down)."""

Result = tuple[int | None, str, str]
"""(exit status, stdout, stderr); status ``None``: the command would not end by itself
(a deadline passes)."""


class NotModelled(Exception):
    """Shell syntax the double does not read (exit 2, as bash's syntax errors)."""


# -- the model ------------------------------------------------------------------------------

@dataclass
class Host:
    """One VM of the cluster, as its commands see it."""

    name: str
    files: dict[str, str] = field(default_factory=dict)
    """Absolute path -> ``"x"`` (an executable) or ``"r"`` (a readable file)."""
    mounts: dict[str, str] = field(default_factory=dict)
    """Mount point -> file system type."""
    gpus: int = 0
    gpu_name: str = ""
    python_modules: dict[str, frozenset[str]] = field(default_factory=dict)
    """Python executable -> the modules it can import beyond the standard library."""


@dataclass
class SlurmNode:
    name: str
    node_set: str
    dynamic: bool
    host: Host
    state: str = ""
    """The state without the DRAIN flag (sinfo's long name: idle, idle~, down ...)."""
    drain: bool = False
    reason: str = ""

    @property
    def default_state(self) -> str:
        return "idle~" if self.dynamic else "idle"

    @property
    def shown(self) -> str:
        """sinfo's ``%T``: ``drained`` while the DRAIN flag is set (no job runs here)."""
        return "drained" if self.drain else self.state

    @property
    def usable(self) -> bool:
        return not self.shown.startswith(UNUSABLE)

    def set_shown(self, state: str) -> None:
        """Set from sinfo's long name (``drained``/``drain`` set the flag)."""
        if state in ("drained", "drain", "draining"):
            self.drain, self.state = True, self.state or self.default_state
        else:
            self.drain, self.state = False, state


@dataclass
class SlurmCluster:
    """What slurmctld of the applied cluster knows."""

    cluster_id: str
    partitions: dict[str, list[str]]
    """Partition id -> its node names, in the cluster's order."""
    default_partition: str | None
    nodes: dict[str, SlurmNode]
    login: Host
    state_file: Path | None = None
    stamp: int | None = None
    """The cluster object's ``st_mtime_ns`` (see :data:`STATE_FILE`)."""
    next_job: int = 1

    def save_states(self) -> None:
        if self.state_file is None:
            return
        doc = _read_states(self.state_file)
        doc[self.cluster_id] = {"stamp": self.stamp, "nodes": {
            n.name: {"state": n.state, "drain": n.drain, "reason": n.reason}
            for n in self.nodes.values() if n.shown != n.default_state}}
        _write_states(self.state_file, doc)


def _write_states(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def _saved_nodes(doc: dict[str, Any], cluster_id: str, stamp: int | None) -> dict[str, Any]:
    entry = doc.get(cluster_id)
    if not isinstance(entry, dict) or entry.get("stamp") != stamp:
        return {}
    nodes = entry.get("nodes")
    return nodes if isinstance(nodes, dict) else {}


def _read_states(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def set_node_state(sandbox: Path, cluster_id: str, node: str, state: str,
                   reason: str = "") -> None:
    """Put ``node`` of ``cluster_id`` in ``state`` (sinfo's long name: ``down``,
    ``drained``, ``idle``...) in the sandbox of directory ``sandbox``
    (``<DIR>/.mldiag/sandbox``), as ``scontrol update`` on the login node does."""
    mtime = _mtime(path_of(Path(sandbox), cluster_id))  # None: the sandbox holds no such
    path = Path(sandbox) / STATE_FILE
    doc = _read_states(path)
    nodes = _saved_nodes(doc, cluster_id, mtime)
    nodes[node] = {"state": state, "reason": reason}
    doc[cluster_id] = {"stamp": mtime, "nodes": nodes}
    _write_states(path, doc)


def _first(block: Any) -> dict[str, Any]:
    return block[0] if isinstance(block, list) and block and isinstance(block[0], dict) else {}


def _int(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _storage_kinds(state: dict[str, Any]) -> dict[str, str]:
    """Storage resource id -> file system type, for the storage the cluster holds."""
    out: dict[str, str] = {}
    for res in state.get("storage_resources") or []:
        config = _first(res.get("config"))
        for key, block in config.items():
            if not block:
                continue
            kind = key.split("_", 1)[1]  # new_filestore, existing_lustre, new_bucket ...
            if kind not in FSTYPE:
                continue
            fstype = FSTYPE[kind]
            if kind == "filestore" and _first(block).get("protocol") == "NFSV41":
                fstype = "nfs4"
            out[str(res.get("id"))] = fstype
    return out


def _machine_types(state: dict[str, Any], reservations: Mapping[str, str]) -> dict[str, str]:
    """Compute resource id -> machine type (a reservation's from ``reservations``)."""
    out: dict[str, str] = {}
    for res in state.get("compute_resources") or []:
        config = _first(res.get("config"))
        for block in config.values():
            inner = _first(block)
            if inner.get("machine_type"):
                out[str(res.get("id"))] = str(inner["machine_type"])
            elif inner.get("reservation") and inner["reservation"] in reservations:
                out[str(res.get("id"))] = reservations[inner["reservation"]]
    return out


_BASE = {p: "x" for p in ("/usr/bin/hostname", "/usr/bin/findmnt", "/usr/bin/bash",
                          "/bin/bash", "/usr/bin/sh", "/bin/sh", "/usr/bin/python3",
                          "/usr/local/bin/sinfo", "/usr/local/bin/srun",
                          "/usr/local/bin/scontrol", "/sbin/mount.nfs", "/sbin/mount.lustre",
                          "/usr/bin/gcsfuse")}


def _mounts(configs: Any, kinds: Mapping[str, str]) -> dict[str, str]:
    return {str(c.get("local_mount")): kinds[str(c.get("id"))]
            for c in configs or [] if str(c.get("id")) in kinds and c.get("local_mount")}


def _startup_files(host: Host, script: str) -> None:
    """The ML Diagnostics files the stack's node startup script leaves on ``host``."""
    m = re.search(r"^MLDIAG_DIR=(\S+)$", script, re.M)
    if m is None:
        return
    where = m.group(1).strip("'\"")
    if '"$MLDIAG_DIR/job-env.sh"' in script:
        host.files[f"{where}/job-env.sh"] = "r"
    if "install_sdk()" in script:
        python = f"{where}/venv/bin/python"
        host.files[python] = "x"
        pkg = re.search(r"sdk=\"\$\(unb64 '([A-Za-z0-9+/=]*)'\)\"", script)
        dist = base64.b64decode(pkg.group(1)).decode() if pkg else ""
        name = re.split(r"[<>=!~\[; ]", dist, maxsplit=1)[0].strip()
        host.python_modules[python] = frozenset({name.replace("-", "_")} if name else ())


def _node_set_nodes(cid: str, ns: dict[str, Any], kinds: Mapping[str, str],
                    gpu: tuple[int, str] | None) -> list[SlurmNode]:
    """The nodes of node set ``ns`` of cluster ``cid``: its static nodes, then its dynamic
    ones (``<cid>-<node set>-<n>``), each with the node set's mounts, ``gpu`` (GPU count and
    name of its machine type, None when it has none) and the files its startup script
    leaves; each in its default state."""
    ns_id = str(ns.get("id"))
    static = _int(ns.get("static_node_count"))
    dynamic = _int(ns.get("max_dynamic_node_count"))
    script = str(_first(ns.get("compute_instance")).get("startup_script") or "")
    nodes = []
    for i in range(static + dynamic):
        host = Host(f"{cid}-{ns_id}-{i}", dict(_BASE), _mounts(ns.get("storage_configs"), kinds))
        if gpu is not None:
            host.gpus, host.gpu_name = gpu
            host.files["/usr/bin/nvidia-smi"] = "x"
        _startup_files(host, script)
        node = SlurmNode(host.name, ns_id, i >= static, host)
        node.state = node.default_state
        nodes.append(node)
    return nodes


def _partitions(slurm: dict[str, Any], nodes: dict[str, SlurmNode]) -> dict[str, list[str]]:
    """Each partition's node names (those of its node sets, in node order)."""
    partitions: dict[str, list[str]] = {}
    for p in slurm.get("partitions") or []:
        members = set(p.get("node_set_ids") or [])
        partitions[str(p.get("id"))] = [n.name for n in nodes.values() if n.node_set in members]
    return partitions


def _restore_states(nodes: dict[str, SlurmNode], state_file: Path, cid: str,
                    stamp: int | None) -> None:
    """Put back on ``nodes`` the states ``scontrol update`` saved in ``state_file`` for
    cluster ``cid`` while its object had ``stamp`` (:data:`STATE_FILE`)."""
    for name, saved in _saved_nodes(_read_states(state_file), cid, stamp).items():
        if name in nodes and isinstance(saved, dict) and saved.get("state"):
            nodes[name].set_shown(str(saved["state"]))
            nodes[name].drain = nodes[name].drain or bool(saved.get("drain"))
            nodes[name].reason = str(saved.get("reason") or "")


def build_cluster(state: dict[str, Any], reservations: Mapping[str, str] | None = None,
                  state_file: Path | None = None, stamp: int | None = None
                  ) -> SlurmCluster | None:
    """The Slurm cluster of one stored ``google_hypercomputecluster_cluster`` state; None
    when it has no Slurm orchestrator or no login node. ``state_file``/``stamp``: the node
    states set in the sandbox (:data:`STATE_FILE`)."""
    from mldiag_provision.catalog.gpu import load_gpu_catalog

    slurm = _first(_first(state.get("orchestrator")).get("slurm"))
    login_cfg = _first(slurm.get("login_nodes"))
    if not slurm or _int(login_cfg.get("count")) < 1:
        return None
    cid = str(state.get("cluster_id") or "cluster")
    kinds = _storage_kinds(state)
    machines = _machine_types(state, reservations or {})
    gpus = load_gpu_catalog()
    login = Host(f"{cid}-login-001", dict(_BASE), _mounts(login_cfg.get("storage_configs"),
                                                          kinds))
    nodes: dict[str, SlurmNode] = {}
    for ns in slurm.get("node_sets") or []:
        machine = machines.get(str(ns.get("compute_id")), "")
        found = gpus.machine(machine) if machine else None
        gpu = (found[1].gpus, found[0].display_name) if found is not None else None
        nodes.update((n.name, n) for n in _node_set_nodes(cid, ns, kinds, gpu))
    partitions = _partitions(slurm, nodes)
    default = slurm.get("default_partition") or (next(iter(partitions)) if partitions else None)
    cluster = SlurmCluster(cid, partitions, default, nodes, login, state_file, stamp)
    if state_file is not None:
        _restore_states(nodes, state_file, cid, stamp)
    return cluster


# -- the shell ------------------------------------------------------------------------------

@dataclass
class _Word:
    parts: list[tuple[str, str, bool]]
    """(kind, text, quoted): kind ``lit``, ``sub`` (``$(...)`` source) or ``var``."""
    line: int = 1
    """The script line the word ends on (bash's ``line N:`` in its messages)."""

    def literal(self) -> str | None:
        if all(k == "lit" and not q for k, _, q in self.parts):
            return "".join(t for _, t, _ in self.parts)
        return None


_OPS = ("&&", "||", ";", "|", "&", "(", ")", "\n")


def _matching_paren(src: str, i: int) -> int:
    """Index of the ``)`` closing the ``$(`` whose ``(`` is at ``i - 1``."""
    depth, quote = 1, ""
    while i < len(src):
        c = src[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                i += 1
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise NotModelled("unterminated $(")


def _dollar(src: str, i: int, quoted: bool) -> tuple[tuple[str, str, bool], int]:
    """The expansion at ``src[i] == '$'``: (part, next index)."""
    nxt = src[i + 1:i + 2]
    if nxt == "(":
        if src[i + 2:i + 3] == "(":
            raise NotModelled("arithmetic expansion $((...))")
        end = _matching_paren(src, i + 2)
        return ("sub", src[i + 2:end], quoted), end + 1
    if nxt == "?":
        return ("var", "?", quoted), i + 2
    if nxt == "{":
        end = src.index("}", i)
        return ("var", src[i + 2:end], quoted), end + 1
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", src[i + 1:])
    if m:
        return ("var", m.group(0), quoted), i + 1 + m.end()
    return ("lit", "$", quoted), i + 1


class _Lexer:
    """bash's token recognition for the small shell, one method per kind of input: blanks,
    comments, single quotes, double quotes (with ``$`` expansions inside), backslashes,
    ``$`` expansions, redirections and operators. ``tokens`` is the result: ("word",
    _Word) | ("op", text) | ("redir", (fd, op, _Word | str)); ``parts``/``started``: the
    word being read; ``i``: the index in ``src``. Raises NotModelled for what bash takes
    that the shell does not model (backquotes, ``&>``, unterminated quotes)."""

    def __init__(self, src: str) -> None:
        self.src, self.i = src, 0
        self.tokens: list[tuple[str, Any]] = []
        self.parts: list[tuple[str, str, bool]] = []
        self.started = False

    def run(self) -> list[tuple[str, Any]]:
        """Read all of ``src``; the tokens."""
        src = self.src
        while self.i < len(src):
            c = src[self.i]
            if c in " \t":
                self.flush()
                self.i += 1
            elif c == "#" and not self.started:
                self.comment()
            elif c == "'":
                self.single_quoted()
            elif c == '"':
                self.double_quoted()
            elif c == "\\":
                self.backslash()
            elif c == "$":
                self.dollar()
            elif c == "`":
                raise NotModelled("backquote command substitution")
            elif c in "<>":
                self.redirection()
            elif c == "&" and src[self.i:self.i + 2] == "&>":
                raise NotModelled("&> redirection")
            else:
                self.operator_or_char()
        self.flush()
        return self.tokens

    def flush(self) -> None:
        """End the word being read, if any (its line: the one ``i`` is on)."""
        if self.started:
            self.tokens.append(("word", _Word(self.parts,
                                              self.src.count("\n", 0, self.i) + 1)))
        self.parts, self.started = [], False

    def comment(self) -> None:
        """``#`` at a word's start: skip to the end of the line."""
        while self.i < len(self.src) and self.src[self.i] != "\n":
            self.i += 1

    def single_quoted(self) -> None:
        """``'...'``: its text, literally."""
        end = self.src.find("'", self.i + 1)
        if end < 0:
            raise NotModelled("unterminated '")
        self.parts.append(("lit", self.src[self.i + 1:end], True))
        self.started, self.i = True, end + 1

    def double_quoted(self) -> None:
        """``"..."``: literal text (``\\`` quotes ``"``, ``\\``, ``$``, a backquote) and
        ``$`` expansions, all quoted."""
        src = self.src
        self.i += 1
        buf = ""
        while True:
            if self.i >= len(src):
                raise NotModelled('unterminated "')
            d = src[self.i]
            if d == '"':
                self.i += 1
                break
            if d == "\\" and src[self.i + 1:self.i + 2] in ('"', "\\", "$", "`"):
                buf += src[self.i + 1]
                self.i += 2
            elif d == "$":
                if buf:
                    self.parts.append(("lit", buf, True))
                    buf = ""
                part, self.i = _dollar(src, self.i, True)
                self.parts.append(part)
            elif d == "`":
                raise NotModelled("backquote command substitution")
            else:
                buf += d
                self.i += 1
        self.parts.append(("lit", buf, True))
        self.started = True

    def backslash(self) -> None:
        """``\\``: a line continuation before a newline, else the next character quoted."""
        if self.src[self.i + 1:self.i + 2] == "\n":
            self.i += 2
            return
        self.parts.append(("lit", self.src[self.i + 1:self.i + 2], True))
        self.started, self.i = True, self.i + 2

    def dollar(self) -> None:
        """An unquoted ``$`` expansion (:func:`_dollar`)."""
        part, self.i = _dollar(self.src, self.i, False)
        self.parts.append(part)
        self.started = True

    def redirect_fd(self) -> int | None:
        """The file descriptor the word read so far names when it is all digits (``2>``),
        which it then stops being; else None."""
        word = _Word(self.parts).literal() if self.started else None
        if word is not None and word.isdigit():
            self.parts, self.started = [], False
            return int(word)
        return None

    def redirection(self) -> None:
        """``<``, ``>``, ``>>`` with a target word, or ``>&``/``<&`` with a descriptor or
        ``-``; the descriptor defaults to 1 for output, 0 for input."""
        src, c = self.src, self.src[self.i]
        fd = self.redirect_fd()
        self.flush()
        op = src[self.i:self.i + 2] if src[self.i:self.i + 2] in (">>", ">&", "<&") else c
        self.i += len(op)
        if op in (">&", "<&"):
            m = re.match(r"\d+|-", src[self.i:])
            if m is None:
                raise NotModelled(f"redirection {op}{src[self.i:self.i + 10]}")
            self.tokens.append(("redir", (fd if fd is not None else (1 if op == ">&" else 0),
                                          op, m.group(0))))
            self.i += m.end()
            return
        while self.i < len(src) and src[self.i] in " \t":
            self.i += 1
        sub = _tokens_word(src, self.i)
        if sub is None:
            raise NotModelled(f"redirection {op} without a target")
        target, self.i = sub
        self.tokens.append(("redir", (fd if fd is not None else (1 if op[0] == ">" else 0),
                                      op, target)))

    def operator_or_char(self) -> None:
        """An operator (:data:`_OPS`; a newline reads as ``;``), else one literal
        character of the word."""
        sep = next((o for o in _OPS if self.src.startswith(o, self.i)), None)
        if sep is None:
            self.parts.append(("lit", self.src[self.i], False))
            self.started, self.i = True, self.i + 1
            return
        self.flush()
        self.tokens.append(("op", ";" if sep == "\n" else sep))
        self.i += len(sep)


def _tokens(src: str) -> list[tuple[str, Any]]:
    """("word", _Word) | ("op", text) | ("redir", (fd, op, _Word | None))."""
    return _Lexer(src).run()


def _tokens_word(src: str, i: int) -> tuple[_Word, int] | None:
    """The one word starting at ``src[i]`` (a redirection's target)."""
    end = i
    quote = ""
    while end < len(src):
        c = src[end]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in " \t;&|<>()\n":
            break
        end += 1
    if end == i:
        return None
    toks = _tokens(src[i:end])
    if len(toks) != 1 or toks[0][0] != "word":
        return None
    word: _Word = toks[0][1]
    return word, end


# AST: ("list", [(and_or, ...)]); and_or: [(op, command)], first op ""; command:
# ("simple", words, redirs) | ("if", [(cond, body)], else_body | None)

class _Parser:
    def __init__(self, tokens: list[tuple[str, Any]]) -> None:
        self.t, self.i = tokens, 0

    def peek(self) -> tuple[str, Any] | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def keyword(self) -> str | None:
        tok = self.peek()
        if tok is not None and tok[0] == "word":
            lit = tok[1].literal()
            if lit in ("if", "then", "else", "elif", "fi", "while", "until", "for", "do",
                       "done", "case", "esac", "function", "{", "}", "!"):
                return str(lit)
        return None

    def parse_list(self, stop: tuple[str, ...] = ()) -> list[Any]:
        items: list[Any] = []
        while True:
            while self.peek() == ("op", ";"):
                self.i += 1
            if self.peek() is None or self.keyword() in stop:
                return items
            items.append(self.and_or())
            tok = self.peek()
            if tok is None or self.keyword() in stop:
                return items
            if tok == ("op", "&"):
                raise NotModelled("background jobs (&)")
            if tok != ("op", ";"):
                raise NotModelled(f"syntax error near unexpected token `{tok[1]}'")

    def and_or(self) -> list[tuple[str, Any]]:
        chain = [("", self.command())]
        while self.peek() in (("op", "&&"), ("op", "||")):
            tok = self.peek()
            assert tok is not None
            self.i += 1
            while self.peek() == ("op", ";"):
                raise NotModelled(f"syntax error near unexpected token `;' after {tok[1]}")
            chain.append((str(tok[1]), self.command()))
        if self.peek() == ("op", "|"):
            raise NotModelled("pipelines (|)")
        return chain

    def expect(self, word: str) -> None:
        if self.keyword() != word:
            tok = self.peek()
            raise NotModelled(f"syntax error: expected `{word}'"
                              + (f" near `{tok[1]}'" if tok and tok[0] == "op" else ""))
        self.i += 1

    def command(self) -> Any:
        kw = self.keyword()
        if kw == "if":
            self.i += 1
            arms = []
            cond = self.parse_list(("then",))
            self.expect("then")
            body = self.parse_list(("elif", "else", "fi"))
            arms.append((cond, body))
            while self.keyword() == "elif":
                self.i += 1
                cond = self.parse_list(("then",))
                self.expect("then")
                arms.append((cond, self.parse_list(("elif", "else", "fi"))))
            other = None
            if self.keyword() == "else":
                self.i += 1
                other = self.parse_list(("fi",))
            self.expect("fi")
            return ("if", arms, other)
        if kw is not None and kw not in ("then", "else", "elif", "fi", "do", "done", "esac",
                                         "}"):
            raise NotModelled(f"`{kw}'")
        words, redirs = [], []
        while True:
            tok = self.peek()
            if tok is None or tok[0] == "op":
                break
            if tok[0] == "redir":
                redirs.append(tok[1])
            else:
                words.append(tok[1])
            self.i += 1
        if not words and not redirs:
            tok = self.peek()
            raise NotModelled("syntax error near unexpected token "
                              f"`{tok[1] if tok else 'newline'}'")
        return ("simple", words, redirs, words[0].line if words else 1)


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Hang(Exception):
    """A command that would not end by itself."""


Program = Callable[["Shell", list[str]], tuple[int, str, str]]


class Shell:
    """bash on ``host`` of ``cluster``, for one command line (see the module docstring)."""

    def __init__(self, cluster: SlurmCluster, host: Host) -> None:
        self.cluster, self.host = cluster, host
        self.status = 0
        self.line = 1
        """The script line of the command running now (bash -c names it in its messages
        when its output is captured, as ssh's is: ``bash: line 1: X: command not found``;
        compared with bash 5.2 in tests/sandbox/test_slurm_login_shell.py)."""

        self.vars = {"HOSTNAME": host.name, "PATH": ":".join(PATH), "HOME": "/home/sandbox",
                     "USER": "sandbox", "SHELL": "/bin/bash"}

    def run(self, script: str) -> Result:
        out: list[str] = []
        err: list[str] = []
        try:
            tree = _Parser(_tokens(script)).parse_list()
            self._list(tree, out, err)
        except NotModelled as exc:
            err.append(f"bash: SANDBOX login node double: {exc} is not modelled\n")
            return 2, "".join(out), "".join(err)
        except _Exit as exc:
            return exc.code, "".join(out), "".join(err)
        except _Hang as exc:
            err.append(str(exc))
            return None, "".join(out), "".join(err)
        return self.status, "".join(out), "".join(err)

    def _list(self, items: list[Any], out: list[str], err: list[str]) -> None:
        for chain in items:
            for op, cmd in chain:
                if (op == "&&" and self.status != 0) or (op == "||" and self.status == 0):
                    continue
                self._command(cmd, out, err)

    def _command(self, cmd: Any, out: list[str], err: list[str]) -> None:
        if cmd[0] == "if":
            for cond, body in cmd[1]:
                self._list(cond, out, err)
                if self.status == 0:
                    self._list(body, out, err)
                    return
            if cmd[2] is not None:
                self._list(cmd[2], out, err)
            else:
                self.status = 0
            return
        words, redirs = cmd[1], cmd[2]
        self.line = cmd[3]
        assigned = 0
        for w in words:  # NAME=value words before the command
            lit = w.literal()
            if lit is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", lit):
                break
            assigned += 1
        if assigned and assigned < len(words):
            raise NotModelled("an environment assignment before a command")
        for w in words[:assigned]:
            key, _, value = str(w.literal()).partition("=")
            self.vars[key] = value
        if assigned:
            words = []
        argv: list[str] = []
        for w in words:
            argv += self._expand(w)
        sinks = {1: out, 2: err}
        null: list[str] = []
        for fd, op, target in redirs:
            if op in (">&", "<&"):
                if target == "-":
                    sinks[fd] = null
                elif int(target) in sinks:
                    sinks[fd] = sinks[int(target)]
                else:
                    raise NotModelled(f"redirection to file descriptor {target}")
                continue
            path = "".join(self._expand(target))
            if path != "/dev/null":
                raise NotModelled(f"redirection to {path} (files are not written)")
            if op.startswith(">"):
                sinks[fd] = null
        if not argv:
            self.status = 0
            return
        code, o, e = self._exec(argv)
        sinks.get(1, out).append(o)
        sinks.get(2, err).append(e)
        self.status = code

    def _expand(self, word: _Word) -> list[str]:
        fields = [""]
        split = False
        for kind, text, quoted in word.parts:
            if kind == "lit":
                value = text
            elif kind == "var":
                value = str(self.status) if text == "?" else self.vars.get(text, "")
            else:  # $(...): a subshell; its status is $? of a command made only of it
                sub = Shell(self.cluster, self.host)
                sub.vars = dict(self.vars)
                code, o, e = sub.run(text)
                if code is None:
                    raise _Hang(e)
                value = o.rstrip("\n")
                self.status = code
            if kind != "lit" and not quoted:
                split = True
            fields[-1] += value
        if split:
            return fields[0].split()
        return fields

    def which(self, name: str) -> str | None:
        if "/" in name:
            return name if self.host.files.get(name) == "x" else None
        for d in self.vars["PATH"].split(":"):
            if self.host.files.get(f"{d}/{name}") == "x":
                return f"{d}/{name}"
        return None

    def _exec(self, argv: list[str]) -> tuple[int, str, str]:
        name = argv[0]
        builtin = _BUILTINS.get(name)
        if builtin is not None:
            return builtin(self, argv)
        path = self.which(name)
        if path is None:
            if "/" in name:
                return 127, "", f"bash: line {self.line}: {name}: No such file or directory\n"
            return 127, "", f"bash: line {self.line}: {name}: command not found\n"
        if path in self.host.python_modules or path.rsplit("/", 1)[-1] in ("python3",
                                                                            "python"):
            return _python(self, path, argv)
        program = _PROGRAMS.get(path.rsplit("/", 1)[-1])
        if program is None:
            return 126, "", (f"bash: {name}: SANDBOX login node double: {path} is on the "
                             "node, but running it is not modelled\n")
        return program(self, argv)


# -- builtins -------------------------------------------------------------------------------

def _echo(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    args = argv[1:]
    newline = True
    while args and args[0] == "-n":
        newline, args = False, args[1:]
    return 0, " ".join(args) + ("\n" if newline else ""), ""


_INT_TESTS: dict[str, Callable[[int, int], bool]] = {
    "-eq": operator.eq, "-ne": operator.ne, "-lt": operator.lt, "-le": operator.le,
    "-gt": operator.gt, "-ge": operator.ge}
"""test(1)'s integer comparisons."""
_UNARY_TESTS = ("-x", "-r", "-e", "-f", "-s", "-d", "-n", "-z")


def _test_unary(sh: Shell, op: str, arg: str) -> bool:
    """``test OP ARG`` for a string test (``-n``, ``-z``) or a file test on the host's
    files: ``-x`` executable, ``-d`` a directory (a file under it, or a mount point),
    ``-r -e -f -s`` present."""
    files = sh.host.files
    if op == "-n":
        return arg != ""
    if op == "-z":
        return arg == ""
    if op == "-x":
        return files.get(arg) == "x"
    if op == "-d":
        return any(p.startswith(arg.rstrip("/") + "/") for p in files) or arg in sh.host.mounts
    return arg in files


def _test_expression(sh: Shell, args: list[str]) -> bool | None:
    """The truth of ``test ARGS`` (no ``!``, no integer comparison): none false, one
    argument non-empty, a unary test, a string comparison; None when not modelled."""
    if not args:
        return False
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2 and args[0] in _UNARY_TESTS:
        return _test_unary(sh, args[0], args[1])
    if len(args) == 3 and args[1] in ("=", "==", "!="):
        return (args[0] == args[2]) != (args[1] == "!=")
    return None


def _test(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    args = argv[1:]
    if argv[0] == "[":
        if not args or args[-1] != "]":
            return 2, "", "bash: [: missing `]'\n"
        args = args[:-1]
    negate = bool(args) and args[0] == "!"
    if negate:
        args = args[1:]
    if len(args) == 3 and args[1] in _INT_TESTS:
        try:
            a, b = int(args[0]), int(args[2])
        except ValueError:
            return 2, "", f"bash: {argv[0]}: integer expression expected\n"
        ok: bool | None = _INT_TESTS[args[1]](a, b)
    else:
        ok = _test_expression(sh, args)
    if ok is None:
        return 2, "", (f"bash: {argv[0]}: SANDBOX login node double: test "
                       f"{' '.join(args)} is not modelled\n")
    return (0 if ok != negate else 1), "", ""


def _command_v(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    if len(argv) == 3 and argv[1] == "-v":
        name = argv[2]
        if name in _BUILTINS:
            return 0, name + "\n", ""
        path = sh.which(name)
        return (0, path + "\n", "") if path else (1, "", "")
    if len(argv) >= 2 and not argv[1].startswith("-"):
        return sh._exec(argv[1:])
    return 2, "", "bash: command: SANDBOX login node double: only `command -v NAME` is modelled\n"


def _exit(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    code = sh.status if len(argv) < 2 else _int(argv[1]) & 255
    raise _Exit(code)


_BUILTINS: dict[str, Program] = {
    "echo": _echo, "true": lambda sh, a: (0, "", ""), ":": lambda sh, a: (0, "", ""),
    "false": lambda sh, a: (1, "", ""), "test": _test, "[": _test, "command": _command_v,
    "exit": _exit,
}


# -- programs -------------------------------------------------------------------------------

def _hostname(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    if len(argv) > 1:
        return 1, "", f"hostname: SANDBOX login node double: {' '.join(argv[1:])} is not modelled\n"
    return 0, sh.host.name + "\n", ""


def _bash(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    if len(argv) >= 3 and argv[1] == "-c":
        sub = Shell(sh.cluster, sh.host)
        code, out, err = sub.run(argv[2])
        if code is None:
            raise _Hang(err)
        return code, out, err
    return 2, "", f"{argv[0]}: SANDBOX login node double: only `{argv[0]} -c SCRIPT` is modelled\n"


def _findmnt(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    args = argv[1:]
    heading, columns, target = True, ["TARGET", "SOURCE", "FSTYPE", "OPTIONS"], None
    while args:
        a = args.pop(0)
        if a in ("-n", "--noheadings"):
            heading = False
        elif a in ("-o", "--output") and args:
            columns = args.pop(0).upper().split(",")
        elif a.startswith("--output="):
            columns = a.split("=", 1)[1].upper().split(",")
        elif a in ("-M", "--mountpoint") and args:
            target = args.pop(0)
        elif a.startswith("--mountpoint="):
            target = a.split("=", 1)[1]
        else:
            return 1, "", f"findmnt: SANDBOX login node double: {a} is not modelled\n"
    if target is None or not set(columns) <= {"FSTYPE", "TARGET"}:
        return 1, "", ("findmnt: SANDBOX login node double: only -M PATH with -o FSTYPE or "
                       "TARGET is modelled\n")
    fstype = sh.host.mounts.get(target.rstrip("/") or "/")
    if fstype is None:
        return 1, "", ""
    row = " ".join(fstype if c == "FSTYPE" else target for c in columns)
    return 0, ((" ".join(columns) + "\n") if heading else "") + row + "\n", ""


def _nvidia_smi(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    if argv[1:] not in (["-L"], ["--list-gpus"]):
        return 1, "", ("nvidia-smi: SANDBOX login node double: only -L is modelled\n")
    lines = [f"GPU {i}: {sh.host.gpu_name} (UUID: GPU-"
             f"{uuid.uuid5(uuid.NAMESPACE_DNS, f'{sh.host.name}.gpu{i}')})"
             for i in range(sh.host.gpus)]
    return 0, "".join(line + "\n" for line in lines), ""


def _python(sh: Shell, path: str, argv: list[str]) -> tuple[int, str, str]:
    m = re.fullmatch(r"\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*)\s*;?\s*",
                     argv[2]) if len(argv) == 3 and argv[1] == "-c" else None
    if m is None:
        return 1, "", (f"{argv[0]}: SANDBOX login node double: only `-c 'import MODULE'` "
                       "runs (no Python program runs in the sandbox)\n")
    have = sh.host.python_modules.get(path, frozenset())
    for module in (x.strip() for x in m.group(1).split(",")):
        top = module.split(".", 1)[0]
        if top not in sys.stdlib_module_names and top not in have:
            return 1, "", ('Traceback (most recent call last):\n  File "<string>", line 1, '
                           f"in <module>\nModuleNotFoundError: No module named '{top}'\n")
    return 0, "", ""


_SINFO_FIELDS = "NnRPfTtD"


def _sinfo_field(sh: Shell, node: SlurmNode, partition: str, kind: str) -> str:
    c = sh.cluster
    if kind in "Nn":
        return node.name
    if kind == "R":
        return partition
    if kind == "P":
        return partition + ("*" if partition == c.default_partition else "")
    if kind == "f":
        return "(null)"
    if kind == "D":
        return "1"
    if kind == "t":
        short = {"drained": "drain", "draining": "drng", "failing": "fail"}
        base = node.shown.rstrip("~#*")
        return short.get(base, base[:5]) + node.shown[len(base):]
    return node.shown  # T


@dataclass
class _SinfoOptions:
    """What sinfo's command line asks: a header line, one line per node (``-N``), the
    format (``-o``), the partitions (``-p``, None: all)."""

    header: bool = True
    by_node: bool = False
    fmt: str | None = None
    only: list[str] | None = None


def _sinfo_options(args: list[str]) -> _SinfoOptions | str:
    """sinfo's options in ``args`` (consumed); the message for one not modelled."""
    o = _SinfoOptions()
    while args:
        a = args.pop(0)
        if a in ("-h", "--noheader"):
            o.header = False
        elif a in ("-N", "--Node"):
            o.by_node = True
        elif a in ("-o", "--format") and args:
            o.fmt = args.pop(0)
        elif a.startswith("--format="):
            o.fmt = a.split("=", 1)[1]
        elif a in ("-p", "--partition") and args:
            o.only = args.pop(0).split(",")
        elif a.startswith("--partition="):
            o.only = a.split("=", 1)[1].split(",")
        elif re.fullmatch(r"-[hN]+", a):
            args[:0] = [f"-{x}" for x in a[1:]]
        else:
            return f"sinfo: SANDBOX login node double: option {a} is not modelled\n"
    return o


def _sinfo_line(fmt: str, specs: list[re.Match[str]], values: Callable[[str], str]) -> str:
    """One line of ``fmt``: each field spec (``%[.][size]type``) replaced by
    ``values(type)``, cut to ``size`` and padded (right-aligned with ``.``)."""
    text, last = "", 0
    for m in specs:
        text += fmt[last:m.start()]
        value = values(m.group(3))
        if m.group(2):
            size = int(m.group(2))
            value = value[:size].rjust(size) if m.group(1) else value[:size].ljust(size)
        text += value
        last = m.end()
    return text + fmt[last:] + "\n"


_SINFO_HEADS = {"N": "NODELIST", "n": "HOSTNAMES", "R": "PARTITION", "P": "PARTITION",
                "f": "AVAIL_FEATURES", "T": "STATE", "t": "STATE", "D": "NODES"}


def _sinfo_rows(cluster: SlurmCluster, only: list[str] | None) -> list[tuple[str, str]]:
    """(node, partition) of each row, of the partitions ``only`` names (all when None),
    sorted."""
    rows = []
    for part, names in cluster.partitions.items():
        if only is not None and part not in only:
            continue
        rows += [(name, part) for name in names]
    return sorted(rows, key=lambda r: (r[0], r[1]))


def _sinfo(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    o = _sinfo_options(argv[1:])
    if isinstance(o, str):
        return 1, "", o
    fmt = o.fmt
    if not o.by_node or fmt is None:
        return 1, "", ("sinfo: SANDBOX login node double: only the node-oriented -N -o FORMAT "
                       "output is modelled\n")
    specs = list(re.finditer(r"%(\.?)(\d*)([A-Za-z])", fmt))
    bad = [m.group(3) for m in specs if m.group(3) not in _SINFO_FIELDS]
    if bad:
        return 1, "", (f"sinfo: SANDBOX login node double: format field %{bad[0]} is not "
                       "modelled\n")
    out = _sinfo_line(fmt, specs, _SINFO_HEADS.__getitem__) if o.header else ""
    for name, part in _sinfo_rows(sh.cluster, o.only):
        node = sh.cluster.nodes[name]
        out += _sinfo_line(fmt, specs, functools.partial(_sinfo_field, sh, node, part))
    return 0, out, ""


_SRUN_VALUE = {"-N": "nodes", "--nodes": "nodes", "-n": "ntasks", "--ntasks": "ntasks",
               "-p": "partition", "--partition": "partition", "-C": "constraint",
               "--constraint": "constraint", "-t": "time", "--time": "time",
               "-J": "job-name", "--job-name": "job-name"}


def _srun_options(args: list[str]) -> tuple[dict[str, str], bool] | str:
    """srun's options at the head of ``args`` (consumed, the command is left): the values
    by name (:data:`_SRUN_VALUE`, ``label``) and ``--immediate``; the message for a
    missing value or an option not modelled."""
    opts: dict[str, str] = {}
    immediate = False
    while args and args[0].startswith("-"):
        a = args.pop(0)
        key, _, value = a.partition("=")
        if key in ("-I", "--immediate"):
            immediate = True
        elif key in ("-l", "--label"):
            opts["label"] = "1"
        elif key in _SRUN_VALUE:
            if not value:
                if not args:
                    return f"srun: option {key} requires an argument\n"
                value = args.pop(0)
            opts[_SRUN_VALUE[key]] = value
        elif re.fullmatch(r"-[NnpCtJ]\S+", a):
            opts[_SRUN_VALUE[a[:2]]] = a[2:]
        else:
            return f"srun: SANDBOX login node double: option {a} is not modelled\n"
    return opts, immediate


_SRUN_FAIL = "srun: error: Unable to allocate resources: "


def _srun_nodes(c: SlurmCluster, opts: dict[str, str], immediate: bool
                ) -> tuple[list[SlurmNode], int] | str:
    """The usable nodes of the job's partition and the node count it asks (``-N``), or
    srun's refusal (a bad partition, a constraint: no node has features); a job without
    enough usable nodes takes a job id and is queued: with ``--immediate`` the refusal,
    else _Hang."""
    part = opts.get("partition") or c.default_partition
    if part is None or part not in c.partitions:
        return _SRUN_FAIL + "Invalid partition name specified\n"
    if opts.get("constraint"):
        return _SRUN_FAIL + "Invalid feature specification\n"
    candidates = [c.nodes[n] for n in c.partitions[part]]
    count = _int(opts.get("nodes", "1").split("-", 1)[0]) or 1
    job = c.next_job
    c.next_job += 1
    usable = [n for n in candidates if n.usable]
    if len(usable) < count:
        # the job is accepted and queued (Slurm 22.05's default EnforcePartLimits=NO), with
        # the pending reason srun prints; --immediate then gives up (words as Slurm 22.05
        # prints them: tests/slurm/test_login_double_against_slurm.py)
        why = ("Requested partition configuration not available now"
               if len(candidates) < count else
               "Required node not available (down, drained or reserved)")
        queued = f"srun: {why}\nsrun: job {job} queued and waiting for resources\n"
        if immediate:
            return queued + _SRUN_FAIL + "Requested nodes are busy\n"
        raise _Hang(queued)
    return usable, count


def _srun_tasks(c: SlurmCluster, usable: list[SlurmNode], count: int, opts: dict[str, str],
                command: list[str]) -> tuple[int, str, str]:
    """Run ``command`` as each task (``-n``, at least one per node) on the first ``count``
    usable nodes in turn; outputs labelled by task with ``-l``; the last failing task's
    exit code."""
    tasks = max(_int(opts.get("ntasks", str(count))), count)
    out, err = "", ""
    code = 0
    for t in range(tasks):
        node = usable[t % count]
        sub = Shell(c, node.host)
        rc, o, e = sub._exec(list(command))
        if "label" in opts:
            o = "".join(f"{t}: {x}\n" for x in o.splitlines())
        out, err = out + o, err + e
        if rc != 0:
            err += f"srun: error: {node.name}: task {t}: Exited with exit code {rc}\n"
            code = rc
    return code, out, err


def _srun(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    args = argv[1:]
    parsed = _srun_options(args)
    if isinstance(parsed, str):
        return 1, "", parsed
    opts, immediate = parsed
    if not args:
        return 1, "", "srun: fatal: No command given to execute.\n"
    chosen = _srun_nodes(sh.cluster, opts, immediate)
    if isinstance(chosen, str):
        return 1, "", chosen
    usable, count = chosen
    return _srun_tasks(sh.cluster, usable, count, opts, args)


_SCONTROL_STATES = ("DOWN", "DRAIN", "RESUME", "UNDRAIN")
"""The states ``scontrol update`` takes here (scontrol(1) lists more; they are not
modelled)."""


def _scontrol(sh: Shell, argv: list[str]) -> tuple[int, str, str]:
    if len(argv) < 3 or argv[1].lower() != "update":
        return 1, "", ("scontrol: SANDBOX login node double: only `scontrol update "
                       "NodeName=... State=...` is modelled\n")
    fields: dict[str, str] = {}
    for a in argv[2:]:
        key, sep, value = a.partition("=")
        if not sep:
            return 1, "", f"scontrol: error: Invalid input: {a}\n"
        fields[key.lower()] = value
    names = fields.get("nodename", "")
    if not names or "[" in names or "state" not in fields:
        return 1, "", ("scontrol: SANDBOX login node double: only NodeName=N[,N...] "
                       "State=... is modelled\n")
    state = fields["state"].upper()
    if state not in _SCONTROL_STATES:
        return 1, "", (f"scontrol: SANDBOX login node double: State={fields['state']} is not "
                       f"modelled (only {', '.join(_SCONTROL_STATES)})\n")
    if state in ("DOWN", "DRAIN") and not fields.get("reason"):
        # src/scontrol/update_node.c prints it so (no "scontrol:" prefix)
        return 1, "", ("You must specify a reason when DOWNING or DRAINING a node. Request "
                       "denied\n")
    for name in names.split(","):
        node = sh.cluster.nodes.get(name)
        if node is None:
            return 1, "", "slurm_update error: Invalid node name specified\n"
        if state == "DRAIN":
            node.drain = True
        elif state == "DOWN":
            node.state = "down"
        elif state == "UNDRAIN":
            node.drain = False
        else:  # RESUME
            node.drain, node.state = False, node.default_state
        node.reason = fields.get("reason", "") if state in ("DOWN", "DRAIN") else (
            node.reason if node.shown != node.default_state else "")
    sh.cluster.save_states()
    return 0, "", ""


_PROGRAMS: dict[str, Program] = {
    "hostname": _hostname, "bash": _bash, "sh": _bash, "findmnt": _findmnt,
    "nvidia-smi": _nvidia_smi, "sinfo": _sinfo, "srun": _srun, "scontrol": _scontrol,
}


# -- the double -----------------------------------------------------------------------------

class LoginNodeDouble:
    """The login node of one applied sandbox cluster: :meth:`run` answers a command line as
    ``ssh LOGIN -- COMMAND`` would. ``where``: how ``verify`` names it."""

    def __init__(self, cluster: SlurmCluster) -> None:
        self.cluster = cluster
        self.where = f"SANDBOX login node {cluster.login.name}"

    def run(self, command: str) -> Result:
        return Shell(self.cluster, self.cluster.login).run(command)


def _cluster_files(cloud: Path) -> Iterable[tuple[Path, dict[str, Any]]]:
    """(file, state) of each stored Cluster Director cluster in the sandbox cloud."""
    for path in sorted((Path(cloud) / CLUSTER_TYPE).glob("*.json")):
        try:
            yield path, json.loads(path.read_text(encoding="utf-8"))["state"]
        except (OSError, ValueError, KeyError):
            continue


def _mtime(path: Path | None) -> int | None:
    try:
        return path.stat().st_mtime_ns if path is not None else None
    except OSError:
        return None


def path_of(sandbox: Path, cluster_id: str) -> Path | None:
    """The stored object of cluster ``cluster_id`` in the sandbox ``sandbox``, if any."""
    return next((p for p, st in _cluster_files(Path(sandbox) / "cloud")
                 if st.get("cluster_id") == cluster_id), None)


def login_node(sandbox: Path, *, cluster_id: str, location: str, project: str | None = None,
               reservations: Mapping[str, str] | None = None) -> LoginNodeDouble | None:
    """The login node double of cluster ``cluster_id`` in ``location`` (and ``project``)
    held by the sandbox in directory ``sandbox`` (``<DIR>/.mldiag/sandbox``); None when the
    sandbox holds no such cluster, or it has no login node."""
    for path, state in _cluster_files(Path(sandbox) / "cloud"):
        if state.get("cluster_id") != cluster_id or state.get("location") != location:
            continue
        if project is not None and state.get("project") not in (None, project):
            continue
        cluster = build_cluster(state, reservations, Path(sandbox) / STATE_FILE,
                                _mtime(path))
        return LoginNodeDouble(cluster) if cluster is not None else None
    return None


__all__ = ["LoginNodeDouble", "Shell", "SlurmCluster", "build_cluster", "login_node",
           "path_of", "set_node_state"]
