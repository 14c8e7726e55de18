"""The tenants of a trace run: who owns which job, what each tenant reports, what it experiences.

A trace run keeps its job state in the numpy arrays of :class:`agents.trace_rounds.TraceRounds`;
:class:`TraceTenants` adds the tenants on top, in the same vectorised style:

* **Ownership.** Tenant ``u`` owns the jobs whose tenant name (``TraceWorkload.tenants``, from
  the scenario's tenancy: ``"job"``, ``"user"`` or ``N``; :func:`market.traces.tenant_of_jobs`)
  is ``u``. Per-tenant measures are sums over a tenant's active jobs (``np.bincount``, no loop
  over jobs or tenants).
* **Agents.** Every tenant whose strategy is not truthful is a Mesa :class:`TraceTenantAgent`
  (its jobs: an index array into the trace), and so is every tenant when the tenancy is ``"user"``
  or ``N`` (few tenants). With tenancy ``"job"`` a truthful job-tenant has nothing to decide and
  no agent: a 100,000-job trace would otherwise mean 100,000 Mesa agents (about 1 KB each and a
  Python call each per round); its measures come from the same arrays.
* **Reports.** A strategy (``agents.strategies``) maps a true speedup vector of a job type to a
  reported one. On a trace, the true vector of a job is its throughput row divided by the entry
  of its first GPU type it can run on (``w[0] = 1`` when it runs on the slowest type; entries it
  cannot run on, throughput 0, are given to the strategy as 1 and stay 0 in the report). The
  report then becomes per-type factors ``q = report / w``, and the policy sees the raw row
  ``T[j] * q``. Per-dimension strategies (``scale``/``fast``: :class:`ScaleDims`; ``noise``:
  :class:`MultiplicativeNoise`) give the same ``q`` for every job of a job type: their factors
  are ``report(job_type, ones)``, drawn once per (tenant, job type) like the synthetic tenants'
  cached reports; other strategies (``report``: a fixed vector) are evaluated per (job type,
  scale factor) class of the tenant.
* **Learning tenants** (``hedge``): at every policy solve the tenant plays a factor vector
  sampled from its Hedge weights (truth before the first solve) for ALL its jobs (one weight
  vector per tenant, not per job type: a trace tenant has many job types, and every factor
  vector costs one policy re-solve), and after the solve it is told, for every factor vector of
  its grid, the TRUE estimated throughput (slowest-GPU equivalents, ``est``) its active jobs would
  have got against the others' reports of that solve (full-information feedback, as the
  synthetic auctioneer gives). Reports matter only at solves (the allocation is reused between
  them), so a solve, not a round, is the learner's step.
* **Truth vs report.** The policy sees the reports; leases' feasibility, progress, ``est`` and
  ``act`` use the TRUE throughputs.

Per-round measures (:data:`agents.model.TENANT_MEASURES`, slowest-GPU equivalents as in
:class:`agents.tenant.TenantAgent`), for every tenant with an active job: ``est`` = ``Σ_j
alloc_j · T_j / unit_j`` over its jobs (``unit_j``: steps per GPU-second on the job's slowest
feasible type, :attr:`TraceRounds.unit`), ``est_reported`` the same with the reported rows
(normalised by the reported entry of the same type), ``act`` = steps done this round ``/ unit /
round length``, ``alloc_gpus`` = ``Σ_j Σ_t alloc_jt · scale_j`` (fractional GPUs), ``gpus`` =
GPUs leased this round, ``runnable_jobs`` = active jobs. They are summed into numpy blocks (one
row per active tenant and round) that :class:`agents.model.MarketModel` drains with its other
records; the agents get their own values every round (:attr:`TraceTenantAgent.est` etc.).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mesa
import numpy as np

from agents.strategies import MultiplicativeNoise, ScaleDims, Strategy, Truthful
from agents.tenant import TenantAgent

if TYPE_CHECKING:
    from agents.config import TraceWorkload
    from agents.model import MarketModel
    from agents.trace_rounds import TraceRoundResult, TraceRounds

__all__ = ["TraceTenantAgent", "TraceTenants", "report_factors", "tenant_order", "TRACE_TENANT_MEASURES"]

#: the per-tenant measures of a trace round, in the column order of :attr:`TraceTenants.blocks`
TRACE_TENANT_MEASURES = ("est", "est_reported", "act", "alloc_gpus", "gpus", "runnable_jobs")

#: the learning tenant's Hedge key on a trace (one weight vector for all its jobs)
ALL_JOBS = "*"


def tenant_order(tenants: np.ndarray) -> list[str]:
    """The distinct tenant names of a trace in order of their first job (arrival order): tenant
    index ``i`` of a scenario's ``[[variant]]`` or a study's ``tenants`` is the ``i``-th name."""
    names, first = np.unique(np.asarray(tenants).astype(str), return_index=True)
    return [str(n) for n in names[np.argsort(first, kind="stable")]]


def report_factors(strategy: Strategy, job_type: str, row: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-type factors (k,) turning a job's TRUE throughput row (k,) into its reported row
    (module docstring): the report of the job's true speedup vector divided by that vector;
    1 where the job cannot run (throughput 0, which the report keeps)."""
    T = np.asarray(row, dtype=float)
    k = T.size
    if isinstance(strategy, (ScaleDims, MultiplicativeNoise)):  # per-dimension: q = report(ones), exactly
        return np.asarray(strategy.report(job_type, np.ones(k), rng), dtype=float)
    pos = T > 0
    w = np.ones(k)
    w[pos] = T[pos] / T[int(np.flatnonzero(pos)[0])]
    q = np.asarray(strategy.report(job_type, w, rng), dtype=float) / w
    q[~pos] = 1.0
    return q


