"""Misreport screens for built-in fair-share LPs that are solved through ``scipy.optimize.linprog``.

A misreport audit scores ~100 reports per deviator; for ``gavel`` (spec §4.1) and
``si-constrained`` (A5) each is one small LP, and ``linprog``'s wrapper (input cleaning, sparse
stacking, option checks) costs several milliseconds more than HiGHS's dual simplex on it. A
:class:`LinprogScreen` builds the *same* program with
:func:`marketsim.market.oef.programs.build_gavel` / :func:`marketsim.market.oef.programs.build_si_constrained` (on the
unscaled types), passes it to HiGHS as CSC arrays and solves it exactly as ``linprog(method="highs-ds")`` does: the
HiGHS build bundled with scipy (``highspy`` may be another HiGHS version, whose last-bit rounding
differs), the options scipy passes (dual simplex, presolve on), one reused instance per thread.
It returns the allocation the registered mechanism returns, bit for bit
(``tests/test_audit_screens.py`` checks equality on seeded instances and misreports). Without
scipy's private HiGHS module (another scipy version) there is no screen and the audit calls the
mechanism. As with every screen, :class:`marketsim.market.audit.fairshare.FairShareTarget` (``fast=True``)
searches with it and re-measures the truth, the structural probes and every family's best with the
registered mechanism; since these screens are bit-identical to it (``exact``), those confirmations
read the screen, and the hunt's witnesses are re-checked with the registered mechanism itself.

:func:`audit_screen` is the lookup :class:`~marketsim.market.audit.fairshare.FairShareTarget` uses when the
mechanism's registration carries no screen: the screens here apply only while the registered
function is the built-in one (a plugin that replaces ``gavel`` gets no screen).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from marketsim.market.errors import SolveError

try:  # scipy's own HiGHS (what linprog runs); private, hence guarded
    from scipy.optimize._highspy import _core as _scipy_highs
except ImportError:  # pragma: no cover - another scipy layout: no screen
    _scipy_highs = None

__all__ = ["LinprogScreen", "audit_screen", "SCREENED"]

SCREENED = ("gavel", "si-constrained")
"""Registered names with a screen here (while their built-in function is registered)."""


def _eligible(W: np.ndarray, m: np.ndarray, caps: Any, options: Any) -> bool:
    """The registered call is the plain one: no caps, no options, every ``m_j > 0`` within a factor
    100 of each other (no column scaling, no dropped types) and a small program (Gavel's
    ``solver="auto"`` stays on dual simplex, not interior point or price decomposition)."""
    from marketsim.market.oef.lp import AUTO_IPM_NONZEROS

    m = np.asarray(m, dtype=float)
    n, k = np.shape(W)
    if caps is not None or options or not m.size or not (m > 0).all() or m.max() / m.min() > 100.0:
        return False
    return 2 * n * k + n < AUTO_IPM_NONZEROS


_LOCAL = threading.local()


def _solve(policy: str, c: np.ndarray, ptr: np.ndarray, ind: np.ndarray, dat: np.ndarray, row_upper: np.ndarray,
           col_lower: np.ndarray, col_upper: np.ndarray) -> np.ndarray:  # fmt: skip
    """``min c.x`` s.t. ``A x <= row_upper``, bounds (``±inf`` allowed), ``A`` in CSC arrays: the
    column values, as ``linprog(method="highs-ds")`` returns them."""
    h = _scipy_highs
    assert h is not None
    inf = h.kHighsInf
    L = h.HighsLp()
    L.num_col_ = L.a_matrix_.num_col_ = int(c.size)
    L.num_row_ = L.a_matrix_.num_row_ = int(row_upper.size)
    L.a_matrix_.format_ = h.MatrixFormat.kColwise
    L.col_cost_ = np.asarray(c, dtype=float)
    L.col_lower_ = np.clip(col_lower, -inf, inf)
    L.col_upper_ = np.clip(col_upper, -inf, inf)
    L.row_lower_ = np.full(row_upper.size, -inf)
    L.row_upper_ = np.asarray(row_upper, dtype=float)
    L.a_matrix_.start_ = ptr
    L.a_matrix_.index_ = ind
    L.a_matrix_.value_ = dat
    inst = getattr(_LOCAL, "h", None)
    if inst is None:
        inst = h._Highs()
        o = h.HighsOptions()
        o.presolve, o.solver, o.simplex_strategy = "on", "simplex", 1  # scipy's "highs-ds"
        o.output_flag, o.log_to_console, o.highs_debug_level = False, False, 0
        inst.passOptions(o)
        _LOCAL.h = inst
    inst.clearSolver()
    inst.passModel(L)
    inst.run()
    status = inst.getModelStatus()
    if status != h.HighsModelStatus.kOptimal:
        raise SolveError(f"{policy} (screen)", str(status), "non-optimal")
    return np.array(inst.getSolution().col_value, dtype=float)


class LinprogScreen:
    """``allocation(l, row) -> X`` (n, k) for ``policy`` in :data:`SCREENED` when row ``l`` reports
    ``row`` (normalised, ``row[0] = 1``) and the other rows of ``W`` are truthful. ``exact``: the
    allocation is the registered mechanism's bit for bit, so the audit's confirmations read the
    screen instead of solving the same program again through ``linprog``."""

    exact = True

    def __init__(self, policy: str, W: np.ndarray, m: np.ndarray, weights: np.ndarray | None) -> None:
        if policy not in SCREENED:
            raise ValueError(f"no linprog screen for {policy!r}")
        self.policy = policy
        self.W = np.asarray(W, dtype=float).copy()
        self.m = np.asarray(m, dtype=float).copy()
        n, k = self.W.shape
        self.n, self.k = n, k
        self.weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float).copy()
        self.solves = 0

    def allocation(self, l: int, row: np.ndarray) -> np.ndarray:
        from marketsim.market.oef import lp
        from marketsim.market.oef.programs import build_gavel, build_si_constrained

        Wr = self.W.copy()
        Wr[int(l)] = np.asarray(row, dtype=float)
        n, k, nk = self.n, self.k, self.n * self.k
        if self.policy == "gavel":
            # the registered call's targets with no caps: p_l = m / n, N_l = W_l . p_l, targets = weights * N
            eq = self.m / n
            targets = self.weights * np.einsum("lj,lj->l", Wr, np.ones(n)[:, None] * eq[None, :])
            if not (targets > 0).any():
                return np.zeros((n, k))
            prog = build_gavel(Wr, self.m, np.full(n, np.inf), targets)
            lower, upper = np.concatenate([np.zeros(nk), [-np.inf]]), np.full(nk + 1, np.inf)
        else:
            prog = build_si_constrained(Wr, self.m, self.weights / self.weights.sum() * (Wr @ self.m))
            lower, upper = np.zeros(nk), np.full(nk, np.inf)
        A = prog.A_ub.tocsc()
        A.sort_indices()
        x = _solve(self.policy, prog.c, A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data, prog.b_ub,
                   lower, upper)  # fmt: skip
        self.solves += 1
        return lp.clip_solution(self.policy, x[:nk].reshape(n, k))


def _builtin(name: str) -> Callable[..., Any] | None:
    if name == "gavel":
        from marketsim.market.oef.baselines import gavel_maxmin

        return gavel_maxmin
    if name == "si-constrained":
        from marketsim.market.oef.mechanisms import si_constrained_lp

        return si_constrained_lp
    return None


def audit_screen(
    name: str, fn: Callable[..., Any], W: np.ndarray, m: np.ndarray, weights: np.ndarray | None, caps: Any,
    options: Any,
) -> LinprogScreen | None:  # fmt: skip
    """The screen of registered mechanism ``name`` (function ``fn``) on one TRUE instance, or
    ``None`` (not in :data:`SCREENED`, not the built-in function, or a call the screen does not
    model: caps, options, zero or widely spread capacities)."""
    if _scipy_highs is None or name not in SCREENED or fn is not _builtin(name) or not _eligible(W, m, caps, options):
        return None
    return LinprogScreen(name, W, m, weights)
