"""Exact max-min LPs at scale by price decomposition (per-round allocators with many jobs).

The per-round programs of ``gavel``, ``gavel-max-min-perf`` and ``oef-noncoop`` (LP (9)) share one
form, over ``n`` rows (jobs or tenants) and ``k`` GPU types::

    (P)  max t   s.t.  C_l . x_l >= t    (``== t`` for LP (9))      for every row l
                       sum_l s_l x_lj <= m_j                          for every type j
                       sum_j x_lj <= d_l                              for every row l
                       x >= 0,   x_lj = 0 where C_lj = 0

(``C`` the row's normalised throughputs, per-row targets or weights already divided in; ``s`` scale
factors; ``d`` time or device caps, ``inf`` for none; ``m_j > 0``.) ``k`` is small (3 in Gavel's
tables, 10 in OEF's evaluation) and ``n`` large, and at an optimum almost every row is served by one
type: the one where its throughput is cheapest at the capacity prices ``p`` (the duals of the
capacity rows), ``a_l = argmin_j p_j / C_lj``. Only rows near a tie between types, or held by their
cap, need the LP. :func:`solve_maxmin` therefore

1. guesses prices (given ones, e.g. the previous round's, or the duals of the same program on a
   deterministic sample of rows with proportionally scaled capacities);
2. *fixes* every row whose cheapest type is clear (second-cheapest more than ``delta`` dearer) and
   whose cap cannot bind, to ``x_{l,a_l} = t / C_{l,a_l}``; fixed rows then enter the program only
   through one coefficient per capacity row, ``g_j t`` with ``g_j = sum_{fixed on j} s_l / C_lj``, and
   the bound ``t <= min d_l C_{l,a_l}``;
3. solves that reduced program (the other rows in full, ``k`` capacity rows, one HiGHS dual simplex
   solve of a few dozen rows) for ``t``, the free rows' ``x`` and new prices ``p``;
4. certifies the result against the full program: with ``y_l = s_l p_{a_l} / C_{l,a_l}`` for every
   fixed row, the reduced program's duals extend to a feasible dual of (P) with equal objective iff
   every fixed row's type is still cheapest, ``p_{a_l} / C_{l,a_l} <= p_j / C_lj`` for all ``j``,
   and the bound on ``t`` is slack (complementary slackness: the fixed rows' throughput rows are
   tight, their caps slack). Rows that fail join the free set and step 3 repeats (the free set only
   grows, so the loop ends).

The returned ``x`` is therefore an optimal solution of (P) itself, certified by LP duality with
relative tolerance ``1e-9``; ``t`` equals the full program's optimum. When the free set would exceed
``max_free`` of the rows the decomposition gives up (returns ``None``) and the caller solves the full
program. The solution is a vertex of (P) (the reduced program's vertex with one basic column per fixed
row) but, where (P) has several optimal vertices, not necessarily the one a simplex solve of the full
program would return. ``tests/test_maxmin_decomposition.py`` checks optimum and certificate against
full solves, and that a wrong price guess is repaired.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np

from market.errors import SolveError

__all__ = ["MaxMinSolution", "PriceWarmStart", "solve_maxmin", "DECOMPOSE_MIN_ROWS"]

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
    when rows carry ids, the optimal basis per row id (which of its ``k`` columns are basic) and of
    the capacity rows, from which the reduced program's dual simplex restarts. ``types`` guards the
    set of GPU types both belong to."""

    def __init__(self) -> None:
        self.prices: np.ndarray | None = None
        self.types: bytes | None = None
        self.index: dict[Any, int] = {}
        self.pos = np.zeros((0, 0), dtype=bool)
        self.cap = np.zeros(0, dtype=bool)

    def get(self, types: bytes) -> np.ndarray | None:
        """The stored prices if they belong to ``types``."""
        return self.prices if self.prices is not None and self.types == types else None

    def put(self, types: bytes, prices: np.ndarray) -> None:
        """Keep ``prices`` for ``types`` (and forget any basis)."""
        self.prices, self.types = np.asarray(prices, dtype=float).copy(), types
        self.index = {}

    def where(self, ids: list[Any]) -> np.ndarray:
        """Each id's row in the stored basis (-1: not stored)."""
        get = self.index.get
        return np.fromiter((get(i, -1) for i in ids), dtype=np.int64, count=len(ids))


