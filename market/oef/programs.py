"""The OEF and baseline LPs as sparse matrices (spec A2-A5, §8): what is solved, not how.

Variables are row-major ``x[l*k + j]`` (plus ``t`` or ``s`` last where a program has one). Every
constraint matrix is assembled sparse and vectorised; no dense ``R(R-1) x Rk`` matrix is ever
built. :class:`LinearProgram` holds a program for :func:`marketsim.market.oef.scipy_lp.solve`; the CSC / CSR
array forms (:func:`noncoop_csc`, :func:`ef_csr`) feed the ``highspy`` models of
:mod:`marketsim.market.oef.noncoop_lp` and :mod:`marketsim.market.oef.coop_lp`. :func:`reduce_to_active` /
:func:`expand_from_active` restrict a program to the GPU types with capacity, in scaled variables
(:func:`column_scale`), and map its solution back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "LinearProgram",
    "column_scale",
    "capacity_rows",
    "noncoop_csc",
    "build_noncoop",
    "all_pairs",
    "ef_csr",
    "ef_rows",
    "build_coop",
    "build_si_constrained",
    "build_gavel",
    "build_capped_throughput",
    "build_pe_gap",
    "reduce_to_active",
    "expand_from_active",
]


@dataclass
class LinearProgram:
    """``min c.x`` s.t. ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``bounds``; ``sizes`` records
    variables / inequality rows / equality rows / non-zeros for the complexity audit."""

    c: np.ndarray
    A_ub: sp.csr_array | None
    b_ub: np.ndarray | None
    A_eq: sp.csr_array | None = None
    b_eq: np.ndarray | None = None
    bounds: Any = (0, None)
    sizes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sizes = {
            "variables": int(self.c.size),
            "ineq_rows": 0 if self.A_ub is None else int(self.A_ub.shape[0]),
            "eq_rows": 0 if self.A_eq is None else int(self.A_eq.shape[0]),
            "nonzeros": (0 if self.A_ub is None else int(self.A_ub.nnz))
            + (0 if self.A_eq is None else int(self.A_eq.nnz)),
        }


def column_scale(m: np.ndarray) -> np.ndarray:
    """Per-type variable scale (spec §8): ``m_j`` when the capacities span more than two orders of
    magnitude (solve in ``y = x / m_j``), else ones. Zero-capacity types must be removed first."""
    m = np.asarray(m, dtype=float)
    if m.size and m.min() > 0 and m.max() / m.min() > 100.0:
        return m.copy()
    return np.ones_like(m)


def capacity_rows(R: int, k: int, n_extra: int = 0) -> sp.coo_array:
    """``k x (R*k + n_extra)`` matrix with ``sum_l x_l^j`` in row ``j``."""
    cols = np.arange(R * k)
    rows = np.tile(np.arange(k), R)
    return sp.coo_array((np.ones(R * k), (rows, cols)), shape=(k, R * k + n_extra))


def _row_value_rows(W: np.ndarray, n_extra: int, extra_col_vals: np.ndarray | None = None) -> sp.coo_array:
    """``R x (R*k + n_extra)`` matrix with ``W_l . x_l`` in row ``l``; optionally a value in the
    first extra column per row."""
    R, k = W.shape
    rows = np.repeat(np.arange(R), k)
    cols = np.arange(R * k)
    data = W.ravel()
    if extra_col_vals is not None:
        rows = np.concatenate([rows, np.arange(R)])
        cols = np.concatenate([cols, np.full(R, R * k)])
        data = np.concatenate([data, extra_col_vals])
    return sp.coo_array((data, (rows, cols)), shape=(R, R * k + n_extra))


def noncoop_csc(
    W: np.ndarray, m: np.ndarray, omega: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A2 compact LP (9) as column-wise arrays ``(c, start, index, value, row_lower, row_upper)``:
    rows ``0..k-1`` capacity (``<= m_j``), rows ``k..k+R-1`` ``W_l . x_l - omega_l t = 0``;
    columns ``x`` row-major then ``t``; ``c`` is the min-problem cost (``-(sum omega) t``)."""
    R, k = W.shape
    om = np.ones(R) if omega is None else np.asarray(omega, dtype=float)
    nx = R * k
    c = np.zeros(nx + 1)
    c[-1] = -float(om.sum())
    start = np.empty(nx + 2, dtype=np.int32)
    start[: nx + 1] = np.arange(0, 2 * nx + 1, 2)
    start[-1] = 2 * nx + R
    index = np.empty(2 * nx + R, dtype=np.int32)
    value = np.empty(2 * nx + R)
    index[0 : 2 * nx : 2] = np.tile(np.arange(k), R)
    index[1 : 2 * nx : 2] = k + np.repeat(np.arange(R), k)
    index[2 * nx :] = k + np.arange(R)
    value[0 : 2 * nx : 2] = 1.0
    value[1 : 2 * nx : 2] = W.ravel()
    value[2 * nx :] = -om
    row_lower = np.concatenate([np.full(k, -np.inf), np.zeros(R)])
    row_upper = np.concatenate([np.asarray(m, dtype=float), np.zeros(R)])
    return c, start, index, value, row_lower, row_upper


