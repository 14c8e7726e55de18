"""Sparse LP builders and the shared HiGHS solve wrapper (spec A2-A5, §8).

Variables are row-major ``x[l*k + j]`` (plus ``t`` or ``s`` last where a program has one). Every
constraint matrix is assembled as a ``scipy.sparse`` COO array and converted to CSR; no dense
``R(R-1) x Rk`` matrix is ever built. All programs are solved by ``scipy.optimize.linprog``
with HiGHS (default dual simplex ``"highs-ds"``, so solutions are vertices).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from market.errors import SolveError

__all__ = [
    "ZERO_TOL",
    "LinearProgram",
    "capacity_rows",
    "build_noncoop",
    "build_coop",
    "build_si_constrained",
    "build_gavel",
    "build_capped_throughput",
    "build_pe_gap",
    "solve",
    "clip_solution",
    "column_scale",
    "ef_rows",
    "all_pairs",
    "solve_rows",
    "AllocationCache",
    "CACHE",
]

ZERO_TOL = 1e-9
_CLIP_FAIL = 1e-7


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


def build_noncoop(W: np.ndarray, m: np.ndarray, omega: np.ndarray | None = None) -> LinearProgram:
    """A2 compact form of LP (9): ``max (sum omega) t`` s.t. capacity, ``W_l . x_l - omega_l t = 0``.

    ``omega=None`` is the unweighted / replicated form (all ones, objective ``R t``); otherwise the
    direct weighted form A2'. Variables: ``R*k`` x's then ``t``.
    """
    R, k = W.shape
    om = np.ones(R) if omega is None else np.asarray(omega, dtype=float)
    c = np.zeros(R * k + 1)
    c[-1] = -float(om.sum())
    A_ub = capacity_rows(R, k, 1).tocsr()
    A_eq = _row_value_rows(W, 1, -om).tocsr()
    return LinearProgram(c, A_ub, np.asarray(m, dtype=float), A_eq, np.zeros(R))


def all_pairs(R: int) -> tuple[np.ndarray, np.ndarray]:
    """All ordered pairs ``(l, i)``, ``l != i``, in row-major order."""
    return np.nonzero(~np.eye(R, dtype=bool))


def ef_rows(
    W: np.ndarray, omega: np.ndarray | None = None, pairs: tuple[np.ndarray, np.ndarray] | None = None
) -> sp.coo_array:
    """EF rows of LP (10c), one per ordered pair ``(l, i)``, ``l != i`` (all pairs by default):
    ``omega_l W_l.x_i - omega_i W_l.x_l <= 0`` (``omega=None``: ``W_l.x_i - W_l.x_l <= 0``)."""
    R, k = W.shape
    L, I = all_pairs(R) if pairs is None else pairs
    P = L.size
    jj = np.arange(k)
    rows = np.repeat(np.arange(P), k)
    WL = W[L]  # (P, k)
    if omega is None:
        a = WL
        b = -WL
    else:
        om = np.asarray(omega, dtype=float)
        a = WL * om[L][:, None]
        b = -WL * om[I][:, None]
    cols_i = (I[:, None] * k + jj).ravel()
    cols_l = (L[:, None] * k + jj).ravel()
    return sp.coo_array(
        (np.concatenate([a.ravel(), b.ravel()]), (np.concatenate([rows, rows]), np.concatenate([cols_i, cols_l]))),
        shape=(P, R * k),
    )


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


def solve(policy: str, lp: LinearProgram, solver: str = "highs-ds") -> tuple[np.ndarray, float, float]:
    """Solve ``lp`` with HiGHS; return ``(x, objective_of_min_problem, seconds)``.

    Raises :class:`market.errors.SolveError` on any non-optimal status.
    """
    t0 = time.perf_counter()
    res = linprog(
        lp.c,
        A_ub=lp.A_ub,
        b_ub=lp.b_ub,
        A_eq=lp.A_eq,
        b_eq=lp.b_eq,
        bounds=lp.bounds,
        method=solver,
    )
    dt = time.perf_counter() - t0
    if res.status != 0 or res.x is None:
        raise SolveError(policy, res.status, str(res.message))
    return np.asarray(res.x, dtype=float), float(res.fun), dt


def solve_rows(
    policy: str,
    build: Any,
    W: np.ndarray,
    m: np.ndarray,
    solver: str = "highs-ds",
) -> tuple[np.ndarray, np.ndarray, float, dict[str, int], float]:
    """Build and solve a row-major program on the types with ``m_j > 0`` only, in scaled variables
    (:func:`column_scale`); return ``(X (R, k), extra variables, seconds, sizes, objective of the
    min problem)``. ``build(W_active_scaled, m_active_scaled)`` returns a :class:`LinearProgram`.
    Columns of zero-capacity types are exactly 0 in ``X``."""
    R, k = W.shape
    active = np.asarray(m) > 0
    Wa = W[:, active]
    ma = np.asarray(m, dtype=float)[active]
    s = column_scale(ma)
    t0 = time.perf_counter()
    lp = build(Wa * s, ma / s)
    x, fun, _ = solve(policy, lp, solver)
    dt = time.perf_counter() - t0
    ka = int(active.sum())
    X = np.zeros((R, k))
    X[:, active] = x[: R * ka].reshape(R, ka) * s
    return X, x[R * ka :], dt, lp.sizes, fun


def clip_solution(policy: str, X: np.ndarray, zero_tol: float = ZERO_TOL) -> np.ndarray:
    """A4 step 3: entries below ``-1e-7`` raise; entries below ``zero_tol`` become exactly 0."""
    if X.size and X.min() < -_CLIP_FAIL:
        raise SolveError(policy, "negative", f"solution entry {X.min()!r} < -1e-7")
    out = X.copy()
    out[out < zero_tol] = 0.0
    return out


class AllocationCache:
    """Small LRU cache of allocations keyed on validated inputs (spec §8)."""

    def __init__(self, maxsize: int = 256) -> None:
        from collections import OrderedDict

        self.maxsize = maxsize
        self._d: OrderedDict[Any, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: Any, compute: Any, use: bool = True) -> Any:
        """The cached value for ``key`` (a fresh copy of ``X``), or ``compute()`` stored."""
        import dataclasses

        if not use:
            return compute()
        if key in self._d:
            self._d.move_to_end(key)
            self.hits += 1
            a = self._d[key]
            return dataclasses.replace(a, X=a.X.copy(), info={**a.info, "cache_hit": True})
        self.misses += 1
        a = compute()
        self._d[key] = a
        if len(self._d) > self.maxsize:
            self._d.popitem(last=False)
        return dataclasses.replace(a, X=a.X.copy())

    def clear(self) -> None:
        """Drop every entry."""
        self._d.clear()


CACHE = AllocationCache()
