"""PD-ORS' baselines (FIFO, DRF, Dorm on one machine pool, and OASiS via the spec's adapter)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from marketsim.market.auction.base import Decision, OnlineMechanism, Schedule
from marketsim.market.auction.baselines import BASELINES, fixed_workers
from marketsim.market.auction.slotsim import Pools, SimJob, SlotSimulator
from marketsim.market.errors import InputError, check_choice
from marketsim.market.oasis.constants import OasisConstants, estimate_constants
from marketsim.market.oasis.mechanism import Oasis
from marketsim.market.oasis.model import OasisCluster, OasisRequest
from marketsim.market.pdors.model import EPS, PdorsCluster, PdorsJob, gbps_to_mb_per_slot, is_colocated

__all__ = ["pdors_pools", "pdors_simjob", "make_pdors_baseline", "oasis_request_for", "OasisForPdors"]


def pdors_pools(cluster: PdorsCluster) -> Pools:
    """All machines host both; one rotating pointer over all machines (workers first, then PSs)."""
    idx = np.arange(cluster.H)
    return Pools(cluster.capacity, idx, idx, shared_pointer=True)


def pdors_simjob(job: PdorsJob, rng: np.random.Generator, slot_hours: float = 1.0) -> SimJob:
    """Progress = samples per slot from (1) with Fact 1 and the actual Σw/Σs."""

    def progress(w: np.ndarray, s: np.ndarray) -> float:
        nw, ns = int(w.sum()), int(s.sum())
        if nw == 0 or ns == 0:
            return 0.0
        gbps = job.bw_internal_gbps if is_colocated(w, s) else job.bw_external_gbps
        c = job.tau + 2.0 * job.grad_mb * nw / (ns * gbps_to_mb_per_slot(gbps, slot_hours) * job.global_batch)
        return nw / c if c > 0 else math.inf

    return SimJob(
        job.job_id,
        job.arrival,
        job.utility,
        job.global_batch,
        fixed_workers(rng, job.global_batch),
        lambda n: int(math.ceil(n / job.ratio - EPS)),
        job.worker_demand,
        job.ps_demand,
        float(job.V),
        progress,
        ps_ratio=1.0 / job.ratio,
        ps_le_workers=False,
    )


def make_pdors_baseline(name: str, cluster: PdorsCluster, rng: np.random.Generator, **options) -> SlotSimulator:
    """``fifo`` | ``drf`` | ``dorm`` (and ``rrh``, which the PD-ORS paper does not use).

    :param name: ``fifo``, ``drf``, ``dorm`` or ``rrh``
    :param cluster: the PD-ORS cluster
    :param rng: the baselines' randomness
    :param options: passed to the baseline's simulator
    :returns: the slot simulator running the baseline
    :raises InputError: an unknown name, a cluster of the wrong type
    """
    check_choice("baseline", name, list(BASELINES))
    if not isinstance(cluster, PdorsCluster):
        raise InputError("cluster", cluster, "must be a PdorsCluster")

    def to_simjob(job: PdorsJob) -> SimJob:
        job.validate_for(cluster)
        return pdors_simjob(job, rng, cluster.slot_hours)

    return BASELINES[name](cluster.T, pdors_pools(cluster), to_simjob, rng, **options)


def _split_cluster(cluster: PdorsCluster) -> OasisCluster:
    if cluster.H < 2:
        raise InputError("cluster.machines", cluster.H, "must be >= 2 to split into worker and PS hosts for OASiS")
    h = math.ceil(cluster.H / 2)
    cap = cluster.capacity
    return OasisCluster.build(cluster.T, cap[:h], cap[h:], cluster.resources, cluster.slot_hours)


def oasis_request_for(job: PdorsJob, slot_hours: float = 1.0) -> OasisRequest:
    """The spec's adapter: W = ⌈V c_e⌉ worker-slots, N = F, n_ps(n) = ⌈n/γ⌉, demands α/β,
    d = ⌈(V/F) c_e⌉."""
    ce = job.c_ext(slot_hours)
    W = max(1, math.ceil(job.V * ce - EPS))
    d = max(1, math.ceil(job.V / job.global_batch * ce - EPS))
    ps = job.ps_demand if (job.ps_demand > 0).any() else job.worker_demand * 0 + EPS
    return OasisRequest(
        job.job_id, job.arrival, W, job.global_batch, 1.0, float(job.ratio), job.worker_demand, ps, job.utility, d
    )


class OasisForPdors(OnlineMechanism):
    """OASiS as PD-ORS' baseline: machines ``< ⌈H/2⌉`` host workers, the rest PSs; schedules are
    mapped back to machine indices (every slot is split, rate c^(e))."""

    name = "oasis-pdors"

    def __init__(
        self,
        cluster: PdorsCluster,
        calib: Sequence[PdorsJob] | None = None,
        constants: OasisConstants | None = None,
        **options,
    ) -> None:
        super().__init__(cluster.T)
        self.pcluster = cluster
        self.ocluster = _split_cluster(cluster)
        if constants is None:
            if not calib:
                raise InputError("calib", calib, "must be given when constants are not")
            constants = estimate_constants([oasis_request_for(j, cluster.slot_hours) for j in calib], self.ocluster)
        self.inner = Oasis(self.ocluster, constants, **options)
        self.h = self.ocluster.H

    def _map(self, d: Decision) -> Decision:
        if d.schedule is None:
            return d
        H = self.pcluster.H
        w = {t: np.concatenate([v, np.zeros(H - self.h, dtype=np.int64)]) for t, v in d.schedule.workers.items()}
        s = {t: np.concatenate([np.zeros(self.h, dtype=np.int64), v]) for t, v in d.schedule.ps.items()}
        sched = Schedule(d.job_id, d.schedule.completion, w, s, {t: "split" for t in w}, d.schedule.work_unit)
        return Decision(d.job_id, d.admitted, sched, d.payment, d.completion, d.payoff, d.utility, d.log)

    def step(self, now: int, new_reports: Sequence[PdorsJob]) -> list[Decision]:
        reps = self._advance(now, new_reports)
        for j in reps:
            j.validate_for(self.pcluster)
        out = self.inner.step(now, [oasis_request_for(j, self.pcluster.slot_hours) for j in reps])
        return [self._map(d) for d in out]
