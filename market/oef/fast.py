"""Fast screening solver for misreport searches against non-cooperative OEF.

A misreport changes only the deviator's row of the compact non-cooperative LP (spec A2:
``max R t`` s.t. ``sum_l x_l^j <= m_j``, ``W_l . x_l - t = 0``, ``x >= 0``). :class:`NoncoopResolver`
keeps one HiGHS model alive, rewrites the ``k`` coefficients of the deviator's equality row and
re-solves from the previous basis (dual simplex warm start): a fraction of a millisecond per
misreport instead of building and solving a fresh LP.

It is a *screen*: :class:`marketsim.market.audit.fairshare.FairShareTarget` with ``fast=True`` searches with
it and then re-evaluates the truthful report and every family's best report with the registered
mechanism itself (``confirm``), so every reported gain is the registered mechanism's number. Where
the LP optimum is unique (generic instances) both solvers return the same allocation; at
degenerate reports they may pick different optimal vertices, which only affects which points the
search visits.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.errors import InputError, SolveError

__all__ = ["NoncoopResolver", "make_screen", "noncoop_fast_eligible"]

_ZERO_TOL = 1e-9


def noncoop_fast_eligible(m: np.ndarray, weights: object, caps: object, options: object) -> bool:
    """Whether the screen models the registered ``oef-noncoop`` call: every ``m_j > 0`` and within
    a factor 100 of each other (no column scaling) and no options. Weights are modelled in the
    direct weighted form (A2'), whose class sums equal the replicated form's at a unique optimum."""
    m = np.asarray(m, dtype=float)
    return bool(m.size and (m > 0).all() and m.max() / m.min() <= 100.0 and not options)


def make_screen(
    W: np.ndarray, m: np.ndarray, weights: np.ndarray | None, caps: np.ndarray | None, options: object
) -> NoncoopResolver | None:
    """The misreport screen registered with ``oef-noncoop`` (see :func:`marketsim.market.registry.register`):
    a :class:`NoncoopResolver` when :func:`noncoop_fast_eligible`, else ``None``."""
    return NoncoopResolver(W, m, weights) if noncoop_fast_eligible(m, weights, caps, options) else None


class NoncoopResolver:
    """Warm-started HiGHS model of the compact non-cooperative LP for a fixed truthful ``W`` (n, k)
    (rows normalised, ``w^0 = 1``), capacities ``m`` (k,) in devices and optional weights
    ``omega`` (n,) (direct weighted form ``W_l . x_l - omega_l t = 0``, objective ``sum omega t``)."""

    def __init__(self, W: np.ndarray, m: np.ndarray, omega: np.ndarray | None = None) -> None:
        import highspy

        from marketsim.market.milp import new_highs

        self.W = np.asarray(W, dtype=float).copy()
        self.m = np.asarray(m, dtype=float)
        n, k = self.W.shape
        if n == 0 or self.m.shape != (k,):
            raise InputError("W", self.W.shape, "must be (n >= 1, k) with m of length k")
        self.n, self.k = n, k
        om = np.ones(n) if omega is None else np.asarray(omega, dtype=float)
        if om.shape != (n,) or not np.all(np.isfinite(om)) or (om <= 0).any():
            raise InputError("omega", omega, f"must be {n} finite weights > 0")
        N = n * k + 1
        h = new_highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("solver", "simplex")
        inf = highspy.kHighsInf
        cost = np.zeros(N)
        cost[-1] = -float(om.sum())
        h.addVars(N, np.zeros(N), np.full(N, inf))
        h.changeColsCost(N, np.arange(N, dtype=np.int32), cost)
        # capacity rows j: sum_l x_{l,j} <= m_j
        idx = (np.arange(n)[None, :] * k + np.arange(k)[:, None]).astype(np.int32)
        h.addRows(k, np.full(k, -inf), self.m, n * k, (np.arange(k) * n).astype(np.int32), idx.ravel(), np.ones(n * k))
        # value rows l: W_l . x_l - t = 0
        cols = np.concatenate([np.arange(l * k, (l + 1) * k).tolist() + [N - 1] for l in range(n)]).astype(np.int32)
        vals = np.concatenate([np.r_[self.W[l], -om[l]] for l in range(n)])
        h.addRows(n, np.zeros(n), np.zeros(n), n * (k + 1), (np.arange(n) * (k + 1)).astype(np.int32), cols, vals)
        self._h = h
        self._modified: dict[int, np.ndarray] = {}
        self.solves = 0

    def _set_row(self, l: int, row: np.ndarray) -> None:
        for j in range(self.k):
            self._h.changeCoeff(self.k + l, l * self.k + j, float(row[j]))

    def allocation(self, l: int, row: np.ndarray) -> np.ndarray:
        """X (n, k) when row ``l`` reports ``row`` (normalised, ``row[0] = 1``) and others are truthful."""
        import highspy

        for other in list(self._modified):
            if other != l:
                self._set_row(other, self.W[other])
                del self._modified[other]
        row = np.asarray(row, dtype=float)
        self._set_row(l, row)
        self._modified[l] = row
        self._h.run()
        self.solves += 1
        if self._h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise SolveError("oef-noncoop (screen)", str(self._h.getModelStatus()), "non-optimal")
        x = np.asarray(self._h.getSolution().col_value[: self.n * self.k], dtype=float)
        x[x < _ZERO_TOL] = 0.0
        return x.reshape(self.n, self.k)
