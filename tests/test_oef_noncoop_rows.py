"""oef-noncoop on its distinct rows: identical rows and replicas merged into one program row
(market/oef/mechanisms.py ``_noncoop``), the weights' exact fractions once per distinct value, the
cheap cache key and validation of array weights, and the per-thread HiGHS instance."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

import marketsim.market.oef.mechanisms as mech
import marketsim.market.oef.noncoop_lp as ncl
from marketsim.market.errors import InputError
from marketsim.market.oef import lp, oef_noncoop
from marketsim.market.oef.validate import cache_key, prepare
from marketsim.market.oef.virtual import replication_copies, weight_fractions


def _reference_t(W: np.ndarray, m: np.ndarray, omega: np.ndarray) -> float:
    """LP (9) over every input row (no merging), by scipy's HiGHS: the optimal ``t`` per unit of weight."""
    W = W / W[:, :1]
    n, k = W.shape
    c = np.zeros(n * k + 1)
    c[-1] = -float(omega.sum())
    A_ub = np.zeros((k, n * k + 1))
    for j in range(k):
        A_ub[j, j : n * k : k] = 1.0
    A_eq = np.zeros((n, n * k + 1))
    for l in range(n):
        A_eq[l, l * k : (l + 1) * k] = W[l]
        A_eq[l, -1] = -omega[l]
    res = linprog(c, A_ub=A_ub, b_ub=m, A_eq=A_eq, b_eq=np.zeros(n), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.x[-1])


