"""Output folders say whether their run finished, and a re-run never overwrites what a user computed
(marketsim.analysis.engine.run_status; docs/inputs.md "Killed and interrupted runs").

meta.json says ``"status": "running"`` from the start and ``complete`` / ``capped`` / ``failed`` /
``interrupted`` at the end; a SIGKILLed run's folder still says ``running`` and the next command
labels it ``killed``; report.md's first line reads ``# INCOMPLETE`` for every status but complete.
A folder that holds a run is moved aside to ``NAME.<start time>`` before a new run writes there.

The signal tests are deterministic: the CLI runs in a child whose ``execute_run`` stops before the
third run, writes a marker file and sleeps; the test waits for the marker (never for a fixed time),
so exactly two runs have finished when the signal arrives, whatever the machine's load."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from testkit import read_meta, report_first_line, resumable_sweep, signals_not_ignored  # noqa: F401 (fixture)

from marketsim.analysis.engine import run_status
from marketsim.analysis.frontends.cli import main
from marketsim.market.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(-\d+)?$")
# one policy, one replication of the README's default scenario: the quickest real run
QUICK = ["run", "default", "--reps", "1", "--policies", "maxmin", "--quiet"]


def _siblings(out: Path) -> list[Path]:
    return sorted(p for p in out.parent.iterdir() if p.name.startswith(out.name + ".") and STAMP.search(p.name))


# -- a re-run keeps the earlier run ------------------------------------------------------------------


def test_running_the_same_command_twice_moves_the_first_run_aside(tmp_path: Path, capsys) -> None:
    out = tmp_path / "default"
    assert main([*QUICK, "--out", str(out)]) == 0
    first = (out / "results.parquet").read_bytes()
    started = read_meta(out)["started_at"]
    assert read_meta(out)["status"] == "complete" and report_first_line(out) == "# default"
    capsys.readouterr()
    assert main([*QUICK, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    [old] = _siblings(out)
    stamp = started[:19].replace(":", "-")  # the first run's start time (UTC) names the folder
    assert old.name == f"default.{stamp}"
    assert f"moved it to {old}/" in err and err.count("moved it to") == 1
    assert (old / "results.parquet").read_bytes() == first and read_meta(old)["started_at"] == started
    assert read_meta(out)["status"] == "complete" and read_meta(out)["started_at"] >= started
    # the same seed gives the same numbers; the lock file is gone once the command ended
    pd.testing.assert_frame_equal(pd.read_parquet(out / "results.parquet"), pd.read_parquet(old / "results.parquet"))
    assert not (out / run_status.LOCK_NAME).exists() and not (old / run_status.LOCK_NAME).exists()


def test_move_aside_names_the_folder_after_the_start_and_never_collides(tmp_path: Path) -> None:
    out = tmp_path / "r"
    names = []
    for _ in range(3):
        out.mkdir()
        (out / "meta.json").write_text(json.dumps({"status": "complete", "started_at": "2026-01-02T03:04:05+00:00"}))
        names.append(run_status.move_aside(out).name)
    assert names == ["r.2026-01-02T03-04-05", "r.2026-01-02T03-04-05-2", "r.2026-01-02T03-04-05-3"]
    # local times are written in UTC; a folder without meta.json is named after its report's mtime
    out.mkdir()
    (out / "meta.json").write_text(json.dumps({"started_at": "2026-01-02T05:04:05+02:00"}))
    assert run_status.move_aside(out).name == "r.2026-01-02T03-04-05-4"
    out.mkdir()
    (out / "report.md").write_text("# Incentive audit report\n")
    os.utime(out / "report.md", (1_700_000_000, 1_700_000_000))
    assert run_status.move_aside(out).name == "r.2023-11-14T22-13-20"


def test_writers_called_directly_keep_an_earlier_report(tmp_path: Path, capsys) -> None:
    from marketsim.analysis.frontends.audit_report import write_audit_report

    out = tmp_path / "audit"
    write_audit_report(out)
    (out / "report.md").write_text("# Incentive audit report\n\nthe first one\n")
    write_audit_report(out)
    [old] = _siblings(out)
    assert "the first one" in (old / "report.md").read_text() and "the first one" not in (out / "report.md").read_text()
    assert f"moved it to {old}/" in capsys.readouterr().err
    assert run_status.guard(tmp_path / "nothing-here") is None  # a missing or empty folder is used as it is


def test_claims_report_keeps_an_earlier_report_and_says_how_it_ended(tmp_path: Path, monkeypatch, capsys) -> None:
    import marketsim.market.audit.claims

    out = tmp_path / "claims"
    args = ["claims", "--paper", "oasis", "--claim", "C-O2", "--report", str(out)]
    assert main(args) == 0
    assert read_meta(out)["status"] == "complete" and read_meta(out)["claims"] == "oasis"
    assert report_first_line(out) == "# Incentive audit report"
    first = (out / "report.md").read_text()

    def stop(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while the ledger runs

    monkeypatch.setattr(marketsim.market.audit.claims, "run_claims", stop)
    capsys.readouterr()
    assert main(args) == 130
    [old] = _siblings(out)  # the first report, whole and unchanged
    assert (old / "report.md").read_text() == first and f"moved it to {old}/" in capsys.readouterr().err
    assert read_meta(out)["status"] == "interrupted" and report_first_line(out).startswith("# INCOMPLETE (interrupted)")


def test_explore_lying_keeps_an_earlier_lie_sweep(tmp_path: Path, capsys) -> None:
    """A folder from before status files (a lie_sweep.csv, no meta.json) is moved aside too."""
    from marketsim.analysis.frontends import explore_lying

    out = tmp_path / "lie"
    out.mkdir()
    (out / "lie_sweep.csv").write_text("an earlier sweep\n")
    assert explore_lying.main(["--reps", "1", "--factors", "1.3", "--out", str(out)]) == 0
    [old] = _siblings(out)
    assert (old / "lie_sweep.csv").read_text() == "an earlier sweep\n"
    assert f"moved it to {old}/" in capsys.readouterr().err
    assert read_meta(out)["status"] == "complete" and "lambda=1.3" in (out / "lie_sweep.csv").read_text()


def test_a_folder_another_live_process_writes_is_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "meta.json").write_text(json.dumps({"status": "running", "pid": 4242, "started_at": "2026-01-01T00:00:00"}))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
         str(out / run_status.LOCK_NAME)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert main([*QUICK, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--out" in err[0] and "another process holds this folder (pid 4242" in err[0]
        assert read_meta(out)["status"] == "running" and not _siblings(out)  # nothing moved, nothing labelled
        with pytest.raises(InputError, match="in use"):
            run_status.guard(out)
    finally:
        holder.communicate("", timeout=30)
    # its holder gone, the folder reads killed: the next command labels it so and moves it aside
    assert main([*QUICK, "--out", str(out)]) == 0
    [old] = _siblings(out)
    assert read_meta(old)["status"] == "killed" and report_first_line(old).startswith("# INCOMPLETE (killed)")
    assert "(killed); moved it to" in capsys.readouterr().err


def test_the_current_directory_is_never_moved(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*QUICK, "--out", "."]) == 0
    assert main([*QUICK, "--out", "."]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "current directory" in err and read_meta(tmp_path)["status"] == "complete"


# -- statuses ------------------------------------------------------------------------------------------


def test_a_failed_run_says_so_and_the_others_are_results(tmp_path: Path, monkeypatch, capsys) -> None:
    from marketsim.scenarios.loader import Scenario

    real = Scenario.build_model

    def build_model(self, policy, variant, seed):
        if policy == "maxmin":
            raise RuntimeError("worker exploded")
        return real(self, policy, variant, seed)

    monkeypatch.setattr(Scenario, "build_model", build_model)
    out = tmp_path / "o"
    assert main(["run", "default", "--reps", "1", "--policies", "maxmin,gavel", "--out", str(out), "--quiet"]) == 1
    assert "worker exploded" in capsys.readouterr().err
    meta = read_meta(out)
    assert meta["status"] == "failed" and meta["complete"] is False and meta["failed_runs"] == 1
    assert "worker exploded" in (out / "errors.txt").read_text()
    assert report_first_line(out) == "# INCOMPLETE (failed): 1 run(s) or cell(s) failed (errors.txt); the others are " \
                               "reported below"  # fmt: skip
    assert set(pd.read_parquet(out / "results.parquet")["policy"]) == {"gavel"}


def test_a_command_that_raises_after_claiming_its_folder_says_failed(tmp_path: Path, monkeypatch) -> None:
    import marketsim.analysis.engine.runner

    def boom(*args, **kwargs):
        raise MemoryError("out of memory")

    monkeypatch.setattr(marketsim.analysis.engine.runner, "run_experiment", boom)
    out = tmp_path / "o"
    with pytest.raises(MemoryError):
        main([*QUICK, "--out", str(out)])
    assert read_meta(out)["status"] == "failed" and "out of memory" in read_meta(out)["error"]
    assert report_first_line(out).startswith("# INCOMPLETE (failed): the command failed")


def test_a_signal_before_any_result_marks_the_folder_interrupted(tmp_path: Path, monkeypatch) -> None:
    """Interrupted while the runs start (before run_experiment returns): the 'running' mark becomes
    'interrupted', with a report.md that says nothing here is a result."""
    import marketsim.analysis.engine.runner

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(marketsim.analysis.engine.runner, "run_experiment", stop)
    out = tmp_path / "out"
    assert main([*QUICK, "--out", str(out)]) == 130
    assert read_meta(out)["status"] == "interrupted" and read_meta(out)["complete"] is False
    assert report_first_line(out).startswith("# INCOMPLETE (interrupted)")


def test_an_interrupted_study_keeps_its_finished_cells(tmp_path: Path, monkeypatch, capsys) -> None:
    import marketsim.analysis.engine.studies as studies

    real, calls = studies.execute_cell, []

    def execute_cell(spec):
        calls.append(spec.run_id)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C while the third cell runs
        return real(spec)

    monkeypatch.setattr(studies, "execute_cell", execute_cell)
    out = tmp_path / "study"
    assert main(["run", "control_auction", "--reps", "1", "--out", str(out), "--quiet"]) == 130
    assert "interrupted; the 2 finished cell(s) were written" in capsys.readouterr().err
    meta = read_meta(out)
    assert meta["status"] == "interrupted" and meta["complete"] is False and meta["interrupted"] is True
    assert report_first_line(out).startswith("# INCOMPLETE (interrupted)")
    rows = pd.read_parquet(out / "results.parquet")
    assert rows[["panel", "x", "replication"]].drop_duplicates().shape[0] == 2


def test_a_study_run_is_marked_complete_at_the_end(tmp_path: Path, capsys) -> None:
    out = tmp_path / "study"
    code = main(["run", "control_auction", "--reps", "1", "--out", str(out), "--quiet"])
    capsys.readouterr()
    assert code in (0, 1)
    meta = read_meta(out)
    assert meta["status"] == ("complete" if code == 0 else "failed") and meta["complete"] is (code == 0)
    assert report_first_line(out).startswith("# control_auction") == (code == 0)


# -- signals, from outside -------------------------------------------------------------------------------

_STOP_BEFORE_THIRD_RUN = """
import sys, time
from pathlib import Path
import marketsim.analysis.engine.runner as runner
from marketsim.analysis.frontends.cli import main

