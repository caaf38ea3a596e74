"""The Slurm stack: sbatch scripts and the node startup script keep every recipe value inert
(run for real with bash, and through Terraform's templatefile), the run id is one per job,
and nothing of GKE is rendered."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from mldiag_provision.plan.slurm import pyxis_image
from stack_support import REPO_ROOT, render_files, terraform_binary

RECIPE = REPO_ROOT / "recipes" / "slurm-a3-ultra-lustre.yaml"
MODULE = REPO_ROOT / "modules" / "slurm" / "cluster-director"

HOSTILE = [
    "$(touch pwned)", "`touch pwned`", "'; touch pwned; '", '"; touch pwned; "',
    "${HOME} $HOME", "%{ if true }x%{ endif }", "back\\slash\\n", "line1\nline2\r\n",
    "tab\there", "#!/bin/sh", "-rf", "*", "ünïcödé 🚀", "", " spaced  out ",
]


def hostile_recipe() -> str:
    data = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    w = data["spec"]["workloads"][0]
    w["command"] = ["python3", "-c", "import sys; print(sys.argv)"]
    w["args"] = list(HOSTILE)
    w["env"] = {f"V{i}": v for i, v in enumerate(HOSTILE)}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def test_stack_is_slurm_only() -> None:
    files = render_files(RECIPE)
    assert "slurm/pretrain.sbatch" in files
    assert not any(rel.startswith(("k8s/", "agents/")) for rel in files)
    plan = json.loads(files[".mldiag/plan.json"])
    assert plan["workloads"] == [] and plan["agents"] is None
    assert plan["diagnostics"]["agents"] == "sdk"
    services = set(plan["services"])
    assert {"hypercomputecluster.googleapis.com", "file.googleapis.com",
            "lustre.googleapis.com", "compute.googleapis.com"} <= services
    assert "container.googleapis.com" not in services
    text = "\n".join(plan["decisions"]) + files["README.md"].decode()
    assert "kubectl" not in text and "GKE" not in text
    assert plan["slurm"]["default_partition"] == "gpu"
    assert plan["slurm"]["compute"][0]["reservation"] == (
        "projects/my-ml-project/zones/us-east5-a/reservations/a3-ultra-reservation")


def test_implicit_node_set_and_partition_for_a_bare_gpu_slice() -> None:
    data = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    data["spec"]["slurm"] = {"storage": data["spec"]["slurm"]["storage"]}
    plan = json.loads(render_files(text=yaml.safe_dump(data))[".mldiag/plan.json"])
    assert [n["id"] for n in plan["slurm"]["node_sets"]] == ["a3u"]
    assert plan["slurm"]["partitions"] == [{"id": "a3u", "node_set_ids": ["a3u"]}]
    assert plan["slurm"]["default_partition"] is None  # one partition: the API wants none


@pytest.mark.parametrize(("image", "expected"), [
    ("us-docker.pkg.dev/p/r/img:1", "us-docker.pkg.dev#p/r/img:1"),
    ("localhost:5000/img", "localhost:5000#img"),
    ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
    ("python:3.12", "python:3.12"),
    ("library/python", "library/python"),
])
def test_pyxis_image(image: str, expected: str) -> None:
    assert pyxis_image(image) == expected


def test_sbatch_passes_hostile_values_verbatim(tmp_path: Path) -> None:
    files = render_files(text=hostile_recipe())
    script = files["slurm/pretrain.sbatch"].decode()
    assert script.startswith("#!/bin/bash\n")
    assert re.findall(r"^#SBATCH (.*)$", script, re.M) == [
        "--job-name=pretrain", "--partition=gpu", "--nodes=2", "--ntasks-per-node=1",
        "--gpus-per-node=8", "--exclusive", "--output=%x-%j.out"]
    (tmp_path / "job.sbatch").write_text(script)
    # Stand-ins for Slurm, and the job environment file the startup script would write.
    env_file = tmp_path / "job-env.sh"
    env_file.write_text("export FROM_JOB_ENV=1\n")
    harness = f"""
