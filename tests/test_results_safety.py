"""Results are never lost or mislabelled at any write point (issue 34, item 5; marketsim.analysis.engine.run_status).

Every results file comes into being through one rename, :func:`marketsim.analysis.engine.run_status.replace_file`
(``write_atomic`` writes a hidden temporary sibling first). The tests patch that one function to
inject, deterministically and in-process, what a kill, a Ctrl-C / SIGTERM or a full disk would do at
each write point of a command:

* a SIGKILL just before write point k leaves the folder exactly as it is then: the tests copy the
  folder at every point and check that each copy says what it holds (meta.json ``complete`` only
  beside every file of the finished run and a report without an ``# INCOMPLETE`` line; no meta.json
  without a ``status``);
* SIGTERM (which the CLI turns into KeyboardInterrupt) or ``OSError(ENOSPC)`` at point k: exit 130 /
  1, a one-line error naming the file, no truncated file, meta.json ``interrupted`` / ``failed``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
from testkit import read_meta, report_first_line, resumable_sweep, signals_not_ignored  # noqa: F401 (fixture)

from marketsim.analysis.engine import run_status
from marketsim.analysis.frontends.cli import main
from marketsim.market.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["run", "default", "--reps", "1", "--policies", "maxmin", "--quiet"]
CLAIMS = ["claims", "--paper", "oasis", "--claim", "C-O2"]
AUDIT = ["audit", "--mechanism", "maxmin", "--speedups", "1,2;1,5", "--instances", "1"]
# the quickest learning run: best responses of two tenants under one allocator, 3 rounds
TINY_LEARNING = """kind = "learning"
name = "tiny"
[learning]
family = "fair-share"
rule = "best-response"
mechanisms = ["maxmin"]
seed = 0
rounds = 3
grid = { points = 5, low = 0.5, high = 2.0 }
[learning.instance]
W = [[1, 2], [1, 5]]
m = [1, 1]
"""
HIDDEN = (run_status.LOCK_NAME,)


def _visible(out: Path) -> set[str]:
    return {p.name for p in out.iterdir() if not p.name.startswith(".")}


def _command(kind: str, out: Path) -> list[str]:
    if kind == "learn":
        toml = out.parent / "tiny.toml"
        toml.write_text(TINY_LEARNING, encoding="utf-8")
        return ["learn", str(toml), "--quiet", "--out", str(out)]
    return {"run": [*QUICK, "--out", str(out)], "claims": [*CLAIMS, "--report", str(out)],
            "audit": [*AUDIT, "--report", str(out)]}[kind]  # fmt: skip


# -- a SIGKILL at every write point ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["run", "learn", "claims", "audit"])
def test_a_kill_at_every_write_point_leaves_a_folder_that_says_what_it_holds(
    kind: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    out, snaps = tmp_path / "out", tmp_path / "snapshots"
    real, written = run_status.replace_file, []

    def replace_file(tmp, path):
        # the folder as a SIGKILL right now would leave it (this rename not yet done)
        shutil.copytree(out, snaps / f"{len(written):02d}-before-{Path(path).name}", symlinks=True)
        written.append(Path(path).name)
        real(tmp, path)

    real_finalize = run_status.finalize

    def finalize(folder, running=None):
        # a kill once every file is written, before the status (the command prints its table here)
        shutil.copytree(out, snaps / f"{len(written):02d}-at-finalize", symlinks=True)
        return real_finalize(folder, running)

    monkeypatch.setattr(run_status, "replace_file", replace_file)
    monkeypatch.setattr(run_status, "finalize", finalize)
    assert main(_command(kind, out)) == 0
    capsys.readouterr()
    final = _visible(out)
    assert read_meta(out)["status"] == "complete" and not report_first_line(out).startswith("# INCOMPLETE")
    # every file of the finished folder was written whole, then renamed into place (never truncated)
    assert final <= set(written), f"written in place, not via write_atomic: {final - set(written)}"
    assert written[-1] == "meta.json" and written.count("meta.json") == 2  # the running mark first, the status last
    assert len(written) >= 4
    *during, last = sorted(snaps.iterdir(), key=lambda p: (p.name[:2], "at-finalize" not in p.name))
    assert any("at-finalize" in p.name for p in during)
    # the last point, just before the status is written (finalize, signals held): every file is in place
    # and report.md already reads complete; meta.json, the authority, still says running
    assert _visible(last) == final and read_meta(last)["status"] == "running"
    assert not report_first_line(last).startswith("# INCOMPLETE")
    for snap in during:
        files = _visible(snap)
        if "meta.json" not in files:
            assert not files, f"{snap.name}: files without a meta.json: {files}"
            continue
        meta = read_meta(snap)
        assert meta.get("status") in run_status.STATUSES, f"{snap.name}: meta.json without a status"
        assert meta["status"] == "running" and meta["complete"] is False, snap.name  # a kill here reads incomplete
        if (snap / "report.md").exists():  # (killed between the running mark's meta.json and its report.md)
            assert report_first_line(snap).startswith("# INCOMPLETE"), f"{snap.name}: report.md reads complete"


def test_a_study_never_writes_a_meta_json_without_its_status(tmp_path: Path, monkeypatch, capsys) -> None:
    """`run STUDY`: write_study's meta.json (no status of its own) waits for the end of the command."""
    out, seen, on_disk = tmp_path / "study", [], []
    real = run_status.replace_file

    def replace_file(tmp, path):
        if (out / "meta.json").exists():  # what a kill at this write point leaves
            on_disk.append(read_meta(out).get("status"))
        if Path(path).name == "meta.json":
            seen.append(json.loads(Path(tmp).read_text(encoding="utf-8")))
        real(tmp, path)

    monkeypatch.setattr(run_status, "replace_file", replace_file)
    code = main(["run", "control_auction", "--reps", "1", "--out", str(out), "--quiet"])
    capsys.readouterr()
    assert code in (0, 1)
    assert len(on_disk) >= 4 and set(on_disk) == {"running"}  # the panels and report are written under "running"
    assert [m["status"] for m in seen] == ["running", "complete" if code == 0 else "failed"]
    assert seen[-1]["study"] == "control_auction" and "seed" in seen[-1]  # the study's own meta, with its status


