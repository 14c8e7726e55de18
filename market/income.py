"""Income division: how the payments for pooled (shared) resources are split among the owners.

Pure functions of arrays; every rule is budget balanced (incomes sum to the payments, corrected to
the last float bit by :func:`balance`). Rules:

* :func:`gain_as_you_contribute` — Astraea Eq. (2): at every slot t each tenant u receives
  ``unused^u(t) / a(t) · c(t)`` with ``a(t) = Σ_u unused^u(t)``;
* :func:`equal_split` — the payment split equally among the members;
* :func:`shapley_sharing` — the Shapley value of the *sharing coalition* game of one pooled
  purchase: coalition S can supply ``min(demand(t), Σ_{u∈S} unused^u(t))`` units at the unit price
  ``price(t)``, so ``v(S) = Σ_t price(t) · min(demand(t), pool_S(t))`` and ``v(N)`` = the payment
  whenever the pool covers the demand. Exact over all 2^U coalitions for few tenants, or Monte Carlo
  over permutations with an explicit ``numpy.random.Generator``.

Units: currency for payments and incomes; resource units (workers or PS slots) for unused quota.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_int

__all__ = [
    "balance",
    "gain_as_you_contribute",
    "equal_split",
    "capacity_game_values",
    "shapley_exact",
    "shapley_sampled",
    "shapley_sharing",
    "ShapleyEstimate",
    "EXACT_SHAPLEY_MAX_PLAYERS",
]

EXACT_SHAPLEY_MAX_PLAYERS = 12


def balance(shares: np.ndarray, total: float, eligible: object | None = None) -> np.ndarray:
    """Return ``shares`` with the float residual ``total − Σ shares`` added to the largest share among
    ``eligible`` (boolean mask; default: the non-zero shares, else all), so that ``math.fsum(result)``
    equals ``total`` up to one rounding of that entry and ineligible tenants keep exactly their share.

    :param shares: (U,) incomes, currency
    :param total: the amount they must sum to, currency
    :param eligible: (U,) bool: who may absorb the residual; ``None``: the non-zero shares (else all)
    :returns: (U,) the corrected shares
    :raises InputError: an empty or wrongly shaped ``eligible`` mask, or empty shares with a non-zero total
    """
    out = np.array(shares, dtype=float)
    if eligible is None:
        elig = out != 0 if np.any(out) else np.ones(out.shape, dtype=bool)
    else:
        elig = np.asarray(eligible, dtype=bool)
        if elig.shape != out.shape or not elig.any():
            raise InputError("eligible", eligible, f"must be a non-empty mask of length {out.size}")
    if out.size == 0:
        if total != 0:
            raise InputError("shares", shares, f"is empty but the total to divide is {total}")
        return out
    for _ in range(3):
        resid = float(total) - math.fsum(out.tolist())
        if resid == 0.0:
            break
        i = int(np.argmax(np.where(elig, np.abs(out), -1.0)))
        out[i] += resid
    return out


def _unused_and_cost(unused: object, cost: object) -> tuple[np.ndarray, np.ndarray]:
    u = as_float_array("unused", unused, nonneg=True)
    if u.ndim == 1:
        u = u[:, None]
    if u.ndim != 2 or u.shape[0] == 0:
        raise InputError("unused", unused, "must be (tenants,) or (tenants, slots) with at least one tenant")
    c = as_float_array("cost", cost, nonneg=True)
    c = np.broadcast_to(c, (u.shape[1],)) if c.ndim == 0 else c
    if c.shape != (u.shape[1],):
        raise InputError("cost", cost, f"must have one entry per slot ({u.shape[1]})")
    return u, c


def gain_as_you_contribute(unused: object, cost: object, *, exact_balance: bool = True) -> np.ndarray:
    """Eq. (2) for one resource type: ``ρ^u = Σ_t unused^u(t) / a(t) · c(t)``.

    ``unused`` (U,) or (U, T) unused quota per tenant (units) frozen after pass 1, ``cost`` (T,) the
    per-slot payment c(t) (currency). Returns (U,) incomes. Raises when a slot has a positive cost and
    no unused quota at all (a(t) = 0). With ``exact_balance`` the float residual goes to the largest
    share so the incomes sum to Σ_t c(t).

    :param unused: (U,) or (U, T) unused quota per tenant (and slot), resource units, >= 0
    :param cost: (T,) or a scalar: the payment c(t) per slot, currency, >= 0
    :param exact_balance: correct the float residual with :func:`balance`
    :returns: (U,) incomes, currency
    :raises InputError: bad shapes or signs, or a slot with a payment and no unused quota
    """
    u, c = _unused_and_cost(unused, cost)
    a = u.sum(axis=0)
    bad = (a <= 0) & (c > 0)
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        raise InputError(f"unused[:, {t}]", u[:, t], "sums to 0 (a(t) = 0) but the slot has a payment")
    share = np.divide(u, a[None, :], out=np.zeros_like(u), where=a[None, :] > 0)
    inc = (share * c[None, :]).sum(axis=1)
    if not exact_balance:
        return inc
    contrib = u.sum(axis=1) > 0
    return balance(inc, math.fsum(c.tolist()), contrib if contrib.any() else None)


def equal_split(payment: float, n_tenants: int, members: object | None = None) -> np.ndarray:
    """``payment`` divided equally among ``members`` (boolean mask of length ``n_tenants``; all by default).

    :param payment: the amount to divide, currency, finite and >= 0
    :param n_tenants: U, >= 1
    :param members: (U,) bool: who shares it; ``None``: everyone
    :returns: (U,) incomes (0 for non-members), summing to ``payment``
    :raises InputError: a bad payment, count or mask, or no member
    """
    n = check_int("n_tenants", n_tenants, minimum=1)
    p = float(payment)
    if not math.isfinite(p) or p < 0:
        raise InputError("payment", payment, "must be finite and >= 0")
    m = np.ones(n, dtype=bool) if members is None else np.asarray(members, dtype=bool)
    if m.shape != (n,):
        raise InputError("members", members, f"must be a boolean mask of length {n}")
    if not m.any():
        raise InputError("members", members, "must include at least one tenant")
    out = np.where(m, p / m.sum(), 0.0)
    return balance(out, p, m)


def capacity_game_values(masks: np.ndarray, unused: np.ndarray, demand: np.ndarray, price: np.ndarray) -> np.ndarray:
    """v(S) = Σ_t price(t)·min(demand(t), Σ_{u∈S} unused^u(t)) for each row of ``masks`` (m, U).

    :param masks: (m, U) bool: one coalition per row
    :param unused: (U, T) unused quota per tenant and slot, resource units
    :param demand: (T,) units bought per slot
    :param price: (T,) unit price per slot, currency
    :returns: (m,) the coalitions' values, currency
    """
    pool = masks.astype(float) @ unused  # (m, T)
    return (np.minimum(pool, demand[None, :]) * price[None, :]).sum(axis=1)


def _shapley_weights(n: int) -> np.ndarray:
    return np.array([math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n) for s in range(n)])


def shapley_exact(value: Callable[[np.ndarray], np.ndarray], n_players: int) -> np.ndarray:
    """Exact Shapley values of a game given by ``value(masks (m, n) bool) -> (m,)`` over all 2^n coalitions.

    :param value: the characteristic function, vectorised over coalitions (with ``v(∅)`` among them)
    :param n_players: n, 1..``EXACT_SHAPLEY_MAX_PLAYERS``
    :returns: (n,) Shapley values, in the game's units
    :raises InputError: ``n_players`` out of range
    """
    n = check_int("n_players", n_players, minimum=1)
    if n > EXACT_SHAPLEY_MAX_PLAYERS:
        raise InputError("n_players", n, f"must be <= {EXACT_SHAPLEY_MAX_PLAYERS} for exact Shapley; use sampling")
    codes = np.arange(1 << n)
    masks = ((codes[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
    v = np.asarray(value(masks), dtype=float)
    size = masks.sum(axis=1)
    w = _shapley_weights(n)
    phi = np.zeros(n)
    for i in range(n):
        without = ~masks[:, i]
        with_i = codes[without] | (1 << i)
        phi[i] = float(np.sum(w[size[without]] * (v[with_i] - v[codes[without]])))
    return phi


@dataclass(frozen=True)
class ShapleyEstimate:
    """Monte Carlo Shapley values with per-player standard errors (same units as the game).

    :param values: (n,) the estimated Shapley values
    :param std_error: (n,) their standard errors (``inf`` with one sample)
    :param n_samples: the number of permutations averaged
    """

    values: np.ndarray
    std_error: np.ndarray
    n_samples: int


def shapley_sampled(
    value: Callable[[np.ndarray], np.ndarray], n_players: int, n_samples: int, rng: np.random.Generator
) -> ShapleyEstimate:
    """Shapley values by averaging marginal contributions over ``n_samples`` random permutations.

    Each permutation's marginals sum to v(N) − v(∅), so the estimate is budget balanced by construction.

    :param value: the characteristic function, vectorised over coalitions (rows of an (m, n) bool mask)
    :param n_players: n, >= 1
    :param n_samples: permutations to average, >= 1
    :param rng: the random generator (seeded by the caller)
    :returns: the estimate with its standard errors
    :raises InputError: a bad count or a missing generator
    """
    n = check_int("n_players", n_players, minimum=1)
    m = check_int("n_samples", n_samples, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy.random.Generator")
    perms = np.argsort(rng.random((m, n)), axis=1)
    # prefix coalitions: masks[s, p] = players among the first p of permutation s
    rank = np.empty_like(perms)
    rank[np.arange(m)[:, None], perms] = np.arange(n)[None, :]
    prefix = rank[:, None, :] < np.arange(n + 1)[None, :, None]  # (m, n+1, n)
    flat = prefix.reshape(-1, n)
    step = 4096
    vals = np.concatenate([np.asarray(value(flat[i : i + step]), dtype=float) for i in range(0, flat.shape[0], step)])
    vals = vals.reshape(m, n + 1)
    marg_pos = np.diff(vals, axis=1)  # (m, n): marginal of the player at position p
    marg = np.empty_like(marg_pos)
    marg[np.arange(m)[:, None], perms] = marg_pos
    est = marg.mean(axis=0)
    se = marg.std(axis=0, ddof=1) / math.sqrt(m) if m > 1 else np.full(n, np.inf)
    return ShapleyEstimate(est, se, m)


def shapley_sharing(
    unused: object,
    demand: object,
    price: object,
    *,
    method: str = "auto",
    n_samples: int = 2000,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Shapley division of one pooled purchase (see the module docstring).

    ``unused`` (U, T) unused quota per tenant and slot, ``demand`` (T,) units bought per slot,
    ``price`` (T,) unit price per slot. Returns (U,) incomes summing to Σ_t price·demand (the payment)
    when the pool covers the demand. ``method``: "exact", "sampled" or "auto" (exact for
    U <= 12). Sampling needs ``rng``.

    :param unused: (U, T) (or (U,) for one slot) unused quota per tenant and slot, resource units, >= 0
    :param demand: (T,) or a scalar: units bought per slot, >= 0
    :param price: (T,) or a scalar: unit price per slot, currency, >= 0
    :param method: ``"exact"``, ``"sampled"`` or ``"auto"``
    :param n_samples: permutations for ``"sampled"``
    :param rng: the random generator, required for sampling
    :returns: (U,) incomes, currency
    :raises InputError: bad shapes or signs, a demand above the pooled quota, an unknown method, or
        sampling without ``rng``
    """
    u = as_float_array("unused", unused, nonneg=True)
    if u.ndim == 1:
        u = u[:, None]
    if u.ndim != 2 or u.shape[0] == 0:
        raise InputError("unused", unused, "must be (tenants, slots) with at least one tenant")
    T = u.shape[1]
    d = np.broadcast_to(as_float_array("demand", demand, nonneg=True), (T,)).astype(float)
    p = np.broadcast_to(as_float_array("price", price, nonneg=True), (T,)).astype(float)
    short = u.sum(axis=0) + 1e-9 < d
    if short.any():
        t = int(np.flatnonzero(short)[0])
        raise InputError(f"demand[{t}]", d[t], f"exceeds the pooled unused quota {u[:, t].sum()}")
    n = u.shape[0]
    total = math.fsum((p * d).tolist())

    def game(masks: np.ndarray) -> np.ndarray:
        return capacity_game_values(masks, u, d, p)

    if method not in ("auto", "exact", "sampled"):
        raise InputError("method", method, "must be one of ['auto', 'exact', 'sampled']")
    if method == "exact" or (method == "auto" and n <= EXACT_SHAPLEY_MAX_PLAYERS):
        phi = shapley_exact(game, n)
    else:
        if rng is None:
            raise InputError("rng", rng, "a numpy.random.Generator is required for sampled Shapley")
        phi = shapley_sampled(game, n, n_samples, rng).values
    return balance(phi, total, u.sum(axis=1) > 0 if u.sum() > 0 else None)
