"""``verify --health`` on a managed Slurm cluster: the Cluster Health Scanner's DCGM check on
each GPU node set, run on the login node where the scanner is installed.

The Vertex AI Training clusters overview (seed 003) says the Cluster Health Scanner (CHS) is
pre-installed to run DCGM and NCCL diagnostics. Its Slurm entry point is
``deploy/slurm/cluster-validation.sh`` in a checkout of
https://github.com/GoogleCloudPlatform/cluster-health-scanner (catalog fact
``slurm.healthScanner.script``); it is looked for in the directories of
``slurm.healthScanner.installPaths`` (confidence L: no page names where Cluster Director
installs it) or ``verify --health-path``.

Per GPU node set: ``cluster-validation.sh --dcgm`` over the node set's nodes (as the
scanner's own ``cli/slurm_check.py`` calls it), under ``timeout`` on the login node; on a
timeout the scanner's DCGM jobs of this user on that partition are cancelled (``scancel -u
$USER -n dcgmi-diag.sh -p PARTITION``). The verdict is read from its output and exit code by
:func:`parse_verdict`. NCCL (``--nccl``) is not run: it builds nccl-tests and pairs nodes
four apart, which needs larger node sets; run it by hand.

SKIP, with the reason: no GPU node set; CHS not installed on the login node; a machine type
CHS does not support (``slurm.healthScanner.machineTypes``); no GPUs (no ``nvidia-smi``) on
the node set's nodes; the node set's partition or nodes are not in Slurm.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mldiag_provision.verify.checks import FAIL, PASS, SKIP, CheckResult

if TYPE_CHECKING:
    from mldiag_provision.plan.slurm_types import NodeSetPlan, SlurmPlan
    from mldiag_provision.verify.slurm import NodeRow, SlurmChecks, Transport

REPO = "https://github.com/GoogleCloudPlatform/cluster-health-scanner"
_NCCL_PASS = re.compile(r"NCCL tests? (?:passing|PASSED) on all nodes")


def _fact(key: str) -> object:
    from mldiag_provision.catalog.store import store

    found = store().get("slurm", "healthScanner", key)
    return found.get("value", found.get("values"))


def script_path() -> str:
    return str(_fact("script"))


def install_paths() -> list[str]:
    value = _fact("installPaths")
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def machine_types() -> list[str]:
    value = _fact("machineTypes")
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def parse_verdict(output: str, returncode: int | None) -> tuple[str, str]:
    """``(status, message)`` of one ``cluster-validation.sh`` run from its output and exit
    code (``None``: it did not finish before its deadline).

    PASS: exit 0 and a "passing on all nodes" line for each test it ran. FAIL: the failing
    nodes it names ("DCGM failed on the following nodes:", "Insufficient bus bandwidth on
    nodes on ...", "NCCL failed to run properly on ..."), the reason it could not run
    ("Error: ..."), or any output it is not known to print. Phrases: cluster-validation.sh
    and its README at commit 81c525d (catalog source CHS-SLURM); "NCCL tests PASSED on all
    nodes" is the wording Google's Cluster Director MCP server looks for (CD-MCP).
    """
    lines = [ln.strip() for ln in output.splitlines()]
    text = "\n".join(lines)
    if returncode is None:
        return FAIL, "the scanner did not finish before its deadline"
    for i in range(len(lines)):
        failure = _line_failure(lines, i)
        if failure is not None:
            return FAIL, failure
    passed = []
    if "DCGM diagnostics passing on all nodes!" in text:
        passed.append("DCGM diagnostics passing on all nodes")
    if _NCCL_PASS.search(text):
        passed.append("NCCL test passing on all nodes")
    if returncode == 0 and passed:
        return PASS, "; ".join(passed)
    last = next((x for x in reversed(lines) if x), "(no output)")
    return FAIL, f"unexpected output (exit {returncode}): {last[:300]}"


def _line_failure(lines: list[str], i: int) -> str | None:
    """The failure line ``i`` of the scanner's output reports, in :func:`parse_verdict`'s
    words (the failing nodes listed on the lines after "DCGM failed on the following
    nodes:" up to "See ...", the three lines after "Error:"); None for any other line."""
    line = lines[i]
    if "DCGM failed on the following nodes:" in line:
        nodes = []
        for x in lines[i + 1:]:
            if x.startswith("See "):
                break
            nodes += x.split()
        return "DCGM failed on " + (" ".join(nodes) or "(nodes not named)")
    if "DCGM failed to run properly" in line:
        return "DCGM failed to run properly"
    for phrase in ("Insufficient bus bandwidth", "NCCL failed to run properly"):
        if phrase in line:
            return line[line.index(phrase):]
    if line.startswith("Error:"):
        rest = [line.removeprefix("Error:").strip()] + [x for x in lines[i + 1:i + 4] if x]
        return "the scanner could not run: " + " ".join(x for x in rest if x)[:400]
    if line.startswith(("Failed to build NCCL tests", "Unsupported machine type")):
        return line
    return None


def locate_command(paths: Sequence[str]) -> str:
    """A shell command printing ``chs=DIR`` for the first of ``paths`` holding the scanner's
    Slurm script, then ``probe=done``. ``$HOME`` in a path is expanded there."""
    script = script_path()
    words = " ".join(f"\"{p}\"" if p.startswith("$HOME") else shlex.quote(p) for p in paths)
    # -f, not -x: a fresh clone's script is not executable (the CHS README says chmod +x);
    # it is run with bash
    return (f"for d in {words}; do if [ -f \"$d\"/{shlex.quote(script)} ]; then "
            "echo \"chs=$d\"; break; fi; done; echo probe=done")


def run_health(transport: Transport, slurm: SlurmPlan, rows: Sequence[NodeRow], *,
               paths: Sequence[str] | None = None, timeout_s: float = 1800,
               remote_timeout_s: float = 60) -> list[CheckResult]:
    """One ``health:<node set>`` result per GPU node set (or one ``health`` SKIP).

    ``timeout_s``: how long one node set's scan may take (seconds, ``verify
    --health-timeout``); ``remote_timeout_s``: the deadline of the other remote commands.
    """
    from mldiag_provision.verify.slurm import SlurmChecks

    gpu_sets = [ns for ns in slurm.node_sets if ns.gpus_per_node]
    if not gpu_sets:
        return [CheckResult("health", SKIP, "no GPU node set: the Cluster Health Scanner "
                                            "checks GPUs (DCGM) and their network (NCCL)",
                            f"cluster {slurm.cluster_id}")]
    look = list(paths or install_paths())
    where = _locate(transport, look, remote_timeout_s)
    if isinstance(where, CheckResult):
        return [where]
    if where is None:
        return [CheckResult(f"health:{ns.id}", SKIP,
                            "the Cluster Health Scanner is not installed on the login node "
                            f"(no {script_path()} under {', '.join(look)})", transport.where,
                            f"git clone {REPO} ~/cluster-health-scanner, or pass "
                            "--health-path DIR") for ns in gpu_sets]
    checks = SlurmChecks(transport, slurm, remote_timeout_s)
    out = []
    for ns in gpu_sets:
        check, part = f"health:{ns.id}", checks.partition_of(ns)
        evidence = f"{where}/{script_path()} on node set {ns.id}"
        nodes = _nodes(ns, part, rows)
        skipped = _unscannable(checks, ns, part, nodes, rows, check, evidence)
        if skipped is not None:
            out.append(skipped)
            continue
        assert part is not None
        out.append(_scan(transport, where, ns, part, nodes, check, evidence,
                         timeout_s, remote_timeout_s))
    return out


def _locate(transport: Transport, look: list[str],
            remote_timeout_s: float) -> str | CheckResult | None:
    """The directory of the scanner on the login node (the first of ``look`` holding it),
    None when it is in none of them, a FAIL when the login node did not answer the probe."""
    r = transport.run(locate_command(look), remote_timeout_s)
    marks = dict(x.strip().split("=", 1) for x in r.stdout.splitlines() if "=" in x)
    if r.returncode != 0 or marks.get("probe") != "done":
        return CheckResult("health", FAIL, f"looking for the scanner failed: {r.why()}",
                           transport.where, "can the login node run a shell command?")
    return marks.get("chs")


def _nodes(ns: NodeSetPlan, part: str | None, rows: Sequence[NodeRow]) -> list[str]:
    """The Slurm nodes of node set ``ns`` in its partition ``part``, sorted."""
    from mldiag_provision.verify.slurm import in_node_set

    return sorted({row.node for row in rows if in_node_set(row, ns.id)
                   and row.partition == part})


def _unscannable(checks: SlurmChecks, ns: NodeSetPlan, part: str | None, nodes: list[str],
                 rows: Sequence[NodeRow], check: str, evidence: str) -> CheckResult | None:
    """Why node set ``ns`` cannot be scanned: a SKIP when its partition or nodes are not in
    Slurm, CHS does not support its machine type, or its nodes show no GPU; a FAIL when its
    nodes gave no answer to the GPU probe. None when it can be scanned."""
    supported = machine_types()
    if part is None or part not in {row.partition for row in rows} or not nodes:
        return CheckResult(check, SKIP, f"node set {ns.id} has no node in Slurm "
                                        f"(partition {part})", evidence)
    if ns.machine_type not in supported:
        return CheckResult(check, SKIP, f"the scanner does not support "
                                        f"{ns.machine_type} (it supports "
                                        f"{', '.join(supported)})", evidence)
    gpus = checks.gpus(ns, list(rows))
    if gpus.status == SKIP:
        return CheckResult(check, SKIP, f"no GPUs to scan: {gpus.message}", evidence)
    if gpus.status == FAIL and "no answer" in gpus.message:
        return CheckResult(check, FAIL, gpus.message, evidence, gpus.hint)
    return None


def _scan(transport: Transport, where: str, ns: NodeSetPlan, part: str, nodes: list[str],
          check: str, evidence: str, timeout_s: float,
          remote_timeout_s: float) -> CheckResult:
    """Run ``cluster-validation.sh --dcgm`` over ``nodes`` under ``timeout`` on the login
    node and judge it (:func:`parse_verdict`); on a timeout, a FAIL after its DCGM jobs on
    ``part`` are cancelled."""
    secs = max(1, int(timeout_s))
    argv = ["bash", f"./{script_path()}", "--nodelist", ",".join(nodes), "--dcgm",
            "--partition", part, "--machine-type", str(ns.machine_type),
            "--nodes", str(len(nodes)), "--relative-exec-path=deploy/slurm",
            "--results-dir=results"]
    run = (f"cd {shlex.quote(where)} && timeout -k 30 {secs} " + shlex.join(argv)
           + "; echo \"chs_exit=$?\"")
    res = transport.run(run, timeout_s + 60)
    code: int | None = None
    m = re.search(r"^chs_exit=(\d+)$", res.stdout, re.M)
    if m is not None:
        code = int(m.group(1))
    if res.timed_out or code == 124:
        transport.run(f"scancel -u \"$USER\" -n dcgmi-diag.sh -p {shlex.quote(part)}",
                      remote_timeout_s)
        return CheckResult(check, FAIL, f"the scanner did not finish in "
                                        f"{timeout_s:g} s; its DCGM jobs on {part} "
                                        "were cancelled", evidence,
                           "raise --health-timeout (dcgmi diag -r 3 takes minutes "
                           "per node)")
    if res.returncode != 0 or code is None:
        return CheckResult(check, FAIL, f"unexpected answer: {res.why()}", evidence,
                           "run the scanner by hand on the login node")
    status, message = parse_verdict(res.stdout.replace(m.group(0) if m else "", ""),
                                    code)
    return CheckResult(check, status, f"{message} ({len(nodes)} node(s))", evidence,
                       None if status == PASS else
                       f"its logs: {where}/results/dcgmi-<job id>.out")
