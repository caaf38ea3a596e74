"""The sandbox's login node double (provisioner/mldiag_provision/sandbox/slurm_login.py)
against the real single-machine Slurm of conftest.py: the same command lines, the same
answers where the double claims to answer as Slurm does (sinfo's format and states, srun's
and scontrol's refusals, a drained or down node).

The double's cluster is the one that matches the local Slurm's layout: one node set ``x``
(one static node) in partitions ``gpu`` and ``cpu``, ``cpu`` the default, as conftest.py's
slurm.conf puts ``localhost`` in both. Node names differ (``localhost`` against the Slurm on
Google Cloud naming), so columns other than the node name are compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mldiag_provision.sandbox.slurm_login import LoginNodeDouble, build_cluster

LocalSlurm = Any  # conftest.LocalSlurm

STATE = {
    "cluster_id": "c", "location": "us-east5", "project": "p",
    "compute_resources": [{"id": "x", "config": [{"new_on_demand_instances": [
        {"machine_type": "n2-standard-16", "zone": "us-east5-a"}]}]}],
    "storage_resources": [],
    "orchestrator": [{"slurm": [{
        "default_partition": "cpu",
        "login_nodes": [{"count": "1", "machine_type": "n2-standard-8"}],
        "node_sets": [{"id": "x", "compute_id": "x", "static_node_count": "1"}],
        "partitions": [{"id": "gpu", "node_set_ids": ["x"]},
                       {"id": "cpu", "node_set_ids": ["x"]}],
    }]}],
}
NODE = "c-x-0"


@pytest.fixture
def both(local_slurm: LocalSlurm) -> Iterator[tuple[Any, LoginNodeDouble]]:
    """(run on the real Slurm, the double); the real node is idle again afterwards."""
    cluster = build_cluster(STATE)
    assert cluster is not None

    def real(command: str) -> tuple[int, str, str]:
        r = local_slurm.run("bash", "-c", command, timeout=90)
        return r.returncode, r.stdout, r.stderr

    try:
        yield real, LoginNodeDouble(cluster)
    finally:
        local_slurm.run("scontrol", "update", "NodeName=localhost", "State=RESUME")


def _last(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


@pytest.mark.slow  # a real slurmctld
def test_sinfo_formats_and_states_match_slurm(both: tuple[Any, LoginNodeDouble]) -> None:
    real, double = both
    command = "sinfo -N -o '%.6P %t|%T'"
    r_code, r_out, _ = real(command)
    d_code, d_out, _ = double.run(command)
    assert (r_code, d_code) == (0, 0)
    r_lines, d_lines = r_out.splitlines(), d_out.splitlines()
    assert d_lines[0] == r_lines[0]  # the heading, cut to the field size
    assert sorted(d_lines[1:]) == sorted(r_lines[1:]), (r_out, d_out)  # '  cpu* idle|idle'


@pytest.mark.slow  # a real slurmctld
@pytest.mark.parametrize("command", [
    "srun -p nosuch hostname",
    "srun -p cpu -C nosuchfeature hostname",
    "srun -N 3 -p cpu --immediate=5 hostname",
])
def test_srun_refusals_match_slurm(both: tuple[Any, LoginNodeDouble], command: str) -> None:
    real, double = both
    r_code, _, r_err = real(command)
    d_code, _, d_err = double.run(command)
    assert d_code == r_code != 0
    assert _last(d_err) == _last(r_err), (r_err, d_err)


@pytest.mark.slow  # a real slurmctld
def test_a_drained_node_reads_and_refuses_jobs_as_slurm_does(
        both: tuple[Any, LoginNodeDouble]) -> None:
    real, double = both
    # no reason: refused, in scontrol's own words
    r = real("scontrol update NodeName=localhost State=DRAIN")
    d = double.run(f"scontrol update NodeName={NODE} State=DRAIN")
    assert d[0] == r[0] != 0
    assert _last(d[2]) == _last(r[2]), (r, d)
    # drained (DOWN is not tried on the real node: it stays down* for the Slurm tests that
    # share this session's Slurm)
    assert real("scontrol update NodeName=localhost State=DRAIN Reason=test")[0] == 0
    assert double.run(f"scontrol update NodeName={NODE} State=DRAIN Reason=test")[0] == 0
    command = "sinfo -h -N -o '%P %t|%T'"
    assert sorted(double.run(command)[1].splitlines()) == sorted(
        real(command)[1].splitlines())  # 'cpu* drain|drained'
    # a job asking for the node now cannot start: srun --immediate gives up
    command = "srun -p cpu --immediate=3 hostname"
    r = real(command)
    d = double.run(command)
    assert d[0] == r[0] != 0
    assert _last(d[2]) == _last(r[2]), (r, d)
    # (after RESUME the real node shows idle*, not responding, until slurmctld's next ping
    # of it: a transient the double does not model; the fixture resumes it)
