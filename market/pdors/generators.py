"""Seeded instance generators for PD-ORS (spec pdors.md §5), drawing from an explicit Generator."""

from __future__ import annotations

import numpy as np

from marketsim.market.auction.base import ResourceSpace
from marketsim.market.errors import InputError, check_int, check_rows
from marketsim.market.oasis.generators import arrival_slots, sample_utility
from marketsim.market.pdors.constants import PdorsConstants, estimate_pdors_constants
from marketsim.market.pdors.model import PdorsCluster, PdorsJob
from marketsim.market.utility import SigmoidUtility

__all__ = [
    "pdors_paper_cluster",
    "pdors_paper_jobs",
    "pdors_paper_instance",
    "pdors_tiny_instance",
    "pdors_tiny_from_params",
    "pdors_tiny_params",
    "TINY_JOB_FIELDS",
    "RESOURCES",
]

RESOURCES = ResourceSpace(("gpu", "cpu", "mem", "disk"), ("count", "vCPU", "GB", "GB"))
MACHINE_CAPACITY = np.array([72.0, 180.0, 576.0, 180.0])  # 18 x the upper end of the worker ranges


def pdors_paper_cluster(T: int = 20, H: int = 100) -> PdorsCluster:
    """Homogeneous machines of (72 GPU, 180 vCPU, 576 GB, 180 GB)."""
    check_int("H", H, minimum=1)
    return PdorsCluster.build(T, np.tile(MACHINE_CAPACITY, (H, 1)), RESOURCES)


def pdors_paper_jobs(
    rng: np.random.Generator, n: int, T: int, start_id: int = 0, mix=(0.10, 0.55, 0.35)
) -> list[PdorsJob]:
    """Section V draws: E U{50..200}, K U{20000..500000}, g U[30,575] MB, τ U[1e-5,1e-4], γ U{1..10},
    F U{1..200}; b^(e) U[1,10] Gbps, b^(i) = 10 b^(e) [default]; sigmoid utilities."""
    arr = arrival_slots(rng, n, T)
    jobs = []
    for i in range(n):
        be = float(rng.uniform(1.0, 10.0))
        alpha = np.array([rng.integers(0, 5), rng.integers(1, 11), rng.uniform(2, 32), rng.uniform(5, 10)])
        beta = np.array([0.0, rng.integers(1, 11), rng.uniform(2, 32), rng.uniform(5, 10)])
        jobs.append(
            PdorsJob(
                start_id + i,
                int(arr[i]),
                int(rng.integers(50, 201)),
                int(rng.integers(20000, 500001)),
                int(rng.integers(1, 201)),
                float(rng.uniform(1e-5, 1e-4)),
                float(rng.uniform(30, 575)),
                int(rng.integers(1, 11)),
                10.0 * be,
                be,
                alpha,
                beta,
                sample_utility(rng, mix=mix),
            )
        )
    return jobs


def pdors_paper_instance(
    rng: np.random.Generator, n_jobs: int = 50, T: int = 20, H: int = 100, n_calib: int = 1000
) -> tuple[PdorsCluster, list[PdorsJob], PdorsConstants]:
    """Cluster, jobs and calibration constants (independent child stream for calibration)."""
    check_int("n_jobs", n_jobs, minimum=1)
    job_rng, cal_rng = rng.spawn(2)
    cl = pdors_paper_cluster(T, H)
    return (
        cl,
        pdors_paper_jobs(job_rng, n_jobs, T),
        estimate_pdors_constants(pdors_paper_jobs(cal_rng, n_calib, T, start_id=10**6), cl, "calibration"),
    )


def pdors_tiny_instance(
    rng: np.random.Generator, I: int = 5, T: int = 5, H: int = 2, cap: float = 8.0, gamma1_range=(1.0, 100.0)
) -> tuple[PdorsCluster, list[PdorsJob], PdorsConstants]:
    """Small instances for invariants and the exact offline optimum: R = 1 (cpu), ``H`` machines of
    ``cap``; α U{1..2}, β U{1..2}, γ U{1..2}, F U{1..4}; per-sample times c^(i) ∈ {0.5, 1}, c^(e) =
    2 c^(i) (τ = 0, g = 1 MB); V U{2..10}; oracle constants."""
    cl = PdorsCluster.build(T, np.full((H, 1), cap), ResourceSpace(("cpu",)))
    jobs = []
    for i in range(I):
        F = int(rng.integers(1, 5))
        gam = int(rng.integers(1, 3))
        ci = float(rng.choice([0.5, 1.0]))
        bi_mb = 2.0 * gam / (ci * F)  # c_i = 2 g γ / (b F) with g = 1
        jobs.append(
            PdorsJob(
                i,
                int(rng.integers(0, max(1, T - 1))),
                1,
                int(rng.integers(2, 11)),
                F,
                0.0,
                1.0,
                gam,
                bi_mb / 450000.0,
                bi_mb / 2 / 450000.0,
                np.array([float(rng.integers(1, 3))]),
                np.array([float(rng.integers(1, 3))]),
                sample_utility(rng, gamma1=gamma1_range, gamma3=(1.0, 4.0)),
            )
        )
    return cl, jobs, estimate_pdors_constants(jobs, cl, "oracle")


