"""Gavel's own policies on raw throughputs (issue #10): max-sum-throughput, max-min perf, scale
factors, zero throughputs, and the solver chosen by size."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from market import registry
from market.errors import InputError
from market.oef import lp

SUM = registry.get("gavel-max-sum-throughput", "fair-share").fn
MAXMIN = registry.get("gavel-max-min-perf", "fair-share").fn


def _independent_sum(T: np.ndarray, m: np.ndarray, s: np.ndarray) -> float:
    """Gavel's program written out densely: max sum T x, sum_l s_l x_lj <= m_j, sum_j x_lj <= 1."""
    n, k = T.shape
    A, b = [], []
    for j in range(k):
        r = np.zeros(n * k)
        r[j::k] = s
        A.append(r)
        b.append(m[j])
    for l_ in range(n):
        r = np.zeros(n * k)
        r[l_ * k : (l_ + 1) * k] = 1
        A.append(r)
        b.append(1.0)
    res = linprog(-T.ravel(), A_ub=np.array(A), b_ub=np.array(b), method="highs-ipm")
    return -float(res.fun)


def test_raw_max_sum_hand_numbers_and_the_normalised_policy_differs() -> None:
    T, m = np.array([[1.0, 2.0], [3.0, 4.0]]), [1, 1]
    a = SUM(T, m)
    assert a.objective == pytest.approx(5.0)  # one job per type, 2 + 3 = 1 + 4 = 5 by hand
    norm = registry.get("max-throughput", "fair-share").fn(T, m)  # LP (4): rows scaled by the slowest type
    assert float((T * norm.X).sum()) == pytest.approx(3.0)  # row 0 ([1, 2]) wins both types


def test_scale_factors_hand_numbers() -> None:
    """Job 0 needs 2 GPUs per placement: on type 0 (2 GPUs) it runs fully (1), job 1 takes type 1
    (4): 5. Job 0 on type 1 would get half the time (1 GPU of 2): worse."""
    a = SUM([[1.0, 2.0], [3.0, 4.0]], [2, 1], scale_factors=[2, 1])
    assert a.objective == pytest.approx(5.0)
    assert np.allclose(a.X, [[2, 0], [0, 1]], atol=1e-9)
    assert np.allclose(a.info["time_fractions"], [[1, 0], [0, 1]], atol=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_max_sum_matches_an_independent_formulation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 9)), int(rng.integers(1, 4))
    T = rng.uniform(0.1, 5.0, (n, k)) * (rng.random((n, k)) > 0.2)
    m = rng.integers(0, 4, k).astype(float)
    s = rng.integers(1, 4, n).astype(float)
    a = SUM(T, m, scale_factors=s)
    assert a.objective == pytest.approx(_independent_sum(T, m, s), rel=1e-7, abs=1e-9)
    assert (a.X[T == 0] == 0).all()
    assert (a.X.sum(axis=0) <= m + 1e-9).all()


def test_zero_throughput_is_accepted_and_never_allocated() -> None:
    T = np.array([[0.0, 2.0], [3.0, 0.0], [1.0, 1.0]])
    for fn in (SUM, MAXMIN):
        a = fn(T, [1, 1])
        assert (a.X[T == 0] == 0).all()
    mm = MAXMIN(T, [1, 1])
    # by hand: isolated shares are 1/3 of a GPU-time each (I = 2/3, 1, 2/3 ... ratios equalised at 1)
    assert mm.info["min_ratio"] == pytest.approx(1.0)
    ratios = (T * np.asarray(mm.info["time_fractions"])).sum(axis=1) / np.asarray(mm.info["isolated_throughputs"])
    assert ratios.min() == pytest.approx(1.0, abs=1e-7)


