"""Baseline schedulers on the shared slot simulator: FIFO, DRF, Dorm and RRH (spec oasis.md §4,
pdors.md §4). They are generic over :class:`SimJob`; ``marketsim.market.oasis.baselines`` and
``marketsim.market.pdors.baselines`` adapt each paper's jobs and cluster."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import Bounds

from marketsim.market.auction.offline import RowBuilder
from marketsim.market.auction.slotsim import EPS, Pools, RoundRobin, SimJob, SlotSimulator
from marketsim.market.milp import milp

__all__ = ["Fifo", "Drf", "Dorm", "Rrh", "Pools", "drf_fill", "fixed_workers", "BASELINES"]


class Fifo(SlotSimulator):
    """Admit all; run in arrival order with the fixed bundle, strict head-of-line blocking; a job
    whose bundle cannot fit the empty cluster is dropped at arrival."""

    name = "fifo"

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.queue: list[SimJob] = []

    def on_arrival(self, job: SimJob, t: int) -> bool:
        probe = RoundRobin(self.pools).place(
            np.zeros_like(self.usage),
            job.fixed_workers,
            job.ps_count(job.fixed_workers),
            job.worker_demand,
            job.ps_demand,
        )
        if probe is None:
            return False
        self.queue.append(job)
        return True

    def reallocate(self, t: int) -> None:
        while self.queue and self.try_place(self.queue[0], self.queue[0].fixed_workers):
            self.queue.pop(0)


def drf_fill(sim: SlotSimulator, jobs: list[SimJob]) -> dict[int, int]:
    """Progressive filling by dominant share (ties: earlier arrival, then id), one worker (+ PSs to
    reach the PS rule) at a time, round-robin; returns worker counts. Sets ``job.w``/``job.s``."""
    n = {j.job_id: 0 for j in jobs}
    M = sim.usage.shape[0]
    for j in jobs:
        j.w = np.zeros(M, dtype=np.int64)
        j.s = np.zeros(M, dtype=np.int64)
    act = list(jobs)
    while act:
        j = min(act, key=lambda x: (sim.dominant_share(x, n[x.job_id]), x.arrival, x.job_id))
        k = n[j.job_id]
        if k >= j.max_workers:
            act.remove(j)
            continue
        res = sim.rr.place(sim.usage, 1, j.ps_count(k + 1) - j.ps_count(k), j.worker_demand, j.ps_demand)
        if res is None:
            act.remove(j)
            continue
        j.w += res[0]
        j.s += res[1]
        n[j.job_id] = k + 1
    return n


class Drf(SlotSimulator):
    """Admit all; at every event recompute all unfinished jobs by DRF progressive filling."""

    name = "drf"

    def reallocate(self, t: int) -> None:
        for j in self.active:
            self.release(j)
        drf_fill(self, self.active)


class Dorm(SlotSimulator):
    """Admit all; at every event an MILP sets worker/PS numbers and placement maximising mean
    utilisation with DRF-based fairness (θ_f) and an adjustment-overhead budget Φ; fallbacks drop
    fairness, then overhead, then allow ``n_j = 0`` (logged in ``fallbacks``)."""

    name = "dorm"

    def __init__(self, *a, theta_f: float = 0.1, time_limit: float = 10.0, **k) -> None:
        super().__init__(*a, **k)
        self.theta_f = theta_f
        self.time_limit = time_limit
        self.fallbacks: list[tuple[int, str]] = []

    def reallocate(self, t: int) -> None:
        jobs = self.active
        if not jobs:
            return
        prev = {j.job_id: (int(j.w.sum()) if j.w is not None else 0) for j in jobs}
        for j in jobs:
            self.release(j)
        drf_n = drf_fill(self, jobs)  # DRF reference shares at this event
        ds = {j.job_id: self.dominant_share(j, drf_n[j.job_id]) for j in jobs}
        for j in jobs:
            self.release(j)
        for level, name in ((0, "full"), (1, "no-fairness"), (2, "no-overhead"), (3, "n>=0")):
            sol = self._solve(jobs, prev, ds, level)
            if sol is not None:
                if level:
                    self.fallbacks.append((t, name))
                break
        else:
            return
        for j, (w, s) in zip(jobs, sol, strict=True):
            j.w, j.s = w, s
            self.usage += np.outer(w, j.worker_demand) + np.outer(s, j.ps_demand)

    def _solve(self, jobs, prev, ds, level):
        cap = self.pools.capacity
        M, R = cap.shape
        Wh, Ph = self.pools.worker_hosts, self.pools.ps_hosts
        J = len(jobs)
        nW, nP = len(Wh), len(Ph)
        per = nW + nP + 1
        nv = J * per
        c = np.zeros(nv)
        lb, ub = np.zeros(nv), np.zeros(nv)
        rows = RowBuilder()
        used_r = [(h, r) for h in range(M) for r in range(R) if cap[h, r] > 0]
        norm = 1.0 / max(1, len(used_r))
        total = cap.sum(axis=0)
        running = [j for j in jobs if prev[j.job_id] > 0]
        for i, j in enumerate(jobs):
            base = i * per
            ys, zs, chg = base + np.arange(nW), base + nW + np.arange(nP), base + nW + nP
            for a, h in enumerate(Wh):
                c[ys[a]] = norm * sum(j.worker_demand[r] / cap[h, r] for r in range(R) if cap[h, r] > 0)
            for a, h in enumerate(Ph):
                c[zs[a]] = norm * sum(j.ps_demand[r] / cap[h, r] for r in range(R) if cap[h, r] > 0)
            ub[ys] = j.max_workers
            ub[zs] = j.max_workers
            ub[chg] = 1
            rows.add(ys, 1.0, 0.0 if level >= 3 else 1.0, float(j.max_workers))
            rows.add([*ys, *zs], [j.ps_ratio] * nW + [-1.0] * nP, ub=0.0)  # ratio·n <= m
            if j.ps_le_workers:
                rows.add([*zs, *ys], [1.0] * nP + [-1.0] * nW, ub=0.0)
            if level < 1 and ds[j.job_id] > 0:
                rstar = int(np.argmax((j.worker_demand + j.ps_count(1) * j.ps_demand) / np.where(total > 0, total, 1)))
                rows.add(
                    [*ys, *zs],
                    [j.worker_demand[rstar] / total[rstar]] * nW + [j.ps_demand[rstar] / total[rstar]] * nP,
                    lb=(1 - self.theta_f) * ds[j.job_id],
                )
            if level < 2 and prev[j.job_id] > 0:
                N = float(j.max_workers)
                rows.add([chg, *ys], [1.0] + [-1.0 / N] * nW, lb=-prev[j.job_id] / N)
                rows.add([chg, *ys], [1.0] + [1.0 / N] * nW, lb=prev[j.job_id] / N)
        if level < 2 and running:
            phi = max(1, math.ceil(0.2 * len(running)))
            rows.add([jobs.index(j) * per + nW + nP for j in running], 1.0, ub=float(phi))
        for h in range(M):
            for r in range(R):
                cols, vals = [], []
                for i, j in enumerate(jobs):
                    if h in Wh and j.worker_demand[r] > 0:
                        cols.append(i * per + int(np.flatnonzero(Wh == h)[0]))
                        vals.append(j.worker_demand[r])
                    if h in Ph and j.ps_demand[r] > 0:
                        cols.append(i * per + nW + int(np.flatnonzero(Ph == h)[0]))
                        vals.append(j.ps_demand[r])
                if cols:
                    rows.add(cols, vals, ub=float(cap[h, r]))
        res = milp(
            -c,
            integrality=np.ones(nv),
            bounds=Bounds(lb, ub),
            constraints=rows.constraint(nv),
            options={"time_limit": self.time_limit, "mip_rel_gap": 1e-4},
        )
        if res.x is None:
            return None
        x = np.rint(res.x).astype(np.int64)
        out = []
        for i, _ in enumerate(jobs):
            w = np.zeros(M, dtype=np.int64)
            s = np.zeros(M, dtype=np.int64)
            w[Wh] += x[i * per : i * per + nW]
            s[Ph] += x[i * per + nW : i * per + nW + nP]
            out.append((w, s))
        return out


class Rrh(SlotSimulator):
    """Risk-Reward Heuristic (Irwin et al.): admit iff own projected utility minus the delay cost it
    imposes on admitted jobs exceeds ``theta_admit``; at events run the jobs with positive reward
    (present value vs. the decay it imposes), keeping running placements, others pause."""

    name = "rrh"

    def __init__(self, *a, theta_admit: float = 0.0, alpha_rr: float = 0.5, disc: float = 0.01, **k) -> None:
        super().__init__(*a, **k)
        self.theta_admit, self.alpha_rr, self.disc = theta_admit, alpha_rr, disc

    def _rpt(self, j: SimJob) -> int:
        rate = max(1, j.fixed_workers)
        return max(1, math.ceil((j.total_work - j.done) / rate - EPS))

    def _project(self, jobs: list[SimJob], t: int) -> dict[int, int | None]:
        """List-schedule from slot t: running jobs continue, others start in order when they fit."""
        usage = np.zeros_like(self.usage)
        rr = RoundRobin(self.pools)
        remaining = {j.job_id: j.total_work - j.done for j in jobs}
        rate = {j.job_id: max(1, j.fixed_workers) for j in jobs}
        running, waiting = [], []
        for j in jobs:
            if j.running:
                usage += np.outer(j.w, j.worker_demand) + np.outer(j.s, j.ps_demand)
                running.append(j)
            else:
                waiting.append(j)
        comp: dict[int, int | None] = {j.job_id: None for j in jobs}
        placed = {}
        for tt in range(t, self.T):
            still = []
            for j in waiting:
                res = rr.place(usage, j.fixed_workers, j.ps_count(j.fixed_workers), j.worker_demand, j.ps_demand)
                if res is None:
                    still.append(j)
                else:
                    placed[j.job_id] = res
                    running.append(j)
            waiting = still
            nxt = []
            for j in running:
                remaining[j.job_id] -= rate[j.job_id]
                if remaining[j.job_id] <= EPS:
                    comp[j.job_id] = tt
                    w, s = (j.w, j.s) if j.job_id not in placed else placed[j.job_id]
                    usage -= np.outer(w, j.worker_demand) + np.outer(s, j.ps_demand)
                else:
                    nxt.append(j)
            running = nxt
            if not running and not waiting:
                break
        return comp

    def _value(self, j: SimJob, comp: int | None) -> float:
        return float(j.utility(comp - j.arrival + 1)) if comp is not None else 0.0

    def on_arrival(self, job: SimJob, t: int) -> bool:
        adm = sorted(self.active, key=lambda j: (j.arrival, j.job_id))
        c0 = self._project(adm, t)
        c1 = self._project([*adm, job], t)
        delay = sum(self._value(i, c0[i.job_id]) - self._value(i, c1[i.job_id]) for i in adm)
        return self._value(job, c1[job.job_id]) - delay > self.theta_admit

    def reallocate(self, t: int) -> None:
        rewards = []
        for i in self.active:
            rpt = self._rpt(i)
            pv = float(i.utility(t + rpt - i.arrival)) / (1 + self.disc * rpt)
            cost = 0.0
            for j in self.active:
                if j is not i:
                    rj = self._rpt(j)
                    cost += float(j.utility(t + rj - j.arrival)) - float(j.utility(t + rj - j.arrival + 1))
            cost *= rpt
            rewards.append(((self.alpha_rr * pv - (1 - self.alpha_rr) * cost) / rpt, i))
        rewards.sort(key=lambda x: (-x[0], x[1].arrival, x[1].job_id))
        for reward, i in rewards:
            if reward <= 0 and i.running:
                self.release(i)
        for reward, i in rewards:
            if reward > 0 and not i.running:
                self.try_place(i, i.fixed_workers)


def fixed_workers(rng: np.random.Generator, cap: int, hi: int = 30) -> int:
    """FIFO/RRH bundle size ``U{1..hi}`` capped at the job's worker cap."""
    return int(min(cap, rng.integers(1, hi + 1)))


BASELINES: dict[str, type[SlotSimulator]] = {"fifo": Fifo, "drf": Drf, "dorm": Dorm, "rrh": Rrh}
