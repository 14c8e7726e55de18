"""Spec §6.1 / §6.2 fixtures (F1-F17, H1-H6, V1-V3) for the OEF policies and baselines."""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from marketsim.market import registry
from marketsim.market.oef import SpeedupReport, allocate_tenants, build_virtual_users, lp
from marketsim.market.oef import properties as P
from marketsim.market.oef.baselines import equal_split, gandiva_fair, gavel_maxmin, max_throughput
from marketsim.market.oef.mechanisms import oef_coop, oef_noncoop, si_constrained_lp

LP_TOL = 1e-7
EXACT_TOL = 1e-9

W3 = np.array([[1, 2], [1, 3], [1, 4]], dtype=float)  # eq. (1) instance
W2 = np.array([[1, 2], [1, 5]], dtype=float)  # eq. (6) instance
M = np.array([1, 1])


def f(rows):
    """Exact fraction matrix -> float array."""
    return np.array([[float(Fr(v)) for v in r] for r in rows])


def printed_close(exact, printed, tol):
    assert np.max(np.abs(np.asarray(exact, dtype=float) - np.asarray(printed, dtype=float))) <= tol + 1e-12


# ---------------------------------------------------------------------------------------------- F1-F3 Gandiva_fair

W3_FR = [[Fr(1), Fr(2)], [Fr(1), Fr(3)], [Fr(1), Fr(4)]]


def test_f1_gandiva_exact_trace_and_printed():
    a = gandiva_fair(W3_FR, [1, 1])
    X_exact = a.info["X_exact"]
    assert X_exact == [[1, Fr(4, 45)], [0, Fr(7, 15)], [0, Fr(4, 9)]]
    E = [sum(w * x for w, x in zip(wr, xr, strict=True)) for wr, xr in zip(W3_FR, X_exact, strict=True)]
    assert E == [Fr(53, 45), Fr(7, 5), Fr(16, 9)]
    trades = a.info["trades"]
    assert [(t["buyer"], t["seller"], t["price"], t["qty"]) for t in trades] == [
        (2, 0, Fr(3), Fr(1, 3)),
        (1, 0, Fr(5, 2), Fr(1, 3)),
    ]
    assert [t["rule"] for t in trades] == ["second_price", "midpoint"]
    assert a.info["stop_reason"] == "no_gain"
    # paper eq. (1) printed to two decimals
    printed_close(a.X, [[1, 0.09], [0, 0.47], [0, 0.44]], 0.005)
    printed_close([float(e) for e in E], [1.18, 1.41, 1.76], 0.02)
    assert a.objective == pytest.approx(float(sum(E)), abs=EXACT_TOL)


def test_f1_gandiva_float_path_matches_exact():
    a = gandiva_fair(W3, M)
    np.testing.assert_allclose(a.X, f([[1, Fr(4, 45)], [0, Fr(7, 15)], [0, Fr(4, 9)]]), atol=EXACT_TOL)
    assert a.info["prices"] == pytest.approx([3.0, 2.5], abs=EXACT_TOL)


def test_f2_gandiva_cheating_u1():
    reported = [[Fr(1), Fr(14, 5)], [Fr(1), Fr(3)], [Fr(1), Fr(4)]]
    a = gandiva_fair(reported, [1, 1])
    X = a.info["X_exact"]
    assert X == [[1, Fr(28, 261)], [0, Fr(13, 29)], [0, Fr(4, 9)]]
    assert [t["price"] for t in a.info["trades"]] == [Fr(3), Fr(29, 10)]
    true_E = [sum(w * x for w, x in zip(wr, xr, strict=True)) for wr, xr in zip(W3_FR, X, strict=True)]
    assert true_E == [Fr(317, 261), Fr(39, 29), Fr(16, 9)]
    printed_close(a.X, [[1, 0.11], [0, 0.45], [0, 0.44]], 0.005)
    printed_close([float(e) for e in true_E], [1.22, 1.35, 1.76], 0.02)
    # u1 gains by lying (Gandiva_fair is not SP): 317/261 > 53/45
    assert true_E[0] > Fr(53, 45)


