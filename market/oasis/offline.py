"""Exact offline optimum of OASiS' problem (1)–(13) as a time-indexed MILP (spec oasis.md §3.9)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from marketsim.market.auction.base import Schedule
from marketsim.market.auction.offline import OfflineResult, RowBuilder, solve_milp
from marketsim.market.oasis.model import OasisCluster, OasisRequest

__all__ = ["oasis_offline_optimum"]


def oasis_offline_optimum(
    cluster: OasisCluster,
    requests: Sequence[OasisRequest],
    time_limit: float = 600.0,
    mip_rel_gap: float = 1e-6,
    node_limit: int | None = None,
) -> OfflineResult:
    """Maximise total utility over all feasible schedules of all jobs (worker-slot work model);
    ``node_limit``: at most this many branch-and-bound nodes (deterministic; then not ``optimal``).

    Variables per job i: ``x_i``, ``u_it`` (completes in t), ``y_iht``, ``z_ikt`` for ``t >= a_i``.

    :param cluster: the cluster
    :param requests: every job's (true) request
    :param time_limit: seconds for the MILP
    :param mip_rel_gap: relative MIP gap at which the solve stops
    :param node_limit: most branch-and-bound nodes, or ``None``
    :returns: the optimum's welfare, status and bound
    """
    T, H, K = cluster.T, cluster.H, cluster.K
    C, c = cluster.worker_capacity, cluster.ps_capacity
    R = C.shape[1]
    for q in requests:
        q.validate_for(T, R)
    n = 0
    idx = []
    obj, lbs, ubs = [], [], []
    for q in requests:
        nt = T - q.arrival
        d = {"x": n}
        n += 1
        d["u"] = np.arange(n, n + nt)
        n += nt
        d["y"] = np.arange(n, n + nt * H).reshape(nt, H)
        n += nt * H
        d["z"] = np.arange(n, n + nt * K).reshape(nt, K)
        n += nt * K
        idx.append(d)
        f = np.asarray(q.utility(np.arange(1, nt + 1, dtype=float)), dtype=float)
        obj.extend([0.0, *f, *np.zeros(nt * (H + K))])
        lbs.extend([0.0] * (1 + nt + nt * (H + K)))
        ubs.extend([1.0] * (1 + nt) + [float(q.max_workers)] * (nt * (H + K)))
    rows = RowBuilder()
    for q, d in zip(requests, idx, strict=True):
        nt = T - q.arrival
        rows.add([*d["u"], d["x"]], [1.0] * nt + [-1.0], 0.0, 0.0)
        rows.add([*d["y"].ravel(), d["x"]], [1.0] * (nt * H) + [-float(q.work_units)], 0.0)
        for j in range(nt):
            rows.add([*d["y"][j], *d["u"][j:]], [1.0] * H + [-float(q.max_workers)] * (nt - j), ub=0.0)
            rows.add([*d["y"][j], *d["z"][j]], [q.ps_num] * H + [-q.ps_den] * K, ub=0.0)
            rows.add([*d["z"][j], *d["y"][j]], [1.0] * K + [-1.0] * H, ub=0.0)
    for t in range(T):
        act = [(q, d, t - q.arrival) for q, d in zip(requests, idx, strict=True) if t >= q.arrival]
        for r in range(R):
            for h in range(H):
                cols = [d["y"][j, h] for q, d, j in act if q.worker_demand[r] > 0]
                vals = [q.worker_demand[r] for q, d, j in act if q.worker_demand[r] > 0]
                if cols:
                    rows.add(cols, vals, ub=float(C[h, r]))
            for k in range(K):
                cols = [d["z"][j, k] for q, d, j in act if q.ps_demand[r] > 0]
                vals = [q.ps_demand[r] for q, d, j in act if q.ps_demand[r] > 0]
                if cols:
                    rows.add(cols, vals, ub=float(c[k, r]))
    x, inc, bound, optimal, status, msg, secs = solve_milp(
        np.array(obj), rows, np.array(lbs), np.array(ubs), np.ones(n), time_limit, mip_rel_gap, "oasis-offline",
        node_limit=node_limit,
    )
    scheds: dict[int, Schedule] = {}
    if x is not None:
        for q, d in zip(requests, idx, strict=True):
            if x[d["x"]] > 0.5:
                ys = x[d["y"]].astype(np.int64)
                zs = x[d["z"]].astype(np.int64)
                work = [j for j in range(ys.shape[0]) if ys[j].sum() > 0]
                workers = {q.arrival + j: ys[j] for j in work}
                ps = {q.arrival + j: zs[j] for j in work}
                scheds[q.job_id] = Schedule(q.job_id, q.arrival + max(work), workers, ps)
    return OfflineResult(inc, bound, optimal, status, msg, secs, scheds, n, len(rows.lb))
