"""Astraea's plain data: servers, tenants with quotas, the cluster, job reports and parameters.

Spec: shared/spec/astraea.md §2. Units: time in hours (1 slot = 1 h), bandwidth in Mbit/s,
gradient size in MB, parameter-update time in ms. Every invalid value raises
:class:`marketsim.market.errors.InputError` naming the field and the value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from marketsim.market.errors import InputError, check_choice, check_finite, check_int, check_nonneg, check_positive
from marketsim.market.utility import ConvexUtility, LinearUtility

__all__ = [
    "Server",
    "Tenant",
    "Cluster",
    "JobSpec",
    "AstraeaParams",
    "AstraeaUtility",
    "linear_utility",
    "convex_utility",
    "throughput",
    "duration",
    "need_ps",
    "worker_cap",
    "allowed_workers",
    "batch_index",
    "batch_window",
    "round_window",
]

AstraeaUtility = LinearUtility | ConvexUtility


def linear_utility(k: float, g: float) -> LinearUtility:
    """``f(x) = k x + g`` (k < 0, g > 0; value per job, x in hours), never clipped at 0.

    :param k: slope per hour, < 0
    :param g: intercept, > 0
    :returns: the utility
    :raises InputError: ``k >= 0``
    """
    if check_finite("LinearUtility.k", k) >= 0:
        raise InputError("LinearUtility.k", k, "must be < 0")
    return LinearUtility(k, g, floor_at_zero=False)


def convex_utility(e: float, kappa: float) -> ConvexUtility:
    """``f(x) = (e / x) ** kappa`` (e, kappa > 0; x in hours).

    :param e: scale, > 0
    :param kappa: exponent, > 0
    :returns: the utility
    """
    return ConvexUtility(e, kappa)


@dataclass(frozen=True)
class Server:
    """A machine: ``n_workers`` GPUs (C_sw) and ``n_ps`` parameter-server slots (C_sp);
    ``owner`` is the tenant (VC) owning it, used only by the baselines and exclusive runs.

    :param sid: the server, >= 0
    :param n_workers: GPUs C_sw
    :param n_ps: PS slots C_sp
    :param owner: the owning tenant, or ``None``
    """

    sid: int
    n_workers: int
    n_ps: int
    owner: int | None = None

    def __post_init__(self) -> None:
        check_int("Server.sid", self.sid, minimum=0)
        check_int(f"Server[{self.sid}].n_workers", self.n_workers, minimum=0)
        check_int(f"Server[{self.sid}].n_ps", self.n_ps, minimum=0)
        if self.owner is not None:
            check_int(f"Server[{self.sid}].owner", self.owner)


@dataclass(frozen=True)
class Tenant:
    """A tenant ``uid`` with a quota of ``quota_workers`` GPUs and ``quota_ps`` PS slots (counts).

    :param uid: the tenant
    :param quota_workers: its GPU quota
    :param quota_ps: its PS quota
    """

    uid: int
    quota_workers: int
    quota_ps: int

    def __post_init__(self) -> None:
        check_int("Tenant.uid", self.uid)
        check_int(f"Tenant[{self.uid}].quota_workers", self.quota_workers, minimum=0)
        check_int(f"Tenant[{self.uid}].quota_ps", self.quota_ps, minimum=0)


@dataclass(frozen=True)
class Cluster:
    """Servers, tenants and the cluster-wide bandwidth reserved per worker / per PS (Mbit/s).

    Quotas must sum to the capacities (spec §2.2).

    :param servers: the servers, sids 0..S-1
    :param tenants: the tenants (unique uids)
    :param bw_worker_mbps: bandwidth per worker, Mbit/s
    :param bw_ps_mbps: bandwidth per PS, Mbit/s
    """

    servers: tuple[Server, ...]
    tenants: tuple[Tenant, ...]
    bw_worker_mbps: float = 1.0
    bw_ps_mbps: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "servers", tuple(self.servers))
        object.__setattr__(self, "tenants", tuple(self.tenants))
        if len(self.servers) == 0:
            raise InputError("Cluster.servers", self.servers, "must not be empty")
        if len(self.tenants) == 0:
            raise InputError("Cluster.tenants", self.tenants, "must not be empty")
        sids = [s.sid for s in self.servers]
        if sids != list(range(len(sids))):
            raise InputError("Cluster.servers.sid", sids, "must be 0..S-1 in order")
        uids = [t.uid for t in self.tenants]
        if len(set(uids)) != len(uids):
            raise InputError("Cluster.tenants.uid", uids, "must be unique")
        check_positive("Cluster.bw_worker_mbps", self.bw_worker_mbps)
        check_positive("Cluster.bw_ps_mbps", self.bw_ps_mbps)
        cw, cp = self.total_workers, self.total_ps
        if cw == 0:
            raise InputError("Cluster.total_workers", cw, "must be > 0")
        if cp == 0:
            raise InputError("Cluster.total_ps", cp, "must be > 0")
        qw = sum(t.quota_workers for t in self.tenants)
        qp = sum(t.quota_ps for t in self.tenants)
        if qw != cw:
            raise InputError("Tenant.quota_workers", qw, f"(sum) must equal the cluster's {cw} workers")
        if qp != cp:
            raise InputError("Tenant.quota_ps", qp, f"(sum) must equal the cluster's {cp} PS slots")
        for s in self.servers:
            if s.owner is not None and s.owner not in uids:
                raise InputError(f"Server[{s.sid}].owner", s.owner, f"is not a tenant uid {uids}")

    @property
    def total_workers(self) -> int:
        """C_W, GPUs in the cluster."""
        return sum(s.n_workers for s in self.servers)

    @property
    def total_ps(self) -> int:
        """C_P, PS slots in the cluster."""
        return sum(s.n_ps for s in self.servers)

    @property
    def uids(self) -> tuple[int, ...]:
        return tuple(t.uid for t in self.tenants)

    def tenant_index(self, uid: int) -> int:
        """The position of tenant ``uid`` in :attr:`tenants`.

        :param uid: the tenant
        :returns: its index
        :raises InputError: an unknown uid
        """
        for i, t in enumerate(self.tenants):
            if t.uid == uid:
                return i
        raise InputError("tenant uid", uid, f"is not one of {list(self.uids)}")

    @staticmethod
    def from_owners(servers: tuple[Server, ...] | list[Server], bw_worker_mbps: float, bw_ps_mbps: float) -> Cluster:
        """A cluster whose quotas are the owned capacities (q_w^u = Σ owned GPUs, q_p^u = Σ owned PS).

        :param servers: servers with owners
        :param bw_worker_mbps: bandwidth per worker, Mbit/s
        :param bw_ps_mbps: bandwidth per PS, Mbit/s
        :returns: the cluster
        :raises InputError: a server without an owner
        """
        servers = tuple(servers)
        owners = sorted({s.owner for s in servers if s.owner is not None})
        if any(s.owner is None for s in servers):
            raise InputError("Server.owner", None, "must be set on every server for from_owners")
        tenants = tuple(
            Tenant(
                u,
                sum(s.n_workers for s in servers if s.owner == u),
                sum(s.n_ps for s in servers if s.owner == u),
            )
            for u in owners
        )
        return Cluster(servers, tenants, bw_worker_mbps, bw_ps_mbps)


@dataclass(frozen=True)
class JobSpec:
    """A job report (or true type): PS-architecture synchronous SGD training (spec §2.3).

    ``arrival`` r_j in hours >= 0; ``epochs`` E, ``chunks`` D (worker cap), ``minibatches_per_chunk`` M;
    ``m_hours`` hours per mini-batch on one worker; ``G_ms`` PS update time per mini-batch (ms);
    ``eps_MB`` gradient size (MB); ``utility`` f of elapsed hours (linear with k < 0, unclipped, or
    convex). The overrides fix the per-worker speeds in mini-batches per hour (fixtures only).

    :param jid: the job (non-empty)
    :param owner: its tenant uid
    :param arrival: r_j, hours >= 0
    :param epochs: E, >= 1
    :param chunks: D (the worker cap), >= 1
    :param minibatches_per_chunk: M, >= 1
    :param m_hours: hours per mini-batch on one worker, > 0
    :param G_ms: PS update time per mini-batch, ms
    :param eps_MB: gradient size, MB
    :param utility: f of elapsed hours
    :param gpu_request: the trace's GPU count, or ``None``
    :param n_central_override: centralized speed, mini-batches per hour (fixtures)
    :param n_distributed_override: distributed speed, mini-batches per hour (fixtures)
    """

    jid: str
    owner: int
    arrival: float
    epochs: int
    chunks: int
    minibatches_per_chunk: int
    m_hours: float
    G_ms: float
    eps_MB: float
    utility: AstraeaUtility
    gpu_request: int | None = None
    n_central_override: float | None = None
    n_distributed_override: float | None = None

    def __post_init__(self) -> None:
        j = self.jid
        if not isinstance(j, str) or not j:
            raise InputError("JobSpec.jid", j, "must be a non-empty string")
        check_int(f"JobSpec[{j}].owner", self.owner)
        check_nonneg(f"JobSpec[{j}].arrival", self.arrival)
        check_int(f"JobSpec[{j}].epochs", self.epochs, minimum=1)
        check_int(f"JobSpec[{j}].chunks", self.chunks, minimum=1)
        check_int(f"JobSpec[{j}].minibatches_per_chunk", self.minibatches_per_chunk, minimum=1)
        check_positive(f"JobSpec[{j}].m_hours", self.m_hours)
        check_nonneg(f"JobSpec[{j}].G_ms", self.G_ms)
        check_nonneg(f"JobSpec[{j}].eps_MB", self.eps_MB)
        u = self.utility
        if isinstance(u, LinearUtility):
            if u.k >= 0:
                raise InputError(f"JobSpec[{j}].utility.k", u.k, "must be < 0 for a linear utility")
            if u.g <= 0:  # LinearUtility already checks, kept for clarity
                raise InputError(f"JobSpec[{j}].utility.g", u.g, "must be > 0 for a linear utility")
            if u.floor_at_zero:
                raise InputError(
                    f"JobSpec[{j}].utility.floor_at_zero",
                    True,
                    "must be False: Astraea counts negative realised utilities (use linear_utility(k, g))",
                )
        elif not isinstance(u, ConvexUtility):
            raise InputError(f"JobSpec[{j}].utility", u, "must be a LinearUtility or ConvexUtility")
        if self.gpu_request is not None:
            check_int(f"JobSpec[{j}].gpu_request", self.gpu_request, minimum=0)
        for name in ("n_central_override", "n_distributed_override"):
            v = getattr(self, name)
            if v is not None:
                check_positive(f"JobSpec[{j}].{name}", v)

    @property
    def work(self) -> int:
        """Total mini-batches E·D·M."""
        return self.epochs * self.chunks * self.minibatches_per_chunk

    def with_(self, **changes: object) -> JobSpec:
        """A copy with fields replaced (misreports).

        :param changes: field -> value
        :returns: the copy
        """
        return replace(self, **changes)


Mode = Literal["elastic", "fixed"]


@dataclass(frozen=True)
class AstraeaParams:
    """Parameters of spec §2.11 plus ``search_impl`` ("fast" vectorised BEST_SCHEDULE or the
    straightforward "reference" loop; both give identical decisions).

    :param lam: rounds per batch λ, >= 1
    :param theta_mode: ``rule`` (A9) or ``given``
    :param theta_w: worker price base > 1 (``given``)
    :param theta_p: PS price base > 1 (``given``)
    :param theta_scale: multiplies θ − 1, > 0
    :param worker_count_mode: ``elastic`` or ``fixed`` worker counts
    :param worker_cap_source: W_j from ``data_chunks`` or ``trace_gpus``
    :param admission_time_origin: clock of the admission value, ``round_start`` or ``arrival``
    :param revenue_time_origin: clock of the realised utility, ``arrival``, ``round_start`` or ``absolute``
    :param pass1_pricing: ``posted`` or ``zero`` (ablation) prices in pass 1
    :param pass2_charge: ``full_eq2`` or ``beyond_quota`` (§2.9)
    :param mincostc_pricing: ``per_slot`` or ``start_slot`` (§2.7)
    :param centralized_choice: ``least_loaded_round``, ``best_fit`` or ``lowest_index`` (A2)
    :param mincostd_retry: try the next candidate (A3)
    :param job_order: ``arrival_owner_id`` or ``random``
    :param seed: the seed of ``job_order="random"``
    :param horizon_T: last slot simulated
    :param self_income_in_g: count self-income in g_u (§2.10)
    :param tol_admit: admit iff μ exceeds it
    :param enable_pass2: run the pooled pass (False: BatchSche's core)
    :param sigma_log_base: log base inside σ (``theoretical_lambda`` only)
    :param search_impl: ``fast`` or ``reference``
    """

    lam: int = 2
    theta_mode: str = "rule"
    theta_w: float | None = None
    theta_p: float | None = None
    theta_scale: float = 1.0
    worker_count_mode: str = "elastic"
    worker_cap_source: str = "data_chunks"
    admission_time_origin: str = "round_start"
    revenue_time_origin: str = "arrival"
    pass1_pricing: str = "posted"
    pass2_charge: str = "full_eq2"
    mincostc_pricing: str = "per_slot"
    centralized_choice: str = "least_loaded_round"
    mincostd_retry: bool = True
    job_order: str = "arrival_owner_id"
    seed: int | None = None
    horizon_T: int = 2**16
    self_income_in_g: bool = True
    tol_admit: float = 1e-9
    enable_pass2: bool = True
    sigma_log_base: float = math.e
    search_impl: str = "fast"

    def __post_init__(self) -> None:
        check_int("AstraeaParams.lam", self.lam, minimum=1)
        check_choice("AstraeaParams.theta_mode", self.theta_mode, ("rule", "given"))
        if self.theta_mode == "given":
            for name in ("theta_w", "theta_p"):
                v = getattr(self, name)
                if v is None:
                    raise InputError(f"AstraeaParams.{name}", v, "must be given when theta_mode='given'")
                if check_finite(f"AstraeaParams.{name}", v) <= 1:
                    raise InputError(f"AstraeaParams.{name}", v, "must be > 1")
        check_positive("AstraeaParams.theta_scale", self.theta_scale)
        check_choice("AstraeaParams.worker_count_mode", self.worker_count_mode, ("elastic", "fixed"))
        check_choice("AstraeaParams.worker_cap_source", self.worker_cap_source, ("data_chunks", "trace_gpus"))
        check_choice("AstraeaParams.admission_time_origin", self.admission_time_origin, ("round_start", "arrival"))
        check_choice(
            "AstraeaParams.revenue_time_origin", self.revenue_time_origin, ("arrival", "round_start", "absolute")
        )
        check_choice("AstraeaParams.pass1_pricing", self.pass1_pricing, ("posted", "zero"))
        check_choice("AstraeaParams.pass2_charge", self.pass2_charge, ("full_eq2", "beyond_quota"))
        check_choice("AstraeaParams.mincostc_pricing", self.mincostc_pricing, ("per_slot", "start_slot"))
        check_choice(
            "AstraeaParams.centralized_choice",
            self.centralized_choice,
            ("least_loaded_round", "best_fit", "lowest_index"),
        )
        check_choice("AstraeaParams.job_order", self.job_order, ("arrival_owner_id", "random"))
        if self.seed is not None:
            check_int("AstraeaParams.seed", self.seed, minimum=0)
        check_int("AstraeaParams.horizon_T", self.horizon_T, minimum=1)
        if self.horizon_T < 2 * self.lam:
            raise InputError("AstraeaParams.horizon_T", self.horizon_T, f"must be >= 2*lam = {2 * self.lam}")
        check_nonneg("AstraeaParams.tol_admit", self.tol_admit)
        b = check_positive("AstraeaParams.sigma_log_base", self.sigma_log_base)
        if b == 1:
            raise InputError("AstraeaParams.sigma_log_base", b, "must not be 1")
        check_choice("AstraeaParams.search_impl", self.search_impl, ("fast", "reference"))

    def with_(self, **changes: object) -> AstraeaParams:
        """A copy with fields replaced.

        :param changes: field -> value
        :returns: the parameters
        """
        return replace(self, **changes)


# ---------------------------------------------------------------------------------------------
# A1 basic functions


def throughput(job: JobSpec, bw_worker_mbps: float) -> tuple[float, float]:
    """(n_cent, n_dist): mini-batches per hour of one worker, centralized / distributed (Eq. 1)."""
    g_h = job.G_ms / 3.6e6
    comm_h = 2.0 * job.eps_MB * 8.0 / bw_worker_mbps / 3600.0
    n_cent = job.n_central_override if job.n_central_override is not None else 1.0 / (job.m_hours + g_h)
    n_dist = (
        job.n_distributed_override if job.n_distributed_override is not None else 1.0 / (job.m_hours + g_h + comm_h)
    )
    return float(n_cent), float(n_dist)


def duration(work: float, n: float, n_workers: int) -> int:
    """Slots needed by ``n_workers`` workers at ``n`` mini-batches/hour each: ceil(work/(n D_w) − 1e-9)."""
    return max(1, math.ceil(work / (n * n_workers) - 1e-9))


def need_ps(remote_workers: int, bw_worker_mbps: float, bw_ps_mbps: float) -> int:
    """PSs needed on the PS server for ``remote_workers`` workers elsewhere (3i): ceil(R b_w/b_p − 1e-12)."""
    return max(0, math.ceil(remote_workers * bw_worker_mbps / bw_ps_mbps - 1e-12))


def worker_cap(job: JobSpec, source: str = "data_chunks") -> int:
    """W_j: most workers job j may get (spec §2.3)."""
    if source == "data_chunks":
        return job.chunks
    if job.gpu_request is None:
        raise InputError(f"JobSpec[{job.jid}].gpu_request", None, "is required with worker_cap_source='trace_gpus'")
    return min(job.chunks, max(1, job.gpu_request))


def allowed_workers(job: JobSpec, params: AstraeaParams) -> list[int]:
    """Worker counts D_w the scheduler may choose (ascending)."""
    w = worker_cap(job, params.worker_cap_source)
    return [w] if params.worker_count_mode == "fixed" else list(range(1, w + 1))


def batch_index(r: float) -> int:
    """Batch l of a job arriving at ``r`` hours: τ_{l−1} ≤ r < τ_l with τ_l = 2^l (r < 1 → batch 1)."""
    return max(1, int(math.floor(r)).bit_length())


def batch_window(lam: int, l: int) -> tuple[int, int]:
    """Execution window (λ·2^l, λ·2^(l+1)] of batch l, as (start exclusive, end inclusive)."""
    return lam * 2**l, lam * 2 ** (l + 1)


def round_window(lam: int, l: int, i: int) -> tuple[int, int]:
    """Round i (1-based) of batch l: ((λ+i−1)·2^l, (λ+i)·2^l]."""
    return (lam + i - 1) * 2**l, (lam + i) * 2**l
