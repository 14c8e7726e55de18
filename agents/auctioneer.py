"""The auctioneer (cluster manager) agent: runs the round loop of OEF spec A9 each Mesa step.

Per round ``t`` (start ``now = t·Δ``, ``Δ = round_seconds``):

1. build the active classes ``(tenant, job type)`` (classes with a runnable job), their REPORTED
   speedups, class weights ``π_u/|T_u|``, caps (total runnable workers) and the available GPUs;
2. re-solve the fair-share allocator only if any of these changed, else reuse the cached allocation;
3. deviation rounding (A6) → job assignment per class (A7) → host packing (A8);
4. advance each started job by its TRUE rate (``job_rate`` with the tenant's true speedups); a job
   finishing inside the round completes at ``now + remaining/rate`` and its GPUs idle until the
   next round.

The per-round measures go onto the tenant agents and :attr:`Auctioneer.stats` for the
DataCollector.

With a trace workload (``ModelConfig.trace``) the round is instead Gavel's lease round of
:class:`agents.trace_rounds.TraceRounds` (job state in numpy arrays) under the
reports of the trace's tenants (:class:`agents.trace_tenants.TraceTenants`): see those modules
and ``docs/trace_simulation.md``. With a placement other than "ideal" the engine puts the
leases on the server agents' hosts (:class:`market.hosts.HostPlacer`) and the server agents hold
them (``GPUServerAgent.assigned``) until the next round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mesa
import numpy as np

from agents.trace_rounds import TraceRoundResult, TraceRounds
from market.allocation import Allocation
from market.hosts import HostPlacer
from market.oef.placer import DeviationRounder, RunnableJob, _host_key, assign_jobs, pack_hosts
from market.oef.throughput import job_rate
from market.registry import get

if TYPE_CHECKING:
    from agents.model import MarketModel
    from agents.tenant import JobState, TenantAgent

__all__ = ["Auctioneer", "RoundStats"]

ClassKey = tuple[str, str]


@dataclass
class RoundStats:
    """Cluster-level measures of one round. GPU counts are devices; throughputs are in
    slowest-GPU equivalents (work-seconds per second); times in seconds."""

    available_gpus: int = 0
    busy_gpus: int = 0
    busy_by_type: tuple[int, ...] = ()
    utilisation: float = 0.0
    total_est: float = 0.0
    total_act: float = 0.0
    active_tenants: int = 0
    active_classes: int = 0
    resolved: int = 0
    cross_type_workers: int = 0
    cross_host_jobs: int = 0
    max_abs_dev: float = 0.0
    jobs_completed: int = 0
    # trace runs only (agents.model.TRACE_MEASURES)
    active_jobs: int = 0
    round_start_s: float = 0.0
    round_s: float = 0.0
    migrations: int = 0
    migration_lost_s: float = 0.0
    merged_rounds: int = 1  # Gavel rounds this record covers (TraceRounds merges rounds where nothing changes)
    backfill_gpu_s: float = 0.0  # GPU-seconds leased where the policy gave the job no allocation (TraceRoundResult)


class Auctioneer(mesa.Agent):
    """Cluster manager: calls the registered fair-share ``policy`` on the tenants' reports and
    turns the fractional allocation into running jobs (spec A9)."""

    def __init__(self, model: MarketModel, policy: str, placement: str, backfill: bool = True) -> None:
        super().__init__(model)
        self.policy = policy
        self.mechanism = get(policy, "fair-share")
        self.placement = placement
        self.rounder = DeviationRounder(backfill=backfill)
        self.allocation: Allocation | None = None
        self.classes: list[ClassKey] = []
        self._key: tuple[Any, ...] | None = None
        self.resolves = 0
        self.solve_seconds = 0.0  # wall-clock seconds spent in the policy (kept out of the tidy data)
        self.stats = RoundStats()
        self.last_counts: dict[ClassKey, np.ndarray] = {}
        self.trace: TraceRounds | None = None
        self.tenants = None
        #: trace runs: what the last round did (:class:`agents.trace_rounds.TraceRoundResult`)
        self.last_trace: TraceRoundResult | None = None
        tw = model.config.trace
        if tw is not None:
            tr = tw.trace
            _, type_code = np.unique(tr.job_type, return_inverse=True)
            _, tenant_code = np.unique(tw.tenants, return_inverse=True)
            self.trace = TraceRounds(
                throughputs=tw.throughputs,
                scale=tr.scale,
                total_steps=tr.total_steps,
                arrival_s=tr.arrival_s,
                priority=tr.priority,
                tenant_code=tenant_code.ravel(),
                job_type_code=type_code.ravel(),
                policy=policy,
                mechanism=self.mechanism,
                round_seconds=model.round_seconds,
                reallocation_interval_s=tw.reallocation_interval_s,
                per_job=tw.tenancy == "job",
                reported=tw.reported,
                lease_order=tw.lease_order,
                # a child stream of the model's RNG (drawn only for "shuffle": other runs keep their streams)
                lease_rng=model.rng.spawn(1)[0] if tw.lease_order == "shuffle" else None,
                **self._trace_hosts(model, placement, len(tr)),
            )
            self.trace.max_rounds = int(model.config.rounds)  # merged rounds count towards the horizon / cap
            from agents.trace_tenants import TraceTenants

            #: trace runs: the tenants (reports, per-tenant measures; :mod:`agents.trace_tenants`)
            self.tenants: TraceTenants | None = TraceTenants(model, self.trace, tw, rows=tw.tenant_rows)
            if self.tenants.strategic:
                self.trace.reporter = self.tenants

    def _trace_hosts(self, model: MarketModel, placement: str, n_jobs: int) -> dict[str, Any]:
        """The host arguments of the trace engine: none with placement "ideal"; otherwise a
        :class:`market.hosts.HostPlacer` over the server agents (natural order of host ids), the
        unconsolidated throughputs and the migration cost."""
        #: trace runs with hosts: the server agents in the placer's host order
        self.host_agents: list[Any] = []
        self._held: set[int] = set()  # host indices holding leases in the last round
        if placement == "ideal":
            return {}
        self.host_agents = sorted(model.servers, key=lambda a: _host_key(a.host_id))
        self._job_ids: list[str] = model.config.trace.trace.job_id.astype(str).tolist()  # type: ignore[union-attr]
        types = np.array([a.server.gpu_type for a in self.host_agents], dtype=np.int64)
        caps = np.array([a.server.count for a in self.host_agents], dtype=np.int64)
        tw = model.config.trace
        assert tw is not None
        return {
            "placer": HostPlacer(types, caps, placement, n_jobs),
            "unconsolidated": tw.unconsolidated,
            "migration_cost_s": model.config.migration_cost_s,
        }

    def _hold_leases(self, res: TraceRoundResult) -> None:
        """The server agents hold this round's leases (``assigned``: job id -> GPUs)."""
        agents = self.host_agents
        for h in self._held:
            agents[h].assigned = {}
        pl = res.placement
        if pl is None:
            self._held = set()
            return
        ids = self._job_ids
        jobs = res.leased[pl.part_lease].tolist()
        hosts = pl.part_host.tolist()
        for j, h, g in zip(jobs, hosts, pl.part_gpus.tolist(), strict=True):
            agents[h].assigned[ids[j]] = g
        self._held = set(hosts)

    # -- step 1-2: reports and allocation ---------------------------------------------------------
    def _problem(
        self, tenants: list[TenantAgent], now: float
    ) -> tuple[list[ClassKey], np.ndarray, np.ndarray, np.ndarray, dict[ClassKey, list[JobState]]]:
        """Active classes (tenant order, then job-type order), reported W, weights, caps, jobs."""
        classes: list[ClassKey] = []
        rows: list[np.ndarray] = []
        weights: list[float] = []
        caps: list[int] = []
        jobs: dict[ClassKey, list[JobState]] = {}
        for ten in tenants:
            types = ten.active_job_types(now)
            runnable = ten.runnable(now)
            for jt in types:
                c = (ten.tenant_id, jt)
                classes.append(c)
                rows.append(ten.report(jt))
                weights.append(ten.weight / len(types))
                js = [j for j in runnable if j.spec.job_type == jt]
                jobs[c] = js
                caps.append(sum(j.spec.workers for j in js))
        k = self.model.k
        W = np.array(rows, dtype=float).reshape(len(rows), k)
        return classes, W, np.array(weights, dtype=float), np.array(caps, dtype=float), jobs

    def _solve(
        self, classes: list[ClassKey], W: np.ndarray, weights: np.ndarray, caps: np.ndarray, m: np.ndarray
    ) -> bool:
        """Re-solve the policy if the inputs changed (A9 step 2). Returns True if it solved."""
        key = (tuple(classes), W.tobytes(), weights.tobytes(), caps.tobytes(), m.tobytes())
        if key == self._key:
            return False
        self._key = key
        self.classes = list(classes)
        if not classes:
            self.allocation = None
            return True
        t0 = time.perf_counter()
        alloc = self.mechanism.fn(W, m, weights=weights, caps=caps)
        self.solve_seconds += time.perf_counter() - t0
        X = np.asarray(alloc.X, dtype=float)
        if X.shape != W.shape:
            raise RuntimeError(f"policy {self.policy} returned X of shape {X.shape} for W of shape {W.shape}")
        self.allocation = alloc
        self.resolves += 1
        return True

    def _learn(self, classes: list[ClassKey], by_id: dict[str, Any], W: np.ndarray, weights: np.ndarray,
               caps: np.ndarray, m: np.ndarray) -> None:  # fmt: skip
        """Full-information feedback for learning tenants: every factor vector of the tenant's grid
        is re-scored against the others' reports of this round (same weights, caps and GPUs), and
        the tenant gets each one's TRUE normalised throughput."""
        for i, (u, jt) in enumerate(classes):
            ten = by_id[u]
            if not getattr(ten, "learning", False):
                continue
            true_w = np.asarray(ten.true_speedups[jt], dtype=float)
            tw = true_w / true_w[0]
            utils = []
            for f in ten.learning_grid():
                W2 = W.copy()
                W2[i] = true_w
                W2[i, 1:] *= f
                X2 = np.asarray(self.mechanism.fn(W2, m, weights=weights, caps=caps).X, dtype=float)
                utils.append(float(tw @ X2[i]))
            ten.learn(jt, np.array(utils))

    # -- the round ----------------------------------------------------------------------------------
    def _trace_step(self) -> None:
        """One Gavel-style lease round of a trace run; completions go to the model's table."""
        model = self.model
        eng = self.trace
        assert eng is not None
        m = model.m_avail()
        if eng.placer is not None:
            eng.host_cap = np.array([a.server.count if a.healthy else 0 for a in self.host_agents], dtype=np.int64)
        res = eng.step(m)
        self.last_trace = res
        if eng.placer is not None:
            self._hold_leases(res)
        model.now = res.now
        st = self.stats = RoundStats()
        st.available_gpus = int(m.sum())
        st.busy_by_type = tuple(res.busy_by_type.tolist())
        st.busy_gpus = int(res.busy_by_type.sum())
        st.utilisation = res.used_gpu_seconds / (st.available_gpus * res.length_s) if res.length_s > 0 else 0.0
        st.total_est = res.total_est
        st.total_act = res.total_act
        st.active_tenants = res.active_tenants
        st.active_classes = res.active_rows
        st.active_jobs = res.active_jobs
        st.resolved = int(res.resolved)
        st.jobs_completed = int(res.finished.size)
        st.round_start_s = res.now
        st.round_s = res.length_s
        st.cross_host_jobs = res.cross_host_jobs
        st.migrations = res.migrations
        st.migration_lost_s = res.migration_lost_s
        st.merged_rounds = res.merged
        st.backfill_gpu_s = res.backfill_gpu_seconds
        self.resolves = eng.solves
        self.solve_seconds = eng.solve_seconds
        assert self.tenants is not None
        self.tenants.record(res)
        if res.finished.size:
            model.record_trace_completions(res.finished, res.finished_at)

    def step(self) -> None:
        """Run one scheduling round (spec A9 steps 2-4) and record its measures. The model has
        already applied arrivals/exits and reset the tenants' and servers' per-round state."""
        if self.trace is not None:
            self._trace_step()
            return
        model = self.model
        now = model.now
        dt = model.round_seconds
        tenants = model.tenant_list()
        by_id = {t.tenant_id: t for t in tenants}
        self.stats = RoundStats()
        st = self.stats
        m = model.m_avail()
        servers = model.healthy_servers()
        st.available_gpus = int(m.sum())
        st.busy_by_type = tuple(0 for _ in range(model.k))

        classes, W, weights, caps, jobs = self._problem(tenants, now)
        st.active_tenants = len({c[0] for c in classes})
        st.active_classes = len(classes)
        st.resolved = int(self._solve(classes, W, weights, caps, m))
        if not classes or self.allocation is None:
            self.rounder.round({}, {}, {}, m)
            st.max_abs_dev = 0.0
            return

        X = np.asarray(self.allocation.X, dtype=float)
        true_W = np.array([by_id[u].true_speedups[jt] for u, jt in classes])
        est = np.einsum("lj,lj->l", true_W, X)
        est_rep = np.einsum("lj,lj->l", W / W[:, :1], X)
        for i, (u, _jt) in enumerate(classes):
            ten = by_id[u]
            ten.est += float(est[i])
            ten.est_reported += float(est_rep[i])
            ten.alloc_gpus += float(X[i].sum())
        st.total_est = float(est.sum())
        self._learn(classes, by_id, W, weights, caps, m)

        # A6: whole GPUs per class and type
        ideal = {c: X[i] for i, c in enumerate(classes)}
        min_demand = {c: min(j.spec.workers for j in jobs[c]) for c in classes}
        cap = {c: int(caps[i]) for i, c in enumerate(classes)}
        counts = self.rounder.round(ideal, min_demand, cap, m)
        self.last_counts = counts
        st.max_abs_dev = float(self.rounder.max_abs_dev)

        # A7: which jobs start, on which types
        chosen: list[tuple[RunnableJob, np.ndarray]] = []
        state: dict[str, JobState] = {}
        for c in classes:
            runnable = [
                RunnableJob(j.job_id, j.spec.workers, j.spec.arrival, max(0.0, now - j.last_ran_end)) for j in jobs[c]
            ]
            for j in jobs[c]:
                state[j.job_id] = j
            started, _left = assign_jobs(counts[c], runnable, self.placement)
            chosen.extend(started)
        # A8: hosts
        placements = pack_hosts(chosen, servers, self.placement)

        # step 4: progress at the TRUE rate
        busy = np.zeros(model.k, dtype=int)
        used_gpu_seconds = 0.0
        srv_by_id = {s.host_id: s for s in model.server_agents()}
        for rj, cnt in chosen:
            job = state[rj.job_id]
            ten = by_id[job.tenant_id]
            pl = placements[rj.job_id]
            hosts = tuple(sorted(h for h, _, _ in pl.hosts))
            moved = bool(job.hosts) and job.rounds_run > 0 and hosts != job.hosts
            rate = job_rate(
                cnt,
                ten.true_speedups[job.spec.job_type],
                pl.n_hosts,
                kappa=model.config.kappa,
                migration_cost_s=model.config.migration_cost_s,
                round_seconds=dt,
                moved=moved,
            )
            for h, _j, g in pl.hosts:
                srv = srv_by_id[h]
                srv.assigned[job.job_id] = srv.assigned.get(job.job_id, 0) + g
            g_total = int(cnt.sum())
            busy += cnt.astype(int)
            ten.gpus += g_total
            job.hosts = hosts
            job.rounds_run += 1
            if pl.cross_type:
                st.cross_type_workers += g_total
            if pl.cross_host:
                st.cross_host_jobs += 1
            if rate <= 0:
                ran = dt
                done_work = 0.0
            elif job.remaining <= rate * dt:
                ran = job.remaining / rate
                done_work = job.remaining
                job.remaining = 0.0
                job.completed_at = now + ran
                st.jobs_completed += 1
                model.record_completion(job, ten)
            else:
                ran = dt
                done_work = rate * dt
                job.remaining -= done_work
            job.last_ran_end = now + dt
            ten.act += done_work / dt
            used_gpu_seconds += g_total * ran
        st.busy_gpus = int(busy.sum())
        st.busy_by_type = tuple(int(b) for b in busy)
        st.utilisation = used_gpu_seconds / (st.available_gpus * dt) if st.available_gpus else 0.0
        st.total_act = float(sum(t.act for t in tenants))
