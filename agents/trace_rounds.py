"""The round engine: scheduling rounds over a workload of jobs, on numpy arrays of job state (no Mesa here).

:class:`TraceRounds` is the ONE round engine of every run (``ModelConfig.trace``, or a synthetic
workload turned into a trace by :func:`marketsim.agents.trace_from_tenants.tenants_workload`); the
:class:`marketsim.agents.auctioneer.Auctioneer` calls :meth:`TraceRounds.step` once per Mesa step and the
Mesa agents act at its decision points (:mod:`marketsim.agents.trace_tenants`: tenants report through their
strategies at every re-solve, learners sample and learn; server agents fail and heal; tenants
arrive, leave and exit). With Gavel's lease realisation it follows the simulator of Gavel
(``scheduler/scheduler.py``: ``simulate``, ``_update_priorities``, ``_schedule_jobs_on_workers``;
semantics read from the public code, nothing copied). Every modelling choice and every difference
from Gavel's simulator is listed in ``docs/trace_simulation.md``. One round starting at ``now``:

1. **Arrivals and leaves.** Jobs with ``arrival_s <= now`` join (a job arriving inside a round
   waits for the next one); the unfinished jobs of a tenant whose forced leave time is ``<= now``
   are withdrawn (never completed). With nothing to run the clock jumps to the next arrival (no
   empty rounds).
2. **Allocation reset** (Gavel's ``_reset_time_run_so_far``), only when the job set changed (or
   the GPUs, or a learning tenant's report) and ``reallocation_interval_s`` has passed since the
   last reset (Gavel: 1920 s; 0 = at every change; the first reset whenever jobs are active), or at
   once when no active job can be leased (none has an allocation): each job's deficit grows by
   ``alloc * elapsed - received``, every job's received time restarts at ``round_seconds / 2`` per
   type, and the policy is re-solved on the tenants' reports. A job that arrived after the last
   reset has no allocation and is not leased until the next reset. Rows with identical policy
   inputs get the policy's tied rows in a seeded order (:meth:`TraceRounds._break_ties`).
3. **Realisation** (``realisation``) of the time fractions as whole GPUs:

   * ``"gavel-lease"``: priorities ``priority[j, t] = alloc[j, t] / fraction[j, t]`` with
     ``fraction`` = job ``j``'s share of the time type ``t`` ran jobs since the reset; ``alloc * 1e9``
     when ``fraction = 0``; 0 when ``alloc = 0`` or the job cannot run on ``t``. GPU types in the
     lease order: ``"fastest"`` (default) fastest first (the cluster lists them slowest first), or
     ``"shuffle"`` (Gavel's order for its heterogeneity-agnostic policies): a uniformly random
     permutation of the types with GPUs, drawn anew every round from ``lease_rng``. Per type the
     jobs in descending ``(priority, deficit, alloc)`` (ties: arrival order); a job is leased
     ``scale`` GPUs of that type if it is not leased yet, can run there (throughput > 0) and fits.
     Priority-0 entries stay in the queue, so idle GPUs go to any job that fits (work conservation
     as in Gavel), except under the policies of :data:`ALLOCATED_ONLY` (``gavel-fifo``).
   * ``"oef-rounding"`` / ``"gandiva-lottery"``: a class realiser (``realiser``: OEF spec A6's
     :class:`marketsim.market.oef.placer.DeviationRounder`, or :class:`marketsim.market.oef.realise.GandivaLottery`)
     turns each class's fractional devices into whole GPUs per type; spec A7
     (:func:`marketsim.market.oef.placer.assign_class`, rule ``assign_rule``) starts the class's jobs on them,
     longest-starved first; a job may get GPUs of several types (a straggler).
4. **Hosts** (only with a ``placer``: placement "auto" | "oef" | "naive"; "ideal" skips it): the
   leases go on hosts (:class:`marketsim.market.hosts.HostPlacer`).
5. **Progress.** A lease on one GPU type runs at the consolidated throughput of the job's scale
   factor on that type (steps/s of the whole job); over several types at the slowest of them
   (straggler, OEF spec §2.3); over several hosts at the ``unconsolidated`` throughput if given,
   else the consolidated one times ``1 / (1 + kappa (hosts - 1) + kappa_rack (racks - 1))`` (with
   a table: times ``1 / (1 + kappa_rack (racks - 1))``). A lease that restarts the job from its
   checkpoint (it ran before and does not continue the previous round's lease on the same GPU
   types and hosts: a migration, or a resume after a pause) makes no progress for the first
   ``migration_cost_s`` seconds (at most the round). A job that finishes inside the round
   completes at its exact time ``now + lost + remaining / rate``; its GPUs idle until the round
   ends. The round ends when the last lease ends (``now + max ran``, = ``round_seconds`` unless
   every leased job finished early, as in Gavel, whose round ends at the latest micro-task finish).

Rows given to the policy: ``per_job`` (tenancy "job"): one row per job (its throughputs, cap =
scale factor, weight = priority × its tenant's weight). Otherwise one row per class (tenant, job
type, speedup vector: jobs of a tenant and job type whose throughput rows are proportional) with
cap = total GPUs of its active jobs and weight ``π_u / (classes of the tenant)``; each job of a
class gets the class's devices per GPU (``X[c] / cap[c]``) as its time fraction. Gavel's own
policies (:data:`GAVEL_NATIVE`: ``gavel-max-min-perf``, ``gavel-max-sum-throughput``,
``gavel-isolated``, ``gavel-fifo``) always get one row per job with raw throughputs and
``scale_factors`` (weights ``priority · π_u / active jobs of the tenant`` unless
``tenancy = "job"``). ``gavel-max-min-perf`` solves identical jobs (same throughputs, scale factor,
weight and time bound) once, with equal time fractions (its ``aggregate = True``,
:mod:`marketsim.market.oef.roundlp`): the same optimum as the per-job program, and the point of its optimal
face that Gavel's interior-point solver (cvxpy + ECOS) converges to by symmetry, where a simplex
vertex would split identical jobs unevenly (:data:`NATIVE_OPTIONS`). A time-fraction row summing
above 1 (policies without caps, e.g. OEF) is scaled down to 1 for Gavel's lease (a job cannot run
more than all of the time); the estimated throughput (``est``, OEF spec §5.4) values the policy's
own allocation, and the class realisers round it (spec A6's water-fill redistributes what a class
cannot use).

**Jobs that cannot run on a GPU type** (throughput 0): Gavel's own policies take the zeros as
they are. The speedup-based policies need every entry > 0, so they see such an entry as
``ZERO_FILL`` times the row's largest throughput (below every feasible entry of the row; the
speedup bound of the policies holds); whatever time they give the job on that type is dropped
(time fraction 0), and the type is skipped for the job in the leases.

**Lying tenants**: the policy sees the REPORTED throughputs of every job (rows, normalisers, time
fractions), while jobs progress, lease feasibility (throughput > 0) and the estimated throughput
use the TRUE ones: outcomes from reports, experience from truth. The reports come from the
tenants (:attr:`TraceRounds.reporter`, an :class:`marketsim.agents.trace_tenants.TraceTenants`, asked at
every solve) or, fixed, from ``reported``.

Units: seconds, steps, steps/s, GPUs.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marketsim.market.errors import InputError
from marketsim.market.hosts import HostPlacement, HostPlacer
from marketsim.market.oef.placer import assign_class
from marketsim.market.oef.roundlp import row_classes, row_groups
from marketsim.market.oef.throughput import spread_efficiency

__all__ = [
    "TraceRounds",
    "TraceRoundResult",
    "GAVEL_NATIVE",
    "NATIVE_OPTIONS",
    "ALLOCATED_ONLY",
    "ORDERED_ROWS",
    "LEASE_ORDERS",
    "ENGINE_REALISATIONS",
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
#: policies for which the order of the rows is part of the policy (FIFO serves rows in arrival
#: order): their tied rows are not reordered by the seeded draw (:meth:`TraceRounds._break_ties`)
ORDERED_ROWS = frozenset({"gavel-fifo"})
#: tied rows of identical policy inputs get the policy's rows in a seeded order (module docstring);
#: False restores row order (the aligned comparison with Gavel's simulator switches it off)
TIE_BREAK = True
#: the order in which a round leases GPU types (module docstring, step 3)
LEASE_ORDERS = ("fastest", "shuffle")
#: the realisations of the engine (module docstring, step 3)
ENGINE_REALISATIONS = ("gavel-lease", "oef-rounding", "gandiva-lottery")
#: what a speedup-based policy sees for a throughput of 0, relative to the row's largest entry
ZERO_FILL = 1e-3

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 (a bijection that spreads every input bit)."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


#: the longest dot product :func:`_dot` hands to BLAS at once (OpenBLAS splits a longer one over threads)
DOT_CHUNK = 10_000


def _unique_codes(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, return_index=True, return_inverse=True)`` of integer codes in ``[0, size)``
    (the distinct codes ascending, the first position of each, each entry's distinct code) by
    counting instead of sorting."""
    present = np.bincount(codes, minlength=size) > 0
    uniq = np.flatnonzero(present)
    inv = (np.cumsum(present) - 1)[codes]
    first = np.full(uniq.size, codes.size, dtype=np.int64)
    np.minimum.at(first, inv, np.arange(codes.size))
    return uniq, first, inv


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``x @ y`` of two 1-d float arrays, in chunks of at most :data:`DOT_CHUNK` entries summed in
    order. Up to that length it is exactly ``x @ y``; beyond it OpenBLAS would split the product
    over its threads, so the last bits would depend on the thread count (``OPENBLAS_NUM_THREADS``,
    which Dask's workers set to 1) and waking the threads costs ~0.5 ms of CPU per call."""
    n = x.size
    if n <= DOT_CHUNK:
        return float(x @ y)
    out = 0.0
    for i in range(0, n, DOT_CHUNK):
        out += float(x[i : i + DOT_CHUNK] @ y[i : i + DOT_CHUNK])
    return out


def _empty(dtype: Any) -> np.ndarray:
    a = np.zeros(0, dtype=dtype)
    a.flags.writeable = False  # shared by every result: read-only
    return a


_NO_INT = _empty(np.int64)
_NO_FLOAT = _empty(float)


@dataclass
class TraceRoundResult:
    """What one round did: start ``now`` and length ``length_s`` (s); ``leased`` job indices and
    their GPU type (the first of its types for a lease over several, ``parts``: lease position ->
    ``((type, GPUs), ...)``); ``finished`` job indices with their completion times (s);
    ``resolved``: the policy was re-solved; GPU and throughput aggregates (throughputs in
    slowest-GPU equivalents); with hosts: the ``placement`` and leases spanning hosts; restarts
    (``migrations``) and the seconds they cost; workers of leases over several GPU types
    (``cross_type_workers``) and the class realiser's ``max_abs_dev``."""

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
    cross_type_workers: int = 0
    max_abs_dev: float = 0.0
    parts: Mapping[int, tuple[tuple[int, int], ...]] | None = None
    #: Gavel rounds this result covers (> 1 when :meth:`TraceRounds._fast_forward` merged rounds)
    merged: int = 1


def lying_throughputs(
    throughputs: np.ndarray, job_types: np.ndarray, tenants: np.ndarray, liars: Any, strategy: Any
) -> np.ndarray:
    """Reported throughputs (N, k): the jobs of the tenants in ``liars`` report with ``strategy``,
    every other job the truth. Only per-dimension scaling (:class:`marketsim.agents.strategies.ScaleDims`,
    a variant's ``strategy = "scale"`` or ``"fast"``) applies to raw throughputs unchanged: the
    row ``T[l]`` becomes ``T[l] * f`` with ``f`` the strategy's factors for the job's type (a
    speedup vector scaled by ``f`` is the raw row scaled by ``f``; zeros stay zeros)."""
    from marketsim.agents.strategies import ScaleDims

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
    truth); ``lease_order`` one of :data:`LEASE_ORDERS`, with ``lease_rng`` (a
    ``numpy.random.Generator``) drawing the ``"shuffle"`` permutations; ``placer``: host placement
    (None = "ideal"), ``unconsolidated`` (N, k) steps/s of a job spanning hosts (None: the
    consolidated rate times the ``kappa`` / ``kappa_rack`` penalty), ``migration_cost_s`` (s) lost
    by a lease that restarts its job; ``tenant_weight`` (tenants,) the tenants' priority weights
    ``π`` (None = 1), ``tenant_leave_s`` (tenants,) forced leave times (inf = none);
    ``realisation`` one of :data:`ENGINE_REALISATIONS` with its class ``realiser`` (None for
    ``"gavel-lease"``) and spec A7's ``assign_rule`` ("oef" | "naive"); ``tie_rng`` draws the salt
    of each solve's tie order (None: the solve count); ``job_names`` (N,), ``tenant_names``,
    ``job_type_names``: the identities that order tied rows (default: their codes)."""

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
        tenant_weight: np.ndarray | None = None,
        tenant_leave_s: np.ndarray | None = None,
        realisation: str = "gavel-lease",
        realiser: Any = None,
        assign_rule: str = "naive",
        kappa: float = 0.0,
        kappa_rack: float = 0.0,
        tie_rng: np.random.Generator | None = None,
        job_names: np.ndarray | None = None,
        tenant_names: np.ndarray | None = None,
        job_type_names: np.ndarray | None = None,
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
        self._u_given = unconsolidated is not None
        if self.U.shape != self.T.shape:
            raise InputError("unconsolidated", self.U.shape, f"must have the shape of the throughputs {self.T.shape}")
        if ((self.U > 0) != (self.T > 0)).any():
            raise InputError("unconsolidated", "zeros", "must be 0 exactly where the consolidated throughput is 0")
        self.kappa = float(kappa)
        self.kappa_rack = float(kappa_rack)
        self.migration_cost_s = float(migration_cost_s)
        if not self.migration_cost_s >= 0.0:
            raise InputError("migration_cost_s", migration_cost_s, "must be a number >= 0")
        #: usable GPUs per host this round (None = every host full); the model sets it each round
        self.host_cap: np.ndarray | None = None
        self.migrations = 0  # leases that restarted their job, whole run
        self.migration_lost_s = 0.0  # lease seconds lost to restarts, whole run
        self.s = np.asarray(scale, dtype=np.int64)
        self.remaining = np.asarray(total_steps, dtype=float).copy()
        self.arrival = np.asarray(arrival_s, dtype=float)
        if n and np.any(np.diff(self.arrival) < 0):
            raise InputError("arrival_s", self.arrival.tolist()[:10], "must be in ascending order")
        self.priority = np.asarray(priority, dtype=float)
        self.tenant = np.asarray(tenant_code, dtype=np.int64)
        n_ten = int(self.tenant.max()) + 1 if n else 0
        #: priority weight π per tenant code (None: every tenant 1)
        self.tw = None if tenant_weight is None else np.asarray(tenant_weight, dtype=float)
        if self.tw is not None and (self.tw.shape != (n_ten,) or not (self.tw > 0).all()):
            raise InputError("tenant_weight", self.tw.tolist()[:10], f"must give a weight > 0 per tenant ({n_ten})")
        leave = None if tenant_leave_s is None else np.asarray(tenant_leave_s, dtype=float)
        #: forced leave time of each job's tenant (inf: none)
        self.leave_job = None if leave is None or not np.isfinite(leave).any() else leave[self.tenant]
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
        if realisation not in ENGINE_REALISATIONS:
            raise InputError("realisation", realisation, f"must be one of {list(ENGINE_REALISATIONS)}")
        if (realisation == "gavel-lease") != (realiser is None):
            raise InputError(
                "realiser", realiser, f"must be given exactly for a class realisation, not {realisation!r}"
            )
        self.realisation = realisation
        self.realiser = realiser
        self.assign_rule = assign_rule
        self._order = np.arange(k - 1, -1, -1)  # this round's GPU-type order (fastest first by default)
        # class of each job: (tenant, job type, speedup vector = its row over its first feasible entry)
        pos = np.where(self.T > 0, self.T, np.inf).min(axis=1)
        ref = (self.T > 0).argmax(axis=1) if n else np.zeros(0, dtype=np.int64)
        norm = np.round(self.T / self.T[np.arange(n), ref][:, None], 12) if n else np.zeros((0, k))
        first, self.klass, _ = row_classes(self.tenant, np.asarray(job_type_code, dtype=np.int64), norm)
        self._klass_first = first
        self.job_type = np.asarray(job_type_code, dtype=np.int64)
        #: steps per GPU-second on the job's slowest feasible type (the slowest-GPU-equivalent unit)
        self.unit = pos / self.s
        # tie order of identical rows (_break_ties)
        self._ties = TIE_BREAK and policy not in ORDERED_ROWS and not (
            self.native and self.native_options.get("aggregate") is True)  # fmt: skip
        self.tie_rng = tie_rng
        self._salt = np.uint64(0)
        self._names = (job_names, tenant_names, job_type_names)
        self._jhash: np.ndarray | None = None
        self._chash_arr: np.ndarray | None = None  # uint64 identity per class (_class_ident), where _chash_ok
        # state
        self.now = 0.0
        self.next_arrival = 0  # index of the first job not yet arrived
        self.active = np.zeros(0, dtype=np.int64)  # arrived, unfinished jobs in arrival order
        self.done_at = np.full(n, np.nan)
        self.n_done = 0  # jobs completed so far (= count of finite done_at)
        self.gone = np.zeros(n, dtype=bool)  # withdrawn by a forced leave
        self.n_gone = 0
        #: time fractions of the last solve as the leases use them (a row above 1 scaled to 1)
        self.alloc = np.zeros((n, k))
        #: the policy's own time fractions of the last solve (unscaled; 0 where a job cannot run): the
        #: allocation that ``est`` values (OEF spec §5.4) and the class realisers round
        self.alloc_est = np.zeros((n, k))
        self.has_alloc = np.zeros(n, dtype=bool)
        #: each job's ``(alloc_est * T).sum()`` at the last solve it took part in (steps/s; for ``est``)
        self._est_job = np.zeros(n)
        self._inv_unit = 1.0 / self.unit
        #: Gavel's _job_time_so_far (s since the reset, per type); column-major: the lease reads a type's column
        self.job_time = np.zeros((n, k), order="F")
        self.worker_time = np.zeros(k)  # Gavel's _worker_time_so_far
        self.deficit = np.zeros((n, k))
        self.last_reset: float | None = None
        self.need_realloc = False
        self.solves = 0
        self.solve_seconds = 0.0
        # restarts: the round of each job's last lease, its types (-2: several, see _last_parts) and end
        self.last_lease_round = np.full(n, -2, dtype=np.int64)
        self.last_sig = np.full(n, -1, dtype=np.int64)
        self._last_parts: dict[int, tuple[tuple[int, int], ...]] = {}
        self.ever_ran = np.zeros(n, dtype=bool)
        #: when each job last stopped running (its arrival before it first runs): spec A7's starvation
        self.last_end = self.arrival.copy()
        self._m_key: bytes | None = None
        self._counts: tuple[int, int, float] | None = None  # (tenants, rows, est) of the active set
        self._lease_st: tuple | None = None  # the lease's per-active-set arrays (_lease_state)
        self._order_free = False  # the last lease did not depend on priorities (_lease)
        self._begun = False  # begin_round ran for the coming round
        #: jobs admitted / withdrawn when the coming round began (index arrays; the tenants read them)
        self.arrived_now: list[np.ndarray] = []
        self.gone_now: list[np.ndarray] = []
        #: the active jobs and their policy row at the last solve (:meth:`solved_rows`)
        self._solved: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        #: (active jobs, policy seconds) of every solve, for the benchmark
        self.solve_log: list[tuple[int, float]] = []
        #: the tenants' reports and decisions (:class:`marketsim.agents.trace_tenants.TraceTenants`; None: :attr:`R`)
        self.reporter: Any = None
        #: merge rounds in which nothing can change into one step (:meth:`_fast_forward`; exact)
        self.skip_rounds = True
        #: Gavel rounds simulated so far (> steps when rounds were merged); at most :attr:`max_rounds`
        self.rounds = 0
        self.max_rounds: int | None = None
        #: times (s, ascending) at which something outside the engine changes (host failures and
        #: heals): merged rounds stop before them
        self.event_times = np.zeros(0)

    # -- queries ---------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """Every job of the trace has completed or been withdrawn."""
        return self.next_arrival >= self.n and self.active.size == 0

    @property
    def completed(self) -> int:
        """Number of jobs completed so far."""
        return self.n_done

    def solved_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The policy's rows at the last solve: ``(jobs, row of each job, devices per row (rows, k))``
        (devices = time fractions × GPUs, after the engine's clipping); empty before the first."""
        if self._solved is None:
            return _NO_INT, _NO_INT, np.zeros((0, self.k))
        A, row, nrows = self._solved
        dev = self.alloc_est[A] * self.s[A][:, None]
        X = np.zeros((int(nrows[0]), self.k))
        for t in range(self.k):
            X[:, t] = np.bincount(row, dev[:, t], minlength=int(nrows[0]))
        return A, row, X

    # -- the round's start ------------------------------------------------------------------------
    def begin_round(self) -> float:
        """Settle the start of the coming round (step 1): admit arrivals, withdraw the jobs of
        tenants that left, jump over idle time; returns the round's start time (s). Called by
        :meth:`step` if the caller did not (the model calls it first to update the hosts at that time)."""
        if self._begun:
            return self.now
        self.arrived_now, self.gone_now = [], []
        changed = False
        while True:
            changed |= self._admit()
            if self.leave_job is not None and self._withdraw():
                changed = True
            if self.active.size or self.next_arrival >= self.n:
                break
        if changed:
            self.need_realloc = True
        self._begun = True
        return self.now

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
        if self.leave_job is not None:
            out = self.leave_job[new] <= self.now
            if out.any():  # their tenant left before they arrived
                self._withdrawn(new[out])
                new = new[~out]
                if new.size == 0:
                    return False
        self.arrived_now.append(new)
        self.active = np.concatenate([self.active, new])
        self._counts = None
        self.job_time[new] = self.dt / 2.0  # Gavel's add_job: every type starts at half a round
        self.deficit[new] = 0.0
        self.has_alloc[new] = False
        self._lease_append(new)
        return True

    def _withdraw(self) -> bool:
        """Withdraw the active jobs of the tenants whose forced leave time has come."""
        assert self.leave_job is not None
        out = self.leave_job[self.active] <= self.now
        if not out.any():
            return False
        self._withdrawn(self.active[out])
        self._remove_active(~out)
        return True

    def _withdrawn(self, jobs: np.ndarray) -> None:
        self.gone[jobs] = True
        self.n_gone += int(jobs.size)
        self.gone_now.append(jobs)

    def _next_event(self) -> float:
        """The next time (s) after now at which something outside the leases changes: an arrival,
        a forced leave, a host failure or heal (inf: none)."""
        t = float(self.arrival[self.next_arrival]) if self.next_arrival < self.n else np.inf
        if self.leave_job is not None:
            lv = self.leave_job[self.active]
            lv = lv[lv > self.now]
            if lv.size:
                t = min(t, float(lv.min()))
        if self.event_times.size:
            i = int(np.searchsorted(self.event_times, self.now, side="right"))
            if i < self.event_times.size:
                t = min(t, float(self.event_times[i]))
        return t

    # -- the policy ---------------------------------------------------------------------------------
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
        self._salt = np.uint64(self.tie_rng.integers(0, 2**63)) if self.tie_rng is not None else np.uint64(self.solves)
        t0 = time.perf_counter()
        x = self._solve(A, m, record=True)
        dt = time.perf_counter() - t0
        self.solve_seconds += dt
        self.solves += 1
        self.solve_log.append((int(A.size), dt))
        self.alloc_est[A] = x
        self._est_job[A] = (x * self.T[A]).sum(axis=1)
        tot = x.sum(axis=1)
        over = tot > 1.0
        if over.any():  # a job cannot run more than all of the time: the leases use the row scaled to 1
            x = x.copy()
            x[over] /= tot[over, None]
        self.alloc[A] = x
        self.has_alloc[A] = True
        self._counts = self._lease_st = None
        if self.reporter is not None:
            self.reporter.solved(A, m, x)

    def _solve(
        self, A: np.ndarray, m: np.ndarray, reported: np.ndarray | None = None, record: bool = False
    ) -> np.ndarray:
        """The policy's time fractions (|A|, k) of the active jobs (0 where a job cannot run; a row
        may sum above 1 under policies without caps), given the reported rows (|A|, k) of ``A``
        (default: the tenants' reports, :attr:`reporter`, else :attr:`R`); ``record``: this is the
        run's solve (its rows are kept for :meth:`solved_rows`)."""
        if A.size == 0:
            return np.zeros((0, self.k))
        if reported is None:
            reported = self.R[A] if self.reporter is None else self.reporter.reports(A)
        T = reported  # the policy sees the reports
        if not self.native:  # speedup-based policies need entries > 0 (module docstring)
            T = np.where(T > 0, T, ZERO_FILL * T.max(axis=1, keepdims=True))
        s = self.s[A]
        ten = self.tenant[A]
        pw = self.priority[A] if self.tw is None else self.priority[A] * self.tw[ten]
        if self.native:
            w = pw
            if not self.per_job:
                w = w / np.bincount(ten)[ten]  # each job's tenant's number of jobs
            alloc = self.mechanism.fn(T, m, weights=w, scale_factors=s.astype(float), **self.native_options)
            x = np.asarray(alloc.info["time_fractions"], dtype=float).reshape(A.size, self.k)
            if self._ties:  # Gavel's own policies: the symmetric point of the tied rows (module docstring)
                x = self._mean_ties(np.column_stack([T, s, w]), x)
            row, nrows = np.arange(A.size), A.size
        elif self.per_job:
            alloc = self.mechanism.fn(T, m, weights=pw, caps=s.astype(float) if self.mechanism.caps else None)
            X = np.asarray(alloc.X, dtype=float)
            if self._ties:
                X = self._break_ties(np.column_stack([T / T[:, :1], s, pw]), X, lambda r: self._job_ident(A[r]))
            x = X / s[:, None]
            row, nrows = np.arange(A.size), A.size
        else:
            cls, first, inv = _unique_codes(self.klass[A], self._klass_first.size)
            caps = np.bincount(inv, weights=s.astype(float), minlength=cls.size)
            ct = ten[first]
            ccnt = np.bincount(ct)[ct]  # each class's tenant's number of classes
            cw = 1.0 / ccnt if self.tw is None else self.tw[ct] / ccnt
            Tc = T[first]
            alloc = self.mechanism.fn(Tc, m, weights=cw, caps=caps if self.mechanism.caps else None)
            X = np.asarray(alloc.X, dtype=float)
            if self._ties:
                X = self._break_ties(
                    np.column_stack([Tc / Tc[:, :1], caps, cw]), X, lambda r: self._class_ident(cls[r])
                )
            x = X[inv] / caps[inv, None]
            row, nrows = inv, cls.size
        x = np.where(self.T[A] > 0, np.clip(x, 0.0, None), 0.0)
        if record:
            self._solved = (A.copy(), np.asarray(row, dtype=np.int64), np.array([nrows]))
        return x

    def _break_ties(self, key: np.ndarray, out: np.ndarray, ident: Any) -> np.ndarray:
        """Rows with identical policy inputs (``key``: one row per policy row) are interchangeable to
        the policy, which still returns them in some order (a simplex vertex gives the first row the
        slow GPU, say). Which of them gets which of the tied output rows is a seeded draw, not their
        position: within each group the output rows, in position order, go to the rows in the
        order of ``mix64(identity ^ salt)`` (``ident(rows)``: uint64 identities of the rows from
        their names, so the draw does not depend on the workload's row order; ``salt``: drawn per
        solve from the run's RNG). A symmetric policy (equal output rows) is unchanged."""
        _, inv, cnt = row_groups(key)
        dup = cnt[inv] > 1
        if not dup.any():
            return out
        rows = np.flatnonzero(dup)
        g = inv[rows]
        h = _mix64(np.asarray(ident(rows), dtype=np.uint64) ^ self._salt)
        by_pos = rows[np.lexsort((rows, g))]
        by_draw = rows[np.lexsort((h, g))]
        new = out.copy()
        new[by_draw] = out[by_pos]
        return new

    @staticmethod
    def _mean_ties(key: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Rows with identical policy inputs (``key``) get the mean of their output rows: the
        symmetric point of the policy's optimal face (permuting tied rows keeps a solution feasible
        and optimal, so their mean is too), which Gavel's interior-point solver reaches by symmetry
        and :data:`NATIVE_OPTIONS`' aggregation gives ``gavel-max-min-perf`` directly."""
        _, inv, cnt = row_groups(key)
        if (cnt == 1).all():
            return out
        sums = np.zeros((cnt.size, out.shape[1]))
        np.add.at(sums, inv, out)
        return sums[inv] / cnt[inv, None]

    def _job_ident(self, jobs: np.ndarray) -> np.ndarray:
        """uint64 identity of each job (crc32 of its name; cached)."""
        if self._jhash is None:
            self._jhash = np.zeros(self.n, dtype=np.uint64)
            self._jhash_ok = np.zeros(self.n, dtype=bool)
        need = jobs[~self._jhash_ok[jobs]]
        if need.size:
            names = self._names[0]
            for j in np.unique(need).tolist():
                name = str(names[j]) if names is not None else str(j)
                self._jhash[j] = zlib.crc32(name.encode()) | (zlib.crc32(b"job:" + name.encode()) << 32)
            self._jhash_ok[need] = True
        return self._jhash[jobs]

    def _class_ident(self, classes: np.ndarray) -> np.ndarray:
        """uint64 identity of each class (its tenant, job type and speedup vector; cached)."""
        _, tnames, jnames = self._names
        classes = np.asarray(classes, dtype=np.int64)
        if self._chash_arr is None:
            self._chash_arr = np.zeros(self._klass_first.size, dtype=np.uint64)
            self._chash_ok = np.zeros(self._klass_first.size, dtype=bool)
        need = classes[~self._chash_ok[classes]]
        for c in np.unique(need).tolist():
            j = int(self._klass_first[c])
            t, jt = int(self.tenant[j]), int(self.job_type[j])
            row = self.T[j] / self.T[j][self.T[j] > 0][0]
            text = "\x1f".join([str(tnames[t]) if tnames is not None else str(t),
                                str(jnames[jt]) if jnames is not None else str(jt),
                                ",".join(f"{v:.12g}" for v in row.tolist())]).encode()  # fmt: skip
            self._chash_arr[c] = zlib.crc32(text) | (zlib.crc32(b"class:" + text) << 32)
            self._chash_ok[c] = True
        return self._chash_arr[classes]

    def _lease_state(self) -> tuple:
        """What the lease needs of the active jobs, per GPU type (rows): ``(A, alloc, alloc * 1e9,
        may-lease mask, tie orders, GPUs per job, every job has 1 GPU)``. Built at a solve (or
        when dropped), then kept up to date as jobs arrive (:meth:`_lease_append`) and leave
        (:meth:`_remove_active`) instead of being rebuilt over the whole queue. The tie order of
        type ``t`` (computed when ``t`` first needs ranking) lists the positions in ``A`` by
        (deficit, alloc) descending, ties in arrival order: the lease's order after the priority
        (a stable sort by priority keeps it). Deficits and allocations change only at a solve."""
        st = self._lease_st
        if st is None:
            A = self.active
            a2 = np.ascontiguousarray(self.alloc[A].T)
            ok2 = (self.T[A].T > 0) & self.has_alloc[A][None, :]
            if self.policy in ALLOCATED_ONLY:  # not work-conserving, as Gavel's FIFO
                ok2 &= a2 > 0
            # one 1-d array per type (compressing a row is cheaper than a column selection)
            a = [a2[t].copy() for t in range(self.k)]
            ok = [ok2[t].copy() for t in range(self.k)]
            ties: list[np.ndarray | None] = [None] * self.k  # filled when a type first needs ranking
            sizes = self.s[A]
            st = self._lease_st = (A, a, [x * 1e9 for x in a], ok, ties, sizes, bool((sizes == 1).all()))
        return st

    def _lease_append(self, new: np.ndarray) -> None:
        """The lease state after jobs ``new`` joined the end of :attr:`active`: they have no
        allocation yet (not leasable until the next solve, which rebuilds the state), so they get
        columns of zeros and stay out of the tie orders."""
        st = self._lease_st
        if st is None:
            return
        A, a, a9, ok, ties, sizes, unit = st
        z = np.zeros(new.size)
        f = np.zeros(new.size, dtype=bool)
        sn = self.s[new]
        self._lease_st = (np.concatenate([A, new]), [np.concatenate([x, z]) for x in a],
                          [np.concatenate([x, z]) for x in a9], [np.concatenate([x, f]) for x in ok], ties,
                          np.concatenate([sizes, sn]), unit and bool((sn == 1).all()))  # fmt: skip

    def _remove_active(self, keep: np.ndarray) -> None:
        """Drop the active jobs at the positions where ``keep`` is False (finished or withdrawn):
        :attr:`active` and the lease state are compressed (the tie orders renumbered, their order
        kept) instead of being rebuilt."""
        self.active = self.active[keep]
        self._counts = None
        st = self._lease_st
        if st is None:
            return
        A, a, a9, ok, ties, sizes, _ = st
        newpos = np.cumsum(keep) - 1
        ties = [None if c is None else newpos[c[keep[c]]] for c in ties]
        sizes = sizes[keep]
        self._lease_st = (A[keep], [x[keep] for x in a], [x[keep] for x in a9], [x[keep] for x in ok], ties, sizes,
                          bool((sizes == 1).all()))  # fmt: skip

    #: candidates of a type above which the lease ranks only the head of the queue (:meth:`_ranked`)
    PARTIAL_RANK_MIN = 512
    #: the smallest block of candidates :meth:`_fill` takes at once
    FILL_BLOCK_MIN = 64

    @classmethod
    def _ranked(cls, prio: np.ndarray, room: int) -> list[np.ndarray]:
        """``argsort(-prio, kind="stable")`` in pieces, concatenated: the entries above the
        ``room``-th largest priority ``v`` (sorted), then those equal to ``v`` (in position order,
        as a stable sort leaves them), then the rest (unsorted: :meth:`_fill` sorts it only if it
        gets there). The first two hold at least ``room`` entries, so the lease rarely needs the
        rest, and a long queue of tied waiting jobs costs a partition, not a sort."""
        n = prio.size
        if n < cls.PARTIAL_RANK_MIN or room >= n:
            return [np.argsort(-prio, kind="stable")]
        v = np.partition(prio, n - room)[n - room]  # the room-th largest
        gt = np.flatnonzero(prio > v)
        eq = np.flatnonzero(prio == v)
        out = [gt[np.argsort(-prio[gt], kind="stable")], eq]
        if gt.size + eq.size < n:
            out.append(np.flatnonzero(prio < v))
        return out

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
                frac = self.job_time[:, t][A[c]] / w if w > 0 else np.zeros(c.size)
                at = a[t][c]
                if frac.min() > 0:
                    prio = at / frac
                else:
                    pos = frac > 0
                    prio = np.where(pos, at / np.where(pos, frac, 1.0), a9[t][c])
                # descending (priority, deficit, alloc), ties in arrival order
                pieces = self._ranked(prio, room)
                if unit:  # the first two pieces hold >= room candidates
                    head = pieces[0] if len(pieces) == 1 or pieces[0].size >= room else np.concatenate(pieces[:2])
                    pick = c[head[:room]]
                else:
                    pick = self._fill(c, prio, pieces, sizes, room)
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

    @classmethod
    def _fill(
        cls, c: np.ndarray, prio: np.ndarray, pieces: list[np.ndarray], sizes: np.ndarray, room: int
    ) -> np.ndarray:
        """Greedy over the candidates ``c`` in priority order (``pieces`` of :meth:`_ranked`, the
        third sorted here if reached): a job is taken if its GPUs fit in what is left, until
        nothing is left. Block by block, the longest prefix that fits is taken at once (a
        cumulative sum); after it only jobs no larger than what is left can still be taken (the
        room only shrinks)."""
        chosen: list[np.ndarray] = []
        for q, piece in enumerate(pieces):
            if q == 2:  # the rest of the queue, in the stable order
                piece = piece[np.argsort(-prio[piece], kind="stable")]
            block = max(2 * room, cls.FILL_BLOCK_MIN)
            for b0 in range(0, piece.size, block):
                cs = c[piece[b0 : b0 + block]]
                g = sizes[cs]
                cum = np.cumsum(g)
                n0 = int(np.searchsorted(cum, room, side="right"))  # the first n0 fit together
                if n0:
                    chosen.append(cs[:n0])
                    room -= int(cum[n0 - 1])
                if room > 0 and n0 < cs.size:
                    later = np.flatnonzero(g[n0:] <= room) + n0
                    more = []
                    for i, gi in zip(later.tolist(), g[later].tolist(), strict=True):
                        if gi <= room:
                            more.append(i)
                            room -= gi
                            if room == 0:
                                break
                    if more:
                        chosen.append(cs[more])
                if room == 0:
                    break
            if room == 0:
                break
        if not chosen:
            return np.zeros(0, dtype=np.int64)
        return chosen[0] if len(chosen) == 1 else np.concatenate(chosen)

    # -- class realisations (step 3: OEF's rounding, Gandiva_fair's lottery) --------------------------
    def _realise_counts(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[tuple[int, int], ...]]]:
        """Whole GPUs per class and type from the class realiser, then spec A7 within each class:
        ``(jobs, first type of each lease, parts of the leases over several types)``."""
        A = self.active
        B = A[self.has_alloc[A]]
        none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), {})
        if B.size == 0:
            return none
        # class ids ascend in order of first appearance
        uc, _, inv = _unique_codes(self.klass[B], self._klass_first.size)
        nc = uc.size
        sB = self.s[B]
        dev = self.alloc_est[B] * sB[:, None]
        ideal = np.empty((nc, self.k))
        for t in range(self.k):
            ideal[:, t] = np.bincount(inv, dev[:, t], minlength=nc)
        cap = np.bincount(inv, sB, minlength=nc).astype(np.int64)
        md = np.full(nc, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(md, inv, sB)
        keys = uc.tolist()
        counts = self.realiser.round(dict(zip(keys, ideal, strict=True)), dict(zip(keys, md.tolist(), strict=True)),
                                     dict(zip(keys, cap.tolist(), strict=True)), m)  # fmt: skip
        # A7 queue within each class: longest starved first, then arrival, then trace order
        starved = self.now - self.last_end[B]
        order = np.lexsort((B, self.arrival[B], -starved, inv))
        bounds = np.searchsorted(inv[order], np.arange(nc + 1))
        feas = self.T > 0
        jobs: list[int] = []
        typ: list[int] = []
        parts: dict[int, tuple[tuple[int, int], ...]] = {}
        for c, key in enumerate(keys):
            a = counts[key]
            if not a.any():
                continue
            members = B[order[bounds[c] : bounds[c + 1]]]
            f = None if feas[members].all() else feas[members].tolist()
            takes = assign_class(a.tolist(), self.s[members].tolist(), self.assign_rule, f)
            for j, take in zip(members.tolist(), takes, strict=True):
                if take is None:
                    continue
                nz = [t for t, g in enumerate(take) if g]
                if len(nz) > 1:
                    parts[len(jobs)] = tuple((t, take[t]) for t in nz)
                jobs.append(j)
                typ.append(nz[0])
        return np.asarray(jobs, dtype=np.int64), np.asarray(typ, dtype=np.int64), parts

    # -- step 4 and the rates of step 5 ----------------------------------------------------------------
    def _rates(self, jobs: np.ndarray, typ: np.ndarray, parts: Mapping[int, Any], res: TraceRoundResult) -> np.ndarray:
        """Each lease's rate (steps/s): its type's consolidated throughput, the slowest of its types
        for a lease over several (straggler); with hosts (step 4) the spread penalty."""
        rate = self.T[jobs, typ]
        for i, p in parts.items():
            rate[i] = min(self.T[jobs[i], t] for t, _ in p)
        if self.placer is None:
            return rate
        pl = self.placer.place(jobs, typ, self.s[jobs], self.host_cap, parts)
        res.placement = pl
        spread = pl.n_hosts > 1
        res.cross_host_jobs = int(spread.sum())
        if spread.any():
            base = rate
            if self._u_given:
                base = self.U[jobs, typ]
                for i, p in parts.items():
                    base[i] = min(self.U[jobs[i], t] for t, _ in p)
            eff = spread_efficiency(pl.n_hosts, 0.0 if self._u_given else self.kappa, pl.n_racks, self.kappa_rack)
            rate = np.where(spread, base * eff, rate)
        return rate

    def _restarts(
        self, jobs: np.ndarray, typ: np.ndarray, parts: Mapping[int, Any], res: TraceRoundResult
    ) -> np.ndarray:
        """Leases that restart their job from its checkpoint (module docstring, step 5): it ran
        before and does not continue the previous round's lease on the same GPU types and hosts."""
        sig = typ if not parts else typ.copy()
        for i in parts:
            sig[i] = -2
        same = (self.last_lease_round[jobs] == self.rounds - 1) & (self.last_sig[jobs] == sig)
        for i, p in parts.items():
            if same[i] and self._last_parts.get(int(jobs[i])) != p:
                same[i] = False
        if res.placement is not None:
            same &= ~res.placement.moved
        self.last_sig[jobs] = sig
        for i, p in parts.items():
            self._last_parts[int(jobs[i])] = p
        return self.ever_ran[jobs] & ~same

    def step(self, m: np.ndarray) -> TraceRoundResult:
        """Simulate one round with ``m`` (k,) GPUs per type; advances :attr:`now` to its end."""
        self.begin_round()
        self._begun = False
        m = np.asarray(m, dtype=np.int64)
        res = TraceRoundResult(busy_by_type=np.zeros(self.k, dtype=np.int64))
        mk = m.tobytes()
        if mk != self._m_key:
            self._m_key = mk
            self.need_realloc = True
        res.now = self.now
        if self.active.size == 0:  # nothing left to arrive (begin_round jumps the clock to the next arrival)
            return res
        if self.lease_order == "shuffle":  # Gavel: the types present, reshuffled every round
            self._order = self.lease_rng.permutation(np.flatnonzero(m > 0))  # type: ignore[union-attr]
        may_reset = self.last_reset is None or self.now - self.last_reset >= self.interval
        rep = self.reporter
        learners = may_reset and rep is not None and bool(rep.learners)
        if learners and rep.decide(self.active):  # learning tenants pick this round's reports
            self.need_realloc = True
        if self.need_realloc and may_reset:
            self._reset_and_solve(m)
            res.resolved = True
        elif learners:
            rep.replay()  # the same inputs as at the last solve: the same feedback
        parts: dict[int, tuple[tuple[int, int], ...]] = {}
        if self.realisation == "gavel-lease":
            pos, typ = self._lease(m)
            if pos.size == 0 and self.need_realloc:  # only unallocated jobs left: reset now
                self._reset_and_solve(m)
                res.resolved = True
                pos, typ = self._lease(m)
            # nothing leasable: a trace's jobs fit some type (ModelConfig checks it), a synthetic job
            # larger than every type's GPUs never runs under a one-type lease (an idle round)
            jobs = self.active[pos]
        else:
            self._order_free = False
            if self.need_realloc and not self.has_alloc[self.active].any():  # nobody has an allocation: reset now
                self._reset_and_solve(m)
                res.resolved = True
            jobs, typ, parts = self._realise_counts(m)
            res.max_abs_dev = float(self.realiser.max_abs_dev)
            res.parts = parts
        A = self.active
        res.active_jobs = int(A.size)
        if self._counts is None:  # recomputed only when the active set or the allocation changed
            rows = A.size if (self.per_job or self.native) else np.count_nonzero(np.bincount(self.klass[A]))
            # _est_job[j] = (alloc_est[j] * T[j]).sum(), set at each solve (0 before the job's first)
            est = _dot(self._est_job[A], self._inv_unit[A])
            self._counts = (int(np.count_nonzero(np.bincount(self.tenant[A]))), int(rows), est)
        res.active_tenants, res.active_rows, res.total_est = self._counts
        if jobs.size == 0:  # a class realisation left every GPU idle this round
            res.length_s = self.dt
            res.active = A
            self.now += self.dt
            self.rounds += 1
            return res
        rate = self._rates(jobs, typ, parts, res)
        restart = self._restarts(jobs, typ, parts, res)
        lost = None
        if restart.any():
            res.migrations = int(restart.sum())
            if self.migration_cost_s > 0:
                lost = np.where(restart, min(self.migration_cost_s, self.dt), 0.0)
                res.migration_lost_s = float(lost.sum())
            self.migrations += res.migrations
            self.migration_lost_s += res.migration_lost_s
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
        gpus = self.s[jobs]
        if not parts:
            self.job_time[jobs, typ] += ran  # a job holds one lease: the same single addition as np.add.at
            np.add.at(self.worker_time, typ, ran)  # in lease order, one addition at a time
            res.busy_by_type = np.bincount(typ, weights=gpus, minlength=self.k).astype(np.int64)
        else:
            one = np.ones(jobs.size, dtype=bool)
            one[list(parts)] = False
            self.job_time[jobs[one], typ[one]] += ran[one]
            np.add.at(self.worker_time, typ[one], ran[one])
            busy = np.bincount(typ[one], weights=gpus[one], minlength=self.k)
            for i, p in parts.items():
                for t, g in p:
                    self.job_time[jobs[i], t] += ran[i]
                    self.worker_time[t] += ran[i]
                    busy[t] += g
                res.cross_type_workers += int(gpus[i])
            res.busy_by_type = busy.astype(np.int64)
        length = float(ran.max())
        res.length_s = length
        res.leased, res.leased_type = jobs, typ
        res.active, res.done_steps = A, done
        res.used_gpu_seconds = float((gpus * ran).sum())
        res.backfill_gpu_seconds = float((gpus * ran)[self.alloc[jobs, typ] <= 0.0].sum())
        res.total_act = float((done / self.unit[jobs]).sum() / length) if length > 0 else 0.0
        self.last_lease_round[jobs] = self.rounds
        self.ever_ran[jobs] = True
        self.last_end[jobs] = self.now + length
        if any_fin:
            f = jobs[fin]
            res.finished = f
            res.finished_at = self.now + need[fin]
            self.done_at[f] = res.finished_at
            self.n_done += int(f.size)
            keep = np.ones(A.size, dtype=bool)
            at = np.searchsorted(A, f)  # the active jobs ascend (arrivals are in trace order)
            if at.max() < A.size and (A[at] == f).all():
                keep[at] = False
            else:  # an active set not in ascending order (set by hand)
                keep = ~np.isin(A, f)
            self._remove_active(keep)
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
        per-round type shuffle (a new permutation, and an RNG draw, every round), with hosts (the
        server agents' health is read every round and a lease may move), with a class realiser
        (its deviations change every round) or with learning tenants (they may change their
        reports every round). Arrivals, forced leaves and host events bound the merge."""
        return (self.lease_order == "fastest" and self.placer is None and self.realiser is None
                and not (self.reporter is not None and self.reporter.learners))  # fmt: skip

    def _fast_forward(self, res: TraceRoundResult, jobs: np.ndarray, typ: np.ndarray, rate: np.ndarray) -> None:
        """After a round in which no job finished and no reset is pending: simulate at once the
        following rounds that would lease the same jobs on the same types (the lease did not depend
        on priorities, :attr:`_order_free`: it repeats while the active jobs, their allocations and
        ``m`` stay the same, whatever the priorities), up to the next arrival (or forced leave, or
        host event: :meth:`_next_event`), the round before a
        job finishes, or :attr:`max_rounds`. Exact: the clock, remaining steps and Gavel's time
        counters get the same float operations in the same order as round by round
        (``ufunc.accumulate``), so JCTs are bit-identical. ``res`` then covers all merged rounds
        (``merged`` of them, ``length_s`` their total; per-round rates unchanged)."""
        dt = self.dt
        nxt = self._next_event()
        merged_before = res.merged
        start_remaining = self.remaining[jobs].copy()
        while True:
            budget = self.SKIP_BLOCK if self.max_rounds is None else min(self.SKIP_BLOCK, self.max_rounds - self.rounds)
            if budget < 1:
                break
            starts = np.add.accumulate(np.concatenate([[self.now], np.full(budget, dt)]))  # starts[q]: round q's start
            c = budget
            if nxt < np.inf:  # a round starting at or after the next event sees it (an arrival is admitted)
                c = min(c, int(np.searchsorted(starts[:budget], nxt, side="left")))
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
            self.last_lease_round[jobs] = self.rounds - 1  # leased in every merged round
            self.last_end[jobs] = self.now
            res.used_gpu_seconds *= res.merged / merged_before
            res.backfill_gpu_seconds *= res.merged / merged_before
            res.length_s = self.now - res.now
            res.done_steps = res.done_steps + (start_remaining - self.remaining[jobs])  # steps of every merged round
