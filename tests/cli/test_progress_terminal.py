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
