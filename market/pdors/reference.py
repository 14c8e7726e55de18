"""Pure-Python reference of PD-ORS' search (benchmark baseline, test oracle).

The co-located scan and the DP over slots are straightforward loops; the randomized rounding (Step 13,
one draw at a time, each checked by plain loops) is :func:`marketsim.market.pdors.rounding.draw_roundings_reference`,
which :func:`marketsim.market.pdors.theta.split_candidate` calls with ``reference=True``. The split LP is the one
solver call both searches share (the same warm-started HiGHS instance per slot state: identical decisions
need the identical LP vertex), so the benchmark reports its time separately.
"""

from __future__ import annotations

import math

import numpy as np

from marketsim.market.pdors.model import EPS
from marketsim.market.pdors.theta import Candidate, split_candidate

INF = math.inf


def slot_thetas_reference(job, sp, lp, q, u_max, ci, ce, config, rng, stats):
    H, R = sp.resid.shape
    prices = sp.prices.tolist()
    resid = sp.resid.tolist()
    alpha = sp.alpha.tolist()
    beta = sp.beta.tolist()
    theta = [0.0] + [INF] * u_max
    chosen = [None] * (u_max + 1)
    for u in range(1, u_max + 1):
        D = math.ceil(u * q * ci - EPS)
        Sps = math.ceil(D / job.ratio - EPS)
        best = None
        if D <= sp.F:
            bc, bh = _cheapest_host(alpha, beta, resid, prices, D, Sps)
            if bh >= 0:
                w = np.zeros(H, dtype=np.int64)
                s = np.zeros(H, dtype=np.int64)
                w[bh], s[bh] = D, Sps
                best = Candidate(bc, "colocated", w, s)
        W1 = u * q * ce
        if math.ceil(W1 - EPS) <= job.global_batch:
            sc = split_candidate(sp, lp, W1, best.cost if best else INF, config, rng, stats, reference=True)
            if sc is not None and (best is None or sc.cost < best.cost):
                best = sc
        if best is not None:
            theta[u] = best.cost
            chosen[u] = best
    return np.array(theta), chosen


def _cheapest_host(alpha: list, beta: list, resid: list, prices: list, D: int, Sps: int) -> tuple[float, int]:
    """Plain-loop cheapest single host for ``D`` workers and ``Sps`` parameter servers: ``(cost,
    host)``, ``(INF, -1)`` when none fits (first host on ties)."""
    R = len(alpha)
    use = [alpha[r] * D + beta[r] * Sps for r in range(R)]
    bc, bh = INF, -1
    for h in range(len(resid)):
        if all(use[r] <= resid[h][r] + EPS * max(1.0, resid[h][r]) for r in range(R)):
            c = 0.0
            for r in range(R):
                c += use[r] * prices[h][r]
            if c < bc:
                bc, bh = c, h
    return bc, bh


