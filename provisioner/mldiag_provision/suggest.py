"""``"did you mean ...?"``: the closest of a set of allowed names, for a hint.

A leaf utility (it imports nothing of the package): the recipe parser, the fact catalogues,
the preflight and lint rules and the CLI all ask it, and none of them has to reach into
another layer for it.
"""

from __future__ import annotations

import typing


def suggest(value: object, options: typing.Iterable[str]) -> str | None:
    """``"did you mean 'x'?"`` for the closest option, or ``None``.

    ``value`` that is not a string gets ``None``. A case-only difference gets its own hint
    ("values are case-sensitive"); otherwise the closest option by :mod:`difflib` ratio at or
    above 0.6, or ``None`` when none is that close.
    """
    if not isinstance(value, str):
        return None
    import difflib  # only when there is something to suggest: keeps validate's start fast

    options = list(options)
    lowered = {o.lower(): o for o in options}
    if value.lower() in lowered and lowered[value.lower()] != value:
        return f"did you mean '{lowered[value.lower()]}'? (values are case-sensitive)"
    close = difflib.get_close_matches(value, options, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None
