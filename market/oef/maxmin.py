"""Exact max-min LPs at scale by price decomposition (per-round allocators with many jobs).

The per-round programs of ``gavel``, ``gavel-max-min-perf`` and ``oef-noncoop`` (LP (9)) share one
form, over ``n`` rows (jobs or tenants) and ``k`` GPU types::

    (P)  max t   s.t.  C_l . x_l >= t    (``== t`` for LP (9))      for every row l
                       sum_l s_l x_lj <= m_j                          for every type j
                       sum_j x_lj <= d_l                              for every row l
                       x >= 0,   x_lj = 0 where C_lj = 0

(``C`` the row's normalised throughputs, per-row targets or weights already divided in; ``s`` scale
factors; ``d`` time or device caps, ``inf`` for none; ``m_j > 0``.) ``k`` is small (3 in Gavel's
tables, 10 in OEF's evaluation) and ``n`` large, and at an optimum almost every row follows one of two
patterns at the capacity prices ``p`` (the duals of the capacity rows): it runs on its cheapest type per unit of ``t``,
``u = argmin_j p_j / C_lj``, with its cap slack; or, when that type alone cannot reach ``t`` within
the cap, it uses its whole cap on the two types around ``t / d_l`` on the lower envelope of the points
``(C_lj, s_l p_j)`` (:func:`_patterns`). Only rows near a tie or a breakpoint need the LP.
:func:`solve_maxmin` therefore

0. works in units where ``C`` and ``x`` are of order one (HiGHS's tolerances are absolute);
1. guesses prices and ``t`` (given ones, e.g. the previous round's, or the optimum of the same program
   on a deterministic sample of rows with proportionally scaled capacities, :func:`_guess`; from
   :data:`IPM_MIN_ROWS` rows, when that sample leaves many rows near a tie, the prices of a structured
   interior-point method, :mod:`marketsim.market.oef.maxmin_ipm`, and when a cap pins ``t`` an optimum read off
   one of its iterates, :func:`_pinned`);
2. *fixes* every row whose pattern is clear (it survives a relative change ``delta`` of the prices
   and of ``t``): a one-type row ``x_lu = t / C_lu``, a two-type row ``x_lu = (C_lv d_l - t) / D``,
   ``x_lv = (t - C_lu d_l) / D`` (``D = C_lv - C_lu``); fixed rows then enter the program only
   through ``g_j t + h_j`` per capacity row and a bound on ``t`` (:func:`_fold`);
3. solves that reduced program (the free rows in full, ``k`` capacity rows; one HiGHS dual simplex
   solve, any missing column of a free row with a negative reduced cost priced in) for ``t``, the
   free rows' ``x`` and new prices ``p``;
4. certifies the result against the full program (:func:`_certify`): each fixed row's duals follow
   from its pattern's columns being tight (``y_l`` of its throughput row, ``z_l`` of its cap), and
   the reduced program's duals extend to a feasible dual of (P) with equal objective iff
   ``s_l p_j + z_l >= y_l C_lj`` for all ``j``, ``y_l, z_l >= 0``, every pattern is primal feasible
   at ``t`` and the bound on ``t`` is slack (complementary slackness). Rows that fail join the free
   set and step 3 repeats (the free set only grows, so the loop ends); if the reduced program is
   infeasible the fixed two-type rows are freed.

The returned ``x`` is therefore an optimal solution of (P) itself, certified by LP duality with
relative tolerance ``1e-9``; ``t`` equals the full program's optimum. When the free set would exceed
``max_free`` of the rows the decomposition gives up (returns ``None``) and the caller solves the full
program. Where (P) has several optimal vertices the solution is not necessarily the one a simplex
solve of the full program would return. ``tests/test_maxmin_decomposition.py`` checks optimum and
certificate against full solves, with a test per step that fails without it (docs/round_lp.md).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np

from marketsim.market.errors import SolveError

__all__ = ["MaxMinSolution", "PriceWarmStart", "solve_maxmin", "solve_maxmin_live", "DECOMPOSE_MIN_ROWS"]

DECOMPOSE_MIN_ROWS = 64
"""Programs with fewer rows are left to the full solve (nothing to gain)."""

_TOL = 1e-9
_LOCAL = threading.local()


@dataclass
class MaxMinSolution:
    """An optimal solution of (P): ``x`` (n, k), ``t``, the capacity prices ``p`` (k,) (duals of the
    capacity rows, per unit of ``t``), and how it was found (``info``: LP solves, free rows)."""

    x: np.ndarray
    t: float
    prices: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)


class PriceWarmStart:
    """What one scheduling round leaves for the next one's decomposition: the capacity prices (the
    next round starts from them; consecutive rounds differ by a few jobs, so they barely move) and,
    when rows carry ids, the reduced program itself: the next round deletes the rows that left or
    changed, adds the new free ones and continues the dual simplex from the kept basis. ``types``
    guards the set of GPU types both belong to."""

    def __init__(self) -> None:
        self.prices: np.ndarray | None = None
        self.t = np.inf
        self.types: bytes | None = None
        self.model: _Reduced | None = None
        self.index: dict[Any, int] = {}
        self._sorted: np.ndarray | None = None
        self._order = np.zeros(0, dtype=np.int64)

    def get(self, types: bytes) -> np.ndarray | None:
        """The stored prices if they belong to ``types``."""
        return self.prices if self.prices is not None and self.types == types else None

    def put(self, types: bytes, prices: np.ndarray, t: float = np.inf) -> None:
        """Keep ``prices`` (and the optimum ``t``, if known) for ``types``, and forget any kept program."""
        self.prices, self.types, self.t = np.asarray(prices, dtype=float).copy(), types, float(t)
        self.model, self.index, self._sorted = None, {}, None

    def keep_ids(self, ids: list[Any]) -> None:
        """Remember the rows' ids of the round whose program is kept (integer ids in sorted arrays,
        others in a dict)."""
        arr = np.asarray(ids)
        if arr.ndim == 1 and arr.dtype.kind in "iu":
            order = np.argsort(arr, kind="stable")
            self.index = {}
            self._sorted, self._order = arr[order], order
        else:
            self.index = {i: r for r, i in enumerate(ids)}
            self._sorted = None

    def where(self, ids: list[Any]) -> np.ndarray:
        """Each id's row in the kept program's round (-1: not there)."""
        if self._sorted is not None:
            arr = np.asarray(ids)
            if arr.ndim == 1 and arr.dtype.kind in "iu":
                if self._sorted.size == 0:
                    return np.full(arr.size, -1, dtype=np.int64)
                pos = np.minimum(np.searchsorted(self._sorted, arr), self._sorted.size - 1)
                return np.where(self._sorted[pos] == arr, self._order[pos], -1)
            return np.full(len(ids), -1, dtype=np.int64)
        get = self.index.get
        return np.fromiter((get(i, -1) for i in ids), dtype=np.int64, count=len(ids))


_OPTIONS = (("output_flag", False), ("solver", "simplex"), ("simplex_strategy", 1), ("presolve", "off"),
            ("random_seed", 0), ("threads", 1), ("simplex_dual_edge_weight_strategy", 1),
            ("primal_feasibility_tolerance", 1e-10), ("dual_feasibility_tolerance", 1e-10))  # fmt: skip
"""HiGHS options of the reduced programs: dual simplex without presolve, single-threaded, fixed seed
(deterministic), Devex pricing (a warm-started solve needs a few pivots; steepest-edge weights would
cost more to set up than they save), feasibility tolerances 1e-10 instead of 1e-7 (the program is
solved in units where its numbers are of order one, so the optimum holds to about 1e-10 relative)."""


def _empty_reduced_highs(own: bool = False) -> highspy.Highs:
    """A silent, deterministic HiGHS instance (dual simplex, no presolve: the reduced programs are
    small and their duals are read directly) with no model: a new one if ``own`` (a program kept
    across rounds), else this thread's, cleared. Nothing else in this module changes its options."""
    h = None if own else getattr(_LOCAL, "h", None)
    if h is None:
        from marketsim.market.milp import new_highs

        h = new_highs()
        for name, value in _OPTIONS:
            h.setOptionValue(name, value)
        if not own:
            _LOCAL.h = h
    else:
        h.clearModel()
    return h


