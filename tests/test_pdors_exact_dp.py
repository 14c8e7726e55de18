"""PD-ORS's pricing DP on exact workloads (marketsim.market.pdors.pricing): brute force, the plain-loop
reference, credited = true progress, and the C-P7 witness of issue #32 (a grid artefact)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketsim.market.pdors import Pdors, PdorsConfig
from marketsim.market.pdors.generators import pdors_tiny_from_params, pdors_tiny_instance
from marketsim.market.pdors.offline import pdors_offline_optimum
from marketsim.market.pdors.pricing import DONE_RTOL, SlotOptions, exact_dp, schedule_progress
from marketsim.market.pdors.reference import exact_dp_reference

# the C-P7 "counterexample" of the hunt (OPT/ALG = 2833 with dp_units = 40): issue #32
WITNESS = [[0.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.5, 5.9, 1.3], [3.0, 6.0, 3.0, 2.0, 0.5, 1.0, 1.0, 1.0, 4.2, 2.5],
           [0.0, 5.0, 4.0, 2.0, 1.0, 2.0, 2.0, 1.1, 4.8, 3.3]]  # fmt: skip
WITNESS_CAP = 4.678081717034623


def _options(rng: np.random.Generator, K: int, ci: float, ce: float) -> SlotOptions:
    a = rng.integers(0, 4, K)
    b = np.where(a == 0, rng.integers(1, 4, K), 0)
    cost = rng.integers(1, 6, K).astype(float)  # small integers: many exact ties
    prog = a / ci + b / ce
    return SlotOptions(cost, a.astype(np.int64), b.astype(np.int64), prog, tuple([None] * K))


def _brute(opts: list[SlotOptions], V: float, ci: float, ce: float) -> np.ndarray:
    nT = len(opts)
    best = np.full(nT, math.inf)
    for j in range(nT):
        for seq in itertools.product(*[range(-1, o.cost.size) for o in opts[: j + 1]]):
            A = sum(int(opts[t].dA[k]) for t, k in enumerate(seq) if k >= 0)
            B = sum(int(opts[t].dB[k]) for t, k in enumerate(seq) if k >= 0)
            if A / ci + B / ce >= V * (1 - DONE_RTOL):
                best[j] = min(best[j], sum(float(opts[t].cost[k]) for t, k in enumerate(seq) if k >= 0))
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 3), st.sampled_from([(0.5, 1.0), (1.0, 1.7)]))
def test_exact_dp_is_the_brute_force_minimum(seed, nT, K, rates):
    """Θ[j] = the cheapest sequence (one option or none per slot) reaching V by slot j; the
    reconstruction attains it with progress >= V; the plain-loop reference agrees exactly."""
    ci, ce = rates
    rng = np.random.default_rng(seed)
    opts = [_options(rng, K, ci, ce) for _ in range(nT)]
    V = float(rng.integers(1, 10))
    res = exact_dp(opts, V, ci, ce)
    np.testing.assert_array_equal(res.theta, _brute(opts, V, ci, ce))
    ref = exact_dp_reference(opts, V, ci, ce)
    np.testing.assert_array_equal(ref.theta, res.theta)
    for j in np.flatnonzero(np.isfinite(res.theta)):
        seq = res.reconstruct(int(j))
        assert seq == ref.reconstruct(int(j))
        A = sum(int(opts[t].dA[k]) for t, k in enumerate(seq) if k >= 0)
        B = sum(int(opts[t].dB[k]) for t, k in enumerate(seq) if k >= 0)
        assert A / ci + B / ce >= V * (1 - DONE_RTOL)
        assert res.credited[j] == A / ci + B / ce
        assert sum(float(opts[t].cost[k]) for t, k in enumerate(seq) if k >= 0) == res.theta[j]


def _credited_vs_true(decs, jobs):
    """(credited, planned) progress of every admitted job's schedule."""
    byid = {j.job_id: j for j in jobs}
    out = []
    for d in decs:
        if d.admitted:
            s = d.schedule
            out.append((d.log["credited_progress"], schedule_progress(byid[d.job_id], s.workers, s.ps),
                        byid[d.job_id].V))  # fmt: skip
    return out


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3.0, 4.0, 8.0]), st.sampled_from(["thm3", "thm4", "fixed"]))
def test_credited_progress_is_the_true_progress(seed, cap, G_mode):
    """Every admitted schedule: the DP's credited progress equals (so is never below) the planned
    progress Σ nw/c of the placements it chose, and that progress reaches V."""
    cl, jobs, consts = pdors_tiny_instance(np.random.default_rng(seed), I=5, T=5, H=2, cap=cap)
    decs = Pdors(cl, consts, PdorsConfig(G_mode=G_mode, repair="never", seed=seed % 100)).run(jobs)
    for credited, true, V in _credited_vs_true(decs, jobs):
        assert credited >= true - 1e-12 * V
        assert true >= V * (1 - DONE_RTOL)


