"""Output folders that say whether the run that wrote them finished, and that a re-run never overwrites.

**Status.** A command that writes results (``marketsim run`` scenarios and studies, ``learn``,
``claims --report``, ``audit --report``) claims its folder with :func:`claim`: before it computes
anything it writes ``meta.json`` with ``"status": "running"`` and ``"complete": false`` and an
in-progress ``report.md`` whose first line reads ``# INCOMPLETE``; the real ones replace them at the
end. ``status`` is then one of :data:`STATUSES`:

* ``complete``: every run finished without error (``"complete": true``);
* ``capped``: a trace run stopped at its round cap (``max_rounds``); it is not a result;
* ``failed``: some runs or cells raised (``errors.txt``; the others are results), or the command
  itself failed after it claimed the folder (``error``);
* ``interrupted``: SIGINT or SIGTERM (:func:`sigterm_as_interrupt` makes them alike); the finished
  runs are written;
* ``running``: still running, or killed before it could write anything (SIGKILL, a crash, a power
  cut); ``killed`` once a later command found it so (no live process holds it: see below).

Every status but ``complete`` makes the first line of ``report.md`` read ``# INCOMPLETE (status):
...`` (:func:`finalize`).

**meta.json is written last.** Inside :func:`claim`, a writer's own meta.json (:func:`write_meta`,
:func:`mark_complete`) is kept in memory, and the file on disk says ``running`` until every other
file is written; :func:`finalize` then stamps report.md and replaces meta.json, in that order, with
SIGINT and SIGTERM held back (a signal that arrived meanwhile makes the status ``interrupted``). So a
kill at any point leaves a meta.json that says ``running`` (labelled ``killed`` by the next command)
unless every file is in place: never ``"complete": true`` beside a missing plot or an in-progress
report. Every file is written to a hidden temporary sibling and renamed into place
(:func:`write_atomic`), so no results file is ever truncated; a failed write (a full disk) raises
:class:`WriteError` naming the file. Sweeps keep theirs in ``sweep.json`` (see
:mod:`marketsim.analysis.engine.sweep`), with the same statuses and the same ``report.md`` first line.

**Nothing a user computed is overwritten.** A folder holds a run when it has a ``meta.json``,
``sweep.json``, ``report.md`` or a results file a writer would replace (:data:`MARKERS`).
:func:`claim` moves such a folder aside, whole and as it was, to the sibling named after the start
of the run it holds, ``NAME.YYYY-MM-DDTHH-MM-SS`` (UTC, from
``started_at``, else the files' modification time; ``-2``, ``-3``, ... when taken), prints one line
saying where it went, and starts the new run in an empty ``NAME``. It refuses (status 2, nothing
moved) when a live process still writes the folder (an exclusive ``flock`` on ``NAME/.marketsim.lock``
that the kernel drops when that process ends, even by SIGKILL) and when the folder is the current
directory, one of its parents or the home directory. ``marketsim sweep --resume`` continues a sweep
in place instead (:func:`claim` with ``keep_previous=False``). Writers that library users call
directly (:func:`marketsim.analysis.engine.runner.write_experiment`, ``write_study``, ``write_learning``,
``write_audit_report``) call :func:`guard`, which does the same unless this process holds the folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from marketsim.market.errors import InputError

__all__ = [
    "RUNNING",
    "INTERRUPTED",
    "COMPLETE",
    "CAPPED",
    "FAILED",
    "KILLED",
    "STATUSES",
    "IN_PROGRESS_REPORT",
    "LOCK_NAME",
    "claim",
    "guard",
    "write_atomic",
    "replace_file",
    "write_meta",
    "WriteError",
    "holds_run",
    "move_aside",
    "mark_running",
    "mark_interrupted",
    "mark_failed",
    "mark_complete",
    "finalize",
    "status_line",
    "stamp_report",
    "sigterm_as_interrupt",
]

RUNNING, INTERRUPTED, COMPLETE, CAPPED = "running", "interrupted", "complete", "capped"
FAILED, KILLED = "failed", "killed"
STATUSES = (RUNNING, KILLED, INTERRUPTED, FAILED, CAPPED, COMPLETE)

#: The lock file a running command holds (``flock``) in its folder; removed when it ends.
LOCK_NAME = ".marketsim.lock"
#: Files that make a folder "hold a run" (moved aside, never overwritten): the status files, and the
#: results files of writers that wrote no status file before (an older lie_sweep, trajectories, ...).
MARKERS = ("meta.json", "sweep.json", "report.md", "results.parquet", "runs.csv", "lie_sweep.csv",
           "trajectories.parquet", "price_of_lying.csv", "regret.png", "regret.csv", "gain_curves.png",
           "gain_curves.csv", "completions.parquet", "tenants.parquet", "throughput.png", "lying_gain.png",
           "jct_cdf.png", "utilisation.png", "convergence.png", "bids.png", "errors.txt", "headlines.csv",
           "summary.csv")  # fmt: skip

IN_PROGRESS_REPORT = (
    "# INCOMPLETE (running): run in progress or killed\n\n"
    "The run that writes this folder started at {started} (process {pid}: `{command}`) and has not finished: it "
    "is still running, or it was killed before it could write its results (SIGKILL, a crash, a power cut). "
    "Nothing here is a result. Run the same command again to complete it (this folder is then moved aside).\n"
)

_WHY = {
    RUNNING: "run in progress or killed",
    KILLED: "killed (the process ended without finishing: SIGKILL, a crash or a power cut); nothing here is a result",
    INTERRUPTED: "interrupted (SIGINT or SIGTERM); only what finished before is here",
    FAILED: "some runs failed (errors.txt); the others are reported below",
    CAPPED: "some runs hit the round cap (max_rounds) and are not results",
}

#: Folders this process holds (resolved path -> open lock file descriptor); :func:`claim` is re-entrant.
_HELD: dict[Path, int] = {}


#: Folders this process holds -> the meta.json their writers gave (:func:`write_meta`), written by :func:`finalize`.
_PENDING: dict[Path, dict[str, Any]] = {}
#: Folders this process holds with status marks (:func:`claim` with ``mark``): their report.md reads
#: incomplete until :func:`finalize` (:func:`_mark_writing`).
_MARKING: set[Path] = set()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class WriteError(OSError):
    """A results file could not be written (a full disk, a quota, a read-only or vanished folder).
    ``str()`` is one line naming the file; the CLI prints it and exits with status 1."""

    def __str__(self) -> str:
        why = self.strerror or "write failed"
        full = " (the disk is full)" if self.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        return f"cannot write {self.filename}: {why}{full}"


def replace_file(tmp: str | Path, path: str | Path) -> None:
    """Rename the finished temporary file ``tmp`` onto ``path`` (atomic on POSIX): the one place every
    results file comes into being (:func:`write_atomic`; writers with their own temporary file call it too)."""
    os.replace(tmp, path)


def write_atomic(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Write file ``path`` whole or not at all: ``write(tmp)`` writes a hidden sibling
    ``.STEM.PID.tmpSUFFIX`` (same suffix, so writers that go by it, such as ``savefig``, pick the same
    format), which is then renamed onto ``path``. On any failure the temporary file is removed and
    ``path`` is left as it was; an :class:`OSError` is raised as :class:`WriteError` naming ``path``.
    Returns ``path``."""
    return _write_file(Path(path), write, writer=True)


