"""``mldiag-provision catalog [tpu|gpu] [VERSION] [-O json] [--topology T --diagram
[FILE.svg]]``: the accelerators the tool knows, each fact with its source.

Without VERSION, one row per TPU version (accelerator label, dimensions, Autopilot minimum,
machine types); with VERSION, that version's topologies resolved to machine types and VMs,
the allowed shapes, the large-3D rule, GKE minimums and zones; with ``--topology`` and
``--diagram``, a drawing of one slice (text, or SVG into a file). ``catalog gpu`` is
:mod:`mldiag_provision.cli.catalog_gpu`. Every figure is read from the fact store
(``catalog/data/tpu.yaml``); this module only lays it out. Errors: an unknown version or a
bad ``--topology`` is a usage error (exit 2) with a hint.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP
from mldiag_provision.console import Console
from mldiag_provision.errors import UsageError

if TYPE_CHECKING:
    from mldiag_provision.catalog.tpu import Catalog, TpuVersion

NAME = "catalog"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME],
                       description="List the TPU versions (or, with gpu, the GPUs) the tool "
                                   "knows, each fact with its source; with VERSION, explain "
                                   "one version's topologies, machine types and GKE minimums; "
                                   "with --topology and --diagram, draw a slice.")
    p.add_argument("family", nargs="?", choices=("tpu", "gpu"), default="tpu",
                   help="the accelerators to list or explain (default tpu)")
    p.add_argument("version", nargs="?", metavar="VERSION",
                   help="a TPU version (e.g. v5e or tpu-v6e-slice) or, after gpu, a GPU "
                        "(e.g. h200-141gb or nvidia-l4)")
    p.add_argument("--output", "-O", choices=("text", "json"), default="text", help=OUTPUT_HELP)
    p.add_argument("--topology", metavar="T", help="with --diagram: the slice to draw, e.g. 2x2x4")
    p.add_argument("--chips-per-vm", type=int, metavar="N",
                   help="with --diagram: chips per VM where a topology has two machine types")
    p.add_argument("--slices", type=int, default=1, metavar="N",
                   help="with --diagram: a multislice of N slices over DCN")
    p.add_argument("--diagram", nargs="?", const="-", metavar="FILE.svg",
                   help="draw the slice (VMs, chips, ICI, wrap, DCN): as text, or as SVG "
                        "into FILE.svg")


def run(args: argparse.Namespace, out: Console) -> int:
    if args.family == "gpu":
        from mldiag_provision.cli import catalog_gpu

        return catalog_gpu.run(args, out)
    from mldiag_provision.catalog.tpu import load_catalog

    catalog = load_catalog()
    if args.version is None:
        return _list_versions(out, catalog, args.output)
    v = catalog.version(args.version)
    if v is None:
        raise _unknown_version(args.version, catalog)
    if args.diagram is not None or args.topology:
        return _catalog_diagram(args, out, catalog, v)
    shapes = _shapes(catalog, v)
    if args.output == "json":
        out.print(json.dumps(_explained(catalog, v, shapes), indent=2))
    else:
        _print_explained(out, catalog, v, shapes)
    return 0


# --- every version ---------------------------------------------------------------------------

def _list_versions(out: Console, catalog: Catalog, output: str) -> int:
    """``catalog [tpu]``: one row per TPU version (text table, or a JSON list)."""
    rows: list[dict[str, Any]] = [
        {"version": v.key, "name": v.display_name, "accelerator": v.accelerator,
         "dimensions": v.dimensions, "machineTypes": sorted(v.machine_types),
         "autopilotMinGke": str(v.autopilot_min) if v.autopilot_min else None}
        for v in catalog.versions.values()]
    if output == "json":
        out.print(json.dumps(rows, indent=2))
        return 0
    out.print(f"{'VERSION':<8} {'ACCELERATOR LABEL':<22} {'DIM':<4} {'AUTOPILOT >=':<20} "
              "MACHINE TYPES")
    for r in rows:
        out.print(f"{r['version']:<8} {r['accelerator']:<22} {str(r['dimensions']) + 'D':<4} "
                  f"{r['autopilotMinGke'] or '-':<20} {', '.join(r['machineTypes'])}")
    out.print("\nmldiag-provision catalog tpu VERSION  explains one version's topologies"
              "\nmldiag-provision catalog gpu          lists the GPUs")
    return 0


def _unknown_version(name: str, catalog: Catalog) -> UsageError:
    """The usage error for a VERSION the TPU catalog does not know: a GPU's name points at
    ``catalog gpu``, anything else gets the closest known version (or the list)."""
    from mldiag_provision.catalog.gpu import load_gpu_catalog
    from mldiag_provision.suggest import suggest

    gpu = load_gpu_catalog().gpu(name)
    if gpu is not None:
        return UsageError(f"'{name}' is a GPU, not a TPU version",
                          hint=f"mldiag-provision catalog gpu {gpu.key}")
    return UsageError(f"unknown TPU version '{name}'",
                      hint=suggest(name, catalog.version_names())
                      or "known: " + ", ".join(sorted(catalog.versions)))


# --- one version -----------------------------------------------------------------------------

def _shapes(catalog: Catalog, v: TpuVersion) -> list[dict[str, Any]]:
    """Each (topology, machine type) of ``v`` resolved: chips, chips per VM, VMs, and
    single- or multi-host."""
    shapes = []
    for topo, names in v.topologies.items():
        for name in names:
            s = catalog.resolve(v.key, topo, v.machine_types[name].chips_per_vm)
            shapes.append({"topology": topo, "chips": s.chips, "machineType": name,
                           "chipsPerVm": s.chips_per_vm, "vms": s.vms,
                           "hosts": "multi-host" if s.multi_host else "single-host"})
    return shapes


def _explained(catalog: Catalog, v: TpuVersion,
               shapes: list[dict[str, Any]]) -> dict[str, Any]:
    """``catalog tpu VERSION -O json``: the version, its shapes and rules as data."""
    lg = v.large3d
    return {"version": v.key, "accelerator": v.accelerator,
            "aliases": list(v.aliases), "dimensions": v.dimensions,
            "topologies": shapes, "allowed": catalog.describe_allowed(v),
            "large3d": ({"multipleOf": lg.multiple_of,
                         "nondecreasing": lg.nondecreasing,
                         "maxTopology": "x".join(map(str, lg.max_dims)),
                         "minChips": lg.min_chips,
                         "machineType": lg.machine_type}
                        if lg else None),
            "zones": list(v.zones), "source": catalog.source_url(v.source)}


def _print_explained(out: Console, catalog: Catalog, v: TpuVersion,
                     shapes: list[dict[str, Any]]) -> None:
    """``catalog tpu VERSION``: title and label, source, GKE minimums, the shapes table,
    the large-3D rule, the topologies with two machine types, the zones."""
    # the display name may carry the key already: "TPU Trillium (v6e)", "Ironwood (TPU7x)"
    title = (v.display_name if v.key.lower() in v.display_name.lower()
             else f"{v.display_name} ({v.key})")
    out.print(out.style(title, "bold") +
              f"  nodeSelector cloud.google.com/gke-tpu-accelerator: {v.accelerator}")
    out.print(f"source: {catalog.source_url(v.source)}")
    if v.autopilot_min or v.standard_min:
        out.print(f"GKE minimum: Autopilot {v.autopilot_min or '-'}, Standard "
                  f"{v.standard_min or '-'}")
    out.print(f"\n{'TOPOLOGY':<10} {'CHIPS':>5}  {'MACHINE TYPE':<20} {'CHIPS/VM':>8} "
              f"{'VMS':>4}  SLICE")
    for row in shapes:
        out.print(f"{row['topology']:<10} {row['chips']:>5}  {row['machineType']:<20} "
                  f"{row['chipsPerVm']:>8} {row['vms']:>4}  {row['hosts']}")
    if v.large3d:
        lg = v.large3d
        out.print(f"\nabove 64 chips: AxBxC with every dimension a multiple of {lg.multiple_of}, "
                  f"A <= B <= C, up to {'x'.join(map(str, lg.max_dims))} ({lg.machine_type})")
    ambiguous = [t for t, n in v.topologies.items() if len(n) > 1]
    if ambiguous:
        out.print(f"\n{', '.join(ambiguous)}: two machine types; set chipsPerVm in the recipe "
                  "(google.com/tpu per pod) to choose")
    if v.zones:
        out.print(f"zones: {', '.join(v.zones)}")


# --- a drawing -------------------------------------------------------------------------------

def _catalog_diagram(args: argparse.Namespace, out: Console, catalog: Catalog,
                     v: TpuVersion) -> int:
    """``catalog tpu VERSION --topology T --diagram [FILE.svg]``: text on the terminal, or
    the SVG written to FILE.svg."""
    from pathlib import Path

    from mldiag_provision.catalog.tpu import ShapeError
    from mldiag_provision.render import topology as pictures

    if not args.topology or args.diagram is None:
        raise UsageError("--topology and --diagram go together",
                         hint=f"mldiag-provision catalog tpu {v.key} --topology T --diagram "
                              "[FILE.svg]")
    if args.slices < 1:
        raise UsageError(f"--slices {args.slices}: a multislice has at least 1 slice")
    try:
        shape = catalog.resolve(v.key, args.topology, args.chips_per_vm)
    except ShapeError as exc:
        field = {"chipsPerVm": "--chips-per-vm", "topology": "--topology"}.get(exc.field,
                                                                            exc.field)
        raise UsageError(f"{field}: {exc.message}",
                         hint=(f"allowed: {exc.expected}" if exc.expected else exc.hint)
                         ) from None
    if shape.chips * args.slices > pictures.MAX_DIAGRAM_CHIPS:  # render summarizes them
        raise UsageError(f"{shape.chips * args.slices} chips are too many to draw "
                         f"(at most {pictures.MAX_DIAGRAM_CHIPS})",
                         hint="draw a smaller topology")
    drawing = pictures.tpu_drawing(f"{v.key}-{args.topology}", v.key, v.dimensions,
                                   shape.topology, shape.chips_per_vm,
                                   shape.machine_type.name, args.slices)
    if args.diagram == "-":
        out.print(pictures.text([drawing]).rstrip("\n"))
        return 0
    path = Path(args.diagram)
    try:
        path.write_text(pictures.svg([drawing]), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}",
                         hint="give a writable FILE.svg") from None
    out.print(f"wrote {path}: {drawing.chips * drawing.count} chips on "
              f"{drawing.vms * drawing.count} VMs")
    return 0