def test_f3_envy_on_gandiva():
    a = gandiva_fair(W3_FR, [1, 1])
    E = P.envy_matrix(W3, a.X)
    assert E[2, 1] == pytest.approx(28 / 15, abs=EXACT_TOL)
    assert E[2, 2] == pytest.approx(16 / 9, abs=EXACT_TOL)
    assert E[2, 1] > E[2, 2]
    assert P.envy(W3, a.X)[2] == pytest.approx(28 / 15 - 16 / 9, abs=EXACT_TOL)


# ---------------------------------------------------------------------------------------------- F4, F11, F12, F15 coop


def test_f4_coop():
    a = oef_coop(W3, M)
    np.testing.assert_allclose(a.X, [[1, 0], [0, 0.5], [0, 0.5]], atol=LP_TOL)
    np.testing.assert_allclose(a.throughput(W3), [1, 1.5, 2], atol=LP_TOL)
    assert a.objective == pytest.approx(4.5, abs=LP_TOL)
    assert P.max_envy(W3, a.X) <= LP_TOL
    assert P.si_gap(W3, a.X, M).min() >= -LP_TOL


def test_f11_coop_and_ef_rows():
    a = oef_coop(W2, M)
    np.testing.assert_allclose(a.X, [[1, 0.25], [0, 0.75]], atol=LP_TOL)
    np.testing.assert_allclose(a.throughput(W2), [1.5, 3.75], atol=LP_TOL)
    assert a.objective == pytest.approx(5.25, abs=LP_TOL)
    # the built (10c) rows: W_l.x_i - W_l.x_l <= 0 for (l, i) = (0, 1), (1, 0)
    A = lp.ef_rows(W2).toarray()
    np.testing.assert_array_equal(A, [[-1, -2, 1, 2], [1, 5, -1, -5]])


def test_f12_coop_u1_lies():
    a = oef_coop([[1, 4], [1, 5]], M)
    np.testing.assert_allclose(a.X, [[1, 3 / 8], [0, 5 / 8]], atol=LP_TOL)
    u = a.throughput(W2)
    np.testing.assert_allclose(u, [7 / 4, 25 / 8], atol=LP_TOL)
    assert u.sum() == pytest.approx(39 / 8, abs=LP_TOL)
    assert u[0] / 1.5 - 1 == pytest.approx(1 / 6, abs=1e-6)  # "16.7% higher"
    assert 1 - (39 / 8) / (21 / 4) == pytest.approx(1 / 14, abs=1e-9)  # paper text: "drops by 8%" (exact 7.1%)


def test_f15_coop_theorem_3_2():
    Wt = np.array([[1, 2], [1, 4]], dtype=float)
    truth = oef_coop(Wt, M)
    np.testing.assert_allclose(truth.X, [[1, 0.25], [0, 0.75]], atol=LP_TOL)
    assert truth.throughput(Wt)[0] == pytest.approx(1.5, abs=LP_TOL)
    lie = oef_coop([[1, 3], [1, 4]], M)
    np.testing.assert_allclose(lie.X, [[1, 1 / 3], [0, 2 / 3]], atol=LP_TOL)
    assert lie.throughput(Wt)[0] == pytest.approx(5 / 3, abs=LP_TOL)
    printed_close(lie.X, [[1, 0.33], [0, 0.67]], 0.005)
    # footnote 4: under the lie <1,3>, u1 would envy u2 at the truthful allocation
    assert np.dot([1, 3], [1, 0.25]) == pytest.approx(1.75) and np.dot([1, 3], [0, 0.75]) == pytest.approx(2.25)


# ---------------------------------------------------------------------------------------------- F5-F8 Gavel


