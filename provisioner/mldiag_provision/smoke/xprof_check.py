"""Is a smoke profile readable by XProf? ``python -m mldiag_provision.smoke.xprof_check DIR``.

Runs in its own process (``smoke --local`` starts it) because the ``xprof`` package's C++
converters log to stderr and load a large native library. It takes the newest profile
session under ``DIR/plugins/profile/`` (the layout ``jax.profiler.start_trace`` writes, see
https://docs.jax.dev/en/latest/profiling.html) and converts its ``*.xplane.pb`` files with
``xprof.convert.raw_to_tool_data.xspace_to_tool_data`` into the two views XProf opens first:

* ``overview_page``: JSON whose run-environment table names the hosts and devices;
* ``trace_viewer``: Chrome trace JSON; the smoke step (``jit_mldiag_smoke_step``) must appear
  in it, so a profile of something else (or an empty one) fails.

Prints one JSON line ``{"ok": ..., "session": ..., "xplane_files": [...], "overview_rows":
N, "trace_events": N, "step_events": N, "errors": [...]}``; exit 0 when ok, 1 otherwise.
Source of the API: the xprof wheel (PyPI ``xprof``), module ``xprof/convert/raw_to_tool_data.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

STEP = "mldiag_smoke_step"


def check(profile_dir: str) -> dict[str, Any]:
    """Convert the newest session under ``profile_dir``; returns the JSON-ready result."""
    errors: list[str] = []
    result: dict[str, Any] = {"ok": False, "profile_dir": profile_dir, "errors": errors}
    sessions = sorted(p for p in (Path(profile_dir) / "plugins" / "profile").glob("*")
                      if p.is_dir())
    if not sessions:
        errors.append(f"no profile session under {profile_dir}/plugins/profile/")
        return result
    session = sessions[-1]
    files = sorted(str(p) for p in session.glob("*.xplane.pb"))
    result.update(session=str(session), xplane_files=[Path(f).name for f in files])
    if not files:
        errors.append(f"no *.xplane.pb in {session}")
        return result
    _check_overview(files, result, errors)
    _check_trace(files, result, errors)
    result["ok"] = not errors
    return result


def _tool_data(files: list[str], tool: str) -> object:
    """XProf's ``tool`` view (``overview_page``, ``trace_viewer``) of the ``*.xplane.pb``
    ``files``, parsed from JSON; None where it is empty or no JSON."""
    from xprof.convert import raw_to_tool_data  # type: ignore[import-untyped]  # no types

    data, _ = raw_to_tool_data.xspace_to_tool_data(files, tool, {})
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _check_overview(files: list[str], result: dict[str, Any], errors: list[str]) -> None:
    """The overview page: a non-empty JSON list of tables (``overview_rows``); the
    run-environment table's ``host_count`` and ``device_type`` go to ``hosts`` and
    ``device_type`` where it has one."""
    overview = _tool_data(files, "overview_page")
    if not isinstance(overview, list) or not overview:
        errors.append("XProf could not build the overview page from the profile")
        return
    result["overview_rows"] = len(overview)
    env = [t.get("p", {}) for t in overview if isinstance(t, dict)
           and "host_count" in t.get("p", {})]
    if env:
        result["hosts"] = int(env[0].get("host_count") or 0)
        result["device_type"] = env[0].get("device_type")


def _check_trace(files: list[str], result: dict[str, Any], errors: list[str]) -> None:
    """The trace viewer data: Chrome trace JSON whose ``traceEvents`` (``trace_events``)
    include the smoke step's (``step_events``, at least one)."""
    trace = _tool_data(files, "trace_viewer")
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        errors.append("XProf could not build the trace viewer data from the profile")
        return
    result["trace_events"] = len(events)
    steps = [e for e in events if isinstance(e, dict) and STEP in str(e.get("name", ""))]
    result["step_events"] = len(steps)
    if not steps:
        errors.append(f"the trace has no event of the smoke step (jit_{STEP})")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m mldiag_provision.smoke.xprof_check PROFILE_DIR", file=sys.stderr)
        return 2
    try:
        result = check(args[0])
    except Exception as exc:  # a broken file: say so in the JSON line
        result = {"ok": False, "profile_dir": args[0],
                  "errors": [f"{type(exc).__name__}: {exc}"[:500]]}
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
