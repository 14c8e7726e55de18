"""Diagnostics (spec §3.9): feasibility check of a run (claim C1) and the Thm-5 precondition
quantities (normalisation nu and small-job sigma, D14/D15)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from marketsim.market.eris.mechanism import ErisAuction, ErisDecision
from marketsim.market.eris.types import ErisConfig, ErisJob, ErisSchedule, ErisSites

__all__ = ["check_feasibility", "Normalisation", "normalisation", "small_job"]


def check_feasibility(
    auction: ErisAuction, bids: Sequence[ErisJob], decisions: Sequence[ErisDecision] | None = None
) -> dict[str, float]:
    """Maximum violation per constraint family, recomputed from the accepted plans alone:
    ``capacity`` (PS included), ``budget`` (global or per link), ``processing`` (2b),
    ``conservation`` (per site), ``ps`` (one PS per active slot), ``window`` (a <= t <= T),
    ``integrality``. All 0.0 for a feasible run."""
    sites, links, cfg = auction.sites, auction.links, auction.cfg
    decs = list(decisions) if decisions is not None else auction.decisions
    by_id = {b.job_id: b for b in bids}
    T = cfg.horizon
    eta = np.zeros((sites.R, sites.K, T + 1))
    rho = np.zeros((links.L, T + 1))
    v = dict.fromkeys(("capacity", "budget", "processing", "conservation", "ps", "window", "integrality"), 0.0)
    for d in decs:
        if not d.admitted or d.plan is None:
            continue
        b = by_id[d.job_id]
        w, s = np.asarray(b.worker_demand), np.asarray(b.ps_demand)
        total = np.zeros(sites.R, dtype=np.int64)
        for p in d.plan.slots:
            if p.t < b.arrival or p.t > T:
                v["window"] = max(v["window"], 1.0)
            if not (p.ps_site >= 0 and p.sources.sum() > 0):
                v["ps"] = max(v["ps"], 1.0)
            load = p.sources.astype(np.int64).copy()
            vol = np.zeros(links.L)
            for (r, q), m in p.moves.items():
                load[r] -= m
                load[q] += m
                for e in links.paths[r][q]:
                    vol[e] += cfg.theta_mb * m
            for r in range(sites.R):
                if r != p.ps_site and p.workers[r] > 0:
                    for e in links.paths[r][p.ps_site]:
                        vol[e] += b.param_mb * p.workers[r]
            if (load != p.load).any() or (load < 0).any():
                v["conservation"] = max(v["conservation"], float(np.abs(load - p.load).max()), float(-load.min()))
            v["processing"] = max(v["processing"], float((b.epochs * load - b.proc_capacity * p.workers).max()))
            usage = w[None, :] * p.workers[:, None]
            usage[p.ps_site] += s
            eta[:, :, p.t] += usage
            rho[:, p.t] += vol
            total += p.sources.astype(np.int64)
            for arr in (p.sources, p.workers, p.load):
                if (np.asarray(arr) != np.round(arr)).any():
                    v["integrality"] = 1.0
        v["conservation"] = max(v["conservation"], float(np.abs(total - b.data_vector(sites)).max()))
    cap = sites.capacity[:, :, None]
    v["capacity"] = max(0.0, float((eta[:, :, 1:] - cap).max()))
    v["budget"] = max(0.0, float((rho[:, 1:] - links.cap[:, None]).max()))
    v["processing"] = max(0.0, v["processing"])
    return v


@dataclass(frozen=True)
class Normalisation:
    """nu_d, nu_k (D14) and whether 1 <= nu <= gamma - 1 holds (nu_d = inf: data condition vacuous)."""

    nu_d: float
    nu_k: float
    ok_d: bool
    ok_k: bool


def normalisation(value: float, schedule: ErisSchedule, cfg: ErisConfig, K: int) -> Normalisation:
    """``nu_d = f / sum psi`` and ``nu_k = f / sum phi`` (native units) of an accepted schedule."""
    psi = float(sum(float(np.sum(p.link_volume)) for p in schedule.slots))
    phi = float(sum(float(np.sum(p.usage)) for p in schedule.slots))
    nu_d = np.inf if psi == 0 else value / psi
    nu_k = np.inf if phi == 0 else value / phi
    gk = max(cfg.gamma_vector(K))
    return Normalisation(nu_d, nu_k, psi == 0 or 1 <= nu_d <= cfg.gamma_d - 1, 1 <= nu_k <= gk - 1)


def small_job(schedule: ErisSchedule, sites: ErisSites, link_cap: np.ndarray, cfg: ErisConfig) -> tuple[float, float]:
    """``sigma_d = max_t max_e log2(gamma_d) psi_e / B_e`` and
    ``sigma_k = max_{t,r,k} log2(gamma_k) phi / C`` (the Thm-5 proof needs both <= 1)."""
    gk = cfg.gamma_vector(sites.K)
    sd = sk = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for p in schedule.slots:
            sd = max(sd, float((np.log2(cfg.gamma_d) * p.link_volume / link_cap).max()))
            frac = np.where(sites.capacity > 0, p.usage / np.where(sites.capacity > 0, sites.capacity, 1), 0)
            sk = max(sk, float((np.log2(gk)[None, :] * frac).max()))
    return sd, sk
