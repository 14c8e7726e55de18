"""The fast OEF solve paths (marketsim.market.oef.lp.solve_noncoop / solve_coop) against the full LPs.

Non-coop: dual simplex from the staircase basis must reach the optimum of LP (9) as scipy's
``linprog`` solves it from scratch; on ordered speedups the staircase basis is already optimal.
Coop: lazy generation of the envy-freeness rows must reach the optimum of the full LP (10) with all
``R(R-1)`` rows, and the final point must be envy-free over all pairs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketsim.market.oef import SpeedupReport, allocate_tenants, lp, noncoop_lp
from marketsim.market.oef import properties as P
from marketsim.market.oef.highs_model import highs_model_from_csc, solve_model
from marketsim.market.oef.mechanisms import oef_coop, oef_noncoop

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REL = 1e-9
EF_TOL = 1e-7


@st.composite
def instances(draw, max_n: int = 12, max_k: int = 5):
    """Random (W, m): ``w^0 = 1``, steps ``U(0.5, 2)`` (non-monotone, unordered rows allowed),
    sometimes a few identical rows; ``m_j in 0..20`` with at least one GPU, sometimes spanning
    three orders of magnitude (column scaling)."""
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(1, max_k))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    W = np.cumprod(np.concatenate([np.ones((n, 1)), rng.uniform(0.5, 2.0, (n, k - 1))], axis=1), axis=1)
    if n > 2 and draw(st.booleans()):
        W[1] = W[0]
    m = rng.integers(0, 21, k)
    if draw(st.booleans()):
        m = m * rng.choice([1, 1000], k)
    if m.sum() == 0:
        m[0] = 1
    return W, m


weights_st = st.lists(st.sampled_from([1, 2, 3, 0.5, 1.5]), min_size=1, max_size=12)


def _weights(wl, n):
    return [wl[i % len(wl)] for i in range(n)]


def _ordered(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Spec §5.2 ordered generator (each step ratio sorted over users), ``m_j = max(1, n // 2)``."""
    rng = np.random.default_rng(seed)
    steps = np.sort(np.log(rng.uniform(1.0, 1.6, size=(n, k - 1))), axis=0)
    W = np.exp(np.concatenate([np.zeros((n, 1)), np.cumsum(steps, axis=1)], axis=1))
    return W, np.full(k, max(1, n // 2), dtype=int)


@SETTINGS
@given(inst=instances(), wl=weights_st, replicate=st.sampled_from([None, False]))
def test_noncoop_fast_path_matches_linprog(inst, wl, replicate):
    W, m = inst
    w = _weights(wl, W.shape[0])
    fast = oef_noncoop(W, m, weights=w, replicate=replicate, cache=False)
    ref = oef_noncoop(W, m, weights=w, replicate=replicate, cache=False, solver="highs")
    assert fast.info["noncoop_path"] in ("staircase", "highs") and "noncoop_path" not in ref.info
    assert fast.objective == pytest.approx(ref.objective, rel=REL, abs=1e-9)
    assert fast.common_value == pytest.approx(ref.common_value, rel=REL, abs=1e-9)
    # LP (9c): every row's reported throughput per unit of weight is the same
    u = np.einsum("lj,lj->l", fast.X / np.asarray(w, dtype=float)[:, None], W / W[:, :1])
    assert np.ptp(u) <= EF_TOL * max(1.0, float(u.max()))
    assert np.all(fast.X.sum(axis=0) <= m + EF_TOL * max(1.0, float(m.max())))


@pytest.mark.parametrize("n,seed", [(5, 1), (40, 2), (200, 3)])
def test_staircase_is_optimal_on_ordered_speedups(n, seed):
    """Paper Lemma 3.1 / Theorem 5.2: on ordered speedups the staircase vertex carries a dual
    certificate (no solver call), HiGHS started from its basis makes no pivot, and the optimum
    equals linprog's from scratch."""
    W, m = _ordered(n, 10, seed)
    fast = oef_noncoop(W, m, cache=False)
    assert fast.info["noncoop_path"] == "staircase"
    st = lp.staircase(W, m.astype(float))
    assert st is not None and st.optimal
    h = highs_model_from_csc(*lp.noncoop_csc(W, m.astype(float)))
    assert noncoop_lp._set_basis(h, np.append(st.columns(10), n * 10), n * 10 + 1, 10, n)
    x, _ = solve_model("test", h)
    assert h.getInfo().simplex_iteration_count == 0
    np.testing.assert_allclose(x[:-1].reshape(n, 10), st.matrix(n, 10), atol=1e-9 * n)
    ref = lp.build_noncoop(W, m.astype(float))
    _, fun, _ = lp.solve("ref", ref)
    assert fast.objective == pytest.approx(-fun, rel=REL)
    # the vertex is the staircase: every row's support is contiguous, at most R + k - 1 non-zeros
    assert int((fast.X > lp.ZERO_TOL).sum()) <= n + 10 - 1
    assert all(P.is_contiguous(row) for row in fast.X)


def test_staircase_is_a_crash_basis_elsewhere():
    """Unordered speedups: the certificate fails, HiGHS repairs the staircase basis (same optimum)."""
    rng = np.random.default_rng(7)
    W = np.exp(rng.uniform(0.0, 2.0, size=(30, 6)))
    m = rng.integers(1, 30, 6)
    st = lp.staircase(W / W[:, :1], m.astype(float))
    assert st is not None and not st.optimal
    fast = oef_noncoop(W, m, cache=False)
    ref = oef_noncoop(W, m, cache=False, solver="highs")
    assert fast.info["noncoop_path"] == "highs" and fast.info["staircase_crash"] is True
    assert fast.info["simplex_iterations"] > 0
    assert fast.objective == pytest.approx(ref.objective, rel=REL)


@SETTINGS
@given(
    inst=instances(),
    wl=weights_st,
    per_row=st.sampled_from([1, 5]),
    window=st.sampled_from([0, 1, 4]),
    per_col=st.sampled_from([0, 1, 3]),
    drop_after=st.sampled_from([0, 1, 2]),
)
def test_lazy_coop_matches_full_lp(inst, wl, per_row, window, per_col, drop_after):
    W, m = inst
    w = _weights(wl, W.shape[0])
    opts = {"weights": w, "cache": False}
    lazy = oef_coop(
        W,
        m,
        ef_rows="lazy",
        lazy_per_row=per_row,
        lazy_window=window,
        lazy_per_col=per_col,
        lazy_drop_after=drop_after,
        **opts,
    )
    full = oef_coop(W, m, ef_rows="full", **opts)
    assert lazy.info["ef_rows"] == "lazy" and full.info["ef_rows"] == "full"
    assert lazy.objective == pytest.approx(full.objective, rel=REL, abs=1e-9)
    assert P.max_envy(W, lazy.X, w) <= EF_TOL * max(1.0, lazy.objective)  # all R(R-1) pairs
    assert np.all(lazy.X.sum(axis=0) <= m + EF_TOL * max(1.0, float(m.max())))


def test_lazy_coop_matches_full_lp_at_moderate_size():
    """R = 60 ordered rows (the default seed window) and unordered rows: same optimum as the full
    LP with all 3540 EF rows, envy-free over all pairs, far fewer EF rows generated."""
    rng = np.random.default_rng(11)
    for W, m in (_ordered(60, 8, 5), (np.exp(rng.uniform(0.0, 1.5, size=(60, 8))), rng.integers(1, 40, 8))):
        lazy = oef_coop(W, m, cache=False)
        full = oef_coop(W, m, ef_rows="full", cache=False)
        assert lazy.info["ef_rows"] == "lazy"
        assert lazy.objective == pytest.approx(full.objective, rel=REL)
        assert P.max_envy(W, lazy.X, None) <= EF_TOL * max(1.0, lazy.objective)
        assert lazy.info["ef_rows_generated"] < 60 * 59


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_tenants=st.integers(1, 5),
    k=st.integers(1, 4),
    tw=st.lists(st.sampled_from([1, 2, 3]), min_size=5, max_size=5),
)
def test_several_job_types_lazy_and_fast_match_full(seed, n_tenants, k, tw):
    """Tenants with one to three job types and priorities (rows weighted pi_u / |T_u|, replicated):
    the default (fast) solve paths give the full LPs' optima, the coop one envy-free per class."""
    rng = np.random.default_rng(seed)
    reports = []
    for u in range(n_tenants):
        for tau in range(int(rng.integers(1, 4))):
            w = np.cumprod(np.r_[1.0, rng.uniform(0.7, 1.8, k - 1)])
            reports.append(SpeedupReport(f"u{u}", f"t{tau}", tuple(float(x) for x in w)))
    m = rng.integers(1, 12, k)
    weights = {f"u{u}": tw[u] for u in range(n_tenants)}
    for policy, ref_opts in (("oef-noncoop", {"solver": "highs"}), ("oef-coop", {"ef_rows": "full"})):
        fast = allocate_tenants(policy, reports, m, weights=weights, cache=False)
        ref = allocate_tenants(policy, reports, m, weights=weights, cache=False, **ref_opts)
        assert fast.allocation.objective == pytest.approx(ref.allocation.objective, rel=REL, abs=1e-9)
        if policy == "oef-coop":
            omega = [float(fast.class_weight[c]) for c in fast.classes]
            U = fast.allocation.objective
            assert P.max_envy(fast.W, fast.allocation.X, omega) <= EF_TOL * max(1.0, U)


@pytest.mark.parametrize("replicate", [True, False])
def test_staircase_with_weights_on_ordered_speedups(replicate):
    """Weighted rows (replicated copies, or the direct form A2' with omega in the value rows) on
    ordered speedups: the staircase certificate holds and the optimum equals linprog's."""
    W, m = _ordered(30, 6, 9)
    w = [1, 2, 3] * 10
    fast = oef_noncoop(W, m, weights=w, replicate=replicate, cache=False)
    ref = oef_noncoop(W, m, weights=w, replicate=replicate, cache=False, solver="highs")
    assert fast.info["noncoop_path"] == "staircase"
    assert fast.objective == pytest.approx(ref.objective, rel=REL)
    np.testing.assert_allclose(fast.throughput(W) / np.asarray(w, dtype=float), fast.common_value, rtol=1e-9)


def _unordered_rows(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    return np.exp(np.concatenate([np.zeros((n, 1)), np.cumsum(np.log(rng.uniform(0.8, 1.6, (n, k - 1))), axis=1)], 1))


@pytest.mark.parametrize("seed", range(3))
def test_noncoop_warm_start_across_rounds_matches_cold_solves(seed):
    """lp.NoncoopWarmStart: a sequence of rounds, each dropping and adding a few rows (and one
    with a weight), reaches the cold solve's allocation (unique optimum on these generic rows)
    from the previous round's basis, in fewer simplex iterations."""
    rng = np.random.default_rng(seed)
    n, k = 40, 5
    W, m = _unordered_rows(rng, n, k), np.array([20, 20, 10, 15, 20])
    ids, nxt = list(range(n)), n
    warm = lp.NoncoopWarmStart()
    warm_it = cold_it = 0
    for r in range(6):
        a = oef_noncoop(W, m, warm_start=warm, row_ids=ids)
        b = oef_noncoop(W, m, cache=False)
        assert a.info.get("warm_start", False) is (r > 0 and a.info["noncoop_path"] == "highs")
        np.testing.assert_allclose(a.X, b.X, atol=1e-8)
        assert a.common_value == pytest.approx(b.common_value, rel=1e-10)
        if r > 0:
            warm_it += a.info["simplex_iterations"]
            cold_it += b.info["simplex_iterations"]
        drop = rng.choice(len(ids), 3, replace=False)
        keep = np.setdiff1d(np.arange(len(ids)), drop)
        W = np.vstack([W[keep], _unordered_rows(rng, 3, k)])
        ids = [ids[i] for i in keep] + [nxt, nxt + 1, nxt + 2]
        nxt += 3
    assert warm.rounds == 6 and warm.warm_rounds >= 4
    assert warm_it < cold_it
    # weighted, replicated rows get (id, copy) keys; the next round reuses them
    w = [2] + [1] * (len(ids) - 1)
    a1 = oef_noncoop(W, m, weights=w, warm_start=warm, row_ids=ids)
    a2 = oef_noncoop(W, m, weights=w, warm_start=warm, row_ids=ids)
    ref = oef_noncoop(W, m, weights=w, cache=False)
    assert a2.info["warm_start"] is True and a2.info["simplex_iterations"] == 0
    np.testing.assert_allclose(a1.X, ref.X, atol=1e-8)
    np.testing.assert_allclose(a2.X, ref.X, atol=1e-8)


def test_noncoop_warm_start_bad_options():
    from marketsim.market.errors import InputError

    W = [[1.0, 2.0], [1.0, 3.0]]
    for kwargs, field in (({"warm_start": object()}, "warm_start"), ({"row_ids": [1]}, "row_ids"),
                          ({"row_ids": [1, 1]}, "row_ids"), ({"row_ids": [[1], [2]]}, "row_ids")):  # fmt: skip
        with pytest.raises(InputError) as err:
            oef_noncoop(W, [1, 1], **kwargs)
        assert err.value.field == field
    with pytest.raises(InputError):
        oef_coop(W, [1, 1], warm_start=lp.NoncoopWarmStart())  # non-cooperative only
