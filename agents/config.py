"""Plain-data configuration of a :class:`marketsim.agents.model.MarketModel` (no Mesa here).

Units: times in seconds since simulation start; ``work`` in slowest-GPU-seconds (one second of
one type-0 GPU = 1 unit; a job with ``work = W`` on ``g`` type-0 GPUs finishes after ``W/g`` s);
speedups dimensionless, per GPU type slowest first (normalised by the model to ``w[0] = 1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from marketsim.agents.strategies import Strategy, Truthful
from marketsim.market.errors import InputError, check_choice, check_int, check_nonneg, check_positive
from marketsim.market.traces import Trace
from marketsim.market.types import Cluster

__all__ = [
    "JobConfig",
    "TenantConfig",
    "ModelConfig",
    "TraceWorkload",
    "ServerFailure",
    "PLACEMENTS",
    "REALISATION_CHOICES",
    "GAVEL_REALLOCATION_S",
    "DEFAULT_KAPPA",
    "DEFAULT_KAPPA_RACK",
]

#: Gavel's ``minimum_time_between_allocation_resets`` (s): the default of trace runs
GAVEL_REALLOCATION_S = 1920.0

#: placement rules; "ideal" (the default with a trace): no hosts, consolidated throughput
PLACEMENTS = ("auto", "oef", "naive", "ideal")

#: ``ModelConfig.realisation``: how whole GPUs realise the policy's fractions each round
#: (:mod:`marketsim.market.oef.realise`); "own" = each policy's own
#: (:func:`marketsim.market.oef.realise.own_realisation`)
REALISATION_CHOICES = ("own", "gavel-lease", "oef-rounding", "gandiva-lottery")

#: the spread penalty per extra host when no unconsolidated throughputs are given (OEF spec §2.3)
DEFAULT_KAPPA = 0.1
#: the extra penalty per extra rack a lease spans (``ModelConfig.kappa_rack``)
DEFAULT_KAPPA_RACK = 0.1

#: ``TraceWorkload.tenant_rows`` (``[workload] tenant_measures``): whose per-tenant rows a trace run records
TENANT_ROWS = ("agents", "all", "none")


@dataclass(frozen=True)
class JobConfig:
    """One gang-scheduled training job.

    :param job_id: the job's id, unique within its tenant
    :param job_type: one of its tenant's job types
    :param workers: GPUs it uses at once (gang-scheduled)
    :param work: its size in slowest-GPU-seconds
    :param arrival: submission time, seconds since the start
    """

    job_id: str
    job_type: str
    workers: int
    work: float
    arrival: float = 0.0

    def __post_init__(self) -> None:
        if not self.job_id:
            raise InputError("JobConfig.job_id", self.job_id, "must be a non-empty string")
        check_int(f"job {self.job_id}.workers", self.workers, minimum=1)
        check_positive(f"job {self.job_id}.work", self.work)
        check_nonneg(f"job {self.job_id}.arrival", self.arrival)


@dataclass(frozen=True)
class TenantConfig:
    """A tenant: TRUE speedups per job type, its jobs, priority ``weight``, ``arrival`` time,
    optional forced ``leave_at`` time (its unfinished jobs are withdrawn) and reporting
    ``strategy``. Without ``leave_at`` the tenant exits once all its jobs are done.

    :param tenant_id: the tenant's unique id
    :param speedups: job type -> TRUE speedups per GPU type, slowest first
    :param jobs: its jobs
    :param weight: its priority, > 0
    :param arrival: when it joins, seconds since the start
    :param leave_at: when it is forced to leave, seconds; ``None``: once its jobs are done
    :param strategy: how it reports its speedups (:mod:`marketsim.agents.strategies`)
    """

    tenant_id: str
    speedups: Mapping[str, tuple[float, ...]]
    jobs: tuple[JobConfig, ...]
    weight: float = 1.0
    arrival: float = 0.0
    leave_at: float | None = None
    strategy: Strategy = field(default_factory=Truthful)

    def __post_init__(self) -> None:
        tid = self.tenant_id
        if not tid:
            raise InputError("TenantConfig.tenant_id", tid, "must be a non-empty string")
        check_positive(f"tenant {tid}.weight", self.weight)
        check_nonneg(f"tenant {tid}.arrival", self.arrival)
        if self.leave_at is not None and check_nonneg(f"tenant {tid}.leave_at", self.leave_at) < self.arrival:
            raise InputError(f"tenant {tid}.leave_at", self.leave_at, f"must be >= its arrival {self.arrival}")
        if not self.speedups:
            raise InputError(f"tenant {tid}.speedups", dict(self.speedups), "must give at least one job type")
        clean: dict[str, tuple[float, ...]] = {}
        for jt, w in self.speedups.items():
            vec = tuple(check_positive(f"tenant {tid}.speedups[{jt}][{j}]", v) for j, v in enumerate(w))
            if not vec:
                raise InputError(f"tenant {tid}.speedups[{jt}]", w, "must not be empty")
            clean[jt] = vec
        if len({len(v) for v in clean.values()}) != 1:
            raise InputError(f"tenant {tid}.speedups", clean, "must all have the same length (k)")
        object.__setattr__(self, "speedups", clean)
        object.__setattr__(self, "jobs", tuple(self.jobs))
        ids = [j.job_id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise InputError(f"tenant {tid}.jobs", ids, "must have distinct job ids")
        for j in self.jobs:
            if j.job_type not in clean:
                raise InputError(f"job {j.job_id}.job_type", j.job_type, f"has no speedups in tenant {tid}")
            if j.arrival < self.arrival:
                raise InputError(
                    f"job {j.job_id}.arrival", j.arrival, f"must be >= its tenant's arrival {self.arrival}"
                )
        if not isinstance(self.strategy, Strategy):
            raise InputError(f"tenant {tid}.strategy", self.strategy, "must be a reporting strategy")


@dataclass(frozen=True, eq=False)
class TraceWorkload:
    """A trace workload (see :mod:`marketsim.market.traces` and :mod:`marketsim.agents.trace_rounds`).

    :param trace: a :class:`marketsim.market.traces.Trace` of N jobs
    :param throughputs: (N, k) consolidated steps/s of each job on its scale factor per cluster GPU
        type (0 = cannot run)
    :param tenants: (N,) tenant name per job under ``tenancy``
    :param tenancy: ``"job"`` (every job its own tenant), ``"user"`` or a number of tenants N
    :param reallocation_interval_s: least time between two policy re-solves, seconds (Gavel: 1920 s;
        0 = re-solve at every change of the job set)
    :param until_done: run until every job has completed (the model's ``rounds`` is then only the
        safety cap; reaching it is reported by a warning and :attr:`MarketModel.cap_reached`)
    :param reported: (N, k) the throughputs the policy sees (lying tenants,
        :func:`marketsim.agents.trace_rounds.lying_throughputs`; ``None`` = the truth); jobs progress at ``throughputs``
    :param liars: the names of the lying tenants (for the results)
    :param lease_order: the GPU-type order of each round's leases, ``"fastest"`` or ``"shuffle"``
        (Gavel's per-round shuffle, seeded per replication)
    :param strategies: tenant name -> reporting strategy (absent = truthful), played by the tenants
        of :mod:`marketsim.agents.trace_tenants` (exclusive with ``reported``)
    :param tenant_rows: whose per-tenant per-round measures (``est``, ``act``, ...) to record:
        ``"agents"`` (the tenants that are Mesa agents: every tenant unless the tenancy is ``"job"``,
        else those in ``strategies``), ``"all"`` or ``"none"``
    :param unconsolidated: (N, k) steps/s of each job when its GPUs span hosts (placement other than
        "ideal"; :func:`marketsim.market.traces.unconsolidated_throughputs`; ``None`` = ``throughputs``)
    :param tenant_weights: tenant name -> priority weight (absent = 1)
    :param leave_at: tenant name -> forced leave time, seconds
    """

    trace: Trace
    throughputs: np.ndarray
    tenants: np.ndarray
    tenancy: str | int = "job"
    reallocation_interval_s: float = GAVEL_REALLOCATION_S
    until_done: bool = True
    reported: np.ndarray | None = None
    liars: tuple[str, ...] = ()
    lease_order: str = "fastest"
    strategies: Mapping[str, Strategy] = field(default_factory=dict)
    tenant_rows: str = "agents"
    unconsolidated: np.ndarray | None = None
    tenant_weights: Mapping[str, float] = field(default_factory=dict)
    leave_at: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from marketsim.agents.trace_rounds import LEASE_ORDERS

        check_choice("cluster.lease_order", self.lease_order, LEASE_ORDERS)
        n = len(self.trace)
        T = np.asarray(self.throughputs, dtype=float)
        if T.ndim != 2 or T.shape[0] != n:
            raise InputError("trace throughputs", T.shape, f"must have shape (jobs={n}, gpu types)")
        if not np.all(np.isfinite(T)) or (T < 0).any():
            raise InputError("trace throughputs", T.tolist()[:3], "must be finite and >= 0")
        if len(self.tenants) != n:
            raise InputError("trace tenants", len(self.tenants), f"must name one tenant per job ({n})")
        check_nonneg("reallocation_interval_s", self.reallocation_interval_s)
        object.__setattr__(self, "throughputs", T)
        if self.reported is not None:
            R = np.asarray(self.reported, dtype=float)
            if R.shape != T.shape:
                raise InputError("trace reported throughputs", R.shape, f"must have the throughputs' shape {T.shape}")
            bad = ~np.isfinite(R) | (R < 0) | ((R > 0) != (T > 0))
            if bad.any():
                i, j = (int(v) for v in np.argwhere(bad)[0])
                why = f"must be finite, >= 0 and 0 exactly where the true throughput is ({T[i, j]!r})"
                raise InputError(f"trace reported throughputs[{i}, {j}]", float(R[i, j]), why)
            object.__setattr__(self, "reported", R)
        strategies = dict(self.strategies)
        if strategies:
            if self.reported is not None:
                raise InputError("trace strategies", sorted(strategies), "cannot be combined with reported throughputs")
            known = set(np.asarray(self.tenants).astype(str).tolist())
            for name, strat in strategies.items():
                if name not in known:
                    raise InputError("trace strategies", name, "is not a tenant of the trace")
                if not isinstance(strat, Strategy):
                    raise InputError(f"trace strategies[{name}]", strat, "must be a reporting strategy")
        object.__setattr__(self, "strategies", strategies)
        check_choice("tenant_measures", self.tenant_rows, TENANT_ROWS)
        if self.unconsolidated is not None:
            U = np.asarray(self.unconsolidated, dtype=float)
            if U.shape != T.shape:
                why = f"must have the throughputs' shape {T.shape}"
                raise InputError("trace unconsolidated throughputs", U.shape, why)
            bad = ~np.isfinite(U) | (U < 0) | ((U > 0) != (T > 0))
            if bad.any():
                i, j = (int(v) for v in np.argwhere(bad)[0])
                why = f"must be finite, >= 0 and 0 exactly where the consolidated throughput is ({T[i, j]!r})"
                raise InputError(f"trace unconsolidated throughputs[{i}, {j}]", float(U[i, j]), why)
            object.__setattr__(self, "unconsolidated", U)
        if self.tenant_weights or self.leave_at:
            known = set(np.asarray(self.tenants).astype(str).tolist())
            for what, table, check in (("tenant_weights", self.tenant_weights, check_positive),
                                       ("leave_at", self.leave_at, check_nonneg)):  # fmt: skip
                clean = {}
                for name, v in dict(table).items():
                    if name not in known:
                        raise InputError(f"trace {what}", name, "is not a tenant of the trace")
                    clean[str(name)] = float(check(f"trace {what}[{name}]", v))
                object.__setattr__(self, what, clean)


@dataclass(frozen=True)
class ServerFailure:
    """Host ``host_id`` fails at ``at_s`` (its GPUs leave the capacity from the first round starting
    at or after it) and heals at ``heal_s`` (None: never). Times in seconds since the start.

    :param host_id: a host of the cluster
    :param at_s: failure time, seconds
    :param heal_s: heal time, seconds; ``None``: never
    """

    host_id: str
    at_s: float
    heal_s: float | None = None

    def __post_init__(self) -> None:
        check_nonneg(f"failure {self.host_id}.at_s", self.at_s)
        if self.heal_s is not None and check_nonneg(f"failure {self.host_id}.heal_s", self.heal_s) <= self.at_s:
            raise InputError(f"failure {self.host_id}.heal_s", self.heal_s, f"must be after at_s = {self.at_s}")


@dataclass(frozen=True)
class ModelConfig:
    """A whole simulation on the round engine (:mod:`marketsim.agents.trace_rounds`; a synthetic workload is a
    generated trace, :func:`marketsim.agents.trace_from_tenants.tenants_workload`).

    :param cluster: the GPU cluster
    :param tenants: the synthetic workload: tenants with their jobs (empty with a ``trace``)
    :param policy: the fair-share policy's registry name
    :param rounds: the horizon in rounds of ``cluster.round_seconds`` (the safety cap of a trace with
        ``until_done``)
    :param placement: "auto" ("oef" for ``oef-*`` policies, "naive" for baselines), "oef", "naive" or
        "ideal" (no hosts); ``None``: "ideal" with a trace, else "auto"
    :param kappa: the spread penalty per extra host of a lease over several hosts when the workload
        gives no unconsolidated throughputs; ``None``: :data:`DEFAULT_KAPPA` for ``tenants``, 0 with a
        trace; given explicitly it must be used (an error with placement "ideal" or with
        unconsolidated throughputs)
    :param migration_cost_s: seconds of dead time at the start of every lease that restarts a job
        from its checkpoint (it ran before and does not continue the previous round's lease)
    :param backfill: whether the rounder backfills idle GPUs
    :param stop_when_idle: end early once every tenant has left and none is still to arrive
    :param trace: the trace workload (instead of ``tenants``)
    :param realisation: one of :data:`REALISATION_CHOICES`; ``None``: "oef-rounding" for ``tenants``,
        "gavel-lease" for a trace
    :param kappa_rack: the extra penalty per extra rack a lease spans
    :param reallocation_interval_s: (``tenants`` workloads) least seconds between two policy
        re-solves; ``None``: 0, every change (a trace sets it in :class:`TraceWorkload`)
    :param failures: host failures and heals
    """

    cluster: Cluster
    tenants: tuple[TenantConfig, ...]
    policy: str = "oef-noncoop"
    rounds: int = 16
    placement: str | None = None
    kappa: float | None = None
    migration_cost_s: float = 0.0
    backfill: bool = True
    stop_when_idle: bool = True
    trace: TraceWorkload | None = None
    realisation: str | None = None
    kappa_rack: float = DEFAULT_KAPPA_RACK
    reallocation_interval_s: float | None = None
    failures: tuple[ServerFailure, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tenants", tuple(self.tenants))
        if self.realisation is not None:
            check_choice("realisation", self.realisation, REALISATION_CHOICES)
        if self.trace is not None:
            self._check_trace()
        check_int("rounds", self.rounds, minimum=1)
        if self.placement is None:
            object.__setattr__(self, "placement", "ideal" if self.trace is not None else "auto")
        check_choice("placement", self.placement, PLACEMENTS)
        if self.kappa is not None:
            check_nonneg("kappa", self.kappa)
            if self.placement == "ideal":
                raise InputError("kappa", self.kappa, "does nothing with placement 'ideal' (no hosts, no spread "
                                 "leases); leave it unset or choose placement 'auto', 'oef' or 'naive'")  # fmt: skip
            if self.trace is not None and self.trace.unconsolidated is not None:
                raise InputError("kappa", self.kappa, "does nothing with unconsolidated throughputs (a lease over "
                                 "several hosts runs at the table's rate); leave it unset")  # fmt: skip
        check_nonneg("kappa_rack", self.kappa_rack)
        check_nonneg("migration_cost_s", self.migration_cost_s)
        if self.reallocation_interval_s is not None:
            check_nonneg("reallocation_interval_s", self.reallocation_interval_s)
            if self.trace is not None:
                raise InputError("reallocation_interval_s", self.reallocation_interval_s,
                                 "is set in the TraceWorkload of a trace run")  # fmt: skip
        object.__setattr__(self, "failures", tuple(self.failures))
        hosts = {s.host_id for s in self.cluster.servers}
        for f in self.failures:
            if not isinstance(f, ServerFailure):
                raise InputError("failures", f, "must be ServerFailure entries")
            if f.host_id not in hosts:
                raise InputError("failure host", f.host_id, f"is not a host of the cluster ({sorted(hosts)[:8]}...)")
        if not isinstance(self.policy, str) or not self.policy:
            raise InputError("policy", self.policy, "must be a mechanism name")
        k = self.cluster.k
        G = int(self.cluster.capacity.sum())
        ids = [t.tenant_id for t in self.tenants]
        if len(set(ids)) != len(ids):
            raise InputError("tenants", ids, "must have distinct tenant ids")
        job_ids = [j.job_id for t in self.tenants for j in t.jobs]
        if len(set(job_ids)) != len(job_ids):
            dup = sorted({x for x in job_ids if job_ids.count(x) > 1})
            raise InputError("job ids", dup, "must be unique across tenants")
        for t in self.tenants:
            for jt, w in t.speedups.items():
                if len(w) != k:
                    raise InputError(f"tenant {t.tenant_id}.speedups[{jt}]", list(w), f"must have k = {k} entries")
            for j in t.jobs:
                if j.workers > G:
                    raise InputError(
                        f"job {j.job_id}.workers", j.workers, f"exceeds the cluster's {G} GPUs (it could never run)"
                    )

    def _check_trace(self) -> None:
        if self.tenants:
            raise InputError("tenants", len(self.tenants), "must be empty with a trace workload")
        tw = self.trace
        assert tw is not None
        T = tw.throughputs
        m = self.cluster.capacity
        if T.shape[1] != self.cluster.k:
            raise InputError("trace throughputs", T.shape, f"must have one column per GPU type ({self.cluster.k})")
        # a job runs on the types where its throughput is > 0 (the others are skipped for it); a
        # lease is on one type, except under a class realisation (OEF's rounding, the lottery)
        if self.resolved_realisation == "gavel-lease":
            fits = ((T > 0) & (tw.trace.scale[:, None] <= m[None, :])).any(axis=1)
        else:
            fits = tw.trace.scale <= ((T > 0) * m[None, :]).sum(axis=1)
        if not fits.all() and tw.until_done:  # with a horizon such a job just never runs (and stays unfinished)
            names = [t.name for t in self.cluster.types]
            bad = np.flatnonzero(~fits)
            groups: dict[tuple[str, int, str], list[str]] = {}  # every affected job, by kind
            for i in bad.tolist():
                on = [names[j] for j in np.flatnonzero(T[i] > 0).tolist()]
                key = (
                    str(tw.trace.job_type[i]),
                    int(tw.trace.scale[i]),
                    f"throughput > 0 only on {on}" if on else "throughput 0 on every type",
                )
                groups.setdefault(key, []).append(str(tw.trace.job_id[i]))
            jobs = [f"{jt} on {g} GPUs ({why}): jobs {', '.join(ids)}" for (jt, g, why), ids in groups.items()]
            cluster = ", ".join(f"{c} {n}" for n, c in zip(names, m.tolist(), strict=True))
            raise InputError(
                "trace jobs",
                int(bad.size),
                f"can run on no GPU type of the cluster ({cluster}; a job runs on one type at a time, on as "
                f"many GPUs of it as its scale factor): {'; '.join(jobs)}",
            )

    @property
    def resolved_kappa(self) -> float:
        """The spread penalty per extra host: ``kappa``, else :data:`DEFAULT_KAPPA` for synthetic
        tenants (OEF spec §2.3) and 0 with a trace (no penalty without an unconsolidated table)."""
        if self.kappa is not None:
            return float(self.kappa)
        return 0.0 if self.trace is not None else DEFAULT_KAPPA

    @property
    def resolved_realisation(self) -> str:
        """The realisation actually used: "gavel-lease", "oef-rounding" or "gandiva-lottery"."""
        from marketsim.market.oef.realise import own_realisation

        r = self.realisation
        if r is None:
            return "gavel-lease" if self.trace is not None else "oef-rounding"
        return own_realisation(self.policy) if r == "own" else r

    @property
    def resolved_placement(self) -> str:
        """The placement rule actually used: "oef", "naive" or "ideal"."""
        if self.placement != "auto":
            return str(self.placement)
        return "oef" if self.policy.startswith("oef") else "naive"

    def true_speedups(self) -> dict[tuple[str, str], np.ndarray]:
        """TRUE speedup vector per (tenant, job type), normalised to ``w[0] = 1``."""
        out: dict[tuple[str, str], np.ndarray] = {}
        for t in self.tenants:
            for jt, w in t.speedups.items():
                v = np.asarray(w, dtype=float)
                out[(t.tenant_id, jt)] = v / v[0]
        return out
