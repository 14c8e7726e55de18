"""Incentive / fairness / efficiency properties as max-violation figures (0 = property holds).

Every function returns a non-negative number in the unit of the compared quantity, so a test or a
claims ledger compares it with a tolerance. Fair-share measures delegate to
:mod:`marketsim.market.oef.properties` (the single implementation of envy, SI and the PE-gap LP).

* :func:`ir_violation` — individual rationality: ``max_i (payment_i - value_i)^+`` (currency).
* :func:`budget_balance_violation` — payments vs incomes: exact ``|sum pay - sum income|`` or
  weak (no deficit) ``(sum income - sum pay)^+`` (currency).
* :func:`envy_violation` — (weighted) envy-freeness: ``max_{l,i} W_l.x_i/pi_i - W_l.x_l/pi_l``.
* :func:`si_violation` — sharing incentive vs the ``pi_l / sum pi`` partition or a quota bundle.
* :func:`pe_violation` — Pareto efficiency: the ``pe_gap`` LP (throughput units).
* :func:`contribution_violation` — gain-as-you-contribute: income shares vs contribution shares.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketsim.market.allocation import Allocation
from marketsim.market.errors import InputError, as_float_array

__all__ = [
    "ir_violation",
    "budget_balance_violation",
    "envy_violation",
    "si_violation",
    "pe_violation",
    "contribution_violation",
    "fair_share_report",
]


def _X(X: Any) -> np.ndarray:
    return np.asarray(X.X if isinstance(X, Allocation) else X, dtype=float)


def ir_violation(values: Any, payments: Any) -> float:
    """Largest shortfall ``payment_i - value_i`` over agents (0 if every agent's TRUE value of its
    outcome covers its payment; a rejected agent has value 0 and must pay 0). Currency units.

    :param values: (n,) each agent's TRUE value of its outcome, currency
    :param payments: (n,) what each paid, currency
    :returns: the largest shortfall, >= 0
    """
    v = as_float_array("values", values, ndim=1)
    p = as_float_array("payments", payments, shape=(v.size,))
    if v.size == 0:
        return 0.0
    return float(max(0.0, np.max(p - v)))


def budget_balance_violation(payments: Any, incomes: Any, *, mode: str = "exact") -> float:
    """Budget balance of a transfer scheme. ``payments`` (what agents pay in) and ``incomes`` (what
    is paid out to agents / income division), any shapes, are summed. ``mode="exact"``:
    ``|sum payments - sum incomes|``; ``mode="weak"`` (no deficit): ``(sum incomes - sum payments)^+``.

    :param payments: what agents pay in, currency (any shape)
    :param incomes: what is paid out, currency (any shape)
    :param mode: ``"exact"`` or ``"weak"``
    :returns: the violation, >= 0, currency
    :raises InputError: an unknown mode or non-finite amounts
    """
    p = as_float_array("payments", payments)
    q = as_float_array("incomes", incomes)
    diff = float(p.sum() - q.sum())
    if mode == "exact":
        return abs(diff)
    if mode == "weak":
        return max(0.0, -diff)
    raise InputError("mode", mode, "must be 'exact' or 'weak'")


def envy_violation(W: Any, X: Any, weights: Any = None) -> float:
    """Max (weighted) envy ``max_{l,i} W_l.x_i/pi_i - W_l.x_l/pi_l`` (>= 0; throughput units).
    Pass TRUE ``W`` to measure experienced envy. Uses :func:`marketsim.market.oef.properties.envy`.

    :param W: (n, k) speedups (TRUE ones to measure what agents experience)
    :param X: (n, k) allocation, or an :class:`~marketsim.market.allocation.Allocation`
    :param weights: (n,) priorities, or ``None`` (equal)
    :returns: the max envy, >= 0
    """
    from marketsim.market.oef.properties import max_envy

    return max(0.0, max_envy(W, _X(X), weights))


def si_violation(W: Any, X: Any, m: Any, weights: Any = None, quota: Any = None) -> float:
    """Max shortfall below the sharing-incentive threshold (>= 0; throughput units).

    Threshold: ``(pi_l / sum pi) W_l . m`` (:func:`marketsim.market.oef.properties.si_gap`), or, when
    ``quota`` (n, k) is given, ``W_l . quota_l`` (the bundle the agent is entitled to alone).

    :param W: (n, k) speedups (TRUE ones to measure what agents experience)
    :param X: (n, k) allocation, or an :class:`~marketsim.market.allocation.Allocation`
    :param m: (k,) GPUs per type
    :param weights: (n,) priorities, or ``None`` (equal)
    :param quota: (n, k) each agent's entitled bundle, or ``None`` (the weighted equal split)
    :returns: the max shortfall, >= 0
    """
    Xa = _X(X)
    if quota is None:
        from marketsim.market.oef.properties import si_gap

        gap = si_gap(W, Xa, m, weights)
    else:
        from marketsim.market.oef.properties import utilities

        Wa = np.asarray(W, dtype=float)
        Q = as_float_array("quota", quota, shape=Wa.shape, nonneg=True)
        gap = utilities(Wa, Xa) - np.einsum("lj,lj->l", Wa, Q)
    return float(max(0.0, -gap.min())) if gap.size else 0.0


def pe_violation(W: Any, X: Any, m: Any, solver: str = "highs-ds") -> float:
    """Pareto gap (strong definition): total throughput a capacity-feasible allocation can add
    while making nobody worse off (:func:`marketsim.market.oef.properties.pe_gap`; >= 0).

    :param W: (n, k) speedups (TRUE ones to measure what agents experience)
    :param X: (n, k) allocation, or an :class:`~marketsim.market.allocation.Allocation`
    :param m: (k,) GPUs per type
    :param solver: the LP method (``scipy.optimize.linprog`` name)
    :returns: the throughput that could be added, >= 0
    """
    from marketsim.market.oef.properties import pe_gap

    return float(pe_gap(W, _X(X), m, solver=solver))


def contribution_violation(contributions: Any, incomes: Any, *, relative: bool = False) -> float:
    """Gain-as-you-contribute proportionality (Astraea Eq. 2): each tenant's income should be its
    share of the contributions times the total income.

    ``contributions`` and ``incomes`` have the same shape: (n_tenants,) or (n_events, n_tenants)
    (one row per (job, slot) income division). Per row: ``max_u |income_u - c_u/sum c * sum income|``;
    a row with zero total contribution must pay nothing. Returns the max over rows, in currency
    units, or relative to the row's total income when ``relative=True``.

    :param contributions: (n_tenants,) or (n_events, n_tenants) contributions, >= 0
    :param incomes: incomes of the same shape, currency
    :param relative: divide each row's deviation by its total income
    :returns: the max deviation over rows
    :raises InputError: mismatched shapes, negative contributions or more than 2 dimensions
    """
    c = as_float_array("contributions", contributions, nonneg=True)
    g = as_float_array("incomes", incomes, shape=c.shape)
    if c.ndim == 1:
        c, g = c[None, :], g[None, :]
    if c.ndim != 2:
        raise InputError("contributions", contributions, "must be 1-D (tenants) or 2-D (events x tenants)")
    if c.size == 0:
        return 0.0
    tot_c = c.sum(axis=1, keepdims=True)
    tot_g = g.sum(axis=1, keepdims=True)
    share = np.divide(c, tot_c, out=np.zeros_like(c), where=tot_c > 0)
    dev = np.abs(g - share * tot_g)
    dev = np.where(tot_c > 0, dev, np.abs(g))
    per_row = dev.max(axis=1)
    if relative:
        per_row = per_row / np.maximum(np.abs(tot_g[:, 0]), 1e-12)
    return float(per_row.max())


def fair_share_report(W: Any, X: Any, m: Any, weights: Any = None) -> dict[str, float]:
    """All fair-share figures of one allocation: ``envy``, ``si``, ``pe`` (max violations), and
    ``total`` throughput ``sum_l W_l.x_l`` plus ``capacity`` excess ``max_j (sum_l x_l^j - m_j)^+``.

    :param W: (n, k) speedups (TRUE ones to measure what agents experience)
    :param X: (n, k) allocation, or an :class:`~marketsim.market.allocation.Allocation`
    :param m: (k,) GPUs per type
    :param weights: (n,) priorities, or ``None``
    :returns: ``{"envy", "si", "pe", "total", "capacity"}``
    """
    Xa = _X(X)
    Wa = np.asarray(W, dtype=float)
    mm = np.asarray(m, dtype=float)
    return {
        "envy": envy_violation(Wa, Xa, weights),
        "si": si_violation(Wa, Xa, mm, weights),
        "pe": pe_violation(Wa, Xa, mm),
        "total": float(np.einsum("lj,lj->", Wa, Xa)),
        "capacity": float(max(0.0, (Xa.sum(axis=0) - mm).max())) if Xa.size else 0.0,
    }