def dp_forward_reference(costs: np.ndarray, W: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain-loop DP with the same tie rule as :func:`marketsim.market.auction.schedule.dp_forward`."""
    nT, N1 = costs.shape
    c = costs.tolist()
    prev = [0.0] + [INF] * W
    theta = np.empty((nT, W + 1))
    arg = np.zeros((nT, W + 1), dtype=np.int32)
    for j in range(nT):
        cur = [INF] * (W + 1)
        a = [0] * (W + 1)
        for x in range(W + 1):
            best, bn = prev[x], 0
            for n in range(1, N1):
                if c[j][n] == INF:
                    continue
                v = c[j][n] + prev[max(0, x - n)]
                if v < best:
                    best, bn = v, n
            cur[x], a[x] = best, bn
        theta[j] = cur
        arg[j] = a
        prev = cur
    return theta, arg


def slot_options_reference(job, sp, lp, ci, ce, config, rng, stats, cap=INF):
    """Plain-loop :func:`marketsim.market.pdors.pricing.slot_options` (same options, same draws, same order)."""
    from marketsim.market.pdors.model import is_colocated
    from marketsim.market.pdors.pricing import SlotOptions

    H, R = sp.resid.shape
    prices, resid = sp.prices.tolist(), sp.resid.tolist()
    alpha, beta = sp.alpha.tolist(), sp.beta.tolist()
    V, F = float(job.V), int(job.global_batch)
    d_max = min(F, max(1, math.ceil(V * ci - EPS))) if ci > 0 else 1
    opts = []  # (cost, dA, dB, candidate)
    col = []
    for D in range(1, d_max + 1):
        Sps = math.ceil(D / job.ratio - EPS)
        bc, bh = _cheapest_host(alpha, beta, resid, prices, D, Sps)
        col.append(bc)
        if bh >= 0 and bc < cap:
            w = np.zeros(H, dtype=np.int64)
            s = np.zeros(H, dtype=np.int64)
            w[bh], s[bh] = D, Sps
            opts.append((bc, D, 0, Candidate(bc, "colocated", w, s)))
    n_max = min(F, max(1, math.ceil(V * ce - EPS))) if ce > 0 else 1
    for n in range(1, n_max + 1):
        need = math.ceil(n * ci / ce - EPS) if ce > 0 else 1
        upper = min(min(col[need - 1 :], default=INF) if need >= 1 else INF, cap)
        sc = split_candidate(sp, lp, float(n), upper, config, rng, stats, reference=True)
        if sc is None or sc.cost >= cap:
            continue
        nw = int(sc.w.sum())
        a_, b_ = (nw, 0) if is_colocated(sc.w, sc.s) else (0, nw)
        opts.append((sc.cost, a_, b_, sc))
    pts = []
    for i, (c, a_, b_, _) in enumerate(opts):
        p = min(a_ / ci + b_ / ce, V)
        pts.append((-p, c, i))
    pts.sort()
    kept, best = [], INF
    for _, c, i in pts:
        if c < best:
            kept.append(i)
            best = c
    kept.reverse()
    cost = np.array([opts[i][0] for i in kept], dtype=float)
    dA = np.array([opts[i][1] for i in kept], dtype=np.int64)
    dB = np.array([opts[i][2] for i in kept], dtype=np.int64)
    prog = np.array([min(opts[i][1] / ci + opts[i][2] / ce, V) for i in kept], dtype=float)
    return SlotOptions(cost, dA, dB, prog, tuple(opts[i][3] for i in kept))


def exact_dp_reference(options, V, ci, ce, cap=INF):
    """Plain-loop :func:`marketsim.market.pdors.pricing.exact_dp` (same frontier, same tie rules)."""
    from marketsim.market.pdors.pricing import DONE_RTOL, ExactDP

    done_at = V * (1.0 - DONE_RTOL)
    states = [(0, 0, 0.0, False)]  # (A, B, cost, done)
    nT = len(options)
    theta = np.full(nT, INF)
    credited = np.zeros(nT)
    parents, choice, done_index = [], [], []
    states_max = 1
    for j, op in enumerate(options):
        K = op.cost.size
        S = len(states)
        cands = []  # (sort key, A, B, cost, done, parent, option)
        for p, (A, B, C, done) in enumerate(states):
            for o in range(K + 1):
                if done and o > 0:
                    continue
                a_ = A + (int(op.dA[o - 1]) if o else 0)
                b_ = B + (int(op.dB[o - 1]) if o else 0)
                c_ = C + (float(op.cost[o - 1]) if o else 0.0)
                prog = a_ / ci + b_ / ce
                nd = done or prog >= done_at
                if nd:
                    prog = INF
                cands.append(((-prog, c_, o * (S + 1) + p), a_, b_, c_, nd, p, o))
        best_done = min((cd[3] for cd in cands if cd[4]), default=INF)
        cands = [cd for cd in cands if cd[3] < cap and (cd[4] or cd[3] < best_done)]
        cands.sort(key=lambda t: t[0])
        kept, best = [], INF
        for cd in cands:
            if cd[3] < best:
                kept.append(cd)
                best = cd[3]
        kept.reverse()
        states = [(a_, b_, c_, nd) for _, a_, b_, c_, nd, _, _ in kept]
        parents.append(np.array([cd[5] for cd in kept], dtype=np.int64))
        choice.append(np.array([cd[6] - 1 for cd in kept], dtype=np.int64))
        di = [i for i, st in enumerate(states) if st[3]]
        done_index.append(di[0] if di else -1)
        if di:
            theta[j] = states[di[0]][2]
            credited[j] = states[di[0]][0] / ci + states[di[0]][1] / ce
        states_max = max(states_max, len(states))
    return ExactDP(theta, parents, choice, done_index, states_max, credited)
