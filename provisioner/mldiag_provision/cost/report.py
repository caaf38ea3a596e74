"""A :class:`~mldiag_provision.cost.bom.Bill` as text, JSON and Markdown (``cost -O``)."""

from __future__ import annotations

import json

from mldiag_provision.cost.bom import Bill, Line


def money(value: float | None) -> str:
    """``$12.34``; ``None`` -> ``unknown`` (never ``$0.00``)."""
    return "unknown" if value is None else f"${value:,.2f}"


def _hourly(ln: Line) -> str:
    if ln.status == "unknown":
        return "unknown"
    if ln.status == "reserved":
        return "reserved"
    if ln.status == "existing":
        return "existing"
    lo, hi = money(ln.hourly_min), money(ln.hourly_max)
    text = hi if lo == hi else f"{lo}..{hi}"
    return ("≥ " + text) if ln.status == "lower-bound" else text


def _size(ln: Line) -> str:
    if ln.vms_max is None:
        return "1" if ln.kind == "cluster-fee" else (
            f"{ln.units_max:g} GB" if ln.kind == "storage" and ln.units_max else "-")
    vms = (f"{ln.vms_min}" if ln.vms_min == ln.vms_max else f"{ln.vms_min}..{ln.vms_max}")
    text = f"{vms} VM" + ("" if ln.vms_max == 1 else "s")
    if ln.chips:
        text += f", {ln.chips} {'chips' if ln.kind == 'tpu' else 'GPUs'}"
    return text


def _unit(ln: Line) -> str:
    return "-" if ln.unit_usd is None else f"{money(ln.unit_usd)}/{ln.unit}"


def total_text(bill: Bill) -> str:
    """``$19.30/h (lower bound: 1 line unknown)`` and the like."""
    hi, lo = money(bill.total_max), money(bill.total_min)
    text = f"{hi}/h" if hi == lo else f"{lo}..{hi}/h"
    why = []
    if bill.unknown:
        n = len(bill.unknown)
        why.append(f"{n} line{'s' if n > 1 else ''} unknown")
    if any(ln.status == "lower-bound" for ln in bill.lines):
        why.append("'starting at' prices")
    return text + (f" (lower bound: {', '.join(why)})" if bill.lower_bound else "")


def _table_age(bill: Bill) -> str:
    return (f"prices: catalog/data/prices.yaml, read {bill.prices_date} "
            f"({bill.prices_age_days} days ago)")


def to_text(bill: Bill, *, recipe: str) -> str:
    rows = [("item", "capacity", "size", "machine", "unit price", "per hour", "source")]
    for ln in bill.lines:
        rows.append((ln.item, ln.capacity or "-", _size(ln), ln.machine_type or "-", _unit(ln),
                     _hourly(ln), f"{ln.source} [{ln.confidence}]"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = [f"cost of {recipe} (stack {bill.stack}, {bill.region}), US dollars per hour", ""]
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True))
                   + "  " + r[-1])
    out += ["", f"total: {total_text(bill)}", _table_age(bill)]
    reasons = [ln for ln in bill.lines if ln.status in ("unknown", "reserved", "existing")]
    if reasons:
        out += ["", "not added to the total:"]
        out += [f"  - {ln.item}: {ln.reason}" for ln in reasons]
    notes = [ln for ln in bill.lines if ln.note]
    if notes or bill.notes:
        out += ["", "notes:"]
        out += [f"  - {ln.item}: {ln.note}" for ln in notes]
        out += [f"  - {n}" for n in bill.notes]
    return "\n".join(out)


def to_json(bill: Bill, *, recipe: str) -> str:
    return json.dumps({"recipe": recipe, **bill.to_dict()}, indent=2)


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def to_markdown(bill: Bill, *, recipe: str, heading: str = "###") -> str:
    lines = [f"{heading} Cost per hour: `{_cell(bill.stack)}` ({bill.region})", "",
             f"**Total:** {_cell(total_text(bill))}", "",
             "| item | capacity | size | machine | unit price | per hour | source |",
             "| --- | --- | --- | --- | ---: | ---: | --- |"]
    for ln in bill.lines:
        lines.append(f"| {_cell(ln.item)} | {_cell(ln.capacity or '-')} | {_cell(_size(ln))} "
                     f"| {_cell(ln.machine_type or '-')} | {_cell(_unit(ln))} "
                     f"| {_cell(_hourly(ln))} | [{ln.confidence}]({ln.source}) |")
    reasons = [ln for ln in bill.lines if ln.status in ("unknown", "reserved", "existing")]
    if reasons:
        lines += ["", "<details><summary>Not added to the total</summary>", ""]
        lines += [f"- {_cell(ln.item)}: {_cell(ln.reason)}" for ln in reasons]
        lines += ["", "</details>"]
    lines += ["", f"_{_table_age(bill)}; recipe `{_cell(recipe)}`_"]
    return "\n".join(lines) + "\n"


def _signed(value: float) -> str:
    return ("+" if value >= 0 else "-") + money(abs(value))


def change_markdown(before: Bill | None, after: Bill | None) -> str:
    """The ``plan -O markdown`` section: the stack's hourly cost after the change and what
    the change adds or removes (``before``: the stack as last rendered, None for a new stack;
    ``after``: None for ``--destroy``). Totals are the priced lines only: where either side
    is a lower bound, the delta says so."""
    lines = ["#### Cost per hour"]
    now = after.total_max if after is not None else 0.0
    was = before.total_max if before is not None else 0.0
    if after is not None:
        lines.append(f"**After this change:** {_cell(total_text(after))}")
    else:
        lines.append("**After this change:** $0.00/h (the stack is destroyed)")
    if before is None:
        lines.append(f"**Change:** {_signed(now)}/h (a new stack)")
    else:
        lines.append(f"**Before:** {_cell(total_text(before))}")
        lines.append(f"**Change:** {_signed(round(now - was, 6))}/h")
    bounds = [b for b in (before, after) if b is not None and b.lower_bound]
    if bounds:
        lines.append("_Unknown prices are not counted on either side, so the change is the "
                     "change of the known part (see `mldiag-provision cost`)._")
    if after is not None:
        before_items = {ln.item: ln for ln in before.lines} if before is not None else {}
        rows = []
        for ln in after.lines:
            old = before_items.pop(ln.item, None)
            if old is None or (old.hourly_max, old.status, old.vms_max) != (
                    ln.hourly_max, ln.status, ln.vms_max):
                rows.append(f"| {'+' if old is None else '~'} | {_cell(ln.item)} "
                            f"| {_cell(_size(ln))} | {_cell(_hourly(ln))} |")
        rows += [f"| - | {_cell(ln.item)} | {_cell(_size(ln))} | {_cell(_hourly(ln))} |"
                 for ln in before_items.values()]
        if rows:
            lines += ["", "| | item | size | per hour |", "| --- | --- | --- | ---: |", *rows]
    either = after or before
    if either is not None:
        lines += ["", f"_prices: catalog/data/prices.yaml, read {either.prices_date}_"]
    return "\n".join(lines)
