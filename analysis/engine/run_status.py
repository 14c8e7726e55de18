"""Output folders that say whether the run that wrote them finished.

A run (``marketsim run``, a study) writes ``meta.json`` with ``"status": "running"`` and
``"complete": false`` and an in-progress ``report.md`` whose first line reads ``INCOMPLETE`` before it
computes anything; both are replaced by the real ones only at the end (``"status": "complete"``,
``"capped"`` when a trace run stopped at its round cap, or ``"interrupted"`` after SIGINT / SIGTERM,
which end a run alike through :func:`sigterm_as_interrupt`). A run killed with
SIGKILL (or a power cut) therefore leaves a folder that still reads incomplete; a re-run of the same
command overwrites it. ``complete`` is the same key runs.csv / meta.json use for a finished, error-free
run; ``status`` says why it is not.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "RUNNING",
    "INTERRUPTED",
    "COMPLETE",
    "CAPPED",
    "IN_PROGRESS_REPORT",
    "mark_running",
    "mark_interrupted",
    "mark_complete",
    "sigterm_as_interrupt",
]

RUNNING, INTERRUPTED, COMPLETE, CAPPED = "running", "interrupted", "complete", "capped"

IN_PROGRESS_REPORT = (
    "# INCOMPLETE: run in progress or killed\n\n"
    "The run that writes this folder started at {started} (process {pid}: `{command}`) and has not finished: it "
    "is still running, or it was killed before it could write its results (SIGKILL, a crash, a power cut). "
    "Nothing here is a result. Run the same command again to complete it.\n"
)


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def mark_running(out: str | Path, meta: dict[str, Any] | None = None) -> None:
    """Write ``out/meta.json`` (``status`` running, ``complete`` false, start time, command, pid and
    ``meta``) and an in-progress ``out/report.md`` (:data:`IN_PROGRESS_REPORT`) saying the folder is
    incomplete until the run writes its real report (each atomically)."""
    out = Path(out)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    command = " ".join(["marketsim", *sys.argv[1:]])
    info = {"status": RUNNING, "complete": False, "started_at": started, "pid": os.getpid(), "command": command,
            **(meta or {})}  # fmt: skip
    _atomic_text(out / "meta.json", json.dumps(info, indent=2) + "\n")
    _atomic_text(out / "report.md", IN_PROGRESS_REPORT.format(started=started, pid=os.getpid(), command=command))


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`KeyboardInterrupt` like Ctrl-C does, so a terminated run
    keeps its finished work and marks itself interrupted (only in the main thread; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def mark_interrupted(out: str | Path) -> None:
    """A run stopped before writing its results: ``meta.json`` says ``"status": "interrupted"``
    (still ``complete`` false) and report.md's first line says so (for a run that wrote its results
    first, the report and meta already say it: see :func:`analysis.frontends.report.render_report`)."""
    out = Path(out)
    try:
        info = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = {}
    if info.get("status") != RUNNING:  # the run's own meta.json (written after the interrupt) stands
        return
    info.update(status=INTERRUPTED, complete=False)
    _atomic_text(out / "meta.json", json.dumps(info, indent=2) + "\n")
    _atomic_text(out / "report.md", "# INCOMPLETE: interrupted (SIGINT or SIGTERM) before any result was written\n\n"
                 "Nothing here is a result. Run the same command again to complete it.\n")  # fmt: skip


def mark_complete(out: str | Path, failed: int = 0) -> None:
    """Add ``"status": "complete"`` and ``"complete"`` (no failed runs or cells) to a finished run's
    own ``out/meta.json`` (for writers that do not set them themselves)."""
    path = Path(out) / "meta.json"
    info = json.loads(path.read_text(encoding="utf-8"))
    info.update(status=COMPLETE, complete=failed == 0)
    _atomic_text(path, json.dumps(info, indent=2, default=str) + "\n")
