"""Property tests (hypothesis) of the OEF policies and baselines, plus the properties module."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketsim.market import registry
from marketsim.market.oef import SpeedupReport, allocate_tenants
from marketsim.market.oef import properties as P
from marketsim.market.oef.baselines import equal_split, gandiva_fair, gavel_maxmin
from marketsim.market.oef.mechanisms import oef_coop, oef_noncoop

TOL = 1e-7
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICIES = ["oef-noncoop", "oef-coop", "max-throughput", "maxmin", "gavel", "gandiva-fair", "si-constrained"]


@st.composite
def instances(draw, max_n: int = 6, max_k: int = 4, monotone: bool = False):
    """Random (W, m): ``w^0 = 1``, steps ``U(1, 1.6)`` (or ``U(0.5, 1.6)`` when not monotone),
    ``m_j in 0..8`` with at least one GPU."""
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(1, max_k))
    lo = 1.0 if monotone else 0.5
    steps = draw(st.lists(st.lists(st.floats(lo, 1.6), min_size=k - 1, max_size=k - 1), min_size=n, max_size=n))
    W = np.cumprod(np.concatenate([np.ones((n, 1)), np.array(steps, dtype=float).reshape(n, k - 1)], axis=1), axis=1)
    m = np.array(draw(st.lists(st.integers(0, 8), min_size=k, max_size=k)))
    if m.sum() == 0:
        m[draw(st.integers(0, k - 1))] = 1
    return W, m


weights_st = st.sampled_from([1, 2, 3, 0.5, 1.5, 2.5])


def _weights(draw_list, n):
    return [draw_list[i % len(draw_list)] for i in range(n)]


def _scale(m):
    return max(1.0, float(np.max(m)))


@SETTINGS
@given(inst=instances(), policy=st.sampled_from(POLICIES), wl=st.lists(weights_st, min_size=1, max_size=6))
def test_capacity_and_nonnegativity(inst, policy, wl):
    W, m = inst
    n = W.shape[0]
    caps = np.linspace(1, 6, n)
    a = registry.get(policy).fn(W, m, weights=_weights(wl, n), caps=caps, cache=False)
    assert a.X.shape == W.shape
    assert a.X.min() >= 0.0
    assert np.all(a.X.sum(axis=0) <= m + TOL * _scale(m))
    assert a.objective == pytest.approx(float(np.sum(W * a.X)), rel=1e-9, abs=1e-9)
    if policy in ("gavel", "maxmin"):
        assert np.all(a.X.sum(axis=1) <= caps + TOL * _scale(m))


@SETTINGS
@given(inst=instances(), wl=st.lists(weights_st, min_size=1, max_size=6))
def test_noncoop_equal_throughput_per_unit_weight(inst, wl):
    W, m = inst
    w = np.array(_weights(wl, W.shape[0]), dtype=float)
    a = oef_noncoop(W, m, weights=w, cache=False)
    per_weight = a.throughput(W) / w
    assert np.ptp(per_weight) <= TOL * max(1.0, per_weight.max())
    # efficiency: the equal-value optimum is at least the weighted equal split's common value
    eq = (w / w.sum())[:, None] * m[None, :]
    assert per_weight.min() >= (np.einsum("lj,lj->l", W, eq) / w).min() - TOL * max(1.0, per_weight.max())


@SETTINGS
@given(inst=instances(), wl=st.lists(weights_st, min_size=1, max_size=6))
def test_coop_weighted_envy_free_si_and_beats_equal_split(inst, wl):
    W, m = inst
    w = np.array(_weights(wl, W.shape[0]), dtype=float)
    a = oef_coop(W, m, weights=w, cache=False)
    U = a.objective
    assert P.max_envy(W, a.X, w) <= TOL * max(1.0, U)
    assert a.objective >= equal_split(W, m, weights=w).objective - TOL * max(1.0, U)
    # sharing incentive, as Theorem 5.1 derives from EF + full allocation (weighted threshold)
    assert P.si_gap(W, a.X, m, w).min() >= -1e-6 * max(1.0, U)


@SETTINGS
@given(inst=instances(max_n=5), wl=st.lists(st.sampled_from([1, 2, 3, 1.5, 0.5]), min_size=1, max_size=5))
def test_replication_vs_direct_weighted_form(inst, wl):
    W, m = inst
    w = _weights(wl, W.shape[0])
    rep = oef_noncoop(W, m, weights=w, replicate=True, cache=False)
    dire = oef_noncoop(W, m, weights=w, replicate=False, cache=False)
    assert rep.info["form"] == "replicated" and dire.info["form"] == "direct"
    # class throughputs are unique at the optimum (all equal to omega_c t*): identical in both forms
    np.testing.assert_allclose(rep.throughput(W), dire.throughput(W), atol=1e-6 * max(1.0, rep.objective))
    assert rep.common_value == pytest.approx(dire.common_value, rel=1e-6, abs=1e-9)
    crep = oef_coop(W, m, weights=w, replicate=True, cache=False)
    cdir = oef_coop(W, m, weights=w, replicate=False, cache=False)
    assert crep.objective == pytest.approx(cdir.objective, rel=1e-6, abs=1e-9)
    # both are weighted-EF at the class level
    for a in (crep, cdir):
        assert P.max_envy(W, a.X, w) <= 1e-6 * max(1.0, a.objective)


@SETTINGS
@given(inst=instances(max_n=4, max_k=3))
def test_tenant_level_replication_vs_direct_throughputs(inst):
    """Tenant level: replicated and direct weighted forms give the same per-tenant throughput,
    equal per unit weight. (X_class itself is compared on the unique-optimum fixtures F16/F17;
    on random instances LP (9) can have several optimal X with the same throughputs.)"""
    W, m = inst
    reports = [SpeedupReport(f"u{i}", "t", tuple(W[i])) for i in range(W.shape[0])]
    weights = {f"u{i}": (1 + i % 2) for i in range(W.shape[0])}
    a = allocate_tenants("oef-noncoop", reports, m, weights=weights, replicate=True, cache=False)
    b = allocate_tenants("oef-noncoop", reports, m, weights=weights, replicate=False, cache=False)
    ta, tb = a.tenant_throughput(), b.tenant_throughput()
    for u in ta:
        assert ta[u] == pytest.approx(tb[u], rel=1e-6, abs=1e-9)
        assert ta[u] / weights[u] == pytest.approx(ta["u0"] / weights["u0"], rel=1e-6, abs=1e-9)


@SETTINGS
@given(inst=instances(max_n=6, max_k=3), wl=st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=6))
def test_gandiva_sharing_incentive_and_full_allocation(inst, wl):
    W, m = inst
    w = _weights(wl, W.shape[0])
    a = gandiva_fair(W, m, weights=w, cache=False)
    np.testing.assert_allclose(a.X.sum(axis=0), m, atol=1e-9 * _scale(m))
    eq = equal_split(W, m, weights=w)
    # every trade is at a price between the parties' ratios, so nobody ends below the equal split
    assert np.all(a.throughput(W) >= eq.throughput(W) - 1e-9 * _scale(m) * W.max())
    assert a.info["stop_reason"] in ("no_gain", "no_pair", "qty_below_tol")


@SETTINGS
@given(inst=instances(max_n=6, max_k=3))
def test_gavel_sharing_incentive_with_caps(inst):
    W, m = inst
    caps = np.ones(W.shape[0])
    a = gavel_maxmin(W, m, caps=caps, cache=False)
    assert a.info["s_star"] >= 1.0 - TOL
    N = np.array(a.info["normalisers"])
    assert np.all(a.throughput(W) >= N - 1e-6)


@SETTINGS
@given(inst=instances(max_n=5, max_k=3))
def test_pe_gap_properties(inst):
    W, m = inst
    thr = registry.get("max-throughput").fn(W, m)
    assert P.pe_gap(W, thr.X, m) <= TOL * max(1.0, thr.objective)
    eq = equal_split(W, m)
    assert P.pe_gap(W, eq.X, m) >= -TOL
    # the gap is the distance to the best Pareto improvement: never above U(LP 4) - U(X)
    assert P.pe_gap(W, eq.X, m) <= thr.objective - eq.objective + TOL * max(1.0, thr.objective)


# ---------------------------------------------------------------------------------------------- properties module units


def test_envy_matrix_and_weighted_envy():
    W = np.array([[1.0, 2.0], [1.0, 5.0]])
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    E = P.envy_matrix(W, X)
    np.testing.assert_array_equal(E, [[1, 2], [1, 5]])
    np.testing.assert_array_equal(P.envy(W, X), [1.0, 0.0])
    # with weights (1, 2): row 0 compares 1/1 with 2/2 -> no envy
    np.testing.assert_array_equal(P.envy(W, X, [1, 2]), [0.0, 0.0])
    np.testing.assert_allclose(P.si_gap(W, X, [1, 1]), [1 - 1.5, 5 - 3.0])
    np.testing.assert_allclose(P.si_gap(W, X, [1, 1], weights=[1, 3]), [1 - 0.75, 5 - 4.5])


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ([0, 1, 2, 0], True),
        ([1, 0, 2, 0], False),
        ([0, 0, 0, 0], True),
        ([1e-12, 1, 0, 3e-10], True),
        ([3, 0, 0, 1], False),
    ],
)
def test_is_contiguous(row, expected):
    assert P.is_contiguous(row) is expected


def test_support_nnz_single_type_fraction():
    X = np.array([[1, 0.25, 0], [0, 0.75, 1e-12], [0, 0, 2]])
    assert P.nnz(X) == 4
    np.testing.assert_array_equal(P.support(X).sum(axis=1), [2, 1, 1])
    assert P.single_type_fraction(X) == pytest.approx(2 / 3)
    np.testing.assert_array_equal(P.contiguous_rows(X), [True, True, True])


def test_tenant_utility_with_fake_type():
    true = {"a": (1.0, 2.0), "b": (2.0, 6.0)}  # b normalises to (1, 3)
    X_class = {
        ("u1", "a"): np.array([1.0, 0.0]),
        ("u1", "b"): np.array([0.0, 0.5]),
        ("u1", "fake"): np.array([0.5, 0.5]),  # valued by the best real type: max(0.5+1, 0.5+1.5) = 2
        ("u2", "a"): np.array([5.0, 5.0]),  # another tenant: ignored
    }
    assert P.tenant_utility("u1", true, X_class) == pytest.approx(1.0 + 1.5 + 2.0)


def test_tenant_level_noncoop_with_fake_type_probe():
    """Multi-type probe (spec §2.2 rule): u1 with one real type declares an extra fake type."""
    truth = [SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u2", "a", (1, 5))]
    lie = truth + [SpeedupReport("u1", "fake", (1, 5))]
    t = allocate_tenants("oef-noncoop", truth, [1, 1])
    fake = allocate_tenants("oef-noncoop", lie, [1, 1])
    u_truth = P.tenant_utility("u1", {"a": (1, 2)}, t.X_class)
    u_lie = P.tenant_utility("u1", {"a": (1, 2)}, fake.X_class)
    assert u_truth == pytest.approx(15 / 7, abs=TOL)  # H2
    # the weight split keeps the per-tenant reported throughput equal across tenants
    thr = fake.tenant_throughput()
    assert thr["u1"] == pytest.approx(thr["u2"], rel=1e-7)
    assert u_lie >= 0.0


@settings(max_examples=15, deadline=None)
@given(inst=instances(max_n=6, max_k=3), wl=st.lists(weights_st, min_size=1, max_size=6))
def test_coop_constraint_generation_matches_full_lp(inst, wl):
    W, m = inst
    w = _weights(wl, W.shape[0])
    full = oef_coop(W, m, weights=w, ef_rows="full", cache=False)
    lazy = oef_coop(W, m, weights=w, ef_rows="lazy", lazy_per_row=1, cache=False)
    assert lazy.info["ef_rows"] == "lazy" and full.info["ef_rows"] == "full"
    assert lazy.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-9)
    assert P.max_envy(W, lazy.X, w) <= TOL * max(1.0, lazy.objective)


def _unique_on_optimal_face(prog, n_x: int) -> bool:
    """Spec A4.5 criterion: every x variable has the same min and max over the optimal face."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    r0 = linprog(prog.c, A_ub=prog.A_ub, b_ub=prog.b_ub, A_eq=prog.A_eq, b_eq=prog.b_eq, method="highs-ds")
    assert r0.status == 0
    A_ub = sp.vstack([prog.A_ub, sp.csr_array(prog.c[None, :])], format="csr")
    b_ub = np.concatenate([prog.b_ub, [r0.fun + 1e-10 * max(1.0, abs(r0.fun))]])
    for v in range(n_x):
        e = np.zeros(prog.c.size)
        e[v] = 1.0
        lo = linprog(e, A_ub=A_ub, b_ub=b_ub, A_eq=prog.A_eq, b_eq=prog.b_eq, method="highs-ds")
        hi = linprog(-e, A_ub=A_ub, b_ub=b_ub, A_eq=prog.A_eq, b_eq=prog.b_eq, method="highs-ds")
        if lo.status != 0 or hi.status != 0 or -hi.fun - lo.fun > 1e-7:
            return False
    return True


@settings(max_examples=15, deadline=None)
@given(inst=instances(max_n=4, max_k=3), wl=st.lists(st.sampled_from([1, 2, 3, 1.5, 0.5]), min_size=1, max_size=4))
def test_replication_vs_direct_identical_class_sums_where_unique(inst, wl):
    """Replicated and direct weighted forms give identical class sums X whenever the class-level
    optimum is unique (spec A1 unit test; on a non-unique optimal face only U and, for LP 9, the
    class throughputs are determined -- tested above)."""
    from marketsim.market.oef import lp as lpmod

    W, m = inst
    w = _weights(wl, W.shape[0])
    om = np.array(w, dtype=float)
    mf = m.astype(float)
    for fn, build in ((oef_noncoop, lpmod.build_noncoop), (oef_coop, lpmod.build_coop)):
        rep = fn(W, m, weights=w, replicate=True, cache=False)
        dire = fn(W, m, weights=w, replicate=False, cache=False)
        if _unique_on_optimal_face(build(W, mf, om), W.size):
            np.testing.assert_allclose(rep.X, dire.X, atol=1e-6)
