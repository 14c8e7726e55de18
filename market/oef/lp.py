"""Sparse LP builders and the shared HiGHS solve wrapper (spec A2-A5, §8).

Variables are row-major ``x[l*k + j]`` (plus ``t`` or ``s`` last where a program has one). Every
constraint matrix is assembled sparse and vectorised; no dense ``R(R-1) x Rk`` matrix is ever
built. The auxiliary programs are solved by ``scipy.optimize.linprog`` with HiGHS (default dual
simplex ``"highs-ds"``, so solutions are vertices). The two OEF programs with the default solver
go straight to a ``highspy`` model built from CSC/CSR arrays (no scipy wrapper):
:func:`solve_noncoop` builds the staircase vertex of paper Lemma 3.1 / Theorem 5.2 and returns
it when its dual certificate proves it optimal (always on ordered speedups), else starts HiGHS's
primal simplex from its (feasible) basis, and :func:`solve_coop` generates LP (10)'s envy-freeness rows lazily
in one warm-started model (deleting rows that stayed slack). Both return an optimal vertex of the full program.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np
import scipy.sparse as sp

from market.errors import SolveError
from market.milp import new_highs
from market.oef.maxmin import DECOMPOSE_MIN_ROWS, PriceWarmStart, solve_maxmin

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
    "noncoop_csc",
    "Staircase",
    "staircase",
    "solve_noncoop",
    "NoncoopWarmStart",
    "solve_coop",
    "ef_violations",
    "row_envy",
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


def _ef_csr(
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
    start, index, value = _ef_csr(W, om, np.asarray(L), np.asarray(I))
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


PROGRESS: Any = None
"""Optional ``callable(message: str)`` told about each constraint-generation round of the lazy
cooperative OEF solve (the CLI sets it to a stderr status line on long solves)."""

AUTO_IPM_NONZEROS = 5_000
"""``solver="auto"``: dual simplex below this many constraint non-zeros, interior point from it
(measured crossover on the max-min / Gavel LPs: ``benchmarks/bench_gavel.py``)."""


def choose_solver(solver: str, nonzeros: int) -> str:
    """The HiGHS method for ``solver``: ``"auto"`` picks by size (:data:`AUTO_IPM_NONZEROS`)."""
    if solver != "auto":
        return solver
    return "highs-ipm" if nonzeros >= AUTO_IPM_NONZEROS else "highs-ds"


def solve(policy: str, lp: LinearProgram, solver: str = "highs-ds") -> tuple[np.ndarray, float, float]:
    """Solve ``lp`` with HiGHS; return ``(x, objective_of_min_problem, seconds)``. ``solver`` is a
    scipy HiGHS method or ``"auto"`` (:func:`choose_solver`).

    Raises :class:`market.errors.SolveError` on any non-optimal status.
    """
    mats = [a for a in (lp.A_ub, lp.A_eq) if a is not None]
    solver = choose_solver(solver, sum(int(a.nnz) if hasattr(a, "nnz") else int(np.count_nonzero(a)) for a in mats))
    from scipy.optimize import linprog  # here: ~0.1 s to import, and the direct HiGHS paths never need it

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


def _reduce(W: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The types with ``m_j > 0`` (mask), and ``W``, ``m`` restricted to them in scaled variables
    (``W * s``, ``m / s`` with ``s`` = :func:`column_scale`), and ``s``."""
    active = np.asarray(m) > 0
    ma = np.asarray(m, dtype=float)[active]
    s = column_scale(ma)
    return active, W[:, active] * s, ma / s, s


