"""Lazy cooperative OEF (marketsim.market.oef.lp.solve_coop: row generation with deletion of slack rows)
against the full LP (10) with all R(R-1) envy-freeness rows (``lp.build_coop`` solved by scipy's
``linprog``), and the certificate that ends the row generation (``lp.ef_violations``)."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.market.oef import lp
from marketsim.market.oef.highs_model import highs_model_from_csc
from marketsim.market.oef.programs import ef_csr

REL = 1e-9


def _unordered(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``w^0 = 1``, step ratios ``U(0.8, 1.6)`` per user and type (rows not ordered: the staircase is
    not optimal and many EF rows bind); ``m_j = n // 2`` (as benchmarks/bench_oef_lp.py)."""
    rng = np.random.default_rng(seed)
    steps = np.log(rng.uniform(0.8, 1.6, size=(n, k - 1)))
    W = np.exp(np.concatenate([np.zeros((n, 1)), np.cumsum(steps, axis=1)], axis=1))
    return W, np.full(k, n // 2, dtype=float)


def _full_optimum(W: np.ndarray, m: np.ndarray, omega: np.ndarray | None) -> float:
    _, fun, _ = lp.solve("ref", lp.build_coop(W, m, omega))
    return -fun


def _value(W: np.ndarray, X: np.ndarray) -> float:
    return float(np.einsum("lj,lj->", W, X))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("n", "k", "seed"), [(30, 10, 1), (45, 6, 2), (60, 10, 3), (60, 4, 4)])
def test_lazy_coop_with_row_deletion_is_the_full_lp_optimum(n, k, seed, weighted):
    W, m = _unordered(n, k, seed)
    omega = np.random.default_rng(seed).choice([0.5, 1.0, 2.0, 3.0], n) if weighted else None
    X, _, info = lp.solve_coop("oef-coop", W, m, omega)
    assert _value(W, X) == pytest.approx(_full_optimum(W, m, omega), rel=REL)
    envy, U = lp.row_envy(W, X, omega)
    np.fill_diagonal(envy, -np.inf)
    assert envy.max() <= 1e-7 * max(1.0, U)  # every one of the R(R-1) EF rows (HiGHS tolerance in the model)
    assert np.all(X >= -1e-9) and np.all(X.sum(axis=0) <= m + 1e-7 * m.max())
    # rows that stayed slack were deleted: the final model holds fewer rows than were generated
    assert info["ef_rows_deleted"] > 0 and info["ef_rows_final"] < info["ef_rows_generated"] < n * (n - 1)
    # the same optimum without deletion and with the former settings (5 per row, window 4, none per column)
    for kw in ({"drop_after": 0}, {"per_row": 5, "window": 4, "per_col": 0, "drop_after": 0}):
        X2, _, info2 = lp.solve_coop("oef-coop", W, m, omega, **kw)
        assert _value(W, X2) == pytest.approx(_value(W, X), rel=REL)
        assert info2["ef_rows_deleted"] == 0


def test_certificate_flags_exactly_the_violated_dropped_rows():
    """A relaxation's optimum (LP (10) with only the EF rows of neighbouring rows) is not envy-free:
    ``ef_violations`` must report violated rows, none of them among the kept ones, and the
    relaxation's value exceeds the full optimum; the full LP's optimum passes the same check."""
    W, m = _unordered(40, 6, 7)
    R = W.shape[0]
    L = np.concatenate([np.arange(R - 1), np.arange(1, R)])
    I = np.concatenate([np.arange(1, R), np.arange(R - 1)])
    x, fun, _ = lp.solve("relaxed", lp.build_coop(W, m, None, pairs=(L, I)))
    X = x.reshape(R, -1)
    kept = np.zeros((R, R), dtype=bool)
    kept[L, I] = True
    envy, viol = lp.ef_violations(W, X, None, kept)
    assert viol.any() and not (viol & kept).any() and not viol.diagonal().any()
    assert -fun > _full_optimum(W, m, None) * (1 + 1e-6)
    # the same pairs computed by hand: W_l.x_i - W_l.x_l > 1e-9 max(1, U)
    E = W @ X.T
    U = float(np.trace(E))
    by_hand = (E - np.diag(E)[:, None] > 1e-9 * max(1.0, U)) & ~kept & ~np.eye(R, dtype=bool)
    np.testing.assert_array_equal(viol, by_hand)
    x_full, _, _ = lp.solve("full", lp.build_coop(W, m))
    _, viol_full = lp.ef_violations(W, x_full.reshape(R, -1), None)
    assert not viol_full.any()


def test_certificate_rejects_a_single_dropped_violated_row():
    """Give row 0 of an envy-free allocation a little more of type 1: exactly the pairs (1, 0) and
    (2, 0) (rows 1 and 2 now envy row 0) are violated when they are not in the model, none when they
    are."""
    W = np.array([[1.0, 2.0], [1.0, 3.0], [1.0, 1.5]])
    X = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])  # equal split: envy-free
    assert not lp.ef_violations(W, X, None)[1].any()
    X[0, 1] += 0.01
    _, viol = lp.ef_violations(W, X, None)
    assert {(int(a), int(b)) for a, b in zip(*np.nonzero(viol), strict=True)} == {(1, 0), (2, 0)}
    skip = np.zeros((3, 3), dtype=bool)
    skip[1, 0] = True
    _, viol = lp.ef_violations(W, X, None, skip)
    assert {(int(a), int(b)) for a, b in zip(*np.nonzero(viol), strict=True)} == {(2, 0)}
    skip[2, 0] = True
    assert not lp.ef_violations(W, X, None, skip)[1].any()
    # weighted (omega_l W_l.x_i <= omega_i W_l.x_l): with twice the weight nobody envies row 0's
    # slightly larger bundle, and row 0, entitled to twice as much, envies both others
    _, viol_w = lp.ef_violations(W, X, np.array([2.0, 1.0, 1.0]))
    assert not viol_w[:, 0].any() and viol_w[0, 1:].all() and not viol_w[1:, 1:].any()


def test_deleting_rows_with_basic_slacks_keeps_the_optimal_basis():
    """What the row deletion relies on (HiGHS behaviour, checked so an upgrade that drops it shows):
    after deleting the EF rows whose slack is basic, the basis stays valid and the re-solve makes no
    pivot and keeps the optimum."""
    import highspy

    W, m = _unordered(60, 6, 9)
    R, k = W.shape
    n = R * k
    h = highs_model_from_csc(
        -W.ravel(),
        np.arange(n + 1, dtype=np.int32),
        np.tile(np.arange(k, dtype=np.int32), R),
        np.ones(n),
        np.full(k, -np.inf),
        m,
    )
    L, I = np.nonzero((np.abs(np.subtract.outer(np.arange(R), np.arange(R))) <= 5) & ~np.eye(R, dtype=bool))
    start, index, value = ef_csr(W, None, L, I)
    h.addRows(L.size, np.full(L.size, -np.inf), np.zeros(L.size), value.size, start[:-1], index, value)
    h.run()
    before = h.getInfo().objective_function_value
    basic = np.array([s == highspy.HighsBasisStatus.kBasic for s in h.getBasis().row_status[k:]])
    drop = (np.flatnonzero(basic) + k).astype(np.int32)
    assert 0 < drop.size < L.size
    h.deleteRows(drop.size, drop)
    assert h.getBasis().valid
    h.run()
    assert h.getInfo().simplex_iteration_count == 0
    assert h.getInfo().objective_function_value == pytest.approx(before, rel=1e-12)