class TraceTenantAgent(TenantAgent):
    """A tenant of a trace run (module docstring): ``jobs`` are its indices into the trace, in
    arrival order; ``strategy`` its reporting strategy; the per-round measures (``est``,
    ``est_reported``, ``act``, ``alloc_gpus``, ``gpus``, ``runnable_jobs``) are set by
    :class:`TraceTenants` after every round it has an active job (0 otherwise). A learning
    tenant's Hedge state and ``learning_log`` are :class:`agents.tenant.TenantAgent`'s, under the
    single key :data:`ALL_JOBS`."""

    def __init__(self, model: MarketModel, tenant_id: str, jobs: np.ndarray, strategy: Strategy) -> None:
        mesa.Agent.__init__(self, model)
        self.tenant_id = tenant_id
        self.weight = 1.0
        self.strategy = strategy
        self.job_index = np.asarray(jobs, dtype=np.int64)
        self.learning = bool(strategy.tags.get("learning", False))
        self._weights: dict[str, np.ndarray] = {}
        self._played: dict[str, int] = {}
        self._reports: dict[str, np.ndarray] = {}
        self.learning_log: list[dict[str, Any]] = []
        self.est = self.est_reported = self.act = self.alloc_gpus = 0.0
        self.gpus = self.runnable_jobs = 0

    def finished(self) -> bool:  # type: ignore[override]
        """All its jobs have completed."""
        eng = self.model.auctioneer.trace  # type: ignore[attr-defined]
        return bool(np.isfinite(eng.done_at[self.job_index]).all())

    def played_factors(self) -> np.ndarray:
        """A learning tenant's factors (k − 1,) for the current solve (ones = the truth)."""
        s = self._played.get(ALL_JOBS)
        return np.ones(self.model.k - 1) if s is None else self.learning_grid()[s]  # type: ignore[attr-defined]

    def sample(self) -> None:
        """A learning tenant samples the factor vector it reports at this solve from its weights."""
        w = self._weights.get(ALL_JOBS)
        if w is not None:
            self._played[ALL_JOBS] = int(self.model.strategy_rng.choice(w.size, p=w))  # type: ignore[attr-defined]