def _expand(x: np.ndarray, R: int, k: int, active: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``(R, k)`` allocation from the row-major scaled solution ``x`` of the active types."""
    ka = int(active.sum())
    X = np.zeros((R, k))
    X[:, active] = x[: R * ka].reshape(R, ka) * s
    return X


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
    t0 = time.perf_counter()
    active, Wa, ma, s = _reduce(W, m)
    lp = build(Wa, ma)
    x, fun, _ = solve(policy, lp, solver)
    dt = time.perf_counter() - t0
    ka = int(active.sum())
    return _expand(x, R, k, active, s), x[R * ka :], dt, lp.sizes, fun


# ---------------------------------------------------------------------------------------------
# OEF's two programs on highspy directly (default solver "highs-ds")
# ---------------------------------------------------------------------------------------------
_EMPTY_I = np.zeros(0, dtype=np.int32)
_HIGHS_SOLVER = {"highs-ds": "simplex", "highs-ipm": "ipm", "highs": "choose"}


def _highs(
    c: np.ndarray,
    start: np.ndarray,
    index: np.ndarray,
    value: np.ndarray,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    solver: str = "highs-ds",
    h: highspy.Highs | None = None,
) -> highspy.Highs:
    """A silent HiGHS model ``min c.x`` s.t. ``row_lower <= A x <= row_upper``, ``x >= 0`` (``A`` in
    CSC arrays), set up like scipy's ``solver`` (``"highs-ds"``: dual simplex, presolve off so a
    given basis is kept; single-threaded, fixed seed: deterministic). ``h``: an instance to reuse
    (cleared and reset to the defaults first)."""
    if h is None:
        h = new_highs()
    else:
        h.clearModel()
        h.resetOptions()
        h.setOptionValue("output_flag", False)
    solver = choose_solver(solver, int(index.size))
    h.setOptionValue("solver", _HIGHS_SOLVER[solver])
    if solver == "highs-ds":
        h.setOptionValue("simplex_strategy", 1)
        h.setOptionValue("presolve", "off")
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("threads", 1)
    n = c.size
    h.addRows(row_lower.size, row_lower, row_upper, 0, _EMPTY_I, _EMPTY_I, np.zeros(0))
    h.addCols(n, c, np.zeros(n), np.full(n, np.inf), value.size, start[:-1], index, value)
    return h


COLD_DECOMPOSE_ROWS_PER_TYPE = 100
"""``oef-noncoop`` without a warm start solves LP (9) by price decomposition (:mod:`market.oef.maxmin`)
when the staircase certificate fails and it has at least this many rows per GPU type; below it the
staircase-crashed simplex is faster, the decomposition freeing most rows (both paths side by side:
``benchmarks/bench_round_lp.py``, section "oef-noncoop cold")."""

# LPs with at most this many nonzeros solve in milliseconds: they run in this thread (Ctrl-C lands
# right after), skipping the solver thread's start and polling, a large share of a small solve
_DIRECT_NNZ = 5000


def _run(policy: str, h: highspy.Highs) -> tuple[np.ndarray, float]:
    """Solve ``h`` (a large one so that Ctrl-C cancels it: :func:`market.milp.run_interruptibly`);
    its column values and min-problem objective, or :class:`SolveError`."""
    from market.milp import run_interruptibly

    if h.getNumNz() <= _DIRECT_NNZ:
        h.run()
    else:
        run_interruptibly(h)
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolveError(policy, h.modelStatusToString(status), "HiGHS did not report an optimal solution")
    return np.asarray(h.getSolution().col_value, dtype=float), float(h.getInfo().objective_function_value)


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


def _set_basis(h: highspy.Highs, basic_cols: np.ndarray, n_col: int, n_cap: int, n_eq: int) -> bool:
    """Give ``h`` the basis with ``basic_cols`` basic, the rest at 0, capacity rows at their upper
    bound and equality rows fixed; whether HiGHS accepted it."""
    S = highspy.HighsBasisStatus
    col = [S.kLower] * n_col
    for c in basic_cols.tolist():
        col[c] = S.kBasic
    basis = highspy.HighsBasis()
    basis.col_status = col
    basis.row_status = [S.kUpper] * n_cap + [S.kLower] * n_eq
    basis.valid = True
    return h.setBasis(basis) == highspy.HighsStatus.kOk


class NoncoopWarmStart:
    """Explicit warm start of LP (9) across scheduling rounds (``oef-noncoop`` option
    ``warm_start``, with ``row_ids`` naming each input row across rounds).

    After every solve it keeps the optimal simplex basis per row id (the statuses of the row's
    ``k`` allocation columns and of its equal-value row), of the capacity rows and of ``t``. The
    next round's HiGHS model starts from that basis mapped onto its rows: rows seen before keep
    their statuses, new rows start with their equal-value row basic (nothing allocated), and
    capacity rows are made basic where rows that left took basic columns with them, so the basis
    has one basic variable per row. When only a few jobs arrive or leave, the dual simplex needs
    a few pivots instead of a solve from the staircase crash. The optimum is the same LP's; where
    LP (9) has several optimal vertices the warm and cold solves may return different ones.
    ``rounds`` counts solves, ``warm_rounds`` those that started from a stored basis."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}
        self.pos = np.zeros((0, 0), dtype=bool)
        self.cap: np.ndarray | None = None
        self.types: bytes | None = None
        self.rounds = 0
        self.warm_rounds = 0
        self.highs: highspy.Highs | None = None  # reused across rounds (building one costs milliseconds)
        self.prices = PriceWarmStart()  # capacity prices for the decomposition (market.oef.maxmin)

    def basis(self, ids: list[Any], k: int, types: bytes) -> highspy.HighsBasis | None:
        """The stored basis mapped onto rows ``ids`` with ``k`` active types, or ``None``."""
        if self.cap is None or self.types != types:
            return None
        R = len(ids)
        get = self.index.get
        where = np.array([get(i, -1) for i in ids], dtype=np.int64)
        new = where < 0
        if new.all():
            return None
        col = np.empty(R * k + 1, dtype=bool)
        col[: R * k] = (self.pos[where] & ~new[:, None]).ravel()
        col[-1] = True  # t
        row = np.concatenate([self.cap, new])  # a new row: its equal-value row basic, nothing allocated yet
        deficit = k + R - int(col.sum()) - int(row.sum())
        free = np.flatnonzero(~row[:k])[: max(deficit, 0)]  # rows that left took basic columns
        row[free] = True
        if k + R != int(col.sum()) + int(row.sum()):
            return None
        S = highspy.HighsBasisStatus
        lower, upper = [S.kLower, S.kBasic], [S.kUpper, S.kBasic]
        b = highspy.HighsBasis()
        b.col_status = [lower[v] for v in col.view(np.int8).tolist()]
        b.row_status = [upper[v] for v in row[:k].view(np.int8).tolist()] + [
            lower[v] for v in row[k:].view(np.int8).tolist()
        ]
        b.valid = True
        return b

    def store(self, ids: list[Any], k: int, types: bytes, x: np.ndarray, m: np.ndarray) -> bool:
        """Keep the basis of the optimal vertex ``x`` (row-major allocation then ``t``) of rows
        ``ids`` with capacities ``m``: positive columns and slack capacity rows basic. Returns
        whether that is a complete basis (a nondegenerate vertex); if not, nothing is kept."""
        R = len(ids)
        scale = max(1.0, float(np.abs(x).max()))
        pos = (x[: R * k] > 1e-9 * scale).reshape(R, k)
        cap = x[: R * k].reshape(R, k).sum(axis=0) < m - 1e-9 * np.maximum(1.0, m)
        if int(pos.sum()) + 1 + int(cap.sum()) != k + R:
            self.cap = None
            return False
        self.index = {i: n for n, i in enumerate(ids)}
        self.pos, self.cap, self.types = pos, cap, types
        return True


