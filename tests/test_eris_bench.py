"""Smoke run of benchmarks/bench_eris.py --quick: at R = 50, T = 150 the vectorised menu equals the
pure-Python reference (slow: about 10 s)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


@pytest.mark.slow
def test_bench_quick_identical_decisions():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_eris.py"
    spec = importlib.util.spec_from_file_location("bench_eris", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    res = mod.run(quick=True)
    assert res["identical_decisions"]
    assert res["ratio_reference_over_vectorised"] > 1
