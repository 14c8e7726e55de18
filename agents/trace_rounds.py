"""Gavel-style scheduling rounds over a job trace, on numpy arrays of job state (no Mesa here).

:class:`TraceRounds` is the round engine of trace-driven runs (``ModelConfig.trace``); the
:class:`agents.auctioneer.Auctioneer` calls :meth:`TraceRounds.step` once per Mesa step. It follows
the simulator of Gavel (``scheduler/scheduler.py``: ``simulate``, ``_update_priorities``,
``_schedule_jobs_on_workers``; semantics read from the public code, nothing copied). Every
difference is listed in ``docs/trace_simulation.md``. One round starting at ``now``:

1. **Arrivals.** Jobs with ``arrival_s <= now`` join (a job arriving inside a round waits for the
   next one). With nothing to run the clock jumps to the next arrival (no empty rounds).
2. **Allocation reset** (Gavel's ``_reset_time_run_so_far``), only when the job set changed and
   ``reallocation_interval_s`` has passed since the last reset (Gavel: 1920 s; the first reset
   whenever jobs are active), or at once when no active job can be leased (none has an
   allocation): each job's deficit grows by ``alloc * elapsed - received``, every job's
   received time restarts at ``round_seconds / 2`` per type, and the policy is re-solved. A job that
   arrived after the last reset has no allocation and is not leased until the next reset.
3. **Priorities:** ``priority[j, t] = alloc[j, t] / fraction[j, t]`` with ``fraction`` = job ``j``'s
   share of the time type ``t`` ran jobs since the reset; ``alloc * 1e9`` when ``fraction = 0``;
   0 when ``alloc = 0`` or the job cannot run on ``t``. ``alloc`` is the policy's time fraction
   (devices / scale factor).
4. **Leases:** GPU types in the lease order: ``"fastest"`` (default) fastest first (the cluster
   lists them slowest first), or ``"shuffle"`` (Gavel's order for its heterogeneity-agnostic
   policies): a uniformly random permutation of the types with GPUs, drawn anew every round from
   ``lease_rng``. Per type the jobs in descending ``(priority, deficit, alloc)`` (ties: arrival
   order); a job is leased ``scale`` GPUs of that type if it is not leased yet, can run there
   (throughput > 0) and fits. Priority-0 entries stay in the queue, so idle GPUs go to any job that
   fits (work conservation as in Gavel), except under the policies of :data:`ALLOCATED_ONLY`
   (``gavel-fifo``: a job runs only on a type it has an allocation on, as Gavel's FIFO).
5. **Progress** at the consolidated throughput of the job's scale factor on its type (steps/s of the
   whole job). A job that finishes inside the round completes at its exact time
   ``now + remaining / rate``; its GPUs idle until the round ends. The round ends when the last
   lease ends (``now + max ran``, = ``round_seconds`` unless every leased job finished early, as in
   Gavel, whose round ends at the latest micro-task finish).
6. **Hosts** (only with a ``placer``, i.e. ``placement`` "auto" | "oef" | "naive"; "ideal" skips
   this step and is Gavel's semantics): the leases decided per type in step 4 are put on hosts by
   :class:`market.hosts.HostPlacer`. A lease spanning more than one host progresses at the
   unconsolidated throughput ``U`` instead of ``T``; a job that ran in the previous round on
   other hosts (a migration) makes no progress for the first ``migration_cost_s`` seconds of its
   lease (at most the round), so it finishes at ``now + migration_cost_s + remaining / rate``.

Rows given to the policy: ``tenancy = "job"``: one row per job (its throughputs, cap = scale
factor, weight = the trace's priority weight). Otherwise one row per class (tenant, job type, scale
factor) with cap = total GPUs of its active jobs and weight ``1 / (classes of the tenant)``; each
job of a class gets the class's devices per GPU (``X[c] / cap[c]``) as its time fraction. Gavel's
own policies (:data:`GAVEL_NATIVE`: ``gavel-max-min-perf``, ``gavel-max-sum-throughput``,
``gavel-isolated``, ``gavel-fifo``) always get one row per job
with raw throughputs and ``scale_factors`` (weights ``priority / active jobs of the tenant`` unless
``tenancy = "job"``). ``gavel-max-min-perf`` solves identical jobs (same throughputs, scale factor,
weight and time bound) once, with equal time fractions (its ``aggregate = True``,
:mod:`market.oef.roundlp`): the same optimum as the per-job program, and the point of its optimal
face that Gavel's interior-point solver (cvxpy + ECOS) converges to by symmetry, where a simplex
vertex would split identical jobs unevenly (:data:`NATIVE_OPTIONS`). A time-fraction row summing
above 1 (policies without caps, e.g. OEF) is scaled down to 1.

**Jobs that cannot run on a GPU type** (throughput 0): Gavel's own policies take the zeros as
they are. The speedup-based policies need every entry > 0, so they see such an entry as
``ZERO_FILL`` times the row's largest throughput (below every feasible entry of the row; the
speedup bound of the policies holds); whatever time they give the job on that type is dropped
(time fraction 0), and the type is skipped for the job in the leases. So the type is simply not
used by that job, as in Gavel (whose agnostic max-min also allocates such time and skips it).

**Lying tenants** (``reported``): the policy sees the REPORTED throughputs of every job (rows,
normalisers, time fractions), while jobs progress, lease feasibility (throughput > 0) and the
estimated throughput use the TRUE ones: outcomes from reports, experience from truth.
The reports come from the trace's tenants (:attr:`TraceRounds.reporter`, an
:class:`agents.trace_tenants.TraceTenants`, asked at every solve) or, fixed, from ``reported``;
:func:`lying_throughputs` builds fixed reports of a set of tenants scaling per GPU type. Who is a tenant follows
the tenancy: with ``tenancy = "job"`` a lying tenant is one job, with ``"user"`` or ``N`` every
job of the tenant reports inflated throughputs (Gavel's own policies still get one row per job,
each normalised by its own reported proportional-share throughput).

Units: seconds, steps, steps/s, GPUs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from market.errors import InputError
from market.hosts import HostPlacement, HostPlacer
from market.oef.roundlp import row_classes

__all__ = [
    "TraceRounds",
    "TraceRoundResult",
    "GAVEL_NATIVE",
    "NATIVE_OPTIONS",
    "ALLOCATED_ONLY",
    "LEASE_ORDERS",
    "ZERO_FILL",
    "lying_throughputs",
]

#: policies that take raw throughputs and scale factors (Gavel's own formulations)
GAVEL_NATIVE = frozenset({"gavel-max-min-perf", "gavel-max-sum-throughput", "gavel-isolated", "gavel-fifo"})
#: options the engine passes to Gavel's own policies (module docstring: identical jobs solved once,
#: with equal time fractions; on the packaged 1,301-job trace this is also 1.5x less CPU per run)
NATIVE_OPTIONS: dict[str, dict[str, Any]] = {"gavel-max-min-perf": {"aggregate": True}}
#: policies whose jobs run only where they have an allocation (Gavel never leases a FIFO job with priority 0)
ALLOCATED_ONLY = frozenset({"gavel-fifo"})
#: the order in which a round leases GPU types (module docstring, step 4)
LEASE_ORDERS = ("fastest", "shuffle")
#: what a speedup-based policy sees for a throughput of 0, relative to the row's largest entry
ZERO_FILL = 1e-3


def _empty(dtype: Any) -> np.ndarray:
    a = np.zeros(0, dtype=dtype)
    a.flags.writeable = False  # shared by every result: read-only
    return a


_NO_INT = _empty(np.int64)
_NO_FLOAT = _empty(float)


@dataclass
class TraceRoundResult:
    """What one round did: start ``now`` and length ``length_s`` (s); ``leased`` job indices and
    their GPU type; ``finished`` job indices with their completion times (s); ``resolved``: the
    policy was re-solved; GPU and throughput aggregates (throughputs in slowest-GPU equivalents);
    with hosts: the ``placement``, leases spanning hosts, migrations and the seconds they cost."""

    now: float = 0.0
    length_s: float = 0.0
    leased: np.ndarray = field(default_factory=lambda: _NO_INT)
    leased_type: np.ndarray = field(default_factory=lambda: _NO_INT)
    finished: np.ndarray = field(default_factory=lambda: _NO_INT)
    finished_at: np.ndarray = field(default_factory=lambda: _NO_FLOAT)
    resolved: bool = False
    active_jobs: int = 0
    active_rows: int = 0
    active_tenants: int = 0
    busy_by_type: np.ndarray = field(default_factory=lambda: _NO_INT)
    used_gpu_seconds: float = 0.0
    #: the part of ``used_gpu_seconds`` leased on a type where the job's allocation is 0 (work-
    #: conserving backfill: the policy gave the job nothing there; step 4's priority-0 leases)
    backfill_gpu_seconds: float = 0.0
    total_est: float = 0.0
    total_act: float = 0.0
    #: the active jobs at the round's start (indices) and the steps each leased job did (``leased`` order)
    active: np.ndarray = field(default_factory=lambda: _NO_INT)
    done_steps: np.ndarray = field(default_factory=lambda: _NO_FLOAT)
    #: host placement of the leases (None with placement "ideal")
    placement: HostPlacement | None = None
    cross_host_jobs: int = 0
    migrations: int = 0
    migration_lost_s: float = 0.0
    #: Gavel rounds this result covers (> 1 when :meth:`TraceRounds._fast_forward` merged rounds)
    merged: int = 1


def lying_throughputs(
    throughputs: np.ndarray, job_types: np.ndarray, tenants: np.ndarray, liars: Any, strategy: Any
) -> np.ndarray:
    """Reported throughputs (N, k): the jobs of the tenants in ``liars`` report with ``strategy``,
    every other job the truth. Only per-dimension scaling (:class:`agents.strategies.ScaleDims`,
    a variant's ``strategy = "scale"`` or ``"fast"``) applies to raw throughputs unchanged: the
    row ``T[l]`` becomes ``T[l] * f`` with ``f`` the strategy's factors for the job's type (a
    speedup vector scaled by ``f`` is the raw row scaled by ``f``; zeros stay zeros)."""
    from agents.strategies import ScaleDims

    if not isinstance(strategy, ScaleDims):
        why = "is not supported with a trace workload: use 'scale' or 'fast' (per-type factors)"
        raise InputError("variant.strategy", type(strategy).__name__, why)
    T = np.asarray(throughputs, dtype=float)
    R = T.copy()
    lie = np.isin(np.asarray(tenants).astype(str), np.asarray(sorted(liars), dtype=str))
    if not lie.any():
        return R
    jt = np.asarray(job_types).astype(str)
    ones = np.ones(T.shape[1])
    for name in np.unique(jt[lie]).tolist():
        f = strategy.report(name, ones, np.random.default_rng(0))  # deterministic: ScaleDims draws nothing
        rows = lie & (jt == name)
        R[rows] = T[rows] * f[None, :]
    return R


class TraceRounds:
    """The round engine (module docstring). ``throughputs`` (N, k) steps/s per job and GPU type
    (0 = cannot run), ``scale`` (N,) GPUs, ``total_steps`` (N,), ``arrival_s`` (N,) ascending,
    ``priority`` (N,) > 0, ``tenant_code`` (N,) ints, ``job_type_code`` (N,) ints; ``policy`` a
    registered fair-share mechanism (``mechanism`` its registry entry); ``per_job``: one policy row
    per job (tenancy "job"); ``reported`` (N, k): the throughputs the policy sees (None = the
    truth; lying tenants, module docstring); ``lease_order`` one of :data:`LEASE_ORDERS`, with
    ``lease_rng`` (a ``numpy.random.Generator``) drawing the ``"shuffle"`` permutations; ``placer``: host
    placement (None = "ideal"), ``unconsolidated`` (N, k) steps/s of a job spanning hosts (None =
    ``throughputs``),
    ``migration_cost_s`` (s) lost by a lease whose hosts changed (module docstring, step 6)."""

    def __init__(
        self,
        *,
        throughputs: np.ndarray,
        scale: np.ndarray,
        total_steps: np.ndarray,
        arrival_s: np.ndarray,
        priority: np.ndarray,
        tenant_code: np.ndarray,
        job_type_code: np.ndarray,
        policy: str,
        mechanism: Any,
        round_seconds: float,
        reallocation_interval_s: float,
        per_job: bool,
        reported: np.ndarray | None = None,
        lease_order: str = "fastest",
        lease_rng: np.random.Generator | None = None,
        placer: HostPlacer | None = None,
        unconsolidated: np.ndarray | None = None,
        migration_cost_s: float = 0.0,
    ) -> None:
        self.T = np.asarray(throughputs, dtype=float)
        n, k = self.T.shape
        #: what the policy sees (REPORTED throughputs); progress uses :attr:`T` (the truth)
        self.R = self.T if reported is None else np.asarray(reported, dtype=float)
        if self.R.shape != self.T.shape:
            raise InputError("reported", self.R.shape, f"must have the shape of the throughputs {self.T.shape}")
        self.n, self.k = n, k
        #: host placement (None = "ideal": consolidated throughput, no hosts)
        self.placer = placer
        #: (N, k) throughputs of a job whose GPUs span hosts (default: the consolidated ones)
        self.U = self.T if unconsolidated is None else np.asarray(unconsolidated, dtype=float)
        if self.U.shape != self.T.shape:
            raise InputError("unconsolidated", self.U.shape, f"must have the shape of the throughputs {self.T.shape}")
        if ((self.U > 0) != (self.T > 0)).any():
            raise InputError("unconsolidated", "zeros", "must be 0 exactly where the consolidated throughput is 0")
        self.migration_cost_s = float(migration_cost_s)
        if not self.migration_cost_s >= 0.0:
            raise InputError("migration_cost_s", migration_cost_s, "must be a number >= 0")
        #: usable GPUs per host this round (None = every host full); the model sets it each round
        self.host_cap: np.ndarray | None = None
        self.migrations = 0  # leases that changed hosts, whole run
        self.migration_lost_s = 0.0  # lease seconds lost to migrations, whole run
        self.s = np.asarray(scale, dtype=np.int64)
        self.remaining = np.asarray(total_steps, dtype=float).copy()
        self.arrival = np.asarray(arrival_s, dtype=float)
        if n and np.any(np.diff(self.arrival) < 0):
            raise InputError("arrival_s", self.arrival.tolist()[:10], "must be in ascending order")
        self.priority = np.asarray(priority, dtype=float)
        self.tenant = np.asarray(tenant_code, dtype=np.int64)
        self.policy = policy
        self.mechanism = mechanism
        self.native = policy in GAVEL_NATIVE
        self.native_options = NATIVE_OPTIONS.get(policy, {})
        self.dt = float(round_seconds)
        self.interval = float(reallocation_interval_s)
        self.per_job = bool(per_job)
        if lease_order not in LEASE_ORDERS:
            raise InputError("cluster.lease_order", lease_order, f"must be one of {list(LEASE_ORDERS)}")
        if lease_order == "shuffle" and lease_rng is None:
            raise InputError("lease_rng", lease_rng, "must be a numpy Generator with lease_order 'shuffle'")
        self.lease_order = lease_order
        self.lease_rng = lease_rng
        self._order = np.arange(k - 1, -1, -1)  # this round's GPU-type order (fastest first by default)
        # class of each job: (tenant, job type, scale factor), numbered by first appearance
        self.klass = row_classes(self.tenant, np.asarray(job_type_code, dtype=np.int64), self.s)[1]
        pos = np.where(self.T > 0, self.T, np.inf).min(axis=1)
        #: steps per GPU-second on the job's slowest feasible type (the slowest-GPU-equivalent unit)
        self.unit = pos / self.s
        # state
        self.now = 0.0
        self.next_arrival = 0  # index of the first job not yet arrived
        self.active = np.zeros(0, dtype=np.int64)  # arrived, unfinished jobs in arrival order
        self.done_at = np.full(n, np.nan)
        self.n_done = 0  # jobs completed so far (= count of finite done_at)
        self.alloc = np.zeros((n, k))  # time fractions of the last solve
        self.has_alloc = np.zeros(n, dtype=bool)
        self.job_time = np.zeros((n, k))  # Gavel's _job_time_so_far (s since the reset, per type)
        self.worker_time = np.zeros(k)  # Gavel's _worker_time_so_far
        self.deficit = np.zeros((n, k))
        self.last_reset: float | None = None
        self.need_realloc = False
        self.solves = 0
        self.solve_seconds = 0.0
        self._m_key: bytes | None = None
        self._counts: tuple[int, int, float] | None = None  # (tenants, rows, est) of the active set
        self._lease_st: tuple | None = None  # the lease's per-active-set arrays (_lease_state)
        self._order_free = False  # the last lease did not depend on priorities (_lease)
        #: (active jobs, policy seconds) of every solve, for the benchmark
        self.solve_log: list[tuple[int, float]] = []
        #: the tenants' reports (:class:`agents.trace_tenants.TraceTenants`; None: :attr:`R`):
        #: ``reports(A)`` gives the rows the policy sees for the active jobs ``A`` at a solve and
        #: ``solved(A, m, x)`` hears the allocation (learning tenants re-score it by :meth:`_solve`)
        self.reporter: Any = None
        #: merge rounds in which nothing can change into one step (:meth:`_fast_forward`; exact)
        self.skip_rounds = True
        #: Gavel rounds simulated so far (> steps when rounds were merged); at most :attr:`max_rounds`
        self.rounds = 0
        self.max_rounds: int | None = None

    # -- queries ---------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """Every job of the trace has completed."""
        return self.next_arrival >= self.n and self.active.size == 0

    @property
    def completed(self) -> int:
        """Number of jobs completed so far."""
        return self.n_done

    # -- the round --------------------------------------------------------------------------------
    def _admit(self) -> bool:
        if self.active.size == 0 and self.next_arrival < self.n:
            self.now = max(self.now, float(self.arrival[self.next_arrival]))  # idle: jump to the next arrival
        if self.next_arrival >= self.n or self.arrival[self.next_arrival] > self.now:
            return False  # nobody arrives (arrivals ascend): what the search below would say, without it
        end = int(np.searchsorted(self.arrival, self.now, side="right"))
        if end <= self.next_arrival:
            return False
        new = np.arange(self.next_arrival, end)
        self.next_arrival = end
        self.active = np.concatenate([self.active, new])
        self._counts = self._lease_st = None
        self.job_time[new] = self.dt / 2.0  # Gavel's add_job: every type starts at half a round
        self.deficit[new] = 0.0
        self.has_alloc[new] = False
        return True

    def _reset_and_solve(self, m: np.ndarray) -> None:
        A = self.active
        elapsed = 0.0 if self.last_reset is None else self.now - self.last_reset
        received = self.job_time[A] - self.dt / 2.0
        should = self.alloc[A] * elapsed
        self.deficit[A] += should - received
        self.job_time[A] = self.dt / 2.0
        self.worker_time[:] = A.size * self.dt / 2.0
        self.last_reset = self.now
        self.need_realloc = False
        t0 = time.perf_counter()
        x = self._solve(A, m)
        dt = time.perf_counter() - t0
        self.solve_seconds += dt
        self.solves += 1
        self.solve_log.append((int(A.size), dt))
        self.alloc[A] = x
        self.has_alloc[A] = True
        self._counts = self._lease_st = None
        if self.reporter is not None:
            self.reporter.solved(A, m, x)

    def _solve(self, A: np.ndarray, m: np.ndarray, reported: np.ndarray | None = None) -> np.ndarray:
        """Time fractions (|A|, k) of the active jobs under the policy, given the reported rows
        (|A|, k) of ``A`` (default: the tenants' reports, :attr:`reporter`, else :attr:`R`)."""
        if A.size == 0:
            return np.zeros((0, self.k))
        if reported is None:
            reported = self.R[A] if self.reporter is None else self.reporter.reports(A)
        T = reported  # the policy sees the reports
        if not self.native:  # speedup-based policies need entries > 0 (module docstring)
            T = np.where(T > 0, T, ZERO_FILL * T.max(axis=1, keepdims=True))
        s = self.s[A]
        ten = self.tenant[A]
        if self.native:
            w = self.priority[A].copy()
            if not self.per_job:
                _, tinv, tcnt = np.unique(ten, return_inverse=True, return_counts=True)
                w = w / tcnt[tinv]
            alloc = self.mechanism.fn(T, m, weights=w, scale_factors=s.astype(float), **self.native_options)
            x = np.asarray(alloc.info["time_fractions"], dtype=float).reshape(A.size, self.k)
        elif self.per_job:
            alloc = self.mechanism.fn(T, m, weights=self.priority[A], caps=s.astype(float))
            x = np.asarray(alloc.X, dtype=float) / s[:, None]
        else:
            cls, first, inv = np.unique(self.klass[A], return_index=True, return_inverse=True)
            inv = inv.ravel()
            caps = np.bincount(inv, weights=s.astype(float), minlength=cls.size)
            ct = ten[first]
            _, cinv, ccnt = np.unique(ct, return_inverse=True, return_counts=True)
            alloc = self.mechanism.fn(T[first], m, weights=1.0 / ccnt[cinv], caps=caps)
            X = np.asarray(alloc.X, dtype=float)
            x = X[inv] / caps[inv, None]
        x = np.where(self.T[A] > 0, np.clip(x, 0.0, None), 0.0)
        tot = x.sum(axis=1)
        over = tot > 1.0
        x[over] /= tot[over, None]
        return x

    def _lease_state(self) -> tuple:
        """What the lease needs of the active jobs that changes only when the active set or the
        allocation does (cached like :attr:`_counts`), per GPU type (rows): ``(A, alloc, alloc *
        1e9, may-lease mask, tie orders, GPUs per job, every job has 1 GPU)``. The tie order of
        type ``t`` (computed when ``t`` first needs ranking) lists the positions in ``A`` by
        (deficit, alloc) descending, ties in arrival order: the lease's order after the priority
        (a stable sort by priority keeps it)."""
        st = self._lease_st
        if st is None:
            A = self.active
            a = np.ascontiguousarray(self.alloc[A].T)
            TA = self.T[A].T
            ok = (TA > 0) & self.has_alloc[A][None, :]
            if self.policy in ALLOCATED_ONLY:  # not work-conserving, as Gavel's FIFO
                ok &= a > 0
            ties: list[np.ndarray | None] = [None] * self.k  # filled when a type first needs ranking
            sizes = self.s[A]
            st = self._lease_st = (A, a, a * 1e9, ok, ties, sizes, bool((sizes == 1).all()))
        return st

    def _lease(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gavel's priority-ordered greedy lease (module docstring, step 4): positions in
        :attr:`active` and GPU types of the leased jobs, in lease order. Sets
        :attr:`_order_free`: no type had more candidates than room, so the lease did not depend on
        priorities (and repeats while the active jobs, allocations and ``m`` stay the same)."""
        self._order_free = False
        if self.active.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        A, a, a9, ok, ties, sizes, unit = self._lease_state()
        wt = self.worker_time
        left = m.astype(np.int64)
        taken = np.zeros(A.size, dtype=bool)
        pos_out: list[np.ndarray] = []
        typ_out: list[int] = []
        order_free = True
        for t in self._order.tolist():  # this round's lease order (step())
            room = int(left[t])
            if room <= 0:
                continue
            cand = ok[t] & ~taken
            if not unit:
                cand &= sizes <= room
            need = int(np.count_nonzero(cand)) if unit else int(sizes[cand].sum())
            if need == 0:
                continue
            if need <= room:  # everyone fits: the order cannot matter
                pick = np.flatnonzero(cand)
            else:
                order_free = False
                c = ties[t]
                if c is None:  # by deficit, then alloc, descending; lexsort is stable: arrival order last
                    c = ties[t] = np.lexsort((-a[t], -self.deficit[A, t]))
                c = c[cand[c]]  # the candidates in tie order
                # priority alloc / fraction (fraction = the job's share of the time type t ran
                # jobs since the reset; alloc * 1e9 at fraction 0). It is 0 where alloc = 0 (0 / x
                # and 0 * 1e9), and a candidate has T > 0 (``ok``)
                w = float(wt[t])
                frac = self.job_time[A[c], t] / w if w > 0 else np.zeros(c.size)
                if frac.min() > 0:
                    prio = a[t, c] / frac
                else:
                    pos = frac > 0
                    prio = np.where(pos, a[t, c] / np.where(pos, frac, 1.0), a9[t, c])
                # descending (priority, deficit, alloc), ties in arrival order
                c = c[np.argsort(-prio, kind="stable")]
                if unit:
                    pick = c[:room]
                else:
                    chosen = []
                    for p, g in zip(c.tolist(), sizes[c].tolist(), strict=True):
                        if g <= room:
                            chosen.append(p)
                            room -= g
                            if room == 0:
                                break
                    pick = np.asarray(chosen, dtype=np.int64)
            left[t] -= pick.size if unit else int(sizes[pick].sum())
            taken[pick] = True
            pos_out.append(pick)
            typ_out.append(t)
        self._order_free = order_free
        if not pos_out:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if len(pos_out) == 1:
            return pos_out[0], np.full(pos_out[0].size, typ_out[0], dtype=np.int64)
        return np.concatenate(pos_out), np.repeat(np.asarray(typ_out, dtype=np.int64), [p.size for p in pos_out])

    def _place(
        self, jobs: np.ndarray, typ: np.ndarray, rate: np.ndarray, res: TraceRoundResult
    ) -> tuple[np.ndarray, np.ndarray]:
        """Step 6 (module docstring): put the round's leases on hosts; returns each lease's rate
        (unconsolidated when it spans hosts) and the seconds it loses to a migration."""
        assert self.placer is not None
        pl = self.placer.place(jobs, typ, self.s[jobs], self.host_cap)
        spread = pl.n_hosts > 1
        if spread.any():
            rate = np.where(spread, self.U[jobs, typ], rate)
        lost = np.where(pl.moved, min(self.migration_cost_s, self.dt), 0.0)
        res.placement = pl
        res.cross_host_jobs = int(spread.sum())
        res.migrations = int(pl.moved.sum())
        res.migration_lost_s = float(lost.sum())
        self.migrations += res.migrations
        self.migration_lost_s += res.migration_lost_s
        return rate, lost

    def step(self, m: np.ndarray) -> TraceRoundResult:
        """Simulate one round with ``m`` (k,) GPUs per type; advances :attr:`now` to its end."""
        m = np.asarray(m, dtype=np.int64)
        res = TraceRoundResult(busy_by_type=np.zeros(self.k, dtype=np.int64))
        if self._admit():
            self.need_realloc = True
        mk = m.tobytes()
        if mk != self._m_key:
            self._m_key = mk
            self.need_realloc = True
        res.now = self.now
        if self.active.size == 0:  # nothing left to arrive (_admit jumps the clock to the next arrival)
            return res
        if self.lease_order == "shuffle":  # Gavel: the types present, reshuffled every round
            self._order = self.lease_rng.permutation(np.flatnonzero(m > 0))  # type: ignore[union-attr]
        if self.need_realloc and (self.last_reset is None or self.now - self.last_reset >= self.interval):
            self._reset_and_solve(m)
            res.resolved = True
        pos, typ = self._lease(m)
        if pos.size == 0 and self.need_realloc:  # only unallocated jobs left: reset now
            self._reset_and_solve(m)
            res.resolved = True
            pos, typ = self._lease(m)
        if pos.size == 0:  # cannot happen: every job fits on some type (checked by ModelConfig)
            raise RuntimeError(f"trace round at {self.now} s leased no GPU to {self.active.size} active jobs")
        A = self.active
        res.active_jobs = int(A.size)
        if self._counts is None:  # recomputed only when the active set or the allocation changed
            rows = A.size if (self.per_job or self.native) else np.unique(self.klass[A]).size
            est = float((self.alloc[A] * self.T[A]).sum(axis=1) @ (1.0 / self.unit[A]))
            self._counts = (int(np.unique(self.tenant[A]).size), int(rows), est)
        res.active_tenants, res.active_rows, res.total_est = self._counts
        jobs = A[pos]
        rate = self.T[jobs, typ]
        lost = None
        if self.placer is not None:  # 6. hosts (placement != "ideal")
            rate, lost = self._place(jobs, typ, rate, res)
        rem = self.remaining[jobs]
        need = rem / rate
        if lost is not None:
            need += lost
        fin = need <= self.dt * (1.0 + 1e-12)
        any_fin = bool(fin.any())
        if any_fin:
            ran = np.where(fin, need, self.dt)
            done = rate * (ran if lost is None else ran - lost)
            self.remaining[jobs] = np.where(fin, 0.0, rem - done)
        else:  # the same numbers as above when no job finishes
            ran = np.full(jobs.size, self.dt)
            done = rate * (ran if lost is None else ran - lost)
            self.remaining[jobs] = rem - done
        self.job_time[jobs, typ] += ran  # a job holds one lease: the same single addition as np.add.at
        np.add.at(self.worker_time, typ, ran)  # in lease order, one addition at a time
        length = float(ran.max())
        res.length_s = length
        res.leased, res.leased_type = jobs, typ
        res.active, res.done_steps = A, done
        gpus = self.s[jobs]
        res.busy_by_type = np.bincount(typ, weights=gpus, minlength=self.k).astype(np.int64)
        res.used_gpu_seconds = float((gpus * ran).sum())
        res.backfill_gpu_seconds = float((gpus * ran)[self.alloc[jobs, typ] <= 0.0].sum())
        res.total_act = float((done / self.unit[jobs]).sum() / length) if length > 0 else 0.0
        if any_fin:
            f = jobs[fin]
            res.finished = f
            res.finished_at = self.now + need[fin]
            self.done_at[f] = res.finished_at
            self.n_done += int(f.size)
            self.active = A[~np.isin(A, f)]
            self._counts = self._lease_st = None
            self.need_realloc = True
        self.now += length
        self.rounds += 1
        if self.skip_rounds and self._order_free and not any_fin and not self.need_realloc and self._can_skip():
            self._fast_forward(res, jobs, typ, rate)
        return res

    # -- merging the rounds in which nothing can change ---------------------------------------------
    #: rounds examined per vectorised block of :meth:`_fast_forward`
    SKIP_BLOCK = 256

    def _can_skip(self) -> bool:
        """Merging rounds is exact only when nothing happens between rounds: not with Gavel's
        per-round type shuffle (a new permutation, and an RNG draw, every round) nor with hosts (the
        server agents' health is read every round and a lease may move)."""
        return self.lease_order == "fastest" and self.placer is None

    def _fast_forward(self, res: TraceRoundResult, jobs: np.ndarray, typ: np.ndarray, rate: np.ndarray) -> None:
        """After a round in which no job finished and no reset is pending: simulate at once the
        following rounds that would lease the same jobs on the same types (the lease did not depend
        on priorities, :attr:`_order_free`: it repeats while the active jobs, their allocations and
        ``m`` stay the same, whatever the priorities), up to the next arrival, the round before a
        job finishes, or :attr:`max_rounds`. Exact: the clock, remaining steps and Gavel's time
        counters get the same float operations in the same order as round by round
        (``ufunc.accumulate``), so JCTs are bit-identical. ``res`` then covers all merged rounds
        (``merged`` of them, ``length_s`` their total; per-round rates unchanged)."""
        dt = self.dt
        merged_before = res.merged
        start_remaining = self.remaining[jobs].copy()
        while True:
            budget = self.SKIP_BLOCK if self.max_rounds is None else min(self.SKIP_BLOCK, self.max_rounds - self.rounds)
            if budget < 1:
                break
            starts = np.add.accumulate(np.concatenate([[self.now], np.full(budget, dt)]))  # starts[q]: round q's start
            c = budget
            if self.next_arrival < self.n:  # a round starting at or after the next arrival admits it
                c = min(c, int(np.searchsorted(starts[:budget], self.arrival[self.next_arrival], side="left")))
            d = rate * dt
            steps = np.vstack([self.remaining[jobs][None, :], np.broadcast_to(d, (budget, d.size))])
            rem = np.subtract.accumulate(steps)  # rem[q]: remaining steps at the start of round q
            fin = (rem[:budget] / rate <= dt * (1.0 + 1e-12)).any(axis=1)  # the rounds in which a job would finish
            if fin.any():
                c = min(c, int(np.argmax(fin)))
            if c < 1:
                break
            self.remaining[jobs] = rem[c]
            jt = self.job_time[jobs, typ]
            self.job_time[jobs, typ] = np.add.accumulate(np.vstack([jt[None, :], np.full((c, jt.size), dt)]))[-1]
            for t in np.unique(typ).tolist():  # np.add.at adds each lease's time in turn
                cnt = int((typ == t).sum())
                seq = np.concatenate([[self.worker_time[t]], np.full(c * cnt, dt)])
                self.worker_time[t] = np.add.accumulate(seq)[-1]
            self.now = float(starts[c])
            self.rounds += c
            res.merged += c
            if c < budget:
                break
        extra = res.merged - merged_before
        if extra:
            res.used_gpu_seconds *= res.merged / merged_before
            res.backfill_gpu_seconds *= res.merged / merged_before
            res.length_s = self.now - res.now
            res.done_steps = res.done_steps + (start_remaining - self.remaining[jobs])  # steps of every merged round
