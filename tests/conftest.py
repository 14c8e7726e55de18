"""Shared pytest fixtures: the path to the read-only shared data (tests skip if it is absent), and the
derandomised, untimed hypothesis profile every run uses (``HYPOTHESIS_PROFILE=explore`` draws fresh examples)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Every run (CI, the README's test command) is derandomised and untimed: examples are derived from each
# test (no example database), there is no per-example deadline and no too_slow health check, so a run
# can fail neither by the luck of a fresh draw nor by the load of the machine. To look for new
# counterexamples, draw fresh examples with HYPOTHESIS_PROFILE=explore (a finding is then made a test).
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow], "print_blob": True}
settings.register_profile("ci", derandomize=True, database=None, **_UNTIMED)
settings.register_profile("explore", **_UNTIMED)
settings.load_profile("explore" if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else "ci")

pytest_plugins = ["pytester"]

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the project; skips the test when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not available")
    return SHARED_DATA


@pytest.fixture(scope="session")
def oef_small_ledger() -> list:
    """The OEF claims ledger at the default size and seed (``run_claims("oef", size="small", seed=0)``),
    measured once per test process: it is deterministic, so the tests that read it share one run
    (about 13 CPU s) instead of each measuring it again."""
    from marketsim.market.audit.claims import run_claims

    return run_claims("oef", size="small", seed=0)


@pytest.fixture
def cli_reads_oef_small_ledger(monkeypatch: pytest.MonkeyPatch, oef_small_ledger: list) -> list:
    """``marketsim claims --paper oef`` (default size and seed) prints a copy of :func:`oef_small_ledger`
    instead of measuring it again; every other ledger is measured as usual. For CLI tests of the
    printing and report paths, whose ledger numbers test_claims.py checks."""
    import copy

    import marketsim.market.audit.claims as claims

    real = claims.run_claims

    def run_claims(paper=None, *, size="small", seed=0, ids=None):
        if paper == "oef" and size == "small" and seed == 0 and ids is None:
            return copy.deepcopy(oef_small_ledger)
        return real(paper, size=size, seed=seed, ids=ids)

    monkeypatch.setattr(claims, "run_claims", run_claims)
    return oef_small_ledger


def _stop_at_marker(cmd: list[str], marker: Path, sig: int, *, cwd: Path | None = None, bound_s: float = 300.0) -> int:
    """Start ``cmd``, wait until it writes ``marker`` (the child announces the point at which to be stopped,
    so no fixed wait races with the machine's load), send ``sig`` and return the exit status. ``bound_s``
    bounds a hung child; it is not a timing assumption."""
    import subprocess
    import time

    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + bound_s
        while not marker.exists():
            assert p.poll() is None, f"the child ended before the signal: {p.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline, f"the child never wrote {marker.name}"
            time.sleep(0.02)
        p.send_signal(sig)
        p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode


@pytest.fixture
def stop_at_marker():
    """:func:`_stop_at_marker`: run a child command and signal it once it writes its marker file."""
    return _stop_at_marker
