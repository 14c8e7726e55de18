"""Helpers shared by several test files (imported as ``testkit``: pytest puts tests/ on sys.path).

Scenario and sweep texts used by more than one file live here so that a change of schema is made
once; so do the readers of a results folder and the fixture that restores SIGINT handling.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="module")
def signals_not_ignored():
    """A suite started in the background inherits SIGINT ignored (see test_interrupt.py): restore
    Python's handler for the module's tests. Import it into a test module to use it there."""
    old = signal.getsignal(signal.SIGINT)
    if old is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def read_meta(out: Path) -> dict:
    """The meta.json of a results folder."""
    return json.loads((out / "meta.json").read_text(encoding="utf-8"))


def report_first_line(out: Path) -> str:
    """The first line of a results folder's report.md (``# INCOMPLETE ...`` while it is not done)."""
    return (out / "report.md").read_text(encoding="utf-8").splitlines()[0]


def resumable_sweep(replications: int = 2, factors: tuple[float, ...] = (1.3,)) -> str:
    """A small sweep over the oef_lying scenario (2 policies, 6 tenants, 8 rounds, one fast liar)."""
    factor_list = ", ".join(repr(float(f)) for f in factors)
    return f"""
name = "resumable"
scenarios = ["oef_lying"]
policies = ["oef-noncoop", "maxmin"]
replications = {replications}
seed = 11
[grid]
"workload.tenants" = [6]
rounds = [8]
[[strategy]]
name = "inflate"
kind = "fast"
tenant = 0
factor = [{factor_list}]
"""


def tenant4_trace(trace: str | Path, policies: tuple[str, ...], max_jobs: int) -> str:
    """The packaged Gavel trace's first ``max_jobs`` jobs on 3+3+3 GPUs, 4 tenants, tenant t2 a
    liar that doubles its V100 speedups (variant ``liar``)."""
    names = ", ".join(f'"{p}"' for p in policies)
    return f"""
name = "tenant4"
policies = [{names}]
replications = 1
seed = 1
[cluster]
gpu_types = ["k80", "p100", "v100"]
gpus = [3, 3, 3]
round_seconds = 1800.0
[workload]
trace = "{trace}"
tenancy = 4
max_jobs = {max_jobs}
[[variant]]
name = "liar"
tenant = "t2"
strategy = "scale"
factors = {{ v100 = 2.0 }}
"""
