"""Interior-point first prices and the cap-pinned path of the price decomposition
(marketsim.market.oef.maxmin_ipm, marketsim.market.oef.maxmin._pinned / _polish) on small jittered and near-tie
programs drawn from Gavel's 26 single-GPU job types: optimum within 1e-9 relative of an
independent full LP (scipy's HiGHS, tight tolerances), feasible allocations, deterministic."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from test_maxmin_decomposition import check_feasible, full_lp

import marketsim.market.oef.maxmin as mm
from marketsim.market.oef.maxmin import solve_maxmin
from marketsim.market.oef.maxmin_ipm import maxmin_prices

TABLE = Path(__file__).resolve().parents[1] / "market" / "data" / "gavel_throughputs.csv"


def gavel_table() -> np.ndarray:
    rates: dict[str, dict[str, float]] = {}
    with TABLE.open() as f:
        for r in csv.DictReader(f):
            if r["num_gpus"] == "1":
                rates.setdefault(r["job_type"], {})[r["gpu_type"]] = float(r["throughput_steps_per_s"])
    return np.array([[v["k80"], v["p100"], v["v100"]] for _, v in sorted(rates.items()) if len(v) == 3])


def program(n: int, per_job: float, tie: bool, weights: bool, seed: int = 3):
    """Gavel's max-min-perf program (C, m, s, d) on ``n`` jobs drawn from the table with +-5% jitter
    (every job distinct); ``tie``: 90% of jobs get two types within 1%; ``per_job`` GPUs per type per
    job (1/4: 3 GPUs per 4 jobs, caps bind; 1/16: capacity binds); weights from {1, 2, 4}."""
    rng = np.random.default_rng(seed)
    table = gavel_table()
    T = table[rng.integers(0, len(table), n)] * rng.uniform(0.95, 1.05, (n, 3))
    if tie:
        tied = np.flatnonzero(rng.random(n) < 0.9)
        a = rng.integers(0, 3, tied.size)
        b = (a + rng.integers(1, 3, tied.size)) % 3
        T[tied, b] = T[tied, a] * rng.uniform(0.99, 1.01, tied.size)
    w = rng.choice([1.0, 2.0, 4.0], n) if weights else np.ones(n)
    m = np.full(3, float(int(per_job * n)))
    P = T @ m / m.sum()
    return T / (w * P)[:, None], m, np.ones(n), np.ones(n)


FAMILIES = [(0.25, True, False), (0.25, False, False), (1 / 16, True, False), (1 / 16, False, False),
            (0.25, True, True), (1 / 16, True, True)]  # fmt: skip


@pytest.mark.parametrize(("per_job", "tie", "weights"), FAMILIES)
def test_optimum_equals_the_full_lp(per_job: float, tie: bool, weights: bool) -> None:
    C, m, s, d = program(512, per_job, tie, weights)
    sol = solve_maxmin(C, m, s, d)
    assert sol is not None
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    check_feasible(sol, C, m, s, d, False)
    again = solve_maxmin(C, m, s, d)
    assert np.array_equal(again.x, sol.x) and again.t == sol.t  # deterministic


def test_ipm_prices_are_near_the_optimum() -> None:
    """The structured interior point reaches a relative duality gap of 1e-7 on a near-tie program,
    with ``t`` within 1e-6 of the full LP's optimum and its dual bound above it."""
    C, m, s, d = program(512, 1 / 16, True, False)
    ref = full_lp(C, m, s, d, False)
    ip = maxmin_prices(C, m, s, d)
    assert ip is not None and ip.gap <= 1e-7 and ip.iterations < 40
    assert ip.t == pytest.approx(ref, rel=1e-6)
    assert ip.t_dual >= ref * (1 - 1e-7)
    assert (ip.prices > 0).all()  # capacity binds on every type


def test_near_ties_take_the_ipm_prices_and_few_rows_stay_free() -> None:
    """Near ties (two types within 1% for 90% of jobs): the 128-row sample's prices leave most rows
    near a tie; the interior-point prices, fixing rows with the margin IPM_DELTA, leave a handful
    free (with the sample's margin of 3% every tied row would be free and the decomposition would
    give up)."""
    C, m, s, d = program(512, 1 / 16, True, False)
    sol = solve_maxmin(C, m, s, d)
    assert sol.info["first_prices"] == "ipm"
    assert sol.info["free_rows"] < 512 // 20


