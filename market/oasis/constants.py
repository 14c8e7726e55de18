"""OASiS price constants U, L (spec oasis.md §3.8), fixed before the auction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from marketsim.market.errors import InputError, as_float_array, check_choice, check_positive
from marketsim.market.oasis.model import OasisCluster, OasisRequest

__all__ = ["OasisConstants", "estimate_constants"]


def _log_f(f, x: float) -> float:
    lg = getattr(f, "log", None)
    if lg is not None:
        return float(lg(x))
    v = float(f(x))
    return float(np.log(v)) if v > 0 else -np.inf


@dataclass(frozen=True)
class OasisConstants:
    """Log-space price constants: ``log_U1`` (R,) and ``log_L1`` for worker hosts, ``log_U2``,
    ``log_L2`` for PS hosts; ``inv_eta1/2`` and ``source`` for the record.

    :param log_U1: (R,) log of the worker-host price upper bounds
    :param log_L1: log of the worker-host lower bound
    :param log_U2: (R,) log of the PS-host upper bounds
    :param log_L2: log of the PS-host lower bound
    :param inv_eta1: ``1/η1`` (worker side), for the record
    :param inv_eta2: ``1/η2`` (PS side), for the record
    :param source: how the constants were obtained (``calibration``, ``analytic``, ``oracle``, ``given``)
    :raises InputError: NaN or infinite bounds, ``U <= L``
    """

    log_U1: np.ndarray
    log_L1: float
    log_U2: np.ndarray
    log_L2: float
    inv_eta1: float = float("nan")
    inv_eta2: float = float("nan")
    source: str = "given"

    def __post_init__(self) -> None:
        u1 = np.atleast_1d(np.asarray(self.log_U1, dtype=float))
        u2 = np.atleast_1d(np.asarray(self.log_U2, dtype=float))
        for name, v in (("log_U1", u1), ("log_U2", u2)):
            if np.isnan(v).any():
                raise InputError(name, v.tolist(), "must not be NaN")
        for name, v in (("log_L1", self.log_L1), ("log_L2", self.log_L2)):
            if not np.isfinite(v):
                raise InputError(name, v, "must be finite")
        if (u1 <= self.log_L1).any():
            raise InputError("U1", np.exp(u1).tolist(), f"must be > L1 = {np.exp(self.log_L1)}")
        if (u2 <= self.log_L2).any():
            raise InputError("U2", np.exp(u2).tolist(), f"must be > L2 = {np.exp(self.log_L2)}")
        object.__setattr__(self, "log_U1", u1)
        object.__setattr__(self, "log_U2", u2)

    @staticmethod
    def from_values(U1, L1: float, U2, L2: float) -> OasisConstants:
        """Constants given directly (positive values; ``U > L``).

        :param U1: worker-host upper bound(s), one or R values > 0
        :param L1: worker-host lower bound > 0
        :param U2: PS-host upper bound(s)
        :param L2: PS-host lower bound
        :returns: the constants (``source = "given"``)
        """
        u1 = as_float_array("U1", np.atleast_1d(U1), positive=True)
        u2 = as_float_array("U2", np.atleast_1d(U2), positive=True)
        return OasisConstants(
            np.log(u1), float(np.log(check_positive("L1", L1))), np.log(u2), float(np.log(check_positive("L2", L2)))
        )

    @property
    def alpha(self) -> float:
        """``max(1, ln(U1^r/L1), ln(U2^r/L2))`` of Theorem 4."""
        return float(max(1.0, np.max(self.log_U1 - self.log_L1), np.max(self.log_U2 - self.log_L2)))

    def D0(self, cluster: OasisCluster) -> float:
        """Initial dual value ``T·(L1 Σ C + L2 Σ c)``.

        :param cluster: the cluster
        :returns: the initial dual value (currency)
        """
        return float(
            cluster.T
            * (np.exp(self.log_L1) * cluster.worker_capacity.sum() + np.exp(self.log_L2) * cluster.ps_capacity.sum())
        )


def estimate_constants(
    calib: Sequence[OasisRequest],
    cluster: OasisCluster,
    source: str = "calibration",
    u_scale: float = 1.0,
    l_scale: float = 1.0,
) -> OasisConstants:
    """U, L from calibration requests (never from the bidder being priced), spec §3.8.

    ``U1[r] = max_{w^r>0} f(d)/w^r``, ``1/η1 = min Σ_r w^r W / (T Σ C)``,
    ``L1 = (1/(4η1)) · min f(T - a) / (Σ_r w^r W)``; PS side likewise with ``s`` and ``c``.
    Resources no calibration job uses get a flat price (``U = L·e``, never binding).

    :param calib: the calibration requests (never the bidder being priced)
    :param cluster: the cluster
    :param source: recorded as the constants' source
    :param u_scale: factor on U (> 0)
    :param l_scale: factor on L (> 0)
    :returns: the constants
    :raises InputError: no calibration request, demands of the wrong length, a bad scale or source
    """
    check_choice("source", source, ("calibration", "analytic", "oracle", "given"))
    check_positive("u_scale", u_scale)
    check_positive("l_scale", l_scale)
    if len(calib) == 0:
        raise InputError("calib", [], "must contain at least one job")
    T = cluster.T
    logs = {}
    for side, cap in (("w", cluster.worker_capacity), ("s", cluster.ps_capacity)):
        dem = np.array([r.worker_demand if side == "w" else r.ps_demand for r in calib])
        if dem.shape[1] != cluster.resources.R:
            raise InputError("calib demand", dem.shape, f"must have R = {cluster.resources.R} columns")
        W = np.array([r.work_units for r in calib], dtype=float)
        logf_d = np.array([_log_f(r.utility, r.min_duration) for r in calib])
        logf_T = np.array([_log_f(r.utility, T - r.arrival) for r in calib])
        tot = dem.sum(axis=1) * W
        inv_eta = float(np.min(tot / (T * cap.sum())))
        log_L = float(np.log(inv_eta / 4.0) + np.min(logf_T - np.log(tot)) + np.log(l_scale))
        log_U = np.full(dem.shape[1], np.nan)
        for r in range(dem.shape[1]):
            use = dem[:, r] > 0
            if use.any():
                log_U[r] = np.max(logf_d[use] - np.log(dem[use, r])) + np.log(u_scale)
        log_U = np.where(np.isnan(log_U), log_L + 1.0, log_U)
        logs[side] = (log_U, log_L, inv_eta)
    return OasisConstants(logs["w"][0], logs["w"][1], logs["s"][0], logs["s"][1], logs["w"][2], logs["s"][2], source)