scontrol() {{ echo node-0; echo node-1; }}
srun() {{ printf '%s\\0' "$@" > argv; env -0 > environ; }}
source() {{ builtin source {env_file}; }}
SLURM_JOB_NODELIST='node-[0-1]'
. ./job.sbatch
"""
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", harness], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "pwned").exists()
    argv = (tmp_path / "argv").read_bytes().decode().split("\0")[:-1]
    assert argv[0] == "--container-image=us-docker.pkg.dev#my-ml-project/train/megatron:latest"
    assert argv[1] == "--container-mounts=/home:/home,/lustre:/lustre"
    assert argv[2:] == ["python3", "-c", "import sys; print(sys.argv)", *HOSTILE]
    environ = dict(e.split("=", 1) for e in
                   (tmp_path / "environ").read_bytes().decode().split("\0") if "=" in e)
    for i, value in enumerate(HOSTILE):
        assert environ[f"V{i}"] == value
    assert environ["FROM_JOB_ENV"] == "1"
    assert environ["MASTER_ADDR"] == "node-0" and environ["MASTER_PORT"] == "29500"


def _startup_harness(tmp_path: Path, tf: str, mldiag: dict, node_sets: list[dict]) -> dict:
    """Evaluate the module's own ``startup_scripts`` expression with Terraform (no provider
    needed) and return id -> rendered script."""
    main = (MODULE / "main.tf").read_text()
    m = re.search(r"^  startup_scripts = \{\n.*?^  \}\n", main, re.S | re.M)
    assert m, "startup_scripts local not found in the module"
    work = tmp_path / "tf"
    (work / "templates").mkdir(parents=True)
    shutil.copy(MODULE / "templates" / "nodeset-startup.sh.tftpl", work / "templates")
    (work / "main.tf").write_text(
        'variable "mldiag" {\n  type = any\n}\n\nvariable "node_sets" {\n  type = any\n}\n\n'
        "locals {\n" + m.group(0) + "}\n\n"
        'output "scripts" {\n  value = local.startup_scripts\n}\n')
    (work / "vars.tfvars.json").write_text(json.dumps({"mldiag": mldiag,
                                                       "node_sets": node_sets}))
    env = {**os.environ, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    for argv in ([tf, "init", "-input=false", "-no-color"],
                 [tf, "apply", "-auto-approve", "-input=false", "-no-color",
                  "-var-file=vars.tfvars.json"]):
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=120,
                              env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    out = subprocess.run([tf, "output", "-json", "scripts"], cwd=work, capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.terraform  # runs terraform init/apply (the fast lane leaves it out)
def test_node_startup_script_keeps_values_inert(tmp_path: Path) -> None:
    tf = terraform_binary()
    if tf is None:
        return  # explicitly allowed by MLDIAG_ALLOW_NO_TERRAFORM=1
    evil = "x'$(touch pwned)`touch pwned`${HOME}%{ if true }\"\\\n;touch pwned"
    user = ("#!/bin/bash\nprintf '%s' \"ran $1\" > user-ran\n# "
            + evil.replace("\n", "\n# ") + "\n")
    scripts = _startup_harness(tmp_path, tf, mldiag={
        "enabled": False, "sdk_package": evil, "pip_index_url": None,
        "profiles_gcs_path": "gs://bucket/" + evil, "mlrun_region": evil,
    }, node_sets=[{"id": "gpu", "startup_script": user}, {"id": "cpu", "startup_script": None}])
    gpu, cpu = scripts["gpu"], scripts["cpu"]
    assert gpu.startswith("#!/bin/bash\n")
    assert base64.b64encode(user.encode()).decode() in gpu
    assert "user-startup.sh" not in cpu and "pip" not in cpu.split("cat >")[0]
    for script in (gpu, cpu):
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    # Run it for real, with its fixed paths moved into the test directory.
    root = tmp_path / "node"
    root.mkdir()
    script = gpu.replace("/opt/mldiag", str(root / "opt")).replace(
        "/var/log/mldiag-startup.log", str(root / "startup.log"))
    (root / "startup.sh").write_text(script)
    proc = subprocess.run(["bash", "startup.sh"], cwd=root, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not list(tmp_path.rglob("pwned"))
    assert (root / "opt" / "profiles_gcs_path").read_text() == "gs://bucket/" + evil
    assert (root / "opt" / "mlrun_region").read_text() == evil
    assert (root / "opt" / "user-startup.sh").read_text() == user
    assert (root / "user-ran").read_text() == "ran "
    # The job environment: one run id per job, the same on every host.
    job_env = (root / "opt" / "job-env.sh").read_text().replace("/opt/mldiag",
                                                                 str(root / "opt"))
    (root / "job-env.sh").write_text(job_env)
    shown = ('. ./job-env.sh; printf "%s\\n" "$RUN_WORKLOAD_ID" "$SLURM_JOB_START_TIME" '
             '"$MLDIAG_RUN_NAME" "$MLDIAG_VENV"; printf "%s" "$MLDIAG_MLRUN_REGION" > region')
    base_env = {"PATH": os.environ["PATH"], "TZ": "UTC"}
    given = subprocess.run(["bash", "--norc", "-c", shown], cwd=root, capture_output=True,
                           text=True, timeout=30, env={
                               **base_env, "SLURM_JOB_ID": "42", "SLURM_CLUSTER_NAME": "c1",
                               "SLURM_JOB_NAME": "pretrain",
                               "SLURM_JOB_START_TIME": "1700000000"})
    assert given.stdout.splitlines() == ["c1-42-1700000000", "1700000000", "pretrain-42",
                                         str(root / "opt" / "venv")]
    assert (root / "region").read_text() == evil
    # Without SLURM_JOB_START_TIME (older Slurm): asked from squeue, as epoch seconds.
    fake = root / "bin"
    fake.mkdir()
    (fake / "squeue").write_text("#!/bin/sh\necho 2024-01-01T00:00:00\n")
    (fake / "squeue").chmod(0o755)
    asked = subprocess.run(["bash", "--norc", "-c", shown], cwd=root, capture_output=True,
                           text=True, timeout=30, env={
                               **base_env, "PATH": f"{fake}:{os.environ['PATH']}",
                               "SLURM_JOB_ID": "7", "SLURM_CLUSTER_NAME": "c1"})
    assert asked.stdout.splitlines()[:2] == ["c1-7-1704067200", "1704067200"]


@pytest.mark.terraform  # runs terraform init/apply (the fast lane leaves it out)
def test_node_startup_script_with_the_sdk_install_parses(tmp_path: Path) -> None:
    tf = terraform_binary()
    if tf is None:
        return
    pkg = "google-cloud-mldiagnostics==1.0.10; $(touch pwned)"
    scripts = _startup_harness(tmp_path, tf, mldiag={
        "enabled": True, "sdk_package": pkg, "pip_index_url": "https://mirror.example/simple",
        "profiles_gcs_path": "gs://b", "mlrun_region": "us-east5",
    }, node_sets=[{"id": "cpu", "startup_script": None}])
    script = scripts["cpu"]
    assert "install_sdk()" in script and "pip\" install" in script
    assert base64.b64encode(pkg.encode()).decode() in script and pkg not in script
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