def _write_file(path: Path, write: Callable[[Path], Any], writer: bool) -> Path:
    """:func:`write_atomic`; a ``writer``'s report.md in a claimed folder gets :data:`WRITING_LINE`."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        if writer and path.name == "report.md" and path.parent.resolve() in _MARKING:
            _mark_writing(tmp)
        replace_file(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(exc.errno or errno.EIO, exc.strerror or str(exc), str(path)) from exc
        raise
    return path


#: The first line of a writer's report.md in a claimed folder until :func:`finalize` (then the status's).
WRITING_LINE = "# INCOMPLETE (running): the run is writing its files; not a result until meta.json says complete"


def _mark_writing(tmp: Path) -> None:
    """A report written inside :func:`claim` reads incomplete (:data:`WRITING_LINE`) until :func:`finalize`
    replaces its first line: it never reads complete while meta.json does not."""
    text = tmp.read_text(encoding="utf-8")
    if not text.startswith("# INCOMPLETE"):
        tmp.write_text(WRITING_LINE + "\n\n" + text, encoding="utf-8")


def _atomic_text(path: Path, text: str) -> None:
    _write_file(path, lambda p: p.write_text(text, encoding="utf-8"), writer=False)


def write_meta(out: str | Path, info: dict[str, Any]) -> Path:
    """A writer's own ``out/meta.json``. When this process holds ``out`` (:func:`claim`), it is kept
    until :func:`finalize` writes it last (the file meanwhile says ``running``); otherwise it is
    written now (atomically). Returns the path."""
    out = Path(out)
    key = out.resolve()
    if key in _HELD:
        _PENDING[key] = dict(info)
    else:
        _write_json(out / "meta.json", info)
    return out / "meta.json"


def _current_meta(out: Path) -> dict[str, Any]:
    """The meta.json this run will write: the writer's pending one, else the file's."""
    pending = _PENDING.get(out.resolve())
    return dict(pending) if pending is not None else (_read_json(out / "meta.json") or {})


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _write_json(path: Path, info: dict[str, Any]) -> None:
    _atomic_text(path, json.dumps(info, indent=2, default=str) + "\n")


def status_line(status: str, detail: str = "") -> str:
    """The first line of ``report.md`` for a run that is not ``complete``: ``# INCOMPLETE (status): why``."""
    return f"# INCOMPLETE ({status}): {detail or _WHY.get(status, status)}"


