"""LP (9), non-cooperative OEF (compact A2 / A2'), on the fast paths of the default solver.

:func:`solve_noncoop` returns the :func:`~marketsim.market.oef.staircase.staircase` vertex when its dual
certificate proves it optimal (always on ordered speedups), else starts HiGHS's primal simplex from
its (feasible) basis, or solves by price decomposition (:mod:`marketsim.market.oef.maxmin`) on large programs;
:class:`NoncoopWarmStart` carries a round's basis (and the decomposition's state) to the next round.
Every path returns an optimal vertex of the full program.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import highspy
import numpy as np

from marketsim.market.oef.highs_model import highs_model_from_csc, solve_model
from marketsim.market.oef.maxmin import DECOMPOSE_MIN_ROWS, PriceWarmStart, solve_maxmin
from marketsim.market.oef.programs import expand_from_active, noncoop_csc, reduce_to_active
from marketsim.market.oef.staircase import Staircase, staircase

__all__ = ["COLD_DECOMPOSE_ROWS_PER_TYPE", "NoncoopWarmStart", "solve_noncoop"]

_LOCAL = threading.local()
REUSE_HIGHS = True
"""Cold solves reuse one HiGHS instance per thread (cleared, options reset: the same solve as a new
instance's; building one costs about as much as solving a small program)."""

COLD_DECOMPOSE_ROWS_PER_TYPE = 100
"""``oef-noncoop`` without a warm start solves LP (9) by price decomposition (:mod:`marketsim.market.oef.maxmin`)
when the staircase certificate fails and it has at least this many rows per GPU type; below it the
staircase-crashed simplex is faster, the decomposition freeing most rows (both paths side by side:
``benchmarks/bench_round_lp.py``, section "oef-noncoop cold")."""


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
        # the price decomposition's warm start (marketsim.market.oef.maxmin): its capacity prices and its reduced
        # HiGHS program, continued by the next round on the decomposition path
        self.decomposition = PriceWarmStart()

    def basis(self, ids: list[Any], k: int, types: bytes) -> highspy.HighsBasis | None:
        """The stored basis mapped onto rows ``ids`` with ``k`` active types, or ``None``.

        :param ids: the row ids of this round, one per LP row
        :param k: number of GPU types with capacity
        :param types: the active GPU types' signature (bytes)
        :returns: a HiGHS basis for this round's model, or ``None`` when the stored one does not fit
        """
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
        whether that is a complete basis (a nondegenerate vertex); if not, nothing is kept.

        :param ids: the row ids of the solved round
        :param k: number of active GPU types
        :param types: the active GPU types' signature (bytes)
        :param x: the optimal vertex, (R·k + 1,)
        :param m: (k,) GPUs per active type
        :returns: whether a complete basis was kept
        """
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
    active, Wa, ma, s = reduce_to_active(W, m)
    ka = Wa.shape[1]
    types = active.tobytes()
    sizes = {"variables": R * ka + 1, "ineq_rows": ka, "eq_rows": R, "nonzeros": 2 * R * ka + R}
    keep = warm is not None and ids is not None and solver == "highs-ds"
    from_prices = keep and R >= DECOMPOSE_MIN_ROWS and warm.decomposition.get(types) is not None

    def start() -> tuple[highspy.HighsBasis | None, Staircase | None]:
        # a stored basis replaces the staircase (its certificate holds on ordered speedups only)
        b = warm.basis(ids, ka, types) if keep else None
        return b, (staircase(Wa, ma, omega) if solver == "highs-ds" and b is None else None)

    basis, st = (None, None) if from_prices else start()
    if from_prices or (st is not None and not st.optimal and R >= COLD_DECOMPOSE_ROWS_PER_TYPE * ka):
        # price decomposition (marketsim.market.oef.maxmin, exact): from the previous round's prices and
        # program, or cold on a large program the staircase does not solve
        C = Wa if omega is None else Wa / np.asarray(omega, dtype=float)[:, None]  # weights divided in
        sol = solve_maxmin(C, ma, equal=True, warm=warm.decomposition if keep else None, ids=ids if keep else None,
                           types=types, policy=policy)  # fmt: skip
        if sol is not None:
            x = np.append(sol.x.ravel(), sol.t)
            if keep:
                warm.rounds += 1
                warm.warm_rounds += int(from_prices)
                # the full program's basis is not kept on this path (warm.decomposition holds the program)
                warm.cap = None
            info = {"noncoop_path": "decomposition", **sol.info}
            if keep:
                info["warm_start"] = from_prices
            return expand_from_active(x, R, k, active, s), sol.t, time.perf_counter() - t0, sizes, info
        if from_prices:
            basis, st = start()
    if st is not None and st.optimal:
        x = np.append(st.matrix(R, ka).ravel(), st.t)
        info: dict[str, Any] = {"noncoop_path": "staircase", "simplex_iterations": 0}
        if keep:
            warm.rounds += 1
            warm.store(ids, ka, types, x, ma)
            warm.decomposition.put(types, st.prices)
    else:
        reuse = warm.highs if keep else getattr(_LOCAL, "highs", None)
        h = highs_model_from_csc(*noncoop_csc(Wa, ma, omega), solver=solver, h=reuse)
        if keep:
            warm.highs = h
        elif REUSE_HIGHS:
            _LOCAL.highs = h  # this thread's instance for the next cold solve (cleared and reset first)
        used = basis is not None and h.setBasis(basis) == highspy.HighsStatus.kOk
        crash = False
        if not used:
            crash = st is not None and _set_basis(h, np.append(st.columns(ka), R * ka), R * ka + 1, ka, R)
            if crash:  # the staircase basis is primal feasible: continue with primal simplex
                h.setOptionValue("simplex_strategy", 4)
        x, _ = solve_model(policy, h)
        iterations = int(h.getInfo().simplex_iteration_count)
        info = {"noncoop_path": "highs", "staircase_crash": bool(crash), "simplex_iterations": iterations}
        if keep:
            warm.rounds += 1
            warm.warm_rounds += int(used)
            info["warm_start"] = bool(used)
            warm.store(ids, ka, types, x, ma)
            warm.decomposition.put(types, -np.asarray(h.getSolution().row_dual, dtype=float)[:ka])
    dt = time.perf_counter() - t0
    return expand_from_active(x, R, k, active, s), float(x[-1]), dt, sizes, info
