"""Long solves: progress and Ctrl-C (issue #10)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from market import registry
from market.oef import lp

ROOT = Path(__file__).resolve().parents[1]


def _unordered(n: int, k: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    steps = rng.uniform(np.log(0.8), np.log(1.6), (n, k - 1))
    return np.c_[np.ones(n), np.exp(np.cumsum(steps, axis=1))]


def test_cooperative_rounds_are_reported() -> None:
    seen: list[str] = []
    lp.PROGRESS = seen.append
    try:
        a = registry.get("oef-coop", "fair-share").fn(_unordered(60), [20, 20, 20, 20], cache=False)
    finally:
        lp.PROGRESS = None
    assert len(seen) == a.info["cg_rounds"] >= 1
    assert seen[0].startswith("oef-coop: round 1,") and "envy rows" in seen[-1]


def test_ctrl_c_stops_a_long_cooperative_solve_promptly(tmp_path: Path) -> None:
    """1,000 unordered tenants take minutes; SIGINT must end the process with status 130 in seconds."""
    f = tmp_path / "w.csv"
    np.savetxt(f, _unordered(1000), delimiter=",")
    cmd = [sys.executable, "-m", "analysis.cli", "allocate", "--policy", "oef-coop", "--speedups", f"@{f}",
           "--capacity", "300,300,300,300", "--json"]  # fmt: skip
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)
    assert p.poll() is None, "the solve ended before the interrupt: the instance is too small for this test"
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "interrupted" in err and out == ""
    assert time.monotonic() - t0 < 10.0
