"""The live progress view on a real pseudo-terminal prints styles, never rich markup: a
line printed above the view must not turn markup off for the view (issue 31: "[bold]project
[/bold]" printed 19-27 times per run), and an address holding brackets stays as written."""

from __future__ import annotations

import os
import pty
import select
import time
from types import SimpleNamespace

from mldiag_provision.cli.commands._stack import Progress
from mldiag_provision.console import Console
from mldiag_provision.engines import ProgressEvent

ADDRESS = 'module.workloads.kubernetes_manifest.this["tpu[0]"]'


def _drain(fd: int) -> bytes:
    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


def test_the_live_view_on_a_terminal_shows_styles_not_markup() -> None:
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", buffering=1, encoding="utf-8")
    try:
        console = Console(stream, color=True)
        progress = Progress(console)
        assert progress.live  # a terminal: the rich live view
        seen = b""
        with progress:
            for message in ("planning", "applying"):
                progress.stack_event(SimpleNamespace(kind="stage", stage="project",
                                                     message=message, event=None,
                                                     elapsed_s=0.0))
                progress(ProgressEvent("start", ADDRESS, "create"))
                time.sleep(0.4)  # a refresh or two of the view
                seen += _drain(master)
                progress(ProgressEvent("complete", ADDRESS, "create", elapsed_s=3))
                seen += _drain(master)
        seen += _drain(master)
    finally:
        stream.close()
        os.close(master)
    text = seen.decode("utf-8", "replace")
    assert "[bold]" not in text and "[/bold]" not in text and "[dim]" not in text, text
    assert "== project: applying" in text
    assert f"{ADDRESS}: created (3s)" in text  # the brackets of the address kept
    assert "\x1b[1m" in text  # bold, as a terminal style


def test_an_error_of_the_whole_run_is_said_once_with_what_it_caught_in_flight() -> None:
    """A signal during apply makes Terraform report "execution halted" once per operation
    cut short, with no resource address: one FAIL line, naming the resources in flight,
    not one ": execution halted" line per operation (issue 31)."""
    import io

    buf = io.StringIO()
    progress = Progress(Console(buf, color=False), live=False)
    progress(ProgressEvent("start", "module.cluster.google_container_cluster.this", "create"))
    for _ in range(6):
        progress(ProgressEvent("error", "", message="execution halted"))
    progress(ProgressEvent("error", "google_project_service.x", message="boom"))
    lines = buf.getvalue().splitlines()
    assert lines == [
        "  FAIL execution halted (in flight: module.cluster.google_container_cluster.this)",
        "  FAIL google_project_service.x: boom"]