# -- SIGTERM / Ctrl-C or a full disk at a write point ---------------------------------------------------------

POINTS = ["results.parquet", "runs.csv", "throughput.png", "report.md", "meta.json"]


@pytest.mark.parametrize("what", ["ENOSPC", "SIGTERM"])
@pytest.mark.parametrize("point", POINTS)
def test_a_full_disk_or_a_signal_at_a_write_point_of_run_says_so(
    point: str, what: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    """At the point's write (for meta.json: the last one, the status), half the temporary file is
    written, then the disk is full or SIGTERM arrives (the CLI makes it a KeyboardInterrupt)."""
    out, real, calls = tmp_path / "out", run_status.replace_file, []

    def replace_file(tmp, path):
        calls.append(Path(path).name)
        # meta.json and report.md: the writer's own (the first of each is the running mark's)
        if calls[-1] == point and (point not in ("meta.json", "report.md") or calls.count(point) == 2):
            Path(tmp).write_bytes(Path(tmp).read_bytes()[: max(1, Path(tmp).stat().st_size // 2)])
            if what == "SIGTERM":
                raise KeyboardInterrupt
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(tmp, path)

    monkeypatch.setattr(run_status, "replace_file", replace_file)
    code = main(_command("run", out))
    err = capsys.readouterr().err.strip().splitlines()
    meta = read_meta(out)
    assert meta["complete"] is False and not [p for p in out.iterdir() if ".tmp" in p.name]  # no temporary left
    if point not in ("meta.json", "report.md"):
        assert not (out / point).exists()  # never half a file
    if what == "SIGTERM":
        assert code == 130 and meta["status"] == "interrupted"
        assert report_first_line(out).startswith("# INCOMPLETE (interrupted)")
    else:
        assert code == 1 and meta["status"] == "failed"
        assert report_first_line(out).startswith("# INCOMPLETE (failed)")
        assert err == [f"marketsim run: error: cannot write {out / point}: No space left on device (the disk is "
                       "full)"]  # fmt: skip
        assert str(out / point) in meta["error"]


@pytest.mark.parametrize(("kind", "point"), [("learn", "convergence.png"), ("claims", "report.md"),
                                             ("audit", "regret.png")])  # fmt: skip
def test_a_full_disk_in_learn_claims_and_audit_names_the_file_and_says_failed(
    kind: str, point: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    out, real, calls = tmp_path / "out", run_status.replace_file, []

    def replace_file(tmp, path):
        calls.append(Path(path).name)
        # report.md: its second write (the first is the running mark's)
        if calls[-1] == point and (point != "report.md" or calls.count(point) == 2):
            Path(tmp).write_bytes(b"")  # a 0-byte file, as a full disk leaves it
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(tmp, path)

    monkeypatch.setattr(run_status, "replace_file", replace_file)
    assert main(_command(kind, out)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"marketsim {kind}: error: cannot write {out / point}: No space left on device (the disk is full)"
    assert read_meta(out)["status"] == "failed" and report_first_line(out).startswith("# INCOMPLETE (failed)")
    sizes = {p.name: p.stat().st_size for p in out.iterdir() if p.name != run_status.LOCK_NAME}
    assert point not in sizes or point == "report.md"
    assert all(sizes.values()) and not [n for n in sizes if ".tmp" in n]  # no 0-byte file, no temporary


def test_a_signal_while_meta_json_is_written_makes_it_interrupted(tmp_path: Path, monkeypatch, capsys) -> None:
    """SIGTERM while finalize writes the status (signals held back there): the status written is
    ``interrupted`` and the exit status 130, never 130 beside ``complete``."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    out, real, sent = tmp_path / "out", run_status.replace_file, []

    def replace_file(tmp, path):
        if Path(path).name == "meta.json" and json.loads(Path(tmp).read_text())["status"] == "complete" and not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGTERM)  # held back until meta.json is written
        real(tmp, path)

    monkeypatch.setattr(run_status, "replace_file", replace_file)
    assert main(_command("run", out)) == 130
    capsys.readouterr()
    assert sent and read_meta(out)["status"] == "interrupted" and read_meta(out)["complete"] is False
    assert report_first_line(out).startswith("# INCOMPLETE (interrupted)")
    assert set(pd.read_parquet(out / "results.parquet")["policy"]) == {"maxmin"}  # the finished run is kept


# -- the result table ------------------------------------------------------------------------------------


def test_run_prints_the_per_policy_table_also_with_quiet(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["run", "default", "--reps", "1", "--policies", "maxmin,gavel", "--quiet", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("per-policy summary"))
    assert lines[i + 1].split() == ["policy", "variant", "total_act", "utilisation", "jobs_completed", "mean_jct_s",
                                    "p95_jct_s"]  # fmt: skip
    printed = {r.split()[0]: [float(x) for x in r.split()[2:]] for r in lines[i + 2 : i + 4]}
    # the same figures as report.md's per-policy table (3 decimals there, 4 significant digits here)
    report = (out / "report.md").read_text().split("## Per-policy summary")[1].splitlines()
    head = next(r for r in report if r.startswith("| policy"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    for row in (r for r in report if r.startswith("| maxmin") or r.startswith("| gavel")):
        cells = dict(zip(cols, (c.strip() for c in row.strip("|").split("|")), strict=True))
        want = [float(cells[c]) for c in ("total_act", "utilisation", "jobs_completed", "mean_jct_s", "p95_jct_s")]
        assert printed[cells["policy"]] == pytest.approx(want, rel=1e-3)
    assert lines[-1].split()[0] in printed  # the table ends the output


def test_run_computes_the_per_policy_summary_once(tmp_path: Path, monkeypatch, capsys) -> None:
    """report.md's per-policy table and the printed one are one computation (it reads every record of
    a 100k-job trace run: twice cost seconds), and the printed table is that summary."""
    import marketsim.analysis.engine.stats as stats
    import marketsim.analysis.frontends.report as report

    calls, real = [], stats.policy_summary

    def counted(*a, **k):
        calls.append(real(*a, **k))
        return calls[-1]

    monkeypatch.setattr(stats, "policy_summary", counted)
    monkeypatch.setattr(report, "policy_summary", counted)
    out = tmp_path / "out"
    assert main(["run", "default", "--reps", "1", "--policies", "maxmin", "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert len(calls) == 1
    assert f"{calls[0]['total_act'].iloc[0]:.4g}" in printed.split("per-policy summary")[1]


# -- earlier runs, other writers -------------------------------------------------------------------------------


def test_a_folder_with_only_an_earlier_runs_results_is_moved_aside_whole(tmp_path: Path, capsys) -> None:
    """An earlier trace run's completions.parquet and jct_cdf.png (its meta.json gone) are never left
    beside the new run's meta.json."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "completions.parquet").write_bytes(b"an earlier run's")
    (out / "jct_cdf.png").write_bytes(b"an earlier run's")
    assert main(_command("run", out)) == 0
    assert "moved it to" in capsys.readouterr().err
    assert _visible(out) == {"meta.json", "report.md", "results.parquet", "runs.csv", "throughput.png"}
    [old] = [p for p in tmp_path.iterdir() if p.name.startswith("out.")]
    assert _visible(old) == {"completions.parquet", "jct_cdf.png"}


def test_a_second_writer_that_opens_the_lock_before_the_first_moves_the_folder_loses(
    tmp_path: Path, monkeypatch
) -> None:
    """Two commands on one --out, interleaved at the worst point: B opens ``out/.marketsim.lock``,
    then A takes ``out`` (moving the earlier run aside with that lock file, and locking a new one),
    then B's ``flock`` succeeds on the moved file. B must still lose, saying another process holds
    the folder (a lock on a file that left ``out`` is not ``out``'s)."""
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    (out / "meta.json").write_text(json.dumps({"status": "complete", "started_at": "2026-01-02T03:04:05+00:00"}))
    real_flock, held, calls = fcntl.flock, [], []

    def flock(fd, op):
        calls.append(fd)
        if len(calls) == 1:  # B, between its open and its flock: A takes the folder
            held.append(run_status._take(out, "--out", True, lambda line: None))
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    try:
        with pytest.raises(InputError, match="another process holds this folder"):
            run_status._take(out, "--out", True, lambda line: None)
    finally:
        monkeypatch.setattr(fcntl, "flock", real_flock)
        fd, dest = held[0]
        run_status._release(out, fd)
    assert dest is not None and read_meta(dest)["status"] == "complete"  # A moved the earlier run aside, whole


# -- SIGTERM exits 130 everywhere; a sweep stopped in its final merge --------------------------------------

_STOP_IN = """
import sys, time
from pathlib import Path
import importlib
from marketsim.analysis.frontends.cli import main

marker, module, name = Path(sys.argv[1]), importlib.import_module(sys.argv[2]), sys.argv[3]

def stop(*args, **kwargs):
    marker.write_text("working")
    while True:
        time.sleep(3600)

setattr(module, name, stop)
sys.exit(main(sys.argv[4:]))
"""


@pytest.mark.parametrize(("kind", "module", "name"), [("learn", "marketsim.analysis.frontends.learn", "run_learning"),
                                                      ("claims", "marketsim.market.audit.claims",
                                                       "run_claims")])  # fmt: skip
def test_sigterm_exits_130_from_learn_and_claims(
    stop_at_marker, kind: str, module: str, name: str, tmp_path: Path
) -> None:
    marker, out = tmp_path / "working", tmp_path / "out"
    args = _command("learn", out) if kind == "learn" else CLAIMS  # claims without a folder too
    code = stop_at_marker([sys.executable, "-c", _STOP_IN, str(marker), module, name, *args], marker, signal.SIGTERM,
                          cwd=ROOT)  # fmt: skip
    assert code == 130
    if kind == "learn":
        assert read_meta(out)["status"] == "interrupted"
        assert report_first_line(out).startswith("# INCOMPLETE (interrupted)")


RESUMABLE = resumable_sweep()


def test_a_sweep_stopped_in_its_final_merge_says_interrupted_and_resumes(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    import marketsim.analysis.engine.sweep as sweep

    cfg, out = tmp_path / "resumable.toml", tmp_path / "out"
    cfg.write_text(RESUMABLE, encoding="utf-8")

    def stop(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C / SIGTERM while the parts are merged

    with monkeypatch.context() as m:
        m.setattr(sweep, "consolidate", stop)
        assert main(["sweep", str(cfg), "--out", str(out), "--quiet"]) == 130
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["complete"] is False
    assert manifest["sessions"][-1]["ended"] == "interrupted"
    assert report_first_line(out).startswith("# INCOMPLETE (interrupted)")
    assert main(["sweep", str(cfg), "--out", str(out), "--resume", "--quiet"]) == 0
    capsys.readouterr()
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["status"] == "complete" and manifest["sessions"][-1]["to_run"] == 0


def test_write_atomic_leaves_the_old_file_and_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("old\n")

    def full(p: Path) -> None:
        p.write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(run_status.WriteError) as info:
        run_status.write_atomic(path, full)
    assert str(info.value) == f"cannot write {path}: No space left on device (the disk is full)"
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]

    def stopped(p: Path) -> None:
        p.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # anything but an OSError keeps its type
        run_status.write_atomic(path, stopped)
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]
