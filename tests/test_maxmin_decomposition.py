"""Price decomposition of the per-round max-min LPs (marketsim.market.oef.maxmin): the optimum of the full
program, a feasible allocation, and a certificate that catches a wrong price guess."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from marketsim.market.oef import lp, oef_noncoop
from marketsim.market.oef.maxmin import PriceWarmStart, solve_maxmin
from marketsim.market.registry import get


def full_lp(C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool) -> float:
    """(P) written out in full and solved by scipy's HiGHS: an independent reference for ``t``."""
    n, k = C.shape
    nv = n * k + 1
    cols = np.arange(n * k)
    rows_l = np.repeat(np.arange(n), k)
    cap = sp.csr_array((np.repeat(s, k), (np.tile(np.arange(k), n), cols)), shape=(k, nv))
    thr = sp.csr_array((np.concatenate([-C.ravel(), np.ones(n)]), (np.concatenate([rows_l, np.arange(n)]),
                                                                    np.concatenate([cols, np.full(n, n * k)]))),
                       shape=(n, nv))  # fmt: skip
    fin = np.flatnonzero(np.isfinite(d))
    cap_cols = (fin[:, None] * k + np.arange(k)).ravel()
    caps = sp.csr_array((np.ones(fin.size * k), (np.repeat(np.arange(fin.size), k), cap_cols)), shape=(fin.size, nv))
    c = np.zeros(nv)
    c[-1] = -1.0
    bounds = [(0, 0) if C.ravel()[i] <= 0 else (0, None) for i in range(n * k)] + [(0, None)]
    tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}  # 1e-7 by default
    if equal:
        res = linprog(c, A_ub=sp.vstack([cap, caps]), b_ub=np.concatenate([m, d[fin]]), A_eq=thr, b_eq=np.zeros(n),
                      bounds=bounds, method="highs", options=tight)  # fmt: skip
    else:
        res = linprog(c, A_ub=sp.vstack([cap, thr, caps]), b_ub=np.concatenate([m, np.zeros(n), d[fin]]),
                      bounds=bounds, method="highs", options=tight)  # fmt: skip
    assert res.status == 0
    return float(-res.fun)


def check_feasible(sol, C, m, s, d, equal) -> None:
    x = sol.x
    assert x.min() >= 0
    assert (x[C <= 0] == 0).all()
    assert (s[:, None] * x).sum(axis=0).max() <= 0 or ((s[:, None] * x).sum(axis=0) <= m * (1 + 1e-9) + 1e-9).all()
    assert (x.sum(axis=1) <= d * (1 + 1e-9) + 1e-12).all()
    u = (C * x).sum(axis=1)
    assert (u >= sol.t * (1 - 1e-9)).all()
    if equal:
        np.testing.assert_allclose(u, sol.t, rtol=1e-8)