def test_a_cap_pinned_near_tie_program_is_read_off_an_ipm_iterate() -> None:
    """3 GPUs per 4 jobs with near ties: a cap pins ``t`` (every capacity price 0) and tatonnement
    cannot balance loads that jump together; the interior-point iterate's mix of types per row,
    scaled to ``t``, fits, and only the row that sets the pinned ``t`` is left to the LP."""
    C, m, s, d = program(512, 0.25, True, False)
    tcap = float((d * C.max(axis=1)).min())
    sol = solve_maxmin(C, m, s, d)
    assert sol.info["first_prices"] == "ipm-pinned"
    assert sol.info["free_rows"] <= 4
    assert sol.t == pytest.approx(tcap, rel=1e-12)
    assert (sol.prices == 0).all()
    assert sol.t == pytest.approx(full_lp(C, m, s, d, False), rel=1e-9)
    check_feasible(sol, C, m, s, d, False)


def test_pinned_refuses_a_program_whose_capacity_binds() -> None:
    """A jittered program where capacity binds (positive prices): the fixed mixes of an early
    interior iterate are not optimal there, and :func:`_pinned` must say so (None) rather than
    return the reduced program's lower ``t``."""
    C, m, s, d = program(512, 1 / 16, False, False)
    ref = full_lp(C, m, s, d, False)
    seen: list[np.ndarray] = []

    def early(X: np.ndarray, t: float) -> bool:
        seen.append(X)
        return len(seen) == 5

    maxmin_prices(C, m, s, d, early=early)
    for X in seen:  # as if a cap pinned t at the optimum: the reduced programs stop 0.03%-3% below it
        got = mm._pinned("t", C, m, s, d, False, X, ref)
        assert got is None or got[1] == pytest.approx(ref, rel=1e-9)


def test_polish_recomputes_free_rows_exactly() -> None:
    """A free row on two types with its cap tight, and one on one type, perturbed by 2e-8 (what
    HiGHS returns for the few free rows of a heavily folded program): recomputed from ``t`` they meet
    the cap and the throughput row to rounding."""
    C = np.array([[1.0, 3.0, 0.5], [2.0, 1.0, 1.0]])
    d = np.array([1.0, 1.0])
    t = 2.0
    x = np.array([[0.5 + 2e-8, 0.5, 0.0], [1.0 - 2e-8, 0.0, 0.0]])
    mm._polish(x, t, C, d, np.arange(2))
    assert x[0].sum() == pytest.approx(1.0, abs=1e-15) and C[0] @ x[0] == pytest.approx(t, abs=1e-15)
    assert x[1, 0] == 1.0 and x[1, 1:].sum() == 0


@pytest.mark.slow
def test_fuzz_ipm_sizes_against_the_full_lp() -> None:
    """Random programs large enough for the interior-point prices (512-700 rows, 3-6 types, 70% with
    near ties, caps none/one/mixed, scale factors, LP (9) equalities): optimum within 1e-9 of the
    full LP and feasible, whatever path the first prices take."""
    paths: dict[str, int] = {}
    for seed in range(24):
        rng = np.random.default_rng(1000 + seed)
        n, k = int(rng.choice([512, 700])), int(rng.choice([3, 4, 6]))
        C = rng.uniform(0.5, 8.0, (n, k))
        if rng.random() < 0.7:
            tied = np.flatnonzero(rng.random(n) < 0.9)
            a = rng.integers(0, k, tied.size)
            b = (a + rng.integers(1, k, tied.size)) % k
            C[tied, b] = C[tied, a] * rng.uniform(0.99, 1.01, tied.size)
        equal = bool(rng.random() < 0.25)
        caps = "none" if equal else str(rng.choice(["none", "one", "mixed"]))
        m = np.full(k, max(1.0, float(rng.choice([0.25, 1 / 16, 0.5])) * n * 3 / k)) * rng.uniform(0.8, 1.2, k)
        s = rng.choice([1.0, 2.0], n) if rng.random() < 0.3 else np.ones(n)
        d = {"none": np.full(n, np.inf), "one": np.ones(n),
             "mixed": np.where(rng.random(n) < 0.5, np.inf, rng.uniform(0.3, 2.0, n))}[caps]  # fmt: skip
        sol = solve_maxmin(C, m, s, d, equal=equal)
        if sol is None:
            continue
        paths[sol.info["first_prices"]] = paths.get(sol.info["first_prices"], 0) + 1
        assert sol.t == pytest.approx(full_lp(C, m, s, d, equal), rel=1e-9), seed
        check_feasible(sol, C, m, s, d, equal)
    assert paths.get("ipm", 0) >= 8, paths