def solve_noncoop(
    policy: str,
    W: np.ndarray,
    m: np.ndarray,
    omega: np.ndarray | None = None,
    solver: str = "highs-ds",
    warm: NoncoopWarmStart | None = None,
    ids: list[Any] | None = None,
) -> tuple[np.ndarray, float, float, dict[str, int], dict[str, Any]]:
    """LP (9) (compact A2 / A2') on the types with ``m_j > 0`` in scaled variables.

    With ``solver="highs-ds"`` the :func:`staircase` vertex is returned when its dual certificate
    holds (an optimal basic solution, found without a solver); otherwise HiGHS's primal simplex
    (highspy) starts from the staircase basis, which is primal feasible, or, given ``warm`` (a
    :class:`NoncoopWarmStart`) holding a previous round's basis and ``ids`` (one hashable id per
    LP row), the dual simplex starts from that basis. Returns ``(X (R, k), t, seconds, sizes,
    info)``; ``info["noncoop_path"]`` is ``"staircase"`` or ``"highs"``, with the simplex
    iterations and ``info["warm_start"]`` whether a stored basis was used."""
    t0 = time.perf_counter()
    R, k = W.shape
    active, Wa, ma, s = _reduce(W, m)
    ka = Wa.shape[1]
    types = active.tobytes()
    sizes = {"variables": R * ka + 1, "ineq_rows": ka, "eq_rows": R, "nonzeros": 2 * R * ka + R}
    keep = warm is not None and ids is not None and solver == "highs-ds"
    from_prices = keep and R >= DECOMPOSE_MIN_ROWS and warm.prices.get(types) is not None

    def start() -> tuple[highspy.HighsBasis | None, Staircase | None]:
        # a stored basis replaces the staircase (its certificate holds on ordered speedups only)
        b = warm.basis(ids, ka, types) if keep else None
        return b, (staircase(Wa, ma, omega) if solver == "highs-ds" and b is None else None)

    basis, st = (None, None) if from_prices else start()
    if from_prices or (st is not None and not st.optimal and R >= COLD_DECOMPOSE_ROWS_PER_TYPE * ka):
        # price decomposition (market.oef.maxmin, exact): from the previous round's prices and
        # program, or cold on a large program the staircase does not solve
        C = Wa if omega is None else Wa / np.asarray(omega, dtype=float)[:, None]  # weights divided in
        sol = solve_maxmin(C, ma, equal=True, warm=warm.prices if keep else None, ids=ids if keep else None,
                           types=types, policy=policy)  # fmt: skip
        if sol is not None:
            x = np.append(sol.x.ravel(), sol.t)
            if keep:
                warm.rounds += 1
                warm.warm_rounds += int(from_prices)
                warm.cap = None  # the full program's basis is not kept on this path (warm.prices holds the program)
            info = {"noncoop_path": "decomposition", **sol.info}
            if keep:
                info["warm_start"] = from_prices
            return _expand(x, R, k, active, s), sol.t, time.perf_counter() - t0, sizes, info
        if from_prices:
            basis, st = start()
    if st is not None and st.optimal:
        x = np.append(st.matrix(R, ka).ravel(), st.t)
        info: dict[str, Any] = {"noncoop_path": "staircase", "simplex_iterations": 0}
        if keep:
            warm.rounds += 1
            warm.store(ids, ka, types, x, ma)
            warm.prices.put(types, st.prices)
    else:
        reuse = warm.highs if keep else None
        h = _highs(*noncoop_csc(Wa, ma, omega), solver=solver, h=reuse)
        if keep:
            warm.highs = h
        used = basis is not None and h.setBasis(basis) == highspy.HighsStatus.kOk
        crash = False
        if not used:
            crash = st is not None and _set_basis(h, np.append(st.columns(ka), R * ka), R * ka + 1, ka, R)
            if crash:  # the staircase basis is primal feasible: continue with primal simplex
                h.setOptionValue("simplex_strategy", 4)
        x, _ = _run(policy, h)
        iterations = int(h.getInfo().simplex_iteration_count)
        info = {"noncoop_path": "highs", "staircase_crash": bool(crash), "simplex_iterations": iterations}
        if keep:
            warm.rounds += 1
            warm.warm_rounds += int(used)
            info["warm_start"] = bool(used)
            warm.store(ids, ka, types, x, ma)
            warm.prices.put(types, -np.asarray(h.getSolution().row_dual, dtype=float)[:ka])
    dt = time.perf_counter() - t0
    return _expand(x, R, k, active, s), float(x[-1]), dt, sizes, info


