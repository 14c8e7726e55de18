"""Gavel's own policies on raw throughputs (issue #10): max-sum-throughput, max-min perf, scale
factors, zero throughputs, and the solver chosen by size."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from marketsim.market import registry
from marketsim.market.errors import InputError
from marketsim.market.oef import lp

SUM = registry.get("gavel-max-sum-throughput", "fair-share").fn
MAXMIN = registry.get("gavel-max-min-perf", "fair-share").fn


def _independent_sum(T: np.ndarray, m: np.ndarray, s: np.ndarray, caps: np.ndarray | None = None) -> float:
    """Gavel's program written out densely: max sum T x, sum_l s_l x_lj <= m_j, sum_j x_lj <= 1
    (with ``caps``: the row's devices sum_j s_l x_lj <= caps_l instead)."""
    n, k = T.shape
    A, b = [], []
    for j in range(k):
        r = np.zeros(n * k)
        r[j::k] = s
        A.append(r)
        b.append(m[j])
    for l_ in range(n):
        r = np.zeros(n * k)
        r[l_ * k : (l_ + 1) * k] = 1 if caps is None else s[l_]
        A.append(r)
        b.append(1.0 if caps is None else caps[l_])
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
    # by hand: proportional throughputs P = T.m / sum(m) = (1, 1.5, 1); job 0 needs x01 = t/2, job 1
    # x10 = t/2, job 2 the rest with its row sum <= 1: t <= 1, reached
    assert mm.info["proportional_throughputs"] == pytest.approx([1.0, 1.5, 1.0])
    assert mm.info["min_ratio"] == pytest.approx(1.0)
    ratios = (T * np.asarray(mm.info["time_fractions"])).sum(axis=1) / np.array([1.0, 1.5, 1.0])
    assert ratios.min() == pytest.approx(1.0, abs=1e-7)


def _independent_max_min(
    T: np.ndarray, m: np.ndarray, s: np.ndarray, w: np.ndarray, caps: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Gavel's MaxMinFairnessPolicyWithPerf written out densely, with its own normaliser: Gavel's
    ProportionalPolicy gives every job time m_j / sum(m) of type j, so P_l = sum_j T_lj m_j / sum(m);
    max t s.t. s_l T_l.x_l / (w_l P_l) >= t, sum_l s_l x_lj <= m_j, sum_j x_lj <= 1, x >= 0 (with
    ``caps``: sum_j s_l x_lj <= caps_l instead of the time row). Returns (t*, x*)."""
    n, k = T.shape
    P = np.array([sum(T[l_, j] * m[j] for j in range(k)) / sum(m) for l_ in range(n)])
    nv = n * k + 1
    A, b = [], []
    for l_ in range(n):
        r = np.zeros(nv)
        r[l_ * k : (l_ + 1) * k] = -s[l_] * T[l_] / (w[l_] * P[l_])
        r[-1] = 1
        A.append(r)
        b.append(0)
        r = np.zeros(nv)
        r[l_ * k : (l_ + 1) * k] = 1 if caps is None else s[l_]
        A.append(r)
        b.append(1 if caps is None else caps[l_])
    for j in range(k):
        r = np.zeros(nv)
        r[j : n * k : k] = s
        A.append(r)
        b.append(m[j])
    c = np.zeros(nv)
    c[-1] = -1
    bounds = [(0, 0) if T.ravel()[i] == 0 else (0, None) for i in range(n * k)] + [(None, None)]
    res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=bounds, method="highs-ipm")
    assert res.status == 0
    return -float(res.fun), res.x[:-1].reshape(n, k)


def test_max_min_perf_is_gavels_policy_on_the_toy() -> None:
    """[[1, 2], [1, 5]], one GPU each: P = (1.5, 3); equal ratios need job 0 on (a, 1 - a) with
    2 - a = 1.5 t and job 1 on (1 - a, a) with 1 + 4a = 3 t: a = 1/2, t = 1, throughputs (1.5, 3)
    (the isolated normaliser this policy used before gave (2, 1))."""
    T, m = np.array([[1.0, 2.0], [1.0, 5.0]]), np.array([1.0, 1.0])
    a = MAXMIN(T, m)
    assert a.info["proportional_throughputs"] == pytest.approx([1.5, 3.0])
    assert a.info["min_ratio"] == pytest.approx(1.0)
    assert (T * a.X).sum(axis=1) == pytest.approx([1.5, 3.0], abs=1e-7)
    assert np.allclose(a.X, 0.5, atol=1e-7)
    t_ind, x_ind = _independent_max_min(T, m, np.ones(2), np.ones(2))
    assert t_ind == pytest.approx(1.0) and (T * x_ind).sum(axis=1) == pytest.approx([1.5, 3.0], abs=1e-6)


def test_max_min_perf_scale_factors_and_priority_weights_by_hand() -> None:
    """m = (2, 2), job 0 needs 2 GPUs (s = (2, 1)), priority weights w = (2, 1). P = T.m / 4 =
    (1.5, 3); coefficients s_l T_l / (w_l P_l): job 0 (2/3, 4/3), job 1 (1/3, 5/3). Job 1 on
    (1 - b, b), job 0 fills its row on what is left, (b/2, 1 - b/2): ratios 4/3 - b/3 and
    1/3 + 4b/3, equal at b = 3/5, t = 17/15; throughputs (1.7, 3.4), time fractions
    ((0.3, 0.7), (0.4, 0.6)), devices ((0.6, 1.4), (0.4, 0.6))."""
    T, m = np.array([[1.0, 2.0], [1.0, 5.0]]), np.array([2.0, 2.0])
    s, w = np.array([2.0, 1.0]), np.array([2.0, 1.0])
    a = MAXMIN(T, m, scale_factors=s, weights=w)
    assert a.info["min_ratio"] == pytest.approx(17 / 15)
    x = np.asarray(a.info["time_fractions"])
    assert np.allclose(x, [[0.3, 0.7], [0.4, 0.6]], atol=1e-7)
    assert np.allclose(a.X, [[0.6, 1.4], [0.4, 0.6]], atol=1e-7)
    assert (T * x).sum(axis=1) == pytest.approx([1.7, 3.4])
    t_ind, x_ind = _independent_max_min(T, m, s, w)
    assert t_ind == pytest.approx(17 / 15) and (T * x_ind).sum(axis=1) == pytest.approx([1.7, 3.4], abs=1e-6)
    # the weights matter: swapped, job 1 is held at its best (all of type 1), t = 5/6
    assert MAXMIN(T, m, scale_factors=s, weights=w[::-1]).info["min_ratio"] == pytest.approx(5 / 6)


@pytest.mark.parametrize("seed", range(6))
def test_max_min_matches_an_independent_lp(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 8)), int(rng.integers(1, 4))
    T = rng.uniform(0.5, 4.0, (n, k)) * (rng.random((n, k)) > 0.2)
    T[:, 0] = np.maximum(T[:, 0], 0.3)  # every job runs on type 0, which has GPUs
    m = np.r_[float(rng.integers(1, 4)), rng.integers(0, 4, k - 1).astype(float)]
    s = rng.integers(1, 3, n).astype(float)
    w = rng.uniform(1, 3, n)
    a = MAXMIN(T, m, weights=w, scale_factors=s)
    t_ind, x_ind = _independent_max_min(T, m, s, w)
    assert a.info["min_ratio"] == pytest.approx(t_ind, rel=1e-7)
    ratios = s * (T * np.asarray(a.info["time_fractions"])).sum(axis=1) / (w * (T @ m / m.sum()))
    assert ratios.min() == pytest.approx(t_ind, rel=1e-6)
    assert (a.X.sum(axis=0) <= m + 1e-9).all() and (a.X[T == 0] == 0).all()


def test_max_min_rejects_a_job_only_on_types_without_gpus() -> None:
    with pytest.raises(InputError) as err:
        MAXMIN([[0.0, 3.0], [1.0, 2.0]], [1, 0])
    assert err.value.field == "W[0]"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"scale_factors": [1.5, 1]}, "scale_factors[0]"), ({"scale_factors": [0, 1]}, "scale_factors[0]"),
     ({"caps": [1]}, "caps"), ({"caps": [1, float("nan")]}, "caps[1]"), ({"caps": [-1, 1]}, "caps[0]"),
     ({"caps": "1,1"}, "caps"), ({"caps": [[1, 1]]}, "caps"), ({"caps": ["a", 1]}, "caps[0]"),
     ({"bogus": 1}, "option"), ({"solver": "cplex"}, "solver")],
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
    from marketsim.analysis.frontends.cli import main

    assert main(["allocate", "--policy", "gavel-max-sum-throughput", "--speedups", "1,2;3,4", "--capacity", "2,1",
                 "--scale-factors", "2,1", "--json"]) == 0  # fmt: skip
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["total"] == pytest.approx(5.0) and out["allocation"] == [[2.0, 0.0], [0.0, 1.0]]
    assert main(["allocate", "--policy", "gavel-max-min-perf", "--speedups", "0,2;3,0;1,1"]) == 0
    assert "-0.0000" not in capsys.readouterr().out
    assert main(["allocate", "--policy", "gavel-max-min-perf", "--speedups", "1,2;1,5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["throughput"] == pytest.approx([1.5, 3.0], abs=1e-7)
    assert main(["allocate", "--policy", "oef-noncoop", "--speedups", "0,2;3,1"]) == 2
    assert "must be > 0" in capsys.readouterr().err
    assert main(["allocate", "--policy", "gavel", "--speedups", "1,2", "--scale-factors", "2"]) == 2


@pytest.mark.parametrize("seed", range(4))
def test_identical_jobs_solved_once_give_the_same_optimum(seed: int) -> None:
    """Aggregation (marketsim.market.oef.roundlp): a workload of 5 job types repeated; same s* / min ratio as
    the full LP, identical jobs get identical shares, capacity and caps hold."""
    rng = np.random.default_rng(seed)
    types = rng.uniform(0.5, 6.0, (5, 3))
    pick = rng.integers(0, 5, 60)
    T, m = types[pick], np.array([12.0, 9.0, 6.0])
    s = rng.integers(1, 3, 5)[pick].astype(float)
    full, agg = (MAXMIN(T, m, scale_factors=s, aggregate=a) for a in (False, True))
    assert agg.info["aggregated_classes"] == np.unique(pick).size and full.info["aggregated_classes"] is None
    assert agg.info["min_ratio"] == pytest.approx(full.info["min_ratio"], rel=1e-7)
    x = np.asarray(agg.info["time_fractions"])
    for c in np.unique(pick):
        assert np.allclose(x[pick == c], x[pick == c][0], atol=1e-12)
    assert (agg.X.sum(axis=0) <= m + 1e-7).all() and (x.sum(axis=1) <= 1 + 1e-9).all()
    ratios = s * (T * x).sum(axis=1) / (T @ m / m.sum())
    assert ratios.min() == pytest.approx(full.info["min_ratio"], rel=1e-7)
    gavel = registry.get("gavel", "fair-share").fn
    W = T / T[:, :1]
    caps = np.where(pick % 2 == 0, 1.0, 2.0)
    a, b = (gavel(W, m, caps=caps, aggregate=v, cache=False) for v in (False, True))
    assert b.info["aggregated_classes"] is not None
    assert b.info["s_star"] == pytest.approx(a.info["s_star"], rel=1e-7)
    assert (b.X.sum(axis=1) <= caps + 1e-7).all() and (b.X.sum(axis=0) <= m + 1e-7).all()
    assert (np.einsum("lj,lj->l", W, b.X) >= b.info["s_star"] * np.asarray(b.info["normalisers"]) - 1e-7).all()


def test_aggregation_auto_only_on_large_programs_and_bad_values() -> None:
    T = np.tile([[1.0, 2.0, 3.0], [2.0, 2.0, 5.0]], (5, 1))
    assert MAXMIN(T, [3, 3, 3]).info["aggregated_classes"] is None  # small: today's simplex vertex
    big = np.tile(T, (60, 1))  # 600 jobs, 1,800 variables: interior-point size
    assert MAXMIN(big, [90, 90, 90]).info["aggregated_classes"] == 2
    for fn in (MAXMIN, registry.get("gavel", "fair-share").fn):
        with pytest.raises(InputError) as err:
            fn(T, [3, 3, 3], aggregate="yes")
        assert err.value.field == "aggregate"
    with pytest.raises(InputError):
        SUM(T, [3, 3, 3], aggregate=True)  # the sum policy has no such option


def test_caps_bound_a_rows_devices_by_hand() -> None:
    """Caps are devices per row (sum_j s_l x_lj <= caps_l). Sum, T = [[1, 2], [3, 5]], m = (1, 1),
    caps (1, 0.5): job 1 (0.5 device) gains more over job 0 on type 1 (5 - 2) than on type 0
    (3 - 1), so it takes half of type 1 (2.5), job 0 the other half (1) and half of type 0 (0.5): 4
    (uncapped: job 1 all of type 1, job 0 all of type 0, 6). With s = (2, 1), m = (2, 1), caps
    (1, 1) on T = [[1, 2], [3, 4]]: job 0 may use 1 device = half its time; job 1 on type 1 (4) and
    job 0 half of type 0 (0.5): 4.5, devices [[1, 0], [0, 1]] (caps (2, 1) = no cap: 5)."""
    a = SUM([[1.0, 2.0], [3.0, 5.0]], [1, 1], caps=[1.0, 0.5])
    assert a.objective == pytest.approx(4.0)
    assert np.allclose(a.X, [[0.5, 0.5], [0.0, 0.5]], atol=1e-9)
    assert SUM([[1.0, 2.0], [3.0, 5.0]], [1, 1]).objective == pytest.approx(6.0)
    b = SUM([[1.0, 2.0], [3.0, 4.0]], [2, 1], scale_factors=[2, 1], caps=[1, 1])
    assert b.objective == pytest.approx(4.5)
    assert np.allclose(b.X, [[1, 0], [0, 1]], atol=1e-9)
    assert np.allclose(b.info["time_fractions"], [[0.5, 0], [0, 1]], atol=1e-9)
    assert SUM([[1.0, 2.0], [3.0, 4.0]], [2, 1], scale_factors=[2, 1], caps=[2, 1]).objective == pytest.approx(5.0)
    # max-min perf on the toy (P = (1.5, 3)), job 1 capped at half a device: its best is half of
    # type 1, ratio 2.5 / 3 = 5/6 < 1 (the uncapped optimum); job 0 reaches 5/6 on the rest
    T, m = np.array([[1.0, 2.0], [1.0, 5.0]]), np.array([1.0, 1.0])
    c = MAXMIN(T, m, caps=[1.0, 0.5])
    assert c.info["min_ratio"] == pytest.approx(5 / 6)
    assert np.allclose(c.X[1], [0.0, 0.5], atol=1e-9)
    assert c.X[0].sum() <= 1 + 1e-9 and (T[0] @ c.X[0]) / 1.5 >= 5 / 6 - 1e-9
    # a cap above one job's worth lets a row (a class of jobs) take more than one device: sum policy,
    # m = (2, 2), caps (1, 3): row 1 takes both type-1 GPUs (10) and one of type 0 (1), row 0 the
    # other (1): 12 (without caps each row is one job: 5 + 2 = 7)
    d = SUM(T, [2.0, 2.0], caps=[1.0, 3.0])
    assert d.objective == pytest.approx(12.0) and np.allclose(d.X, [[1, 0], [1, 2]], atol=1e-9)
    assert SUM(T, [2.0, 2.0]).objective == pytest.approx(7.0)
    with pytest.raises(InputError) as err:
        MAXMIN(T, m, caps=[1.0, 0.0])
    assert err.value.field == "caps[1]"
    assert SUM(T, m, caps=[1.0, 0.0]).X[1].sum() == 0  # the sum policy leaves a zero-cap row idle


@pytest.mark.parametrize("seed", range(6))
def test_caps_match_an_independent_formulation(seed: int) -> None:
    """Both policies with random caps (some binding, some inf, scale factors > 1) against the dense
    LPs written with the device form of the cap row."""
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(2, 8)), int(rng.integers(1, 4))
    T = rng.uniform(0.5, 4.0, (n, k)) * (rng.random((n, k)) > 0.2)
    T[:, 0] = np.maximum(T[:, 0], 0.3)
    m = np.r_[float(rng.integers(1, 4)), rng.integers(0, 4, k - 1).astype(float)]
    s = rng.integers(1, 3, n).astype(float)
    w = rng.uniform(1, 3, n)
    caps = rng.choice([0.5, 1.0, 2.0, 3.0, np.inf], n)
    finite = np.minimum(caps, m.sum())
    a = SUM(T, m, scale_factors=s, caps=caps)
    assert a.objective == pytest.approx(_independent_sum(T, m, s, finite), rel=1e-7, abs=1e-9)
    assert (a.X.sum(axis=1) <= caps + 1e-9).all() and (a.X.sum(axis=0) <= m + 1e-9).all()
    mm = MAXMIN(T, m, weights=w, scale_factors=s, caps=caps)
    t_ind, _ = _independent_max_min(T, m, s, w, finite)
    assert mm.info["min_ratio"] == pytest.approx(t_ind, rel=1e-7)
    assert (mm.X.sum(axis=1) <= caps + 1e-9).all() and (mm.X.sum(axis=0) <= m + 1e-9).all()
    # aggregation with caps: the same optimum on the rows repeated (caps are part of a class's key)
    rep = np.repeat(np.arange(n), 40)
    full, agg = (MAXMIN(T[rep], m * 40, weights=w[rep], scale_factors=s[rep], caps=caps[rep], aggregate=v)
                 for v in (False, True))  # fmt: skip
    assert agg.info["aggregated_classes"] == n
    assert agg.info["min_ratio"] == pytest.approx(full.info["min_ratio"], rel=1e-6)
    assert (agg.X.sum(axis=1) <= caps[rep] + 1e-7).all() and (agg.X.sum(axis=0) <= m * 40 + 1e-7).all()


TINY_SYNTHETIC = """
name = "tiny_gavel"
policies = ["gavel-max-min-perf", "gavel-max-sum-throughput"]
rounds = 6
replications = 2
seed = 3
[cluster]
gpu_types = ["a", "b", "c"]
gpus = [2, 2, 2]
[workload]
tenants = 3
jobs_per_tenant = 3
[[variant]]
name = "lying"
tenant = 1
strategy = "scale"
factors = { c = 1.5 }
"""


def test_gavel_policies_run_in_the_synthetic_round_loop(tmp_path, capsys) -> None:
    """A synthetic workload runs on the round engine: Gavel's own policies get one row per job with
    its scale factor and weight ``π / active jobs of the tenant`` (so every tenant weighs 1), every
    job's time fractions sum to at most 1 and the devices stay within the GPUs; a ``marketsim run``
    of a tiny synthetic scenario with a lying variant completes."""
    import dataclasses

    import pandas as pd

    from marketsim.analysis.frontends.cli import main
    from marketsim.scenarios.loader import load_scenario

    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SYNTHETIC, encoding="utf-8")
    for policy in ("gavel-max-min-perf", "gavel-max-sum-throughput"):
        model = load_scenario(path).build_model(policy, "truthful", 0)
        eng = model.auctioneer.trace
        seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        fn = eng.mechanism.fn

        def spy(T, m, *, weights=None, scale_factors=None, _fn=fn, _seen=seen, _eng=eng, **kw):
            a = _fn(T, m, weights=weights, scale_factors=scale_factors, **kw)
            _seen.append((_eng.active.copy(), np.asarray(weights, dtype=float), np.asarray(scale_factors),
                          np.asarray(a.X)))  # fmt: skip
            return a

        eng.mechanism = dataclasses.replace(eng.mechanism, fn=spy)
        for _ in range(4):
            model.step()
        assert seen and any((s > 1).any() for _, _, s, _ in seen)  # some job holds several GPUs
        for A, w, s, X in seen:
            assert X.shape[0] == A.size and np.array_equal(s, eng.s[A])  # one row per active job
            assert (X.sum(axis=0) <= model.m_avail() + 1e-7).all()
            ten = model.workload.tenants[A]  # each tenant's job weights add up to its weight, 1
            assert all(w[ten == t].sum() == pytest.approx(1.0) for t in set(ten.tolist()))
        assert (eng.alloc.sum(axis=1) <= 1 + 1e-9).all()
        assert model.auctioneer.resolves >= 1
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    assert "8/8 runs" in capsys.readouterr().out
    df = pd.read_parquet(out / "results.parquet")
    assert set(df["policy"]) == {"gavel-max-min-perf", "gavel-max-sum-throughput"}
    busy = df[df["measure"] == "busy_gpus"].groupby("policy")["value"].mean()
    assert (busy > 0).all()
