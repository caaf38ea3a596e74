"""A :class:`~mldiag_provision.cost.bom.Bill` as text, JSON and Markdown (``cost -O``)."""

from __future__ import annotations

import json
from typing import Any

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
    text = (f"prices: catalog/data/prices.yaml, read {bill.prices_date} "
            f"({bill.prices_age_days} days ago)")
    return text + (f"; live: {bill.live}" if bill.live else "")


def to_text(bill: Bill, *, recipe: str) -> str:
    """The bill as text (``cost``'s default output): the heading, one aligned row per line
    (US dollars per hour), the total and the price table's age, then the lines not added to
    the total, the live prices and the notes, each section only where it has lines."""
    out = [f"cost of {recipe} (stack {bill.stack}, {bill.region}), US dollars per hour", ""]
    out += _text_table(bill)
    out += ["", f"total: {total_text(bill)}", _table_age(bill)]
    out += _text_section("not added to the total:",
                         [f"{ln.item}: {ln.reason}" for ln in _unpriced(bill)])
    out += _text_section("live prices (Cloud Billing Catalog) against the offline table:",
                         [f"{ln.item}: {ln.live}" for ln in bill.lines if ln.live])
    out += _text_section("notes:", [*(f"{ln.item}: {ln.note}" for ln in bill.lines if ln.note),
                                    *bill.notes])
    return "\n".join(out)


def _text_table(bill: Bill) -> list[str]:
    """The bill's lines under a header row, each column but the last (the source) padded
    to its widest cell, two spaces apart."""
    rows = [("item", "capacity", "size", "machine", "unit price", "per hour", "source")]
    for ln in bill.lines:
        rows.append((ln.item, ln.capacity or "-", _size(ln), ln.machine_type or "-", _unit(ln),
                     _hourly(ln), f"{ln.source} [{ln.confidence}]"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
            for r in rows]


def _unpriced(bill: Bill) -> list[Line]:
    """The lines not added to the total: unknown prices, reserved and existing capacity."""
    return [ln for ln in bill.lines if ln.status in ("unknown", "reserved", "existing")]


def _text_section(title: str, items: list[str]) -> list[str]:
    """A titled list after a blank line (``  - item`` each), or nothing without items."""
    if not items:
        return []
    return ["", title, *(f"  - {item}" for item in items)]


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
    reasons = _unpriced(bill)
    if reasons:
        lines += ["", "<details><summary>Not added to the total</summary>", ""]
        lines += [f"- {_cell(ln.item)}: {_cell(ln.reason)}" for ln in reasons]
        lines += ["", "</details>"]
    live = [ln for ln in bill.lines if ln.live]
    if live:
        lines += ["", "<details><summary>Live prices (Cloud Billing Catalog) against the "
                  "offline table</summary>", ""]
        lines += [f"- {_cell(ln.item)}: {_cell(ln.live)}" for ln in live]
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
        rows = _changed_rows(before, after)
        if rows:
            lines += ["", "| | item | size | per hour |", "| --- | --- | --- | ---: |", *rows]
    either = after or before
    if either is not None:
        lines += ["", f"_prices: catalog/data/prices.yaml, read {either.prices_date}_"]
    return "\n".join(lines)


def _changed_rows(before: Bill | None, after: Bill) -> list[str]:
    """The lines the change adds (``+``) or changes (``~``: another hourly price, status or
    VM count), in ``after``'s order, then those it removes (``-``), as Markdown table rows
    (item, size, per hour); lines are matched by item."""
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
    return rows


def bills_of(before: dict[str, Any] | None, after: dict[str, Any] | None
             ) -> tuple[Bill | None, Bill | None] | None:
    """The bills of two plans (``plan.json`` data; None or empty: no stack on that side), or
    None when either cannot be priced (then no cost is shown rather than a guess)."""
    from mldiag_provision.cost.bom import bill_of_materials
    from mldiag_provision.errors import CatalogError

    try:
        was = bill_of_materials(before) if before else None
        now = bill_of_materials(after) if after else None
    except (CatalogError, KeyError, TypeError, ValueError):
        return None
    return None if was is None and now is None else (was, now)


def change_text(before: Bill | None, after: Bill | None) -> str:
    """One line for ``plan``/``apply`` text output: the total after the change and the
    change (``before`` None: a new stack; ``after`` None: destroyed)."""
    now = after.total_max if after is not None else 0.0
    was = before.total_max if before is not None else 0.0
    text = f"cost per hour: {total_text(after) if after is not None else '$0.00/h'}"
    text += f"; this change: {_signed(round(now - was, 6))}/h"
    if (before is not None and before.lower_bound) or (after is not None
                                                       and after.lower_bound):
        text += " of the known part"
    return text + " (details: mldiag-provision cost RECIPE)"


def change_dict(before: Bill | None, after: Bill | None) -> dict[str, Any]:
    """The same for ``plan``/``apply`` ``--output json`` (numbers in US dollars per hour)."""
    now = after.total_max if after is not None else 0.0
    was = before.total_max if before is not None else 0.0
    either = after or before
    return {"total_usd_per_hour": now, "before_usd_per_hour": was,
            "delta_usd_per_hour": round(now - was, 6),
            "lower_bound": any(b is not None and b.lower_bound for b in (before, after)),
            "prices_date": either.prices_date if either is not None else None}