def row_envy(W: np.ndarray, X: np.ndarray, omega: np.ndarray | None) -> tuple[np.ndarray, float]:
    """Envy matrix ``E[l,i] - E[l,l]`` with ``E = W X^T`` (weighted: ``E[l,i]/omega_i -
    E[l,l]/omega_l``) and ``U = sum_l E[l,l]``."""
    E = W @ X.T
    own = np.diag(E).copy()
    if omega is None:
        return E - own[:, None], float(own.sum())
    return E / omega[None, :] - (own / omega)[:, None], float(own.sum())


def ef_violations(
    W: np.ndarray, X: np.ndarray, omega: np.ndarray | None, skip: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The EF rows of LP (10) that ``X`` (``(R, k)``) violates: ``(envy, viol)`` with ``envy`` the
    :func:`row_envy` matrix (``-inf`` on the diagonal and on the pairs ``skip`` marks, an ``(R, R)``
    boolean mask) and ``viol = envy > 1e-9 max(1, U)``. An empty ``viol`` with ``skip`` the EF rows of
    a relaxation whose optimum is ``X`` certifies ``X`` optimal for the full LP (10)."""
    envy, U = row_envy(W, X, omega)
    if skip is not None:
        envy[skip] = -np.inf
    np.fill_diagonal(envy, -np.inf)
    return envy, envy > 1e-9 * max(1.0, U)


def _most_violated(envy: np.ndarray, viol: np.ndarray, per_row: int, per_col: int) -> tuple[np.ndarray, np.ndarray]:
    """The violated pairs ``(L, I)`` among the ``per_row`` largest envies of each envious row ``l``
    and the ``per_col`` largest of each envied row ``i`` (all violated ones when ``per`` covers a whole
    row/column), without repeats, sorted."""
    R = envy.shape[0]
    codes = []
    for per, axis in ((per_row, 1), (per_col, 0)):
        if per <= 0:
            continue
        if per >= R - 1:
            L, I = np.nonzero(viol)
        else:
            if per == 1:  # argmax: ten times faster than a partition
                worst = np.expand_dims(envy.argmax(axis=axis), axis)
            else:
                worst = np.argpartition(-envy, per, axis=axis)
            if axis == 1:
                L, I = np.repeat(np.arange(R), per), worst[:, :per].ravel()
            else:
                L, I = worst[:per, :].ravel(), np.tile(np.arange(R), per)
            keep = viol[L, I]
            L, I = L[keep], I[keep]
        codes.append(L * R + I)
    code = np.unique(np.concatenate(codes)) if codes else np.zeros(0, dtype=np.int64)
    return code // R, code % R


def solve_coop(
    policy: str,
    W: np.ndarray,
    m: np.ndarray,
    omega: np.ndarray | None = None,
    solver: str = "highs-ds",
    per_row: int = 1,
    window: int = 2,
    per_col: int = 1,
    drop_after: int = 2,
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """LP (10) (A3 / A3') by lazy generation of its envy-freeness rows in one warm-started HiGHS model.

    Starts with the capacity rows and the EF rows between rows at most ``window`` apart in the
    speedup order of :func:`staircase` (where LP (10)'s binding EF rows sit on ordered speedups);
    after every solve finds the violated EF rows of all ``R(R-1)`` pairs from ``W X^T`` (violation
    > ``1e-9 max(1, U)``, :func:`ef_violations`), adds the ``per_row`` most violated of each envious
    row and the ``per_col`` most violated of each envied row and re-solves from the previous basis
    (dual simplex). EF rows whose slack stayed basic (dual 0) over ``drop_after`` consecutive solves
    are deleted from the model (``0``: never), so it keeps a few thousand rows instead of tens of
    thousands: deleting rows with basic slacks leaves the basis valid and the current vertex
    optimal, and a deleted row comes back when it is violated again. Rows are only deleted after a
    solve that lowered the relaxation's optimum (by more than ``1e-12`` relative); between such
    solves the row set only grows, so the loop ends. It ends when no EF row outside the model is
    violated: the final point is the optimum of a relaxation and satisfies every dropped EF row, so it
    is optimal for the full LP (10) and a vertex of it. Returns ``(X (R, k), seconds, info)``."""
    t0 = time.perf_counter()
    R, k = W.shape
    active, Wa, ma, s = _reduce(W, m)
    ka = Wa.shape[1]
    n = R * ka
    om = None if omega is None else np.asarray(omega, dtype=float)
    h = _highs(
        -Wa.ravel(),
        np.arange(n + 1, dtype=np.int32),
        np.tile(np.arange(ka, dtype=np.int32), R),
        np.ones(n),
        np.full(ka, -np.inf),
        ma,
        solver=solver,
    )
    have = np.zeros((R, R), dtype=bool)  # EF rows in the model
    ever = np.zeros((R, R), dtype=bool)  # EF rows ever added
    rows_L = np.zeros(0, dtype=np.int64)  # model rows ka.. in order: their pairs and basic streaks
    rows_I = np.zeros(0, dtype=np.int64)
    age = np.zeros(0, dtype=np.int64)

    def add(L: np.ndarray, I: np.ndarray) -> None:
        nonlocal rows_L, rows_I, age
        start, index, value = _ef_csr(Wa, om, L, I)
        h.addRows(L.size, np.full(L.size, -np.inf), np.zeros(L.size), value.size, start[:-1], index, value)
        have[L, I] = True
        ever[L, I] = True
        rows_L, rows_I = np.concatenate([rows_L, L]), np.concatenate([rows_I, I])
        age = np.concatenate([age, np.zeros(L.size, dtype=np.int64)])

    order = np.lexsort(Wa.T)
    near = [(order[d:], order[:-d]) for d in range(1, min(window, R - 1) + 1)]
    if near:
        add(
            np.concatenate([a for a, b in near] + [b for a, b in near]),
            np.concatenate([b for a, b in near] + [a for a, b in near]),
        )
    rounds = iterations = deleted = 0
    best = np.inf
    basic = highspy.HighsBasisStatus.kBasic
    while True:
        rounds += 1
        x, obj = _run(policy, h)
        throughput = -obj  # of the relaxation: never rises as rows are added
        iterations += int(h.getInfo().simplex_iteration_count)
        if PROGRESS is not None:
            PROGRESS(f"{policy}: round {rounds}, {int(have.sum()):,} envy rows, {time.perf_counter() - t0:.0f} s")
        envy, viol = ef_violations(Wa, np.where(x < ZERO_TOL, 0.0, x).reshape(R, ka), om, have)
        if not viol.any():
            break
        L, I = _most_violated(envy, viol, per_row, per_col)
        basis = h.getBasis() if drop_after > 0 and age.size else None
        if basis is not None and basis.valid:
            status = basis.row_status
            is_basic = np.fromiter((st == basic for st in status[ka:]), dtype=bool, count=age.size)
            age = np.where(is_basic, age + 1, 0)
            if throughput < best - 1e-12 * max(1.0, abs(best)):
                drop = np.flatnonzero(age >= drop_after)
                if drop.size:
                    h.deleteRows(drop.size, (drop + ka).astype(np.int32))
                    have[rows_L[drop], rows_I[drop]] = False
                    keep = np.ones(age.size, dtype=bool)
                    keep[drop] = False
                    rows_L, rows_I, age = rows_L[keep], rows_I[keep], age[keep]
                    deleted += int(drop.size)
        best = min(best, throughput)
        add(L, I)
    dt = time.perf_counter() - t0
    info = {
        "ef_rows": "lazy",
        "cg_rounds": rounds,
        "ef_rows_generated": int(ever.sum()),
        "ef_rows_final": int(have.sum()),
        "ef_rows_deleted": deleted,
        "simplex_iterations": iterations,
    }
    return _expand(x, R, k, active, s), dt, info


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
