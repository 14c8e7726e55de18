"""Offline-optimum helpers shared by the OASiS and PD-ORS MILPs (HiGHS via scipy.optimize.milp)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint

from marketsim.market.auction.base import Schedule
from marketsim.market.errors import InputError, SolveError, check_nonneg, check_positive
from marketsim.market.milp import milp

__all__ = ["OfflineResult", "RowBuilder", "solve_milp", "competitive_ratio"]


@dataclass(frozen=True)
class OfflineResult:
    """Offline optimum: ``welfare`` (incumbent total utility), ``bound`` (dual bound, ``>= welfare``),
    ``optimal`` (status 0 with the gap closed), per-job ``schedules`` of admitted jobs, runtime.

    :param welfare: the incumbent's total utility, currency
    :param bound: the dual bound (>= ``welfare``)
    :param optimal: whether the gap was closed
    :param status: HiGHS model status
    :param message: HiGHS status message
    :param seconds: solve time, s
    :param schedules: job id -> schedule of each admitted job
    :param n_vars: MILP variables
    :param n_rows: MILP rows
    """

    welfare: float
    bound: float
    optimal: bool
    status: int
    message: str
    seconds: float
    schedules: dict[int, Schedule] = field(default_factory=dict)
    n_vars: int = 0
    n_rows: int = 0

    def ratio_interval(self, online_welfare: float) -> tuple[float, float]:
        """``[incumbent/ALG, bound/ALG]`` (equal when optimal).

        :param online_welfare: the online mechanism's welfare ALG
        :returns: ``(low, high)`` bounds on OPT/ALG
        """
        return competitive_ratio(self.welfare, online_welfare), competitive_ratio(self.bound, online_welfare)


class RowBuilder:
    """Accumulates sparse constraint rows ``lb <= Σ coef·x <= ub``."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lb: list[float] = []
        self.ub: list[float] = []

    def add(self, cols, vals, lb: float = -np.inf, ub: float = np.inf) -> None:
        r = len(self.lb)
        cols = list(cols)
        vals = list(vals) if np.ndim(vals) else [float(vals)] * len(cols)
        self.rows.extend([r] * len(cols))
        self.cols.extend(cols)
        self.vals.extend(vals)
        self.lb.append(lb)
        self.ub.append(ub)

    def constraint(self, n: int) -> LinearConstraint:
        A = sparse.csr_array((self.vals, (self.rows, self.cols)), shape=(len(self.lb), n))
        return LinearConstraint(A, np.array(self.lb), np.array(self.ub))


def solve_milp(
    c: np.ndarray,
    rows: RowBuilder,
    lb: np.ndarray,
    ub: np.ndarray,
    integrality: np.ndarray,
    time_limit: float,
    mip_rel_gap: float,
    name: str,
    node_limit: int | None = None,
) -> tuple[np.ndarray | None, float, float, bool, int, str, float]:
    """Maximise ``c·x`` (HiGHS). Returns ``(x, incumbent, bound, optimal, status, message, seconds)``;
    ``x`` is ``None`` if no incumbent was found. Integer outputs are rounded with ``np.rint``.
    ``node_limit`` caps the branch-and-bound nodes (a deterministic work limit, unlike the time
    limit; a solve stopped by it is not ``optimal``).

    :param c: (n,) objective (maximised)
    :param rows: the constraint rows
    :param lb: (n,) lower bounds
    :param ub: (n,) upper bounds
    :param integrality: (n,) 1 for integer variables, 0 for continuous
    :param time_limit: seconds, > 0
    :param mip_rel_gap: relative gap at which HiGHS stops
    :param name: the model's name in messages
    :param node_limit: most branch-and-bound nodes, or ``None``
    :returns: ``(x, incumbent, bound, optimal, status, message, seconds)``
    """
    check_positive("time_limit", time_limit)
    check_nonneg("mip_rel_gap", mip_rel_gap)
    t0 = time.perf_counter()
    res = milp(
        -np.asarray(c, dtype=float),
        integrality=integrality,
        bounds=Bounds(lb, ub),
        constraints=rows.constraint(len(c)) if rows.lb else None,
        options={"time_limit": float(time_limit), "mip_rel_gap": float(mip_rel_gap), "presolve": True,
                 **({} if node_limit is None else {"mip_max_nodes": int(node_limit)})},
    )
    secs = time.perf_counter() - t0
    if res.x is None:
        if res.status == 1:  # time limit without incumbent
            return None, 0.0, math.inf, False, int(res.status), str(res.message), secs
        raise SolveError(name, res.status, str(res.message))
    x = np.where(integrality > 0, np.rint(res.x), res.x)
    inc = float(np.dot(c, x))
    bound = -float(res.mip_dual_bound) if res.mip_dual_bound is not None else inc
    bound = max(bound, inc)
    return x, inc, bound, res.status == 0, int(res.status), str(res.message), secs


def competitive_ratio(opt_welfare: float, online_welfare: float) -> float:
    """Empirical competitive ratio ``OPT/ALG``; ``inf`` if ALG = 0 < OPT, 1 if both are 0.

    :param opt_welfare: OPT, >= 0
    :param online_welfare: ALG, >= 0
    :returns: OPT/ALG
    :raises InputError: a negative welfare
    """
    opt, alg = float(opt_welfare), float(online_welfare)
    if not (math.isfinite(opt) or opt == math.inf) or opt < -1e-9:
        raise InputError("opt_welfare", opt_welfare, "must be >= 0")
    if alg < -1e-9 or math.isnan(alg):
        raise InputError("online_welfare", online_welfare, "must be >= 0")
    if alg <= 1e-12:
        return 1.0 if opt <= 1e-12 else math.inf
    return opt / alg
