"""OASiS' baselines (FIFO, DRF, RRH, Dorm; spec oasis.md §4) on its two disjoint pools."""

from __future__ import annotations

import numpy as np

from marketsim.market.auction.baselines import BASELINES, fixed_workers
from marketsim.market.auction.slotsim import Pools, SimJob, SlotSimulator
from marketsim.market.errors import InputError, check_choice
from marketsim.market.oasis.model import OasisCluster, OasisJob, OasisRequest

__all__ = ["oasis_pools", "oasis_simjob", "make_oasis_baseline"]


def oasis_pools(cluster: OasisCluster) -> Pools:
    """Machines = worker hosts (0..H-1) then PS hosts (H..H+K-1); one round-robin pointer per pool."""
    cap = np.vstack([cluster.worker_capacity, cluster.ps_capacity])
    return Pools(cap, np.arange(cluster.H), cluster.H + np.arange(cluster.K))


def oasis_simjob(req: OasisRequest, rng: np.random.Generator) -> SimJob:
    """Progress per slot ``n·min(1, B·m/(b·n))`` worker-slots; bundle ``n ~ U{1..30}`` capped at N."""
    b, B = req.ps_num, req.ps_den

    def progress(w: np.ndarray, s: np.ndarray) -> float:
        n, m = int(w.sum()), int(s.sum())
        return 0.0 if n == 0 else n * min(1.0, B * m / (b * n))

    return SimJob(
        req.job_id,
        req.arrival,
        req.utility,
        req.max_workers,
        fixed_workers(rng, req.max_workers),
        lambda n: int(req.n_ps(n)),
        req.worker_demand,
        req.ps_demand,
        float(req.work_units),
        progress,
        ps_ratio=b / B,
        ps_le_workers=True,
    )


def make_oasis_baseline(name: str, cluster: OasisCluster, rng: np.random.Generator, **options) -> SlotSimulator:
    """``fifo`` | ``drf`` | ``rrh`` | ``dorm`` for OASiS clusters; reports are requests or jobs.

    Each job's fixed bundle size is drawn from its own stream ``(base, job_id)`` with ``base``
    drawn once from ``rng``, so one bidder's report (e.g. a later arrival) never changes another
    job's draw (the audit holds everyone else fixed).

    :param name: ``fifo``, ``drf``, ``rrh`` or ``dorm``
    :param cluster: the OASiS cluster
    :param rng: draws the base of the per-job bundle-size streams
    :param options: passed to the baseline's simulator
    :returns: the slot simulator running the baseline
    :raises InputError: an unknown name, a cluster or rng of the wrong type
    """
    check_choice("baseline", name, list(BASELINES))
    if not isinstance(cluster, OasisCluster):
        raise InputError("cluster", cluster, "must be an OasisCluster")
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", rng, "must be a numpy Generator (explicit seeding)")
    base = int(rng.integers(2**63))

    def to_simjob(rep):
        req = rep.to_request(cluster) if isinstance(rep, OasisJob) else rep
        req.validate_for(cluster.T, cluster.resources.R)
        return oasis_simjob(req, np.random.default_rng([base, int(req.job_id)]))

    return BASELINES[name](cluster.T, oasis_pools(cluster), to_simjob, rng, **options)
