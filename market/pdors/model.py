"""PD-ORS model (spec pdors.md §2): one machine pool, PS jobs with locality-dependent speed.

Units: slots of ``slot_hours`` h; link rates in Gbps (converted to MB per slot, 1 Gbps·1 h =
450 000 MB); gradient size ``grad_mb`` in MB; ``tau`` in slots per sample; workload in samples.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from marketsim.market.auction.base import ResourceSpace
from marketsim.market.errors import InputError, as_float_array, check_int, check_nonneg, check_positive
from marketsim.market.oasis.model import check_utility
from marketsim.market.utility import Utility

__all__ = ["Machine", "PdorsCluster", "PdorsJob", "gbps_to_mb_per_slot", "mb_per_slot_to_gbps", "is_colocated"]

EPS = 1e-9


def gbps_to_mb_per_slot(gbps: float, slot_hours: float = 1.0) -> float:
    """``gbps · 125 · 3600 · slot_hours`` MB per slot.

    :param gbps: rate in Gbps
    :param slot_hours: hours per slot
    :returns: MB per slot
    """
    return gbps * 125.0 * 3600.0 * slot_hours


def mb_per_slot_to_gbps(mb: float, slot_hours: float = 1.0) -> float:
    """MB per slot as Gbps (the inverse of :func:`gbps_to_mb_per_slot`).

    :param mb: MB per slot
    :param slot_hours: hours per slot
    :returns: Gbps
    """
    return mb / (125.0 * 3600.0 * slot_hours)


def is_colocated(workers: np.ndarray, ps: np.ndarray) -> bool:
    """Fact 1: a slot runs at the internal rate iff all its workers and PSs sit on one machine.

    :param workers: workers per machine
    :param ps: PSs per machine
    :returns: whether all sit on one machine
    """
    wh = np.flatnonzero(np.asarray(workers) > 0)
    sh = np.flatnonzero(np.asarray(ps) > 0)
    return wh.size == 1 and sh.size == 1 and wh[0] == sh[0]


@dataclass(frozen=True)
class Machine:
    """A machine with capacity (R,), hosting workers and PSs.

    :param machine_id: the machine, >= 0
    :param capacity: (R,) capacities, >= 0
    :param site: its site (for locality tiers)
    :param node: its topology node, or ``None``
    """
    machine_id: int
    capacity: np.ndarray
    site: Hashable = 0
    node: Hashable | None = None

    def __post_init__(self) -> None:
        check_int("Machine.machine_id", self.machine_id, minimum=0)
        object.__setattr__(
            self, "capacity", as_float_array(f"Machine[{self.machine_id}].capacity", self.capacity, ndim=1, nonneg=True)
        )


@dataclass(frozen=True)
class PdorsCluster:
    """``T`` slots, resources and one pool of machines hosting both workers and PSs.

    :param T: slots, >= 1
    :param resources: the resource space (R resources)
    :param machines: the machines (H)
    :param slot_hours: hours per slot, > 0
    :param topology: the network graph, or ``None``
    """

    T: int
    resources: ResourceSpace
    machines: tuple[Machine, ...]
    slot_hours: float = 1.0
    topology: nx.Graph | None = None

    def __post_init__(self) -> None:
        check_int("PdorsCluster.T", self.T, minimum=1)
        check_positive("PdorsCluster.slot_hours", self.slot_hours)
        if len(self.machines) == 0:
            raise InputError("PdorsCluster.machines", self.machines, "must not be empty (empty cluster)")
        for m in self.machines:
            if m.capacity.shape != (self.resources.R,):
                raise InputError(
                    f"Machine[{m.machine_id}].capacity", m.capacity, f"must have {self.resources.R} entries"
                )
        if self.capacity.sum() <= 0:
            raise InputError("PdorsCluster.machines", 0.0, "must have some capacity (empty cluster)")

    @property
    def H(self) -> int:
        return len(self.machines)

    @property
    def capacity(self) -> np.ndarray:
        """(H, R)."""
        return np.array([m.capacity for m in self.machines], dtype=float)

    @staticmethod
    def build(T: int, capacity, resources: ResourceSpace | None = None, slot_hours: float = 1.0) -> PdorsCluster:
        """Cluster from a capacity matrix (H, R).

        :param T: slots
        :param capacity: (H, R) capacities
        :param resources: the resource space (default: R generic resources)
        :param slot_hours: hours per slot
        :returns: the cluster
        :raises InputError: no machine or a bad matrix
        """
        cap = as_float_array("capacity", capacity, ndim=2, nonneg=True)
        if cap.shape[0] == 0:
            raise InputError("capacity", cap.tolist(), "must have at least one machine (empty cluster)")
        res = resources or ResourceSpace(tuple(f"r{i}" for i in range(cap.shape[1])))
        return PdorsCluster(T, res, tuple(Machine(i, cap[i]) for i in range(cap.shape[0])), slot_hours)


@dataclass(frozen=True)
class PdorsJob:
    """A tenant's job (true type or report), spec §2.2. ``global_batch`` F is also the worker cap;
    ``ratio`` γ = #workers/#PS (integer >= 1); rates in Gbps.

    :param job_id: the job, >= 0
    :param arrival: arrival slot
    :param epochs: epochs E, >= 1
    :param samples: samples per epoch K (workload ``V = E·K``), >= 1
    :param global_batch: global batch F (also the worker cap), >= 1
    :param tau: compute slots per sample
    :param grad_mb: gradient size in MB
    :param ratio: γ = #workers/#PS, >= 1
    :param bw_internal_gbps: rate within one machine, Gbps
    :param bw_external_gbps: rate across machines, Gbps (<= internal)
    :param worker_demand: (R,) resources per worker
    :param ps_demand: (R,) resources per PS
    :param utility: utility (currency) of the elapsed slots
    """

    job_id: int
    arrival: int
    epochs: int
    samples: int
    global_batch: int
    tau: float
    grad_mb: float
    ratio: int
    bw_internal_gbps: float
    bw_external_gbps: float
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    utility: Utility

    def __post_init__(self) -> None:
        jid = check_int("PdorsJob.job_id", self.job_id, minimum=0)
        p = f"job[{jid}]"
        check_int(f"{p}.arrival", self.arrival, minimum=0)
        check_int(f"{p}.epochs", self.epochs, minimum=1)
        check_int(f"{p}.samples", self.samples, minimum=1)
        check_int(f"{p}.global_batch", self.global_batch, minimum=1)
        check_int(f"{p}.ratio", self.ratio, minimum=1)
        check_nonneg(f"{p}.tau", self.tau)
        check_nonneg(f"{p}.grad_mb", self.grad_mb)
        be = check_positive(f"{p}.bw_external_gbps", self.bw_external_gbps)
        bi = check_positive(f"{p}.bw_internal_gbps", self.bw_internal_gbps)
        if be > bi:
            raise InputError(f"{p}.bw_external_gbps", be, f"must be <= bw_internal_gbps = {bi}")
        w = as_float_array(f"{p}.worker_demand", self.worker_demand, ndim=1, nonneg=True)
        s = as_float_array(f"{p}.ps_demand", self.ps_demand, ndim=1, nonneg=True)
        if w.shape != s.shape:
            raise InputError(f"{p}.ps_demand", s.tolist(), f"must have {w.size} entries like worker_demand")
        if not (w > 0).any():
            raise InputError(f"{p}.worker_demand", w.tolist(), "must not be all zero")
        object.__setattr__(self, "worker_demand", w)
        object.__setattr__(self, "ps_demand", s)
        if not callable(self.utility):
            raise InputError(f"{p}.utility", self.utility, "must be callable")

    @property
    def V(self) -> int:
        """Workload in samples ``E·K``."""
        return self.epochs * self.samples

    def per_sample(self, gbps: float, slot_hours: float = 1.0, actual_ratio: float | None = None) -> float:
        """Slots per sample per worker: ``τ + 2·g·γ/(b·F)`` (``γ`` = planned or actual #w/#ps).

        :param gbps: the rate, Gbps
        :param slot_hours: hours per slot
        :param actual_ratio: the actual #workers/#PS, or ``None`` for the planned γ
        :returns: slots
        """
        g = self.ratio if actual_ratio is None else actual_ratio
        return self.tau + 2.0 * self.grad_mb * g / (gbps_to_mb_per_slot(gbps, slot_hours) * self.global_batch)

    def c_int(self, slot_hours: float = 1.0) -> float:
        """Slots per sample per worker at the internal rate.

        :param slot_hours: hours per slot
        :returns: slots
        """
        return self.per_sample(self.bw_internal_gbps, slot_hours)

    def c_ext(self, slot_hours: float = 1.0) -> float:
        """Slots per sample per worker at the external rate.

        :param slot_hours: hours per slot
        :returns: slots
        """
        return self.per_sample(self.bw_external_gbps, slot_hours)

    def min_duration(self, slot_hours: float = 1.0) -> int:
        """``d = ceil((V/F)·c_int)`` slots.

        :param slot_hours: hours per slot
        :returns: the fewest slots the job can finish in
        """
        return max(1, int(math.ceil(self.V / self.global_batch * self.c_int(slot_hours) - EPS)))

    def validate_for(self, cluster: PdorsCluster) -> None:
        """Check the job fits ``cluster`` (arrival within the horizon, demands of R entries).

        :param cluster: the cluster
        :raises InputError: an arrival after the horizon or demands of the wrong length
        """
        p = f"job[{self.job_id}]"
        if self.arrival > cluster.T - 1:
            raise InputError(f"{p}.arrival", self.arrival, f"must be <= T-1 = {cluster.T - 1}")
        if self.worker_demand.size != cluster.resources.R:
            raise InputError(f"{p}.worker_demand", self.worker_demand.tolist(), f"must have R = {cluster.resources.R}")
        check_utility(f"{p}.utility", self.utility, cluster.T)
