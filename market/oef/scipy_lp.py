"""Solving a :class:`~marketsim.market.oef.programs.LinearProgram` with ``scipy.optimize.linprog`` (HiGHS).

The auxiliary programs (Gavel, max-throughput, SI-constrained, PE gap, and OEF's two programs with
a solver other than the default) go through :func:`solve` (default dual simplex ``"highs-ds"``, so
solutions are vertices); :func:`solve_rows` solves one on the GPU types with capacity only, in
scaled variables; :func:`choose_solver` resolves ``solver="auto"`` by size.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from marketsim.market.errors import SolveError
from marketsim.market.oef.programs import LinearProgram, expand_from_active, reduce_to_active

__all__ = ["AUTO_IPM_NONZEROS", "choose_solver", "solve", "solve_rows"]

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

    Raises :class:`marketsim.market.errors.SolveError` on any non-optimal status.
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


def solve_rows(
    policy: str,
    build: Any,
    W: np.ndarray,
    m: np.ndarray,
    solver: str = "highs-ds",
) -> tuple[np.ndarray, np.ndarray, float, dict[str, int], float]:
    """Build and solve a row-major program on the types with ``m_j > 0`` only, in scaled variables
    (:func:`~marketsim.market.oef.programs.column_scale`); return ``(X (R, k), extra variables, seconds, sizes,
    objective of the min problem)``. ``build(W_active_scaled, m_active_scaled)`` returns a :class:`LinearProgram`.
    Columns of zero-capacity types are exactly 0 in ``X``."""
    R, k = W.shape
    t0 = time.perf_counter()
    active, Wa, ma, s = reduce_to_active(W, m)
    lp = build(Wa, ma)
    x, fun, _ = solve(policy, lp, solver)
    dt = time.perf_counter() - t0
    ka = int(active.sum())
    return expand_from_active(x, R, k, active, s), x[R * ka :], dt, lp.sizes, fun
