"""Killed and interrupted runs leave folders that say so (issue #27 item 7): meta.json says
``"status": "running"`` / ``"complete": false`` from the start, ``"interrupted"`` after SIGINT or
SIGTERM and ``"complete"`` only at the end; report.md says INCOMPLETE until then. A re-run (or a
sweep's --resume) completes the folder. The tests wait on files and output, not on fixed sleeps."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from analysis.frontends.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def _signals_not_ignored():
    """A suite started in the background inherits SIGINT ignored (see test_interrupt.py)."""
    old = signal.getsignal(signal.SIGINT)
    if old is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _wait_for(pred, timeout: float = 90.0) -> None:
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("condition not reached")
        time.sleep(0.05)


def _meta(out: Path) -> dict:
    return json.loads((out / "meta.json").read_text(encoding="utf-8"))


def _running(out: Path) -> bool:
    try:
        return _meta(out).get("status") == "running"
    except (OSError, ValueError):
        return False


def test_a_sigkilled_run_reads_incomplete_and_a_rerun_completes_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "analysis.frontends.cli", "run", "default", "--reps", "40", "--out", str(out),
           "--quiet"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: _running(out))
        assert p.poll() is None, "the run ended before the kill"
        p.kill()
    finally:
        p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL
    meta = _meta(out)
    assert meta["status"] == "running" and meta["complete"] is False and meta["scenario"] == "default"
    assert (out / "report.md").read_text().startswith("# INCOMPLETE: run in progress or killed")
    # the same command again (here with one replication, to be quick) completes the folder
    assert main(["run", "default", "--reps", "1", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    meta = _meta(out)
    assert meta["status"] == "complete" and meta["complete"] is True
    assert "INCOMPLETE" not in (out / "report.md").read_text()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_keep_finished_runs_and_say_interrupted(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "analysis.frontends.cli", "run", "default", "--reps", "40", "--out", str(out)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: p.stderr.read(1), "")), daemon=True)
    reader.start()

    def finished_runs() -> int:
        counts = re.findall(r"(\d+)/\d+ \[", "".join(seen))
        return int(counts[-1]) if counts else 0

    _wait_for(lambda: finished_runs() >= 2)
    assert p.poll() is None, "the run ended before the signal"
    p.send_signal(sig)
    p.wait(timeout=60)
    reader.join(timeout=5)
    assert p.returncode == 130 and "interrupted" in "".join(seen)
    meta = _meta(out)
    assert meta["status"] == "interrupted" and meta["complete"] is False and meta["interrupted"] is True
    assert 2 <= meta["runs"] < 40 * 6
    report = (out / "report.md").read_text()
    assert report.startswith("# default") and "**INCOMPLETE: interrupted (SIGINT or SIGTERM)" in report


def test_a_signal_before_any_result_marks_the_folder_interrupted(tmp_path: Path, monkeypatch) -> None:
    """Interrupted while the runs start (before run_experiment returns): the 'running' mark becomes
    'interrupted', with a report.md that says nothing here is a result."""
    import analysis.engine.runner

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(analysis.engine.runner, "run_experiment", stop)
    out = tmp_path / "out"
    assert main(["run", "default", "--reps", "1", "--out", str(out), "--quiet"]) == 130
    assert _meta(out)["status"] == "interrupted" and _meta(out)["complete"] is False
    assert (out / "report.md").read_text().startswith("# INCOMPLETE: interrupted")


RESUMABLE = """
name = "resumable"
scenarios = ["oef_lying"]
policies = ["oef-noncoop", "maxmin"]
replications = 4
seed = 11
[grid]
"workload.tenants" = [6]
rounds = [8]
[[strategy]]
name = "inflate"
kind = "fast"
tenant = 0
factor = [1.3, 2.0]
"""


def test_a_sigtermed_sweep_says_interrupted_and_resume_completes_it(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "resumable.toml"
    cfg.write_text(RESUMABLE, encoding="utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "analysis.frontends.cli", "sweep", str(cfg), "--out", str(out), "--chunk-size", "1",
           "--quiet"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: len(list((out / "parts").glob("part-*.parquet"))) >= 2)
        assert p.poll() is None, "the sweep ended before the signal"
        p.send_signal(signal.SIGTERM)
    finally:
        p.wait(timeout=60)
    assert p.returncode == 130
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["complete"] is False
    assert main(["sweep", str(cfg), "--out", str(out), "--resume", "--quiet"]) == 0
    capsys.readouterr()
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["status"] == "complete" and manifest["complete"] is True


def test_a_study_run_is_marked_complete_at_the_end(tmp_path: Path, capsys) -> None:
    out = tmp_path / "study"
    code = main(["run", "control_auction", "--reps", "1", "--out", str(out), "--quiet"])
    capsys.readouterr()
    assert code in (0, 1)
    meta = _meta(out)
    assert meta["status"] == "complete" and meta["complete"] is (code == 0)
    assert "INCOMPLETE" not in (out / "report.md").read_text()
