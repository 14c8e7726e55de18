"""Pure-Python reference of PD-ORS' search (benchmark baseline, test oracle).

The co-located scan and the DP over slots are straightforward loops; the randomized rounding (Step 13,
one draw at a time, each checked by plain loops) is :func:`market.pdors.rounding.draw_roundings_reference`,
which :func:`market.pdors.theta.split_candidate` calls with ``reference=True``. The split LP is the one
solver call both searches share (the same warm-started HiGHS instance per slot state: identical decisions
need the identical LP vertex), so the benchmark reports its time separately.
"""

from __future__ import annotations

import math

import numpy as np

from market.pdors.model import EPS
from market.pdors.theta import Candidate, split_candidate

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
            use = [alpha[r] * D + beta[r] * Sps for r in range(R)]
            bc, bh = INF, -1
            for h in range(H):
                if all(use[r] <= resid[h][r] + EPS * max(1.0, resid[h][r]) for r in range(R)):
                    c = 0.0
                    for r in range(R):
                        c += use[r] * prices[h][r]
                    if c < bc:
                        bc, bh = c, h
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


def dp_forward_reference(costs: np.ndarray, W: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain-loop DP with the same tie rule as :func:`market.auction.schedule.dp_forward`."""
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