def stamp_report(out: str | Path, status: str, detail: str = "") -> None:
    """Make :func:`status_line` the first line of ``out/report.md`` (replacing an earlier
    ``# INCOMPLETE`` first line; a missing report gets just that line). ``complete`` removes such a line."""
    path = Path(out) / "report.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        text = ""
    first, _, rest = text.partition("\n")
    if first.startswith("# INCOMPLETE"):
        text = rest.lstrip("\n")
    elif status == COMPLETE and path.exists():
        return  # nothing to drop
    if status != COMPLETE:
        text = status_line(status, detail) + "\n\n" + text
    _atomic_text(path, text)


# ---------------------------------------------------------------------------------------------------
# marks


def mark_running(out: str | Path, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``out/meta.json`` (``status`` running, ``complete`` false, start time, command, pid and
    ``meta``) and an in-progress ``out/report.md`` (:data:`IN_PROGRESS_REPORT`) saying the folder is
    incomplete until the run writes its real report (each atomically). Returns what it wrote."""
    out = Path(out)
    started = _now()
    command = " ".join(["marketsim", *sys.argv[1:]])
    info = {"status": RUNNING, "complete": False, "started_at": started, "pid": os.getpid(), "command": command,
            **(meta or {})}  # fmt: skip
    _write_json(out / "meta.json", info)
    _atomic_text(out / "report.md", IN_PROGRESS_REPORT.format(started=started, pid=os.getpid(), command=command))
    return info


def _still_running(out: Path) -> dict[str, Any] | None:
    info = _read_json(out / "meta.json")
    return info if info is not None and info.get("status") == RUNNING else None


def _own_report(out: Path) -> bool:
    """Whether ``out/report.md`` is the writer's own (not the in-progress text of :func:`mark_running`)."""
    try:
        return not (out / "report.md").read_text(encoding="utf-8").startswith(IN_PROGRESS_REPORT[:30])
    except OSError:
        return False


def _end_early(out: Path, status: str, detail: str, **extra: Any) -> None:
    """The run ends ``status`` (interrupted or failed) before :func:`finalize`: report.md's first line
    says so (the writer's own report is kept under that line; without one, a short text says what is
    here), then meta.json (the writer's pending one, if any, else the running mark) gets the status,
    last. Best effort: on a full disk the running mark stays (it reads incomplete too). A meta.json
    that no longer says ``running`` and no pending one: the run had finished; nothing changes."""
    key = out.resolve()
    pending = _PENDING.pop(key, None)
    info = dict(pending) if pending is not None else _still_running(out)
    if info is None:
        return
    info.update(status=status, complete=False, ended_at=_now(), **extra)
    for k in ("started_at", "pid", "command"):
        if k not in info and (mark := _read_json(out / "meta.json")) and k in mark:
            info[k] = mark[k]
    with contextlib.suppress(OSError):
        if _own_report(out):
            stamp_report(out, status, detail)
        else:
            what = ("the files here are what was written by then (see meta.json); "
                    if pending is not None else "")  # fmt: skip
            _atomic_text(out / "report.md", status_line(status, detail) + f"\n\nNothing here is a complete result; "
                         f"{what}run the same command again to complete it.\n")  # fmt: skip
        _write_json(out / "meta.json", info)


def mark_interrupted(out: str | Path) -> None:
    """A run stopped (SIGINT or SIGTERM) before :func:`finalize`: ``meta.json`` says ``"status":
    "interrupted"`` (``complete`` false; the writer's pending meta.json, if it gave one, with that
    status) and report.md's first line says so. A finished run's meta.json stands."""
    out = Path(out)
    pending = _PENDING.get(out.resolve())
    if pending is not None and pending.get("status") == INTERRUPTED:
        detail = _WHY[INTERRUPTED]
        if pending.get("runs") is not None:
            detail = f"interrupted (SIGINT or SIGTERM); only the {pending['runs']} run(s) finished by then are here"
    elif pending is not None:
        detail = "interrupted (SIGINT or SIGTERM) while it wrote its files"
    else:
        detail = "interrupted (SIGINT or SIGTERM) before any result was written"
    _end_early(out, INTERRUPTED, detail, interrupted=True)


def mark_failed(out: str | Path, exc: BaseException) -> None:
    """The command raised after it claimed ``out`` and before :func:`finalize`: ``"status":
    "failed"`` with the ``error``, and report.md's first line says so (a finished run's meta.json stands)."""
    out = Path(out)
    msg = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    when = "while writing its files" if out.resolve() in _PENDING else "before writing its results"
    _end_early(out, FAILED, f"the command failed {when} ({msg})", error=msg)


def mark_complete(out: str | Path, failed: int = 0, interrupted: bool = False) -> None:
    """Set ``status`` in a finished run's meta.json (for writers that do not set it):
    ``interrupted``, else ``failed`` when ``failed`` runs or cells raised, else ``complete``;
    ``"complete"`` is true only for the last. Inside :func:`claim` this is kept for :func:`finalize`
    (:func:`write_meta`)."""
    out = Path(out)
    info = _current_meta(out)
    status = INTERRUPTED if interrupted else FAILED if failed else COMPLETE
    info.update(status=status, complete=status == COMPLETE)
    if interrupted:
        info["interrupted"] = True
    if failed:
        info["failed"] = int(failed)
    write_meta(out, info)


_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_held() -> Iterator[Callable[[], bool]]:
    """Hold SIGINT and SIGTERM back while inside (main thread): their handlers only record them; yields a
    function telling whether one arrived. On exit the handlers are put back and a recorded signal is
    raised again (Ctrl-C's handler then raises KeyboardInterrupt). Handlers, not a signal mask: a
    process-directed signal may reach any thread, but Python runs its handler in the main thread."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover - signals are the main thread's
        yield lambda: False
        return
    got: list[int] = []
    old = {s: signal.getsignal(s) for s in _HELD_SIGNALS}
    for s in _HELD_SIGNALS:
        signal.signal(s, lambda signum, frame: got.append(signum))
    try:
        yield lambda: bool(got)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for s in dict.fromkeys(got):
            signal.raise_signal(s)


def finalize(out: str | Path, running: dict[str, Any] | None = None) -> str:
    """At the end of a claimed run, write its meta.json, last: the writer's (:func:`write_meta`) or
    the running mark, whose ``running`` becomes ``complete``; the keys of the ``running`` mark the
    writer's own meta.json lacks (``started_at``, ``command``, ``pid``) are put back, with
    ``ended_at``. report.md's first line says the status unless it is ``complete``
    (:func:`stamp_report`), and is written before meta.json. SIGINT and SIGTERM are held back
    meanwhile: one that arrives makes the status ``interrupted`` (it is delivered afterwards). Returns
    the status."""
    out = Path(out)
    info = _current_meta(out)
    if info.get("status", RUNNING) == RUNNING:
        info.update(status=COMPLETE, complete=True)
    for key, value in (running or {}).items():
        if key in ("started_at", "pid", "command"):
            info.setdefault(key, value)
    with _signals_held() as signalled:
        if signalled() and info["status"] == COMPLETE:
            info.update(status=INTERRUPTED, complete=False, interrupted=True)
        report = out / "report.md"
        if report.exists() and not _own_report(out):
            # the writer wrote no report of its own: the in-progress text would now be false
            _atomic_text(report, f"# {info.get('command', 'marketsim')}\n\nSee meta.json and the files beside it.\n")
        _stamp_for(out, info)
        if signalled() and info["status"] == COMPLETE:  # a signal while the report was written
            info.update(status=INTERRUPTED, complete=False, interrupted=True)
            _stamp_for(out, info)
        info["ended_at"] = _now()
        _write_json(out / "meta.json", info)  # last: the folder says complete only once all is in place
        if signalled() and info["status"] == COMPLETE:  # a signal while meta.json was written
            info.update(status=INTERRUPTED, complete=False, interrupted=True)
            _stamp_for(out, info)
            _write_json(out / "meta.json", info)
        _PENDING.pop(out.resolve(), None)
    return str(info["status"])


def _stamp_for(out: Path, info: dict[str, Any]) -> None:
    """report.md's first line for ``info["status"]`` (:func:`stamp_report`), with the detail meta.json gives."""
    status = str(info["status"])
    if status == COMPLETE:
        stamp_report(out, COMPLETE)  # drops the "writing its files" line
        return
    detail = ""
    n_failed = info.get("failed_runs") or info.get("cells_failed") or info.get("failed")
    if status == FAILED and n_failed:
        detail = f"{n_failed} run(s) or cell(s) failed (errors.txt); the others are reported below"
    elif status == CAPPED and info.get("incomplete_runs"):
        detail = f"{len(info['incomplete_runs'])} run(s) hit the round cap (max_rounds) and are not results"
    elif status == INTERRUPTED and info.get("runs") is not None:
        detail = f"interrupted (SIGINT or SIGTERM); only the {info['runs']} run(s) finished by then are here"
    stamp_report(out, status, detail)


# ---------------------------------------------------------------------------------------------------
# keeping earlier runs


def holds_run(out: str | Path) -> bool:
    """Whether ``out`` holds (the files of) a run: one of :data:`MARKERS` (``meta.json``,
    ``sweep.json``, ``report.md``, or a results file a writer would replace)."""
    out = Path(out)
    return out.is_dir() and any((out / m).exists() for m in MARKERS)


def _started(out: Path) -> tuple[dt.datetime, str]:
    """When the run in ``out`` started (UTC) and its status, from its meta.json / sweep.json, else
    the markers' modification time."""
    info = _read_json(out / "meta.json") or _read_json(out / "sweep.json") or {}
    status = str(info.get("status", "unknown"))
    text = info.get("started_at")
    if text is None and info.get("sessions"):
        text = info["sessions"][0].get("started_at")
    try:
        when = dt.datetime.fromisoformat(str(text))
        when = when.astimezone(dt.UTC) if when.tzinfo else when.replace(tzinfo=dt.UTC)
    except ValueError:
        mtimes = [(out / m).stat().st_mtime for m in MARKERS if (out / m).exists()]
        when = dt.datetime.fromtimestamp(min(mtimes) if mtimes else out.stat().st_mtime, dt.UTC)
    return when, status


def move_aside(out: str | Path) -> Path:
    """Rename ``out`` (a folder that :func:`holds_run`) to its sibling ``NAME.YYYY-MM-DDTHH-MM-SS``
    (the run's start, UTC; ``-2``, ``-3``, ... when taken); returns the new path. The caller checks
    that no live process writes ``out`` (:func:`claim`)."""
    out = Path(out)
    when, _ = _started(out)
    base = out.with_name(f"{out.name}.{when.strftime('%Y-%m-%dT%H-%M-%S')}")
    dest, n = base, 1
    while dest.exists():
        n += 1
        dest = base.with_name(f"{base.name}-{n}")
    out.rename(dest)
    return dest


def _label_killed(out: Path) -> bool:
    """``out`` reads ``running`` but no live process holds it: it was killed. Say so in its
    meta.json / sweep.json (``"status": "killed"``; a sweep's last session gets ``"ended": "killed"``)
    and report.md's first line. Returns whether it was."""
    for name in ("meta.json", "sweep.json"):
        info = _read_json(out / name)
        if info is None or info.get("status") != RUNNING:
            continue
        info.update(status=KILLED, complete=False, found_killed_at=_now())
        if name == "sweep.json" and info.get("sessions"):
            info["sessions"][-1]["ended"] = KILLED
        _write_json(out / name, info)
        stamp_report(out, KILLED)
        return True
    return False


def _try_lock(out: Path, attempts: int = 5) -> int | None:
    """An exclusive, non-blocking ``flock`` on ``out/.marketsim.lock`` (the fd), or None when another
    live process holds it. The lock counts only while its file is still ``out/.marketsim.lock``: a
    lock file that another command moved aside with its folder, or removed as it ended, between our
    open and our lock is not ``out``'s, and the lock is taken again. Without ``fcntl`` (Windows) every
    lock succeeds."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    for _ in range(attempts):
        fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            here = os.stat(out / LOCK_NAME)
        except FileNotFoundError:
            here = None
        mine = os.fstat(fd)
        if here is not None and (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino):
            return fd
        os.close(fd)  # we locked a file that left ``out``: whoever moved it holds ``out`` now, or it ended
    return None


def _release(out: Path, fd: int) -> None:
    with contextlib.suppress(OSError):
        (out / LOCK_NAME).unlink()
    os.close(fd)


def _in_use(out: Path, field: str) -> InputError:
    info = _read_json(out / "meta.json") or _read_json(out / "sweep.json") or {}
    started = info.get("started_at") or (info.get("sessions") or [{}])[-1].get("started_at")
    who = ", ".join(x for x in (f"pid {info['pid']}" if info.get("pid") else "",
                                f"started {started}" if started else "") if x)  # fmt: skip
    return InputError(field, str(out), f"is in use by a running marketsim: another process holds this folder "
                      f"({who or 'it has just taken it'}; lock {LOCK_NAME}); wait for it to end or choose another "
                      f"{field}")  # fmt: skip


def _protected(out: Path) -> bool:
    """The current directory, one of its parents, the home directory or a file system root."""
    here = out.resolve()
    cwd = Path.cwd().resolve()
    return here == cwd or here in cwd.parents or here == Path.home().resolve() or here == Path(here.anchor)


def _say(line: str) -> None:
    print(f"marketsim: {line}", file=sys.stderr)


def _take(out: Path, field: str, keep_previous: bool, say: Callable[[str], None]) -> tuple[int, Path | None]:
    """Lock ``out`` for this process, moving an earlier run aside (``keep_previous``; one line through
    ``say``) or labelling a killed one in place; returns the lock's fd and where an earlier run went.
    Raises :class:`InputError` naming ``field``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = _try_lock(out)
    except OSError as exc:
        raise InputError(field, str(out), f"is not a writable directory ({exc.strerror or exc})") from None
    if fd is None:
        raise _in_use(out, field)
    try:
        killed = _label_killed(out)
        if not keep_previous or not holds_run(out):
            return fd, None
        if _protected(out):
            raise InputError(field, str(out), "holds an earlier run (meta.json / report.md) and is the current "
                             "directory, one of its parents or the home directory, so it is not moved aside; choose "
                             f"another {field} (a new folder) or move its files yourself")  # fmt: skip
        _, status = _started(out)
        dest = move_aside(out)  # our lock file moves with it
    except BaseException:
        _release(out, fd)
        raise
    _release(dest, fd)
    say(f"{out}/ held an earlier run ({KILLED if killed else status}); moved it to {dest}/ so nothing in it is "
        "overwritten")
    out.mkdir(parents=True, exist_ok=True)
    fd = _try_lock(out)
    if fd is None:  # another command claimed the new folder in between
        raise _in_use(out, field)
    return fd, dest


@contextlib.contextmanager
def claim(
    out: str | Path,
    meta: dict[str, Any] | None = None,
    *,
    field: str = "--out",
    keep_previous: bool = True,
    mark: bool = True,
    sigterm: bool = True,
    say: Callable[[str], None] = _say,
) -> Iterator[Path]:
    """Hold folder ``out`` for one command (see the module docstring).

    On entry: refuse if another live process holds it (:class:`InputError` naming ``field``);
    with ``keep_previous``, move an earlier run aside (:func:`move_aside`, one line through ``say``);
    with ``mark``, :func:`mark_running` (``meta`` added). Inside, SIGTERM acts as Ctrl-C (with
    ``sigterm``: :func:`sigterm_as_interrupt`). On exit:
    :func:`mark_interrupted` after KeyboardInterrupt, :func:`mark_failed` after another exception,
    else :func:`finalize`; the lock is released. Re-entrant: a folder this process already holds
    is yielded untouched."""
    out = Path(out)
    key = out.resolve()
    if key in _HELD:
        yield out
        return
    existed = out.exists()
    was_empty = not existed or (out.is_dir() and not any(out.iterdir()))  # nothing of the user's in it
    fd, _ = _take(out, field, keep_previous, say)
    _HELD[key] = fd
    if mark:
        _MARKING.add(key)
    input_error = False
    try:
        with sigterm_as_interrupt() if sigterm else contextlib.nullcontext():
            running: dict[str, Any] | None = None
            try:
                running = mark_running(out, meta) if mark else None
                yield out
                if mark:  # meta.json last; a signal before it (or during it) ends the run interrupted
                    finalize(out, running)
            except KeyboardInterrupt:
                if mark:
                    mark_interrupted(out)
                raise
            except InputError as exc:
                input_error = True  # a user mistake: the folder is dropped below if nothing else is in it
                if mark:
                    mark_failed(out, exc)
                raise
            except Exception as exc:
                if mark:
                    mark_failed(out, exc)
                raise
    finally:
        del _HELD[key]
        _PENDING.pop(key, None)
        _MARKING.discard(key)
        _release(out, fd)
        if input_error and was_empty:
            _drop_if_only_status(out, remove_dir=not existed)


def _drop_if_only_status(out: Path, remove_dir: bool) -> None:
    """Remove this command's own status files from ``out`` (empty when the command took it) when
    nothing else is in it, and ``out`` itself with ``remove_dir``: a user mistake (an
    :class:`InputError`) leaves no results folder that only says it failed (the CLI removes the
    empty folders it created itself)."""
    try:
        names = {p.name for p in out.iterdir()}
    except OSError:
        return
    if names <= {LOCK_NAME, "meta.json", "report.md"}:
        for n in names:
            (out / n).unlink(missing_ok=True)
        if remove_dir:
            with contextlib.suppress(OSError):
                out.rmdir()


def guard(out: str | Path, field: str = "--out") -> Path | None:
    """For writers called directly (not under :func:`claim`): if ``out`` holds an earlier run and
    this process does not hold ``out``, move it aside as :func:`claim` does and return where it went
    (else None). Refuses (:class:`InputError`) a folder a live process holds."""
    out = Path(out)
    if not out.is_dir() or out.resolve() in _HELD or not holds_run(out):
        return None
    fd, dest = _take(out, field, True, _say)
    _release(out, fd)
    return dest


# ---------------------------------------------------------------------------------------------------
# signals


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
