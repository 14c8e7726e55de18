"""Exact offline optimum of DMLRS (spec pdors.md §3.7): Fact 1 linearised by mode binaries,
exact sample accounting with the planned per-sample times, ratio rows; HiGHS MILP."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from marketsim.market.auction.base import Schedule
from marketsim.market.auction.offline import OfflineResult, RowBuilder, solve_milp
from marketsim.market.errors import InputError
from marketsim.market.pdors.model import PdorsCluster, PdorsJob

__all__ = ["pdors_offline_optimum"]


def pdors_offline_optimum(
    cluster: PdorsCluster,
    jobs: Sequence[PdorsJob],
    time_limit: float = 600.0,
    mip_rel_gap: float = 1e-6,
    node_limit: int | None = None,
) -> OfflineResult:
    """Maximise total utility; variables per job and slot ``t >= a``: ``u, e, o_h`` binaries and
    ``wI_h, sI_h, wE_h, sE_h`` integers (co-located on one machine vs split).

    :param cluster: the cluster
    :param jobs: every job's true type
    :param time_limit: seconds for the MILP
    :param mip_rel_gap: relative MIP gap at which the solve stops
    :param node_limit: most branch-and-bound nodes, or ``None``
    :returns: the optimum's welfare, status and bound
    :raises InputError: a job with per-sample time 0
    """
    T, H, sh = cluster.T, cluster.H, cluster.slot_hours
    C = cluster.capacity
    R = C.shape[1]
    n = 0
    obj: list[float] = []
    lbs: list[float] = []
    ubs: list[float] = []
    idx = []
    for j in jobs:
        j.validate_for(cluster)
        if j.c_int(sh) <= 0:
            raise InputError(f"job[{j.job_id}].tau", j.tau, "per-sample time must be > 0 for the offline MILP")
        nt = T - j.arrival
        d = {"x": n}
        n += 1
        for name, size in (
            ("u", (nt,)),
            ("e", (nt,)),
            ("o", (nt, H)),
            ("wI", (nt, H)),
            ("sI", (nt, H)),
            ("wE", (nt, H)),
            ("sE", (nt, H)),
        ):
            k = int(np.prod(size))
            d[name] = np.arange(n, n + k).reshape(size)
            n += k
        idx.append(d)
        f = np.asarray(j.utility(np.arange(1, nt + 1, dtype=float)), dtype=float)
        F = float(j.global_batch)
        obj += [0.0, *f] + [0.0] * (nt + 5 * nt * H)
        lbs += [0.0] * (1 + 2 * nt + 5 * nt * H)
        ubs += [1.0] * (1 + 2 * nt + nt * H) + [F] * (4 * nt * H)
    rows = RowBuilder()
    for j, d in zip(jobs, idx, strict=True):
        nt = T - j.arrival
        F = float(j.global_batch)
        g = float(j.ratio)
        rows.add([*d["u"], d["x"]], [1.0] * nt + [-1.0], 0.0, 0.0)
        ci, ce = j.c_int(sh) * j.V, j.c_ext(sh) * j.V
        rows.add([*d["wI"].ravel(), *d["wE"].ravel(), d["x"]], [1 / ci] * (nt * H) + [1 / ce] * (nt * H) + [-1.0], 0.0)
        for k in range(nt):
            rows.add([*d["o"][k], d["e"][k]], 1.0, ub=1.0)
            for h in range(H):
                rows.add([d["wI"][k, h], d["o"][k, h]], [1.0, -F], ub=0.0)
                rows.add([d["sI"][k, h], d["o"][k, h]], [1.0, -F], ub=0.0)
            rows.add([*d["wE"][k], d["e"][k]], [1.0] * H + [-F], ub=0.0)
            rows.add([*d["sE"][k], d["e"][k]], [1.0] * H + [-F], ub=0.0)
            rows.add([*d["wI"][k], *d["wE"][k], *d["u"][k:]], [1.0] * (2 * H) + [-F] * (nt - k), ub=0.0)
            rows.add([*d["sI"][k], *d["wI"][k]], [g] * H + [-1.0] * H, lb=0.0)
            rows.add([*d["sE"][k], *d["wE"][k]], [g] * H + [-1.0] * H, lb=0.0)
    for t in range(T):
        act = [(j, d, t - j.arrival) for j, d in zip(jobs, idx, strict=True) if t >= j.arrival]
        for h in range(H):
            for r in range(R):
                cols, vals = [], []
                for j, d, k in act:
                    for name, dem in (
                        ("wI", j.worker_demand[r]),
                        ("wE", j.worker_demand[r]),
                        ("sI", j.ps_demand[r]),
                        ("sE", j.ps_demand[r]),
                    ):
                        if dem > 0:
                            cols.append(d[name][k, h])
                            vals.append(dem)
                if cols:
                    rows.add(cols, vals, ub=float(C[h, r]))
    x, inc, bound, optimal, status, msg, secs = solve_milp(
        np.array(obj), rows, np.array(lbs), np.array(ubs), np.ones(n), time_limit, mip_rel_gap, "pdors-offline",
        node_limit=node_limit,
    )
    scheds: dict[int, Schedule] = {}
    if x is not None:
        for j, d in zip(jobs, idx, strict=True):
            if x[d["x"]] > 0.5:
                w = (x[d["wI"]] + x[d["wE"]]).astype(np.int64)
                s = (x[d["sI"]] + x[d["sE"]]).astype(np.int64)
                work = [k for k in range(w.shape[0]) if w[k].sum() > 0]
                modes = {j.arrival + k: ("colocated" if x[d["o"][k]].sum() > 0.5 else "split") for k in work}
                scheds[j.job_id] = Schedule(
                    j.job_id,
                    j.arrival + max(work),
                    {j.arrival + k: w[k] for k in work},
                    {j.arrival + k: s[k] for k in work},
                    modes,
                )
    return OfflineResult(inc, bound, optimal, status, msg, secs, scheds, n, len(rows.lb))
