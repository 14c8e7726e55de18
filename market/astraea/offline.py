"""Offline optimum for Astraea's performance ratio (spec B4, OPT-exact): a MILP over every job's
configurations (start, D_w, placement) with server-level worker / PS assignment, solved by HiGHS
(``scipy.optimize.milp``). For micro instances (≤ 8 jobs, ≤ 8 servers, T ≤ 64).

Value of a configuration: f_j(t⁺ − r_j) (arrival clock); configurations with value ≤ 0 are dropped,
jobs may be left out. No quotas (collective revenue). Units: slots are hours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint
from scipy.sparse import coo_matrix

from marketsim.market.astraea.model import AstraeaParams, Cluster, JobSpec, allowed_workers, duration, throughput
from marketsim.market.errors import InputError, SolveError, check_int, check_positive
from marketsim.market.milp import milp

__all__ = ["OptResult", "opt_exact"]


@dataclass(frozen=True)
class OptResult:
    """Optimal collective revenue and the chosen configuration per admitted job
    (jid → (t_start, t_end, D_w, centralized)).

    :param value: optimal collective revenue, currency
    :param chosen: jid -> (t_start, t_end, D_w, centralized)
    :param status: the solver status
    :param mip_gap: the relative MIP gap
    """

    value: float
    chosen: dict[str, tuple[int, int, int, bool]]
    status: int
    mip_gap: float


def opt_exact(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    params: AstraeaParams,
    horizon: int,
    time_limit: float = 60.0,
) -> OptResult:
    """OPT-exact of spec B4 on slots 1..``horizon``.

    :param cluster: servers, tenants and quotas
    :param jobs: the jobs
    :param params: Astraea's parameters (λ, θ, worker mode; default :class:`AstraeaParams`)
    :param horizon: slots 1..horizon
    :param time_limit: seconds for the MILP
    :returns: the optimum
    :raises InputError: an instance too large for the exact MILP
    """
    T = check_int("horizon", horizon, minimum=1)
    check_positive("time_limit", time_limit)
    if len(jobs) > 8 or len(cluster.servers) > 8 or T > 64:
        raise InputError("instance", (len(jobs), len(cluster.servers), T), "is too large for OPT-exact (8, 8, 64)")
    S = len(cluster.servers)
    cw = np.array([s.n_workers for s in cluster.servers])
    cp = np.array([s.n_ps for s in cluster.servers])
    bw, bp = cluster.bw_worker_mbps, cluster.bw_ps_mbps
    obj: list[float] = []
    lb: list[float] = []
    ub: list[float] = []
    integ: list[int] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    rlo: list[float] = []
    rhi: list[float] = []
    meta: dict[int, tuple[str, int, int, int, bool]] = {}

    def var(c: float, lo: float, hi: float, integral: int = 1) -> int:
        obj.append(-c)
        lb.append(lo)
        ub.append(hi)
        integ.append(integral)
        return len(obj) - 1

    def row(entries: list[tuple[int, float]], lo: float, hi: float) -> None:
        r = len(rlo)
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        rlo.append(lo)
        rhi.append(hi)

    cap_entries: dict[tuple[str, int, int], list[tuple[int, float]]] = {}

    def use(kind: str, s: int, a: int, b: int, col: int, amount: float) -> None:
        for t in range(a, b + 1):
            cap_entries.setdefault((kind, s, t), []).append((col, amount))

    for j in jobs:
        n_c, n_d = throughput(j, bw)
        choice: list[tuple[int, float]] = []
        t_min = math.ceil(j.arrival) + 1
        for dw in allowed_workers(j, params):
            for cent in (True, False):
                d = duration(j.work, n_c if cent else n_d, dw)
                for t0 in range(t_min, T - d + 2):
                    t1 = t0 + d - 1
                    v = float(j.utility(float(t1 - j.arrival)))
                    if v <= 0:
                        continue
                    if cent:
                        for s in range(S):
                            if cw[s] >= dw and cp[s] >= 1:
                                x = var(v, 0, 1)
                                meta[x] = (j.jid, t0, t1, dw, True)
                                choice.append((x, 1.0))
                                use("w", s, t0, t1, x, dw)
                                use("p", s, t0, t1, x, 1)
                    else:
                        x = var(v, 0, 1)
                        meta[x] = (j.jid, t0, t1, dw, False)
                        choice.append((x, 1.0))
                        ys, vs = [], []
                        for s in range(S):
                            y = var(0.0, 0, int(cw[s]))
                            ps = var(0.0, 0, 1)
                            z = var(0.0, 0, int(cp[s]))
                            ys.append(y)
                            vs.append(ps)
                            row([(z, 1.0), (ps, -1.0)], 0, np.inf)  # z >= v
                            row([(z, 1.0), (ps, -float(cp[s]))], -np.inf, 0)  # z <= C_sp v
                            # (D_w x − y) b_w ≤ z b_p + D_w b_w (1 − v)
                            row([(x, dw * bw), (y, -bw), (z, -bp), (ps, dw * bw)], -np.inf, dw * bw)
                            use("w", s, t0, t1, y, 1.0)
                            use("p", s, t0, t1, z, 1.0)
                        row([(y, 1.0) for y in ys] + [(x, -float(dw))], 0, 0)
                        row([(p, 1.0) for p in vs] + [(x, -1.0)], 0, 0)
        if choice:
            row(choice, 0, 1)
    for (kind, s, _t), entries in cap_entries.items():
        row(entries, -np.inf, float(cw[s] if kind == "w" else cp[s]))
    if not obj:
        return OptResult(0.0, {}, 0, 0.0)
    A = coo_matrix((vals, (rows, cols)), shape=(len(rlo), len(obj))).tocsr()
    res = milp(
        np.array(obj),
        constraints=LinearConstraint(A, np.array(rlo), np.array(rhi)),
        integrality=np.array(integ),
        bounds=Bounds(np.array(lb), np.array(ub)),
        options={"time_limit": time_limit, "mip_rel_gap": 1e-9},
    )
    if res.x is None:
        raise SolveError("astraea OPT-exact", res.status, res.message)
    chosen = {}
    for col, (jid, t0, t1, dw, cent) in meta.items():
        if res.x[col] > 0.5:
            chosen[jid] = (t0, t1, dw, cent)
    gap = float(getattr(res, "mip_gap", 0.0) or 0.0)
    return OptResult(float(-res.fun), chosen, int(res.status), gap)