class TraceTenants:
    """The tenants of a trace run (module docstring): reports for the engine (``reports`` /
    ``solved``, :attr:`agents.trace_rounds.TraceRounds.reporter`) and per-round measures
    (:meth:`record`). ``strategies``: tenant name -> strategy (absent = truthful); ``rows``: whose
    per-tenant rows to record (``TraceWorkload.tenant_rows``: "agents", "all" or "none")."""

    def __init__(self, model: MarketModel, engine: TraceRounds, tw: TraceWorkload, rows: str = "agents") -> None:
        self.model = model
        self.engine = engine
        names, first, code = np.unique(np.asarray(tw.tenants).astype(str), return_index=True, return_inverse=True)
        self.names = names  #: tenant names, sorted; ``code`` indexes them
        self.code = code.ravel().astype(np.int64)  #: tenant code per job (N,)
        self.rows = str(rows)
        self.job_types = np.asarray(tw.trace.job_type).astype(str)  #: job type name per job (N,)
        strategies: Mapping[str, Strategy] = tw.strategies
        self.strategic = any(not s.tags.get("truthful", False) for s in strategies.values())
        if tw.tenancy != "job":  # every tenant is an agent
            codes = np.arange(names.size)
        else:  # only the tenants with a strategy
            codes = np.searchsorted(names, np.array(sorted(strategies), dtype=str)).astype(np.int64)
        codes = codes[np.argsort(first[codes], kind="stable")]  # in order of their first job
        order = np.argsort(self.code, kind="stable")  # jobs grouped by tenant, each group in arrival order
        bounds = np.r_[0, np.cumsum(np.bincount(self.code, minlength=names.size))]
        self.agents: dict[int, TraceTenantAgent] = {}
        for c in codes.tolist():
            name = str(names[c])
            jobs = order[bounds[c] : bounds[c + 1]]
            self.agents[c] = TraceTenantAgent(model, name, jobs, strategies.get(name) or Truthful())
        self._agent_codes = np.array(sorted(self.agents), dtype=np.int64)
        self.learners = [a for a in self.agents.values() if a.learning]
        T = engine.T
        self.ref = np.where(T > 0, T, np.inf).argmin(axis=1) if T.size else np.zeros(0, dtype=np.int64)
        #: reported rows of every job (N, k): what the policy saw at the last solve
        self.R = engine.R
        if self.strategic:
            self.R = np.array(engine.R, dtype=float, copy=True)
            self._static_reports()
        # per-round caches and the record blocks
        self._key: tuple[int, int, int] | None = None
        self._slot = np.full(engine.n, -1, dtype=np.int64)
        self._ut = np.zeros(0, dtype=np.int64)
        self._static = np.zeros((0, 4))
        #: recorded blocks: (round, tenant codes (n,), measures (n, 6)) per round
        self.blocks: list[tuple[int, np.ndarray, np.ndarray]] = []

    # -- reports ---------------------------------------------------------------------------------
    def _static_reports(self) -> None:
        """The reports of every non-learning strategic tenant, once (module docstring)."""
        eng = self.engine
        rng = self.model.strategy_rng
        jt = self.job_types
        for a in self.agents.values():
            if a.learning or a.strategy.tags.get("truthful", False):
                continue
            J = a.job_index
            if isinstance(a.strategy, (ScaleDims, MultiplicativeNoise)):
                for name in dict.fromkeys(jt[J].tolist()):  # job types in order of first job
                    rows = J[jt[J] == name]
                    q = report_factors(a.strategy, name, eng.T[rows[0]], rng)
                    self.R[rows] = eng.T[rows] * q[None, :]
                continue
            # (job type, scale factor) classes of the tenant, in order of their first job
            _, firsts, inv = np.unique(np.char.add(jt[J], np.char.mod("|%d", eng.s[J])), return_index=True,
                                       return_inverse=True)  # fmt: skip
            inv = inv.ravel()
            for cls in np.argsort(firsts, kind="stable").tolist():
                rows = J[inv == cls]
                q = report_factors(a.strategy, str(jt[rows[0]]), eng.T[rows[0]], rng)
                self.R[rows] = eng.T[rows] * q[None, :]
        a_bad = ~np.isfinite(self.R) | ((self.R > 0) != (eng.T > 0))
        if a_bad.any():  # cannot happen with the shipped strategies (reports stay > 0 and finite)
            i = int(np.argwhere(a_bad)[0][0])
            raise RuntimeError(f"report of trace job {i} is not finite or changes where it can run")

    def reports(self, A: np.ndarray) -> np.ndarray:
        """The rows (|A|, k) the policy sees at a solve over the active jobs ``A``: learning
        tenants first sample this solve's factors."""
        if not self.learners:
            return self.R[A]
        T = self.engine.T
        for a in self.learners:
            a.sample()
            mine = self.code[A] == self._code_of(a)
            if mine.any():
                rows = A[mine]
                self.R[rows, 1:] = T[rows, 1:] * a.played_factors()[None, :]
        return self.R[A]

    def _code_of(self, agent: TraceTenantAgent) -> int:
        return int(np.searchsorted(self.names, agent.tenant_id))

    def solved(self, A: np.ndarray, m: np.ndarray, x: np.ndarray) -> None:
        """Full-information Hedge feedback for learning tenants (module docstring)."""
        if not self.learners or A.size == 0:
            return
        eng = self.engine
        TA = eng.T[A]
        val = TA / eng.unit[A][:, None]  # TRUE slowest-GPU equivalents per unit of time fraction
        base = self.R[A]
        for a in self.learners:
            mine = self.code[A] == self._code_of(a)
            if not mine.any():
                continue
            utils = []
            for f in a.learning_grid():
                R2 = base.copy()
                R2[mine, 1:] = TA[mine, 1:] * f[None, :]
                x2 = eng._solve(A, m, R2)
                utils.append(float((x2[mine] * val[mine]).sum()))
            a.learn(ALL_JOBS, np.array(utils))

    # -- per-round measures ------------------------------------------------------------------------
    def record(self, res: TraceRoundResult) -> None:
        """Per-tenant measures of the round ``res`` just simulated (module docstring)."""
        if not self.agents and self.rows != "all":
            return
        eng = self.engine
        A = res.active
        if A.size == 0:
            for a in self.agents.values():
                a.est = a.est_reported = a.act = a.alloc_gpus = 0.0
                a.gpus = a.runnable_jobs = 0
            return
        key = (eng.solves, eng.next_arrival, eng.n_done - int(res.finished.size))
        if key != self._key:  # the active set or the allocation changed
            self._key = key
            ut, inv = np.unique(self.code[A], return_inverse=True)
            inv = inv.ravel()
            self._ut = ut
            self._slot[A] = inv
            x = eng.alloc[A]
            unit = eng.unit[A]
            est = (x * eng.T[A]).sum(axis=1) / unit
            R = self.R[A]
            unit_r = R[np.arange(A.size), self.ref[A]] / eng.s[A]
            est_r = (x * R).sum(axis=1) / unit_r
            n = ut.size
            self._static = np.column_stack(
                [
                    np.bincount(inv, est, minlength=n),
                    np.bincount(inv, est_r, minlength=n),
                    np.bincount(inv, x.sum(axis=1) * eng.s[A], minlength=n),
                    np.bincount(inv, minlength=n).astype(float),
                ]
            )
        n = self._ut.size
        slot = self._slot[res.leased]
        act = np.zeros(n)
        if res.length_s > 0 and res.leased.size:
            act = np.bincount(slot, res.done_steps / eng.unit[res.leased], minlength=n) / res.length_s
        gpus = np.bincount(slot, eng.s[res.leased].astype(float), minlength=n)
        st = self._static
        M = np.column_stack([st[:, 0], st[:, 1], act, st[:, 2], gpus, st[:, 3]])
        if self.rows == "all":
            self.blocks.append((self.model.round, self._ut, M))
        elif self.rows == "agents":
            keep = np.isin(self._ut, self._agent_codes)
            if keep.any():
                self.blocks.append((self.model.round, self._ut[keep], M[keep]))
        if self.agents:
            pos = np.searchsorted(self._ut, self._agent_codes)
            for c, p in zip(self._agent_codes.tolist(), pos.tolist(), strict=True):
                a = self.agents[c]
                if p < n and self._ut[p] == c:
                    r = M[p]
                    a.est, a.est_reported, a.act, a.alloc_gpus = float(r[0]), float(r[1]), float(r[2]), float(r[3])
                    a.gpus, a.runnable_jobs = int(r[4]), int(r[5])
                else:
                    a.est = a.est_reported = a.act = a.alloc_gpus = 0.0
                    a.gpus = a.runnable_jobs = 0

    def take_blocks(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The recorded blocks, forgotten here (the model drains them)."""
        out, self.blocks = self.blocks, []
        return out