def _repeated_instance(
    seed: int, n_distinct: int = 6, n: int = 40, k: int = 3, scale: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows repeating ``n_distinct`` speedup vectors (each row scaled by a random factor when
    ``scale``: normalised, rows may then differ in the last bit and stay apart), and capacities."""
    rng = np.random.default_rng(seed)
    base = np.exp(np.concatenate([np.zeros((n_distinct, 1)), rng.normal(0, 0.6, (n_distinct, k - 1))], axis=1))
    rows = np.concatenate([np.arange(n_distinct), rng.integers(0, n_distinct, n - n_distinct)])
    rng.shuffle(rows)
    return base[rows] * (rng.uniform(0.5, 2.0, (n, 1)) if scale else 1.0), np.array([7, 5, 4][:k])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
def test_identical_rows_solve_one_program_row_each_with_the_full_programs_optimum(seed: int, weighted: bool) -> None:
    W, m = _repeated_instance(seed)
    n = W.shape[0]
    w = np.random.default_rng(100 + seed).choice([1.0, 0.5, 0.25, 1 / 3], n) if weighted else None
    a = oef_noncoop(W, m, weights=w, cache=False)
    Wn = W / W[:, :1]
    distinct = np.unique(Wn, axis=0).shape[0]
    assert a.info["solved_rows"] == distinct < n  # the merge: one program row per distinct speedup vector
    omega = np.ones(n) if w is None else np.array([float(Fraction(x).limit_denominator(1000)) for x in w])
    t_ref = _reference_t(W, m, omega)
    u = (Wn * a.X).sum(axis=1)
    # every row's throughput is its weight times the full program's optimum (LP (9)'s equal-value rows)
    assert np.allclose(u / omega, t_ref, rtol=1e-9, atol=0)
    assert a.X.min() >= 0 and np.all(a.X.sum(axis=0) <= m * (1 + 1e-12))


def test_identical_rows_split_by_the_north_west_corner_rule() -> None:
    # rows 0, 2 and 3 are identical (row 3 scaled, weight 2): the merged row's devices go to them in
    # input order, each taking its share of the throughput from the slowest type on (a basic
    # solution, as a simplex vertex of the unmerged program; not the same devices for each)
    W = np.array([[1.0, 2.0, 3.0], [1.0, 1.5, 4.0], [1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 3.0, 3.2]])
    w = np.array([1.0, 0.5, 1.0, 2.0, 1.0])
    a = oef_noncoop(W, [3, 3, 3], weights=w, cache=False)
    assert a.info["solved_rows"] == 3
    X, Wn = a.X, W / W[:, :1]
    Y = X[[0, 2, 3]].sum(axis=0)  # the merged row's devices
    thr = Wn[0] * Y
    edges = np.concatenate([[0.0], np.cumsum(thr)])  # the types' parts of the merged row's throughput
    parts = np.array([0.0, 1.0, 2.0, 4.0]) / 4 * thr.sum()  # rows 0, 2, 3 in order, shares 1:1:2
    for i, r in enumerate([0, 2, 3]):
        want = np.clip(np.minimum(parts[i + 1], edges[1:]) - np.maximum(parts[i], edges[:-1]), 0, None) / Wn[0]
        assert np.allclose(X[r], want, rtol=1e-12, atol=1e-12)
    assert np.count_nonzero(X[[0, 2, 3]] > 1e-12) <= 3 + np.count_nonzero(Y > 1e-12) - 1
    u = (Wn * X).sum(axis=1)
    assert np.allclose(u / w, u[0] / w[0], rtol=1e-12)


def test_replicas_are_one_program_row_per_input_row() -> None:
    W = np.array([[1.0, 2.0, 3.0], [1.0, 1.5, 4.0], [1.0, 3.0, 3.2]])
    a = oef_noncoop(W, [3, 3, 3], weights=[Fraction(1, 7), Fraction(1, 3), Fraction(1, 5)], cache=False)
    assert a.info["form"] == "replicated" and a.info["copies"] == [15, 35, 21] and a.info["lp_rows"] == 71
    assert a.info["solved_rows"] == 3
    t_ref = _reference_t(W, np.array([3, 3, 3]), np.array([15.0, 35.0, 21.0]))
    assert a.info["t_lp"] == pytest.approx(t_ref, rel=1e-9)
    assert a.common_value == pytest.approx(t_ref, rel=1e-9)  # per replica


def test_distinct_rows_in_order_of_first_appearance() -> None:
    W = np.array([[1.0, 3.0], [1.0, 2.0], [1.0, 3.0], [1.0, 1.0], [1.0, 2.0]])
    first, group = mech._distinct_rows(W)
    assert first.tolist() == [0, 1, 3] and group.tolist() == [0, 1, 0, 2, 1]


def test_exact_weights_once_per_distinct_value(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def counting(values, limit=1000):  # type: ignore[no-untyped-def]
        seen.append(len(list(values)))
        return weight_fractions(values, limit)

    monkeypatch.setattr(mech, "weight_fractions", counting)
    mech._distinct_weights.cache_clear()
    W = np.exp(np.random.default_rng(3).normal(0, 0.5, (30, 3)))
    w = np.tile([1 / 3, 0.25, 1 / 7], 10)
    a = oef_noncoop(W, [5, 5, 5], weights=w, cache=False, replicate=False)
    assert seen == [3]  # three distinct weights, not thirty
    oef_noncoop(W[::-1], [5, 5, 5], weights=w[::-1].copy(), cache=False, replicate=False)
    assert seen == [3]  # the same distinct weights: memoised
    fr = weight_fractions(w.tolist())
    assert a.info["weights_exact"] == [str(f) for f in fr]
    assert a.info["copies"] == replication_copies(fr)


def test_exact_weights_rescale_tiny_weights_as_the_full_list_does() -> None:
    # a weight below 1/(2*limit) makes weight_fractions divide by the smallest: same on distinct values
    w = np.array([1e-5, 2e-5, 1e-5, 3e-5])
    W = np.array([[1.0, 2.0], [1.0, 3.0], [1.0, 1.5], [1.0, 2.5]])
    a = oef_noncoop(W, [2, 2], weights=w, cache=False)
    assert a.info["weights_exact"] == [str(f) for f in weight_fractions(w.tolist())] == ["1", "2", "1", "3"]


def test_array_weights_validated_without_a_python_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    import marketsim.market.oef.validate as val

    calls: list[str] = []
    real = val._num
    monkeypatch.setattr(val, "_num", lambda field, v: calls.append(field) or real(field, v))
    W = np.ones((50, 2))
    prepare("oef-noncoop", W, [2, 2], np.full(50, 0.5), None, {}, {})
    assert not [f for f in calls if f.startswith("weights")]
    for bad, value in ((np.nan, "nan"), (0.0, "0.0"), (-1.0, "-1.0")):
        w = np.full(50, 0.5)
        w[7] = bad
        with pytest.raises(InputError, match=rf"weights\[7\] must be finite and > 0, got {value}$"):
            prepare("oef-noncoop", W, [2, 2], w, None, {}, {})
    w = np.full(50, 0.5)
    w[3] = 1e7
    with pytest.raises(InputError, match=r"weights\[3\]"):
        prepare("oef-noncoop", W, [2, 2], w, None, {}, {})


def test_fraction_weights_in_an_object_array_stay_exact() -> None:
    W = np.array([[1.0, 2.0], [1.0, 3.0]])
    w = np.array([Fraction(1, 1009), Fraction(2, 1009)], dtype=object)  # denominators above the limit (1000)
    a = oef_noncoop(W, [2, 2], weights=w, cache=False, replicate=False)
    assert a.info["weights_exact"] == ["1/1009", "2/1009"]


def test_cache_key_of_float_weights_is_their_values() -> None:
    W = np.array([[1.0, 2.0], [1.0, 3.0]])
    o1, v1 = prepare("oef-noncoop", W, [2, 2], [1, 2], None, {}, {})
    o2, v2 = prepare("oef-noncoop", W, [2, 2], np.array([1.0, 2.0]), None, {}, {})
    assert cache_key("oef-noncoop", v1, o1) == cache_key("oef-noncoop", v2, o2)  # same values, same program
    o3, v3 = prepare("oef-noncoop", W, [2, 2], [Fraction(1), Fraction(2)], None, {}, {})
    assert cache_key("oef-noncoop", v3, o3) != cache_key("oef-noncoop", v1, o1)  # exact weights: by repr


def test_cold_solves_reuse_this_threads_highs_and_give_the_same_vertex() -> None:
    rng = np.random.default_rng(11)
    Ws = [np.exp(np.concatenate([np.zeros((12, 1)), rng.normal(0, 0.7, (12, 2))], axis=1)) for _ in range(3)]
    m = np.array([4, 3, 5])
    ncl._LOCAL.__dict__.clear()
    first = oef_noncoop(Ws[0], m, cache=False)
    assert first.info["noncoop_path"] == "highs"
    h = ncl._LOCAL.highs
    for W in Ws[1:]:
        oef_noncoop(W, m, cache=False)
    assert ncl._LOCAL.highs is h  # one instance per thread
    again = oef_noncoop(Ws[0], m, cache=False)
    ncl._LOCAL.__dict__.clear()
    fresh = oef_noncoop(Ws[0], m, cache=False)
    assert np.array_equal(again.X, first.X) and np.array_equal(fresh.X, first.X)


def test_warm_start_knows_merged_rows_by_their_speedups() -> None:
    W, m = _repeated_instance(5, n_distinct=5, n=12, scale=False)
    ids = [f"job{i}" for i in range(W.shape[0])]
    warm = lp.NoncoopWarmStart()
    a = oef_noncoop(W, m, warm_start=warm, row_ids=ids)
    assert a.info["solved_rows"] == 5
    perm = np.random.default_rng(0).permutation(W.shape[0])
    b = oef_noncoop(W[perm], m, warm_start=warm, row_ids=[f"other{i}" for i in perm])  # new ids, same rows
    assert b.info["warm_start"] is True and b.info["simplex_iterations"] == 0
    assert b.objective == pytest.approx(a.objective, rel=1e-12)
