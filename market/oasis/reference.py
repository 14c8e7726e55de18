"""Straightforward pure-Python reference of the OASiS search (benchmark baseline and test oracle).

Same algorithm as :func:`marketsim.market.oasis.mechanism.oasis_search` (cheapest-first per slot, DP over
slots with ties to the fewest workers in the later slot, strict improvement over completion
slots) written with plain loops and lists, no numpy vectorisation.
"""

from __future__ import annotations

import math

import numpy as np

from marketsim.market.auction.base import Schedule
from marketsim.market.auction.prices import PriceLedger
from marketsim.market.oasis.model import EPS, OasisRequest, SearchResult, ceil_tol

INF = math.inf


def _unit_price_cap(ledger: PriceLedger, demand: list[float], t: int) -> tuple[list[float], list[int]]:
    prices = ledger.prices()[t].tolist()
    usage = ledger.usage[t].tolist()
    cap = ledger.capacity.tolist()
    out_p, out_c = [], []
    for s in range(len(cap)):
        p = 0.0
        for r, d in enumerate(demand):
            p += prices[s][r] * d
        room = None
        for r, d in enumerate(demand):
            if d > 0:
                k = math.floor((cap[s][r] - usage[s][r]) / d + EPS)
                room = k if room is None else min(room, k)
        out_p.append(p)
        out_c.append(max(0, room if room is not None else 10**15))
    return out_p, out_c


def _greedy(prices: list[float], caps: list[int], n_max: int) -> tuple[list[float], list[int]]:
    order = sorted(range(len(prices)), key=lambda s: (prices[s], s))
    cost = [0.0]
    for s in order:
        for _ in range(min(caps[s], n_max)):
            if len(cost) > n_max:
                break
            cost.append(cost[-1] + prices[s])
    while len(cost) <= n_max:
        cost.append(INF)
    return cost, order


def _place(order: list[int], caps: list[int], n: int) -> list[int]:
    out = [0] * len(caps)
    for s in order:
        k = min(caps[s], n)
        out[s] = k
        n -= k
    return out


def oasis_search_reference(req: OasisRequest, wl: PriceLedger, pl: PriceLedger, max_units: int = 4000) -> SearchResult:
    a, T = req.arrival, wl.T
    w = [float(v) for v in req.worker_demand]
    s = [float(v) for v in req.ps_demand]
    W, N = req.work_units, req.max_workers
    q = 1 if W <= max_units else ceil_tol(W / max_units)
    Wq = ceil_tol(W / q)
    nk = N // q
    slot_info = []
    theta_prev = [0.0] + [INF] * Wq
    args, theta_W = [], []
    for t in range(a, T):
        wp, wc = _unit_price_cap(wl, w, t)
        pp, pc = _unit_price_cap(pl, s, t)
        wcost, wo = _greedy(wp, wc, N)
        nps = [ceil_tol(n * req.ps_num / req.ps_den) for n in range(N + 1)]
        pcost, po = _greedy(pp, pc, nps[N])
        cost = []
        for k in range(nk + 1):
            n = k * q
            c = wcost[n] + pcost[nps[n]]
            if nps[n] > n:
                c = INF
            cost.append(c)
        slot_info.append((wp, wc, pp, pc, wo, po, nps))
        cur = [INF] * (Wq + 1)
        arg = [0] * (Wq + 1)
        for x in range(Wq + 1):
            best, bn = INF, 0
            for k in range(nk + 1):
                if cost[k] == INF:
                    continue
                v = cost[k] + theta_prev[max(0, x - k)]
                if v < best:
                    best, bn = v, k
            cur[x], arg[x] = best, bn
        args.append(arg)
        theta_W.append(cur[Wq])
        theta_prev = cur
    mu, jbest = 0.0, None
    for j in range(T - a):
        if theta_W[j] < INF:
            v = float(req.utility(j + 1)) - theta_W[j]
            if v > mu:
                mu, jbest = v, j
    if jbest is None:
        return SearchResult(0.0, None, 0.0, np.array(theta_W), q)
    units = [0] * (jbest + 1)
    x = Wq
    for j in range(jbest, -1, -1):
        units[j] = args[j][x]
        x = max(0, x - units[j])
    workers, ps, cost = {}, {}, 0.0
    for j, k in enumerate(units):
        if k == 0:
            continue
        wp, wc, pp, pc, wo, po, nps = slot_info[j]
        n = k * q
        y = _place(wo, wc, n)
        z = _place(po, pc, nps[n])
        workers[a + j] = np.array(y, dtype=np.int64)
        ps[a + j] = np.array(z, dtype=np.int64)
        cost += float(np.dot(wp, y) + np.dot(pp, z))
    return SearchResult(mu, Schedule(req.job_id, a + jbest, workers, ps, work_unit=q), cost, np.array(theta_W), q)
