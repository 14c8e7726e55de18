"""Shared slot simulator for the non-posted-price baselines (FIFO, DRF, RRH, Dorm; spec oasis.md §4,
pdors.md §4): jobs are reallocated at arrival/completion events, progress is accrued slot by slot
with the mechanism's own speed model, unfinished jobs earn 0 at the horizon.

Decisions are final when a job completes, is dropped/rejected, or the horizon ends (``finish``);
``payment`` is 0 (these schedulers charge nothing) and ``schedule`` is the realised one.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from marketsim.market.auction.base import Decision, OnlineMechanism, Report, Schedule
from marketsim.market.errors import InputError, as_float_array

__all__ = ["SimJob", "Pools", "RoundRobin", "SlotSimulator"]

EPS = 1e-9


@dataclass
class SimJob:
    """A job as the simulator sees it: ``fixed_workers`` (FIFO/RRH bundle size), PS count rule,
    per-unit demands (R,), total work and a progress function ``progress(w (M,), s (M,)) -> work``."""

    job_id: int
    arrival: int
    utility: Callable[[float], float]
    max_workers: int
    fixed_workers: int
    ps_count: Callable[[int], int]
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    total_work: float
    progress: Callable[[np.ndarray, np.ndarray], float]
    ps_ratio: float = 1.0  # linear PS rule for MILP baselines: #PS >= ps_ratio * #workers
    ps_le_workers: bool = False  # OASiS (7): #PS <= #workers
    done: float = 0.0
    w: np.ndarray | None = None
    s: np.ndarray | None = None
    history: dict = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self.w is not None and self.w.sum() > 0


@dataclass(frozen=True)
class Pools:
    """Machines (M, R) and which of them may host workers / PSs (OASiS: disjoint; PD-ORS: all)."""

    capacity: np.ndarray
    worker_hosts: np.ndarray
    ps_hosts: np.ndarray
    shared_pointer: bool = False

    def __post_init__(self) -> None:
        cap = as_float_array("capacity", self.capacity, ndim=2, nonneg=True)
        if cap.shape[0] == 0:
            raise InputError("capacity", cap.shape, "must have at least one machine (empty cluster)")
        object.__setattr__(self, "capacity", cap)


class RoundRobin:
    """Round-robin placement with rotating pointers that persist across calls."""

    def __init__(self, pools: Pools) -> None:
        self.pools = pools
        self.ptr_w = 0
        self.ptr_s = 0

    def _place_units(self, hosts, n, dem, usage, ptr, out):
        k = len(hosts)
        for _ in range(n):
            for step in range(k):
                h = hosts[(ptr + step) % k]
                if (usage[h] + dem <= self.pools.capacity[h] + EPS).all():
                    usage[h] += dem
                    out[h] += 1
                    ptr = (ptr + step + 1) % k
                    break
            else:
                return None
        return ptr

    def place(self, usage: np.ndarray, nw: int, ns: int, alpha: np.ndarray, beta: np.ndarray):
        """Place ``nw`` workers then ``ns`` PSs one unit at a time; updates ``usage`` (M, R) and
        returns ``(w, s)`` or ``None`` (rolled back) if some unit finds no room in a full cycle."""
        M = usage.shape[0]
        trial = usage.copy()
        w = np.zeros(M, dtype=np.int64)
        s = np.zeros(M, dtype=np.int64)
        pw = self._place_units(self.pools.worker_hosts, nw, alpha, trial, self.ptr_w, w)
        if pw is None:
            return None
        if self.pools.shared_pointer:
            ps_ptr = self._place_units(self.pools.ps_hosts, ns, beta, trial, pw, s)
        else:
            ps_ptr = self._place_units(self.pools.ps_hosts, ns, beta, trial, self.ptr_s, s)
        if ps_ptr is None:
            return None
        if self.pools.shared_pointer:
            self.ptr_w = self.ptr_s = ps_ptr
        else:
            self.ptr_w, self.ptr_s = pw, ps_ptr
        usage[:] = trial
        return w, s


class SlotSimulator(OnlineMechanism):
    """Base of the event-driven baselines. Subclasses implement ``on_arrival(job, t) -> bool``
    (admit?) and ``reallocate(t)`` (set ``job.w``/``job.s`` of unfinished admitted jobs)."""

    def __init__(self, T: int, pools: Pools, to_simjob: Callable[[Report], SimJob], rng: np.random.Generator) -> None:
        super().__init__(T)
        if not isinstance(rng, np.random.Generator):
            raise InputError("rng", rng, "must be a numpy Generator (explicit seeding)")
        self.pools = pools
        self.rr = RoundRobin(pools)
        self.rng = rng
        self.to_simjob = to_simjob
        self.active: list[SimJob] = []
        self.usage = np.zeros_like(pools.capacity)
        self._completed_last = False

    # -- helpers for subclasses
    def release(self, job: SimJob) -> None:
        if job.w is not None:
            self.usage -= np.outer(job.w, job.worker_demand) + np.outer(job.s, job.ps_demand)
            self.usage[np.abs(self.usage) < 1e-12] = 0.0
        job.w = job.s = None

    def try_place(self, job: SimJob, nw: int) -> bool:
        res = self.rr.place(self.usage, nw, job.ps_count(nw), job.worker_demand, job.ps_demand)
        if res is None:
            return False
        job.w, job.s = res
        return True

    def on_arrival(self, job: SimJob, t: int) -> bool:
        return True

    @abstractmethod
    def reallocate(self, t: int) -> None:
        """The baseline's policy for one slot (every subclass implements it)."""

    def _decision(self, job: SimJob, admitted: bool, completion: int | None) -> Decision:
        util = float(job.utility(completion - job.arrival + 1)) if completion is not None else 0.0
        sched = None
        if job.history:
            last = max(job.history)
            sched = Schedule(
                job.job_id, last, {t: v[0] for t, v in job.history.items()}, {t: v[1] for t, v in job.history.items()}
            )
        return Decision(job.job_id, admitted, sched, 0.0, completion, util, util)

    def step(self, now: int, new_reports: Sequence[Report]) -> list[Decision]:
        reps = self._advance(now, new_reports)
        out: list[Decision] = []
        events = self._completed_last
        for r in reps:
            job = self.to_simjob(r)
            events = True
            if self.on_arrival(job, now):
                self.active.append(job)
            else:
                out.append(self._decision(job, False, None))
        if events:
            self.reallocate(now)
        self._completed_last = False
        still = []
        for job in self.active:
            if job.running:
                job.history[now] = (job.w.copy(), job.s.copy())
                job.done += job.progress(job.w, job.s)
            if job.done >= job.total_work * (1 - 1e-12) - EPS:
                self.release(job)
                out.append(self._decision(job, True, now))
                self._completed_last = True
            else:
                still.append(job)
        self.active = still
        assert (self.usage <= self.pools.capacity + 1e-6).all()
        return out

    def finish(self) -> list[Decision]:
        out = [self._decision(j, True, None) for j in self.active]
        for j in self.active:
            self.release(j)
        self.active = []
        return out

    def dominant_share(self, job: SimJob, n: int) -> float:
        total = self.pools.capacity.sum(axis=0)
        use = n * job.worker_demand + job.ps_count(n) * job.ps_demand
        with np.errstate(divide="ignore", invalid="ignore"):
            sh = np.where(total > 0, use / np.where(total > 0, total, 1), np.where(use > 0, math.inf, 0))
        return float(sh.max())
