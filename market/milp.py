"""Mixed-integer programs on HiGHS through ``highspy``, with the call shape of ``scipy.optimize.milp``.

Why not ``scipy.optimize.milp``: the HiGHS build bundled with scipy 1.18.1 returned a suboptimal
solution with status "optimal" when its presolve was on (an OASiS offline instance: 7.981 where
the online schedule alone reaches 8.005; kept as ``tests/test_oasis_properties.py::
test_offline_optimum_not_below_online``), while the standalone ``highspy`` solves it right. Every
MILP of the project goes through :func:`milp`, so the solver is chosen in one place.

The result mirrors scipy's ``OptimizeResult`` fields that callers read: ``x`` (``None`` without an
incumbent), ``fun`` (minimised objective), ``status`` (0 optimal, 1 time or iteration limit, 2
infeasible, 3 unbounded, 4 other), ``message``, ``success``, ``mip_dual_bound`` and ``mip_gap``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import highspy
import numpy as np
from scipy import sparse

if TYPE_CHECKING:  # annotations only: scipy.optimize costs ~0.1 s to import, and trace runs need none of it
    from scipy.optimize import Bounds, LinearConstraint

__all__ = ["MilpResult", "milp", "new_highs", "run_interruptibly"]

_quiet = False


def run_interruptibly(h: highspy.Highs) -> None:
    """``h.run()`` that Ctrl-C can stop: the solve runs in HiGHS' worker thread while this thread
    polls every 0.1 s; a ``KeyboardInterrupt`` cancels the solve, waits for HiGHS to stop (a few
    milliseconds: it checks at every iteration) and is re-raised, so callers exit promptly.

    :param h: a HiGHS instance with its model passed
    """
    thread = h.startSolve()
    try:
        while not h.wait(0.1)[0]:
            pass
    except KeyboardInterrupt:
        h.cancelSolve()
        while True:
            try:
                if h.wait(0.1)[0]:
                    break
            except KeyboardInterrupt:
                continue
        raise
    finally:
        thread.join(timeout=1.0)


def new_highs() -> highspy.Highs:
    """A ``highspy.Highs`` with console output off.

    HiGHS prints its copyright banner on stdout (C level) when the first instance of a process is
    built; that would corrupt ``--json`` output, so the first construction runs with file
    descriptor 1 pointed at ``/dev/null``."""
    global _quiet
    if _quiet:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _quiet = True
    h.setOptionValue("output_flag", False)
    # HiGHS' task scheduler is process-global and fixed by the first run; an instance asking for a
    # different thread count later fails with status "Not Set". Every instance runs single-threaded.
    h.setOptionValue("threads", 1)
    return h


_OPTIONS = {"time_limit": float, "mip_rel_gap": float, "mip_abs_gap": float, "presolve": bool, "mip_max_nodes": int}

#: HiGHS' absolute MIP gap, set explicitly on every solve (HiGHS' own default): a MILP reported optimal
#: has ``bound >= OPT - max(MIP_ABS_GAP, mip_rel_gap * |bound|)``, so an optimum below this may read as 0.
MIP_ABS_GAP = 1e-6


@dataclass
class MilpResult:
    """Solution of :func:`milp` (scipy field names).

    :param x: the solution, ``None`` when there is none
    :param fun: the objective ``c @ x`` (``nan`` without a solution)
    :param status: 0 optimal, 1 a limit was reached, 2 infeasible, 3 unbounded, 4 other
    :param message: the solver's status text
    :param mip_dual_bound: the MIP's dual bound, ``None`` for a pure LP
    :param mip_gap: the MIP's relative gap, ``None`` for a pure LP
    """

    x: np.ndarray | None
    fun: float
    status: int
    message: str
    mip_dual_bound: float | None
    mip_gap: float | None

    @property
    def success(self) -> bool:
        return self.status == 0


def _status(ms: highspy.HighsModelStatus, has_x: bool) -> int:
    S = highspy.HighsModelStatus
    if ms == S.kOptimal:
        return 0
    if ms in (S.kTimeLimit, S.kIterationLimit, S.kSolutionLimit, S.kInterrupt):
        return 1
    if ms == S.kInfeasible:
        return 2
    if ms in (S.kUnbounded, S.kUnboundedOrInfeasible):
        return 3
    return 4


def milp(
    c: np.ndarray,
    *,
    integrality: np.ndarray | float | None = None,
    bounds: Bounds | None = None,
    constraints: LinearConstraint | None = None,
    options: Mapping[str, Any] | None = None,
) -> MilpResult:
    """Minimise ``c @ x`` subject to ``constraints.lb <= A x <= constraints.ub``, ``bounds`` and
    ``integrality`` (1 = integer, 0 = continuous; a scalar applies to every variable).

    ``options``: ``time_limit`` (s), ``mip_rel_gap``, ``mip_abs_gap`` (default :data:`MIP_ABS_GAP`),
    ``presolve`` (default on); ``disp`` is
    accepted and ignored (HiGHS output is always off).

    :param c: (n,) the costs
    :param integrality: (n,) or a scalar: 1 integer, 0 continuous; ``None``: all continuous
    :param bounds: variable bounds; ``None``: ``0 <= x < inf``
    :param constraints: the rows ``lb <= A x <= ub`` (dense or sparse ``A``); ``None``: none
    :param options: solver options (above)
    :returns: the solution and status, as :func:`scipy.optimize.milp` names them
    """
    c = np.asarray(c, dtype=float)
    n = c.size
    integ = np.broadcast_to(np.asarray(0 if integrality is None else integrality, dtype=float), (n,))
    if bounds is None:
        lo, hi = np.zeros(n), np.full(n, np.inf)
    else:
        lo = np.broadcast_to(np.asarray(bounds.lb, dtype=float), (n,))
        hi = np.broadcast_to(np.asarray(bounds.ub, dtype=float), (n,))
    if constraints is not None:
        A = (
            sparse.csc_array(constraints.A)
            if sparse.issparse(constraints.A)
            else sparse.csc_array(np.atleast_2d(np.asarray(constraints.A, dtype=float)))
        )
        m = A.shape[0]
        rlo = np.broadcast_to(np.asarray(constraints.lb, dtype=float), (m,))
        rhi = np.broadcast_to(np.asarray(constraints.ub, dtype=float), (m,))
    else:
        A, m = sparse.csc_array((0, n)), 0
        rlo = rhi = np.zeros(0)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = m
    lp.col_cost_ = c
    lp.col_lower_ = np.where(np.isneginf(lo), -inf, lo)
    lp.col_upper_ = np.where(np.isposinf(hi), inf, hi)
    lp.row_lower_ = np.where(np.isneginf(rlo), -inf, rlo)
    lp.row_upper_ = np.where(np.isposinf(rhi), inf, rhi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = m
    if (integ > 0).any():
        lp.integrality_ = [highspy.HighsVarType.kInteger if v > 0 else highspy.HighsVarType.kContinuous for v in integ]
    h = new_highs()
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_abs_gap", MIP_ABS_GAP)
    for key, val in (options or {}).items():
        if key == "disp":
            continue
        if key not in _OPTIONS:
            raise ValueError(f"milp option {key!r} is not one of {sorted(_OPTIONS)}")
        if key == "presolve":
            h.setOptionValue("presolve", "on" if val else "off")
        else:
            h.setOptionValue(key, _OPTIONS[key](val))
    h.passModel(lp)
    run_interruptibly(h)
    ms = h.getModelStatus()
    info = h.getInfo()
    sol = h.getSolution()
    has_x = info.primal_solution_status == 2 and sol.value_valid  # kSolutionStatusFeasible
    x = np.array(sol.col_value, dtype=float) if has_x else None
    is_mip = (integ > 0).any()
    bound = float(info.mip_dual_bound) if is_mip else (float(info.objective_function_value) if has_x else None)
    gap = float(info.mip_gap) if is_mip else 0.0
    status = _status(ms, has_x)
    return MilpResult(
        x=x,
        fun=float(info.objective_function_value) if has_x else float("nan"),
        status=status,
        message=f"HiGHS {h.modelStatusToString(ms)}",
        mip_dual_bound=bound if bound is not None and np.isfinite(bound) else None,
        mip_gap=gap,
    )
