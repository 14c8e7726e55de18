"""Astraea's posted prices (Eq. 8), the θ rule (A9), the theoretical λ and the Theorem-1 bounds (A10).

Prices are cluster-wide and per slot: ``η(h) = θ^(h/C) − 1`` for ``h`` units already reserved out of
``C``. That is the shared exponential price ``L·(U/L)^(h/C)`` of ``marketsim.market.auction.prices`` with
``L = 1``, ``U = θ``, shifted by −1; the exponent comes from the shared ``log_exp_price`` and the
shift uses ``expm1`` for accuracy near 0 (spec §8.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from marketsim.market.astraea.model import (
    AstraeaParams,
    Cluster,
    JobSpec,
    allowed_workers,
    duration,
    need_ps,
    throughput,
)
from marketsim.market.auction.prices import log_exp_price
from marketsim.market.errors import InputError, check_finite, check_int, check_positive

__all__ = [
    "price",
    "price_table",
    "theta_rule",
    "theoretical_lambda",
    "theoretical_lambda_for_jobs",
    "gap_bound",
    "ratio_bound",
]


def price(h: float | np.ndarray, capacity: int, theta: float) -> float | np.ndarray:
    """η = θ^(h/C) − 1, computed as expm1((h/C) ln θ) (currency per unit per slot)."""
    c = check_int("capacity", capacity, minimum=1)
    if check_finite("theta", theta) <= 1:
        raise InputError("theta", theta, "must be > 1")
    out = np.expm1(log_exp_price(np.asarray(h, dtype=float), c, 0.0, math.log(theta)))
    return float(out) if np.ndim(h) == 0 else out


def price_table(capacity: int, theta: float) -> np.ndarray:
    """η[h] for h = 0..C (shape (C+1,))."""
    return np.asarray(price(np.arange(capacity + 1), capacity, theta))


def theta_rule(cluster: Cluster, jobs: Sequence[JobSpec], params: AstraeaParams) -> tuple[float, float]:
    """(θ_w, θ_p) by A9: 1 + theta_scale·max(1, largest utility per worker-slot / per PS-slot)."""
    max_cw = max(s.n_workers for s in cluster.servers)
    max_cp = max(s.n_ps for s in cluster.servers)
    rw = rp = 0.0
    for j in jobs:
        n_c, n_d = throughput(j, cluster.bw_worker_mbps)
        for dw in allowed_workers(j, params):
            for cent in (True, False):
                if cent:
                    if dw > max_cw:
                        continue
                    p_min = 1
                    d = duration(j.work, n_c, dw)
                else:
                    p_min = max(1, need_ps(dw - min(dw - 1, max_cw), cluster.bw_worker_mbps, cluster.bw_ps_mbps))
                    d = duration(j.work, n_d, dw)
                if p_min > max_cp:
                    continue
                v = float(j.utility(float(d)))
                if v > 0:
                    rw = max(rw, v / (dw * d))
                    rp = max(rp, v / (p_min * d))
    s = params.theta_scale
    return 1.0 + s * max(1.0, rw), 1.0 + s * max(1.0, rp)


def theoretical_lambda(theta_w: float, theta_p: float, F_over_fmin: float, base: float = math.e) -> int:
    """λ* = ⌊ln(F/f_min) / ln(σ/(σ−1))⌋ + 1 with σ = 2(log_b θ_w + log_b θ_p) (Lemma 1)."""
    for name, v in (("theta_w", theta_w), ("theta_p", theta_p)):
        if check_finite(name, v) <= 1:
            raise InputError(name, v, "must be > 1")
    if check_positive("F_over_fmin", F_over_fmin) < 1:
        raise InputError("F_over_fmin", F_over_fmin, "must be >= 1")
    b = check_positive("base", base)
    sigma = 2.0 * (math.log(theta_w, b) + math.log(theta_p, b))
    if sigma <= 1:
        raise InputError("sigma", sigma, "must be > 1 (raise theta or lower the log base)")
    return int(math.floor(math.log(F_over_fmin) / math.log(sigma / (sigma - 1.0)))) + 1


def theoretical_lambda_for_jobs(
    jobs: Sequence[JobSpec], params: AstraeaParams, bw_worker_mbps: float, theta_w: float, theta_p: float
) -> int:
    """λ* with F = Σ_j f_j(d_min,j) and f_min = min positive f_j(d_min,j) (spec A6)."""
    vals = []
    for j in jobs:
        n_c, n_d = throughput(j, bw_worker_mbps)
        dmin = min(min(duration(j.work, n_c, w), duration(j.work, n_d, w)) for w in allowed_workers(j, params))
        vals.append(float(j.utility(float(dmin))))
    pos = [v for v in vals if v > 0]
    if not pos:
        raise InputError("jobs", len(jobs), "have no job with a positive best value")
    return theoretical_lambda(theta_w, theta_p, sum(vals) / min(pos), params.sigma_log_base)


def gap_bound(n_jobs: int, L: int, lam: int, k_min: float, k_max: float) -> float:
    """Theorem 1, linear utilities: OPT − ALG ≤ ΣJ·((2^L − 1)k_max − (2^(L+1) − 1)(2λ − 1)k_min)."""
    return float(n_jobs * ((2**L - 1) * k_max - (2 ** (L + 1) - 1) * (2 * lam - 1) * k_min))


def ratio_bound(lam: int, L: int, kappa_min: float, kappa_max: float, e_min: float, e_max: float) -> float:
    """Theorem 1, convex utilities: (1/(4λ))^κmax · (1/2^(L−2))^(κmax−κmin) · e_min^κmax / e_max^κmin."""
    return float(
        (1.0 / (4 * lam)) ** kappa_max
        * (1.0 / 2.0 ** (L - 2)) ** (kappa_max - kappa_min)
        * e_min**kappa_max
        / e_max**kappa_min
    )