TINY_JOB_FIELDS = ("arrival", "samples", "global_batch", "ratio", "c_int", "worker_demand", "ps_demand",
                   "gamma1", "gamma2", "gamma3")  # fmt: skip
"""One job of :func:`pdors_tiny_from_params`: arrival slot, samples K, global batch F, worker/PS
ratio γ, per-sample time c^(i) (slots; c^(e) = 2 c^(i)), per-unit cpu demand of a worker / a PS,
sigmoid utility γ1, γ2, γ3 (E = 1, τ = 0, g = 1 MB as in the generator)."""


def _tiny_job(i: int, a: int, K: int, F: int, gam: int, ci: float, w: float, s: float, f: SigmoidUtility) -> PdorsJob:
    bi_mb = 2.0 * gam / (ci * F)  # c_i = 2 g γ / (b F) with g = 1
    bw_int, bw_ext = bi_mb / 450000.0, bi_mb / 2 / 450000.0
    return PdorsJob(i, a, 1, K, F, 0.0, 1.0, gam, bw_int, bw_ext, np.array([w]), np.array([s]), f)


def pdors_tiny_from_params(
    jobs: list[list[float]] | np.ndarray, T: int = 5, H: int = 2, cap: float = 8.0
) -> tuple[PdorsCluster, list[PdorsJob], PdorsConstants]:
    """The tiny instance from explicit parameters instead of a seed: one row per job in
    :data:`TINY_JOB_FIELDS` order; ``H`` machines of ``cap`` cpu; oracle constants from the jobs,
    as in :func:`pdors_tiny_instance` (``pdors_tiny_from_params(pdors_tiny_params(jobs), ...)``
    reproduces its instance)."""
    check_int("T", T, minimum=1)
    check_int("H", H, minimum=1)
    if not (isinstance(cap, (int, float)) and np.isfinite(cap) and cap > 0):
        raise InputError("cap", cap, "must be a finite number > 0")
    rows = check_rows("jobs", jobs, TINY_JOB_FIELDS)
    cl = PdorsCluster.build(T, np.full((H, 1), float(cap)), ResourceSpace(("cpu",)))
    out = []
    for i, (a, K, F, gam, ci, w, s, g1, g2, g3) in enumerate(rows):
        if not 0 <= a <= T - 1 or a != round(a):
            raise InputError(f"jobs[{i}].arrival", a, f"must be a whole slot in 0..{T - 1}")
        if not ci > 0:
            raise InputError(f"jobs[{i}].c_int", ci, "must be > 0")
        out.append(_tiny_job(i, int(a), int(K), int(F), int(gam), float(ci), float(w), float(s),
                             SigmoidUtility(float(g1), float(g2), float(g3))))  # fmt: skip
    return cl, out, estimate_pdors_constants(out, cl, "oracle")


def pdors_tiny_params(jobs: list[PdorsJob]) -> list[list[float]]:
    """The :data:`TINY_JOB_FIELDS` rows of tiny-generator jobs (c^(i) recovered from the internal
    bandwidth, ``c_i = 2 γ / (b F)`` in MB per slot)."""
    out = []
    for j in jobs:
        u = j.utility
        if not isinstance(u, SigmoidUtility) or j.worker_demand.size != 1:
            raise InputError("job", j.job_id, "is not a tiny-generator job (sigmoid utility, one resource)")
        ci = 2.0 * j.ratio / (j.bw_internal_gbps * 450000.0 * j.global_batch)
        out.append([float(j.arrival), float(j.samples), float(j.global_batch), float(j.ratio), float(round(ci, 12)),
                    float(j.worker_demand[0]), float(j.ps_demand[0]), float(u.gamma1), float(u.gamma2),
                    float(u.gamma3)])  # fmt: skip
    return out
