"""verify --health on Slurm stacks without a GPU cluster: the Cluster Health Scanner's verdict
parsed from its output, and run_health against a fake login node.

Recorded output: ``tests/data/chs/readme-example-81c525d.txt`` is the example run printed in
GoogleCloudPlatform/cluster-health-scanner ``deploy/slurm/README.md`` (lines 62-69) at commit
81c525d897f4e85a4f69dd1e389379de6f1e07c2. The repository publishes no failing run; the
failing outputs below are the lines ``deploy/slurm/cluster-validation.sh`` prints at that
commit (``echo`` at lines 67, 151-157, 213-214, 341-342), filled in with the README's node
names. "NCCL tests PASSED on all nodes" is the wording GoogleCloudPlatform/cluster-director-mcp
``cluster-director-slurm/pkg/tools/cluster/resultsCore.go`` (commit 7ae8426) looks for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.verify.slurm import SINFO, Remote, parse_sinfo
from mldiag_provision.verify.slurm_health import parse_verdict, run_health

ROOT = Path(__file__).resolve().parents[2]
README_RUN = (ROOT / "tests" / "data" / "chs" / "readme-example-81c525d.txt").read_text()
HEADER = ("--- Script Arguments ---\nNode List: a3m123-a3meganodeset-[1-10]\n"
          "Number of Nodes: 10\nPartition: a3mega\nMachine Type: a3-megagpu-8g\n"
          "Run DCGM: 1\nRun NCCL: 0\nResults Directory: results\n------------------------\n")
DCGM_FAILED = (HEADER + "Basic check for required arguments passed.\n"
               "Starting DCGM Diagnostics...\nSubmitting DCGM diagnostic job...\n"
               "DCGM diagnostic job submitted with ID: 41\n"
               "DCGM failed on the following nodes: \n  a3m123-a3meganodeset-3\n"
               " a3m123-a3meganodeset-7\nSee results/dcgmi-41.out for more details\n")
NOT_IDLE = (HEADER + "Error:  The following nodes are not in the 'idle' state:\n\n"
            "Node: a3m123-a3meganodeset-1, State: mixed\n\n"
            "Please ensure that all nodes are in the 'idle' state before running the "
            "validation.\n")
LOW_BUSBW = ("Starting NCCL all_reduce_perf...\nCURR_NODES:  a3m123-a3meganodeset-1\n"
             "a3m123-a3meganodeset-5\nCURR_BUSBW:  42\n"
             "Insufficient bus bandwidth on nodes on a3m123-a3meganodeset-1\n"
             "See results/nccl-gcp.sh_43.log for more details\n")


def test_recorded_readme_run_passes() -> None:
    status, message = parse_verdict(README_RUN, 0)
    assert status == "PASS"
    assert message == "DCGM diagnostics passing on all nodes; NCCL test passing on all nodes"


@pytest.mark.parametrize(("output", "code", "want"), [
    (DCGM_FAILED, 2, "DCGM failed on a3m123-a3meganodeset-3 a3m123-a3meganodeset-7"),
    (NOT_IDLE, 1, "the scanner could not run: The following nodes are not in the 'idle' "
                  "state: Node: a3m123-a3meganodeset-1, State: mixed"),
    (LOW_BUSBW, 2, "Insufficient bus bandwidth on nodes on a3m123-a3meganodeset-1"),
])
def test_failing_runs_name_the_nodes(output: str, code: int, want: str) -> None:
    status, message = parse_verdict(output, code)
    assert status == "FAIL"
    assert message.startswith(want), message


def test_cluster_director_mcp_wording_of_nccl_pass() -> None:
    assert parse_verdict("NCCL tests PASSED on all nodes\n", 0) == (
        "PASS", "NCCL test passing on all nodes")


@pytest.mark.parametrize(("output", "code"), [
    ("", 0),                                       # nothing at all
    ("DCGM diagnostics passing on all nodes!\n", 3),  # a pass line but a failing exit
    ("Traceback (most recent call last):\n  ...\nKeyError: 'x'\n", 1),
])
def test_unexpected_output_is_a_fail_never_a_pass(output: str, code: int) -> None:
    status, message = parse_verdict(output, code)
    assert status == "FAIL" and message.startswith(f"unexpected output (exit {code})")


def test_no_deadline_answer_is_a_fail() -> None:
    assert parse_verdict("Starting DCGM Diagnostics...\n", None)[0] == "FAIL"


# -- run_health against a fake login node ------------------------------------------------------

SINFO_A3 = "slurma3u-a3u-0|gpu|(null)|idle\nslurma3u-a3u-1|gpu|(null)|idle\n"
SMI_8 = "".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-{i})\n" for i in range(8))


def _plan():  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    res = check_file(str(ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"), catalog)
    return build_plan(res.parsed.recipe, res.shapes, catalog).slurm


class FakeLogin:
    where = "fake-login"

    def __init__(self, answer: Callable[[str], Remote]) -> None:
        self.answer, self.commands = answer, []  # type: ignore[var-annotated]

    def run(self, command: str, timeout_s: float) -> Remote:
        self.commands.append((command, timeout_s))
        return self.answer(command)


def _login(*, installed: bool = True, smi: bool = True, scan: Remote | None = None
           ) -> FakeLogin:
    def answer(cmd: str) -> Remote:
        if cmd.startswith("for d in"):
            return Remote(cmd, 0, ("chs=/home/me/cluster-health-scanner\n" if installed
                                   else "") + "probe=done\n", "")
        if cmd == SINFO:
            return Remote(cmd, 0, SINFO_A3, "")
        if cmd.startswith("srun") and "nvidia-smi" in cmd:
            return Remote(cmd, 0, "host=slurma3u-a3u-0\n" + (f"smi=yes\n{SMI_8}" if smi
                                                             else "smi=no\n"), "")
        if "cluster-validation.sh" in cmd:
            assert scan is not None
            return scan
        if cmd.startswith("scancel"):
            return Remote(cmd, 0, "", "")
        raise AssertionError(cmd)

    return FakeLogin(answer)


def test_not_installed_skips_with_where_it_looked() -> None:
    login = _login(installed=False)
    [r] = run_health(login, _plan(), parse_sinfo(SINFO_A3))
    assert (r.check, r.status) == ("health:a3u", "SKIP")
    assert "not installed on the login node" in r.message
    assert "$HOME/cluster-health-scanner" in r.message
    assert "git clone https://github.com/GoogleCloudPlatform/cluster-health-scanner" in (
        r.hint or "")


def test_no_gpus_skips() -> None:
    [r] = run_health(_login(smi=False), _plan(), parse_sinfo(SINFO_A3))
    assert r.status == "SKIP" and "no GPUs to scan" in r.message


def test_installed_scanner_runs_dcgm_on_the_node_set_and_passes() -> None:
    out = README_RUN.splitlines()[0] + "\nchs_exit=0\n"
    login = _login(scan=Remote("x", 0, out, ""))
    [r] = run_health(login, _plan(), parse_sinfo(SINFO_A3), timeout_s=900)
    assert (r.status, r.message) == ("PASS", "DCGM diagnostics passing on all nodes "
                                             "(2 node(s))")
    cmd, deadline = next(c for c in login.commands if c[0].startswith("cd "))
    assert cmd.startswith("cd /home/me/cluster-health-scanner && timeout -k 30 900 "
                          "bash ./deploy/slurm/cluster-validation.sh --nodelist "
                          "slurma3u-a3u-0,slurma3u-a3u-1 --dcgm --partition gpu "
                          "--machine-type a3-ultragpu-8g --nodes 2")
    assert deadline == 960


def test_failing_scan_fails_naming_the_nodes() -> None:
    login = _login(scan=Remote("x", 0, DCGM_FAILED + "chs_exit=2\n", ""))
    [r] = run_health(login, _plan(), parse_sinfo(SINFO_A3))
    assert r.status == "FAIL"
    assert r.message.startswith("DCGM failed on a3m123-a3meganodeset-3")
    assert "results/dcgmi-" in (r.hint or "")


@pytest.mark.parametrize("scan", [Remote("x", None, "Starting DCGM Diagnostics...\n", ""),
                                  Remote("x", 0, "Starting DCGM Diagnostics...\nchs_exit=124\n",
                                         "")])
def test_timeout_cancels_the_scanners_jobs(scan: Remote) -> None:
    login = _login(scan=scan)
    [r] = run_health(login, _plan(), parse_sinfo(SINFO_A3), timeout_s=60)
    assert r.status == "FAIL" and "did not finish in 60 s" in r.message
    assert any(re.fullmatch(r'scancel -u "\$USER" -n dcgmi-diag\.sh -p gpu', c)
               for c, _ in login.commands)


def test_cpu_only_recipe_skips_once() -> None:
    catalog = load_catalog()
    res = check_file(str(ROOT / "tests" / "slurm" / "data" / "slurm-cpu-local.yaml"), catalog)
    slurm = build_plan(res.parsed.recipe, res.shapes, catalog).slurm
    assert slurm is not None
    cpu_only = type(slurm)(**{**{f: getattr(slurm, f) for f in slurm.__dataclass_fields__},
                              "node_sets": tuple(n for n in slurm.node_sets
                                                 if not n.gpus_per_node)})
    [r] = run_health(_login(), cpu_only, [])
    assert (r.check, r.status) == ("health", "SKIP") and "no GPU node set" in r.message
