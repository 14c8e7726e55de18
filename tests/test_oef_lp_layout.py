"""The LP layer split by job (issue #27): ``marketsim.market.oef.lp`` still exposes every public name of the
modules it was split into (the same objects), its two call-time settings reach the modules that
read them, and ``NoncoopWarmStart.decomposition`` holds the price decomposition's kept program."""

from __future__ import annotations

import highspy
import numpy as np

from marketsim.market.oef import coop_lp, highs_model, lp, noncoop_lp, programs, scipy_lp, solution, staircase
from marketsim.market.oef.maxmin import PriceWarmStart
from marketsim.market.oef.mechanisms import oef_noncoop

HOMES = (programs, scipy_lp, highs_model, staircase, noncoop_lp, coop_lp, solution)


def test_every_name_of_lp_is_its_home_modules_object() -> None:
    found = {}
    for mod in HOMES:
        for name in mod.__all__:
            found.setdefault(name, getattr(mod, name))
    for name in lp.__all__:
        assert getattr(lp, name) is found[name], name
    # the names lp exported before the split are all still there
    before = {"ZERO_TOL", "LinearProgram", "capacity_rows", "build_noncoop", "build_coop", "build_si_constrained",
              "build_gavel", "build_capped_throughput", "build_pe_gap", "solve", "clip_solution", "column_scale",
              "ef_rows", "all_pairs", "solve_rows", "noncoop_csc", "Staircase", "staircase", "solve_noncoop",
              "NoncoopWarmStart", "solve_coop", "ef_violations", "row_envy", "AllocationCache", "CACHE",
              "AUTO_IPM_NONZEROS", "choose_solver", "PROGRESS", "COLD_DECOMPOSE_ROWS_PER_TYPE"}  # fmt: skip
    assert all(hasattr(lp, n) for n in before) and before <= set(dir(lp))


def test_settings_written_through_lp_reach_the_modules_that_read_them() -> None:
    default = noncoop_lp.COLD_DECOMPOSE_ROWS_PER_TYPE
    try:
        lp.COLD_DECOMPOSE_ROWS_PER_TYPE = 7
        assert noncoop_lp.COLD_DECOMPOSE_ROWS_PER_TYPE == 7
        noncoop_lp.COLD_DECOMPOSE_ROWS_PER_TYPE = 9
        assert lp.COLD_DECOMPOSE_ROWS_PER_TYPE == 9
        lp.PROGRESS = print
        assert coop_lp.PROGRESS is print and lp.PROGRESS is print
    finally:
        lp.COLD_DECOMPOSE_ROWS_PER_TYPE = default
        lp.PROGRESS = None
    assert coop_lp.PROGRESS is None and "PROGRESS" not in vars(lp)


def test_the_warm_start_keeps_the_decompositions_program() -> None:
    rng = np.random.default_rng(2)
    W = np.exp(np.cumsum(np.log(rng.uniform(0.8, 1.6, (150, 6))), axis=1))
    W /= W[:, :1]
    m = np.full(6, 60)
    warm = lp.NoncoopWarmStart()
    assert isinstance(warm.decomposition, PriceWarmStart) and not hasattr(warm, "prices")
    oef_noncoop(W, m, warm_start=warm, row_ids=list(range(150)))
    assert warm.decomposition.prices is not None and warm.decomposition.model is None  # prices only
    W2 = np.vstack([W[3:], W[:3][:, ::-1] / W[:3][:, ::-1][:, :1]])
    again = oef_noncoop(W2, m, warm_start=warm, row_ids=list(range(3, 150)) + [1000, 1001, 1002])
    assert again.info["noncoop_path"] == "decomposition"
    assert isinstance(warm.decomposition.model.h, highspy.Highs)  # the reduced program, kept for next round