marker, real, calls = Path(sys.argv[1]), runner.execute_run, []

def execute_run(spec, spill_dir=None):
    calls.append(spec.run_id)
    if len(calls) == 3:  # two runs have finished: say so, then wait for the test's signal
        marker.write_text("2 runs done")
        while True:
            time.sleep(3600)
    return real(spec, spill_dir=spill_dir)

runner.execute_run = execute_run
sys.exit(main(sys.argv[2:]))
"""


def _stopped_run(stop_at_marker, tmp_path: Path, sig: signal.Signals) -> tuple[int, Path]:
    """Run the default scenario (one replication, three policies) in a child, stop it with ``sig``
    once exactly two runs have finished; returns its exit status and its --out folder."""
    out, marker = tmp_path / "out", tmp_path / "two-runs-done"
    cmd = [sys.executable, "-c", _STOP_BEFORE_THIRD_RUN, str(marker), "run", "default", "--reps", "1", "--policies",
           "maxmin,gavel,oef-noncoop", "--out", str(out), "--quiet"]  # fmt: skip
    return stop_at_marker(cmd, marker, sig, cwd=ROOT), out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_and_sigint_keep_the_finished_runs_and_say_interrupted(
    stop_at_marker, tmp_path: Path, sig: signal.Signals
) -> None:
    code, out = _stopped_run(stop_at_marker, tmp_path, sig)
    assert code == 130
    meta = read_meta(out)
    assert meta["status"] == "interrupted" and meta["complete"] is False and meta["interrupted"] is True
    assert meta["runs"] == 2 and len(pd.read_csv(out / "runs.csv")) == 2
    assert set(pd.read_parquet(out / "results.parquet")["policy"]) == {"maxmin", "gavel"}
    assert report_first_line(out) == "# INCOMPLETE (interrupted): interrupted (SIGINT or SIGTERM); only the 2 run(s) " \
                               "finished by then are here"  # fmt: skip
    assert not (out / run_status.LOCK_NAME).exists()


def test_a_sigkilled_run_reads_incomplete_and_the_next_run_keeps_it(stop_at_marker, tmp_path: Path, capsys) -> None:
    code, out = _stopped_run(stop_at_marker, tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    meta = read_meta(out)
    assert meta["status"] == "running" and meta["complete"] is False and meta["scenario"] == "default"
    assert report_first_line(out) == "# INCOMPLETE (running): run in progress or killed"
    spilled = sorted(p.relative_to(out / ".parts") for p in (out / ".parts").rglob("*.arrow"))
    assert len({p.parts[0] for p in spilled}) == 2  # the two finished runs' records, on disk
    # the next run (the same command, here quicker) moves it aside, labelled killed, with its parts
    assert main([*QUICK, "--out", str(out)]) == 0
    [old] = _siblings(out)
    assert "(killed); moved it to" in capsys.readouterr().err
    assert read_meta(old)["status"] == "killed" and report_first_line(old).startswith("# INCOMPLETE (killed)")
    assert sorted(p.relative_to(old / ".parts") for p in (old / ".parts").rglob("*.arrow")) == spilled
    assert read_meta(out)["status"] == "complete"


RESUMABLE = resumable_sweep()

_STOP_BEFORE_THIRD_CHUNK = """
import sys, time
from pathlib import Path
import marketsim.analysis.engine.sweep as sweep
from marketsim.analysis.frontends.cli import main