def test_max_min_matches_an_independent_lp() -> None:
    rng = np.random.default_rng(3)
    n, k = 5, 3
    T = rng.uniform(0.5, 4.0, (n, k))
    m = np.array([2.0, 1.0, 2.0])
    w = rng.uniform(1, 3, n)
    a = MAXMIN(T, m, weights=w)
    iso = np.asarray(a.info["isolated_throughputs"])
    # independent: max t s.t. T_l.x_l / (w_l I_l) >= t, sum_l x_lj <= m_j, sum_j x_lj <= 1
    nv = n * k + 1
    A, b = [], []
    for l_ in range(n):
        r = np.zeros(nv)
        r[l_ * k : (l_ + 1) * k] = -T[l_] / (w[l_] * iso[l_])
        r[-1] = 1
        A.append(r)
        b.append(0)
        r = np.zeros(nv)
        r[l_ * k : (l_ + 1) * k] = 1
        A.append(r)
        b.append(1)
    for j in range(k):
        r = np.zeros(nv)
        r[j : n * k : k] = 1
        A.append(r)
        b.append(m[j])
    c = np.zeros(nv)
    c[-1] = -1
    res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=[(0, None)] * (nv - 1) + [(None, None)])
    assert a.info["min_ratio"] == pytest.approx(-res.fun, rel=1e-7)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"scale_factors": [1.5, 1]}, "scale_factors[0]"), ({"scale_factors": [0, 1]}, "scale_factors[0]"),
     ({"caps": [1, 1]}, "caps"), ({"bogus": 1}, "option"), ({"solver": "cplex"}, "solver")],
)  # fmt: skip
def test_bad_gavel_inputs_name_the_field(kwargs, field) -> None:
    with pytest.raises(InputError) as err:
        SUM([[1.0, 2.0], [3.0, 4.0]], [1, 1], **kwargs)
    assert err.value.field == field


def test_max_min_rejects_a_job_that_can_run_nowhere() -> None:
    with pytest.raises(InputError) as err:
        MAXMIN([[0.0, 0.0], [1.0, 2.0]], [1, 1])
    assert err.value.field == "W[0]"
    assert SUM([[0.0, 0.0], [1.0, 2.0]], [1, 1]).X[0].sum() == 0  # the sum policy just leaves it idle
    with pytest.raises(InputError):
        SUM([[-1.0, 2.0]], [1, 1])


def test_solver_is_chosen_by_size_and_agrees() -> None:
    assert lp.choose_solver("auto", lp.AUTO_IPM_NONZEROS - 1) == "highs-ds"
    assert lp.choose_solver("auto", lp.AUTO_IPM_NONZEROS) == "highs-ipm"
    assert lp.choose_solver("highs-ds", 10**9) == "highs-ds"
    rng = np.random.default_rng(0)
    n = 600  # 6000 non-zeros: auto takes interior point
    W = np.c_[np.ones(n), rng.uniform(1, 4, n), rng.uniform(1, 8, n)]
    gavel = registry.get("gavel", "fair-share").fn
    s = {sv: gavel(W, [150, 150, 150], caps=np.ones(n), solver=sv, cache=False).info["s_star"]
         for sv in ("highs-ds", "highs-ipm", "auto")}  # fmt: skip
    assert s["auto"] == pytest.approx(s["highs-ds"], rel=1e-6) == pytest.approx(s["highs-ipm"], rel=1e-6)


def test_cli_allocate_accepts_zero_throughput_and_scale_factors(capsys) -> None:
    from analysis.cli import main

    assert main(["allocate", "--policy", "gavel-max-sum-throughput", "--speedups", "1,2;3,4", "--capacity", "2,1",
                 "--scale-factors", "2,1", "--json"]) == 0  # fmt: skip
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["total"] == pytest.approx(5.0) and out["allocation"] == [[2.0, 0.0], [0.0, 1.0]]
    assert main(["allocate", "--policy", "gavel-max-min-perf", "--speedups", "0,2;3,0;1,1"]) == 0
    assert "-0.0000" not in capsys.readouterr().out
    assert main(["allocate", "--policy", "oef-noncoop", "--speedups", "0,2;3,1"]) == 2
    assert "must be > 0" in capsys.readouterr().err
    assert main(["allocate", "--policy", "gavel", "--speedups", "1,2", "--scale-factors", "2"]) == 2