def instance(seed: int, n: int, k: int, caps: str, zeros: bool = False):
    rng = np.random.default_rng(seed)
    C = rng.uniform(0.5, 8.0, (n, k))
    if zeros:
        C[rng.random((n, k)) < 0.2] = 0.0
        C[np.arange(n), rng.integers(0, k, n)] = rng.uniform(0.5, 8.0, n)  # every row can run somewhere
    m = rng.integers(n // (2 * k) + 1, n // k + 2, k).astype(float)
    s = rng.integers(1, 3, n).astype(float)
    d = {"none": np.full(n, np.inf), "one": np.ones(n), "mixed": np.where(rng.random(n) < 0.5, np.inf,
                                                                           rng.uniform(0.3, 2.0, n))}[caps]  # fmt: skip
    return C, m, s, d


CASES = [("none", True, False), ("none", False, True), ("one", False, False), ("mixed", False, True)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("caps", "equal", "zeros"), CASES)
def test_optimum_equals_the_full_lp(seed: int, caps: str, equal: bool, zeros: bool) -> None:
    C, m, s, d = instance(seed, 240, 4 + seed % 3, caps, zeros)
    sol = solve_maxmin(C, m, s, d, equal=equal, max_free=1.0)
    assert sol is not None
    ref = full_lp(C, m, s, d, equal)
    assert sol.t == pytest.approx(ref, rel=1e-9)
    check_feasible(sol, C, m, s, d, equal)


def test_a_wrong_price_guess_is_repaired() -> None:
    """Prices that put most rows on the wrong type: the certificate frees them and re-solves; the
    optimum is still the full program's (without the check the folded rows would stay put and t
    would be lower)."""
    C, m, s, d = instance(7, 300, 5, "none")
    good = solve_maxmin(C, m, s, d, max_free=1.0)
    bad_prices = good.prices[::-1] * 10.0 + 1.0
    sol = solve_maxmin(C, m, s, d, prices=bad_prices, max_free=1.0, delta=0.0)
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    assert sol.info["decomposition_solves"] >= 2  # the first guess failed its certificate
    check_feasible(sol, C, m, s, d, False)


def test_gives_up_rather_than_guessing() -> None:
    C, m, s, d = instance(3, 200, 4, "none")
    assert solve_maxmin(C[:40], m, s[:40], d[:40]) is None  # too small to gain
    assert solve_maxmin(C, m, s, np.where(np.arange(200) == 5, 0.0, d)) is None  # a zero cap
    z = C.copy()
    z[9] = 0.0
    assert solve_maxmin(z, m, s, d) is None  # a row that can run nowhere
    # identical rows all tie: more than max_free of them would need the LP
    assert solve_maxmin(np.tile(C[:1], (200, 1)), m, s, d, prices=np.ones(4) / C[0], delta=0.01) is None


def test_cap_bound_optimum_with_zero_prices() -> None:
    """Gavel's normalisation on heterogeneous jobs: one job's own best type pins t (all capacity
    prices 0, a degenerate program); the decomposition still returns the full optimum. The rows fit
    on their fastest types, so they are fixed there (12 free rows; with the load-balancing prices
    used when they do not fit, 63)."""
    rng = np.random.default_rng(7)
    T = rng.uniform(0.5, 8.0, (1024, 3))
    m = np.full(3, 256.0)
    C = T / (T @ m / m.sum())[:, None]
    sol = solve_maxmin(C, m, d=np.ones(1024))
    assert sol is not None and sol.info["free_rows"] < 30
    assert sol.t == pytest.approx(full_lp(C, m, np.ones(1024), np.ones(1024), False), rel=1e-9)
    assert sol.t == pytest.approx(float(C.max(axis=1).min()), rel=1e-12)
    assert not sol.prices.any()


def test_rounds_with_a_warm_start_match_cold_solves() -> None:
    rng = np.random.default_rng(11)
    C, m, s, d = instance(1, 200, 6, "none")
    ids, nxt = list(range(200)), 200
    warm = PriceWarmStart()
    bases = 0
    for _ in range(6):
        sol = solve_maxmin(C, m, equal=True, warm=warm, ids=ids, types=b"x", max_free=1.0)
        assert sol.t == pytest.approx(full_lp(C, m, np.ones(len(C)), np.full(len(C), np.inf), True), rel=1e-9)
        check_feasible(sol, C, m, np.ones(len(C)), np.full(len(C), np.inf), True)
        bases += int(sol.info["kept_program"])
        keep = np.setdiff1d(np.arange(200), rng.choice(200, 3, replace=False))
        C = np.vstack([C[keep], rng.uniform(0.5, 8.0, (3, 6))])
        ids = [ids[i] for i in keep] + list(range(nxt, nxt + 3))
        nxt += 3
    assert bases >= 4  # rounds after the first restart from the stored basis
    # prices for other GPU types are not used
    assert warm.get(b"y") is None


def test_policies_use_it_and_agree_with_the_full_lp() -> None:
    rng = np.random.default_rng(5)
    T = rng.uniform(0.5, 8.0, (600, 3))
    m = np.array([150, 150, 150])
    a = get("gavel-max-min-perf").fn(T, m)
    b = get("gavel-max-min-perf").fn(T, m, solver="highs-ds")
    assert a.info["lp_path"] == "decomposition" and b.info["lp_path"] == "full"
    assert a.info["min_ratio"] == pytest.approx(b.info["min_ratio"], rel=1e-9)
    W = T / T[:, :1]
    g = get("gavel").fn(W, m, caps=np.ones(600), cache=False)
    h = get("gavel").fn(W, m, caps=np.ones(600), solver="highs-ds", cache=False)
    assert g.info["lp_path"] == "decomposition" and h.info["lp_path"] == "full"
    assert g.info["s_star"] == pytest.approx(h.info["s_star"], rel=1e-9)


def test_noncoop_warm_rounds_take_the_decomposition() -> None:
    rng = np.random.default_rng(2)
    W = np.exp(np.cumsum(np.log(rng.uniform(0.8, 1.6, (150, 6))), axis=1))
    W /= W[:, :1]
    m = np.full(6, 60)
    warm = lp.NoncoopWarmStart()
    first = oef_noncoop(W, m, warm_start=warm, row_ids=list(range(150)))
    assert first.info["noncoop_path"] in ("staircase", "highs")
    W2 = np.vstack([W[3:], W[:3][:, ::-1] / W[:3][:, ::-1][:, :1]])
    ids = list(range(3, 150)) + [1000, 1001, 1002]
    again = oef_noncoop(W2, m, warm_start=warm, row_ids=ids)
    cold = oef_noncoop(W2, m, cache=False)
    assert again.info["noncoop_path"] == "decomposition"
    assert again.common_value == pytest.approx(cold.common_value, rel=1e-9)
    assert again.objective == pytest.approx(cold.objective, rel=1e-9)


def _scaled_guess(monkeypatch: pytest.MonkeyPatch, factor: float) -> None:
    """Make the first guess of ``t`` (in whatever units the solver works) ``factor`` times the one
    the sample gives, keeping its prices."""
    import marketsim.market.oef.maxmin as mm

    real = mm._guess

    def guess(*args: object) -> tuple:
        p, t, *rest = real(*args)
        return (p, factor * t, *rest)

    monkeypatch.setattr(mm, "_guess", guess)


def test_a_binding_cap_of_a_fixed_row_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are fixed when their cap seems far from binding; if the guess of ``t`` behind that was
    too low, the bound ``t <= d_l C_l,a_l`` the fixed rows impose binds, and the certificate frees
    those rows (a first guess at half the sample's ``t`` is forced here)."""
    rng = np.random.default_rng(4)
    n = 200  # type 0 is plentiful and slow (C = 1), type 1 scarce and 1.5-4x faster; one job per row (d = 1)
    C = np.column_stack([np.ones(n), rng.uniform(1.5, 4.0, n)])
    m, s, d = np.array([n, n / 4]), np.ones(n), np.ones(n)
    ref = full_lp(C, m, s, d, False)
    _scaled_guess(monkeypatch, 0.5)
    sol = solve_maxmin(C, m, s, d, max_free=1.0)
    assert ref > 1.0  # rows on type 0 alone would stop at t = 1: their cap binds there
    assert sol.t == pytest.approx(ref, rel=1e-9)
    check_feasible(sol, C, m, s, d, False)


def ordered(n: int, per_type: int, seed: int, weights: bool = False, scale: bool = False):
    """The issue's family: single-GPU jobs with throughputs ordered k80 < p100 < v100 (k80 ~ U(0.2, 3),
    p100 = k80 U(1.1, 3.5), v100 = p100 U(1.05, 2.5)), ``per_type`` GPUs per type, priority weights
    from {0.5, 1, 2} and scale factors from {1, 2, 4, 8} if asked, as ``gavel-max-min-perf`` writes
    (P): ``C = T s / (w P)``, ``P = T m / sum(m)``, time cap 1."""
    rng = np.random.default_rng(seed)
    k80 = rng.uniform(0.2, 3.0, n)
    p100 = k80 * rng.uniform(1.1, 3.5, n)
    T = np.column_stack([k80, p100, p100 * rng.uniform(1.05, 2.5, n)])
    w = rng.choice([0.5, 1.0, 2.0], n) if weights else np.ones(n)
    sf = rng.choice([1.0, 2.0, 4.0, 8.0], n) if scale else np.ones(n)
    m = np.full(3, float(per_type))
    return T * (sf / (w * (T @ m / m.sum())))[:, None], m, sf, np.ones(n)


def test_rows_split_by_their_cap_are_folded() -> None:
    """3 GPUs per 4 jobs, ordered throughputs: at the optimum about 40% of the jobs use their whole
    time on two types (cap binding). They are fixed as two-type rows (capacity use affine in t);
    without that they would all be free and the decomposition would give up."""
    C, m, s, d = ordered(512, 128, 3)
    sol = solve_maxmin(C, m, s, d)
    assert sol is not None and sol.info["split_rows"] > 100 and sol.info["free_rows"] < 128
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    check_feasible(sol, C, m, s, d, False)
    whole = ((sol.x > 0).sum(axis=1) == 2) & (np.abs(sol.x.sum(axis=1) - 1.0) < 1e-12)
    assert whole.sum() > 100  # jobs on two types with their whole time


def test_a_guess_of_t_too_high_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first ``t`` 60% too high makes rows look split by their cap whose patterns need ``t`` above the
    optimum (``x_v = (t - C_u d) / D`` is negative below ``C_u d``); the certificate frees them
    (without that check the allocation breaks caps and ``t`` comes out 0.9% high)."""
    C, m, s, d = ordered(220, 55, 12)
    _scaled_guess(monkeypatch, 1.6)
    sol = solve_maxmin(C, m, s, d, max_free=1.0)
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    check_feasible(sol, C, m, s, d, False)


def test_a_cap_pinned_optimum_under_tight_capacity() -> None:
    """Priority weights: one heavy job's cap pins t (every capacity price 0) although capacity is
    tight, so the fixed rows must be placed where the GPUs are: their patterns come from prices that
    balance the loads (with the all-zero prices every row would sit on its fastest type, the reduced
    program would stop far below, and every row would be freed)."""
    C, m, s, d = ordered(512, 128, 5, weights=True)
    sol = solve_maxmin(C, m, s, d)
    assert sol is not None and sol.info["free_rows"] < 128
    assert sol.t == pytest.approx(float((d * C.max(axis=1)).min()), rel=1e-12)
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    check_feasible(sol, C, m, s, d, False)


def test_the_issue_instance_at_4096_jobs() -> None:
    """The issue's instance (4,096 jobs, 1,024 GPUs per type, ordered throughputs), which the
    decomposition used to give up on: from 2,048 rows the first prices are the optimum on a quarter of
    the rows (recursively; from the 128-row sample alone the first guess is far enough off that more
    than half the rows end up free), and the optimum matches scipy's HiGHS to 1e-9 (with HiGHS's
    default 1e-7 feasibility tolerances in the reduced programs it was 8e-8 low)."""
    C, m, s, d = ordered(4096, 1024, 7)
    sol = solve_maxmin(C, m, s, d)
    assert sol is not None and sol.info["free_rows"] < 600 and sol.info["split_rows"] > 1000
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    check_feasible(sol, C, m, s, d, False)


def test_a_missing_column_of_a_free_row_is_priced_in() -> None:
    """Row 0 is free from the start with the two types it nearly ties on at the guessed prices (type 2
    looks 10x dearer); at the optimum type 2 is the plentiful one and row 0 needs it. Only the
    reduced-cost pricing of the free rows' missing columns brings it in (without it t is 1.2% low)."""
    rng = np.random.default_rng(0)
    n = 80
    C = np.column_stack([rng.uniform(1.0, 2.0, n), rng.uniform(1.0, 2.0, n), np.ones(n)])
    C[0] = [1.0, 1.01, 1.0]
    m, s, d = np.array([2.0, 2.0, 60.0]), np.ones(n), np.full(n, np.inf)
    sol = solve_maxmin(C, m, s, d, prices=np.array([1.0, 1.0, 10.0]), max_free=1.0)
    assert sol.info["priced_columns"] > 0
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    check_feasible(sol, C, m, s, d, False)


def fuzz_instance(seed: int):
    """A random (P): 64-399 rows, 2-6 types, uniform, ordered or few-valued throughputs, some zeros,
    priority-like row weights, scale factors {1, 2, 4, 8}, no / unit / mixed caps, equality rows,
    and everything scaled by 1e-6 or 1e6 now and then. Returns ``(C, m, s, d, equal, scale)``."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(64, 400)), int(rng.integers(2, 7))
    kind = rng.integers(0, 3)
    if kind == 0:
        C = rng.uniform(0.5, 8.0, (n, k))
    elif kind == 1:
        C = np.exp(np.cumsum(np.log(rng.uniform(1.0, 2.5, (n, k))), axis=1)) * rng.uniform(0.2, 3, (n, 1))
    else:
        C = rng.choice([1.0, 2.0, 3.0], (n, k)) * rng.uniform(0.9, 1.1, (n, 1))
    if rng.random() < 0.3:
        C[rng.random((n, k)) < 0.2] = 0.0
        C[np.arange(n), rng.integers(0, k, n)] = rng.uniform(0.5, 8.0, n)
    m = rng.uniform(0.05, 0.5, k) * n
    s = rng.choice([1.0, 2.0, 4.0, 8.0], n) if rng.random() < 0.4 else np.ones(n)
    if rng.random() < 0.4:
        C = C * rng.choice([0.5, 1.0, 2.0], n)[:, None]
    caps = rng.integers(0, 3)
    d = [np.full(n, np.inf), np.ones(n), np.where(rng.random(n) < 0.5, np.inf, rng.uniform(0.3, 2.0, n))][caps]
    equal = bool(caps == 0 and rng.random() < 0.3)
    scale = [1.0, 1e-6, 1e6][rng.integers(0, 3)] if rng.random() < 0.3 else 1.0
    return C, m, s, d, equal, scale


def test_infeasible_two_type_patterns_are_freed() -> None:
    """Fuzz case 108 (scale factors, mixed caps): the first prices put rows on two-type patterns whose
    fixed capacity use exceeds a type's GPUs at every t; the reduced program is infeasible, those
    rows are freed and the solve goes on (it used to give up)."""
    C, m, s, d, equal, _ = fuzz_instance(108)
    sol = solve_maxmin(C, m, s, d, equal=equal, max_free=1.0)
    assert sol is not None
    assert sol.t == pytest.approx(full_lp(C, m, s, d, equal), rel=1e-9)
    check_feasible(sol, C, m, s, d, equal)


@pytest.mark.slow
def test_fuzz_exact_against_the_full_lp() -> None:
    """400 random programs (:func:`fuzz_instance`): always an optimum of the full program to 1e-9,
    feasible, and the decomposition (``max_free = 1``) never gives up."""
    for seed in range(400):
        C, m, s, d, equal, scale = fuzz_instance(seed)
        sol = solve_maxmin(C * scale, m, s, d, equal=equal, max_free=1.0)
        assert sol is not None, seed
        assert sol.t / scale == pytest.approx(full_lp(C, m, s, d, equal), rel=1e-9), seed
        check_feasible(sol, C * scale, m, s, d, equal)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("caps", "equal", "zeros"), CASES)
def test_tiny_and_huge_throughputs_and_capacities(seed: int, caps: str, equal: bool, zeros: bool) -> None:
    """Every throughput multiplied by ``a`` and every capacity and cap by ``b`` (1e-6 and 1e6, alone and
    together): ``t`` scales by ``a b`` and matches scipy's HiGHS on the written-out program at scale 1
    to 1e-9. (HiGHS's absolute tolerances gave 2e-4 at a = 1e-6 before the solver rescaled and
    tightened them; with the tolerances alone, a = b = 1e-6 is still 1e-7 off.)"""
    C, m, s, d = instance(seed, 240, 4 + seed % 3, caps, zeros)
    ref = full_lp(C, m, s, d, equal)
    for a, b in ((1e-6, 1.0), (1e6, 1.0), (1.0, 1e-6), (1.0, 1e6), (1e-6, 1e-6), (1e6, 1e6)):
        sol = solve_maxmin(C * a, m * b, s, d * b, equal=equal, max_free=1.0)
        assert sol.t / (a * b) == pytest.approx(ref, rel=1e-9), (a, b)
        check_feasible(sol, C * a, m * b, s, d * b, equal)


def test_cold_noncoop_on_a_large_unordered_program_takes_the_decomposition() -> None:
    """Without a warm start, LP (9) with >= 100 rows per GPU type whose staircase certificate fails
    is solved by the decomposition; same optimum as scipy's HiGHS on the full program."""
    rng = np.random.default_rng(3)
    W = np.exp(np.concatenate([np.zeros((600, 1)), np.cumsum(np.log(rng.uniform(0.8, 1.6, (600, 5))), axis=1)], axis=1))
    m = np.full(6, 300)
    a = oef_noncoop(W, m, cache=False)
    b = oef_noncoop(W, m, cache=False, solver="highs")
    assert a.info["noncoop_path"] == "decomposition"
    assert a.common_value == pytest.approx(b.common_value, rel=1e-9)
    np.testing.assert_allclose((W * a.X).sum(axis=1), a.common_value, rtol=1e-8)
    assert (a.X.sum(axis=0) <= m * (1 + 1e-9)).all()
