"""LP (10), cooperative OEF (A3 / A3'), by lazy generation of its envy-freeness rows.

:func:`solve_coop` solves LP (10) in one warm-started ``highspy`` model, adding violated EF rows
(:func:`ef_violations` on ``W X^T``) and deleting rows that stayed slack, and returns an optimal
vertex of the full program with all ``R(R-1)`` EF rows. :data:`PROGRESS` reports its rounds.
"""

from __future__ import annotations

import time
from typing import Any

import highspy
import numpy as np

from marketsim.market.oef.highs_model import highs_model_from_csc, solve_model
from marketsim.market.oef.programs import ef_csr, expand_from_active, reduce_to_active
from marketsim.market.oef.solution import ZERO_TOL

__all__ = ["PROGRESS", "row_envy", "ef_violations", "solve_coop"]

PROGRESS: Any = None
"""Optional ``callable(message: str)`` told about each constraint-generation round of the lazy
cooperative OEF solve (the CLI sets it to a stderr status line on long solves)."""


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
    speedup order of :func:`~marketsim.market.oef.staircase.staircase` (where LP (10)'s binding EF rows sit on ordered
    speedups); after every solve finds the violated EF rows of all ``R(R-1)`` pairs from ``W X^T`` (violation
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
    active, Wa, ma, s = reduce_to_active(W, m)
    ka = Wa.shape[1]
    n = R * ka
    om = None if omega is None else np.asarray(omega, dtype=float)
    h = highs_model_from_csc(
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
        start, index, value = ef_csr(Wa, om, L, I)
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
        x, obj = solve_model(policy, h)
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
    return expand_from_active(x, R, k, active, s), dt, info