def test_c_p7_witness_is_a_grid_artefact():
    """Issue #32: with dp_units = 40 the grid credits job 0 (one worker = one sample per slot, 3
    samples) 39/40 units in 3 slots, so it finishes a slot late, and rejects job 1, which fits
    exactly: OPT/ALG = 2833. The exact DP completes job 0 by slot 2 and admits job 1: OPT/ALG = 1
    (the MILP's OPT) under both G modes and both rounding seeds. The credited-progress property
    catches the grid (credited 3 samples for 4 samples of work)."""
    cl, jobs, consts = pdors_tiny_from_params(WITNESS, T=5, H=2, cap=WITNESS_CAP)
    opt = pdors_offline_optimum(cl, jobs, time_limit=60)
    assert opt.optimal and opt.bound == pytest.approx(0.891327678120377, rel=1e-9)
    for mode, seed in itertools.product(("thm3", "thm4"), (0, 1)):
        cfg = PdorsConfig(G_mode=mode, delta=0.1, repair="never", seed=seed)
        decs = {d.job_id: d for d in Pdors(cl, consts, cfg).run(jobs)}
        assert all(d.admitted for d in decs.values())
        assert decs[0].completion == 2  # 3 slots of one sample each, slots 0..2
        assert opt.bound / sum(d.utility for d in decs.values()) == pytest.approx(1.0, abs=1e-9)
        grid = Pdors(cl, consts, PdorsConfig(G_mode=mode, delta=0.1, repair="never", seed=seed, dp="grid",
                                             dp_units=40)).run(jobs)  # fmt: skip
        gd = {d.job_id: d for d in grid}
        assert gd[0].completion == 3 and not gd[1].admitted
        assert opt.bound / sum(d.utility for d in grid) == pytest.approx(2832.664586418972, rel=1e-9)
        worst = min(c - t for c, t, _ in _credited_vs_true(grid, jobs))
        assert worst == pytest.approx(-1.0)  # job 0: credited 3 samples, 4 samples of work


def test_slots_in_the_same_state_share_one_option_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """THETA is a function of the slot's state (prices, residual capacities): on an empty cluster
    every slot is alike, so the exact search builds one option set (one set of rounding draws) and
    every slot uses it; a slot whose state differs (a price raised in it) gets its own."""
    from dataclasses import replace

    from marketsim.market.auction.prices import PriceLedger
    from marketsim.market.pdors import pricing
    from marketsim.market.pdors.constants import PdorsConstants
    from marketsim.market.pdors.generators import MACHINE_CAPACITY, RESOURCES, pdors_paper_jobs
    from marketsim.market.pdors.mechanism import pdors_search
    from marketsim.market.pdors.model import PdorsCluster

    calls = []
    real = pricing.slot_options

    def spy(*a, **kw):
        calls.append(a[1].prices.tobytes() + a[1].resid.tobytes())
        return real(*a, **kw)

    monkeypatch.setattr(pricing, "slot_options", spy)
    T, H = 8, 2
    job = replace(next(j for j in pdors_paper_jobs(np.random.default_rng(0), 500, 40) if j.min_duration() <= T // 2),
                  arrival=0)  # fmt: skip
    consts = PdorsConstants.from_values(np.full(4, 100.0), 1e-3)
    cl = PdorsCluster.build(T, np.tile(MACHINE_CAPACITY, (H, 1)), RESOURCES)
    led = PriceLedger(cl.capacity, T, consts.log_L, consts.log_U)
    res = pdors_search(job, led, PdorsConfig(), 1.0)
    assert "options_max" in res.stats and len(calls) == 1  # T slots searched, one state, one option set
    calls.clear()
    led.reserve(3, 0.5 * led.capacity)  # slot 3 half full: another state (prices and residuals)
    pdors_search(job, led, PdorsConfig(), 1.0)
    assert len(calls) == len(set(calls)) == 2