def build_noncoop(W: np.ndarray, m: np.ndarray, omega: np.ndarray | None = None) -> LinearProgram:
    """A2 compact form of LP (9): ``max (sum omega) t`` s.t. capacity, ``W_l . x_l - omega_l t = 0``.

    ``omega=None`` is the unweighted / replicated form (all ones, objective ``R t``); otherwise the
    direct weighted form A2'. Variables: ``R*k`` x's then ``t``.
    """
    R, k = W.shape
    c, start, index, value, _, row_upper = noncoop_csc(W, m, omega)
    A = sp.csc_array((value, index, start), shape=(k + R, R * k + 1)).tocsr()
    return LinearProgram(c, A[:k], row_upper[:k], A[k:], np.zeros(R))


def all_pairs(R: int) -> tuple[np.ndarray, np.ndarray]:
    """All ordered pairs ``(l, i)``, ``l != i``, in row-major order."""
    return np.nonzero(~np.eye(R, dtype=bool))


def ef_csr(
    W: np.ndarray, omega: np.ndarray | None, L: np.ndarray, I: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise arrays ``(start, index, value)`` of the EF rows of the ordered pairs ``(L[p], I[p])``:
    ``omega_l W_l.x_i - omega_i W_l.x_l`` (``omega=None``: ``W_l.x_i - W_l.x_l``), ``2k`` entries each."""
    k = W.shape[1]
    P = L.size
    jj = np.arange(k)
    WL = W[L]
    if omega is None:
        a, b = WL, -WL
    else:
        a = WL * omega[L][:, None]
        b = -WL * omega[I][:, None]
    index = np.concatenate([I[:, None] * k + jj, L[:, None] * k + jj], axis=1).astype(np.int32)
    value = np.concatenate([a, b], axis=1)
    return np.arange(0, 2 * k * P + 1, 2 * k, dtype=np.int32), index.ravel(), value.ravel()


def ef_rows(
    W: np.ndarray, omega: np.ndarray | None = None, pairs: tuple[np.ndarray, np.ndarray] | None = None
) -> sp.csr_array:
    """EF rows of LP (10c), one per ordered pair ``(l, i)``, ``l != i`` (all pairs by default):
    ``omega_l W_l.x_i - omega_i W_l.x_l <= 0`` (``omega=None``: ``W_l.x_i - W_l.x_l <= 0``)."""
    R, k = W.shape
    L, I = all_pairs(R) if pairs is None else pairs
    om = None if omega is None else np.asarray(omega, dtype=float)
    start, index, value = ef_csr(W, om, np.asarray(L), np.asarray(I))
    A = sp.csr_array((value, index, start), shape=(np.asarray(L).size, R * k))
    A.sort_indices()
    return A


def build_coop(
    W: np.ndarray,
    m: np.ndarray,
    omega: np.ndarray | None = None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> LinearProgram:
    """A3: LP (10) with the (10c) typo corrected; ``max sum W_l.x_l`` s.t. capacity and EF rows
    (weighted A3' when ``omega`` is given). ``R*k`` variables, ``k + R(R-1)`` rows; with
    ``pairs`` only the EF rows of those ordered pairs (a relaxation, for constraint generation)."""
    R, k = W.shape
    cap = capacity_rows(R, k)
    ef = ef_rows(W, omega, pairs)
    A_ub = sp.vstack([cap, ef], format="csr")
    b_ub = np.concatenate([np.asarray(m, dtype=float), np.zeros(ef.shape[0])])
    return LinearProgram(-W.ravel().astype(float), A_ub, b_ub)


def build_si_constrained(W: np.ndarray, m: np.ndarray, thresholds: np.ndarray) -> LinearProgram:
    """A5 ``si_constrained_lp``: ``max sum W_l.x_l`` s.t. capacity and ``W_l.x_l >= thresholds_l``."""
    R, k = W.shape
    A_ub = sp.vstack([capacity_rows(R, k), -_row_value_rows(W, 0)], format="csr")
    b_ub = np.concatenate([np.asarray(m, dtype=float), -np.asarray(thresholds, dtype=float)])
    return LinearProgram(-W.ravel().astype(float), A_ub, b_ub)


def _cap_rows(R: int, k: int, caps: np.ndarray, n_extra: int) -> tuple[sp.coo_array, np.ndarray]:
    """Rows ``sum_j x_l^j <= d_l`` for the finite caps only."""
    idx = np.flatnonzero(np.isfinite(caps))
    rows = np.repeat(np.arange(idx.size), k)
    cols = (idx[:, None] * k + np.arange(k)).ravel()
    A = sp.coo_array((np.ones(rows.size), (rows, cols)), shape=(idx.size, R * k + n_extra))
    return A, caps[idx].astype(float)


def build_gavel(
    W: np.ndarray, m: np.ndarray, caps: np.ndarray, targets: np.ndarray, total_floor: float | None = None
) -> LinearProgram:
    """§4.1 Gavel max-min LP: ``max s`` s.t. ``W_l.x_l >= s * targets_l`` (targets = pi_l N_l),
    capacity, ``sum_j x_l^j <= d_l``; variables ``x`` then free ``s``.

    With ``total_floor`` given, the second (tie-break) stage instead: ``max sum W_l.x_l`` s.t.
    ``W_l.x_l >= total_floor * targets_l``, capacity, caps (no ``s``).
    """
    R, k = W.shape
    if total_floor is None:
        c = np.zeros(R * k + 1)
        c[-1] = -1.0
        fair = _row_value_rows(W, 1, -np.asarray(targets, dtype=float))
        A_cap, b_cap = _cap_rows(R, k, caps, 1)
        A_ub = sp.vstack([-fair, capacity_rows(R, k, 1), A_cap], format="csr")
        b_ub = np.concatenate([np.zeros(R), np.asarray(m, dtype=float), b_cap])
        bounds = [(0, None)] * (R * k) + [(None, None)]
        return LinearProgram(c, A_ub, b_ub, bounds=bounds)
    A_cap, b_cap = _cap_rows(R, k, caps, 0)
    A_ub = sp.vstack([-_row_value_rows(W, 0), capacity_rows(R, k), A_cap], format="csr")
    b_ub = np.concatenate([-total_floor * np.asarray(targets, dtype=float), np.asarray(m, dtype=float), b_cap])
    return LinearProgram(-W.ravel().astype(float), A_ub, b_ub)


def build_capped_throughput(W: np.ndarray, m: np.ndarray, caps: np.ndarray) -> LinearProgram:
    """LP (4) with row caps: ``max sum W_l.x_l`` s.t. capacity and ``sum_j x_l^j <= d_l``."""
    R, k = W.shape
    A_cap, b_cap = _cap_rows(R, k, caps, 0)
    A_ub = sp.vstack([capacity_rows(R, k), A_cap], format="csr")
    return LinearProgram(-W.ravel().astype(float), A_ub, np.concatenate([np.asarray(m, dtype=float), b_cap]))


def build_pe_gap(W: np.ndarray, m: np.ndarray, u: np.ndarray) -> LinearProgram:
    """A5 ``pe_gap``: ``max sum W_l.x'_l`` s.t. capacity and ``W_l.x'_l >= u_l``."""
    return build_si_constrained(W, m, u)


def reduce_to_active(W: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The types with ``m_j > 0`` (mask), and ``W``, ``m`` restricted to them in scaled variables
    (``W * s``, ``m / s`` with ``s`` = :func:`column_scale`), and ``s``."""
    active = np.asarray(m) > 0
    ma = np.asarray(m, dtype=float)[active]
    s = column_scale(ma)
    return active, W[:, active] * s, ma / s, s


def expand_from_active(x: np.ndarray, R: int, k: int, active: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``(R, k)`` allocation from the row-major scaled solution ``x`` of the active types."""
    ka = int(active.sum())
    X = np.zeros((R, k))
    X[:, active] = x[: R * ka].reshape(R, ka) * s
    return X
