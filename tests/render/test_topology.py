"""Pictures of the slices: `catalog tpu VERSION --topology T --diagram [FILE.svg]` and the
`topology.svg` + README section that `render` writes into every stack.

Each SVG is parsed with xml.etree (well-formed) and its elements are counted against the
catalog or the stack's plan: one ``chip`` per chip (or GPU), one ``vm`` box per VM, one
``slice`` group per slice of a multislice, a ``dcn`` group exactly for multislices.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mldiag_provision.render import topology as pictures

SVG = "{http://www.w3.org/2000/svg}"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "stacks"
STACKS = sorted(p for p in GOLDEN.iterdir() if p.is_dir())


def classes(root: ET.Element, name: str) -> list[ET.Element]:
    return [e for e in root.iter() if (e.get("class") or "").split() == [name]]


def test_every_stack_holds_its_topology_picture() -> None:
    assert len(STACKS) >= 10
    for stack in STACKS:
        plan = json.loads((stack / ".mldiag" / "plan.json").read_text())
        root = ET.parse(stack / "topology.svg").getroot()  # well-formed, or this raises
        assert root.tag == f"{SVG}svg", stack.name
        slices = plan["slices"]
        for s in slices:  # a GPU slice on Autopilot: the GPUs its workloads ask per pod
            if s["chips"] is None:
                s["chips"] = s["vms"] * max(w["chips_per_pod"] for w in plan["workloads"]
                                            if w["slice"] == s["name"])
        assert len(classes(root, "chip")) == sum(s["chips"] * s["count"] for s in slices), (
            stack.name)
        assert len(classes(root, "vm")) == sum(s["vms"] * s["count"] for s in slices)
        assert len(classes(root, "slice")) == sum(s["count"] for s in slices)
        assert len(classes(root, "dcn")) == sum(1 for s in slices if s["count"] > 1)
        readme = (stack / "README.md").read_text()
        assert "![the slices of this stack](topology.svg)" in readme
        for s in slices:
            assert f"slice {s['name']}: " in readme


def test_every_kubernetes_stack_holds_the_smoke_workload() -> None:
    program = (Path(pictures.__file__).parents[1] / "smoke" / "program.py").read_text()
    for stack in STACKS:
        plan = json.loads((stack / ".mldiag" / "plan.json").read_text())
        if plan.get("agents") is None:
            assert not (stack / "k8s" / "smoke").exists()
            if plan.get("slurm"):
                for s in plan["slices"]:
                    _check_smoke_sbatch(stack / "slurm" / f"mldiag-smoke-{s['name']}.sbatch",
                                        program, s)
            continue
        import yaml

        [cm] = list(yaml.safe_load_all((stack / "k8s/smoke/00-program.yaml").read_text()))
        assert cm["kind"] == "ConfigMap" and cm["data"]["program.py"] == program
        for s in plan["slices"]:
            [js] = list(yaml.safe_load_all((stack / f"k8s/smoke/{s['name']}.yaml").read_text()))
            [rjob] = js["spec"]["replicatedJobs"]
            assert rjob["replicas"] == s["count"]
            assert rjob["template"]["spec"]["parallelism"] == s["vms"]


def _check_smoke_sbatch(path: Path, program: str, s: dict) -> None:
    """The Slurm smoke script is valid bash, asks for the slice's nodes, and its heredoc
    gives back the shipped program (what `srun` exports to every task)."""
    import subprocess

    text = path.read_text()
    assert f"#SBATCH --nodes={s['vms']}" in text and "--distributed" in text
    subprocess.run(["bash", "-n", str(path)], check=True)
    start = text.index("MLDIAG_SMOKE_PROGRAM=$(")
    end = text.index("export MLDIAG_SMOKE_PROGRAM")
    got = subprocess.run(["bash", "-c", text[start:end] + 'printf %s "$MLDIAG_SMOKE_PROGRAM"'],
                         capture_output=True, text=True, check=True).stdout
    assert got == program.rstrip("\n")  # $(...) drops the trailing newline only


def _catalog_shapes(catalog) -> list[tuple[str, str, int, int, int]]:
    rows = []
    for v in catalog.versions.values():
        for topo, names in v.topologies.items():
            for name in names:
                s = catalog.resolve(v.key, topo, v.machine_types[name].chips_per_vm)
                rows.append((v.key, topo, s.chips_per_vm, s.chips, s.vms))
    return rows


def test_catalog_diagram_svg_counts_match_the_catalog(catalog, cli, tmp_path: Path) -> None:
    rows = _catalog_shapes(catalog)
    assert len(rows) > 20
    for version, topo, per_vm, chips, vms in rows:
        path = tmp_path / f"{version}-{topo}-{per_vm}.svg"
        code, out, err = cli("catalog", "tpu", version, "--topology", topo, "--chips-per-vm",
                             str(per_vm), "--diagram", str(path))
        assert code == 0, err
        assert f"{chips} chips on {vms} VMs" in out
        root = ET.parse(path).getroot()
        assert len(classes(root, "chip")) == chips, (version, topo)
        assert len(classes(root, "vm")) == vms, (version, topo)
        # every VM box holds exactly chips_per_vm chips
        per = {}
        for chip in classes(root, "chip"):
            per[chip.get("data-vm")] = per.get(chip.get("data-vm"), 0) + 1
        assert set(per.values()) == {per_vm}, (version, topo, per)


def test_catalog_diagram_text_and_multislice(cli) -> None:
    code, out, _ = cli("catalog", "tpu", "v6e", "--topology", "4x4", "--slices", "2",
                       "--diagram")
    assert code == 0
    assert "16 chips on 4 VM(s)" in out and "2 slices over DCN = 32 chips" in out
    assert "DCN: v6e-4x4[0] <-> v6e-4x4[1]" in out
    assert out.count(" vm3") == 2 * 4  # VM 3 holds 4 chips, drawn in both slices
    code, out, _ = cli("catalog", "tpu", "v4", "--topology", "2x2x4", "--diagram")
    assert code == 0 and "z=3" in out and "x 2, y 2, z 4" in out


def test_wraparound_only_on_whole_cubes_and_full_pods() -> None:
    cube = ET.fromstring(pictures.svg([pictures.tpu_drawing("c", "v4", 3, "4x4x4", 4, "m")]))
    assert {e.get("data-axis") for e in classes(cube, "wrap")} == {"x", "y"}
    small = ET.fromstring(pictures.svg([pictures.tpu_drawing("s", "v4", 3, "2x2x4", 4, "m")]))
    assert classes(small, "wrap") == []
    pod = ET.fromstring(pictures.svg([pictures.tpu_drawing("p", "v5e", 2, "16x16", 4, "m")]))
    assert classes(pod, "wrap") and len(classes(pod, "chip")) == 256
    part = ET.fromstring(pictures.svg([pictures.tpu_drawing("q", "v5e", 2, "8x16", 4, "m")]))
    assert classes(part, "wrap") == []


def test_names_are_escaped_in_the_svg() -> None:
    d = pictures.tpu_drawing('a<b&"c', "v5e", 2, "2x2", 4, "m<t>")
    root = ET.fromstring(pictures.svg([d], desc="x -- <y>"))
    assert any('a<b&"c' in (e.text or "") for e in root.iter())


@pytest.mark.parametrize("argv, message", [
    (["v5e", "--topology", "2x4", "--diagram"], "--chips-per-vm"),
    (["v4", "--topology", "2x2x3", "--diagram"], "--topology"),
    (["v4", "--diagram"], "--topology and --diagram go together"),
    (["v4", "--topology", "2x2x4", "--slices", "0", "--diagram"], "--slices 0"),
])
def test_catalog_diagram_usage_errors(cli, argv: list[str], message: str) -> None:
    code, _, err = cli("catalog", "tpu", *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_escape_is_saxutils_escape() -> None:
    """render.topology's own XML escape (kept off xml.sax.saxutils' imports) writes the same."""
    import random
    from xml.sax.saxutils import escape as sax_escape

    from mldiag_provision.render.topology import escape

    rng = random.Random(16)
    for _ in range(2000):
        s = "".join(rng.choice("&<>\"'ab ;#") for _ in range(rng.randint(0, 12)))
        assert escape(s) == sax_escape(s), s
        assert escape(s, {'"': "&quot;"}) == sax_escape(s, {'"': "&quot;"}), s


def test_the_slice_lookup_keeps_one_plan_alive_not_every_plan() -> None:
    """render/k8s.py looks slices up by name through a table of the last slices tuple: a
    table per tuple, keyed by id(), kept every plan of a validate batch alive (issue 16)."""
    import gc
    import weakref

    from mldiag_provision.render import k8s

    class Slice:
        def __init__(self, name: str) -> None:
            self.name = name

    class Slices(tuple):  # a tuple subclass: not kept (only exact tuples are immutable)
        pass

    first = (Slice("a"), Slice("b"))
    ref = weakref.ref(first[1])
    assert k8s._slice_named(first, "b") is first[1]
    second = (Slice("a"),)
    assert k8s._slice_named(second, "a") is second[0]
    assert len(k8s._LAST_SLICES) == 1 and k8s._LAST_SLICES[0][0] is second
    del first
    gc.collect()
    assert ref() is None  # the first plan's slices are no longer held
    odd = Slices([Slice("x")])
    assert k8s._slice_named(odd, "x") is odd[0] and k8s._LAST_SLICES[0][0] is second


def _huge_recipe(tmp_path: Path, topology: str, count: int) -> Path:
    """The bundled v5p recipe at ``topology``, ``count`` slices (a valid, very large stack)."""
    import yaml

    src = GOLDEN.parents[2] / "recipes" / "tpu-v5p-2x2x4-standard-reservation.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["spec"]["slices"][0].update(topology=topology, count=count)
    out = tmp_path / f"v5p-{topology}-x{count}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def test_a_huge_multislice_renders_a_summary_not_a_huge_picture(cli, tmp_path: Path) -> None:
    """Issue 31: 16 slices of v5p 16x16x24 (98,304 chips) made a topology.svg of tens of MB;
    above MAX_DIAGRAM_CHIPS the picture and the README's text diagram are a summary."""
    recipe = _huge_recipe(tmp_path, "16x16x24", 16)
    work = tmp_path / "stack"
    code, out, err = cli("render", str(recipe), "-o", str(work))
    assert code == 0, out + err
    svg = (work / "topology.svg").read_bytes()
    readme = (work / "README.md").read_text()
    assert len(svg) < 20_000 and len(readme) < 50_000, (len(svg), len(readme))
    assert sum(p.stat().st_size for p in work.rglob("*") if p.is_file()) < 3_000_000
    root = ET.fromstring(svg.split(b"-->", 1)[1])
    assert classes(root, "chip") == [] and len(classes(root, "summary")) == 1
    assert "98,304 chips are not drawn one by one (at most 4,096 are)" in readme
    assert "DCN: v5p-16[0] <-> v5p-16[1] <-> ... <-> v5p-16[15] (16 slices)" in readme