def test_f5_gavel():
    a = gavel_maxmin(W3, M, caps=[1, 1, 1])
    np.testing.assert_allclose(a.info["normalisers"], [1, 4 / 3, 5 / 3], atol=EXACT_TOL)
    assert a.info["s_star"] == pytest.approx(12 / 11, abs=LP_TOL)
    np.testing.assert_allclose(a.X, np.array([[10, 1], [1, 5], [0, 5]]) / 11, atol=LP_TOL)
    np.testing.assert_allclose(a.throughput(W3), [12 / 11, 16 / 11, 20 / 11], atol=LP_TOL)
    assert a.objective == pytest.approx(48 / 11, abs=LP_TOL)
    printed_close(a.X, [[0.91, 0.09], [0.09, 0.45], [0, 0.45]], 0.005)
    # the paper computed E from the rounded X: allow 0.02
    printed_close(a.throughput(W3), [1.09, 1.44, 1.8], 0.02)
    # the tie-break stage gives the same (unique) matrix
    b = gavel_maxmin(W3, M, caps=[1, 1, 1], tiebreak="max_total")
    np.testing.assert_allclose(b.X, a.X, atol=1e-6)


def test_f5_gavel_cap_is_needed():
    a = gavel_maxmin(W3, M)  # no row cap: a different matrix
    assert np.max(np.abs(a.X - np.array([[10, 1], [1, 5], [0, 5]]) / 11)) > 1e-3


def test_f6_envy_on_gavel():
    a = gavel_maxmin(W3, M, caps=[1, 1, 1])
    E = P.envy_matrix(W3, a.X)
    assert E[2, 1] == pytest.approx(21 / 11, abs=LP_TOL)
    assert E[2, 2] == pytest.approx(20 / 11, abs=LP_TOL)


def test_f7_gavel_u1_lies():
    a = gavel_maxmin([[1, 2.5], [1, 3], [1, 4]], M, caps=[1, 1, 1])
    np.testing.assert_allclose(a.X, np.array([[127, 22], [22, 62], [0, 65]]) / 149, atol=LP_TOL)
    assert a.throughput(W3)[0] == pytest.approx(171 / 149, abs=LP_TOL)
    assert 171 / 149 > 12 / 11
    printed_close(a.X[0], [0.85, 0.15], 0.005)


def test_f8_pareto_trade_and_pe_gap():
    X5 = np.array([[10, 1], [1, 5], [0, 5]]) / 11
    Xp = np.array([[1, 1 / 22], [0, 1 / 2], [0, 5 / 11]])
    assert np.all(Xp.sum(axis=0) <= 1 + EXACT_TOL)
    u5, up = P.utilities(W3, X5), P.utilities(W3, Xp)
    np.testing.assert_allclose(up, [12 / 11, 3 / 2, 20 / 11], atol=EXACT_TOL)
    assert np.all(up >= u5 - EXACT_TOL) and up[1] > u5[1]
    assert P.pe_gap(W3, X5, M) == pytest.approx(2 / 33, abs=LP_TOL)
    printed_close(Xp[0], [1, 0.045], 0.005)
    printed_close(Xp[1], [0, 0.495], 0.005)  # Decision: the printed 0.0495 read as 0.495


# ---------------------------------------------------------------------------------------------- F9-F10 LP (4)


def test_f9_max_throughput():
    a = max_throughput(W3, M)
    np.testing.assert_array_equal(a.X, [[1, 0], [0, 0], [0, 1]])
    assert a.objective == pytest.approx(5.0)


def test_f10_max_throughput_envy_and_si():
    a = max_throughput(W3, M)
    E = P.envy_matrix(W3, a.X)
    assert (E[0, 2], E[0, 0]) == (2.0, 1.0)
    assert (E[1, 2], E[1, 1]) == (3.0, 0.0)
    assert P.si_threshold(W3, M)[1] == pytest.approx(4 / 3)
    assert P.si_gap(W3, a.X, M)[1] == pytest.approx(-4 / 3)


# ---------------------------------------------------------------------------------------------- F13-F14


def test_f13_equal_split():
    a = equal_split(W2, M)
    np.testing.assert_allclose(a.X, [[0.5, 0.5], [0.5, 0.5]], atol=EXACT_TOL)
    np.testing.assert_allclose(a.throughput(W2), [1.5, 3.0], atol=EXACT_TOL)