marker, real, calls = Path(sys.argv[1]), sweep.execute_chunk, []

def execute_chunk(chunk):
    calls.append(chunk)
    if len(calls) == 3:  # two chunks are done (and written before this one is asked for)
        marker.write_text("2 chunks done")
        while True:
            time.sleep(3600)
    return real(chunk)

sweep.execute_chunk = execute_chunk
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_stopped_sweep_says_so_keeps_its_parts_and_resumes(
    stop_at_marker, tmp_path: Path, sig: signal.Signals, capsys
) -> None:
    cfg, out, marker = tmp_path / "resumable.toml", tmp_path / "out", tmp_path / "two-chunks-done"
    cfg.write_text(RESUMABLE, encoding="utf-8")
    cmd = [sys.executable, "-c", _STOP_BEFORE_THIRD_CHUNK, str(marker), "sweep", str(cfg), "--out", str(out),
           "--chunk-size", "1", "--quiet"]  # fmt: skip
    rc = stop_at_marker(cmd, marker, sig, cwd=ROOT)
    parts = sorted((out / "parts").glob("part-*.parquet"))
    assert len(parts) == 2  # every finished chunk is on disk
    manifest = json.loads((out / "sweep.json").read_text())
    if sig == signal.SIGKILL:
        assert rc == -signal.SIGKILL and manifest["status"] == "running"
        assert report_first_line(out) == "# INCOMPLETE (running): run in progress or killed"
    else:
        assert rc == 130 and manifest["status"] == "interrupted"
        assert report_first_line(out).startswith("# INCOMPLETE (interrupted)")
    assert manifest["complete"] is False
    # without --resume the folder is refused (its parts would be mixed with a new sweep's)
    assert main(["sweep", str(cfg), "--out", str(out), "--quiet"]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["sweep", str(cfg), "--out", str(out), "--resume", "--quiet"]) == 0
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["status"] == "complete" and manifest["complete"] is True
    assert manifest["sessions"][0]["ended"] == ("killed" if sig == signal.SIGKILL else "interrupted")
    assert manifest["sessions"][-1]["skipped"] == 2 and report_first_line(out) == "# sweep resumable"
    assert all(p.exists() for p in parts)  # the first session's parts were kept, not recomputed