def _highs() -> highspy.Highs:
    """A per-thread, silent, deterministic HiGHS instance (dual simplex, no presolve: the reduced
    programs are small and their duals are read directly)."""
    h = getattr(_LOCAL, "h", None)
    if h is None:
        from market.milp import new_highs

        h = new_highs()
        _LOCAL.h = h
    else:
        h.clearModel()
    h.resetOptions()
    for name, value in (("output_flag", False), ("solver", "simplex"), ("simplex_strategy", 1),
                        ("presolve", "off"), ("random_seed", 0), ("threads", 1)):  # fmt: skip
        h.setOptionValue(name, value)
    return h


class _Reduced:
    """(P) over the free rows, with the fixed rows folded into ``g_j t`` (capacity rows) and
    ``t <= tmax``, kept in one HiGHS model that grows: :meth:`free` adds rows (their throughput and
    cap rows and some of their columns), :meth:`add_columns` more columns, :meth:`fold` rewrites ``g``
    and ``tmax``, and every :meth:`solve` continues the dual simplex from the previous basis.
    Column 0 is ``t``; ``inmodel[l, j]`` says which ``x`` columns the model holds."""

    def __init__(self, policy: str, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool) -> None:
        self.policy, self.C, self.s, self.d, self.equal = policy, C, s, d, equal
        n, self.k = C.shape
        self.h = h = _highs()
        h.addCol(-1.0, 0.0, np.inf, 0, np.zeros(0, dtype=np.int32), np.zeros(0))
        empty = np.zeros(0, dtype=np.int32)
        h.addRows(self.k, np.full(self.k, -np.inf), np.asarray(m, dtype=float), 0, empty, empty, np.zeros(0))
        self.g = np.zeros(self.k)
        self.n_rows = self.k
        self.thr_row = np.full(n, -1, dtype=np.int64)  # model row of each free row's throughput constraint
        self.cap_row = np.full(n, -1, dtype=np.int64)  # ... and of its cap (-1: none)
        self.inmodel = np.zeros((n, self.k), dtype=bool)
        self.col_row = np.zeros(0, dtype=np.int64)  # input row of each x column (columns 1..)
        self.col_type = np.zeros(0, dtype=np.int64)
        self.iterations = 0
        self.solves = 0
        self.row_dual = np.zeros(0)

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
        self.n_rows = base + f + n_cap
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

    def set_basis(self, pos: np.ndarray, new: np.ndarray, cap: np.ndarray) -> bool:
        """Start from a basis: ``x`` columns basic where ``pos`` ((n, k) bool), the throughput rows of
        ``new`` rows ((n,) bool) basic (nothing allocated yet), capacity rows basic where ``cap``,
        ``t`` and the cap rows basic. Capacity rows are made basic while basic variables are missing;
        returns whether HiGHS accepted the basis (else the solve starts from scratch)."""
        col = np.concatenate([[True], pos[self.col_row, self.col_type]])
        row = np.zeros(self.n_rows, dtype=bool)
        row[: self.k] = cap
        fr = np.flatnonzero(self.thr_row >= 0)
        row[self.thr_row[fr]] = new[fr]
        row[self.cap_row[self.cap_row >= 0]] = True
        deficit = self.n_rows - int(col.sum()) - int(row.sum())
        if deficit < 0:
            return False
        row[np.flatnonzero(~row[: self.k])[:deficit]] = True
        if self.n_rows != int(col.sum()) + int(row.sum()):
            return False
        S = highspy.HighsBasisStatus
        b = highspy.HighsBasis()
        b.col_status = [S.kBasic if v else S.kLower for v in col.tolist()]
        status = [S.kBasic if v else S.kLower for v in row.tolist()]
        for j in np.flatnonzero(~row[: self.k]).tolist():
            status[j] = S.kUpper
        b.row_status = status
        b.valid = True
        return self.h.setBasis(b) == highspy.HighsStatus.kOk

    def basis(self) -> tuple[np.ndarray, np.ndarray]:
        """The last solve's basic ``x`` columns (per model column, (columns,) bool) and basic capacity rows."""
        b = self.h.getBasis()
        basic = highspy.HighsBasisStatus.kBasic
        col = np.array([v == basic for v in b.col_status[1:]], dtype=bool)
        cap = np.array([v == basic for v in b.row_status[: self.k]], dtype=bool)
        return col, cap

    def fold(self, g: np.ndarray, tmax: float) -> None:
        """The fixed rows' capacity per unit of ``t`` (``g``, (k,)) and their bound on ``t``."""
        for j in np.flatnonzero(g != self.g).tolist():
            self.h.changeCoeff(j, 0, float(g[j]))
        self.g = g.copy()
        self.h.changeColBounds(0, 0.0, tmax)

    def solve(self, n: int) -> tuple[np.ndarray, float, np.ndarray]:
        """Solve from the current basis: (x (n, k) on the free rows' entries, t, capacity prices p)."""
        h = self.h
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
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


