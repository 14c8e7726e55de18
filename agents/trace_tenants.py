"""The tenants of a run: who owns which job, when tenants arrive and leave, what they report, what
they experience.

Every run keeps its job state in the numpy arrays of :class:`marketsim.agents.trace_rounds.TraceRounds`;
:class:`TraceTenants` puts the tenants on top, in the same vectorised style, and calls the tenant
agents (:class:`marketsim.agents.tenant.TenantAgent`) at the engine's decision points:

* **Ownership.** Tenant ``u`` owns the jobs whose tenant name (``TraceWorkload.tenants``: the
  scenario's tenancy ``"job"``, ``"user"`` or ``N`` on a trace, :func:`marketsim.market.traces.tenant_of_jobs`;
  the tenant of each job of a synthetic workload) is ``u``. Per-tenant measures are sums over a
  tenant's active jobs (``np.bincount``, no loop over jobs or tenants).
* **Agents.** Every tenant with a strategy in ``TraceWorkload.strategies`` (a scenario's
  ``[[variant]]`` tenants, truthful ones included, and every tenant of a synthetic workload) is a
  Mesa agent, and so is every tenant when the tenancy is ``"user"`` or ``N``. An agent is created
  when its tenant's first job arrives (event ``arrive``) and removed (``agent.remove()``) when the
  tenant leaves: at its forced leave time (``TraceWorkload.leave_at``, event ``leave``; its
  unfinished jobs are withdrawn) or once all its jobs have completed (event ``exit``). With
  tenancy ``"job"`` a job-tenant without a strategy has nothing to decide and no agent (the fast
  path): a 100,000-job trace would otherwise mean 100,000 Mesa agents and a Python call each per
  round; its measures come from the same arrays.
* **Reports.** At every policy solve each agent whose strategy is not truthful is consulted for
  its active jobs' rows (:meth:`marketsim.agents.tenant.TenantAgent.report_rows`): a strategy maps a true
  speedup vector of a job type to a reported one; the true vector of a job is its throughput row
  divided by the entry of its first GPU type it can run on (entries it cannot run on, throughput 0,
  are given to the strategy as 1 and stay 0 in the report); the report becomes per-type factors
  ``q = report / w`` and the policy sees ``T[j] * q``. Per-dimension strategies (``scale``/``fast``,
  ``noise``) give the same ``q`` for every job of a job type (``report(job_type, ones)``; a noise
  draw is made once per (tenant, job type)); other strategies (``report``: a fixed vector) are
  evaluated per (job type, GPU count). Truthful agents report the truth without being asked.
* **Learning tenants** (``hedge``): at every round at which the policy may be re-solved (the
  reallocation interval has passed) the tenant samples the factor vector it plays for ALL its jobs
  from its Hedge weights (truth before its first feedback; one weight vector per tenant, not per
  job type); if any learner's report changed, the policy is re-solved. After every solve it is
  told, for every factor vector of its grid, the TRUE estimated throughput (``est``) its active
  jobs would have got against the others' reports of that solve (full-information feedback; the
  same seeded tie order as the solve); at a decision round without a re-solve (nothing changed)
  it learns again from the last feedback.
* **Truth vs report.** The policy sees the reports; leases' feasibility, progress, ``est`` and
  ``act`` use the TRUE throughputs.

Per-round measures (:data:`marketsim.agents.model.TENANT_MEASURES`, slowest-GPU equivalents), for every
tenant with an active job: ``est`` = ``Σ_j alloc_j · T_j / unit_j`` over its jobs (``unit_j``:
steps per GPU-second on the job's slowest feasible type, :attr:`TraceRounds.unit`), ``est_reported``
the same with the reported rows (normalised by the reported entry of the same type), ``act`` =
steps done in the record ``/ unit / record length`` (a rate over the record's ``round_s``, so
``act × round_s`` is the work done), ``alloc_gpus`` = ``Σ_j Σ_t alloc_jt · scale_j`` (fractional
GPUs), ``gpus`` = GPUs leased, ``runnable_jobs`` = active jobs. They are summed into numpy blocks
(one row per active tenant and record) that :class:`marketsim.agents.model.MarketModel` drains with its other
records; the present agents get their own values every round.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from marketsim.agents.strategies import Strategy, Truthful
from marketsim.agents.tenant import ALL_JOBS, TenantAgent, TraceTenantAgent, report_factors

if TYPE_CHECKING:
    from marketsim.agents.config import TenantConfig, TraceWorkload
    from marketsim.agents.model import MarketModel
    from marketsim.agents.trace_rounds import TraceRoundResult, TraceRounds

__all__ = ["TraceTenantAgent", "TraceTenants", "report_factors", "tenant_order", "TRACE_TENANT_MEASURES"]

#: the per-tenant measures of a round, in the column order of :attr:`TraceTenants.blocks`
TRACE_TENANT_MEASURES = ("est", "est_reported", "act", "alloc_gpus", "gpus", "runnable_jobs")


def tenant_order(tenants: np.ndarray) -> list[str]:
    """The distinct tenant names of a trace in order of their first job (arrival order): tenant
    index ``i`` of a scenario's ``[[variant]]`` or a study's ``tenants`` is the ``i``-th name."""
    names, first = np.unique(np.asarray(tenants).astype(str), return_index=True)
    return [str(n) for n in names[np.argsort(first, kind="stable")]]


class TraceTenants:
    """The tenants of a run (module docstring): arrivals, leaves and exits of the agents
    (:meth:`round_start`, :meth:`round_end`), reports and learning for the engine (``reports``,
    ``decide``, ``solved``, ``replay``: :attr:`marketsim.agents.trace_rounds.TraceRounds.reporter`) and
    per-round measures (:meth:`record`). ``rows``: whose per-tenant rows to record
    (``TraceWorkload.tenant_rows``: "agents", "all" or "none"); ``configs``: tenant name ->
    :class:`marketsim.agents.config.TenantConfig` of a synthetic workload."""

    def __init__(
        self,
        model: MarketModel,
        engine: TraceRounds,
        tw: TraceWorkload,
        rows: str = "agents",
        configs: Mapping[str, TenantConfig] | None = None,
    ) -> None:
        self.model = model
        self.engine = engine
        names, first, code = np.unique(np.asarray(tw.tenants).astype(str), return_index=True, return_inverse=True)
        self.names = names  #: tenant names, sorted; ``code`` indexes them
        self.code = code.ravel().astype(np.int64)  #: tenant code per job (N,)
        self.rows = str(rows)
        self.job_types = np.asarray(tw.trace.job_type).astype(str)  #: job type name per job (N,)
        self.strategies: Mapping[str, Strategy] = tw.strategies
        self.configs = dict(configs or {})
        self.weights = dict(tw.tenant_weights)
        self.strategic = any(not s.tags.get("truthful", False) for s in self.strategies.values())
        nt = names.size
        self.is_agent = np.zeros(nt, dtype=bool)
        if tw.tenancy != "job":
            self.is_agent[:] = True
        elif self.strategies:
            self.is_agent[np.searchsorted(names, np.array(sorted(self.strategies), dtype=str))] = True
        self._any_agent = bool(self.is_agent.any())
        self._order = np.argsort(self.code, kind="stable")  # jobs grouped by tenant, each group in arrival order
        self._bounds = np.r_[0, np.cumsum(np.bincount(self.code, minlength=nt))]
        #: jobs of each tenant not yet completed or withdrawn (a tenant exits at 0)
        self.left = np.bincount(self.code, minlength=nt).astype(np.int64)
        self.created = np.zeros(nt, dtype=bool)
        #: the present agents by tenant code, in order of arrival
        self.agents: dict[int, TenantAgent] = {}
        #: the agents that left the model (removed from Mesa; kept here for their logs), by tenant id
        self.departed: dict[str, TenantAgent] = {}
        self._agent_codes = np.zeros(0, dtype=np.int64)
        self.liars: list[TenantAgent] = []  # present agents whose strategy is consulted at every solve
        self.learners: list[TenantAgent] = []  # present learning agents
        self._feedback: dict[int, np.ndarray] = {}  # each learner's last counterfactual utilities
        leave = tw.leave_at
        self._leaves = sorted((float(t), int(np.searchsorted(names, n))) for n, t in leave.items())
        T = engine.T
        self.ref = np.where(T > 0, T, np.inf).argmin(axis=1) if T.size else np.zeros(0, dtype=np.int64)
        #: reported rows of every job (N, k): what the policy saw at the last solve
        self.R = np.array(engine.R, dtype=float, copy=True) if self.strategic else engine.R
        # per-round caches and the record blocks
        self._key: tuple[int, int, int] | None = None
        self._tslot = np.zeros(0, dtype=np.int64)
        #: per job: est, est_reported, alloc_gpus at the last solve (:meth:`_job_values`), and that solve
        self._jval = np.zeros((engine.n, 3))
        self._jver = np.full(engine.n, -1, dtype=np.int64)
        self._ut = np.zeros(0, dtype=np.int64)
        self._static = np.zeros((0, 4))
        self._arows: list[tuple[Any, int]] = []  # _agent_rows and the arrays it was built from
        self._arows_key: tuple[np.ndarray, np.ndarray] | None = None
        #: the measures (and agent rows) last written into the agents: a round that repeats them
        #: (same leases, same active set) leaves the agents as they are
        self._written: tuple[Any, np.ndarray] | None = None
        #: recorded blocks: (round, tenant codes (n,), measures (n, 6)) per round
        self.blocks: list[tuple[int, np.ndarray, np.ndarray]] = []

    # -- arrivals, leaves, exits -------------------------------------------------------------------
    def _event(self, code: int, what: str) -> None:
        self.model.events.append({"round": self.model.round, "tenant": str(self.names[code]), "event": what,
                                  "time_s": float(self.engine.now)})  # fmt: skip

    def _agents_changed(self) -> None:
        self._agent_codes = np.array(sorted(self.agents), dtype=np.int64)
        self.liars = [a for a in self.agents.values() if not a.truthful and not a.learning]
        self.learners = [a for a in self.agents.values() if a.learning]
        self.liars += self.learners  # a learner reports its played factors too

    def _remove(self, code: int, what: str) -> None:
        a = self.agents.pop(code, None)
        if a is not None:
            self._event(code, what)
            a.remove()
            self.departed[a.tenant_id] = a
            self._feedback.pop(code, None)
            self._agents_changed()

    def round_start(self) -> None:
        """After :meth:`TraceRounds.begin_round`: agents of tenants whose first job arrived are
        created, tenants whose forced leave time has come leave."""
        eng = self.engine
        for jobs in eng.gone_now:  # withdrawn jobs no longer count towards an exit
            np.subtract.at(self.left, self.code[jobs], 1)
        while self._leaves and self._leaves[0][0] <= eng.now:
            _, c = self._leaves.pop(0)
            self._remove(c, "leave")
            self.created[c] = True  # a tenant that left never arrives again
        if not eng.arrived_now or not self._any_agent:
            return
        new = np.concatenate(eng.arrived_now)
        cand = self.code[new]
        if not (self.is_agent[cand] & ~self.created[cand]).any():  # most rounds: no tenant's first job
            return
        codes, first = np.unique(cand, return_index=True)
        fresh = self.is_agent[codes] & ~self.created[codes]
        for c in codes[fresh][np.argsort(first[fresh], kind="stable")].tolist():
            self.created[c] = True
            name = str(self.names[c])
            cfg = self.configs.get(name)
            jobs = self._order[self._bounds[c] : self._bounds[c + 1]]
            strat = self.strategies.get(name) or Truthful()
            self.agents[c] = TenantAgent(self.model, name, c, jobs, strat, self.weights.get(name, 1.0), cfg)
            self._event(c, "arrive")
        self._agents_changed()

    def round_end(self, res: TraceRoundResult) -> None:
        """After a round: tenants whose jobs are all done exit."""
        if not res.finished.size:
            return
        codes = self.code[res.finished]
        np.subtract.at(self.left, codes, 1)
        if not self.agents:  # nobody to exit (tenancy "job" without strategies: no agents at all)
            return
        out = codes[self.left[codes] == 0]  # tenants whose last job just finished
        for c in np.unique(out).tolist() if out.size else ():
            if c in self.agents:
                self._remove(c, "exit")

    # -- reports and learning (the engine's decision points) ------------------------------------------
    def reports(self, A: np.ndarray) -> np.ndarray:
        """The rows (|A|, k) the policy sees at a solve over the active jobs ``A``: every lying or
        learning agent is consulted for its active jobs."""
        if not self.liars:
            return self.R[A]
        eng = self.engine
        codes = self.code[A]
        for a in self.liars:
            rows = A[codes == a.code]
            if rows.size:
                self.R[rows] = a.report_rows(eng.T[rows], self.job_types[rows], eng.s[rows])
        return self.R[A]

    def decide(self, A: np.ndarray) -> bool:
        """A decision round (the policy may be re-solved): every learner with an active job samples
        the report it plays; True if any report changed."""
        present = set(np.unique(self.code[A]).tolist())
        changed = False
        for a in self.learners:
            if a.code in present and a.sample():
                changed = True
        return changed

    def solved(self, A: np.ndarray, m: np.ndarray, x: np.ndarray) -> None:
        """Full-information Hedge feedback for learning tenants (module docstring)."""
        if not self.learners or A.size == 0:
            return
        eng = self.engine
        TA = eng.T[A]
        val = TA / eng.unit[A][:, None]  # TRUE slowest-GPU equivalents per unit of time fraction
        base = self.R[A]
        codes = self.code[A]
        for a in self.learners:
            mine = codes == a.code
            if not mine.any():
                continue
            utils = []
            for f in a.learning_grid():
                R2 = base.copy()
                R2[mine, 1:] = TA[mine, 1:] * f[None, :]
                x2 = eng._solve(A, m, R2)
                utils.append(float((x2[mine] * val[mine]).sum()))
            u = np.array(utils)
            self._feedback[a.code] = u
            a.learn(ALL_JOBS, u)

    def replay(self) -> None:
        """A decision round without a re-solve: the inputs are those of the last solve, so every
        learner that got feedback there learns again from it."""
        for a in self.learners:
            u = self._feedback.get(a.code)
            if u is not None:
                a.learn(ALL_JOBS, u)

    # -- per-round measures ------------------------------------------------------------------------
    def record(self, res: TraceRoundResult) -> None:
        """Per-tenant measures of the round ``res`` just simulated (module docstring)."""
        if not self.agents and (self.rows == "none" or (self.rows == "agents" and not self._any_agent)):
            return
        eng = self.engine
        A = res.active
        if A.size == 0:
            self._written = None
            for a in self.agents.values():
                a.est = a.est_reported = a.act = a.alloc_gpus = 0.0
                a.gpus = a.runnable_jobs = 0
            return
        key = (eng.solves, eng.next_arrival, eng.n_done + eng.n_gone - int(res.finished.size))
        if key != self._key:  # the active set or the allocation changed
            self._key = key
            jv = self._job_values(A)
            code = self.code[A]
            nt = self.names.size
            cnt = np.bincount(code, minlength=nt)
            ut = np.flatnonzero(cnt)  # the tenants with an active job, ascending
            self._ut = ut
            self._tslot = np.cumsum(cnt > 0) - 1  # tenant code -> its row
            # per tenant the jobs' values summed in the order of A (as a bincount over row numbers)
            self._static = np.column_stack(
                [np.bincount(code, jv[:, q], minlength=nt)[ut] for q in range(3)] + [cnt[ut].astype(float)]
            )
        n = self._ut.size
        slot = self._tslot[self.code[res.leased]]
        act = np.zeros(n)
        if res.length_s > 0 and res.leased.size:
            act = np.bincount(slot, res.done_steps / eng.unit[res.leased], minlength=n) / res.length_s
        gpus = np.bincount(slot, eng.s[res.leased].astype(float), minlength=n)
        st = self._static
        M = np.column_stack([st[:, 0], st[:, 1], act, st[:, 2], gpus, st[:, 3]])
        if self.rows == "all":
            self.blocks.append((self.model.round, self._ut, M))
        elif self.rows == "agents":
            keep = self.is_agent[self._ut]
            if keep.any():
                self.blocks.append((self.model.round, self._ut[keep], M[keep]))
        if self.agents:
            arows = self._agent_rows()
            w = self._written
            if w is not None and w[0] is arows and np.array_equal(w[1], M):
                return  # the agents hold these values already
            self._written = (arows, M)
            rows = M.tolist()  # Python floats, converted at once
            for a, p in arows:
                if p >= 0:
                    a.est, a.est_reported, a.act, a.alloc_gpus, g, r = rows[p]
                    a.gpus, a.runnable_jobs = int(g), int(r)
                else:
                    a.est = a.est_reported = a.act = a.alloc_gpus = 0.0
                    a.gpus = a.runnable_jobs = 0

    def _agent_rows(self) -> list[tuple[Any, int]]:
        """The present agents with their row in the round's measures (-1: no active job); kept
        while the active tenants and the agents stay the same."""
        last = self._arows_key
        # the same agents and the same active tenants (equal arrays: the usual case at a new solve) keep their rows
        if last is None or last[1] is not self._agent_codes or not (
            last[0] is self._ut or np.array_equal(last[0], self._ut)
        ):
            n = self._ut.size
            pos = np.searchsorted(self._ut, self._agent_codes)
            self._arows = [(self.agents[c], p if p < n and self._ut[p] == c else -1)
                           for c, p in zip(self._agent_codes.tolist(), pos.tolist(), strict=True)]  # fmt: skip
        self._arows_key = (self._ut, self._agent_codes)
        return self._arows

    def _job_values(self, A: np.ndarray) -> np.ndarray:
        """Per active job (|A|, 3): its ``est``, ``est_reported`` and ``alloc_gpus`` (module
        docstring). Each is a function of the job's allocation and reports at the last solve, so
        it is computed once per job and solve (:attr:`TraceRounds.solves`) and kept."""
        eng = self.engine
        stale = A[self._jver[A] != eng.solves]
        if stale.size:
            x = eng.alloc_est[stale]
            est = (x * eng.T[stale]).sum(axis=1) / eng.unit[stale]
            R = self.R[stale]
            unit_r = R[np.arange(stale.size), self.ref[stale]] / eng.s[stale]
            est_r = (x * R).sum(axis=1) / unit_r
            self._jval[stale] = np.column_stack([est, est_r, x.sum(axis=1) * eng.s[stale]])
            self._jver[stale] = eng.solves
        return self._jval[A]

    def take_blocks(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The recorded blocks, forgotten here (the model drains them)."""
        out, self.blocks = self.blocks, []
        return out

    def agent_list(self) -> list[Any]:
        """The present tenant agents in order of arrival."""
        return list(self.agents.values())

    def every_agent(self) -> list[Any]:
        """Every tenant agent of the run so far: those that left, then the present ones."""
        return [*self.departed.values(), *self.agents.values()]
