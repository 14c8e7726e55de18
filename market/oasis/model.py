"""OASiS model (spec oasis.md §2): two server pools, PS jobs, derived requests.

Units: slots of ``slot_hours`` hours; bandwidth in Gbps; gradient size in MB; ``tau`` in slots per
mini-batch; work in worker-slots.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from marketsim.market.auction.base import ResourceSpace, Schedule
from marketsim.market.errors import InputError, as_float_array, check_finite, check_int, check_nonneg, check_positive
from marketsim.market.utility import Utility, check_non_increasing

__all__ = ["Server", "OasisCluster", "OasisJob", "OasisRequest", "check_utility", "ceil_tol", "floor_tol"]

EPS = 1e-9


def ceil_tol(x: float) -> int:
    """``ceil(x - 1e-9)`` (the spec's ceiling tolerance)."""
    return int(math.ceil(x - EPS))


def floor_tol(x: float) -> int:
    return int(math.floor(x + EPS))


def check_utility(field: str, f: Utility, T: int) -> np.ndarray:
    """Values ``f(1..T)``; raise unless finite, non-negative and non-increasing on that grid."""
    vals = np.array([float(f(x)) for x in range(1, T + 1)])
    if not np.isfinite(vals).all():
        raise InputError(field, f, "must be finite on elapsed times 1..T")
    if (vals < 0).any():
        raise InputError(field, f, "must be >= 0 on elapsed times 1..T")
    check_non_increasing(field, vals)
    return vals


@dataclass(frozen=True)
class Server:
    """A server of the ``worker`` (GPU host) or ``ps`` pool with capacity (R,).

    :param server_id: the server, >= 0
    :param pool: ``"worker"`` or ``"ps"``
    :param capacity: (R,) capacities, >= 0
    :param node: its topology node, or ``None``
    """

    server_id: int
    pool: Literal["worker", "ps"]
    capacity: np.ndarray
    node: Hashable | None = None

    def __post_init__(self) -> None:
        check_int("Server.server_id", self.server_id, minimum=0)
        if self.pool not in ("worker", "ps"):
            raise InputError("Server.pool", self.pool, "must be 'worker' or 'ps'")
        cap = as_float_array(f"Server[{self.pool}{self.server_id}].capacity", self.capacity, ndim=1, nonneg=True)
        object.__setattr__(self, "capacity", cap)


@dataclass(frozen=True)
class OasisCluster:
    """``T`` slots, resources, disjoint worker hosts (H) and PS hosts (K).

    :param T: slots, >= 1
    :param resources: the resource space (R resources)
    :param worker_servers: the worker hosts (H)
    :param ps_servers: the PS hosts (K)
    :param slot_hours: hours per slot, > 0
    """

    T: int
    resources: ResourceSpace
    worker_servers: tuple[Server, ...]
    ps_servers: tuple[Server, ...]
    slot_hours: float = 1.0

    def __post_init__(self) -> None:
        check_int("OasisCluster.T", self.T, minimum=1)
        check_positive("OasisCluster.slot_hours", self.slot_hours)
        if len(self.worker_servers) == 0:
            raise InputError("OasisCluster.worker_servers", self.worker_servers, "must not be empty (empty cluster)")
        if len(self.ps_servers) == 0:
            raise InputError("OasisCluster.ps_servers", self.ps_servers, "must not be empty (empty cluster)")
        R = self.resources.R
        for s in (*self.worker_servers, *self.ps_servers):
            if s.capacity.shape != (R,):
                raise InputError(f"Server[{s.pool}{s.server_id}].capacity", s.capacity, f"must have {R} entries")
        if self.worker_capacity.sum() <= 0:
            raise InputError("OasisCluster.worker_servers", 0.0, "must have some capacity (empty cluster)")

    @property
    def H(self) -> int:
        return len(self.worker_servers)

    @property
    def K(self) -> int:
        return len(self.ps_servers)

    @property
    def worker_capacity(self) -> np.ndarray:
        """(H, R)."""
        return np.array([s.capacity for s in self.worker_servers], dtype=float)

    @property
    def ps_capacity(self) -> np.ndarray:
        """(K, R)."""
        return np.array([s.capacity for s in self.ps_servers], dtype=float)

    @staticmethod
    def build(T: int, worker_capacity, ps_capacity, resources: ResourceSpace | None = None, slot_hours: float = 1.0):
        """Cluster from capacity matrices (H, R) and (K, R).

        :param T: slots
        :param worker_capacity: (H, R) capacities
        :param ps_capacity: (K, R) capacities
        :param resources: the resource space (default: R generic resources)
        :param slot_hours: hours per slot
        :returns: the cluster
        :raises InputError: an empty pool or a matrix of the wrong shape
        """
        wc = as_float_array("worker_capacity", worker_capacity, ndim=2, nonneg=True)
        pc = as_float_array("ps_capacity", ps_capacity, ndim=2, nonneg=True)
        if wc.shape[0] == 0:
            raise InputError("worker_capacity", wc.tolist(), "must have at least one server (empty cluster)")
        if pc.shape[0] == 0:
            raise InputError("ps_capacity", pc.tolist(), "must have at least one server (empty cluster)")
        if wc.shape[1] != pc.shape[1]:
            raise InputError("ps_capacity", pc.shape, f"must have {wc.shape[1]} resources like worker_capacity")
        res = resources or ResourceSpace(tuple(f"r{i}" for i in range(wc.shape[1])))
        return OasisCluster(
            T,
            res,
            tuple(Server(i, "worker", wc[i]) for i in range(wc.shape[0])),
            tuple(Server(i, "ps", pc[i]) for i in range(pc.shape[0])),
            slot_hours,
        )


@dataclass(frozen=True)
class OasisRequest:
    """What the mechanism consumes: ``work_units`` W (worker-slots), at most ``max_workers`` N per
    slot, ``n_ps(n) = ceil(ps_num·n/ps_den)`` PSs for ``n`` workers, per-unit demands (R,),
    utility of elapsed slots, minimum elapsed ``min_duration`` d.

    :param job_id: the job, >= 0
    :param arrival: arrival slot
    :param work_units: worker-slots W, >= 1
    :param max_workers: most workers per slot N
    :param ps_num: b in ``n_ps(n) = ceil(b·n/B)``
    :param ps_den: B, >= b
    :param worker_demand: (R,) resources per worker
    :param ps_demand: (R,) resources per PS
    :param utility: utility (currency) of the elapsed slots
    :param min_duration: minimum elapsed slots d
    """

    job_id: int
    arrival: int
    work_units: int
    max_workers: int
    ps_num: float
    ps_den: float
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    utility: Utility
    min_duration: int = 0

    def __post_init__(self) -> None:
        jid = check_int("OasisRequest.job_id", self.job_id, minimum=0)
        p = f"job[{jid}]"
        check_int(f"{p}.arrival", self.arrival, minimum=0)
        check_int(f"{p}.work_units", self.work_units, minimum=1)
        check_int(f"{p}.max_workers", self.max_workers, minimum=1)
        b = check_positive(f"{p}.ps_num (b)", self.ps_num)
        B = check_positive(f"{p}.ps_den (B)", self.ps_den)
        if B < b:
            raise InputError(f"{p}.ps_den (B)", B, f"must be >= ps_num b = {b} (else #PS > #workers)")
        w = as_float_array(f"{p}.worker_demand", self.worker_demand, ndim=1, nonneg=True)
        s = as_float_array(f"{p}.ps_demand", self.ps_demand, ndim=1, nonneg=True)
        if w.shape != s.shape:
            raise InputError(f"{p}.ps_demand", s.tolist(), f"must have {w.size} entries like worker_demand")
        if not (w > 0).any():
            raise InputError(f"{p}.worker_demand", w.tolist(), "must not be all zero")
        if not (s > 0).any():
            raise InputError(f"{p}.ps_demand", s.tolist(), "must not be all zero")
        object.__setattr__(self, "worker_demand", w)
        object.__setattr__(self, "ps_demand", s)
        if not callable(self.utility):
            raise InputError(f"{p}.utility", self.utility, "must be callable")
        if self.min_duration == 0:
            object.__setattr__(self, "min_duration", ceil_tol(self.work_units / self.max_workers))
        check_int(f"{p}.min_duration", self.min_duration, minimum=1)

    def n_ps(self, n: np.ndarray | int) -> np.ndarray | int:
        """Minimum #PS for ``n`` workers, ``ceil(b·n/B - 1e-9)`` (constraint (6)).

        :param n: worker count(s)
        :returns: the PS count(s)
        """
        return (
            np.ceil(np.asarray(n) * self.ps_num / self.ps_den - EPS).astype(np.int64)
            if np.ndim(n)
            else ceil_tol(n * self.ps_num / self.ps_den)
        )

    def validate_for(self, T: int, R: int) -> None:
        """Check the request fits a horizon of ``T`` slots and ``R`` resources.

        :param T: slots
        :param R: resources
        :raises InputError: an arrival after the horizon or demands of the wrong length
        """
        p = f"job[{self.job_id}]"
        if self.arrival > T - 1:
            raise InputError(f"{p}.arrival", self.arrival, f"must be <= T-1 = {T - 1}")
        if self.worker_demand.size != R:
            raise InputError(f"{p}.worker_demand", self.worker_demand.tolist(), f"must have R = {R} entries")
        check_utility(f"{p}.utility", self.utility, T)


@dataclass(frozen=True)
class OasisJob:
    """A tenant's PS training job (true type or report), spec §2.2.

    :param job_id: the job, >= 0
    :param arrival: arrival slot, >= 0
    :param epochs: epochs E, >= 1
    :param chunks: data chunks N (the most workers), >= 1
    :param minibatches: mini-batches per chunk M, >= 1
    :param tau: compute slots per mini-batch, >= 0
    :param grad_mb: gradient size in MB, >= 0
    :param worker_bw: a worker's bandwidth in Gbps, > 0
    :param ps_bw: a PS's bandwidth in Gbps, >= ``worker_bw``
    :param worker_demand: (R,) resources per worker
    :param ps_demand: (R,) resources per PS
    :param utility: utility (currency) of the elapsed slots
    """

    job_id: int
    arrival: int
    epochs: int
    chunks: int
    minibatches: int
    tau: float
    grad_mb: float
    worker_bw: float
    ps_bw: float
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    utility: Utility

    def __post_init__(self) -> None:
        jid = check_int("OasisJob.job_id", self.job_id, minimum=0)
        p = f"job[{jid}]"
        check_int(f"{p}.arrival", self.arrival, minimum=0)
        check_int(f"{p}.epochs", self.epochs, minimum=1)
        check_int(f"{p}.chunks", self.chunks, minimum=1)
        check_int(f"{p}.minibatches", self.minibatches, minimum=1)
        check_nonneg(f"{p}.tau", self.tau)
        check_nonneg(f"{p}.grad_mb", self.grad_mb)
        b = check_positive(f"{p}.worker_bw", self.worker_bw)
        B = check_positive(f"{p}.ps_bw", self.ps_bw)
        if B < b:
            raise InputError(f"{p}.ps_bw", B, f"must be >= worker_bw = {b}")
        object.__setattr__(self, "worker_demand", as_float_array(f"{p}.worker_demand", self.worker_demand, nonneg=True))
        object.__setattr__(self, "ps_demand", as_float_array(f"{p}.ps_demand", self.ps_demand, nonneg=True))
        check_finite(f"{p}.tau", self.tau)

    def rho(self, slot_hours: float = 1.0) -> float:
        """Slots per mini-batch: ``τ + 2·e/b`` with ``e/b`` converted from MB/Gbps to slots.

        :param slot_hours: hours per slot
        :returns: slots per mini-batch
        """
        return self.tau + 2.0 * self.grad_mb * 8.0 / (self.worker_bw * 1000.0) / (3600.0 * slot_hours)

    def to_request(self, cluster: OasisCluster) -> OasisRequest:
        """Derived request: ``W = ceil(E·N·M·ρ')``, ``d = ceil(E·M·ρ')``, ``n_ps(n) = ceil(b·n/B)``.

        :param cluster: the cluster (its resources and slot length)
        :returns: the request
        :raises InputError: demands of the wrong length, a bandwidth demand other than the reserved bandwidth
        """
        p = f"job[{self.job_id}]"
        res = cluster.resources
        for name, dem, bw in (
            ("worker_demand", self.worker_demand, self.worker_bw),
            ("ps_demand", self.ps_demand, self.ps_bw),
        ):
            if dem.shape != (res.R,):
                raise InputError(f"{p}.{name}", dem.tolist(), f"must have R = {res.R} entries")
            ib = res.index("bw")
            if ib is not None and abs(dem[ib] - bw) > 1e-12:
                raise InputError(f"{p}.{name}[bw]", float(dem[ib]), f"must equal the reserved bandwidth {bw}")
        ig = res.index("gpu")
        if ig is not None and self.ps_demand[ig] != 0:
            raise InputError(f"{p}.ps_demand[gpu]", float(self.ps_demand[ig]), "must be 0 (PS hosts have no GPU)")
        rho = self.rho(cluster.slot_hours)
        W = max(1, ceil_tol(self.epochs * self.chunks * self.minibatches * rho))
        d = max(1, ceil_tol(self.epochs * self.minibatches * rho))
        return OasisRequest(
            self.job_id,
            self.arrival,
            W,
            self.chunks,
            self.worker_bw,
            self.ps_bw,
            self.worker_demand,
            self.ps_demand,
            self.utility,
            d,
        )


# the search result of marketsim.market.oasis.mechanism (re-exported there): here, so the reference search
# (marketsim.market.oasis.reference) and the mechanism that may call it share it without importing each other


@dataclass(frozen=True)
class SearchResult:
    """Best schedule of one request against fixed prices: payoff ``mu``, ``schedule`` (None if
    ``mu == 0``), posted ``cost`` of it, per-completion DP costs ``theta_W`` (slots a..T-1).

    :param mu: payoff (utility − cost, currency)
    :param schedule: the best schedule, or ``None``
    :param cost: its posted cost (currency)
    :param theta_W: per-completion DP costs over slots a..T-1
    :param work_unit: worker-slots per work unit of the DP
    """

    mu: float
    schedule: Schedule | None
    cost: float
    theta_W: np.ndarray
    work_unit: int