class _Reduced:
    """(P) over the free rows, with the fixed rows folded into ``g_j t`` (capacity rows) and
    ``t <= tmax``, kept in one HiGHS model that grows: :meth:`free` adds rows (their throughput and
    cap rows and some of their columns), :meth:`add_columns` more columns, :meth:`fold` rewrites ``g``
    and ``tmax``, and every :meth:`solve` continues the dual simplex from the previous basis; across
    rounds :meth:`remap` deletes rows and renumbers. Column 0 is ``t``; model rows are the ``k``
    capacity rows, then each free row's throughput row and (if capped) cap row."""

    def __init__(
        self, policy: str, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool, own: bool = False
    ) -> None:
        self.policy, self.equal = policy, equal
        self.k = C.shape[1]
        self.h = h = _empty_reduced_highs(own)
        h.addCol(-1.0, 0.0, np.inf, 0, np.zeros(0, dtype=np.int32), np.zeros(0))
        empty = np.zeros(0, dtype=np.int32)
        self.m = np.asarray(m, dtype=float)
        h.addRows(self.k, np.full(self.k, -np.inf), self.m, 0, empty, empty, np.zeros(0))
        self.g = np.zeros(self.k)
        self.hcap = np.zeros(self.k)
        self.row_owner = np.full(self.k, -1, dtype=np.int64)  # input row of each model row (-1: capacity)
        self.row_cap = np.zeros(self.k, dtype=bool)  # model row is a cap row
        self.col_row = np.zeros(0, dtype=np.int64)  # input row of each x column (columns 1..)
        self.col_type = np.zeros(0, dtype=np.int64)
        self._bind(C, s, d)
        self.iterations = 0
        self.solves = 0
        self.row_dual = np.zeros(0)
        self.units = (1.0, 1.0)  # the divisors of C and of x this program was built in (solve_maxmin)

    def _bind(self, C: np.ndarray, s: np.ndarray, d: np.ndarray) -> None:
        """This round's inputs, and the per-input-row indices derived from the model rows/columns."""
        self.C, self.s, self.d = C, s, d
        n = C.shape[0]
        self.thr_row = np.full(n, -1, dtype=np.int64)  # model row of each free row's throughput constraint
        self.cap_row = np.full(n, -1, dtype=np.int64)  # ... and of its cap (-1: none)
        own = np.flatnonzero(self.row_owner >= 0)
        thr, cap = own[~self.row_cap[own]], own[self.row_cap[own]]
        self.thr_row[self.row_owner[thr]] = thr
        self.cap_row[self.row_owner[cap]] = cap
        self.inmodel = np.zeros((n, self.k), dtype=bool)
        self.inmodel[self.col_row, self.col_type] = True

    @property
    def n_rows(self) -> int:
        return int(self.row_owner.size)

    def free(self, rows: np.ndarray, cols: np.ndarray) -> None:
        """Add input ``rows`` (not yet in the model) with their columns where ``cols`` ((rows, k) bool)."""
        if rows.size == 0:
            return
        h = self.h
        f = rows.size
        base = self.n_rows
        h.addRows(f, np.zeros(f), np.zeros(f) if self.equal else np.full(f, np.inf), f,
                  np.arange(f, dtype=np.int32), np.zeros(f, dtype=np.int32), -np.ones(f))  # fmt: skip
        self.thr_row[rows] = base + np.arange(f)
        dA = self.d[rows]
        capped = np.isfinite(dA)
        n_cap = int(capped.sum())
        if n_cap:
            empty = np.zeros(0, dtype=np.int32)
            h.addRows(n_cap, np.full(n_cap, -np.inf), dA[capped], 0, empty, empty, np.zeros(0))
            self.cap_row[rows[capped]] = base + f + np.arange(n_cap)
        self.row_owner = np.concatenate([self.row_owner, rows, rows[capped]])
        self.row_cap = np.concatenate([self.row_cap, np.zeros(f, dtype=bool), np.ones(n_cap, dtype=bool)])
        ra, rj = np.nonzero(cols)
        self.add_columns(rows[ra], rj)

    def add_columns(self, rows: np.ndarray, types: np.ndarray) -> None:
        """Add the ``x`` columns ``(rows[i], types[i])`` of free rows (usable, not yet in the model)."""
        if rows.size == 0:
            return
        cap = self.cap_row[rows]
        has = cap >= 0
        start = np.zeros(rows.size + 1, dtype=np.int32)
        np.cumsum(2 + has.astype(np.int32), out=start[1:])
        index = np.empty(int(start[-1]), dtype=np.int32)
        value = np.empty(int(start[-1]))
        s0 = start[:-1]
        index[s0], value[s0] = types, self.s[rows]
        index[s0 + 1], value[s0 + 1] = self.thr_row[rows], self.C[rows, types]
        s2 = s0[has] + 2
        index[s2], value[s2] = cap[has], 1.0
        nc = rows.size
        self.h.addCols(nc, np.zeros(nc), np.zeros(nc), np.full(nc, np.inf), index.size, s0, index, value)
        self.inmodel[rows, types] = True
        self.col_row = np.concatenate([self.col_row, rows])
        self.col_type = np.concatenate([self.col_type, types])

    def remap(self, old_of: np.ndarray, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray) -> None:
        """Carry the model into a new round: ``old_of[i]`` is new input row ``i``'s row in the last
        round (-1: new, or not to be kept free); rows of the last round not mapped to are deleted with
        their columns (HiGHS keeps the rest of the basis), and capacities and indices are updated."""
        n_old = self.thr_row.size
        new_of = np.full(n_old, -1, dtype=np.int64)
        mapped = np.flatnonzero(old_of >= 0)
        new_of[old_of[mapped]] = mapped
        owner = self.row_owner
        gone_rows = np.flatnonzero((owner >= 0) & (new_of[np.maximum(owner, 0)] < 0))
        gone_cols = np.flatnonzero(new_of[self.col_row] < 0)
        h = self.h
        if gone_cols.size:
            h.deleteCols(gone_cols.size, (gone_cols + 1).astype(np.int32))
        if gone_rows.size:
            h.deleteRows(gone_rows.size, gone_rows.astype(np.int32))
        keep_r = np.ones(owner.size, dtype=bool)
        keep_r[gone_rows] = False
        keep_c = np.ones(self.col_row.size, dtype=bool)
        keep_c[gone_cols] = False
        self.row_owner = np.where(owner[keep_r] >= 0, new_of[np.maximum(owner[keep_r], 0)], -1)
        self.row_cap = self.row_cap[keep_r]
        self.col_row, self.col_type = new_of[self.col_row[keep_c]], self.col_type[keep_c]
        m = np.asarray(m, dtype=float)
        if not np.array_equal(m, self.m):
            h.changeRowsBounds(self.k, np.arange(self.k, dtype=np.int32), np.full(self.k, -np.inf), m - self.hcap)
            self.m = m
        self._bind(C, s, d)
        self.iterations = self.solves = 0

    def priced_out(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The usable columns of free ``rows`` missing from the model whose reduced cost at the last
        solve is negative (they would improve it): ``(rows, types)``."""
        miss = ~self.inmodel[rows] & (self.C[rows] > 0)
        if not miss.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        rd = self.row_dual
        ycap = rd[: self.k]
        ythr = rd[self.thr_row[rows]]
        zcap = np.where(self.cap_row[rows] >= 0, rd[np.maximum(self.cap_row[rows], 0)], 0.0)
        a = self.s[rows][:, None] * ycap[None, :]
        b = self.C[rows] * ythr[:, None]
        rc = -(a + b + zcap[:, None])  # cost 0 minus A^T y (HiGHS: col_dual = c - A^T row_dual)
        tol = _TOL * (np.abs(a) + np.abs(b) + np.abs(zcap)[:, None]) + 1e-14
        ra, rj = np.nonzero(miss & (rc < -tol))
        return rows[ra], rj

    def fold(self, g: np.ndarray, h: np.ndarray, tmax: float) -> None:
        """The fixed rows' capacity use ``g_j t + h_j`` (``g``, ``h`` (k,)) and their bound on ``t``."""
        for j in np.flatnonzero(g != self.g).tolist():
            self.h.changeCoeff(j, 0, float(g[j]))
        self.g = g.copy()
        if not np.array_equal(h, self.hcap):
            self.hcap = h.copy()
            self.h.changeRowsBounds(self.k, np.arange(self.k, dtype=np.int32), np.full(self.k, -np.inf), self.m - h)
        self.h.changeColBounds(0, 0.0, tmax)

    def solve(self, n: int) -> tuple[np.ndarray, float, np.ndarray] | None:
        """Solve from the current basis: (x (n, k) on the free rows' entries, t, capacity prices p),
        or ``None`` when the reduced program is infeasible or unbounded (a fold from far-off prices:
        the caller solves the full program)."""
        h = self.h
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            if status in _GIVE_UP:
                return None
            why = "HiGHS did not solve the reduced max-min program"
            raise SolveError(self.policy, h.modelStatusToString(status), why)
        self.iterations += int(h.getInfo().simplex_iteration_count)
        self.solves += 1
        sol = h.getSolution()
        col = np.asarray(sol.col_value, dtype=float)
        self.row_dual = np.asarray(sol.row_dual, dtype=float)
        x = np.zeros((n, self.k))
        x[self.col_row, self.col_type] = np.maximum(col[1:], 0.0)
        p = np.maximum(-self.row_dual[: self.k], 0.0)
        return x, float(col[0]), p


_GIVE_UP = (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnbounded,
            highspy.HighsModelStatus.kUnboundedOrInfeasible)  # fmt: skip


def _cheapest(p: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``p_j / C_lj`` per row and type (``inf`` where ``C_lj = 0``): price of one unit of ``t``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(C > 0, p[None, :] / np.where(C > 0, C, 1.0), np.inf)


def _assign(p: np.ndarray, C: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's cheapest type at prices ``p`` (ties, e.g. between unpriced types, go to the type
    where the row is fastest), the relative gap to its second-cheapest priced type (``inf`` when
    its cheapest is unpriced or it has one type), and the (n, k) mask of its types within ``delta``
    of its cheapest (the columns it starts with if free)."""
    n, k = C.shape
    R = _cheapest(p, C)
    best = R.min(axis=1)
    tied = R <= best[:, None] * (1.0 + _TOL)
    a = np.argmax(np.where(tied, C, -1.0), axis=1)
    near = R <= best[:, None] * (1.0 + delta)
    near[np.arange(n), a] = True
    gap = np.full(n, np.inf)
    if k > 1:
        priced = best > 0
        gap[priced] = np.partition(R[priced], 1, axis=1)[:, 1] / best[priced] - 1.0
    return a, gap, near & (C > 0)


def _balance(p: np.ndarray, C: np.ndarray, m: np.ndarray, s: np.ndarray, iters: int = 40) -> np.ndarray:
    """Refine capacity prices by tatonnement before any row is fixed: every row on its cheapest type,
    a type's load per unit of ``t`` is ``L_j = sum s_l / C_lj``; at the program's optimum the priced
    types are all full, so loads are proportional to ``m``. Prices of types loaded above the
    geometric mean of ``L_j / m_j`` rise, the others fall, with shrinking steps; the most balanced
    prices seen are returned. (A first guess only: the certificate decides.)"""
    if not (p > 0).any():
        return p
    n = C.shape[0]
    idx = np.arange(n)
    best, best_spread = p, np.inf
    for it in range(iters):
        a = np.argmin(_cheapest(p, C), axis=1)
        r = np.bincount(a, weights=s / C[idx, a], minlength=p.size) / m
        if not (r > 0).any():
            break
        r = np.where(r > 0, r, 0.5 * r[r > 0].min())
        spread = float(r.max() / r.min())
        if spread < best_spread:
            best, best_spread = p, spread
        if spread < 1.0 + 1e-3:
            break
        p = p * (r / np.exp(np.log(r).mean())) ** (1.0 / np.sqrt(1.0 + it))
    return best


def _patterns(
    p: np.ndarray, C: np.ndarray, s: np.ndarray, d: np.ndarray, t: float, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row's least-cost way to reach ``t`` at capacity prices ``p``: ``(u, v, clear, near)``.

    A row whose cap is slack (``t <= d_l C_lu``) runs on its cheapest type per unit of ``t``, ``u``
    (``v = -1``). A row whose cap binds there uses its whole cap ``d_l`` on two types ``u``, ``v``
    with ``C_lu < t / d_l < C_lv``, the pair on the lower envelope of the points ``(C_lj, s_l p_j)``
    at the rate ``t / d_l``. ``clear``: the pattern survives a relative change ``delta`` of the prices
    or of ``t`` (second-cheapest type more than ``delta`` dearer; ``t / d_l`` at least ``delta`` from
    a breakpoint; every other point more than ``delta`` above the pair's line). ``near`` (n, k): the
    columns a free row starts with (the types within ``delta`` of its cheapest, or every usable type
    for a row whose cap may bind)."""
    n, k = C.shape
    u, gap, near = _assign(p, C, delta)
    v = np.full(n, -1, dtype=np.int64)
    clear = gap > delta
    capped = np.isfinite(d)
    if not capped.any():
        return u, v, clear, near
    r = np.zeros(n)
    r[capped] = t / d[capped]
    Cu = C[np.arange(n), u]
    binds = r * (1.0 + delta) > Cu  # the cap may bind on the cheapest type
    clear &= ~binds
    near[binds] = C[binds] > 0
    rows = np.flatnonzero(r > Cu)
    if rows.size == 0:
        return u, v, clear, near
    Cp, rp = C[rows], r[rows]
    cost = s[rows, None] * p[None, :]
    best = np.full(rows.size, np.inf)
    bu = np.full(rows.size, -1, dtype=np.int64)
    bv = np.full(rows.size, -1, dtype=np.int64)
    for i in range(k):
        for j in range(k):
            ok = (Cp[:, i] > 0) & (Cp[:, i] < Cp[:, j]) & (Cp[:, i] <= rp) & (rp <= Cp[:, j])
            if i == j or not ok.any():
                continue
            val = cost[:, i] + (cost[:, j] - cost[:, i]) * (rp - Cp[:, i]) / np.where(ok, Cp[:, j] - Cp[:, i], 1.0)
            take = ok & (val < best)
            best[take], bu[take], bv[take] = val[take], i, j
    found = bu >= 0
    q = np.arange(rows.size)
    iu, iv = np.where(found, bu, 0), np.where(found, bv, 0)
    ci, cv = Cp[q, iu], Cp[q, iv]
    y = (cost[q, iv] - cost[q, iu]) / np.where(found, cv - ci, 1.0)
    above = cost - (cost[q, iu] - y * ci)[:, None] - y[:, None] * Cp  # each point's height above the line
    others = (Cp > 0) & (np.arange(k) != iu[:, None]) & (np.arange(k) != iv[:, None])
    margin = ((above >= delta * y[:, None] * np.maximum(Cp, ci[:, None])) | ~others).all(axis=1)
    margin &= y * ci - cost[q, iu] >= delta * y * ci  # the origin (idle time) too
    margin &= (rp >= ci * (1.0 + delta)) & (rp * (1.0 + delta) <= cv) & (y > 0)
    u[rows[found]], v[rows[found]] = bu[found], bv[found]
    clear[rows] = found & margin
    return u, v, clear, near


def _fold(
    C: np.ndarray, s: np.ndarray, d: np.ndarray, u: np.ndarray, v: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fixed rows' capacity use ``g_j t + h_j`` and the range ``[lo_l, hi_l]`` of ``t`` over which
    their patterns are feasible: a single row ``x_lu = t / C_lu`` (``t <= d_l C_lu``), a pair row
    ``x_lu = (C_lv d_l - t) / D``, ``x_lv = (t - C_lu d_l) / D`` with ``D = C_lv - C_lu`` (its cap
    full, ``C_lu d_l <= t <= C_lv d_l``). Returns ``(g, h, lo, hi)``."""
    n = C.shape[0]
    idx = np.arange(n)
    pair = v >= 0
    cu = C[idx, u]
    cv = np.where(pair, C[idx, np.maximum(v, 0)], 1.0)
    single = ~pair
    g = np.bincount(u[single], weights=s[single] / cu[single], minlength=k).astype(float)
    w = s[pair] / (cv[pair] - cu[pair])
    up, vp, dp = u[pair], v[pair], d[pair]
    g += np.bincount(vp, weights=w, minlength=k) - np.bincount(up, weights=w, minlength=k)
    h = np.bincount(up, weights=w * cv[pair] * dp, minlength=k) - np.bincount(vp, weights=w * cu[pair] * dp,
                                                                              minlength=k).astype(float)  # fmt: skip
    lo = np.where(pair, cu * np.where(pair, d, 0.0), 0.0)
    hi = np.where(pair, cv, cu) * d
    return g, h, lo, hi


def _certify(
    p: np.ndarray, t: float, C: np.ndarray, s: np.ndarray, u: np.ndarray, v: np.ndarray, lo: np.ndarray,
    hi: np.ndarray, tmax: float,
) -> np.ndarray:  # fmt: skip
    """Fixed rows that break the certificate at the reduced program's prices ``p`` and ``t``: their
    dual ``y_l`` (throughput row) and ``z_l`` (cap), from their pattern's columns being tight
    (single: ``y = s p_u / C_u``, ``z = 0``; pair: ``y = s (p_v - p_u) / D``, ``z = y C_u - s p_u``),
    must satisfy ``s_l p_j + z_l >= y_l C_lj`` for every type, ``y, z >= 0``, and the pattern must be
    primal feasible at ``t`` with the bound the fixed rows put on ``t`` slack (if ``t`` sits on it,
    the rows that set it are freed)."""
    n = C.shape[0]
    idx = np.arange(n)
    pair = v >= 0
    cu = C[idx, u]
    cv = np.where(pair, C[idx, np.maximum(v, 0)], 1.0)
    pu, pv = p[u], p[np.maximum(v, 0)]
    y = np.where(pair, s * (pv - pu) / np.where(pair, cv - cu, 1.0), s * pu / cu)
    z = np.where(pair, y * cu - s * pu, 0.0)
    lhs = s[:, None] * p[None, :] + z[:, None]
    rhs = y[:, None] * C
    floor = _TOL * float(p.max(initial=0.0)) * s[:, None] * np.maximum(C, 1.0)
    bad = (rhs > lhs + _TOL * (np.abs(lhs) + rhs) + floor).any(axis=1)
    bad |= z < -_TOL * (y * cu + s * pu) - _TOL * float(p.max(initial=0.0)) * s
    bad |= pair & (t < lo * (1.0 - _TOL))
    if np.isfinite(tmax) and t >= tmax * (1.0 - _TOL):
        bad |= hi <= t * (1.0 + _TOL)
    return bad


def _sample_prices(
    policy: str, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool, size: int
) -> tuple[np.ndarray, float, int] | None:
    """Prices, ``t`` and simplex iterations of (P) on ``size`` rows drawn by a fixed-seed permutation,
    capacities scaled by the sample's share of the scale factors (a deterministic first guess)."""
    n = C.shape[0]
    rows = np.sort(np.random.default_rng(0).permutation(n)[:size])
    share = float(s[rows].sum() / s.sum())
    lp = _Reduced(policy, C, m * share, s, d, equal)
    lp.free(rows, C[rows] > 0)
    got = lp.solve(n)
    return None if got is None else (got[2], got[1], lp.iterations)


RECURSE_ROWS = 2048
"""From this many rows on, when the sample's prices leave the loads far from balanced
(:data:`SPREAD`), the first prices are the exact optimum of (P) on an eighth of the rows (solved by
the same decomposition, recursively)."""

SPREAD = 1.05
"""Largest acceptable load spread (:func:`_spread`) of a first guess before a larger sample is solved."""


def _spread(p: np.ndarray, t: float, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray) -> float:
    """How far prices ``p`` and level ``t`` are from an optimum, measured on the loads they imply: with
    every row on its pattern at ``(p, t)``, ``r_j = U_j / m_j`` is type ``j``'s use per GPU. At an
    optimum the priced types are full and no type is over: the spread ``max_j r_j / min_{p_j > 0} r_j``
    is 1. With every price 0 it is ``max_j r_j`` (at most 1: the rows fit)."""
    u, v, _, _ = _patterns(p, C, s, d, t, 0.0)
    g, h, _, _ = _fold(C, s, d, u, v, C.shape[1])
    r = (g * t + h) / m
    if not (p > 0).any():
        return float(r.max())
    low = float(r[p > 0].min())
    return float(r.max() / low) if low > 0 else np.inf


IPM_MIN_ROWS = 512
"""From this many rows on, a first guess that leaves the loads far from balanced (:data:`SPREAD`) or
many rows near a tie (:data:`IPM_NEAR`) is replaced by the prices of the interior-point method
(:mod:`marketsim.market.oef.maxmin_ipm`)."""

IPM_NEAR = 0.2
"""Fraction of rows whose pattern is not clear at the sampled prices (a tie within ``delta`` or a
breakpoint) beyond which the interior-point prices are computed."""

IPM_DELTA = 1e-4
"""The margin ``delta`` of :func:`_patterns` at the interior-point prices (duality gap 1e-7 there)."""

FIRST_PRICES = "auto"
"""How :func:`_guess` finds first prices: ``"auto"`` (sample; interior point when the sample is poor,
see :data:`IPM_MIN_ROWS`), ``"sample"`` (sample, recursive sub-sample; never the interior point) or
``"ipm"`` (the interior point from :data:`IPM_MIN_ROWS` rows whenever a price is positive).
Measured side by side in ``benchmarks/bench_round_lp.py``."""


def _polish(x: np.ndarray, t: float, C: np.ndarray, d: np.ndarray, rows: np.ndarray) -> None:
    """Recompute in place the free ``rows``' allocation from the reduced program's ``t`` and the
    types each row uses (its basis): one type with its throughput row tight, ``x_lu = t / C_lu``; two
    types with its cap tight too, the two-type pattern of :func:`_fold`. The reduced program folds
    thousands of rows into a few coefficients of order ``n``, so HiGHS's values of the few free
    rows can be off by ~1e-8 (a cap exceeded by that much); these are exact to rounding. Rows
    that fit neither case, or whose recomputed values would be negative or exceed the cap, are left."""
    if rows.size == 0:
        return
    X, Cr = x[rows], C[rows]
    use = X > 0
    nu = use.sum(axis=1)
    thr = (Cr * X).sum(axis=1)
    tight = np.abs(thr - t) <= 1e-6 * t
    one = (nu == 1) & tight
    if one.any():
        j = np.argmax(use[one], axis=1)
        val = t / Cr[one, j]
        ok = val <= d[rows[one]] * (1.0 + 1e-12)
        x[rows[one][ok], j[ok]] = val[ok]
    dr = d[rows]
    two = (
        (nu == 2) & tight & np.isfinite(dr) & (np.abs(X.sum(axis=1) - dr) <= 1e-6 * np.where(np.isfinite(dr), dr, 1.0))
    )
    if two.any():
        r2 = rows[two]
        ja = np.argmax(use[two], axis=1)
        jb = use[two].shape[1] - 1 - np.argmax(use[two][:, ::-1], axis=1)
        ca, cb, dd = C[r2, ja], C[r2, jb], d[r2]
        with np.errstate(divide="ignore", invalid="ignore"):
            xa = (cb * dd - t) / (cb - ca)
            xb = (t - ca * dd) / (cb - ca)
        ok = np.isfinite(xa) & np.isfinite(xb) & (xa >= 0) & (xb >= 0)
        x[r2[ok], ja[ok]] = xa[ok]
        x[r2[ok], jb[ok]] = xb[ok]


POLISH = True
"""Recompute the free rows' allocation exactly from the reduced program's ``t`` (:func:`_polish`)."""


PIN_BAND = 0.01
"""The interior-point iterates of a capped program are tried as a :func:`_pinned` solution once their
``t`` is within this relative margin of the cap bound ``min_l d_l max_j C_lj``."""

PIN_FREE = 1.0 / 16
"""A :func:`_pinned` attempt is given up before any LP solve when more than this share of the rows
would be free."""


def _pinned(
    policy: str, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool, X: np.ndarray, tcap: float
) -> tuple[np.ndarray, float, int] | None:
    """An optimal ``(x, t, free rows)`` of (P) when a cap pins ``t`` at ``tcap = min_l d_l max_j C_lj`` (every
    capacity price 0), built from a near-feasible allocation ``X`` (n, k) (an interior-point iterate):
    each row keeps ``X_l``'s mix of types, scaled to throughput ``t`` (``x_l = t X_l / C_l . X_l``), so
    it enters the program as ``g t`` on the capacity rows and the bound ``t <= hi_l`` of its cap; the
    rows whose bound is within 1e-6 of ``tcap`` (those that set it) are left free and one reduced
    program is solved. The result is certified by LP duality when the reduced program's capacity
    prices are all 0 and ``t`` stays below the fixed rows' bound: the fixed rows' duals are then 0,
    the mixes cost nothing, and complementary slackness holds. ``None`` otherwise (or when more
    than :data:`PIN_FREE` of the rows would be free, or the program is infeasible)."""
    n, k = C.shape
    th = (C * X).sum(axis=1)
    ok = th > 0
    D = X / np.where(ok, th, 1.0)[:, None]
    use = D.sum(axis=1)
    with np.errstate(divide="ignore"):
        hi = np.where(ok, d / np.where(use > 0, use, 0.0), 0.0)
    free = hi <= tcap * (1.0 + 1e-6)
    if free.sum() > PIN_FREE * n:
        return None
    fixed = ~free
    rows = np.arange(n)
    lp = _Reduced(policy, C, m, s, d, equal)
    lp.free(rows[free], C[free] > 0)
    tmax = float(hi[fixed].min()) if fixed.any() else np.inf
    lp.fold(D[fixed].T @ s[fixed], np.zeros(k), tmax)
    got = lp.solve(n)
    if got is None:
        return None
    x, t, p = got
    if (p > 0).any() or t >= tmax * (1.0 - _TOL):
        return None
    if POLISH:
        _polish(x, t, C, d, rows[free])
    x[fixed] = D[fixed] * t
    return x, t, int(free.sum())


def _ipm_guess(
    policy: str, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool
) -> tuple[Any, tuple[np.ndarray, float, int] | None]:
    """The interior-point prices of (P) (:func:`marketsim.market.oef.maxmin_ipm.maxmin_prices`) and, for a
    capped program whose optimum a cap pins, a :func:`_pinned` solution found along the way (the
    method stops at the first iterate that yields one): ``(IpmPrices or None, (x, t) or None)``."""
    from marketsim.market.oef.maxmin_ipm import maxmin_prices

    found: list[tuple[np.ndarray, float, int]] = []
    early = None
    if np.isfinite(d).any():
        tcap = float((d * C.max(axis=1)).min())
        tries = [0]

        def early(X: np.ndarray, t: float) -> bool:
            if t < tcap * (1.0 - PIN_BAND) or tries[0] >= 8:
                return False
            tries[0] += 1
            got = _pinned(policy, C, m, s, d, equal, X, tcap)
            if got is not None:
                found.append(got)
            return got is not None

    ip = maxmin_prices(C, m, s, d, equal=equal, early=early)
    return ip, (found[0] if found else None)


def _near_share(p: np.ndarray, t: float, C: np.ndarray, s: np.ndarray, d: np.ndarray, delta: float) -> float:
    """Share of rows whose pattern at ``(p, t)`` is not clear within ``delta`` (:func:`_patterns`)."""
    return float(1.0 - _patterns(p, C, s, d, t, delta)[2].mean())


def _guess(
    policy: str, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool, delta: float
) -> tuple[np.ndarray, float, int, int, float, str, tuple[np.ndarray, float, int] | None] | None:
    """First prices and ``t`` of (P): ``(p, t, simplex iterations, LP solves, delta, how, pinned)``. The duals
    of (P) on a deterministic sample of at most 128 rows with capacities scaled by the sample's share of
    the scale factors, refined by :func:`_balance` (uncapped programs: always; capped ones: if that
    balances the loads better, :func:`_spread`). From :data:`IPM_MIN_ROWS` rows on, a guess whose
    spread exceeds :data:`SPREAD` or that leaves more than :data:`IPM_NEAR` of the rows near a tie is
    replaced by the interior-point prices (:func:`marketsim.market.oef.maxmin_ipm.maxmin_prices`), and the rows
    are then fixed with the margin :data:`IPM_DELTA` instead of ``delta``; without them (or with
    ``FIRST_PRICES = "sample"``), from :data:`RECURSE_ROWS` rows a guess whose spread exceeds
    :data:`SPREAD` is replaced by the optimum on an eighth of the rows. (Every sampled price 0:
    returned as is, :func:`solve_maxmin` checks whether the rows fit on their fastest types.)
    ``how`` names the source: ``"sample"``, ``"balance"``, ``"ipm"``, ``"ipm-pinned"`` or ``"subsample"``;
    ``pinned`` is an optimal ``(x, t)`` when the interior-point method found that a cap pins ``t``
    (:func:`_pinned`; the prices are then 0), else ``None``."""
    n, k = C.shape
    got = _sample_prices(policy, C, m, s, d, equal, max(4 * k, min(n // 8, 128)))
    if got is None:
        return None
    p, t, pivots = got
    if not (p > 0).any() and np.isfinite(d).any():
        return p, t, pivots, 1, delta, "sample", None  # a cap pins t (solve_maxmin checks that the rows fit)
    if np.isfinite(d).any():
        t = min(t, float((d * C.max(axis=1)).min()))
        cands = [p, _balance(p, C, m, s)]
        spreads = [_spread(c, t, C, m, s, d) for c in cands]
        best = int(np.argmin(spreads))
        p, spread, how = cands[best], spreads[best], ("sample", "balance")[best]
    else:
        p, how = _balance(p, C, m, s), "balance"
        spread = _spread(p, t, C, m, s, d)
    if (
        n >= IPM_MIN_ROWS
        and FIRST_PRICES != "sample"
        and (FIRST_PRICES == "ipm" or spread > SPREAD or _near_share(p, t, C, s, d, delta) > IPM_NEAR)
    ):
        ip, pin = _ipm_guess(policy, C, m, s, d, equal)
        if pin is not None:
            return np.zeros(k), pin[1], pivots, 2, delta, "ipm-pinned", pin
        if ip is not None:
            return ip.prices, ip.t, pivots, 1, IPM_DELTA, "ipm", None
    if spread > SPREAD and n >= RECURSE_ROWS:
        rows = np.sort(np.random.default_rng(0).permutation(n)[: n // 8])
        share = float(s[rows].sum() / s.sum())
        sub = solve_maxmin(C[rows], m * share, s[rows], d[rows], equal=equal, delta=delta, max_free=1.0,
                           policy=policy)  # fmt: skip
        if sub is not None:
            return (sub.prices, sub.t, pivots + sub.info["simplex_iterations"],
                    1 + sub.info["decomposition_solves"], delta, "subsample", None)  # fmt: skip
    return p, t, pivots, 1, delta, how, None


def solve_maxmin(
    C: np.ndarray,
    m: np.ndarray,
    s: np.ndarray | None = None,
    d: np.ndarray | None = None,
    *,
    equal: bool = False,
    prices: np.ndarray | None = None,
    warm: PriceWarmStart | None = None,
    ids: list[Any] | None = None,
    types: bytes = b"",
    delta: float = 0.03,
    max_free: float = 0.5,
    policy: str = "max-min",
) -> MaxMinSolution | None:
    """Solve (P) (module docstring) exactly by price decomposition, or return ``None`` when it does
    not apply (fewer than :data:`DECOMPOSE_MIN_ROWS` rows, a row that can run nowhere, a zero cap or
    capacity) or when more than ``max_free`` of the rows would need the full LP.

    ``C`` (n, k) >= 0 throughput per unit of ``x`` relative to the row's target; ``m`` (k,) > 0
    capacities; ``s`` (n,) scale factors (default 1); ``d`` (n,) caps on ``sum_j x_lj`` (default none);
    ``equal``: the throughput rows are equalities (LP (9)); ``prices``: a first guess of the capacity
    prices; ``warm``: a :class:`PriceWarmStart` for the GPU types ``types`` (prices, and with ``ids``,
    one hashable id per row, the basis; updated after the solve); ``delta``: rows whose pattern
    changes within this relative margin of the prices or of ``t`` start free. Any units: the
    program is solved with ``C`` divided by the median of its rows' largest entries and ``x``
    by the mean capacity per unit of scale factor, so HiGHS's absolute tolerances act on numbers of
    order one."""
    C = np.asarray(C, dtype=float)
    n, k = C.shape
    m = np.asarray(m, dtype=float)
    s = np.ones(n) if s is None else np.asarray(s, dtype=float)
    d = np.full(n, np.inf) if d is None else np.asarray(d, dtype=float)
    if n < DECOMPOSE_MIN_ROWS or (m <= 0).any() or (d <= 0).any() or not (C > 0).any(axis=1).all():
        return None
    if (s <= 0).any() or not (np.isfinite(C).all() and np.isfinite(m).all() and np.isfinite(s).all()):
        return None
    kept = bool(warm is not None and ids is not None and warm.model is not None and warm.types == types
                and warm.model.equal == equal)  # fmt: skip
    # units: rows' best throughputs about 1 (gamma), x about 1 per unit of scale factor (mu)
    gam, mu = warm.model.units if kept else (float(np.median(C.max(axis=1))), float(m.sum() / s.sum()))
    C, m, d = C / gam, m / mu, d / mu
    t_hint = np.inf
    if prices is None and warm is not None:
        prices = warm.get(types)
        if prices is not None:
            t_hint = warm.t / (gam * mu)
    solves, pivots = 0, 0
    capped = np.isfinite(d).any()
    guess = prices is None or np.shape(prices) != (k,) or not np.isfinite(prices).all()
    how = "given"
    if guess or (capped and not np.isfinite(t_hint)):
        got = _guess(policy, C, m, s, d, equal, delta)
        if got is None:
            return None
        p, t_hint, pivots, solves, delta_g, how_g, pin = got
        if guess:
            delta, how = delta_g, how_g
        if pin is not None:
            return _finish_pinned(pin, k, gam, mu, warm, types, solves, pivots, how_g)
    if not guess:
        p = np.maximum(np.asarray(prices, dtype=float) / gam, 0.0)
    if capped:
        t_hint = min(t_hint, float((d * C.max(axis=1)).min()))  # no row can exceed d_l max_j C_lj
        if not (p > 0).any() and _spread(p, t_hint, C, m, s, d) > 1.0:
            # every price 0: t is pinned by a cap (t = min_l d_l max_j C_lj) and any allocation that reaches
            # it is optimal; rows that do not fit on their fastest types get prices that balance the loads
            p = _balance(np.ones(k), C, m, s)
            if (n >= IPM_MIN_ROWS and FIRST_PRICES != "sample" and _spread(p, t_hint, C, m, s, d) > SPREAD
                    and _near_share(p, t_hint, C, s, d, delta) > IPM_NEAR):  # fmt: skip
                # tatonnement fails where many rows are near a tie (their loads jump together): the
                # interior point reaches the pinned t with a mix of types per row that fits (_pinned)
                ip, pin = _ipm_guess(policy, C, m, s, d, equal)
                if pin is not None:
                    return _finish_pinned(pin, k, gam, mu, warm, types, solves + 1, pivots, "ipm-pinned")
                if ip is not None and (ip.prices > 0).any():
                    p, delta, how = ip.prices, IPM_DELTA, "ipm"
    u, v, clear, near = _patterns(p, C, s, d, t_hint, delta)
    free = ~clear
    rows = np.arange(n)
    lp: _Reduced | None = None
    own = warm is not None and ids is not None
    if kept:  # continue last round's program: rows still present, unchanged and near a tie stay free
        lp, warm.model = warm.model, None  # given back when this round's solve succeeds
        old_of = warm.where(ids)
        seen = np.flatnonzero(old_of >= 0)
        was = old_of[seen]
        same = (lp.thr_row[was] >= 0) & (lp.C[was] == C[seen]).all(axis=1)
        same &= (lp.s[was] == s[seen]) & (lp.d[was] == d[seen])
        stay = same & ~_patterns(p, C[seen], s[seen], d[seen], t_hint, 1.5 * delta)[2]
        old_of = np.full(n, -1, dtype=np.int64)
        old_of[seen[stay]] = was[stay]
        lp.remap(old_of, C, m, s, d)
        free |= lp.thr_row >= 0
    if lp is None:
        lp = _Reduced(policy, C, m, s, d, equal, own=own)
        lp.units = (gam, mu)
    new = free & (lp.thr_row < 0)
    priced = 0
    while True:
        if free.sum() > max_free * n:
            return None
        lp.free(rows[new], near[new])
        fixed = ~free
        fr, fu, fv = rows[fixed], u[fixed], v[fixed]
        g, h, lo, hi = _fold(C[fr], s[fr], d[fr], fu, fv, k)
        tmax = float(hi.min()) if hi.size else np.inf
        lp.fold(g, h, tmax)
        while True:  # price the free rows' missing columns in
            got = lp.solve(n)
            if got is None:
                break
            x, t, p = got
            more = lp.priced_out(rows[free])
            if more[0].size == 0:
                break
            lp.add_columns(*more)
            priced += more[0].size
        if got is None:  # infeasible: the fixed two-type rows' patterns were far off (single rows fit at t = 0)
            if not (fv >= 0).any():
                return None
            new = np.zeros(n, dtype=bool)
            new[fr[fv >= 0]] = True
            near[new] = C[new] > 0
            free |= new
            continue
        bad = _certify(p, t, C[fr], s[fr], fu, fv, lo, hi, tmax)
        if not bad.any():
            break
        nr = fr[bad]
        u2, v2, _, near2 = _patterns(p, C[nr], s[nr], d[nr], t, delta)
        near2[np.arange(nr.size), u2] = True
        near2[np.arange(nr.size), u[nr]] = True
        pv = v[nr] >= 0
        near2[np.flatnonzero(pv), v[nr][pv]] = True
        near[nr] = near2 & (C[nr] > 0)
        new = np.zeros(n, dtype=bool)
        new[nr] = True
        free |= new
    if POLISH:
        _polish(x, t, C, d, rows[free])
    single, pair = fv < 0, fv >= 0
    x[fr[single], fu[single]] = t / C[fr[single], fu[single]]
    if pair.any():
        fp, up, vp = fr[pair], fu[pair], fv[pair]
        cu, cv, dp = C[fp, up], C[fp, vp], d[fp]
        x[fp, up] = np.maximum((cv * dp - t) / (cv - cu), 0.0)
        x[fp, vp] = np.maximum((t - cu * dp) / (cv - cu), 0.0)
    if warm is not None:
        warm.put(types, p * gam, t * gam * mu)
        if ids is not None:
            warm.model = lp
            warm.keep_ids(ids)
    info = {"decomposition_solves": solves + lp.solves, "free_rows": int(free.sum()),
            "split_rows": int(pair.sum()), "priced_columns": priced,
            "simplex_iterations": pivots + lp.iterations, "kept_program": kept, "first_prices": how,
            "delta": delta}  # fmt: skip
    return MaxMinSolution(x * mu, t * gam * mu, p * gam, info)


def _finish_pinned(
    pin: tuple[np.ndarray, float, int], k: int, gam: float, mu: float, warm: PriceWarmStart | None, types: bytes,
    solves: int, pivots: int, how: str,
) -> MaxMinSolution:  # fmt: skip
    """The :class:`MaxMinSolution` of a :func:`_pinned` solution (prices 0) in the caller's units."""
    x, t, nfree = pin
    if warm is not None:
        warm.put(types, np.zeros(k), t * gam * mu)
    info = {"decomposition_solves": solves, "free_rows": nfree, "split_rows": 0, "priced_columns": 0,
            "simplex_iterations": pivots, "kept_program": False, "first_prices": how, "delta": 0.0}  # fmt: skip
    return MaxMinSolution(x * mu, t * gam * mu, np.zeros(k), info)


def solve_maxmin_live(
    C: np.ndarray, m: np.ndarray, s: np.ndarray | None = None, d: np.ndarray | None = None, *, policy: str
) -> tuple[np.ndarray, float, dict[str, Any]] | None:
    """:func:`solve_maxmin` on the GPU types with ``m_j > 0`` and the rows with a positive cap (a row
    capped at 0 gets nothing; its ``C`` row is not read): the (n, k) allocation with zeros elsewhere,
    ``t`` and the solve's ``info``, or ``None`` when the decomposition does not apply or gives up."""
    n, k = C.shape
    live = np.ones(n, dtype=bool) if d is None else np.asarray(d) > 0
    act = np.asarray(m) > 0
    sol = solve_maxmin(C[np.ix_(live, act)], np.asarray(m, dtype=float)[act], None if s is None else s[live],
                       None if d is None else d[live], policy=policy)  # fmt: skip
    if sol is None:
        return None
    x = np.zeros((n, k))
    x[np.ix_(live, act)] = sol.x
    return x, sol.t, sol.info
