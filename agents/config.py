"""Plain-data configuration of a :class:`agents.model.MarketModel` (no Mesa here).

Units: times in seconds since simulation start; ``work`` in slowest-GPU-seconds (one second of
one type-0 GPU = 1 unit; a job with ``work = W`` on ``g`` type-0 GPUs finishes after ``W/g`` s);
speedups dimensionless, per GPU type slowest first (normalised by the model to ``w[0] = 1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from agents.strategies import Strategy, Truthful
from market.errors import InputError, check_choice, check_int, check_nonneg, check_positive
from market.traces import Trace
from market.types import Cluster

__all__ = ["JobConfig", "TenantConfig", "ModelConfig", "TraceWorkload", "PLACEMENTS", "GAVEL_REALLOCATION_S"]

#: Gavel's ``minimum_time_between_allocation_resets`` (s): the default of trace runs
GAVEL_REALLOCATION_S = 1920.0

#: placement rules; "ideal" (trace runs only, their default): no hosts, consolidated throughput
PLACEMENTS = ("auto", "oef", "naive", "ideal")

#: ``TraceWorkload.tenant_rows`` (``[workload] tenant_measures``): whose per-tenant rows a trace run records
TENANT_ROWS = ("agents", "all", "none")


@dataclass(frozen=True)
class JobConfig:
    """One gang-scheduled training job: ``workers`` GPUs at once, ``work`` slowest-GPU-seconds,
    submitted at ``arrival`` seconds."""

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
    ``strategy``. Without ``leave_at`` the tenant exits once all its jobs are done."""

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
    """A trace workload (see :mod:`market.traces` and :mod:`agents.trace_rounds`).

    ``trace``: a :class:`market.traces.Trace` of N jobs; ``throughputs`` (N, k) consolidated
    steps/s of each job on its scale factor per cluster GPU type (0 = cannot run); ``tenants`` (N,)
    tenant name per job under ``tenancy`` ("job" | "user" | N); ``reallocation_interval_s``: least
    time between two policy re-solves (Gavel: 1920 s; 0 = re-solve at every change of the job
    set); ``until_done``: run until every job has completed (the model's ``rounds`` is then only the
    safety cap, and reaching it is reported by a warning and :attr:`MarketModel.cap_reached`);
    ``reported`` (N, k): the throughputs the policy sees (lying tenants,
    :func:`agents.trace_rounds.lying_throughputs`; None = the truth), while jobs progress at
    ``throughputs``; ``liars``: the names of the lying tenants (for the results); ``lease_order``:
    the GPU-type order of each round's leases, ``"fastest"`` or ``"shuffle"`` (Gavel's per-round
    shuffle, seeded per replication; :mod:`agents.trace_rounds`);
    ``strategies``: tenant name -> reporting strategy (absent = truthful), played by the tenants of
    :mod:`agents.trace_tenants` (exclusive with ``reported``); ``tenant_rows``: whose
    per-tenant per-round measures (``est``, ``act``, ...) to record: ``"agents"`` (the tenants
    that are Mesa agents: every tenant unless the tenancy is ``"job"``, else those in
    ``strategies``), ``"all"`` or ``"none"``; ``unconsolidated`` (N, k):
    steps/s of each job when its GPUs span hosts (placement other than "ideal";
    :func:`market.traces.unconsolidated_throughputs`; None = the consolidated ``throughputs``)."""

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

    def __post_init__(self) -> None:
        from agents.trace_rounds import LEASE_ORDERS

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


@dataclass(frozen=True)
class ModelConfig:
    """A whole simulation: the cluster, the tenants, the fair-share ``policy`` (registry name),
    the horizon in ``rounds`` (of ``cluster.round_seconds``), the ``placement`` rule ("auto":
    "oef" for ``oef-*`` policies, "naive" for baselines; "ideal", trace runs only: no hosts;
    None = "ideal" with a trace, else "auto"), the rate model's ``kappa`` (synthetic runs) and
    ``migration_cost_s`` (s; both kinds of run), the placer's ``backfill``, and ``stop_when_idle`` (end early once every
    tenant has left and none is still to arrive)."""

    cluster: Cluster
    tenants: tuple[TenantConfig, ...]
    policy: str = "oef-noncoop"
    rounds: int = 16
    placement: str | None = None
    kappa: float = 0.1
    migration_cost_s: float = 0.0
    backfill: bool = True
    stop_when_idle: bool = True
    trace: TraceWorkload | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tenants", tuple(self.tenants))
        if self.trace is not None:
            self._check_trace()
        check_int("rounds", self.rounds, minimum=1)
        if self.placement is None:
            object.__setattr__(self, "placement", "ideal" if self.trace is not None else "auto")
        check_choice("placement", self.placement, PLACEMENTS)
        if self.placement == "ideal" and self.trace is None:
            raise InputError("placement", "ideal", "is for trace workloads only; use 'auto', 'oef' or 'naive'")
        check_nonneg("kappa", self.kappa)
        check_nonneg("migration_cost_s", self.migration_cost_s)
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
        # a job runs on the types where its throughput is > 0 (the others are skipped for it)
        fits = ((T > 0) & (tw.trace.scale[:, None] <= m[None, :])).any(axis=1)
        if not fits.all():
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
