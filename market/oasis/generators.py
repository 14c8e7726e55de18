"""Seeded instance generators for OASiS (spec oasis.md §5), all drawing from an explicit Generator."""

from __future__ import annotations

import numpy as np

from marketsim.market.auction.base import ResourceSpace
from marketsim.market.errors import InputError, check_int, check_positive, check_rows
from marketsim.market.oasis.constants import OasisConstants, estimate_constants
from marketsim.market.oasis.model import OasisCluster, OasisJob, OasisRequest
from marketsim.market.utility import SigmoidUtility

__all__ = [
    "sample_utility",
    "arrival_slots",
    "oasis_paper_cluster",
    "oasis_paper_jobs",
    "oasis_paper_instance",
    "oasis_tiny_instance",
    "oasis_tiny_from_params",
    "oasis_tiny_params",
    "TINY_JOB_FIELDS",
]

RESOURCES = ResourceSpace(("gpu", "cpu", "mem", "disk", "bw"), ("count", "vCPU", "GB", "GB", "Gbps"))


def sample_utility(rng: np.random.Generator, gamma1=(1.0, 100.0), gamma3=(1.0, 15.0), mix=(0.10, 0.55, 0.35)):
    """Sigmoid utility: insensitive (γ2 = 0), sensitive (γ2 ~ U[0.01, 1]) or critical (U[4, 6])."""
    cls = rng.choice(3, p=np.asarray(mix) / np.sum(mix))
    g2 = 0.0 if cls == 0 else (rng.uniform(0.01, 1.0) if cls == 1 else rng.uniform(4.0, 6.0))
    return SigmoidUtility(float(rng.uniform(*gamma1)), float(g2), float(rng.uniform(*gamma3)))


def arrival_slots(rng: np.random.Generator, n: int, T: int) -> np.ndarray:
    """i.i.d. arrival slots, P(t) ∝ 1/3 when the 1-based slot t+1 is odd, 2/3 when even."""
    w = np.where((np.arange(T) + 1) % 2 == 1, 1 / 3, 2 / 3)
    return rng.choice(T, size=n, p=w / w.sum())


def oasis_paper_cluster(rng: np.random.Generator, T: int = 100, H: int = 50, K: int = 50) -> OasisCluster:
    """Worker hosts uniform over three GPU types, PS hosts 36 vCPU/60 GB; NIC U[20, 50] Gbps."""
    check_int("T", T, minimum=1)
    check_int("H", H, minimum=1)
    check_int("K", K, minimum=1)
    types = np.array([[8, 32, 488], [16, 64, 732], [4, 64, 488]], dtype=float)
    wc = np.array([[*types[rng.integers(3)], 1000.0, rng.uniform(20, 50)] for _ in range(H)])
    pc = np.array([[0.0, 36.0, 60.0, 1000.0, rng.uniform(20, 50)] for _ in range(K)])
    return OasisCluster.build(T, wc, pc, RESOURCES)


def oasis_paper_jobs(
    rng: np.random.Generator,
    n: int,
    T: int,
    start_id: int = 0,
    *,
    epochs: tuple[int, int] = (50, 200),
    chunks: tuple[int, int] = (50, 100),
    minibatches: tuple[int, int] = (10, 100),
    gamma1: tuple[float, float] = (1.0, 100.0),
    gamma3: tuple[float, float] = (1.0, 15.0),
    mix: tuple[float, float, float] = (0.10, 0.55, 0.35),
    demand_scale: float = 1.0,
) -> list[OasisJob]:
    """Jobs with the §5 defaults (E U{50..200}, N U{50..100}, M U{10..100}, τ U[1e-4, 1e-3] slots, ...).

    Integer ranges are inclusive; ``mix`` = (insensitive, sensitive, critical) class weights;
    ``demand_scale`` multiplies every non-bandwidth entry of the worker and PS demands (GPU,
    vCPU, GB). The draw order does not depend on the arguments (same seed, same skeleton)."""
    check_positive("demand_scale", demand_scale)
    arr = arrival_slots(rng, n, T)
    sc = np.array([demand_scale] * 4 + [1.0])
    jobs = []
    for i in range(n):
        b = float(rng.uniform(0.5, 5.0))
        B = float(max(b, rng.uniform(5.0, 20.0)))
        w = np.array([rng.integers(0, 5), rng.integers(1, 11), rng.uniform(2, 32), rng.uniform(5, 10), b]) * sc
        s = np.array([0.0, rng.integers(1, 11), rng.uniform(2, 32), rng.uniform(5, 10), B]) * sc
        jobs.append(
            OasisJob(
                start_id + i,
                int(arr[i]),
                int(rng.integers(epochs[0], epochs[1] + 1)),
                int(rng.integers(chunks[0], chunks[1] + 1)),
                int(rng.integers(minibatches[0], minibatches[1] + 1)),
                float(rng.uniform(1e-4, 1e-3)),
                float(rng.uniform(30, 575)),
                b,
                B,
                w,
                s,
                sample_utility(rng, gamma1=gamma1, gamma3=gamma3, mix=mix),
            )
        )
    return jobs


