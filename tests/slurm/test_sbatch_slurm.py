"""The rendered sbatch scripts of the CPU test recipe run to completion on the real Slurm of
conftest.py, with the job environment the node startup script writes (job-env.sh)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from mldiag_provision.catalog.tpu import load_catalog
from mldiag_provision.pipeline import check_file
from mldiag_provision.plan.stack import build_plan
from mldiag_provision.render import slurm as render_slurm

ROOT = Path(__file__).resolve().parents[2]
RECIPE = Path(__file__).parent / "data" / "slurm-cpu-local.yaml"
TEMPLATE = ROOT / "modules" / "slurm" / "cluster-director" / "templates" / \
    "nodeset-startup.sh.tftpl"
JOB_TIMEOUT_S = 180.0


def _job_env(template: str) -> str:
    """job-env.sh as the startup script writes it: the quoted heredoc of the template, with
    Terraform's ``$${`` escapes undone."""
    m = re.search(r"<<'JOBENV'\n(.*?)\nJOBENV\n", template, re.S)
    assert m, "the startup template no longer writes job-env.sh from a JOBENV heredoc"
    body = m.group(1)
    assert "%{" not in body and re.search(r"(?<!\$)\$\{", body) is None, \
        "job-env.sh now holds Terraform template expressions: render them here"
    return body.replace("$${", "${")


def _wait_done(slurm: Any, job: str) -> str:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        q = slurm.run("squeue", "-h", "-j", job, "-o", "%T")
        if q.returncode == 0 and not q.stdout.strip():
            break
        time.sleep(1)
    else:
        slurm.run("scancel", job)
        raise AssertionError(f"job {job} still in squeue after {JOB_TIMEOUT_S:.0f} s")
    info = slurm.run("scontrol", "-o", "show", "job", job).stdout
    m = re.search(r"JobState=(\S+).*?ExitCode=(\S+)", info)
    return f"{m.group(1)} {m.group(2)}" if m else "COMPLETED 0:0"  # gone from memory: done


def test_rendered_sbatch_runs_with_the_job_environment(local_slurm: Any, tmp_path: Path) -> None:
    catalog = load_catalog()
    res = check_file(str(RECIPE), catalog)
    assert res.parsed.recipe is not None and not res.report.errors
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    scripts = {k: v.decode() for k, v in render_slurm.files(plan, "# test").items()
               if not Path(k).name.startswith("mldiag-smoke")}
    assert list(scripts) == ["slurm/probe.sbatch"]
    # /opt/mldiag of a node, moved under tmp_path: job-env.sh from the startup template
    opt = tmp_path / "opt-mldiag"
    opt.mkdir()
    (opt / "job-env.sh").write_text(_job_env(TEMPLATE.read_text()).replace("/opt/mldiag",
                                                                            str(opt)))
    (opt / "mlrun_region").write_text("us-east5\n")
    (opt / "profiles_gcs_path").write_text("gs://bucket\n")
    script = scripts["slurm/probe.sbatch"]
    assert "source /opt/mldiag/job-env.sh" in script
    path = tmp_path / "probe.sbatch"
    path.write_text(script.replace("/opt/mldiag", str(opt)))
    work = tmp_path / "work"
    work.mkdir()
    sub = local_slurm.run("sbatch", "--parsable", f"--chdir={work}", str(path))
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(";")[0]
    state = _wait_done(local_slurm, job)
    out = work / f"probe-{job}.out"
    log = out.read_text() if out.exists() else "(no output file)"
    assert state == "COMPLETED 0:0", f"{state}\n{log}"
    tasks = sorted(work.glob("task-*.txt"))
    assert [t.name for t in tasks] == ["task-0.txt"], log  # one node, one task per node
    for t in tasks:
        fields = dict(w.split("=", 1) for w in t.read_text().split())
        assert fields["run"] == f"mldiagtest-{job}-" + fields["run"].rsplit("-", 1)[1]
        assert fields["run"].rsplit("-", 1)[1].isdigit() and fields["run"][-2:] != "-0"
        assert fields["region"] == "us-east5"


def _layout(plan: Any) -> str:
    """slurm.conf lines for a plan's node sets and partitions, as cloud nodes named
    ``<cluster>-<node set>-<n>`` (static + dynamic), GPUs as GRES."""
    slurm = plan.slurm
    lines, members = [], {}
    for ns in slurm.node_sets:
        count = ns.static_node_count + (ns.max_dynamic_node_count or 0)
        name = f"{slurm.cluster_id}-{ns.id}-[0-{count - 1}]"
        gres = f" Gres=gpu:{ns.gpus_per_node}" if ns.gpus_per_node else ""
        lines.append(f"NodeName={name} CPUs=8 Feature={ns.id}{gres} State=CLOUD")
        members[ns.id] = name
    for p in slurm.partitions:
        default = "YES" if p.id == slurm.default_partition else "NO"
        lines.append(f"PartitionName={p.id} Nodes={','.join(members[n] for n in p.node_set_ids)}"
                     f" Default={default} MaxTime=INFINITE State=UP")
    return "\n".join(lines)


def test_gpu_example_scripts_pass_sbatch_test_only(slurm_controller: Any,
                                                   tmp_path: Path) -> None:
    catalog = load_catalog()
    res = check_file(str(ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"), catalog)
    assert res.parsed.recipe is not None and not res.report.errors
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    ctl = slurm_controller(_layout(plan))
    # PrivateData=cloud: sinfo lists the powered-down cloud nodes (what verify counts)
    nodes = ctl.run("sinfo", "-h", "-N", "-o", "%N %T").stdout.split("\n")
    assert sorted(set(n for n in nodes if n)) == sorted(
        [f"slurm-a3-ultra-a3u-{i} idle~" for i in range(2)]
        + [f"slurm-a3-ultra-cpu-{i} idle~" for i in range(4)]), nodes
    scripts = render_slurm.files(plan, "# test")
    assert sorted(scripts) == ["slurm/mldiag-smoke-a3u.sbatch", "slurm/pretrain.sbatch"]
    for name, body in scripts.items():
        path = tmp_path / Path(name).name
        path.write_bytes(body)
        r = ctl.run("sbatch", "--test-only", str(path))
        assert r.returncode == 0, f"{name}: {r.stderr}"
        # "Job N to start at T using P processors on nodes slurm-a3-ultra-a3u-[0-1] in
        # partition gpu": the whole GPU node set, in the recipe's partition
        assert re.search(r"on nodes \S+-a3u-\[0-1\] in partition gpu", r.stderr), r.stderr


def test_sbatch_test_only_refuses_a_script_the_layout_cannot_hold(slurm_controller: Any,
                                                                 tmp_path: Path) -> None:
    catalog = load_catalog()
    res = check_file(str(ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"), catalog)
    plan = build_plan(res.parsed.recipe, res.shapes, catalog)
    ctl = slurm_controller(_layout(plan).replace("Gres=gpu:8", "Gres=gpu:4"))
    path = tmp_path / "pretrain.sbatch"
    path.write_bytes(render_slurm.files(plan, "# test")["slurm/pretrain.sbatch"])
    r = ctl.run("sbatch", "--test-only", str(path))
    assert r.returncode != 0 and "configuration is not available" in r.stderr, r.stderr
