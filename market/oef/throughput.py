"""Job-rate model for OEF's "actual" throughput (spec §2.3); the round engine (:mod:`marketsim.agents.trace_rounds`)
applies it vectorised (straggler ``min``, :func:`spread_efficiency`; the migration term there is dead time at the start
of the lease: over a whole round the same work as the factor below).

A running job with ``g`` workers on GPU types ``T`` spread over ``h`` hosts progresses at
``rate = g · min_{j ∈ T} w^j · η(h) · (1 − migration_cost_s / round_seconds · [moved])`` with
``η(h) = 1 / (1 + κ (h − 1))``. Unit: slowest-GPU-seconds of work per second (one type-0 GPU running the job for one
second = 1), the same unit as the LP value ``W_l · x_l``. ``min`` is the straggler effect: the slowest GPU type in use
sets the pace of the whole gang.
"""

from __future__ import annotations

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_int, check_nonneg, check_positive

__all__ = ["cross_host_efficiency", "spread_efficiency", "job_rate"]


def spread_efficiency(
    n_hosts: np.ndarray, kappa: float, n_racks: np.ndarray | None = None, rack_penalty: float = 0.0
) -> np.ndarray:
    """Vectorised ``η = 1 / (1 + κ (h − 1) + κ_rack (r − 1))`` for leases over ``n_hosts`` hosts in
    ``n_racks`` racks (the round engine's spread penalty when no unconsolidated throughputs are given)."""
    den = 1.0 + kappa * (np.asarray(n_hosts, dtype=float) - 1.0)
    if n_racks is not None and rack_penalty:
        den = den + rack_penalty * (np.asarray(n_racks, dtype=float) - 1.0)
    return 1.0 / den


def cross_host_efficiency(n_hosts: int, kappa: float = 0.1) -> float:
    """``η(h) = 1 / (1 + κ (h − 1))`` for a job spanning ``n_hosts ≥ 1`` hosts; ``kappa`` ≥ 0 per extra host."""
    h = check_int("n_hosts", n_hosts, minimum=1)
    kap = check_nonneg("kappa", kappa)
    return float(spread_efficiency(np.array([h]), kap)[0])


def job_rate(
    counts: np.ndarray,
    speedups: np.ndarray,
    n_hosts: int,
    *,
    kappa: float = 0.1,
    migration_cost_s: float = 0.0,
    round_seconds: float = 300.0,
    moved: bool = False,
) -> float:
    """Progress rate of one job, slowest-GPU-seconds of work per second (spec §2.3).

    ``counts``: workers per GPU type, shape (k,), whole numbers ≥ 0; ``speedups``: the job type's TRUE speedup vector
    ``w`` (w[j] = throughput on one type-j GPU / on one type-0 GPU), shape (k,), > 0; ``n_hosts``: distinct hosts the
    job spans (1 ≤ n_hosts ≤ workers; 0 allowed only for a job with no workers, which has rate 0). ``kappa``:
    cross-host penalty per extra host; ``migration_cost_s``: seconds lost when the placement changed this round
    (``moved``), as a share of ``round_seconds``; a migration longer than the round leaves rate 0.
    """
    c = as_float_array("counts", counts, ndim=1, nonneg=True)
    if (c != np.floor(c)).any():
        j = int(np.argmax(c != np.floor(c)))
        raise InputError(f"counts[{j}]", float(c[j]), "must be a whole number of workers")
    w = as_float_array("speedups", speedups, ndim=1, positive=True)
    if w.size != c.size:
        raise InputError("speedups", speedups, f"must have the same length as counts ({c.size}), has {w.size}")
    h = check_int("n_hosts", n_hosts, minimum=0)
    kap = check_nonneg("kappa", kappa)
    cost = check_nonneg("migration_cost_s", migration_cost_s)
    length = check_positive("round_seconds", round_seconds)
    g = int(c.sum())
    if g == 0:
        return 0.0
    if not 1 <= h <= g:
        raise InputError("n_hosts", n_hosts, f"must be between 1 and the job's {g} workers")
    straggler = float(w[c > 0].min())
    eta = float(spread_efficiency(np.array([h]), kap)[0])
    migration = max(0.0, 1.0 - cost / length) if moved else 1.0
    return g * straggler * eta * migration