def test_the_cap_has_one_owner_and_the_largest_drawn_slice_stays_small() -> None:
    from mldiag_provision.cli import _main

    assert not hasattr(_main, "MAX_DIAGRAM_CHIPS")  # catalog --diagram uses pictures' cap
    full = pictures.tpu_drawing("big", "v5p", 3, "16x16x16", 4, "ct5p-hightpu-4t")
    assert full.chips == pictures.MAX_DIAGRAM_CHIPS and pictures.summarized(full) is None
    svg = pictures.svg([full])
    assert len(svg) < 3_000_000
    assert len(classes(ET.fromstring(svg), "chip")) == 4096
    over = pictures.tpu_drawing("big", "v5p", 3, "16x16x16", 4, "ct5p-hightpu-4t", 2)
    assert pictures.summarized(over) is not None
    assert len(pictures.svg([over])) < 5_000


def test_text_diagram_of_v5p_16x16x16_stays_narrow() -> None:
    """It was 1,905 columns wide: the z layers now go in bands within MAX_TEXT_COLUMNS, and
    every chip is still drawn (one VM label per chip)."""
    d = pictures.tpu_drawing("big", "v5p", 3, "16x16x16", 4, "ct5p-hightpu-4t")
    lines = pictures.text([d]).splitlines()
    assert max(len(line) for line in lines) <= pictures.MAX_TEXT_COLUMNS
    cells = [tok for line in lines if line.lstrip().startswith("y") for tok in line.split()
             if tok.startswith("vm")]
    assert len(cells) == 4096
    assert sum(line.split().count(f"z={z}") for line in lines for z in range(16)) == 16
