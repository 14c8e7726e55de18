"""Schedule search shared by the posted-price mechanisms (vectorised with numpy).

* :func:`greedy_cost_vector`: cost of placing ``n = 0..N`` identical units in one slot on the
  cheapest servers first (OASiS' COST_t, Theorem 1), by ``np.repeat`` + ``np.cumsum``.
* :func:`dp_forward`: the DP over slots ``Θ_t[x] = min_n c_t[n] + Θ_{t-1}[max(0, x-n)]`` for every
  completion slot at once (loop over ``n``, whole-array minima over ``x``); ties go to the
  smallest ``n`` (fewest units in the later slot).
* :func:`best_completion`: enumerate every completion slot in ascending order with strict
  improvement of ``utility - cost`` (Algorithm 2 of both papers).
"""

from __future__ import annotations

import numpy as np

__all__ = ["greedy_cost_vector", "greedy_placement", "dp_forward", "reconstruct", "best_completion"]

INF = np.inf


def greedy_cost_vector(unit_price: np.ndarray, cap: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Cheapest cost of ``n = 0..N`` units on servers with per-unit prices ``unit_price`` (S,) and
    room for ``cap`` (S,) units; ``+inf`` beyond the total room. Returns ``(cost (N+1,), order)``
    with ``order`` the servers sorted by (price, id).

    :param unit_price: (S,) price of one unit per server
    :param cap: (S,) units that fit per server
    :param N: most units
    :returns: ``(cost, order)``
    """
    order = np.lexsort((np.arange(unit_price.size), unit_price))
    caps = np.minimum(cap[order], N)
    units = np.repeat(unit_price[order], caps)[:N]
    cost = np.full(N + 1, INF)
    cost[0] = 0.0
    cost[1 : units.size + 1] = np.cumsum(units)
    return cost, order


def greedy_placement(order: np.ndarray, cap: np.ndarray, n: int) -> np.ndarray:
    """Per-server counts (S,) of ``n`` units filled cheapest-first along ``order``.

    :param order: servers cheapest first
    :param cap: (S,) room per server
    :param n: units to place
    :returns: (S,) units per server
    """
    out = np.zeros(cap.size, dtype=np.int64)
    c = np.minimum(cap[order], n)
    cum = np.cumsum(c)
    before = np.concatenate(([0], cum[:-1]))
    take = np.clip(n - before, 0, c)
    out[order] = take
    return out


def dp_forward(costs: np.ndarray, W: int, block: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """``Θ`` (nT, W+1) and ``arg`` (nT, W+1) for per-slot cost vectors ``costs`` (nT, N+1).

    ``Θ[j, x]`` is the cheapest cost of ``x`` work units within the first ``j+1`` slots; a slot
    using ``n`` units serves ``n`` work units (capped at what is still needed). Per slot, the whole
    (N+1) x (W+1) candidate matrix ``c[n] + Θ_prev[max(0, x-n)]`` is minimised at once (``argmin``
    keeps the first, i.e. smallest, ``n`` on ties); rows are processed in blocks of ``block`` cells.

    :param costs: (nT, N+1) cost of n units per slot
    :param W: work units needed
    :param block: cells per processed block
    :returns: ``(Θ, arg)``
    """
    nT, N1 = costs.shape
    theta = np.empty((nT, W + 1))
    arg = np.zeros((nT, W + 1), dtype=np.int32)
    prev = np.full(W + 1, INF)
    prev[0] = 0.0
    xs = np.arange(W + 1)
    rows_per_block = max(1, block // (W + 1))
    idx_cache: dict[tuple[int, int], np.ndarray] = {}
    for j in range(nT):
        c = costs[j]
        feasible = np.flatnonzero(np.isfinite(c))
        best = np.full(W + 1, INF)
        best_n = np.zeros(W + 1, dtype=np.int32)
        for b0 in range(0, feasible.size, rows_per_block):
            ns = feasible[b0 : b0 + rows_per_block]
            key = (int(ns[0]), int(ns[-1]))
            idx = idx_cache.get(key) if ns.size == ns[-1] - ns[0] + 1 else None
            if idx is None:
                idx = np.maximum(xs[None, :] - ns[:, None], 0)
                if ns.size == ns[-1] - ns[0] + 1:
                    idx_cache[key] = idx
            cand = c[ns][:, None] + prev[idx]
            k = np.argmin(cand, axis=0)
            val = cand[k, xs]
            better = val < best
            best = np.where(better, val, best)
            best_n = np.where(better, ns[k], best_n)
        theta[j] = best
        arg[j] = best_n
        prev = best
    return theta, arg


def reconstruct(arg: np.ndarray, j_end: int, W: int) -> list[int]:
    """Units per slot ``0..j_end`` that realise ``Θ[j_end, W]`` (walk back through ``arg``).

    :param arg: the DP's argmin table
    :param j_end: the last slot
    :param W: work units
    :returns: units per slot
    """
    units = [0] * (j_end + 1)
    x = W
    for j in range(j_end, -1, -1):
        n = int(arg[j, x])
        units[j] = n
        x = max(0, x - n)
    return units


def best_completion(utilities: np.ndarray, costs: np.ndarray) -> tuple[float, int | None]:
    """``(μ, j)`` with ``μ = max(0, max_j utilities[j] - costs[j])``, the first ``j`` attaining a
    strict improvement in ascending order (``None`` if no positive payoff).

    :param utilities: utility of each completion
    :param costs: cost of each completion
    :returns: ``(mu, j)``
    """
    mu, best = 0.0, None
    for j in range(len(costs)):
        if np.isfinite(costs[j]):
            v = float(utilities[j] - costs[j])
            if v > mu:
                mu, best = v, j
    return mu, best