def oasis_paper_instance(
    rng: np.random.Generator, n_jobs: int = 100, T: int = 100, H: int = 50, K: int = 50, n_calib: int = 1000
) -> tuple[OasisCluster, list[OasisRequest], OasisConstants]:
    """Cluster, requests and calibration constants (1000 calibration jobs from an independent child
    stream, never the run's own jobs)."""
    check_int("n_jobs", n_jobs, minimum=1)
    cl_rng, job_rng, cal_rng = rng.spawn(3)
    cl = oasis_paper_cluster(cl_rng, T, H, K)
    reqs = [j.to_request(cl) for j in oasis_paper_jobs(job_rng, n_jobs, T)]
    calib = [j.to_request(cl) for j in oasis_paper_jobs(cal_rng, n_calib, T, start_id=10**6)]
    return cl, reqs, estimate_constants(calib, cl, "calibration")


def oasis_tiny_instance(
    rng: np.random.Generator,
    I: int = 8,
    T: int = 8,
    H: int = 1,
    gamma1_range=(1.0, 10.0),
    cpu: float = 8.0,
    max_work: int = 12,
    arrival_hi: int | None = None,
) -> tuple[OasisCluster, list[OasisRequest], OasisConstants]:
    """The ratio-experiment generator: R = 1 (cpu), H = K servers of ``cpu``, w U{1..3}, s U{1..2},
    N U{1..4}, W U{2..max_work}, b/B = 1/2, sigmoid γ3 U[1,4]; arrivals U{0..5} (or
    ``U{0..arrival_hi-1}``); oracle constants."""
    if cpu <= 0:
        raise InputError("cpu", cpu, "must be > 0")
    cl = OasisCluster.build(T, np.full((H, 1), cpu), np.full((H, 1), cpu), ResourceSpace(("cpu",)))
    reqs = []
    for i in range(I):
        f = sample_utility(rng, gamma1=gamma1_range, gamma3=(1.0, 4.0))
        reqs.append(
            OasisRequest(
                i,
                int(rng.integers(0, min(6, T) if arrival_hi is None else arrival_hi)),
                int(rng.integers(2, max_work + 1)),
                int(rng.integers(1, 5)),
                1.0,
                2.0,
                np.array([float(rng.integers(1, 4))]),
                np.array([float(rng.integers(1, 3))]),
                f,
            )
        )
    return cl, reqs, estimate_constants(reqs, cl, "oracle")


TINY_JOB_FIELDS = ("arrival", "work", "max_workers", "worker_demand", "ps_demand", "gamma1", "gamma2", "gamma3")
"""One job of :func:`oasis_tiny_from_params`: arrival slot, work W (worker-slots), at most N workers,
per-unit cpu demand of a worker / a PS, sigmoid utility γ1, γ2, γ3 (b/B = 1/2 as in the generator)."""


def oasis_tiny_from_params(
    jobs: list[list[float]] | np.ndarray, T: int = 8, H: int = 1, cpu: float = 8.0
) -> tuple[OasisCluster, list[OasisRequest], OasisConstants]:
    """The ratio-experiment instance from explicit parameters instead of a seed: one row per job in
    :data:`TINY_JOB_FIELDS` order; ``H`` = K servers of ``cpu``; oracle constants from the jobs, as
    in :func:`oasis_tiny_instance` (which builds the same instance from the rows it draws:
    ``oasis_tiny_from_params(oasis_tiny_params(reqs), ...)`` reproduces it)."""
    check_int("T", T, minimum=1)
    check_int("H", H, minimum=1)
    if not (isinstance(cpu, (int, float)) and np.isfinite(cpu) and cpu > 0):
        raise InputError("cpu", cpu, "must be a finite number > 0")
    rows = check_rows("jobs", jobs, TINY_JOB_FIELDS)
    cl = OasisCluster.build(T, np.full((H, 1), float(cpu)), np.full((H, 1), float(cpu)), ResourceSpace(("cpu",)))
    reqs = []
    for i, (a, W, N, w, s, g1, g2, g3) in enumerate(rows):
        if not 0 <= a <= T - 1 or a != round(a):
            raise InputError(f"jobs[{i}].arrival", a, f"must be a whole slot in 0..{T - 1}")
        reqs.append(
            OasisRequest(i, int(a), int(W), int(N), 1.0, 2.0, np.array([float(w)]), np.array([float(s)]),
                         SigmoidUtility(float(g1), float(g2), float(g3)))  # fmt: skip
        )
    return cl, reqs, estimate_constants(reqs, cl, "oracle")


def oasis_tiny_params(reqs: list[OasisRequest]) -> list[list[float]]:
    """The :data:`TINY_JOB_FIELDS` rows of tiny-generator requests (sigmoid utilities, one resource)."""
    out = []
    for q in reqs:
        u = q.utility
        if not isinstance(u, SigmoidUtility) or q.worker_demand.size != 1:
            raise InputError("request", q.job_id, "is not a tiny-generator request (sigmoid utility, one resource)")
        out.append([float(q.arrival), float(q.work_units), float(q.max_workers), float(q.worker_demand[0]),
                    float(q.ps_demand[0]), float(u.gamma1), float(u.gamma2), float(u.gamma3)])  # fmt: skip
    return out