def _cheapest(p: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``p_j / C_lj`` per row and type (``inf`` where ``C_lj = 0``): price of one unit of ``t``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(C > 0, p[None, :] / np.where(C > 0, C, 1.0), np.inf)


def _assign(p: np.ndarray, C: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cheapest type at prices ``p`` (ties, e.g. between unpriced types, go to the type
    where the row is fastest) and whether its two cheapest priced types are within ``delta``."""
    n, k = C.shape
    R = _cheapest(p, C)
    best = R.min(axis=1)
    tied = R <= best[:, None] * (1.0 + _TOL)
    a = np.argmax(np.where(tied, C, -1.0), axis=1)
    if k == 1:
        return a, np.zeros(n, dtype=bool)
    second = np.partition(R, 1, axis=1)[:, 1]
    return a, (best > 0) & (second <= best * (1.0 + delta))


def _near(p: np.ndarray, C: np.ndarray, a: np.ndarray, delta: float) -> np.ndarray:
    """(rows, k) mask of the columns a free row starts with: its types within ``delta`` of its
    cheapest at prices ``p``, and its assigned type ``a``."""
    R = _cheapest(p, C)
    cols = R <= R.min(axis=1, keepdims=True) * (1.0 + delta)
    cols[np.arange(C.shape[0]), a] = True
    return cols & (C > 0)


def _sample_prices(
    policy: str, C: np.ndarray, m: np.ndarray, s: np.ndarray, d: np.ndarray, equal: bool, size: int
) -> tuple[np.ndarray, float, int]:
    """Prices, ``t`` and simplex iterations of (P) on ``size`` rows drawn by a fixed-seed permutation, capacities scaled
    by the sample's share of the scale factors (a deterministic first guess)."""
    n = C.shape[0]
    rows = np.sort(np.random.default_rng(0).permutation(n)[:size])
    share = float(s[rows].sum() / s.sum())
    lp = _Reduced(policy, C, m * share, s, d, equal)
    lp.free(rows, C[rows] > 0)
    _, t, p = lp.solve(n)
    return p, t, lp.iterations


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
    one hashable id per row, the basis; updated after the solve); ``delta``: rows whose two cheapest
    types are within this relative margin start free, with the types within it of their cheapest."""
    C = np.asarray(C, dtype=float)
    n, k = C.shape
    m = np.asarray(m, dtype=float)
    s = np.ones(n) if s is None else np.asarray(s, dtype=float)
    d = np.full(n, np.inf) if d is None else np.asarray(d, dtype=float)
    if n < DECOMPOSE_MIN_ROWS or (m <= 0).any() or (d <= 0).any() or not (C > 0).any(axis=1).all():
        return None
    if prices is None and warm is not None:
        prices = warm.get(types)
    solves, pivots, t_hint = 0, 0, np.inf
    if prices is None or np.shape(prices) != (k,) or not np.isfinite(prices).all():
        p, t_hint, pivots = _sample_prices(policy, C, m, s, d, equal, max(4 * k, min(n // 8, 128)))
        solves = 1
    else:
        p = np.maximum(np.asarray(prices, dtype=float), 0.0)
    a, free = _assign(p, C, delta)
    every = np.zeros(n, dtype=bool)  # free rows that start with all their columns (their cap may bind)
    if np.isfinite(d).any():
        # rows whose cap may bind: t <= min_l d_l max_j C_lj (each row alone at its cap on its best type)
        t_upper = float((d * C.max(axis=1)).min())
        every = d * C[np.arange(n), a] <= min(t_upper, t_hint) * (1.0 + delta)
        free |= every
    rows = np.arange(n)
    start_pos: np.ndarray | None = None  # the stored basis mapped onto this round's rows
    if warm is not None and ids is not None and warm.index and warm.types == types and prices is not None:
        where = warm.where(ids)
        start_pos = np.where((where >= 0)[:, None], warm.pos[np.maximum(where, 0)], False)
        seen = where >= 0
    lp = _Reduced(policy, C, m, s, d, equal)
    new = free.copy()
    warm_basis = False
    while True:
        if free.sum() > max_free * n:
            return None
        nr = rows[new]
        cols = np.where(every[nr, None], C[nr] > 0, _near(p, C[nr], a[nr], delta))
        if start_pos is not None and lp.solves == 0:
            cols |= start_pos[nr] & (C[nr] > 0)
        lp.free(nr, cols)
        fixed = ~free
        fr, fa = rows[fixed], a[fixed]
        cf = C[fr, fa]
        bound = d[fr] * cf
        tmax = float(bound.min()) if bound.size else np.inf
        lp.fold(np.bincount(fa, weights=s[fr] / cf, minlength=k), tmax)
        if start_pos is not None and lp.solves == 0:
            warm_basis = lp.set_basis(start_pos, ~seen, warm.cap)
        while True:  # price the free rows' missing columns in
            x, t, p = lp.solve(n)
            more = lp.priced_out(rows[free])
            if more[0].size == 0:
                break
            lp.add_columns(*more)
        R = _cheapest(p, C[fr])
        cur = R[np.arange(fr.size), fa]
        cheapest = R.min(axis=1)
        scale = float(cur.max()) if cur.size else 0.0
        bad = cur > cheapest * (1.0 + _TOL) + _TOL * scale
        if np.isfinite(tmax) and t >= tmax * (1.0 - _TOL):
            bad |= bound <= t * (1.0 + _TOL)
            every[fr[bad]] = True
        if not bad.any():
            break
        new = np.zeros(n, dtype=bool)
        new[fr[bad]] = True
        free |= new
    x[fr, fa] = t / cf
    if warm is not None:
        warm.put(types, p)
        if ids is not None:
            col, cap = lp.basis()
            pos = np.zeros((n, k), dtype=bool)
            pos[fr, fa] = True
            pos[lp.col_row, lp.col_type] = col
            warm.index = {i: r for r, i in enumerate(ids)}
            warm.pos, warm.cap = pos, cap
    info = {"decomposition_solves": solves + lp.solves, "free_rows": int(free.sum()),
            "simplex_iterations": pivots + lp.iterations, "warm_basis": warm_basis}  # fmt: skip
    return MaxMinSolution(x, t, p, info)
