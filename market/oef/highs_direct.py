"""Small LPs straight to ``highspy`` from CSC arrays, without ``scipy.optimize.linprog``.

For the per-round programs of trace runs (tens to hundreds of jobs, a few GPU types) scipy's
wrapper (input cleaning, sparse stacking, option checks, result checks) costs more than HiGHS's
dual simplex itself. :func:`solve_min` passes the same program with the same method (dual
simplex, presolve on, HiGHS's default tolerances; ``scipy``'s ``"highs-ds"``) to one reused,
single-threaded ``highspy.Highs`` instance, so it returns the vertex ``linprog`` would.
"""

from __future__ import annotations

import threading

import highspy
import numpy as np

from marketsim.market.errors import SolveError
from marketsim.market.milp import new_highs

__all__ = ["solve_min", "INF"]

INF = highspy.kHighsInf
_COLWISE = int(highspy.MatrixFormat.kColwise)
_MINIMIZE = int(highspy.ObjSense.kMinimize)
_LOCAL = threading.local()  # one reused instance per thread (a Highs object is not thread-safe)


def _highs() -> highspy.Highs:
    h = getattr(_LOCAL, "h", None)
    if h is None:
        h = _LOCAL.h = new_highs()
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 1)  # dual simplex, as scipy's "highs-ds"
        h.setOptionValue("presolve", "on")
    return h


def solve_min(
    policy: str,
    c: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
) -> tuple[np.ndarray, float]:
    """``min c.x`` s.t. ``A x <= row_upper`` (rows unbounded below), ``col_lower <= x <= col_upper``
    (``±INF`` = unbounded), ``A`` given column-wise (CSC ``indptr, indices, data``). Returns ``(x,
    objective)``; raises :class:`SolveError` naming ``policy`` unless HiGHS reports optimal."""
    nc = int(c.size)
    nr = int(row_upper.size)
    h = _highs()
    h.clearSolver()
    # the array form of passModel: the same LP as a HighsLp built attribute by attribute (each
    # setter copies its array into a std::vector), without that cost; integrality all continuous
    passed = h.passModel(nc, nr, int(indptr[-1]), _COLWISE, _MINIMIZE, 0.0,
                np.ascontiguousarray(c, dtype=float), np.ascontiguousarray(col_lower, dtype=float),
                np.ascontiguousarray(col_upper, dtype=float), np.full(nr, -INF),
                np.ascontiguousarray(row_upper, dtype=float), np.ascontiguousarray(indptr, dtype=np.int32),
                np.ascontiguousarray(indices, dtype=np.int32), np.ascontiguousarray(data, dtype=float),
                np.zeros(nc, dtype=np.int32))  # fmt: skip
    if passed == highspy.HighsStatus.kError:
        raise SolveError(policy, "passModel", "HiGHS rejected the program")
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolveError(policy, str(status), h.modelStatusToString(status))
    x = np.asarray(h.getSolution().col_value, dtype=float)
    return x, float(h.getInfo().objective_function_value)


def _gavel_columns(T: np.ndarray, m: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices, values and upper bounds of the ``x`` columns of Gavel's programs: column
    ``l*k + j`` has ``s_l`` in capacity row ``j`` and 1 in time row ``k + l`` (CSC, two entries a
    column); ``x[l, j]`` is fixed at 0 where ``T[l, j] <= 0`` or ``m_j <= 0``."""
    n, k = T.shape
    nk = n * k
    l = np.repeat(np.arange(n), k)
    ind = np.empty(2 * nk, dtype=np.int32)
    ind[0::2] = np.tile(np.arange(k), n)
    ind[1::2] = k + l
    dat = np.empty(2 * nk)
    dat[0::2] = s[l]
    dat[1::2] = 1.0
    ub = np.where((T.ravel() <= 0) | np.tile(m <= 0, n), 0.0, INF)
    return ind, dat, ub


def gavel_sum(policy: str, T: np.ndarray, m: np.ndarray, s: np.ndarray, tub: np.ndarray) -> np.ndarray:
    """Gavel's max-sum-throughput program (:func:`marketsim.market.oef.gavel.gavel_max_sum_throughput`):
    ``max sum T.x`` s.t. ``sum_l s_l x[l, j] <= m_j``, ``sum_j x[l, j] <= tub_l``, ``x >= 0`` (0
    where ``T = 0``). Returns ``x`` (n, k)."""
    n, k = T.shape
    ind, dat, ub = _gavel_columns(T, m, s)
    ptr = np.arange(0, 2 * n * k + 1, 2, dtype=np.int32)
    x, _ = solve_min(policy, -T.ravel(), ptr, ind, dat, np.concatenate([m, tub]), np.zeros(n * k), ub)
    return x.reshape(n, k)


def gavel_maxmin(
    policy: str, T: np.ndarray, m: np.ndarray, s: np.ndarray, coef: np.ndarray, tub: np.ndarray
) -> tuple[np.ndarray, float]:
    """Gavel's max-min program (:func:`marketsim.market.oef.gavel.gavel_max_min_perf`, full LP): ``max t``
    s.t. ``coef_l . x_l >= t`` for every row ``l``, the capacity and time rows of
    :func:`gavel_sum`. Variables ``x`` row-major then ``t`` (free), the same program (and column
    order) as the ``linprog`` path, so the same dual-simplex vertex. Returns ``(x (n, k), t)``."""
    n, k = T.shape
    nk = n * k
    ind2, dat2, ub = _gavel_columns(T, m, s)
    ind = np.empty(3 * nk + n, dtype=np.int32)
    dat = np.empty(3 * nk + n)
    ind[0 : 3 * nk : 3] = ind2[0::2]
    ind[1 : 3 * nk : 3] = ind2[1::2]
    ind[2 : 3 * nk : 3] = ind2[1::2] + n  # fairness row k + n + l
    dat[0 : 3 * nk : 3] = dat2[0::2]
    dat[1 : 3 * nk : 3] = 1.0
    dat[2 : 3 * nk : 3] = -coef.ravel()
    ind[3 * nk :] = k + n + np.arange(n)  # t in every fairness row: t - coef_l . x_l <= 0
    dat[3 * nk :] = 1.0
    ptr = np.concatenate([np.arange(0, 3 * nk + 1, 3), [3 * nk + n]]).astype(np.int32)
    c = np.zeros(nk + 1)
    c[-1] = -1.0
    x, fun = solve_min(policy, c, ptr, ind, dat, np.concatenate([m, tub, np.zeros(n)]),
                       np.concatenate([np.zeros(nk), [-INF]]), np.concatenate([ub, [INF]]))  # fmt: skip
    return x[:nk].reshape(n, k), -fun
