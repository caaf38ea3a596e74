"""Pictures of a slice: the VMs as boxes holding their chips, the ICI dimensions and whether
they wrap around, and for a multislice the slices joined by DCN. SVG (for a browser, written
into each stack as ``topology.svg``) and plain text (for the terminal and the stack README),
both drawn from the same :class:`Drawing`, with no dependency beyond the standard library.

Facts used (each with its source; "unverified" where it could not be confirmed):

* Chips of one VM form a block of the topology: 1 chip 1x1, 4 chips 2x2 (2x2x1 on 3-D
  versions), 8 chips 2x4 (v5e/v6e single-host 2x4). GKE's multi-host examples place a v4
  2x2x4 slice on four 4-chip VMs and a v5e 2x4 on two 4-chip VMs
  (https://cloud.google.com/kubernetes-engine/docs/concepts/tpus); the block's orientation
  inside the slice is our drawing convention (unverified).
* Wraparound (torus) on 3-D versions (v4, v5p, TPU7x): a slice made of whole 4x4x4 cubes
  (every dimension a multiple of 4) is a 3-D torus, smaller ones a mesh
  (https://cloud.google.com/tpu/docs/v4 "3D mesh and 3D torus",
  https://cloud.google.com/tpu/docs/v5p "full cube shapes"; confidence M).
* Wraparound on 2-D versions (v5e, v6e): the 256-chip pod is a 2-D torus
  (https://cloud.google.com/tpu/docs/v5e "Interconnect topology 2D Torus"); we draw wrap
  only on the full 16x16 pod and a mesh below it (unverified for sub-slices).
* Multislice: slices talk over the data-center network (DCN), not ICI
  (https://cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mldiag_provision.plan.types import SlicePlan, StackPlan

AXES = ("x", "y", "z")


def escape(data: str, entities: dict[str, str] | None = None) -> str:
    """XML text: ``&``, ``>``, ``<`` as entities, then each of ``entities`` (what
    ``xml.sax.saxutils.escape`` does; that module imports ``urllib.request`` and with it
    ``http.client``, ``email`` and ``ssl``: ~25 ms of every render's start, issue 16)."""
    data = data.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
    for key, value in (entities or {}).items():
        data = data.replace(key, value)
    return data


@dataclass(frozen=True)
class Drawing:
    """What a picture shows.

    ``dims``: the topology (e.g. ``(2, 2, 4)``; GPU slices ``(gpus_per_vm, vms)``);
    ``block``: the chips of one VM as a block of the topology; ``wrap``: per dimension;
    ``count``: slices (multislice over DCN when > 1); ``kind``: ``tpu`` or ``gpu``.
    """

    name: str
    title: str
    kind: str
    dims: tuple[int, ...]
    block: tuple[int, ...]
    wrap: tuple[bool, ...]
    count: int
    machine_type: str | None
    chips_per_vm: int
    wrap_note: str

    @property
    def chips(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def vms(self) -> int:
        return self.chips // max(self.chips_per_vm, 1)

    def vm_of(self, coord: tuple[int, ...]) -> int:
        """The VM index (0-based, x fastest) holding the chip at ``coord``."""
        idx, stride = 0, 1
        for c, b, d in zip(coord, self.block, self.dims, strict=True):
            idx += (c // b) * stride
            stride *= d // b
        return idx


def _block(dims: tuple[int, ...], chips_per_vm: int) -> tuple[int, ...]:
    """The chips of one VM as a block of ``dims`` (see the module docstring)."""
    want = {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 2, 1), 8: (2, 4, 1)}.get(chips_per_vm)
    if want is not None:
        block = want[:len(dims)]
        if all(d % b == 0 for d, b in zip(dims, block, strict=True)):
            return block
    # any other split: whole rows of x first (unverified layout)
    block_l = [1] * len(dims)
    left = chips_per_vm
    for i, d in enumerate(dims):
        take = min(d, left)
        while take > 1 and (d % take or left % take):
            take -= 1
        block_l[i] = take
        left //= take
    return tuple(block_l)


def tpu_wrap(dimensions: int, dims: tuple[int, ...]) -> tuple[tuple[bool, ...], str]:
    """Which dimensions wrap around, and the one-line reason (see the module docstring)."""
    if dimensions == 3:
        torus = all(d % 4 == 0 for d in dims)
        return ((torus,) * len(dims),
                "3-D torus: whole 4x4x4 cubes" if torus
                else "mesh: no wraparound below whole 4x4x4 cubes")
    torus = tuple(dims) == (16, 16)
    return ((torus,) * len(dims), "2-D torus: the full 16x16 pod" if torus
            else "mesh: no wraparound below the full 16x16 pod (unverified)")


def tpu_drawing(name: str, version: str, dimensions: int, topology: str, chips_per_vm: int,
                machine_type: str | None, count: int = 1) -> Drawing:
    """A TPU slice (``topology`` like ``2x2x4``) on VMs of ``chips_per_vm`` chips."""
    dims = tuple(int(d) for d in topology.split("x"))
    wrap, note = tpu_wrap(dimensions, dims)
    title = f"TPU {version} {topology}"
    return Drawing(name=name, title=title, kind="tpu", dims=dims,
                   block=_block(dims, chips_per_vm), wrap=wrap, count=count,
                   machine_type=machine_type, chips_per_vm=chips_per_vm, wrap_note=note)


def gpu_drawing(name: str, gpu: str, gpus_per_vm: int, vms: int,
                machine_type: str | None) -> Drawing:
    """GPU VMs: each a row of its GPUs (NVLink inside the VM, the network between VMs)."""
    return Drawing(name=name, title=f"{gpu} GPUs", kind="gpu", dims=(gpus_per_vm, vms),
                   block=(gpus_per_vm, 1), wrap=(False, False), count=1,
                   machine_type=machine_type, chips_per_vm=gpus_per_vm,
                   wrap_note="GPUs of a VM share NVLink; VMs talk over the network")


def drawing_for(sp: SlicePlan, plan: StackPlan | None = None) -> Drawing:
    """The drawing of a planned slice (a topology of three numbers is a 3-D version); GPUs
    per VM as :func:`mldiag_provision.plan.smoke.units_per_vm` counts them."""
    from mldiag_provision.plan.smoke import units_per_vm

    if sp.kind == "tpu" and sp.topology:
        dims = len(sp.topology.split("x"))
        return tpu_drawing(sp.name, sp.accelerator_type, dims, sp.topology,
                           sp.chips_per_vm or 1, sp.machine_type, sp.count)
    return gpu_drawing(sp.name, sp.accelerator_type, units_per_vm(sp, plan), sp.vms,
                       sp.machine_type)


def _summary(d: Drawing) -> str:
    unit = "GPUs" if d.kind == "gpu" else "chips"
    machine = d.machine_type or "machine chosen by Autopilot"
    text = (f"{d.title}: {d.chips} {unit} on {d.vms} VM(s) x {machine} "
            f"({d.chips_per_vm} {unit} each)")
    if d.count > 1:
        text += f"; {d.count} slices over DCN = {d.chips * d.count} {unit}"
    return text


def _coords(d: Drawing, layer: int) -> list[list[tuple[int, ...]]]:
    """Rows (y) of coordinates (x) of one z layer."""
    xs, ys = d.dims[0], d.dims[1] if len(d.dims) > 1 else 1
    rows = []
    for y in range(ys):
        row = []
        for x in range(xs):
            c: tuple[int, ...] = (x, y, layer)[:len(d.dims)] if len(d.dims) > 1 else (x,)
            row.append(c)
        rows.append(row)
    return rows


# Above these sizes a picture is summarized, not drawn chip by chip: more chips make an
# unreadable picture and a file of hundreds of MB (issue 31: a very large multislice gave a
# 138 MB topology.svg); the largest GKE v4 slice is 3,072 chips. A text diagram wider than
# MAX_TEXT_COLUMNS puts its z layers in bands, one under the other.
MAX_DIAGRAM_CHIPS = 4096
MAX_TEXT_COLUMNS = 160
_DCN_NAMED = 8  # a longer multislice names its first and last slices only


def summarized(d: Drawing) -> str | None:
    """Why ``d`` is drawn as a summary (its chips over every slice of a multislice above
    :data:`MAX_DIAGRAM_CHIPS`), or None when it is drawn chip by chip."""
    total = d.chips * d.count
    if total > MAX_DIAGRAM_CHIPS:
        unit = "GPUs" if d.kind == "gpu" else "chips"
        return (f"{total:,} {unit} are not drawn one by one (at most "
                f"{MAX_DIAGRAM_CHIPS:,} are)")
    return None


def _dcn(d: Drawing) -> str:
    """The DCN line of a multislice: every slice named, or the first and last of many."""
    if d.count <= _DCN_NAMED:
        return " <-> ".join(f"{d.name}[{s}]" for s in range(d.count))
    return f"{d.name}[0] <-> {d.name}[1] <-> ... <-> {d.name}[{d.count - 1}] ({d.count} slices)"


def _bands(layers: int, layer_w: int, sep: int) -> list[range]:
    """The z layers in bands no wider than :data:`MAX_TEXT_COLUMNS` (at least one each)."""
    per = max(1, (MAX_TEXT_COLUMNS - 4 + sep) // (layer_w + sep))
    return [range(z, min(z + per, layers)) for z in range(0, layers, per)]


def _text_heading(d: Drawing) -> list[str]:
    """The first two lines of a slice: its summary, and its ICI dimensions with wrap (TPU)
    or how its GPUs talk (GPU)."""
    lines = [f"slice {d.name}: {_summary(d)}"]
    if d.kind == "tpu":
        dims = ", ".join(f"{a} {n}{' (wraps)' if w else ''}"
                         for a, n, w in zip(AXES, d.dims, d.wrap, strict=False))
        lines.append(f"  ICI: {dims}; {d.wrap_note}")
    else:
        lines.append(f"  {d.wrap_note}")
    return lines


def _text_summarized(d: Drawing, reason: str) -> list[str]:
    """A slice too large to draw: why, and what each VM holds (one line), plus the DCN line
    of a multislice."""
    block = "x".join(str(b) for b in d.block)
    lines = [f"  {reason}: VMs vm0..vm{d.vms - 1}"
             + (f", each a {block} block of the topology" if d.kind == "tpu"
                else f", each a row of {d.chips_per_vm} GPUs")
             + (f", in each of {d.count} slices" if d.count > 1 else "")]
    if d.count > 1:
        lines.append("  DCN: " + _dcn(d))
    return lines


def _text_gpu_rows(d: Drawing, width: int) -> list[str]:
    """A GPU slice: one row per VM, its GPUs ``g0``, ``g1``, ... in cells of ``width``."""
    return [f"    vm{vm:<3}" + "".join(f"{'g' + str(g):>{width}}" for g in range(d.dims[0]))
            for vm in range(d.vms)]


def _text_tpu_grid(d: Drawing, width: int) -> list[str]:
    """A TPU slice: per band of z layers (:func:`_bands`) a ``z=`` header (3-D), an x
    header, then one line per y with each chip's VM (``vmN``) in cells of ``width``; the
    layers of a band side by side, three spaces apart."""
    layers = d.dims[2] if len(d.dims) > 2 else 1
    sep = "   "
    grids = [_coords(d, z) for z in range(layers)]
    layer_w = 4 + width * d.dims[0]
    lines: list[str] = []
    for band in _bands(layers, layer_w, len(sep)):
        if layers > 1:
            lines.append("    " + sep.join(f"{'z=' + str(z):<{layer_w}}"
                                           for z in band).rstrip())
        lines.append("    " + sep.join(
            " " * 4 + "".join(f"{'x' + str(x):>{width}}" for x in range(d.dims[0]))
            for _ in band).rstrip())
        for y in range(len(grids[0])):
            lines.append("    " + sep.join(
                f"{'y' + str(y):<4}" + "".join(f"{'vm' + str(d.vm_of(c)):>{width}}"
                                               for c in grids[z][y])
                for z in band).rstrip())
    return lines


def _text_drawn(d: Drawing) -> list[str]:
    """A slice drawn chip by chip: each slice of a multislice (headed ``slice N[s]``), then
    the DCN line between them."""
    width = max(4, len(f"vm{d.vms - 1}") + 1)
    lines: list[str] = []
    for s in range(d.count):
        if d.count > 1:
            lines.append(f"  slice {d.name}[{s}]")
        lines += _text_gpu_rows(d, width) if d.kind == "gpu" else _text_tpu_grid(d, width)
    if d.count > 1:
        lines.append("  DCN: " + _dcn(d))
    return lines


def text(drawings: list[Drawing]) -> str:
    """The slices as text: per slice (and z layer) a grid of chips, each cell the VM
    holding that chip; ICI dimensions with wrap; DCN between the slices of a multislice.
    Lines stay within :data:`MAX_TEXT_COLUMNS` (z layers in bands); a slice above
    :data:`MAX_DIAGRAM_CHIPS` is summarized in a few lines (:func:`summarized`)."""
    out: list[str] = []
    for d in drawings:
        out += _text_heading(d)
        reason = summarized(d)
        out += _text_summarized(d, reason) if reason is not None else _text_drawn(d)
    return "\n".join(out) + "\n"


# --- SVG -----------------------------------------------------------------------------

CELL, GAP, PAD, HEAD = 28, 8, 16, 22
COLOURS = ("#dbeafe", "#dcfce7", "#fef9c3", "#fce7f3", "#ede9fe", "#ffedd5", "#cffafe",
           "#f1f5f9")


def _attr(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


_STYLE = ("text{font-family:sans-serif;font-size:12px;fill:#111827}"
          ".title{font-weight:bold;font-size:13px}.note{fill:#4b5563}"
          ".label{font-weight:bold}.slice-box{fill:#f9fafb;stroke:#9ca3af}"
          ".vm{stroke:#374151;stroke-width:1.5}.chip{fill:#1d4ed8;stroke:#1e3a8a}"
          ".chip-label{fill:#ffffff;font-size:10px;text-anchor:middle}"
          ".ici{stroke:#f59e0b;stroke-width:3}"
          ".wrap{stroke:#dc2626;stroke-width:2;fill:none;stroke-dasharray:4 3}"
          ".dcn line{stroke:#059669;stroke-width:3}")

_Pos = dict[tuple[int, ...], tuple[int, int]]
"""{chip coordinate: (x, y) of its cell's top-left corner, in SVG pixels}."""


class _SliceBox:
    """The pixel sizes of one slice of drawing ``d``: ``layers`` z layers side by side, each
    ``layer_w`` wide; the slice box ``slice_w`` x ``slice_h`` (label and padding included).

    A plain class, not a dataclass: a dataclass on the render path would add its generated
    methods to the start-up code built ahead (:mod:`mldiag_provision.prebuild`)."""

    __slots__ = ("layer_w", "layers", "slice_h", "slice_w")

    def __init__(self, d: Drawing) -> None:
        self.layers = d.dims[2] if len(d.dims) > 2 else 1
        xs, ys = d.dims[0], d.dims[1] if len(d.dims) > 1 else 1
        self.layer_w = xs * CELL + (xs - 1) * GAP + 2 * GAP
        layer_h = ys * CELL + (ys - 1) * GAP + 2 * GAP
        self.slice_w = self.layers * self.layer_w + (self.layers - 1) * 2 * GAP + 2 * PAD
        self.slice_h = layer_h + 2 * PAD + HEAD


def _svg_heading(d: Drawing, y0: int, layers: int) -> tuple[list[str], int]:
    """(the title and note lines of a slice at height ``y0``, the width they need); the
    note gives the ICI dimensions of a TPU slice and how the picture lays out z layers."""
    note = (", ".join(f"{a}={n}" for a, n in zip(AXES, d.dims, strict=False))
            if d.kind == "tpu" else "")
    if layers > 1:
        note += " (z layers left to right)"
    parts = [f'<text x="{PAD}" y="{y0 + 14}" class="title">'
             f'{escape(d.name)}: {escape(_summary(d))}</text>',
             f'<text x="{PAD}" y="{y0 + 32}" class="note">'
             f'{escape(("ICI " + note + "; ") if note else "")}{escape(d.wrap_note)}'
             '</text>']
    return parts, 2 * PAD + 7 * len(f"{d.name}: {_summary(d)}")


def _svg_summary(d: Drawing, reason: str, y0: int) -> tuple[list[str], int, int]:
    """(the ``summary`` box of a slice too large to draw, at height ``y0``; its width
    with padding; the height it takes, padding below included)."""
    lines = [reason, f"{d.vms:,} VM(s) per slice"
             + (f", {d.count} slices over DCN: {_dcn(d)}" if d.count > 1 else "")]
    box_w = 2 * PAD + 7 * max(len(line) for line in lines)
    parts = [f'<g class="summary" data-name="{_attr(d.name)}">'
             f'<rect x="{PAD}" y="{y0}" width="{box_w}" height="{2 * PAD + 36}" '
             'rx="8" class="slice-box"/>']
    parts += [f'<text x="{2 * PAD}" y="{y0 + PAD + 14 + 18 * i}" class="note">'
              f'{escape(line)}</text>' for i, line in enumerate(lines)]
    parts.append("</g>")
    return parts, box_w + 2 * PAD, 2 * PAD + 36 + 2 * PAD


def _chip_positions(d: Drawing, box: _SliceBox, sx: int, y0: int) -> tuple[_Pos, list[str]]:
    """(where each chip of a slice whose box starts at (``sx``, ``y0``) goes, the ``z=``
    label of each layer when there are several); layers left to right, x right, y down."""
    pos: _Pos = {}
    labels: list[str] = []
    for z in range(box.layers):
        lx = sx + PAD + z * (box.layer_w + 2 * GAP)
        ly = y0 + HEAD + PAD
        if box.layers > 1:
            labels.append(f'<text x="{lx}" y="{ly - 4}" class="note">z={z}</text>')
        for row in _coords(d, z):
            for c in row:
                cx = lx + GAP + c[0] * (CELL + GAP)
                cy = ly + GAP + (c[1] if len(c) > 1 else 0) * (CELL + GAP)
                pos[c] = (cx, cy)
    return pos, labels


def _svg_vm_boxes(d: Drawing, pos: _Pos, vm_at: dict[tuple[int, ...], int]) -> list[str]:
    """One ``vm`` rectangle per VM, around its chips' cells, coloured by VM index (drawn
    behind the chips); ``vm_at``: {chip coordinate: its VM}."""
    vm_cells: dict[int, list[tuple[int, int]]] = {}
    for c, (cx, cy) in pos.items():
        vm_cells.setdefault(vm_at[c], []).append((cx, cy))
    parts = []
    for vm in sorted(vm_cells):
        cells = vm_cells[vm]
        x1 = min(c[0] for c in cells) - GAP // 2
        y1 = min(c[1] for c in cells) - GAP // 2
        x2 = max(c[0] for c in cells) + CELL + GAP // 2
        y2 = max(c[1] for c in cells) + CELL + GAP // 2
        parts.append(f'<rect class="vm" data-vm="{vm}" x="{x1}" y="{y1}" '
                     f'width="{x2 - x1}" height="{y2 - y1}" rx="5" '
                     f'fill="{COLOURS[vm % len(COLOURS)]}"><title>VM {vm}'
                     f'{escape(" (" + d.machine_type + ")") if d.machine_type else ""}'
                     '</title></rect>')
    return parts


def _svg_wrap(c: tuple[int, ...], axis: int, pos: _Pos) -> str:
    """The ``wrap`` path of the last chip ``c`` on ``axis``: a dashed stub out of each end
    of the line (after ``c``, before the line's first chip)."""
    cx, cy = pos[c]
    first = list(c)
    first[axis] = 0
    fx, fy = pos[tuple(first)]
    h = CELL // 2
    ends = ((cx + CELL, cy + h, cx + CELL + GAP, cy + h,
             fx, fy + h, fx - GAP, fy + h) if axis == 0 else
            (cx + h, cy + CELL, cx + h, cy + CELL + GAP,
             fx + h, fy, fx + h, fy - GAP))
    return (f'<path class="wrap" data-axis="{AXES[axis]}" '
            'd="M{},{} L{},{} M{},{} L{},{}"/>'.format(*ends))


def _svg_ici_links(d: Drawing, pos: _Pos, chips: list[tuple[tuple[int, ...], tuple[int, int]]],
                   ) -> list[str]:
    """A TPU slice's ICI links between neighbouring chips of a layer (x and y; z links are
    only listed), and a wrap stub pair at the end of each line of a wrapping dimension
    longer than 2. ``chips``: ``pos``'s items in coordinate order."""
    parts = []
    for c, (cx, cy) in chips:
        for axis in range(min(2, len(c))):
            nxt = list(c)
            nxt[axis] += 1
            if tuple(nxt) in pos:
                nx, ny = pos[tuple(nxt)]
                parts.append(f'<line class="ici" x1="{cx + CELL // 2}" '
                             f'y1="{cy + CELL // 2}" x2="{nx + CELL // 2}" '
                             f'y2="{ny + CELL // 2}"/>')
            elif d.wrap[axis] and c[axis] == d.dims[axis] - 1 and d.dims[axis] > 2:
                parts.append(_svg_wrap(c, axis, pos))
    return parts


def _svg_chips(d: Drawing, chips: list[tuple[tuple[int, ...], tuple[int, int]]],
               vm_at: dict[tuple[int, ...], int]) -> list[str]:
    """Each chip (or GPU) of ``chips`` (coordinate, cell corner; in coordinate order): a
    ``chip`` square and its VM index as label."""
    parts = []
    for c, (cx, cy) in chips:
        coord = ",".join(str(v) for v in c)
        vm = vm_at[c]
        parts.append(f'<rect class="chip" data-coord="{coord}" data-vm="{vm}" '
                     f'x="{cx}" y="{cy}" width="{CELL}" height="{CELL}" rx="3">'
                     f'<title>{"GPU" if d.kind == "gpu" else "chip"} ({coord}) on VM '
                     f'{vm}</title></rect>')
        parts.append(f'<text class="chip-label" x="{cx + CELL // 2}" '
                     f'y="{cy + CELL // 2 + 4}">{vm}</text>')
    return parts


def _svg_slice(d: Drawing, box: _SliceBox, s: int, sx: int, y0: int) -> list[str]:
    """Slice ``s`` of ``d`` as one ``slice`` group whose box starts at (``sx``, ``y0``):
    box, label, layer labels, VM boxes, ICI links (TPU), chips."""
    parts = [f'<g class="slice" data-slice="{s}" data-name="{_attr(d.name)}">',
             f'<rect x="{sx}" y="{y0}" width="{box.slice_w}" height="{box.slice_h}" '
             'rx="8" class="slice-box"/>']
    label = f"{d.name}[{s}]" if d.count > 1 else d.name
    parts.append(f'<text x="{sx + PAD}" y="{y0 + 16}" class="label">'
                 f'{escape(label)}</text>')
    pos, layer_labels = _chip_positions(d, box, sx, y0)
    parts += layer_labels
    vm_at = {c: d.vm_of(c) for c in pos}
    parts += _svg_vm_boxes(d, pos, vm_at)  # behind the chips
    chips = sorted(pos.items())
    if d.kind == "tpu":
        parts += _svg_ici_links(d, pos, chips)
    parts += _svg_chips(d, chips, vm_at)
    parts.append("</g>")
    return parts


def _svg_dcn(d: Drawing, slice_w: int, y0: int) -> tuple[list[str], int]:
    """(the ``dcn`` group under the slices of a multislice whose boxes end at ``y0``: a bus
    line with a drop to each slice, and its label; the height below it)."""
    y_dcn = y0 + 2 * GAP
    first_c = PAD + slice_w // 2
    last_c = PAD + (d.count - 1) * (slice_w + 4 * GAP) + slice_w // 2
    parts = [f'<g class="dcn"><line x1="{first_c}" y1="{y_dcn}" x2="{last_c}" '
             f'y2="{y_dcn}"/>']
    for s in range(d.count):
        cx = PAD + s * (slice_w + 4 * GAP) + slice_w // 2
        parts.append(f'<line x1="{cx}" y1="{y0}" x2="{cx}" y2="{y_dcn}"/>')
    parts.append(f'<text x="{first_c + 6}" y="{y_dcn + 16}" class="note">DCN '
                 f'(data-center network) between the {d.count} slices</text></g>')
    return parts, y_dcn + 24


def _svg_drawn(d: Drawing, y0: int) -> tuple[list[str], int, int]:
    """(a slice drawn chip by chip at height ``y0``: its slices side by side, then the DCN
    of a multislice; the width it takes; ``y0`` below it, padding included)."""
    box = _SliceBox(d)
    parts: list[str] = []
    sx = PAD
    for s in range(d.count):
        parts += _svg_slice(d, box, s, sx, y0)
        sx += box.slice_w + 4 * GAP
    y0 += box.slice_h
    if d.count > 1:
        dcn, y0 = _svg_dcn(d, box.slice_w, y0)
        parts += dcn
    return parts, sx, y0 + 2 * PAD


def svg(drawings: list[Drawing], *, desc: str | None = None) -> str:
    """One SVG of every slice (top to bottom). Elements carry classes a test can count:
    ``slice`` (one per slice of a multislice), ``vm`` (``data-vm``), ``chip``
    (``data-coord``, ``data-vm``; its label is the VM index), ``ici`` links between
    neighbours of a z layer, ``wrap`` (a wraparound link, dashed stubs at both ends of the
    line) and ``dcn``. A slice above :data:`MAX_DIAGRAM_CHIPS` is one ``summary`` box
    (:func:`summarized`), so the file stays small whatever the shape."""
    parts: list[str] = []
    y0 = PAD
    width = 0
    for d in drawings:
        heading, heading_w = _svg_heading(d, y0, _SliceBox(d).layers)
        parts += heading
        width = max(width, heading_w)
        y0 += 44
        reason = summarized(d)
        if reason is not None:  # one box that says what is not drawn
            body, body_w, body_h = _svg_summary(d, reason, y0)
            y0 += body_h
        else:
            body, body_w, y0 = _svg_drawn(d, y0)
        parts += body
        width = max(width, body_w)
    width = max(width, 480)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y0}" '
            f'viewBox="0 0 {width} {y0}" role="img">'
            f"<title>{escape('; '.join(_summary(d) for d in drawings))}</title>"
            + (f"<desc>{escape(desc)}</desc>" if desc else "") +
            f"<style>{_STYLE}</style>")
    return head + "\n" + "\n".join(parts) + "\n</svg>\n"