def test_f14_si_constrained():
    np.testing.assert_allclose(P.si_threshold(W2, M), [1.5, 3.0], atol=EXACT_TOL)  # 3 = (1+5)/2, not the printed 4
    a = si_constrained_lp(W2, M)
    np.testing.assert_allclose(a.X, [[1, 0.25], [0, 0.75]], atol=LP_TOL)
    b = si_constrained_lp([[1, 4], [1, 5]], M)
    np.testing.assert_allclose(b.X, [[1, 3 / 8], [0, 5 / 8]], atol=LP_TOL)
    assert b.throughput(W2)[0] > a.throughput(W2)[0]  # Theorem 3.3: the lie pays


# ------------------------------------------------------------------------------- F16-F17 weighted / multi-type


def test_f16_weighted_noncoop_replicated_and_direct():
    a = oef_noncoop(W2, M, weights=[1, 2])
    assert a.info["form"] == "replicated" and a.info["copies"] == [1, 2]
    np.testing.assert_allclose(a.X, [[1, 1 / 3], [0, 2 / 3]], atol=LP_TOL)
    assert a.common_value == pytest.approx(5 / 3, abs=LP_TOL)
    np.testing.assert_allclose(a.throughput(W2), [5 / 3, 10 / 3], atol=LP_TOL)
    b = oef_noncoop(W2, M, weights=[1, 2], replicate=False)
    assert b.info["form"] == "direct"
    np.testing.assert_allclose(b.X, a.X, atol=LP_TOL)
    assert b.common_value == pytest.approx(5 / 3, abs=LP_TOL)
    # the replicated LP's rows (u1, u2, u2)
    t = build_virtual_users([SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u2", "a", (1, 5))], {"u1": 1, "u2": 2})
    np.testing.assert_array_equal(t.W, [[1, 2], [1, 5], [1, 5]])


def test_f16_tenant_level():
    reports = [SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u2", "a", (1, 5))]
    ta = allocate_tenants("oef-noncoop", reports, [1, 1], weights={"u1": 1, "u2": 2})
    np.testing.assert_allclose(ta.X_tenant["u1"], [1, 1 / 3], atol=LP_TOL)
    np.testing.assert_allclose(ta.X_tenant["u2"], [0, 2 / 3], atol=LP_TOL)
    thr = ta.tenant_throughput()
    assert thr["u1"] == pytest.approx(5 / 3, abs=LP_TOL) and thr["u2"] == pytest.approx(10 / 3, abs=LP_TOL)


F17_REPORTS = [SpeedupReport("u1", "a", (1, 2)), SpeedupReport("u1", "b", (1, 3)), SpeedupReport("u2", "a", (1, 5))]


@pytest.mark.parametrize("replicate", [None, False])
def test_f17_multi_type_noncoop(replicate):
    ta = allocate_tenants("oef-noncoop", F17_REPORTS, [1, 1], replicate=replicate)
    assert ta.classes == (("u1", "a"), ("u1", "b"), ("u2", "a"))
    np.testing.assert_allclose(ta.X_class[("u1", "a")], [1, 4 / 37], atol=LP_TOL)
    np.testing.assert_allclose(ta.X_class[("u1", "b")], [0, 15 / 37], atol=LP_TOL)
    np.testing.assert_allclose(ta.X_class[("u2", "a")], [0, 18 / 37], atol=LP_TOL)
    assert ta.allocation.common_value == pytest.approx(45 / 37, abs=LP_TOL)
    thr = ta.tenant_throughput()
    assert thr["u1"] == pytest.approx(90 / 37, abs=LP_TOL) and thr["u2"] == pytest.approx(90 / 37, abs=LP_TOL)
    assert ta.allocation.info["form"] == ("replicated" if replicate is None else "direct")
    # paper §4.2.4 prints per replica row (1, 0.11; 0, 0.41; 0, 0.24; 0, 0.24)
    printed_close([4 / 37, 15 / 37, 9 / 37], [0.11, 0.41, 0.24], 0.005)


def test_f17_replica_rows():
    # the replicated LP itself: rows [[1,2],[1,3],[1,5],[1,5]], 9/37 of GPU_2 for each u2 replica
    a = oef_noncoop([[1, 2], [1, 3], [1, 5], [1, 5]], M)
    np.testing.assert_allclose(a.X, [[1, 4 / 37], [0, 15 / 37], [0, 9 / 37], [0, 9 / 37]], atol=LP_TOL)
    assert a.common_value == pytest.approx(45 / 37, abs=LP_TOL)


# ---------------------------------------------------------------------------------------------- H1-H6


def test_h1_noncoop():
    a = oef_noncoop(W3, M)
    np.testing.assert_allclose(a.X, [[1, 5 / 26], [0, 6 / 13], [0, 9 / 26]], atol=LP_TOL)
    assert a.common_value == pytest.approx(18 / 13, abs=LP_TOL)
    assert a.objective == pytest.approx(54 / 13, abs=LP_TOL)


def test_h2_noncoop():
    a = oef_noncoop(W2, M)
    np.testing.assert_allclose(a.X, [[1, 4 / 7], [0, 3 / 7]], atol=LP_TOL)
    assert a.common_value == pytest.approx(15 / 7, abs=LP_TOL)


def test_h3_si_constrained():
    a = si_constrained_lp(W3, M)
    np.testing.assert_allclose(a.X, [[1, 0], [0, 4 / 9], [0, 5 / 9]], atol=LP_TOL)
    np.testing.assert_allclose(a.throughput(W3), [1, 4 / 3, 20 / 9], atol=LP_TOL)


def test_h4_equal_split_equals_gavel_normalisers():
    a = equal_split(W3, M)
    np.testing.assert_allclose(a.X, np.full((3, 2), 1 / 3), atol=EXACT_TOL)
    np.testing.assert_allclose(a.throughput(W3), [1, 4 / 3, 5 / 3], atol=EXACT_TOL)
    g = gavel_maxmin(W3, M, caps=[1, 1, 1])
    np.testing.assert_allclose(g.info["normalisers"], a.throughput(W3), atol=EXACT_TOL)


@pytest.mark.parametrize("policy", ["oef-noncoop", "oef-coop"])
@pytest.mark.parametrize(("w", "m"), [((1, 1.7, 2.15), (8, 8, 8)), ((1, 3), (2, 5)), ((2, 3, 9, 9.5), (0, 1, 3, 2))])
def test_h5_single_row(policy, w, m):
    fn = registry.get(policy).fn
    a = fn([w], m)
    np.testing.assert_allclose(a.X, [m], atol=LP_TOL)
    wn = np.array(w, dtype=float) / w[0]
    assert a.objective == pytest.approx(float(wn @ np.array(m)), rel=1e-9)
    if policy == "oef-noncoop":
        assert a.common_value == pytest.approx(float(wn @ np.array(m)), rel=1e-9)


def test_h6_lp_sizes():
    nc = lp.build_noncoop(W3, M)
    assert nc.sizes == {"variables": 7, "ineq_rows": 2, "eq_rows": 3, "nonzeros": 6 + 9}
    co = lp.build_coop(W3, M)
    assert co.sizes == {"variables": 6, "ineq_rows": 8, "eq_rows": 0, "nonzeros": 6 + 2 * 2 * 6}
    a = oef_coop(W3, M, cache=False)
    assert a.info["lp_sizes"] == {"variables": 6, "ineq_rows": 8, "eq_rows": 0, "nonzeros": 30}
    b = oef_noncoop(W3, M, cache=False)
    s = b.info["lp_sizes"]
    assert (s["variables"], s["ineq_rows"], s["eq_rows"]) == (7, 2, 3)


# ---------------------------------------------------------------------------------------------- V1-V3


def _one_type(weights):
    reports = [SpeedupReport(f"u{i + 1}", "a", (1, 2 + i)) for i in range(len(weights))]
    return build_virtual_users(reports, {f"u{i + 1}": w for i, w in enumerate(weights)})


def test_v1_gcd_reduction():
    t = _one_type([2, 2])
    assert t.copies == {("u1", "a"): 1, ("u2", "a"): 1}
    assert t.class_weight == {("u1", "a"): 2, ("u2", "a"): 2}


def test_v2_rational_weights():
    t = _one_type([1, 1.5])
    assert t.class_weight == {("u1", "a"): Fr(1), ("u2", "a"): Fr(3, 2)}
    assert t.copies == {("u1", "a"): 2, ("u2", "a"): 3}
    assert t.row_class == (("u1", "a"),) * 2 + (("u2", "a"),) * 3
    assert t.direct_weights is None


def test_v3_multi_type_rows():
    t = build_virtual_users(F17_REPORTS)
    assert t.row_class == (("u1", "a"), ("u1", "b"), ("u2", "a"), ("u2", "a"))
    assert t.class_weight == {("u1", "a"): Fr(1, 2), ("u1", "b"): Fr(1, 2), ("u2", "a"): Fr(1)}
    assert t.copies == {("u1", "a"): 1, ("u1", "b"): 1, ("u2", "a"): 2}
    np.testing.assert_array_equal(t.W, [[1, 2], [1, 3], [1, 5], [1, 5]])


def test_virtual_users_direct_form_above_max_rows():
    t = build_virtual_users(F17_REPORTS, max_rows=3)
    assert t.direct_weights is not None
    np.testing.assert_allclose(t.direct_weights, [0.5, 0.5, 1.0])
    assert t.row_class == (("u1", "a"), ("u1", "b"), ("u2", "a"))


# ---------------------------------------------------------------------------------------------- registry / edge cases


def test_registry_names_and_signature():
    names = set(registry.names("fair-share"))
    assert {"oef-noncoop", "oef-coop", "max-throughput", "maxmin", "gavel", "gandiva-fair", "si-constrained"} <= names
    assert registry.get("oef-noncoop").claims_truthful is True
    assert registry.get("oef-coop").claims_truthful is False


@pytest.mark.parametrize(
    "policy", ["oef-noncoop", "oef-coop", "max-throughput", "maxmin", "gavel", "gandiva-fair", "si-constrained"]
)
def test_empty_and_zero_capacity(policy):
    fn = registry.get(policy).fn
    a = fn(np.zeros((0, 3)), [2, 2, 2])
    assert a.X.shape == (0, 3) and a.objective == 0.0
    b = fn([[1, 2, 3], [1, 1.5, 4]], [0, 0, 0])
    np.testing.assert_array_equal(b.X, np.zeros((2, 3)))


@pytest.mark.parametrize("policy", ["oef-noncoop", "oef-coop", "gavel", "si-constrained", "max-throughput"])
def test_zero_capacity_column_gets_nothing(policy):
    a = registry.get(policy).fn([[1, 2, 3], [1, 1.5, 4]], [2, 0, 3], caps=[10, 10])
    assert np.all(a.X[:, 1] == 0.0)
    assert np.all(a.X.sum(axis=0) <= np.array([2, 0, 3]) + LP_TOL)


def test_cache_returns_copy():
    a = oef_coop(W3, M)
    a.X[0, 0] = 99.0
    b = oef_coop(W3, M)
    assert b.X[0, 0] == pytest.approx(1.0)


def test_gavel_all_rows_capped_at_zero():
    a = gavel_maxmin(W3, M, caps=[0, 0, 0])
    np.testing.assert_array_equal(a.X, np.zeros((3, 2)))


def test_gandiva_exact_with_weights_and_tenant_level():
    a = gandiva_fair(W3_FR, [1, 1], weights=[Fr(1), Fr(1), Fr(2)])
    assert sum(row[1] for row in a.info["X_exact"]) == 1 and sum(row[0] for row in a.info["X_exact"]) == 1
    reports = [SpeedupReport(f"u{i + 1}", "a", (1, 2 + i)) for i in range(3)]
    ta = allocate_tenants("gandiva-fair", reports, [1, 1])
    np.testing.assert_allclose(ta.X_tenant["u1"], [1, 4 / 45], atol=EXACT_TOL)
    assert ta.allocation.info["exact"] is False
