"""PD-ORS price constants U^r, L (eqs. (13)–(14), spec pdors.md §2.6), fixed before the auction."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_choice, check_positive
from marketsim.market.oasis.constants import _log_f
from marketsim.market.pdors.model import EPS, PdorsCluster, PdorsJob

__all__ = ["PdorsConstants", "estimate_pdors_constants"]


@dataclass(frozen=True)
class PdorsConstants:
    """``log_U`` (R,), ``log_L`` (scalar, or (R,) with ``per_resource_L``), ``mu``, ``source``.
    A resource with ``log_U == log_L`` has a flat price (no calibration job uses it).

    :param log_U: (R,) log of the price upper bounds
    :param log_L: log of the lower bound (scalar, or (R,))
    :param mu: the constant μ of (14), for the record
    :param source: how the constants were obtained
    :raises InputError: NaN or infinite bounds, ``U < L``
    """

    log_U: np.ndarray
    log_L: float | np.ndarray
    mu: float = float("nan")
    source: str = "given"

    def __post_init__(self) -> None:
        u = np.atleast_1d(np.asarray(self.log_U, dtype=float))
        if np.isnan(u).any():
            raise InputError("log_U", u.tolist(), "must not be NaN")
        lL = np.asarray(self.log_L, dtype=float)
        if not np.isfinite(lL).all():
            raise InputError("log_L", self.log_L, "must be finite")
        if (u < lL).any():
            raise InputError("U", np.exp(u).tolist(), f"must be > L = {np.exp(lL).tolist()}")
        object.__setattr__(self, "log_U", u)

    @staticmethod
    def from_values(U, L: float) -> PdorsConstants:
        """Constants given directly (positive values, ``U > L``).

        :param U: upper bound(s), one or R values > 0
        :param L: the lower bound > 0
        :returns: the constants
        :raises InputError: ``U <= L`` or a value <= 0
        """
        u = as_float_array("U", np.atleast_1d(U), positive=True)
        L = check_positive("L", L)
        if (u <= L).any():
            raise InputError("U", u.tolist(), f"must be > L = {L}")
        return PdorsConstants(np.log(u), float(np.log(L)))

    @property
    def epsilon(self) -> float:
        """``max_r(1, ln(U^r/L))`` of Theorems 5–6."""
        return float(max(1.0, np.max(self.log_U - self.log_L)))

    def D0(self, cluster: PdorsCluster) -> float:
        """``T·Σ_h Σ_r L·C_h^r``.

        :param cluster: the cluster
        :returns: the initial dual value (currency)
        """
        return float(cluster.T * (np.exp(self.log_L) * cluster.capacity).sum())


def estimate_pdors_constants(
    calib: Sequence[PdorsJob],
    cluster: PdorsCluster,
    source: str = "calibration",
    per_resource_L: bool = False,
    u_scale: float = 1.0,
    l_scale: float = 1.0,
) -> PdorsConstants:
    """(13) ``U^r = max_{α^r+β^r>0} u(d)/(α^r+β^r)``; (14) ``L = min u(T-a)/(2μ) / (⌈V c_e⌉ Σ_r(α^r+β^r))``
    with the smallest valid ``1/μ = min ⌈V c_e⌉ Σ_r(α^r+β^r) / (T Σ C)``.

    :param calib: the calibration jobs (never the bidder being priced)
    :param cluster: the cluster
    :param source: recorded as the constants' source
    :param per_resource_L: one ``L`` per resource instead of one scalar
    :param u_scale: factor on U (> 0)
    :param l_scale: factor on L (> 0)
    :returns: the constants
    :raises InputError: no calibration job, demands of the wrong length, a bad scale or source
    """
    check_choice("source", source, ("calibration", "analytic", "oracle", "given"))
    if len(calib) == 0:
        raise InputError("calib", [], "must contain at least one job")
    T, sh = cluster.T, cluster.slot_hours
    dem = np.array([j.worker_demand + j.ps_demand for j in calib])
    if dem.shape[1] != cluster.resources.R:
        raise InputError("calib demand", dem.shape, f"must have R = {cluster.resources.R} columns")
    work = np.array([math.ceil(j.V * j.c_ext(sh) - EPS) for j in calib], dtype=float)
    logu_d = np.array([_log_f(j.utility, j.min_duration(sh)) for j in calib])
    logu_T = np.array([_log_f(j.utility, T - j.arrival) for j in calib])
    inv_mu = float(np.min(work * dem.sum(axis=1) / (T * cluster.capacity.sum())))
    if per_resource_L:
        cap_r = cluster.capacity.sum(axis=0)
        log_L = np.full(dem.shape[1], np.inf)
        for r in range(dem.shape[1]):
            use = dem[:, r] > 0
            if use.any() and cap_r[r] > 0:
                im = float(np.min(work[use] * dem[use, r] / (T * cap_r[r])))
                log_L[r] = np.log(im / 2) + np.min(logu_T[use] - np.log(work[use] * dem[use, r]))
        finite = np.isfinite(log_L)
        log_L = np.where(finite, log_L, np.min(log_L[finite]) if finite.any() else 0.0) + np.log(l_scale)
    else:
        log_L = float(np.log(inv_mu / 2) + np.min(logu_T - np.log(work * dem.sum(axis=1))) + np.log(l_scale))
    log_U = np.full(dem.shape[1], np.nan)
    for r in range(dem.shape[1]):
        use = dem[:, r] > 0
        if use.any():
            log_U[r] = np.max(logu_d[use] - np.log(dem[use, r])) + np.log(u_scale)
    log_U = np.where(np.isnan(log_U), np.broadcast_to(log_L, log_U.shape), log_U)
    used = (dem > 0).any(axis=0)
    if (log_U[used] <= np.broadcast_to(log_L, log_U.shape)[used]).any():
        raise InputError("U", np.exp(log_U).tolist(), f"must be > L = {np.exp(log_L)} for every used resource")
    return PdorsConstants(log_U, log_L, 1.0 / inv_mu, source)
