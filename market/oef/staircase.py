"""The staircase vertex of LP (9) and its optimality certificate (paper Lemma 3.1 / Theorem 5.2).

:func:`staircase` hands out the devices by the north-west corner rule over rows sorted by speedup and
checks the basis's duals; on ordered speedups the vertex is optimal and :func:`marketsim.market.oef.noncoop_lp.
solve_noncoop` returns it without a solver, elsewhere it is the simplex's crash basis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Staircase", "staircase"]


@dataclass(frozen=True)
class Staircase:
    """The staircase basic solution of LP (9): basic cells ``(rows[c], types[c])`` (input row
    indices, type indices) with values ``x[c]`` (devices), the common value ``t`` per unit of
    weight, ``optimal``: whether the optimality certificate holds (see :func:`staircase`), and the
    basis's capacity prices ``p`` (k,) (dual of the capacity rows, up to scale)."""

    rows: np.ndarray
    types: np.ndarray
    x: np.ndarray
    t: float
    optimal: bool
    prices: np.ndarray

    def columns(self, k: int) -> np.ndarray:
        """Basic ``x`` columns, row-major ``l*k + j``."""
        return self.rows * k + self.types

    def matrix(self, R: int, k: int) -> np.ndarray:
        """The allocation ``(R, k)`` in devices."""
        X = np.zeros((R, k))
        X[self.rows, self.types] = self.x
        return X


def staircase(W: np.ndarray, m: np.ndarray, omega: np.ndarray | None = None, tol: float = 1e-9) -> Staircase | None:
    """The staircase vertex of LP (9) (paper Lemma 3.1 / Theorem 5.2) and its optimality certificate.

    Rows are sorted by their speedups (lexicographically, fastest type first); the devices are
    handed out type by type, slowest first, each row taking ``omega_l t`` of throughput from the
    next free devices (north-west corner rule), at the largest common ``t`` that fits. Row ``r``
    of the sorted order occupies ``[P_r, P_{r+1})`` on a throughput axis (``P`` = cumulative
    ``omega``); type ``j`` covers ``[b_j, b_{j+1})`` with ``t (G_j(b_{j+1}) - G_j(b_j)) = m_j``,
    ``G_j`` the piecewise-linear cumulative of ``1 / w_r^j``. ``b_k`` grows with ``1/t``; ``t`` is
    bracketed by 65-point grids until no boundary ``b_1..b_{k-1}`` crosses a row boundary inside
    the bracket, then interpolated (exactly: those boundaries and the last type's unmet need are
    affine in ``1/t`` there). Cell ``(r, j)`` gets
    ``x = t |[b_j, b_{j+1}) ∩ [P_r, P_{r+1})| / w_r^j`` devices: a basic feasible solution with
    the ``R + k - 1`` cells and ``t`` basic.

    Certificate: the basis's duals (``p_j`` per capacity row, ``q_r`` per value row) solve
    ``p_j = q_r w_r^j`` on the basic cells (along the staircase ``q_{r+1} = q_r w_r^j / w_{r+1}^j``
    for the type ``j`` two neighbouring rows share) and ``sum_r omega_r q_r = sum omega``; the
    solution is optimal iff ``p_j >= q_r w_r^j`` for every row and type and every capacity row is
    tight (LP duality, complementary slackness), both checked with relative tolerance ``tol``.
    On ordered speedups (every step ratio ``w^{j+1}/w^j`` non-decreasing over the sorted rows) it
    holds; elsewhere the staircase is a crash basis.
    Returns ``None`` when a row boundary meets a type boundary (a degenerate staircase).
    """
    R, k = W.shape
    om = np.ones(R) if omega is None else np.asarray(omega, dtype=float)
    order = np.lexsort(W.T)
    Ws, oms = W[order], om[order]
    tot = float(oms.sum())
    P = np.concatenate([[0.0], np.cumsum(oms), [2.0 * tot]])  # last: a sentinel row (no clipping at tot)
    C = np.zeros((k, R + 2))
    C[:, 1 : R + 1] = np.cumsum(oms[:, None] / Ws, axis=0).T
    C[:, R + 1] = C[:, R] + tot / Ws.min(axis=0)
    m = np.asarray(m, dtype=float)

    def bounds(u: np.ndarray) -> np.ndarray:
        b = np.zeros((k + 1, u.size))
        for j in range(k):
            b[j + 1] = np.interp(np.interp(b[j], P, C[j]) + m[j] * u, C[j], P)
        return b

    lo, hi = tot / float(m @ Ws.max(axis=0)), tot / float(m @ Ws.min(axis=0))  # bracket of u = 1/t
    cuts = P[1:R]  # interior row boundaries
    for _ in range(6):
        u = np.linspace(lo, hi, 65)
        grid = bounds(u)
        i = min(max(int(np.searchsorted(grid[k], tot)), 1), 64)
        lo, hi, b_lo, b_hi = u[i - 1], u[i], grid[:, i - 1], grid[:, i]
        # all boundaries grow with u; when none crosses a row boundary inside [lo, hi], each is
        # affine in u there and the interpolation at b_k = tot is exact
        if np.array_equal(np.searchsorted(cuts, b_lo[1:k]), np.searchsorted(cuts, b_hi[1:k])):
            break
    # the last type's unmet need F(u) = G_{k-1}(tot) - G_{k-1}(b_{k-1}(u)) - m_{k-1} u is affine
    # in u on the bracket too (b_k itself is not: it leaves the last row at tot); F(u*) = 0
    f_lo, f_hi = (
        C[k - 1, R] - np.interp(np.array([b_lo[k - 1], b_hi[k - 1]]), P, C[k - 1]) - m[k - 1] * np.array([lo, hi])
    )
    frac = f_lo / (f_lo - f_hi) if f_lo > f_hi else 1.0
    b = b_lo + frac * (b_hi - b_lo)
    b[k] = tot
    t = 1.0 / (lo + frac * (hi - lo))
    first = np.clip(np.searchsorted(P[: R + 1], b[:-1], "right") - 1, 0, R - 1)
    last = np.maximum(np.clip(np.searchsorted(P[: R + 1], b[1:], "left") - 1, 0, R - 1), first)
    count = last - first + 1
    if int(count.sum()) != R + k - 1:
        return None
    types = np.repeat(np.arange(k), count)
    rows = np.arange(R + k - 1) - np.repeat(np.cumsum(count) - count, count) + np.repeat(first, count)
    seg = np.minimum(b[types + 1], P[rows + 1]) - np.maximum(b[types], P[rows])
    x = t * np.maximum(seg, 0.0) / Ws[rows, types]
    # duals along the staircase: rows r and r+1 share the type whose interval holds P_{r+1}
    shared = np.searchsorted(b[1:k], P[1:R])
    r = np.arange(R - 1)
    log_q = np.concatenate([[0.0], np.cumsum(np.log(Ws[r, shared]) - np.log(Ws[r + 1, shared]))])
    q = np.exp(log_q - log_q.max())
    q *= tot / float(oms @ q)
    p = q[first] * Ws[first, np.arange(k)]
    slack = p[None, :] - q[:, None] * Ws
    # optimal: primal feasible with every capacity row tight (complementary slackness, all p_j > 0)
    # and dual feasible
    cap_gap = np.abs(np.bincount(types, weights=x, minlength=k) - m).max()
    optimal = bool(cap_gap <= tol * float(m.max()) and slack.min() >= -tol * float(p.max()))
    return Staircase(order[rows], types, x, t, optimal, p)
