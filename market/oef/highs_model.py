"""OEF's programs on ``highspy`` directly (no scipy wrapper): a model from CSC arrays set up like
scipy's HiGHS methods (:func:`highs_model_from_csc`), and its solve (:func:`solve_model`), used by
:mod:`marketsim.market.oef.noncoop_lp` and :mod:`marketsim.market.oef.coop_lp` with the default solver ``"highs-ds"``.
"""

from __future__ import annotations

import highspy
import numpy as np

from marketsim.market.errors import SolveError
from marketsim.market.milp import new_highs
from marketsim.market.oef.scipy_lp import choose_solver

__all__ = ["highs_model_from_csc", "solve_model"]

_EMPTY_I = np.zeros(0, dtype=np.int32)
_HIGHS_SOLVER = {"highs-ds": "simplex", "highs-ipm": "ipm", "highs": "choose"}


def highs_model_from_csc(
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


# LPs with at most this many nonzeros solve in milliseconds: they run in this thread (Ctrl-C lands
# right after), skipping the solver thread's start and polling, a large share of a small solve
_DIRECT_NNZ = 5000


def solve_model(policy: str, h: highspy.Highs) -> tuple[np.ndarray, float]:
    """Solve ``h`` (a large one so that Ctrl-C cancels it: :func:`marketsim.market.milp.run_interruptibly`);
    its column values and min-problem objective, or :class:`SolveError`."""
    from marketsim.market.milp import run_interruptibly

    if h.getNumNz() <= _DIRECT_NNZ:
        h.run()
    else:
        run_interruptibly(h)
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolveError(policy, h.modelStatusToString(status), "HiGHS did not report an optimal solution")
    return np.asarray(h.getSolution().col_value, dtype=float), float(h.getInfo().objective_function_value)
